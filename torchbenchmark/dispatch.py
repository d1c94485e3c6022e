"""The dispatch verdict: how much of a step is per-op overhead, calibrated on this machine.

Every op a model calls pays a fixed cost before any arithmetic: Python argument parsing, the dispatcher,
autograd bookkeeping, an allocation, a kernel launch on a GPU. We price that cost by timing trivial ops
(one-element tensors, so the arithmetic is nil) and multiply it by the ops a step calls:

    overhead_fraction = ops_per_step * per_op_overhead / step_time

``ops_per_step`` counts every op event in the light trace: each op the dispatcher handled, nested ones
included, and each autograd node the backward pass ran, since every one of them pays the fixed cost.
Pricing them all at the cost of a call from Python errs high for nested ops, so the fraction leans
towards overhead; a model made of tiny ops comes out near 1, a model of large kernels near 0, and the
verdict's thresholds leave a wide band between them. On a GPU the measured idle share of the step is
used instead when the trace has kernels: an idle GPU is waiting for the CPU.

Verdicts, from the overhead fraction:
    >= DISPATCH_BOUND_AT (0.5)   dispatch-bound: most of the step is overhead; fewer or fused ops help,
                                 faster kernels do not
    <  COMPUTE_BOUND_BELOW (0.2) compute-bound: the arithmetic dominates; faster kernels help
    otherwise                    mixed

A compute-bound verdict is read with the step's ``pct_of_peak`` (torchbenchmark/costs.py): under
costs.KERNEL_LIMITED_BELOW_PCT of the machine's peak its kernels, not its op count, are the limit.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch

DISPATCH_BOUND_AT = 0.5
COMPUTE_BOUND_BELOW = 0.2
VERDICTS = ("dispatch-bound", "mixed", "compute-bound")


def calibrate_per_op_overhead_us(device: torch.device, calls: int = 2000, repeats: int = 5) -> float:
    """The mean cost of a trivial op on ``device``, in µs: the median over ``repeats`` runs of each op."""
    a = torch.ones(1, device=device)
    b = torch.ones(1, device=device)
    # A few kinds of trivial call, because their fixed costs differ (a Python scalar is wrapped in a
    # tensor, a reduction sets up an iterator): their mean prices a typical op better than any one.
    trivial_ops: list[Callable[[], torch.Tensor]] = [
        lambda: a + b,
        lambda: a * 2.0,
        lambda: torch.relu(a),
        lambda: a.sum(),
    ]
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    costs = []
    for op in trivial_ops:
        for _ in range(100):  # warm the allocator and caches
            op()
        runs = []
        for _ in range(repeats):
            sync()
            start = time.perf_counter_ns()
            for _ in range(calls):
                op()
            sync()
            runs.append((time.perf_counter_ns() - start) / calls / 1e3)
        costs.append(statistics.median(runs))
    return statistics.fmean(costs)


def overhead_fraction(ops_per_step: float, per_op_overhead_us: float, step_ms: float) -> float:
    """Estimated share of a step spent on per-op overhead, capped at 1."""
    if step_ms <= 0:
        raise ValueError("step time must be positive")
    return min(1.0, ops_per_step * per_op_overhead_us / (step_ms * 1e3))


def verdict(fraction: float) -> str:
    """``dispatch-bound``, ``mixed`` or ``compute-bound`` for an overhead fraction (thresholds above)."""
    if fraction >= DISPATCH_BOUND_AT:
        return "dispatch-bound"
    if fraction < COMPUTE_BOUND_BELOW:
        return "compute-bound"
    return "mixed"
