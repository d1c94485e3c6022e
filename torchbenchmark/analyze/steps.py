"""What a profiled trace says about its average step: ops per step, op times, phases, top ops, GPU figures.

A CPU event belongs to the step whose window holds its start; a kernel or copy belongs to the step, the
phase and the op whose CPU window holds its launch (the ``cuda_runtime`` or ``cuda_driver`` call sharing its
``args.correlation``), whichever thread launched it.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from torchbenchmark.analyze.trace import Event, covered_us, is_complete, load_events, parents, placer, span, step_windows
from torchbenchmark.results.schema import PHASES, TopOp

GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")  # host API calls, joined to their GPU work on correlation
# Host calls that block until the GPU has finished earlier work: time in them is the host waiting on the GPU.
# (.item(), nonzero and a device-to-host copy end in one of these.)
SYNC_CALLS = frozenset({
    "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy",
    "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize", "cuMemcpyDtoH_v2",
})  # fmt: skip


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
    gpu: GpuSummary | None = None  # None without GPU events

    @property
    def phases_pct(self) -> dict[str, float]:
        return {phase: 100.0 * ms / self.step_ms for phase, ms in self.phases_ms.items()}

    @property
    def gpu_busy_fraction(self) -> float | None:
        """Share of the step with a kernel or copy running; None without GPU events."""
        return None if self.gpu is None else self.gpu.busy_ms_per_step / self.step_ms


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


@dataclasses.dataclass(frozen=True)
class _GpuWork:
    event: Event
    placed_at: float  # when it was launched (its own start when its launch is not in the trace)
    launch: Event | None


def _gpu_work(events: Sequence[Event], launches: Sequence[Event], step_of: object) -> list[_GpuWork]:
    """The GPU events launched in a step, each with its launch."""
    by_id = {e["args"]["correlation"]: e for e in launches if "correlation" in e.get("args", {})}
    work = []
    for event in events:
        if event.get("ph") == "X" and event.get("cat") in GPU_CATEGORIES:
            launch = by_id.get(event.get("args", {}).get("correlation"))
            placed_at = float(launch["ts"]) if launch is not None else float(event["ts"])
            if step_of(placed_at) is not None:  # type: ignore[operator]
                work.append(_GpuWork(event, placed_at, launch))
    return work


def _top_ops(
    ops: Sequence[Event], self_us: Sequence[float], kernel_us: dict[str, float], steps: int, step_us: float, top: int, on_gpu: bool
) -> tuple[TopOp, ...]:
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for op, own in zip(ops, self_us):
        totals[op["name"]][0] += own
        totals[op["name"]][1] += 1
    # On a GPU an op costs the step its CPU time or the kernel time it launched, whichever is larger.
    ranked = sorted(totals.items(), key=lambda item: max(item[1][0], kernel_us.get(item[0], 0.0)), reverse=True)
    return tuple(
        TopOp(
            name=name,
            self_ms_per_step=total / steps / 1e3,
            calls_per_step=calls / steps,
            pct_of_step=100.0 * total / steps / step_us,
            kernel_ms_per_step=kernel_us.get(name, 0.0) / steps / 1e3 if on_gpu else None,
        )
        for name, (total, calls) in ranked[:top]
    )


def _phases_us(complete: Sequence[Event], work: Sequence[_GpuWork]) -> dict[str, float]:
    """Each phase's time over the trace: its CPU windows, or on a GPU the kernel time it launched (its CPU
    window there is mostly time spent queuing)."""
    windows: dict[str, list[tuple[float, float]]] = {phase: [] for phase in PHASES}
    for event in complete:
        if event.get("cat") == "user_annotation" and event.get("name") in windows:
            windows[event["name"]].append(span(event))
    if not work:
        return {phase: sum(end - start for start, end in spans) for phase, spans in windows.items()}
    phases = {}
    for phase, spans in windows.items():
        in_phase = placer(sorted(spans))
        phases[phase] = covered_us(span(item.event) for item in work if in_phase(item.placed_at) is not None)
    return phases


def summarize_events(events: Sequence[Event], top: int = 10) -> TraceSummary:
    """Per-step figures from a trace's events. Raises ValueError if the trace holds no ProfilerStep."""
    windows = step_windows(events)
    if not windows:
        raise ValueError("the trace holds no ProfilerStep events: was the profiler stepped?")
    step_of = placer(windows)
    complete = [e for e in events if is_complete(e) and e.get("cat") not in GPU_CATEGORIES and step_of(float(e["ts"])) is not None]
    ops = [e for e in complete if e.get("cat") == "cpu_op"]
    launches = [e for e in complete if e.get("cat") in LAUNCH_CATEGORIES]
    # One walk over ops and launches: an op's parent for its self time, a launch's op for its kernels.
    nested = [*ops, *launches]
    parent = parents(nested, holds=lambda e: e.get("cat") == "cpu_op")
    self_us = [float(op["dur"]) for op in ops]
    for i, p in enumerate(parent[: len(ops)]):
        if p is not None:
            self_us[p] -= float(ops[i]["dur"])
    launch_op = {id(launch): parent[len(ops) + i] for i, launch in enumerate(launches)}
    work = _gpu_work(events, launches, step_of)
    kernel_us: dict[str, float] = defaultdict(float)
    for item in work:
        owner = launch_op.get(id(item.launch)) if item.launch is not None else None
        if owner is not None:
            kernel_us[ops[owner]["name"]] += float(item.event["dur"])
    steps = len(windows)
    step_us = statistics.fmean(end - start for start, end in windows)
    top_level = [float(op["dur"]) for op, p in zip(ops, parent) if p is None]
    return TraceSummary(
        steps=steps,
        step_ms=step_us / 1e3,
        ops_per_step=len(ops) / steps,
        calls_per_step=len(top_level) / steps,
        median_op_us=statistics.median(top_level) if top_level else 0.0,
        phases_ms={phase: us / steps / 1e3 for phase, us in _phases_us(complete, work).items()},
        top_ops=_top_ops(ops, self_us, kernel_us, steps, step_us, top, bool(work)),
        gpu=_gpu_summary(work, launches, windows) if work else None,
    )


def _gpu_summary(work: Sequence[_GpuWork], launches: Sequence[Event], windows: Sequence[tuple[float, float]]) -> GpuSummary:
    steps = len(windows)
    # One wait per launch, to its first kernel: a CUDA graph's kernels share one launch and run in turn.
    first_start: dict[int, float] = {}
    for item in work:
        if item.launch is not None:
            wait = float(item.event["ts"]) - float(item.launch["ts"])
            first_start[id(item.launch)] = min(first_start.get(id(item.launch), float("inf")), wait)
    waits = [max(0.0, wait) for wait in first_start.values()]
    sync_us = sum(float(call["dur"]) for call in launches if call.get("name") in SYNC_CALLS)
    return GpuSummary(
        kernels_per_step=len(work) / steps,
        busy_ms_per_step=covered_us((span(item.event) for item in work), windows) / steps / 1e3,
        sync_ms_per_step=sync_us / steps / 1e3,
        median_launch_wait_us=statistics.median(waits) if waits else 0.0,
        unlaunched=sum(item.launch is None for item in work),
    )


def summarize_trace(path: str | Path, top: int = 10) -> TraceSummary:
    return summarize_events(load_events(path), top=top)
