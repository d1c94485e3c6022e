"""Plug-ins that name a function returning a model, as a user writes them around their own network."""

from __future__ import annotations

import torch

import torchbenchmark


def make_model() -> type:
    """A small MLP with a loss: both modes run."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    return torchbenchmark.from_module(net, torch.randn(8, 16), loss=lambda out: out.square().mean(), name="user_mlp")


def make_nothing() -> int:
    return 3


def make_with_argument(size: int) -> type:
    return make_model()
