"""Step statistics and warmup detection, checked against numbers worked out by hand."""

from __future__ import annotations

import pytest

from torchbenchmark.analyze.stats import StepStats, is_steady, relative_change_pct


def test_median_iqr_min_of_a_known_sample() -> None:
    stats = StepStats((5.0, 1.0, 4.0, 2.0, 3.0))
    assert stats.n == 5
    assert stats.median_ms == 3.0
    assert stats.min_ms == 1.0
    assert stats.iqr_ms == 2.0  # inclusive quartiles: 2.0 and 4.0


def test_even_sample_and_single_value() -> None:
    assert StepStats((1.0, 2.0, 3.0, 10.0)).median_ms == 2.5
    assert StepStats((1.0, 2.0, 3.0, 10.0)).iqr_ms == pytest.approx(4.75 - 1.75)
    assert StepStats((7.0,)).iqr_ms == 0.0


def test_from_ns_converts_to_milliseconds() -> None:
    assert StepStats.from_ns([1_500_000, 2_500_000]).median_ms == 2.0


def test_two_values_have_a_spread() -> None:
    assert StepStats((1.0, 3.0)).iqr_ms == 1.0  # inclusive quartiles 1.5 and 2.5


def test_empty_sample_is_refused() -> None:
    with pytest.raises(ValueError, match="^StepStats needs at least one step time$"):
        StepStats(())


def test_steady_when_two_windows_agree() -> None:
    assert not is_steady([10, 9, 8, 5, 5], window=3, tolerance=0.05)  # too few steps
    assert not is_steady([10, 9, 8, 5, 5, 5], window=3, tolerance=0.05)  # still falling
    assert is_steady([5, 5.1, 9, 5, 5.2, 5], window=3, tolerance=0.05)  # one outlier is ignored


@pytest.mark.parametrize(
    ("before", "steady"),
    [
        (105.0, True),  # exactly 5% of the recent median apart: steady
        (95.0, True),
        (105.1, False),  # just past 5% of the recent median (within 5% of 105.1 itself: the reference matters)
        (94.9, False),
    ],
)
def test_warmup_rule_median_of_three_within_5pct_of_the_three_before(before: float, steady: bool) -> None:
    times = [before, before, before, 100.0, 100.0, 100.0]
    assert is_steady(times, window=3, tolerance=0.05) is steady
    # Only the last two windows count: anything earlier, however far off, changes nothing.
    assert is_steady([1e6, 1e6, 1e6, *times], window=3, tolerance=0.05) is steady


def test_warmup_rule_uses_the_medians_of_exactly_the_last_two_windows() -> None:
    # Slow early steps lie outside the last 2 x 3: a longer or shifted window would take them in.
    assert is_steady([200.0] * 10 + [100.0] * 6, window=3, tolerance=0.05) is True
    assert is_steady([200.0, 100.0, 100.0, 100.0, 100.0], window=2, tolerance=0.05) is True
    assert is_steady([100.0, 100.0, 200.0, 200.0], window=2, tolerance=0.05) is False
    assert is_steady([100.0, 999.0, 100.0, 1.0, 100.0, 100.0], window=3, tolerance=0.05) is True  # medians, not means


def test_warmup_rule_needs_two_full_windows() -> None:
    assert not is_steady([100.0] * 5, window=3, tolerance=0.05)
    assert is_steady([100.0] * 6, window=3, tolerance=0.05)
    assert is_steady([100.0, 100.0], window=1, tolerance=0.05)  # a window of one step is allowed
    assert not is_steady([100.0], window=1, tolerance=0.05)
    assert not is_steady([100.0] * 6, window=0, tolerance=0.05)


def test_relative_change() -> None:
    assert relative_change_pct(110.0, 100.0) == pytest.approx(10.0)
    assert relative_change_pct(95.0, 100.0) == pytest.approx(-5.0)
    assert relative_change_pct(150.0, 50.0) == pytest.approx(200.0)
