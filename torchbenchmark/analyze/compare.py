"""Comparing two runs case by case: each case's calls by wall time and by counts, and a call a CI job can gate on.

Each case ok on both sides is called by its step times (``analyze.walltime``: slower or faster past the
threshold and outside noise, inconclusive where its measurement cannot see a slowdown of four thresholds)
and, where both sides counted instructions, by its counts (``analyze.counts``); a slowdown either sees
stands, and counts that see no change decide a case time could not. A side's marks (noisy, spread,
contended) are noted beside the call, not instead of it. Which ops moved (``with_op_diffs``): ``analyze.opdiff``.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from torchbenchmark.analyze.counts import (
    DEFAULT_INSTRUCTIONS_THRESHOLD_PCT,
    EVENTS_ROUNDING,
    InstructionsChange,
    combined_call,
    events_moved,
    events_note,
    instructions_change,
)
from torchbenchmark.analyze.opdiff import OpDiff, TraceOps, op_diff, read_trace_ops
from torchbenchmark.analyze.overhead import EVENT_KINDS
from torchbenchmark.analyze.pricing import INTERVAL_ENDS
from torchbenchmark.analyze.ratios import PROCESS_NOISE_FLOOR, RatioEstimate, calibration_drift, run_noise
from torchbenchmark.analyze.walltime import INCONCLUSIVE_BEYOND, Between, process_medians, row_verdict, wall_time
from torchbenchmark.results.codec import encode
from torchbenchmark.results.frames import dataframe
from torchbenchmark.results.records import Summary, changed, machine_fingerprint
from torchbenchmark.results.schema import FAILURES, REGRESSIONS, Call, CaseResult, Status

DEFAULT_THRESHOLD_PCT = 5.0
EXIT_INCONCLUSIVE = 3


@dataclasses.dataclass(frozen=True)
class CaseComparison:
    model: str
    mode: str
    device: str
    variant: str
    call: Call
    base_ms: float | None = None
    new_ms: float | None = None
    estimate: RatioEstimate | None = None
    base_status: Status | None = None
    new_status: Status | None = None
    base_verdict: str | None = None
    new_verdict: str | None = None
    notes: tuple[str, ...] = ()
    detectable_pct: float | None = None  # the smallest slowdown this case's measurement catches 9 times in 10
    ops: OpDiff | None = None  # which ops moved, from both sides' light traces (with_op_diffs)
    ops_note: str | None = None  # why a case whose ops were asked for has none
    wall_call: Call | None = None  # the step times' call; None where a side has none
    counts_call: Call | None = None  # the instructions' call; None where a side was not counted
    reason: str | None = None  # which tier made the call: "instructions" or "wall time" (None: the statuses did)
    instructions: InstructionsChange | None = None  # both sides' instructions per step, where both were counted
    op_events: dict[str, tuple[float, float]] = dataclasses.field(default_factory=dict)  # kinds that moved: (base, new)
    processes_to_decide: int | None = None  # an inconclusive time's processes a side that would see the threshold

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.model, self.mode, self.device, self.variant)

    def to_dict(self) -> dict[str, Any]:
        return encode(self)  # type: ignore[no-any-return]

    def record(self) -> dict[str, Any]:
        """Flat: the estimate's fields as columns of their own, the notes as one string."""
        data = {key: value for key, value in self.to_dict().items() if key not in ("estimate", "ops", "instructions", "op_events")}
        estimate = self.estimate
        data.update(
            ratio=estimate.ratio if estimate else None,
            low=estimate.low if estimate else None,
            high=estimate.high if estimate else None,
            instructions_change_pct=self.instructions.change_pct if self.instructions else None,
            notes="; ".join(self.notes),
        )
        return data


