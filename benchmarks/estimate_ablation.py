"""The overhead estimate's parts, each taken out in turn, over the inputs one measurement gave.

    python benchmarks/estimate_ablation.py RUN_DIR [RUN_DIR ...] [--dry-run]

``benchmarks/verdict_accuracy.py`` keeps, beside each case's traces, every input the tool's estimate was
made from (``capture``): the light profile's events, the replayed step's, the calibration and the step
times. Here each part is taken out of the same inputs and the estimate made again, so what a part does is
seen apart from the noise between two measurements; that noise is shown beside it (``spread``): how far
the same case's estimate against its twin moved between two runs of the benchmark at one thread count
(with and without the detailed profile, which differ only for an RNN's time steps, so the RNN cases are
left out of it).

A part pays where taking it out flips a verdict, or moves the estimate away from the twin by more than
that spread in some case. Beside, how many intervals hold their truth (the twin's overhead over the tool's
own median step, as verdict_accuracy.py holds them) with the part and without it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import pickle
import statistics
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for benchmarks._report

from benchmarks._report import record
from torchbenchmark.analyze import pricing
from torchbenchmark.analyze.verdict import verdict

INPUTS = "estimate_inputs.pkl"


@contextlib.contextmanager
def capture(into: dict[str, Any]) -> Iterator[None]:
    """The arguments and the result of the estimate made in this block, and torch's threads, kept in ``into``."""
    import torch

    estimate, into["threads"] = pricing.estimate, torch.get_num_threads()

    def estimate_kept(*args: Any, **kwargs: Any) -> pricing.Estimate:
        into["args"] = args + tuple(kwargs.values())
        into["result"] = estimate(*args, **kwargs)
        return into["result"]

    pricing.estimate = estimate_kept
    try:
        yield
    finally:
        pricing.estimate = estimate


# Each part, and how the estimate is made without it (``rebuild``'s ``without``).
PARTS = {
    "argument parsing": "no Python gap per top-level call taken out",
    "replay": "the real step's gap, not the replayed step's",
    "lesser gap": "the replayed gap, not the lesser of it and the real steps' (the top the greater)",
    "RNN prices": "an RNN layer priced at its events' dispatch alone: no set-up, no time steps",
}
RNN_PRICES = ("rnn_us", "rnn_step_us", "rnn_backward_us", "rnn_backward_step_us")
HEADERS = ["part", "taken out", "verdicts flipped", "further from twin", "nearer twin", "median move", "held with/without", "pays", "flips"]
BEFORE = (frozenset(), frozenset({"lesser gap"}))  # the estimate as it is, and as it was made before the lesser gap


def rebuild(inputs: dict[str, Any], without: frozenset[str] = frozenset()) -> pricing.Estimate:
    """The estimate made again from ``inputs`` (``capture``), with the parts named in ``without`` taken out."""
    events, calibration, step_ms, *_, replayed = inputs["args"]  # a run kept before 2026-12-05 also kept the step's IQR
    if "replay" in without:
        replayed = None
    if "lesser gap" in without and replayed is not None:  # the real reading raised to the greater, as the top took it
        floor = replayed.least_gap_us
        events = dataclasses.replace(events, python_gap_us_per_step=tuple(max(gap, floor) for gap in events.python_gap_us_per_step))
    if "argument parsing" in without:
        calibration = pricing.Calibration(tuple(dataclasses.replace(p, call_gap_us=0.0) for p in calibration.repeats))
    if "RNN prices" in without:
        calibration = pricing.Calibration(tuple(dataclasses.replace(p, **dict.fromkeys(RNN_PRICES, 0.0)) for p in calibration.repeats))
    return pricing.estimate(events, calibration, step_ms, replayed)


