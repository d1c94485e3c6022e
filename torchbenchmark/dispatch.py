"""The dispatch verdict: how much of a step is per-op overhead, priced per kind of event on this machine.

Every op a model calls pays a fixed cost before any arithmetic: Python argument parsing, the dispatcher,
autograd bookkeeping, an allocation, a kernel launch on a GPU. What an event costs depends on how it was
reached, so the light trace's op events are sorted into three kinds (``trace_analysis.EVENT_KINDS``) and
each kind has its own price, calibrated on this machine per *event*:

    call      a top-level op called from Python: argument parsing, the dispatcher, the op's set-up
    nested    an op dispatched inside another op or an autograd node (linear -> t, addmm): the dispatcher
    autograd  an autograd engine node: the engine's scheduling and bookkeeping of one backward function

A few ops also set up a kernel of their own on every call (``trace_analysis.SETUP_OPS``: oneDNN's LSTM
layer, forward and backward, about 34 and 96 µs a call at nil width here, against 0.2 to 2 µs for an
event), and step through time inside that one event: each such call is priced once more for its set-up,
and each of its time steps at nil width. The light profile records no shapes, so the time steps come
from the detailed profile's (with ``--no-detailed`` they are not counted: the estimate is then low by
their share, 11% of lstm_lm's overhead in eval and 22% in train here).

Python that makes no event (module ``__call__``, hooks, the optimizer's loops, glue between ops) is
measured, not priced: it is the time on the step's thread with no top-level op running (the trace's
*Python gap*, each gap between two ops at its least over the profiled steps, since preemption only
adds to it), divided by the *cold factor* (``cold_factor``), less what an empty profiled step holds
(the harness and ``profiler.step``, ``step_gap_us``) and what each call's own gap holds in a bare loop
(argument parsing and the profiler's cost around a top-level event, ``call_gap_us``). The cold factor
is how much slower a fixed piece of module glue (``harness.ColdProbe``) ran right after the case's
measured steps than after an empty step: a step that streams more data than the caches hold leaves
the Python between its ops running on evicted caches, and that slowness belongs to the arithmetic.
The probe measures it per step, not per op: the Python after a tiny op of such a step runs as cold as
after a large one (benchmarks/RESULTS.md). So:

    overhead_us = calls * call_us + nested * nested_us + autograd * autograd_us
                  + rnn_calls * rnn_us + rnn_time_steps * rnn_step_us   (and the same for their backward)
                  + max(0, python_gap_us / cold - step_gap_us - calls * call_gap_us)
    overhead_fraction = overhead_us / step_time             (uncapped; the pinned field caps it at 1)

Calibration times loops of trivial ops (one-element tensors, so the arithmetic is nil) and profiles each
loop once to count the events an iteration emits, since one call is rarely one event (``a * 2.0``
dispatches five). Prices follow in order, each from loops whose other kinds are already priced:
``call_us`` from ops that nest nothing, ``nested_us`` pooled over ops that nest many, ``autograd_us``
from the difference between a deep and a shallow backward (so the fixed cost of entering the engine,
which the trace shows as Python gap, cancels), then the LSTM layer's set-up and time step from loops of
one layer of width 2 over 1 and RNN_TIME_STEPS time steps, beyond their events' prices (and, backward,
beyond the forward it runs and the engine's entry). The loop's own cost is taken off every timing.

The interval spans each calibration repeat's prices, the profiled steps' Python gaps (least, then median
and without the cold factor at the top) and the measured step time's interquartile range:
``[lowest overhead / q3 step, highest overhead / q1 step]``. A row is
*borderline* when the interval crosses a verdict threshold: its verdict could flip on a rerun.


Verdicts on a CPU, from the overhead fraction:
    >= DISPATCH_BOUND_AT (0.5)   dispatch-bound: most of the step is overhead; fewer or fused ops help,
                                 faster kernels do not
    <  COMPUTE_BOUND_BELOW (0.2) compute-bound: the arithmetic dominates; faster kernels help
    otherwise                    mixed

On a GPU the verdict is measured, not estimated (``judge_gpu``): it asks which side waits on which in the
light profile. The host waiting on the GPU (time blocked in syncs, at least HOST_WAIT_GPU_BOUND_AT of the
step) or kernels waiting in the queue behind earlier kernels (a median of QUEUED_AT_US or more from launch
to start) means the GPU limits the step: compute-bound. The host hardly waiting (under
HOST_WAIT_CPU_BOUND_BELOW) while kernels start as soon as they are launched means the GPU waits on the
host: dispatch-bound, however busy the GPU is between launches. Anything else is mixed. The overhead
fraction on a GPU is the share of the unprofiled median step the GPU is idle.

A compute-bound verdict is read with the step's ``pct_of_peak`` (torchbenchmark/costs.py): under
costs.KERNEL_LIMITED_BELOW_PCT of the machine's peak its kernels, not its op count, are the limit.
"""

