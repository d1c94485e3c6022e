"""The summary: the rendered table is pinned by a golden file, JSON round-trips, non-finite figures are null."""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
from pathlib import Path

import pytest

from torchbenchmark.analyze.compare import CaseComparison
from torchbenchmark.report.case import doubts
from torchbenchmark.report.format import Column, render_columns_html
from torchbenchmark.report.summary import COLUMNS, note, render_table, render_text, render_untrustworthy
from torchbenchmark.report.tables import COMPARISON_COLUMNS
from torchbenchmark.results.files import dumps
from torchbenchmark.results.records import RunRecord, Summary, summary_of_records
from torchbenchmark.results.schema import (
    CaseResult,
    Costs,
    Dispatch,
    Distortion,
    Measurement,
    Scaling,
    StepTime,
    TopOp,
    Traces,
    Warmup,
)

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "summary_golden.txt"

ROWS = [
    CaseResult(
        model="resnet50",
        mode="train",
        device="cpu",
        status="ok",
        batch_size=8,
        family="vision-classification",
        step_time=StepTime(median_ms=812.345, iqr_ms=12.5, min_ms=799.0, n=5),
        distortion=Distortion(1.234, 48.7),
        edge_distortion_pct=0.42,
        phases_pct={"forward": 33.3, "backward": 62.1, "optimizer": 4.2},
        dispatch=Dispatch("compute-bound", 0.0071, 4315.0, 28.6, 1.3),
        top_ops=(TopOp("aten::convolution_backward", 380.0, 53.0, 46.8),),
        traces=Traces("resnet50/train-cpu.pt.trace.json.gz", "resnet50/train-cpu-detailed.pt.trace.json.gz"),
        warmup=Warmup(7, True),
        measurement=Measurement(2, 0.8, True),
        costs=Costs(
            flops_per_step=194392621056,
            flops_by_kind={"matmul": 98304000, "convolution": 194294317056},
            flops_note=None,
            achieved_gflops=239.3,
            pct_of_peak=79.8,
            compute_limit="arithmetic",
            peak_memory_mb=947.3,
            state_memory_mb=209.5,
            memory_method="test",
            peak_rss_mb=1650.2,
            samples_per_s=9.848,
        ),
    ),
    CaseResult(
        model="pyhpc_equation_of_state",
        mode="eval",
        device="cpu",
        status="ok",
        batch_size=1024,
        family="scientific",
        step_time=StepTime(median_ms=0.0567, iqr_ms=0.0031, min_ms=0.0512, n=500),
        distortion=Distortion(85.0, 903.0),
        edge_distortion_pct=37.5,
        phases_pct={"forward": 97.0, "backward": 0.0, "optimizer": 0.0},
        dispatch=Dispatch("dispatch-bound", 1.0, 150.0, 1.9, 1.3),
        warmup=Warmup(60, False),
        costs=Costs(
            flops_per_step=None,
            flops_by_kind={},
            flops_note="no matrix product, convolution or attention op",
            achieved_gflops=None,
            pct_of_peak=None,
            compute_limit=None,
            peak_memory_mb=1.15,
            state_memory_mb=0.9,
            memory_method="test",
            peak_rss_mb=402.0,
            samples_per_s=18059964.7,
        ),
    ),
    CaseResult(
        model="dcgan",
        mode="train",
        device="cpu",
        status="ok",
        batch_size=32,
        family="gan",
        step_time=StepTime(median_ms=95.25, iqr_ms=3.1, min_ms=90.0, n=32),
        distortion=Distortion(-0.4, 20.1),
        edge_distortion_pct=0.1,
        dispatch=Dispatch("mixed", 0.31, 385.0, 28.1, 1.3),
        warmup=Warmup(9, True),
        measurement=Measurement(3, 7.4, False),
    ),
    CaseResult(
        model="dlrm", mode="train", device="cpu", status="failed", error="out of memory; try a smaller --batch-size (MemoryError: )"
    ),
    CaseResult(model="hang", mode="eval", device="cpu", status="timeout", error="no result after 5 s; process tree killed"),
    CaseResult(model="eos", mode="train", device="cpu", status="skipped", error="train not supported: no parameters"),
    CaseResult(model="vgg16", mode="eval", device="cpu", status="interrupted", error="interrupted by SIGINT"),
]


def render_json(rows: list[CaseResult], environment: dict) -> str:
    return dumps(Summary("", environment, tuple(rows), {}).to_dict())


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
        194392621056,
        239.3,
        79.8,
        947.3,
        9.848,
    )
    assert row["flops_by_kind"] == {"matmul": 98304000, "convolution": 194294317056}
    failed = next(r for r in document["results"] if r["status"] == "failed")
    for key in (
        "model",
        "mode",
        "device",
        "batch_size",
        "status",
        "error",
        "step_time_ms",
        "edge_distortion_pct",
        "dispatch",
        "traces",
        "flops_per_step",
        "achieved_gflops",
        "pct_of_peak",
        "peak_memory_mb",
        "samples_per_s",
    ):
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


