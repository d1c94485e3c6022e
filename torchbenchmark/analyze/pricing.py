"""A step's per-op overhead priced: its op events times the per-event prices calibrated on this machine, plus its Python.

Every op pays a fixed cost before any arithmetic (argument parsing, the dispatcher, autograd's bookkeeping, an
allocation, a kernel launch), priced per kind of event (``analyze.overhead``); an op that builds its kernel on
every call (``SETUP_OPS``) pays once more for that, an RNN layer for each time step too (``analyze.rnn``). The
Python that makes no event (module calls, hooks, the optimizer's loops, glue) is measured, not priced: the
*gap*, the least step's, read in the real steps and in the step replayed with no kernel run
(``measure.replay``); the lesser reading stands, as load, the caches a long op left cold and the replay's own
Python only add to a gap. A top-level call's own gap (its arguments parsed) is in its price, so it comes out::

    overhead_us = sum(events[kind] * price[kind] for every priced kind)
                  + max(0, min(replayed_gap_us, real_gap_us) - calls * call_gap_us)
    fraction = overhead_us / median step time                  (uncapped; the pinned field caps it at 1)

Each addend is one of ``Estimate.terms_us``. Without a replay (a GPU, a compiled step, a step whose Python reads
values the replay does not compute) the real gap stands. The interval prices each kind at the calibration's
cheapest op with that gap (no gap without a replay), and at its dearest with the real steps' gap; each at its
median over the calibration's repeats, as the estimate's prices are.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Mapping, Sequence

from torchbenchmark.analyze.overhead import EVENT_KINDS, PRICED_KINDS, SETUP_KINDS, OverheadEvents

# The prices that are an end of the interval: one op each, no measure of the machine's pace (``analyze.compare``).
INTERVAL_ENDS = ("call_least_us", "call_most_us", "call_gap_least_us", "call_gap_most_us", "nested_least_us", "nested_most_us")


@dataclasses.dataclass(frozen=True)
class Prices:
    """The fixed cost of one event of each kind on this machine, in µs."""

    call_us: float
    nested_us: float
    autograd_us: float
    call_gap_us: float  # Python gap per top-level call of a bare loop under the light profiler, the loop's own excluded
    # The interval's ends (None: the price itself): the cheapest and dearest op of a kind the calibration timed. A
    # call's end is the op whose price less its gap is least (most), with that gap: the two move together.
    call_least_us: float | None = None
    call_gap_least_us: float | None = None
    call_most_us: float | None = None
    call_gap_most_us: float | None = None
    nested_least_us: float | None = None
    nested_most_us: float | None = None
    # Beyond its events' dispatch, an RNN layer call's set-up and each time step at nil width; a oneDNN
    # convolution's primitive, built on every call. 0 where none runs on oneDNN.
    rnn_us: float = 0.0
    rnn_step_us: float = 0.0
    rnn_backward_us: float = 0.0
    rnn_backward_step_us: float = 0.0
    conv_us: float = 0.0

    def __post_init__(self) -> None:
        for name in INTERVAL_ENDS:
            if getattr(self, name) is None:
                object.__setattr__(self, name, getattr(self, name.replace("_least", "").replace("_most", "")))

    def of(self, kind: str) -> float:
        return float(getattr(self, f"{kind}_us"))

    def at(self, end: str) -> Prices:
        """These prices with a call, its gap and a nested op at the interval's ``end``: "least" or "most"."""
        return dataclasses.replace(
            self, **{name: getattr(self, f"{name[:-3]}_{end}_us") for name in ("call_us", "call_gap_us", "nested_us")}
        )


@dataclasses.dataclass(frozen=True)
class Calibration:
    """Prices from each interleaved repeat of the calibration loops; the median of each is the estimate's."""

    repeats: tuple[Prices, ...]

    @property
    def prices(self) -> Prices:
        fields = dataclasses.fields(Prices)
        return Prices(**{field.name: statistics.median(getattr(p, field.name) for p in self.repeats) for field in fields})

    @property
    def spread_pct(self) -> float:
        """How far the median repeat's call price, or its gap, lies above the least, in % of the median: load that
        slowed half the repeats or more (preemption only adds, so the least is the nearest the truth)."""
        return max((_above_least([getattr(p, name) for p in self.repeats]) for name in ("call_us", "call_gap_us")), default=0.0)


def _above_least(values: Sequence[float]) -> float:
    median = statistics.median(values) if values else 0.0
    return 100 * (median - min(values)) / median if median else 0.0


@dataclasses.dataclass(frozen=True)
class Counted:
    """A calibration loop's body, counted: the events and Python gap one iteration makes."""

    name: str
    events: Mapping[str, float]
    gap_us: float = 0.0
    time_steps: int = 0  # of each RNN layer call in it


