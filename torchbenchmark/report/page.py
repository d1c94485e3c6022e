"""The report: one self-contained HTML page per sweep and per comparison, and what a notebook shows.

The page opens offline and needs nothing but itself: no script, style, font or image is fetched (the
sorting script and the style sheet, ``report/static/``, are inlined; plots are SVG with text as text). It
is written as ``OUT/report.html`` after every sweep and by ``compare --html FILE``; the public API shows
the same content in a notebook. Returns strings, never prints or writes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from torchbenchmark.analyze.compare import Comparison
from torchbenchmark.analyze.verdict import COMPUTE_BOUND_BELOW, DISPATCH_BOUND_AT
from torchbenchmark.report.bars import distortion, phase_split, step_times
from torchbenchmark.report.case import EXTRAS, case_article, doubts, extra_text, links
from torchbenchmark.report.explain import bound_table_html, op_diffs_html
from torchbenchmark.report.format import Column, plural, render_columns_html
from torchbenchmark.report.html import badge, escape, figure_html, key_values, link, page, section
from torchbenchmark.report.plots import case_id, label, ratio_intervals, speedups, suite_map
from torchbenchmark.report.summary import LEGEND, summary_columns
from torchbenchmark.report.tables import comparison_columns, comparison_tally
from torchbenchmark.results.records import Summary, differs
from torchbenchmark.results.schema import CaseResult, sort_rows

ENVIRONMENT_KEYS = (
    "device_name",
    "cpu",
    "cpu_count",
    "threads",
    "torch",
    "cuda",
    "python",
    "platform",
    "host",
    "flush_denormal",
    "malloc",
    "peak_gflops",
    "peak_gflops_bfloat16",
    "peak_gflops_float16",
    "command",
    "started_at",
    "fingerprint",
)


def environment_section(summary: Summary) -> str:
    environment = summary.environment
    pairs = [(key, escape(environment[key])) for key in ENVIRONMENT_KEYS if environment.get(key) not in (None, "")]
    counts: dict[str, int] = {}
    for row in summary.rows:
        counts[row.run_id or "?"] = counts.get(row.run_id or "?", 0) + 1
    runs = [
        (
            run_id,
            str(env.get("started_at", "")),
            str(env.get("command", "")),
            str(env.get("host", "")),
            str(env.get("torch", "")),
            "yes" if differs(environment, env) else "",
            counts.get(run_id, 0),
        )
        for run_id, env in sorted(summary.runs.items())
    ]
    columns = [
        Column(header, lambda r, i=i: str(r[i]), numeric=header == "rows")
        for i, header in enumerate(("run", "started", "command", "host", "torch", "another machine or torch", "rows"))
    ]
    table = f'<div class="scroll">{render_columns_html(columns, runs)}</div>' if runs else ""
    return section(
        "environment",
        "Environment and runs",
        key_values(pairs, "two"),
        f"<p>The rows below come from {len(runs) or 1} run{'s' if len(runs) > 1 else ''}; the environment above is the latest run's.</p>",
        table,
    )


def attention_section(summary: Summary) -> str:
    flagged = [(row, doubts(summary, row)) for row in sort_rows(summary.rows)]
    flagged = [(row, reasons) for row, reasons in flagged if reasons]
    if not flagged:
        body = '<p class="fine">Every row ran ok, with steady warmup and agreeing measurement windows, on this machine.</p>'
    else:
        items = "".join(
            f'<li><a href="#{case_id(row)}">{escape(label(row, 2))}</a>: {escape("; ".join(reasons))}'
            + (f" ({link(row.log, 'log')})" if row.log else "")
            + "</li>"
            for row, reasons in flagged
        )
        body = (
            f'<div class="warn">{len(flagged)} of {plural(len(summary.rows), "row")} {"has" if len(flagged) == 1 else "have"} '
            "no figures or figures to read "
            f"with care: read these before the plots.</div>\n<ul>{items}</ul>"
        )
    return section("attention", "Rows to read with care", body)


def table_columns(rows: Sequence[CaseResult]) -> list[Column]:
    """summary.txt's columns, the extra figures rows carry, and links to each case's traces and log."""
    columns = summary_columns(rows)
    columns[0] = dataclasses.replace(columns[0], html=lambda r: f'<a href="#{case_id(r)}">{escape(r.model)}</a>')
    columns = [
        dataclasses.replace(c, html=lambda r, c=c: f'<span class="wrap">{escape(c.cell(r))}</span>') if c.header == "note" else c
        for c in columns
    ]
    shown = {column.figure for column in columns}
    for extra in EXTRAS:
        if extra.name not in shown and any(extra_text(row, extra) for row in rows):
            columns.insert(-1, Column(extra.label, lambda r, x=extra: extra_text(r, x)))
    columns.append(Column("traces and log", links, numeric=False, html=links))
    return columns


PERFETTO = (
    "<p>To open a trace: go to ui.perfetto.dev in a browser and drop the <code>.pt.trace.json.gz</code> file "
    "on it (it is read in the browser, not uploaded), or open <code>chrome://tracing</code> in Chrome and load it. "
    "Links are relative to this page, so keep it in its output folder. The light trace shows how the step's "
    "time is spent; the detailed one adds shapes, memory events and Python stacks, but its timings are "
    "distorted (the 'detailed %' column). FLOPs are counted apart from both (the GFLOP columns).</p>"
)


def table_section(summary: Summary) -> str:
    rows = sort_rows(summary.rows)
    table = render_columns_html(table_columns(rows), rows, row_id=lambda r: "row-" + case_id(r)[5:])
    return section(
        "table",
        "Every row",
        "<p>Click a column's header to sort by it (in a browser).</p>",
        f'<div class="scroll">{table}</div>',
        f"<pre>{escape(LEGEND)}</pre>",
        PERFETTO,
    )


def summary_body(summary: Summary) -> str:
    """The report's content without the page around it: what a notebook shows."""
    rows = sort_rows(summary.rows)
    environment = summary.environment
    parts = [
        '<div class="tb-report">',
        "<h1>torchbenchmark report</h1>",
        f'<p class="sub">{escape(summary.source)}: {plural(len(rows), "case")} on {escape(environment.get("device_name", "?"))}, '
        f"torch {escape(environment.get('torch', '?'))}, started {escape(environment.get('started_at', '?'))}</p>",
        environment_section(summary),
        attention_section(summary),
        section(
            "map",
            "Suite map",
            figure_html(
                suite_map(rows),
                f"One point per case that ran ok; click one to jump to it. Overhead share of {100 * DISPATCH_BOUND_AT:.0f}% "
                f"or more is dispatch-bound (fewer or fused ops help, faster kernels do not), under "
                f"{100 * COMPUTE_BOUND_BELOW:.0f}% compute-bound.",
            ),
        ),
        section(
            "step-time",
            "Step time and its spread",
            figure_html(
                step_times(rows),
                "Measured outside any profiler, on one log axis: the median as a dot coloured by verdict, the "
                "interquartile range as a band, the fastest step as a tick.",
            ),
        ),
        section(
            "phases",
            "Forward, backward and optimizer",
            figure_html(
                phase_split(rows),
                "Each annotation's share of the profiled step; 'other' is what no annotation covers (all of an unannotated model's step).",
            ),
        ),
        section(
            "distortion",
            "Profiler distortion",
            figure_html(
                distortion(rows),
                "How much slower a step runs inside the light profile (CPU activity only) and the detailed one "
                "(shapes, memory, stacks): read the light trace for how long, the detailed one for what.",
            ),
        ),
    ]
    speedup = speedups(rows)
    if speedup is not None:
        parts.append(
            section(
                "speedup", "Speedup over eager", figure_html(speedup, "Step time of eager over each variant's."), bound_table_html(rows)
            )
        )
    parts.append(table_section(summary))
    parts.append(section("cases", "Cases", *(case_article(summary, row) for row in rows)))
    parts.append("</div>")
    return "\n".join(parts)


