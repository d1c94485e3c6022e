"""The verdict rules and their thresholds: what limits a step, on a CPU, on a GPU and across ranks.

On a CPU the verdict is read from the estimated overhead share (``analyze.pricing``):

    >= DISPATCH_BOUND_AT     dispatch-bound: most of the step is overhead; fewer or fused ops help,
                             faster kernels do not
    <  COMPUTE_BOUND_BELOW   compute-bound: the arithmetic dominates; faster kernels help
    otherwise                mixed

On a GPU it is measured (``judge_gpu``): which side waits on which in the light profile. The host blocked
in syncs for at least HOST_WAIT_GPU_BOUND_AT of the step, or kernels queued a median QUEUED_AT_US or more
behind earlier ones, means the GPU limits the step: compute-bound. The host hardly waiting (under
HOST_WAIT_CPU_BOUND_BELOW) while kernels start as soon as they are launched means the GPU waits on the
host: dispatch-bound. Anything else is mixed; the overhead share there is the share of the step the GPU
is idle.

A compute-bound step is read with its ``pct_of_peak``: under KERNEL_LIMITED_BELOW_PCT of the machine's peak
its kernels, not its op count, are the limit (``compute_limit``). A DDP step that waits on collectives for
COMM_BOUND_PCT of its time is bound by them, as a step with that share of overhead is by dispatch.
"""

from __future__ import annotations

from torchbenchmark.analyze.steps import TraceSummary
from torchbenchmark.results.schema import GpuEvidence, Verdict

DISPATCH_BOUND_AT = 0.5
COMPUTE_BOUND_BELOW = 0.2
HOST_WAIT_GPU_BOUND_AT = 0.5
HOST_WAIT_CPU_BOUND_BELOW = 0.2
QUEUED_AT_US = 50.0  # an idle GPU starts a kernel within about 10 µs of its launch, profiled
LIMIT_VERDICTS = {"cpu": Verdict.DISPATCH_BOUND, "both": Verdict.MIXED, "gpu": Verdict.COMPUTE_BOUND}
KERNEL_LIMITED_BELOW_PCT = 10.0
COMM_BOUND_PCT = 50.0
COMM_PARTLY_PCT = 20.0
VERDICTS = (Verdict.DISPATCH_BOUND, Verdict.MIXED, Verdict.COMPUTE_BOUND)  # from the highest share to the lowest


def verdict(fraction: float) -> Verdict:
    """The CPU verdict for an overhead fraction (thresholds above)."""
    if fraction >= DISPATCH_BOUND_AT:
        return Verdict.DISPATCH_BOUND
    if fraction < COMPUTE_BOUND_BELOW:
        return Verdict.COMPUTE_BOUND
    return Verdict.MIXED


def verdicts_between(low: float, high: float) -> set[Verdict]:
    """Every verdict an overhead share from ``low`` to ``high`` reaches."""
    first, last = VERDICTS.index(verdict(high)), VERDICTS.index(verdict(low))
    return set(VERDICTS[first : last + 1])


def borderline(interval: tuple[float, float]) -> bool:
    """True when the interval crosses a verdict threshold: a rerun could give another verdict."""
    return verdict(interval[0]) != verdict(interval[1])


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


def gpu_verdict(evidence: GpuEvidence) -> tuple[Verdict, float]:
    """The verdict on a GPU and its overhead fraction: the share of the step the GPU is idle."""
    return LIMIT_VERDICTS[evidence.limited_by], min(1.0, max(0.0, 1.0 - evidence.busy_pct / 100.0))


def compute_limit(verdict: str | None, pct_of_peak: float | None) -> str | None:
    """``kernels`` or ``arithmetic`` for a compute-bound step with a known ``pct_of_peak`` (the rule above)."""
    if verdict != Verdict.COMPUTE_BOUND or pct_of_peak is None:
        return None
    return "kernels" if pct_of_peak < KERNEL_LIMITED_BELOW_PCT else "arithmetic"


def comm_reading(exposed_comm_pct: float) -> str:
    """What bounds a DDP step beside the dispatch verdict: the collectives it waits for, or not."""
    if exposed_comm_pct >= COMM_BOUND_PCT:
        return "communication-bound"
    return "partly communication-bound" if exposed_comm_pct >= COMM_PARTLY_PCT else "compute"
