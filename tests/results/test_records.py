"""Run records and the summary view: written per run, never changed after, read strictly, rebuilt losslessly."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.stand_ins import machinery
from torchbenchmark.analyze import pooling
from torchbenchmark.analyze.bound import bound_of
from torchbenchmark.api import load_summary
from torchbenchmark.report.summary import render_text
from torchbenchmark.results import files, records
from torchbenchmark.results.files import StorageError
from torchbenchmark.results.records import RunRecord
from torchbenchmark.results.schema import CaseResult, Costs, Dispatch, Samples, StepTime
from torchbenchmark.run import outdir, sweep
from torchbenchmark.run.sweep import SweepOptions, run_sweep

ENV = {
    "host": "box",
    "cpu": "Test CPU",
    "cpu_count": 2,
    "device_name": "Test CPU",
    "torch": "2.14.1",
    "started_at": "2026-01-01T00:00:00+00:00",
    "threads": 2,
}


def ok_row(model: str, ms: float, mode: str = "train") -> CaseResult:
    return CaseResult(model=model, mode=mode, device="cpu", status="ok", batch_size=4, step_time=StepTime(ms, 0.1, ms, 10))


def fake_case(timings: dict[str, float]) -> Any:
    """A stand-in for a case's process: a row at the given step time, or Ctrl-C where it says 'stop'."""

    def run_case(spec: Any, name: str, out_dir: Path, on_phase: Any = None) -> CaseResult:
        ms = timings[name]
        if ms == "stop":
            raise KeyboardInterrupt
        return ok_row(name, ms, spec.mode)

    return run_case


def sweep_with(out: Path, timings: dict[str, Any]) -> sweep.SweepOutcome:
    return run_sweep(list(timings), ["train"], SweepOptions(out_dir=out, progress=False), machinery(fake_case(timings), names=timings))


def test_each_run_writes_one_record_and_never_changes_it(tmp_path: Path) -> None:
    first = sweep_with(tmp_path, {"a": 1.0, "b": 2.0})
    assert first.record is not None and first.record.parent == tmp_path / "runs"
    before = first.record.read_bytes()
    second = sweep_with(tmp_path, {"a": 1.5})
    assert first.record.read_bytes() == before, "an ended run's record was rewritten"
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == sorted([first.record.name, second.record.name])
    assert first.run_id < second.run_id, "run ids sort by start time"
    record = json.loads(first.record.read_text())
    assert record["schema_version"] == records.SCHEMA_VERSION and record["state"] == "complete"
    assert [r["model"] for r in record["results"]] == ["a", "b"]
    assert record["results"][0]["samples"] == {"process_medians_ms": [], "window_medians_ms": []}
    # The view: the latest row per case, each saying which run it came from.
    rows = {r.model: r for r in load_summary(tmp_path).rows}
    assert rows["a"].step_time.median_ms == 1.5 and rows["a"].run_id == second.run_id
    assert rows["b"].step_time.median_ms == 2.0 and rows["b"].run_id == first.run_id


def test_summary_header_counts_this_run_apart_and_marks_carried_rows(tmp_path: Path) -> None:
    sweep_with(tmp_path, {"a": 1.0, "b": 2.0})
    sweep_with(tmp_path, {"a": 1.5})
    text = (tmp_path / "summary.txt").read_text()
    assert "this run: 1 case (1 ok)" in text
    assert "carried from earlier runs: 1 case (1 ok)" in text
    lines = {line.split()[0]: line for line in text.splitlines() if line.startswith(("a ", "b "))}
    assert "this" in lines["a"].split() and "this" not in lines["b"].split()


def test_rows_from_another_machine_are_marked() -> None:
    mine, theirs = RunRecord("2", ENV, None, (ok_row("a", 1.0),)), RunRecord("1", {**ENV, "host": "other"}, None, (ok_row("b", 1.0),))
    summary = records.summary_of_records([theirs, mine], "out")
    row_b = next(line for line in render_text(summary, "2").splitlines() if line.startswith("b "))
    assert "*" in row_b
    same = records.summary_of_records([RunRecord("1", ENV, None, (ok_row("b", 1.0),)), mine], "out")
    assert "*" not in next(line for line in render_text(same, "2").splitlines() if line.startswith("b "))


