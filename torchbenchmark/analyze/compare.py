"""Comparing two runs case by case: each case's step-time ratio with its interval, and a call a CI job can gate on.

A case is ``slower`` only when the ratio is past the practical threshold (default 5%) *and* its interval
excludes 1; ``faster`` likewise. A verdict that flips beyond both rows' overhead intervals is ``verdict
changed``. A case whose row on either side is marked (contended, noisy, too few steps), or whose
measurement could not catch a slowdown of ``INCONCLUSIVE_BEYOND`` times the threshold, is ``inconclusive``:
a gate that cannot see does not say "same". Everything else within the threshold or within noise is
``same``. The statistics are ``analyze.ratios``. Which ops moved (``with_op_diffs``): ``analyze.opdiff``.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from torchbenchmark.analyze.opdiff import OpDiff, TraceOps, op_diff, read_trace_ops
from torchbenchmark.analyze.ratios import (
    MOST_PROCESSES,
    PROCESS_NOISE_FLOOR,
    RatioEstimate,
    log_sd,
    processes_needed,
    ratio_interval,
    run_noise,
)
from torchbenchmark.analyze.verdict import verdicts_between
from torchbenchmark.results.codec import encode
from torchbenchmark.results.frames import dataframe
from torchbenchmark.results.records import Summary, changed, machine_fingerprint
from torchbenchmark.results.schema import FAILURES, REGRESSIONS, Call, CaseResult, Status

DEFAULT_THRESHOLD_PCT = 5.0
INCONCLUSIVE_BEYOND = 4  # a case that cannot catch a slowdown of this many thresholds cannot say "same"
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

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.model, self.mode, self.device, self.variant)

    def to_dict(self) -> dict[str, Any]:
        return encode(self)  # type: ignore[no-any-return]

    def record(self) -> dict[str, Any]:
        """Flat: the estimate's fields as columns of their own, the notes as one string."""
        data = {key: value for key, value in self.to_dict().items() if key not in ("estimate", "ops")}
        estimate = self.estimate
        data.update(
            ratio=estimate.ratio if estimate else None,
            low=estimate.low if estimate else None,
            high=estimate.high if estimate else None,
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

    def counts(self) -> dict[Call, int]:
        counts = dict.fromkeys(Call, 0)
        for case in self.cases:
            counts[case.call] += 1
        return {call: n for call, n in counts.items() if n}

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
            "confidence": 0.95,
            "process_noise_floor": PROCESS_NOISE_FLOOR,
            "run_noise": self.run_noise,
            "detectable_pct": self.detectable_pct,
            "counts": encode(self.counts()),
            "exit_status": self.exit_status,
            "notes": list(self.notes),
            "cases": [case.to_dict() for case in self.cases],
        }


def process_medians(row: CaseResult) -> list[float]:
    if row.samples.process_medians_ms:
        return list(row.samples.process_medians_ms)
    return [row.step_time.median_ms] if row.step_time else []


def _window_spread(*rows: CaseResult) -> float:
    """How far apart one process's measurement windows were, as a log-scale spread: a noisy run's floor."""
    return log_sd([windows for row in rows for windows in row.samples.window_medians_ms])[0]


def _verdict(row: CaseResult) -> str | None:
    return row.dispatch.verdict if row.dispatch else None


def _verdicts_in_reach(row: CaseResult) -> set[str]:
    """The verdicts a row's overhead interval reaches: its own, and those across the thresholds it crosses."""
    if row.dispatch is None:
        return set()
    if row.dispatch.overhead_interval is None:
        return {row.dispatch.verdict}
    return {row.dispatch.verdict, *verdicts_between(*row.dispatch.overhead_interval)}


def _settle(estimate: RatioEstimate, threshold_pct: float) -> str:
    """The advice for a case past the threshold but within noise: how many processes a side would settle it."""
    n = processes_needed(estimate.spread, estimate.ratio, threshold_pct)
    if n is None:
        return f"settling a change this size takes over {MOST_PROCESSES} processes a side"
    return f"{n} processes a side would settle a change this size (--repeat {n}, or {n} turns and --pool)"


def _environment_notes(base_env: dict[str, Any], new_env: dict[str, Any]) -> list[str]:
    notes = []
    if machine_fingerprint(base_env) != machine_fingerprint(new_env):
        notes.append("another machine")
    if base_env.get("torch") != new_env.get("torch"):
        notes.append(f"torch {base_env.get('torch')} -> {new_env.get('torch')}")
    if threads := changed(base_env, new_env, "threads"):
        notes.append(f"threads {threads[0]} -> {threads[1]}")
    return notes


