"""The report's plots, drawn by matplotlib on ``Figure`` objects (no pyplot, no backend switch) as inline SVG.

matplotlib is imported where a plot is drawn, not with this module: reading, comparing and merging runs
(and their text tables) never pay its second of import time."""

from __future__ import annotations

import html
import io
import re
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from torchbenchmark.analyze.compare import CaseComparison, Comparison
from torchbenchmark.analyze.verdict import COMPUTE_BOUND_BELOW, DISPATCH_BOUND_AT, VERDICTS
from torchbenchmark.results.schema import EAGER, CaseResult, Status, Verdict

if TYPE_CHECKING:
    from matplotlib.figure import Figure

VERDICT_COLOURS = {"dispatch-bound": "tab:red", "mixed": "tab:orange", "compute-bound": "tab:blue", "blocked": "tab:gray"}
RATIO_TICKS = (0.25, 0.33, 0.5, 0.67, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0)
FINE_RATIO_TICKS = (0.95, 0.98, 1.02, 1.05)  # added when the axis spans too little for the ticks above
CALL_COLOURS = {"slower": "tab:red", "faster": "tab:green", "verdict changed": "tab:purple", "inconclusive": "tab:olive", "same": "0.45"}
TOP_OPS_SHOWN = 8
# Text stays text (no glyphs as paths, no embedded fonts): a smaller page, searchable and selectable.
STYLE = {"svg.fonttype": "none", "font.size": 8, "axes.titlesize": 9, "axes.spines.top": False, "axes.spines.right": False}
SVG_METADATA = {"Date": None, "Creator": None, "Format": None, "Type": None}  # no metadata block at all


def case_id(row: CaseResult | CaseComparison) -> str:
    """The anchor of a case's section: its key, with anything but letters, digits, '.', '_' and '-' as '-'."""
    return "case-" + re.sub(r"[^A-Za-z0-9_.-]", "-", "-".join(row.key))


def label(row: CaseResult | CaseComparison, devices: int = 1) -> str:
    parts = [row.model, row.mode]
    if devices > 1:
        parts.append(row.device)
    if row.variant != EAGER:
        parts.append(row.variant)
    return " ".join(parts)


# Plots ----------------------------------------------------------------------------------------------


def svg(figure: Figure, prefix: str, titles: dict[str, str] | None = None) -> str:
    """The figure as an ``<svg>`` element to inline in HTML.

    Ids nothing refers to are dropped and the rest prefixed with ``prefix``, so several plots share a
    page without clashing; ``titles`` maps a link target a plot element carries (``set_urls``) to a
    hover tooltip, and links open in the page itself.
    """
    buffer = io.StringIO()
    with _styled():
        figure.savefig(buffer, format="svg", metadata=SVG_METADATA, bbox_inches="tight")
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
    return [row for row in rows if row.status == Status.OK and row.step_time is not None]


