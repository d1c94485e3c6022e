"""What a diagnostics case is: ``CaseResult``, one row of the summary, made of the parts in ``results.parts``.

Its JSON form is the pinned summary.json row. This module is where the results' names are imported from.
"""

from __future__ import annotations

import dataclasses
import statistics
from typing import Any, ClassVar, Protocol

from torchbenchmark.results.codec import AT_LEAST_ONE, NON_NEGATIVE, POSITIVE, SchemaError, decode_object, json_field
from torchbenchmark.results.kinds import (
    CALIBRATION_SPREAD_FRACTION,
    EAGER,
    FAILURES,
    MIN_CLEAN_FRACTION,
    MIN_STEPS_FOR_SPREAD,
    MODES,
    OTHER_WORK_AT_PCT,
    PHASES,
    PROCESSES_APART_FRACTION,
    REGRESSIONS,
    REPLAY_ABOVE_REAL_FRACTION,
    RNN_KINDS,
    UNTRUSTWORTHY_IQR_FRACTION,
    Call,
    Record,
    Status,
    Verdict,
    format_ms,
)
from torchbenchmark.results.parts import (
    Attribution,
    Costs,
    Dispatch,
    Distortion,
    Distributed,
    GpuEvidence,
    Instructions,
    Measurement,
    OverheadBound,
    OverheadShare,
    RankFigures,
    Samples,
    Scaling,
    StepTime,
    TimeSplit,
    TopOp,
    Traces,
    Warmup,
    enough_clean,
)
from torchbenchmark.results.variant_parts import Accuracy, CompileReport, GraphBreak, RemedyReport

# The headline names the module holding most of the overhead only where the overhead is this share of the step
# or more, and the module this share of the estimate (a module of 1% of an overhead of 0.1% names nothing).
HEADLINE_OVERHEAD_AT = 0.05
HEADLINE_MODULE_AT = 10.0


class Case(Protocol):
    """What keys a case's row: a ``CaseSpec`` has it."""

    @property
    def model(self) -> str: ...
    @property
    def mode(self) -> str: ...
    @property
    def device(self) -> str: ...
    @property
    def variant(self) -> str: ...


