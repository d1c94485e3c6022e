"""The arguments every test sweep shares: a named device (on a GPU machine auto picks cuda), short budgets,
and this session's one calibration and a given peak, so no sweep pays for either again."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tests.helpers.processes import HELPERS
from torchbenchmark.api import collect_diagnostics
from torchbenchmark.results.schema import CaseResult

SHARED_ENV = "TORCHBENCHMARK_TESTS_SHARED"  # the session's shared folder (tests/conftest.py makes it)


def shared(name: str) -> Path:
    """A file of the session's shared folder: every test process, on every worker, sees the same one."""
    return Path(os.environ[SHARED_ENV]) / name


CALIBRATION = str(shared("calibration.json")) if SHARED_ENV in os.environ else ""
PRICED = ["--calibration", CALIBRATION, "--peak-gflops", "100"] if CALIBRATION else []  # the full-strength path has its own tests

TINY = f"{HELPERS / 'tiny_models.py'}:TinyMLP"  # the good model of the test sweeps: rows "tiny_mlp"
SWEEP_ARGS = ["--device", "cpu", "--steps", "5", "--no-progress", *PRICED]  # a sweep whose profiles are read
FAST = ["--device", "cpu", "--steps", "3", "--no-detailed", "--no-progress", *PRICED]  # a sweep whose rows are read


def diagnose(model: Any, mode: str = "train", **options: Any) -> CaseResult:
    """``collect_diagnostics`` with this session's prices: an in-process case pays for no calibration of its own."""
    options.setdefault("calibration", CALIBRATION or None)
    return collect_diagnostics(model, mode, **options)
