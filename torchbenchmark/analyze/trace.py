"""Reading a Chrome trace written by torch.profiler: its events, its step windows, how ops nest, and time covered.

Works on the exported file, not on the live profiler, so every figure can be recomputed from the trace a
user keeps, and the tests run on real trace files. Only the active steps are in a trace, each inside a
``ProfilerStep#N`` annotation on the CPU (Kineto also copies an annotation onto the GPU timeline, as
``gpu_user_annotation``, when kernels were launched directly under it: those copies are not steps).
"""

from __future__ import annotations

import bisect
import gzip
import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

Event = dict[str, Any]
Interval = tuple[float, float]
STEP_PREFIX = "ProfilerStep#"
STEP_CATEGORIES = ("user_annotation", "cpu_op")  # where torch writes the CPU step annotation


def load_events(path: str | Path) -> list[Event]:
    opener: Callable[..., Any] = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as stream:
        return list(json.load(stream)["traceEvents"])


def is_complete(event: Event) -> bool:
    """A complete (``ph: X``) event with a duration: the only kind that takes time."""
    return event.get("ph") == "X" and "dur" in event


def span(event: Event) -> Interval:
    start = float(event["ts"])
    return start, start + float(event["dur"])


def thread_of(event: Event) -> tuple[Any, Any]:
    return event.get("pid"), event.get("tid")


def is_step(event: Event) -> bool:
    return is_complete(event) and str(event.get("name", "")).startswith(STEP_PREFIX)


def step_events(events: Iterable[Event]) -> list[Event]:
    """The CPU ``ProfilerStep`` annotations, in time order; the GPU copies of the annotation are not steps."""
    return sorted((e for e in events if is_step(e) and e.get("cat") in STEP_CATEGORIES), key=lambda e: float(e["ts"]))


def step_windows(events: Iterable[Event]) -> list[Interval]:
    return [span(step) for step in step_events(events)]


def placer(windows: Sequence[Interval]) -> Callable[[float], int | None]:
    """``index(ts)``: the window (sorted, not overlapping) holding the instant ``ts``, or None."""
    starts = [start for start, _ in windows]

    def index(ts: float) -> int | None:
        i = bisect.bisect_right(starts, ts) - 1
        return i if i >= 0 and ts < windows[i][1] else None

    return index


def parents(events: Sequence[Event], holds: Callable[[Event], bool] = lambda _: True) -> list[int | None]:
    """For each event, the index of the innermost event on its thread still open when it starts (or None).

    Only an event for which ``holds`` is true can be a parent: a host API call sits inside an op but
    holds nothing. A parent starts no later and lasts no shorter than its children, so at one instant it
    opens first. This is the one nesting walk every trace figure rests on.
    """
    found: list[int | None] = [None] * len(events)
    by_thread: dict[Any, list[int]] = defaultdict(list)
    for index, event in enumerate(events):
        by_thread[thread_of(event)].append(index)
    for indices in by_thread.values():
        indices.sort(key=lambda i: (float(events[i]["ts"]), -float(events[i]["dur"]), not holds(events[i])))
        stack: list[tuple[float, int]] = []  # (end time, index) of the open ancestors
        for i in indices:
            start, end = span(events[i])
            while stack and stack[-1][0] <= start:
                stack.pop()
            found[i] = stack[-1][1] if stack else None
            if holds(events[i]):
                stack.append((end, i))
    return found


def union(intervals: Iterable[Interval]) -> list[Interval]:
    """The intervals merged where they overlap: work on two streams at once counts once."""
    merged: list[Interval] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def covered_us(intervals: Iterable[Interval], windows: Sequence[Interval] | None = None) -> float:
    """Time covered by at least one interval, inside ``windows`` when given (overlaps counted once)."""
    merged = union(intervals)
    if windows is None:
        return sum(end - start for start, end in merged)
    return sum(max(0.0, min(end, b) - max(start, a)) for a, b in windows for start, end in merged)
