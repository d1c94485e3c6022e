"""--scaling: the step time's line over batch sizes, the bound its intercept gives, and where the verdict would change."""

from __future__ import annotations

import pytest

from torchbenchmark.analyze import scaling


def test_scaling_fits_the_intercept_and_checks_the_event_estimate_against_it() -> None:
    batches = scaling.scaling_batch_sizes(256)
    assert batches == [32, 64, 128]
    step_ms = {batch: 2.0 + 0.01 * batch for batch in (*batches, 256)}
    fit = scaling.scaling_from_steps(step_ms, 256, fraction=0.3)
    assert fit.batch_sizes == (32, 64, 128, 256)
    assert fit.intercept_ms == pytest.approx(2.0)
    assert fit.fraction_upper == pytest.approx(2.0 / 4.56)
    assert fit.agrees
    assert not scaling.scaling_from_steps(step_ms, 256, fraction=0.9).agrees  # bound broken
    assert not scaling.scaling_from_steps(step_ms, 256, fraction=0.05).agrees  # far below
    assert scaling.scaling_batch_sizes(2) == [1]  # one smaller batch only: no line (the engine fits none)


def test_scaling_gives_the_batches_where_the_overhead_share_falls_to_each_threshold() -> None:
    """A decode-like step: 4 ms of overhead (held fixed: the op count does not grow with the batch) on a
    line of 5 ms + 0.5 ms per sequence. 4 / (5 + 0.5 b) is 50% at b = 6 and 20% at b = 30."""

    def step_ms_at(batch: int) -> float:
        return 5.0 + 0.5 * batch

    fit = scaling.scaling_from_steps({b: step_ms_at(b) for b in (1, 2, 4, 8)}, 1, fraction=4.0 / step_ms_at(1))
    assert fit.batch_at_overhead_50pct == 6
    assert fit.batch_at_overhead_20pct == 30
    flat = scaling.scaling_from_steps({b: 5.0 for b in (1, 2, 4, 8)}, 1, fraction=0.8)
    assert flat.batch_at_overhead_50pct is None and flat.batch_at_overhead_20pct is None  # the line does not grow
    small = scaling.scaling_from_steps({b: step_ms_at(b) for b in (1, 2, 4, 8)}, 1, fraction=0.1)
    assert small.batch_at_overhead_50pct == 1  # below 50% from the first batch


@pytest.mark.parametrize(
    "step_ms, contradiction",
    [
        ({1: 40.3, 2: 23.9, 4: 21.3, 8: 19.4}, "batch 2 ran in 23.9 ms, faster than batch 1's 40.3 ms"),
        ({1: 13.3, 2: 531.9, 4: 530.0, 8: 536.0}, None),  # grows, then flat: a fit, bounded at 100%
        ({1: 10.0, 2: 9.5, 4: 12.0, 8: 16.0}, None),  # 5% faster at batch 2: within noise
    ],
    ids=["bigger batches ran faster", "a jump then flat", "a small fall"],
)
def test_a_scaling_fit_that_contradicts_itself_says_why_and_bounds_nothing(step_ms: dict, contradiction: str | None) -> None:
    """llama_decode's --scaling step times as three runs read them (batch 1 is the case's own)."""
    fit = scaling.scaling_from_steps(step_ms, 1, fraction=0.5)
    assert 0.0 <= fit.fraction_upper <= 1.0
    if contradiction is None:
        assert fit.contradiction is None
        return
    assert fit.contradiction is not None and fit.contradiction.startswith(contradiction)
    assert not fit.agrees and fit.batch_at_overhead_50pct is None and fit.batch_at_overhead_20pct is None


def test_a_scaling_batch_measured_in_doubt_is_noted_and_the_fit_stands() -> None:
    steady = {b: 5.0 + 0.5 * b for b in (1, 2, 4, 8)}
    fit = scaling.scaling_from_steps(steady, 1, fraction=0.5, doubts={4: "windows 12% apart", 2: "warm-up not steady"})
    assert fit.doubt == "batch 2: warm-up not steady; batch 4: windows 12% apart"
    assert fit.contradiction is None and fit.batch_at_overhead_20pct is not None


def test_scaling_times_a_decode_model_at_multiples_of_its_batch() -> None:
    assert scaling.scaling_batch_sizes(1, up=True) == [2, 4, 8]
    assert scaling.scaling_batch_sizes(3, up=True) == [6, 12, 24]
    assert scaling.scaling_batch_sizes(1) == []