def ok_row(
    model: str = "m", mode: str = "eval", median_ms: float = 1.0, n: int = 3, steady=None, windows_agree=None, **extra
) -> CaseResult:
    extra.setdefault("measurement", Measurement(agree=windows_agree))
    return CaseResult(
        model=model, mode=mode, device="cpu", status="ok", step_time=StepTime(median_ms, 0.0, 0.1, n), warmup=Warmup(steady=steady), **extra
    )


@pytest.mark.parametrize(
    ("median_ms", "shown"),
    [
        (0.01234, "0.0123"),
        (0.5, "0.5"),
        (1.0, "1.00"),
        (9.876, "9.88"),
        (12.345, "12.3"),
        (123.45, "123"),
        (4321.5, "4322"),
        (-2.5, "-2.50"),
    ],
)
def test_step_times_show_three_significant_figures(median_ms: float, shown: str) -> None:
    assert cells(render_table([ok_row(median_ms=median_ms)]), "ms/step") == [shown]


def test_rows_sort_by_model_ignoring_case_then_mode_then_device() -> None:
    rows = [ok_row("beta", "train"), ok_row("Alpha", "train"), ok_row("alpha", "eval"), ok_row("beta", "eval")]
    rows.append(CaseResult(model="beta", mode="eval", device="cuda", status="ok"))
    table = render_table(rows)
    assert list(zip(cells(table, "model"), cells(table, "mode"), cells(table, "device"))) == [
        ("alpha", "eval", "cpu"),
        ("Alpha", "train", "cpu"),
        ("beta", "eval", "cpu"),
        ("beta", "eval", "cuda"),
        ("beta", "train", "cpu"),
    ]
    assert [r["model"] for r in json.loads(render_json(rows, {}))["results"]] == ["alpha", "Alpha", "beta", "beta", "beta"]


def test_notes_say_every_reason_to_doubt_a_row_and_an_error_comes_first() -> None:
    doubtful = ok_row(steady=False, measurement=Measurement(3, 7.4, False))
    assert cells(render_table([doubtful]), "note") == ["UNTRUSTWORTHY: warmup not steady; noisy: windows 7% apart"]
    assert cells(render_table([ok_row(steady=True, windows_agree=True)]), "note") == [""]
    assert cells(render_table([ok_row(steady=None, windows_agree=None)]), "note") == [""]
    failed = CaseResult(model="m", mode="eval", device="cpu", status="failed", error="boom", warmup=Warmup(steady=False))
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
        ok_row("a", run_id="now"),
        ok_row("b", run_id="same"),
        ok_row("c", run_id="older-torch"),
        ok_row("d", run_id="other-host"),
        CaseResult(model="e", mode="eval", device="cpu", status="failed", error="x", run_id="same"),
    )
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


def test_priced_dispatch_round_trips_and_its_doubts_show_in_the_note() -> None:
    dispatch = Dispatch(
        "mixed",
        0.3,
        1602.0,
        3.5,
        0.9,
        overhead_fraction_uncapped=0.3,
        overhead_interval=(0.17, 0.41),
        borderline=True,
        events_per_step={"call": 305.0, "nested": 1108.0, "autograd": 189.0},
        prices_us={"call_us": 0.9, "nested_us": 0.15, "autograd_us": 1.9, "call_gap_us": 0.5},
        python_us_per_step=900.0,
        scaling=Scaling(batch_sizes=(32, 64, 128, 256), step_ms=(2.0, 2.2, 2.6, 3.4), intercept_ms=1.8, fraction_upper=0.53, agrees=False),
    )
    row = CaseResult(model="sac", mode="train", device="cpu", status="ok", step_time=StepTime(5.6, 0.2, 5.4, 90), dispatch=dispatch)
    document = json.loads(render_json([row], ENVIRONMENT))
    assert document["results"][0]["dispatch"]["overhead_interval"] == [0.17, 0.41]
    assert CaseResult.from_dict(document["results"][0]) == row
    assert note(row) == "borderline: overhead 17-41%; scaling disagrees: bound 53.0%"
    assert "borderline" in repr(row)
    capped = CaseResult(
        model="eos",
        mode="eval",
        device="cpu",
        status="ok",
        step_time=StepTime(0.2, 0.01, 0.19, 9),
        dispatch=Dispatch("dispatch-bound", 1.0, 94.0, 1.3, 0.9, overhead_fraction_uncapped=1.6),
    )
    overhead = next(column for column in COLUMNS if column.header == "overhead %")
    assert overhead.cell(capped) == "160.0"  # the table shows the uncapped share


