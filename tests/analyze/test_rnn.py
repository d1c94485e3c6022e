"""oneDNN's RNN layers: their time steps read from a step's calls, and their set-up and time step priced."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
import torch
from torch.profiler import profile, record_function

from tests.helpers.pricing import PRICES, _dispatch_workloads, _events
from torchbenchmark.analyze import pricing, rnn
from torchbenchmark.analyze.overhead import PRICED_KINDS, OverheadEvents, overhead_events_of_trace
from torchbenchmark.measure import calibration as calibrating
from torchbenchmark.measure.schedstat import busy_machine

REAL_TRACE = Path(__file__).resolve().parents[1] / "data" / "tiny_mlp_train.pt.trace.json.gz"


def _op(name: str, ts: float, dur: float, time_steps: int | None = None) -> dict:
    """An op event; with ``time_steps``, the input shapes of an RNN layer's call."""
    event = {"ph": "X", "cat": "cpu_op", "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": 1}
    if time_steps is not None:  # as a trace that recorded shapes holds them: (time, batch, features) first
        event["args"] = {"Input Dims": [[time_steps, 20, 200], [800, 200], [800, 200], [800], [800], [20, 200], [20, 200], []]}
    return event


def test_a_steps_time_steps_are_counted_from_the_calls_the_replay_watched_and_only_for_a_step_that_calls_one() -> None:
    counts = {kind: 0 for kind in PRICED_KINDS} | {"call": 1, "nested": 3, "autograd": 1, "rnn": 2, "rnn_backward": 1}
    counted = OverheadEvents(events_per_step=(counts,), python_gap_us_per_step=(5.0,))
    stepped = rnn.with_time_steps(counted, watched={"rnn": 35.0, "rnn_backward": 35.0})
    assert stepped.mean_events("rnn_step") == 70 and stepped.mean_events("rnn_backward_step") == 35
    assert stepped.mean_events("rnn") == 2 and stepped.python_gap_us_per_step == counted.python_gap_us_per_step
    # A step that calls no RNN layer: its shapes are not read (a missing file would raise), nothing is counted.
    none = _events(10, 40, 0, (5.0,))
    assert rnn.with_time_steps(none, "no such trace.json", {"rnn": 35.0}) is none


def test_time_steps_per_call_read_from_a_trace_that_recorded_shapes() -> None:
    events = [
        _op("aten::mkldnn_rnn_layer", 0, 10, time_steps=35),
        _op("aten::mkldnn_rnn_layer", 20, 10, time_steps=5),
        _op("aten::mkldnn_rnn_layer_backward", 40, 10),  # no shapes recorded: not known
        _op("aten::addmm", 60, 1),  # no RNN layer
    ]
    assert rnn.time_steps_per_call(events) == {"rnn": 20.0}
    packed = _op("aten::mkldnn_rnn_layer", 0, 10)
    packed["args"] = {"Input Dims": [[700, 200], [800, 200]]}  # a packed sequence: its time steps are unknown
    assert rnn.time_steps_per_call([packed]) == {}
    # Shapes that look like an RNN's (three dimensions) give a convolution no time steps.
    shaped = _op("aten::mkldnn_convolution", 20, 250, time_steps=35)
    assert rnn.time_steps_per_call([shaped]) == {}


def test_an_lstms_trace_and_its_shapes_give_its_time_steps(tmp_path: Path) -> None:
    """A real nn.LSTM run on oneDNN: the light trace counts its layers, the shaped trace their time steps."""
    lstm, sequence = torch.nn.LSTM(3, 4, num_layers=2, batch_first=True), torch.ones(5, 7, 3)  # 7 time steps
    paths = {}
    for name, shapes in (("light", False), ("shaped", True)):
        with profile(record_shapes=shapes) as prof:
            for index in range(2):
                with record_function(f"ProfilerStep#{index}"):
                    lstm(sequence)[0].sum().backward()
        paths[name] = tmp_path / f"{name}.json"
        prof.export_chrome_trace(str(paths[name]))
    light = overhead_events_of_trace(paths["light"])
    assert light.mean_events("rnn") == 2 and light.mean_events("rnn_backward") == 2  # a layer each, both ways
    assert light.mean_events("rnn_step") == 0  # no shapes: no time steps
    both = rnn.with_time_steps(light, paths["shaped"])
    assert both.mean_events("rnn_step") == 14 and both.mean_events("rnn_backward_step") == 14
    assert rnn.calls_rnn(paths["light"]) and not rnn.calls_rnn(REAL_TRACE)