@dataclasses.dataclass(frozen=True)
class Comparison:
    """Every case present on either side, called; and what differs between the two sides' environments."""

    base: str
    new: str
    threshold_pct: float
    cases: tuple[CaseComparison, ...]
    notes: tuple[str, ...] = ()
    run_noise: float | None = None  # the noise between the two runs, per process (analyze.ratios.run_noise)
    instructions_threshold_pct: float = DEFAULT_INSTRUCTIONS_THRESHOLD_PCT
    calibration_drift: float | None = None  # how many times slower the machine ran for NEW (analyze.ratios)

    @property
    def regressions(self) -> tuple[CaseComparison, ...]:
        return tuple(case for case in self.cases if case.call in REGRESSIONS)

    @property
    def inconclusive(self) -> tuple[CaseComparison, ...]:
        return tuple(case for case in self.cases if case.call == Call.INCONCLUSIVE)

    @property
    def exit_status(self) -> int:
        """1 when a case regressed; else 3 when a case is inconclusive; else 0."""
        if self.regressions:
            return 1
        return EXIT_INCONCLUSIVE if self.inconclusive else 0

    @property
    def detectable_pct(self) -> float | None:
        """The median case's smallest slowdown caught 9 times in 10: what this comparison could see."""
        sizes = [case.detectable_pct for case in self.cases if case.detectable_pct is not None]
        return statistics.median(sizes) if sizes else None

    def counts(self) -> dict[str, int]:
        """Cases by call, regressions first: ``{"slower": 1, "same": 3}``."""
        counts = dict.fromkeys(Call, 0)
        for case in self.cases:
            counts[case.call] += 1
        return {str(call): n for call, n in counts.items() if n}

    def __repr__(self) -> str:
        tally = ", ".join(f"{n} {call}" for call, n in self.counts().items()) or "nothing compared"
        return f"Comparison({self.base} -> {self.new}: {tally})"

    def to_dataframe(self) -> Any:
        """One row per case: its call, both sides' figures and the ratio's interval (needs pandas)."""
        return dataframe(case.record() for case in self.cases)

    def to_dict(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "new": self.new,
            "threshold_pct": self.threshold_pct,
            "instructions_threshold_pct": self.instructions_threshold_pct,
            "confidence": 0.95,
            "process_noise_floor": PROCESS_NOISE_FLOOR,
            "run_noise": self.run_noise,
            "calibration_drift": self.calibration_drift,
            "detectable_pct": self.detectable_pct,
            "counts": encode(self.counts()),
            "exit_status": self.exit_status,
            "notes": list(self.notes),
            "cases": [case.to_dict() for case in self.cases],
        }


def _environment_notes(base_env: dict[str, Any], new_env: dict[str, Any]) -> list[str]:
    notes = []
    if machine_fingerprint(base_env) != machine_fingerprint(new_env):
        notes.append("another machine")
    if base_env.get("torch") != new_env.get("torch"):
        notes.append(f"torch {base_env.get('torch')} -> {new_env.get('torch')}")
    if threads := changed(base_env, new_env, "threads"):
        notes.append(f"threads {threads[0]} -> {threads[1]}")
    return notes


def _marks(base: CaseResult, new: CaseResult) -> list[str]:
    """Each side's first mark, noted beside the call (one note where both sides carry the same)."""
    marks = {side: row.untrustworthy_reasons[0] for side, row in (("base", base), ("new", new)) if row.untrustworthy_reasons}
    if len(marks) == 2 and marks["base"] == marks["new"]:
        return [f"both sides are marked: {marks['base']}"]
    return [f"{side} is marked: {reason}" for side, reason in marks.items()]


def _status_call(base: CaseResult, new: CaseResult) -> tuple[Call, list[str]]:
    """The call of a case that did not end ok on both sides."""
    if new.status in FAILURES and base.status not in FAILURES:
        return Call.NEW_FAILURE, [new.error or str(new.status)]
    if base.status in FAILURES and new.status == Status.OK:
        return Call.FIXED, []
    if base.status == new.status:
        return Call.SAME, []
    return Call.NOT_COMPARED, [f"{base.status} -> {new.status}"]


