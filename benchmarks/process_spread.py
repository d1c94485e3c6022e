"""Process spread: is a step-time difference between two sweeps made inside a process or between processes?

    python benchmarks/process_spread.py [--model mobilenet_v2] [--mode eval] [--processes 4] [--repeats 3]
                                        [--setups steady,default]

Each fresh process builds the model once and characterises it ``--repeats`` times with the default
budget, then counts the minor page faults of five more steps. Repeats that agree while processes
disagree put the spread in the process, where no amount of measuring inside it can remove it.
``steady`` sets the process up as a sweep does (``torchbenchmark.steady.steady_process``); ``default``
leaves glibc's malloc as it comes. The processes of the two setups alternate, so both see the same load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

from tabulate import tabulate

from _report import append

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import resource, sys, torch
import torchbenchmark as tb
from torchbenchmark.harness import Budget, StepTimer, characterise, timed_call
from torchbenchmark.steady import steady_process
if sys.argv[4] == "steady":
    steady_process()
else:
    torch.set_flush_denormal(True)  # the other half of steady_process, so only the allocator differs
model = tb.load_model(sys.argv[1])
for _ in range(int(sys.argv[3])):
    median_ms = characterise(model, sys.argv[2], Budget(), torch.device("cpu")).steps.median_ms
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    timed_call(model, sys.argv[2], 5, StepTimer())  # five more warm steps, for their page faults
    print(median_ms, (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / 5)
"""


def spread_pct(values: list[float]) -> float:
    return (max(values) / min(values) - 1) * 100


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mobilenet_v2")
    parser.add_argument("--mode", default="eval", choices=("eval", "train"))
    parser.add_argument("--processes", type=int, default=4, help="per setup")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--setups", default="steady,default")
    args = parser.parse_args()

    env = {**os.environ, "KINETO_LOG_LEVEL": "5"}
    setups = args.setups.split(",")
    rows, firsts = [], {setup: [] for setup in setups}
    for index in range(args.processes):
        for setup in setups if index % 2 == 0 else reversed(setups):
            done = subprocess.run([sys.executable, "-c", CHILD, args.model, args.mode, str(args.repeats), setup],
                                  capture_output=True, text=True, check=True, env=env, cwd=ROOT)  # fmt: skip
            pairs = [line.split() for line in done.stdout.splitlines()]
            medians = [float(median) for median, _ in pairs]
            faults = statistics.median(float(f) for _, f in pairs)
            firsts[setup].append(medians[0])
            rows.append((setup, index + 1, *medians, spread_pct(medians), faults))
    rows.sort(key=lambda row: (setups.index(row[0]), row[1]))
    headers = ["setup", "process", *[f"median ms #{i + 1}" for i in range(args.repeats)], "within-process spread %",
               "page faults / step"]  # fmt: skip
    table = tabulate(rows, headers=headers, floatfmt=".1f")
    notes = "Between processes (first repeats), " + "; ".join(
        f"{setup}: {min(values):.1f} to {max(values):.1f} ms, {spread_pct(values):.1f}% spread"
        for setup, values in firsts.items()
    ) + f". {args.model} {args.mode}."
    append("5b. Process spread of the median step time", table, notes)


if __name__ == "__main__":
    main()
