"""Models whose overhead sits where we put it: to check the attribution to modules and lines, and the op diff."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from torchbenchmark.contract import BatchSizes, BenchmarkModel, ModelMeta


class BigMatmul(nn.Module):
    """One large matmul: all arithmetic, one op's overhead."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(width, width) / width**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight


class TinyOps(nn.Module):
    """150 elementwise ops on eight numbers: nothing but overhead."""

    def __init__(self, ops: int = 150) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(8))
        self.ops = ops

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.ops // 2):
            x = x * self.scale + 0.5
        return x


class _MatmulAndTiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.matmul = BigMatmul(512)
        self.tiny = TinyOps()

    def forward(self, x: torch.Tensor, small: torch.Tensor) -> torch.Tensor:
        return self.matmul(x).mean() + self.tiny(small).mean()


class MatmulAndTinyOps(BenchmarkModel):
    """A forward of one 512x512 matmul over 256 rows in one module, and 150 tiny elementwise ops in another."""

    meta = ModelMeta(name="matmul_and_tiny_ops", family="test", batch_sizes=BatchSizes.same(cpu=256, cuda=256))

    def build(self) -> nn.Module:
        return _MatmulAndTiny()

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> Any:
        return (torch.randn(batch_size, 512, generator=generator), torch.randn(8, generator=generator))

    def loss(self, inputs: Any) -> torch.Tensor:
        return self.module(*inputs)


class _Elementwise(nn.Module):
    def __init__(self, added: int) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.full((8,), 1.01))
        self.added = added

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(20):
            x = x * self.scale
        for _ in range(5 + self.added):
            x = torch.add(x, 0.5)
        return x


class ElementwiseBase(BenchmarkModel):
    """20 multiplies and 5 adds on eight numbers a step."""

    ADDED = 0
    meta = ModelMeta(name="elementwise", family="test", batch_sizes=BatchSizes.same(cpu=8, cuda=8))

    def build(self) -> nn.Module:
        return _Elementwise(self.ADDED)

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> Any:
        return (torch.randn(batch_size, generator=generator),)

    def loss(self, inputs: Any) -> torch.Tensor:
        return self.module(*inputs).sum()


class ElementwiseAdded(ElementwiseBase):
    """The same model, named the same, with 100 more adds a step: what a comparison should find."""

    ADDED = 100
