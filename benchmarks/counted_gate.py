"""The regression gate on a shared runner: counted instructions beside wall time, false alarms and catches.

    python benchmarks/counted_gate.py                 # counts quiet and beside two CPU hogs, A-A, +1% ops, a slower kernel
    python benchmarks/counted_gate.py --hogs 1        # beside one hog instead

Four sweeps with ``--instructions`` of the same cases (pyhpc_equation_of_state, soft_actor_critic, dlrm and a
chain of tiny ops, ``benchmarks/gate_models.py``): one on a quiet machine, two beside ``--hogs`` busy
processes (an A-A pair), and then the tiny-op plug-in twice more beside them, once with 1% more ops a step
and once with the same ops each on a larger tensor (a slower kernel of the same op count). ``compare`` of the
A-A pair counts false alarms; of A against each change, whether the gate caught it and by which tier. The
table gives every counted row's instructions per step and spread, and how far its quiet and loaded counts
lie apart.
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

from benchmarks._report import hogs, record

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = f"{ROOT / 'benchmarks' / 'gate_models.py'}:GateTinyOps"
CASES = {  # mode -> models: every case the issue names, each counted
    "eval": ["pyhpc_equation_of_state", "soft_actor_critic", "dlrm", PLUGIN],
    "train": ["soft_actor_critic"],
}
BASE_OPS, BASE_ELEMS = 200, 64
CHANGES = {"+1% ops": {"GATE_OPS": str(BASE_OPS * 101 // 100)}, "slower kernel": {"GATE_ELEMS": str(BASE_ELEMS * 16)}}


def sweep(out: Path, models: dict[str, list[str]], env: dict[str, str]) -> None:
    """Every mode's models into ``out``, counted."""
    for mode, names in models.items():
        command = [sys.executable, str(ROOT / "diagnostics.py"), "--models", ",".join(names), "--modes", mode, "--device", "cpu"]
        command += ["--instructions", "--no-detailed", "--no-progress", "--out", str(out)]
        done = subprocess.run(command, cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True)
        if done.returncode not in (0, 1):
            raise SystemExit(f"the sweep into {out} failed ({done.returncode}): {done.stderr[-2000:]}")


def rows(out: Path) -> dict[tuple[str, str], dict]:
    return {(row["model"], row["mode"]): row for row in json.loads((out / "summary.json").read_text())["results"]}


def compare(base: Path, new: Path) -> tuple[int, dict[tuple[str, str], dict]]:
    """compare's exit status and each case's JSON."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "comparison.json"
        command = [sys.executable, str(ROOT / "diagnostics.py"), "compare", str(base), str(new), "--json", str(report)]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        cases = json.loads(report.read_text())["cases"] if report.exists() else []
    return done.returncode, {(case["model"], case["mode"]): case for case in cases}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hogs", type=int, default=2)
    parser.add_argument("--out", type=Path, help="keep the sweeps here (default: a temporary folder)")
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    folder = args.out or Path(tempfile.mkdtemp(prefix="counted-gate-"))
    base_env = {"GATE_OPS": str(BASE_OPS), "GATE_ELEMS": str(BASE_ELEMS)}
    sweep(folder / "quiet", CASES, base_env)
    with hogs(args.hogs):
        sweep(folder / "loaded-a", CASES, base_env)
        sweep(folder / "loaded-a2", CASES, base_env)
        for name, change in CHANGES.items():
            sweep(folder / name.replace(" ", "-").replace("%", "pct"), {"eval": [PLUGIN]}, {**base_env, **change})
    quiet, loaded = rows(folder / "quiet"), rows(folder / "loaded-a")
    counted = []
    for key, row in sorted(loaded.items()):
        mine, theirs = row.get("instructions") or {}, (quiet.get(key) or {}).get("instructions") or {}
        if not mine.get("per_step") or not theirs.get("per_step"):
            counted.append((*key, "-", "-", "-", "-", mine.get("reason") or theirs.get("reason") or "not counted"))
            continue
        apart = 100 * abs(mine["per_step"] / theirs["per_step"] - 1)
        counted.append(
            (
                *key,
                f"{theirs['per_step']:,.0f}",
                f"{mine['per_step']:,.0f}",
                f"{apart:.3f}",
                f"{theirs['spread_pct']:.3f} / {mine['spread_pct']:.3f}",
                "",
            )
        )
    counts_table = tabulate(
        counted,
        headers=["model", "mode", "quiet instr/step", "loaded instr/step", "apart %", "spread % quiet / loaded", "note"],
        tablefmt="simple",
        disable_numparse=True,
    )
    pairs = {"A-A beside the hogs": folder / "loaded-a2", **{name: folder / name.replace(" ", "-").replace("%", "pct") for name in CHANGES}}
    calls = []
    for name, new in pairs.items():
        status, cases = compare(folder / "loaded-a", new)
        for (model, mode), case in sorted(cases.items()):
            calls.append(
                (
                    name,
                    model,
                    mode,
                    case["call"],
                    case.get("wall_call") or "-",
                    case.get("counts_call") or "-",
                    case.get("reason") or "-",
                    status,
                )
            )
    calls_table = tabulate(
        calls, headers=["pair", "model", "mode", "call", "by time", "by instructions", "decided by", "exit"], tablefmt="simple"
    )
    false_alarms = sum(1 for pair, _, _, call, *_ in calls if pair.startswith("A-A") and call == "slower")
    text = f"{counts_table}\n\n{calls_table}\n\nfalse alarms in the A-A pair: {false_alarms}; sweeps kept in {folder}"
    record("Counted gate", text, dry_run=args.dry_run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
