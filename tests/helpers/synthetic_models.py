"""Models of known character: to prove the dispatch verdict (many tiny ops, a few large matmuls) and the
costs (exact FLOPs, a known activation, ops the FLOP counter cannot count, kernels that waste the machine)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.utils._python_dispatch import _get_current_dispatch_mode

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


class MatmulChain(BenchmarkModel):
    """Three bias-free linear layers, 8 rows through widths 64 -> 128 -> 32 -> 16: its FLOPs are known exactly."""

    WIDTHS = (64, 128, 32, 16)
    meta = ModelMeta(name="matmul_chain", family="test", batch_sizes=BatchSizes.same(cpu=8, cuda=8))

    def build(self) -> nn.Module:
        return nn.Sequential(*[nn.Linear(a, b, bias=False) for a, b in zip(self.WIDTHS, self.WIDTHS[1:])])

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> Any:
        return (torch.randn(batch_size, self.WIDTHS[0], generator=generator),)

    def loss(self, inputs: Any) -> torch.Tensor:
        return self.module(*inputs).square().mean()


class _Widen(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.up = nn.Linear(16, width, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.up(x).sum()  # the widened activation lives only until it is summed


class HoldsKnownActivation(BenchmarkModel):
    """An eval step whose one large tensor is a 1024 x 8192 float32 activation: 33.5 MB."""

    ROWS, WIDTH = 1024, 8192
    meta = ModelMeta(name="holds_known_activation", family="test", batch_sizes=BatchSizes.same(cpu=ROWS, cuda=ROWS))

    def build(self) -> nn.Module:
        return _Widen(self.WIDTH)

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> Any:
        return (torch.randn(batch_size, 16, generator=generator),)

    def loss(self, inputs: Any) -> torch.Tensor:
        return self.module(*inputs)


class ElementwiseOnly(ManyTinyOps):
    """Only elementwise ops: nothing the FLOP counter has a formula for."""

    meta = ModelMeta(name="elementwise_only", family="test", batch_sizes=BatchSizes.same(cpu=1, cuda=1))


class _RefusesDispatchModes(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if _get_current_dispatch_mode() is not None:
            raise RuntimeError("this op has no Python dispatch path")
        return x @ x.T


class FailsUnderTheCounter(BenchmarkModel):
    """A step that raises under a Python dispatch mode, as ops without a Python dispatch path do."""

    meta = ModelMeta(name="fails_under_the_counter", family="test", batch_sizes=BatchSizes.same(cpu=4, cuda=4))

    def build(self) -> nn.Module:
        return _RefusesDispatchModes()

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> Any:
        return (torch.randn(batch_size, 8, generator=generator),)

    def make_optimizers(self) -> list[torch.optim.Optimizer]:
        return []


class TinyBatchedMatmuls(BenchmarkModel):
    """Four products of 2^18 pairs of 2x2 matrices per forward: few, long ops whose kernels waste the machine."""

    meta = ModelMeta(name="tiny_batched_matmuls", family="test", batch_sizes=BatchSizes.same(cpu=1 << 18, cuda=1 << 20))

    def build(self) -> nn.Module:
        return _BatchedChain()

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> Any:
        return (torch.randn(batch_size, 2, 2, generator=generator),)

    def loss(self, inputs: Any) -> torch.Tensor:
        return self.module(*inputs).square().mean()


class _BatchedChain(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.eye(2) * 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(4):
            x = torch.bmm(x, self.weight.expand(x.shape[0], 2, 2))
        return x
