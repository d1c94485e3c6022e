"""Collective communication in a rank's trace: how long collectives ran per step, and how much compute hid."""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence

from torchbenchmark.analyze.trace import Event, covered_us, is_complete, span, step_events, thread_of, union

# gloo runs each collective on a thread of its own, annotated ``gloo:all_reduce``; NCCL's kernels run on
# the GPU as ``ncclKernel_...``/``ncclDevKernel_...``; ``record_param_comms`` marks a collective where
# the backend annotates none.
COMM_PREFIXES = ("gloo:", "nccl:", "ncclKernel", "ncclDevKernel", "record_param_comms")
ENQUEUE_PREFIXES = ("c10d::", "record_param_comms")  # the step thread's calls that start a collective


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


def summarize_comm(events: Sequence[Event]) -> CommSummary:
    """Collective time per step, and the part of it during which the step's own thread computed.

    The step's thread is the one that holds the ``ProfilerStep`` annotations; its ops other than the
    calls that enqueue a collective are compute (in a DDP step: the backward pass, whose gradient
    buckets are reduced as they become ready). Raises ValueError without ProfilerStep events.
    """
    steps = step_events(events)
    if not steps:
        raise ValueError("the trace holds no ProfilerStep events: was the profiler stepped?")
    windows = [span(step) for step in steps]
    step_thread = thread_of(steps[0])
    complete = [e for e in events if is_complete(e)]
    comm = union(span(e) for e in complete if str(e.get("name", "")).startswith(COMM_PREFIXES))
    compute = union(
        span(e)
        for e in complete
        if e.get("cat") == "cpu_op" and thread_of(e) == step_thread and not str(e.get("name", "")).startswith(ENQUEUE_PREFIXES)
    )
    hidden = [(max(a, c), min(b, d)) for a, b in comm for c, d in compute if max(a, c) < min(b, d)]
    count = len(windows)
    step_us = statistics.fmean(end - start for start, end in windows)
    return CommSummary(step_us / 1e3, covered_us(comm, windows) / count / 1e3, covered_us(hidden, windows) / count / 1e3)
