"""oneDNN's RNN layers, priced for a step that calls one and only there.

An RNN layer builds its primitive on every call and then steps through time inside one event: beyond its
events' dispatch a call costs a set-up and a price per time step. Here a step's time steps are counted from
its calls' input shapes, and both prices read off a line through two loops, over 1 and ``RNN_TIME_STEPS``
time steps, timed by ``measure.calibration.with_rnn_prices`` for a step whose light trace calls one.
"""

from __future__ import annotations

import dataclasses
import gzip
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from torchbenchmark.analyze.overhead import PRICED_KINDS, SETUP_OPS, TIME_STEP_KINDS, OverheadEvents
from torchbenchmark.analyze.pricing import Counted, Prices
from torchbenchmark.analyze.trace import Event, load_events

RNN_OP = "aten::mkldnn_rnn_layer"  # its backward's name begins with it too
RNN_TIME_STEPS = 33  # of the calibration's longer RNN loop


def calls_rnn(path: str | Path) -> bool:
    """Whether a trace holds a oneDNN RNN layer's call, read as text (its op names are JSON strings)."""
    opener: Any = gzip.open if str(path).endswith(".gz") else open
    tail = ""  # a name may straddle two chunks
    with opener(path, "rt", encoding="utf-8") as stream:
        for chunk in iter(lambda: stream.read(1 << 22), ""):
            if RNN_OP in tail + chunk:
                return True
            tail = chunk[-len(RNN_OP) :]
    return False


def time_steps_per_call(events: Iterable[Event]) -> dict[str, float]:
    """The mean time steps of a call of each kind that steps through time, from a trace that recorded shapes."""
    calls = ((str(event.get("name", "")), (event.get("args") or {}).get("Input Dims")) for event in events if event.get("ph") == "X")
    return time_steps_of_calls((name, dims) for name, dims in calls if dims)


def time_steps_of_calls(calls: Iterable[tuple[str, Sequence[Sequence[int]]]]) -> dict[str, float]:
    """The mean time steps of a call of each kind that steps through time, from each call's (op name, input shapes):
    its input is time-major, (time, batch, features); a kind with no such call (a packed sequence's) is left out."""
    steps: dict[str, list[int]] = defaultdict(list)
    for name, dims in calls:
        kind = SETUP_OPS.get(name)
        if kind in TIME_STEP_KINDS and dims and len(dims[0]) == 3:
            steps[kind].append(int(dims[0][0]))
    return {kind: statistics.fmean(counts) for kind, counts in steps.items()}


def with_time_steps(
    events: OverheadEvents, shapes_path: str | Path | None = None, watched: Mapping[str, float] | None = None
) -> OverheadEvents:
    """``events`` with each RNN call's time steps counted: from ``shapes_path``, a trace of the step with shapes,
    else ``watched``, those the replay saw (``measure.replay.Warm``); a kind neither knows counts none."""
    if not any(events.mean_events(kind) for kind in TIME_STEP_KINDS):
        return events
    per_call = time_steps_per_call(load_events(shapes_path)) if shapes_path is not None else dict(watched or {})
    counted = tuple(
        {**step, **{TIME_STEP_KINDS[kind]: step[kind] * steps for kind, steps in per_call.items()}} for step in events.events_per_step
    )
    return dataclasses.replace(events, events_per_step=counted)


def with_rnn_prices(prices: Prices, workloads: Sequence[Counted], cost_us: Mapping[str, float]) -> Prices:
    """``prices`` with an RNN layer's set-up and time step priced, forward and, where its loops are given, backward.

    ``cost_us`` holds ``loop``, ``rnn_1`` and ``rnn_33`` (and ``rnn_backward_1``, ``rnn_backward_33`` with
    ``backward_1``, whose engine entry a backward pays too); a layer that did not run on oneDNN stays at 0.
    """
    by_name = {w.name: w for w in workloads}
    net = {name: max(0.0, cost - cost_us["loop"]) for name, cost in cost_us.items()}
    for kind, engine in (("rnn", None), ("rnn_backward", by_name.get("backward_1"))):
        prices = _price_rnn(prices, kind, by_name, net, engine)
    return prices


def _price_rnn(prices: Prices, kind: str, by_name: Mapping[str, Counted], net: Mapping[str, float], engine: Counted | None) -> Prices:
    """set-up + time steps * step beyond its events' dispatch (and a backward's engine entry), through two loops."""
    short, long = by_name.get(f"{kind}_1"), by_name.get(f"{kind}_{RNN_TIME_STEPS}")
    if short is None or long is None or not short.events.get(kind) or not long.events.get(kind):
        return prices

    def unpriced_us(workload: Counted) -> float:
        return net[workload.name] - sum(workload.events.get(k, 0) * prices.of(k) for k in PRICED_KINDS)

    def per_call_us(workload: Counted) -> float:
        return (unpriced_us(workload) - (unpriced_us(engine) if engine else 0.0)) / workload.events[kind]

    step_us = max(0.0, (per_call_us(long) - per_call_us(short)) / (long.time_steps - short.time_steps))
    setup_us = max(0.0, per_call_us(short) - step_us * short.time_steps)
    return dataclasses.replace(prices, **{f"{kind}_us": setup_us, f"{TIME_STEP_KINDS[kind]}_us": step_us})
