"""Plug-in models that attack the tool's outputs rather than fail: a name with terminal escapes, twins
that claim one name, and a full disk when the case's row is written."""

from __future__ import annotations

import errno
import os
from typing import Any

import torch
from torch import nn

from tests.helpers.faulty_models import Healthy, _meta

ESCAPES = "\x1b[2J\x1b]0;owned\x07"  # clear the screen, set the terminal's title


class ControlName(Healthy):
    meta = _meta(f"evil{ESCAPES}name")


class TwinA(Healthy):
    meta = _meta("twin")


class TwinB(Healthy):
    meta = _meta("twin")


def _full_disk(fd: int) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


class FullDiskAtResult(Healthy):
    """Every fsync of its process fails as on a full disk: the worker cannot write the case's row."""

    meta = _meta("full_disk_at_result")

    def build(self) -> nn.Module:
        os.fsync = _full_disk  # this case's process only
        return super().build()


class EscapesInError(Healthy):
    meta = _meta("escapes_in_error")

    def train_step(self, inputs: Any) -> None:
        raise RuntimeError(f"boom {ESCAPES} done")


class WaitsForItsOwnWrite(Healthy):
    """Each step writes a count into a tensor in place, then waits in Python until it reads it back: under the
    warm replay (``measure.replay``) the write is not made, and the wait reaches no op to check a deadline at."""

    meta = _meta("waits_for_its_own_write")
    steps = 0

    def eval_step(self, inputs: Any) -> None:
        WaitsForItsOwnWrite.steps += 1
        flag = torch.zeros(1)
        flag.copy_(torch.tensor(float(WaitsForItsOwnWrite.steps)))
        seen = flag.numpy()  # the tensor's memory, read with no op
        while seen[0] != WaitsForItsOwnWrite.steps:
            pass
        super().eval_step(inputs)
