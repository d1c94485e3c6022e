"""Characterisation on a fake clock: warmup, measurement windows and the edge cost, with exact answers.

The harness reads time through its module's ``time``; each test swaps in a clock that only moves when a
paced model says a step or a call's entry took so long. Nothing here sleeps, so no figure depends on how
busy the machine is.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
import torch

from torchbenchmark.measure import harness
from torchbenchmark.measure.harness import Pace, StepTimer, characterise, closest_pair, measure_windows, timed_call, warm_up
from torchbenchmark.measure.schedstat import Sample
from torchbenchmark.results.spec import Budget

MS = 1_000_000  # ns


class FakeClock:
    """Stands in for the ``time`` module inside torchbenchmark.measure.harness."""

    def __init__(self) -> None:
        self.now_ns = 1000 * 10**9  # not zero: a difference of two readings must be one

    def perf_counter_ns(self) -> int:
        return self.now_ns

    def perf_counter(self) -> float:
        return self.now_ns / 1e9

    def advance_ms(self, ms: float) -> None:
        self.now_ns += round(ms * MS)


class QuietThreads:
    """Stands in for ``measure.schedstat.ThreadClock`` on the fake clock: every step on a CPU, none waiting."""

    method = "schedstat"

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock

    def refresh(self) -> None:
        pass

    def close(self) -> None:
        pass

    def sample(self) -> Sample:
        return Sample(self.clock.now_ns, self.clock.now_ns, 0, 0)

    def boundary(self) -> tuple[Sample, Sample]:
        return self.sample(), self.sample()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(harness, "time", fake)
    monkeypatch.setattr(harness, "ThreadClock", lambda: QuietThreads(fake))
    return fake


class Paced:
    """A model whose steps take ``step_ms(i)`` for its i-th step overall, after ``edge_ms`` on entering a call."""

    def __init__(self, clock: FakeClock, step_ms: Callable[[int], float], edge_ms: float = 0.0) -> None:
        self.clock, self.step_ms, self.edge_ms = clock, step_ms, edge_ms
        self.calls: list[int] = []  # niter of each call
        self.call_starts_ns: list[int] = []
        self.steps = 0

    def eval(self, niter: int = 1, step_fn: Callable[[], None] | None = None) -> None:
        self.calls.append(niter)
        self.call_starts_ns.append(self.clock.now_ns)
        self.clock.advance_ms(self.edge_ms)
        for _ in range(niter):
            self.clock.advance_ms(self.step_ms(self.steps))
            self.steps += 1
            if step_fn:
                step_fn()

    train = eval


class PacedWindows(Paced):
    """Each call's steps take the next of ``window_ms``: one measurement window per call."""

    def __init__(self, clock: FakeClock, *window_ms: float) -> None:
        windows = iter(window_ms)
        current = {"ms": 0.0}

        def step_ms(_: int) -> float:
            return current["ms"]

        super().__init__(clock, step_ms)
        self._next = lambda: current.update(ms=next(windows))

    def eval(self, niter: int = 1, step_fn: Callable[[], None] | None = None) -> None:
        self._next()
        super().eval(niter, step_fn)

    train = eval


def constant(ms: float) -> Callable[[int], float]:
    return lambda _: ms


def test_step_timer_times_between_step_ends_without_its_own_bookkeeping(clock: FakeClock) -> None:
    syncs = itertools.count()
    timer = StepTimer(sync=lambda: next(syncs), after_step=lambda: clock.advance_ms(5))  # e.g. profiler.step
    assert timer.begin_call() == clock.now_ns
    clock.advance_ms(12)  # the call's entry and its first step
    timer()
    clock.advance_ms(10)
    timer()
    assert timer.durations_ns == [12 * MS, 10 * MS]  # the 5 ms after each step are in neither
    assert timer.first_in_call == [True, False]
    assert timer.inner_ns() == [10 * MS]
    assert next(syncs) == 3  # the clock is read after a sync at the call's start and each step's end


def test_step_timer_keeps_the_first_step_of_each_call_apart() -> None:
    timer = StepTimer()
    for niter in (3, 2):
        timer.begin_call()
        for _ in range(niter):
            timer()
    assert timer.first_in_call == [True, False, False, True, False]
    assert len(timer.inner_ns()) == 3


