"""Repeatability: two sweeps over the same models, interleaved, and how far their median step times differ.

    python benchmarks/repeatability.py [--models m1,m2,...] [-- EXTRA diagnostics.py FLAGS]

Each case runs as ``diagnostics.py --models M --modes MODE --no-detailed --out A``, then into B (the
order reverses every case), so the two runs of a case are seconds apart and see the same stretch of
load. A case's difference is |median A - median B| over the smaller of the two; the target is <= 5%
for at least 90% of cases. ``noise_floor.py`` measures how well this machine lets any two agree.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for benchmarks._report

from benchmarks._report import record

ROOT = Path(__file__).resolve().parents[1]
MODELS = "squeezenet1_1,mobilenet_v2,shufflenet_v2_x1_0,resnet18,lstm_lm,dlrm,soft_actor_critic,pyhpc_equation_of_state"
DIFF_TARGET_PCT = 5.0
SHARE_TARGET_PCT = 90.0


def sweep(model: str, mode: str, out: Path, extra: list[str]) -> list[str]:
    argv = ["diagnostics.py", "--models", model, "--modes", mode, "--no-detailed", "--no-progress",
            "--out", str(out), *extra]  # fmt: skip
    env = dict(os.environ, KINETO_LOG_LEVEL="5", HF_HUB_OFFLINE="1")
    subprocess.run([sys.executable, *argv], cwd=ROOT, env=env, check=False)
    return ["python", *argv]


def medians(out: Path) -> dict[tuple[str, str], float]:
    rows = json.loads((out / "summary.json").read_text(encoding="utf-8"))["results"]
    return {(r["model"], r["mode"]): r["step_time_ms"]["median"] for r in rows if r["status"] == "ok"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=MODELS)
    parser.add_argument("--out", type=Path, help="folder for the two sweeps A and B (default: a new temporary one)")
    parser.add_argument("extra", nargs="*", help="after --: more diagnostics.py flags, e.g. --steps 5")
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="repeatability."))
    outs = [root / "A", root / "B"]

    commands = []
    cases = [(model, mode) for model in args.models.split(",") for mode in ("eval", "train")]
    for index, (model, mode) in enumerate(cases):
        for out in outs if index % 2 == 0 else reversed(outs):
            commands.append(sweep(model, mode, out, args.extra))
    a, b = medians(outs[0]), medians(outs[1])

    rows = []
    for key in sorted(a.keys() & b.keys()):
        diff = 100 * abs(a[key] - b[key]) / min(a[key], b[key])
        rows.append((f"{key[0]} {key[1]}", a[key], b[key], diff, "yes" if diff <= DIFF_TARGET_PCT else "no"))
    within = sum(row[-1] == "yes" for row in rows)
    share = 100 * within / len(rows) if rows else 0.0
    table = tabulate(rows, headers=["case", "A median ms", "B median ms", "diff %", f"<= {DIFF_TARGET_PCT:g}%"],
                     floatfmt=("", ".3f", ".3f", ".1f", ""))  # fmt: skip
    missing = sorted((a.keys() | b.keys()) - (a.keys() & b.keys()))
    notes = (
        f"{within} of {len(rows)} cases within {DIFF_TARGET_PCT:g}% ({share:.0f}%; target >= {SHARE_TARGET_PCT:g}%: "
        f"{'met' if share >= SHARE_TARGET_PCT and len(rows) >= 8 else 'missed'}). "
        f"Each sweep, per case, interleaved: `{' '.join(commands[0]).replace(str(outs[0]), 'A')}` (and into B)."
        + (f" Cases ok in only one sweep: {missing}." if missing else "")
    )
    record("Repeatability", table, notes)


if __name__ == "__main__":
    main()