def test_ctrl_c_leaves_earlier_rows_of_unrun_cases_as_they_were(tmp_path: Path) -> None:
    sweep_with(tmp_path, {"a": 1.0, "b": 2.0, "c": 3.0})
    outcome = sweep_with(tmp_path, {"a": 1.1, "b": "stop", "c": 9.0, "d": 9.0})
    assert outcome.exit_status == 130
    rows = {r.model: r for r in load_summary(tmp_path).rows}
    assert rows["a"].step_time.median_ms == 1.1
    assert rows["b"].status == "interrupted"  # it was running: this run's row
    assert rows["c"].status == "ok" and rows["c"].step_time.median_ms == 3.0  # never started: kept
    assert rows["d"].status == "interrupted" and rows["d"].error.startswith("not started")  # nothing to keep
    record = json.loads(outcome.record.read_text())
    assert record["state"] == "interrupted" and ["c", "train", "cpu", "eager"] in record["not_run"]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"schema_version": 2, "run_id": "x", "environment": {}, "results": [{"model": "a", "mo', "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"schema_version": 99, "run_id": "x", "environment": {}, "results": []}', "schema_version 99"),
        (
            '{"schema_version": 2, "run_id": "x", "environment": {}, "results": [{"model": "a", "mode": "train", "device": "cpu"}]}',
            r"results\[0\] \(a train cpu\) has no status",
        ),
        (
            '{"schema_version": 2, "run_id": "x", "environment": {}, "results": [{"model": "a", "mode": "train", "device": "cpu", "status": "great"}]}',
            "status must be one of",
        ),
    ],
    ids=["truncated", "wrong-shape", "future-version", "row-without-status", "unknown-status"],
)
def test_a_bad_record_is_an_error_naming_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path / "runs" / "x.json", text)
    with pytest.raises(StorageError, match=message) as error:
        load_summary(tmp_path)
    assert str(path) in str(error.value)


def test_a_bad_record_stops_the_sweep_before_it_writes(tmp_path: Path) -> None:
    write(tmp_path / "runs" / "x.json", "{not json")
    with pytest.raises(StorageError):
        sweep_with(tmp_path, {"a": 1.0})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]  # not even the lock
    assert [p.name for p in (tmp_path / "runs").iterdir()] == ["x.json"]


@pytest.mark.parametrize("text", ["{trunc", "[]", '{"schema_version": 2, "results": 5}'], ids=["truncated", "wrong-shape", "bad-rows"])
def test_a_corrupt_summary_json_beside_records_costs_nothing(tmp_path: Path, text: str) -> None:
    sweep_with(tmp_path, {"a": 1.0, "b": 2.0})
    write(tmp_path / "summary.json", text)
    with pytest.raises(StorageError):
        load_summary(tmp_path / "summary.json")  # read directly, it is an error...
    sweep_with(tmp_path, {"a": 1.5})  # ...and the next run rebuilds it from the records
    assert {r.model for r in load_summary(tmp_path / "summary.json").rows} == {"a", "b"}


def test_a_summary_from_before_records_is_carried_not_lost(tmp_path: Path) -> None:
    legacy = {"environment": ENV, "results": [ok_row(m, 1.0).to_dict() for m in ("old1", "old2")]}
    write(tmp_path / "summary.json", json.dumps(legacy))
    sweep_with(tmp_path, {"a": 1.0})
    assert {r.model for r in load_summary(tmp_path).rows} == {"old1", "old2", "a"}


