"""What a diagnostics case is: frozen result dataclasses and their JSON form (the pinned summary.json row)."""

from __future__ import annotations

import dataclasses
from typing import Any

from torchbenchmark.contract import PHASES

STATUSES = ("ok", "failed", "timeout", "skipped", "interrupted")
REQUIRED = ("model", "mode", "device", "status")  # a row without these cannot be placed or read


class InvalidRow(ValueError):
    """A row that does not follow the summary.json row format; the message says what is wrong."""

# An ok row's figure is not to be trusted when its steps' interquartile range exceeds this share of
# their median: its steps disagree by more than the differences a comparison would look for.
UNTRUSTWORTHY_IQR_FRACTION = 0.25
# Fewer measured steps than this give no spread worth the name (one step reads as IQR 0).
MIN_STEPS_FOR_SPREAD = 3


def format_ms(value: float) -> str:
    """Three significant figures and never scientific notation: step times span 0.01 ms to seconds."""
    if abs(value) < 1:
        return f"{value:.3g}" if value == 0 or abs(value) >= 1e-4 else f"{value:.6f}".rstrip("0")
    return f"{value:.{max(0, 3 - len(str(int(abs(value)))))}f}"


def _from_fields(cls: type, data: dict[str, Any]) -> Any:
    """A flat dataclass from the dict its ``asdict`` gave; a field an older row lacks keeps its default."""
    return cls(**{field.name: data[field.name] for field in dataclasses.fields(cls) if field.name in data})


@dataclasses.dataclass(frozen=True)
class StepTime:
    median_ms: float
    iqr_ms: float
    min_ms: float
    n: int

    def to_dict(self) -> dict[str, Any]:
        return {"median": self.median_ms, "iqr": self.iqr_ms, "min": self.min_ms, "n": self.n}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StepTime:
        return cls(median_ms=data["median"], iqr_ms=data["iqr"], min_ms=data["min"], n=data["n"])


@dataclasses.dataclass(frozen=True)
class TopOp:
    """An op's share of the profiled step, by self time (its own time, not its children's)."""

    name: str
    self_ms_per_step: float
    calls_per_step: float
    pct_of_step: float
    kernel_ms_per_step: float | None = None  # GPU time of the kernels and copies it launched; None on a CPU

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Scaling:
    """Overhead by batch-size scaling: step time = intercept + slope * batch, fitted over several batches.

    The intercept is the step's batch-independent time: the overhead and any arithmetic that does not
    grow with the batch (weight updates), so its share of the step is an upper bound on the overhead's.
    """

    batch_sizes: tuple[int, ...]
    step_ms: tuple[float, ...]  # median step time at each batch size
    intercept_ms: float
    fraction_upper: float  # intercept over the step time at the case's batch size
    agrees: bool  # whether the event-based estimate is consistent with it (torchbenchmark.dispatch.AGREEMENT_*)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Scaling:
        fields = dict(data, batch_sizes=tuple(data["batch_sizes"]), step_ms=tuple(data["step_ms"]))
        return _from_fields(cls, fields)


@dataclasses.dataclass(frozen=True)
class Dispatch:
    """The verdict and the evidence it rests on."""

    verdict: str  # dispatch-bound, mixed or compute-bound
    overhead_fraction: float
    ops_per_step: float
    median_op_us: float
    per_op_overhead_us: float  # the calibrated cost of a trivial top-level call on this machine
    # The pricing behind overhead_fraction (torchbenchmark.dispatch): uncapped, with its spread.
    overhead_fraction_uncapped: float | None = None
    overhead_interval: tuple[float, float] | None = None  # lowest, highest fraction the spreads allow
    borderline: bool = False  # the interval crosses a verdict threshold
    events_per_step: dict[str, float] | None = None  # call, nested, autograd
    prices_us: dict[str, float] | None = None  # per event of each kind, and call_gap_us
    python_us_per_step: float | None = None  # Python time that made no event
    cold_factor: float | None = None  # how much slower Python ran after a step than after an empty one
    scaling: Scaling | None = None  # the second estimate, by batch-size scaling, when asked for

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Dispatch:
        fields = dict(data)
        if fields.get("overhead_interval") is not None:
            fields["overhead_interval"] = tuple(fields["overhead_interval"])
        if fields.get("scaling") is not None:
            fields["scaling"] = Scaling.from_dict(fields["scaling"])
        return _from_fields(cls, fields)


