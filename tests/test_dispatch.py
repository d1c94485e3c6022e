"""The dispatch verdict: its thresholds, its arithmetic, and two synthetic models of known character."""

from __future__ import annotations

import pytest
import torch

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


def test_overhead_fraction_is_ops_times_cost_over_step() -> None:
    assert dispatch.overhead_fraction(ops_per_step=100, per_op_overhead_us=2.0, step_ms=1.0) == pytest.approx(0.2)
    assert dispatch.overhead_fraction(ops_per_step=10_000, per_op_overhead_us=2.0, step_ms=1.0) == 1.0
    with pytest.raises(ValueError):
        dispatch.overhead_fraction(1, 1.0, 0.0)


def test_calibration_prices_a_trivial_op_in_microseconds() -> None:
    cost = dispatch.calibrate_per_op_overhead_us(torch.device("cpu"), calls=200, repeats=3)
    assert 0.05 < cost < 100


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
