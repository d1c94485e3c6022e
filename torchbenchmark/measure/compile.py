"""Compiled variants: the model's ``module`` under ``torch.compile``, timed back to back with the eager one.

Only the ``module`` is compiled: the step loop, its annotations and the optimizer stay eager, so the
eager and compiled cases run the same steps and differ only in how the network runs. A container
module (``ModuleDict``, ``ModuleList``, as GANs and RL models use) has each of its children compiled,
since the model indexes it rather than calling it.

What a compiled row reports, as PyTorch's dynamo benchmark harness defines it:
- ``compile_time_s``: the first compiled step's time less an eager step's, in seconds;
- ``graphs``: graphs dynamo captured; ``graph_breaks``: breaks it hit, with each distinct reason and
  where in the user's code it happened; ``recompiles``: guard failures that forced another compile;
- ``speedup_vs_eager``: eager step time over compiled step time, from windows of each taken in turn in
  the same process on the same inputs, so load spells and process effects fall on both alike.
"""

from __future__ import annotations

import contextlib
import logging
import re
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch

from torchbenchmark.measure.harness import StepTimer, timed_call
from torchbenchmark.results.schema import CompileReport, GraphBreak
from torchbenchmark.results.spec import Compile

SPEEDUP_ROUNDS = 3  # eager/compiled window pairs; the median pair's ratio is the speedup
SPEEDUP_WINDOW_S = 0.5  # time per window, at least 3 steps...
SPEEDUP_MAX_STEPS = 2000  # ...and at most this many: the timer costs about a microsecond a step


class NotApplicable(Exception):
    """The variant cannot be made of this model (e.g. no ``module``): a skipped row, not a failure."""


def check_backend(backend: str) -> None:
    """Raise ValueError unless ``backend`` is one ``torch.compile`` knows."""
    import torch._dynamo

    known = torch._dynamo.list_backends(exclude_tags=())
    if backend not in known:
        raise ValueError(f"unknown compile backend {backend!r}; this torch has {', '.join(sorted(known))}")


def compiled_module(module: Any, options: Compile) -> torch.nn.Module:
    """``module`` compiled, sharing its parameters; a container gets each child compiled instead."""
    if not isinstance(module, torch.nn.Module):
        raise NotApplicable("the compiled variant compiles the model's `module`, and this model has none")
    mode = None if options.mode == "default" else options.mode

    def compile_one(child: torch.nn.Module) -> torch.nn.Module:
        return torch.compile(child, backend=options.backend, mode=mode)  # type: ignore[return-value]

    if isinstance(module, torch.nn.ModuleDict):
        return torch.nn.ModuleDict({name: compile_one(child) for name, child in module.items()})
    if isinstance(module, torch.nn.ModuleList):
        return torch.nn.ModuleList([compile_one(child) for child in module])
    return compile_one(module)


_BREAK = re.compile(r"Graph break .*?in user code at (?P<where>\S+)\s*\nGraph Break Reason: (?P<reason>[^\n]+)")
_RECOMPILE = re.compile(r"^Recompiling function")


class _DynamoLog(logging.Handler):
    """Collects dynamo's graph-break and recompile messages while compiling."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.breaks: dict[tuple[str, str], int] = {}
        self.recompiles = 0

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if (found := _BREAK.search(message)) is not None:
            key = (found["reason"].strip(), found["where"])
            self.breaks[key] = self.breaks.get(key, 0) + 1
        elif _RECOMPILE.match(message):
            self.recompiles += 1


@contextlib.contextmanager
def watch_dynamo() -> Iterator[_DynamoLog]:
    """Count graphs, breaks and recompiles from dynamo's own counters and logs while the block runs."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    counters.clear()
    handler = _DynamoLog()
    logger = logging.getLogger("torch._dynamo")
    torch._logging.set_logs(graph_breaks=True, recompiles=True)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        torch._logging.set_logs()


def unique_graphs() -> int:
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


def median_step_ms(model: Any, mode: str, steps: int, sync: Callable[[], None]) -> float:
    """The median of ``steps`` steps of one call, its first step (which holds the call's edge) left out."""
    timer = StepTimer(sync)
    timed_call(model, mode, steps + 1, timer)  # +1: the first step holds the call's edge
    return statistics.median(timer.inner_ns()) / 1e6


def compile_and_measure_first_step(model: Any, mode: str, options: Compile, sync: Callable[[], None]) -> tuple[Any, Any, CompileReport]:
    """Swap ``model.module`` for its compiled form and time the compiling step against eager ones.

    Returns the eager module, the compiled one (now in place) and the report, speedup not yet measured.
    """
    eager = getattr(model, "module", None)
    compiled = compiled_module(eager, options)
    eager_ms = median_step_ms(model, mode, 3, sync)  # warm enough to price an eager step
    model.module = compiled
    with watch_dynamo() as log:
        started = time.perf_counter_ns()
        timed_call(model, mode, 1, StepTimer(sync))
        first_ms = (time.perf_counter_ns() - started) / 1e6
        timed_call(model, mode, 2, StepTimer(sync))  # the second step may still compile (e.g. grad mode)
        graphs = unique_graphs()
    breaks = tuple(GraphBreak(reason, where, count) for (reason, where), count in log.breaks.items())
    report = CompileReport(
        backend=options.backend,
        mode=options.mode,
        compile_time_s=max(0.0, first_ms - eager_ms) / 1e3,
        graphs=graphs,
        graph_breaks=sum(b.count for b in breaks),
        break_reasons=breaks,
        recompiles=log.recompiles,
    )
    return eager, compiled, report


def window_steps(step_ms: float) -> int:
    """Steps in one speedup window of a model whose step takes about ``step_ms``."""
    return max(3, min(SPEEDUP_MAX_STEPS, int(SPEEDUP_WINDOW_S * 1e3 / max(step_ms, 1e-3))))


def interleaved_speedup(model: Any, mode: str, eager: Any, compiled: Any, step_ms: float, sync: Callable[[], None]) -> tuple[float, ...]:
    """Eager over compiled median step time for each of ``SPEEDUP_ROUNDS`` window pairs taken in turn."""
    steps = window_steps(step_ms)
    ratios = []
    try:
        for _ in range(SPEEDUP_ROUNDS):
            model.module = eager
            eager_ms = median_step_ms(model, mode, steps, sync)
            model.module = compiled
            ratios.append(eager_ms / median_step_ms(model, mode, steps, sync))
    finally:
        model.module = compiled
    return tuple(ratios)
