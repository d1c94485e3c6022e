"""Made-up prices and overhead events for the estimate's unit tests."""

from __future__ import annotations

from torchbenchmark.analyze import pricing
from torchbenchmark.analyze.overhead import OverheadEvents

PRICES = pricing.Prices(call_us=1.0, nested_us=0.25, autograd_us=0.75, call_gap_us=0.5)


def _events(calls: int, nested: int, autograd: int, gaps: tuple[float, ...]) -> OverheadEvents:
    counts = {"call": calls, "nested": nested, "autograd": autograd}
    return OverheadEvents(events_per_step=tuple(dict(counts) for _ in gaps), python_gap_us_per_step=gaps)
