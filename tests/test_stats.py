"""Step statistics and warmup detection, checked against numbers worked out by hand."""

from __future__ import annotations

import time

import pytest

from torchbenchmark.harness import Budget, StepTimer, closest_pair, measure_windows
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
    with pytest.raises(ValueError):
        Budget(windows=1)


def test_profiles_record_more_steps_of_fast_models() -> None:
    budget = Budget()  # light: 3 to 50 steps within 1 s; detailed: 1 to 5 within 0.5 s
    assert budget.profiled_steps("light", step_ms=1000) == 3
    assert budget.profiled_steps("light", step_ms=100) == 10
    assert budget.profiled_steps("light", step_ms=0.01) == 50
    assert budget.profiled_steps("detailed", step_ms=1000) == 1
    assert budget.profiled_steps("detailed", step_ms=1) == 5


def test_closest_pair_keeps_the_two_windows_that_agree_and_drops_the_odd_one() -> None:
    windows = [[100, 100, 100], [150, 150, 150], [101, 99, 101]]
    kept, diff = closest_pair(windows)
    assert kept == [windows[0], windows[2]]
    assert diff == pytest.approx(1.0)
    assert closest_pair([[5, 6]]) == ([[5, 6]], 0.0)


class Paced:
    """A model whose steps take the given milliseconds, one entry per measurement window."""

    def __init__(self, *window_ms: float) -> None:
        self.window_ms = list(window_ms)

    def eval(self, niter: int, step_fn) -> None:
        ms = self.window_ms.pop(0)
        for _ in range(niter):
            time.sleep(ms / 1e3)
            step_fn()


@pytest.mark.parametrize(
    ("window_ms", "taken", "kept_ms", "agree"),
    [
        ((4, 4), 2, 4, True),  # two that agree end it
        ((4, 12, 4), 3, 4, True),  # a window in a spell of load is outvoted by a third
        ((4, 12, 36), 3, None, False),  # none agree: the machine is too noisy to trust
    ],
)
def test_measure_windows_until_two_agree(window_ms, taken, kept_ms, agree) -> None:
    budget = Budget(window_tolerance=0.5)  # sleep() overshoots a little and unevenly
    windows = measure_windows(Paced(*window_ms), "eval", budget, count=5, sync=lambda: None)
    assert len(windows) == taken
    kept, diff = closest_pair(windows)
    assert (diff <= 50) == agree
    if kept_ms is not None:
        assert all(kept_ms * 1e6 <= d < 2 * kept_ms * 1e6 for window in kept for d in window)


def test_an_exact_step_count_is_one_window() -> None:
    windows = measure_windows(Paced(4), "eval", Budget(steps=6), count=6, sync=lambda: None)
    assert [len(w) for w in windows] == [6]
