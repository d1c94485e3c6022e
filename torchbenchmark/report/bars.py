"""The report's per-case charts as HTML bars: one table row a case, drawn by the browser's own layout.

A row's label links to its case, the bar is spans placed in percent of a track, and the figure is beside
it as text; a tooltip gives every figure of a mark. A chart of a hundred cases costs a string join, not a
matplotlib layout of a hundred tick labels, so reports of large sweeps (and the merge that writes one)
stay quick.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from torchbenchmark.report.format import significant
from torchbenchmark.report.html import escape
from torchbenchmark.report.plots import case_id, label
from torchbenchmark.results.schema import PHASES, CaseResult, Status

Scale = Callable[[float], float]  # a figure -> its place on the track, 0 to 100


def _ok(rows: Sequence[CaseResult]) -> list[CaseResult]:
    return [row for row in rows if row.status == Status.OK and row.step_time is not None]


def _chart(kind: str, rows: Sequence[CaseResult], axis: str, legend: str, cells: Callable[[CaseResult], tuple[str, str]]) -> str:
    """The table: a header holding the axis (or legend), then per case its label, its track and its figure."""
    devices = len({row.device for row in rows})
    lines = [
        f'<table class="bars {kind}">',
        f'<thead><tr><th>case</th><th class="axis"><div class="track">{axis}</div></th><th>{legend}</th></tr></thead>',
        "<tbody>",
    ]
    for row in rows:
        track, figure = cells(row)
        lines.append(
            f'<tr><th><a href="#{case_id(row)}">{escape(label(row, devices))}</a></th>'
            f'<td><div class="track">{track}</div></td><td class="num">{figure}</td></tr>'
        )
    lines += ["</tbody>", "</table>"]
    return "\n".join(lines)


def _span(css: str, left: float, width: float, title: str) -> str:
    return f'<span class="{css}" style="left:{left:.2f}%;width:{max(width, 0.0):.2f}%" title="{escape(title)}"></span>'


def _ticks(scale: Scale, values: Sequence[float], unit: str = "") -> str:
    return "".join(f'<span class="tick" style="left:{scale(value):.2f}%">{value:g}{unit}</span>' for value in values)


def _log_scale(low: float, high: float) -> tuple[Scale, list[float]]:
    """Place on a log axis from ``low`` to ``high``, and the 1-2-5 ticks within it."""
    low, high = math.log10(low), math.log10(max(high, low * 1.01))
    span = high - low

    def scale(value: float) -> float:
        return 100 * (math.log10(max(value, 10**low)) - low) / span

    ticks = [m * 10**e for e in range(math.floor(low), math.ceil(high) + 1) for m in (1, 2, 5)]
    return scale, [tick for tick in ticks if low <= math.log10(tick) <= high]


def step_times(rows: Sequence[CaseResult]) -> str | None:
    """Each case's step time on one log axis: the median coloured by verdict, the interquartile range as a band,
    the fastest step as a tick."""
    cases = _ok(rows)
    if not cases:
        return None
    times = [row.step_time for row in cases]  # type: ignore[misc]
    scale, ticks = _log_scale(min(t.min_ms for t in times) / 1.1, max(t.median_ms + t.iqr_ms / 2 for t in times) * 1.1)

    def cells(row: CaseResult) -> tuple[str, str]:
        t = row.step_time
        assert t is not None
        verdict = row.dispatch.verdict.replace(" ", "-") if row.dispatch else "none"
        low, high = scale(max(t.median_ms - t.iqr_ms / 2, t.min_ms)), scale(t.median_ms + t.iqr_ms / 2)
        tip = f"median {significant(t.median_ms)} ms, IQR {significant(t.iqr_ms)} ms, fastest {significant(t.min_ms)} ms"
        marks = (
            _span("band", low, high - low, tip)
            + _span("fastest", scale(t.min_ms), 0, tip)
            + _span(f"dot {verdict}", scale(t.median_ms), 0, tip)
        )
        return marks, f"{significant(t.median_ms)} ms"

    return _chart("steps", cases, _ticks(scale, ticks), "median", cells)


def _phase_pct(row: CaseResult, phase: str) -> float:
    """A phase's share of the step; 'other' is what no annotation covers (all of it for an unannotated model)."""
    shares = row.phases_pct or {}
    if phase == "other":
        return max(0.0, 100.0 - sum(shares.get(p, 0.0) for p in PHASES))
    return shares.get(phase, 0.0)


def phase_split(rows: Sequence[CaseResult]) -> str | None:
    """Each case's forward, backward and optimizer share of the profiled step, and what no annotation covers."""
    cases = _ok(rows)
    if not cases:
        return None
    phases = (*PHASES, "other")
    legend = " ".join(f'<span class="key phase-{phase}"></span>{phase}' for phase in phases)

    def cells(row: CaseResult) -> tuple[str, str]:
        left, marks = 0.0, []
        for phase in phases:
            share = _phase_pct(row, phase)
            marks.append(_span(f"part phase-{phase}", left, share, f"{phase} {share:.0f}%"))
            left += share
        return "".join(marks), " / ".join(f"{_phase_pct(row, phase):.0f}" for phase in phases) + "%"

    return _chart("phases", cases, f'<div class="legend">{legend}</div>', "fwd / bwd / opt / other", cells)


def _symlog(value: float, linear_to: float = 10.0) -> float:
    """Linear within ±``linear_to``, logarithmic past it: 5% and 500% both readable on one axis."""
    magnitude = abs(value)
    placed = magnitude / linear_to if magnitude <= linear_to else 1 + math.log10(magnitude / linear_to)
    return math.copysign(placed, value)


def distortion(rows: Sequence[CaseResult]) -> str | None:
    """How much slower each case's step runs inside the light and the detailed profile."""
    cases = [row for row in _ok(rows) if row.distortion is not None]
    if not cases:
        return None
    shown = [value for row in cases for value in (row.distortion.light_pct, row.distortion.detailed_pct) if value is not None]  # type: ignore[union-attr]
    low, high = min(0.0, _symlog(min(shown, default=0.0))), max(1.0, _symlog(max(shown, default=0.0)))

    def scale(value: float) -> float:
        return 100 * (_symlog(value) - low) / (high - low)

    steps = [m * 10**e for e in range(1, 5) for m in (1, 2, 5)]
    ticks = [tick for tick in (*(-t for t in reversed(steps)), 0, *steps) if low <= _symlog(tick) <= high]

    def cells(row: CaseResult) -> tuple[str, str]:
        marks, figures = [], []
        for kind in ("light", "detailed"):
            value = getattr(row.distortion, f"{kind}_pct")
            if value is None:
                continue
            start, end = sorted((scale(0.0), scale(value)))
            marks.append(_span(f"bar profile-{kind}", start, end - start, f"{kind} profile: {value:+.0f}%"))
            figures.append(f"{value:+.0f}%")
        return "".join(marks), " / ".join(figures)

    legend = '<span class="key profile-light"></span>light <span class="key profile-detailed"></span>detailed'
    return _chart("distortion", cases, _ticks(scale, ticks, "%"), legend, cells)
