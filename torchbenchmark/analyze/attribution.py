"""Where a step's per-op overhead lives: each op event of the detailed profile, priced by its kind, placed in
the innermost ``nn.Module`` it ran in and in the model's own source line that called it.

The detailed profile records Python calls (``with_stack``) as ``python_function`` events on the thread of
the ops they make, each with the ``file:line`` it was called from (``CallFrom``): ``nn.Module: <Class>_<k>``
for a call of the k-th instance of a class the profile saw, ``file.py(LINE): function`` for a Python
function (LINE: where it starts), ``<built-in ...>`` for a call of a C function. An op belongs to the
innermost module open when it starts, and to the innermost line of the model's own code known then: the
line that called a module, a torch function or a library function; for an op the function's own body
made without any call (an operator such as ``x * y``), the line where that function starts. A frame of
torch, of the standard library or of this harness is not the model's own (``is_library``). A nested op
belongs where its top-level op does. An autograd node runs in no module: it belongs where the forward op
that recorded it (the same ``Sequence number``) ran.

Each event is priced as the overhead estimate prices it (the kinds of ``analyze.overhead``, the prices of
``analyze.pricing``, an RNN call's time steps from its recorded input shape). The estimate also holds the
Python between ops, which no event carries: that part is ``unattributed``, said as such.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from torchbenchmark.analyze.overhead import AUTOGRAD_NODE_PREFIX, SETUP_OPS, TIME_STEP_KINDS
from torchbenchmark.analyze.trace import Event, is_step, load_events, placer, span, step_windows, thread_of
from torchbenchmark.results.schema import Attribution, OverheadShare

MODULE_PREFIX = "nn.Module: "
FRAME = re.compile(r"(?P<file>.+)\((?P<line>\d+)\): (?P<function>.+)")
# Frames in these are not the model's own: torch's, and this harness's timing loops. torch.profiler names a
# file by its path under the sys.path entry it was found in (torch/nn/modules/module.py, typing.py), or in full.
LIBRARY_PARTS = ("/torch/", "/torchbenchmark/measure/", "/torchbenchmark/run/")
STDLIB = re.compile(r"/lib/python3\.\d+/")
TOP_SHARES = 8  # named entries per list; the rest are summed in one
OUTSIDE = {"module": "outside any module", "class": "outside any module", "line": "outside the model's own code"}
UNATTRIBUTED = "Python between ops (no event)"


@functools.lru_cache(maxsize=65536)
def is_library(filename: str) -> bool:
    """A frame that is not the model's own code: torch, the standard library, this harness, or no file."""
    name = filename.replace("\\", "/")
    if name.startswith("<"):
        return True
    rooted = name if name.startswith("/") else "/" + name
    if rooted.startswith("/torch/") or any(part in rooted for part in LIBRARY_PARTS if part != "/torch/"):
        return True
    if "/site-packages/torch/" in rooted or "/dist-packages/torch/" in rooted:
        return True
    if not name.startswith("/"):  # relative to its sys.path entry: the standard library's own modules by name
        return name.split("/")[0].removesuffix(".py") in sys.stdlib_module_names
    return STDLIB.search(name) is not None and "-packages/" not in name


def line_name(filename: str, line: str, function: str | None = None) -> str:
    """``models/nlp.py:42 (forward)``: the file's last two path parts, the line, and the function it is in."""
    short = "/".join(filename.replace("\\", "/").split("/")[-2:])
    return f"{short}:{line}" + (f" ({function})" if function else "")


@functools.lru_cache(maxsize=65536)
def own_frame(name: str) -> tuple[str, str, str] | None:
    """A Python function's event name (``file.py(LINE): function``) as (file, line, function) when it is the
    model's own code, else None."""
    found = FRAME.fullmatch(name)
    if found is None or is_library(found["file"]):
        return None
    return found["file"], found["line"], found["function"]


@functools.lru_cache(maxsize=65536)
def own_call(call_from: str) -> tuple[str, str] | None:
    """A call's ``CallFrom`` (``file.py:LINE``) as (file, line) when the model's own code made it, else None."""
    file, _, line = call_from.rpartition(":")
    return (file, line) if file and line.isdigit() and not is_library(file) else None


@dataclasses.dataclass(frozen=True)
class Placed:
    """One op event: its price, and where it ran (None: in no module, or in none of the model's own lines)."""

    price_us: float
    module: str | None  # the profiler's name of the module instance, <Class>_<k>
    line: str | None