def test_timed_call_is_the_whole_call_including_its_entry(clock: FakeClock) -> None:
    model = Paced(clock, constant(10), edge_ms=2)
    timer = StepTimer()
    assert timed_call(model, "eval", 3, timer) == 32 * MS
    assert timer.durations_ns == [12 * MS, 10 * MS, 10 * MS]
    assert model.calls == [3]


@pytest.mark.parametrize(
    ("step_ms", "calls"),
    [
        (1, [1, 1, 3, 3]),  # the first step alone, the second (it sizes the window), then a window's steps per call
        (100, [1, 1, 2, 2, 2]),  # calls kept to about 0.25 s, so warmup stops soon after it is steady
        (300, [1] * 7),  # one step per call once a step takes over 0.25 s
        (1300, [1] * 7),  # two windows of 3 steps of 1.3 s fit in 8 s
        (1333.333334, [1] * 5),  # two windows of 3 would not fit in 8 s: windows of 2
    ],
)
def test_warmup_stops_once_two_windows_of_steps_agree(clock: FakeClock, step_ms: float, calls: list[int]) -> None:
    model = Paced(clock, constant(step_ms))
    durations, steady = warm_up(model, "eval", Budget(), Pace())
    assert steady is True
    assert model.calls == calls
    assert durations == [round(step_ms * MS)] * sum(calls)


def test_warmup_compares_steps_after_the_first_at_the_budgets_tolerance(clock: FakeClock) -> None:
    # Four steps of 10 ms (the first is set aside), then 11 ms (10% slower) from then on.
    def step_ms(i: int) -> float:
        return 10 if i <= 3 else 11

    model = Paced(clock, step_ms)
    assert warm_up(model, "eval", Budget(warmup_tolerance=0.1), Pace())[1] is True
    assert model.calls == [1, 1, 3, 3]  # 10 against 11: within 10%
    model = Paced(clock, step_ms)
    assert warm_up(model, "eval", Budget(), Pace())[1] is True
    assert model.calls == [1, 1, 3, 3, 3]  # not within 5%: one more window of 11 ms steps


def test_warmup_gives_up_at_its_time_budget(clock: FakeClock) -> None:
    start = clock.now_ns
    model = Paced(clock, lambda i: 10 * 1.1**i)  # every step 10% slower than the last: never steady
    durations, steady = warm_up(model, "eval", Budget(warmup_s=2.0), Pace())
    assert steady is False
    assert max(model.call_starts_ns) - start < 2e9 <= clock.now_ns - start  # no call started after the deadline
    assert len(durations) == model.steps


def test_warmup_starts_no_call_at_its_deadline(clock: FakeClock) -> None:
    steps_ms = iter([250, 250, 250, 250, 330, 330, 340, 1000])  # never steady; 2 s in all after the seventh
    model = Paced(clock, lambda _: next(steps_ms))
    assert warm_up(model, "eval", Budget(warmup_s=2.0), Pace())[1] is False
    assert model.calls == [1] * 7


def test_a_first_step_past_the_warmup_budget_is_not_steady(clock: FakeClock) -> None:
    model = Paced(clock, constant(9000))
    assert warm_up(model, "eval", Budget(), Pace()) == ([9000 * MS], False)


