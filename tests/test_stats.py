"""Step statistics and warmup detection, checked against numbers worked out by hand."""

from __future__ import annotations

import pytest

from torchbenchmark.harness import Budget, StepTimer
from torchbenchmark.stats import StepStats, is_steady, relative_change_pct


def test_median_iqr_min_of_a_known_sample() -> None:
    stats = StepStats((5.0, 1.0, 4.0, 2.0, 3.0))
    assert stats.n == 5
    assert stats.median_ms == 3.0
    assert stats.min_ms == 1.0
    assert stats.iqr_ms == 2.0  # inclusive quartiles: 2.0 and 4.0
    assert stats.to_dict() == {"median": 3.0, "iqr": 2.0, "min": 1.0, "n": 5}


def test_even_sample_and_single_value() -> None:
    assert StepStats((1.0, 2.0, 3.0, 10.0)).median_ms == 2.5
    assert StepStats((1.0, 2.0, 3.0, 10.0)).iqr_ms == pytest.approx(4.75 - 1.75)
    assert StepStats((7.0,)).iqr_ms == 0.0


def test_from_ns_converts_to_milliseconds() -> None:
    assert StepStats.from_ns([1_500_000, 2_500_000]).median_ms == 2.0


def test_empty_sample_is_refused() -> None:
    with pytest.raises(ValueError):
        StepStats(())


def test_steady_when_two_windows_agree() -> None:
    assert not is_steady([10, 9, 8, 5, 5], window=3, tolerance=0.05)  # too few steps
    assert not is_steady([10, 9, 8, 5, 5, 5], window=3, tolerance=0.05)  # still falling
    assert is_steady([5, 5.1, 9, 5, 5.2, 5], window=3, tolerance=0.05)  # one outlier is ignored


def test_relative_change() -> None:
    assert relative_change_pct(110.0, 100.0) == pytest.approx(10.0)
    assert relative_change_pct(95.0, 100.0) == pytest.approx(-5.0)


def test_step_timer_keeps_the_first_step_of_a_call_apart() -> None:
    timer = StepTimer()
    for niter in (3, 2):
        timer.begin_call()
        for _ in range(niter):
            timer()
    assert timer.first_in_call == [True, False, False, True, False]
    assert len(timer.inner_ns()) == 3


def test_budget_measures_about_measure_s_within_floor_and_cap() -> None:
    budget = Budget(measure_s=2.0, min_steps=5, max_steps=100)
    assert budget.measured_steps(step_estimate_ns=0.1e9) == 20
    assert budget.measured_steps(step_estimate_ns=1e9) == 5
    assert budget.measured_steps(step_estimate_ns=1e6) == 100
    assert Budget(steps=7).measured_steps(1e9) == 7
    with pytest.raises(ValueError):
        Budget(min_steps=0)


def test_profiles_record_more_steps_of_fast_models() -> None:
    budget = Budget()  # light: 3 to 50 steps within 1 s; detailed: 1 to 5 within 0.5 s
    assert budget.profiled_steps("light", step_ms=1000) == 3
    assert budget.profiled_steps("light", step_ms=100) == 10
    assert budget.profiled_steps("light", step_ms=0.01) == 50
    assert budget.profiled_steps("detailed", step_ms=1000) == 1
    assert budget.profiled_steps("detailed", step_ms=1) == 5
