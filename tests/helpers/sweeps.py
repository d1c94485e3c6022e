"""The arguments every test sweep shares: a named device (on a GPU machine auto picks cuda) and short budgets."""

from __future__ import annotations

from tests.helpers.processes import HELPERS

TINY = f"{HELPERS / 'tiny_models.py'}:TinyMLP"  # the good model of the test sweeps: rows "tiny_mlp"
SWEEP_ARGS = ["--device", "cpu", "--steps", "5", "--no-progress"]  # a sweep whose profiles are read
FAST = ["--device", "cpu", "--steps", "3", "--no-detailed", "--no-progress"]  # a sweep whose rows are read