def test_prices_from_timings_recover_an_rnn_calls_set_up_and_time_step() -> None:
    """An RNN call costs its events' dispatch, a set-up, and a price per time step; backward beside the
    forward it runs and the engine's entry, which a shallow backward pays too."""
    loop, call, nested, autograd, engine = 0.05, 0.9, 0.2, 0.7, 9.0
    setup, step, back_setup, back_step = 30.0, 0.25, 90.0, 1.0
    long = rnn.RNN_TIME_STEPS

    def rnn_loop(name: str, steps: int, backward: bool) -> pricing.Counted:
        events = {"call": 1, "nested": 12, "autograd": 5 if backward else 0, "rnn": 1, "rnn_step": steps}
        if backward:
            events |= {"rnn_backward": 1, "rnn_backward_step": steps}
        return pricing.Counted(name, events, time_steps=steps)

    workloads = [
        *_dispatch_workloads(),
        rnn_loop("rnn_1", 1, False),
        rnn_loop(f"rnn_{long}", long, False),
        rnn_loop("rnn_backward_1", 1, True),
        rnn_loop(f"rnn_backward_{long}", long, True),
    ]
    unit = {
        "call": call,
        "nested": nested,
        "autograd": autograd,
        "rnn": setup,
        "rnn_step": step,
        "rnn_backward": back_setup,
        "rnn_backward_step": back_step,
    }

    def cost(w: pricing.Counted) -> float:
        fixed = engine if "backward" in w.name else 0.0
        return loop + fixed + sum(count * unit[kind] for kind, count in w.events.items())

    costs = {w.name: cost(w) for w in workloads}
    dispatch = pricing.prices_from_timings(workloads[:5], costs)
    assert dispatch.rnn_us == dispatch.rnn_backward_step_us == 0.0  # priced apart, for a step that calls one
    prices = rnn.with_rnn_prices(dispatch, workloads, costs)
    assert (prices.call_us, prices.nested_us, prices.autograd_us) == (pytest.approx(call), pytest.approx(nested), pytest.approx(autograd))
    assert prices.rnn_us == pytest.approx(setup) and prices.rnn_step_us == pytest.approx(step)
    assert prices.rnn_backward_us == pytest.approx(back_setup) and prices.rnn_backward_step_us == pytest.approx(back_step)
    forward = [w for w in workloads if "backward" not in w.name or w.name == "backward_1"]
    eval_only = rnn.with_rnn_prices(dispatch, forward, costs)  # an eval step: no backward loops, no backward price
    assert eval_only.rnn_step_us == pytest.approx(step) and eval_only.rnn_backward_us == 0.0


def test_an_rnn_layer_is_priced_at_the_cases_threads_where_a_time_step_costs_more_under_no_grad() -> None:
    """oneDNN's RNN layer forks and joins the threads at every time step under no_grad: priced at two threads,
    a time step costs more than at one, in the repeats of the calibration it adds to, whose other prices stay."""
    cpu, before = torch.device("cpu"), torch.get_num_threads()
    calibration = pricing.Calibration(repeats=(PRICES, dataclasses.replace(PRICES, call_us=1.2)))
    by_threads = {}
    for threads in (1, 2):
        torch.set_num_threads(threads)
        try:
            by_threads[threads] = calibrating.with_rnn_prices(calibration, cpu, train=False, calls=200, profiled_calls=20)
        finally:
            torch.set_num_threads(before)
    one, two = by_threads[1], by_threads[2]
    assert [p.call_us for p in two.repeats] == [1.0, 1.2] and all(p.rnn_backward_us == 0.0 for p in two.repeats)
    if torch.backends.mkldnn.is_available():
        assert all(p.rnn_us > 0 for p in one.repeats)
        if (os.cpu_count() or 1) >= 2:
            # A timed figure: right, or a machine the tool itself calls too busy for two threads (its own mark).
            assert two.prices.rnn_step_us > one.prices.rnn_step_us + 0.1 or busy_machine(2), (one.prices, two.prices)


def test_estimate_prices_an_rnn_calls_set_up_and_time_steps() -> None:
    prices = dataclasses.replace(PRICES, rnn_us=30.0, rnn_step_us=0.25, rnn_backward_us=90.0, rnn_backward_step_us=1.0)
    counts = {"call": 10, "nested": 40, "autograd": 0, "rnn": 2, "rnn_step": 70, "rnn_backward": 2, "rnn_backward_step": 70}
    events = OverheadEvents(events_per_step=(counts,), python_gap_us_per_step=(5.0,))
    priced = pricing.estimate(events, pricing.Calibration(repeats=(prices,)), step_ms=1.0)
    assert priced.overhead_us == pytest.approx(10 * 1.0 + 40 * 0.25 + 2 * 30 + 70 * 0.25 + 2 * 90 + 70 * 1.0)
    # An older row's events, without the set-up kinds, price as before.
    assert pricing.estimate(_events(10, 40, 0, (5.0,)), pricing.Calibration(repeats=(prices,)), step_ms=1.0).overhead_us == pytest.approx(
        20
    )
