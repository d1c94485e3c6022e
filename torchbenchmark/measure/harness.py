"""Characterisation: warm a model up until its step time is steady, then time its steps, in windows that
must agree with each other, and its calls.

Steps are timed through ``step_fn``: the contract calls it once at the end of every step, so the time
between two calls is one step, with nothing of the harness inside it. The first step of each
``train``/``eval`` call also holds the call's entry cost and is kept apart; whole calls are timed
separately to price that *edge* cost.
"""

from __future__ import annotations

import dataclasses
import itertools
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from torchbenchmark.analyze.stats import StepStats, is_steady, relative_change_pct
from torchbenchmark.analyze.timesplit import StepSample, kept
from torchbenchmark.measure.schedstat import MachineGauge, MachineLoad, StepAccount, ThreadClock, clock_method
from torchbenchmark.results.spec import Budget


def _nothing() -> None:
    pass


def use_device(device: torch.device) -> None:
    """Make ``device`` this process's current GPU, so work and syncs that name no device go to it, and
    no context is made on GPU 0 for a case on another. Plain ``cuda`` is the current GPU already (and
    torch.cuda.set_device refuses a device without an index)."""
    if device.type == "cuda" and device.index is not None:
        torch.cuda.set_device(device)


# Every decision the harness takes from a clock goes through an ``Agree``: the element-wise maximum of
# the given figures over every process that runs the steps together. A DistributedDataParallel step is
# a collective, so its ranks must run the same number of steps; one process agrees with itself.
Agree = Callable[[Sequence[float]], list[float]]


def same(values: Sequence[float]) -> list[float]:
    return list(values)


def _silent(_: str) -> None:
    pass


@dataclasses.dataclass(frozen=True)
class Pace:
    """What the harness calls besides the model: the step boundary's sync, the agreement between processes
    that step together, and where it says what it is doing (a sweep's progress line)."""

    sync: Callable[[], None] = _nothing
    agree: Agree = same
    announce: Callable[[str], None] = _silent

    @classmethod
    def on(cls, device: torch.device, agree: Agree = same, announce: Callable[[str], None] = _silent) -> Pace:
        return cls(device_sync(device), agree, announce)


def device_sync(device: torch.device) -> Callable[[], None]:
    """What to call at a step boundary so the clock sees finished work on ``device``: chosen once per device."""
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
class Characterisation:
    steps: StepStats  # the steps of the two windows that agreed best
    warmup_steps: int
    steady: bool  # False when warmup ran out of time before the step time settled
    windows: int  # measurement windows taken
    window_diff_pct: float  # how far apart the medians of the two kept windows are
    windows_agree: bool  # False when no two windows came within Budget.window_tolerance: a noisy machine
    edge_ms: float  # median whole-call time of niter=1 minus the median step time
    window_medians_ms: tuple[float, ...]  # every window taken, kept or not, in order
    warmup_s: float
    measure_s: float
    samples: tuple[StepSample, ...] = ()  # what the kernel saw of each step of the two windows kept
    clock_method: str = ""  # how: measure.schedstat.SCHEDSTAT, or the process-time fallback
    machine: MachineLoad | None = None  # what else the machine did while the windows ran

    @property
    def edge_distortion_pct(self) -> float:
        """The cost around a step, in percent of a step: what a harness timing whole calls would add."""
        return relative_change_pct(self.steps.median_ms + self.edge_ms, self.steps.median_ms)


def warmup_window(budget: Budget, first_steps_ns: Sequence[float]) -> int:
    """Steps per warmup window: ``budget.warmup_window``, fewer (down to 2) when two windows of steps would
    not fit in ``budget.warmup_s``, or steadiness could never be seen. Sized from the second step: the first
    creates lazy state (on a GPU: library handles, kernels loaded on first use) and is never typical."""
    return min(budget.warmup_window, max(2, int(budget.warmup_s * 1e9 / (2 * first_steps_ns[1]))))


def warm_up(model: Any, mode: str, budget: Budget, pace: Pace = Pace()) -> tuple[list[int], bool]:
    """Run steps until the step time is steady or ``budget.warmup_s`` is spent; returns their durations."""
    agree = pace.agree
    pace.announce("warming up")
    timer = StepTimer(pace.sync)
    deadline = time.perf_counter_ns() + int(budget.warmup_s * 1e9)
    timed_call(model, mode, 1, timer)  # the first step creates lazy state and is never typical
    if agree([float(time.perf_counter_ns() >= deadline)])[0]:  # a step longer than the whole budget: no window fits
        return timer.durations_ns, False
    timed_call(model, mode, 1, timer)  # the second sizes the window
    window = warmup_window(budget, agree(timer.durations_ns[:2]))
    steady = False
    while True:
        # The clock is read only while this process is not steady, as a single process would.
        late = 0.0 if steady else float(time.perf_counter_ns() >= deadline)
        unsteady, late = agree([float(not steady), late])
        if not unsteady or late:
            return timer.durations_ns, not unsteady
        estimate = agree([statistics.median(timer.durations_ns[-window:])])[0]
        # Short calls keep the overshoot past the deadline or past steadiness to a few steps.
        chunk = max(1, min(window, int(0.25e9 / max(estimate, 1))))
        timed_call(model, mode, chunk, timer)
        steady = is_steady(timer.durations_ns[1:], window, budget.warmup_tolerance)


