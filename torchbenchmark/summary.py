"""Rendering results for people: the summary table (summary.txt) and its JSON twin. Returns strings, never prints.

A table's columns are declared once, as data: header, whether it is a number (right-aligned), and how
a row gives its cell. Storage (records, the summary view, atomic writes) lives in ``storage``.
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from tabulate import tabulate

from torchbenchmark.dispatch import COMPUTE_BOUND_BELOW, DISPATCH_BOUND_AT
from torchbenchmark.results import MIN_STEPS_FOR_SPREAD, UNTRUSTWORTHY_IQR_FRACTION, CaseResult, Dispatch, format_ms
from torchbenchmark.storage import Summary, differs, dumps, sort_rows


def number(value: float | None, digits: int) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def significant(value: float | None) -> str:
    """Step times span 0.01 ms to seconds: three significant figures, never scientific notation."""
    return "" if value is None else format_ms(value)


@dataclasses.dataclass(frozen=True)
class Column:
    header: str
    cell: Callable[[CaseResult], str]
    numeric: bool = True
    html: Callable[[Any], str] | None = None  # the cell as HTML (links); None: the text cell, escaped


def _phases(result: CaseResult) -> str:
    phases = result.phases_pct
    return "/".join(f"{phases[p]:.0f}" for p in ("forward", "backward", "optimizer")) if phases else ""


def _fraction(dispatch: Dispatch) -> float:
    """The uncapped overhead fraction where the row has one (a step can hold more overhead than 100%)."""
    return dispatch.overhead_fraction if dispatch.overhead_fraction_uncapped is None else dispatch.overhead_fraction_uncapped


def note(result: CaseResult) -> str:
    """Why an ok row's figure is not to be trusted, and what else to know of its costs; or nothing."""
    notes = []
    reasons = result.untrustworthy_reasons
    if reasons:
        notes.append(f"UNTRUSTWORTHY: {'; '.join(reasons)}")
    if result.costs is not None and result.costs.compute_limit == "kernels":
        notes.append(f"kernels limit it: {result.costs.pct_of_peak:.1f}% of peak")
    if result.costs is not None and (result.costs.pct_of_peak or 0) > 100:
        notes.append("above the peak: the peak was measured under load")
    dispatch = result.dispatch
    if dispatch is not None and dispatch.borderline and dispatch.overhead_interval is not None:
        low, high = dispatch.overhead_interval
        notes.append(f"borderline: overhead {100 * low:.0f}-{100 * high:.0f}%")
    if dispatch is not None and dispatch.scaling is not None and not dispatch.scaling.agrees:
        notes.append(f"scaling disagrees: bound {100 * dispatch.scaling.fraction_upper:.1f}%")
    if result.distributed is not None and result.distributed.reading != "compute":
        notes.append(f"{result.distributed.reading}: waits on collectives {result.distributed.exposed_comm_pct:.0f}% of the step")
    return "; ".join(notes)


def plural(count: int, noun: str) -> str:
    """``1 case``, ``2 cases``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def render_untrustworthy(results: Iterable[CaseResult], specs: Mapping[str, str] | None = None) -> str:
    """The closing lines of a sweep: each row not to be trusted, why, and what to do; empty if none.

    ``specs`` maps a row's model name to what ``--models`` took for it (a plug-in's spec).
    """
    rows = [r for r in results if r.status == "ok" and r.untrustworthy_reasons]
    if not rows:
        return ""
    lines = [f"{plural(len(rows), 'row')} not to be trusted (marked UNTRUSTWORTHY in summary.txt):"]
    for row in rows:
        lines.append(f"  {row.model} {row.mode} {row.device}: {'; '.join(row.untrustworthy_reasons)}")
        if row.step_time is not None and row.step_time.n < MIN_STEPS_FOR_SPREAD:
            lines.append(f"    measure more steps: drop --steps, or give --steps {MIN_STEPS_FOR_SPREAD} or more")
        else:
            spec = (specs or {}).get(row.model, row.model)
            lines.append(f"    rerun it on a quieter machine: python diagnostics.py --models {spec} --modes {row.mode}")
    return "\n".join(lines)


def _cost(result: CaseResult, name: str, scale: float = 1.0) -> float | None:
    """A figure of the row's costs, divided by ``scale``; None when the row has none."""
    value = getattr(result.costs, name) if result.costs is not None else None
    return None if value is None else value / scale


