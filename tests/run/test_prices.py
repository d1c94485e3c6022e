"""Per-event prices kept in a file (``--calibration``): read where the file holds this machine's, else measured,
and written only where no file was, once the case's last moment is timed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tests.helpers.pricing import PRICES
from torchbenchmark.analyze.pricing import Calibration
from torchbenchmark.measure import calibration as calibrating
from torchbenchmark.run.prices import CasePrices

CPU = torch.device("cpu")
MEASURED = Calibration(repeats=(PRICES,))


class Timed:
    """``Calibrating``'s stand-in: each moment adds a repeat of ``PRICES``; ``made`` counts the calibrations begun."""

    made = 0

    def __init__(self, device: torch.device) -> None:
        Timed.made += 1
        self.repeats: list = []

    def moment(self) -> None:
        self.repeats.append(PRICES)

    @property
    def calibration(self) -> Calibration:
        return Calibration(tuple(self.repeats))


@pytest.fixture(autouse=True)
def timed(monkeypatch: pytest.MonkeyPatch) -> None:
    Timed.made = 0
    monkeypatch.setattr(calibrating, "Calibrating", Timed)


def taken(path: Path | None) -> tuple[Calibration, str]:
    """A case's prices taken at one moment, as a DDP rank takes them."""
    return CasePrices(CPU, None if path is None else str(path)).taken()


def test_no_file_named_measures_and_writes_nothing(tmp_path: Path) -> None:
    assert taken(None) == (MEASURED, "measured")
    assert Timed.made == 1 and list(tmp_path.iterdir()) == []


def test_a_file_is_written_once_then_read_by_every_later_case(tmp_path: Path) -> None:
    path = tmp_path / "prices" / "calibration.json"
    assert taken(path) == (MEASURED, f"measured and written to {path}") and path.is_file()
    assert taken(path) == (MEASURED, f"read from {path}") and Timed.made == 1
    assert [p.name for p in path.parent.iterdir()] == ["calibration.json"]  # no temporary file left beside it


def test_a_cases_prices_are_kept_once_every_moment_is_timed_and_a_case_that_reads_them_times_nothing(tmp_path: Path) -> None:
    path = tmp_path / "calibration.json"
    first = CasePrices(CPU, str(path))
    first.moment()
    first.moment()
    assert not path.exists()  # nothing kept before the case's last moment
    assert first.taken() == (Calibration((PRICES,) * 3), f"measured and written to {path}")
    again = CasePrices(CPU, str(path))
    again.moment()
    assert again.taken() == (Calibration((PRICES,) * 3), f"read from {path}") and Timed.made == 1


def test_a_file_of_another_machine_or_torch_is_left_alone_and_the_case_calibrates(tmp_path: Path) -> None:
    path = tmp_path / "calibration.json"
    taken(path)
    kept = json.loads(path.read_text())
    for field, other in (("machine", "elsewhere (Other CPU)"), ("torch", "1.0"), ("device", "cuda:0")):
        path.write_text(json.dumps({**kept, field: other}))
        before = path.read_text()
        calibration, source = taken(path)
        assert calibration == MEASURED and source.startswith(f"measured: {path} holds the prices of ") and other in source
        assert path.read_text() == before
    assert Timed.made == 4


def test_a_file_that_cannot_be_read_is_said_and_left_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "calibration.json"
    for text in ("not json", '{"machine": 1}', "[]"):
        path.write_text(text)
        calibration, source = taken(path)
        assert calibration == MEASURED and source.startswith(f"measured: {path} could not be read (")
        assert path.read_text() == text


def test_a_file_where_none_can_be_written_costs_the_case_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("the user's\n")
    calibration, source = taken(blocker / "calibration.json")
    assert calibration == MEASURED and source.startswith(f"measured: {blocker / 'calibration.json'} could not be written (")
    assert blocker.read_text() == "the user's\n"
