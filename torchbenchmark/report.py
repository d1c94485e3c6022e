"""The report: one self-contained HTML page per sweep and per comparison, its plots drawn by matplotlib as inline SVG.

The page opens offline and needs nothing but itself: no script, style, font or image is fetched (the
sorting script and the style sheet are inline, plots are SVG with text as text). It is written as
``OUT/report.html`` at the end of every sweep, by ``python diagnostics.py compare ... --html FILE``,
and in a notebook a ``Summary`` or ``Comparison`` shows the same content through ``_repr_html_``.
Returns strings, never prints or writes.
"""

from __future__ import annotations

import dataclasses
import html
import io
import re
from collections.abc import Iterable, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display, and no GUI toolkit imported

from matplotlib import pyplot as plt  # noqa: E402
from matplotlib import ticker  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from torchbenchmark.compare import Comparison, CaseComparison  # noqa: E402
from torchbenchmark.contract import PHASES  # noqa: E402
from torchbenchmark.dispatch import COMPUTE_BOUND_BELOW, DISPATCH_BOUND_AT, VERDICTS  # noqa: E402
from torchbenchmark.results import CaseResult, Costs  # noqa: E402
from torchbenchmark.storage import Summary, sort_rows  # noqa: E402
from torchbenchmark.summary import (  # noqa: E402
    COMPARISON_COLUMNS,
    LEGEND,
    Column,
    differs,
    number,
    render_columns_html,
    significant,
    summary_columns,
)

VERDICT_COLOURS = {"dispatch-bound": "tab:red", "mixed": "tab:orange", "compute-bound": "tab:blue"}
PHASE_COLOURS = {"forward": "tab:blue", "backward": "tab:orange", "optimizer": "tab:green", "other": "0.8"}
PLAIN = ticker.FuncFormatter(lambda value, _: f"{value:g}")  # 100 and 0.8, not 10^2 and 8x10^-1
RATIO_TICKS = (0.25, 0.33, 0.5, 0.67, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0)
CALL_COLOURS = {"slower": "tab:red", "faster": "tab:green", "verdict changed": "tab:purple", "same": "0.45"}
TOP_OPS_SHOWN = 8
# Text stays text (no glyphs as paths, no embedded fonts): a smaller page, searchable and selectable.
STYLE = {"svg.fonttype": "none", "font.size": 8, "axes.titlesize": 9, "axes.spines.top": False, "axes.spines.right": False}
SVG_METADATA = {"Date": None, "Creator": None, "Format": None, "Type": None}  # no metadata block at all


@dataclasses.dataclass(frozen=True)
class Extra:
    """A figure some rows carry (compiled variants, FLOPs, memory): shown where present, absent otherwise."""

    name: str  # the row's field, or its JSON key while this version keeps it in ``extra``
    label: str
    digits: int | None  # None: three significant figures, for figures that span many powers of ten
    scale: float = 1.0  # shown as value x scale


EXTRAS = (
    Extra("speedup_vs_eager", "speedup vs eager (x)", 2),
    Extra("flops_per_step", "GFLOP/step", None, scale=1e-9),
    Extra("achieved_gflops", "achieved GFLOP/s", None),
    Extra("pct_of_peak", "% of peak", 1),
    Extra("peak_memory_mb", "peak memory MB", 0),
    Extra("samples_per_s", "samples/s", None),
    Extra("gpu_busy_pct", "GPU busy %", 1),
)


def field(row: CaseResult, name: str) -> Any:
    """A row's figure by name: a field of the row or of its costs, or a key this version does not know."""
    for holder in (row, row.costs):
        value = getattr(holder, name, None) if holder is not None else None
        if value is not None:
            return value
    return row.extra.get(name)


def _extra_text(row: CaseResult, extra: Extra) -> str:
    value = field(row, extra.name)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return ""
    return significant(value * extra.scale) if extra.digits is None else number(value * extra.scale, extra.digits)


def case_id(row: CaseResult | CaseComparison) -> str:
    """The anchor of a case's section: its key, with anything but letters, digits, '.', '_' and '-' as '-'."""
    return "case-" + re.sub(r"[^A-Za-z0-9_.-]", "-", "-".join(row.key))


def label(row: CaseResult | CaseComparison, devices: int = 1) -> str:
    parts = [row.model, row.mode]
    if devices > 1:
        parts.append(row.device)
    if row.variant != "eager":
        parts.append(row.variant)
    return " ".join(parts)


