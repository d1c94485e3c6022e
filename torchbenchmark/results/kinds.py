"""The vocabulary of results: modes, statuses, verdicts, comparison calls, the marks' thresholds, and the
base every result dataclass shares for its JSON."""

from __future__ import annotations

import enum
from typing import Any

from torchbenchmark.results.codec import decode_object, encode

MODES = ("train", "eval")
PHASES = ("forward", "backward", "optimizer")  # the record_function labels of a step, pinned
EAGER = "eager"  # the variant of a row that runs the model as it is


class Status(enum.StrEnum):
    """How a case ended; its value is its name in lower case (``ok``, ``failed``, ...)."""

    OK = enum.auto()
    FAILED = enum.auto()
    TIMEOUT = enum.auto()
    SKIPPED = enum.auto()  # the model declined the mode, or the variant does not apply
    INTERRUPTED = enum.auto()


FAILURES = (Status.FAILED, Status.TIMEOUT)


class Verdict(enum.StrEnum):
    """What limits a step: from the highest overhead share to the lowest, or (on a CPU) what it waits for."""

    DISPATCH_BOUND = "dispatch-bound"
    MIXED = "mixed"
    COMPUTE_BOUND = "compute-bound"
    BLOCKED = "blocked"  # off the CPU half the step or more: neither faster kernels nor fewer ops help


class Call(enum.StrEnum):
    """What ``compare`` calls a case, in the order a comparison lists them: regressions first."""

    SLOWER = "slower"
    NEW_FAILURE = "new failure"
    INCONCLUSIVE = "inconclusive"  # the measurement could not see a slowdown worth gating on
    FASTER = "faster"
    FIXED = "fixed"
    VERDICT_CHANGED = "verdict changed"
    SAME = "same"
    NOT_COMPARED = "not compared"
    ONLY_IN_BASE = "only in base"
    ONLY_IN_NEW = "only in new"


REGRESSIONS = (Call.SLOWER, Call.NEW_FAILURE)


# An ok row's figure is not to be trusted when its steps' interquartile range exceeds this share of
# their median: its steps disagree by more than the differences a comparison would look for.
UNTRUSTWORTHY_IQR_FRACTION = 0.25
# Fewer measured steps than this give no spread worth the name (one step reads as IQR 0).
MIN_STEPS_FOR_SPREAD = 3
# Contended: other work on the machine stretched so many steps (their threads waited for a CPU) that
# fewer than this share of them, or fewer than MIN_STEPS_FOR_SPREAD, ran clean (analyze.timesplit).
MIN_CLEAN_FRACTION = 0.2
# Contended also needs waits worth the name: a row's threads waited at least this share of its measured
# (or profiled) steps for a CPU. Quiet, they waited at most 1.3% of the measured steps and 3.5% of the
# profiled ones, where a long step's few profiled steps can each pass CLEAN_WAIT_FRACTION; loaded, 92% and
# more (benchmarks/RESULTS.md, Marks quality).
CONTENDED_WAIT_PCT = 5.0
# Other processes' CPU time, in % of the machine's, above which a row's machine was shared (TimeSplit.shared).
# Information, not a mark: only the case's own disturbance marks it (its threads' waits, its steps', windows'
# or processes' spread). Beside other work a step may run slower without waiting (a hardware sibling of its
# core, shared caches), which no mark can tell from the code's own pace; two runs beside like work compare alike.
OTHER_WORK_AT_PCT = 25.0
# A case's processes (--repeat, --pool) disagree when their medians spread, (max - min) / median, beyond this
# share: as for steps, by more than the differences a comparison would look for.
PROCESSES_APART_FRACTION = 0.25
# A row's prices were read under load when its calibration's median call, or the gap a call leaves, lies above
# the least repeat's, (median - least) / median, by more than this share: a spell slowed at least half its repeats.
# Over 87 calibrations of nine repeats (two runs of benchmarks/RESULTS.md's Verdict accuracy) 84 read at most 8.8%,
# and three 21 to 34%, in spells of load; over 86 of two later runs the call at most 14.9%, the gap at most 7.4%.
# The lower quartile in the least's place missed a spell over seven repeats of nine (1.4%: calls at 1.32 to
# 1.48 µs, the other two at 0.88), its row 1.9 times its twin's overhead.
CALIBRATION_SPREAD_FRACTION = 0.15
# A row's two readings of its glue lie apart when the replayed gap lies above the real steps' by more than this
# share. Each reading only adds to the glue and the estimate takes the lesser, so a replay slowed by load moves no
# figure: the mark is for a real gap read low (a wait taken out of it that was no sleep; hf_GPT2 train's once read
# 929 µs against 10,481 as it ran). Where the arithmetic leaves the glue warm, the replay's own Python puts its gap
# some 10% above the real one (pyhpc; benchmarks/RESULTS.md, "Warm replay").
REPLAY_ABOVE_REAL_FRACTION = 0.50
GAP_FLOOR_US = 10.0  # a real gap under this reads as this in the share: a few µs either way is no reading apart
# An RNN layer's kinds (``dispatch.events_per_step``) and the part of its call each prices: the layer's set-up,
# forward and backward, and the time steps it steps through. Each costs something (lstm_lm's rows read set-ups
# of 29 to 104 µs and time steps of 0.22 to 2.1 µs), so a step that ran some at a price of nil had the line its
# prices are read from, through a loop over 1 time step and one over 33, read under load (beside other work,
# in one turn of the loops).
RNN_KINDS = {"rnn": "set-up", "rnn_backward": "set-up", "rnn_step": "time steps", "rnn_backward_step": "time steps"}
TIME_STEP_KINDS = tuple(kind for kind, part in RNN_KINDS.items() if part == "time steps")


def format_ms(value: float) -> str:
    """Three significant figures and never scientific notation: step times span 0.01 ms to seconds."""
    if abs(value) < 1:
        return f"{value:.3g}" if value == 0 or abs(value) >= 1e-4 else f"{value:.6f}".rstrip("0")
    return f"{value:.{max(0, 3 - len(str(int(abs(value)))))}f}"


class Record:
    """JSON in and out through ``results.codec``, for every dataclass of the schema."""

    def to_dict(self) -> dict[str, Any]:
        return encode(self)  # type: ignore[no-any-return]

    @classmethod
    def from_dict(cls, data: Any, where: str = "") -> Any:
        return decode_object(cls, data, where)


def summed(wait_pct: float) -> str:
    """What a wait above 100% of the step is: the waits of several threads at once, added up."""
    return ", summed over its threads" if wait_pct > 100.5 else ""
