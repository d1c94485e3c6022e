"""What removing a step's estimated overhead would buy, and a compiled row's measured speedup set beside it.

A step of ``step`` ms whose overhead is a share ``f`` of it cannot run faster than ``step x (1 - f)`` by
fusing or removing ops, so ``1 / (1 - f)`` bounds the speedup any such remedy buys. A compiler that beats
the bound did more than remove overhead: it also made the arithmetic faster (fused memory traffic,
better kernels). The ranges come from the ends of the overhead interval (``analyze.pricing``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from torchbenchmark.results.schema import EAGER, CaseResult, Dispatch, OverheadBound, Status

# Overhead priced at this share of the step or more bounds nothing worth stating: the bound is read as
# at least 1 / (1 - MOST_REMOVABLE).
MOST_REMOVABLE = 0.99


def _free(step_ms: float, fraction: float) -> tuple[float, float]:
    """(step time without the overhead, the speedup that bounds) for an overhead share ``fraction``."""
    share = min(max(fraction, 0.0), MOST_REMOVABLE)
    return step_ms * (1.0 - share), 1.0 / (1.0 - share)


def overhead_bound(step_ms: float, fraction: float, interval: tuple[float, float] | None = None) -> OverheadBound:
    """The bound of a median step of ``step_ms`` whose overhead is ``fraction`` of it (uncapped), within ``interval``."""
    if step_ms <= 0:
        raise ValueError("step time must be positive")
    low, high = interval if interval is not None else (fraction, fraction)
    free_ms, speedup = _free(step_ms, fraction)
    (low_free, low_speedup), (high_free, high_speedup) = _free(step_ms, low), _free(step_ms, high)
    return OverheadBound(
        overhead_free_ms=free_ms,
        overhead_free_range_ms=(high_free, low_free),
        speedup_bound=speedup,
        speedup_bound_range=(low_speedup, high_speedup),
        bound_capped=fraction >= MOST_REMOVABLE,
    )


def bound_of(step_ms: float, dispatch: Dispatch | None) -> OverheadBound | None:
    """The bound a row's verdict implies; None without a verdict."""
    if dispatch is None:
        return None
    return overhead_bound(step_ms, dispatch.fraction, dispatch.overhead_interval)


@dataclasses.dataclass(frozen=True)
class AgainstBound:
    """A variant's measured speedup over eager beside the eager row's bound."""

    speedup: float
    bound: OverheadBound
    lowest: float | None = None  # the slowest of the speedup's window pairs, where it has them

    @property
    def past(self) -> bool:
        """Past the top of the bound's range, in every window pair: the variant also made the arithmetic faster."""
        return min(self.speedup, self.lowest or self.speedup) > self.bound.speedup_bound_range[1]

    @property
    def reading(self) -> str:
        top = self.bound.speedup_bound_range[1]
        if self.past:
            return f"past the bound ({self.speedup:.2f}x > {top:.2f}x): it also made the arithmetic faster"
        if self.speedup > top:
            return f"past the bound's top {top:.2f}x in its median, not in every window pair: within noise of it"
        if self.speedup < 1.0:
            return "slower than eager"
        return f"within the bound: it bought {self.share_of_bound:.0%} of what removing the overhead could"

    @property
    def share_of_bound(self) -> float:
        """How much of the time removing the overhead would save the speedup saved (0 to 1, past it above 1)."""
        saved = 1.0 - 1.0 / self.speedup
        could = 1.0 - 1.0 / self.bound.speedup_bound
        return saved / could if could > 0 else float("inf") if saved > 0 else 0.0


def against_eager(rows: Iterable[CaseResult]) -> dict[tuple[str, str, str, str], AgainstBound]:
    """Each ok variant row's speedup beside its eager row's bound, by the variant row's key."""
    rows = list(rows)
    eager = {row.key[:3]: row for row in rows if row.variant == EAGER and row.status == Status.OK and row.bound is not None}
    found = {}
    for row in rows:
        base = eager.get(row.key[:3])
        if row.variant != EAGER and row.speedup_vs_eager is not None and base is not None and base.bound is not None:
            rounds = row.compile.speedup_rounds if row.compile is not None else ()
            found[row.key] = AgainstBound(row.speedup_vs_eager, base.bound, min(rounds) if rounds else None)
    return found