@dataclasses.dataclass(frozen=True)
class GpuEvidence:
    """What the GPU did in a step of the light profile, and which side limits the step (row key ``gpu``)."""

    limited_by: str  # "cpu" (the GPU waits on the host), "gpu" (the host waits on the GPU) or "both"
    busy_pct: float  # kernel and copy time per profiled step, overlaps once, in percent of the unprofiled median step
    host_wait_pct: float  # host time blocked in syncs per profiled step, in percent of the profiled step
    median_launch_wait_us: float  # from a kernel's launch call to its start: long when kernels queue
    kernel_ms_per_step: float
    kernels_per_step: float

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Samples:
    """The raw material a comparison of runs needs, beside the summary figures.

    Steps within one process are not independent samples (a process keeps its memory layout and its
    share of a load spell for its life), so the unit of replication is the process: one median per
    process the case ran in (``--repeat``), and the median of every measurement window it took.
    """

    process_medians_ms: tuple[float, ...] = ()
    window_medians_ms: tuple[tuple[float, ...], ...] = ()  # per process, its windows in the order taken

    def __add__(self, other: Samples) -> Samples:
        """The processes of both, these first: one case's samples over several processes or runs."""
        return Samples(self.process_medians_ms + other.process_medians_ms, self.window_medians_ms + other.window_medians_ms)

    def to_dict(self) -> dict[str, Any]:
        return {"process_medians_ms": list(self.process_medians_ms),
                "window_medians_ms": [list(windows) for windows in self.window_medians_ms]}  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Samples:
        groups = data.get("window_medians_ms") or ()
        if groups and all(isinstance(group, (int, float)) for group in groups):  # one flat list: one process's
            groups = (groups,)
        windows = tuple(tuple(group) for group in groups)
        return cls(tuple(data.get("process_medians_ms") or ()), windows)


@dataclasses.dataclass(frozen=True)
class GraphBreak:
    reason: str  # dynamo's one-line reason
    where: str  # file:line in the user's code
    count: int  # times it was hit while compiling


