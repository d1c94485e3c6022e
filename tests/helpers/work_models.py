"""A plug-in model whose work per step is set from outside, so a test can make a run slower on purpose."""

from __future__ import annotations

import os
from typing import Any

import torch
from torch import nn

from torchbenchmark.contract import BatchSizes, BenchmarkModel, ModelMeta

WORK_ENV = "TORCHBENCHMARK_TEST_WORK"  # how many times each step repeats its matmuls (default 1)


class Work(nn.Module):
    def __init__(self, repeats: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(512, 512) / 23)
        self.repeats = repeats

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.repeats):
            x = torch.tanh(x @ self.weight)
        return x


class WorkModel(BenchmarkModel):
    """A chain of 512x512 matmuls, ``TORCHBENCHMARK_TEST_WORK`` x 4 of them per step."""

    meta = ModelMeta(name="work_model", family="test", batch_sizes=BatchSizes.same(cpu=128, cuda=128))

    def build(self) -> nn.Module:
        return Work(4 * int(os.environ.get(WORK_ENV, "1")))

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> Any:
        x = torch.randn(batch_size, 512, generator=generator)
        return x if mode == "eval" else (x, torch.randn(batch_size, 512, generator=generator))

    def loss(self, inputs: Any) -> torch.Tensor:
        x, y = inputs
        return nn.functional.mse_loss(self.module(x), y)
