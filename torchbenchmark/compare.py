"""Comparing two runs: each case's step-time ratio with a confidence interval, and a call a CI job can gate on.

The unit of replication is the *process*, not the step. Steps within one process share its memory
layout, its allocator's state and its share of any load spell, so they agree with each other far
better than processes of the same case do (processes differed by 3 to 4.5% on a shared 2-core
machine, benchmarks/RESULTS.md). A comparison therefore works on each case's per-process medians
(``--repeat N`` gives N of them), on a log scale, with a t interval for the ratio of their geometric
means. The spread that interval uses is never taken below ``PROCESS_NOISE_FLOOR``, the between-process
spread measured on such a machine, nor below the spread of the case's own measurement windows: with
one process a side there is no spread to estimate, and a floor is the honest prior.

The noise between two runs is more than any one case's processes show: load drifts between runs made
minutes apart, and with one process a side a case shows no spread at all. Most cases of two runs did not
change, so the spread of all the cases' ratios at once measures that noise (``run_noise``: robust, from
the median absolute deviation); with at least ``RUN_NOISE_MIN_CASES`` cases it is one more floor under
every case's spread. On a quiet machine it sits under the 2% floor and changes nothing; on a loaded one
it keeps the gate from calling the machine's noise a regression.

A case is called ``slower`` only when the ratio is past the practical threshold (default 5%) *and* its
interval excludes 1; ``faster`` likewise. Everything else within the threshold or within noise is ``same``.

What a comparison can see is part of its answer. From a case's spread and processes follows the smallest
slowdown that a comparison measured alike calls ``slower`` 9 times in 10 (``RatioEstimate.detectable_pct``):
a "same" from a comparison that catches only 20% slowdowns says little, and the table shows it per case.
A case past the threshold but within noise is told how many processes a side would settle it.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from torchbenchmark.dispatch import VERDICTS, verdict
from torchbenchmark.results import CaseResult
from torchbenchmark.storage import Summary, load_summary, machine_fingerprint

DEFAULT_THRESHOLD_PCT = 5.0
# Standard deviation of log(step time) between processes of one case on a shared machine: 2% reproduces
# the 3 to 4.5% range of four processes (benchmarks/RESULTS.md, "Comparing runs").
PROCESS_NOISE_FLOOR = 0.02
CALLS = ("slower", "new failure", "faster", "fixed", "verdict changed", "same", "not compared", "only in base", "only in new")
REGRESSIONS = ("slower", "new failure")
# A comparison of at least this many cases measures the noise between its two runs from the cases themselves.
RUN_NOISE_MIN_CASES = 8
Z90 = 1.2816  # the one-sided normal quantile of 90%: "reliably" means 9 times in 10
MOST_PROCESSES = 50  # the most processes a side that advice suggests; beyond, the change is within noise
FAILURES = ("failed", "timeout")
# Student's t by degrees of freedom: the two-sided 95% quantile and the one-sided 90% one. Above 30 the
# normal's (1.96, 1.2816) are close enough.
_T = {1: (12.706, 3.078), 2: (4.303, 1.886), 3: (3.182, 1.638), 4: (2.776, 1.533), 5: (2.571, 1.476),
      6: (2.447, 1.440), 7: (2.365, 1.415), 8: (2.306, 1.397), 9: (2.262, 1.383), 10: (2.228, 1.372),
      12: (2.179, 1.356), 15: (2.131, 1.341), 20: (2.086, 1.325), 25: (2.060, 1.316), 30: (2.042, 1.310)}  # fmt: skip
_NORMAL = (1.96, Z90)


def _quantiles(df: int) -> tuple[float, float]:
    """t's quantiles for ``df`` degrees of freedom (the next smaller tabled df: conservative); 0: the normal's."""
    return _T[max(k for k in _T if k <= df)] if 1 <= df <= 30 else _NORMAL


def t95(df: int) -> float:
    """The two-sided 95% t quantile for ``df`` degrees of freedom; below 1, the normal's."""
    return _quantiles(df)[0]