def compare_rows(
    base: CaseResult,
    new: CaseResult,
    threshold_pct: float,
    base_env: dict[str, Any],
    new_env: dict[str, Any],
    between: Between = Between(),
    instructions_threshold_pct: float = DEFAULT_INSTRUCTIONS_THRESHOLD_PCT,
) -> CaseComparison:
    """Call one case present on both sides; ``between`` is what lies between the two runs (``analyze.walltime``).

    Its wall-time call (``analyze.walltime``) and, where both sides counted instructions, the counts' call
    (``analyze.counts``) make the case's call; a side's marks are noted beside it.
    """
    fields: dict[str, Any] = dict(
        model=new.model,
        mode=new.mode,
        device=new.device,
        variant=new.variant,
        base_ms=base.step_time.median_ms if base.step_time else None,
        new_ms=new.step_time.median_ms if new.step_time else None,
        base_status=base.status,
        new_status=new.status,
        base_verdict=row_verdict(base),
        new_verdict=row_verdict(new),
    )
    notes = [f"batch size {base.batch_size} -> {new.batch_size}"] if base.batch_size != new.batch_size else []
    notes += _environment_notes(base_env, new_env)
    if base.status != Status.OK or new.status != Status.OK:
        call, more = _status_call(base, new)
        return CaseComparison(**fields, call=call, notes=tuple(notes + more))
    counted = instructions_change(base, new)
    moved = events_moved(base, new)
    ops_moved = sum(after - before for before, after in moved.values()) if moved else 0.0
    counts = None if counted is None else counted.call(instructions_threshold_pct, ops_moved)
    beside = _marks(base, new) + ([events_note(moved)] if moved else [])
    fields.update(instructions=counted, counts_call=counts, op_events=moved)
    timed = wall_time(base, new, threshold_pct, between)
    if timed is None:
        call, reason = combined_call(Call.NOT_COMPARED, counts)
        return CaseComparison(**fields, call=call, reason=reason if counts else None, notes=(*notes, "no step times", *beside))
    call, reason = combined_call(timed.call, counts)
    return CaseComparison(
        **fields,
        call=call,
        wall_call=timed.call,
        reason=reason,
        estimate=timed.estimate,
        notes=(*notes, *timed.notes, *beside),
        detectable_pct=timed.estimate.detectable_pct(threshold_pct),
        processes_to_decide=timed.processes_to_decide,
    )


def _one_side(key: tuple[str, str, str, str], row: CaseResult, call: Call) -> CaseComparison:
    side = "base" if call == Call.ONLY_IN_BASE else "new"
    ms = row.step_time.median_ms if row.step_time else None
    return CaseComparison(*key, call=call, **{f"{side}_ms": ms, f"{side}_status": row.status, f"{side}_verdict": row_verdict(row)})


def _drift(base: Summary, new: Summary, rows: list[tuple[CaseResult, CaseResult]]) -> float | None:
    """The machine's own change in speed between the runs, from the CPU cases' calibrations (``calibration_drift``);
    None where the sides ran on different machines or torch versions, whose prices differ by more than drift.
    With one pair of rows: that case's own, the machine's pace while it ran, which moves between cases."""
    alike = machine_fingerprint(base.environment) == machine_fingerprint(new.environment)
    if not alike or base.environment.get("torch") != new.environment.get("torch"):
        return None
    prices = [(b.dispatch.prices_us, n.dispatch.prices_us) for b, n in rows if b.device == "cpu" and b.dispatch and n.dispatch]
    return calibration_drift([(_pace(b), _pace(n)) for b, n in prices if b and n])


def _pace(prices_us: dict[str, float]) -> dict[str, float]:
    """A row's prices that measure the machine's pace: not the interval's ends (``pricing.INTERVAL_ENDS``)."""
    return {name: price for name, price in prices_us.items() if name not in INTERVAL_ENDS}


