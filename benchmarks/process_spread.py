"""Process spread: is a step-time difference between two sweeps made inside a process or between processes?

    python benchmarks/process_spread.py [--model mobilenet_v2] [--mode eval] [--processes 4] [--rounds 6]
                                        [--setups steady,default]

``--processes`` fresh processes per setup each build and warm up the model, then stay alive and take
turns: every round, each process in turn measures one window of steps as characterisation does
(about 2 s) and counts the minor page faults of five more. Taking turns gives every process the same
spells of load, so what still differs between their medians is the process itself. ``steady`` sets a
process up as a sweep does (``torchbenchmark.measure.steady.steady_process``); ``small_pages`` does
too, but leaves tensors in 4 KB pages (``THP_MEM_ALLOC_ENABLE=0``); ``default`` leaves glibc's malloc
and the pages as they come (denormals are flushed in all three, so only the memory setting differs).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for benchmarks._report

from benchmarks._report import record
from torchbenchmark.measure.steady import THP_ENV

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import resource, statistics, sys, torch
import torchbenchmark as tb
from torchbenchmark.measure.harness import StepTimer, timed_call, warm_up
from torchbenchmark.measure.steady import steady_process
from torchbenchmark.results.spec import Budget
name, mode, setup = sys.argv[1:4]
if setup in ("steady", "small_pages"):
    steady_process()
else:
    torch.set_flush_denormal(True)
model = tb.load_model(name)
budget = Budget()
warmup, _ = warm_up(model, mode, budget)
count = budget.measured_steps(statistics.median(warmup[-budget.warmup_window:]))
print("ready", flush=True)
for _ in sys.stdin:
    timer = StepTimer()
    timed_call(model, mode, count + 1, timer)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    timed_call(model, mode, 5, StepTimer())
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / 5
    with open("/proc/self/smaps_rollup") as smaps:  # Linux: the process's memory in transparent huge pages
        huge = next((int(line.split()[1]) for line in smaps if line.startswith("AnonHugePages:")), 0)
    print(statistics.median(timer.inner_ns()) / 1e6, faults, huge / 1024, flush=True)
"""


def spread_pct(values: list[float]) -> float:
    return (max(values) / min(values) - 1) * 100


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mobilenet_v2")
    parser.add_argument("--mode", default="eval", choices=("eval", "train"))
    parser.add_argument("--processes", type=int, default=4, help="per setup")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--setups", default="steady,default")
    args = parser.parse_args()

    env = {key: value for key, value in os.environ.items() if key != THP_ENV} | {"KINETO_LOG_LEVEL": "5"}
    setups = args.setups.split(",")
    # Processes of the setups alternate in the turn order, so neither setup always goes first.
    order = [(setup, index) for index in range(args.processes) for setup in setups]
    workers = {
        key: subprocess.Popen([sys.executable, "-c", CHILD, args.model, args.mode, key[0]], cwd=ROOT,
                              env=env | ({THP_ENV: "0"} if key[0] == "small_pages" else {}),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        for key in order
    }  # fmt: skip
    for worker in workers.values():
        if worker.stdout.readline().strip() != "ready":
            raise SystemExit(f"a worker failed to start: exit {worker.wait()}")
    medians: dict[tuple[str, int], list[float]] = {key: [] for key in order}
    faults: dict[tuple[str, int], list[float]] = {key: [] for key in order}
    huge_mb: dict[tuple[str, int], float] = {}
    for _ in range(args.rounds):
        for key in order:
            workers[key].stdin.write("measure\n")
            workers[key].stdin.flush()
            median, fault, huge = workers[key].stdout.readline().split()
            medians[key].append(float(median))
            faults[key].append(float(fault))
            huge_mb[key] = float(huge)
    for worker in workers.values():
        worker.stdin.close()
        worker.wait()

    rows = [
        (setup, index + 1, statistics.median(medians[setup, index]), spread_pct(medians[setup, index]),
         statistics.median(faults[setup, index]), huge_mb[setup, index])
        for setup in setups for index in range(args.processes)
    ]  # fmt: skip
    table = tabulate(
        rows,
        headers=["setup", "process", "median of rounds ms", "within-process spread %", "page faults / step", "in huge pages MB"],
        floatfmt=("", "", ".1f", ".1f", ".0f", ".0f"),
    )
    per_setup = {setup: [row[2] for row in rows if row[0] == setup] for setup in setups}
    notes = (
        f"{args.model} {args.mode}, {args.processes} processes per setup taking turns for {args.rounds} rounds. "
        "Between processes: "
        + "; ".join(
            f"{setup}: {min(values):.1f} to {max(values):.1f} ms, {spread_pct(values):.1f}% spread" for setup, values in per_setup.items()
        )
        + "."
    )
    record("Process spread", table, notes, part="glibc's malloc as it comes against a steady process")


if __name__ == "__main__":
    main()
