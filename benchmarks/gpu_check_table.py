"""The table of benchmarks/gpu_check.sh: its sweeps' rows, each checked for every CUDA-only figure.

    python benchmarks/gpu_check_table.py OUT [--command TEXT] [--tests TEXT]

Reads ``OUT/*/summary.json`` (the eager and compiled sweeps), prints one table, records it in
RESULTS.md with the machine and the GPU, and exits 1 when a case did not end ok or an ok row lacks a
GPU figure (or, where the rows carry costs, an allocator peak).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for benchmarks._report

from benchmarks._report import record

COSTS = ("achieved_gflops", "pct_of_peak", "peak_memory_mb", "samples_per_s")  # a row's cost figures, where it has them
OPTIONAL = ("speedup_vs_eager", *COSTS)  # columns shown when some row has them
HEADERS = ["model", "mode", "variant", "status", "ms/step", "verdict", "limited by", "GPU busy %",
           "host wait %", "launch wait us", "kernels/step"]  # fmt: skip


def table_row(row: dict[str, Any], costs: list[str]) -> list[Any]:
    gpu = row.get("gpu") or {}
    return [
        row["model"], row["mode"], row.get("variant", "eager"), row["status"], (row.get("step_time_ms") or {}).get("median"),
        (row.get("dispatch") or {}).get("verdict"), gpu.get("limited_by"), gpu.get("busy_pct"), gpu.get("host_wait_pct"),
        gpu.get("median_launch_wait_us"), gpu.get("kernels_per_step"), *(row.get(name) for name in costs),
    ]  # fmt: skip


def problems(row: dict[str, Any], costs: list[str]) -> list[str]:
    """Why a row fails the check: its status, or the CUDA-only figures it lacks."""
    case = f"{row['model']} {row['mode']} {row.get('variant', 'eager')}"
    if row["status"] != "ok":
        return [f"{case}: {row['status']} ({row.get('error')})"]
    gpu = row.get("gpu")
    missing = [name for name, value in gpu.items() if value is None] if gpu else ["gpu"]
    missing += [name for name in ("peak_memory_mb",) if name in costs and row.get(name) is None]
    return [f"{case}: no {', '.join(missing)}"] if missing else []


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--command", help="the command that made OUT, for RESULTS.md")
    parser.add_argument("--tests", help="pytest's last line for the GPU-only tests, for RESULTS.md")
    args = parser.parse_args(argv)
    summaries = sorted(args.out.glob("*/summary.json"))
    documents = [json.loads(path.read_text()) for path in summaries]
    rows = [row for document in documents for row in document["results"]]
    costs = [name for name in OPTIONAL if any(row.get(name) is not None for row in rows)]
    failures = [problem for row in rows for problem in problems(row, costs)]
    table = tabulate([table_row(row, costs) for row in rows], headers=HEADERS + costs, floatfmt=".3g", missingval="-")
    device = documents[0]["environment"].get("device_name", "?") if documents else "?"
    notes = [f"GPU: {device}; sweeps: {', '.join(path.parent.name for path in summaries) or 'none'}"]
    if args.command:
        notes.append(f"made by: `{args.command}`")
    if args.tests:
        notes.append(f"GPU-only tests (tests/run/test_engine.py -m gpu): {args.tests}")
    if not set(costs) & set(COSTS):
        notes.append("These rows carry no cost figures (FLOP/s, peak memory): this diagnostics.py predates them.")
    notes += [f"CHECK FAILED: {failure}" for failure in failures] or ["Every ok row has every CUDA-only figure."]
    record("GPU check", table, "\n".join(f"- {note}" for note in notes))
    return 1 if failures or not rows else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
