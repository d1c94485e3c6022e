"""Which ops a comparison moved: hand-made traces with a known diff, the reading of both sides' traces, and two real sweeps."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
from pathlib import Path

import pytest

from tests.helpers.sweeps import diagnose
from torchbenchmark.analyze.compare import compare, with_op_diffs
from torchbenchmark.analyze.opdiff import op_diff, trace_ops
from torchbenchmark.analyze.trace import load_events
from torchbenchmark.report.page import render_comparison_report
from torchbenchmark.report.tables import render_comparison
from torchbenchmark.results import files
from torchbenchmark.results.records import RunRecord, summary_of_records
from torchbenchmark.results.schema import CaseResult, Dispatch, Instructions, Samples, StepTime, Traces

DATA = Path(__file__).resolve().parents[1] / "data"
ENV = {"host": "h", "cpu": "c", "cpu_count": 2, "torch": "2", "threads": 1}
TRACE = "m/eval-cpu.pt.trace.json.gz"


def _x(name: str, ts: float, dur: float, cat: str = "cpu_op") -> dict:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": 1}


def _data(name: str) -> list[dict]:
    """A hand-made light trace (tests/data/make_explain_traces.py says what is in it)."""
    return load_events(DATA / f"{name}.pt.trace.json")


def test_the_call_that_was_added_comes_first_with_its_calls_before_and_after() -> None:
    base, new = trace_ops(_data("opdiff_base")), trace_ops(_data("opdiff_new"))
    assert base.self_us["aten::mul"] == pytest.approx(3 * 4 - 1) and base.calls["aten::mul"] == 3
    assert base.total_us["aten::mul"] == pytest.approx(3 * 4)  # the nested copy's time included
    diff = op_diff(base, new)
    first = diff.first
    # The add's nested copy has more time of its own, but moved with it: the call that was added comes first.
    assert (first.name, first.base_calls_per_step, first.new_calls_per_step) == ("aten::add", 5, 105)
    assert first.change_total_us_per_step == pytest.approx(700) and first.change_us_per_step == pytest.approx(200)
    assert diff.ops[1].name == "aten::_to_copy" and diff.ops[1].change_us_per_step == pytest.approx(500)
    assert diff.only_in_base == ("aten::relu",) and diff.only_in_new == ("aten::to",)
    # One-sided ops rank by their whole time, against zero on the other side.
    assert [op.name for op in diff.ops[2:4]] == ["aten::relu", "aten::to"]
    assert diff.events_per_step["call"] == (3 + 5 + 1, 3 + 105 + 1) and diff.events_per_step["nested"] == (1 + 5, 1 + 105)
    assert diff.steps == (2, 2)


def test_an_op_whose_calls_moved_ranks_above_time_that_load_moved() -> None:
    """An A-B pair beside a busy machine: 200 -> 220 multiplies a step (+40 µs), and an allocation called as
    often on both sides whose time load stretched by 148 µs. The calls are exact: the multiply leads."""
    from torchbenchmark.analyze.opdiff import TraceOps

    def side(muls: float, empty_us: float) -> TraceOps:
        self_us = {"aten::mul": 2.0 * muls, "aten::empty_strided": empty_us}
        calls = {"aten::mul": muls, "aten::empty_strided": 4.0}
        return TraceOps(3, self_us, dict(self_us), calls, {"call": muls + 4.0})

    diff = op_diff(side(200, 10.0), side(220, 158.0))
    assert [op.name for op in diff.ops] == ["aten::mul", "aten::empty_strided"]
    assert diff.first.calls_moved and not diff.ops[1].calls_moved


def test_a_trace_without_steps_is_refused() -> None:
    with pytest.raises(ValueError, match="ProfilerStep"):
        trace_ops([_x("aten::add", 0, 1)])


def _write(folder: Path, events: list[dict]) -> None:
    path = folder / TRACE
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as stream:
        json.dump({"traceEvents": events}, stream)


def _side(folder: Path, ms: float, traced: bool = True) -> object:
    row = CaseResult(
        model="m",
        mode="eval",
        device="cpu",
        status="ok",
        step_time=StepTime(ms, 0.01 * ms, ms, 200),
        samples=Samples((ms,) * 3, ((ms, ms),) * 3),
        traces=Traces(TRACE if traced else None),
    )
    other = CaseResult(
        model="other",
        mode="eval",
        device="cpu",
        status="ok",
        step_time=StepTime(1.0, 0.01, 1.0, 200),
        samples=Samples((1.0,) * 3, ((1.0, 1.0),) * 3),
    )
    return summary_of_records([RunRecord("20261201T000000.000000Z-abcd", ENV, rows=(row, other))], str(folder))


def test_a_slower_case_lists_the_ops_that_moved_in_text_json_and_html(tmp_path: Path) -> None:
    base_dir, new_dir = tmp_path / "base", tmp_path / "new"
    _write(base_dir, _data("opdiff_base"))
    _write(new_dir, _data("opdiff_new"))
    base, new = _side(base_dir, 1.0), _side(new_dir, 1.5)
    comparison = with_op_diffs(compare(base, new), base, new, (base_dir, new_dir))
    (case,) = [case for case in comparison.cases if case.model == "m"]
    assert case.call == "slower" and case.ops is not None and case.ops.first.name == "aten::add"
    (same,) = [case for case in comparison.cases if case.model == "other"]
    assert same.ops is None and same.ops_note is None  # same: not asked for
    text = render_comparison(comparison)
    assert "ops that moved: m eval cpu (slower)" in text and "aten::add" in text and "call 9 -> 109" in text
    document = comparison.to_dict()
    listed = next(c for c in document["cases"] if c["model"] == "m")["ops"]["ops"][0]
    assert (listed["name"], listed["base_calls_per_step"], listed["new_calls_per_step"]) == ("aten::add", 5, 105)
    json.dumps(document)
    assert 'id="ops"' in render_comparison_report(comparison, base, new)
    assert "ops" not in comparison.cases[0].record()


def test_every_case_with_ops_and_a_missing_trace_said_for_its_case(tmp_path: Path) -> None:
    base_dir, new_dir = tmp_path / "base", tmp_path / "new"
    _write(base_dir, _data("opdiff_base"))
    base, new = _side(base_dir, 1.0), _side(new_dir, 1.0, traced=True)  # the new side's trace was never written
    comparison = with_op_diffs(compare(base, new), base, new, (base_dir, new_dir), every=True)
    notes = {case.model: case.ops_note for case in comparison.cases}
    assert notes["m"].startswith("no op diff: the new's light trace is missing")
    assert notes["other"] == "no op diff: the base's light trace records none"
    assert "no op diff" in render_comparison(comparison)


@pytest.mark.slow
def test_compare_names_the_added_op_first_with_its_calls_going_from_base_to_new(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.helpers.explain_models import ElementwiseAdded, ElementwiseBase
    from torchbenchmark.cli import compare as compare_cli
    from torchbenchmark.results.spec import Budget

    budget = Budget(warmup_s=0.5, measure_s=0.3, edge_calls=1)
    for cls, folder in ((ElementwiseBase, "base"), (ElementwiseAdded, "new")):
        row = diagnose(cls, "eval", out_dir=tmp_path / folder, budget=budget, detailed=False)
        assert row.status == "ok", row.error
    document = tmp_path / "compare.json"
    compare_cli.run(tmp_path / "base", tmp_path / "new", 5.0, compare_cli.Outputs(json=document), compare_cli.Reading(ops=True))
    (case,) = json.loads(document.read_text())["cases"]
    first = case["ops"]["ops"][0]
    assert first["name"] == "aten::add", case["ops"]
    assert (first["base_calls_per_step"], first["new_calls_per_step"]) == (5, 105)
    assert "ops that moved: elementwise eval cpu" in capsys.readouterr().out


def _counted(folder: Path, per_step: float, call_events: float) -> object:
    """One case the same by its step times, with instructions and op events per step counted."""
    row = CaseResult(
        model="m",
        mode="eval",
        device="cpu",
        status="ok",
        step_time=StepTime(1.0, 0.01, 1.0, 200),
        samples=Samples((1.0,), ((1.0, 1.0),)),
        traces=Traces(TRACE),
        dispatch=Dispatch("dispatch-bound", 0.8, call_events, 1.0, 1.0, events_per_step={"call": call_events}),
        instructions=Instructions(per_step=per_step, spread_pct=0.05, steps=5),
    )
    return summary_of_records([RunRecord("20261201T000000.000000Z-abcd", ENV, rows=(row,))], str(folder))


def test_a_case_called_by_instructions_or_whose_op_events_moved_gets_its_op_diff(tmp_path: Path) -> None:
    base_dir, new_dir = tmp_path / "base", tmp_path / "new"
    _write(base_dir, _data("opdiff_base"))
    _write(new_dir, _data("opdiff_new"))
    base, new = _counted(base_dir, 1e6, 9), _counted(new_dir, 1.0135e6, 109)
    (case,) = with_op_diffs(compare(base, new), base, new, (base_dir, new_dir)).cases
    assert (case.call, case.reason, case.wall_call) == ("slower", "instructions", "same")
    assert case.ops is not None and case.ops.first.name == "aten::add" and case.op_events == {"call": (9, 109), "ops": (9, 109)}
    # The same instructions, but the op events moved: no call, and the diff names the ops all the same.
    base, new = _counted(base_dir, 1e6, 9), _counted(new_dir, 1e6, 109)
    (case,) = with_op_diffs(compare(base, new), base, new, (base_dir, new_dir)).cases
    assert case.call == "same" and case.ops is not None and "op events per step changed: call 9 -> 109, ops 9 -> 109" in case.notes
    unmoved = _counted(new_dir, 1e6, 9)
    (case,) = with_op_diffs(compare(base, unmoved), base, unmoved, (base_dir, new_dir)).cases
    assert case.call == "same" and case.ops is None and case.ops_note is None


def _damaged(path: Path, kind: str, tmp_path: Path) -> str:
    """Write a light trace damaged as ``kind`` says at ``path``; the name a record gives it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    whole = gzip.compress(json.dumps({"traceEvents": _data("opdiff_new")}).encode())
    if kind == "truncated gzip":
        path.write_bytes(whole[: len(whole) // 2])
    elif kind == "corrupt deflate":
        path.write_bytes(whole[:20] + bytes(b ^ 0xFF for b in whole[20:60]) + whole[60:])
    elif kind == "not gzip":
        path.write_bytes(b"plain text, not a trace")
    elif kind == "events not objects":
        path.write_bytes(gzip.compress(json.dumps({"traceEvents": [1, "two", None]}).encode()))
    elif kind == "deep nesting":
        path.write_bytes(gzip.compress(b"[" * 100_000 + b"]" * 100_000))
    elif kind == "a FIFO":
        os.mkfifo(path)
    elif kind == "a link out":
        outside = tmp_path / "elsewhere.pt.trace.json.gz"
        outside.write_bytes(whole)
        path.symlink_to(outside)
    elif kind == "a gzip bomb":
        path.write_bytes(gzip.compress(b" " * (3 * 2**20)))  # past the limit the test sets: 1 MB
    return str(path.relative_to(path.parents[1]))


@pytest.mark.parametrize(
    ("kind", "why"),
    [
        ("truncated gzip", "cannot be read whole (EOFError"),
        ("corrupt deflate", "cannot be read whole"),
        ("not gzip", "cannot be read whole (BadGzipFile"),
        ("events not objects", "not a Chrome trace"),
        ("deep nesting", "RecursionError"),
        ("a FIFO", "not a regular file"),
        ("a link out", "lies outside"),
        ("a gzip bomb", "holds more than 1 MB"),
    ],
)
def test_a_damaged_trace_is_its_cases_note_and_never_a_regression(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, why: str
) -> None:
    monkeypatch.setattr(files, "MOST_READ_BYTES", 2**20)
    base_dir, new_dir = tmp_path / "base", tmp_path / "new"
    _write(base_dir, _data("opdiff_base"))
    _damaged(new_dir / TRACE, kind, tmp_path)
    base, new = _side(base_dir, 1.0), _side(new_dir, 1.0)
    (case, _) = with_op_diffs(compare(base, new), base, new, (base_dir, new_dir), every=True).cases
    assert case.model == "m" and case.ops is None and why in (case.ops_note or ""), case.ops_note
    assert case.ops_note.startswith("no op diff: the new's light trace") and "\n" not in case.ops_note


@pytest.mark.parametrize("name", ["/etc/hostname", "../base/" + TRACE, "m/../../base/" + TRACE])
def test_a_trace_named_outside_its_folder_is_not_read(tmp_path: Path, name: str) -> None:
    from torchbenchmark.results.files import StorageError, read_inside

    _write(tmp_path / "base", _data("opdiff_base"))
    (tmp_path / "new").mkdir()
    with pytest.raises(StorageError, match="lies outside"):
        read_inside(tmp_path / "new", name)


def test_another_models_trace_in_a_rows_place_is_said_not_to_be_its(tmp_path: Path) -> None:
    base_dir, new_dir = tmp_path / "base", tmp_path / "new"
    _write(base_dir, _data("opdiff_base"))
    _write(new_dir, _data("opdiff_new"))
    base, new = _side(base_dir, 1.0), _side(new_dir, 1.0)
    calls = trace_ops(_data("opdiff_base")).events_per_step["call"]
    rows = [
        dataclasses.replace(row, dispatch=Dispatch("compute-bound", 0.1, 9.0, 1.0, 1.0, events_per_step={"call": calls}))
        if row.model == "m"
        else row
        for row in new.rows
    ]
    new = dataclasses.replace(new, rows=tuple(rows))  # the new row counted the base's calls: its trace is another's
    (case, _) = with_op_diffs(compare(base, new), base, new, (base_dir, new_dir), every=True).cases
    assert (
        case.ops is None
        and case.ops_note == f"no op diff: the new's light trace is not its row's: 109 call events a step against the row's {calls:g}"
    )
