"""Fault-injection plug-in models for the reliability tests: each breaks one way a real model can.

Used as file plug-ins (``--models tests/helpers/faulty_models.py:Aborts``), so each runs in the sweep's own
worker process. The hanging models record their process ids in ``$FAULTY_MODELS_PID_DIR`` so a test
can check that the sweep killed them.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

from torchbenchmark.contract import BatchSizes, BenchmarkModel, ModelMeta

PID_DIR_ENV = "FAULTY_MODELS_PID_DIR"
MISSING_PACKAGE = "torchbenchmark_test_no_such_package"


def _meta(name: str, **extra: Any) -> ModelMeta:
    return ModelMeta(name=name, family="test", batch_sizes=BatchSizes.same(cpu=2, cuda=2), **extra)


class Healthy(BenchmarkModel):
    """A model that keeps the contract; the faulty ones below differ from it in one place."""

    meta = _meta("healthy")

    def build(self) -> nn.Module:
        return nn.Linear(4, 2)

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> Any:
        return torch.randn(batch_size, 4, generator=generator)

    def loss(self, inputs: Any) -> torch.Tensor:
        return self.module(inputs).square().mean()


class RaisesInBuild(Healthy):
    meta = _meta("raises_in_build")

    def build(self) -> nn.Module:
        raise RuntimeError("injected fault in build")


class RaisesInTrain(Healthy):
    meta = _meta("raises_in_train")

    def train_step(self, inputs: Any) -> None:
        raise RuntimeError("injected fault in train")


class RaisesInEval(Healthy):
    meta = _meta("raises_in_eval")

    def eval_step(self, inputs: Any) -> None:
        raise RuntimeError("injected fault in eval")


class EvalNotImplemented(Healthy):
    meta = _meta("eval_not_implemented")

    def eval(self, niter: int = 1, step_fn: Any = None) -> None:
        raise NotImplementedError("this model has no inference mode")


class OutOfMemory(Healthy):
    """A real MemoryError: no machine can allocate 4 EiB, and asking costs nothing."""

    meta = _meta("out_of_memory")

    def train_step(self, inputs: Any) -> None:
        bytearray(1 << 62)


class MissingDependency(Healthy):
    """Needs a package that is not installed, imported at build time as optional dependencies are."""

    meta = _meta("missing_dependency", requires=(MISSING_PACKAGE,))

    def build(self) -> nn.Module:
        __import__(MISSING_PACKAGE)
        return super().build()


class Aborts(Healthy):
    meta = _meta("aborts")

    def build(self) -> nn.Module:
        os.abort()


class Segfaults(Healthy):
    meta = _meta("segfaults")

    def build(self) -> nn.Module:
        ctypes.string_at(0)  # reads address 0: a real SIGSEGV
        raise AssertionError("unreachable")


class AbortsLeavingChild(Healthy):
    """Starts a child process, then crashes: the child must not outlive the case."""

    meta = _meta("aborts_leaving_child")

    def build(self) -> nn.Module:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        _record_pids(self.meta.name, [child.pid])
        os.abort()


class KillsItself(Healthy):
    """Dies by SIGKILL, as a process does when the kernel's out-of-memory killer picks it."""

    meta = _meta("kills_itself")

    def build(self) -> nn.Module:
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable")


def _record_pids(name: str, pids: list[int]) -> None:
    folder = os.environ.get(PID_DIR_ENV)
    if folder:
        path = Path(folder) / f"{name}.pids"
        path.with_suffix(".partial").write_text(" ".join(map(str, pids)))
        os.replace(path.with_suffix(".partial"), path)


class Hangs(Healthy):
    """Builds, then its first step never returns."""

    meta = _meta("hangs")

    def build(self) -> nn.Module:
        _record_pids(self.meta.name, [os.getpid()])
        return super().build()

    def train_step(self, inputs: Any) -> None:
        while True:
            time.sleep(60)

    eval_step = train_step


class HangsWithChild(Hangs):
    """Hangs after starting a child process that would outlive it if only the model's process were killed."""

    meta = _meta("hangs_with_child")

    def build(self) -> nn.Module:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        _record_pids(self.meta.name, [os.getpid(), child.pid])
        return Healthy.build(self)


class SpawnsDetached(Healthy):
    """Starts a child in a session of its own, as a daemon would, then runs normally: the child must not outlive the case."""

    meta = _meta("spawns_detached")

    def build(self) -> nn.Module:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"], start_new_session=True)
        _record_pids(self.meta.name, [child.pid])
        return super().build()


class HangsWithDetachedChild(Hangs):
    """Starts a child in a session of its own, then hangs: the timeout must end both."""

    meta = _meta("hangs_with_detached_child")

    def build(self) -> nn.Module:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"], start_new_session=True)
        _record_pids(self.meta.name, [os.getpid(), child.pid])
        return Healthy.build(self)


FLOOD_BYTES = 48 << 20
FLOOD_FIRST_LINE = "flood: the first line\n"
FLOOD_LAST_LINE = "flood: the last line\n"


class Floods(Healthy):
    """Prints far more than a log keeps (48 MiB) while it builds, then runs normally."""

    meta = _meta("floods")

    def build(self) -> nn.Module:
        line = "flood " + "x" * 1017 + "\n"  # 1 KiB
        sys.stdout.write(FLOOD_FIRST_LINE)
        for _ in range(FLOOD_BYTES // len(line)):
            sys.stdout.write(line)
        sys.stdout.write(FLOOD_LAST_LINE)
        sys.stdout.flush()
        return super().build()


# Declared names that must never become a path: each is refused before any folder is made of it.
class DotDotName(Healthy):
    meta = _meta("../..")


class ParentName(Healthy):
    meta = _meta("..")


class EscapingName(Healthy):
    meta = _meta("../../escaped")


class AbsoluteName(Healthy):
    meta = _meta("/tmp/torchbenchmark-absolute-name")


class NulName(Healthy):
    meta = _meta("nul\0name")


class LongName(Healthy):
    meta = _meta("n" * 300)


class NumberName(Healthy):
    meta = _meta(42)  # type: ignore[arg-type]


class EmptyName(Healthy):
    meta = _meta("")
