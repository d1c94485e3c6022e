"""Process spread: is a step-time difference between two sweeps made inside a process or between processes?

    python benchmarks/process_spread.py [--model mobilenet_v2] [--mode eval] [--processes 4] [--repeats 3]

Each fresh process builds the model once and characterises it ``--repeats`` times with the default
budget. Repeats that agree while processes disagree put the spread in the process (its layout, its
threads), where no amount of measuring inside it can remove it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from tabulate import tabulate

from _report import append

CHILD = """
import sys, torch
torch.set_flush_denormal(True)
import torchbenchmark as tb
from torchbenchmark.harness import Budget, characterise
model = tb.load_model(sys.argv[1])
print(*[characterise(model, sys.argv[2], Budget(), torch.device("cpu")).steps.median_ms for _ in range(int(sys.argv[3]))])
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mobilenet_v2")
    parser.add_argument("--mode", default="eval", choices=("eval", "train"))
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    env = {**os.environ, "KINETO_LOG_LEVEL": "5"}
    rows = []
    for index in range(args.processes):
        done = subprocess.run([sys.executable, "-c", CHILD, args.model, args.mode, str(args.repeats)],
                              capture_output=True, text=True, check=True, env=env)  # fmt: skip
        medians = [float(x) for x in done.stdout.split()]
        rows.append((index + 1, *medians, (max(medians) / min(medians) - 1) * 100))
    firsts = [row[1] for row in rows]
    headers = ["process", *[f"median ms #{i + 1}" for i in range(args.repeats)], "within-process spread %"]
    table = tabulate(rows, headers=headers, floatfmt=".1f")
    notes = f"Between processes (first repeats): {(max(firsts) / min(firsts) - 1) * 100:.1f}% spread, {args.model} {args.mode}."
    append("5b. Process spread of the median step time", table, notes)


if __name__ == "__main__":
    main()
