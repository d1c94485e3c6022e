"""Reading a Chrome trace written by torch.profiler: ops per step, op times, phases, top ops, GPU figures.

Works on the exported file, not on the live profiler, so every figure can be recomputed from the trace a
user keeps, and the tests run on real trace files. Only the active steps are in a trace, each inside a
``ProfilerStep#N`` annotation on the CPU (Kineto also copies an annotation onto the GPU timeline, as
``gpu_user_annotation``, when kernels were launched directly under it: those copies are not steps). A CPU
event belongs to the step whose window holds its start; a kernel or copy belongs to the step, the phase
and the op whose CPU window holds its launch (the ``cuda_runtime`` or ``cuda_driver`` call sharing its
``args.correlation``), whichever thread launched it.
"""

from __future__ import annotations

import bisect
import dataclasses
import gzip
import json
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from torchbenchmark.contract import PHASES
from torchbenchmark.results import TopOp

Event = dict[str, Any]
GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")  # host API calls, joined to their GPU work on correlation
# Host calls that block until the GPU has finished earlier work: time in them is the host waiting on the GPU.
# (.item(), nonzero and a device-to-host copy end in one of these.)
SYNC_CALLS = frozenset({
    "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy",
    "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize", "cuMemcpyDtoH_v2",
})  # fmt: skip
STEP_PREFIX = "ProfilerStep#"
STEP_CATEGORIES = ("user_annotation", "cpu_op")  # where torch writes the CPU step annotation


@dataclasses.dataclass(frozen=True)
class GpuSummary:
    """What the GPU did in an average profiled step, and how host and GPU waited on each other."""

    kernels_per_step: float  # kernels, copies and memsets
    busy_ms_per_step: float  # time with at least one of them running (overlaps on two streams counted once)
    sync_ms_per_step: float  # host time blocked in SYNC_CALLS
    median_launch_wait_us: float  # from a launch call's start to its first kernel's start: queueing behind earlier work
    unlaunched: int  # GPU events with no launch in the trace, placed by their own start instead


@dataclasses.dataclass(frozen=True)
class TraceSummary:
    """What one profiled trace says about its average step."""

    steps: int
    step_ms: float  # mean ProfilerStep duration
    ops_per_step: float  # every op event: each dispatch, nested ones and autograd nodes included
    calls_per_step: float  # top-level ops only: the calls the model or the autograd engine made
    median_op_us: float  # median duration of a top-level op: what one call costs
    phases_ms: dict[str, float]  # forward/backward/optimizer time per step (absent phases: 0)
    top_ops: tuple[TopOp, ...]
    gpu_busy_fraction: float | None  # share of the step with a kernel or copy running; None without GPU events
    gpu: GpuSummary | None = None  # None without GPU events

    @property
    def phases_pct(self) -> dict[str, float]:
        return {phase: 100.0 * ms / self.step_ms for phase, ms in self.phases_ms.items()}


class IncompleteTrace(ValueError):
    """A trace that lacks what its case's figures need: the case fails rather than report them wrong."""


def check_complete(summary: TraceSummary, profiled_steps: int, on_gpu: bool) -> None:
    """Raise IncompleteTrace unless the trace holds every profiled step and, on a GPU, GPU events."""
    if summary.steps < profiled_steps:
        raise IncompleteTrace(
            f"the trace holds {summary.steps} of the {profiled_steps} profiled steps: collection stopped early "
            "(Kineto's messages are in the case log)"
        )
    if on_gpu and summary.gpu is None:
        raise IncompleteTrace(
            "the CUDA trace holds no kernel events, so it cannot say what the GPU did: CUPTI recorded nothing "
            "(Kineto's messages are in the case log)"
        )


def load_events(path: str | Path) -> list[Event]:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as stream:
        return json.load(stream)["traceEvents"]


def _step_windows(events: Iterable[Event]) -> list[tuple[float, float]]:
    """The CPU windows of the profiled steps; the GPU copies of the annotation are not steps."""
    windows = [
        (float(e["ts"]), float(e["ts"]) + float(e["dur"]))
        for e in events
        if e.get("ph") == "X" and e.get("cat") in STEP_CATEGORIES and str(e.get("name", "")).startswith(STEP_PREFIX)
    ]
    return sorted(windows)


