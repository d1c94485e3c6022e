"""Strict records (results/codec.py, and the JSON reading under it): a figure out of its range, or not a number
JSON allows, is one line naming the file, the row and the field, wherever the record is read (compare, merge,
a sweep into its folder), before anything is written."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.commands import one_line_error
from tests.helpers.folders import md5s, poison, record_of
from tests.helpers.local_sweeps import Sweeps, ok_row
from tests.helpers.sweeps import FAST
from torchbenchmark.results.schema import CaseResult, Dispatch, Samples

BAD_FIGURES = {
    "nan": ("NaN", "is NaN, not a number JSON allows"),
    "infinity": ("Infinity", "is Infinity, not a number JSON allows"),
    "minus-infinity": ("-Infinity", "is -Infinity, not a number JSON allows"),
    "overflowing": ("1e999", "must be a finite number"),
    "huge": ("1e308", "must be a finite number of magnitude at most"),
    "huge-int": ("1" + "0" * 400, "must be a finite number of magnitude at most"),
    "string": ('"12"', "must be a number, got str"),
    "bool": ("true", "must be a number, got bool"),
    "zero": ("0", "must be at least 1e-06"),
    "negative": ("-3", "must be at least 1e-06"),
    "denormal": ("1e-320", "must be at least 1e-06"),
    "too-long": ("2e9", "at most 1e+09"),
}


@pytest.mark.parametrize("case", sorted(BAD_FIGURES))
def test_a_figure_out_of_range_is_one_line_naming_file_row_and_field(sweeps: Sweeps, capsys: pytest.CaptureFixture[str], case: str) -> None:
    value, message = BAD_FIGURES[case]
    a, b = sweeps.run(sweeps.root / "a"), sweeps.run(sweeps.root / "b")
    record = record_of(a)
    poison(record, value)
    before = md5s(sweeps.root)
    assert sweeps.cli("compare", str(a), str(b)) == 2
    one_line_error(capsys.readouterr().err, str(record), "results[0] (alpha train cpu)", "step_time_ms.median", message)
    assert sweeps.cli("compare", str(b), str(record)) == 2  # the record file itself, as NEW
    one_line_error(capsys.readouterr().err, str(record), "step_time_ms.median")
    assert sweeps.cli("merge", str(a), str(b), "--out", str(sweeps.root / "merged")) == 2
    one_line_error(capsys.readouterr().err, str(record), "step_time_ms.median")
    calls = len(sweeps.calls)
    assert sweeps.cli("--models", "alpha", "--out", str(a), *FAST) == 2  # a sweep into the folder: before any case
    one_line_error(capsys.readouterr().err, str(record), "step_time_ms.median")
    assert len(sweeps.calls) == calls and md5s(sweeps.root) == before  # nothing run, nothing written, no lock


@pytest.mark.parametrize(
    "field, value, message",
    [
        ('"overhead_fraction": ', "1.5", "dispatch.overhead_fraction must be at least 0 and at most 1"),
        ('"process_medians_ms": [', "NaN", "samples.process_medians_ms[0] is NaN"),
        ('"iqr": ', "-1", "step_time_ms.iqr must be at least 0"),
        ('"n": ', "0.5", "step_time_ms.n must be a whole number"),
    ],
    ids=["share-above-one", "nan-sample", "negative-iqr", "fractional-count"],
)
def test_other_figures_are_held_to_their_ranges(
    sweeps: Sweeps, capsys: pytest.CaptureFixture[str], field: str, value: str, message: str
) -> None:
    def with_verdict(spec: Any, name: str, out_dir: Path, on_phase: Any = None) -> CaseResult:
        row = ok_row(spec, name, out_dir)
        return dataclasses.replace(row, dispatch=Dispatch("mixed", 0.3, 10.0, 5.0, 2.0), samples=Samples((2.0,), ((2.0, 2.1),)))

    sweeps.run_case(with_verdict)
    a, b = sweeps.run(sweeps.root / "a"), sweeps.run(sweeps.root / "b")
    poison(record_of(a), value, field)
    assert sweeps.cli("compare", str(a), str(b)) == 2
    one_line_error(capsys.readouterr().err, "results[0] (alpha train cpu)", message)