def test_a_corrupt_summary_from_before_records_stops_the_sweep(tmp_path: Path) -> None:
    write(tmp_path / "summary.json", '{"environment": {}, "results": [{"model": "a"}]}')
    with pytest.raises(StorageError, match="summary.json: results\\[0\\]"):
        sweep_with(tmp_path, {"a": 1.0})
    assert not (tmp_path / "runs").exists()


def test_unknown_fields_are_kept(tmp_path: Path) -> None:
    row = {**ok_row("a", 1.0).to_dict(), "from_the_future": {"x": 1}}
    path = write(
        tmp_path / "runs" / "r.json",
        json.dumps({"schema_version": 2, "run_id": "r", "environment": ENV, "results": [row], "also_new": True}),
    )
    record = records.read_record(path)
    assert record.rows[0].to_dict()["from_the_future"] == {"x": 1}
    assert record.to_dict()["also_new"] is True


def test_write_atomic_leaves_no_temporary_file_when_the_write_fails(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    target = write(tmp_path / "summary.json", "old")

    def full_disk(*args: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space"):
        files.write_atomic(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def timed_row(model: str, medians: tuple[float, ...], batch_size: int = 4, status: str = "ok") -> CaseResult:
    if status != "ok":
        return CaseResult(model=model, mode="train", device="cpu", status=status, error="boom")
    ms = sorted(medians)[len(medians) // 2]
    return CaseResult(
        model=model,
        mode="train",
        device="cpu",
        status="ok",
        batch_size=batch_size,
        step_time=StepTime(ms, 0.1, ms, 10),
        samples=Samples(medians, tuple((m,) for m in medians)),
    )


def test_pooling_joins_the_processes_of_every_run_that_measured_a_case_alike(tmp_path: Path) -> None:
    runs = [
        ("20260101T000001.000000Z-aaaa", ENV, [timed_row("a", (10.0,)), timed_row("b", (5.0,))]),
        ("20260101T000002.000000Z-bbbb", ENV, [timed_row("a", (11.0, 12.0)), timed_row("b", (6.0,), batch_size=8)]),
        ("20260101T000003.000000Z-cccc", {**ENV, "torch": "2.15.0"}, [timed_row("c", (1.0,))]),
        ("20260101T000004.000000Z-dddd", ENV, [timed_row("a", (13.0,)), timed_row("c", (2.0,))]),
        ("20260101T000005.000000Z-eeee", {**ENV, "threads": 1}, [timed_row("d", (3.0,))]),
        ("20260101T000006.000000Z-ffff", {**ENV, "threads": 2}, [timed_row("d", (4.0,))]),
    ]
    for run_id, env, rows in runs:
        outdir.write_record(tmp_path, RunRecord(run_id, env, None, tuple(rows), state="complete"))
    latest = {row.model: row for row in load_summary(tmp_path).rows}
    pooled = {row.model: row for row in load_summary(tmp_path, pool=True).rows}
    # a: every run's processes, oldest first; the step time is their median; the row stays the latest run's.
    assert pooled["a"].samples.process_medians_ms == (10.0, 11.0, 12.0, 13.0)
    assert pooled["a"].samples.window_medians_ms == ((10.0,), (11.0,), (12.0,), (13.0,))
    assert pooled["a"].step_time.median_ms == 11.5 and pooled["a"].step_time.n == 30
    assert pooled["a"].step_time.min_ms == 10.0  # the least step of every run's, not the latest run's 13.0
    assert pooled["a"].run_id == latest["a"].run_id == "20260101T000004.000000Z-dddd"
    # b at another batch size and c under another torch are measured otherwise: the latest run's alone.
    assert pooled["b"] == latest["b"] and pooled["b"].samples.process_medians_ms == (6.0,)
    assert pooled["c"] == latest["c"] and pooled["c"].samples.process_medians_ms == (2.0,)
    # d at another count of intra-op threads likewise.
    assert pooled["d"] == latest["d"] and pooled["d"].samples.process_medians_ms == (4.0,)


def test_repeat_and_pool_time_a_case_alike() -> None:
    """The processes of one run (--repeat) and of several runs (--pool) give one row the same way: the
    median of their medians, the median IQR, the least step, and the per-second costs at that median."""
    costs = Costs(
        flops_per_step=10**9,
        flops_by_kind={"matmul": 10**9},
        flops_note=None,
        achieved_gflops=100.0,
        pct_of_peak=50.0,
        compute_limit="arithmetic",
        peak_memory_mb=1.0,
        state_memory_mb=None,
        memory_method="test",
        peak_rss_mb=None,
        samples_per_s=400.0,
    )
    first = dataclasses.replace(timed_row("a", (10.0,)), step_time=StepTime(10.0, 0.5, 9.0, 10), costs=costs)
    processes = [
        first,
        dataclasses.replace(timed_row("a", (20.0,)), step_time=StepTime(20.0, 1.5, 19.0, 10)),
        dataclasses.replace(timed_row("a", (30.0,)), step_time=StepTime(30.0, 1.0, 29.0, 10)),
    ]
    repeated = pooling.combine_repeats(processes)
    assert repeated == pooling.pool_processes(first, processes)
    assert repeated.step_time == StepTime(20.0, 1.0, 9.0, 30)
    assert repeated.samples.process_medians_ms == (10.0, 20.0, 30.0)
    assert (repeated.costs.achieved_gflops, repeated.costs.samples_per_s, repeated.costs.pct_of_peak) == (50.0, 200.0, 25.0)
    # What is drawn from the step time is redrawn at the pooled median: the overhead (µs a step) stays.
    priced = dataclasses.replace(first, dispatch=Dispatch("dispatch-bound", 0.6, 100, 2.0, 1.0, 0.6, (0.45, 0.7), True))
    priced = dataclasses.replace(priced, bound=bound_of(10.0, priced.dispatch))
    pooled = pooling.pool_processes(priced, [priced, *processes[1:]])
    assert pooled.dispatch.fraction == pytest.approx(0.3) and pooled.dispatch.overhead_interval == pytest.approx((0.225, 0.35))
    assert (pooled.dispatch.verdict, pooled.dispatch.borderline) == ("mixed", False)  # 22-35%: mixed whatever the rerun
    assert pooled.bound == bound_of(20.0, pooled.dispatch) and pooled.bound.overhead_free_ms == pytest.approx(14.0)
    # A process that failed ends the case: its row, with the samples of the processes before it.
    failed = pooling.combine_repeats([first, timed_row("a", (), status="failed"), processes[2]])
    assert failed.status == "failed" and failed.samples.process_medians_ms == (10.0,)
    assert pooling.combine_repeats([timed_row("a", (), status="failed"), first]).samples.process_medians_ms == ()


def test_pooling_leaves_a_case_whose_latest_run_failed_as_it_is(tmp_path: Path) -> None:
    for run_id, row in (
        ("20260101T000001.000000Z-aaaa", timed_row("a", (10.0,))),
        ("20260101T000002.000000Z-bbbb", timed_row("a", (), status="failed")),
        ("20260101T000003.000000Z-cccc", timed_row("b", (1.0,))),
    ):
        outdir.write_record(tmp_path, RunRecord(run_id, ENV, None, (row,), state="complete"))
    pooled = {row.model: row for row in load_summary(tmp_path, pool=True).rows}
    assert pooled["a"].status == "failed"
    assert pooled["b"].samples.process_medians_ms == (1.0,)


def test_pooling_needs_an_output_folder_of_records(tmp_path: Path) -> None:
    outdir.write_record(tmp_path, RunRecord("20260101T000001.000000Z-aaaa", ENV, None, (timed_row("a", (1.0,)),), state="complete"))
    record = next((tmp_path / "runs").glob("*.json"))
    for path in (record, tmp_path / "missing", tmp_path / "runs"):
        with pytest.raises(StorageError, match="pooling needs an output folder with run records"):
            load_summary(path, pool=True)