def _self_times(ops: Sequence[Event]) -> tuple[list[float], list[bool]]:
    """Self time of each op (its duration less its children's) and whether it is top-level."""
    self_us = [float(op["dur"]) for op in ops]
    top_level = [True] * len(ops)
    by_thread: dict[Any, list[int]] = defaultdict(list)
    for index, op in enumerate(ops):
        by_thread[(op.get("pid"), op.get("tid"))].append(index)
    for indices in by_thread.values():
        # Parents start no later and last no shorter than their children: sort so they come first.
        indices.sort(key=lambda i: (float(ops[i]["ts"]), -float(ops[i]["dur"])))
        stack: list[tuple[float, int]] = []  # (end time, op index) of the open ancestors
        for i in indices:
            start = float(ops[i]["ts"])
            while stack and stack[-1][0] <= start:
                stack.pop()
            if stack:
                self_us[stack[-1][1]] -= float(ops[i]["dur"])
                top_level[i] = False
            stack.append((start + float(ops[i]["dur"]), i))
    return self_us, top_level


def _busy_us(intervals: list[tuple[float, float]], windows: list[tuple[float, float]]) -> float:
    """Time inside ``windows`` covered by at least one of ``intervals`` (overlaps counted once)."""
    return sum(
        _union_us([(max(s, start), min(e, end)) for s, e in intervals if s < end and e > start]) for start, end in windows
    )


def _innermost_op(ops: Sequence[Event], calls: Sequence[Event]) -> list[int | None]:
    """For each host call, the index of the innermost op on its thread whose window holds it (or None)."""
    owner: list[int | None] = [None] * len(calls)
    by_thread: dict[Any, list[tuple[float, float, int, int]]] = defaultdict(list)
    for index, op in enumerate(ops):
        by_thread[(op.get("pid"), op.get("tid"))].append((float(op["ts"]), -float(op["dur"]), 0, index))
    for index, call in enumerate(calls):
        by_thread[(call.get("pid"), call.get("tid"))].append((float(call["ts"]), 0.0, 1, index))
    for items in by_thread.values():
        items.sort()  # at one instant an op opens before the calls it holds
        stack: list[tuple[float, int]] = []  # (end time, op index) of the open ops
        for start, negative_dur, is_call, index in items:
            while stack and stack[-1][0] <= start:
                stack.pop()
            if is_call:
                owner[index] = stack[-1][1] if stack else None
            else:
                stack.append((start - negative_dur, index))
    return owner


def _placer(windows: list[tuple[float, float]]) -> Any:
    """``index(ts)``: the window holding the instant ``ts``, or None."""
    starts = [start for start, _ in windows]

    def index(ts: float) -> int | None:
        i = bisect.bisect_right(starts, ts) - 1
        return i if i >= 0 and ts < windows[i][1] else None

    return index


def summarize_events(events: Sequence[Event], top: int = 10) -> TraceSummary:
    """Per-step figures from a trace's events. Raises ValueError if the trace holds no ProfilerStep."""
    windows = _step_windows(events)
    if not windows:
        raise ValueError("the trace holds no ProfilerStep events: was the profiler stepped?")
    step_of = _placer(windows)

    cpu = [e for e in events if e.get("ph") == "X" and "dur" in e and e.get("cat") not in GPU_CATEGORIES]
    complete = [e for e in cpu if step_of(float(e["ts"])) is not None]
    ops = [e for e in complete if e.get("cat") == "cpu_op"]
    self_us, top_level = _self_times(ops)
    steps = len(windows)
    step_us = statistics.fmean(end - start for start, end in windows)

    # GPU work joins its step, phase and op through the host call that launched it.
    launches = [e for e in complete if e.get("cat") in LAUNCH_CATEGORIES]
    launch_by_id = {e["args"]["correlation"]: e for e in launches if "correlation" in e.get("args", {})}
    launch_owner = dict(zip((id(e) for e in launches), _innermost_op(ops, launches)))
    gpu_work: list[tuple[Event, float, Event | None]] = []  # (GPU event, when it was launched, its launch)
    for event in events:
        if event.get("ph") != "X" or event.get("cat") not in GPU_CATEGORIES:
            continue
        launch = launch_by_id.get(event.get("args", {}).get("correlation"))
        placed_at = float(launch["ts"]) if launch is not None else float(event["ts"])
        if step_of(placed_at) is not None:
            gpu_work.append((event, placed_at, launch))
    kernel_us_by_op: dict[str, float] = defaultdict(float)
    for event, _, launch in gpu_work:
        owner = launch_owner.get(id(launch)) if launch is not None else None
        if owner is not None:
            kernel_us_by_op[ops[owner]["name"]] += float(event["dur"])

    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for op, own in zip(ops, self_us):
        totals[op["name"]][0] += own
        totals[op["name"]][1] += 1
    # On a GPU an op costs the step its CPU time or the kernel time it launched, whichever is larger.
    ranked = sorted(totals.items(), key=lambda item: max(item[1][0], kernel_us_by_op.get(item[0], 0.0)), reverse=True)
    top_ops = tuple(
        TopOp(
            name=name,
            self_ms_per_step=total / steps / 1e3,
            calls_per_step=calls / steps,
            pct_of_step=100.0 * total / steps / step_us,
            kernel_ms_per_step=kernel_us_by_op.get(name, 0.0) / steps / 1e3 if gpu_work else None,
        )
        for name, (total, calls) in ranked[:top]
    )

    phase_windows = {phase: [] for phase in PHASES}  # type: dict[str, list[tuple[float, float]]]
    for event in complete:
        if event.get("cat") == "user_annotation" and event.get("name") in phase_windows:
            phase_windows[event["name"]].append((float(event["ts"]), float(event["ts"]) + float(event["dur"])))
    if gpu_work:
        # On a GPU a phase costs the kernel time it launched; its CPU window is mostly time spent queuing.
        phases_us = {}
        for phase, spans in phase_windows.items():
            in_phase = _placer(sorted(spans))
            launched = [_interval(event) for event, placed_at, _ in gpu_work if in_phase(placed_at) is not None]
            phases_us[phase] = _union_us(launched)
    else:
        phases_us = {phase: sum(end - start for start, end in spans) for phase, spans in phase_windows.items()}

    top_level_durations = [float(op["dur"]) for op, top in zip(ops, top_level) if top]
    gpu = _gpu_summary(gpu_work, launches, windows) if gpu_work else None
    return TraceSummary(
        steps=steps,
        step_ms=step_us / 1e3,
        ops_per_step=len(ops) / steps,
        calls_per_step=len(top_level_durations) / steps,
        median_op_us=statistics.median(top_level_durations) if top_level_durations else 0.0,
        phases_ms={phase: us / steps / 1e3 for phase, us in phases_us.items()},
        top_ops=top_ops,
        gpu_busy_fraction=gpu.busy_ms_per_step / (step_us / 1e3) if gpu else None,
        gpu=gpu,
    )