from __future__ import annotations

import dataclasses
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, record_function, schedule

from torchbenchmark.harness import ColdProbe, StepTimer, device_sync
from torchbenchmark.results import GpuEvidence, Scaling
from torchbenchmark.spec import Budget
from torchbenchmark.trace_analysis import (
    EVENT_KINDS,
    PRICED_KINDS,
    SETUP_KINDS,
    TIME_STEP_KINDS,
    OverheadEvents,
    TraceSummary,
    overhead_events_of_trace,
)

DISPATCH_BOUND_AT = 0.5
COMPUTE_BOUND_BELOW = 0.2
THRESHOLDS = (COMPUTE_BOUND_BELOW, DISPATCH_BOUND_AT)
VERDICTS = ("dispatch-bound", "mixed", "compute-bound")
HOST_WAIT_GPU_BOUND_AT = 0.5
HOST_WAIT_CPU_BOUND_BELOW = 0.2
QUEUED_AT_US = 50.0  # an idle GPU starts a kernel within about 10 µs of its launch, profiled
LIMIT_VERDICTS = {"cpu": "dispatch-bound", "both": "mixed", "gpu": "compute-bound"}


@dataclasses.dataclass(frozen=True)
class Prices:
    """The fixed cost of one event of each kind on this machine, in µs."""

    call_us: float
    nested_us: float
    autograd_us: float
    call_gap_us: float  # Python gap per top-level call of a bare loop under the light profiler, loop excluded
    # A oneDNN RNN layer call (trace_analysis.SETUP_OPS) beyond its events' dispatch: its set-up, and each
    # time step it runs at nil width; 0 where LSTMs do not run on oneDNN.
    rnn_us: float = 0.0
    rnn_step_us: float = 0.0
    rnn_backward_us: float = 0.0
    rnn_backward_step_us: float = 0.0

    def of(self, kind: str) -> float:
        return getattr(self, f"{kind}_us")


