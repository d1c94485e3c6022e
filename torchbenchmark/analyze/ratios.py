"""The statistics of comparing two runs: a step-time ratio with a 95% interval, and what it can see.

The unit of replication is the *process*, not the step: steps within one process share its memory
layout, its allocator's state and its share of any load spell. A comparison therefore works on each
case's per-process medians, on a log scale, with a t interval for the ratio of their geometric means.
The spread that interval uses is never taken below ``PROCESS_NOISE_FLOOR`` (the between-process spread
of a shared machine: the honest prior with one process a side), nor below the spread of the case's own
measurement windows, nor below the noise between the two runs as all their cases show it (``run_noise``).

From a case's spread and processes follows the smallest slowdown a comparison measured alike calls
``slower`` 9 times in 10 (``RatioEstimate.detectable_pct``), and how many processes a side would settle
a change of a given size (``processes_needed``). Two runs made minutes apart on a shared machine can differ
by the machine's own speed; the calibration each case's process takes measures that (``calibration_drift``).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence

# Standard deviation of log(step time) between processes of one case on a shared machine.
PROCESS_NOISE_FLOOR = 0.02
# A comparison of at least this many cases measures the noise between its two runs from the cases themselves.
RUN_NOISE_MIN_CASES = 8
Z90 = 1.2816  # the one-sided normal quantile of 90%: "reliably" means 9 times in 10
MOST_PROCESSES = 50  # the most processes a side that advice suggests; beyond, the change is within noise
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
        change past both by t's one-sided 90% quantile of standard errors does so 9 times in 10.
        """
        error = self.spread * math.sqrt(1 / self.n_base + 1 / self.n_new)
        reach = max(math.log1p(threshold_pct / 100.0), math.log(self.high / self.ratio))
        return 100.0 * math.expm1(reach + _quantiles(self.df)[1] * error)


def log_sd(samples: Sequence[Sequence[float]]) -> tuple[float, int]:
    """The pooled standard deviation of log values over groups, and its degrees of freedom."""
    squares, df = 0.0, 0
    for group in samples:
        logs = [math.log(x) for x in group]
        if len(logs) > 1:
            squares += statistics.variance(logs) * (len(logs) - 1)
            df += len(logs) - 1
    return (math.sqrt(squares / df) if df else 0.0), df


def ratio_interval(
    base: Sequence[float], new: Sequence[float], window_spread: float = 0.0, noise_floor: float = PROCESS_NOISE_FLOOR
) -> RatioEstimate:
    """The ratio new/base of per-process medians and its 95% interval (see the module docstring)."""
    if not base or not new or min(*base, *new) <= 0:
        raise ValueError("each side needs at least one positive step time")
    difference = statistics.fmean(math.log(x) for x in new) - statistics.fmean(math.log(x) for x in base)
    observed, df = log_sd([base, new])
    spread = max(noise_floor, window_spread, observed)
    # Student's t only when the spread is the sample's own; a floor is a known spread, so the normal.
    df = df if observed >= max(noise_floor, window_spread) else 0
    half = t95(df) * spread * math.sqrt(1 / len(base) + 1 / len(new))
    return RatioEstimate(math.exp(difference), math.exp(difference - half), math.exp(difference + half), spread, len(base), len(new), df)


def run_noise(sides: Sequence[tuple[Sequence[float], Sequence[float]]]) -> float | None:
    """The spread per process that the noise between two runs puts on a case, from all of them at once.

    Each case's log ratio of geometric means is scaled to one process (divided by ``sqrt(1/n_base +
    1/n_new)``), and their spread is 1.4826 x their median absolute deviation from their median: a few
    cases that really changed, or a change that moved every case alike, do not inflate it. None with fewer
    than ``RUN_NOISE_MIN_CASES`` cases.
    """
    if len(sides) < RUN_NOISE_MIN_CASES:
        return None
    scaled = [
        (statistics.fmean(map(math.log, new)) - statistics.fmean(map(math.log, base))) / math.sqrt(1 / len(base) + 1 / len(new))
        for base, new in sides
    ]
    middle = statistics.median(scaled)
    return 1.4826 * statistics.median(abs(x - middle) for x in scaled)


def calibration_drift(pairs: Sequence[tuple[Mapping[str, float], Mapping[str, float]]]) -> float | None:
    """How many times slower the machine ran for NEW than for BASE, by the calibration each case's process took.

    Each pair is one case's ``prices_us`` on the two sides: fixed torch ops timed in the case's own process,
    whatever the case's code, so where the code changed and the machine did not they agree. A case's drift is
    the geometric mean of its prices' ratios; the runs' is the median over cases. None without a priced pair.
    """
    drifts = []
    for base, new in pairs:
        logs = [math.log(new[name] / base[name]) for name in base.keys() & new.keys() if base[name] > 0 and new[name] > 0]
        if logs:
            drifts.append(statistics.fmean(logs))
    return math.exp(statistics.median(drifts)) if drifts else None


def processes_needed(spread: float, ratio: float, threshold_pct: float, estimated: bool = False) -> int | None:
    """Processes a side at which a true change of ``ratio`` is called 9 times in 10, at a spread per process of
    ``spread``: a known one (a floor), or with ``estimated`` one the processes themselves give (Student's t at
    their degrees of freedom); None if more than ``MOST_PROCESSES``."""
    for n in range(1, MOST_PROCESSES + 1):
        df = 2 * n - 2 if estimated else 0
        estimate = RatioEstimate(1.0, 1.0, math.exp(t95(df) * spread * math.sqrt(2 / n)), spread, n, n, df)
        if math.log1p(estimate.detectable_pct(threshold_pct) / 100.0) <= abs(math.log(ratio)):
            return n
    return None