@dataclasses.dataclass
class _Open:
    end: float
    module: str | None
    line: str | None
    owner: int | None  # the index of the top-level op it runs under, None outside any op
    function: tuple[str, str] | None = None  # the innermost function of the model's own code: (file, name)


def _entered(here: _Open, event: Event, end: float) -> _Open:
    """What is open inside a Python call: its module, its line of the model's own code, its function."""
    name = str(event.get("name", ""))
    module, line, function = here.module, here.line, here.function
    if name.startswith(MODULE_PREFIX):
        module = name[len(MODULE_PREFIX) :]
    if (frame := own_frame(name)) is not None:
        line, function = line_name(*frame), (frame[0], frame[2])
    elif (call := own_call(str((event.get("args") or {}).get("CallFrom", "")))) is not None:
        line = line_name(*call, function[1] if function is not None and function[0] == call[0] else None)
    return _Open(end, module, line, here.owner, function)


def _price(event: Event, kind: str, prices: Mapping[str, float]) -> float:
    name = str(event.get("name", ""))
    price = prices.get(kind, 0.0)
    setup = SETUP_OPS.get(name)
    if setup is not None:
        dims = (event.get("args") or {}).get("Input Dims")
        steps = int(dims[0][0]) if dims and len(dims[0]) == 3 else 0
        price += prices.get(setup, 0.0) + (steps * prices.get(TIME_STEP_KINDS[setup], 0.0) if setup in TIME_STEP_KINDS else 0.0)
    return price


def _walk(events: Sequence[Event], prices: Mapping[str, float]) -> tuple[list[Event], list[Placed], list[int]]:
    """One thread's ops (in time order), each placed where it started, and the top-level op each belongs to."""
    order = sorted(events, key=lambda e: (float(e["ts"]), -float(e["dur"]), e.get("cat") != "python_function"))
    ops: list[Event] = []
    placed: list[Placed] = []
    owners: list[int] = []
    stack: list[_Open] = []
    for event in order:
        start, end = span(event)
        while stack and stack[-1].end <= start:
            stack.pop()
        here = stack[-1] if stack else _Open(end, None, None, None)
        name = str(event.get("name", ""))
        if event.get("cat") == "python_function":
            stack.append(_entered(here, event, end))
            continue
        index = len(ops)
        node = name.startswith(AUTOGRAD_NODE_PREFIX)
        kind = "autograd" if node else "call" if here.owner is None else "nested"
        owner = index if node or here.owner is None else here.owner
        ops.append(event)
        placed.append(Placed(_price(event, kind, prices), here.module, here.line))
        owners.append(owner)
        stack.append(_Open(end, here.module, here.line, owner, here.function))
    return ops, placed, owners


def place(events: Sequence[Event], prices: Mapping[str, float]) -> tuple[list[Placed], int]:
    """Every op event in the trace's steps, priced (``prices``: µs by kind) and placed; and the number of steps.

    Raises ValueError without steps.
    """
    windows = step_windows(events)
    if not windows:
        raise ValueError("the trace holds no ProfilerStep events: was the profiler stepped?")
    step_of = placer(windows)
    by_thread: dict[Any, list[Event]] = defaultdict(list)
    for event in events:
        if event.get("ph") != "X" or "dur" not in event:
            continue
        # Every Python frame, those opened before the first step too (the step loop's); the ops of the steps.
        frame = event.get("cat") == "python_function"
        if frame or (event.get("cat") == "cpu_op" and not is_step(event) and step_of(float(event["ts"])) is not None):
            by_thread[thread_of(event)].append(event)
    ops: list[Event] = []
    placed: list[Placed] = []
    owners: list[int] = []
    for thread_events in by_thread.values():
        thread_ops, thread_placed, thread_owners = _walk(thread_events, prices)
        owners += [len(ops) + owner for owner in thread_owners]
        ops += thread_ops
        placed += thread_placed
    return _through_owners(ops, placed, owners), len(windows)


def _through_owners(ops: Sequence[Event], placed: Sequence[Placed], owners: Sequence[int]) -> list[Placed]:
    """Each op placed where its top-level op ran; an autograd node where its forward op (same sequence number) ran."""
    forward: dict[Any, Placed] = {}
    nodes = [str(op.get("name", "")).startswith(AUTOGRAD_NODE_PREFIX) for op in ops]
    for op, where, node in zip(ops, placed, nodes):
        seq = (op.get("args") or {}).get("Sequence number")
        if seq is not None and not node:
            forward.setdefault(seq, where)
    modules, lines = [where.module for where in placed], [where.line for where in placed]
    for index, (op, node) in enumerate(zip(ops, nodes)):
        if node:
            found = forward.get((op.get("args") or {}).get("Sequence number"))
            modules[index] = found.module if found else None
            lines[index] = found.line if found else lines[index]
    return [Placed(where.price_us, modules[owner], lines[owner]) for where, owner in zip(placed, owners)]


