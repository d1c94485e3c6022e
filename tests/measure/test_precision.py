"""Precision and layout variants: their names and cases, the accuracy check, skipped and failed rows beside an ok eager row."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.helpers import precision_models
from tests.helpers.sweeps import PRICED, diagnose
from torchbenchmark.measure.precision import TOLERANCES, relative_error, support
from torchbenchmark.report.summary import note
from torchbenchmark.results.schema import Accuracy, CaseResult, RemedyReport, Status
from torchbenchmark.results.spec import Budget, CaseRequest, CaseSpec, Compile
from torchbenchmark.run.sweep import SweepOptions

ROOT = Path(__file__).resolve().parents[2]
QUICK = Budget(warmup_s=1.0, measure_s=0.3, windows=2, window_tolerance=0.5, edge_calls=1, light_s=0.1)
MODELS = ROOT / "tests" / "helpers" / "precision_models.py"


def variant(model: type, tmp_path: Path, mode: str = "eval", **options: object) -> CaseResult:
    return diagnose(model, mode=mode, out_dir=tmp_path, budget=QUICK, detailed=False, **options)


def test_a_combination_is_named_by_its_parts_in_order() -> None:
    spec = CaseSpec("m", "eval", precision="amp-bf16", channels_last=True, compile=Compile())
    assert spec.variant == "amp-bf16+channels-last+inductor" and spec.recast
    assert CaseSpec("m", precision="bf16").variant == "bf16" and CaseSpec("m", channels_last=True).variant == "channels-last"
    assert CaseRequest.from_json(CaseRequest(spec, "out").to_json()).spec == spec
    with pytest.raises(ValueError, match="unknown precision 'fp8'"):
        CaseSpec("m", precision="fp8")
    with pytest.raises(ValueError, match="do not combine"):
        CaseSpec("m", "train", precision="bf16", world_size=2)


def test_each_variant_runs_alone_and_all_together() -> None:
    options = SweepOptions(precisions=("amp-bf16",), channels_last=True)
    assert [spec.variant for spec in options.cases("m", "eval")] == ["eager", "amp-bf16", "channels-last", "amp-bf16+channels-last"]
    options = SweepOptions(compile=Compile(), precisions=("amp-bf16", "bf16"))
    names = [spec.variant for spec in options.cases("m", "eval")]
    assert names == ["eager", "inductor", "amp-bf16", "bf16", "amp-bf16+inductor", "bf16+inductor"]
    assert [spec.variant for spec in SweepOptions(precisions=("bf16",)).cases("m", "eval")] == ["eager", "bf16"]
    assert SweepOptions(channels_last=True).flags()["channels_last"] is True and "precisions" not in SweepOptions().flags()
    with pytest.raises(ValueError, match="unknown precision"):
        SweepOptions(precisions=("fp8",))


def test_relative_error_is_of_each_tensor_against_eager_scale() -> None:
    eager = {"logits": torch.tensor([1.0, -2.0, 4.0]), "ids": torch.tensor([1, 2])}
    assert relative_error(eager, eager) == (0.0, True)
    error, finite = relative_error({"logits": torch.tensor([1.0, -2.0, 4.2]), "ids": torch.tensor([1, 2])}, eager)
    assert error == pytest.approx(0.05) and finite
    assert relative_error(torch.tensor([1.0, float("inf")]), torch.tensor([1.0, 2.0])) == (0.0, False)
    assert relative_error(torch.ones(2), torch.ones(3)) == (None, True)


def test_equal_infinities_are_no_error_and_the_finite_rest_is_still_compared() -> None:
    inf = float("inf")
    masked = torch.tensor([-inf, 2.0, -inf, 4.0])  # logits with masked places, as eager's
    assert relative_error(torch.tensor([-inf, 2.0, -inf, 4.0]), masked) == (0.0, True)
    error, finite = relative_error(torch.tensor([-inf, 2000.0, -inf, 4000.0]), masked)  # 1000x off, masks kept
    assert error == pytest.approx(999.0) and finite
    assert relative_error(torch.tensor([inf, 2.0, -inf, 4.0]), masked)[1] is False  # an infinity of the other sign
    assert relative_error(torch.tensor([-inf, float("nan"), -inf, 4.0]), masked)[1] is False  # NaN where eager is finite
    assert relative_error(torch.tensor([-inf, -inf]), torch.tensor([-inf, -inf])) == (None, True)  # nothing finite to compare


def test_a_16_bit_type_is_native_only_with_its_cpu_flags() -> None:
    cpu = torch.device("cpu")
    assert support(cpu, "bfloat16", {"avx512f", "amx_bf16"}) == "native (amx_bf16)"
    assert support(cpu, "float16", {"avx512_fp16"}) == "native (avx512_fp16)"
    assert support(cpu, "bfloat16", {"avx2"}).startswith("emulated: this CPU has no avx512_bf16 or amx_bf16")


def test_outputs_beyond_the_tolerance_are_marked_not_dropped() -> None:
    accuracy = Accuracy("eval outputs", 0.12, TOLERANCES["amp-bf16"])
    remedy = RemedyReport("amp-bf16", False, "bfloat16", "emulated: no amx_bf16", False, accuracy)
    row = CaseResult("m", "eval", "cpu", Status.OK, variant="amp-bf16", remedy=remedy)
    assert "outputs differ from eager: max relative error 0.12 (tolerance 0.05)" in note(row)
    assert "bfloat16 emulated: no amx_bf16" in note(row)
    assert CaseResult.from_dict(json.loads(json.dumps(row.to_dict()))) == row
    assert "remedy" not in CaseResult("m", "eval", "cpu", Status.OK).to_dict()  # eager rows keep their shape


@pytest.mark.slow
def test_a_conv_net_in_channels_last_runs_close_to_eager(tmp_path: Path) -> None:
    row = variant(precision_models.SmallConvNet, tmp_path, channels_last=True)
    assert row.status == "ok", row.error
    assert row.variant == "channels-last" and row.speedup_vs_eager > 0 and len(row.remedy.speedup_rounds) == 3
    accuracy = row.remedy.accuracy
    assert accuracy.compared == "eval outputs" and not accuracy.differs and accuracy.max_rel_error < accuracy.tolerance
    assert row.costs.flops_per_step > 0 and row.dispatch is not None


@pytest.mark.slow
@pytest.mark.parametrize("mode, compared", [("eval", "eval outputs"), ("train", "train loss")])
def test_a_bf16_row_has_its_outputs_compared(tmp_path: Path, mode: str, compared: str) -> None:
    row = variant(precision_models.SmallConvNet, tmp_path, mode, precision="bf16")
    assert row.status == "ok", row.error
    remedy = row.remedy
    assert remedy.dtype == "bfloat16" and remedy.support.startswith(("native", "emulated"))
    assert remedy.accuracy.compared == compared and 0 < remedy.accuracy.max_rel_error < TOLERANCES["bf16"]


@pytest.mark.slow
def test_amp_on_a_conv_net_in_channels_last_together(tmp_path: Path) -> None:
    row = variant(precision_models.SmallConvNet, tmp_path, "train", precision="amp-bf16", channels_last=True)
    assert row.status == "ok", row.error
    assert row.variant == "amp-bf16+channels-last" and row.remedy.accuracy.compared == "train loss" and row.speedup_vs_eager > 0


def test_a_model_with_no_4d_input_is_skipped_for_channels_last(tmp_path: Path) -> None:
    row = variant(precision_models.SmallMLP, tmp_path, channels_last=True)
    assert row.status == "skipped" and "no 4-D floating-point input" in row.error


def test_an_op_without_a_bfloat16_kernel_is_a_skipped_row(tmp_path: Path) -> None:
    row = variant(precision_models.NoBfloat16Kernel, tmp_path, precision="bf16")
    assert row.status == "skipped" and "no BFloat16 kernel" in row.error, row.error


@pytest.mark.slow
def test_a_failing_variant_leaves_the_eager_row_ok(tmp_path: Path) -> None:
    command = [sys.executable, str(ROOT / "diagnostics.py"), "--models", f"{MODELS}:Float32Only", "--modes", "eval", "--device", "cpu"]
    command += ["--steps", "3", "--no-detailed", "--no-progress", "--out", str(tmp_path), "--precision", "bf16", "--channels-last", *PRICED]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr
    rows = {row["variant"]: row for row in json.loads((tmp_path / "summary.json").read_text())["results"]}
    assert set(rows) == {"eager", "bf16", "channels-last", "bf16+channels-last"}
    assert rows["eager"]["status"] == "ok"
    assert rows["bf16"]["status"] == "failed" and "takes float32 only" in rows["bf16"]["error"]
    assert rows["channels-last"]["status"] == rows["bf16+channels-last"]["status"] == "skipped"
    assert "peak_gflops_bfloat16" in json.loads((tmp_path / "summary.json").read_text())["environment"]


def test_the_documented_tolerances_are_the_ones_used() -> None:
    from torchbenchmark.measure.precision import LAYOUT_TOLERANCE

    table = dict(re.findall(r"^\| `([\w-]+)`[^|]*\| ([\d.]+) \|$", (ROOT / "docs" / "variants.md").read_text(), re.M))
    assert {name: float(value) for name, value in table.items()} == {**TOLERANCES, "channels-last": LAYOUT_TOLERANCE}


def test_the_report_says_what_ran_and_how_close_it_came() -> None:
    from torchbenchmark.report.case import remedy_text

    remedy = RemedyReport("amp-bf16", True, "bfloat16", "native (amx_bf16)", False, Accuracy("eval outputs", 0.0049, 0.05), (1.8, 1.9, 2.2))
    text = remedy_text(CaseResult("m", "eval", "cpu", Status.OK, variant="amp-bf16+channels-last", remedy=remedy))
    assert text == (
        "amp-bf16 (bfloat16, native (amx_bf16)), channels_last; eval outputs close to eager's: max relative error 0.0049 "
        "(tolerance 0.05); speedup rounds 1.80, 1.90, 2.20"
    )


@pytest.mark.slow
def test_a_precision_combines_with_compile_and_is_timed_against_eager(tmp_path: Path) -> None:
    row = variant(precision_models.SmallConvNet, tmp_path, precision="amp-bf16", compile=Compile("eager"))
    assert row.status == "ok", row.error
    assert row.variant == "amp-bf16+dynamo-eager" and row.compile.graphs >= 1 and row.compile.speedup_rounds == ()
    assert row.speedup_vs_eager > 0 and len(row.remedy.speedup_rounds) == 3 and not row.remedy.accuracy.differs
