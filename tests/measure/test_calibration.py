"""Per-event prices kept in a file (``--calibration``): read where the file holds this machine's, else measured,
and written only where no file was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tests.helpers.pricing import PRICES
from torchbenchmark.analyze.pricing import Calibration
from torchbenchmark.measure import calibration as calibrating
from torchbenchmark.measure.calibration import CasePrices, calibration_for

CPU = torch.device("cpu")
MEASURED = Calibration(repeats=(PRICES,))


class Measure:
    """A calibration's stand-in that counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, device: torch.device) -> Calibration:
        self.calls += 1
        return MEASURED


def test_no_file_named_measures_and_writes_nothing(tmp_path: Path) -> None:
    measure = Measure()
    assert calibration_for(CPU, None, measure) == (MEASURED, "measured")
    assert measure.calls == 1 and list(tmp_path.iterdir()) == []


def test_a_file_is_written_once_then_read_by_every_later_case(tmp_path: Path) -> None:
    path, measure = tmp_path / "prices" / "calibration.json", Measure()
    first = calibration_for(CPU, str(path), measure)
    assert first == (MEASURED, f"measured and written to {path}") and path.is_file()
    again = calibration_for(CPU, str(path), measure)
    assert again == (MEASURED, f"read from {path}") and measure.calls == 1
    assert [p.name for p in path.parent.iterdir()] == ["calibration.json"]  # no temporary file left beside it


def test_a_file_of_another_machine_or_torch_is_left_alone_and_the_case_calibrates(tmp_path: Path) -> None:
    path, measure = tmp_path / "calibration.json", Measure()
    calibration_for(CPU, str(path), measure)
    kept = json.loads(path.read_text())
    for field, other in (("machine", "elsewhere (Other CPU)"), ("torch", "1.0"), ("device", "cuda:0")):
        path.write_text(json.dumps({**kept, field: other}))
        before = path.read_text()
        calibration, source = calibration_for(CPU, str(path), measure)
        assert calibration == MEASURED and source.startswith(f"measured: {path} holds the prices of ") and other in source
        assert path.read_text() == before
    assert measure.calls == 4


def test_a_file_that_cannot_be_read_is_said_and_left_as_it_was(tmp_path: Path) -> None:
    path, measure = tmp_path / "calibration.json", Measure()
    for text in ("not json", '{"machine": 1}', "[]"):
        path.write_text(text)
        calibration, source = calibration_for(CPU, str(path), measure)
        assert calibration == MEASURED and source.startswith(f"measured: {path} could not be read (")
        assert path.read_text() == text


def test_a_file_where_none_can_be_written_costs_the_case_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("the user's\n")
    calibration, source = calibration_for(CPU, str(blocker / "calibration.json"), Measure())
    assert calibration == MEASURED and source.startswith(f"measured: {blocker / 'calibration.json'} could not be written (")
    assert blocker.read_text() == "the user's\n"


class Timed:
    """``Calibrating``'s stand-in: each moment adds one repeat, ``PRICES`` with the moment's call price."""

    made = 0

    def __init__(self, device: torch.device) -> None:
        Timed.made += 1
        self.repeats: list = []

    def moment(self) -> None:
        self.repeats.append(PRICES)

    @property
    def calibration(self) -> Calibration:
        return Calibration(tuple(self.repeats))


def test_a_cases_prices_are_kept_once_every_moment_is_timed_and_a_case_that_reads_them_times_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(calibrating, "Calibrating", Timed)
    path = tmp_path / "calibration.json"
    first = CasePrices(CPU, str(path))
    first.moment()
    first.moment()
    assert not path.exists()  # nothing kept before the case's last moment
    assert first.taken() == (Calibration((PRICES,) * 3), f"measured and written to {path}")
    Timed.made = 0
    again = CasePrices(CPU, str(path))
    again.moment()
    assert again.taken() == (Calibration((PRICES,) * 3), f"read from {path}") and Timed.made == 0
