"""A plug-in whose step is a chain of tiny ops, its op count and each op's size set from outside: the regression
gate's benchmark changes one of them and asks whether the gate calls it.

    GATE_OPS     ops per step (default 200)
    GATE_ELEMS   elements of the tensor each op works on (default 64): more makes each kernel slower at the
                 same op count
"""

from __future__ import annotations

import os
from typing import Any

import torch
from torch import nn

from torchbenchmark.contract import BatchSizes, BenchmarkModel, ModelMeta

OPS_ENV, ELEMS_ENV = "GATE_OPS", "GATE_ELEMS"


class _Chain(nn.Module):
    def __init__(self, ops: int) -> None:
        super().__init__()
        self.ops = ops
        self.scale = nn.Parameter(torch.tensor(1.0001))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.ops):
            x = x * self.scale
        return x


class GateTinyOps(BenchmarkModel):
    """``GATE_OPS`` multiplies a step on a tensor of ``GATE_ELEMS`` elements."""

    meta = ModelMeta(name="gate_tiny_ops", family="test", batch_sizes=BatchSizes.same(cpu=1, cuda=1))

    def build(self) -> nn.Module:
        return _Chain(int(os.environ.get(OPS_ENV, "200")))

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> Any:
        return (torch.randn(batch_size, int(os.environ.get(ELEMS_ENV, "64")), generator=generator),)

    def loss(self, inputs: Any) -> torch.Tensor:
        return self.module(*inputs).sum()
