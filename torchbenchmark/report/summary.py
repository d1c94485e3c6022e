"""summary.txt: the table of every case, its header and its legend, and the closing lines of a sweep.

Returns strings, never prints. The table's columns are declared once, here, as data; the report page
shows the same columns (``report.page``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from torchbenchmark.analyze.bound import against_eager
from torchbenchmark.analyze.verdict import COMPUTE_BOUND_BELOW, DISPATCH_BOUND_AT
from torchbenchmark.report.format import (
    Column,
    console_width,
    escape_controls,
    number,
    plural,
    render_columns,
    significant,
    wrap,
    wrap_command,
)
from torchbenchmark.results.records import Summary, differs
from torchbenchmark.results.schema import (
    EAGER,
    MIN_STEPS_FOR_SPREAD,
    PHASES,
    UNTRUSTWORTHY_IQR_FRACTION,
    CaseResult,
    Scaling,
    Status,
    Verdict,
    sort_rows,
    tally,
)


def _phases(result: CaseResult) -> str:
    phases = result.phases_pct
    return "/".join(f"{phases[p]:.0f}" for p in PHASES) if phases else ""


def note(result: CaseResult) -> str:
    """Why an ok row's figure is not to be trusted, and what else to know of its costs; or nothing."""
    notes = []
    reasons = result.untrustworthy_reasons
    if reasons:
        notes.append(f"UNTRUSTWORTHY: {'; '.join(reasons)}")
    costs = result.costs
    if costs is not None and costs.flops_partial:
        notes.append(f"FLOPs partial, not counted: {', '.join(costs.flops_uncounted)}")
    if costs is not None and costs.compute_limit == "kernels":
        partial = f"{PARTIAL} (from partial FLOPs)" if costs.flops_partial else ""
        notes.append(f"kernels limit it: {costs.pct_of_peak:.1f}%{partial} of peak")
    if costs is not None and (costs.pct_of_peak or 0) > 100:
        notes.append("above the peak: the peak was measured under load")
    dispatch = result.dispatch
    if dispatch is not None and dispatch.borderline and dispatch.overhead_interval is not None:
        low, high = dispatch.overhead_interval
        why = f" ({dispatch.interval_note})" if dispatch.interval_note else ""
        notes.append(f"borderline: overhead {100 * low:.0f}-{100 * high:.0f}%{why}")
    if dispatch is not None and dispatch.scaling is not None and dispatch.scaling.contradiction:
        notes.append(f"scaling contradicts itself, not read: {dispatch.scaling.contradiction}")
    elif dispatch is not None and dispatch.scaling is not None and not dispatch.scaling.agrees:
        notes.append(f"scaling disagrees: bound {100 * dispatch.scaling.fraction_upper:.1f}%")
    if dispatch is not None and dispatch.scaling is not None and dispatch.scaling.doubt:
        notes.append(f"scaling in doubt: {dispatch.scaling.doubt}")
    if dispatch is not None and dispatch.scaling is not None:
        notes.extend(_crossover(dispatch.scaling))
    if dispatch is not None and dispatch.scaling_failed:
        notes.append(f"scaling: {dispatch.scaling_failed}")
    split = result.time_split
    if split is not None and not reasons and split.steps_kept < split.steps_measured:
        notes.append(f"{split.steps_measured - split.steps_kept} of {split.steps_measured} steps left out: their threads waited for a CPU")
    if dispatch is not None and dispatch.verdict == Verdict.BLOCKED and split is not None:
        notes.append(f"blocked {split.blocked_pct:.0f}% of the step: what it waits for decides its speed")
    if result.remedy is not None:
        notes.extend(result.remedy.marks)
    if result.distributed is not None and result.distributed.reading != "compute":
        notes.append(f"{result.distributed.reading}: waits on collectives {result.distributed.exposed_comm_pct:.0f}% of the step")
    return "; ".join(notes)


def _crossover(scaling: Scaling) -> list[str]:
    """Where the fitted line puts the verdict's changes: ``dispatch-bound below batch N``, and from which
    batch the row would be compute-bound."""
    dispatch_below, compute_from = scaling.batch_at_overhead_50pct, scaling.batch_at_overhead_20pct
    words = []
    if dispatch_below is not None and dispatch_below > 1:
        words.append(f"dispatch-bound below batch {dispatch_below}")
    if compute_from is not None and compute_from > 1:
        words.append(f"compute-bound from batch {compute_from}")
    return [", ".join(words)] if words else []


