"""Untrustworthy rows: each reason, the marks on repr, summary.txt and the closing lines, and a jittery sweep."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from torchbenchmark.report.summary import LEGEND, note, render_text, render_untrustworthy
from torchbenchmark.results.records import Summary
from torchbenchmark.results.schema import (
    MIN_STEPS_FOR_SPREAD,
    UNTRUSTWORTHY_IQR_FRACTION,
    CaseResult,
    Measurement,
    StepTime,
    Warmup,
    format_ms,
)

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
    progress = next(line for line in done.stderr.splitlines() if line.startswith("[1/1] jittery train cpu"))
    assert "ms/step (IQR" in progress and "UNTRUSTWORTHY: IQR" in progress, progress
    assert not re.search(r"\de[+-]\d", done.stderr)
    assert "1 row not to be trusted" in done.stderr and "rerun it on a quieter machine" in done.stderr
    summary_row = next(line for line in (tmp_path / "summary.txt").read_text().splitlines() if line.startswith("jittery"))
    assert "UNTRUSTWORTHY: IQR" in summary_row
