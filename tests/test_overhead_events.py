"""Sorting a trace's op events into the kinds the dispatch verdict prices, and its Python gaps."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchbenchmark.trace_analysis import overhead_events, overhead_events_of_trace

REAL_TRACE = Path(__file__).parent / "data" / "tiny_mlp_train.pt.trace.json.gz"
NODE = "autograd::engine::evaluate_function: MulBackward0"


def _x(name: str, ts: float, dur: float, tid: int = 1, cat: str = "cpu_op") -> dict:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid}


def _step(index: int, start: float, dur: float = 50.0) -> dict:
    return _x(f"ProfilerStep#{index}", start, dur, cat="user_annotation")


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
    assert counted.events_per_step == ({"call": 2, "nested": 5, "autograd": 2},)
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
    assert counted.median_python_gap_us == pytest.approx(24)


def test_a_step_with_no_op_is_all_python_gap() -> None:
    counted = overhead_events([_step(1, 0.0, dur=7.5)])
    assert counted.events_per_step == ({"call": 0, "nested": 0, "autograd": 0},)
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


def test_least_python_gap_takes_each_gap_at_its_least_over_the_steps() -> None:
    # Two steps of one call each; a preemption lengthens the gap before the call in step 1 and the
    # gap after it in step 2, so each step's total is 40 but no single gap was long in both.
    events = [
        _step(1, 0.0, dur=50.0), _x("aten::add", 35, 5),  # gaps 35 before, 10 after
        _step(2, 100.0, dur=50.0), _x("aten::add", 105, 5),  # gaps 5 before, 40 after
    ]  # fmt: skip
    counted = overhead_events(events)
    assert counted.python_gap_us_per_step == (pytest.approx(45), pytest.approx(45))
    assert counted.least_python_gap_us == pytest.approx(5 + 10)
