"""Plug-ins for what a newcomer meets: a case long enough to watch its progress, and a CPU-only model file.

``SlowBuild`` spends its build asleep (cheap on a busy machine): ``$FRICTION_BUILD_S`` seconds (30 by
default), then each eval step takes ``STEP_S``. ``CpuOnly`` declares only its CPU batch sizes, as a model
written on a machine without a GPU does. The DDP models fail in one rank.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import time
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from tests.helpers import tiny_models
from torchbenchmark.contract import BatchSizes, BenchmarkModel, ModelMeta

BUILD_ENV = "FRICTION_BUILD_S"
STEP_S = 0.005


class SlowBuild:
    """A plain-contract model whose build is slow, asleep, and whose steps take a few milliseconds: a case
    whose time goes to building it."""

    name = "slow_build"

    def __init__(self, device: str = "cpu", batch_size: int | None = None) -> None:
        time.sleep(float(os.environ.get(BUILD_ENV, "30")))
        torch.manual_seed(0)
        self.net = nn.Linear(8, 8).to(device)
        self.x = torch.randn(batch_size or 2, 8, device=device)

    def train(self, niter: int = 1, step_fn: Callable[[], None] | None = None) -> None:
        raise NotImplementedError("the slowly built case only evaluates")

    def eval(self, niter: int = 1, step_fn: Callable[[], None] | None = None) -> None:
        with torch.no_grad():
            for _ in range(niter):
                self.net(self.x)
                time.sleep(STEP_S)
                if step_fn is not None:
                    step_fn()


class CpuOnly(BenchmarkModel):
    """Batch sizes for the CPU only: on CUDA it takes the same ones."""

    meta = ModelMeta(name="cpu_only", family="test", batch_sizes=BatchSizes(cpu_train=4, cpu_eval=8))

    def build(self) -> nn.Module:
        return nn.Linear(4, 2)

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> Any:
        return torch.randn(batch_size, 4, generator=generator)

    def loss(self, inputs: Any) -> torch.Tensor:
        return self.module(inputs).square().mean()


class RankOneCrashes(tiny_models.RankOneSegfaults):
    """Rank 1 dies of SIGSEGV in its fourth train step (named apart, to share a sweep with the one below)."""

    meta = dataclasses.replace(tiny_models.TinyMLP.meta, name="rank_one_crashes")


class RankOneStalls(tiny_models.RankOneHangs):
    """Rank 1 never finishes building the model."""

    meta = dataclasses.replace(tiny_models.TinyMLP.meta, name="rank_one_stalls")


class _RankOneInItsFourthStep(tiny_models.TinyMLP):
    """Rank 1 does ``befall()`` in its fourth train step; every other rank trains on."""

    def befall(self) -> None:
        raise NotImplementedError

    def train(self, niter: int = 1, step_fn: Any = None) -> None:
        if os.environ.get("RANK") == "1":
            self.steps_taken = getattr(self, "steps_taken", 0) + niter
            if self.steps_taken > 3:
                self.befall()
        super().train(niter, step_fn)


class RankOneHangsInAStep(_RankOneInItsFourthStep):
    """Rank 1 sleeps for an hour in its fourth train step, while rank 0 waits for it in DDP's all-reduce."""

    meta = dataclasses.replace(tiny_models.TinyMLP.meta, name="rank_one_hangs_in_a_step")

    def befall(self) -> None:
        time.sleep(3600)


class RankOneKilled(_RankOneInItsFourthStep):
    """Rank 1 is killed by SIGKILL (as the kernel kills a process out of memory) in its fourth train step."""

    meta = dataclasses.replace(tiny_models.TinyMLP.meta, name="rank_one_killed")

    def befall(self) -> None:
        os.kill(os.getpid(), signal.SIGKILL)


def _spin(parent: int) -> None:
    while os.getppid() == parent:  # until the case's process is gone, however it ended
        pass


class SpinsHelpers(tiny_models.TinyMLP):
    """Starts one helper process per CPU that spins for the case's life, as a data loader's workers may: its
    threads wait for a CPU on its own processes, no other work's (``TimeSplit.own_wait``)."""

    meta = dataclasses.replace(tiny_models.TinyMLP.meta, name="spins_helpers")

    def build(self) -> nn.Module:
        import multiprocessing

        context = multiprocessing.get_context("fork")
        for _ in range(os.cpu_count() or 1):
            context.Process(target=_spin, args=(os.getpid(),), daemon=True).start()
        return super().build()
