"""Plug-in models of known character under torch.compile: what fusion helps, what it cannot, what breaks a graph."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from torchbenchmark.contract import BatchSizes, BenchmarkModel, ModelMeta


class _Elementwise(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(30):  # 90 one-pass ops on a small tensor: all dispatch, nothing to compute
            x = torch.sin(x) * 1.01 + 0.1
        return x


class ManyTinyOps(BenchmarkModel):
    """Dispatch-bound: 90 elementwise ops that inductor fuses into one loop."""

    meta = ModelMeta(name="many_tiny_ops", family="test", batch_sizes=BatchSizes.same(cpu=8, cuda=8), annotated=False, note="eval only")

    def build(self) -> nn.Module:
        return _Elementwise()

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> Any:
        return torch.randn(batch_size, 64, generator=generator)

    def make_optimizers(self) -> list[torch.optim.Optimizer]:
        return []  # eval only

    def train(self, niter: int = 1, step_fn: Any = None) -> None:
        raise NotImplementedError("eval only")


class _Matmuls(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Parameter(torch.randn(768, 768) / 28)
        self.b = nn.Parameter(torch.randn(768, 768) / 28)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x @ self.a) @ self.b


class FewLargeMatmuls(ManyTinyOps):
    """Compute-bound: two large matmuls, which compiling leaves to the same BLAS."""

    meta = ModelMeta(
        name="few_large_matmuls", family="test", batch_sizes=BatchSizes.same(cpu=512, cuda=512), annotated=False, note="eval only"
    )

    def build(self) -> nn.Module:
        return _Matmuls()

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> Any:
        return torch.randn(batch_size, 768, generator=generator)


class _Branchy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        if y.sum() > 0:  # a branch on a tensor's value: dynamo must break the graph here
            y = y * 2
        return torch.relu(y)


class DataDependentBranch(ManyTinyOps):
    meta = ModelMeta(
        name="data_dependent_branch", family="test", batch_sizes=BatchSizes.same(cpu=4, cuda=4), annotated=False, note="eval only"
    )

    def build(self) -> nn.Module:
        return _Branchy()

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> Any:
        return torch.randn(batch_size, 16, generator=generator)


class NoModule:
    """Keeps the contract without the base class, so there is no ``module`` to compile."""

    def __init__(self, device: str = "cpu", batch_size: int | None = None) -> None:
        self.x = torch.ones(4, device=device)

    def train(self, niter: int = 1, step_fn: Any = None) -> None:
        raise NotImplementedError("eval only")

    def eval(self, niter: int = 1, step_fn: Any = None) -> None:
        with torch.no_grad():
            for _ in range(niter):
                self.x.add(1)
                if step_fn:
                    step_fn()