@dataclasses.dataclass(frozen=True)
class RatioEstimate:
    """new / base step time, as a ratio of geometric means of per-process medians, with a 95% interval."""

    ratio: float
    low: float
    high: float
    spread: float  # the standard deviation of log(step time) per process that the interval used
    n_base: int
    n_new: int
    df: int = 0  # the degrees of freedom of a spread estimated from the processes; 0: a floor, taken as known

    @property
    def change_pct(self) -> float:
        return 100.0 * (self.ratio - 1.0)

    def detectable_pct(self, threshold_pct: float) -> float:
        """The smallest slowdown that a comparison measured alike calls ``slower`` 9 times in 10.

        It is called when its log ratio passes both the threshold and the interval's half-width; a true
        change past both by t's one-sided 90% quantile of standard errors does so 9 times in 10 (the
        usual sizing of a t test; within a point of 90% in simulation down to 2 processes a side).
        """
        error = self.spread * math.sqrt(1 / self.n_base + 1 / self.n_new)
        reach = max(math.log1p(threshold_pct / 100.0), math.log(self.high / self.ratio))
        return 100.0 * math.expm1(reach + _quantiles(self.df)[1] * error)


def _log_sd(samples: Sequence[Sequence[float]]) -> tuple[float, int]:
    """The pooled standard deviation of log values over groups, and its degrees of freedom."""
    squares, df = 0.0, 0
    for group in samples:
        logs = [math.log(x) for x in group]
        if len(logs) > 1:
            squares += statistics.variance(logs) * (len(logs) - 1)
            df += len(logs) - 1
    return (math.sqrt(squares / df) if df else 0.0), df


def ratio_interval(
    base: Sequence[float],
    new: Sequence[float],
    window_spread: float = 0.0,
    noise_floor: float = PROCESS_NOISE_FLOOR,
) -> RatioEstimate:
    """The ratio new/base of per-process medians and its 95% interval (see the module docstring)."""
    if not base or not new or min(*base, *new) <= 0:
        raise ValueError("each side needs at least one positive step time")
    difference = statistics.fmean(math.log(x) for x in new) - statistics.fmean(math.log(x) for x in base)
    observed, df = _log_sd([base, new])
    spread = max(noise_floor, window_spread, observed)
    # Student's t only when the spread is the sample's own; a floor is a known spread, so the normal.
    df = df if observed >= max(noise_floor, window_spread) else 0
    half = t95(df) * spread * math.sqrt(1 / len(base) + 1 / len(new))
    return RatioEstimate(math.exp(difference), math.exp(difference - half), math.exp(difference + half),
                         spread, len(base), len(new), df)  # fmt: skip


def run_noise(sides: Sequence[tuple[Sequence[float], Sequence[float]]]) -> float | None:
    """The spread per process that the noise between two runs puts on a case, from all of them at once.

    ``sides`` holds each case's per-process medians, base and new. Each case's log ratio of geometric
    means is scaled to one process (divided by ``sqrt(1/n_base + 1/n_new)``), and their spread is 1.4826
    x their median absolute deviation from their median: a few cases that really changed, or a change
    that moved every case alike, do not inflate it. The result is in the units of
    ``PROCESS_NOISE_FLOOR``. None with fewer than ``RUN_NOISE_MIN_CASES`` cases.
    """
    if len(sides) < RUN_NOISE_MIN_CASES:
        return None
    scaled = [
        (statistics.fmean(map(math.log, new)) - statistics.fmean(map(math.log, base))) / math.sqrt(1 / len(base) + 1 / len(new))
        for base, new in sides
    ]  # fmt: skip
    middle = statistics.median(scaled)
    return 1.4826 * statistics.median(abs(x - middle) for x in scaled)


def processes_needed(spread: float, ratio: float, threshold_pct: float) -> int | None:
    """Processes a side at which a true change of ``ratio`` is called 9 times in 10, at a known spread per
    process of ``spread`` (as ``RatioEstimate.detectable_pct`` reckons); None if more than ``MOST_PROCESSES``."""
    for n in range(1, MOST_PROCESSES + 1):
        estimate = RatioEstimate(1.0, 1.0, math.exp(t95(0) * spread * math.sqrt(2 / n)), spread, n, n)  # a known spread
        if math.log1p(estimate.detectable_pct(threshold_pct) / 100.0) <= abs(math.log(ratio)):
            return n
    return None


