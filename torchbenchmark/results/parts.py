"""The parts a row is made of: step times, what the kernel saw, the verdict's evidence, costs, DDP (a variant's: variant_parts)."""

from __future__ import annotations

import dataclasses

from torchbenchmark.results.codec import AT_LEAST_ONE, DURATION_MS, FRACTION, NON_NEGATIVE, json_field
from torchbenchmark.results.kinds import (
    CONTENDED_WAIT_PCT,
    GAP_FLOOR_US,
    MIN_CLEAN_FRACTION,
    MIN_STEPS_FOR_SPREAD,
    OTHER_WORK_AT_PCT,
    Record,
    Verdict,
    summed,
)


@dataclasses.dataclass(frozen=True)
class StepTime(Record):
    median_ms: float = json_field(key="median", bound=DURATION_MS)
    iqr_ms: float = json_field(key="iqr", bound=NON_NEGATIVE)
    min_ms: float = json_field(key="min", bound=DURATION_MS)
    n: int = json_field(bound=AT_LEAST_ONE)


@dataclasses.dataclass(frozen=True)
class Distortion(Record):
    """How much slower a step runs inside each profile than outside any, in percent."""

    light_pct: float | None = json_field(key="light", default=None)
    detailed_pct: float | None = json_field(key="detailed", default=None)


@dataclasses.dataclass(frozen=True)
class Warmup(Record):
    steps: int | None = json_field(default=None, bound=NON_NEGATIVE)
    steady: bool | None = None  # False: warmup ran out of time before the step time settled


@dataclasses.dataclass(frozen=True)
class Measurement(Record):
    """The measurement windows (see ``measure.harness.measure_windows``)."""

    windows: int | None = json_field(default=None, bound=NON_NEGATIVE)
    diff_pct: float | None = json_field(default=None, bound=NON_NEGATIVE)  # between the two windows kept
    agree: bool | None = None  # False: no two windows agreed, the machine was too noisy to trust