COLUMNS: tuple[Column, ...] = (
    Column("model", lambda r: r.model, numeric=False),
    Column("mode", lambda r: r.mode, numeric=False),
    Column("device", lambda r: r.device, numeric=False),
    Column("batch", lambda r: "" if r.batch_size is None else str(r.batch_size)),
    Column("status", lambda r: r.status, numeric=False),
    Column("ms/step", lambda r: significant(r.step_time.median_ms if r.step_time else None)),
    Column("IQR ms", lambda r: significant(r.step_time.iqr_ms if r.step_time else None)),
    Column("n", lambda r: "" if r.step_time is None else str(r.step_time.n)),
    Column("light %", lambda r: number(r.light_distortion_pct, 1)),
    Column("detailed %", lambda r: number(r.detailed_distortion_pct, 0)),
    Column("edge %", lambda r: number(r.edge_distortion_pct, 1)),
    Column("fwd/bwd/opt %", _phases, numeric=False),
    Column("ops/step", lambda r: number(r.dispatch.ops_per_step if r.dispatch else None, 0)),
    Column("op µs", lambda r: number(r.dispatch.median_op_us if r.dispatch else None, 1)),
    Column("overhead %", lambda r: number(100 * _fraction(r.dispatch) if r.dispatch else None, 1)),
    Column("verdict", lambda r: r.dispatch.verdict if r.dispatch else "", numeric=False),
    Column("GFLOP/step", lambda r: significant(_cost(r, "flops_per_step", 1e9))),
    Column("GFLOP/s", lambda r: significant(_cost(r, "achieved_gflops"))),
    Column("% peak", lambda r: number(_cost(r, "pct_of_peak"), 1)),
    Column("peak MB", lambda r: number(_cost(r, "peak_memory_mb"), 0)),
    Column("samples/s", lambda r: significant(_cost(r, "samples_per_s"))),
    Column("note", lambda r: r.error or note(r), numeric=False),
)
VARIANT = Column("variant", lambda r: r.variant, numeric=False)  # shown when any row is not eager
DISTRIBUTED = (  # shown when any row ran as DistributedDataParallel
    Column("comm %", lambda r: number(r.distributed.comm_pct if r.distributed else None, 0)),
    Column("exposed %", lambda r: number(r.distributed.exposed_comm_pct if r.distributed else None, 0)),
    Column("skew %", lambda r: number(r.distributed.skew_pct if r.distributed else None, 1)),
)


def render_columns(columns: Sequence[Column], rows: Iterable[Any]) -> str:
    """Any table of this package: the given columns over the given rows, with tabulate."""
    cells = [[column.cell(row) for column in columns] for row in rows]
    return tabulate(
        cells,
        headers=[column.header for column in columns],
        tablefmt="simple",
        colalign=["right" if column.numeric else "left" for column in columns],
        disable_numparse=True,
    )


def render_columns_html(columns: Sequence[Column], rows: Iterable[Any], row_id: Callable[[Any], str] | None = None) -> str:
    """The same table as an HTML ``<table class="sortable">``; a numeric column's cells are right-aligned."""

    def kind(column: Column) -> str:
        return ' class="num"' if column.numeric else ""

    def cell(column: Column, row: Any) -> str:
        content = column.html(row) if column.html else html.escape(column.cell(row))
        return f"<td{kind(column)}>{content}</td>"

    head = "".join(f'<th{kind(c)} scope="col">{html.escape(c.header)}</th>' for c in columns)
    body = []
    for row in rows:
        anchor = f' id="{html.escape(row_id(row))}"' if row_id else ""
        body.append(f"<tr{anchor}>" + "".join(cell(column, row) for column in columns) + "</tr>")
    return f'<table class="sortable">\n<thead><tr>{head}</tr></thead>\n<tbody>\n' + "\n".join(body) + "\n</tbody>\n</table>"


def summary_columns(results: Sequence[CaseResult], run_column: Column | None = None) -> list[Column]:
    columns = list(COLUMNS)
    if any(r.variant != "eager" for r in results):
        columns.insert(3, VARIANT)
    if any(r.distributed for r in results):
        at = next(index for index, column in enumerate(columns) if column.header == "verdict")
        columns[at:at] = DISTRIBUTED
    if run_column is not None:
        columns.insert(-1, run_column)
    return columns


def render_table(results: Iterable[CaseResult], run_column: Column | None = None) -> str:
    """summary.txt's table: one row per case, sorted by model, mode, device, then variant."""
    rows = sort_rows(results)
    return render_columns(summary_columns(rows, run_column), rows)


def _tally(rows: Sequence[CaseResult]) -> str:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.status] = counts.get(row.status, 0) + 1
    return ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "none"


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
             more, compute-bound under {COMPUTE_BOUND_BELOW:.0%}, mixed between (README: how the verdict is decided)
GFLOP/step   one step's FLOPs (matmuls, convolutions, attention); GFLOP/s: over ms/step; % peak: of the
             machine's peak_gflops in summary.json; peak MB: most tensor memory live in a step; samples/s: batch/ms
