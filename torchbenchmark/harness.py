"""Characterisation: warm a model up until its step time is steady, then time its steps and its calls.

Steps are timed through ``step_fn``: the contract calls it once at the end of every step, so the time
between two calls is one step, with nothing of the harness inside it. The first step of each
``train``/``eval`` call also holds the call's entry cost and is kept apart; whole calls are timed
separately to price that *edge* cost.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from torchbenchmark.stats import StepStats, is_steady, relative_change_pct


def _nothing() -> None:
    pass


def device_sync(device: torch.device) -> Callable[[], None]:
    """What to call at a step boundary so the clock sees finished work: chosen once per device."""
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    return _nothing


class StepTimer:
    """A ``step_fn`` that records each step's duration, then runs ``after_step`` (e.g. ``profiler.step``).

    ``after_step`` runs after the step's end is read and before the next step's start is, so neither the
    profiler's bookkeeping nor a trace export at a step boundary counts as step time.
    """

    def __init__(self, sync: Callable[[], None] = _nothing, after_step: Callable[[], None] = _nothing) -> None:
        self.durations_ns: list[int] = []
        self.first_in_call: list[bool] = []
        self.sync = sync
        self._after_step = after_step
        self._start_ns = 0
        self._first = True

    def begin_call(self) -> int:
        self.sync()
        self._first = True
        self._start_ns = time.perf_counter_ns()
        return self._start_ns

    def __call__(self) -> None:
        self.sync()
        end = time.perf_counter_ns()
        self.durations_ns.append(end - self._start_ns)
        self.first_in_call.append(self._first)
        self._first = False
        self._after_step()
        self._start_ns = time.perf_counter_ns()

    def inner_ns(self) -> list[int]:
        """Durations of the steps that did not open a call: pure step time."""
        return [d for d, first in zip(self.durations_ns, self.first_in_call) if not first]


def timed_call(model: Any, mode: str, niter: int, timer: StepTimer) -> int:
    """Run ``model.<mode>(niter, step_fn=timer)`` and return the whole call's wall time in ns."""
    start = timer.begin_call()
    getattr(model, mode)(niter=niter, step_fn=timer)
    timer.sync()
    return time.perf_counter_ns() - start


@dataclasses.dataclass(frozen=True)
class Budget:
    """How much time a case may spend where. Time limits are targets; step counts are floors and caps."""

    warmup_s: float = 8.0  # stop waiting for a steady step time after this long (then steady=False)
    warmup_window: int = 3  # steady when the median of the last window matches the window before
    # (fewer, down to 2, when two windows of steps would not fit in warmup_s)
    warmup_tolerance: float = 0.05
    measure_s: float = 3.0  # time spent on measured steps, within the floor and cap below
    min_steps: int = 5
    max_steps: int = 100_000  # a cap for runaway counts only: a 0.2 ms step still gets its 3 s
    steps: int | None = None  # measure exactly this many steps instead
    edge_calls: int = 3  # whole niter=1 calls timed to price the edge, at most...
    edge_s: float = 1.0  # ...until this long is spent (at least one call): slow steps dwarf their edge
    light_steps: int = 3  # active steps in the light profile, at least...
    light_s: float = 1.0  # ...and as many more as fit in this long, up to 50: fast steps need more for a median
    detailed_steps: int = 1  # active steps in the detailed profile, at least...
    detailed_s: float = 0.5  # ...and as many more as fit in this long, up to 5: it is costly per op

    def __post_init__(self) -> None:
        for name in ("min_steps", "max_steps", "edge_calls", "light_steps", "detailed_steps", "warmup_window"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.steps is not None and self.steps < 1:
            raise ValueError("steps must be at least 1")

    def measured_steps(self, step_estimate_ns: float) -> int:
        if self.steps is not None:
            return self.steps
        wanted = math.ceil(self.measure_s * 1e9 / max(step_estimate_ns, 1.0))
        return max(self.min_steps, min(self.max_steps, wanted))

    def profiled_steps(self, kind: str, step_ms: float) -> int:
        """Active steps for the ``light`` or ``detailed`` profile of a model whose step takes ``step_ms``."""
        floor, seconds, cap = (
            (self.light_steps, self.light_s, 50) if kind == "light" else (self.detailed_steps, self.detailed_s, 5)
        )
        return max(floor, min(cap, int(seconds * 1e3 / max(step_ms, 1e-6))))


@dataclasses.dataclass(frozen=True)
class Characterisation:
    steps: StepStats
    warmup_steps: int
    steady: bool  # False when warmup ran out of time before the step time settled
    edge_ms: float  # median whole-call time of niter=1 minus the median step time
    warmup_s: float
    measure_s: float

    @property
    def edge_distortion_pct(self) -> float:
        """The cost around a step, in percent of a step: what a harness timing whole calls would add."""
        return relative_change_pct(self.steps.median_ms + self.edge_ms, self.steps.median_ms)


def warm_up(model: Any, mode: str, budget: Budget, sync: Callable[[], None]) -> tuple[list[int], bool]:
    """Run steps until the step time is steady or ``budget.warmup_s`` is spent; returns their durations."""
    timer = StepTimer(sync)
    deadline = time.perf_counter_ns() + int(budget.warmup_s * 1e9)
    timed_call(model, mode, 1, timer)  # the first step creates lazy state and is never typical
    # Two windows must fit in the budget for steadiness to be seen at all: slow models get shorter ones.
    window = min(budget.warmup_window, max(2, int(budget.warmup_s * 1e9 / (2 * timer.durations_ns[0]))))
    steady = False
    while not steady and time.perf_counter_ns() < deadline:
        estimate = statistics.median(timer.durations_ns[-window:])
        # Short calls keep the overshoot past the deadline or past steadiness to a few steps.
        chunk = max(1, min(window, int(0.25e9 / max(estimate, 1))))
        timed_call(model, mode, chunk, timer)
        steady = is_steady(timer.durations_ns[1:], window, budget.warmup_tolerance)
    return timer.durations_ns, steady


def characterise(model: Any, mode: str, budget: Budget, device: torch.device) -> Characterisation:
    """Warm up, measure steps for a median and IQR, then time whole calls for the edge cost."""
    sync = device_sync(device)
    started = time.perf_counter()
    warmup, steady = warm_up(model, mode, budget, sync)
    warmed = time.perf_counter()

    estimate = statistics.median(warmup[-budget.warmup_window :])
    timer = StepTimer(sync)
    timed_call(model, mode, budget.measured_steps(estimate) + 1, timer)  # +1: the first holds the edge
    steps = StepStats.from_ns(timer.inner_ns())

    calls: list[int] = []
    deadline = time.perf_counter_ns() + int(budget.edge_s * 1e9)
    while len(calls) < budget.edge_calls and (not calls or time.perf_counter_ns() < deadline):
        calls.append(timed_call(model, mode, 1, StepTimer(sync)))
    call_ms = statistics.median(calls) / 1e6
    return Characterisation(
        steps=steps,
        warmup_steps=len(warmup),
        steady=steady,
        edge_ms=call_ms - steps.median_ms,
        warmup_s=warmed - started,
        measure_s=time.perf_counter() - warmed,
    )
