"""Costs on models of known cost: exact FLOPs, a known activation's memory, throughput, and the uncountable."""

from __future__ import annotations

import dataclasses
import json
import re
import time

import pytest
import torch

from tests.helpers.marks import marked
from tests.helpers.sweeps import diagnose
from tests.helpers.synthetic_models import (
    ElementwiseOnly,
    FailsUnderTheCounter,
    FewLargeMatmuls,
    HoldsKnownActivation,
    MatmulChain,
    TinyBatchedMatmuls,
)
from torchbenchmark import api
from torchbenchmark.analyze.costs import with_peak
from torchbenchmark.measure import memory
from torchbenchmark.measure.flops import count_flops, grouped_mm_flops
from torchbenchmark.measure.peak import measure_peak
from torchbenchmark.report.summary import note
from torchbenchmark.results.files import dumps
from torchbenchmark.results.records import Summary
from torchbenchmark.results.schema import CaseResult, Costs, Dispatch, StepTime
from torchbenchmark.results.spec import Budget

QUICK = Budget(warmup_s=1.0, measure_s=0.5, min_steps=3, edge_calls=2)
CPU = torch.device("cpu")


def _chain_flops(mode: str) -> int:
    batch, widths = 8, MatmulChain.WIDTHS
    layers = list(zip(widths, widths[1:]))
    forward = sum(2 * batch * n_in * n_out for n_in, n_out in layers)
    if mode == "eval":
        return forward
    # Backward: each layer's weight gradient costs what its forward did, and so does its input
    # gradient, except the first layer's: the model's input needs no gradient.
    first_in, first_out = layers[0]
    return 3 * forward - 2 * batch * first_in * first_out


@pytest.mark.parametrize("mode", ["eval", "train"])
def test_a_chain_of_matmuls_counts_2mnk_each(mode: str) -> None:
    count = count_flops(MatmulChain(), mode)
    assert count.total == _chain_flops(mode)
    assert count.by_kind == {"matmul": _chain_flops(mode)}
    assert count.note is None


@pytest.mark.parametrize("groups", [1, 4, 16])
@pytest.mark.parametrize("transposed", [False, True])
def test_a_grouped_convolution_counts_its_weight_gradient_per_group(groups: int, transposed: bool) -> None:
    """Train is three times eval: forward, the input's gradient and the weight's, each 2 * N * HW * k^2 * C_in * C_out / groups.

    (The counter's own formula counts a grouped weight gradient ``groups`` times over.)"""
    channels, side, kernel, batch = 16, 8, 3, 8
    layer = torch.nn.ConvTranspose2d if transposed else torch.nn.Conv2d

    class GroupedConv(MatmulChain):
        def build(self) -> torch.nn.Module:
            return layer(channels, channels, kernel, padding=1, groups=groups, bias=False)

        def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> tuple[torch.Tensor]:
            return (torch.randn(batch_size, channels, side, side, generator=generator, requires_grad=True),)

    forward = 2 * batch * side * side * kernel * kernel * channels * channels // groups
    assert count_flops(GroupedConv(), "eval").total == forward
    assert count_flops(GroupedConv(), "train").by_kind == {"convolution": 3 * forward}


def test_a_step_of_uncountable_ops_is_null_with_the_reason() -> None:
    count = count_flops(ElementwiseOnly(), "train")
    assert count.total is None
    assert "no matrix product, convolution or attention" in count.note


def test_a_step_that_fails_under_the_counter_is_null_with_the_error() -> None:
    count = count_flops(FailsUnderTheCounter(), "eval")
    assert count.total is None
    assert "RuntimeError: this op has no Python dispatch path" in count.note


def test_cpu_attention_and_lstm_are_counted() -> None:
    query = torch.randn(2, 4, 16, 8)

    class Attention(MatmulChain):
        def infer(self, inputs: object) -> torch.Tensor:
            return torch.nn.functional.scaled_dot_product_attention(query, query, query)

    count = count_flops(Attention(), "eval")
    assert count.by_kind["attention"] == 2 * (2 * 2 * 4 * 16 * 16 * 8)  # Q K^T and its product with V

    class Recurrent(MatmulChain):
        def build(self) -> torch.nn.Module:
            return torch.nn.LSTM(16, 32, batch_first=True)

        def infer(self, inputs: object) -> torch.Tensor:
            return self.module(torch.ones(4, 10, 16))[0]

    count = count_flops(Recurrent(), "eval")
    assert count.by_kind["recurrent"] == 2 * 4 * 10 * (4 * 32 * 16 + 4 * 32 * 32)


