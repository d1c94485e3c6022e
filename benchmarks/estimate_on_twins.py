"""The estimate on the twins themselves: a step with next to no arithmetic is nearly all overhead.

    python benchmarks/estimate_on_twins.py [--threads 1] [--cases "dlrm eval,..."] [--no-detailed] [--dry-run]

``verdict_accuracy.py`` holds the tool to each case's twin: the same ops at nil width, whose step time is
taken as the overhead. Here the tool diagnoses the twin itself, as a user would (``collect_diagnostics``
with the twin's constructor arguments, at batch 1). Its arithmetic being next to nil, the twin's overhead
is at most its step, nearly all of it: an estimate above the twin's step counts something twice, and its
terms say which. The interval's low end, above the step, says the interval missed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch
from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for benchmarks._report

from benchmarks._report import record
from benchmarks.verdict_accuracy import BUDGET, CASES, Case
from torchbenchmark.api import collect_diagnostics
from torchbenchmark.measure.steady import steady_process

TERMS = ("call", "nested", "autograd", "python")


def measure(case: Case, out_dir: Path, detailed: bool) -> list[str]:
    model = case.twin_class or case.model
    row = collect_diagnostics(model, case.mode, config=case.twin, batch_size=1, budget=BUDGET, out_dir=out_dir, detailed=detailed)
    if row.status != "ok":
        return [case.label, row.status, row.error or ""]
    d, step_us = row.dispatch, row.step_time.median_ms * 1e3
    terms = {name: d.terms_us.get(name, 0.0) for name in TERMS}
    others = sum(d.terms_us.values()) - sum(terms.values())  # an RNN's or a convolution's set-up
    low, high = d.overhead_interval
    return [
        case.label, f"{step_us:.0f}", f"{row.step_time.min_ms * 1e3:.0f}", *(f"{terms[name]:.0f}" for name in TERMS), f"{others:.0f}",
        f"{sum(d.terms_us.values()):.0f}", f"{d.overhead_fraction_uncapped:.2f}", f"{low:.2f}-{high:.2f}",
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES), help="labels of verdict_accuracy.CASES, comma-separated")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--no-detailed", action="store_true", help="the estimate without the detailed profile")
    parser.add_argument("--dry-run", action="store_true", help="print the table, do not record it in RESULTS.md")
    args = parser.parse_args()
    steady_process()
    torch.set_num_threads(args.threads)
    out_dir = Path(tempfile.mkdtemp(prefix="estimate_on_twins_"))
    rows = [measure(CASES[label], out_dir, not args.no_detailed) for label in args.cases.split(",")]
    headers = ["twin of", "step µs", "fastest µs", *(f"{name} µs" for name in TERMS), "set-up µs", "estimate µs", "share", "interval"]
    table = tabulate(rows, headers=headers, disable_numparse=True)
    profiles = "the light profile only" if args.no_detailed else "both profiles"
    summary = f"each twin diagnosed at batch 1 (its median step, its terms per step); torch threads {args.threads}; {profiles}"
    part = f"The estimate on the twins, {args.threads} thread{'s' if args.threads > 1 else ''}"
    record("Verdict accuracy", table, summary, part=part, dry_run=args.dry_run)


if __name__ == "__main__":
    main()