def _run_notes(base: Summary, new: Summary, noise: float | None, drift: float | None) -> list[str]:
    """What differs between the two sides as a whole."""
    notes = []
    if drift is not None and abs(math.log(drift)) > PROCESS_NOISE_FLOOR:
        way = "slower" if drift > 1 else "faster"
        notes.append(
            f"the machine itself ran {100 * abs(drift - 1):.1f}% {way} for NEW, by the calibration its cases' processes took "
            "(the same torch ops on both sides): a CPU case's change within the drift its own processes measured is inconclusive"
        )
    if noise is not None and noise > PROCESS_NOISE_FLOOR:
        notes.append(
            f"noisy runs: the cases' ratios spread {100 * noise:.1f}% per process (over the {100 * PROCESS_NOISE_FLOOR:g}% "
            "floor), so each case is called against that spread (see each case's 'catches')"
        )
    if machine_fingerprint(base.environment) != machine_fingerprint(new.environment):
        notes.append(
            f"the two sides ran on different machines ({base.environment.get('host')}, "
            f"{new.environment.get('host')}): read changes as between machines, not only between code"
        )
    if base.environment.get("torch") != new.environment.get("torch"):
        notes.append(f"torch {base.environment.get('torch')} -> {new.environment.get('torch')}")
    if threads := changed(base.environment, new.environment, "threads"):
        notes.append(f"torch intra-op threads {threads[0]} -> {threads[1]}: step times at another thread count are not like for like")
    if malloc := changed(base.environment, new.environment, "malloc"):  # how each case's process was set up
        notes.append(f"the processes' memory settings differ: {malloc[0]} -> {malloc[1]}")
    return notes


def _tier_notes(cases: list[CaseComparison]) -> list[str]:
    """What the calls rest on: the cases time could not decide, and those the counts decided in its place."""
    notes = []
    if doubtful := [case for case in cases if case.call == Call.INCONCLUSIVE]:
        notes.append(
            f"{len(doubtful)} inconclusive: the measurement could not see a slowdown of {INCONCLUSIVE_BEYOND}x the threshold, "
            "or the machine's own drift could explain the change; each case says what would decide it"
        )
    if decided := [case for case in cases if case.wall_call == Call.INCONCLUSIVE and case.call != Call.INCONCLUSIVE]:
        cases_word = "case" if len(decided) == 1 else "cases"
        notes.append(f"{len(decided)} {cases_word} whose wall time was inconclusive called by instructions")
    return notes


def compare(
    base: Summary,
    new: Summary,
    threshold_pct: float = DEFAULT_THRESHOLD_PCT,
    instructions_threshold_pct: float = DEFAULT_INSTRUCTIONS_THRESHOLD_PCT,
) -> Comparison:
    """Compare two loaded results. Raises ValueError when the two sides have no case in common."""
    for name, value in (("threshold", threshold_pct), ("instructions threshold", instructions_threshold_pct)):
        if not value >= 0:
            raise ValueError(f"{name} must be a percentage of 0 or more, got {value}")
    base_rows, new_rows = {row.key: row for row in base.rows}, {row.key: row for row in new.rows}
    if not base_rows.keys() & new_rows.keys():
        raise ValueError(f"{base.source} and {new.source} have no case in common (model, mode, device, variant)")
    both_ok = [key for key in base_rows.keys() & new_rows.keys() if base_rows[key].status == new_rows[key].status == Status.OK]
    timed = [(process_medians(base_rows[key]), process_medians(new_rows[key])) for key in both_ok]
    noise = run_noise([(b, n) for b, n in timed if b and n])
    drift = _drift(base, new, [(base_rows[key], new_rows[key]) for key in both_ok])
    cases = []
    for key in sorted(base_rows.keys() | new_rows.keys(), key=lambda k: (k[0].lower(), *k[1:])):
        if key not in new_rows:
            cases.append(_one_side(key, base_rows[key], Call.ONLY_IN_BASE))
        elif key not in base_rows:
            cases.append(_one_side(key, new_rows[key], Call.ONLY_IN_NEW))
        else:
            b, n = base_rows[key], new_rows[key]
            environments = base.environment_of(b), new.environment_of(n)
            own = _drift(base, new, [(b, n)])  # the case's own processes' calibration: the pace while it ran
            between = Between(noise or 0.0, own or drift or 1.0 if b.device == "cpu" else 1.0)
            cases.append(compare_rows(b, n, threshold_pct, *environments, between, instructions_threshold_pct))
    order = {call: i for i, call in enumerate(Call)}
    cases.sort(key=lambda case: order[case.call])  # regressions first
    notes = _tier_notes(cases) + _run_notes(base, new, noise, drift)
    return Comparison(base.source, new.source, threshold_pct, tuple(cases), tuple(notes), noise, instructions_threshold_pct, drift)