def _shares(
    part: str, totals: Mapping[str | None, list[float]], steps: int, estimate_us: float, classes: Mapping[str, str]
) -> list[OverheadShare]:
    """The top ``TOP_SHARES`` entries by µs per step, the rest summed, what lies outside, and the unattributed part."""

    def share(kind: str, name: str, events: float, us: float, cls: str | None = None) -> OverheadShare:
        pct = 100.0 * us / estimate_us if estimate_us > 0 else 0.0
        return OverheadShare(kind, name, events / steps, us / steps, pct / steps, cls)

    named = sorted(((key, value) for key, value in totals.items() if key is not None), key=lambda item: -item[1][1])
    shares = [share(part, key, events, us, classes.get(key)) for key, (events, us) in named[:TOP_SHARES]]
    rest = named[TOP_SHARES:]
    if rest:
        label = {"module": "modules", "class": "classes", "line": "lines"}[part]
        shares.append(share("rest", f"{len(rest)} more {label}", sum(v[0] for _, v in rest), sum(v[1] for _, v in rest)))
    if None in totals:
        shares.append(share("outside", OUTSIDE[part], *totals[None]))
    placed_us = sum(us for _, us in totals.values()) / steps
    shares.append(share("unattributed", UNATTRIBUTED, 0.0, max(0.0, estimate_us - placed_us) * steps))
    return shares


def attribute(
    events: Sequence[Event],
    prices: Mapping[str, float],
    estimate_us: float,
    module_names: Mapping[str, str] | None = None,
    class_names: Mapping[str, str] | None = None,
) -> Attribution:
    """The overhead of an average step by module, module class and line; ``estimate_us``: the row's estimated
    overhead per step; ``module_names``: the profiler's module names (``<Class>_<k>``) to their paths in the model;
    ``class_names``: the stand-in class names the profile ran with (``measure.profiling``) to the classes' own."""
    placed, steps = place(events, prices)
    names, own = dict(module_names or {}), dict(class_names or {})
    totals: dict[str, dict[str | None, list[float]]] = {part: defaultdict(lambda: [0.0, 0.0]) for part in ("module", "class", "line")}
    classes: dict[str, str] = {}
    for where in placed:
        path = None if where.module is None else names.get(where.module, where.module)
        cls = None if where.module is None else where.module.rpartition("_")[0] or where.module
        cls = own.get(cls, cls) if cls is not None else None
        if path is not None and cls is not None:
            classes[path] = cls
        for part, key in (("module", path), ("class", cls), ("line", where.line)):
            totals[part][key][0] += 1
            totals[part][key][1] += where.price_us
    note = _note(events, placed, names)
    return Attribution(
        overhead_by_module=tuple(_shares("module", totals["module"], steps, estimate_us, classes)),
        overhead_by_class=tuple(_shares("class", totals["class"], steps, estimate_us, {})),
        overhead_by_line=tuple(_shares("line", totals["line"], steps, estimate_us, {})),
        attribution_note=note,
    )


def _note(events: Sequence[Event], placed: Sequence[Placed], names: Mapping[str, str]) -> str | None:
    if not any(event.get("cat") == "python_function" for event in events):
        return "the detailed trace holds no Python frames (with_stack): no event could be placed"
    unnamed = {where.module for where in placed if where.module is not None and where.module not in names}
    if unnamed:
        return f"{len(unnamed)} module instances named as the profiler names them (<Class>_<k>): their paths in the model are not known"
    return None


def attribute_trace(
    path: str | Path | None,
    prices: Mapping[str, float],
    estimate_us: float,
    module_names: Mapping[str, str] | None = None,
    class_names: Mapping[str, str] | None = None,
) -> Attribution:
    """``attribute`` on the detailed trace at ``path``; without one, an empty attribution that says why."""
    if path is None:
        return Attribution(attribution_note="no detailed profile (--no-detailed): the overhead is not placed in modules or lines")
    return attribute(load_events(path), prices, estimate_us, module_names, class_names)
