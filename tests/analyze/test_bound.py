"""What removing the overhead would buy: the bound's arithmetic, a variant's speedup against it, where it is shown."""

from __future__ import annotations

import pytest

from torchbenchmark.analyze.bound import MOST_REMOVABLE, against_eager, bound_of, overhead_bound
from torchbenchmark.report.explain import bound_table_html, bound_text
from torchbenchmark.report.summary import render_table
from torchbenchmark.results.schema import CaseResult, Dispatch, StepTime


def test_a_step_of_10_ms_with_6_of_overhead_cannot_get_faster_than_4_ms() -> None:
    bound = overhead_bound(10.0, 0.6, (0.5, 0.7))
    assert bound.overhead_free_ms == pytest.approx(4.0)
    assert bound.overhead_free_range_ms == (pytest.approx(3.0), pytest.approx(5.0))
    assert bound.speedup_bound == pytest.approx(2.5)
    assert bound.speedup_bound_range == (pytest.approx(2.0), pytest.approx(1 / 0.3))
    assert not bound.bound_capped


def test_overhead_priced_at_the_whole_step_or_more_gives_a_capped_floor() -> None:
    bound = overhead_bound(10.0, 1.3)
    assert bound.bound_capped and bound.speedup_bound == pytest.approx(1 / (1 - MOST_REMOVABLE))
    assert bound.overhead_free_ms == pytest.approx(10.0 * (1 - MOST_REMOVABLE))
    assert "at least" in bound_text(CaseResult(model="m", mode="eval", device="cpu", status="ok", bound=bound))
    assert overhead_bound(10.0, 0.0).speedup_bound == 1.0
    with pytest.raises(ValueError):
        overhead_bound(0.0, 0.5)


def _row(variant: str = "eager", fraction: float = 0.5, speedup: float | None = None, ms: float = 10.0) -> CaseResult:
    dispatch = Dispatch("mixed", fraction, 100, 2.0, 1.0, fraction, (fraction - 0.1, fraction + 0.1))
    return CaseResult(
        model="m",
        mode="eval",
        device="cpu",
        status="ok",
        variant=variant,
        step_time=StepTime(ms, 0.1, ms, 100),
        dispatch=dispatch,
        bound=bound_of(ms, dispatch),
        speedup_vs_eager=speedup,
    )


def test_a_compiled_speedup_past_the_eager_bound_says_the_arithmetic_got_faster_too() -> None:
    rows = [_row(), _row("inductor", 0.1, speedup=4.0, ms=2.5), _row("aot_eager", 0.4, speedup=1.5, ms=6.7)]
    found = against_eager(rows)
    past, within = found[rows[1].key], found[rows[2].key]
    assert past.bound.speedup_bound == pytest.approx(2.0) and past.past and "arithmetic faster" in past.reading
    assert not within.past and within.share_of_bound == pytest.approx((1 - 1 / 1.5) / 0.5)
    assert "within the bound" in within.reading
    assert rows[0].key not in found
    html = bound_table_html(rows)
    assert "inductor" in html and "4.00x" in html and "2.00x" in html


def test_the_summary_sets_each_variants_speedup_beside_the_eager_bound() -> None:
    rows = [_row(), _row("inductor", 0.1, speedup=4.0, ms=2.5)]
    lines = render_table(rows).splitlines()
    header = lines[0]
    assert "speedup x" in header and "eager bound x" in header
    assert lines[3].split()[-3:] == ["4.00", "2.00", "past"]
    assert lines[2].split()[-1] == "2.00"  # the eager row's own bound
    assert "speedup x" not in render_table(rows[:1]).splitlines()[0]


def test_the_bound_sits_at_the_top_level_of_a_rows_json_and_reads_back() -> None:
    row = _row()
    data = row.to_dict()
    assert data["speedup_bound"] == pytest.approx(2.0) and data["overhead_free_ms"] == pytest.approx(5.0)
    assert CaseResult.from_dict(data).bound == row.bound
    assert "removing it bounds 2x (1.67x to 2.5x)" in repr(row)  # the range beside the bound, from the interval
    failed = CaseResult(model="m", mode="eval", device="cpu", status="failed", error="boom")
    assert failed.to_dict()["speedup_bound"] is None and CaseResult.from_dict(failed.to_dict()).bound is None


def test_the_report_sets_a_compiled_rows_speedup_beside_the_eager_bound() -> None:
    from torchbenchmark.report.page import render_report
    from torchbenchmark.results.records import RunRecord, summary_of_records

    rows = (_row(), _row("inductor", 0.1, speedup=4.0, ms=2.5))
    page = render_report(summary_of_records([RunRecord("20261202T000000.000000Z-abcd", {"host": "h"}, rows=rows)], "bound"))
    article = page[page.index('id="case-m-eval-cpu-inductor"') :]
    assert "against the eager bound" in article and "4.00x measured against the eager bound 2.00x" in article
    assert "past the bound" in article and "speedup bound (x)" in page
    speedup = page[page.index('id="speedup"') : page.index('id="table"')]
    assert "eager bound" in speedup and "4.00x" in speedup


def test_a_speedup_past_the_bound_in_its_median_but_not_every_window_pair_is_noise() -> None:
    import dataclasses

    from torchbenchmark.results.schema import CompileReport

    compiled = dataclasses.replace(
        _row("inductor", 0.1, speedup=2.6, ms=4.0), compile=CompileReport("inductor", "default", 1.0, 1, 0, (), 0, (2.4, 2.6, 2.9))
    )
    found = against_eager([_row(), compiled])[compiled.key]
    assert found.lowest == 2.4 and not found.past and "within noise" in found.reading  # the bound's top is 2.5x