def _interval(event: Event) -> tuple[float, float]:
    return float(event["ts"]), float(event["ts"]) + float(event["dur"])


def _union_us(intervals: list[tuple[float, float]]) -> float:
    """Time covered by at least one of ``intervals``: work on two streams at once counts once."""
    total, covered_until = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > covered_until:
            total += end - max(start, covered_until)
            covered_until = end
    return total


def _gpu_summary(
    gpu_work: list[tuple[Event, float, Event | None]], launches: list[Event], windows: list[tuple[float, float]]
) -> GpuSummary:
    steps = len(windows)
    # One wait per launch, to its first kernel: a CUDA graph's kernels share one launch and run in turn.
    first_start: dict[int, float] = {}
    for event, _, launch in gpu_work:
        if launch is not None:
            first_start[id(launch)] = min(first_start.get(id(launch), float("inf")), float(event["ts"]) - float(launch["ts"]))
    waits = [max(0.0, wait) for wait in first_start.values()]
    sync_us = sum(float(call["dur"]) for call in launches if call.get("name") in SYNC_CALLS)
    return GpuSummary(
        kernels_per_step=len(gpu_work) / steps,
        busy_ms_per_step=_busy_us([_interval(event) for event, _, _ in gpu_work], windows) / steps / 1e3,
        sync_ms_per_step=sync_us / steps / 1e3,
        median_launch_wait_us=statistics.median(waits) if waits else 0.0,
        unlaunched=sum(launch is None for _, _, launch in gpu_work),
    )


def summarize_trace(path: str | Path, top: int = 10) -> TraceSummary:
    return summarize_events(load_events(path), top=top)


# Kinds of op event, by what their fixed cost covers (priced in torchbenchmark.dispatch):
#   call      a top-level op: called from Python (the model, a loss, the optimizer's foreach ops)
#   nested    an op dispatched inside another op or inside an autograd node (linear -> t, addmm, ...)
#   autograd  an autograd engine node: the engine's scheduling and bookkeeping of one backward function
EVENT_KINDS = ("call", "nested", "autograd")
# Ops that build their kernel anew on every call, before any arithmetic: oneDNN's RNN layers create their
# primitive per call and step through time inside one event, tens of µs a call at nil width, beside which
# a dispatch is nothing. Such an event counts under its kind above and once more under its set-up kind;
# the time steps it runs count under a kind of their own, known only from a trace that recorded shapes
# (``time_steps_per_call``).
SETUP_OPS = {"aten::mkldnn_rnn_layer": "rnn", "aten::mkldnn_rnn_layer_backward": "rnn_backward"}
SETUP_KINDS = tuple(SETUP_OPS.values())
TIME_STEP_KINDS = {kind: f"{kind}_step" for kind in SETUP_KINDS}
PRICED_KINDS = EVENT_KINDS + SETUP_KINDS + tuple(TIME_STEP_KINDS.values())
AUTOGRAD_NODE_PREFIX = "autograd::engine::evaluate_function"


