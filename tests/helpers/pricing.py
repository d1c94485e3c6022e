"""Made-up prices and overhead events for the estimate's unit tests."""

from __future__ import annotations

from torchbenchmark.analyze import pricing
from torchbenchmark.analyze.overhead import OverheadEvents

PRICES = pricing.Prices(call_us=1.0, nested_us=0.25, autograd_us=0.75, call_gap_us=0.5)


def _events(calls: int, nested: int, autograd: int, gaps: tuple[float, ...]) -> OverheadEvents:
    counts = {"call": calls, "nested": nested, "autograd": autograd}
    return OverheadEvents(events_per_step=tuple(dict(counts) for _ in gaps), python_gap_us_per_step=gaps)


def _workload(name: str, call: float, nested: float = 0, autograd: float = 0, gap_us: float = 0.0) -> pricing.Counted:
    return pricing.Counted(name, {"call": call, "nested": nested, "autograd": autograd}, gap_us)


def _dispatch_workloads() -> list[pricing.Counted]:
    """The loops that price call, nested and autograd, which the set-up kinds are priced beyond."""
    return [
        _workload("loop", 0),
        _workload("add", 1),
        _workload("embedding_bag", 1, 42),
        _workload("backward_1", 3, 6, 10),
        _workload("backward_8", 10, 6, 31),
    ]
