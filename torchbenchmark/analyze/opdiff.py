"""Which ops a comparison moved: the two sides' light traces of a case, op by op, per step.

Each side's light trace gives every op's self time (its own, not its children's), total time (its
children's included, as the profiler's "CPU total") and calls per average step, and the step's op events
by kind (``analyze.overhead``). The diff ranks the ops by how far their total time per step moved, either
way, an op that only one side ran counting from zero: so a call that was added ranks above the ops it
made, which moved with it. It names the ops only one side ran, and sets the event counts of each kind side
by side. The question after "slower" is which ops: one that got slower, or ops that were added (a copy, a
dtype conversion, a lost fusion).
"""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from torchbenchmark.analyze.overhead import EVENT_KINDS, overhead_events
from torchbenchmark.analyze.trace import Event, is_complete, is_step, parents, placer, step_windows
from torchbenchmark.results.files import read_inside

TOP_OPS = 10  # ops listed per case, those that moved most first


@dataclasses.dataclass(frozen=True)
class TraceOps:
    """What one light trace says of its average step, op by op."""

    steps: int
    self_us: dict[str, float]  # per step, by op name
    total_us: dict[str, float]  # per step, by op name: its own time and its children's
    calls: dict[str, float]  # per step, by op name
    events_per_step: dict[str, float]  # by kind (EVENT_KINDS)


def trace_ops(events: Sequence[Event]) -> TraceOps:
    """Per-step self time and calls of every op in a trace's steps. Raises ValueError without steps."""
    windows = step_windows(events)
    if not windows:
        raise ValueError("the trace holds no ProfilerStep events: was the profiler stepped?")
    step_of = placer(windows)
    ops = [e for e in events if e.get("cat") == "cpu_op" and is_complete(e) and not is_step(e) and step_of(float(e["ts"])) is not None]
    own = [float(op["dur"]) for op in ops]
    parent_of = parents(ops)
    for index, parent in enumerate(parent_of):
        if parent is not None:
            own[parent] -= float(ops[index]["dur"])
    steps = len(windows)
    self_us: dict[str, float] = defaultdict(float)
    total_us: dict[str, float] = defaultdict(float)
    calls: dict[str, float] = defaultdict(float)
    for op, us, parent in zip(ops, own, parent_of):
        self_us[op["name"]] += max(0.0, us)
        if parent is None or ops[parent]["name"] != op["name"]:  # an op inside one of its own name counts once
            total_us[op["name"]] += float(op["dur"])
        calls[op["name"]] += 1

    def per_step(totals: dict[str, float]) -> dict[str, float]:
        return {name: total / steps for name, total in totals.items()}

    counted = overhead_events(events)
    kinds = {kind: counted.mean_events(kind) for kind in EVENT_KINDS}
    return TraceOps(steps, per_step(self_us), per_step(total_us), per_step(calls), kinds)


# What an op diff reads of an event: the rest (its args above all) is dropped as the trace is parsed, which
# halves the memory a trace of a million events takes.
KEPT_FIELDS = ("ph", "cat", "name", "ts", "dur", "pid", "tid")


def _slim(found: dict[str, Any]) -> dict[str, Any]:
    return {key: found[key] for key in KEPT_FIELDS if key in found} if "ph" in found else found


def read_trace_ops(root: Path, name: str) -> TraceOps:
    """The ops of the light trace a record names ``name`` under its folder ``root``, read as data from elsewhere:
    StorageError where the file is not one to read (``results.files.read_inside``), ValueError where it is
    no trace."""
    document = json.loads(read_inside(root, name), object_hook=_slim)
    events = document.get("traceEvents") if isinstance(document, dict) else None
    if not isinstance(events, list) or not all(isinstance(event, dict) for event in events):
        raise ValueError("not a Chrome trace: no list of event objects under traceEvents")
    return trace_ops(events)


@dataclasses.dataclass(frozen=True)
class OpChange:
    """One op on both sides, per step: its self time, its total time and its calls (0 on a side that never ran it)."""

    name: str
    base_us_per_step: float  # self time
    new_us_per_step: float
    base_calls_per_step: float
    new_calls_per_step: float
    base_total_us_per_step: float = 0.0  # its children's time included
    new_total_us_per_step: float = 0.0

    @property
    def change_us_per_step(self) -> float:
        return self.new_us_per_step - self.base_us_per_step

    @property
    def change_total_us_per_step(self) -> float:
        return self.new_total_us_per_step - self.base_total_us_per_step

    @property
    def calls_moved(self) -> bool:
        """Its calls per step changed by more than half a call: a change in the code, not in the machine."""
        return abs(self.new_calls_per_step - self.base_calls_per_step) > 0.5


@dataclasses.dataclass(frozen=True)
class OpDiff:
    """The ops a comparison moved most, those only one side ran, and the events per step by kind on each side."""

    ops: tuple[OpChange, ...]  # at most TOP_OPS: those whose calls per step moved first, then by how far their time moved
    only_in_base: tuple[str, ...]
    only_in_new: tuple[str, ...]
    events_per_step: dict[str, tuple[float, float]]  # kind -> (base, new)
    steps: tuple[int, int]  # profiled steps each side's trace holds

    @property
    def first(self) -> OpChange | None:
        return self.ops[0] if self.ops else None


def op_diff(base: TraceOps, new: TraceOps, top: int = TOP_OPS) -> OpDiff:
    """``new`` against ``base``, op by op."""
    names = base.self_us.keys() | new.self_us.keys()
    changes = [
        OpChange(
            name,
            base.self_us.get(name, 0.0),
            new.self_us.get(name, 0.0),
            base.calls.get(name, 0.0),
            new.calls.get(name, 0.0),
            base.total_us.get(name, 0.0),
            new.total_us.get(name, 0.0),
        )
        for name in names
    ]
    # Calls per step are exact, time is not: an op called more or less often leads, whatever its time moved
    # (an A-A pair's times move by load alone); then by how far the time moved.
    changes.sort(key=lambda c: (not c.calls_moved, -abs(c.change_total_us_per_step), -abs(c.change_us_per_step), c.name))
    return OpDiff(
        ops=tuple(changes[:top]),
        only_in_base=tuple(sorted(base.self_us.keys() - new.self_us.keys())),
        only_in_new=tuple(sorted(new.self_us.keys() - base.self_us.keys())),
        events_per_step={kind: (base.events_per_step.get(kind, 0.0), new.events_per_step.get(kind, 0.0)) for kind in EVENT_KINDS},
        steps=(base.steps, new.steps),
    )
