"""The contract without the base class, end to end: plain classes diagnosed train and eval in one sweep, every
figure of a row present or null with the reason, a declared name naming the row; a partial FLOP count is marked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.plain_plugins import PlainBilinear, PlainModel, PlainTinyOps
from tests.helpers.sweeps import PRICED
from torchbenchmark.contract import BatchSizes, held_tensors, modules_of
from torchbenchmark.measure.flops import count_flops
from torchbenchmark.registry import meta_of
from torchbenchmark.results.schema import CaseResult

ROOT = Path(__file__).resolve().parent.parent
PLAIN = ROOT / "tests" / "helpers" / "plain_plugins.py"


def test_a_declared_name_names_the_model_and_a_class_without_one_keeps_its_class_name() -> None:
    assert meta_of(PlainTinyOps).name == "plain_tiny_ops"
    assert meta_of(PlainModel).name == "PlainModel"


def test_batch_sizes_on_cuda_default_to_the_cpu_ones() -> None:
    sizes = BatchSizes(cpu_train=4, cpu_eval=8)
    assert (sizes.get("cuda", "train"), sizes.get("cuda:0", "eval")) == (4, 8)
    assert BatchSizes.same(cpu=2).sizes() == (2, 2, 2, 2)
    assert BatchSizes(cpu_train=4, cpu_eval=8, cuda_train=64).sizes() == (4, 8, 64, 8)


def test_the_networks_of_a_plain_class_are_found_among_its_attributes_and_containers() -> None:
    model = PlainTinyOps()
    assert {id(m) for m in modules_of(model)} == {id(net) for net in model.nets.values()}
    held = {t.data_ptr() for t in held_tensors(model, "eval")}
    assert all(p.data_ptr() in held for net in model.nets.values() for p in net.parameters())


def test_a_compute_op_without_a_formula_leaves_a_partial_count_that_names_it() -> None:
    count = count_flops(PlainBilinear(), "eval")
    assert count.total == 2 * 4 * 8 * 2  # the linear layer's, all the counter can see
    assert count.uncounted == ("aten._trilinear",)
    assert "not counted: aten._trilinear" in count.note


def _ok_with_figures(row: dict) -> None:
    assert row["status"] == "ok", row["error"]
    assert row["step_time_ms"]["median"] > 0 and row["dispatch"]["verdict"]
    assert row["flops_per_step"] or row["flops_note"]
    assert row["peak_memory_mb"] > 0 and row["memory_method"]


@pytest.mark.slow
def test_plain_plugins_through_a_sweep_train_and_eval(tmp_path: Path) -> None:
    specs = ",".join(f"{PLAIN}:{name}" for name in ("PlainModel", "PlainTinyOps", "PlainBilinear"))
    done = subprocess.run(
        [sys.executable, str(ROOT / "diagnostics.py"), "--models", specs, "--modes", "train,eval", "--device", "cpu",
         "--steps", "5", "--no-detailed", "--no-progress", "--out", str(tmp_path), *PRICED],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {(r["model"], r["mode"]): r for r in json.loads((tmp_path / "summary.json").read_text())["results"]}
    assert set(rows) == {(name, mode) for name in ("PlainModel", "plain_tiny_ops", "plain_bilinear") for mode in ("train", "eval")}
    for row in rows.values():
        _ok_with_figures(row)
    assert rows["plain_tiny_ops", "train"]["state_memory_mb"] > 0  # its parameters, found in a dict
    assert rows["plain_tiny_ops", "eval"]["batch_size"] is None  # it declares none: no figure is made up
    bilinear = rows["plain_bilinear", "eval"]
    assert bilinear["flops_uncounted"] == ["aten._trilinear"]
    summary = (tmp_path / "summary.txt").read_text()
    line = next(line for line in summary.splitlines() if line.startswith("plain_bilinear") and " eval " in line)
    assert "FLOPs partial, not counted: aten._trilinear" in line and "+ " in line
    report = (tmp_path / "report.html").read_text()
    assert "FLOPs partial (GFLOP figures are lower bounds), not counted: aten._trilinear" in report
    for mode in ("train", "eval"):  # the counter's exact figure, and the row read back as the Python API gives it
        tiny, partial = (CaseResult.from_dict(rows[name, mode]) for name in ("plain_tiny_ops", "plain_bilinear"))
        assert tiny.costs.flops_per_step == (3 if mode == "train" else 1) * 2 * (2 * 2 * 8 * 8) - (2 * 2 * 8 * 8 if mode == "train" else 0)
        assert "partial" not in repr(tiny)
        assert "FLOPs partial" in repr(partial) and "aten._trilinear" in repr(partial)