def render_report(summary: Summary) -> str:
    """The sweep's report page."""
    return page(f"torchbenchmark report: {summary.source}", summary_body(summary))


def comparison_body(comparison: Comparison, base: Summary | None = None, new: Summary | None = None) -> str:
    """The comparison without the page around it: counts, the ratio plot, then every case, regressions first."""
    regressions = comparison.regressions
    if regressions:
        verdict = (
            f'<div class="warn">{len(regressions)} regression{"s" if len(regressions) > 1 else ""}: '
            + ", ".join(f'<a href="#{case_id(c)}">{escape(label(c, 2))}</a> ({escape(c.call)})' for c in regressions)
            + "</div>"
        )
    else:
        verdict = '<p class="fine">Nothing slower and nothing newly failing.</p>'
    notes = "".join(f'<div class="warn">{escape(text)}</div>' for text in comparison.notes)
    if comparison.detectable_pct is not None:
        notes += (
            f"<p>This comparison catches slowdowns of {comparison.detectable_pct:.1f}% or more, 9 times in 10, in the "
            "median case; each case's own figure is its <em>catches</em> column.</p>"
        )
    columns = comparison_columns(comparison)
    columns[0] = dataclasses.replace(columns[0], html=lambda c: badge(c.call))
    columns.insert(-1, Column("status", lambda c: " -> ".join(dict.fromkeys(s for s in (c.base_status, c.new_status) if s)), numeric=False))
    table = render_columns_html(columns, comparison.cases, row_id=case_id)
    environments = ""
    if base is not None and new is not None:
        keys = [key for key in ENVIRONMENT_KEYS if base.environment.get(key) is not None or new.environment.get(key) is not None]
        rows = [(key, str(base.environment.get(key, "")), str(new.environment.get(key, ""))) for key in keys]
        env_columns = [Column(h, lambda r, i=i: r[i], numeric=False) for i, h in enumerate(("", "base", "new"))]
        env_table = render_columns_html(env_columns, rows, kind="environments")
        environments = section("environments", "Environments", f'<div class="scroll">{env_table}</div>')
    return "\n".join(
        [
            '<div class="tb-report">',
            "<h1>torchbenchmark comparison</h1>",
            f'<p class="sub">base: {escape(comparison.base)}<br>new: {escape(comparison.new)}<br>{escape(comparison_tally(comparison))}</p>',
            section("verdict", "Regressions", verdict, notes),
            section(
                "ratios",
                "Ratios",
                figure_html(
                    ratio_intervals(comparison),
                    "Each case's new/base ratio of median step times (per-process medians, geometric mean) with its 95% "
                    f"interval. Slower or faster: past the {comparison.threshold_pct:g}% threshold (shaded band) and the "
                    "interval excludes 1.",
                ),
            ),
            section(
                "cases",
                "Every case",
                "<p>Regressions first. Click a column's header to sort by it.</p>",
                f'<div class="scroll">{table}</div>',
            ),
            op_diffs_html(comparison),
            environments,
            "</div>",
        ]
    )


def render_comparison_report(comparison: Comparison, base: Summary | None = None, new: Summary | None = None) -> str:
    """The comparison's page; with both sides' summaries it also sets their environments side by side."""
    return page("torchbenchmark comparison", comparison_body(comparison, base, new))