@dataclasses.dataclass(frozen=True)
class Case:
    """One case of one run of the benchmark: its truth and the inputs of its estimate."""

    run: str  # the run's folder name: its threads and profiles
    label: str
    real_ms: float
    twin: float
    inputs: dict[str, Any]

    def against_twin(self, estimate: pricing.Estimate) -> float:
        """The estimate over the twin's share, both of the same real step (as verdict_accuracy.py takes them)."""
        return estimate.overhead_us / (self.real_ms * 1e3) / self.twin

    def holds(self, estimate: pricing.Estimate) -> bool:
        """Whether the estimate's interval holds the twin's overhead over the tool's own median step."""
        truth = self.twin * self.real_ms / self.inputs["args"][2]
        return estimate.interval[0] <= truth <= estimate.interval[1]


def load(run_dir: Path) -> list[Case]:
    rows = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    cases = []
    for row in rows:
        path = Path(row["trace"]).parent.parent / INPUTS
        with path.open("rb") as file:
            inputs = pickle.load(file)
        cases.append(Case(run_dir.name, row["case"], row["real ms"], row["twin"], inputs))
    return cases


def spread(cases: list[Case]) -> float:
    """The median, over the cases with no RNN, of how far apart two runs at one thread count put the estimate
    against the twin (|log| of the ratio of the two ratios): the noise between two measurements."""
    by_key: dict[tuple[int, str], list[float]] = {}
    for case in cases:
        if case.inputs["result"].events_per_step.get("rnn"):
            continue
        threads = case.inputs["threads"]
        by_key.setdefault((threads, case.label), []).append(math.log(case.against_twin(case.inputs["result"])))
    moves = [abs(a - b) for logs in by_key.values() if len(logs) == 2 for a, b in [logs]]
    return statistics.median(moves) if moves else 0.0


def ablation(cases: list[Case], noise: float) -> list[tuple[Any, ...]]:
    """One row per part: the verdicts that flip without it, the cases it moves away from the twin by more
    than ``noise`` (and towards it), and the median move."""
    rows = []
    for name, what in PARTS.items():
        flips, away, towards, moves, held = [], 0, 0, [], [0, 0]
        for case in cases:
            base, without = rebuild(case.inputs), rebuild(case.inputs, frozenset({name}))
            held[0] += case.holds(base)
            held[1] += case.holds(without)
            error_base, error_without = abs(math.log(case.against_twin(base))), abs(math.log(case.against_twin(without)))
            moves.append(error_without - error_base)
            away += error_without - error_base > noise
            towards += error_base - error_without > noise
            if verdict(base.fraction) != verdict(without.fraction):
                flips.append(f"{case.label} ({case.run})")
        pays = "yes" if flips or away else "no"
        median = f"{statistics.median(moves):+.3f}"
        rows.append((name, what, len(flips), away, towards, median, f"{held[0]} / {held[1]}", pays, "; ".join(flips)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="verdict_accuracy.py output folders (--out)")
    parser.add_argument("--dry-run", action="store_true", help="print the table, do not record it in RESULTS.md")
    args = parser.parse_args()
    cases = [case for run in args.runs for case in load(run)]
    for case in cases:  # the inputs must make the estimate the tool made (a run kept before 7c07414: with no lesser gap)
        made = case.inputs["result"].overhead_us
        if not any(math.isclose(rebuild(case.inputs, parts).overhead_us, made, rel_tol=1e-9) for parts in BEFORE):
            raise SystemExit(f"{case.label} ({case.run}): rebuilt {rebuild(case.inputs).overhead_us:.1f} µs against the tool's {made:.1f}")
    noise = spread(cases)
    table = tabulate(
        ablation(cases, noise),
        headers=HEADERS,
        disable_numparse=True,
    )
    notes = (
        f"{len(cases)} case-runs from {', '.join(run.name for run in args.runs)}; a move counts past {noise:.3f} in |log(estimate / twin)|, "
        "the median distance between two runs' estimates of one case at one thread count; median move: + further from the twin."
    )
    record("Estimate ablation", table, notes, part="The estimate's parts", dry_run=args.dry_run)


if __name__ == "__main__":
    main()