@dataclasses.dataclass(frozen=True)
class TimeSplit(Record):
    """Where the measured steps' wall time went, by the kernel's accounting (``analyze.timesplit``), in percent."""

    method: str  # "schedstat"; or "process CPU time", where waiting and blocked cannot be told apart
    on_cpu_pct: float = json_field(bound=NON_NEGATIVE)  # the step's thread on a CPU
    waiting_pct: float = json_field(bound=NON_NEGATIVE)  # the process's threads runnable, waiting for a CPU
    blocked_pct: float = json_field(bound=NON_NEGATIVE)  # the step's thread neither: sleep, I/O, locks, waits
    others_waiting_pct: float = json_field(bound=NON_NEGATIVE)  # the intra-op threads' part of the wait
    steps_measured: int = json_field(bound=NON_NEGATIVE)
    steps_kept: int = json_field(bound=NON_NEGATIVE)  # no other work stretched them: the step time's steps
    pressure_pct: float | None = json_field(default=None, bound=NON_NEGATIVE)  # /proc/pressure/cpu "some", in the windows
    other_work_pct: float | None = json_field(default=None, bound=NON_NEGATIVE)  # other processes' CPU, % of the machine's
    load_average: float | None = json_field(default=None, bound=NON_NEGATIVE)
    profiled_waiting_pct: float | None = json_field(default=None, bound=NON_NEGATIVE)  # in the light profile
    profiled_steps_kept: int | None = json_field(default=None, bound=NON_NEGATIVE)
    profiled_steps: int | None = json_field(default=None, bound=NON_NEGATIVE)
    cpus: int | None = json_field(default=None, bound=NON_NEGATIVE)  # the machine's, where it was measured
    # With steps left out: the IQR of every measured step less what its threads waited for a CPU, in % of their
    # median. A long step is likelier to wait than a short one, so the kept steps lean to a model's short ones
    # and their IQR can hide the model's own spread.
    unwaited_iqr_pct: float | None = json_field(default=None, bound=NON_NEGATIVE)

    def _pressure(self) -> str:
        if self.own_wait:
            return f"; other work took {self.other_work_pct:.0f}% of the machine, too little for that: the wait is on its own threads and processes"
        if self.pressure_pct is not None:
            return f" (machine CPU pressure {self.pressure_pct:.0f}%)"
        return "" if self.load_average is None else f" (load average {self.load_average:.1f})"

    @property
    def shared(self) -> bool:
        """Other work took more of the machine than OTHER_WORK_AT_PCT while the case ran."""
        return self.other_work_pct is not None and self.other_work_pct > OTHER_WORK_AT_PCT

    @property
    def own_wait(self) -> bool:
        """Other processes' CPU time could account for less than half the case's wait (each of their seconds on
        a CPU keeps at most one of its threads waiting a second): it waited on its own threads and processes,
        more of them than CPUs, which a quieter machine would not change."""
        if self.other_work_pct is None or not self.cpus:
            return False
        return self.other_work_pct * self.cpus < max(self.waiting_pct, self.profiled_waiting_pct or 0) / 2

    @property
    def waited(self) -> bool:
        """Too few measured steps ran clean and the case's own threads waited for a CPU: its step time holds the wait."""
        return not enough_clean(self.steps_kept, self.steps_measured) and self.waiting_pct >= CONTENDED_WAIT_PCT

    @property
    def contended(self) -> tuple[str, ...]:
        """Why the case's own threads' waits for a CPU left too few steps to trust; empty when enough ran clean.
        Other work elsewhere on the machine, while its threads had the CPUs they asked for, is no mark (``shared``)."""
        reasons = []
        if self.waited:
            reasons.append(
                f"contended: its threads waited {self.waiting_pct:.0f}% of the step for a CPU{summed(self.waiting_pct)}{self._pressure()}"
            )
        profiled_wait = self.profiled_waiting_pct or 0
        if (
            self.profiled_steps
            and not enough_clean(self.profiled_steps_kept or 0, self.profiled_steps)
            and profiled_wait >= CONTENDED_WAIT_PCT
        ):
            reasons.append(
                f"contended while profiled: its threads waited {profiled_wait:.0f}% of the profiled step for a CPU{summed(profiled_wait)}"
            )
        return tuple(reasons)

    @property
    def intra_op_wait(self) -> bool:
        """Most of the wait was the intra-op threads': one thread (--threads 1) would not wait on them."""
        return self.others_waiting_pct > self.waiting_pct / 2


def enough_clean(kept: int, total: int) -> bool:
    """Enough steps no other work stretched: at least MIN_STEPS_FOR_SPREAD and MIN_CLEAN_FRACTION of them."""
    return kept >= min(MIN_STEPS_FOR_SPREAD, total) and kept >= MIN_CLEAN_FRACTION * total


@dataclasses.dataclass(frozen=True)
class Traces(Record):
    """The case's traces, relative to the output folder."""

    light: str | None = None
    detailed: str | None = None


@dataclasses.dataclass(frozen=True)
class TopOp(Record):
    """An op's share of the profiled step, by self time (its own time, not its children's)."""

    name: str
    self_ms_per_step: float
    calls_per_step: float = json_field(bound=NON_NEGATIVE)
    pct_of_step: float
    kernel_ms_per_step: float | None = None  # GPU time of the kernels and copies it launched; None on a CPU


@dataclasses.dataclass(frozen=True)
class Scaling(Record):
    """Overhead by batch-size scaling: step time = intercept + slope * batch, fitted over several batches.

    The intercept is the step's batch-independent time: the overhead and any arithmetic that does not
    grow with the batch (weight updates), so its share of the step is an upper bound on the overhead's.
    """

    batch_sizes: tuple[int, ...] = json_field(bound=AT_LEAST_ONE)
    step_ms: tuple[float, ...] = json_field(bound=DURATION_MS)  # median step time at each batch size
    intercept_ms: float
    fraction_upper: float = json_field(bound=NON_NEGATIVE)  # intercept over the step at the case's batch (at most 1 since 2026-12)
    agrees: bool  # whether the event-based estimate is consistent with it (analyze.scaling.AGREEMENT_*)
    # The batch from which the overhead share, the event-based overhead over the fitted step time, falls to
    # 50% (below it: dispatch-bound) and to 20% (from it: compute-bound); None: the line does not grow.
    batch_at_overhead_50pct: int | None = json_field(default=None, bound=AT_LEAST_ONE)
    batch_at_overhead_20pct: int | None = json_field(default=None, bound=AT_LEAST_ONE)
    # Why the fit is not to be read (a larger batch ran more than 10% faster than a smaller one): then it agrees
    # with nothing and places no crossover. None: it stands.
    contradiction: str | None = None
    doubt: str | None = None  # the batches measured as a row would be marked for (windows apart, warm-up not steady)


