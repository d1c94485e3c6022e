"""Pricing a step's per-op overhead from its light trace and the per-event prices calibrated on this machine.

Every op a model calls pays a fixed cost before any arithmetic: Python argument parsing, the dispatcher,
autograd bookkeeping, an allocation, a kernel launch on a GPU. Each kind of event (``analyze.overhead``)
has its own price; an op that builds its kernel on every call (``SETUP_OPS``) is priced once more for
that set-up, and an RNN layer for each time step it runs. Python that makes no event (module ``__call__``,
hooks, the optimizer's loops, glue) is measured, not priced: the *Python gap*, each gap at its least over
the steps, read twice, in the real steps and in the step replayed with no kernel run (``measure.replay``),
where the glue runs warm as it would if the arithmetic evicted nothing. The lesser reading stands: load,
the caches a long op left cold and the replay's own Python only add to a gap. Less what the profiler puts
in the gap of each top-level call (``call_gap_us``, from a bare loop)::

    overhead_us = sum(events[kind] * price[kind] for every priced kind)
                  + max(0, min(replayed_gap_us, real_gap_us) - calls * call_gap_us)
    fraction = overhead_us / step_time                       (uncapped; the pinned field caps it at 1)

Each addend is one of ``Estimate.terms_us``. Where the step could not be replayed (a GPU, a compiled step,
a step whose Python reads values a replay does not compute) the real step's gap stands, which holds the
slowness a long op leaves behind in the caches, and the interval's low end counts the ops alone.

Prices come in order, each from loops whose other kinds are already priced (``prices_from_timings``):
``call`` from ops that nest nothing, ``nested`` pooled over ops that nest many, ``autograd`` from the
difference between a deep and a shallow backward (the engine's fixed entry cost cancels), then a
convolution's set-up from a loop of one (an RNN layer's, for a step that calls one: ``analyze.rnn``).

The interval brackets the same sum by what was measured on each side of it: at its low end each kind of
op at the cheapest op of its kind the calibration timed and the estimate's gap; at its top each at the
dearest and the real steps' gap (the glue as it ran, its caches cold after the arithmetic); each at its
median over the calibration's repeats, as the estimate's prices are (a
repeat read under load is no end of it: preemption only adds). A call is priced at an end with the gap that
same op left: the Python that parses a call's arguments lies in both its price and its gap, so from op to
op they move together. It is a share of the median step, as the estimate is: how far single steps spread
about it is no uncertainty of the overhead's.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Mapping, Sequence

from torchbenchmark.analyze.overhead import EVENT_KINDS, PRICED_KINDS, SETUP_KINDS, OverheadEvents

# The prices that are an end of the interval: the calibration's extremes, one op each (the cheapest nested op
# a residual of some tens of ns), no measure of the machine's pace (``analyze.compare``'s drift).
INTERVAL_ENDS = ("call_least_us", "call_most_us", "call_gap_least_us", "call_gap_most_us", "nested_least_us", "nested_most_us")


@dataclasses.dataclass(frozen=True)
class Prices:
    """The fixed cost of one event of each kind on this machine, in µs."""

    call_us: float
    nested_us: float
    autograd_us: float
    call_gap_us: float  # Python gap per top-level call of a bare loop under the light profiler, loop excluded
    # The cheapest and the dearest op of each kind the calibration timed (None: the price itself): how far a
    # model's ops, which are not the calibration's, may cost from the median op. The interval's ends. A call's
    # end is the op whose price less the gap it leaves is least (most), with that gap: the Python that parses
    # a call's arguments is in both, so the two move together from op to op.
    call_least_us: float | None = None
    call_gap_least_us: float | None = None
    call_most_us: float | None = None
    call_gap_most_us: float | None = None
    nested_least_us: float | None = None
    nested_most_us: float | None = None
    # An RNN layer call beyond its events' dispatch: its set-up, and each time step it runs at nil width;
    # 0 where LSTMs do not run on oneDNN.
    rnn_us: float = 0.0
    rnn_step_us: float = 0.0
    rnn_backward_us: float = 0.0
    rnn_backward_step_us: float = 0.0
    conv_us: float = 0.0  # a oneDNN convolution's primitive, built on every call; 0 where none runs on oneDNN

    def __post_init__(self) -> None:
        for name in INTERVAL_ENDS:
            if getattr(self, name) is None:
                object.__setattr__(self, name, getattr(self, name.replace("_least", "").replace("_most", "")))

    def of(self, kind: str) -> float:
        return float(getattr(self, f"{kind}_us"))

    def at(self, end: str) -> Prices:
        """These prices with a call, the gap it leaves and a nested op at the cheapest (``end`` "least") or
        dearest ("most") op of the calibration's: one end of the interval."""
        ends = {name: getattr(self, f"{name[:-3]}_{end}_us") for name in ("call_us", "call_gap_us", "nested_us")}
        return dataclasses.replace(self, **ends)


@dataclasses.dataclass(frozen=True)
class Calibration:
    """Prices from each interleaved repeat of the calibration loops; the median of each is the estimate."""

    repeats: tuple[Prices, ...]

    @property
    def prices(self) -> Prices:
        fields = dataclasses.fields(Prices)
        return Prices(**{field.name: statistics.median(getattr(p, field.name) for p in self.repeats) for field in fields})

    @property
    def spread_pct(self) -> float:
        """How far the median repeat's call price, or the gap a call leaves, lies above the least, in % of the median:
        a spell of load that slowed at least half the repeats (one that slowed fewer leaves the median; preemption
        only adds, so the least is the nearest the truth)."""
        return max((_above_least([getattr(p, name) for p in self.repeats]) for name in ("call_us", "call_gap_us")), default=0.0)


def _above_least(values: Sequence[float]) -> float:
    """How far the median of ``values`` lies above the least, in % of the median; 0 without values."""
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
    """Per-event prices from each workload's counted events and its measured cost per iteration (µs).

    ``cost_us`` must hold ``loop`` (an empty loop body), workloads that nest nothing, workloads that nest
    ops, and ``backward_1`` and ``backward_8``; ``conv``, where given and where it ran on oneDNN, prices a
    convolution's set-up. An RNN layer is priced apart (``analyze.rnn``), for a step that calls one.
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
    # On a GPU the autograd engine runs a backward's nodes on the device's own thread: the calling thread,
    # whose events are counted, shows none, in these loops as in a model's step.
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
    """The overhead share of a step of median ``step_ms`` whose light trace gave ``events``; ``replayed``: the
    events of the same step replayed with no kernel run (``measure.replay``), whose gaps are the step's Python
    run warm. Without them the gap is the real step's, which holds the slowness the arithmetic leaves behind:
    the interval's low end then counts the ops alone.

    The gap is each gap's least over the steps, and of the replayed and the real steps' readings the lesser
    (the module's docstring says why). The interval prices at the calibration's cheapest and dearest ops, from
    that gap to the real steps'.
    """
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
