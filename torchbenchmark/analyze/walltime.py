"""The wall-time tier of a comparison: one case's step-time ratio, its call, and what would decide it.

A case is ``slower`` only when the ratio is past the practical threshold *and* its interval excludes 1;
``faster`` likewise. A verdict that flips beyond both rows' overhead intervals is ``verdict changed``. A case
whose measurement could not catch a slowdown of ``INCONCLUSIVE_BEYOND`` times the threshold is
``inconclusive`` (a gate that cannot see does not say "same"), and says how many processes a side would let
it see. What spreads a side (its windows, its processes, the noise between the runs) widens the interval, and
a side whose threads waited for a CPU in too many steps holds that wait as one more floor under the spread;
a slower or faster call that the machine's own drift between the runs could explain is inconclusive:
so a side's marks are shown beside the call (``analyze.compare``), not instead of it. The statistics are
``analyze.ratios``.
"""

from __future__ import annotations

import dataclasses
import math

from torchbenchmark.analyze.ratios import MOST_PROCESSES, RatioEstimate, log_sd, processes_needed, ratio_interval
from torchbenchmark.analyze.verdict import verdicts_between
from torchbenchmark.results.schema import Call, CaseResult

INCONCLUSIVE_BEYOND = 4  # a case that cannot catch a slowdown of this many thresholds cannot say "same"
SETTLE = "past the threshold but within noise: "


@dataclasses.dataclass(frozen=True)
class WallTime:
    """A case's call by its step times, the ratio it rests on, and, where inconclusive, what would decide it."""

    call: Call
    estimate: RatioEstimate
    notes: tuple[str, ...]
    processes_to_decide: int | None = None  # processes a side at which it would see the threshold; None: none would


def process_medians(row: CaseResult) -> list[float]:
    if row.samples.process_medians_ms:
        return list(row.samples.process_medians_ms)
    return [row.step_time.median_ms] if row.step_time else []


def row_verdict(row: CaseResult) -> str | None:
    return row.dispatch.verdict if row.dispatch else None


def shown_pct(value: float) -> str:
    """A percentage as read: past 1000%, a figure says nothing more than that."""
    return "> 1000%" if value > 1000 else f"{value:.1f}%"


def _window_spread(*rows: CaseResult) -> float:
    """How far apart one process's measurement windows were, as a log-scale spread: a noisy run's floor."""
    return log_sd([windows for row in rows for windows in row.samples.window_medians_ms])[0]


def _wait_spread(row: CaseResult) -> float:
    """A side whose threads waited for a CPU in too many steps holds the wait in its step time: up to that share
    of it may be the machine's, not the code's, so its log is one more floor under the case's spread."""
    split = row.time_split
    return math.log1p(split.waiting_pct / 100.0) if split is not None and split.waited else 0.0


def _verdicts_in_reach(row: CaseResult) -> set[str]:
    """The verdicts a row's overhead interval reaches: its own, and those across the thresholds it crosses."""
    if row.dispatch is None:
        return set()
    if row.dispatch.overhead_interval is None:
        return {row.dispatch.verdict}
    return {row.dispatch.verdict, *verdicts_between(*row.dispatch.overhead_interval)}


def _settle(estimate: RatioEstimate, threshold_pct: float) -> str:
    """The advice for a case past the threshold but within noise: how many processes a side would settle it."""
    n = processes_needed(estimate.spread, estimate.ratio, threshold_pct)
    if n is None:
        return f"settling a change this size takes over {MOST_PROCESSES} processes a side"
    return f"{n} processes a side would settle a change this size (--repeat {n}, or {n} turns and --pool)"


