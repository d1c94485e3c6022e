"""Plug-in specs of the test models, as a sweep takes them: ``path/to/file.py:Class``."""

from __future__ import annotations

from tests.helpers.processes import HELPERS
from torchbenchmark.run.outdir import MAX_NAME_BYTES

IMPORT_FAULTS = HELPERS / "faulty_imports"  # plug-in files that hang, crash or exit while they are imported
FRICTION = HELPERS / "friction_models.py"


def faulty(name: str) -> str:
    """A model of ``faulty_models.py``: each breaks one way a real model can."""
    return f"{HELPERS / 'faulty_models.py'}:{name}"


def hostile(name: str) -> str:
    """A model of ``hostile_models.py``: each attacks the tool's outputs rather than fails."""
    return f"{HELPERS / 'hostile_models.py'}:{name}"


def friction(name: str) -> str:
    """A model of ``friction_models.py``: what a newcomer meets (a slow case, DDP ranks that fail)."""
    return f"{FRICTION}:{name}"


# The models of faulty_models.py whose declared name cannot name a folder, and what the refusal says.
BAD_NAMES = {
    "DotDotName": "contains a path separator",
    "ParentName": "is not a folder name",
    "EscapingName": "contains a path separator",
    "AbsoluteName": "contains a path separator",
    "NulName": "contains a NUL character",
    "LongName": f"longer than {MAX_NAME_BYTES} bytes",
    "NumberName": "must be a string, got int 42",
    "EmptyName": "is empty",
}
