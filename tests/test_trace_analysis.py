"""Trace analysis on a real trace kept under tests/data, and on hand-made events with known answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchbenchmark.trace_analysis import load_events, summarize_events, summarize_trace

REAL_TRACE = Path(__file__).parent / "data" / "tiny_mlp_train.pt.trace.json.gz"


def test_real_trace_figures() -> None:
    summary = summarize_trace(REAL_TRACE)
    assert summary.steps == 2
    assert summary.ops_per_step == 134
    assert summary.calls_per_step == 29
    assert summary.step_ms == pytest.approx(33.528, abs=1e-3)
    assert summary.phases_ms["forward"] == pytest.approx(9.730, abs=1e-3)
    assert summary.phases_ms["backward"] == pytest.approx(22.975, abs=1e-3)
    assert summary.phases_ms["optimizer"] == pytest.approx(0.627, abs=1e-3)
    assert summary.top_ops[0].name == "aten::_log_softmax_backward_data"
    assert summary.top_ops[0].calls_per_step == 1
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


def test_a_trace_without_profiler_steps_is_refused() -> None:
    with pytest.raises(ValueError, match="no ProfilerStep"):
        summarize_events([_op("aten::add", 0, 1)])