def _settle(estimate: RatioEstimate, threshold_pct: float) -> str:
    """The advice for a case past the threshold but within noise: how many processes a side would call a
    change of its size 9 times in 10 (``processes_needed``), which settles whether it is one."""
    n = processes_needed(estimate.spread, estimate.ratio, threshold_pct)
    if n is None:
        return f"settling a change this size takes over {MOST_PROCESSES} processes a side"
    return f"{n} processes a side would settle a change this size (--repeat {n}, or {n} turns and --pool)"


def _process_medians(row: CaseResult) -> list[float]:
    if row.samples.process_medians_ms:
        return list(row.samples.process_medians_ms)
    return [row.step_time.median_ms] if row.step_time else []


def _window_spread(*rows: CaseResult) -> float:
    """How far apart one process's measurement windows were, as a log-scale spread: a noisy run's floor."""
    return _log_sd([windows for row in rows for windows in row.samples.window_medians_ms])[0]


@dataclasses.dataclass(frozen=True)
class CaseComparison:
    model: str
    mode: str
    device: str
    variant: str
    call: str  # one of CALLS
    base_ms: float | None = None
    new_ms: float | None = None
    estimate: RatioEstimate | None = None
    base_status: str | None = None
    new_status: str | None = None
    base_verdict: str | None = None
    new_verdict: str | None = None
    notes: tuple[str, ...] = ()
    detectable_pct: float | None = None  # the smallest slowdown this case's measurement catches 9 times in 10

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.model, self.mode, self.device, self.variant)

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["notes"] = list(self.notes)
        return data

    def record(self) -> dict[str, Any]:
        """Flat: the estimate's fields as columns of their own, the notes as one string."""
        data = {key: value for key, value in self.to_dict().items() if key != "estimate"}
        estimate = self.estimate
        data.update(ratio=estimate.ratio if estimate else None, low=estimate.low if estimate else None,
                    high=estimate.high if estimate else None, notes="; ".join(self.notes))  # fmt: skip
        return data


@dataclasses.dataclass(frozen=True)
class Comparison:
    """Every case present on either side, called; and what differs between the two sides' environments."""

    base: str
    new: str
    threshold_pct: float
    cases: tuple[CaseComparison, ...]
    notes: tuple[str, ...] = ()
    run_noise: float | None = None  # the noise between the two runs, per process (see run_noise)

    @property
    def regressions(self) -> tuple[CaseComparison, ...]:
        return tuple(case for case in self.cases if case.call in REGRESSIONS)

    @property
    def exit_status(self) -> int:
        """0 when nothing is slower or newly failing, 1 when a case regressed."""
        return 1 if self.regressions else 0

    @property
    def detectable_pct(self) -> float | None:
        """The median case's smallest slowdown caught 9 times in 10: what this comparison could see."""
        sizes = [case.detectable_pct for case in self.cases if case.detectable_pct is not None]
        return statistics.median(sizes) if sizes else None

    def counts(self) -> dict[str, int]:
        counts = {call: 0 for call in CALLS}
        for case in self.cases:
            counts[case.call] += 1
        return {call: n for call, n in counts.items() if n}

    def __repr__(self) -> str:
        tally = ", ".join(f"{n} {call}" for call, n in self.counts().items()) or "nothing compared"
        return f"Comparison({self.base} -> {self.new}: {tally})"

    def _repr_html_(self) -> str:
        """The comparison page's content in a notebook: regressions first, the ratio intervals drawn."""
        from torchbenchmark import report  # the renderer sits above compare: imported on use

        return report.notebook_html(report.comparison_body(self))

    def to_dataframe(self) -> Any:
        """One row per case: its call, both sides' figures and the ratio's interval (needs pandas)."""
        from torchbenchmark.frames import dataframe

        return dataframe(case.record() for case in self.cases)

    def to_dict(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "new": self.new,
            "threshold_pct": self.threshold_pct,
            "confidence": 0.95,
            "process_noise_floor": PROCESS_NOISE_FLOOR,
            "run_noise": self.run_noise,
            "detectable_pct": self.detectable_pct,
            "counts": self.counts(),
            "exit_status": self.exit_status,
            "notes": list(self.notes),
            "cases": [case.to_dict() for case in self.cases],
        }


