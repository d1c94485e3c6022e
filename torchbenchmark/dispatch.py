"""The dispatch verdict: how much of a step is per-op overhead, calibrated on this machine.

Every op a model calls pays a fixed cost before any arithmetic: Python argument parsing, the dispatcher,
autograd bookkeeping, an allocation, a kernel launch on a GPU. We price that cost by timing trivial ops
(one-element tensors, so the arithmetic is nil) and multiply it by the ops a step calls:

    overhead_fraction = ops_per_step * per_op_overhead / step_time

``ops_per_step`` counts every op event in the light trace: each op the dispatcher handled, nested ones
included, and each autograd node the backward pass ran, since every one of them pays the fixed cost.
Pricing them all at the cost of a call from Python errs high for nested ops, so the fraction leans
towards overhead; a model made of tiny ops comes out near 1, a model of large kernels near 0, and the
verdict's thresholds leave a wide band between them.

Verdicts on a CPU, from the overhead fraction:
    >= DISPATCH_BOUND_AT (0.5)   dispatch-bound: most of the step is overhead; fewer or fused ops help,
                                 faster kernels do not
    <  COMPUTE_BOUND_BELOW (0.2) compute-bound: the arithmetic dominates; faster kernels help
    otherwise                    mixed

On a GPU the verdict is measured, not estimated (``judge_gpu``): it asks which side waits on which in the
light profile. The host waiting on the GPU (time blocked in syncs, at least HOST_WAIT_GPU_BOUND_AT of the
step) or kernels waiting in the queue behind earlier kernels (a median of QUEUED_AT_US or more from launch
to start) means the GPU limits the step: compute-bound. The host hardly waiting (under
HOST_WAIT_CPU_BOUND_BELOW) while kernels start as soon as they are launched means the GPU waits on the
host: dispatch-bound, however busy the GPU is between launches. Anything else is mixed. The overhead
fraction on a GPU is the share of the unprofiled median step the GPU is idle.

A compute-bound verdict is read with the step's ``pct_of_peak`` (torchbenchmark/costs.py): under
costs.KERNEL_LIMITED_BELOW_PCT of the machine's peak its kernels, not its op count, are the limit.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch

from torchbenchmark.results import GpuEvidence
from torchbenchmark.trace_analysis import TraceSummary

DISPATCH_BOUND_AT = 0.5
COMPUTE_BOUND_BELOW = 0.2
VERDICTS = ("dispatch-bound", "mixed", "compute-bound")
HOST_WAIT_GPU_BOUND_AT = 0.5
HOST_WAIT_CPU_BOUND_BELOW = 0.2
QUEUED_AT_US = 50.0  # an idle GPU starts a kernel within about 10 µs of its launch, profiled
LIMIT_VERDICTS = {"cpu": "dispatch-bound", "both": "mixed", "gpu": "compute-bound"}
# Calls timed at a time on a GPU: fewer than its launch queue holds (about 1000), so no launch waits for
# a free slot and the clock sees the host's cost per op, not the GPU's throughput for tiny kernels.
LAUNCH_BATCH = 100


def calibrate_per_op_overhead_us(device: torch.device, calls: int = 2000, repeats: int = 5) -> float:
    """The mean cost of a trivial op on ``device``, in µs: the median over ``repeats`` runs of each op."""
    if device.type == "cuda":
        return _calibrate_launch_overhead_us(device, calls, repeats)
    costs = []
    for op in _trivial_ops(device):
        for _ in range(100):  # warm the allocator and caches
            op()
        runs = []
        for _ in range(repeats):
            start = time.perf_counter_ns()
            for _ in range(calls):
                op()
            runs.append((time.perf_counter_ns() - start) / calls / 1e3)
        costs.append(statistics.median(runs))
    return statistics.fmean(costs)


def _trivial_ops(device: torch.device) -> list[Callable[[], torch.Tensor]]:
    a = torch.ones(1, device=device)
    b = torch.ones(1, device=device)
    # A few kinds of trivial call, because their fixed costs differ (a Python scalar is wrapped in a
    # tensor, a reduction sets up an iterator): their mean prices a typical op better than any one.
    return [lambda: a + b, lambda: a * 2.0, lambda: torch.relu(a), lambda: a.sum()]


def _calibrate_launch_overhead_us(device: torch.device, calls: int, repeats: int) -> float:
    """The host's cost of a trivial op on a GPU: batches of LAUNCH_BATCH calls, each started on an idle
    GPU and timed without waiting for their kernels (the host's side of a launch is what every op pays)."""
    batches = max(1, calls // LAUNCH_BATCH)
    costs = []
    for op in _trivial_ops(device):
        for _ in range(100):  # warm the allocator, caches and lazily loaded kernels
            op()
        runs = []
        for _ in range(repeats):
            elapsed_ns = 0
            for _ in range(batches):
                torch.cuda.synchronize(device)
                start = time.perf_counter_ns()
                for _ in range(LAUNCH_BATCH):
                    op()
                elapsed_ns += time.perf_counter_ns() - start
            runs.append(elapsed_ns / (batches * LAUNCH_BATCH) / 1e3)
        costs.append(statistics.median(runs))
    torch.cuda.synchronize(device)
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


def judge_gpu(light: TraceSummary, median_ms: float) -> GpuEvidence:
    """Which side limits a step on a GPU, from the light profile and the unprofiled median step (see above)."""
    if light.gpu is None:
        raise ValueError("the trace holds no GPU events")
    host_wait = light.gpu.sync_ms_per_step / light.step_ms
    if host_wait >= HOST_WAIT_GPU_BOUND_AT or light.gpu.median_launch_wait_us >= QUEUED_AT_US:
        limited_by = "gpu"
    elif host_wait < HOST_WAIT_CPU_BOUND_BELOW:
        limited_by = "cpu"
    else:
        limited_by = "both"
    return GpuEvidence(
        limited_by=limited_by,
        busy_pct=100.0 * light.gpu.busy_ms_per_step / median_ms,
        host_wait_pct=100.0 * host_wait,
        median_launch_wait_us=light.gpu.median_launch_wait_us,
        kernel_ms_per_step=light.gpu.busy_ms_per_step,
        kernels_per_step=light.gpu.kernels_per_step,
    )


def gpu_verdict(evidence: GpuEvidence) -> tuple[str, float]:
    """The verdict on a GPU and its overhead fraction: the share of the step the GPU is idle."""
    return LIMIT_VERDICTS[evidence.limited_by], min(1.0, max(0.0, 1.0 - evidence.busy_pct / 100.0))