@dataclasses.dataclass(frozen=True)
class CaseResult(Record):
    """One model x mode x device x variant: its status, and its figures when it ran. One row of the summary."""

    # Written into the JSON beside the fields for its readers (a CI script need not re-derive the marks), and
    # recomputed from the fields when read, so a row's marks are always its own figures'.
    JSON_DERIVED: ClassVar[tuple[str, ...]] = ("untrustworthy_reasons",)

    model: str
    mode: str
    device: str
    status: Status
    variant: str = EAGER  # eager, or the variant's name: part of the row's key
    run_id: str | None = None  # the run record this row came from
    batch_size: int | None = json_field(default=None, bound=AT_LEAST_ONE)
    error: str | None = None  # one line: why the case did not end ok
    family: str | None = None
    step_time: StepTime | None = json_field(key="step_time_ms", default=None)
    distortion: Distortion = json_field(key="profiler_distortion_pct", default=Distortion())
    edge_distortion_pct: float | None = None
    phases_pct: dict[str, float] | None = json_field(default=None, bound=NON_NEGATIVE)  # None: unannotated
    dispatch: Dispatch | None = None
    gpu_busy_pct: float | None = json_field(default=None, bound=NON_NEGATIVE)
    gpu: GpuEvidence | None = None  # None on a CPU
    top_ops: tuple[TopOp, ...] = ()
    traces: Traces = Traces()
    log: str | None = None  # the case's full log, relative to the output folder
    warmup: Warmup = Warmup()
    measurement: Measurement = Measurement()
    time_split: TimeSplit | None = None  # what the kernel saw of the measured steps; None where not measured
    timings_s: dict[str, float] = json_field(default_factory=dict, bound=NON_NEGATIVE)  # where the wall time went
    samples: Samples = Samples()
    compile: CompileReport | None = None  # a compiled variant's row: what compiling cost and made
    speedup_vs_eager: float | None = json_field(default=None, bound=POSITIVE)  # from windows in one process
    remedy: RemedyReport | None = json_field(omit_none=True, default=None)  # a precision or channels_last variant's row
    costs: Costs | None = json_field(inline=True, default=None)
    bound: OverheadBound | None = json_field(inline=True, default=None)  # what removing the overhead would buy
    attribution: Attribution | None = json_field(inline=True, default=None)  # where the overhead lives
    distributed: Distributed | None = json_field(omit_none=True, default=None)  # --ddp N only
    instructions: Instructions | None = None  # --instructions only: the step's instructions, counted
    extra: dict[str, Any] = json_field(extra=True, default_factory=dict)  # keys this version does not know: kept

    def __post_init__(self) -> None:
        if not isinstance(self.status, Status):
            object.__setattr__(self, "status", Status(self.status))

    @property
    def key(self) -> tuple[str, str, str, str]:
        """What identifies a case across runs: a later row with the same key supersedes an earlier one."""
        return (self.model, self.mode, self.device, self.variant)

    @property
    def untrustworthy_reasons(self) -> tuple[str, ...]:
        """Why this row's step time is not to be trusted; empty when it is (or when it has none)."""
        reasons = []
        if self.warmup.steady is False:
            reasons.append("warmup not steady")
        if self.measurement.agree is False:
            apart = "" if self.measurement.diff_pct is None else f" {self.measurement.diff_pct:.0f}%"
            reasons.append(f"noisy: windows{apart} apart")
        step = self.step_time
        if step is not None:
            split = self.time_split
            if step.iqr_ms > UNTRUSTWORTHY_IQR_FRACTION * step.median_ms:
                reasons.append(f"IQR {100 * step.iqr_ms / step.median_ms:.0f}% of the median")
            elif split is not None and (split.unwaited_iqr_pct or 0) > 100 * UNTRUSTWORTHY_IQR_FRACTION:
                left = split.steps_measured - split.steps_kept
                reasons.append(f"IQR {split.unwaited_iqr_pct:.0f}% of the median counting the {left} steps left out, their waits taken off")
            if step.n < MIN_STEPS_FOR_SPREAD:
                reasons.append(f"only {step.n} step{'' if step.n == 1 else 's'} measured: no spread")
        if (apart := processes_apart(self.samples.process_medians_ms)) > PROCESSES_APART_FRACTION:
            reasons.append(f"noisy: processes {100 * apart:.0f}% apart")
        if self.time_split is not None:
            reasons.extend(self.time_split.contended)
        if self.dispatch is not None:  # the estimate's own readings: its prices, its replayed gap
            spread, above = self.dispatch.calibration_spread_pct or 0.0, self.dispatch.replay_above_real or 0.0
            if spread > 100 * CALIBRATION_SPREAD_FRACTION:
                reasons.append(f"prices read under load: the calibration's median {spread:.0f}% above its least repeat")
            if above > REPLAY_ABOVE_REAL_FRACTION:
                reasons.append(f"gaps read apart: the replayed step's {100 * above:.0f}% above the real steps'")
            events, prices = self.dispatch.events_per_step or {}, self.dispatch.prices_us or {}
            if nil := dict.fromkeys(part for kind, part in RNN_KINDS.items() if events.get(kind) and not prices.get(f"{kind}_us")):
                reasons.append(f"RNN prices read under load: its {' and '.join(nil)} priced at nil")
        return tuple(reasons)

    def headline(self, compact: bool = False) -> str:
        """One readable line: the case, then its figures or why it has none, and whether to trust them;
        ``compact``: for a terminal line, in fewer words, without the spread, the module and the FLOPs, and with
        the marks' count and the first of them (the line may be cut at its end)."""
        head = f"{self.model} {self.mode} {self.device}" + ("" if self.variant == EAGER else f" {self.variant}")
        if self.batch_size is not None:
            head += f" bs={self.batch_size}"
        if self.status != Status.OK or self.step_time is None:
            return f"{head}: {self.status}" + (f" ({self.error})" if self.error else "")
        figures = f"{format_ms(self.step_time.median_ms)} ms/step"
        figures += "" if compact else f" (IQR {format_ms(self.step_time.iqr_ms)} ms)"
        if self.dispatch is not None:
            figures += f", {self.dispatch.verdict} " + ("" if compact else "(overhead ") + f"{self.dispatch.overhead_fraction:.0%}"
            if self.dispatch.verdict == Verdict.BLOCKED and self.time_split is not None:
                figures += f", blocked {self.time_split.blocked_pct:.0f}%"
            figures += (" borderline" if compact else ", borderline") if self.dispatch.borderline else ""
            figures += "" if compact else ")"
        if self.bound is not None:
            low, high = self.bound.speedup_bound_range
            shown = "" if compact or low == high else f" ({low:.3g}x to {high:.3g}x)"
            figures += f", {'bound' if compact else 'removing it bounds'} {self.bound.speedup_bound:.3g}x{shown}"
        if not compact and (top := self._top_module()) is not None:
            figures += f", most in {top.name} ({top.pct_of_estimate:.0f}%)"
        if self.speedup_vs_eager is not None:
            figures += f", {self.speedup_vs_eager:.2f}x eager"
            if self.compile is not None and self.compile.graphs == 0:
                figures += " (nothing compiled: it ran eager)"
        if reasons := self.untrustworthy_reasons:
            count = f" ({len(reasons)})" if compact and len(reasons) > 1 else ""
            figures += f"; UNTRUSTWORTHY{count}: {'; '.join(reasons[:1] if compact else reasons)}"
        if not compact and self.costs is not None and self.costs.flops_partial:
            figures += f"; FLOPs partial, not counted: {', '.join(self.costs.flops_uncounted)}"
        return f"{head}: {figures}"

    def _top_module(self) -> OverheadShare | None:
        """The module holding most of the overhead, where that says something: a share of the step worth
        removing (``HEADLINE_OVERHEAD_AT``) and of the estimate worth naming (``HEADLINE_MODULE_AT``)."""
        if self.attribution is None or self.dispatch is None or self.dispatch.overhead_fraction < HEADLINE_OVERHEAD_AT:
            return None
        top = self.attribution.top("module")
        return top if top is not None and top.pct_of_estimate >= HEADLINE_MODULE_AT else None

    def __repr__(self) -> str:
        """The headline, and what the estimate's overhead is made of (``Dispatch.terms_us``)."""
        return f"CaseResult({self.headline()}{'; ' + terms_text(self) if terms_text(self) else ''})"

    @classmethod
    def failed(
        cls, spec: Case, error: str | None = None, status: Status = Status.FAILED, model: str | None = None, device: str | None = None
    ) -> CaseResult:
        """The row of ``spec``'s case where it got no further than ``error``, keyed as the case (its variant
        included); ``model`` and ``device``: the names the row goes by, where they are not the spec's."""
        return cls(model or spec.model, spec.mode, device or spec.device, status, error=error, variant=spec.variant)

    @classmethod
    def from_dict(cls, data: Any, where: str = "") -> CaseResult:
        if isinstance(data, dict):
            missing = [name for name in ("model", "mode", "device", "status") if not isinstance(data.get(name), str)]
            if missing:
                shown = " ".join(str(data.get(name, "?")) for name in ("model", "mode", "device"))
                raise SchemaError(f"{where or 'row ' + shown} has no {', '.join(missing)}")
        return decode_object(cls, data, where)  # type: ignore[no-any-return]