def _changed(base_env: dict[str, Any], new_env: dict[str, Any], key: str) -> tuple[Any, Any] | None:
    """The two sides' ``key`` when both recorded it and they differ; None otherwise (older records lack some)."""
    pair = base_env.get(key), new_env.get(key)
    return pair if None not in pair and pair[0] != pair[1] else None


def _verdict(row: CaseResult) -> str | None:
    return row.dispatch.verdict if row.dispatch else None


def _verdicts_in_reach(row: CaseResult) -> set[str]:
    """The verdicts a row's overhead interval reaches: its own, and for a borderline row those across the
    thresholds its interval crosses (``dispatch.VERDICTS`` runs from the highest share to the lowest)."""
    if row.dispatch is None:
        return set()
    if row.dispatch.overhead_interval is None:
        return {row.dispatch.verdict}
    low, high = row.dispatch.overhead_interval
    first, last = VERDICTS.index(verdict(high)), VERDICTS.index(verdict(low))
    return {row.dispatch.verdict, *VERDICTS[first : last + 1]}


def compare_rows(
    base: CaseResult, new: CaseResult, threshold_pct: float, base_env: dict[str, Any], new_env: dict[str, Any],
    noise: float = 0.0,
) -> CaseComparison:
    """Call one case present on both sides; ``noise`` is the two runs' ``run_noise``, a floor under its spread."""
    fields: dict[str, Any] = dict(
        model=new.model, mode=new.mode, device=new.device, variant=new.variant,
        base_ms=base.step_time.median_ms if base.step_time else None,
        new_ms=new.step_time.median_ms if new.step_time else None,
        base_status=base.status, new_status=new.status, base_verdict=_verdict(base), new_verdict=_verdict(new),
    )  # fmt: skip
    notes = []
    if base.batch_size != new.batch_size:
        notes.append(f"batch size {base.batch_size} -> {new.batch_size}")
    if machine_fingerprint(base_env) != machine_fingerprint(new_env):
        notes.append("another machine")
    if base_env.get("torch") != new_env.get("torch"):
        notes.append(f"torch {base_env.get('torch')} -> {new_env.get('torch')}")
    if threads := _changed(base_env, new_env, "threads"):
        notes.append(f"threads {threads[0]} -> {threads[1]}")
    if base.status != "ok" or new.status != "ok":
        if new.status in FAILURES and base.status not in FAILURES:
            call = "new failure"
            notes.append(new.error or new.status)
        elif base.status in FAILURES and new.status == "ok":
            call = "fixed"
        elif base.status == new.status:
            call = "same"
        else:
            call = "not compared"
            notes.append(f"{base.status} -> {new.status}")
        return CaseComparison(**fields, call=call, notes=tuple(notes))
    base_samples, new_samples = _process_medians(base), _process_medians(new)
    if not base_samples or not new_samples:
        return CaseComparison(**fields, call="not compared", notes=(*notes, "no step times"))
    estimate = ratio_interval(base_samples, new_samples, max(_window_spread(base, new), noise))
    threshold = 1.0 + threshold_pct / 100.0
    flipped, shared = _verdict(base) != _verdict(new), _verdicts_in_reach(base) & _verdicts_in_reach(new)
    if estimate.ratio > threshold and estimate.low > 1.0:
        call = "slower"
    elif estimate.ratio < 1.0 / threshold and estimate.high < 1.0:
        call = "faster"
    elif flipped and not shared:
        call = "verdict changed"
    else:
        call = "same"
    if flipped and call != "verdict changed":
        borderline = f" (borderline: both intervals reach {' and '.join(sorted(shared))})" if call == "same" else ""
        notes.append(f"verdict {_verdict(base)} -> {_verdict(new)}{borderline}")
    if call == "same" and abs(estimate.change_pct) > threshold_pct:
        notes.append(f"past the threshold but within noise: {_settle(estimate, threshold_pct)}")
    return CaseComparison(**fields, call=call, estimate=estimate, notes=tuple(notes),
                          detectable_pct=estimate.detectable_pct(threshold_pct))  # fmt: skip


