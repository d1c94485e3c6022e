"""Sorting a trace's op events into the kinds the dispatch verdict prices, and its Python gaps."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchbenchmark.analyze.overhead import PRICED_KINDS, overhead_events, overhead_events_of_trace

REAL_TRACE = Path(__file__).resolve().parents[1] / "data" / "tiny_mlp_train.pt.trace.json.gz"
NODE = "autograd::engine::evaluate_function: MulBackward0"


def _x(name: str, ts: float, dur: float, tid: int = 1, cat: str = "cpu_op") -> dict:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid}


def _step(index: int, start: float, dur: float = 50.0) -> dict:
    return _x(f"ProfilerStep#{index}", start, dur, cat="user_annotation")


def _kinds(**counts: int) -> dict[str, int]:
    """Every priced kind's count: those given, 0 for the rest."""
    return {kind: counts.get(kind, 0) for kind in PRICED_KINDS}


def _one_step(offset: float = 0.0) -> list[dict]:
    """A step [0, 50): a call with nested ops, two autograd nodes back to back, another call."""
    return [
        _x("aten::linear", offset + 2, 10),  # call; gap 2 before it
        _x("aten::t", offset + 3, 1),  # nested
        _x("aten::addmm", offset + 5, 6),  # nested
        _x("aten::empty", offset + 6, 1),  # nested in a nested op
        _x(NODE, offset + 20, 10),  # autograd; gap 8 before it: entering the engine is Python's
        _x("MulBackward0", offset + 21, 8),  # nested: the node's function
        _x("aten::mul", offset + 22, 6),  # nested: dispatched by the node's function
        _x(NODE, offset + 32, 3),  # autograd; the gap of 2 between two nodes is the engine's
        _x("aten::add", offset + 40, 1),  # call; gap 5 before it, and 9 after it to the step's end
    ]


def test_kinds_and_python_gap_of_a_hand_made_step() -> None:
    counted = overhead_events([_step(1, 0.0), *_one_step()])
    assert counted.steps == 1
    assert counted.events_per_step == (_kinds(call=2, nested=5, autograd=2),)
    assert counted.python_gap_us_per_step == (pytest.approx(2 + 8 + 5 + 9),)


def test_each_step_on_its_own_thread_and_nothing_outside_the_steps() -> None:
    events = [
        _step(1, 0.0),
        *_one_step(),
        _step(2, 100.0),
        *_one_step(100.0),
        _x("aten::add", 60, 1),  # between the steps: in no step
        _x("aten::add", 110, 1, tid=2),  # another thread: not the step's
    ]
    counted = overhead_events(events)
    assert counted.steps == 2
    assert counted.mean_events("call") == 2
    assert counted.mean_events("autograd") == 2
    assert counted.python_gap_us_per_step == pytest.approx((24, 24))


def test_a_step_with_no_op_is_all_python_gap() -> None:
    counted = overhead_events([_step(1, 0.0, dur=7.5)])
    assert counted.events_per_step == (_kinds(),)
    assert counted.python_gap_us_per_step == (7.5,)


def test_a_trace_without_steps_is_refused() -> None:
    with pytest.raises(ValueError, match="ProfilerStep"):
        overhead_events([_x("aten::add", 0, 1)])


def test_real_trace_kinds_add_up_to_its_op_events() -> None:
    counted = overhead_events_of_trace(REAL_TRACE)
    assert counted.steps == 2
    per_step = {kind: counted.mean_events(kind) for kind in ("call", "nested", "autograd")}
    assert sum(per_step.values()) == 134  # summarize_trace's ops_per_step for this trace
    assert per_step["autograd"] > 0 and per_step["nested"] > 0
    assert all(0 < gap < 33_528 for gap in counted.python_gap_us_per_step)  # within the 33.5 ms step


def test_the_least_gap_is_the_least_steps() -> None:
    # Two steps of one call each; a preemption lengthens the gap before the call in step 1 (its total 45) and
    # the gap after it in step 2 (its total 60): the least step's gap stands, as a step that ran.
    events = [
        _step(1, 0.0, dur=50.0),
        _x("aten::add", 35, 5),  # gaps 35 before, 10 after
        _step(2, 100.0, dur=65.0),
        _x("aten::add", 105, 5),  # gaps 5 before, 55 after
    ]
    counted = overhead_events(events)
    assert counted.python_gap_us_per_step == (pytest.approx(45), pytest.approx(60))
    assert counted.least_gap_us == pytest.approx(45)


def test_the_harness_time_after_a_steps_clock_stopped_is_no_gap_of_the_step() -> None:
    # Each profiled step's range is 50 long, its timer read 45 and 48: the rest, the harness's accounting and
    # the profiler's own step after the clock stopped, lies at the range's end and is no gap of the step's.
    events = [_step(1, 0.0), *_one_step(), _step(2, 100.0), *_one_step(100.0)]
    assert overhead_events(events).python_gap_us_per_step == (pytest.approx(24), pytest.approx(24))
    timed = overhead_events(events, timed_us=[45.0, 48.0])
    assert timed.python_gap_us_per_step == (pytest.approx(24 - 5), pytest.approx(24 - 2))
    assert timed.least_gap_us == pytest.approx(24 - 5)
    assert overhead_events(events, timed_us=[45.0]).python_gap_us_per_step == (pytest.approx(24), pytest.approx(24))  # not one a step


def test_a_preemption_before_a_steps_clock_started_cuts_none_of_its_gaps_between_ops() -> None:
    # Three steps of 2 ms of glue between two calls, each timed at 2.1 ms. The third was preempted for 4 ms after
    # its range opened and before its clock started: cut at the range's start plus its time, its glue would read nil.
    def step(index: int, at: float, preempted: float = 0.0) -> list[dict]:
        return [
            _step(index, at, dur=2150.0 + preempted),
            _x("aten::add", at + preempted + 10, 10),  # gap 10 before it (the preemption's step: 4,010)
            _x("aten::relu", at + preempted + 2020, 10),  # the glue, 2,000, before it
        ]  # then 70 to the clock's end

    events = [*step(1, 0.0), *step(2, 10_000.0), *step(3, 20_000.0, preempted=4000.0)]
    counted = overhead_events(events, timed_us=[2100.0] * 3)
    assert counted.python_gap_us_per_step == (pytest.approx(2080), pytest.approx(2080), pytest.approx(6010))
    assert counted.least_gap_us == pytest.approx(2080)


def test_an_rnn_layer_counts_under_its_kind_and_its_set_up_kind() -> None:
    step = [
        _step(1, 0.0, dur=400.0),
        _x("aten::lstm", 10, 300),  # call
        _x("aten::mkldnn_rnn_layer", 20, 100),  # nested, and rnn set-up
        _x("aten::mkldnn_rnn_layer", 150, 100),
        _x(NODE, 320, 60),  # autograd
        _x("aten::mkldnn_rnn_layer_backward", 330, 40),  # nested, and its backward's set-up
    ]
    counted = overhead_events(step)
    assert counted.events_per_step == (_kinds(call=1, nested=3, autograd=1, rnn=2, rnn_backward=1),)


def test_a_onednn_convolution_counts_under_its_kind_and_its_set_up_kind_with_no_time_steps() -> None:
    step = [
        _step(1, 0.0, dur=400.0),
        _x("aten::conv1d", 10, 300),  # call
        _x("aten::convolution", 12, 290),  # nested
        _x("aten::mkldnn_convolution", 20, 250),  # nested, and conv set-up
    ]
    counted = overhead_events(step)
    assert counted.events_per_step == (_kinds(call=1, nested=2, conv=1),)