def doubts(summary: Summary, row: CaseResult) -> list[str]:
    """Why a row's figures deserve less trust than the others', or should not be read at all."""
    reasons = []
    if row.status != "ok":
        reasons.append(f"{row.status}: {row.error or 'no reason recorded'}")
    elif row.untrustworthy_reasons:
        reasons.append("untrustworthy: " + "; ".join(row.untrustworthy_reasons))
    if differs(summary.environment, summary.environment_of(row)):
        environment = summary.environment_of(row)
        reasons.append(f"measured on another machine or torch version ({environment.get('host')}, "
                       f"torch {environment.get('torch')}, run {row.run_id})")  # fmt: skip
    return reasons


# Plots ----------------------------------------------------------------------------------------------


def svg(figure: Figure, prefix: str, titles: dict[str, str] | None = None) -> str:
    """The figure as an ``<svg>`` element to inline in HTML.

    Ids nothing refers to are dropped and the rest prefixed with ``prefix``, so several plots share a
    page without clashing; ``titles`` maps a link target a plot element carries (``set_urls``) to a
    hover tooltip, and links open in the page itself.
    """
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata=SVG_METADATA, bbox_inches="tight")
    plt.close(figure)
    text = buffer.getvalue()
    text = text[text.index("<svg") :]  # no XML prolog or DOCTYPE inside HTML
    referenced = set(re.findall(r'(?:href="|url\()#([^"\)]+)', text))
    text = re.sub(r' id="([^"]+)"', lambda m: f' id="{prefix}-{m[1]}"' if m[1] in referenced else "", text)
    text = re.sub(r'(href="|url\()#([^"\)]+)', lambda m: f"{m[1]}#{m[2]}" if m[2].startswith("case-") else f"{m[1]}#{prefix}-{m[2]}", text)
    text = re.sub(r"\s*\n\s*", "\n", text).replace(' target="_blank"', "")
    for target, title in (titles or {}).items():
        text = text.replace(f'<a xlink:href="{target}">', f'<a xlink:href="{target}"><title>{html.escape(title)}</title>', 1)
    return text


def _ok(rows: Iterable[CaseResult]) -> list[CaseResult]:
    return [row for row in rows if row.status == "ok" and row.step_time is not None]


def suite_map(rows: Sequence[CaseResult]) -> str | None:
    """Every case: step time against overhead share, coloured by verdict; a point links to its case."""
    cases = [row for row in _ok(rows) if row.dispatch is not None]
    if not cases:
        return None
    devices = len({row.device for row in rows})
    with plt.rc_context(STYLE):
        figure, axes = plt.subplots(figsize=(10, 4.8))
        axes.axhspan(100 * DISPATCH_BOUND_AT, 100, color=VERDICT_COLOURS["dispatch-bound"], alpha=0.06, lw=0)
        axes.axhspan(100 * COMPUTE_BOUND_BELOW, 100 * DISPATCH_BOUND_AT, color=VERDICT_COLOURS["mixed"], alpha=0.06, lw=0)
        titles = {}
        for verdict in VERDICTS:
            group = [row for row in cases if row.dispatch.verdict == verdict]
            if not group:
                continue
            points = axes.scatter(
                [row.step_time.median_ms for row in group], [100 * row.dispatch.overhead_fraction for row in group],
                s=28, color=VERDICT_COLOURS[verdict], label=verdict, edgecolor="white", linewidth=0.5, zorder=3,
            )  # fmt: skip
            points.set_urls([f"#{case_id(row)}" for row in group])
            titles.update({f"#{case_id(row)}": f"{label(row, devices)}: {row.headline()}" for row in group})
            for row in group:
                if row.dispatch.overhead_fraction >= COMPUTE_BOUND_BELOW or len(cases) <= 12:
                    axes.annotate(label(row, devices), (row.step_time.median_ms, 100 * row.dispatch.overhead_fraction),
                                  xytext=(4, 3), textcoords="offset points", fontsize=6.5, color="0.25")  # fmt: skip
        axes.set_xscale("log")
        axes.xaxis.set_major_formatter(PLAIN)
        axes.set_ylim(-3, 103)
        axes.set_xlabel("median step time, ms (log scale)")
        axes.set_ylabel("estimated per-op overhead, % of step")
        axes.grid(True, which="major", alpha=0.3)
        axes.legend(title="verdict", loc="upper right", frameon=False)
        axes.set_title("Suite map: where each case's step time goes")
    return svg(figure, "map", titles)


