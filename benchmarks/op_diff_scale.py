"""How long ``compare --ops`` takes, and how much memory, on light traces of about a million op events each.

    python benchmarks/op_diff_scale.py              # two sweeps (a few minutes), then compare --ops three times
    python benchmarks/op_diff_scale.py --ops 200000 # ops a step (the light profile records 5 steps of them)

Two real sweeps of the tiny-op plug-in (``benchmarks/gate_models.py``, eval, ``--no-detailed``), one with 1%
more ops a step, whose light traces each hold the profiled steps' ops: ``--ops`` a step times the steps
profiled. Then ``diagnostics.py compare BASE NEW --ops`` in a fresh process, timed from outside, its peak
resident memory read from the kernel (``ru_maxrss`` of the child), three times; the median and the largest.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for benchmarks._report

from benchmarks._report import record

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = f"{ROOT / 'benchmarks' / 'gate_models.py'}:GateTinyOps"


def sweep(out: Path, ops: int) -> None:
    command = [sys.executable, str(ROOT / "diagnostics.py"), "--models", PLUGIN, "--modes", "eval", "--device", "cpu"]
    command += ["--no-detailed", "--no-progress", "--timeout", "1800", "--out", str(out)]
    subprocess.run(command, cwd=ROOT, env={**os.environ, "GATE_OPS": str(ops)}, check=True, capture_output=True)


def events_in(out: Path) -> int:
    (row,) = json.loads((out / "summary.json").read_text())["results"]
    with gzip.open(out / row["traces"]["light"]) as trace:
        return len(json.load(trace)["traceEvents"])


# A fresh process whose only child is the compare: its children's peak resident memory is the compare's.
MEASURED = (
    "import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], capture_output=True, text=True);"
    " print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, (done.stdout.strip().splitlines() or [''])[-1])"
)


def compare_once(base: Path, new: Path) -> tuple[float, float, int, str]:
    """Seconds, peak MB and exit status of one ``compare --ops`` in a fresh process, and its last line."""
    command = [sys.executable, str(ROOT / "diagnostics.py"), "compare", str(base), str(new), "--ops"]
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", MEASURED, *command], cwd=ROOT, capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - started
    status, peak_kb, last = done.stdout.split(" ", 2)
    return seconds, int(peak_kb) / 1024, int(status), last.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=200_000, help="ops a step on the base side (default: 200000)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="op-diff-scale-"))
    sweep(folder / "base", args.ops)
    sweep(folder / "new", args.ops * 101 // 100)
    events = (events_in(folder / "base"), events_in(folder / "new"))
    runs = [compare_once(folder / "base", folder / "new") for _ in range(args.runs)]
    seconds, peaks = [run[0] for run in runs], [run[1] for run in runs]
    table = (
        f"light trace events: base {events[0]:,}, new {events[1]:,}\n"
        f"compare --ops, {args.runs} runs: {statistics.median(seconds):.1f} s median, {max(seconds):.1f} s the longest;"
        f" peak memory {statistics.median(peaks):.0f} MB median, {max(peaks):.0f} MB the largest; exit {sorted({run[2] for run in runs})}"
    )
    record("Op diff at scale", table, notes=f"sweeps kept in {folder}", dry_run=args.dry_run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
