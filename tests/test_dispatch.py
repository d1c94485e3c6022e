"""The dispatch verdict: its thresholds, its arithmetic, and two synthetic models of known character."""

from __future__ import annotations

from collections import Counter

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from tests.synthetic_models import FewLargeMatmuls, ManyTinyOps
from torchbenchmark import dispatch
from torchbenchmark.diagnose import collect_diagnostics
from torchbenchmark.harness import Budget

QUICK = Budget(warmup_s=1.0, measure_s=0.5, min_steps=3, edge_calls=2)


@pytest.mark.parametrize(
    ("fraction", "expected"),
    [(0.0, "compute-bound"), (0.199, "compute-bound"), (0.2, "mixed"), (0.499, "mixed"), (0.5, "dispatch-bound"), (1.0, "dispatch-bound")],
)
def test_verdict_thresholds(fraction: float, expected: str) -> None:
    assert dispatch.verdict(fraction) == expected


def test_verdicts_are_the_pinned_three() -> None:
    assert dispatch.VERDICTS == ("dispatch-bound", "mixed", "compute-bound")


def test_overhead_fraction_is_ops_times_cost_over_step() -> None:
    assert dispatch.overhead_fraction(ops_per_step=100, per_op_overhead_us=2.0, step_ms=1.0) == pytest.approx(0.2)
    assert dispatch.overhead_fraction(ops_per_step=300, per_op_overhead_us=3.0, step_ms=1.0) == pytest.approx(0.9)
    assert dispatch.overhead_fraction(ops_per_step=10_000, per_op_overhead_us=2.0, step_ms=1.0) == 1.0
    assert dispatch.overhead_fraction(ops_per_step=0, per_op_overhead_us=2.0, step_ms=1.0) == 0.0
    for step_ms in (0.0, -1.0):
        with pytest.raises(ValueError, match="^step time must be positive$"):
            dispatch.overhead_fraction(1, 1.0, step_ms)


class ScriptedClock:
    """A clock for calibration: each timed run (two reads) lasts the next of ``run_ns``."""

    def __init__(self, run_ns: list[float]) -> None:
        self.reads = iter(t for i, run in enumerate(run_ns) for t in (2 * i * 10**9, 2 * i * 10**9 + run))

    def perf_counter_ns(self) -> float:
        return next(self.reads)


def test_calibration_is_the_mean_over_kinds_of_trivial_op_of_each_ones_median_run(monkeypatch: pytest.MonkeyPatch) -> None:
    # Four kinds of trivial op, 3 runs of 10 calls each: per call 1, 2, 3 and 6 µs, each with one slow run
    # that the median over runs ignores. Their mean, not the cheapest or dearest, is the price of an op.
    per_call_us = [1.0, 2.0, 3.0, 6.0]
    runs_ns = [cost * 10 * 1e3 * factor for cost in per_call_us for factor in (1, 50, 1)]
    monkeypatch.setattr(dispatch, "time", ScriptedClock(runs_ns))
    assert dispatch.calibrate_per_op_overhead_us(torch.device("cpu"), calls=10, repeats=3) == pytest.approx(3.0)


class Dispatched(TorchDispatchMode):
    """Records each aten op's name, and the devices and sizes of its tensor arguments."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()
        self.devices: set[str] = set()
        self.numels: set[int] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.ops[func.overloadpacket.__name__] += 1
        for arg in args:
            if isinstance(arg, torch.Tensor):
                self.devices.add(arg.device.type)
                self.numels.add(arg.numel())
        return func(*args, **(kwargs or {}))


def test_calibration_times_four_kinds_of_real_one_element_op_on_the_device() -> None:
    # On the meta device ops dispatch but compute nothing: what is counted is what was called.
    with Dispatched() as seen:
        dispatch.calibrate_per_op_overhead_us(torch.device("meta"), calls=10, repeats=2)
    warm, timed = 100, 2 * 10
    assert seen.ops == {"ones": 2, "add": warm + timed, "mul": warm + timed, "relu": warm + timed, "sum": warm + timed}
    assert seen.devices == {"meta"} and seen.numels == {1}


def test_calibration_on_the_real_clock_gives_a_positive_price() -> None:
    cost = dispatch.calibrate_per_op_overhead_us(torch.device("cpu"), calls=20, repeats=1)
    assert cost > 0


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_many_tiny_ops_is_dispatch_bound(tmp_path, mode: str) -> None:
    result = collect_diagnostics(ManyTinyOps, mode, out_dir=tmp_path, budget=QUICK, detailed=False)
    assert result.status == "ok", result.error
    assert result.dispatch.verdict == "dispatch-bound", result.dispatch
    assert result.dispatch.ops_per_step >= 300


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_few_large_matmuls_is_compute_bound(tmp_path, mode: str) -> None:
    result = collect_diagnostics(FewLargeMatmuls, mode, out_dir=tmp_path, budget=QUICK, detailed=False)
    assert result.status == "ok", result.error
    assert result.dispatch.verdict == "compute-bound", result.dispatch
    assert result.dispatch.overhead_fraction < 0.05, result.dispatch