@pytest.mark.parametrize("layer", ["attention", "encoder layer"])
def test_fused_transformer_ops_count_what_their_unfused_forms_do(layer: str) -> None:
    """In inference nn.MultiheadAttention and nn.TransformerEncoderLayer run one fused op each; with
    gradients on, the same arithmetic as linear layers and attention, which the counter knows already."""
    x = torch.randn(2, 10, 16)

    class Fused(MatmulChain):
        def build(self) -> torch.nn.Module:
            if layer == "attention":
                return torch.nn.MultiheadAttention(16, 4, batch_first=True)
            return torch.nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=True)

        def infer(self, inputs: object) -> object:
            return self.module(x, x, x, need_weights=False) if layer == "attention" else self.module(x)

    class Unfused(Fused):
        def infer(self, inputs: object) -> object:
            with torch.enable_grad():  # takes the module off its fast path
                return super().infer(inputs)

    fused, unfused = count_flops(Fused(), "eval"), count_flops(Unfused(), "eval")
    assert fused.uncounted == () and unfused.uncounted == ()
    assert fused.total == unfused.total > 0


def test_peak_memory_of_a_step_holding_a_known_activation() -> None:
    model = HoldsKnownActivation()
    model.eval(niter=2)
    activation = HoldsKnownActivation.ROWS * HoldsKnownActivation.WIDTH * 4
    state = (16 * HoldsKnownActivation.WIDTH + HoldsKnownActivation.ROWS * 16) * 4  # weight and input
    peak = memory.measure_memory(model, "eval", CPU)
    assert peak.peak_mb == pytest.approx((activation + state) / memory.MB, rel=0.03)
    assert peak.state_mb == pytest.approx(state / memory.MB, rel=0.03)
    assert memory.step_allocation_peak_bytes(model, "eval") == pytest.approx(activation, rel=0.03)


@pytest.mark.slow
def test_a_diagnosed_row_carries_costs_consistent_with_its_step_time(tmp_path) -> None:
    result = diagnose(MatmulChain, "train", out_dir=tmp_path, budget=QUICK, detailed=False)
    assert result.status == "ok", result.error
    cost, median_ms = result.costs, result.step_time.median_ms
    assert cost.flops_per_step == _chain_flops("train")
    assert cost.samples_per_s == pytest.approx(8 / (median_ms / 1e3))
    assert cost.achieved_gflops == pytest.approx(_chain_flops("train") / (median_ms / 1e3) / 1e9)
    # collect_diagnostics measures the machine's peak as a sweep does: the share is of that peak.
    peak = api._peak("cpu", None, "float32")  # measured once a process, as a sweep measures it once
    assert cost.pct_of_peak == pytest.approx(100 * cost.achieved_gflops / peak.gflops)
    assert cost.peak_rss_mb > cost.peak_memory_mb > 0
    row = json.loads(dumps(Summary("", {}, (with_peak(result, 1.0),), {}).to_dict()))["results"][0]
    for name in ("flops_per_step", "achieved_gflops", "pct_of_peak", "peak_memory_mb", "samples_per_s"):
        assert row[name] is not None, name
    assert CaseResult.from_dict(row).costs == with_peak(result, 1.0).costs


def test_machine_peak_is_the_best_of_a_matmul_and_a_convolution_with_its_method() -> None:
    peak = measure_peak("cpu", threads=1, size=256, seconds=0.05)
    assert set(peak.environment()) == {"peak_gflops", "peak_method"}
    assert "best of" in peak.method and "on 1 thread" in peak.method
    readings = re.findall(r"(torch.mm 256x256x256|conv2d 3x3 32->32 8x56x56) ([0-9.]+) \(median", peak.method)
    assert [name for name, _ in readings] == ["torch.mm 256x256x256", "conv2d 3x3 32->32 8x56x56"], peak.method
    assert peak.gflops > 0
    assert peak.gflops == pytest.approx(max(float(gflops) for _, gflops in readings), abs=0.1)


