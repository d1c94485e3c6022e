"""Calibrating the per-event prices on this machine: loops of trivial ops, counted and timed.

Each loop body is an op of a shape a model's step is made of, on one-element tensors so the arithmetic is nil. A
light profile of the loops counts the events an iteration emits (``a * 2.0`` dispatches five) and the Python gap
it leaves; bursts of each loop are timed, the fastest kept (preemption only adds), the loops taking turns so a
spell of load falls on all alike; ``analyze.pricing.prices_from_timings`` turns counts and costs into prices.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, record_function

from torchbenchmark.analyze.overhead import TIME_STEP_KINDS, overhead_events_of_trace
from torchbenchmark.analyze.pricing import Calibration, Counted, Prices, prices_from_timings
from torchbenchmark.analyze.rnn import RNN_TIME_STEPS
from torchbenchmark.analyze.rnn import with_rnn_prices as rnn_priced
from torchbenchmark.measure.harness import device_sync
from torchbenchmark.measure.native_logs import quiet_kineto
from torchbenchmark.measure.steady import intra_op_threads


@dataclasses.dataclass(frozen=True)
class Workload:
    """A calibration loop body."""

    name: str
    run: Callable[[], object]
    time_steps: int = 0  # of each RNN layer call in it; the light profile records no shapes to count them
    dear: bool = False  # 20 to 200 times a trivial call's cost: timed and counted over a tenth as many iterations

    def iterations(self, count: int) -> int:
        return max(1, count // 10 if self.dear else count)


def _workloads(device: torch.device) -> list[Workload]:
    one = dict(device=device)
    a, b = torch.ones(1, **one), torch.ones(1, **one)
    x, w, bias = torch.ones(1, 1, **one), torch.ones(1, 1, **one), torch.ones(1, **one)
    table, index, offsets = torch.ones(4, 1, **one), torch.zeros(1, dtype=torch.long, **one), torch.zeros(1, dtype=torch.long, **one)
    # A depthwise convolution takes oneDNN's path at any size (a plain one this small, a reference kernel).
    signal, taps = torch.ones(1, 2, 4, **one), torch.ones(2, 1, 4, **one)
    # Calls that nest nothing, a few or many ops (embedding_bag about 40), backward passes of two depths, and
    # an op with a set-up of its own (an RNN layer is priced apart, ``with_rnn_prices``).
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
        Workload("backward_1", _backward(device, 1), dear=True),
        Workload("backward_8", _backward(device, 8), dear=True),
        Workload("conv", lambda: F.conv1d(signal, taps, groups=2), dear=True),
    ]


def _backward(device: torch.device, depth: int) -> Callable[[], None]:
    """A backward pass through ``depth`` multiplications of a one-element leaf."""
    leaf, a = torch.ones(1, requires_grad=True, device=device), torch.ones(1, device=device)

    def run() -> None:
        y = leaf
        for _ in range(depth):
            y = y * a
        y.sum().backward()

    return run


def _lstm(device: torch.device, time_steps: int, train: bool, grad: bool) -> Callable[[], object]:
    """One LSTM layer of width 2 over ``time_steps`` (widths 2 to 16 cost alike within 5%), with ``train`` its
    backward; ``grad``: a forward-only loop with grad enabled, as a train step's forward runs."""
    one = dict(device=device)
    weights = [torch.full((8, 2), 0.1, **one), torch.full((8, 2), 0.1, **one), torch.zeros(8, **one), torch.zeros(8, **one)]
    weights = [weight.requires_grad_() for weight in weights] if train else weights
    sequence, state = torch.ones(1, time_steps, 2, **one), (torch.zeros(1, 1, 2, **one), torch.zeros(1, 1, 2, **one))

    def run() -> object:
        with torch.set_grad_enabled(grad or train):
            # input, state, weights, has_biases, num_layers, dropout, train, bidirectional, batch_first
            out = torch.lstm(sequence, state, weights, True, 1, 0.0, train, False, True)[0]
        return out.sum().backward() if train else out

    return run


def with_rnn_prices(
    calibration: Calibration, device: torch.device, train: bool, calls: int = 1000, profiled_calls: int = 300
) -> Calibration:
    """``calibration`` with an RNN layer's set-up and time step priced in each repeat, forward and, for a ``train``
    step, backward (``analyze.rnn.with_rnn_prices``), for a step that calls one. Timed at the case's intra-op
    threads: the layer opens a parallel region at every time step, whose cost grows with the threads."""
    kinds = (False, True) if train else (False,)
    workloads = [
        Workload("loop", lambda: None),
        *([Workload("backward_1", _backward(device, 1), dear=True)] if train else []),
        *(
            Workload(
                f"rnn{'_backward' if backward else ''}_{steps}", _lstm(device, steps, backward, grad=train), time_steps=steps, dear=True
            )
            for backward in kinds
            for steps in (1, RNN_TIME_STEPS)
        ),
    ]
    for workload in workloads:
        for _ in range(10):  # oneDNN builds its kernels at first use
            workload.run()
    counted = _count_events(workloads, device, profiled_calls)
    sync = device_sync(device)
    # Each loop's fastest burst over all turns: a time step costs about a hundredth of a call, so a line through
    # two loops' costs needs their quickest bursts.
    turns = [_timings(workloads, sync, calls) for _ in calibration.repeats]
    fastest = {workload.name: min(turn[workload.name] for turn in turns) for workload in workloads}
    return Calibration(tuple(rnn_priced(prices, counted, fastest) for prices in calibration.repeats))


