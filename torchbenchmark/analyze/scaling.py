"""``--scaling``: a second bound on the overhead, independent of the estimate (``analyze.pricing``).

The step time is fitted as a line over batch sizes; its intercept's share of the step bounds the
overhead's from above. With the line it also gives where the verdict would change: the overhead (the
estimate's, held fixed, since a step's op count does not grow with its batch) over the fitted step time
falls to a share ``s`` at the batch::

    batch_at(s) = (overhead_ms / s - intercept_ms) / slope_ms       (rounded up; at least 1)

so a row reads "dispatch-bound below batch ``batch_at(0.5)``", compute-bound from ``batch_at(0.2)``.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping

from torchbenchmark.analyze.verdict import COMPUTE_BOUND_BELOW, DISPATCH_BOUND_AT
from torchbenchmark.results.schema import Scaling
from torchbenchmark.results.spec import Budget

# The batch sizes timed besides the case's own, as divisors of it (or multiples, for a model
# that declares ``scale_batch_up``: a decode step at batch 1 has no smaller batch).
SCALING_DIVISORS = (2, 4, 8)
# The event-based fraction agrees with the scaling bound when it is at most this much above it (the
# bound holds, within noise) and at least this share of it (the intercept also holds arithmetic that
# does not grow with the batch, such as weight updates, so it may sit well above the overhead).
AGREEMENT_ABOVE = 1.25
AGREEMENT_BELOW = 1 / 3


def scaling_budget(budget: Budget) -> Budget:
    """A shorter budget for the extra batch sizes: their medians feed a fit, not a row of their own."""
    # A load spike in warmup must not ask for minutes of steps: hence the step cap.
    return dataclasses.replace(
        budget,
        warmup_s=min(budget.warmup_s, 1.0),
        measure_s=min(budget.measure_s, 0.5),
        max_steps=min(budget.max_steps, 500),
        windows=2,
        edge_calls=1,
        edge_s=0.0,
    )


def scaling_batch_sizes(batch_size: int, up: bool = False) -> list[int]:
    """The batch sizes ``--scaling`` times beside ``batch_size``: smaller ones, or with ``up`` larger ones
    (fewer than two: no estimate)."""
    if up:
        return [batch_size * d for d in SCALING_DIVISORS]
    return sorted({max(1, batch_size // d) for d in SCALING_DIVISORS} - {batch_size})


def batch_at_share(overhead_ms: float, intercept_ms: float, slope_ms: float, share: float) -> int | None:
    """The least batch at which ``overhead_ms`` is at most ``share`` of the line's step time; None when the
    line does not grow with the batch (the share never falls)."""
    if slope_ms <= 0:
        return None
    return max(1, math.ceil((overhead_ms / share - intercept_ms) / slope_ms - 1e-9))


# A larger batch whose median step is this much below a smaller one's contradicts the fit's premise.
SCALING_FALL_FRACTION = 0.10


def scaling_contradiction(step_ms: Mapping[int, float]) -> str | None:
    """Why step times by batch cannot be fitted: a larger batch that ran faster than a smaller one by more than
    ``SCALING_FALL_FRACTION`` (the load on the machine moved between them)."""
    batches = sorted(step_ms)
    for smaller, larger in zip(batches, batches[1:], strict=False):
        if step_ms[larger] < (1 - SCALING_FALL_FRACTION) * step_ms[smaller]:
            return (
                f"batch {larger} ran in {step_ms[larger]:.3g} ms, faster than batch {smaller}'s {step_ms[smaller]:.3g} ms: "
                "the machine's load moved between batches"
            )
    return None


def scaling_from_steps(step_ms: Mapping[int, float], batch_size: int, fraction: float, doubts: Mapping[int, str] | None = None) -> Scaling:
    """The overhead bound from the median step at each batch size (``batch_size``, the case's, among them),
    checked against ``fraction``, the event-based estimate, and the batches where that overhead's share
    falls to each verdict threshold; a fit that contradicts itself (``scaling_contradiction``) says why and
    neither agrees nor places a threshold. ``doubts``: batches measured as a row would be marked for."""
    batches = tuple(sorted(step_ms))
    times = tuple(step_ms[b] for b in batches)
    slope, intercept = statistics.linear_regression(batches, times)
    upper = min(1.0, max(0.0, intercept) / step_ms[batch_size])
    contradiction = scaling_contradiction(step_ms)
    agrees = contradiction is None and AGREEMENT_BELOW * upper <= fraction <= AGREEMENT_ABOVE * upper
    overhead_ms = fraction * step_ms[batch_size]
    crossing = (lambda share: None) if contradiction else (lambda share: batch_at_share(overhead_ms, intercept, slope, share))
    return Scaling(
        batch_sizes=batches,
        step_ms=times,
        intercept_ms=intercept,
        fraction_upper=upper,
        agrees=agrees,
        batch_at_overhead_50pct=crossing(DISPATCH_BOUND_AT),
        batch_at_overhead_20pct=crossing(COMPUTE_BOUND_BELOW),
        contradiction=contradiction,
        doubt="; ".join(f"batch {batch}: {why}" for batch, why in sorted(doubts.items())) if doubts else None,
    )