def test_the_peak_kernels_shrink_to_fit_the_time_a_slow_type_leaves() -> None:
    """A type the CPU emulates runs a 2048-wide product in tens of seconds: with no time for it, the kernels stay small."""
    started = time.perf_counter()
    peak = measure_peak("cpu", threads=1, size=2048, seconds=1e-6, min_repeats=1)
    assert time.perf_counter() - started < 5.0
    assert "torch.mm 256x256x256" in peak.method and "conv2d 3x3 32->32" in peak.method, peak.method
    roomy = measure_peak("cpu", threads=1, size=512, seconds=2.0, min_repeats=1)
    assert "torch.mm 512x512x512" in roomy.method, roomy.method  # time to spare: the largest size asked for, no larger


def _row(verdict: str, achieved_gflops: float) -> CaseResult:
    cost = Costs(
        flops_per_step=10**9,
        flops_by_kind={"matmul": 10**9},
        flops_note=None,
        achieved_gflops=achieved_gflops,
        pct_of_peak=None,
        compute_limit=None,
        peak_memory_mb=1.0,
        state_memory_mb=0.5,
        memory_method="test",
        peak_rss_mb=100.0,
        samples_per_s=1.0,
    )
    return CaseResult(
        model="m",
        mode="eval",
        device="cpu",
        status="ok",
        step_time=StepTime(1000 / achieved_gflops, 0.0, 0.0, 3),
        dispatch=Dispatch(verdict, 0.1, 10.0, 1.0, 1.0),
        costs=cost,
    )


@pytest.mark.parametrize(
    ("verdict", "achieved", "expected"),
    [("compute-bound", 9.9, "kernels"), ("compute-bound", 10.0, "arithmetic"), ("mixed", 1.0, None), ("dispatch-bound", 1.0, None)],
)
def test_compute_limit_rule(verdict: str, achieved: float, expected: str | None) -> None:
    result = with_peak(_row(verdict, achieved), peak_gflops=100.0)
    assert result.costs.pct_of_peak == pytest.approx(achieved)
    assert result.costs.compute_limit == expected


def test_with_peak_leaves_rows_without_flops_alone() -> None:
    row = _row("compute-bound", 5.0)
    no_flops = dataclasses.replace(row, costs=dataclasses.replace(row.costs, flops_per_step=None, achieved_gflops=None))
    assert with_peak(no_flops, 100.0) == no_flops
    assert with_peak(row, None) == row


@pytest.mark.parametrize(
    ("model", "limit"),
    [(FewLargeMatmuls, "arithmetic"), (TinyBatchedMatmuls, "kernels")],
)
@pytest.mark.slow
def test_models_of_known_character_get_their_compute_limit(tmp_path, model: type, limit: str) -> None:
    """Both are compute-bound (few, long ops); large square matmuls run near the peak, 2x2 ones far below it."""
    peak = measure_peak("cpu", threads=1, size=1024, seconds=0.3)
    result = with_peak(diagnose(model, "eval", out_dir=tmp_path, budget=QUICK, detailed=False), peak.gflops)
    assert result.status == "ok", result.error
    if marked(result):
        return  # the tool says not to read this row's timed figures: the test does not either
    assert result.dispatch.verdict == "compute-bound", result.dispatch
    assert result.costs.compute_limit == limit, result.costs


def test_the_summary_notes_a_kernel_limited_row() -> None:
    row = with_peak(_row("compute-bound", 4.0), peak_gflops=100.0)
    assert note(row) == "kernels limit it: 4.0% of peak"
    assert note(with_peak(_row("compute-bound", 40.0), peak_gflops=100.0)) == ""
    assert note(with_peak(_row("mixed", 140.0), peak_gflops=100.0)) == "above the peak: the peak was measured under load"


@pytest.mark.parametrize(
    ("a_shape", "b_shape", "flops"),
    [
        ((6, 4), (8, 4, 5), 2 * 6 * 4 * 5),  # tokens routed to experts: each row meets its expert's matrix once
        ((8, 3, 4), (8, 4, 5), 2 * 8 * 3 * 4 * 5),  # a batch of products
        ((8, 3, 4), (4, 40), 2 * 3 * 4 * 40),  # each group's rows by its own columns
        ((4, 6), (6, 5), 2 * 4 * 6 * 5),  # a weight's gradient, groups along k
    ],
)
def test_a_grouped_product_counts_2mnk_over_its_groups(a_shape, b_shape, flops) -> None:
    assert grouped_mm_flops(a_shape, b_shape) == flops