# The calls whose ops are listed unless every case's are asked for; a case whose op events per step moved
# gets its diff whatever its call, since the diff names the ops added or gone.
OPS_FOR = (Call.SLOWER, Call.FASTER, Call.INCONCLUSIVE, Call.VERDICT_CHANGED)


def with_op_diffs(comparison: Comparison, base: Summary, new: Summary, roots: tuple[Path, Path], every: bool = False) -> Comparison:
    """``comparison`` with each case's op diff, from both sides' light traces (paths under ``roots``, each side's
    output folder): the cases called one of ``OPS_FOR`` or whose op events per step moved, or with ``every`` each
    case ok on both sides."""
    rows = {row.key: row for row in base.rows}, {row.key: row for row in new.rows}
    read: dict[tuple[Path, str], TraceOps] = {}
    cases = []
    for case in comparison.cases:
        pair = rows[0].get(case.key), rows[1].get(case.key)
        wanted = every or case.call in OPS_FOR or bool(case.op_events)
        if wanted and pair[0] is not None and pair[1] is not None and pair[0].status == pair[1].status == Status.OK:
            case = _case_ops(case, (pair[0], pair[1]), roots, lambda *at: read.get(at) or read.setdefault(at, read_trace_ops(*at)))
        cases.append(case)
    return dataclasses.replace(comparison, cases=tuple(cases))


def _case_ops(
    case: CaseComparison, rows: tuple[CaseResult, CaseResult], roots: tuple[Path, Path], read: Callable[[Path, str], TraceOps]
) -> CaseComparison:
    sides = []
    for side, row, root in zip(("base", "new"), rows, roots):
        name = row.traces.light
        if not name or not (root / name).exists():
            why = "records none" if not name else f"is missing ({root / name})"
            return dataclasses.replace(case, ops_note=f"no op diff: the {side}'s light trace {why}")
        try:
            ops = read(root, name)
        except Exception as error:  # a damaged file of one case is that case's note, whatever broke in reading it
            return dataclasses.replace(case, ops_note=f"no op diff: the {side}'s light trace cannot be read: {_one_line(error)}")
        mismatch = _not_its_rows(ops, row)
        if mismatch:
            return dataclasses.replace(case, ops_note=f"no op diff: the {side}'s light trace {mismatch}")
        sides.append(ops)
    return dataclasses.replace(case, ops=op_diff(sides[0], sides[1]))


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text[:300]}" if text else type(error).__name__


def _not_its_rows(ops: TraceOps, row: CaseResult) -> str | None:
    """Why a trace is not the one its row was drawn from, or None: its op events per step, kind by kind, are
    the row's (``dispatch.events_per_step``, counted from this trace by the same function, over the steps no
    other work stretched: within a tenth)."""
    counted = row.dispatch.events_per_step if row.dispatch is not None else None
    for kind in EVENT_KINDS:
        found, recorded = ops.events_per_step.get(kind, 0.0), (counted or {}).get(kind)
        if recorded is not None and abs(found - recorded) > max(EVENTS_ROUNDING, 0.1 * recorded):
            return f"is not its row's: {found:g} {kind} events a step against the row's {recorded:g}"
    return None
