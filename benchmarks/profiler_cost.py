"""Profiler cost: our light profile against a bare torch.profiler, the distortion of each profile, trace size.

    python benchmarks/profiler_cost.py [--cases many_tiny_ops:eval,resnet50:train] [--rounds 3]

Per round, interleaved (the order reverses every round):
  unprofiled  the harness's step timing with no profiler (StepTimer, as characterisation takes it)
  light       our light profile, ``measure.profiling.run_profile(kind="light")``, trace exported
  bare        a hand-written loop under ``torch.profiler.profile`` with the same activities, schedule
              (wait 1, warmup 1, active N) and gzip export, each step timed with perf_counter_ns
  detailed    our detailed profile (shapes, memory, stacks, FLOPs)
Figures are medians over rounds of each round's median active-step time. Distortion is the profiled
median over the unprofiled one, minus 1; the light trace size is of the gzip file we export.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from tabulate import tabulate
from torch.profiler import ProfilerActivity, profile, schedule

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: benchmarks._report, tests.helpers.synthetic_models

from benchmarks._report import interleaved, median_of_ratios, ratio_of_medians, record
from benchmarks.harness_overhead import build, harness_median_ms
from torchbenchmark.measure.profiling import run_profile
from torchbenchmark.measure.steady import steady_process
from torchbenchmark.results.spec import Budget

COST_TARGET = 1.02  # light / bare profiler
LIGHT_DISTORTION_TARGET_PCT = 5.0
TRACE_TARGET_MB = 2.0


def bare_profiler_ms(model: object, mode: str, active: int, path: Path) -> float:
    inputs = model.inputs(mode)
    step = model.eval_step if mode == "eval" else model.train_step
    model.module.train(mode == "train")
    times = []
    with (
        torch.set_grad_enabled(mode == "train"),
        profile(
            activities=[ProfilerActivity.CPU],
            schedule=schedule(wait=1, warmup=1, active=active, repeat=1),
            on_trace_ready=lambda prof: prof.export_chrome_trace(str(path)),
        ) as prof,
    ):
        for _ in range(2 + active):
            start = time.perf_counter_ns()
            step(inputs)
            times.append(time.perf_counter_ns() - start)
            prof.step()
    return statistics.median(times[2:]) / 1e6


def profiled_ms(model: object, mode: str, kind: str, active: int, path: Path) -> float:
    """The median active-step time of our ``kind`` profile of ``active`` steps, its trace exported to ``path``."""
    return run_profile(model, mode, torch.device("cpu"), kind, active, path).steps.median_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="many_tiny_ops:eval,resnet50:train", help="model:mode, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tiny-rounds", type=int, default=30, help="rounds for models under 10 ms a step")
    args = parser.parse_args()
    steady_process()  # set up as a sweep sets up each case's process
    budget = Budget()
    tmp = Path(tempfile.mkdtemp(prefix="profiler_cost."))

    rows = []
    for case in args.cases.split(","):
        name, mode = case.split(":")
        model = build(name)
        harness_median_ms(model, mode, 3)  # warm up
        estimate_ms = harness_median_ms(model, mode, 3)
        # A step under 10 ms is too short for a few active steps to give a stable median: profile
        # more of them per run (the same count in ours and the bare one), and run more rounds.
        tiny = estimate_ms < 10
        active = max(budget.light_steps, int(100 / estimate_ms)) if tiny else budget.light_steps
        rounds = args.tiny_rounds if tiny else args.rounds
        light_trace = tmp / f"{name}-{mode}-light.pt.trace.json.gz"
        variants = {
            "unprofiled": functools.partial(harness_median_ms, model, mode, active),
            "light": functools.partial(profiled_ms, model, mode, "light", active, light_trace),
            "bare": functools.partial(bare_profiler_ms, model, mode, active, tmp / "bare.pt.trace.json.gz"),
            "detailed": functools.partial(profiled_ms, model, mode, "detailed", budget.detailed_steps, tmp / "detailed.pt.trace.json.gz"),
        }
        started = time.perf_counter()
        figures = interleaved(variants, rounds)
        light, bare, plain = figures["light"], figures["bare"], figures["unprofiled"]
        cost = ratio_of_medians(light, bare)
        light_pct = 100 * (ratio_of_medians(light, plain) - 1)
        detailed_pct = 100 * (ratio_of_medians(figures["detailed"], plain) - 1)
        trace_mb = light_trace.stat().st_size / 1e6
        rows.append((f"{name} {mode}", rounds, active, statistics.median(plain), statistics.median(light),
                     statistics.median(bare), cost, median_of_ratios(light, bare),
                     "yes" if cost <= COST_TARGET else "no", light_pct, detailed_pct, trace_mb,
                     f"{time.perf_counter() - started:.0f}"))  # fmt: skip
    table = tabulate(
        rows,
        headers=["case", "rounds", "active", "unprofiled ms", "light ms", "bare prof ms", "light/bare",
                 "median ratio", f"<= {COST_TARGET}", "light dist %", "detailed dist %", "light trace MB", "wall s"],
        floatfmt=("", "", "", ".3f", ".3f", ".3f", ".4f", ".4f", "", ".1f", ".1f", ".3f", ""),
    )  # fmt: skip
    notes = (
        f"Targets: light/bare <= {COST_TARGET}; light distortion of resnet50 train <= "
        f"{LIGHT_DISTORTION_TARGET_PCT:g}%; light trace of resnet50 train < {TRACE_TARGET_MB:g} MB gzip."
    )
    record("Profiler cost and trace size", table, notes)


if __name__ == "__main__":
    main()
