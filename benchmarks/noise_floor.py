"""Noise floor: how well two measurements of one warm model agree on this machine, with nothing else changed.

    python benchmarks/noise_floor.py [--cases mobilenet_v2:eval,dlrm:eval,...] [--blocks 10]

For each case, one process (set up as a sweep's is) builds the model, warms it up with the harness,
then takes ``--blocks`` measurements back to back, each exactly as characterisation takes one window
(about 2 s of steps, their median). Nothing differs between the blocks but the moment they were taken,
so the share of block pairs within 5% of each other is how often two single windows agree on this
machine at this time: what characterisation's agreeing windows improve on, and a guide to the ceiling
for ``repeatability.py``.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
from pathlib import Path

import torch
from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for benchmarks._report

from benchmarks._report import record
from benchmarks.harness_overhead import build, harness_median_ms
from torchbenchmark.measure.harness import warm_up
from torchbenchmark.measure.steady import steady_process
from torchbenchmark.results.spec import Budget

CASES = "mobilenet_v2:eval,squeezenet1_1:train,dlrm:eval,lstm_lm:train,soft_actor_critic:eval,pyhpc_equation_of_state:eval"
DIFF_PCT = 5.0


def diff_pct(a: float, b: float) -> float:
    return 100 * abs(a - b) / min(a, b)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=CASES, help="model:mode, comma-separated")
    parser.add_argument("--blocks", type=int, default=10)
    args = parser.parse_args()
    steady_process()
    budget = Budget()

    rows, pooled = [], []
    for case in args.cases.split(","):
        name, mode = case.split(":")
        model = build(name)
        warmup, _ = warm_up(model, mode, budget)
        steps = budget.measured_steps(statistics.median(warmup[-budget.warmup_window :]))
        blocks = [harness_median_ms(model, mode, steps) for _ in range(args.blocks)]
        diffs = [diff_pct(a, b) for a, b in itertools.combinations(blocks, 2)]
        adjacent = [diff_pct(a, b) for a, b in itertools.pairwise(blocks)]
        within = 100 * sum(d <= DIFF_PCT for d in diffs) / len(diffs)
        pooled.append(within)
        rows.append((f"{name} {mode}", steps, min(blocks), statistics.median(blocks), max(blocks),
                     statistics.median(adjacent), max(diffs), within))  # fmt: skip
        del model
    table = tabulate(
        rows,
        headers=["case", "steps/block", "min ms", "median ms", "max ms", "adjacent diff % (median)", "max diff %",
                 f"pairs within {DIFF_PCT:g}% (%)"],
        floatfmt=("", "", ".3f", ".3f", ".3f", ".1f", ".1f", ".0f"),
    )  # fmt: skip
    notes = (
        f"{args.blocks} blocks per case, back to back in one warm process, {torch.get_num_threads()} threads. "
        f"Pairs of blocks within {DIFF_PCT:g}%, averaged over cases: {statistics.mean(pooled):.0f}%: how often "
        f"two single windows agree on this machine at this time."
    )
    record("Noise floor", table, notes)


if __name__ == "__main__":
    main()
