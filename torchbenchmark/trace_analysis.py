"""Reading a Chrome trace written by torch.profiler: ops per step, op times, phases, top ops, GPU busy.

Works on the exported file, not on the live profiler, so every figure can be recomputed from the trace a
user keeps, and the tests run on real trace files. Only the active steps are in a trace, each inside a
``ProfilerStep#N`` annotation; an event belongs to the step whose window holds its start.
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

    @property
    def phases_pct(self) -> dict[str, float]:
        return {phase: 100.0 * ms / self.step_ms for phase, ms in self.phases_ms.items()}


def load_events(path: str | Path) -> list[Event]:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as stream:
        return json.load(stream)["traceEvents"]


def _step_windows(events: Iterable[Event]) -> list[tuple[float, float]]:
    windows = [
        (float(e["ts"]), float(e["ts"]) + float(e["dur"]))
        for e in events
        if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")
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
    busy = 0.0
    for win_start, win_end in windows:
        clipped = sorted((max(s, win_start), min(e, win_end)) for s, e in intervals if s < win_end and e > win_start)
        covered_until = win_start
        for start, end in clipped:
            if end > covered_until:
                busy += end - max(start, covered_until)
                covered_until = end
    return busy


def summarize_events(events: Sequence[Event], top: int = 10) -> TraceSummary:
    """Per-step figures from a trace's events. Raises ValueError if the trace holds no ProfilerStep."""
    windows = _step_windows(events)
    if not windows:
        raise ValueError("the trace holds no ProfilerStep events: was the profiler stepped?")
    starts = [start for start, _ in windows]

    def in_a_step(event: Event) -> bool:
        ts = float(event["ts"])
        index = bisect.bisect_right(starts, ts) - 1
        return index >= 0 and ts < windows[index][1]

    complete = [e for e in events if e.get("ph") == "X" and "dur" in e and in_a_step(e)]
    ops = [e for e in complete if e.get("cat") == "cpu_op"]
    self_us, top_level = _self_times(ops)
    steps = len(windows)
    step_us = statistics.fmean(end - start for start, end in windows)

    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for op, own in zip(ops, self_us):
        totals[op["name"]][0] += own
        totals[op["name"]][1] += 1
    ranked = sorted(totals.items(), key=lambda item: item[1][0], reverse=True)[:top]
    top_ops = tuple(
        TopOp(
            name=name,
            self_ms_per_step=total / steps / 1e3,
            calls_per_step=calls / steps,
            pct_of_step=100.0 * total / steps / step_us,
        )
        for name, (total, calls) in ranked
    )

    phases_us = dict.fromkeys(PHASES, 0.0)
    for event in complete:
        if event.get("cat") == "user_annotation" and event.get("name") in phases_us:
            phases_us[event["name"]] += float(event["dur"])

    kernels = [(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in complete if e.get("cat") in GPU_CATEGORIES]
    top_level_durations = [float(op["dur"]) for op, top in zip(ops, top_level) if top]
    return TraceSummary(
        steps=steps,
        step_ms=step_us / 1e3,
        ops_per_step=len(ops) / steps,
        calls_per_step=len(top_level_durations) / steps,
        median_op_us=statistics.median(top_level_durations) if top_level_durations else 0.0,
        phases_ms={phase: us / steps / 1e3 for phase, us in phases_us.items()},
        top_ops=top_ops,
        gpu_busy_fraction=_busy_us(kernels, windows) / (step_us * steps) if kernels else None,
    )


def summarize_trace(path: str | Path, top: int = 10) -> TraceSummary:
    return summarize_events(load_events(path), top=top)


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
