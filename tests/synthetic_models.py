"""Two models of known character, to prove the dispatch verdict: one of many tiny ops, one of a few large matmuls."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from torchbenchmark.contract import BatchSizes, BenchmarkModel, ModelMeta


class _Chain(nn.Module):
    def __init__(self, width: int, depth: int) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(width))
        self.depth = depth

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.depth):
            x = torch.relu(x * self.scale + 0.1)
        return x


class ManyTinyOps(BenchmarkModel):
    """300 elementwise ops on 8-element tensors per forward: nearly all of each op is overhead."""

    meta = ModelMeta(name="many_tiny_ops", family="test", batch_sizes=BatchSizes.same(cpu=1, cuda=1))

    def build(self) -> nn.Module:
        return _Chain(width=8, depth=100)

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> Any:
        return (torch.randn(batch_size, 8, generator=generator),)

    def loss(self, inputs: Any) -> torch.Tensor:
        return self.module(*inputs).sum()


class FewLargeMatmuls(BenchmarkModel):
    """Four 768x768 matmuls over 768 rows per forward: the arithmetic dwarfs the handful of ops."""

    meta = ModelMeta(name="few_large_matmuls", family="test", batch_sizes=BatchSizes.same(cpu=768, cuda=4096))

    def build(self) -> nn.Module:
        return nn.Sequential(*[nn.Linear(768, 768, bias=False) for _ in range(4)])

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> Any:
        return (torch.randn(batch_size, 768, generator=generator),)

    def loss(self, inputs: Any) -> torch.Tensor:
        return self.module(*inputs).square().mean()