def _status_call(base: CaseResult, new: CaseResult) -> tuple[Call, list[str]]:
    """The call of a case that did not end ok on both sides."""
    if new.status in FAILURES and base.status not in FAILURES:
        return Call.NEW_FAILURE, [new.error or str(new.status)]
    if base.status in FAILURES and new.status == Status.OK:
        return Call.FIXED, []
    if base.status == new.status:
        return Call.SAME, []
    return Call.NOT_COMPARED, [f"{base.status} -> {new.status}"]


def _timed_call(base: CaseResult, new: CaseResult, estimate: RatioEstimate, threshold_pct: float) -> tuple[Call, list[str]]:
    """The call of a case timed on both sides, from its ratio's interval and its verdicts."""
    threshold = 1.0 + threshold_pct / 100.0
    flipped, shared = _verdict(base) != _verdict(new), _verdicts_in_reach(base) & _verdicts_in_reach(new)
    if estimate.ratio > threshold and estimate.low > 1.0:
        call = Call.SLOWER
    elif estimate.ratio < 1.0 / threshold and estimate.high < 1.0:
        call = Call.FASTER
    elif flipped and not shared:
        call = Call.VERDICT_CHANGED
    else:
        call = Call.SAME
    notes = []
    if flipped and call != Call.VERDICT_CHANGED:
        reach = f" (borderline: both intervals reach {' and '.join(sorted(shared))})" if call == Call.SAME else ""
        notes.append(f"verdict {_verdict(base)} -> {_verdict(new)}{reach}")
    if call == Call.SAME and abs(estimate.change_pct) > threshold_pct:
        notes.append(f"past the threshold but within noise: {_settle(estimate, threshold_pct)}")
    return call, notes


def compare_rows(
    base: CaseResult, new: CaseResult, threshold_pct: float, base_env: dict[str, Any], new_env: dict[str, Any], noise: float = 0.0
) -> CaseComparison:
    """Call one case present on both sides; ``noise`` is the two runs' ``run_noise``, a floor under its spread."""
    fields: dict[str, Any] = dict(
        model=new.model,
        mode=new.mode,
        device=new.device,
        variant=new.variant,
        base_ms=base.step_time.median_ms if base.step_time else None,
        new_ms=new.step_time.median_ms if new.step_time else None,
        base_status=base.status,
        new_status=new.status,
        base_verdict=_verdict(base),
        new_verdict=_verdict(new),
    )
    notes = [f"batch size {base.batch_size} -> {new.batch_size}"] if base.batch_size != new.batch_size else []
    notes += _environment_notes(base_env, new_env)
    if base.status != Status.OK or new.status != Status.OK:
        call, more = _status_call(base, new)
        return CaseComparison(**fields, call=call, notes=tuple(notes + more))
    base_samples, new_samples = process_medians(base), process_medians(new)
    if not base_samples or not new_samples:
        return CaseComparison(**fields, call=Call.NOT_COMPARED, notes=(*notes, "no step times"))
    estimate = ratio_interval(base_samples, new_samples, max(_window_spread(base, new), noise))
    call, more = _timed_call(base, new, estimate, threshold_pct)
    doubt = _doubt(base, new, estimate, threshold_pct, call)
    if doubt:
        call, more = Call.INCONCLUSIVE, [*more, doubt]
    return CaseComparison(
        **fields, call=call, estimate=estimate, notes=tuple(notes + more), detectable_pct=estimate.detectable_pct(threshold_pct)
    )


def _doubt(base: CaseResult, new: CaseResult, estimate: RatioEstimate, threshold_pct: float, call: Call) -> str | None:
    """Why a case's call cannot be trusted, or None: a side is marked (whatever it was called), or a case
    called the same could not have seen a slowdown worth gating on."""
    for side, row in (("base", base), ("new", new)):
        if row.untrustworthy_reasons:
            return f"{side} is marked: {row.untrustworthy_reasons[0]}"
    catches = estimate.detectable_pct(threshold_pct)
    if call == Call.SAME and catches > INCONCLUSIVE_BEYOND * max(threshold_pct, 1.0):
        return f"it catches only slowdowns of {shown_pct(catches)} or more ({INCONCLUSIVE_BEYOND}x the threshold is {INCONCLUSIVE_BEYOND * threshold_pct:g}%)"
    return None


def shown_pct(value: float) -> str:
    """A percentage as read: past 1000%, a figure says nothing more than that."""
    return "> 1000%" if value > 1000 else f"{value:.1f}%"


def _one_side(key: tuple[str, str, str, str], row: CaseResult, call: Call) -> CaseComparison:
    side = "base" if call == Call.ONLY_IN_BASE else "new"
    ms = row.step_time.median_ms if row.step_time else None
    return CaseComparison(*key, call=call, **{f"{side}_ms": ms, f"{side}_status": row.status, f"{side}_verdict": _verdict(row)})