def prices_from_timings(workloads: Sequence[Counted], cost_us: Mapping[str, float]) -> Prices:
    """Per-event prices from each workload's counted events and its measured cost per iteration (µs), each kind
    from loops whose other kinds are priced already: a call from ops that nest nothing, a nested op pooled over
    ops that nest many, an autograd node from a deep backward less a shallow one (the engine's entry cancels),
    a convolution's set-up from a loop of one.

    ``cost_us`` holds ``loop`` (an empty body), ``backward_1``, ``backward_8`` and the forward workloads; ``conv``
    where one ran. An RNN layer is priced apart (``analyze.rnn``), for a step that calls one.
    """
    by_name = {w.name: w for w in workloads}
    net = {name: max(0.0, cost - cost_us["loop"]) for name, cost in cost_us.items()}
    forward = [w for w in workloads if w.name != "loop" and not w.name.startswith("backward") and not _builds(w)]
    flat = [w for w in forward if w.events["nested"] == 0 and w.events["call"] > 0]
    nesting = [w for w in forward if w.events["nested"] > 0]
    loop_gap = by_name["loop"].gap_us
    calls = {w.name: (net[w.name] / w.events["call"], max(0.0, w.gap_us - loop_gap) / w.events["call"]) for w in flat}
    call_us = statistics.median(price for price, _ in calls.values())
    least, most = (end(calls.values(), key=lambda call: call[0] - call[1]) for end in (min, max))
    nested_us = max(0.0, sum(net[w.name] - w.events["call"] * call_us for w in nesting) / sum(w.events["nested"] for w in nesting))
    nests = [max(0.0, net[w.name] - w.events["call"] * call_us) / w.events["nested"] for w in nesting]
    deep, shallow = by_name["backward_8"], by_name["backward_1"]
    delta = {kind: deep.events[kind] - shallow.events[kind] for kind in EVENT_KINDS}
    # On a GPU the engine runs a backward's nodes on the device's thread: the calling thread, counted, shows none.
    engine_us = net[deep.name] - net[shallow.name] - delta["call"] * call_us - delta["nested"] * nested_us
    autograd_us = max(0.0, engine_us / delta["autograd"]) if delta["autograd"] else 0.0
    call_gap_us = statistics.median(max(0.0, w.gap_us - loop_gap) / w.events["call"] for w in forward)
    prices = Prices(call_us, nested_us, autograd_us, call_gap_us, *least, *most, nested_least_us=min(nests), nested_most_us=max(nests))
    conv = by_name.get("conv")
    if conv is not None and conv.events.get("conv") and "conv" in net:
        dispatch_us = sum(conv.events[kind] * prices.of(kind) for kind in EVENT_KINDS)
        prices = dataclasses.replace(prices, conv_us=max(0.0, (net["conv"] - dispatch_us) / conv.events["conv"]))
    return prices


def _builds(workload: Counted) -> bool:
    """Whether a calibration loop's op builds its kernel on each call (a set-up kind, priced apart)."""
    return bool(workload.time_steps) or any(workload.events.get(kind) for kind in SETUP_KINDS)


# The estimate's terms (``Estimate.terms_us``), each in one line: what it counts, and at what price.
TERMS = {
    "call": "top-level op calls (from Python: the model, the loss, the optimizer) x the price of a call",
    "nested": "ops dispatched inside another op or an autograd node x the price of a nested op",
    "autograd": "autograd engine nodes run by backward x the price of a node",
    "rnn": "oneDNN RNN layer calls x the price of building the layer's primitive",
    "rnn_backward": "oneDNN RNN layer backward calls x the price of building its primitive",
    "conv": "oneDNN convolution calls x the price of building the convolution's primitive",
    "rnn_step": "RNN time steps x the price of a time step at nil width",
    "rnn_backward_step": "RNN backward time steps x the price of a backward time step at nil width",
    "python": "Python between ops that made no op event: the replayed or the real steps' gap, the lesser, less a bare loop's gap per call",
}


@dataclasses.dataclass(frozen=True)
class Estimate:
    """The overhead of an average step, priced per kind of event, and its share of the step."""

    events_per_step: dict[str, float]  # by kind in PRICED_KINDS
    python_us: float  # per step: Python time that made no event (gap beyond what the calls' own gaps hold)
    overhead_us: float  # per step, all kinds and the Python time
    fraction: float  # overhead over the median step time, uncapped
    interval: tuple[float, float]  # lowest and highest fraction the spreads allow
    terms_us: dict[str, float] = dataclasses.field(default_factory=dict)  # what overhead_us is made of, by TERMS, per step


def _overhead_us(events: Mapping[str, float], gap_us: float, prices: Prices) -> tuple[float, float]:
    """(overhead, Python time) per step in µs, for a step whose Python gap is ``gap_us``."""
    python_us = max(0.0, gap_us - events["call"] * prices.call_gap_us)
    return sum(events[kind] * prices.of(kind) for kind in PRICED_KINDS) + python_us, python_us


def estimate(events: OverheadEvents, calibration: Calibration, step_ms: float, replayed: OverheadEvents | None = None) -> Estimate:
    """The overhead share of a step of median ``step_ms`` whose light trace gave ``events``; ``replayed``: the events
    of the same step replayed with no kernel run (``measure.replay``). The module's docstring gives the rule."""
    if step_ms <= 0:
        raise ValueError("step time must be positive")
    per_step = {kind: events.mean_events(kind) for kind in PRICED_KINDS}
    prices = calibration.prices
    real_gap = events.least_gap_us
    gap = real_gap if replayed is None else min(replayed.least_gap_us, real_gap)
    overhead_us, python_us = _overhead_us(per_step, gap, prices)
    terms_us = {kind: per_step[kind] * prices.of(kind) for kind in PRICED_KINDS if per_step[kind]} | {"python": python_us}
    low_us = _overhead_us(per_step, 0.0 if replayed is None else gap, prices.at("least"))[0]
    high_us = _overhead_us(per_step, real_gap, prices.at("most"))[0]
    interval = (low_us / (step_ms * 1e3), high_us / (step_ms * 1e3))
    return Estimate(per_step, python_us, overhead_us, overhead_us / (step_ms * 1e3), interval, terms_us)


# Why a CPU estimate with no replayed step has a wide interval.
NOT_REPLAYED = "the step was not replayed warm: its Python gap may hold the arithmetic's cold caches, so the low end counts the ops alone"
