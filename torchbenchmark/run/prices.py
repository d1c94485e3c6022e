"""A case's prices: timed at its moments, or read from a file that keeps one machine's (``--calibration FILE``).

Prices are a property of the machine, not of a model: cases of one sweep, or two sweeps a gate compares,
can share one set, which takes the calibration's second out of every case and its noise out of a comparison.
A file of another machine or torch, or one that cannot be read, is left as it is and the case calibrates.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from pathlib import Path

import torch

from torchbenchmark.analyze.pricing import Calibration
from torchbenchmark.measure import calibration as calibrating
from torchbenchmark.measure.environment import machine_name
from torchbenchmark.results.codec import SchemaError, decode_object, encode
from torchbenchmark.results.files import PARTIAL_SUFFIX, StorageError, dumps, load_json, write_atomic


class CasePrices:
    """A case's prices: read from ``path`` (``--calibration``) where it holds this machine's (``kept_calibration``),
    else timed now and at each later ``moment()``, and kept there once ``taken()`` (``keep``). A single case takes
    three moments (``run.engine``); a DDP rank 0 one, before its group forms."""

    def __init__(self, device: torch.device, path: str | None) -> None:
        self.device, self.path = device, path
        self.kept, self.why = kept_calibration(device, path)
        self.calibrating = None if self.kept is not None else calibrating.Calibrating(device)
        self.moment()

    def moment(self) -> None:
        if self.calibrating is not None:
            self.calibrating.moment()

    def taken(self) -> tuple[Calibration, str]:
        """The prices and where they came from."""
        if self.calibrating is None:
            assert self.kept is not None and self.why is not None
            return self.kept, self.why
        calibration = self.calibrating.calibration
        return calibration, keep(self.device, calibration, self.path, self.why)


@dataclasses.dataclass(frozen=True)
class Kept:
    """A calibration kept in a file (``--calibration FILE``): the prices and what they were measured on."""

    machine: str  # host and processor: prices of another machine are not this one's
    device: str
    torch: str
    calibration: Calibration


def kept_calibration(device: torch.device, path: str | None) -> tuple[Calibration | None, str | None]:
    """The prices kept at ``path`` where it holds this machine's, device's and torch's, and where they came from;
    else None and why the case measures its own (None: there is no file, and the case's prices are to be kept)."""
    if not path:
        return None, "measured"
    file = Path(path)
    if not (file.exists() or file.is_symlink()):
        return None, None
    try:
        kept = decode_object(Kept, load_json(file))
    except (StorageError, SchemaError) as error:
        return None, f"measured: {file} could not be read ({error})"
    if (kept.machine, kept.device, kept.torch) == _wanted(device):
        return kept.calibration, f"read from {file}"
    return None, f"measured: {file} holds the prices of {kept.machine}, {kept.device}, torch {kept.torch}"


def keep(device: torch.device, calibration: Calibration, path: str | None, why: str | None) -> str:
    """Where ``calibration``, measured on ``device``, came from: written to ``path`` where ``kept_calibration`` found no file
    (``why`` None), else ``why`` it was measured."""
    if why is not None or not path:
        return why or "measured"
    file = Path(path)
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):  # another case of the sweep wrote it first: theirs stands
            _write_new(file, dumps(encode(Kept(*_wanted(device), calibration))))
    except OSError as error:
        return f"measured: {file} could not be written ({error.strerror or error})"
    return f"measured and written to {file}"


def _wanted(device: torch.device) -> tuple[str, str, str]:
    """What a kept calibration must have been measured on to be this case's: the machine, the device and torch."""
    return machine_name(), str(device), torch.__version__


def _write_new(path: Path, text: str) -> None:
    """``text`` at ``path`` unless a file is there already (FileExistsError): a user's file is never replaced."""
    staged = path.with_name(f".{path.name}.{os.getpid()}{PARTIAL_SUFFIX}")
    write_atomic(staged, text)
    try:
        os.link(staged, path)  # fails where a file exists: unlike a rename, it never replaces one
    finally:
        staged.unlink(missing_ok=True)