def _per_case(rows: Sequence[CaseResult], title: str) -> tuple[Figure, Any, list[CaseResult]]:
    """A figure with one line per case that ran ok, labelled, first case at the top."""
    cases = _ok(rows)[::-1]  # matplotlib draws the first line at the bottom
    devices = len({row.device for row in rows})
    with plt.rc_context(STYLE):
        figure, axes = plt.subplots(figsize=(8, 0.8 + 0.17 * max(len(cases), 3)))
        axes.set_yticks(range(len(cases)), [label(row, devices) for row in cases])
        axes.set_ylim(-0.7, len(cases) - 0.3)
        axes.tick_params(axis="y", length=0)
        axes.grid(True, axis="x", alpha=0.3)
        axes.set_title(title)
    return figure, axes, cases


def step_times(rows: Sequence[CaseResult]) -> str | None:
    """Each case's step time: the median coloured by verdict, the interquartile range as a bar, the fastest step."""
    if not _ok(rows):
        return None
    figure, axes, cases = _per_case(rows, "step time, ms (log scale): median, interquartile range, | fastest step")
    y = range(len(cases))
    with plt.rc_context(STYLE):
        medians = [row.step_time.median_ms for row in cases]
        spread = [[row.step_time.iqr_ms / 2 for row in cases]] * 2
        axes.errorbar(medians, y, xerr=spread, fmt="none", ecolor="0.35", elinewidth=1.2, capsize=2, zorder=2)
        axes.scatter(medians, y, c=[VERDICT_COLOURS.get(row.dispatch.verdict if row.dispatch else "", "0.5") for row in cases],
                     s=16, zorder=3)  # fmt: skip
        axes.scatter([row.step_time.min_ms for row in cases], y, marker="|", color="0.4", s=20, zorder=2)
        axes.set_xscale("log")
        axes.xaxis.set_major_formatter(PLAIN)
    return svg(figure, "steps")


def phase_split(rows: Sequence[CaseResult]) -> str | None:
    """Each case's forward, backward and optimizer share of the profiled step, and what no annotation covers."""
    if not _ok(rows):
        return None
    figure, axes, cases = _per_case(rows, "share of the profiled step, %")
    with plt.rc_context(STYLE):
        left = [0.0] * len(cases)
        for phase in (*PHASES, "other"):
            widths = [_phase_pct(row, phase) for row in cases]
            axes.barh(range(len(cases)), widths, left=left, color=PHASE_COLOURS[phase], label=phase, height=0.7)
            left = [a + b for a, b in zip(left, widths)]
        axes.set_xlim(0, 100)
        axes.legend(ncols=4, loc="upper center", bbox_to_anchor=(0.5, -0.35 / max(len(cases), 3) ** 0.5), frameon=False)
    return svg(figure, "phases")


def distortion(rows: Sequence[CaseResult]) -> str | None:
    """How much slower each case's step runs inside the light and the detailed profile."""
    if not _ok(rows):
        return None
    figure, axes, cases = _per_case(rows, "profiler distortion: % slower inside the profile (log scale past ±10%)")
    with plt.rc_context(STYLE):
        for offset, (kind, colour) in zip((-0.15, 0.15), (("light", "tab:blue"), ("detailed", "tab:red"))):
            shown = [(getattr(row, f"{kind}_distortion_pct"), i) for i, row in enumerate(cases)]
            shown = [(value, i) for value, i in shown if value is not None]
            axes.scatter([v for v, _ in shown], [i + offset for _, i in shown], s=12, color=colour, label=f"{kind} profile")
        axes.axvline(0, color="0.5", linewidth=0.8)
        axes.set_xscale("symlog", linthresh=10)
        axes.xaxis.set_major_formatter(PLAIN)
        axes.legend(loc="lower right", frameon=False)
    return svg(figure, "distortion")


def _phase_pct(row: CaseResult, phase: str) -> float:
    """A phase's share of the step; 'other' is what no annotation covers (all of it for an unannotated model)."""
    shares = row.phases_pct or {}
    if phase == "other":
        return max(0.0, 100.0 - sum(shares.get(p, 0.0) for p in PHASES))
    return shares.get(phase, 0.0)


