"""What a diagnostics case is: frozen result dataclasses and their JSON form (the pinned summary.json row)."""

from __future__ import annotations

import dataclasses
from typing import Any

from torchbenchmark.contract import PHASES

STATUSES = ("ok", "failed", "timeout", "skipped", "interrupted")


def _from_fields(cls: type, data: dict[str, Any]) -> Any:
    """A flat dataclass from the dict its ``asdict`` gave."""
    return cls(**{field.name: data[field.name] for field in dataclasses.fields(cls)})


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

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Dispatch:
    """The verdict and the evidence it rests on."""

    verdict: str  # dispatch-bound, mixed or compute-bound
    overhead_fraction: float
    ops_per_step: float
    median_op_us: float
    per_op_overhead_us: float  # the calibrated cost of a trivial op on this machine

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


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
    top_ops: tuple[TopOp, ...] = ()
    traces: dict[str, str | None] = dataclasses.field(default_factory=lambda: {"light": None, "detailed": None})
    log: str | None = None  # path of the case's full log, relative to the output folder
    warmup_steps: int | None = None
    steady: bool | None = None
    windows: int | None = None  # measurement windows taken: see harness.measure_windows
    window_diff_pct: float | None = None  # between the medians of the two windows kept
    windows_agree: bool | None = None  # False: no two windows agreed, the machine was too noisy to trust
    timings_s: dict[str, float] = dataclasses.field(default_factory=dict)  # where the case's wall time went
    costs: Costs | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.model, self.mode, self.device)

    def headline(self) -> str:
        """One readable line: the case, then its figures or why it has none."""
        head = f"{self.model} {self.mode} {self.device}"
        if self.batch_size is not None:
            head += f" bs={self.batch_size}"
        if self.status != "ok" or self.step_time is None:
            return f"{head}: {self.status}" + (f" ({self.error})" if self.error else "")
        figures = f"{self.step_time.median_ms:.4g} ms/step (IQR {self.step_time.iqr_ms:.2g})"
        if self.dispatch is not None:
            figures += f", {self.dispatch.verdict} (overhead {self.dispatch.overhead_fraction:.0%})"
        return f"{head}: {figures}"

    def __repr__(self) -> str:
        return f"CaseResult({self.headline()})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "mode": self.mode,
            "device": self.device,
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
            "top_ops": [op.to_dict() for op in self.top_ops],
            "traces": dict(self.traces),
            "log": self.log,
            "warmup": {"steps": self.warmup_steps, "steady": self.steady},
            "measurement": {"windows": self.windows, "diff_pct": self.window_diff_pct, "agree": self.windows_agree},
            "timings_s": dict(self.timings_s),
            **(dataclasses.asdict(self.costs) if self.costs else dict.fromkeys(_COST_FIELDS)),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CaseResult:
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
            dispatch=_from_fields(Dispatch, data["dispatch"]) if data.get("dispatch") else None,
            gpu_busy_pct=data.get("gpu_busy_pct"),
            top_ops=tuple(_from_fields(TopOp, op) for op in data.get("top_ops") or ()),
            traces=dict(data.get("traces") or {"light": None, "detailed": None}),
            log=data.get("log"),
            warmup_steps=warmup.get("steps"),
            steady=warmup.get("steady"),
            windows=measurement.get("windows"),
            window_diff_pct=measurement.get("diff_pct"),
            windows_agree=measurement.get("agree"),
            timings_s=dict(data.get("timings_s") or {}),
            costs=Costs.from_dict(data),
        )
