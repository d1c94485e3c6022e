"""Plug-ins whose step leaves the CPU: one that sleeps most of its step, a blocked model of the contract."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

SLEEP_S = 0.009  # of a step of about 10 ms


class Sleeper:
    """A few small ops, then a sleep nine times as long as they take: a step blocked 90% of its time."""

    name = "sleeper"

    def __init__(self, device: str = "cpu", batch_size: int | None = None) -> None:
        torch.manual_seed(0)
        self.net = nn.Linear(16, 16).to(device)
        self.x = torch.randn(batch_size or 4, 16, device=device)

    def _step(self) -> None:
        work_until = time.perf_counter() + SLEEP_S / 9
        while time.perf_counter() < work_until:  # about 1 ms of ops
            self.net(self.x)
        time.sleep(SLEEP_S)

    def train(self, niter: int = 1, step_fn: Callable[[], None] | None = None) -> None:
        raise NotImplementedError("the sleeper only evaluates")

    def eval(self, niter: int = 1, step_fn: Callable[[], None] | None = None) -> None:
        with torch.no_grad():
            for _ in range(niter):
                self._step()
                if step_fn is not None:
                    step_fn()


COUNTER_ENV = "TORCHBENCHMARK_TEST_PROCESS_COUNTER"  # a file: how many processes built the model so far


class SpreadByProcess:
    """A step whose cost depends on its process: the n-th process built spins 1, 2 or 3 ms (n % 3).

    Its processes' medians scatter far more than any comparison could see through.
    """

    name = "spread_by_process"

    def __init__(self, device: str = "cpu", batch_size: int | None = None) -> None:
        counter = Path(os.environ[COUNTER_ENV])
        built = int(counter.read_text() or 0) if counter.exists() else 0
        counter.write_text(str(built + 1))
        self.spin_s = 0.001 * (1 + built % 3)
        self.x = torch.ones(4, device=device)

    def _step(self) -> None:
        until = time.perf_counter() + self.spin_s
        while time.perf_counter() < until:
            self.x = self.x * 1.0

    def train(self, niter: int = 1, step_fn: Callable[[], None] | None = None) -> None:
        raise NotImplementedError("it only evaluates")

    def eval(self, niter: int = 1, step_fn: Callable[[], None] | None = None) -> None:
        for _ in range(niter):
            self._step()
            if step_fn is not None:
                step_fn()