def suite_map(rows: Sequence[CaseResult]) -> str | None:
    """Every case: step time against overhead share, coloured by verdict; a point links to its case."""
    cases = [row for row in _ok(rows) if row.dispatch is not None]
    if not cases:
        return None
    devices = len({row.device for row in rows})
    with _styled():
        figure, axes = _figure(10, 4.8)
        axes.axhspan(100 * DISPATCH_BOUND_AT, 100, color=VERDICT_COLOURS["dispatch-bound"], alpha=0.06, lw=0)
        axes.axhspan(100 * COMPUTE_BOUND_BELOW, 100 * DISPATCH_BOUND_AT, color=VERDICT_COLOURS["mixed"], alpha=0.06, lw=0)
        titles = {}
        for verdict in (*VERDICTS, Verdict.BLOCKED):
            group = [row for row in cases if row.dispatch.verdict == verdict]
            if not group:
                continue
            points = axes.scatter(
                [row.step_time.median_ms for row in group],
                [100 * row.dispatch.overhead_fraction for row in group],
                s=28,
                color=VERDICT_COLOURS[verdict],
                label=verdict,
                edgecolor="white",
                linewidth=0.5,
                zorder=3,
            )
            points.set_urls([f"#{case_id(row)}" for row in group])
            titles.update({f"#{case_id(row)}": f"{label(row, devices)}: {row.headline()}" for row in group})
            for row in group:
                if row.dispatch.overhead_fraction >= COMPUTE_BOUND_BELOW or len(cases) <= 12:
                    axes.annotate(
                        label(row, devices),
                        (row.step_time.median_ms, 100 * row.dispatch.overhead_fraction),
                        xytext=(4, 3),
                        textcoords="offset points",
                        fontsize=6.5,
                        color="0.25",
                    )
        axes.set_xscale("log")
        axes.xaxis.set_major_formatter(_plain())
        axes.set_ylim(-3, 103)
        axes.set_xlabel("median step time, ms (log scale)")
        axes.set_ylabel("estimated per-op overhead, % of step")
        axes.grid(True, which="major", alpha=0.3)
        axes.legend(title="verdict", loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        axes.set_title("Suite map: where each case's step time goes")
    return svg(figure, "map", titles)


def speedups(rows: Sequence[CaseResult]) -> str | None:
    """Variants' speedup over eager (compiled, precision, channels_last), when any row has one."""
    cases = [(label(row), row.speedup_vs_eager) for row in _ok(rows) if row.speedup_vs_eager is not None][::-1]
    if not cases:
        return None
    with _styled():
        figure, axes = _figure(7, 0.9 + 0.19 * max(len(cases), 3))
        axes.barh(
            [name for name, _ in cases],
            [value for _, value in cases],
            color=["tab:green" if value >= 1 else "tab:red" for _, value in cases],
            height=0.7,
        )
        axes.axvline(1, color="0.3", linewidth=0.8)
        axes.set_title("speedup over eager (x)")
        axes.grid(True, axis="x", alpha=0.3)
    return svg(figure, "speedup")


def ratio_intervals(comparison: Comparison) -> str | None:
    """Each compared case's new/base ratio with its 95% interval; the threshold band shaded."""
    from matplotlib import ticker

    cases = [case for case in comparison.cases if case.estimate is not None][::-1]
    if not cases:
        return None
    devices = len({case.device for case in comparison.cases})
    threshold = 1 + comparison.threshold_pct / 100
    with _styled():
        figure, axes = _figure(8, 0.9 + 0.2 * max(len(cases), 3))
        axes.axvspan(1 / threshold, threshold, color="0.5", alpha=0.12, lw=0, label=f"within ±{comparison.threshold_pct:g}%")
        axes.axvline(1, color="0.3", linewidth=0.8)
        for i, case in enumerate(cases):
            estimate = case.estimate
            colour = CALL_COLOURS.get(case.call, "0.45")
            axes.errorbar(
                [estimate.ratio],
                [i],
                xerr=[[estimate.ratio - estimate.low], [estimate.high - estimate.ratio]],
                fmt="o",
                color=colour,
                markersize=4,
                capsize=2,
                elinewidth=1.2,
            )
        axes.set_yticks(range(len(cases)), [f"{label(case, devices)} ({case.call})" for case in cases])
        axes.set_xscale("log")
        low, high = axes.get_xlim()
        ticks = [tick for tick in RATIO_TICKS if low <= tick <= high]
        if len(ticks) < 3:  # a scale needs more than the 1 in the middle to be read
            ticks = sorted({*ticks, *(tick for tick in FINE_RATIO_TICKS if low <= tick <= high)})
        axes.xaxis.set_major_locator(ticker.FixedLocator(ticks))
        axes.xaxis.set_major_formatter(_plain())
        axes.xaxis.set_minor_formatter(ticker.NullFormatter())
        axes.set_xlabel("new / base step time, with its 95% interval (log scale)")
        axes.grid(True, axis="x", which="both", alpha=0.3)
        axes.set_ylim(-0.7, len(cases) - 0.3)
        axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        axes.set_title("What changed: ratio of step times, regressions first")
    return svg(figure, "ratios")


def _styled() -> AbstractContextManager[Any]:
    import matplotlib

    return matplotlib.rc_context(STYLE)


def _plain() -> Any:
    """Tick labels as 100 and 0.8, not 10^2 and 8x10^-1."""
    from matplotlib import ticker

    return ticker.FuncFormatter(lambda value, _: f"{value:g}")


def _figure(width: float, height: float) -> tuple[Figure, Any]:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height))
    return figure, figure.subplots()