def _run_notes(base: Summary, new: Summary, noise: float | None) -> list[str]:
    """What differs between the two sides as a whole."""
    notes = []
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


def _inconclusive_note(cases: list[CaseComparison]) -> list[str]:
    doubtful = [case for case in cases if case.call == Call.INCONCLUSIVE]
    if not doubtful:
        return []
    marked = sum(any(note.startswith(("base is marked", "new is marked")) for note in case.notes) for case in doubtful)
    parts = [f"{marked} with a side marked untrustworthy"] * bool(marked)
    parts += [f"{len(doubtful) - marked} whose measurement could not see a slowdown of {INCONCLUSIVE_BEYOND}x the threshold"] * bool(
        len(doubtful) - marked
    )
    them = "it" if len(doubtful) == 1 else "them"
    return [f"{len(doubtful)} inconclusive: {' and '.join(parts)}; rerun {them} on a quieter machine or with more processes a side"]


def compare(base: Summary, new: Summary, threshold_pct: float = DEFAULT_THRESHOLD_PCT) -> Comparison:
    """Compare two loaded results. Raises ValueError when the two sides have no case in common."""
    if not threshold_pct >= 0:
        raise ValueError(f"threshold must be a percentage of 0 or more, got {threshold_pct}")
    base_rows, new_rows = {row.key: row for row in base.rows}, {row.key: row for row in new.rows}
    if not base_rows.keys() & new_rows.keys():
        raise ValueError(f"{base.source} and {new.source} have no case in common (model, mode, device, variant)")
    both_ok = [key for key in base_rows.keys() & new_rows.keys() if base_rows[key].status == new_rows[key].status == Status.OK]
    timed = [(process_medians(base_rows[key]), process_medians(new_rows[key])) for key in both_ok]
    noise = run_noise([(b, n) for b, n in timed if b and n])
    cases = []
    for key in sorted(base_rows.keys() | new_rows.keys(), key=lambda k: (k[0].lower(), *k[1:])):
        if key not in new_rows:
            cases.append(_one_side(key, base_rows[key], Call.ONLY_IN_BASE))
        elif key not in base_rows:
            cases.append(_one_side(key, new_rows[key], Call.ONLY_IN_NEW))
        else:
            b, n = base_rows[key], new_rows[key]
            cases.append(compare_rows(b, n, threshold_pct, base.environment_of(b), new.environment_of(n), noise or 0.0))
    order = {call: i for i, call in enumerate(Call)}
    cases.sort(key=lambda case: order[case.call])  # regressions first
    notes = _inconclusive_note(cases) + _run_notes(base, new, noise)
    return Comparison(base.source, new.source, threshold_pct, tuple(cases), tuple(notes), noise)


# The calls whose ops are listed unless every case's are asked for.
OPS_FOR = (Call.SLOWER, Call.FASTER, Call.INCONCLUSIVE, Call.VERDICT_CHANGED)


def with_op_diffs(comparison: Comparison, base: Summary, new: Summary, roots: tuple[Path, Path], every: bool = False) -> Comparison:
    """``comparison`` with each case's op diff, from both sides' light traces (paths under ``roots``, each side's
    output folder): the cases called one of ``OPS_FOR``, or with ``every`` each case ok on both sides."""
    rows = {row.key: row for row in base.rows}, {row.key: row for row in new.rows}
    read: dict[Path, TraceOps] = {}
    cases = []
    for case in comparison.cases:
        pair = rows[0].get(case.key), rows[1].get(case.key)
        wanted = every or case.call in OPS_FOR
        if wanted and pair[0] is not None and pair[1] is not None and pair[0].status == pair[1].status == Status.OK:
            case = _case_ops(case, (pair[0], pair[1]), roots, lambda path: read.get(path) or read.setdefault(path, read_trace_ops(path)))
        cases.append(case)
    return dataclasses.replace(comparison, cases=tuple(cases))


def _case_ops(
    case: CaseComparison, rows: tuple[CaseResult, CaseResult], roots: tuple[Path, Path], read: Callable[[Path], TraceOps]
) -> CaseComparison:
    sides = []
    for side, row, root in zip(("base", "new"), rows, roots):
        path = root / row.traces.light if row.traces.light else None
        if path is None or not path.is_file():
            why = "records none" if path is None else f"is missing ({path})"
            return dataclasses.replace(case, ops_note=f"no op diff: the {side}'s light trace {why}")
        try:
            sides.append(read(path))
        except (OSError, ValueError, KeyError, TypeError) as error:
            return dataclasses.replace(
                case, ops_note=f"no op diff: the {side}'s light trace cannot be read ({type(error).__name__}: {error})"
            )
    return dataclasses.replace(case, ops=op_diff(sides[0], sides[1]))