@dataclasses.dataclass(frozen=True)
class Instructions(Record):
    """Instructions a step executes, counted under valgrind's callgrind on one thread (``--instructions``).

    A count does not move with load on the machine, so a comparison can call a change of 1% where wall time
    sees 10%; it cannot see what runs the same instructions slower (memory stalls, threads, the GPU).
    """

    method: str = "callgrind"
    per_step: float | None = json_field(default=None, bound=NON_NEGATIVE)  # median over the counted steps; None: not counted
    spread_pct: float | None = json_field(default=None, bound=NON_NEGATIVE)  # (max - min) / median of the counted steps
    steps: int | None = json_field(default=None, bound=NON_NEGATIVE)  # steps counted
    reason: str | None = None  # why the case was not counted, where it was not

    @property
    def counted(self) -> bool:
        return self.per_step is not None


@dataclasses.dataclass(frozen=True)
class Dispatch(Record):
    """The verdict and the evidence it rests on (how each figure is priced: ``analyze.pricing``)."""

    verdict: Verdict
    overhead_fraction: float = json_field(bound=FRACTION)
    ops_per_step: float = json_field(bound=NON_NEGATIVE)
    median_op_us: float = json_field(bound=NON_NEGATIVE)
    per_op_overhead_us: float = json_field(bound=NON_NEGATIVE)  # the calibrated price of a top-level call
    overhead_fraction_uncapped: float | None = json_field(default=None, bound=NON_NEGATIVE)
    overhead_interval: tuple[float, float] | None = json_field(default=None, bound=NON_NEGATIVE)
    borderline: bool = False  # the interval crosses a verdict threshold
    interval_note: str | None = None  # why the interval is wider than the spreads alone make it
    events_per_step: dict[str, float] | None = json_field(default=None, bound=NON_NEGATIVE)
    prices_us: dict[str, float] | None = json_field(default=None, bound=NON_NEGATIVE)
    python_us_per_step: float | None = json_field(default=None, bound=NON_NEGATIVE)  # Python time with no event
    warm_gap_us: float | None = json_field(default=None, bound=NON_NEGATIVE)  # the step's gap replayed (measure.replay)
    real_gap_us: float | None = json_field(default=None, bound=NON_NEGATIVE)  # on a CPU, the real steps' gap, the least step's
    scaling: Scaling | None = None  # the second estimate, by batch-size scaling, when asked for
    scaling_failed: str | None = None  # --scaling: "failed at batch N: why"; the fit, if any, is of the batches before it
    # The CPU estimate's terms, µs a step by name (analyze.pricing.TERMS), summing to the uncapped share x the median step
    terms_us: dict[str, float] | None = json_field(default=None, bound=NON_NEGATIVE)
    # How far the calibration's median call price, or the gap a call leaves, lies above its least repeat's, in % of the median
    calibration_spread_pct: float | None = json_field(default=None, bound=NON_NEGATIVE)

    @property
    def replay_above_real(self) -> float | None:
        """How far the replayed gap lies above the real steps', as a share of theirs, a real gap under 10 µs read as 10:
        a real gap read as nil beside a replayed one is a reading apart too, a few µs either way (a step of ops with
        no Python between them) is not."""
        if self.warm_gap_us is None or self.real_gap_us is None:
            return None
        return (self.warm_gap_us - self.real_gap_us) / max(GAP_FLOOR_US, self.real_gap_us)

    @property
    def fraction(self) -> float:
        """The uncapped share where the row has one (a profiled step can price above 100%)."""
        return self.overhead_fraction if self.overhead_fraction_uncapped is None else self.overhead_fraction_uncapped


