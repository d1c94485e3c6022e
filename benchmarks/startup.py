"""Start-up: wall time of ``diagnostics.py --list``, and what ``import torchbenchmark`` adds over ``import torch``.

    python benchmarks/startup.py [--rounds 10]

Each round runs the three commands below as fresh processes, interleaved (the order reverses every
round), and we quote the median wall time of each; the import cost is the median of the per-round
differences, so both imports of a pair see the same load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for benchmarks._report

from benchmarks._report import interleaved, record

ROOT = Path(__file__).resolve().parents[1]
LIST_TARGET_S = 2.5
IMPORT_TARGET_S = 0.2
COMMANDS = {
    "import torch": [sys.executable, "-c", "import torch"],
    "import torchbenchmark": [sys.executable, "-c", "import torchbenchmark"],
    "diagnostics.py --list": [sys.executable, "diagnostics.py", "--list"],
}


def wall_s(argv: list[str]) -> float:
    env = dict(os.environ, KINETO_LOG_LEVEL="5", HF_HUB_OFFLINE="1")
    started = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    wall_s(COMMANDS["diagnostics.py --list"])  # warm the file cache
    figures = interleaved({name: (lambda argv=argv: wall_s(argv)) for name, argv in COMMANDS.items()}, args.rounds)
    added = statistics.median(b - a for a, b in zip(figures["import torch"], figures["import torchbenchmark"]))
    list_s = statistics.median(figures["diagnostics.py --list"])
    rows = [(name, statistics.median(times), min(times), max(times)) for name, times in figures.items()]
    rows.append(("torchbenchmark over torch (median of differences)", added, None, None))
    table = tabulate(rows, headers=["command", "median s", "min s", "max s"], floatfmt=".3f", missingval="")
    notes = (
        f"Targets: --list <= {LIST_TARGET_S} s ({'met' if list_s <= LIST_TARGET_S else 'missed'}); "
        f"import torchbenchmark adds <= {IMPORT_TARGET_S} s ({'met' if added <= IMPORT_TARGET_S else 'missed'}). "
        f"{args.rounds} interleaved rounds of fresh processes."
    )
    record("Start-up", table, notes)


if __name__ == "__main__":
    main()
