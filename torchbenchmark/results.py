"""What a diagnostics case is: frozen result dataclasses and their JSON form (the pinned summary.json row)."""

from __future__ import annotations

import dataclasses
from typing import Any

from torchbenchmark.contract import PHASES

STATUSES = ("ok", "failed", "timeout", "skipped", "interrupted")

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

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.model, self.mode, self.device)

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
        head = f"{self.model} {self.mode} {self.device}"
        if self.batch_size is not None:
            head += f" bs={self.batch_size}"
        if self.status != "ok" or self.step_time is None:
            return f"{head}: {self.status}" + (f" ({self.error})" if self.error else "")
        figures = f"{format_ms(self.step_time.median_ms)} ms/step (IQR {format_ms(self.step_time.iqr_ms)} ms)"
        if self.dispatch is not None:
            figures += f", {self.dispatch.verdict} (overhead {self.dispatch.overhead_fraction:.0%})"
        reasons = self.untrustworthy_reasons
        if reasons:
            figures += f"; UNTRUSTWORTHY: {'; '.join(reasons)}"
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
        )