def _cost(result: CaseResult, name: str, scale: float = 1.0) -> float | None:
    """A figure of the row's costs, divided by ``scale``; None when the row has none."""
    value = getattr(result.costs, name) if result.costs is not None else None
    return None if value is None else value / scale


PARTIAL = "+"  # after a FLOP figure: a lower bound, the step ran a compute op the counter has no formula for


def flop_figure(result: CaseResult, text: str) -> str:
    """A figure drawn from the row's FLOP count as shown: marked when the count leaves out a compute op."""
    return text + PARTIAL if text and result.costs is not None and result.costs.flops_partial else text


COLUMNS: tuple[Column, ...] = (
    Column("model", lambda r: r.model, numeric=False),
    Column("mode", lambda r: r.mode, numeric=False),
    Column("device", lambda r: r.device, numeric=False),
    Column("batch", lambda r: "" if r.batch_size is None else str(r.batch_size)),
    Column("status", lambda r: str(r.status), numeric=False),
    Column("ms/step", lambda r: significant(r.step_time.median_ms if r.step_time else None)),
    Column("IQR ms", lambda r: significant(r.step_time.iqr_ms if r.step_time else None)),
    Column("n", lambda r: "" if r.step_time is None else str(r.step_time.n)),
    Column("light %", lambda r: number(r.distortion.light_pct, 1)),
    Column("detailed %", lambda r: number(r.distortion.detailed_pct, 0)),
    Column("edge %", lambda r: number(r.edge_distortion_pct, 1)),
    Column("fwd/bwd/opt %", _phases, numeric=False),
    Column("ops/step", lambda r: number(r.dispatch.ops_per_step if r.dispatch else None, 0)),
    Column("op µs", lambda r: number(r.dispatch.median_op_us if r.dispatch else None, 1)),
    Column("overhead %", lambda r: number(100 * r.dispatch.fraction if r.dispatch else None, 1)),
    Column("verdict", lambda r: str(r.dispatch.verdict) if r.dispatch else "", numeric=False),
    Column("GFLOP/step", lambda r: flop_figure(r, significant(_cost(r, "flops_per_step", 1e9))), figure="flops_per_step"),
    Column("GFLOP/s", lambda r: flop_figure(r, significant(_cost(r, "achieved_gflops"))), figure="achieved_gflops"),
    Column("% peak", lambda r: flop_figure(r, number(_cost(r, "pct_of_peak"), 1)), figure="pct_of_peak"),
    Column("peak MB", lambda r: number(_cost(r, "peak_memory_mb"), 0), figure="peak_memory_mb"),
    Column("samples/s", lambda r: significant(_cost(r, "samples_per_s")), figure="samples_per_s"),
    Column("note", lambda r: r.error or note(r), numeric=False),
)
# A count's steps spreading more than this is shown beside it: steadier counts gate a 1% change, this one may not.
COUNT_SPREAD_SHOWN_PCT = 0.5
_SI_PREFIXES = ("", "k", "M", "G", "T")