def costed(pct_of_peak: float | None, compute_limit: str | None = "arithmetic") -> CaseResult:
    costs = Costs(
        flops_per_step=10**9,
        flops_by_kind={"matmul": 10**9},
        flops_note=None,
        achieved_gflops=50.0,
        pct_of_peak=pct_of_peak,
        compute_limit=compute_limit,
        peak_memory_mb=1.0,
        state_memory_mb=None,
        memory_method="test",
        peak_rss_mb=None,
        samples_per_s=None,
    )
    return ok_row(steady=True, costs=costs)


@pytest.mark.parametrize(
    ("pct_of_peak", "compute_limit", "shown"),
    [
        (12.34, "kernels", "kernels limit it: 12.3% of peak"),
        (12.34, "arithmetic", ""),
        (100.0, "arithmetic", ""),
        (100.5, "arithmetic", "above the peak: the peak was measured under load"),
        (None, None, ""),
    ],
)
def test_notes_on_costs_say_what_limits_a_step_and_a_share_above_the_peak(pct_of_peak, compute_limit, shown) -> None:
    assert note(costed(pct_of_peak, compute_limit)) == shown
    cautions = doubts(
        summary_of_records([RunRecord("r", ENVIRONMENT, None, (costed(pct_of_peak, compute_limit),))], "s"),
        costed(pct_of_peak, compute_limit),
    )
    # The report's case section says what summary.txt's note does of a share above the peak.
    assert any("above the peak" in caution for caution in cautions) == ("above the peak" in shown)


def test_scaling_notes_where_the_verdict_changes() -> None:
    def scaled(at_50: int | None, at_20: int | None) -> CaseResult:
        scaling = Scaling(
            batch_sizes=(1, 2, 4, 8),
            step_ms=(5.5, 6.0, 7.0, 9.0),
            intercept_ms=5.0,
            fraction_upper=0.9,
            agrees=True,
            batch_at_overhead_50pct=at_50,
            batch_at_overhead_20pct=at_20,
        )
        return ok_row(dispatch=Dispatch("dispatch-bound", 0.7, 100.0, 1.0, 1.0, scaling=scaling))

    assert note(scaled(6, 30)) == "dispatch-bound below batch 6, compute-bound from batch 30"
    assert note(scaled(1, 4)) == "compute-bound from batch 4"
    assert note(scaled(None, None)) == ""
    why = "batch 2 ran in 23.9 ms, faster than batch 1's 40.3 ms: the machine's load moved between batches"
    contradicted = dataclasses.replace(scaled(None, None).dispatch.scaling, agrees=False, contradiction=why)
    row = ok_row(dispatch=Dispatch("dispatch-bound", 0.7, 100.0, 1.0, 1.0, scaling=contradicted))
    assert note(row) == f"scaling contradicts itself, not read: {why}"  # not "disagrees", and no bound
    doubted = dataclasses.replace(scaled(6, 30).dispatch.scaling, doubt="batch 2: windows 4% apart")
    row = ok_row(dispatch=Dispatch("dispatch-bound", 0.7, 100.0, 1.0, 1.0, scaling=doubted))
    assert note(row) == "scaling in doubt: batch 2: windows 4% apart; dispatch-bound below batch 6, compute-bound from batch 30"


def test_a_borderline_overhead_shows_its_interval_in_percent() -> None:
    dispatch = Dispatch("mixed", 0.7, 100.0, 1.0, 1.0, overhead_interval=(0.6, 0.9), borderline=True)
    assert note(ok_row(dispatch=dispatch)) == "borderline: overhead 60-90%"


def test_render_untrustworthy_lists_each_doubtful_ok_row_with_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    rows = [
        ok_row("few", "train", n=2),  # fewer steps than a spread needs
        ok_row("three", n=3, steady=False),  # enough steps, so the machine is to blame
        CaseResult(model="bare", mode="eval", device="cpu", status="ok", warmup=Warmup(steady=False)),  # no step time at all
        ok_row("fine", steady=True),
        CaseResult(model="broke", mode="eval", device="cpu", status="failed", error="x", warmup=Warmup(steady=False)),
    ]
    specs = {"three": "plugins.py:Three"}

    def rerun(row: CaseResult) -> str:
        return f"python diagnostics.py --models {specs.get(row.model, row.model)} --modes {row.mode}"

    assert render_untrustworthy(rows, rerun) == "\n".join(
        [
            "3 rows not to be trusted (marked UNTRUSTWORTHY in summary.txt):",
            "  few train cpu: only 2 steps measured: no spread",
            "    measure more steps: drop --steps, or give --steps 3 or more",
            "  three eval cpu: warmup not steady",
            "    rerun it on a quieter machine: python diagnostics.py --models plugins.py:Three --modes eval",
            "  bare eval cpu: warmup not steady",
            "    rerun it on a quieter machine: python diagnostics.py --models bare --modes eval",
        ]
    )
    specs.clear()
    assert render_untrustworthy(rows[1:2], rerun).splitlines() == [
        "1 row not to be trusted (marked UNTRUSTWORTHY in summary.txt):",
        "  three eval cpu: warmup not steady",
        "    rerun it on a quieter machine: python diagnostics.py --models three --modes eval",
    ]
    assert render_untrustworthy([ok_row(windows_agree=False, steady=False)], rerun).splitlines()[1] == (
        "  m eval cpu: warmup not steady; noisy: windows apart"
    )
    assert render_untrustworthy(rows[3:], rerun) == ""