def _timed_call(base: CaseResult, new: CaseResult, estimate: RatioEstimate, threshold_pct: float) -> tuple[Call, list[str]]:
    """The call of a case timed on both sides, from its ratio's interval and its verdicts."""
    threshold = 1.0 + threshold_pct / 100.0
    flipped, shared = row_verdict(base) != row_verdict(new), _verdicts_in_reach(base) & _verdicts_in_reach(new)
    if estimate.ratio > threshold and estimate.low > 1.0:
        call = Call.SLOWER
    elif estimate.ratio < 1.0 / threshold and estimate.high < 1.0:
        call = Call.FASTER
    elif flipped and not shared:
        call = Call.VERDICT_CHANGED
    else:
        call = Call.SAME
    notes = []
    if flipped and call != Call.VERDICT_CHANGED:
        reach = f" (borderline: both intervals reach {' and '.join(sorted(shared))})" if call == Call.SAME else ""
        notes.append(f"verdict {row_verdict(base)} -> {row_verdict(new)}{reach}")
    if call == Call.SAME and abs(estimate.change_pct) > threshold_pct:
        notes.append(f"{SETTLE}{_settle(estimate, threshold_pct)}")
    return call, notes


def _sees(threshold_pct: float) -> float:
    """The slowdown, in %, a case must catch to say "same": INCONCLUSIVE_BEYOND thresholds (of 1% at least)."""
    return INCONCLUSIVE_BEYOND * max(threshold_pct, 1.0)


def processes_to_see(estimate: RatioEstimate, threshold_pct: float) -> int | None:
    """Processes a side at which a case of this spread catches a slowdown of ``_sees(threshold_pct)``: decided."""
    return processes_needed(estimate.spread, 1.0 + _sees(threshold_pct) / 100.0, threshold_pct, estimated=estimate.df > 0)


def _within_drift(call: Call, estimate: RatioEstimate, drift: float) -> str | None:
    """Why a change called slower (faster) is not one: its interval reaches the machine's own slowdown (speed-up)
    between the runs, so the code's change cannot be told from the machine's."""
    if call == Call.SLOWER and estimate.low <= drift or call == Call.FASTER and estimate.high >= drift:
        way = "slower" if drift > 1 else "faster"
        return (
            f"the machine itself ran {shown_pct(100 * abs(drift - 1))} {way} for NEW (the calibration this case's processes took), "
            "within this case's interval: sweeps made apart drift; take turns and compare --pool"
        )
    return None


@dataclasses.dataclass(frozen=True)
class Between:
    """What lies between two runs, whatever their code: the noise all their cases show (``run_noise``), a floor
    under each case's spread; and how many times slower the machine ran for NEW (``calibration_drift``), within
    which a change is no call."""

    noise: float = 0.0
    drift: float = 1.0


def wall_time(base: CaseResult, new: CaseResult, threshold_pct: float, between: Between = Between()) -> WallTime | None:
    """The wall-time call of a case ok on both sides; None where a side has no step times."""
    base_samples, new_samples = process_medians(base), process_medians(new)
    if not base_samples or not new_samples:
        return None
    waits = max(_wait_spread(base), _wait_spread(new))
    estimate = ratio_interval(base_samples, new_samples, max(_window_spread(base, new), between.noise, waits))
    call, notes = _timed_call(base, new, estimate, threshold_pct)
    if drifted := _within_drift(call, estimate, between.drift):
        return WallTime(Call.INCONCLUSIVE, estimate, (*notes, drifted))
    catches = estimate.detectable_pct(threshold_pct)
    if call != Call.SAME or catches <= _sees(threshold_pct):
        return WallTime(call, estimate, tuple(notes))
    # The advice to settle a change past the threshold gives way to what would decide the case at all.
    notes = [note for note in notes if not note.startswith(SETTLE)]
    least = " (of 1% at least)" if threshold_pct < 1 else ""
    doubt = f"it catches only slowdowns of {shown_pct(catches)} or more ({INCONCLUSIVE_BEYOND}x the threshold{least} is {_sees(threshold_pct):g}%)"
    if waits >= estimate.spread:  # the wait sets the spread: more processes would measure the same wait
        waited = f"{doubt}: a side's threads waited for a CPU; a quieter machine would decide it"
        return WallTime(Call.INCONCLUSIVE, estimate, (*notes, waited))
    processes = processes_to_see(estimate, threshold_pct)
    decide = f"over {MOST_PROCESSES} processes a side" if processes is None else f"--repeat {processes} a side"
    return WallTime(Call.INCONCLUSIVE, estimate, (*notes, f"{doubt}: {decide} would decide it"), processes)
