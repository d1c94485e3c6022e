"""The summary: the rendered table is pinned by a golden file, JSON round-trips, non-finite figures are null."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from torchbenchmark.results import CaseResult, Costs, Dispatch, StepTime, TopOp
from torchbenchmark.storage import Summary
from torchbenchmark.summary import render_json, render_table, render_text

GOLDEN = Path(__file__).parent / "data" / "summary_golden.txt"

ROWS = [
    CaseResult(
        model="resnet50", mode="train", device="cpu", status="ok", batch_size=8, family="vision-classification",
        step_time=StepTime(median_ms=812.345, iqr_ms=12.5, min_ms=799.0, n=5),
        light_distortion_pct=1.234, detailed_distortion_pct=48.7, edge_distortion_pct=0.42,
        phases_pct={"forward": 33.3, "backward": 62.1, "optimizer": 4.2},
        dispatch=Dispatch("compute-bound", 0.0071, 4315.0, 28.6, 1.3),
        top_ops=(TopOp("aten::convolution_backward", 380.0, 53.0, 46.8),),
        traces={"light": "resnet50/train-cpu.pt.trace.json.gz", "detailed": "resnet50/train-cpu-detailed.pt.trace.json.gz"},
        warmup_steps=7, steady=True, windows=2, window_diff_pct=0.8, windows_agree=True,
        costs=Costs(
            flops_per_step=194392621056, flops_by_kind={"matmul": 98304000, "convolution": 194294317056}, flops_note=None,
            achieved_gflops=239.3, pct_of_peak=79.8, compute_limit="arithmetic", peak_memory_mb=947.3,
            state_memory_mb=209.5, memory_method="test", peak_rss_mb=1650.2, samples_per_s=9.848,
        ),
    ),
    CaseResult(
        model="pyhpc_equation_of_state", mode="eval", device="cpu", status="ok", batch_size=1024, family="scientific",
        step_time=StepTime(median_ms=0.0567, iqr_ms=0.0031, min_ms=0.0512, n=500),
        light_distortion_pct=85.0, detailed_distortion_pct=903.0, edge_distortion_pct=37.5,
        phases_pct={"forward": 97.0, "backward": 0.0, "optimizer": 0.0},
        dispatch=Dispatch("dispatch-bound", 1.0, 150.0, 1.9, 1.3), warmup_steps=60, steady=False,
        costs=Costs(
            flops_per_step=None, flops_by_kind={}, flops_note="no matrix product, convolution or attention op",
            achieved_gflops=None, pct_of_peak=None, compute_limit=None, peak_memory_mb=1.15, state_memory_mb=0.9,
            memory_method="test", peak_rss_mb=402.0, samples_per_s=18059964.7,
        ),
    ),
    CaseResult(
        model="dcgan", mode="train", device="cpu", status="ok", batch_size=32, family="gan",
        step_time=StepTime(median_ms=95.25, iqr_ms=3.1, min_ms=90.0, n=32),
        light_distortion_pct=-0.4, detailed_distortion_pct=20.1, edge_distortion_pct=0.1,
        dispatch=Dispatch("mixed", 0.31, 385.0, 28.1, 1.3), warmup_steps=9, steady=True,
        windows=3, window_diff_pct=7.4, windows_agree=False,
    ),
    CaseResult(model="dlrm", mode="train", device="cpu", status="failed", error="out of memory; try a smaller --batch-size (MemoryError: )"),
    CaseResult(model="hang", mode="eval", device="cpu", status="timeout", error="no result after 5 s; process tree killed"),
    CaseResult(model="eos", mode="train", device="cpu", status="skipped", error="train not supported: no parameters"),
    CaseResult(model="vgg16", mode="eval", device="cpu", status="interrupted", error="interrupted by SIGINT"),
]
ENVIRONMENT = {"started_at": "2026-01-01T00:00:00+00:00", "torch": "2.14.1", "device_name": "Test CPU", "threads": 2}


def test_table_matches_golden() -> None:
    assert render_table(ROWS) + "\n" == GOLDEN.read_text(encoding="utf-8")


def test_json_has_the_pinned_fields_and_round_trips() -> None:
    document = json.loads(render_json(ROWS, ENVIRONMENT))
    assert document["environment"] == ENVIRONMENT
    assert document["runs"] == {}
    row = next(r for r in document["results"] if r["model"] == "resnet50")
    assert row["step_time_ms"] == {"median": 812.345, "iqr": 12.5, "min": 799.0, "n": 5}
    assert row["profiler_distortion_pct"] == {"light": 1.234, "detailed": 48.7}
    assert row["phases_pct"] == {"forward": 33.3, "backward": 62.1, "optimizer": 4.2}
    assert set(row["dispatch"]) >= {"verdict", "overhead_fraction", "ops_per_step", "median_op_us"}
    assert row["traces"] == {"light": "resnet50/train-cpu.pt.trace.json.gz", "detailed": "resnet50/train-cpu-detailed.pt.trace.json.gz"}
    assert row["measurement"] == {"windows": 2, "diff_pct": 0.8, "agree": True}
    assert (row["flops_per_step"], row["achieved_gflops"], row["pct_of_peak"], row["peak_memory_mb"], row["samples_per_s"]) == (
        194392621056, 239.3, 79.8, 947.3, 9.848,
    )
    assert row["flops_by_kind"] == {"matmul": 98304000, "convolution": 194294317056}
    failed = next(r for r in document["results"] if r["status"] == "failed")
    for key in ("model", "mode", "device", "batch_size", "status", "error", "step_time_ms", "edge_distortion_pct", "dispatch", "traces",
                "flops_per_step", "achieved_gflops", "pct_of_peak", "peak_memory_mb", "samples_per_s"):
        assert key in failed
    assert [CaseResult.from_dict(r) for r in document["results"]] == sorted(ROWS, key=lambda r: (r.model.lower(), r.mode))


def test_non_finite_figures_become_null() -> None:
    row = CaseResult(model="m", mode="eval", device="cpu", status="ok", edge_distortion_pct=float("inf"))
    assert json.loads(render_json([row], {}))["results"][0]["edge_distortion_pct"] is None


def test_repr_reads_as_a_sentence() -> None:
    assert repr(ROWS[0]) == "CaseResult(resnet50 train cpu bs=8: 812 ms/step (IQR 12.5 ms), compute-bound (overhead 1%))"
    assert repr(ROWS[3]).startswith("CaseResult(dlrm train cpu: failed (out of memory")


def cells(table: str, header: str) -> list[str]:
    """The cells under ``header`` in a rendered table, one per row, read from the dashes under the headers."""
    lines = table.splitlines()
    spans = [m.span() for m in re.finditer(r"-+", lines[1])]
    column = next(i for i, (start, end) in enumerate(spans) if lines[0][start:end].strip() == header)
    start, end = spans[column]
    return [line[start:end].strip() for line in lines[2:]]


def ok_row(model: str = "m", mode: str = "eval", median_ms: float = 1.0, **extra) -> CaseResult:
    return CaseResult(model=model, mode=mode, device="cpu", status="ok", step_time=StepTime(median_ms, 0.0, 0.1, 3), **extra)


@pytest.mark.parametrize(
    ("median_ms", "shown"),
    [(0.01234, "0.0123"), (0.5, "0.5"), (1.0, "1.00"), (9.876, "9.88"), (12.345, "12.3"), (123.45, "123"), (4321.5, "4322"), (-2.5, "-2.50")],
)
def test_step_times_show_three_significant_figures(median_ms: float, shown: str) -> None:
    assert cells(render_table([ok_row(median_ms=median_ms)]), "ms/step") == [shown]


def test_rows_sort_by_model_ignoring_case_then_mode_then_device() -> None:
    rows = [ok_row("beta", "train"), ok_row("Alpha", "train"), ok_row("alpha", "eval"), ok_row("beta", "eval")]
    rows.append(CaseResult(model="beta", mode="eval", device="cuda", status="ok"))
    table = render_table(rows)
    assert list(zip(cells(table, "model"), cells(table, "mode"), cells(table, "device"))) == [
        ("alpha", "eval", "cpu"), ("Alpha", "train", "cpu"), ("beta", "eval", "cpu"), ("beta", "eval", "cuda"), ("beta", "train", "cpu"),
    ]  # fmt: skip
    assert [r["model"] for r in json.loads(render_json(rows, {}))["results"]] == ["alpha", "Alpha", "beta", "beta", "beta"]


def test_notes_say_every_reason_to_doubt_a_row_and_an_error_comes_first() -> None:
    doubtful = ok_row(steady=False, windows=3, window_diff_pct=7.4, windows_agree=False)
    assert cells(render_table([doubtful]), "note") == ["UNTRUSTWORTHY: warmup not steady; noisy: windows 7% apart"]
    assert cells(render_table([ok_row(steady=True, windows_agree=True)]), "note") == [""]
    assert cells(render_table([ok_row(steady=None, windows_agree=None)]), "note") == [""]
    failed = CaseResult(model="m", mode="eval", device="cpu", status="failed", error="boom", steady=False)
    assert cells(render_table([failed]), "note") == ["boom"]


def test_text_summary_header_names_the_run_and_tallies_the_statuses() -> None:
    text = render_text(Summary("", ENVIRONMENT, tuple(ROWS), {}))
    assert text.splitlines()[:3] == [
        "torchbenchmark diagnostics, started 2026-01-01T00:00:00+00:00",
        "torch 2.14.1 on Test CPU, 2 threads; this run: 7 cases (1 failed, 1 interrupted, 3 ok, 1 skipped, 1 timeout)",
        "",
    ]
    assert render_table(ROWS) + "\n\n" in text
    assert render_text(Summary("", {}, (), {})).splitlines()[:2] == [
        "torchbenchmark diagnostics, started ?",
        "torch ? on ?, ? threads; this run: 0 cases (none)",
    ]


def test_non_finite_figures_nested_anywhere_become_null() -> None:
    row = ok_row(phases_pct={"forward": float("nan"), "backward": 1.5, "optimizer": 0.0})
    document = json.loads(render_json([row], {"peaks": [float("-inf"), 2.0]}))
    assert document["results"][0]["phases_pct"] == {"forward": None, "backward": 1.5, "optimizer": 0.0}
    assert document["environment"] == {"peaks": [None, 2.0]}


MACHINE = {"host": "h", "cpu": "c", "cpu_count": 2, "device_name": "Test CPU", "platform": "p", "torch": "2.14.1", "threads": 2}


def test_rows_carried_from_earlier_runs_say_which_and_star_another_machine_or_torch() -> None:
    runs = {
        "now": {**MACHINE, "started_at": "2026-01-03T10:00:00+00:00"},
        "same": {**MACHINE, "started_at": "2026-01-02T09:30:00+00:00"},
        "older-torch": {**MACHINE, "torch": "2.13.0", "started_at": "2026-01-01T08:15:00+00:00"},
        "other-host": {**MACHINE, "host": "g", "started_at": "2026-01-01T07:00:00+00:00"},
    }
    rows = (
        ok_row("a", run_id="now"), ok_row("b", run_id="same"), ok_row("c", run_id="older-torch"),
        ok_row("d", run_id="other-host"), CaseResult(model="e", mode="eval", device="cpu", status="failed", error="x", run_id="same"),
    )  # fmt: skip
    text = render_text(Summary("", runs["now"], rows, runs), run_id="now")
    lines = text.splitlines()
    assert lines[1] == "torch 2.14.1 on Test CPU, 2 threads; this run: 1 case (1 ok)"
    assert lines[2] == (
        "carried from earlier runs: 4 cases (1 failed, 3 ok); their run is in the 'run' column, "
        "* when from another machine or torch version"
    )
    table = "\n".join(lines[4 : 4 + 2 + len(rows)])
    assert table.splitlines()[0].split()[-2:] == ["run", "note"]  # the run column comes just before the note
    assert cells(table, "run") == ["this", "2026-01-02 09:30", "2026-01-01 08:15*", "2026-01-01 07:00*", "2026-01-02 09:30"]
    start = table.splitlines()[0].index("run")
    assert table.splitlines()[2][start:].startswith("this")  # left-aligned
    assert text.endswith("Rerun those on a quieter machine.\n")
    # A carried run with no start time is named by its id, and a row from no known run by "?".
    unnamed = {"now": runs["now"], "20260101T000000.000000Z-ab12": dict(MACHINE)}
    odd = (ok_row("a", run_id="now"), ok_row("b", run_id="20260101T000000.000000Z-ab12"), ok_row("c"))
    table = render_text(Summary("", {**MACHINE}, odd, unnamed), run_id="now").split("\n\n")[1]
    assert cells(table, "run") == ["this", "20260101 000000.", "?"]
    # Without a run id every row is this run's, and there is no run column.
    plain = render_text(Summary("", runs["now"], rows[:1], runs))
    assert "carried" not in plain and "this run: 1 case (1 ok)" in plain and " run " not in plain.splitlines()[3]


def test_a_variant_column_appears_after_the_device_only_when_a_row_is_not_eager() -> None:
    assert "variant" not in render_table([ok_row()]).splitlines()[0]
    table = render_table([ok_row(), ok_row(variant="inductor")])
    assert table.splitlines()[0].split()[:5] == ["model", "mode", "device", "variant", "batch"]
    assert cells(table, "variant") == ["eager", "inductor"]


@pytest.mark.parametrize(("median_ms", "shown"), [(0.0, "0"), (0.0001, "0.0001"), (0.00005, "0.00005"), (0.0000012, "0.000001")])
def test_step_times_under_a_tenth_of_a_microsecond_keep_their_digits(median_ms: float, shown: str) -> None:
    assert cells(render_table([ok_row(median_ms=median_ms)]), "ms/step") == [shown]