def test_windows_agree_at_exactly_the_tolerance(clock: FakeClock) -> None:
    # Medians 3% apart, in percent of the smaller: two windows. 3.02% of the smaller (2.93% of the
    # larger): a third window, and the two that agree best are kept.
    assert len(measure_windows(PacedWindows(clock, 100, 103), "eval", Budget(), count=4)) == 2
    windows = measure_windows(PacedWindows(clock, 100, 103.02, 101), "eval", Budget(), count=4)
    assert len(windows) == 3
    kept, diff = closest_pair([window.durations_ns for window in windows])
    assert kept == [[100 * MS] * 4, [101 * MS] * 4]
    assert diff == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("window_ms", "budget", "taken"),
    [
        ((4, 4), Budget(), 2),  # two that agree end it
        ((4, 12, 4), Budget(), 3),  # a window in a spell of load is outvoted by a third
        ((4, 12, 36, 4), Budget(), 3),  # none agree: at most Budget.windows
        ((4, 12, 36, 4), Budget(windows=4), 4),
        ((4, 12), Budget(steps=6), 1),  # an exact step count is one window
    ],
)
def test_measure_windows_until_two_agree(clock: FakeClock, window_ms, budget: Budget, taken: int) -> None:
    model = PacedWindows(clock, *window_ms)
    windows = measure_windows(model, "eval", budget, count=5)
    assert [window.durations_ns for window in windows] == [[window_ms[i] * MS] * 5 for i in range(taken)]
    assert all(len(window.samples) == 5 for window in windows)  # what the kernel saw of each step
    assert model.calls == [6] * taken  # +1 step per window: the first holds the call's entry


def test_closest_pair_keeps_the_two_windows_that_agree_and_drops_the_odd_one() -> None:
    windows = [[100, 100, 100], [150, 150, 150], [101, 99, 101]]
    kept, diff = closest_pair(windows)
    assert kept == [windows[0], windows[2]]
    assert diff == pytest.approx(1.0)  # in percent of the smaller median
    assert closest_pair([[5, 6]]) == ([[5, 6]], 0.0)
    assert closest_pair([[200], [100]])[1] == pytest.approx(100.0)


def test_characterise_on_a_paced_model(clock: FakeClock) -> None:
    model = Paced(clock, constant(10), edge_ms=2)
    result = characterise(model, "eval", Budget(measure_s=0.1), Pace())
    # Warmup: 1 + 1 + 3 + 3 steps; windows of ceil(0.1 s / 10 ms) = 10 (+1) steps; 3 whole niter=1 calls.
    assert model.calls == [1, 1, 3, 3, 11, 11, 1, 1, 1]
    assert (result.warmup_steps, result.steady) == (8, True)
    assert result.steps.times_ms == (10.0,) * 20
    assert (result.windows, result.window_diff_pct, result.windows_agree) == (2, 0.0, True)
    assert result.window_medians_ms == (10.0, 10.0)
    assert result.edge_ms == pytest.approx(2.0)
    assert result.edge_distortion_pct == pytest.approx(20.0)
    assert result.warmup_s == pytest.approx(0.012 + 0.012 + 0.032 + 0.032)
    assert result.measure_s == pytest.approx(2 * 0.112 + 3 * 0.012)


def test_characterise_flags_windows_that_never_agree_and_keeps_the_closest(clock: FakeClock) -> None:
    steps = iter([10] * 8 + [10] * 11 + [20] * 11 + [12] * 11 + [10] * 100)
    model = Paced(clock, lambda _: next(steps))
    result = characterise(model, "eval", Budget(measure_s=0.1, edge_calls=1), Pace())
    assert model.calls == [1, 1, 3, 3, 11, 11, 11, 1]
    assert result.steps.times_ms == (10.0,) * 10 + (12.0,) * 10
    assert (result.windows, result.windows_agree) == (3, False)
    assert result.window_medians_ms == (10.0, 20.0, 12.0)  # every window taken, the odd one too
    assert result.window_diff_pct == pytest.approx(20.0)


@pytest.mark.parametrize(("second_ms", "third_ms", "agree"), [(103, 0, True), (110, 103.02, False)])
def test_kept_windows_agree_within_3pct_of_the_smaller_median(clock: FakeClock, second_ms, third_ms, agree) -> None:
    steps = iter([100] * 7 + [100] * 11 + [second_ms] * 11 + [third_ms] * 11 + [10] * 3)
    result = characterise(Paced(clock, lambda _: next(steps)), "eval", Budget(measure_s=1.0, edge_calls=1), Pace())
    assert result.windows_agree is agree
    assert result.window_diff_pct == pytest.approx(3.0 if agree else 3.02)


