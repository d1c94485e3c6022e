"""Placing the estimated overhead in modules and lines: hand-made traces with known answers, and a real profile."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pytest

from tests.helpers.marks import marked
from tests.helpers.sweeps import diagnose
from torchbenchmark.analyze.attribution import TOP_SHARES, attribute, attribute_trace, is_library, line_name
from torchbenchmark.analyze.trace import load_events
from torchbenchmark.report.tables import render_attribution
from torchbenchmark.results.schema import Attribution

PRICES = {"call": 1.0, "nested": 0.5, "autograd": 2.0}
DATA = Path(__file__).resolve().parents[1] / "data"


def _x(name: str, ts: float, dur: float, cat: str = "cpu_op", **args: object) -> dict:
    event = {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": 1}
    return {**event, "args": args} if args else event


def _py(name: str, ts: float, dur: float, called_from: str | None = None) -> dict:
    return _x(name, ts, dur, cat="python_function", **({"CallFrom": called_from} if called_from else {}))


def _trace() -> list[dict]:
    """One hand-made train step (tests/data/make_explain_traces.py says what is in it)."""
    return load_events(DATA / "attribution_train.pt.trace.json")


NAMES = {"Net_0": "Net", "Linear_0": "fc"}


def _by_name(shares: tuple) -> dict[str, tuple[str, float, float]]:
    return {share.name: (share.part, share.events_per_step, share.overhead_us_per_step) for share in shares}


def test_each_event_is_priced_by_kind_and_placed_in_its_innermost_module() -> None:
    found = attribute(_trace(), PRICES, estimate_us=20.0, module_names=NAMES)
    modules = _by_name(found.overhead_by_module)
    # fc: linear (call 1) and addmm (nested 0.5); Net: mul, add (calls), the mul's backward node and its two nested ops.
    assert modules["fc"] == ("module", 2, pytest.approx(1.5))
    assert modules["Net"] == ("module", 5, pytest.approx(5.0))
    # The loss and the AccumulateGrad node ran in no module; the rest of the estimate is no event's.
    assert modules["outside any module"] == ("outside", 2, pytest.approx(3.0))
    assert modules["Python between ops (no event)"] == ("unattributed", 0, pytest.approx(20.0 - 9.5))
    assert [share.name for share in found.overhead_by_module][:2] == ["Net", "fc"]
    assert found.overhead_by_module[0].module_class == "Net" and found.overhead_by_module[1].module_class == "Linear"
    assert found.overhead_by_module[0].pct_of_estimate == pytest.approx(25.0)
    assert found.attribution_note is None


def test_lines_are_the_models_own_frames_and_classes_gather_their_instances() -> None:
    found = attribute(_trace(), PRICES, estimate_us=20.0, module_names=NAMES)
    lines = _by_name(found.overhead_by_line)
    # The linear op runs in torch's frames: its line is the one in forward that called the layer; the add's
    # is the line that called torch.add; the multiply, an operator, has only its function's first line.
    assert lines["tests/model.py:21 (forward)"] == ("line", 2, pytest.approx(1.5))
    assert lines["tests/model.py:23 (forward)"] == ("line", 1, pytest.approx(1.0))
    assert lines["tests/model.py:20 (forward)"] == ("line", 4, pytest.approx(4.0))  # the multiply and its backward
    assert lines["tests/model.py:13 (train)"] == ("line", 1, pytest.approx(1.0))  # the loss: the line that called sum
    assert lines["tests/model.py:10 (train)"] == ("line", 1, pytest.approx(2.0))  # AccumulateGrad: the step's function
    classes = _by_name(found.overhead_by_class)
    assert classes["Net"][2] == pytest.approx(5.0) and classes["Linear"][2] == pytest.approx(1.5)
    assert found.top("line").name == "tests/model.py:20 (forward)"


def test_modules_without_a_known_path_keep_the_profilers_name_and_say_so() -> None:
    found = attribute(_trace(), PRICES, estimate_us=20.0)
    assert {"Net_0", "Linear_0"} <= set(_by_name(found.overhead_by_module))
    assert "not known" in found.attribution_note


def test_past_the_top_entries_the_rest_is_summed() -> None:
    events = [_x("ProfilerStep#1", 0, 1000, cat="user_annotation")]
    for i in range(TOP_SHARES + 3):
        events += [_py(f"nn.Module: Block_{i}", 10 * i, 9), _x("aten::relu", 10 * i + 1, 1 + 0.01 * i)]
    found = attribute(events, PRICES, estimate_us=100.0)
    parts = [share.part for share in found.overhead_by_module]
    assert parts == ["module"] * TOP_SHARES + ["rest", "unattributed"]
    assert found.overhead_by_module[TOP_SHARES].name == "3 more modules"
    assert found.overhead_by_module[TOP_SHARES].events_per_step == 3


def test_a_trace_without_python_frames_places_nothing_and_says_why() -> None:
    events = [_x("ProfilerStep#1", 0, 100, cat="user_annotation"), _x("aten::add", 1, 2)]
    found = attribute(events, PRICES, estimate_us=5.0)
    assert [share.part for share in found.overhead_by_module] == ["outside", "unattributed"]
    assert "no Python frames" in found.attribution_note


def test_without_a_detailed_profile_there_is_no_attribution_and_the_row_says_why() -> None:
    found = attribute_trace(None, PRICES, 10.0)
    assert found.overhead_by_module == () and "--no-detailed" in found.attribution_note
    assert "--no-detailed" in repr(found) and "--no-detailed" in render_attribution("m eval cpu", found)


@pytest.mark.parametrize(
    ("filename", "library"),
    [
        ("/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", True),
        ("torch/nn/modules/module.py", True),  # as torch.profiler names it: under its sys.path entry
        ("typing.py", True),
        ("torchbenchmark/measure/harness.py", True),
        ("tests/helpers/explain_models.py", False),
        ("transformers/models/bert/modeling_bert.py", False),
        ("/usr/lib/python3.11/contextlib.py", True),
        ("/work/torchbenchmark/measure/harness.py", True),
        ("<frozen importlib._bootstrap>", True),
        ("/venv/lib/python3.11/site-packages/transformers/models/bert/modeling_bert.py", False),
        ("/work/torchbenchmark/models/nlp.py", False),
        ("/home/me/my_net.py", False),
    ],
)
def test_the_models_own_code_is_everything_but_torch_the_standard_library_and_the_harness(filename: str, library: bool) -> None:
    assert is_library(filename) is library


def test_a_line_is_named_by_its_files_last_two_parts() -> None:
    assert (
        line_name("/venv/site-packages/transformers/models/bert/modeling_bert.py", "42", "forward") == "bert/modeling_bert.py:42 (forward)"
    )


def test_the_attribution_reads_back_from_json_at_the_top_level_of_a_row() -> None:
    from torchbenchmark.results.schema import CaseResult, Dispatch, StepTime

    found = attribute(_trace(), PRICES, estimate_us=20.0, module_names=NAMES)
    step, dispatch = StepTime(1.0, 0.01, 1.0, 50), Dispatch("dispatch-bound", 0.6, 10.0, 1.0, 1.0)
    row = CaseResult(model="m", mode="train", device="cpu", status="ok", step_time=step, dispatch=dispatch, attribution=found)
    data = row.to_dict()
    assert data["overhead_by_module"][0]["name"] == "Net" and "overhead_by_line" in data
    assert CaseResult.from_dict(data).attribution == found
    assert "most in Net (25%)" in repr(row)
    negligible = dataclasses.replace(row, dispatch=dataclasses.replace(dispatch, verdict="compute-bound", overhead_fraction=0.001))
    assert "most in" not in negligible.headline()  # an overhead of 0.1% of the step: no module is worth naming
    assert isinstance(CaseResult.from_dict({**data, "overhead_by_module": None, "overhead_by_class": None, "overhead_by_line": None,
                                            "attribution_note": None}).attribution, type(None))  # fmt: skip
    assert Attribution().top("module") is None


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["eval", "train"])
def test_the_tiny_op_module_holds_the_attributed_overhead_and_its_line_is_the_top_line(tmp_path: Path, mode: str) -> None:
    from tests.helpers.explain_models import MatmulAndTinyOps, TinyOps
    from torchbenchmark.results.spec import Budget

    row = diagnose(MatmulAndTinyOps, mode, out_dir=tmp_path, budget=Budget(warmup_s=1.0, measure_s=0.5, edge_calls=1))
    assert row.status == "ok", row.error
    attribution = row.attribution
    assert attribution is not None and attribution.attribution_note is None, attribution
    in_modules = [share for share in attribution.overhead_by_module if share.part in ("module", "rest")]
    tiny = next(share for share in in_modules if share.name == "tiny")
    assert tiny.module_class == "TinyOps"
    held = tiny.overhead_us_per_step >= 0.8 * sum(share.overhead_us_per_step for share in in_modules)
    assert held or marked(row), attribution.overhead_by_module  # timed shares: right, or the row says not to read them
    first_line = inspect.getsourcelines(TinyOps.forward)[1]
    assert marked(row) or attribution.top("line").name == f"helpers/explain_models.py:{first_line} (forward)", attribution.overhead_by_line
    table = (tmp_path / "matmul_and_tiny_ops" / f"{mode}-cpu.overhead_by_module.txt").read_text()
    assert "tiny" in table and "TinyOps" in table
    assert row.bound is not None and row.bound.speedup_bound >= 1.0


@pytest.mark.slow
def test_with_no_detailed_profile_the_row_says_why_it_has_no_attribution(tmp_path: Path) -> None:
    from tests.helpers.explain_models import MatmulAndTinyOps
    from torchbenchmark.results.spec import Budget

    row = diagnose(MatmulAndTinyOps, "eval", out_dir=tmp_path, budget=Budget(warmup_s=0.5, measure_s=0.3), detailed=False)
    assert row.status == "ok", row.error
    assert row.attribution.overhead_by_module == () and "--no-detailed" in row.attribution.attribution_note
    assert row.bound is not None
