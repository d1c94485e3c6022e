"""Plug-in models for the precision and layout variants: a conv net, one with no 4-D input, and ones a variant breaks."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from torchbenchmark.contract import BatchSizes, BenchmarkModel, ModelMeta


class SmallConvNet(BenchmarkModel):
    """Convolutions on 4-D images: channels_last applies; trained with cross-entropy."""

    meta = ModelMeta(name="small_conv_net", family="test", batch_sizes=BatchSizes.same(cpu=8, cuda=8))

    def build(self) -> nn.Module:
        return nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(32, 10),
        )

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> Any:
        images = torch.randn(batch_size, 3, 32, 32, generator=generator)
        return (images,) if mode == "eval" else (images, torch.randint(0, 10, (batch_size,), generator=generator))

    def loss(self, inputs: Any) -> torch.Tensor:
        images, labels = inputs
        return nn.functional.cross_entropy(self.module(images), labels)


class SmallMLP(BenchmarkModel):
    """Rows of features, no image: channels_last does not apply."""

    meta = ModelMeta(name="small_mlp", family="test", batch_sizes=BatchSizes.same(cpu=16, cuda=16))

    def build(self) -> nn.Module:
        return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> Any:
        features = torch.randn(batch_size, 64, generator=generator)
        return (features,) if mode == "eval" else (features, torch.randint(0, 10, (batch_size,), generator=generator))

    def loss(self, inputs: Any) -> torch.Tensor:
        features, labels = inputs
        return nn.functional.cross_entropy(self.module(features), labels)


class _Inverse(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        square = self.linear(x).reshape(-1, 4, 2) @ self.linear(x).reshape(-1, 2, 4)
        return torch.linalg.inv(square + 4 * torch.eye(4, dtype=x.dtype))  # no bfloat16 kernel


class NoBfloat16Kernel(SmallMLP):
    """Inverts matrices: torch has no bfloat16 kernel for it, so the bf16 variant cannot run."""

    meta = ModelMeta(name="no_bfloat16_kernel", family="test", batch_sizes=BatchSizes.same(cpu=4, cuda=4))

    def build(self) -> nn.Module:
        return _Inverse()

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> Any:
        return (torch.randn(batch_size, 8, generator=generator),)

    def train(self, niter: int = 1, step_fn: Any = None) -> None:
        raise NotImplementedError("eval only")


class _Refuses(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.float32:
            raise RuntimeError(f"this network takes float32 only, got {x.dtype}")
        return self.linear(x)


class Float32Only(SmallMLP):
    """Raises on any input but float32: its bf16 variant fails, and its eager row must not."""

    meta = ModelMeta(name="float32_only", family="test", batch_sizes=BatchSizes.same(cpu=16, cuda=16))

    def build(self) -> nn.Module:
        return _Refuses()
