"""Trace export: how long gzip takes on a Chrome trace at each level, and the file it gives.

    python benchmarks/trace_export.py TRACE.pt.trace.json[.gz] [...] [--rounds 3]

torch gzips a ``.gz`` export at level 9; ``torchbenchmark.measure.profiling`` exports plain JSON and gzips
it at ``GZIP_LEVEL``.
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import time
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for benchmarks._report

from benchmarks._report import record

LEVELS = (1, 3, 6, 9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for path in args.traces:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        times: dict[int, list[float]] = {level: [] for level in LEVELS}
        sizes = {}
        for _ in range(args.rounds):  # interleaved: every level once per round
            for level in LEVELS:
                started = time.perf_counter()
                sizes[level] = len(gzip.compress(raw, compresslevel=level))
                times[level].append(time.perf_counter() - started)
        for level in LEVELS:
            rows.append((path.name, len(raw) / 1e6, level, statistics.median(times[level]), sizes[level] / 1e6))
    table = tabulate(rows, headers=["trace", "JSON MB", "gzip level", "median s", "gzip MB"], floatfmt=".3f")
    record("Trace export", table)


if __name__ == "__main__":
    main()