def compare(
    base: Summary | str | Path, new: Summary | str | Path, threshold_pct: float = DEFAULT_THRESHOLD_PCT, pool: bool = False
) -> Comparison:
    """Compare two results (output folders, summary.json files or run records, or loaded summaries).

    ``pool``: each side is an output folder whose runs all count, every process of every run that
    measured a case alike (``storage.pooled_rows``): the two sides of runs that took turns.
    Raises ValueError when the two sides have no case in common; StorageError when a side cannot be read.
    """
    if not threshold_pct >= 0:
        raise ValueError(f"threshold must be a percentage of 0 or more, got {threshold_pct}")
    base = base if isinstance(base, Summary) else load_summary(base, pool)
    new = new if isinstance(new, Summary) else load_summary(new, pool)
    base_rows = {row.key: row for row in base.rows}
    new_rows = {row.key: row for row in new.rows}
    if not base_rows.keys() & new_rows.keys():
        raise ValueError(f"{base.source} and {new.source} have no case in common (model, mode, device, variant)")
    ok_in_both = [key for key in base_rows.keys() & new_rows.keys() if base_rows[key].status == new_rows[key].status == "ok"]
    timed = [(_process_medians(base_rows[key]), _process_medians(new_rows[key])) for key in ok_in_both]
    timed = [(b, n) for b, n in timed if b and n]  # a row with no step time has nothing to spread
    noise = run_noise(timed)
    cases = []
    for key in sorted(base_rows.keys() | new_rows.keys(), key=lambda k: (k[0].lower(), *k[1:])):
        if key not in new_rows:
            row = base_rows[key]
            cases.append(CaseComparison(*key, call="only in base", base_ms=row.step_time.median_ms if row.step_time else None,
                                        base_status=row.status, base_verdict=_verdict(row)))  # fmt: skip
        elif key not in base_rows:
            row = new_rows[key]
            cases.append(CaseComparison(*key, call="only in new", new_ms=row.step_time.median_ms if row.step_time else None,
                                        new_status=row.status, new_verdict=_verdict(row)))  # fmt: skip
        else:
            b, n = base_rows[key], new_rows[key]
            cases.append(compare_rows(b, n, threshold_pct, base.environment_of(b), new.environment_of(n), noise or 0.0))
    notes = []
    if noise is not None and noise > PROCESS_NOISE_FLOOR:
        notes.append(f"noisy runs: the cases' ratios spread {100 * noise:.1f}% per process (over the {100 * PROCESS_NOISE_FLOOR:g}% "
                     "floor), so each case is called against that spread (see each case's 'catches')")  # fmt: skip
    if machine_fingerprint(base.environment) != machine_fingerprint(new.environment):
        notes.append(f"the two sides ran on different machines ({base.environment.get('host')}, "
                     f"{new.environment.get('host')}): read changes as between machines, not only between code")  # fmt: skip
    if base.environment.get("torch") != new.environment.get("torch"):
        notes.append(f"torch {base.environment.get('torch')} -> {new.environment.get('torch')}")
    if threads := _changed(base.environment, new.environment, "threads"):
        notes.append(f"torch intra-op threads {threads[0]} -> {threads[1]}: step times at another thread count are not like for like")
    if malloc := _changed(base.environment, new.environment, "malloc"):  # how each case's process was set up (steady.py)
        notes.append(f"the processes' memory settings differ: {malloc[0]} -> {malloc[1]}")
    order = {call: i for i, call in enumerate(CALLS)}
    cases.sort(key=lambda case: order[case.call])  # regressions first
    return Comparison(base.source, new.source, threshold_pct, tuple(cases), tuple(notes), noise)
