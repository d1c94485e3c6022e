"""Untrustworthy rows: each reason, the marks on repr, summary.txt and the closing lines, and a jittery sweep."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.stand_ins import machinery
from torchbenchmark.report.summary import LEGEND, note, render_text, render_untrustworthy
from torchbenchmark.results.records import Summary
from torchbenchmark.results.schema import (
    MIN_STEPS_FOR_SPREAD,
    UNTRUSTWORTHY_IQR_FRACTION,
    CaseResult,
    CompileReport,
    Dispatch,
    Measurement,
    Samples,
    StepTime,
    TimeSplit,
    Verdict,
    Warmup,
    format_ms,
)
from torchbenchmark.run.sweep import SweepOptions, run_sweep

ROOT = Path(__file__).resolve().parents[2]
JITTERY = f"{ROOT / 'tests' / 'helpers' / 'jittery_model.py'}:Jittery"


def row(
    median_ms: float = 100.0,
    iqr_ms: float = 1.0,
    n: int = 20,
    steady: bool = True,
    windows_agree: bool = True,
    window_diff_pct: float | None = None,
) -> CaseResult:
    return CaseResult(
        model="m",
        mode="train",
        device="cpu",
        status="ok",
        batch_size=8,
        step_time=StepTime(median_ms, iqr_ms, median_ms, n),
        warmup=Warmup(steady=steady),
        measurement=Measurement(diff_pct=window_diff_pct, agree=windows_agree),
    )


def rerun(result: CaseResult) -> str:
    spec = {"m": "mine.py:M"}.get(result.model, result.model)
    return f"python diagnostics.py --models {spec} --modes {result.mode}"


def test_a_steady_row_is_trusted() -> None:
    assert row().untrustworthy_reasons == ()
    assert "UNTRUSTWORTHY" not in repr(row()) and note(row()) == ""


@pytest.mark.parametrize(
    ("result", "reason"),
    [
        (row(median_ms=2913, iqr_ms=4900), "IQR 168% of the median"),
        (row(iqr_ms=100 * UNTRUSTWORTHY_IQR_FRACTION + 1), "IQR 26% of the median"),
        (row(n=1, iqr_ms=0), "only 1 step measured: no spread"),
        (row(n=MIN_STEPS_FOR_SPREAD - 1), f"only {MIN_STEPS_FOR_SPREAD - 1} steps measured"),
        (row(steady=False), "warmup not steady"),
        (row(windows_agree=False, window_diff_pct=94.0), "noisy: windows 94% apart"),
    ],
)
def test_each_reason_marks_the_row_everywhere(result: CaseResult, reason: str) -> None:
    assert any(r.startswith(reason) for r in result.untrustworthy_reasons)
    assert f"UNTRUSTWORTHY: {reason}" in repr(result)
    assert note(result).startswith("UNTRUSTWORTHY: ") and reason in note(result)
    closing = render_untrustworthy([result], rerun)
    assert closing.startswith("1 row not to be trusted") and reason in closing


def test_iqr_at_the_threshold_is_trusted() -> None:
    assert row(iqr_ms=100 * UNTRUSTWORTHY_IQR_FRACTION).untrustworthy_reasons == ()


def test_figures_carry_units_and_no_scientific_notation() -> None:
    text = repr(row(median_ms=2913.4, iqr_ms=4900.2))
    assert "2913 ms/step (IQR 4900 ms)" in text
    assert not re.search(r"\de[+-]\d", text)
    assert [format_ms(v) for v in (0.000012, 0.0031, 12.5, 812.345, 4900.2)] == ["0.000012", "0.0031", "12.5", "812", "4900"]


def test_closing_lines_say_what_to_do() -> None:
    noisy = row(median_ms=10, iqr_ms=9)
    short = CaseResult(model="s", mode="eval", device="cpu", status="ok", step_time=StepTime(5, 0, 5, 1))
    failed = CaseResult(model="f", mode="eval", device="cpu", status="failed", error="boom")
    text = render_untrustworthy([noisy, short, failed], rerun)
    assert text.startswith("2 rows not to be trusted")
    assert "python diagnostics.py --models mine.py:M --modes train" in text
    assert f"give --steps {MIN_STEPS_FOR_SPREAD} or more" in text
    assert "f eval" not in text
    assert render_untrustworthy([row(), failed], rerun) == ""


def test_summary_legend_explains_every_puzzling_column() -> None:
    for words in (
        "n            steps measured",
        "blank for a",
        "op µs: median duration",
        "A negative percentage",
        "dispatch-bound at 50%",
        "compute-bound under 20%",
        "25% of the median",
        "UNTRUSTWORTHY",
    ):
        assert words in LEGEND
    text = render_text(Summary("", {}, (row(),), {}))
    assert "this run: 1 case (1 ok)" in text and LEGEND in text
    assert "this run: 2 cases" in render_text(Summary("", {}, (row(), row()), {}))


@pytest.mark.slow
def test_a_jittery_model_is_marked_on_the_progress_line_in_the_summary_and_at_the_end(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "diagnostics.py"),
            "--models",
            JITTERY,
            "--modes",
            "train",
            "--steps",
            "12",
            "--no-detailed",
            "--no-progress",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    case_line = next(line for line in re.split(r"\n(?! )", done.stderr) if line.startswith("[1/1] jittery train cpu"))
    progress = " ".join(case_line.split())  # one line, wrapped at the terminal's width
    (record,) = json.loads((tmp_path / "summary.json").read_text())["results"]
    reasons, kept = record["untrustworthy_reasons"], record["time_split"]
    summary_row = next(line for line in (tmp_path / "summary.txt").read_text().splitlines() if line.startswith("jittery"))
    # One step in three sleeps 20 ms: the spread marks the row, or, where other work stretches every step so
    # far that the sleeps no longer spread them, its threads' wait does. Beside other work a step that slept waits
    # for a CPU as it wakes, so the steps left out can be every slow one (beside two CPU hogs: 9 of 12 left out,
    # the 3 kept 4% apart): the spread is then that of every step less its wait.
    assert any(reason.startswith(("IQR", "contended")) for reason in reasons), (reasons, kept)
    count = f" ({len(reasons)})" if len(reasons) > 1 else ""
    assert "ms/step" in progress and f"UNTRUSTWORTHY{count}: {reasons[0][:12]}" in progress, progress  # the first mark
    assert not re.search(r"\de[+-]\d", done.stderr)
    assert "1 row not to be trusted" in done.stderr and "rerun it on a quieter machine" in done.stderr
    assert f"UNTRUSTWORTHY: {reasons[0][:12]}" in summary_row


def split(
    waiting_pct: float = 0.0, kept: int = 20, other_work_pct: float | None = 60.0, profiled_waiting_pct: float | None = None
) -> TimeSplit:
    """What the kernel saw of 20 measured (and 5 profiled) steps, on a machine whose other work took ``other_work_pct``."""
    return TimeSplit(
        method="schedstat",
        on_cpu_pct=100.0 - waiting_pct,
        waiting_pct=waiting_pct,
        blocked_pct=0.0,
        others_waiting_pct=0.0,
        steps_measured=20,
        steps_kept=kept,
        pressure_pct=30.0,
        other_work_pct=other_work_pct,
        profiled_waiting_pct=profiled_waiting_pct,
        profiled_steps_kept=None if profiled_waiting_pct is None else 0,
        profiled_steps=None if profiled_waiting_pct is None else 5,
    )


def test_other_work_beside_a_case_whose_threads_did_not_wait_and_whose_steps_agree_is_no_mark() -> None:
    """Beside two CPU hogs at one thread: a CPU to spare, every step clean and tight. Information, not a mark."""
    shared = dataclasses.replace(row(), time_split=split(other_work_pct=68.0))
    assert shared.untrustworthy_reasons == () and "UNTRUSTWORTHY" not in repr(shared)
    assert shared.time_split.shared and CaseResult.from_dict(shared.to_dict()).time_split.other_work_pct == 68.0  # kept, shown


@pytest.mark.parametrize(
    ("time_split", "reason"),
    [
        (split(waiting_pct=45.0, kept=2), "contended: its threads waited 45% of the step for a CPU (machine CPU pressure 30%)"),
        (split(waiting_pct=45.0, kept=2, other_work_pct=None), "contended: its threads waited 45% of the step"),
        (split(profiled_waiting_pct=50.0), "contended while profiled: its threads waited 50% of the profiled step for a CPU"),
        (
            split(waiting_pct=150.0, kept=2),  # two threads waiting at once: their waits add up past the step
            "contended: its threads waited 150% of the step for a CPU, summed over its threads (machine CPU pressure 30%)",
        ),
    ],
)
def test_a_case_whose_own_threads_waited_for_a_cpu_is_still_marked_contended(time_split: TimeSplit, reason: str) -> None:
    marked = dataclasses.replace(row(), time_split=time_split)
    assert any(r.startswith(reason) for r in marked.untrustworthy_reasons), marked.untrustworthy_reasons


def test_steps_that_spread_or_processes_that_disagree_mark_a_row_beside_other_work() -> None:
    spread = dataclasses.replace(row(iqr_ms=30.0), time_split=split())
    assert spread.untrustworthy_reasons == ("IQR 30% of the median",)
    apart = dataclasses.replace(row(), samples=Samples((100.0, 130.0, 95.0)), time_split=split())
    assert apart.untrustworthy_reasons == ("noisy: processes 35% apart",)


def test_steps_left_out_that_spread_once_their_waits_are_taken_off_mark_a_row_whose_kept_steps_agree() -> None:
    """A long step is likelier to wait than a short one, so the kept steps can be a jittery model's short ones alone:
    their own IQR then shows nothing of its spread."""
    lean = dataclasses.replace(row(), time_split=dataclasses.replace(split(kept=5), unwaited_iqr_pct=12400.0))
    assert lean.untrustworthy_reasons == ("IQR 12400% of the median counting the 15 steps left out, their waits taken off",)
    assert CaseResult.from_dict(lean.to_dict()).untrustworthy_reasons == lean.untrustworthy_reasons
    alike = dataclasses.replace(row(), time_split=dataclasses.replace(split(kept=5), unwaited_iqr_pct=20.0))
    assert alike.untrustworthy_reasons == ()
    both = dataclasses.replace(row(iqr_ms=30.0), time_split=dataclasses.replace(split(kept=5), unwaited_iqr_pct=12400.0))
    assert both.untrustworthy_reasons == ("IQR 30% of the median",)  # the spread is said once
    agree = dataclasses.replace(row(), samples=Samples((100.0, 102.0, 99.0)), time_split=split())
    assert agree.untrustworthy_reasons == ()


def test_a_row_whose_calibration_repeats_spread_was_priced_under_load() -> None:
    """Its prices, not its steps, went through a spell of load: the estimate rests on them."""
    verdict = Dispatch(verdict=Verdict.MIXED, overhead_fraction=0.3, ops_per_step=10.0, median_op_us=5.0, per_op_overhead_us=0.85)
    quiet, loaded = (dataclasses.replace(row(), dispatch=dataclasses.replace(verdict, calibration_spread_pct=pct)) for pct in (1.5, 18.0))
    assert quiet.untrustworthy_reasons == () and dataclasses.replace(row(), dispatch=verdict).untrustworthy_reasons == ()
    assert loaded.untrustworthy_reasons == ("prices read under load: the calibration's median 18% above its least repeat",)


def test_a_row_whose_replayed_gap_lies_far_above_its_real_steps_gap_is_marked() -> None:
    """Quiet, the replayed gap lies at most some 30% above the real steps' (the replay's own Python, where the glue
    runs warm anyway); far above, one reading is off, and the estimate, which takes the lesser, may rest on a real
    gap read low."""
    verdict = Dispatch(verdict=Verdict.MIXED, overhead_fraction=0.3, ops_per_step=10.0, median_op_us=5.0, per_op_overhead_us=0.85)

    def gaps(warm: float | None, real: float | None) -> CaseResult:
        return dataclasses.replace(row(), dispatch=dataclasses.replace(verdict, warm_gap_us=warm, real_gap_us=real))

    assert gaps(39.9, 24.6).untrustworthy_reasons == ("gaps read apart: the replayed step's 62% above the real steps'",)
    # A real gap read as nil (a step's glue cut short, a wait taken out that was no sleep) is no reason to trust it.
    assert gaps(3637.0, 0.0).untrustworthy_reasons == ("gaps read apart: the replayed step's 36370% above the real steps'",)
    for warm, real in ((287.6, 264.6), (511.2, 393.8), (160.5, 553.4), (None, 24.6), (39.9, None), (4.9, 0.0)):
        assert gaps(warm, real).untrustworthy_reasons == (), (warm, real)


def test_a_row_whose_rnn_layer_was_priced_at_nil_had_its_rnn_prices_read_under_load() -> None:
    """An RNN layer's set-up and time step each cost something, so a nil price for a part the row ran is a line
    through two loops that timed alike: at two threads beside another test worker, one turn of them priced
    lstm's time steps at 0, and another its set-up."""
    verdict = Dispatch(verdict=Verdict.MIXED, overhead_fraction=0.3, ops_per_step=10.0, median_op_us=5.0, per_op_overhead_us=0.85)

    def priced(events: dict[str, float], prices: dict[str, float]) -> CaseResult:
        return dataclasses.replace(row(), dispatch=dataclasses.replace(verdict, events_per_step=events, prices_us=prices))

    eval_events = {"rnn": 2.0, "rnn_step": 70.0, "rnn_backward": 0.0, "rnn_backward_step": 0.0}
    eval_prices = {"rnn_us": 40.0, "rnn_step_us": 0.3, "rnn_backward_us": 0.0, "rnn_backward_step_us": 0.0}
    assert priced(eval_events, eval_prices).untrustworthy_reasons == ()  # no backward ran: its nil prices are no mark
    assert priced(eval_events, {**eval_prices, "rnn_step_us": 0.0}).untrustworthy_reasons == (
        "RNN prices read under load: its time steps priced at nil",
    )
    assert priced(eval_events, {**eval_prices, "rnn_us": 0.0, "rnn_step_us": 0.0}).untrustworthy_reasons == (
        "RNN prices read under load: its set-up and time steps priced at nil",
    )
    train = priced({**eval_events, "rnn_backward": 2.0, "rnn_backward_step": 70.0}, {**eval_prices, "rnn_backward_step_us": 0.9})
    assert train.untrustworthy_reasons == ("RNN prices read under load: its set-up priced at nil",)