note         why a case did not end ok; UNTRUSTWORTHY and why for an ok row whose figure is not to be
             trusted: warmup not steady, measurement windows that never agreed, an IQR above
             {UNTRUSTWORTHY_IQR_FRACTION:.0%} of the median, or fewer than {MIN_STEPS_FOR_SPREAD} steps. Rerun those on a quieter machine."""
DISTRIBUTED_LEGEND = """\
comm %: (--ddp) share of the step with a collective running on a rank, mean over ranks; exposed %: the
part of it no compute overlapped (the step waited); skew %: slowest rank's median step over the fastest's."""


def render_text(summary: Summary, run_id: str | None = None) -> str:
    """summary.txt: a header naming where and when, the table, and a legend for what needs one.

    ``run_id`` is the run that just wrote the summary; rows carried from earlier runs get a ``run``
    column, marked ``*`` when they were measured on another machine or torch version.
    """
    results = list(summary.rows)
    environment = summary.environment
    current = [r for r in results if r.run_id == run_id] if run_id else results
    carried = [r for r in results if run_id and r.run_id != run_id]
    header = [
        f"torchbenchmark diagnostics, started {environment.get('started_at', '?')}",
        f"torch {environment.get('torch', '?')} on {environment.get('device_name', '?')}, "
        f"{environment.get('threads', '?')} threads; this run: {plural(len(current), 'case')} ({_tally(current)})",
    ]
    run_column = None
    if carried:
        header.append(f"carried from earlier runs: {plural(len(carried), 'case')} ({_tally(carried)}); "
                      "their run is in the 'run' column, * when from another machine or torch version")  # fmt: skip
        run_column = Column("run", lambda r: _run_mark(summary, r, run_id), numeric=False)
    legend = LEGEND + ("\n" + DISTRIBUTED_LEGEND if any(r.distributed for r in results) else "")
    return "\n".join(header) + "\n\n" + render_table(results, run_column) + "\n\n" + legend + "\n"


def _run_mark(summary: Summary, row: CaseResult, run_id: str | None) -> str:
    if row.run_id == run_id:
        return "this"
    started = str(summary.environment_of(row).get("started_at") or row.run_id or "?")[:16].replace("T", " ")
    return started + ("*" if differs(summary.environment, summary.environment_of(row)) else "")


def render_json(results: Sequence[CaseResult], environment: Mapping[str, Any]) -> str:
    """A summary.json document of ``results``; ``environment`` is the latest run's."""
    summary = Summary("", dict(environment), tuple(results), {})
    return dumps(summary.to_dict())


def render_summary_json(summary: Summary) -> str:
    return dumps(summary.to_dict())


def _interval(case: Any) -> str:
    estimate = case.estimate
    return "" if estimate is None else f"{estimate.low:.3f} to {estimate.high:.3f}"


def _verdicts(case: Any) -> str:
    if case.base_verdict == case.new_verdict or case.call in ("only in base", "only in new"):
        return case.new_verdict or case.base_verdict or ""
    return f"{case.base_verdict or '-'} -> {case.new_verdict or '-'}"


COMPARISON_COLUMNS: tuple[Column, ...] = (
    Column("call", lambda c: c.call, numeric=False),
    Column("model", lambda c: c.model, numeric=False),
    Column("mode", lambda c: c.mode, numeric=False),
    Column("device", lambda c: c.device, numeric=False),
    Column("base ms", lambda c: significant(c.base_ms)),
    Column("new ms", lambda c: significant(c.new_ms)),
    Column("new/base", lambda c: "" if c.estimate is None else f"{c.estimate.ratio:.3f}"),
    Column("95% interval", _interval),
    Column("n", lambda c: "" if c.estimate is None else f"{c.estimate.n_base}/{c.estimate.n_new}"),
    Column("catches", lambda c: "" if c.detectable_pct is None else f"{c.detectable_pct:.1f}%"),
    Column("verdict", _verdicts, numeric=False),
    Column("note", lambda c: "; ".join(c.notes), numeric=False),
)


def render_comparison(comparison: Any) -> str:
    """The comparison of two runs as text: regressions first, then a line on how to read it."""
    columns = list(COMPARISON_COLUMNS)
    if any(case.variant != "eager" for case in comparison.cases):
        columns.insert(4, Column("variant", lambda c: c.variant, numeric=False))
    tally = ", ".join(f"{n} {call}" for call, n in comparison.counts().items())
    lines = [f"base: {comparison.base}", f"new:  {comparison.new}", f"{plural(len(comparison.cases), 'case')}: {tally}"]
    if comparison.detectable_pct is not None:
        lines.append(f"catches: slowdowns of {comparison.detectable_pct:.1f}% or more, 9 times in 10, in the median case")
    lines += [f"note: {note}" for note in comparison.notes]
    return (
        "\n".join(lines) + "\n\n" + render_columns(columns, comparison.cases) + "\n\n"
        f"new/base: ratio of median step times (per-process medians, geometric mean), with its 95% interval; "
        "n: processes per side; catches: the smallest slowdown a comparison measured alike calls slower 9 times in 10.\n"
        f"slower/faster: past the {comparison.threshold_pct:g}% threshold and outside noise "
        "(the interval excludes 1); same: within the threshold or within noise.\n"
    )
