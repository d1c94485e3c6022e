"""Trace analysis on a real trace kept under tests/data, and on hand-made events with known answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchbenchmark.analyze.steps import summarize_events, summarize_trace
from torchbenchmark.analyze.trace import load_events

REAL_TRACE = Path(__file__).resolve().parents[1] / "data" / "tiny_mlp_train.pt.trace.json.gz"


def test_real_trace_figures() -> None:
    summary = summarize_trace(REAL_TRACE)
    assert summary.steps == 2
    assert summary.ops_per_step == 134
    assert summary.calls_per_step == 29
    assert summary.step_ms == pytest.approx(33.528, abs=1e-3)
    assert summary.phases_ms["forward"] == pytest.approx(9.730, abs=1e-3)
    assert summary.phases_ms["backward"] == pytest.approx(22.975, abs=1e-3)
    assert summary.phases_ms["optimizer"] == pytest.approx(0.627, abs=1e-3)
    assert summary.median_op_us == pytest.approx(6.6485)
    # Every top op, in order: self time is duration less the direct children's, so a change in the nesting
    # (a child charged to every ancestor, a parent mistaken for a sibling) moves these.
    assert [(op.name, round(op.self_ms_per_step, 3), op.calls_per_step) for op in summary.top_ops] == [
        ("aten::_log_softmax_backward_data", 11.853, 1.0),
        ("aten::nll_loss_backward", 9.852, 1.0),
        ("aten::_log_softmax", 9.283, 1.0),
        ("LogSoftmaxBackward0", 0.15, 1.0),
        ("autograd::engine::evaluate_function: AddmmBackward0", 0.098, 2.0),
        ("aten::mm", 0.066, 3.0),
        ("aten::addmm", 0.052, 2.0),
        ("aten::t", 0.043, 9.0),
        ("autograd::engine::evaluate_function: NllLossBackward0", 0.037, 1.0),
        ("aten::sum", 0.035, 2.0),
    ]
    assert summary.top_ops[0].pct_of_step == pytest.approx(100 * 11.853 / 33.528, abs=0.01)
    assert summary.gpu_busy_fraction is None
    # Self times never exceed the step, and the phases account for the step (a little is between them).
    assert sum(op.pct_of_step for op in summary.top_ops) <= 100
    assert 95 <= sum(summary.phases_pct.values()) <= 100


def test_real_trace_is_a_chrome_trace_with_profiler_steps() -> None:
    names = {event.get("name", "") for event in load_events(REAL_TRACE)}
    assert {"ProfilerStep#2", "ProfilerStep#3", "forward", "backward", "optimizer"} <= names


def _op(name: str, ts: float, dur: float, tid: int = 1, cat: str = "cpu_op") -> dict:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid}


def test_self_time_nesting_and_step_windows() -> None:
    events = [
        _op("ProfilerStep#1", 0, 100, cat="user_annotation"),
        _op("forward", 0, 60, cat="user_annotation"),
        _op("aten::linear", 10, 40),  # top-level, self 40 - 30 = 10
        _op("aten::addmm", 15, 30),  # nested, self 30
        _op("aten::relu", 60, 20),  # top-level, self 20
        _op("aten::add", 70, 5, tid=2),  # another thread: top-level there
        _op("aten::outside", 150, 10),  # after the step: not counted
    ]
    summary = summarize_events(events)
    assert summary.steps == 1
    assert summary.ops_per_step == 4
    assert summary.calls_per_step == 3
    assert summary.median_op_us == 20  # top-level durations 40, 20, 5
    assert {op.name: op.self_ms_per_step * 1e3 for op in summary.top_ops} == {
        "aten::addmm": pytest.approx(30),
        "aten::relu": pytest.approx(20),
        "aten::linear": pytest.approx(10),
        "aten::add": pytest.approx(5),
    }
    assert summary.phases_pct == {"forward": 60.0, "backward": 0.0, "optimizer": 0.0}


def test_gpu_busy_counts_overlapping_kernels_once() -> None:
    events = [
        _op("ProfilerStep#1", 0, 100, cat="user_annotation"),
        _op("gemm", 10, 30, cat="kernel"),
        _op("gemm", 20, 30, cat="kernel"),  # overlaps the first: busy 10..50
        _op("copy", 80, 40, cat="gpu_memcpy"),  # runs past the step: busy 80..100
    ]
    assert summarize_events(events).gpu_busy_fraction == pytest.approx(0.6)


def self_us(events: list[dict]) -> dict[str, float]:
    return {op.name: op.self_ms_per_step * 1e3 for op in summarize_events(events).top_ops}


def test_siblings_that_touch_are_not_nested() -> None:
    events = [_op("ProfilerStep#1", 0, 100, cat="user_annotation"), _op("a", 10, 10), _op("b", 20, 10)]
    assert self_us(events) == {"a": 10, "b": 10}
    assert summarize_events(events).calls_per_step == 2


def test_ops_of_another_process_never_nest() -> None:
    events = [_op("ProfilerStep#1", 0, 100, cat="user_annotation"), _op("a", 10, 20), {**_op("b", 15, 5), "pid": 2}]
    assert self_us(events) == {"a": 20, "b": 5}
    assert summarize_events(events).calls_per_step == 2


def test_a_parent_and_child_with_the_same_start_nest_by_length() -> None:
    # Listed child first: the longer event is the parent whatever the order in the file.
    events = [_op("ProfilerStep#1", 0, 100, cat="user_annotation"), _op("child", 10, 4), _op("parent", 10, 10)]
    assert self_us(events) == {"parent": 6, "child": 4}
    assert summarize_events(events).calls_per_step == 1
    assert summarize_events(events).median_op_us == 10


def test_a_childs_time_is_taken_from_its_parent_only() -> None:
    events = [
        _op("ProfilerStep#1", 0, 100, cat="user_annotation"),
        _op("grandparent", 0, 20),
        _op("parent", 2, 8),
        _op("child", 3, 2),
        _op("after", 12, 4),  # a second child of the grandparent, after the parent closed
    ]
    assert self_us(events) == {"grandparent": 8, "parent": 6, "child": 2, "after": 4}
    summary = summarize_events(events)
    assert (summary.ops_per_step, summary.calls_per_step, summary.median_op_us) == (4, 1, 20)


def test_an_event_belongs_to_the_step_holding_its_start() -> None:
    events = [
        _op("ProfilerStep#1", 0, 100, cat="user_annotation"),
        _op("ProfilerStep#2", 100, 300, cat="user_annotation"),
        _op("before", -5, 10),  # starts before any step: not counted
        _op("first", 0, 30),  # at a step's start: in it
        _op("second", 100, 50),  # exactly at step 1's end: in step 2
        _op("late", 400, 1),  # exactly at the last step's end: not counted
        _op("gap", 150, 20, cat="user_annotation"),
        _op("forward", 100, 40, cat="user_annotation"),
        _op("forward", 0, 60, cat="cpu_op"),  # an op named like a phase is not a phase
    ]
    summary = summarize_events(events)
    assert summary.steps == 2
    assert summary.step_ms == pytest.approx(0.2)  # the mean of 100 and 300 µs
    assert summary.ops_per_step == 1.5
    assert summary.calls_per_step == 1.0  # "first" runs inside the op named forward
    assert summary.median_op_us == 55.0
    assert self_us(events) == {"forward": 15, "second": 25, "first": 15}  # per step: (60 - 30)/2, 50/2, 30/2
    assert summary.phases_ms == {"forward": pytest.approx(0.02), "backward": 0.0, "optimizer": 0.0}
    assert summary.phases_pct["forward"] == pytest.approx(10.0)


def test_top_ops_are_ranked_by_self_time_and_cut_at_top() -> None:
    events = [_op("ProfilerStep#1", 0, 100, cat="user_annotation")]
    events += [_op("small", 0, 1), _op("large", 2, 30), _op("small", 40, 1), _op("mid", 50, 5)]
    summary = summarize_events(events, top=2)
    assert [(op.name, op.calls_per_step, op.pct_of_step) for op in summary.top_ops] == [("large", 1, 30.0), ("mid", 1, 5.0)]
    assert [op.name for op in summarize_events(events).top_ops] == ["large", "mid", "small"]
    assert summarize_events(events).top_ops[2].calls_per_step == 2
    many = [_op("ProfilerStep#1", 0, 100, cat="user_annotation")] + [_op(f"op{i}", i, 1) for i in range(12)]
    assert len(summarize_events(many).top_ops) == 10  # ten by default


def test_a_step_with_no_ops_has_no_median_op() -> None:
    summary = summarize_events([_op("ProfilerStep#1", 0, 100, cat="user_annotation")])
    assert (summary.ops_per_step, summary.median_op_us, summary.top_ops, summary.gpu_busy_fraction) == (0, 0.0, (), None)


def test_gpu_busy_is_clipped_to_the_steps_and_counts_every_gpu_category() -> None:
    events = [
        _op("ProfilerStep#1", 0, 100, cat="user_annotation"),
        _op("ProfilerStep#2", 200, 100, cat="user_annotation"),
        _op("memset", 210, 20, cat="gpu_memset"),
        _op("gemm", 290, 30, cat="kernel"),  # starts in step 2, ends after it: 10 µs count
        _op("gemm", 150, 10, cat="kernel"),  # between the steps: not counted
        _op("copy", 0, 10, cat="gpu_memcpy"),
        _op("copy", 0, 5, cat="gpu_memcpy"),  # inside the first copy: counted once
        _op("aten::mm", 20, 50),  # a CPU op is not GPU time
    ]
    assert summarize_events(events).gpu_busy_fraction == pytest.approx((20 + 10 + 10) / 200)


def test_plain_json_traces_load_too(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": [_op("ProfilerStep#1", 0, 100, cat="user_annotation"), _op("a", 1, 2)]}))
    assert summarize_trace(path).ops_per_step == 1
    assert summarize_trace(path, top=0).top_ops == ()


def test_a_trace_without_profiler_steps_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^the trace holds no ProfilerStep events: was the profiler stepped\?$"):
        summarize_events([_op("aten::add", 0, 1)])
