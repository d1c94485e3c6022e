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
from torchbenchmark.measure.native_logs import own_global_hook
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


class ColdProbe:
    """A fixed piece of module glue, timed where the model's own glue runs: how cold the step leaves the caches
    Python runs on.

    Eight ``nn.Identity`` modules called in a chain dispatch no op; they run only what every module call
    runs (``__call__``, its hook checks, ``forward``). An op that streams more data than the caches hold
    evicts their objects and the interpreter's own, so right after it the chain runs slower than warm: the
    slowdown the model's own Python between its ops suffers. The chain is timed in two places:

    - inside the step, over a few steps of its own (``run_in_step``), at the entry of every module call (a
      global forward pre-hook: where a model's glue runs between its ops), twice in a row each time: the
      first pass cold, the second warm. What the first costs beyond the second, at the median call site,
      is what cold caches add to a piece of glue;
    - after each measured step (as a ``StepTimer``'s ``after_step``, never step time): the only place left
      for a step that calls no module, or a compiled one, whose graph a global hook would break.

    The probe after the step is the coldest place there is (the step's last op, often its largest, has
    just run): for a decode step, whose glue runs between matrix-vector products over its weights, it read
    the glue 1.4 to 2 times as slow as its twin's glue ran (``benchmarks/RESULTS.md``, "Decode steps").
    Timed before every op instead (a ``TorchFunctionMode``), it read too warm: the mode's own Python,
    run just before it, warms what the chain would find cold (dlrm eval 1.14 against its twin's 2.85).
    """

    MODULES = 8
    STEPS = 3  # steps of the in-step pass, fewer where they would take longer than IN_STEP_S
    IN_STEP_S = 0.5

    def __init__(self, in_step: bool = True) -> None:
        self.in_step = in_step  # False: after the steps only (a compiled module, whose graph a global hook would break)
        self.chain = torch.nn.Sequential(*(torch.nn.Identity() for _ in range(self.MODULES)))
        self.durations_ns: list[int] = []
        self._sites: list[list[tuple[int, int]]] = [[]]  # per in-step step: (cold, warm) ns at each module call
        self._probing = False

    def _pass_ns(self) -> int:
        start = time.perf_counter_ns()
        self.chain(None)
        return time.perf_counter_ns() - start

    def __call__(self) -> None:
        self.durations_ns.append(self._pass_ns())

    def _at_module_entry(self, _module: torch.nn.Module, _args: Any) -> None:
        if self._probing:  # the chain's own modules
            return
        self._probing = True
        try:
            self._sites[-1].append((self._pass_ns(), self._pass_ns()))
        finally:
            self._probing = False

    def _next_step(self) -> None:
        self._sites.append([])

    def run_in_step(self, model: Any, mode: str, step_ms: float, pace: Pace = Pace()) -> None:
        """Run a few steps of ``model`` with the chain timed at every module call's entry."""
        steps = max(1, min(self.STEPS, int(self.IN_STEP_S * 1e3 / max(step_ms, 1e-6))))
        steps = int(pace.agree([float(steps)])[0])  # processes that step together run as many steps
        with own_global_hook():
            handle = torch.nn.modules.module.register_module_forward_pre_hook(self._at_module_entry)
            try:
                timed_call(model, mode, steps, StepTimer(pace.sync, after_step=self._next_step))
            except Exception:  # code that refuses a global hook (a check of its own): the probe after the step stands
                self._sites = [[]]
            finally:
                handle.remove()

    def factor(self) -> float:
        """How much slower module glue runs where the model's runs than warm, at least 1 (1 when not measured).

        In the step: 1 + (each call site's fastest cold pass over the steps, less its fastest warm pass, taken
        right after: a slow spell of the machine falls on both), the median over the sites (a mean drifts
        with the odd site every step preempted), over the plain chain's warm pass. The hooked chain runs
        the slow path of ``Module.__call__``, so its warm pass is longer; the time the cold caches add is
        not, so the excess is taken in µs, not as a ratio. After the step: its fastest pass over the warm
        pass. The factor is the lesser of the two: nowhere in a step is colder than right after its last
        op, so an in-step reading above it is the hook's own noise (a chain of 300 ops on 8 floats, which
        evict nothing, read 2 to 4.7 in the step beside other work).
        """
        warm_ns = self.warm_ns()
        readings = []
        steps = [sites for sites in self._sites if sites]
        if steps:
            count = min(map(len, steps))
            excess = statistics.median(min(sites[i][0] for sites in steps) - min(sites[i][1] for sites in steps) for i in range(count))
            readings.append(1.0 + excess / warm_ns)
        if self.durations_ns:
            readings.append(min(self.durations_ns) / warm_ns)
        return max(1.0, min(readings, default=1.0))

    def warm_ns(self, steps: int = 200) -> int:
        """The chain's fastest pass after an empty step: warm."""
        passes: list[int] = []
        timer = StepTimer(after_step=lambda: passes.append(self._pass_ns()))
        timer.begin_call()
        for _ in range(steps):
            timer()
        return min(passes)


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
    cold_factor: float = 1.0  # how much slower module glue ran where the model's runs than warm (ColdProbe)
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


def measure_windows(
    model: Any, mode: str, budget: Budget, count: int, pace: Pace = Pace(), after_step: Callable[[], None] = _nothing
) -> list[Window]:
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
            timer = StepTimer(pace.sync, lambda account=account: (account(), after_step()))
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


def characterise(model: Any, mode: str, budget: Budget, pace: Pace = Pace(), probe: ColdProbe | None = None) -> Characterisation:
    """Warm up, measure windows of steps for a median and IQR, then time whole calls for the edge cost.

    With a ``probe``, it is timed after every measured step, then, unless it was made ``in_step=False``,
    at the module calls of a few steps of its own after the windows: the row's cold factor.
    """
    sync, agree = pace.sync, pace.agree
    started = time.perf_counter()
    warmup, steady = warm_up(model, mode, budget, pace)
    warmed = time.perf_counter()

    count = budget.measured_steps(agree([statistics.median(warmup[-budget.warmup_window :])])[0])
    gauge = MachineGauge()
    windows = measure_windows(model, mode, budget, count, pace, after_step=probe or _nothing)
    machine = gauge.read()
    timed = [window.timed_ns for window in windows]
    pair, diff = closest_pair(timed)
    chosen = [window for window, durations in zip(windows, timed) if any(durations is p for p in pair)]
    steps = StepStats.from_ns([d for window in pair for d in window])
    if probe is not None and probe.in_step:
        pace.announce("probing the caches at module calls")
        probe.run_in_step(model, mode, steps.median_ms, pace)

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
        cold_factor=probe.factor() if probe is not None else 1.0,
        samples=tuple(sample for window in chosen for sample in window.samples),
        clock_method=clock_method(),
        machine=machine,
    )