@dataclasses.dataclass(frozen=True)
class Window:
    """One measurement window: each step's duration, and what the kernel saw of it (``measure.schedstat``)."""

    durations_ns: list[int]
    samples: list[StepSample]

    @property
    def timed_ns(self) -> list[int]:
        """The durations a figure rests on: those of the steps no other work stretched, when enough were left."""
        return [d for d, keep in zip(self.durations_ns, kept(self.samples)) if keep] or self.durations_ns


def measure_windows(model: Any, mode: str, budget: Budget, count: int, pace: Pace = Pace()) -> list[Window]:
    """Time ``count`` steps per window until two windows' medians agree within ``budget.window_tolerance``.

    A shared machine has spells of load that last seconds: one window can fall in one and read 10 to 20%
    slow while its steps look steady. A second window taken right after checks it, and a third, only
    when the two disagree, outvotes the odd one. ``budget.steps`` asks for one window of exactly that many.
    Each step's scheduler times are read as it ends, outside the step's own time.
    """
    windows: list[Window] = []
    clock = ThreadClock()
    try:
        while True:
            pace.announce(f"measuring window {len(windows) + 1}")
            account = StepAccount(clock)
            timer = StepTimer(pace.sync, account)
            account.start()
            timed_call(model, mode, count + 1, timer)  # +1: the first step holds the call's edge
            windows.append(Window(timer.inner_ns(), account.steps[1:]))
            if budget.steps is not None or len(windows) == budget.windows:
                return windows
            spread = closest_pair([window.timed_ns for window in windows])[1]
            if len(windows) >= 2 and pace.agree([spread])[0] <= 100 * budget.window_tolerance:
                return windows
    finally:
        clock.close()


def closest_pair(windows: list[list[int]]) -> tuple[list[list[int]], float]:
    """The two windows whose medians are nearest, and how far apart they are in percent (one: itself, 0)."""
    if len(windows) == 1:
        return windows, 0.0
    medians = [statistics.median(window) for window in windows]

    def diff_pct(pair: tuple[int, int]) -> float:
        a, b = medians[pair[0]], medians[pair[1]]
        return 100 * abs(a - b) / min(a, b)

    best = min(itertools.combinations(range(len(windows)), 2), key=diff_pct)
    return [windows[i] for i in best], diff_pct(best)


def characterise(model: Any, mode: str, budget: Budget, pace: Pace = Pace()) -> Characterisation:
    """Warm up, measure windows of steps for a median and IQR, then time whole calls for the edge cost."""
    sync, agree = pace.sync, pace.agree
    started = time.perf_counter()
    warmup, steady = warm_up(model, mode, budget, pace)
    warmed = time.perf_counter()

    count = budget.measured_steps(agree([statistics.median(warmup[-budget.warmup_window :])])[0])
    gauge = MachineGauge()
    windows = measure_windows(model, mode, budget, count, pace)
    machine = gauge.read()
    timed = [window.timed_ns for window in windows]
    pair, diff = closest_pair(timed)
    chosen = [window for window, durations in zip(windows, timed) if any(durations is p for p in pair)]
    steps = StepStats.from_ns([d for window in pair for d in window])

    pace.announce("timing whole calls")
    calls: list[int] = []
    deadline = time.perf_counter_ns() + int(budget.edge_s * 1e9)
    while len(calls) < budget.edge_calls and (not calls or not agree([float(time.perf_counter_ns() >= deadline)])[0]):
        calls.append(timed_call(model, mode, 1, StepTimer(sync)))
    call_ms = statistics.median(calls) / 1e6
    return Characterisation(
        steps=steps,
        warmup_steps=len(warmup),
        steady=steady,
        windows=len(windows),
        window_diff_pct=diff,
        windows_agree=len(pair) == 1 or diff <= 100 * budget.window_tolerance,
        edge_ms=call_ms - steps.median_ms,
        window_medians_ms=tuple(statistics.median(window.timed_ns) / 1e6 for window in windows),
        warmup_s=warmed - started,
        measure_s=time.perf_counter() - warmed,
        samples=tuple(sample for window in chosen for sample in window.samples),
        clock_method=clock_method(),
        machine=machine,
    )
