"""The op events of each profiled step, sorted by what their fixed cost covers, and the Python time between them.

Kinds of op event, each priced on this machine (``measure.calibration``, ``analyze.pricing``):

    call      a top-level op: called from Python (the model, a loss, the optimizer's foreach ops)
    nested    an op dispatched inside another op or inside an autograd node (linear -> t, addmm, ...)
    autograd  an autograd engine node: the engine's scheduling and bookkeeping of one backward function

An op that builds its kernel on every call, before any arithmetic (oneDNN's convolution and RNN layer), counts
once more under its set-up kind; an RNN layer's time steps under a kind of their own (``analyze.rnn``).
"""

from __future__ import annotations

import bisect
import dataclasses
import statistics
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from torchbenchmark.analyze.trace import Event, is_step, load_events, parents, span, step_events, thread_of
from torchbenchmark.results import kinds

EVENT_KINDS = ("call", "nested", "autograd")
SETUP_OPS = {"aten::mkldnn_rnn_layer": "rnn", "aten::mkldnn_rnn_layer_backward": "rnn_backward", "aten::mkldnn_convolution": "conv"}
SETUP_KINDS = tuple(SETUP_OPS.values())
TIME_STEP_KINDS = {kind.removesuffix("_step"): kind for kind in kinds.TIME_STEP_KINDS}  # by the set-up kind that steps through time
PRICED_KINDS = EVENT_KINDS + SETUP_KINDS + tuple(TIME_STEP_KINDS.values())
AUTOGRAD_NODE_PREFIX = "autograd::engine::evaluate_function"


@dataclasses.dataclass(frozen=True)
class OverheadEvents:
    """The op events of each profiled step by kind, and the Python time between them that made no event."""

    events_per_step: tuple[dict[str, float], ...]  # per step: events of each kind in PRICED_KINDS
    # Per step: time on the step's thread with no op running, but between two autograd nodes (priced with them).
    python_gap_us_per_step: tuple[float, ...]

    @property
    def steps(self) -> int:
        return len(self.events_per_step)

    def mean_events(self, kind: str) -> float:
        return statistics.fmean(step.get(kind, 0) for step in self.events_per_step) if self.events_per_step else 0.0

    @property
    def least_gap_us(self) -> float:
        """The least step's Python gap: preemption only adds to a gap."""
        return min(self.python_gap_us_per_step, default=0.0)

    def only(self, keep: Sequence[bool]) -> OverheadEvents:
        """These events for the steps ``keep`` marks (those no other work stretched)."""
        if len(keep) != self.steps or all(keep) or not any(keep):
            return self
        chosen = [i for i, flag in enumerate(keep) if flag]
        return dataclasses.replace(
            self,
            events_per_step=tuple(self.events_per_step[i] for i in chosen),
            python_gap_us_per_step=tuple(self.python_gap_us_per_step[i] for i in chosen),
        )

    def less(self, blocked_us: float) -> OverheadEvents:
        """These events with ``blocked_us`` (``analyze.timesplit.blocked_us``) taken from each step's gap, down to 0:
        time blocked makes no op event, lies in the gaps, and is no overhead."""
        if blocked_us <= 0:
            return self
        return dataclasses.replace(self, python_gap_us_per_step=tuple(max(0.0, gap - blocked_us) for gap in self.python_gap_us_per_step))


def _step(ops: Sequence[Event], start: float, end: float) -> tuple[dict[str, float], list[float]]:
    """One step's events by kind, and the gaps between its top-level ops in the order they came, up to ``end``."""
    count: dict[str, float] = dict.fromkeys(PRICED_KINDS, 0)
    tops: list[tuple[float, float, bool]] = []  # (start, end, is an autograd node) of top-level ops
    for op, parent in sorted(zip(ops, parents(ops)), key=lambda pair: (float(pair[0]["ts"]), -float(pair[0]["dur"]))):
        name = str(op.get("name", ""))
        is_node = name.startswith(AUTOGRAD_NODE_PREFIX)
        if parent is None:
            tops.append((*span(op), is_node))
        count["autograd" if is_node else "nested" if parent is not None else "call"] += 1
        if name in SETUP_OPS:
            count[SETUP_OPS[name]] += 1
    gaps, cursor, previous_node = [], start, False
    for op_start, op_end, is_node in tops:  # one past ``end`` is the harness's (a replay's profiler step): no gap
        if not (previous_node and is_node):
            gaps.append(max(0.0, min(op_start, end) - cursor))
        cursor, previous_node = max(cursor, op_end), is_node
    gaps.append(max(0.0, end - cursor))
    return count, gaps


def overhead_events(events: Sequence[Event], timed_us: Sequence[float] = ()) -> OverheadEvents:
    """Each step's op events by kind (PRICED_KINDS) and its Python gap: the time on its thread under no top-level op,
    but between two autograd nodes. Raises ValueError without steps.

    ``timed_us``: each profiled step as its timer measured it (``measure.harness.StepTimer``). A step's gaps end that
    long after its range starts, or where its last op does: the range also holds the harness's work after the clock.
    """
    steps = step_events(events)
    if not steps:
        raise ValueError("the trace holds no ProfilerStep events: was the profiler stepped?")
    ops_by_thread: dict[Any, list[Event]] = defaultdict(list)
    for event in events:
        if event.get("cat") == "cpu_op" and event.get("ph") == "X" and "dur" in event and not is_step(event):
            ops_by_thread[thread_of(event)].append(event)
    for ops in ops_by_thread.values():
        ops.sort(key=lambda op: float(op["ts"]))
    starts = {thread: [float(op["ts"]) for op in ops] for thread, ops in ops_by_thread.items()}  # each step's ops by bisection
    counts, gap_sums = [], []
    timed = list(timed_us) if len(timed_us) == len(steps) else [None] * len(steps)
    for step, timed_step_us in zip(steps, timed):
        start, end = span(step)
        thread = thread_of(step)
        at = starts.get(thread, [])
        ops = ops_by_thread.get(thread, [])[bisect.bisect_left(at, start) : bisect.bisect_left(at, end)]
        # The clock ran through every op of the step: its gaps end at the clock's end or its last op's, the later
        # (a preemption before the clock started would end them early, inside the step's own Python).
        last_us = max((span(op)[1] for op in ops), default=start)
        count, gaps = _step(ops, start, end if timed_step_us is None else min(end, max(start + timed_step_us, last_us)))
        counts.append(count)
        gap_sums.append(sum(gaps))
    return OverheadEvents(tuple(counts), tuple(gap_sums))


def overhead_events_of_trace(path: str | Path, timed_ms: Sequence[float] = ()) -> OverheadEvents:
    """The overhead events of a light trace whose steps were timed at ``timed_ms`` (``overhead_events``); an RNN
    layer's time steps are counted apart (``analyze.rnn.with_time_steps``): the light trace holds no shapes."""
    return overhead_events(load_events(path), [ms * 1e3 for ms in timed_ms])
