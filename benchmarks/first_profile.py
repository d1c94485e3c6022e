"""The first light profiles in a case's process: their steps against the unprofiled ones, and the page faults.

    python benchmarks/first_profile.py [--cases mobilenet_v2:train,resnet50:train] [--processes 2] [--slack-mb 512]

A sweep profiles each case once, in a process set up by ``steady_process`` (freed memory kept, large tensors
in huge pages). Each arm below runs in fresh processes, taking turns, each process timing its unprofiled steps
and then three light profiles in a row (``run_profile``, as a sweep takes it), with the page faults per step:
  steady        as a sweep runs a case
  small pages   the same with PyTorch's ``THP_MEM_ALLOC_ENABLE`` off
  slack         as a sweep, with ``--slack-mb`` of memory touched and freed before the first profile, so the
                heap holds that much free, faulted-in memory for what the profiler records
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: benchmarks._report

from benchmarks._report import record

ARMS = ("steady", "small pages", "slack")
SESSIONS = 3


def faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def one_process(case: str, arm: str, slack_mb: int) -> dict[str, list[float]]:
    """In this process: the unprofiled step's median, then each light profile's median over it and its faults a step."""
    import torch

    from torchbenchmark.measure import steady
    from torchbenchmark.measure.harness import StepTimer, timed_call
    from torchbenchmark.measure.profiling import run_profile
    from torchbenchmark.registry import model_class

    steady.steady_process()
    if arm == "small pages":
        os.environ.pop(steady.THP_ENV, None)
    name, mode = case.split(":")
    model = model_class(name)(device="cpu")
    timed_call(model, mode, 4, StepTimer())  # warm-up

    def plain_ms() -> tuple[float, float]:
        before, timer = faults(), StepTimer()
        timed_call(model, mode, 6, timer)
        return statistics.median(d / 1e6 for d in timer.durations_ns[1:]), (faults() - before) / 6

    plain, plain_faults = plain_ms()
    if arm == "slack":
        torch.ones(slack_mb << 18)  # touched, then freed: the heap keeps it
    ratios, fault_rates = [], []
    with tempfile.TemporaryDirectory() as folder:
        for session in range(SESSIONS):
            before = faults()
            run = run_profile(model, mode, torch.device("cpu"), "light", 4, Path(folder) / f"{session}.pt.trace.json.gz")
            ratios.append(run.steps.median_ms / plain)
            fault_rates.append((faults() - before) / 6)  # its wait, warm-up and 4 active steps
    return {"plain ms": [plain], "plain faults": [plain_faults], "ratios": ratios, "faults": fault_rates}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="mobilenet_v2:train,resnet50:train", help="model:mode, comma-separated")
    parser.add_argument("--processes", type=int, default=2, help="processes per arm and case, taking turns")
    parser.add_argument("--slack-mb", type=int, default=512)
    parser.add_argument("--one", nargs=2, metavar=("CASE", "ARM"), help=argparse.SUPPRESS)  # a child process
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_process(*args.one, args.slack_mb)))
        return
    rows = []
    for case in args.cases.split(","):
        found: dict[str, list[dict[str, list[float]]]] = {arm: [] for arm in ARMS}
        for _ in range(args.processes):
            for arm in ARMS:
                child = [sys.executable, __file__, "--one", case, arm, "--slack-mb", str(args.slack_mb)]
                done = subprocess.run(child, capture_output=True, text=True, check=True)
                found[arm].append(json.loads(done.stdout.strip().splitlines()[-1]))
        for arm, runs in found.items():
            rows.append((case.replace(":", " "), arm, len(runs), f"{statistics.median(r['plain ms'][0] for r in runs):.1f}",
                         f"{statistics.median(r['plain faults'][0] for r in runs):.0f}",
                         *(" / ".join(f"{r['ratios'][s]:.2f}" for r in runs) for s in range(SESSIONS)),
                         *(" / ".join(f"{r['faults'][s]:.0f}" for r in runs) for s in range(SESSIONS))))  # fmt: skip
    table = tabulate(
        rows,
        headers=["case", "arm", "processes", "unprofiled ms", "faults/step", "1st light / unprofiled", "2nd", "3rd",
                 "1st faults/step", "2nd", "3rd"],
        disable_numparse=True,
    )  # fmt: skip
    notes = (
        f"Each cell: one figure per process, in the order they ran. `slack`: {args.slack_mb} MB touched and freed before the first profile."
    )
    record("Profiler cost and trace size", table, notes, part="The first profile in a process")


if __name__ == "__main__":
    main()
