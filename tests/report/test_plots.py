"""The report's plots (report/plots.py): legends beside the plotted area, and a ratio axis with a scale to read."""

from __future__ import annotations

from typing import Any

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

import torchbenchmark as tb
from tests.helpers.pages import one_case
from tests.helpers.processes import ROOT
from torchbenchmark.report import plots

REFERENCE = ROOT / "benchmarks" / "reference"


def drawn(monkeypatch: pytest.MonkeyPatch, draw: Any) -> Any:
    """The matplotlib figure a plot function drew (its SVG text is not needed)."""
    figures = []
    real = plots.svg

    def keep(figure: Any, prefix: str, titles: Any = None) -> str:
        figures.append(figure)
        return real(figure, prefix, titles)

    monkeypatch.setattr(plots, "svg", keep)
    assert draw() is not None
    (figure,) = figures
    return figure


@pytest.mark.parametrize("plot", ["suite map", "ratios"])
def test_legends_sit_outside_the_plotted_area(monkeypatch: pytest.MonkeyPatch, plot: str) -> None:
    summary = tb.load_summary(REFERENCE)
    draw = (lambda: plots.suite_map(summary.rows)) if plot == "suite map" else (lambda: plots.ratio_intervals(tb.compare(summary, summary)))
    figure = drawn(monkeypatch, draw)
    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)
    (axes,) = figure.axes
    legend = axes.get_legend().get_window_extent(renderer)
    assert not legend.overlaps(axes.get_window_extent(renderer)), "the legend covers the plotted area"


def test_the_ratio_axis_of_a_narrow_comparison_has_a_scale_to_read(monkeypatch: pytest.MonkeyPatch) -> None:
    summary = one_case(tb.load_summary(REFERENCE))
    figure = drawn(monkeypatch, lambda: plots.ratio_intervals(tb.compare(summary, summary)))
    (axes,) = figure.axes
    low, high = axes.get_xlim()
    assert len([tick for tick in axes.get_xticks() if low <= tick <= high]) >= 3
