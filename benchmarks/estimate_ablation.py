"""The overhead estimate's corrections, each taken out in turn, over the inputs one measurement gave.

    python benchmarks/estimate_ablation.py RUN_DIR [RUN_DIR ...] [--dry-run]

``benchmarks/verdict_accuracy.py`` keeps, beside each case's traces, every input the tool's estimate was
made from (``capture``): the light profile's events before any correction, each step's time off the CPU,
each replay session's reading, the cold factor, the calibration, the step times. Here each correction is
taken out of the same inputs and the estimate made again, so what a correction does is seen apart from
the noise between two measurements; that noise is shown beside it (``spread``): how far the same case's
estimate against its twin moved between two runs of the benchmark at one thread count (with and without
the detailed profile, which differ only for an RNN's time steps, so the RNN cases are left out of it).

A correction pays where taking it out flips a verdict, or moves the estimate away from the twin by more
than that spread in some case.
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
from torchbenchmark.analyze import pricing, timesplit
from torchbenchmark.analyze.overhead import OverheadEvents
from torchbenchmark.analyze.verdict import verdict

INPUTS = "estimate_inputs.pkl"


@contextlib.contextmanager
def capture(into: dict[str, Any]) -> Iterator[None]:
    """Every input of the estimates made in this block, kept in ``into``: the light and replayed steps' events as
    read from their traces with each step's time off the CPU, the RNN time step's price at the case's threads,
    and the estimate's own arguments and result."""
    from torchbenchmark.measure import profiling
    from torchbenchmark.run import engine

    on_cpu, estimate, rnn_extra = profiling.ProfileRun.on_cpu, pricing.estimate, engine.rnn_step_at_threads_us
    into["profiles"] = []

    def on_cpu_kept(run: Any, events: OverheadEvents, own_us: float | None = None) -> OverheadEvents:
        times = run.steps.times_ms
        into["profiles"].append({
            "events": events, "off_us": timesplit.off_cpu_us(run.samples, times), "step_us": [ms * 1e3 for ms in times],
            "own_us": timesplit.own_off_cpu_us(run.samples, times), "kept": timesplit.kept(run.samples),
        })  # fmt: skip
        return on_cpu(run, events, own_us)

    def estimate_kept(*args: Any, **kwargs: Any) -> pricing.Estimate:
        into["args"], into["kwargs"] = args, kwargs
        into["result"] = estimate(*args, **kwargs)
        return into["result"]

    def rnn_extra_kept(*args: Any, **kwargs: Any) -> float:
        into["rnn_extra_us"] = rnn_extra(*args, **kwargs)
        return into["rnn_extra_us"]

    profiling.ProfileRun.on_cpu, pricing.estimate, engine.rnn_step_at_threads_us = on_cpu_kept, estimate_kept, rnn_extra_kept
    try:
        yield
    finally:
        profiling.ProfileRun.on_cpu, pricing.estimate, engine.rnn_step_at_threads_us = on_cpu, estimate, rnn_extra


def _on_cpu(profile: dict[str, Any], own_us: list[float] | None, by_share: bool = True) -> OverheadEvents:
    events: OverheadEvents = profile["events"]
    if not by_share:  # everything a step spent off the CPU taken from its gaps
        gaps = tuple(max(0.0, gap - off) for gap, off in zip(events.python_gap_us_per_step, profile["off_us"]))
        least = None if events.least_python_gap_us is None else max(0.0, events.least_python_gap_us - min(profile["off_us"]))
        return dataclasses.replace(events, python_gap_us_per_step=gaps, least_python_gap_us=least).only(profile["kept"])
    return events.on_cpu(profile["off_us"], profile["step_us"], own_us).only(profile["kept"])


# Each correction, and how the estimate is made without it (``rebuild``'s ``without``).
CORRECTIONS = {
    "least by position": "the gap of the least step, not each gap's least over the steps",
    "least gap": "the median step's gap, not the least",
    "empty step": "no Python gap of an empty profiled step taken out",
    "argument parsing": "no Python gap per top-level call taken out",
    "off-CPU": "no time off the CPU taken out of the gaps",
    "off-CPU by share": "all of each step's time off the CPU taken out of its gaps",
    "own off-CPU from replay": "what a step spends off the CPU of its own accord read from the real steps",
    "cold factor": "no cold factor: the gap divided by 1",
    "replay": "no replayed gap: the cold factor alone",
    "replay and cold factor": "neither: the gap as measured",
    "replay sessions": "one replay session, not the least of three",
    "lesser of the two": "the replayed gap alone, where there is one",
    "measured gap held": "the replayed gap not held to the gap as measured",
    "RNN step at threads": "no extra price for an RNN time step at more than one thread",
    "quickest step": "the interval's top not divided by the quickest step",
}