@dataclasses.dataclass(frozen=True)
class CompileReport:
    """What compiling cost and what dynamo made of the module. ``speedup_rounds``: each window pair's ratio."""

    backend: str
    mode: str
    compile_time_s: float
    graphs: int
    graph_breaks: int
    break_reasons: tuple[GraphBreak, ...]
    recompiles: int
    speedup_rounds: tuple[float, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CompileReport:
        reasons = tuple(GraphBreak(**item) for item in data.get("break_reasons") or ())
        return cls(**{**data, "break_reasons": reasons, "speedup_rounds": tuple(data.get("speedup_rounds") or ())})


# A DDP step that waits on collectives (exposed communication) for this share of its time is bound by
# them, as a step with this share of per-op overhead is bound by dispatch (torchbenchmark/dispatch.py).
COMM_BOUND_PCT = 50.0
COMM_PARTLY_PCT = 20.0


@dataclasses.dataclass(frozen=True)
class RankFigures:
    """One rank of a DistributedDataParallel case: its own step time and what its trace says."""

    rank: int
    host: str
    step_median_ms: float
    comm_pct: float  # share of the profiled step with a collective running on this rank
    exposed_comm_pct: float  # share of the step in collectives while the step's thread ran no op
    trace: str  # relative to the output folder


@dataclasses.dataclass(frozen=True)
class Distributed:
    """A train case run as DistributedDataParallel: how its ranks' steps compare and where comms went."""

    world_size: int
    backend: str  # gloo on the CPU, nccl on CUDA
    nodes: int  # distinct hosts among the ranks
    ranks: tuple[RankFigures, ...]
    skew_pct: float  # slowest rank's median step over the fastest's, less 1, in percent
    comm_pct: float  # mean over ranks
    exposed_comm_pct: float  # mean over ranks: communication the step waited for
    overlap_pct: float  # share of communication time hidden behind compute (the backward pass), mean over ranks
    comm_overlaps_backward: bool  # overlap_pct at least torchbenchmark.distributed.OVERLAP_THRESHOLD_PCT

    @property
    def reading(self) -> str:
        """What bounds the DDP step beside the dispatch verdict: the collectives it waits for, or not."""
        if self.exposed_comm_pct >= COMM_BOUND_PCT:
            return "communication-bound"
        return "partly communication-bound" if self.exposed_comm_pct >= COMM_PARTLY_PCT else "compute"

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["step_time_ms_per_rank"] = [rank.step_median_ms for rank in self.ranks]
        data["reading"] = self.reading
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Distributed:
        fields = {field.name for field in dataclasses.fields(cls)}  # "reading" and the per-rank list are derived
        ranks = tuple(_from_fields(RankFigures, rank) for rank in data["ranks"])
        return cls(**{**{key: data[key] for key in fields if key != "ranks"}, "ranks": ranks})


@dataclasses.dataclass(frozen=True)
class Costs:
    """What one step costs: arithmetic, memory and throughput (how each is measured: torchbenchmark/costs.py).

    Its fields sit at the top level of a summary.json row.
    """

    flops_per_step: int | None  # None when the step has no op the counter can count: flops_note says why
    flops_by_kind: dict[str, int]  # matmul, convolution, attention, recurrent, other
    flops_note: str | None  # why flops_per_step is None, or which compute ops it leaves out
    achieved_gflops: float | None  # flops_per_step / median step time
    pct_of_peak: float | None  # achieved_gflops in percent of the environment's peak_gflops
    compute_limit: str | None  # a compute-bound step's limit: kernels (low pct_of_peak) or arithmetic
    peak_memory_mb: float | None  # the most tensor memory live during a step on its device, in 10^6 bytes
    state_memory_mb: float | None  # of which live between steps (CPU only)
    memory_method: str | None
    peak_rss_mb: float | None  # the case's process's peak resident set size: not the step's memory
    samples_per_s: float | None  # batch size / median step time

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Costs | None:
        """The costs in a row, or None for a row that has none (not ok, or written before costs were)."""
        if all(data.get(field.name) is None for field in dataclasses.fields(cls)):
            return None
        return cls(**{field.name: data.get(field.name) for field in dataclasses.fields(cls)})


_COST_FIELDS = tuple(field.name for field in dataclasses.fields(Costs))


@dataclasses.dataclass(frozen=True)
class CaseResult:
    """One model x mode x device: its status, and its figures when it ran. One row of the summary."""

    model: str
    mode: str
    device: str
    status: str
    variant: str = "eager"  # eager, or the compiled variant's name: part of the row's key
    batch_size: int | None = None
    error: str | None = None  # one line: why the case did not end ok
    family: str | None = None
    step_time: StepTime | None = None
    light_distortion_pct: float | None = None
    detailed_distortion_pct: float | None = None
    edge_distortion_pct: float | None = None
    phases_pct: dict[str, float] | None = None  # None for an unannotated model
    dispatch: Dispatch | None = None
    gpu_busy_pct: float | None = None
    gpu: GpuEvidence | None = None  # None on a CPU
    top_ops: tuple[TopOp, ...] = ()
    traces: dict[str, str | None] = dataclasses.field(default_factory=lambda: {"light": None, "detailed": None})
    log: str | None = None  # path of the case's full log, relative to the output folder
    warmup_steps: int | None = None
    steady: bool | None = None
    windows: int | None = None  # measurement windows taken: see harness.measure_windows
    window_diff_pct: float | None = None  # between the medians of the two windows kept
    windows_agree: bool | None = None  # False: no two windows agreed, the machine was too noisy to trust
    timings_s: dict[str, float] = dataclasses.field(default_factory=dict)  # where the case's wall time went
    samples: Samples = Samples()
    compile: CompileReport | None = None  # a compiled variant's row: what compiling cost and made
    speedup_vs_eager: float | None = None  # eager over compiled step time, measured in the same process
    distributed: Distributed | None = None  # a DistributedDataParallel case (--ddp N) only
    run_id: str | None = None  # the run record this row came from
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)  # fields this version does not know: kept
    costs: Costs | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise InvalidRow(f"status must be one of {', '.join(STATUSES)}, got {self.status!r}")

    @property
    def key(self) -> tuple[str, str, str, str]:
        """What identifies a case across runs: a later row with the same key supersedes an earlier one."""
        return (self.model, self.mode, self.device, self.variant)

    @property
    def untrustworthy_reasons(self) -> tuple[str, ...]:
        """Why this row's step time is not to be trusted; empty when it is (or when it has none).

        Warmup that never settled, measurement windows that never agreed, an IQR above
        ``UNTRUSTWORTHY_IQR_FRACTION`` of the median, or fewer than ``MIN_STEPS_FOR_SPREAD`` steps.
        """
        reasons = []
        if self.steady is False:
            reasons.append("warmup not steady")
        if self.windows_agree is False:
            apart = "" if self.window_diff_pct is None else f" {self.window_diff_pct:.0f}%"
            reasons.append(f"noisy: windows{apart} apart")
        step = self.step_time
        if step is not None:
            if step.median_ms > 0 and step.iqr_ms > UNTRUSTWORTHY_IQR_FRACTION * step.median_ms:
                reasons.append(f"IQR {100 * step.iqr_ms / step.median_ms:.0f}% of the median")
            if step.n < MIN_STEPS_FOR_SPREAD:
                reasons.append(f"only {step.n} step{'' if step.n == 1 else 's'} measured: no spread")
        return tuple(reasons)

    def headline(self) -> str:
        """One readable line: the case, then its figures or why it has none, and whether to trust them."""
        head = f"{self.model} {self.mode} {self.device}" + ("" if self.variant == "eager" else f" {self.variant}")
        if self.batch_size is not None:
            head += f" bs={self.batch_size}"
        if self.status != "ok" or self.step_time is None:
            return f"{head}: {self.status}" + (f" ({self.error})" if self.error else "")
        figures = f"{format_ms(self.step_time.median_ms)} ms/step (IQR {format_ms(self.step_time.iqr_ms)} ms)"
        if self.dispatch is not None:
            figures += f", {self.dispatch.verdict} (overhead {self.dispatch.overhead_fraction:.0%}"
            figures += ", borderline)" if self.dispatch.borderline else ")"
        if self.speedup_vs_eager is not None:
            figures += f", {self.speedup_vs_eager:.2f}x eager"
        reasons = self.untrustworthy_reasons
        if reasons:
            figures += f"; UNTRUSTWORTHY: {'; '.join(reasons)}"
        return f"{head}: {figures}"

    def __repr__(self) -> str:
        return f"CaseResult({self.headline()})"

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.extra,
            "model": self.model,
            "mode": self.mode,
            "device": self.device,
            "variant": self.variant,
            "run_id": self.run_id,
            "batch_size": self.batch_size,
            "status": self.status,
            "error": self.error,
            "family": self.family,
            "step_time_ms": self.step_time.to_dict() if self.step_time else None,
            "profiler_distortion_pct": {"light": self.light_distortion_pct, "detailed": self.detailed_distortion_pct},
            "edge_distortion_pct": self.edge_distortion_pct,
            "phases_pct": self.phases_pct,
            "dispatch": self.dispatch.to_dict() if self.dispatch else None,
            "gpu_busy_pct": self.gpu_busy_pct,
            "gpu": self.gpu.to_dict() if self.gpu else None,
            "top_ops": [op.to_dict() for op in self.top_ops],
            "traces": dict(self.traces),
            "log": self.log,
            "warmup": {"steps": self.warmup_steps, "steady": self.steady},
            "measurement": {"windows": self.windows, "diff_pct": self.window_diff_pct, "agree": self.windows_agree},
            "timings_s": dict(self.timings_s),
            "samples": self.samples.to_dict(),
            "compile": self.compile.to_dict() if self.compile else None,
            "speedup_vs_eager": self.speedup_vs_eager,
            **(dataclasses.asdict(self.costs) if self.costs else dict.fromkeys(_COST_FIELDS)),
            **({"distributed": self.distributed.to_dict()} if self.distributed else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CaseResult:
        """A row from its JSON form; raises InvalidRow naming what is missing or wrong."""
        if not isinstance(data, dict):
            raise InvalidRow(f"a row must be a JSON object, got {type(data).__name__}")
        missing = [name for name in REQUIRED if not isinstance(data.get(name), str)]
        if missing:
            raise InvalidRow(f"row {_describe(data)} has no {', '.join(missing)}")
        try:
            return cls._from_dict(data)
        except InvalidRow as error:
            raise InvalidRow(f"row {_describe(data)}: {error}") from None
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise InvalidRow(f"row {_describe(data)}: malformed field ({type(error).__name__}: {error})") from None

    @classmethod
    def _from_dict(cls, data: dict[str, Any]) -> CaseResult:
        distortion = data.get("profiler_distortion_pct") or {}
        warmup = data.get("warmup") or {}
        measurement = data.get("measurement") or {}
        phases = data.get("phases_pct")
        return cls(
            model=data["model"],
            mode=data["mode"],
            device=data["device"],
            status=data["status"],
            batch_size=data.get("batch_size"),
            error=data.get("error"),
            family=data.get("family"),
            step_time=StepTime.from_dict(data["step_time_ms"]) if data.get("step_time_ms") else None,
            light_distortion_pct=distortion.get("light"),
            detailed_distortion_pct=distortion.get("detailed"),
            edge_distortion_pct=data.get("edge_distortion_pct"),
            phases_pct={phase: phases[phase] for phase in PHASES} if phases else None,
            dispatch=Dispatch.from_dict(data["dispatch"]) if data.get("dispatch") else None,
            gpu_busy_pct=data.get("gpu_busy_pct"),
            gpu=_from_fields(GpuEvidence, data["gpu"]) if data.get("gpu") else None,
            top_ops=tuple(_from_fields(TopOp, op) for op in data.get("top_ops") or ()),
            traces=dict(data.get("traces") or {"light": None, "detailed": None}),
            log=data.get("log"),
            warmup_steps=warmup.get("steps"),
            steady=warmup.get("steady"),
            windows=measurement.get("windows"),
            window_diff_pct=measurement.get("diff_pct"),
            windows_agree=measurement.get("agree"),
            timings_s=dict(data.get("timings_s") or {}),
            samples=Samples.from_dict(data.get("samples") or {}),
            distributed=Distributed.from_dict(data["distributed"]) if data.get("distributed") else None,
            variant=data.get("variant") or "eager",
            compile=CompileReport.from_dict(data["compile"]) if data.get("compile") else None,
            speedup_vs_eager=data.get("speedup_vs_eager"),
            run_id=data.get("run_id"),
            extra={key: value for key, value in data.items() if key not in _KNOWN_KEYS},
            costs=Costs.from_dict(data),
        )


def _describe(data: dict[str, Any]) -> str:
    return " ".join(str(data.get(name, "?")) for name in ("model", "mode", "device"))


# The keys CaseResult.to_dict writes; any other key of a row read back is kept in ``extra``.
_KNOWN_KEYS = frozenset(CaseResult(model="", mode="", device="", status="ok").to_dict()) | {"distributed"}
