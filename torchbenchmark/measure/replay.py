"""A step's own Python, timed warm: the model's step with every op replayed instead of computed.

Right after a long op the Python between a step's ops runs several times slower than warm: the op evicted the
code and objects it runs on (``benchmarks/RESULTS.md``, "Cold glue"), the arithmetic's doing, no overhead.
``Replay``, a ``TorchDispatchMode``, computes each (aten op, argument layout) once and after that hands back what
it returned without running a kernel: the step runs its own Python, bindings, autograd and dispatch, and its
gaps are its glue run warm (``analyze.pricing``). Taken on a CPU, in eager mode (a compiled graph calls its kernels
past the dispatcher), for a step whose outputs fit in ``MAX_BYTES``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

import torch
from torch.library import Library, fallthrough_kernel
from torch.utils._python_dispatch import TorchDispatchMode

from torchbenchmark.analyze import timesplit
from torchbenchmark.analyze.overhead import OverheadEvents, overhead_events_of_trace
from torchbenchmark.analyze.rnn import time_steps_of_calls
from torchbenchmark.measure.harness import StepTimer, timed_call
from torchbenchmark.measure.profiling import ProfileRun, run_profile

MAX_BYTES = 2 << 30  # the most a replay holds of a step's outputs; past it the row keeps the cold factor alone
# The replayed steps light-profiled: as many as fit in STEPS_S, within these bounds (one that sleeps runs as slowly).
LEAST_STEPS, MOST_STEPS = 5, 20
STEPS_S = 1.0
DEADLINE_S = 10.0
WATCHDOG_GRACE_S = 5.0  # past the replay's own deadline, the watchdog's: for a step that never reaches an op


@dataclasses.dataclass(frozen=True)
class Warm:
    """What the step replayed showed."""

    events: OverheadEvents  # the replayed steps' events and gaps
    time_steps: dict[str, float]  # the mean time steps of an RNN call of each kind, as the replay saw their inputs
    blocked_us: float = 0.0  # what each replayed step spent blocked: its Python's own (no kernel runs to wait at a join)

    @property
    def gap_us(self) -> float:
        return self.events.least_gap_us


class Abandoned(Exception):
    """No replay: the step's outputs would hold more than ``MAX_BYTES``, or it ran past its deadline (a loop
    that runs until a value changes never ends when no value does)."""


class Replay(TorchDispatchMode):
    """Computes each (op, argument layouts, other arguments) once; after that returns what it returned (detached:
    autograd records a fresh output each time), or the argument an in-place op wrote, without computing; but an op
    whose output steers the step is computed on every call (``_steers``)."""

    def __init__(self, max_bytes: int = MAX_BYTES, deadline_s: float = math.inf, watch: Collection[str] = ()) -> None:
        super().__init__()
        self.deadline = time.perf_counter() + deadline_s
        self.watch = frozenset(watch)  # ops whose every call's input shapes are kept (``inputs``)
        self.inputs: list[tuple[str, list[list[int]]]] = []
        self.recorded: dict[tuple[Any, ...], tuple[Any, int | None]] = {}
        self.held_bytes = 0
        self.max_bytes = max_bytes
        self._storages: set[int] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        if func.namespace == "profiler":  # a range outside ``ranges_past_modes``: it runs, as in the real step
            return func(*args, **kwargs)
        flat = _leaves(args, kwargs)
        key = (func, *(_layout(a) if isinstance(a, torch.Tensor) else repr(a) for a in flat))
        if time.perf_counter() > self.deadline:
            raise Abandoned("the replayed steps ran past their deadline")
        if self.watch and func._schema.name in self.watch:
            self.inputs.append((func._schema.name, [list(a.shape) for a in flat if isinstance(a, torch.Tensor)]))
        found = self.recorded.get(key)
        if found is None or found[0] is COMPUTED:
            out = _computed(func, args, kwargs)
            written = next((i for i, a in enumerate(flat) if a is out), None)  # an in-place op returns its argument
            if _steers(func, out, None if written is None else flat[written]):  # computed each call, from what it is given
                self.recorded[key] = (COMPUTED, None)
                return out
            if written is None:
                self._hold(out)
            self.recorded[key] = (out, written)
            return out
        out, written = found
        if written is not None:
            return flat[written]
        return _detached(out)

    def _hold(self, out: Any) -> None:
        for tensor in out if isinstance(out, (list, tuple)) else (out,):
            if isinstance(tensor, torch.Tensor) and tensor.layout == torch.strided and tensor.device.type != "meta":
                storage = tensor.untyped_storage()
                if storage.data_ptr() not in self._storages:
                    self._storages.add(storage.data_ptr())
                    self.held_bytes += storage.nbytes()
        if self.held_bytes > self.max_bytes:
            raise Abandoned(f"the step's outputs hold more than {self.max_bytes >> 30} GiB")


COMPUTED = object()  # a recorded op computed on every call (``_steers``)


def _leaves(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """An op's arguments in order, a list's length and then its items in its place: an aten op's arguments nest one
    deep (``Tensor[]``, ``int[]``). Not pytree's: its Python took over half the mode's time, and the more of its
    own Python the replay runs between the step's, the colder it leaves the step's glue."""
    flat: list[Any] = []
    for value in (*args, *kwargs.values()):
        if isinstance(value, (list, tuple)):
            flat.append(len(value))
            flat.extend(value)
        else:
            flat.append(value)
    return flat


def _detached(out: Any) -> Any:
    """``out`` with each tensor, alone or in a list or tuple (an op's ``Tensor[]`` or its named tuple), detached."""
    if isinstance(out, torch.Tensor):
        return out.detach()
    if not isinstance(out, (list, tuple)):
        return out
    items = [item.detach() if isinstance(item, torch.Tensor) else item for item in out]
    return items if type(out) is list else tuple(items) if type(out) is tuple else type(out)(items)


INTEGER_DTYPES = frozenset({torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64})


def _steers(func: Any, out: Any, written: torch.Tensor | None) -> bool:
    """Whether an op's output steers the step, and is computed on every call: an integer tensor it wrote in place (an
    index, a count) or a view of one, or an integer read back into Python (``int(count)``). Replayed, a count would
    stand still and an index could point past its tensor (another call site's); computed, the write runs on this
    call's inputs, and a view runs no kernel. Other integer ops (a sort, ``randint``) replay: their values index in
    bounds, and computed they would run kernels whose cache traffic the glue would pay for."""
    if written is not None:
        return written.dtype in INTEGER_DTYPES
    if isinstance(out, torch.Tensor):
        return func.is_view and out.dtype in INTEGER_DTYPES
    return isinstance(out, int) and not isinstance(out, bool)


def _computed(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``func`` run on its arguments; where one it reads shares memory with one it writes (a replay hands one tensor
    to every call of an op and layout: ``index_add_`` of a replayed result into another), those it reads cloned."""
    try:
        return func(*args, **kwargs)
    except RuntimeError as error:
        if "refer to a single memory location" not in str(error):
            raise
    schema = func._schema.arguments
    writes = {arg.name for arg in schema if arg.alias_info is not None and arg.alias_info.is_write}

    def read_only(name: str | None, value: Any) -> Any:
        return value.clone() if isinstance(value, torch.Tensor) and name not in writes else value

    names = [arg.name for arg in schema]
    args = tuple(read_only(names[i] if i < len(names) else None, value) for i, value in enumerate(args))
    return func(*args, **{name: read_only(name, value) for name, value in kwargs.items()})


def _layout(tensor: torch.Tensor) -> tuple[Any, ...]:
    strides = tensor.stride() if tensor.layout == torch.strided else None  # a sparse tensor has none
    return tensor.shape, tensor.dtype, tensor.layout, strides


# A ``record_function`` range's enter and exit: ops of torch's ``profiler`` namespace.
RANGE_OPS = ("_record_function_enter", "_record_function_enter_new", "_record_function_exit", "_record_function_exit._RecordFunction")


@contextlib.contextmanager
def ranges_past_modes() -> Iterator[None]:
    """Every ``record_function`` range (a phase, a profiler step) opened and closed past any dispatch mode, by a
    fallthrough at the modes' key for the block: under the replay each enter and exit would run the mode's Python,
    in the step's gaps (about 5 µs at a phase's end), where the real step runs none."""
    library = Library("profiler", "IMPL")
    try:
        for op in RANGE_OPS:
            library.impl(op, fallthrough_kernel, "Python")
        yield
    finally:
        library._destroy()


def deadline_s(step_ms: float) -> float:
    """How long a replay of a step of median ``step_ms`` may take: as long as its steps would for real, and ``DEADLINE_S``."""
    return DEADLINE_S + STEPS_S + (LEAST_STEPS + 4) * step_ms / 1e3


def replayed_profile(model: Any, mode: str, trace_path: Path, replay: Replay) -> ProfileRun:
    """Light-profiled steps of ``model`` under ``replay``, traced to ``trace_path``. Raises ``Abandoned`` for a step
    whose outputs do not fit, or a replay past its deadline."""
    try:
        with replay, ranges_past_modes():
            timer = StepTimer()
            timed_call(model, mode, 2, timer)  # the first records every op, the second replays them all
            fit = int(STEPS_S * 1e9 / max(1, timer.durations_ns[-1]))
            return run_profile(model, mode, torch.device("cpu"), "light", max(LEAST_STEPS, min(MOST_STEPS, fit)), trace_path)
    finally:
        replay.recorded.clear()


DIVERGED_FRACTION = 0.02  # past this share (and one call) of the real step's calls, a replayed step ran other code


def trusted(warm: Warm | None, real_calls: float) -> tuple[Warm | None, str | None]:
    """``warm`` where its steps made the real step's op calls (``real_calls`` a step); else None, and why (a step
    whose Python reads back a value the replay does not compute runs other code)."""
    if warm is None:
        return warm, None
    calls = warm.events.mean_events("call")
    if abs(calls - real_calls) <= max(1.0, DIVERGED_FRACTION * real_calls):
        return warm, None
    return None, (
        f"the step replayed made {calls:.0f} op calls against the real step's {real_calls:.0f} (its Python "
        "reads values the replay does not compute): its warm gap is not used"
    )


def warm_reading(model: Any, mode: str, trace_path: Path, replay: Replay) -> Warm:
    """The step replayed, read: its kept steps' gaps (``analyze.timesplit.kept``) less what each spent blocked, and
    the time steps of the RNN calls among ``replay``'s watched ops."""
    run = replayed_profile(model, mode, trace_path, replay)
    blocked_us = timesplit.blocked_us(run.samples)
    events = overhead_events_of_trace(run.trace_path, timed_ms=run.steps.times_ms).only(timesplit.kept(run.samples))
    return Warm(events.less(blocked_us), time_steps_of_calls(replay.inputs), blocked_us)
