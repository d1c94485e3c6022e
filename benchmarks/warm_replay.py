"""Warm replay: a model's own Python gap with no kernel long enough to make it cold, against its twin's.

    python benchmarks/warm_replay.py [--threads 1] [--cases "dlrm eval,..."] [--dry-run]

The overhead estimate needs the Python between a step's ops as it runs warm: right after a long op the
same glue runs several times slower ("Cold glue"), and the cold factor reads only part of that. The
nil-width twins of ``verdict_accuracy.py`` give the warm gap, but only for the models they were written
for. The estimate takes it for any model from the model's own step replayed (``measure.replay.Replay``:
each op computed once, then handed back without running a kernel). This checks that reading against
the twins'.

For each eval case of ``verdict_accuracy.CASES``: the least Python gap, read as the tool reads a case
(``least_gap_us``), of five light-profiled steps of the real step and of the twin, and of the same step
replayed as the engine replays it (``measure.replay.warm_reading``: five to twenty steps), in this process.

``--rounds N`` replays each case and profiles its twin in turn, N times over, in one process: how far the
replayed gap moves from moment to moment, and whether the twin's, the same glue run at nil width, moves with it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch
from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for benchmarks._report

from benchmarks._report import record
from benchmarks.verdict_accuracy import CASES, Case
from torchbenchmark.analyze import timesplit
from torchbenchmark.analyze.overhead import overhead_events_of_trace
from torchbenchmark.measure.harness import StepTimer, timed_call
from torchbenchmark.measure.profiling import run_profile
from torchbenchmark.measure.replay import Replay, warm_reading
from torchbenchmark.measure.steady import steady_process
from torchbenchmark.registry import model_class

STEPS = 5


def least_gap_us(model: Any, mode: str, trace: Path, replay: Replay | None = None) -> float:
    """The least Python gap of the step as the tool reads it: each gap ending with the step's clock, the kept steps'
    gaps less what each spent blocked; replayed, as the engine replays it (``warm_reading``)."""
    timed_call(model, mode, 3, StepTimer())  # warm
    if replay is not None:
        return warm_reading(model, mode, trace, replay).gap_us
    run = run_profile(model, mode, torch.device("cpu"), "light", STEPS, trace)
    events = overhead_events_of_trace(run.trace_path, run.steps.times_ms).only(timesplit.kept(run.samples))
    return events.less(timesplit.blocked_us(run.samples)).least_gap_us


def measure(case: Case, out_dir: Path) -> list[str]:
    cls = model_class(case.model)
    real = cls(device="cpu", batch_size=case.batch_size) if case.batch_size else cls(device="cpu")
    twin = (case.twin_class or cls)(device="cpu", batch_size=1, **case.twin)
    name = case.label.replace(" ", "_").replace("=", "")
    real_us = least_gap_us(real, case.mode, out_dir / f"{name}-real.pt.trace.json.gz")
    replay_us = least_gap_us(real, case.mode, out_dir / f"{name}-replay.pt.trace.json.gz", Replay())
    twin_us = least_gap_us(twin, case.mode, out_dir / f"{name}-twin.pt.trace.json.gz")
    ratio = (lambda us: f"{us / twin_us:.2f}") if twin_us else (lambda us: "")
    return [case.label, f"{real_us:.0f}", f"{replay_us:.0f}", f"{twin_us:.0f}", ratio(replay_us), ratio(real_us)]


def rounds(case: Case, out_dir: Path, count: int) -> list[list[str]]:
    """The replayed gap and the twin's in turn, ``count`` times over: a row a round, then the least, median and most."""
    cls = model_class(case.model)
    real = cls(device="cpu", batch_size=case.batch_size) if case.batch_size else cls(device="cpu")
    twin = (case.twin_class or cls)(device="cpu", batch_size=1, **case.twin)
    name = case.label.replace(" ", "_").replace("=", "")
    pairs = []
    for round_ in range(count):
        replay_us = least_gap_us(real, case.mode, out_dir / f"{name}-replay{round_}.pt.trace.json.gz", Replay())
        twin_us = least_gap_us(twin, case.mode, out_dir / f"{name}-twin{round_}.pt.trace.json.gz")
        pairs.append((replay_us, twin_us))
    rows = [[case.label, str(i + 1), f"{r:.0f}", f"{t:.0f}", f"{r / t:.2f}"] for i, (r, t) in enumerate(pairs)]
    for label, pick in (("least", min), ("median", statistics.median), ("most", max)):
        replayed, twins, ratios = pick(r for r, _ in pairs), pick(t for _, t in pairs), pick(r / t for r, t in pairs)
        rows.append([case.label, label, f"{replayed:.0f}", f"{twins:.0f}", f"{ratios:.2f}"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    evals = [label for label, case in CASES.items() if case.mode == "eval"]
    parser.add_argument("--cases", default=",".join(evals), help="eval labels of verdict_accuracy.CASES, comma-separated")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, help="replay each case and profile its twin in turn, this many times over")
    parser.add_argument("--dry-run", action="store_true", help="print the table, do not record it in RESULTS.md")
    args = parser.parse_args()
    steady_process()
    torch.set_num_threads(args.threads)
    out_dir = Path(tempfile.mkdtemp(prefix="warm_replay_"))
    if args.rounds:
        rows = [row for label in args.cases.split(",") for row in rounds(CASES[label], out_dir, args.rounds)]
        headers = ["case", "round", "replayed gap µs", "twin gap µs", "replayed / twin"]
        table = tabulate(rows, headers=headers, disable_numparse=True)
        summary = (
            f"the replay read as a case reads it, the twin's least Python gap of {STEPS} light-profiled steps, in turn; "
            f"torch threads {args.threads}"
        )
        record("Verdict accuracy", table, summary, part="Warm replay, round by round", dry_run=args.dry_run)
        return
    rows = [measure(CASES[label], out_dir) for label in args.cases.split(",")]
    headers = ["case", "real gap µs", "replayed gap µs", "twin gap µs", "replayed / twin", "real / twin"]
    table = tabulate(rows, headers=headers, disable_numparse=True)
    summary = (
        f"each gap read as the tool reads a case: the least of {STEPS} light-profiled steps, the replay's of 5 to 20 as the "
        f"engine replays it; torch threads {args.threads}"
    )
    record("Verdict accuracy", table, summary, part="Warm replay", dry_run=args.dry_run)


if __name__ == "__main__":
    main()
