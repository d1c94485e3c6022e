"""A case explained on the report: what removing its overhead would buy, a variant's speedup against the eager
bound, where the overhead lives (by module, class and line), and on a comparison which ops moved."""

from __future__ import annotations

from collections.abc import Sequence

from torchbenchmark.analyze.bound import AgainstBound, against_eager
from torchbenchmark.analyze.compare import Comparison
from torchbenchmark.report.format import Column, render_columns_html, significant
from torchbenchmark.report.html import escape, section
from torchbenchmark.report.plots import case_id, label
from torchbenchmark.report.tables import OP_DIFF_COLUMNS, events_change, share_columns
from torchbenchmark.results.records import Summary
from torchbenchmark.results.schema import CaseResult


def bound_text(row: CaseResult) -> str:
    """``2.1 ms without the overhead (1.8 to 2.4): at most 1.9x (1.6x to 2.2x)``; empty without a bound."""
    bound = row.bound
    if bound is None:
        return ""
    low_ms, high_ms = bound.overhead_free_range_ms
    low, high = bound.speedup_bound_range
    at_most = "at least" if bound.bound_capped else "at most"
    return (
        f"{significant(bound.overhead_free_ms)} ms a step without the estimated overhead ({significant(low_ms)} to "
        f"{significant(high_ms)}): removing it buys {at_most} {bound.speedup_bound:.2f}x ({low:.2f}x to {high:.2f}x)"
    )


def against_text(against: AgainstBound | None) -> str:
    """A variant row's measured speedup beside the eager row's bound, and what it means."""
    if against is None:
        return ""
    low, high = against.bound.speedup_bound_range
    return f"{against.speedup:.2f}x measured against the eager bound {against.bound.speedup_bound:.2f}x ({low:.2f}x to {high:.2f}x): {against.reading}"


def case_against(summary: Summary, row: CaseResult) -> str:
    return against_text(against_eager(summary.rows).get(row.key))


def attribution_html(row: CaseResult) -> str:
    """The case's overhead by module, by class and by line, each a table; or why there is none."""
    attribution = row.attribution
    if attribution is None:
        return ""
    parts = [f'<p class="note">{escape(attribution.attribution_note)}</p>'] if attribution.attribution_note else []
    for part, shares in (
        ("module", attribution.overhead_by_module),
        ("class", attribution.overhead_by_class),
        ("line", attribution.overhead_by_line),
    ):
        if shares:
            parts.append(render_columns_html(share_columns(part), shares, kind="ops"))
    if len(parts) > 1 or attribution.overhead_by_module:
        parts.insert(0, "<p>Where the estimated overhead lives, from the detailed profile (per step):</p>")
    return "\n".join(parts)


BOUND_COLUMNS = (
    Column(
        "case",
        lambda item: label(item[0], 2),
        numeric=False,
        html=lambda item: f'<a href="#{case_id(item[0])}">{escape(label(item[0], 2))}</a>',
    ),
    Column("speedup vs eager", lambda item: f"{item[1].speedup:.2f}x"),
    Column("eager bound", lambda item: f"{item[1].bound.speedup_bound:.2f}x"),
    Column("bound's range", lambda item: "{:.2f}x to {:.2f}x".format(*item[1].bound.speedup_bound_range)),
    Column("reading", lambda item: item[1].reading, numeric=False),
)


def bound_table_html(rows: Sequence[CaseResult]) -> str:
    """Every variant row's speedup beside its eager row's bound; empty when there is none."""
    against = against_eager(rows)
    items = [(row, against[row.key]) for row in rows if row.key in against]
    if not items:
        return ""
    return (
        "<p>Each variant's measured speedup beside the bound its eager row's overhead sets on any remedy that removes "
        "overhead (fusing, fewer ops): past it, the variant also made the arithmetic faster (docs/explain.md).</p>\n"
        + render_columns_html(BOUND_COLUMNS, items)
    )


def op_diffs_html(comparison: Comparison) -> str:
    """The comparison page's section on which ops moved, a table per case; empty when no case's ops were read."""
    parts = []
    for case in comparison.cases:
        if case.ops is None and not case.ops_note:
            continue
        title = f'<h3><a href="#{case_id(case)}">{escape(label(case, 2))}</a> ({escape(case.call)})</h3>'
        if case.ops is None:
            parts.append(f'{title}\n<p class="note">{escape(case.ops_note)}</p>')
            continue
        only = [
            f"only in {side}: {', '.join(names)}"
            for side, names in (("base", case.ops.only_in_base), ("new", case.ops.only_in_new))
            if names
        ]
        text = "; ".join([*only, f"op events per step: {events_change(case.ops)}"])
        parts.append(f"{title}\n{render_columns_html(OP_DIFF_COLUMNS, case.ops.ops, kind='ops')}\n<p>{escape(text)}</p>")
    if not parts:
        return ""
    intro = (
        "<p>Each case's ops whose time per step moved most between the two sides' light traces, either way "
        "(an op one side never ran counts from zero), ranked by their total time (children included), with "
        "their self time and calls per step.</p>"
    )
    return section("ops", "Ops that moved", intro, *parts)
