"""Step-time statistics: the median and interquartile range of a sample, and when warmup is over."""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence


@dataclasses.dataclass(frozen=True)
class StepStats:
    """Summary of measured step times. Medians and quartiles, because step times have a long right tail."""

    times_ms: tuple[float, ...]

    def __post_init__(self) -> None:
        if not self.times_ms:
            raise ValueError("StepStats needs at least one step time")

    @property
    def n(self) -> int:
        return len(self.times_ms)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def min_ms(self) -> float:
        return min(self.times_ms)

    @property
    def iqr_ms(self) -> float:
        """Interquartile range (inclusive quartiles, so small samples still give a spread)."""
        if self.n < 2:
            return 0.0
        q1, _, q3 = statistics.quantiles(self.times_ms, n=4, method="inclusive")
        return q3 - q1

    @classmethod
    def from_ns(cls, durations_ns: Sequence[int]) -> StepStats:
        return cls(tuple(d / 1e6 for d in durations_ns))


def is_steady(times: Sequence[float], window: int, tolerance: float) -> bool:
    """True when the median of the last ``window`` times is within ``tolerance`` of the window before it.

    Comparing medians of two windows ignores a single outlier (a page fault, another process) but sees
    a trend: caches, allocators and lazily created state make the first steps slower.
    """
    if window < 1 or len(times) < 2 * window:
        return False
    recent = statistics.median(times[-window:])
    before = statistics.median(times[-2 * window : -window])
    return abs(recent - before) <= tolerance * recent


def relative_change_pct(value: float, reference: float) -> float:
    """How much larger ``value`` is than ``reference``, in percent of ``reference``."""
    return (value / reference - 1.0) * 100.0