def test_render_untrustworthy_fits_the_terminal_and_its_command_pastes_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "120")  # a log's width, where no terminal says its own
    row = ok_row("a_model_with_a_rather_long_name", n=3, steady=False, windows_agree=False)
    plugin = "/home/someone/projects/plugins/" + "deep/" * 12 + "models.py:Net"
    command = f"python diagnostics.py --models {plugin} --modes eval --device cpu --threads 1 --repeat 3 --out 'my results'"
    text = render_untrustworthy([row], lambda _: command)
    assert all(len(line) <= 120 for line in text.splitlines()), text
    pasted = text.split("rerun it on a quieter machine:", 1)[1].replace(" \\\n", " ")
    assert shlex.split(pasted) == shlex.split(command)


def test_a_row_that_waited_on_its_own_processes_is_told_to_use_fewer_not_a_quieter_machine() -> None:
    from torchbenchmark.results.schema import TimeSplit

    def split(other_work_pct: float) -> TimeSplit:
        return TimeSplit("schedstat", 55.0, 45.0, 0.0, 0.0, 10, 1, pressure_pct=50.0, other_work_pct=other_work_pct, cpus=2)

    own, shared = (ok_row(time_split=split(pct)) for pct in (3.0, 60.0))
    said = " ".join(render_untrustworthy([own], lambda _: "python diagnostics.py --models m").split())
    assert "the wait is on its own threads and processes give it fewer threads (--threads 1)" in said
    assert "quieter machine" not in said
    assert "rerun it on a quieter machine" in render_untrustworthy([shared], lambda _: "python diagnostics.py --models m")


def test_the_summary_json_of_a_loaded_summary_is_its_dict() -> None:
    summary = Summary("x", ENVIRONMENT, tuple(ROWS[:2]), {})
    document = json.loads(dumps(summary.to_dict()))
    assert document["environment"] == ENVIRONMENT and [r["model"] for r in document["results"]] == ["pyhpc_equation_of_state", "resnet50"]


def test_the_verdict_cell_of_a_comparison_is_blank_when_neither_side_has_one() -> None:
    verdict = next(column for column in COMPARISON_COLUMNS if column.header == "verdict")
    assert verdict.cell(CaseComparison("m", "eval", "cpu", "eager", "same", base_status="failed", new_status="failed")) == ""
    assert verdict.cell(CaseComparison("m", "eval", "cpu", "eager", "only in new", new_verdict="mixed")) == "mixed"
    assert verdict.cell(CaseComparison("m", "eval", "cpu", "eager", "fixed", new_verdict="mixed")) == "- -> mixed"
    assert verdict.cell(CaseComparison("m", "eval", "cpu", "eager", "new failure", base_verdict="mixed")) == "mixed -> -"


def test_the_html_table_escapes_text_cells_right_aligns_numbers_and_anchors_rows() -> None:
    columns = [
        Column("model <m>", lambda r: r.model, numeric=False),
        Column("ms", lambda r: "1.00"),
        Column("link", lambda r: "x", numeric=False, html=lambda r: f'<a href="#{r.model}">go</a>'),
    ]
    rows = [ok_row("a&b"), ok_row("c")]
    assert render_columns_html(columns, rows, row_id=lambda r: f"id-{r.model}") == (
        '<table class="sortable">\n<thead><tr><th scope="col">model &lt;m&gt;</th><th class="num" scope="col">ms</th>'
        '<th scope="col">link</th></tr></thead>\n<tbody>\n'
        '<tr id="id-a&amp;b"><td>a&amp;b</td><td class="num">1.00</td><td><a href="#a&b">go</a></td></tr>\n'
        '<tr id="id-c"><td>c</td><td class="num">1.00</td><td><a href="#c">go</a></td></tr>\n</tbody>\n</table>'
    )
    assert render_columns_html(columns[:1], rows[1:]).splitlines()[3] == "<tr><td>c</td></tr>"