@dataclasses.dataclass(frozen=True)
class GpuEvidence(Record):
    """What the GPU did in a step of the light profile, and which side limits the step (row key ``gpu``)."""

    limited_by: str  # "cpu" (the GPU waits on the host), "gpu" (the host waits on the GPU) or "both"
    busy_pct: float = json_field(bound=NON_NEGATIVE)  # kernel and copy time per step, in % of the median step
    host_wait_pct: float = json_field(bound=NON_NEGATIVE)  # host time blocked in syncs, in % of the profiled step
    median_launch_wait_us: float = json_field(bound=NON_NEGATIVE)  # from a launch call to its kernel's start
    kernel_ms_per_step: float = json_field(bound=NON_NEGATIVE)
    kernels_per_step: float = json_field(bound=NON_NEGATIVE)


@dataclasses.dataclass(frozen=True)
class Samples(Record):
    """The raw material a comparison of runs needs, beside the summary figures.

    Steps within one process are not independent samples (a process keeps its memory layout and its
    share of a load spell for its life), so the unit of replication is the process: one median per
    process the case ran in (``--repeat``), and the median of every measurement window it took.
    """

    process_medians_ms: tuple[float, ...] = json_field(default=(), bound=DURATION_MS)
    window_medians_ms: tuple[tuple[float, ...], ...] = json_field(default=(), bound=DURATION_MS)  # per process

    def __add__(self, other: Samples) -> Samples:
        """The processes of both, these first: one case's samples over several processes or runs."""
        return Samples(self.process_medians_ms + other.process_medians_ms, self.window_medians_ms + other.window_medians_ms)


@dataclasses.dataclass(frozen=True)
class RankFigures(Record):
    """One rank of a DistributedDataParallel case: its own step time and what its trace says."""

    rank: int = json_field(bound=NON_NEGATIVE)
    host: str
    step_median_ms: float = json_field(bound=DURATION_MS)
    comm_pct: float = json_field(bound=NON_NEGATIVE)  # share of the profiled step with a collective running
    exposed_comm_pct: float  # share of the step in collectives while the step's thread ran no op
    trace: str  # relative to the output folder


@dataclasses.dataclass(frozen=True)
class Distributed(Record):
    """A train case run as DistributedDataParallel: how its ranks' steps compare and where comms went."""

    world_size: int = json_field(bound=AT_LEAST_ONE)
    backend: str  # gloo on the CPU, nccl on CUDA
    nodes: int = json_field(bound=AT_LEAST_ONE)  # distinct hosts among the ranks
    ranks: tuple[RankFigures, ...]
    skew_pct: float = json_field(bound=NON_NEGATIVE)  # slowest rank's median step over the fastest's, less 1
    comm_pct: float  # mean over ranks
    exposed_comm_pct: float  # mean over ranks: communication the step waited for
    overlap_pct: float  # share of communication hidden behind compute (the backward pass), mean over ranks
    comm_overlaps_backward: bool  # overlap_pct at least run.ddp.OVERLAP_THRESHOLD_PCT
    reading: str = "compute"  # what bounds the step beside the verdict (analyze.verdict.comm_reading)
    step_time_ms_per_rank: tuple[float, ...] = ()


