"""Small models for the library's own tests: one that keeps the contract and broken ones that each do not."""

from __future__ import annotations

import os
import time
from typing import Any

import torch
from torch import nn
from torch.profiler import record_function

from torchbenchmark.contract import BatchSizes, BenchmarkModel, ModelMeta


class TinyMLP(BenchmarkModel):
    """A two-layer MLP that honours the contract."""

    meta = ModelMeta(name="tiny_mlp", family="test", batch_sizes=BatchSizes.same(cpu=4, cuda=4))

    def build(self) -> nn.Module:
        return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> Any:
        x = torch.randn(batch_size, 8, generator=generator)
        return x if mode == "eval" else (x, torch.randint(0, 2, (batch_size,), generator=generator))

    def loss(self, inputs: Any) -> torch.Tensor:
        x, y = inputs
        return nn.functional.cross_entropy(self.module(x), y)


class StepFnTwice(TinyMLP):
    def train(self, niter: int = 1, step_fn: Any = None) -> None:
        super().train(niter, lambda: (step_fn(), step_fn()) if step_fn else None)


class NeverZeroesGrad(TinyMLP):
    def train_step(self, inputs: Any) -> None:
        with record_function("forward"):
            loss = self.loss(inputs)
        with record_function("backward"):
            loss.backward()
        with record_function("optimizer"):
            self.optimizers[0].step()
        self.last_loss = loss.detach()


class ForwardOutsideLoop(TinyMLP):
    """The DLRM bug: the forward pass runs once, before the loop, so later steps do nothing."""

    def eval(self, niter: int = 1, step_fn: Any = None) -> None:
        with torch.no_grad():
            with record_function("forward"):
                self.last_output = self.module(self.inputs("eval"))
            for _ in range(niter):
                if step_fn:
                    step_fn()


class EvalTrains(TinyMLP):
    """The MAML bug: eval repeats train's gradient work."""

    def eval(self, niter: int = 1, step_fn: Any = None) -> None:
        x = self.inputs("eval")
        for _ in range(niter):
            with record_function("forward"):
                out = self.module(x)
                torch.autograd.grad(out.sum(), list(self.module.parameters()))
            self.last_output = out.detach()
            if step_fn:
                step_fn()


class EvalMutates(TinyMLP):
    def eval_step(self, inputs: Any) -> None:
        super().eval_step(inputs)
        self.module[0].weight.add_(1.0)


class NoBackwardLabel(TinyMLP):
    def train_step(self, inputs: Any) -> None:
        with record_function("forward"):
            loss = self.loss(inputs)
        loss.backward()
        with record_function("optimizer"):
            self.optimizers[0].step()
            self.optimizers[0].zero_grad()
        self.last_loss = loss.detach()


class NanLoss(TinyMLP):
    def loss(self, inputs: Any) -> torch.Tensor:
        return super().loss(inputs) * float("nan")


class FrozenTrain(TinyMLP):
    def make_optimizers(self) -> list[torch.optim.Optimizer]:
        return [torch.optim.SGD(self.module.parameters(), lr=0.0)]


class BufferOnWrongDevice(TinyMLP):
    """Leaves a buffer behind on another device (meta stands in for a GPU on a CPU-only machine)."""

    def __init__(self, device: str = "cpu", batch_size: int | None = None) -> None:
        super().__init__(device, batch_size)
        self.module.register_buffer("stray", torch.zeros(1, device="meta"))


class RankOneFails(TinyMLP):
    """Under DistributedDataParallel, rank 1 cannot build the model; rank 0 can."""

    def __init__(self, device: str = "cpu", batch_size: int | None = None) -> None:
        if os.environ.get("RANK") == "1":
            raise RuntimeError("rank one fails on purpose")
        super().__init__(device, batch_size)


class RankOneHangs(TinyMLP):
    """Under DistributedDataParallel, rank 1 never finishes building the model."""

    def __init__(self, device: str = "cpu", batch_size: int | None = None) -> None:
        if os.environ.get("RANK") == "1":
            time.sleep(3600)
        super().__init__(device, batch_size)