SPLITS = 5  # profiled steps of each workload: its Python gap is the least of theirs (a preemption spreads over one)


def _count_events(workloads: list[Workload], device: torch.device, iterations: int) -> list[Counted]:
    """Each workload with the events and Python gap of one iteration, from a light profile of ``iterations`` of it."""
    runs = [max(1, workload.iterations(iterations) // SPLITS) for workload in workloads]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "calibration.json"
        with profile(activities=_activities(device)) as prof:
            for index, (workload, count) in enumerate(zip(workloads, runs)):
                for split in range(SPLITS):
                    # Named as profiler steps: the trace is read as a model's is.
                    with record_function(f"ProfilerStep#{index * SPLITS + split}"):
                        for _ in range(count):
                            workload.run()
        prof.export_chrome_trace(str(path))
        counted = overhead_events_of_trace(path)
    found = []
    for index, (workload, count) in enumerate(zip(workloads, runs)):
        steps = slice(index * SPLITS, (index + 1) * SPLITS)
        per_run = {kind: count_ / count for kind, count_ in counted.events_per_step[steps.start].items()}
        # The light profile records no shapes: an RNN loop's time steps are the ones it was built with.
        per_run |= {step_kind: per_run.get(kind, 0) * workload.time_steps for kind, step_kind in TIME_STEP_KINDS.items()}
        found.append(Counted(workload.name, per_run, min(counted.python_gap_us_per_step[steps]) / count, workload.time_steps))
    return found


def _activities(device: torch.device) -> list[ProfilerActivity]:
    return [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])


BURSTS = 8  # each timing the fastest of these: preemption only adds time


def _timings(workloads: list[Workload], sync: Callable[[], None], calls: int) -> dict[str, float]:
    """Each workload's cost per iteration in µs, the workloads taking turns: the fastest of ``BURSTS`` bursts.

    On a GPU each burst starts idle and is timed without waiting for its kernels: shorter than the launch queue,
    it shows the host's cost per op, not the GPU's throughput for tiny kernels.
    """
    cost_us = {}
    for workload in workloads:
        n = max(1, workload.iterations(calls) // BURSTS)  # a dear loop's fewer iterations take about as long
        bursts = []
        for _ in range(BURSTS):
            sync()
            start = time.perf_counter_ns()
            for _ in range(n):
                workload.run()
            bursts.append((time.perf_counter_ns() - start) / n / 1e3)
        sync()
        cost_us[workload.name] = min(bursts)
    return cost_us


# A case's calibration is timed at three moments seconds apart (before its profiles, before its replay, after it),
# this many repeats each: a spell of load over one moment leaves the median, over two shows in the spread
# (``Calibration.spread_pct``); over a single moment's 0.15 s it could slow every repeat alike, unseen.
MOMENT_REPEATS = 3


class Calibrating:
    """A calibration taken at moments: the loops warmed once, then counted and timed at each ``moment()``, on one
    CPU thread (nil-width ops have no work to share; more threads only add OpenMP's waits)."""

    def __init__(self, device: torch.device, calls: int = 1000, profiled_calls: int = 300) -> None:
        quiet_kineto()
        self.device, self.calls, self.profiled_calls = device, calls, profiled_calls
        self.repeats: list[Prices] = []
        self.workloads = _workloads(device)
        with intra_op_threads(1):
            for workload in self.workloads:
                for _ in range(100):  # warm the allocator, the autograd graph and the caches
                    workload.run()

    def moment(self, repeats: int = MOMENT_REPEATS) -> Calibration:
        """The loops counted and ``repeats`` more repeats timed now; the calibration so far."""
        sync = device_sync(self.device)  # the case's own GPU, not the current one
        with intra_op_threads(1):
            counted = _count_events(self.workloads, self.device, self.profiled_calls)
            self.repeats += [prices_from_timings(counted, _timings(self.workloads, sync, self.calls)) for _ in range(repeats)]
        return self.calibration

    @property
    def calibration(self) -> Calibration:
        return Calibration(repeats=tuple(self.repeats))


def calibrate(device: torch.device, calls: int = 1000, repeats: int = 5, profiled_calls: int = 300) -> Calibration:
    """Per-event prices on ``device``, ``repeats`` sets of them timed at one moment (``Calibrating``)."""
    return Calibrating(device, calls, profiled_calls).moment(repeats)
