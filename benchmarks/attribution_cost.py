"""Attribution cost: what placing the overhead in modules and lines adds to a case's wall time, on suite models.

    python benchmarks/attribution_cost.py --out /tmp/attribution [--models a,b,...] [--modes train,eval]

One ordinary sweep (the detailed profile on, as by default). The attribution's own cost is two laps each
case records in ``timings_s``: ``name modules`` (mapping each module to its path, for the hook that runs
in the detailed profile's unrecorded warmup step) and ``attribute`` (reading the detailed trace and
placing its events). The table sets their sum against the case's whole wall time (``total``), with the
detailed trace's size and what the attribution found: the top module and the top line, each with its
share of the estimated overhead.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for benchmarks._report

from benchmarks._report import record
from torchbenchmark.api import load_summary

ROOT = Path(__file__).resolve().parents[1]
MODELS = "pyhpc_equation_of_state,soft_actor_critic,resnet18,hf_DistilBert,lstm_lm"
TARGET_PCT = 10.0


def _top(shares: tuple, part: str) -> str:
    top = next((share for share in shares if share.part == part), None)
    return "" if top is None else f"{top.name} {top.pct_of_estimate:.0f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--models", default=MODELS)
    parser.add_argument("--modes", default="train,eval")
    parser.add_argument("--analyse", action="store_true", help="only analyse a sweep already in --out")
    args = parser.parse_args()
    if not args.analyse:
        command = [sys.executable, str(ROOT / "diagnostics.py"), "--models", args.models, "--modes", args.modes,
                   "--device", "cpu", "--no-progress", "--out", str(args.out)]  # fmt: skip
        subprocess.run(command, check=False)
    rows = []
    for row in load_summary(args.out).rows:
        timings = row.timings_s
        if row.status != "ok" or "total" not in timings:
            rows.append((row.model, row.mode, row.status, "", "", "", "", "", "", ""))
            continue
        cost = timings.get("name modules", 0.0) + timings.get("attribute", 0.0)
        detailed = args.out / row.traces.detailed if row.traces.detailed else None
        size = detailed.stat().st_size / 1e6 if detailed and detailed.is_file() else None
        shares = row.attribution.overhead_by_module if row.attribution else ()
        lines = row.attribution.overhead_by_line if row.attribution else ()
        rows.append((
            row.model, row.mode, f"{timings['total']:.1f}", f"{timings.get('name modules', 0.0):.2f}",
            f"{timings.get('attribute', 0.0):.2f}", f"{100 * cost / timings['total']:.1f}",
            "yes" if 100 * cost / timings["total"] <= TARGET_PCT else "no", "" if size is None else f"{size:.1f}",
            _top(shares, "module"), _top(lines, "line"),
        ))  # fmt: skip
    table = tabulate(
        rows,
        headers=["model", "mode", "case s", "name modules s", "attribute s", "% of case", f"<= {TARGET_PCT:g}%",
                 "detailed MB", "top module", "top line"],
    )  # fmt: skip
    record(
        "Attribution cost",
        table,
        f"Target: the attribution (naming modules and placing the detailed trace's events) adds at most {TARGET_PCT:g}% "
        "to a case's wall time. Shares are of the estimated overhead per step.",
    )


if __name__ == "__main__":
    main()