def test_enough_clean_steps_keep_a_row_unmarked_however_long_the_others_waited() -> None:
    """The stretched steps are left out of the step time: what is left did not wait."""
    assert dataclasses.replace(row(), time_split=split(waiting_pct=45.0, kept=18)).untrustworthy_reasons == ()


def test_a_marked_row_carries_its_reasons_in_the_summary_json_the_run_record_and_summary_txt(tmp_path: Path) -> None:
    def marked(spec: Any, name: str, out_dir: Path, on_phase: Any = None) -> CaseResult:
        return CaseResult(name, spec.mode, "cpu", "ok", batch_size=2, step_time=StepTime(1.0, 0.5, 0.9, 40), warmup=Warmup(3, False))

    run_sweep(["alexnet"], ["eval"], SweepOptions(out_dir=tmp_path, progress=False), machinery(marked))
    reasons = ["warmup not steady", "IQR 50% of the median"]
    (row,) = json.loads((tmp_path / "summary.json").read_text())["results"]
    (record,) = [json.loads(path.read_text()) for path in (tmp_path / "runs").glob("*.json")]
    assert row["untrustworthy_reasons"] == record["results"][0]["untrustworthy_reasons"] == reasons
    assert "UNTRUSTWORTHY: " + "; ".join(reasons) in (tmp_path / "summary.txt").read_text()
    clean = CaseResult("m", "eval", "cpu", "ok", step_time=StepTime(1.0, 0.01, 0.99, 40)).to_dict()
    assert clean["untrustworthy_reasons"] == []
    forged = CaseResult.from_dict({**clean, "untrustworthy_reasons": ["forged"]})  # read back, they are the row's own
    assert forged.untrustworthy_reasons == () and "untrustworthy_reasons" not in forged.extra


def test_a_compiled_row_that_compiled_nothing_says_it_ran_eager() -> None:
    report = CompileReport("inductor", "default", 1.5, 0, 0, (), 0, (0.67,))
    fell_back = dataclasses.replace(row(), variant="inductor", compile=report, speedup_vs_eager=0.67)
    assert fell_back.headline().endswith("0.67x eager (nothing compiled: it ran eager)")
    compiled = dataclasses.replace(fell_back, compile=dataclasses.replace(report, graphs=1))
    assert compiled.headline().endswith("0.67x eager")
