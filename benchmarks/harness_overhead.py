"""Harness overhead: the median step time the harness measures over that of a bare hand-written loop.

    python benchmarks/harness_overhead.py [--rounds 15] [--models many_tiny_ops,resnet50] [--mode eval]

A: the harness's own measurement, as ``measure_windows`` takes it: ``model.eval(niter=n+1, step_fn=timer)``
   with the per-step accounting of what the kernel saw (``StepAccount``, reading ``/proc`` at each step
   boundary) as the timer's after-step hook, the first step (which holds the call's entry cost) dropped.
B: a bare loop of the same step, each timed with ``time.perf_counter_ns`` around ``model.eval_step(inputs)``
   (under ``torch.no_grad()``), which is what the harness's step boundaries enclose.
Rounds are interleaved (A B A B ...); we quote the median of each variant's per-round medians and the ratio.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from pathlib import Path

import torch
from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: benchmarks._report, tests.helpers.synthetic_models

from benchmarks._report import interleaved, median_of_ratios, ratio_of_medians, record
from torchbenchmark import load_model
from torchbenchmark.measure.harness import StepTimer, timed_call
from torchbenchmark.measure.schedstat import StepAccount
from torchbenchmark.measure.steady import steady_process

TARGET = 1.02
STEP_BUDGET_S = 1.0  # time per variant per round; sets the step count of each model


def build(name: str) -> object:
    if name == "many_tiny_ops":
        from tests.helpers.synthetic_models import ManyTinyOps

        return ManyTinyOps(device="cpu")
    return load_model(name, device="cpu")


def harness_median_ms(model: object, mode: str, steps: int) -> float:
    account = StepAccount()
    timer = StepTimer(after_step=account)
    account.start()
    timed_call(model, mode, steps + 1, timer)
    account.clock.close()
    return statistics.median(timer.inner_ns()) / 1e6


def bare_median_ms(model: object, mode: str, steps: int) -> float:
    inputs = model.inputs(mode)
    step = model.eval_step if mode == "eval" else model.train_step
    model.module.train(mode == "train")
    times = []
    with torch.set_grad_enabled(mode == "train"):
        for _ in range(steps):
            start = time.perf_counter_ns()
            step(inputs)
            times.append(time.perf_counter_ns() - start)
    return statistics.median(times) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="many_tiny_ops,resnet50")
    parser.add_argument("--mode", default="eval", choices=("eval", "train"))
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    steady_process()  # set up as a sweep sets up each case's process

    rows = []
    for name in args.models.split(","):
        model = build(name)
        bare_median_ms(model, args.mode, 5)  # warm up: lazy state, allocator, caches
        estimate_ms = bare_median_ms(model, args.mode, 5)
        steps = max(5, min(1000, int(STEP_BUDGET_S * 1e3 / estimate_ms)))
        figures = interleaved(
            {"harness": functools.partial(harness_median_ms, model, args.mode, steps),
             "bare": functools.partial(bare_median_ms, model, args.mode, steps)},
            args.rounds,
        )  # fmt: skip
        a, b = figures["harness"], figures["bare"]
        ratio = ratio_of_medians(a, b)
        rows.append((f"{name} {args.mode}", steps, args.rounds, statistics.median(a), statistics.median(b),
                     ratio, median_of_ratios(a, b), "yes" if ratio <= TARGET else "no"))  # fmt: skip
    table = tabulate(
        rows,
        headers=["case", "steps/round", "rounds", "harness ms", "bare ms", "ratio", "median ratio", f"<= {TARGET}"],
        floatfmt=("", "", "", ".4f", ".4f", ".4f", ".4f", ""),
    )
    record("Harness overhead", table)


if __name__ == "__main__":
    main()