@dataclasses.dataclass(frozen=True)
class Calibration:
    """Prices from each interleaved repeat of the calibration loops; the median of each is the estimate."""

    repeats: tuple[Prices, ...]
    step_gap_us: float = 0.0  # Python gap of an empty profiled step: the harness and the profiler's step
    probe_us: float = 0.0  # the ColdProbe's fastest pass after an empty step: its warm time; 0: not measured

    @property
    def prices(self) -> Prices:
        return Prices(**{
            field.name: statistics.median(getattr(p, field.name) for p in self.repeats)
            for field in dataclasses.fields(Prices)
        })  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Workload:
    """A calibration loop body and the events one iteration emits (counted by profiling it once)."""

    name: str
    run: Callable[[], object]
    events: dict[str, float] = dataclasses.field(default_factory=dict)
    gap_us: float = 0.0  # Python gap per iteration under the light profiler
    time_steps: int = 0  # of each RNN layer call in it; the light profile records no shapes to count them
    dear: bool = False  # 20 to 200 times a trivial call's cost: timed and counted over a tenth as many iterations

    def iterations(self, count: int) -> int:
        return max(1, count // 10 if self.dear else count)


# The time steps of the calibration's longer RNN loop: with the one-step loop, a line through set-up and step.
RNN_TIME_STEPS = 33


def _workloads(device: torch.device) -> list[Workload]:
    one = dict(device=device)
    a, b = torch.ones(1, **one), torch.ones(1, **one)
    x, w, bias = torch.ones(1, 1, **one), torch.ones(1, 1, **one), torch.ones(1, **one)
    table, index, offsets = torch.ones(4, 1, **one), torch.zeros(1, dtype=torch.long, **one), torch.zeros(1, dtype=torch.long, **one)
    leaf = torch.ones(1, requires_grad=True, **one)
    # One LSTM layer of width 2 (gate weights, recurrent weights and their biases) over 1 and 33 time steps.
    # Widths 2 to 16 cost the same within 5% a call; width 1 a third less, a case of its own.
    gates = [torch.full((8, 2), 0.1, **one), torch.full((8, 2), 0.1, **one), torch.zeros(8, **one), torch.zeros(8, **one)]
    trained = [weight.clone().requires_grad_() for weight in gates]
    state = (torch.zeros(1, 1, 2, **one), torch.zeros(1, 1, 2, **one))

    def lstm(time_steps: int, train: bool) -> Callable[[], object]:
        sequence, weights = torch.ones(1, time_steps, 2, **one), trained if train else gates

        def run() -> object:
            # input, state, weights, has_biases, num_layers, dropout, train, bidirectional, batch_first
            out = torch.lstm(sequence, state, weights, True, 1, 0.0, train, False, True)[0]
            return out.sum().backward() if train else out

        return run

    def backward(depth: int) -> Callable[[], None]:
        def run() -> None:
            y = leaf
            for _ in range(depth):
                y = y * a
            y.sum().backward()

        return run

    # Ops of each shape a model's step is made of: calls that nest nothing, calls that nest a few or many
    # ops (embedding_bag nests about 40), backward passes of two depths, and an op with a set-up of its
    # own (SETUP_OPS: an LSTM runs on oneDNN's RNN layer wherever oneDNN is built in), forward and back.
    return [
        Workload("loop", lambda: None),
        Workload("add", lambda: a + b),
        Workload("view", lambda: x.view(-1)),
        Workload("cat", lambda: torch.cat([a, b])),
        Workload("mul_scalar", lambda: a * 2.0),
        Workload("relu", lambda: torch.relu(a)),
        Workload("sum", lambda: a.sum()),
        Workload("linear", lambda: F.linear(x, w, bias)),
        Workload("embedding_bag", lambda: F.embedding_bag(index, table, offsets)),
        Workload("backward_1", backward(1), dear=True),
        Workload("backward_8", backward(8), dear=True),
        *(Workload(f"rnn_{steps}", lstm(steps, train=False), time_steps=steps, dear=True) for steps in (1, RNN_TIME_STEPS)),
        *(Workload(f"rnn_backward_{steps}", lstm(steps, train=True), time_steps=steps, dear=True)
          for steps in (1, RNN_TIME_STEPS)),
    ]


def _count_events(workloads: list[Workload], device: torch.device, iterations: int) -> list[Workload]:
    """Each workload with the events and Python gap of one iteration, from one light profile of its loop
    (``iterations`` of it, a tenth as many of a dear one)."""
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "calibration.json"
        with profile(activities=activities) as prof:
            for index, workload in enumerate(workloads):
                # Named as profiler steps so the trace is read exactly as a model's trace is.
                with record_function(f"ProfilerStep#{index}"):
                    for _ in range(workload.iterations(iterations)):
                        workload.run()
        prof.export_chrome_trace(str(path))
        counted = overhead_events_of_trace(path)
    counted_workloads = []
    for workload, events, gap in zip(workloads, counted.events_per_step, counted.python_gap_us_per_step):
        runs = workload.iterations(iterations)
        per_run = {kind: count / runs for kind, count in events.items()}
        # The light profile records no shapes: an RNN loop's time steps are the ones it was built with.
        per_run |= {TIME_STEP_KINDS[kind]: per_run[kind] * workload.time_steps for kind in SETUP_KINDS}
        counted_workloads.append(dataclasses.replace(workload, events=per_run, gap_us=gap / runs))
    return counted_workloads


def prices_from_timings(workloads: Sequence[Workload], cost_us: dict[str, float]) -> Prices:
    """Per-event prices from each workload's counted events and its measured cost per iteration (µs).

    ``cost_us`` must hold ``loop`` (an empty loop body), workloads that nest nothing, workloads that
    nest ops, and ``backward_1`` and ``backward_8``; see the module docstring for the order. The RNN
    loops (``rnn_1``, ``rnn_33``, ``rnn_backward_1``, ``rnn_backward_33``), where given and where their
    layer ran on oneDNN, price its set-up and time steps last.
    """
    by_name = {w.name: w for w in workloads}
    loop = cost_us["loop"]
    net = {name: max(0.0, cost - loop) for name, cost in cost_us.items()}
    forward = [w for w in workloads if w.name != "loop" and not w.name.startswith("backward") and not w.time_steps]
    flat = [w for w in forward if w.events["nested"] == 0 and w.events["call"] > 0]
    nesting = [w for w in forward if w.events["nested"] > 0]
    call_us = statistics.median(net[w.name] / w.events["call"] for w in flat)
    nested_us = max(0.0, sum(net[w.name] - w.events["call"] * call_us for w in nesting) / sum(w.events["nested"] for w in nesting))
    deep, shallow = by_name["backward_8"], by_name["backward_1"]
    delta = {kind: deep.events[kind] - shallow.events[kind] for kind in EVENT_KINDS}
    autograd_us = max(0.0, (net[deep.name] - net[shallow.name] - delta["call"] * call_us - delta["nested"] * nested_us) / delta["autograd"])
    loop_gap = by_name["loop"].gap_us
    call_gap_us = statistics.median(max(0.0, w.gap_us - loop_gap) / w.events["call"] for w in forward)
    prices = Prices(call_us=call_us, nested_us=nested_us, autograd_us=autograd_us, call_gap_us=call_gap_us)

    def unpriced_us(workload: Workload) -> float:
        """The workload's cost beyond its events at the prices known so far."""
        return net[workload.name] - sum(workload.events.get(kind, 0) * prices.of(kind) for kind in PRICED_KINDS)

    # An RNN call costs, beyond its events' dispatch, set-up + time steps * step: a line through the short
    # and the long loop. Backward is priced after forward, beyond what entering the engine costs a
    # shallow backward too.
    for kind, engine in (("rnn", None), ("rnn_backward", shallow)):
        short, long = by_name.get(f"{kind}_1"), by_name.get(f"{kind}_{RNN_TIME_STEPS}")
        if short is None or long is None or not short.events[kind] or not long.events[kind]:
            continue

        def per_call_us(workload: Workload) -> float:
            return (unpriced_us(workload) - (unpriced_us(engine) if engine else 0.0)) / workload.events[kind]

        step_us = max(0.0, (per_call_us(long) - per_call_us(short)) / (long.time_steps - short.time_steps))
        setup_us = max(0.0, per_call_us(short) - step_us * short.time_steps)
        prices = dataclasses.replace(prices, **{f"{kind}_us": setup_us, f"{TIME_STEP_KINDS[kind]}_us": step_us})
    return prices


def _step_gap_us(device: torch.device, steps: int = 20) -> float:
    """The Python gap of an empty step profiled as a model's is: ``StepTimer`` and ``profiler.step``."""
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "steps.json"
        with profile(
            activities=activities,
            schedule=schedule(wait=1, warmup=1, active=steps, repeat=1),
            on_trace_ready=lambda prof: prof.export_chrome_trace(str(path)),
        ) as prof:
            timer = StepTimer(device_sync(device), after_step=prof.step)
            timer.begin_call()
            for _ in range(steps + 2):
                timer()
        return statistics.median(overhead_events_of_trace(path).python_gap_us_per_step)


def _warm_probe_us(steps: int = 200) -> float:
    """The ColdProbe's fastest pass after an empty step, as ``characterise`` times it after a model's."""
    probe = ColdProbe()
    timer = StepTimer(after_step=probe)
    timer.begin_call()
    for _ in range(steps):
        timer()
    return probe.least_us() or 0.0


# Each timing is the fastest of this many short bursts: on a shared machine preemption only adds time.
BURSTS = 8


def calibrate(device: torch.device, calls: int = 1000, repeats: int = 5, profiled_calls: int = 300) -> Calibration:
    """Per-event prices on ``device``, one set per repeat; the workloads take turns within each repeat.

    Timed on one CPU thread: nil-width ops have no work to share, and more threads only add OpenMP's
    waits. On a loaded machine oneDNN's LSTM took 270 ms a backward call of 33 time steps on two threads,
    0.2 ms on one: its threads met at every step, each wait as long as the scheduler kept one off a core.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _calibrate(device, calls, repeats, profiled_calls)
    finally:
        torch.set_num_threads(threads)


def _calibrate(device: torch.device, calls: int, repeats: int, profiled_calls: int) -> Calibration:
    sync = device_sync(device)  # the case's own GPU, not the current one
    workloads = _workloads(device)
    for workload in workloads:
        for _ in range(100):  # warm the allocator, the autograd graph and the caches
            workload.run()
    workloads = _count_events(workloads, device, profiled_calls)
    results = []
    for _ in range(repeats):
        cost_us = {}
        for workload in workloads:
            n = max(1, workload.iterations(calls) // BURSTS)  # a dear loop's fewer iterations take about as long
            bursts = []
            for _ in range(BURSTS):
                # Each burst starts on an idle GPU and is timed without waiting for its kernels: a burst
                # is shorter than a GPU's launch queue, so the clock sees the host's cost per op, not the
                # GPU's throughput for tiny kernels. (On a CPU the sync is a no-op.)
                sync()
                start = time.perf_counter_ns()
                for _ in range(n):
                    workload.run()
                bursts.append((time.perf_counter_ns() - start) / n / 1e3)
            sync()
            cost_us[workload.name] = min(bursts)
        results.append(prices_from_timings(workloads, cost_us))
    return Calibration(repeats=tuple(results), step_gap_us=_step_gap_us(device), probe_us=_warm_probe_us())


@dataclasses.dataclass(frozen=True)
class Estimate:
    """The overhead of an average step, priced per kind of event, and its share of the step."""

    events_per_step: dict[str, float]  # by kind in PRICED_KINDS
    python_us: float  # per step: Python time that made no event (gap beyond what the calls' own gaps hold)
    cold: float  # the cold factor the gap was divided by
    overhead_us: float  # per step, all kinds and the Python time
    fraction: float  # overhead over the median step time, uncapped
    interval: tuple[float, float]  # lowest and highest fraction the spreads allow

    @property
    def borderline(self) -> bool:
        """True when the interval crosses a verdict threshold: a rerun could give another verdict."""
        low, high = self.interval
        return verdict(low) != verdict(high)


def cold_factor(probe_us: float | None, warm_probe_us: float) -> float:
    """How much slower Python ran after the model's step than after an empty one, at least 1.

    The ColdProbe's fastest pass after a measured step over its fastest after an empty step: 1 when either
    is unknown. A step whose arithmetic streams more data than the caches hold leaves the Python between
    its ops running on evicted caches; that slowness belongs to the data, so the Python gap is divided by
    this factor and counted at the speed the events are priced at.
    """
    if not probe_us or warm_probe_us <= 0:
        return 1.0
    return max(1.0, probe_us / warm_probe_us)


def _overhead_us(
    events: dict[str, float], gap_us: float, prices: Prices, step_gap_us: float, cold: float = 1.0
) -> tuple[float, float]:
    """(overhead, Python time) per step in µs."""
    python_us = max(0.0, gap_us / cold - step_gap_us - events["call"] * prices.call_gap_us)
    return sum(events[kind] * prices.of(kind) for kind in PRICED_KINDS) + python_us, python_us


def estimate(
    events: OverheadEvents, calibration: Calibration, step_ms: float, step_iqr_ms: float = 0.0, probe_us: float | None = None
) -> Estimate:  # fmt: skip
    """The overhead share of a step of median ``step_ms`` whose light trace gave ``events``; ``probe_us``: the
    ColdProbe's fastest pass after the case's measured steps (``Characterisation.cold_probe_us``).

    The Python gap is the least of the profiled steps' (the median for the interval's top): a process
    the machine's other work preempts shows the lost time as gap, so gaps err only upwards.
    """
    if step_ms <= 0:
        raise ValueError("step time must be positive")
    per_step = {kind: events.mean_events(kind) for kind in PRICED_KINDS}
    gaps = events.python_gap_us_per_step or (0.0,)
    least_gap, median_gap = min(gaps), statistics.median(gaps)
    if events.least_python_gap_us is not None:
        least_gap = min(least_gap, events.least_python_gap_us)
    step_gap = calibration.step_gap_us
    cold = cold_factor(probe_us, calibration.probe_us)
    overhead_us, python_us = _overhead_us(per_step, least_gap, calibration.prices, step_gap, cold)
    low_us = min(_overhead_us(per_step, least_gap, p, step_gap, cold)[0] for p in calibration.repeats)
    # The top of the interval takes the gap as measured: the cold factor is itself an estimate.
    high_us = max(_overhead_us(per_step, median_gap, p, step_gap)[0] for p in calibration.repeats)
    step_low_ms, step_high_ms = max(step_ms - step_iqr_ms / 2, step_ms / 2), step_ms + step_iqr_ms / 2
    return Estimate(
        events_per_step=per_step,
        python_us=python_us,
        cold=cold,
        overhead_us=overhead_us,
        fraction=overhead_us / (step_ms * 1e3),
        interval=(low_us / (step_high_ms * 1e3), high_us / (step_low_ms * 1e3)),
    )


# --scaling: the batch sizes timed besides the case's own, as divisors of it.
SCALING_DIVISORS = (2, 4, 8)
# The event-based fraction agrees with the scaling bound when it is at most this much above it (the
# bound holds, within noise) and at least this share of it (the intercept also holds arithmetic that
# does not grow with the batch, such as weight updates, so it may sit well above the overhead).
AGREEMENT_ABOVE = 1.25
AGREEMENT_BELOW = 1 / 3


def scaling_budget(budget: Budget) -> Budget:
    """A shorter budget for the extra batch sizes: their medians feed a fit, not a row of their own."""
    return dataclasses.replace(
        budget,
        warmup_s=min(budget.warmup_s, 1.0),
        measure_s=min(budget.measure_s, 0.5),
        max_steps=min(budget.max_steps, 500),  # a load spike in warmup must not ask for minutes of steps
        windows=2,
        edge_calls=1,
        edge_s=0.0,
    )


def fit_line(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """Least-squares intercept and slope of ``y = intercept + slope * x``."""
    slope, intercept = statistics.linear_regression(xs, ys)
    return intercept, slope


def scaling_batch_sizes(batch_size: int) -> list[int]:
    """The smaller batch sizes ``--scaling`` times beside ``batch_size`` (fewer than two: no estimate)."""
    return sorted({max(1, batch_size // d) for d in SCALING_DIVISORS} - {batch_size})


def scaling_from_steps(step_ms: dict[int, float], batch_size: int, fraction: float) -> Scaling:
    """The overhead bound from the median step at each batch size (``batch_size``, the case's, among them),
    checked against ``fraction``, the event-based estimate."""
    batches = tuple(sorted(step_ms))
    times = tuple(step_ms[b] for b in batches)
    intercept, _ = fit_line(batches, times)
    upper = max(0.0, intercept) / step_ms[batch_size]
    agrees = AGREEMENT_BELOW * upper <= fraction <= AGREEMENT_ABOVE * upper
    return Scaling(batch_sizes=batches, step_ms=times, intercept_ms=intercept, fraction_upper=upper, agrees=agrees)


def scaling_estimate(
    step_ms_at: Callable[[int], float], batch_size: int, step_ms: float, fraction: float
) -> Scaling | None:
    """The overhead bound from step times at ``batch_size`` and smaller batches; None below batch 4.

    ``step_ms_at(batch)`` measures the median step at ``batch``; ``fraction`` is the event-based estimate
    the bound is checked against.
    """
    smaller = scaling_batch_sizes(batch_size)
    if len(smaller) < 2:
        return None
    return scaling_from_steps({**{b: step_ms_at(b) for b in smaller}, batch_size: step_ms}, batch_size, fraction)


def verdict(fraction: float) -> str:
    """``dispatch-bound``, ``mixed`` or ``compute-bound`` for an overhead fraction (thresholds above)."""
    if fraction >= DISPATCH_BOUND_AT:
        return "dispatch-bound"
    if fraction < COMPUTE_BOUND_BELOW:
        return "compute-bound"
    return "mixed"


def judge_gpu(light: TraceSummary, median_ms: float) -> GpuEvidence:
    """Which side limits a step on a GPU, from the light profile and the unprofiled median step (see above)."""
    if light.gpu is None:
        raise ValueError("the trace holds no GPU events")
    host_wait = light.gpu.sync_ms_per_step / light.step_ms
    if host_wait >= HOST_WAIT_GPU_BOUND_AT or light.gpu.median_launch_wait_us >= QUEUED_AT_US:
        limited_by = "gpu"
    elif host_wait < HOST_WAIT_CPU_BOUND_BELOW:
        limited_by = "cpu"
    else:
        limited_by = "both"
    return GpuEvidence(
        limited_by=limited_by,
        busy_pct=100.0 * light.gpu.busy_ms_per_step / median_ms,
        host_wait_pct=100.0 * host_wait,
        median_launch_wait_us=light.gpu.median_launch_wait_us,
        kernel_ms_per_step=light.gpu.busy_ms_per_step,
        kernels_per_step=light.gpu.kernels_per_step,
    )


def gpu_verdict(evidence: GpuEvidence) -> tuple[str, float]:
    """The verdict on a GPU and its overhead fraction: the share of the step the GPU is idle."""
    return LIMIT_VERDICTS[evidence.limited_by], min(1.0, max(0.0, 1.0 - evidence.busy_pct / 100.0))
