"""The parts of a variant's row: what compiling made of the module, and how a precision or layout variant ran
and compared with eager."""

from __future__ import annotations

import dataclasses

from torchbenchmark.results.codec import AT_LEAST_ONE, NON_NEGATIVE, POSITIVE, json_field
from torchbenchmark.results.kinds import Record


@dataclasses.dataclass(frozen=True)
class GraphBreak(Record):
    reason: str  # dynamo's one-line reason
    where: str  # file:line in the user's code
    count: int = json_field(bound=AT_LEAST_ONE)  # times it was hit while compiling


@dataclasses.dataclass(frozen=True)
class CompileReport(Record):
    """What compiling cost and what dynamo made of the module. ``speedup_rounds``: each window pair's ratio."""

    backend: str
    mode: str
    compile_time_s: float = json_field(bound=NON_NEGATIVE)
    graphs: int = json_field(bound=NON_NEGATIVE)
    graph_breaks: int = json_field(bound=NON_NEGATIVE)
    break_reasons: tuple[GraphBreak, ...]
    recompiles: int = json_field(bound=NON_NEGATIVE)
    speedup_rounds: tuple[float, ...] = json_field(default=(), bound=POSITIVE)


@dataclasses.dataclass(frozen=True)
class Accuracy(Record):
    """A precision or layout variant's first step against eager's on the same inputs and weights."""

    compared: str  # "eval outputs" or "train loss"; "" when not checked
    max_rel_error: float | None = json_field(default=None, bound=NON_NEGATIVE)  # max |variant - eager| / max |eager|, per tensor
    tolerance: float | None = json_field(default=None, bound=NON_NEGATIVE)  # the precision's (measure.precision.TOLERANCES)
    not_checked: str | None = None  # why there was nothing to compare
    finite: bool = True  # False: the variant's outputs hold inf or NaN where eager's do not

    @property
    def differs(self) -> bool:
        beyond = self.max_rel_error is not None and self.tolerance is not None and self.max_rel_error > self.tolerance
        return beyond or not self.finite


@dataclasses.dataclass(frozen=True)
class RemedyReport(Record):
    """A reduced-precision or channels_last variant (row key ``remedy``): what ran, how natively, how close to eager.

    ``speedup_rounds``: eager over variant median step time of each window pair, taken in turn in one process.
    """

    precision: str | None  # amp-bf16, amp-fp16, bf16; None: float32
    channels_last: bool
    dtype: str | None  # the precision's arithmetic type (bfloat16, float16), whose peak pct_of_peak is of
    support: str | None  # "native (...)" or "emulated: ..." on this device; None for float32
    grad_scaler: bool  # fp16 on CUDA: the train step's loss scaled, as torch.amp.GradScaler does
    accuracy: Accuracy
    speedup_rounds: tuple[float, ...] = json_field(default=(), bound=POSITIVE)

    @property
    def emulated(self) -> bool:
        return bool(self.support and self.support.startswith("emulated"))

    @property
    def marks(self) -> tuple[str, ...]:
        """What a reader must know beside the row's figures: outputs that differ, an emulated precision, no check."""
        accuracy, marks = self.accuracy, []
        if not accuracy.finite:
            marks.append("outputs differ from eager: the variant's hold inf or NaN")
        elif accuracy.differs:
            marks.append(f"outputs differ from eager: max relative error {accuracy.max_rel_error:.2g} (tolerance {accuracy.tolerance:g})")
        if accuracy.not_checked:
            marks.append(f"accuracy not checked: {accuracy.not_checked}")
        if self.emulated:
            marks.append(f"{self.dtype} {self.support}")
        return tuple(marks)
