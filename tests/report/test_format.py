"""Names and text from a model never drive the terminal (report/format.py): printed with their control
characters escaped, by the sweep's lines and bar, compare and summary.txt, and kept as they were in JSON."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import hostile_models
from tests.helpers.local_sweeps import Sweeps, ok_row
from torchbenchmark.results.schema import CaseResult, Status


def test_text_from_a_model_is_printed_with_its_control_characters_escaped(sweeps: Sweeps, capsys: pytest.CaptureFixture[str]) -> None:
    def raises(spec: Any, name: str, out_dir: Path, on_phase: Any = None) -> CaseResult:
        if on_phase is not None:
            on_phase(f"phase {hostile_models.ESCAPES}", 1.0)
        row = ok_row(spec, name, out_dir)
        if name == "escapes":
            return dataclasses.replace(row, status=Status.FAILED, step_time=None, error=f"RuntimeError: boom {hostile_models.ESCAPES}")
        return row

    sweeps.run_case(raises)
    a = sweeps.root / "a"
    for progress in ([], ["--no-progress"]):
        assert sweeps.cli("--models", "alpha,escapes", "--out", str(a), "--device", "cpu", *progress) == 1
        shown = capsys.readouterr()
        assert "\x1b" not in shown.err + shown.out and "\x07" not in shown.err + shown.out
        assert "\\x1b[2J\\x1b]0;owned\\x07" in shown.err
    assert sweeps.cli("compare", str(a), str(a)) in (0, 3)
    shown = capsys.readouterr()
    assert "\x1b" not in shown.out + shown.err
    assert "\x1b" not in (a / "summary.txt").read_text()
    rows = {row["model"]: row for row in json.loads((a / "summary.json").read_text())["results"]}
    assert rows["escapes"]["error"] == f"RuntimeError: boom {hostile_models.ESCAPES}"  # kept as it was, in JSON


def test_format_and_separator_characters_are_escaped_and_a_line_is_never_split() -> None:
    from torchbenchmark.report.format import escape_controls

    name = "gpt\u202e2\u200b\u2028x"  # a right-to-left override, a zero-width space, a line separator
    assert escape_controls(name) == "gpt\\u202e2\\u200b\\u2028x"
    forged = "most in layer\n[2/2] forged ok"  # a module path with a newline in it
    assert escape_controls(forged, one_line=True) == "most in layer\\x0a[2/2] forged ok"
    assert escape_controls("two\nlines\ttabbed") == "two\nlines\ttabbed"  # a document keeps its lines
    assert escape_controls("naïve — ünïcode µs") == "naïve — ünïcode µs"  # letters and symbols pass


def test_a_case_line_holding_a_newline_stays_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from torchbenchmark.run.progress import Progress

    progress = Progress(total=1, enabled=False)
    progress.start("m eval cpu")
    progress.finish("m eval cpu: 1 ms/step, most in layer\n[2/2] forged ok")
    err = capsys.readouterr().err
    assert err == "[1/1] m eval cpu: 1 ms/step, most in layer\\x0a[2/2] forged ok\n"
