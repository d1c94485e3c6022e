"""Suite time: where a ``diagnostics.py`` sweep spends its wall time, per case and per phase.

    python benchmarks/suite_time.py --summary traces/summary.json   # an existing sweep's summary
    python benchmarks/suite_time.py [--models all] [--out DIR] [-- EXTRA diagnostics.py FLAGS]   # run one

Phases come from each row's ``timings_s``: process start and imports, per-op calibration, model build,
warmup, characterisation (measured steps and whole calls), light and detailed profiles (each with its
trace export; ``export`` is the two exports together), trace analysis, and the rest (``other``: result
writing, process exit). *Measured* is the time spent in steps that yield a figure: the characterised
steps, and the active steps of each profile, estimated from the medians and the profile's step count.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for benchmarks._report

from benchmarks._report import record
from torchbenchmark.results.spec import Budget

ROOT = Path(__file__).resolve().parents[1]
TARGET_MIN = 30.0
PHASES = ("start", "calibrate", "build", "warmup", "characterise", "light", "detailed", "export", "analyse", "other")


def case_phases(row: dict, budget: Budget) -> tuple[dict[str, float], float]:
    """A row's seconds per phase, and its seconds in measured steps."""
    t = row.get("timings_s") or {}
    phases = {"start": t.get("start", 0.0) + t.get("import", 0.0)}
    phases.update({name: t.get(name, 0.0) for name in PHASES[1:-1]})
    # export is inside the light and detailed laps: count it once, under export
    phases["other"] = t.get("total", 0.0) - sum(v for k, v in phases.items() if k != "export")
    step, distortion = row.get("step_time_ms"), row.get("profiler_distortion_pct") or {}
    measured_ms = 0.0
    if step:
        measured_ms = step["median"] * step["n"]
        for kind, count in (("light", budget.light_steps), ("detailed", budget.detailed_steps)):
            if distortion.get(kind) is not None:
                measured_ms += count * step["median"] * (1 + distortion[kind] / 100)
    return phases, measured_ms / 1e3


def run_sweep(models: str, out: Path, extra: list[str]) -> tuple[Path, float, str]:
    argv = [sys.executable, "diagnostics.py", "--models", models, "--out", str(out), "--no-progress", *extra]
    env = dict(os.environ, KINETO_LOG_LEVEL="5", HF_HUB_OFFLINE="1")
    started = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, env=env, check=False)
    return out / "summary.json", time.perf_counter() - started, " ".join(["python", *argv[1:]])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--summary", type=Path, help="read this summary.json instead of running a sweep")
    parser.add_argument("--models", default="all")
    parser.add_argument("--out", type=Path, help="output folder of the sweep (default: a new temporary one)")
    parser.add_argument("extra", nargs="*", help="after --: more diagnostics.py flags, e.g. --steps 5")
    args = parser.parse_args()

    sweep_wall_s, sweep_command = None, None
    path = args.summary
    if path is None:
        out = args.out or Path(tempfile.mkdtemp(prefix="suite_time."))
        path, sweep_wall_s, sweep_command = run_sweep(args.models, out, args.extra)
    summary = json.loads(path.read_text(encoding="utf-8"))
    budget = Budget()

    rows, totals, measured_total = [], dict.fromkeys(PHASES, 0.0), 0.0
    for row in summary["results"]:
        phases, measured_s = case_phases(row, budget)
        total = (row.get("timings_s") or {}).get("total", 0.0)
        for name in PHASES:
            totals[name] += phases[name]
        measured_total += measured_s
        rows.append((f"{row['model']} {row['mode']}", row["status"], *(phases[n] for n in PHASES), total,
                     100 * measured_s / total if total else None))  # fmt: skip
    cases_s = sum(r[-2] for r in rows)
    wall_s = sweep_wall_s or cases_s
    rows.append(("all cases", "", *(totals[n] for n in PHASES), cases_s, 100 * measured_total / cases_s if cases_s else None))
    rows.append(("share of case time %", "", *(100 * totals[n] / cases_s if cases_s else 0 for n in PHASES), 100.0, None))
    table = tabulate(rows, headers=["case", "status", *PHASES, "total", "measured %"], floatfmt=".1f", missingval="")
    command = summary.get("environment", {}).get("command") or sweep_command
    notes = (
        f"Sweep: `{command}` ({summary.get('environment', {}).get('started_at', '?')}); "
        f"wall {wall_s / 60:.1f} min{' (sum of case totals)' if sweep_wall_s is None else ''}, target <= {TARGET_MIN:g} min: "
        f"{'met' if wall_s / 60 <= TARGET_MIN else 'missed'}. Measured steps: {100 * measured_total / wall_s:.1f}% of wall time."
    )
    record("Suite time", table, notes)


if __name__ == "__main__":
    main()