def speedups(rows: Sequence[CaseResult]) -> str | None:
    """Compiled variants' speedup over eager, when any row has one."""
    cases = [(label(row), float(field(row, "speedup_vs_eager"))) for row in _ok(rows)
             if isinstance(field(row, "speedup_vs_eager"), (int, float))][::-1]  # fmt: skip
    if not cases:
        return None
    with plt.rc_context(STYLE):
        figure, axes = plt.subplots(figsize=(7, 0.9 + 0.19 * max(len(cases), 3)))
        axes.barh([name for name, _ in cases], [value for _, value in cases],
                  color=["tab:green" if value >= 1 else "tab:red" for _, value in cases], height=0.7)  # fmt: skip
        axes.axvline(1, color="0.3", linewidth=0.8)
        axes.set_title("compiled speedup over eager (x)")
        axes.grid(True, axis="x", alpha=0.3)
    return svg(figure, "speedup")


def ratio_intervals(comparison: Comparison) -> str | None:
    """Each compared case's new/base ratio with its 95% interval; the threshold band shaded."""
    cases = [case for case in comparison.cases if case.estimate is not None][::-1]
    if not cases:
        return None
    devices = len({case.device for case in comparison.cases})
    threshold = 1 + comparison.threshold_pct / 100
    with plt.rc_context(STYLE):
        figure, axes = plt.subplots(figsize=(8, 0.9 + 0.2 * max(len(cases), 3)))
        axes.axvspan(1 / threshold, threshold, color="0.5", alpha=0.12, lw=0, label=f"within ±{comparison.threshold_pct:g}%")
        axes.axvline(1, color="0.3", linewidth=0.8)
        for i, case in enumerate(cases):
            estimate = case.estimate
            colour = CALL_COLOURS.get(case.call, "0.45")
            axes.errorbar([estimate.ratio], [i], xerr=[[estimate.ratio - estimate.low], [estimate.high - estimate.ratio]],
                          fmt="o", color=colour, markersize=4, capsize=2, elinewidth=1.2)  # fmt: skip
        axes.set_yticks(range(len(cases)), [f"{label(case, devices)} ({case.call})" for case in cases])
        axes.set_xscale("log")
        low, high = axes.get_xlim()
        axes.xaxis.set_major_locator(ticker.FixedLocator([tick for tick in RATIO_TICKS if low <= tick <= high]))
        axes.xaxis.set_major_formatter(PLAIN)
        axes.xaxis.set_minor_formatter(ticker.NullFormatter())
        axes.set_xlabel("new / base step time, with its 95% interval (log scale)")
        axes.grid(True, axis="x", which="both", alpha=0.3)
        axes.set_ylim(-0.7, len(cases) - 0.3)
        axes.legend(loc="lower right", frameon=False)
        axes.set_title("What changed: ratio of step times, regressions first")
    return svg(figure, "ratios")


# HTML -----------------------------------------------------------------------------------------------

CSS = """
.tb-report { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d1d1f; max-width: 1180px; margin: 0 auto; padding: 0 16px; }
.tb-report h1 { font-size: 1.6em; margin: 0.6em 0 0.2em; }
.tb-report h2 { font-size: 1.25em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; margin-top: 1.6em; }
.tb-report h3 { font-size: 1.05em; margin: 1.2em 0 0.3em; }
.tb-report .sub { color: #555; margin: 0; }
.tb-report svg { max-width: 100%; height: auto; }
.tb-report table { border-collapse: collapse; font-size: 12px; margin: 0.4em 0; }
.tb-report th, .tb-report td { padding: 2px 7px; border-bottom: 1px solid #eee; text-align: left; vertical-align: top; }
.tb-report th { background: #f5f5f7; position: sticky; top: 0; }
.tb-report .num { text-align: right; font-variant-numeric: tabular-nums; }
.tb-report .scroll { overflow-x: auto; }
.tb-report table.sortable th { white-space: nowrap; }
.tb-report table.sortable th[title] { cursor: pointer; }
.tb-report table.sortable td { white-space: nowrap; }
.tb-report .wrap { display: inline-block; white-space: normal; min-width: 16em; max-width: 32em; }
.tb-report table.sortable th[aria-sort=ascending]::after { content: " \\25B2"; }
.tb-report table.sortable th[aria-sort=descending]::after { content: " \\25BC"; }
.tb-report .badge { display: inline-block; padding: 0 6px; border-radius: 8px; font-size: 12px; color: #fff; background: #888; }
.tb-report .dispatch-bound { background: #d62728; } .tb-report .mixed { background: #ff7f0e; } .tb-report .compute-bound { background: #1f77b4; }
.tb-report .failed, .tb-report .timeout, .tb-report .slower, .tb-report .new-failure { background: #b00020; }
.tb-report .faster, .tb-report .fixed { background: #2ca02c; }
.tb-report .warn { background: #fff4e5; border-left: 4px solid #ff9800; padding: 6px 10px; margin: 0.4em 0; }
.tb-report .fine { background: #eef7ee; border-left: 4px solid #2ca02c; padding: 6px 10px; }
.tb-report dl { display: grid; grid-template-columns: max-content 1fr; gap: 1px 14px; margin: 0.3em 0; font-size: 13px; }
.tb-report dl.two { grid-template-columns: max-content minmax(0, 1fr) max-content minmax(0, 1fr); }
.tb-report dt { color: #555; } .tb-report dd { margin: 0; }
.tb-report article { border-top: 1px solid #eee; }
.tb-report pre { white-space: pre-wrap; font-size: 12px; background: #f8f8f8; padding: 8px; }
@media print {
  .tb-report { max-width: none; font-size: 11px; }
  .tb-report article, .tb-report figure, .tb-report tr { break-inside: avoid; }
  .tb-report th { position: static; }
  .tb-report .scroll { overflow: visible; }
}
"""