@dataclasses.dataclass(frozen=True)
class Costs(Record):
    """What one step costs: arithmetic, memory and throughput (how each is measured: ``measure.costs``).

    Its fields sit at the top level of a summary.json row.
    """

    flops_per_step: int | None = json_field(default=None, bound=NON_NEGATIVE)  # None: nothing counted
    flops_by_kind: dict[str, int] = json_field(default_factory=dict, bound=NON_NEGATIVE)
    flops_note: str | None = None  # why flops_per_step is None, or which compute ops it leaves out
    achieved_gflops: float | None = json_field(default=None, bound=NON_NEGATIVE)  # flops / median step
    pct_of_peak: float | None = json_field(default=None, bound=NON_NEGATIVE)  # of the environment's peak_gflops
    compute_limit: str | None = None  # a compute-bound step's limit: kernels (low pct_of_peak) or arithmetic
    peak_memory_mb: float | None = json_field(default=None, bound=NON_NEGATIVE)  # most tensor memory live in a step
    state_memory_mb: float | None = json_field(default=None, bound=NON_NEGATIVE)  # of which live between steps
    # Of that state, what a decode step's cache holds (its keys and values, or a recurrent state); None: no cache.
    cache_memory_mb: float | None = json_field(default=None, bound=NON_NEGATIVE)
    memory_method: str | None = None
    peak_rss_mb: float | None = json_field(default=None, bound=NON_NEGATIVE)  # the process's peak RSS
    samples_per_s: float | None = json_field(default=None, bound=NON_NEGATIVE)  # batch size / median step
    # Compute ops the step ran that the counter has no formula for: flops_per_step is then a lower bound.
    flops_uncounted: tuple[str, ...] = ()

    @property
    def flops_partial(self) -> bool:
        """The count leaves out a compute op: it and every figure drawn from it (GFLOP/s, % of peak) are lower bounds."""
        return self.flops_per_step is not None and bool(self.flops_uncounted)


@dataclasses.dataclass(frozen=True)
class OverheadBound(Record):
    """What removing the estimated overhead would buy (``analyze.bound``); its fields sit at the top level of a row.

    From the verdict's overhead share f of the median step: the step without it, step x (1 - f), and the
    speedup that bounds, 1 / (1 - f); each range from the ends of the overhead interval.
    """

    overhead_free_ms: float = json_field(bound=NON_NEGATIVE)
    overhead_free_range_ms: tuple[float, float] = json_field(bound=NON_NEGATIVE)
    speedup_bound: float = json_field(bound=AT_LEAST_ONE)
    speedup_bound_range: tuple[float, float] = json_field(bound=AT_LEAST_ONE)
    bound_capped: bool = False  # the overhead priced at analyze.bound.MOST_REMOVABLE of the step or more: a floor


@dataclasses.dataclass(frozen=True)
class OverheadShare(Record):
    """One module's, module class's or source line's part of the priced overhead, per step (``analyze.attribution``).

    ``part``: ``module``, ``class`` or ``line`` for a named entry; ``rest`` for the entries past the top summed;
    ``outside`` for events in no module (or in no line of the model's own code); ``unattributed`` for the
    estimate's part no event carries (Python between ops).
    """

    part: str
    name: str  # a module's path in the model (layers.3.self_attn), a class, or file.py:LINE (function)
    events_per_step: float = json_field(bound=NON_NEGATIVE)
    overhead_us_per_step: float = json_field(bound=NON_NEGATIVE)
    pct_of_estimate: float = json_field(bound=NON_NEGATIVE)  # of the row's estimated overhead per step
    module_class: str | None = None  # a module entry's class


@dataclasses.dataclass(frozen=True)
class Attribution(Record):
    """Where the estimated overhead lives, from the detailed profile; its fields sit at the top level of a row."""

    overhead_by_module: tuple[OverheadShare, ...] = ()
    overhead_by_class: tuple[OverheadShare, ...] = ()
    overhead_by_line: tuple[OverheadShare, ...] = ()
    attribution_note: str | None = None  # why there is none, or what it could not see

    def top(self, part: str) -> OverheadShare | None:
        """The largest named entry of ``part`` (module, class or line), or None."""
        shares = {"module": self.overhead_by_module, "class": self.overhead_by_class, "line": self.overhead_by_line}[part]
        return next((share for share in shares if share.part == part), None)

    def __repr__(self) -> str:
        if not self.overhead_by_module:
            return f"Attribution({self.attribution_note or 'nothing attributed'})"
        shown = [f"{part} {top.name} {top.pct_of_estimate:.0f}%" for part in ("module", "line") if (top := self.top(part))]
        return f"Attribution(top {', top '.join(shown)} of the estimated overhead)"