def rebuild(inputs: dict[str, Any], without: frozenset[str] = frozenset()) -> pricing.Estimate:
    """The estimate made again from ``inputs`` (``capture``), with the corrections named in ``without`` taken out."""
    events, calibration, step_ms, iqr_ms, warmth, threads, step_min_ms = inputs["args"]
    *sessions, light = inputs["profiles"]
    replayed = warmth.replayed_gap_us is not None and sessions
    if replayed and "replay sessions" in without:
        sessions = sessions[:1]
    replay_gap = min(_on_cpu(s, None).least_gap_us for s in sessions) if replayed else None
    replay_own = min((us for s in sessions for us in s["own_us"]), default=None) if replayed else None
    own = None if replay_own is None or "own off-CPU from replay" in without else [replay_own] * len(light["off_us"])
    if "off-CPU" in without:
        events = light["events"].only(light["kept"])
    else:
        events = _on_cpu(light, own, by_share="off-CPU by share" not in without)
    if "least gap" in without:
        middle = events.median_python_gap_us
        events = dataclasses.replace(events, python_gap_us_per_step=(middle,) * events.steps, least_python_gap_us=None)
    elif "least by position" in without:
        events = dataclasses.replace(events, least_python_gap_us=None)
    if "replay and cold factor" in without:
        without = without | {"replay", "cold factor"}
    cold = 1.0 if "cold factor" in without else warmth.cold
    measured = None if "measured gap held" in without else light["events"].least_gap_us
    if replay_gap is None or "replay" in without:
        warmth = pricing.Warmth(cold)
    elif "lesser of the two" in without:
        warmth = pricing.Warmth(1.0, replay_gap, None)
    else:
        warmth = pricing.Warmth(cold, replay_gap, measured)
    repeats = calibration.repeats
    if "argument parsing" in without:
        repeats = tuple(dataclasses.replace(p, call_gap_us=0.0) for p in repeats)
    if "RNN step at threads" in without and inputs.get("rnn_extra_us"):
        repeats = tuple(dataclasses.replace(p, rnn_step_us=p.rnn_step_us - inputs["rnn_extra_us"]) for p in repeats)
    calibration = pricing.Calibration(repeats, 0.0 if "empty step" in without else calibration.step_gap_us)
    step_min_ms = None if "quickest step" in without else step_min_ms
    return pricing.estimate(events, calibration, step_ms, iqr_ms, warmth, threads, step_min_ms)


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
        threads = case.inputs["args"][5]
        by_key.setdefault((threads, case.label), []).append(math.log(case.against_twin(case.inputs["result"])))
    moves = [abs(a - b) for logs in by_key.values() if len(logs) == 2 for a, b in [logs]]
    return statistics.median(moves) if moves else 0.0


def ablation(cases: list[Case], noise: float) -> list[tuple[Any, ...]]:
    """One row per correction: the verdicts that flip without it, the cases it moves away from the twin by more
    than ``noise`` (and towards it), and the median move."""
    rows = []
    for name, what in CORRECTIONS.items():
        flips, away, towards, moves = [], 0, 0, []
        for case in cases:
            base, without = rebuild(case.inputs), rebuild(case.inputs, frozenset({name}))
            error_base, error_without = abs(math.log(case.against_twin(base))), abs(math.log(case.against_twin(without)))
            moves.append(error_without - error_base)
            away += error_without - error_base > noise
            towards += error_base - error_without > noise
            if verdict(base.fraction) != verdict(without.fraction):
                flips.append(f"{case.label} ({case.run})")
        pays = "yes" if flips or away else "no"
        rows.append((name, what, len(flips), away, towards, f"{statistics.median(moves):+.3f}", pays, "; ".join(flips)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="verdict_accuracy.py output folders (--out)")
    parser.add_argument("--dry-run", action="store_true", help="print the table, do not record it in RESULTS.md")
    args = parser.parse_args()
    cases = [case for run in args.runs for case in load(run)]
    for case in cases:  # the inputs must make the estimate the tool made
        again, made = rebuild(case.inputs), case.inputs["result"]
        if not math.isclose(again.overhead_us, made.overhead_us, rel_tol=1e-9):
            raise SystemExit(f"{case.label} ({case.run}): rebuilt {again.overhead_us:.1f} µs against the tool's {made.overhead_us:.1f}")
    noise = spread(cases)
    table = tabulate(
        ablation(cases, noise),
        headers=["correction", "taken out", "verdicts flipped", "further from twin", "nearer twin", "median move", "pays", "flips"],
        disable_numparse=True,
    )
    notes = (
        f"{len(cases)} case-runs from {', '.join(run.name for run in args.runs)}; a move counts past {noise:.3f} in |log(estimate / twin)|, "
        "the median distance between two runs' estimates of one case at one thread count; median move: + further from the twin."
    )
    record("Estimate ablation", table, notes, dry_run=args.dry_run)


if __name__ == "__main__":
    main()