# Click a header to sort by it; numeric columns by value, blanks last. Inline: the page fetches nothing.
SORT_SCRIPT = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("thead th").forEach(function (header, column) {
    header.title = "click to sort";
    header.addEventListener("click", function () {
      var ascending = header.getAttribute("aria-sort") !== "ascending";
      var numeric = header.classList.contains("num");
      var body = table.tBodies[0];
      var key = function (row) {
        var text = row.cells[column].textContent.trim();
        return numeric ? parseFloat(text) : text.toLowerCase();
      };
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (numeric && isNaN(x) !== isNaN(y)) { return isNaN(x) ? 1 : -1; }
        var order = x < y ? -1 : x > y ? 1 : 0;
        return ascending ? order : -order;
      });
      table.querySelectorAll("thead th").forEach(function (other) { other.removeAttribute("aria-sort"); });
      header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""


def _e(value: Any) -> str:
    return html.escape(str(value))


def _section(section_id: str, heading: str, *parts: str) -> str:
    return f'<section id="{section_id}">\n<h2>{_e(heading)}</h2>\n' + "\n".join(parts) + "\n</section>"


def _figure_html(svg_text: str | None, caption: str) -> str:
    if svg_text is None:
        return "<p>Nothing to draw: no case has these figures.</p>"
    return f"<figure>\n{svg_text}\n<figcaption>{caption}</figcaption>\n</figure>"


def _badge(text: str | None) -> str:
    return f'<span class="badge {_e((text or "").replace(" ", "-"))}">{_e(text)}</span>' if text else ""


def _link(path: str | None, text: str) -> str:
    return f'<a href="{_e(path)}">{_e(text)}</a>' if path else ""


def _links(row: CaseResult) -> str:
    links = [_link(row.traces.get("light"), "light"), _link(row.traces.get("detailed"), "detailed"), _link(row.log, "log")]
    return " ".join(link for link in links if link)


def _key_values(pairs: Iterable[tuple[str, str]], kind: str = "") -> str:
    items = "".join(f"<dt>{_e(key)}</dt><dd>{value}</dd>" for key, value in pairs if value)
    return (f'<dl class="{kind}">' if kind else "<dl>") + items + "</dl>"


ENVIRONMENT_KEYS = ("device_name", "cpu", "cpu_count", "threads", "torch", "cuda", "python", "platform", "host",
                    "flush_denormal", "malloc", "peak_gflops", "command", "started_at", "fingerprint")  # fmt: skip


def environment_section(summary: Summary) -> str:
    environment = summary.environment
    pairs = [(key, _e(environment[key])) for key in ENVIRONMENT_KEYS if environment.get(key) not in (None, "")]
    counts: dict[str, int] = {}
    for row in summary.rows:
        counts[row.run_id or "?"] = counts.get(row.run_id or "?", 0) + 1
    runs = [
        (run_id, str(env.get("started_at", "")), str(env.get("command", "")), str(env.get("host", "")),
         str(env.get("torch", "")), "yes" if differs(environment, env) else "", counts.get(run_id, 0))
        for run_id, env in sorted(summary.runs.items())
    ]  # fmt: skip
    columns = [Column(header, lambda r, i=i: str(r[i]), numeric=header == "rows") for i, header in enumerate(
        ("run", "started", "command", "host", "torch", "another machine or torch", "rows"))]  # fmt: skip
    table = f'<div class="scroll">{render_columns_html(columns, runs)}</div>' if runs else ""
    return _section("environment", "Environment and runs", _key_values(pairs, "two"),
                    f"<p>The rows below come from {len(runs) or 1} run{'s' if len(runs) > 1 else ''}; "
                    "the environment above is the latest run's.</p>", table)  # fmt: skip


def attention_section(summary: Summary) -> str:
    flagged = [(row, doubts(summary, row)) for row in sort_rows(summary.rows)]
    flagged = [(row, reasons) for row, reasons in flagged if reasons]
    if not flagged:
        body = '<p class="fine">Every row ran ok, with steady warmup and agreeing measurement windows, on this machine.</p>'
    else:
        items = "".join(
            f'<li><a href="#{case_id(row)}">{_e(label(row, 2))}</a>: {_e("; ".join(reasons))}'
            + (f" ({_link(row.log, 'log')})" if row.log else "") + "</li>"
            for row, reasons in flagged
        )  # fmt: skip
        body = (f'<div class="warn">{len(flagged)} of {len(summary.rows)} rows have no figures or figures to read '
                f"with care: read these before the plots.</div>\n<ul>{items}</ul>")  # fmt: skip
    return _section("attention", "Rows to read with care", body)


def table_columns(rows: Sequence[CaseResult]) -> list[Column]:
    """summary.txt's columns, the extra figures rows carry, and links to each case's traces and log."""
    columns = summary_columns(rows)
    columns[0] = dataclasses.replace(columns[0], html=lambda r: f'<a href="#{case_id(r)}">{_e(r.model)}</a>')
    columns = [dataclasses.replace(c, html=lambda r, c=c: f'<span class="wrap">{_e(c.cell(r))}</span>')
               if c.header == "note" else c for c in columns]  # fmt: skip
    shown = {f.name for f in dataclasses.fields(Costs)}  # summary.txt's columns have the costs
    for extra in EXTRAS:
        if extra.name not in shown and any(_extra_text(row, extra) for row in rows):
            columns.insert(-1, Column(extra.label, lambda r, x=extra: _extra_text(r, x)))
    columns.append(Column("traces and log", _links, numeric=False, html=_links))
    return columns


PERFETTO = (
    "<p>To open a trace: go to ui.perfetto.dev in a browser and drop the <code>.pt.trace.json.gz</code> file "
    "on it (it is read in the browser, not uploaded), or open <code>chrome://tracing</code> in Chrome and load it. "
    "Links are relative to this page, so keep it in its output folder. The light trace shows how the step's "
    "time is spent; the detailed one adds shapes, memory, Python stacks and FLOPs, but its timings are "
    "distorted (the 'detailed %' column).</p>"
)


def table_section(summary: Summary) -> str:
    rows = sort_rows(summary.rows)
    table = render_columns_html(table_columns(rows), rows, row_id=lambda r: "row-" + case_id(r)[5:])
    return _section("table", "Every row", "<p>Click a column's header to sort by it (in a browser).</p>",
                    f'<div class="scroll">{table}</div>', f"<pre>{_e(LEGEND)}</pre>", PERFETTO)  # fmt: skip


def _compile_text(row: CaseResult) -> str:
    """A compiled variant's cost and what dynamo made of the module, with each graph break's reason."""
    report = row.compile
    if report is None:
        return ""
    text = _e(f"{report.backend} ({report.mode}): {report.compile_time_s:.1f} s to compile, {report.graphs} graphs, "
              f"{report.graph_breaks} graph breaks, {report.recompiles} recompiles")  # fmt: skip
    reasons = "".join(f"<li>{_e(item.reason)} at {_e(item.where)} ({item.count}x)</li>" for item in report.break_reasons)
    return text + (f"<ul>{reasons}</ul>" if reasons else "")


TOP_OP_COLUMNS = (
    Column("top ops by self time", lambda op: op.name, numeric=False),
    Column("self ms/step", lambda op: significant(op.self_ms_per_step)),
    Column("calls/step", lambda op: f"{op.calls_per_step:g}"),
    Column("% of step", lambda op: number(op.pct_of_step, 1)),
    Column("", lambda op: "", numeric=False,
           html=lambda op: f'<meter min="0" max="100" value="{op.pct_of_step:.1f}">{op.pct_of_step:.0f}%</meter>'),
)


def top_ops_table(row: CaseResult) -> str:
    """A case's top ops by self time (their own time, not their children's) in the light profile."""
    if not row.top_ops:
        return ""
    return render_columns_html(TOP_OP_COLUMNS, row.top_ops[:TOP_OPS_SHOWN]).replace('class="sortable"', 'class="ops"', 1)


def case_article(summary: Summary, row: CaseResult) -> str:
    step, dispatch = row.step_time, row.dispatch
    pairs = [
        ("status", _badge(row.status) + (f" {_e(row.error)}" if row.error else "")),
        ("verdict", _badge(dispatch.verdict) if dispatch else ""),
        ("family", _e(row.family or "")),
        ("batch size", _e(row.batch_size) if row.batch_size is not None else ""),
        ("step time", f"{significant(step.median_ms)} ms median, IQR {significant(step.iqr_ms)} ms, min "
                      f"{significant(step.min_ms)} ms, {step.n} steps" if step else ""),
        ("phases", ", ".join(f"{p} {row.phases_pct[p]:.0f}%" for p in PHASES) if row.phases_pct else
                   ("no annotations" if row.status == "ok" else "")),
        ("profiler distortion", " ".join(part for part in (
            f"light {number(row.light_distortion_pct, 1)}%" if row.light_distortion_pct is not None else "",
            f"detailed {number(row.detailed_distortion_pct, 0)}%" if row.detailed_distortion_pct is not None else "",
            f"edge {number(row.edge_distortion_pct, 1)}%" if row.edge_distortion_pct is not None else "") if part)),
        ("dispatch", f"{dispatch.ops_per_step:.0f} ops/step, median op {dispatch.median_op_us:.1f} µs, overhead "
                     f"{100 * dispatch.overhead_fraction:.1f}% at {dispatch.per_op_overhead_us:.2f} µs/op" if dispatch else ""),
        ("measurement", _e(", ".join(part for part in (
            f"warmup {row.warmup_steps} steps" if row.warmup_steps is not None else "",
            {True: "steady", False: "not steady"}.get(row.steady, ""),
            f"{row.windows} windows" if row.windows else "",
            f"{row.window_diff_pct:.1f}% apart" if row.window_diff_pct is not None else "") if part))),
        *((extra.label, _extra_text(row, extra)) for extra in EXTRAS),
        ("compute limit", _e(field(row, "compute_limit") or "")),
        ("FLOPs note", _e(field(row, "flops_note") or "")),
        ("compile", _compile_text(row)),
        ("to read with care", _e("; ".join(doubts(summary, row)))),
        ("traces and log", _links(row)),
        ("run", _e(row.run_id or "")),
    ]  # fmt: skip
    ops = top_ops_table(row)
    return (f'<article id="{case_id(row)}">\n<h3>{_e(label(row, 2))}</h3>\n{_key_values(pairs)}\n{ops}\n'
            f'<p><a href="#table">back to the table</a></p>\n</article>')  # fmt: skip


def summary_body(summary: Summary) -> str:
    """The report's content without the page around it: what a notebook shows."""
    rows = sort_rows(summary.rows)
    environment = summary.environment
    parts = [
        '<div class="tb-report">',
        "<h1>torchbenchmark report</h1>",
        f'<p class="sub">{_e(summary.source)}: {len(rows)} cases on {_e(environment.get("device_name", "?"))}, '
        f'torch {_e(environment.get("torch", "?"))}, started {_e(environment.get("started_at", "?"))}</p>',
        environment_section(summary),
        attention_section(summary),
        _section("map", "Suite map", _figure_html(
            suite_map(rows),
            f"One point per case that ran ok; click one to jump to it. Overhead share of {100 * DISPATCH_BOUND_AT:.0f}% "
            f"or more is dispatch-bound (fewer or fused ops help, faster kernels do not), under "
            f"{100 * COMPUTE_BOUND_BELOW:.0f}% compute-bound.")),
        _section("step-time", "Step time and its spread", _figure_html(
            step_times(rows),
            "Measured outside any profiler: the median, coloured by verdict; the bar is the interquartile range, | the fastest step.")),
        _section("phases", "Forward, backward and optimizer", _figure_html(
            phase_split(rows),
            "Each annotation's share of the profiled step; 'other' is what no annotation covers (all of an unannotated model's step).")),
        _section("distortion", "Profiler distortion", _figure_html(
            distortion(rows),
            "How much slower a step runs inside the light profile (CPU activity only) and the detailed one "
            "(shapes, memory, stacks, FLOPs): read the light trace for how long, the detailed one for what.")),
    ]  # fmt: skip
    speedup = speedups(rows)
    if speedup is not None:
        parts.append(_section("speedup", "Compiled speedup", _figure_html(speedup, "Step time of eager over the compiled variant.")))
    parts.append(table_section(summary))
    parts.append(_section("cases", "Cases", *(case_article(summary, row) for row in rows)))
    parts.append("</div>")
    return "\n".join(parts)


def page(title: str, body: str) -> str:
    """A whole HTML document around ``body``: inline style and script, nothing fetched."""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n{body}\n"
        f"<script>{SORT_SCRIPT}</script>\n</body>\n</html>\n"
    )


def render_report(summary: Summary) -> str:
    """The sweep's report page."""
    return page(f"torchbenchmark report: {summary.source}", summary_body(summary))


def comparison_body(comparison: Comparison, base: Summary | None = None, new: Summary | None = None) -> str:
    """The comparison without the page around it: counts, the ratio plot, then every case, regressions first."""
    counts = ", ".join(f"{n} {call}" for call, n in comparison.counts().items())
    regressions = comparison.regressions
    if regressions:
        verdict = (f'<div class="warn">{len(regressions)} regression{"s" if len(regressions) > 1 else ""}: '
                   + ", ".join(f'<a href="#{case_id(c)}">{_e(label(c, 2))}</a> ({_e(c.call)})' for c in regressions)
                   + "</div>")  # fmt: skip
    else:
        verdict = '<p class="fine">Nothing slower and nothing newly failing.</p>'
    notes = "".join(f'<div class="warn">{_e(text)}</div>' for text in comparison.notes)
    if comparison.detectable_pct is not None:
        notes += (f"<p>This comparison catches slowdowns of {comparison.detectable_pct:.1f}% or more, 9 times in 10, in the "
                  "median case; each case's own figure is its <em>catches</em> column.</p>")  # fmt: skip
    columns = list(COMPARISON_COLUMNS)
    columns[0] = dataclasses.replace(columns[0], html=lambda c: _badge(c.call))
    if any(case.variant != "eager" for case in comparison.cases):
        columns.insert(4, Column("variant", lambda c: c.variant, numeric=False))
    columns.insert(-1, Column("status", lambda c: " -> ".join(dict.fromkeys(s for s in (c.base_status, c.new_status) if s)), numeric=False))
    table = render_columns_html(columns, comparison.cases, row_id=case_id)
    environments = ""
    if base is not None and new is not None:
        keys = [key for key in ENVIRONMENT_KEYS if base.environment.get(key) is not None or new.environment.get(key) is not None]
        rows = [(key, str(base.environment.get(key, "")), str(new.environment.get(key, ""))) for key in keys]
        env_columns = [Column(h, lambda r, i=i: r[i], numeric=False) for i, h in enumerate(("", "base", "new"))]
        environments = _section("environments", "Environments", render_columns_html(env_columns, rows))
    return "\n".join([
        '<div class="tb-report">',
        "<h1>torchbenchmark comparison</h1>",
        f'<p class="sub">base: {_e(comparison.base)}<br>new: {_e(comparison.new)}<br>{len(comparison.cases)} cases: {_e(counts)}</p>',
        _section("verdict", "Regressions", verdict, notes),
        _section("ratios", "Ratios", _figure_html(
            ratio_intervals(comparison),
            "Each case's new/base ratio of median step times (per-process medians, geometric mean) with its 95% "
            f"interval. Slower or faster: past the {comparison.threshold_pct:g}% threshold (shaded band) and the "
            "interval excludes 1.")),
        _section("cases", "Every case", "<p>Regressions first. Click a column's header to sort by it.</p>",
                 f'<div class="scroll">{table}</div>'),
        environments,
        "</div>",
    ])  # fmt: skip


def render_comparison_report(comparison: Comparison, base: Summary | None = None, new: Summary | None = None) -> str:
    """The comparison's page; with both sides' summaries it also sets their environments side by side."""
    return page("torchbenchmark comparison", comparison_body(comparison, base, new))


def notebook_html(body: str) -> str:
    """What a notebook shows: the body with its style (scoped to the report); sorting needs the page's script."""
    return f"<style>{CSS}</style>\n{body}"


__all__ = [
    "case_id",
    "comparison_body",
    "notebook_html",
    "render_comparison_report",
    "render_report",
    "summary_body",
]