@dataclasses.dataclass(frozen=True)
class OverheadEvents:
    """The op events of each profiled step by kind, and the Python time between them that made no event."""

    events_per_step: tuple[dict[str, float], ...]  # per step: events of each kind in PRICED_KINDS
    python_gap_us_per_step: tuple[float, ...]  # per step: time on the step's thread with no op running,
    # except between two autograd nodes (the engine's own scheduling, priced with the nodes)
    least_python_gap_us: float | None = None  # each gap at its least over the steps, summed (see below)

    @property
    def steps(self) -> int:
        return len(self.events_per_step)

    def mean_events(self, kind: str) -> float:
        return statistics.fmean(step.get(kind, 0) for step in self.events_per_step) if self.events_per_step else 0.0

    @property
    def median_python_gap_us(self) -> float:
        return statistics.median(self.python_gap_us_per_step) if self.python_gap_us_per_step else 0.0

    def with_time_steps(self, per_call: dict[str, float]) -> OverheadEvents:
        """These events with each set-up kind's time steps counted, at ``per_call`` time steps a call."""
        return dataclasses.replace(self, events_per_step=tuple(
            {**step, **{TIME_STEP_KINDS[kind]: step[kind] * steps for kind, steps in per_call.items()}}
            for step in self.events_per_step
        ))  # fmt: skip


def time_steps_per_call(events: Iterable[Event]) -> dict[str, float]:
    """The mean time steps of a call of each set-up kind (SETUP_OPS), from a trace that recorded shapes.

    An RNN layer's input is time-major, (time, batch, features). A kind left out had no call with that
    shape (a packed sequence's input is 2-d): its time steps are not known.
    """
    steps: dict[str, list[int]] = defaultdict(list)
    for event in events:
        kind = SETUP_OPS.get(str(event.get("name", "")))
        dims = (event.get("args") or {}).get("Input Dims") if kind and event.get("ph") == "X" else None
        if dims and len(dims[0]) == 3:
            steps[kind].append(int(dims[0][0]))
    return {kind: statistics.fmean(counts) for kind, counts in steps.items()}


def _step_threads(events: Iterable[Event]) -> list[tuple[float, float, Any]]:
    """(start, end, (pid, tid)) of each ProfilerStep, in time order."""
    return sorted(
        (float(e["ts"]), float(e["ts"]) + float(e["dur"]), (e.get("pid"), e.get("tid")))
        for e in events
        if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")
    )


def overhead_events(events: Sequence[Event]) -> OverheadEvents:
    """Each step's op events by kind (PRICED_KINDS) and its Python gap time. Raises ValueError without steps.

    An event is the child of the innermost event on its thread that is still open when it starts. The
    Python gap of a step is the time on the step's thread covered by no top-level op, less the time between
    two consecutive autograd nodes: in it Python ran (module wrappers, glue, the optimizer's loops, the
    harness), or the profiler itself, which the calibration's own gaps measure.
    """
    steps = _step_threads(events)
    if not steps:
        raise ValueError("the trace holds no ProfilerStep events: was the profiler stepped?")
    ops_by_thread: dict[Any, list[Event]] = defaultdict(list)
    for event in events:
        if event.get("ph") == "X" and event.get("cat") == "cpu_op" and "dur" in event:
            ops_by_thread[(event.get("pid"), event.get("tid"))].append(event)
    counts: list[dict[str, int]] = []
    gaps: list[float] = []
    gap_lists: list[list[float]] = []
    for start, end, thread in steps:
        ops = sorted(
            (op for op in ops_by_thread.get(thread, ()) if start <= float(op["ts"]) < end),
            key=lambda op: (float(op["ts"]), -float(op["dur"])),
        )
        count: dict[str, float] = dict.fromkeys(PRICED_KINDS, 0)
        stack: list[float] = []  # end times of the open ancestors
        tops: list[tuple[float, float, bool]] = []  # (start, end, is an autograd node) of top-level ops
        for op in ops:
            op_start, op_end = float(op["ts"]), float(op["ts"]) + float(op["dur"])
            while stack and stack[-1] <= op_start:
                stack.pop()
            name = str(op.get("name", ""))
            is_node = name.startswith(AUTOGRAD_NODE_PREFIX)
            if not stack:
                tops.append((op_start, op_end, is_node))
            count["autograd" if is_node else "nested" if stack else "call"] += 1
            if name in SETUP_OPS:
                count[SETUP_OPS[name]] += 1
            stack.append(op_end)
        counts.append(count)
        step_gaps, cursor, previous_node = [], start, False
        for op_start, op_end, is_node in tops:
            if not (previous_node and is_node):
                step_gaps.append(max(0.0, op_start - cursor))
            cursor, previous_node = max(cursor, op_end), is_node
        step_gaps.append(max(0.0, end - cursor))
        gaps.append(sum(step_gaps))
        gap_lists.append(step_gaps)
    # Steps of one model call the same ops in the same order, so their gaps pair up by position; the
    # least of each position drops a preemption wherever it did not strike every step at the same gap.
    least = None
    if len({len(step_gaps) for step_gaps in gap_lists}) == 1:
        least = sum(min(position) for position in zip(*gap_lists))
    return OverheadEvents(
        events_per_step=tuple(counts),
        python_gap_us_per_step=tuple(gaps),
        least_python_gap_us=least,
    )