def compact_count(value: float) -> str:
    """A count in three significant figures with an SI prefix: ``24.3M``, ``1.21G``, ``812``."""
    mantissa, exponent = f"{value:.2e}".split("e")  # rounded first: 999.6M is 1.00G, not 1000M
    power = min(max(int(exponent), 0) // 3, len(_SI_PREFIXES) - 1)
    if power == 0:
        return f"{value:.3g}"
    places = int(exponent) - 3 * power
    return f"{float(mantissa) * 10**places:.{max(0, 2 - places)}f}{_SI_PREFIXES[power]}"


def instructions_figure(result: CaseResult) -> str:
    """instr/step: the count per step, and its spread where it is wide; blank where not counted."""
    counted = result.instructions
    if counted is None or counted.per_step is None:
        return ""
    spread = counted.spread_pct or 0.0
    return compact_count(counted.per_step) + (f" ±{spread:.1f}%" if spread > COUNT_SPREAD_SHOWN_PCT else "")


VARIANT = Column("variant", lambda r: r.variant, numeric=False)  # shown when any row is not eager
INSTRUCTIONS = Column("instr/step", instructions_figure)  # shown when any row has counts (--instructions)
DISTRIBUTED = (  # shown when any row ran as DistributedDataParallel
    Column("comm %", lambda r: number(r.distributed.comm_pct if r.distributed else None, 0)),
    Column("exposed %", lambda r: number(r.distributed.exposed_comm_pct if r.distributed else None, 0)),
    Column("skew %", lambda r: number(r.distributed.skew_pct if r.distributed else None, 1)),
)


def any_counted(results: Iterable[CaseResult]) -> bool:
    return any(r.instructions is not None and r.instructions.counted for r in results)


def against_columns(results: Sequence[CaseResult]) -> list[Column]:
    """A variant's measured speedup beside its eager row's bound (an eager row shows its own bound)."""
    against = against_eager(results)

    def bound(row: CaseResult) -> str:
        found = against.get(row.key)
        if found is not None:
            return f"{found.bound.speedup_bound:.2f}" + (" past" if found.past else "")
        return number(row.bound.speedup_bound, 2) if row.variant == EAGER and row.bound is not None else ""

    return [
        Column("speedup x", lambda r: number(r.speedup_vs_eager, 2), figure="speedup_vs_eager"),
        Column("eager bound x", bound, figure="speedup_bound"),
    ]


def summary_columns(results: Sequence[CaseResult], extra: Column | None = None) -> list[Column]:
    """The summary's columns for these rows; ``extra`` (a run or machine column) goes before the note."""
    columns = list(COLUMNS)
    if any(r.variant != EAGER for r in results):
        columns.insert(3, VARIANT)
        columns[-1:-1] = against_columns(results)
    if any_counted(results):
        columns.insert(-1, INSTRUCTIONS)
    if any(r.distributed for r in results):
        at = next(index for index, column in enumerate(columns) if column.header == "verdict")
        columns[at:at] = DISTRIBUTED
    if extra is not None:
        columns.insert(-1, extra)
    return columns


def render_table(results: Iterable[CaseResult], extra: Column | None = None) -> str:
    """summary.txt's table: one row per case, sorted by model, mode, device, then variant."""
    rows = sort_rows(results)
    return render_columns(summary_columns(rows, extra), rows)


LEGEND = f"""\
ms/step      median step time, measured outside any profiler; IQR ms: the spread of the middle half of the steps
n            steps measured (the figures rest on these)
light %      how much slower a step is inside the light profile; detailed %: inside the detailed one
edge %       what timing a whole train/eval call adds to the step inside it. A negative percentage is a
             step measured faster there than outside: noise between the two measurements, read it as 0
fwd/bwd/opt  share of the profiled step in the forward, backward and optimizer annotations; blank for a
             model that declares itself unannotated (a GAN, RL, meta-learning), not zero
ops/step     op events per step in the light trace; op µs: median duration of a top-level op
overhead %   estimated per-op overhead share of the step; verdict: dispatch-bound at {DISPATCH_BOUND_AT:.0%} or
             more, compute-bound under {COMPUTE_BOUND_BELOW:.0%}, mixed between; blocked: off the CPU half the step or
             more, waiting for something (sleep, I/O, a lock, another process) (docs/verdict.md)
GFLOP/step   one step's FLOPs (matmuls, convolutions, attention); GFLOP/s: over ms/step; % peak: of the
             machine's peak_gflops in summary.json; peak MB: most tensor memory live in a step; samples/s: batch/ms.
             A + after a FLOP figure: a lower bound, the step ran a compute op the counter cannot count (the note names it)
note         why a case did not end ok; UNTRUSTWORTHY and why for an ok row whose figure is not to be
             trusted: warmup not steady, measurement windows or processes that never agreed, an IQR above
             {UNTRUSTWORTHY_IQR_FRACTION:.0%} of the median, fewer than {MIN_STEPS_FOR_SPREAD} steps, contended (other work on the machine
             made its threads wait for a CPU in too many steps), the estimate's prices read under load, or its
             replayed and real gaps far apart (docs/summary.md says each). Steps whose threads waited for a CPU are left out of ms/step when
             enough others remain. Rerun those on a quieter machine."""
VARIANT_LEGEND = """\
speedup x    a variant's step time against eager, the two taking turns in the variant's own process. The eager
             row beside it ran in a process of its own at another time, so its ms/step over the variant's need
             not be this ratio; eager bound x: the most removing the eager row's estimated overhead could buy,
             1 / (1 - overhead); past: the variant beat it, so it also made the arithmetic faster (docs/explain.md)"""
INSTRUCTIONS_LEGEND = f"""\
instr/step   (--instructions) instructions a step executes, counted under valgrind's callgrind on one thread: the
             median of the counted steps, with their spread (max - min) beside it when above {COUNT_SPREAD_SHOWN_PCT:g}%. Blank:
             not counted (a variant, a GPU case, a step too long to count); the row's instructions.reason says why"""
DISTRIBUTED_LEGEND = """\
comm %: (--ddp) share of the step with a collective running on a rank, mean over ranks; exposed %: the
part of it no compute overlapped (the step waited); skew %: slowest rank's median step over the fastest's."""


def render_text(summary: Summary, run_id: str | None = None, extra: Column | None = None, preamble: Sequence[str] = ()) -> str:
    """summary.txt: a header naming where and when, the table, and a legend for what needs one.

    ``run_id`` is the run that just wrote the summary; rows carried from earlier runs get a ``run``
    column, marked ``*`` when they were measured on another machine or torch version. ``extra`` is a
    column of the caller's (merge's machine column); ``preamble``, lines before the header.
    """
    results = list(summary.rows)
    environment = summary.environment
    current = [r for r in results if r.run_id == run_id] if run_id else results
    carried = [r for r in results if run_id and r.run_id != run_id]
    header = [
        *preamble,
        f"torchbenchmark diagnostics, started {environment.get('started_at', '?')}",
        f"torch {environment.get('torch', '?')} on {environment.get('device_name', '?')}, "
        f"{environment.get('threads', '?')} threads; this run: {plural(len(current), 'case')} ({tally(current)})",
    ]
    if carried:
        header.append(
            f"carried from earlier runs: {plural(len(carried), 'case')} ({tally(carried)}); "
            "their run is in the 'run' column, * when from another machine or torch version"
        )
        extra = extra or Column("run", lambda r: _run_mark(summary, r, run_id), numeric=False)
    legend = LEGEND + ("\n" + VARIANT_LEGEND if any(r.variant != EAGER for r in results) else "")
    legend += "\n" + INSTRUCTIONS_LEGEND if any_counted(results) else ""
    legend += "\n" + DISTRIBUTED_LEGEND if any(r.distributed for r in results) else ""
    # The header holds what records say of their machine (and merge's paths): shown, never obeyed, as the table.
    return escape_controls("\n".join(header)) + "\n\n" + render_table(results, extra) + "\n\n" + legend + "\n"


def _run_mark(summary: Summary, row: CaseResult, run_id: str | None) -> str:
    if row.run_id == run_id:
        return "this"
    started = str(summary.environment_of(row).get("started_at") or row.run_id or "?")[:16].replace("T", " ")
    return started + ("*" if differs(summary.environment, summary.environment_of(row)) else "")


def render_untrustworthy(results: Iterable[CaseResult], rerun: Callable[[CaseResult], str]) -> str:
    """The closing lines of a sweep: each row not to be trusted, why, and what to do; empty if none.

    ``rerun(row)`` is the command line that runs the row's case again, with the sweep's own flags.
    """
    rows = [r for r in results if r.status == Status.OK and r.untrustworthy_reasons]
    if not rows:
        return ""
    width = console_width()
    lines = [f"{plural(len(rows), 'row')} not to be trusted (marked UNTRUSTWORTHY in summary.txt):"]
    for row in rows:
        variant = "" if row.variant == EAGER else f" {row.variant}"
        lines.append(wrap(f"{row.model} {row.mode} {row.device}{variant}: {'; '.join(row.untrustworthy_reasons)}", width, "  "))
        if row.step_time is not None and row.step_time.n < MIN_STEPS_FOR_SPREAD:
            lines.append(wrap(f"measure more steps: drop --steps, or give --steps {MIN_STEPS_FOR_SPREAD} or more", width, "    "))
        elif row.time_split is not None and row.time_split.contended and row.time_split.own_wait:
            lines.append(
                wrap("give it fewer threads (--threads 1), or fewer processes of its own, than the machine has CPUs", width, "    ")
            )
        else:
            line = f"    rerun it on a quieter machine: {rerun(row)}"
            lines += [line] if len(line) <= width else ["    rerun it on a quieter machine:", wrap_command(rerun(row), width, "      ")]
            if row.time_split is not None and row.time_split.contended and row.time_split.intra_op_wait:
                lines.append(wrap("or at one intra-op thread (--threads 1): most of the wait was the intra-op threads'", width, "    "))
    return "\n".join(lines)