def test_measured_steps_are_sized_from_the_last_warmup_window(clock: FakeClock) -> None:
    # Threes of 250 and 500 ms steps (never steady), then 900 ms: 2 s / 900 ms -> 3 steps a window.
    steps = iter([250] + ([250] * 3 + [500] * 3) * 2 + [900] * 100)
    model = Paced(clock, lambda _: next(steps))
    characterise(model, "eval", Budget(warmup_s=60, edge_calls=1), Pace())
    assert model.calls[-3:] == [4, 4, 1]


def test_edge_calls_stop_at_the_edge_budget_after_at_least_one(clock: FakeClock) -> None:
    model = Paced(clock, constant(10), edge_ms=2)
    characterise(model, "eval", Budget(measure_s=0.1, edge_s=0.001), Pace())
    assert model.calls[-2:] == [11, 1]  # the 1 ms budget is spent by the first 12 ms call
    model = Paced(clock, constant(10), edge_ms=2)
    characterise(model, "eval", Budget(measure_s=0.1, edge_s=0.03, edge_calls=5), Pace())
    assert model.calls[-4:] == [11, 1, 1, 1]  # 24 ms spent after two: a third starts, a fourth does not
    model = Paced(clock, constant(1000), edge_ms=200)
    characterise(model, "eval", Budget(edge_s=2.4, edge_calls=5), Pace())
    assert model.calls[-3:] == [4, 1, 1]  # exactly 2.4 s spent after two: no third


def test_budget_measures_about_measure_s_within_floor_and_cap() -> None:
    budget = Budget(measure_s=2.0, min_steps=5, max_steps=100)
    assert budget.measured_steps(step_estimate_ns=0.1e9) == 20
    assert budget.measured_steps(step_estimate_ns=0.3e9) == 7  # rounded up
    assert budget.measured_steps(step_estimate_ns=1e9) == 5
    assert budget.measured_steps(step_estimate_ns=1e6) == 100
    assert budget.measured_steps(step_estimate_ns=0) == 100
    assert Budget(measure_s=1e-8, min_steps=1).measured_steps(0) == 10  # an estimate of 0 counts as 1 ns
    assert Budget(steps=7).measured_steps(1e9) == 7


@pytest.mark.parametrize("field", ["min_steps", "max_steps", "edge_calls", "light_steps", "detailed_steps", "warmup_window", "steps"])
def test_budget_refuses_counts_below_one(field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field} must be at least 1$"):
        Budget(**{field: 0})
    Budget(**{field: 1})


def test_budget_needs_two_windows() -> None:
    with pytest.raises(ValueError, match="^windows must be at least 2: one window cannot be checked against another$"):
        Budget(windows=1)
    assert Budget(windows=2).windows == 2


def test_profiles_record_more_steps_of_fast_models() -> None:
    budget = Budget()  # light: 3 to 50 steps within 1 s; detailed: 1 to 5 within 0.5 s
    assert budget.profiled_steps("light", step_ms=1000) == 3
    assert budget.profiled_steps("light", step_ms=100) == 10
    assert budget.profiled_steps("light", step_ms=20.01) == 49
    assert Budget(light_s=0.001, light_steps=1).profiled_steps("light", step_ms=0.5) == 2
    assert budget.profiled_steps("light", step_ms=0.01) == 50
    assert budget.profiled_steps("light", step_ms=0) == 50
    assert budget.profiled_steps("detailed", step_ms=1000) == 1
    assert budget.profiled_steps("detailed", step_ms=125) == 4
    assert budget.profiled_steps("detailed", step_ms=1) == 5
    custom = Budget(light_steps=7, light_s=2.0, detailed_steps=2, detailed_s=1.0)
    assert custom.profiled_steps("light", step_ms=1000) == 7
    assert custom.profiled_steps("light", step_ms=100) == 20
    assert custom.profiled_steps("detailed", step_ms=1000) == 2
    assert custom.profiled_steps("detailed", step_ms=250) == 4


def test_steps_on_a_cpu_need_no_sync_and_on_a_gpu_sync_its_device(monkeypatch: pytest.MonkeyPatch) -> None:
    synced = []
    monkeypatch.setattr(torch.cuda, "synchronize", synced.append)
    harness.device_sync(torch.device("cpu"))()
    assert synced == []
    harness.device_sync(torch.device("cuda", 1))()
    assert synced == [torch.device("cuda", 1)]