def overhead_events_of_trace(path: str | Path, shapes_path: str | Path | None = None) -> OverheadEvents:
    """The overhead events of a light trace; ``shapes_path``, a trace of the same model that recorded shapes
    (the detailed profile's), is read for the time steps of its set-up ops, only when it holds some."""
    events = overhead_events(load_events(path))
    if shapes_path is not None and any(events.mean_events(kind) for kind in SETUP_KINDS):
        events = events.with_time_steps(time_steps_per_call(load_events(shapes_path)))
    return events


# Collective communication ---------------------------------------------------------------------------

# gloo runs each collective on a thread of its own, annotated ``gloo:all_reduce``; NCCL's kernels run on
# the GPU as ``ncclKernel_...``/``ncclDevKernel_...``; ``record_param_comms`` marks a collective where
# the backend annotates none.
COMM_PREFIXES = ("gloo:", "nccl:", "ncclKernel", "ncclDevKernel", "record_param_comms")


@dataclasses.dataclass(frozen=True)
class CommSummary:
    """Where a rank's profiled steps spent time in collectives, and how much of it compute hid."""

    step_ms: float
    comm_ms: float  # per step: time with at least one collective running
    hidden_ms: float  # per step: collective time while the step's thread ran an op (compute)

    @property
    def comm_pct(self) -> float:
        return 100.0 * self.comm_ms / self.step_ms

    @property
    def exposed_comm_pct(self) -> float:
        """The collective time nothing else overlapped: what the step waited for."""
        return 100.0 * (self.comm_ms - self.hidden_ms) / self.step_ms

    @property
    def overlap_pct(self) -> float:
        return 100.0 * self.hidden_ms / self.comm_ms if self.comm_ms else 0.0


def _union(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def summarize_comm(events: Sequence[Event]) -> CommSummary:
    """Collective time per step, and the part of it during which the step's own thread computed.

    The step's thread is the one that holds the ``ProfilerStep`` annotations; its ops other than the
    ``c10d::`` calls that enqueue a collective are compute (in a DDP step: the backward pass, whose
    gradient buckets are reduced as they become ready). Raises ValueError without ProfilerStep events.
    """
    steps = [e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")]
    if not steps:
        raise ValueError("the trace holds no ProfilerStep events: was the profiler stepped?")
    windows = _step_windows(steps)
    step_thread = (steps[0].get("pid"), steps[0].get("tid"))

    def span(event: Event) -> tuple[float, float]:
        return float(event["ts"]), float(event["ts"]) + float(event["dur"])

    complete = [e for e in events if e.get("ph") == "X" and "dur" in e]
    comm = _union(span(e) for e in complete if str(e.get("name", "")).startswith(COMM_PREFIXES))
    compute = _union(
        span(e) for e in complete
        if e.get("cat") == "cpu_op" and (e.get("pid"), e.get("tid")) == step_thread
        and not str(e.get("name", "")).startswith(("c10d::", "record_param_comms"))
    )  # fmt: skip
    hidden = [(max(a, c), min(b, d)) for a, b in comm for c, d in compute if max(a, c) < min(b, d)]
    count = len(windows)
    step_us = statistics.fmean(end - start for start, end in windows)
    return CommSummary(step_ms=step_us / 1e3, comm_ms=_busy_us(comm, windows) / count / 1e3,
                       hidden_ms=_busy_us(hidden, windows) / count / 1e3)  # fmt: skip