def terms_text(row: CaseResult) -> str:
    """``overhead 212 µs a step = call 120 + nested 40 + python 52``; blank for a row without terms."""
    terms = row.dispatch.terms_us if row.dispatch is not None else None
    if not terms:
        return ""
    return f"overhead {sum(terms.values()):.3g} µs a step = " + " + ".join(f"{name} {us:.3g}" for name, us in terms.items())


def processes_apart(medians_ms: tuple[float, ...]) -> float:
    """How far a case's processes' medians spread: (max - min) / median; 0 for fewer than two processes."""
    return (max(medians_ms) - min(medians_ms)) / statistics.median(medians_ms) if len(medians_ms) > 1 else 0.0


def sort_rows(rows: Any) -> list[CaseResult]:
    """Rows by model (case-insensitively), mode, device, then eager before other variants."""
    return sorted(rows, key=lambda r: (r.model.lower(), r.mode, r.device, r.variant != EAGER, r.variant))


def tally(rows: Any) -> str:
    """``2 failed, 5 ok``: how many rows have each status."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[str(row.status)] = counts.get(str(row.status), 0) + 1
    return ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "none"


__all__ = [
    "EAGER", "FAILURES", "MIN_CLEAN_FRACTION", "MIN_STEPS_FOR_SPREAD", "MODES", "OTHER_WORK_AT_PCT", "PHASES", "REGRESSIONS",
    "PROCESSES_APART_FRACTION", "UNTRUSTWORTHY_IQR_FRACTION", "Accuracy", "Attribution", "Call", "CaseResult", "CompileReport", "Costs", "Dispatch",
    "Distortion", "Distributed", "GpuEvidence", "GraphBreak", "Instructions", "Measurement", "OverheadBound", "OverheadShare", "RankFigures",
    "Record", "RemedyReport", "Samples", "Scaling", "Status", "StepTime", "TimeSplit", "TopOp", "Traces", "Verdict", "Warmup",
    "enough_clean", "format_ms", "sort_rows", "tally",
]  # fmt: skip
