"""Plug-ins that do not subclass BenchmarkModel: some that keep the contract, one that cannot, one that breaks it."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn


class PlainModel:
    """The contract without the base class: constructor, train and eval, nothing else."""

    def __init__(self, device: str = "cpu", batch_size: int | None = None) -> None:
        torch.manual_seed(0)
        self.net = nn.Linear(8, 2).to(device)
        self.optimizer = torch.optim.SGD(self.net.parameters(), lr=0.1)
        self.x = torch.randn(batch_size or 4, 8, device=device)

    def train(self, niter: int = 1, step_fn: Callable[[], None] | None = None) -> None:
        for _ in range(niter):
            self.net(self.x).square().mean().backward()
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
            if step_fn is not None:
                step_fn()

    def eval(self, niter: int = 1, step_fn: Callable[[], None] | None = None) -> None:
        with torch.no_grad():
            for _ in range(niter):
                self.net(self.x)
                if step_fn is not None:
                    step_fn()


class PlainTinyOps:
    """ManyTinyOps without the base class: 200 elementwise ops on 8 numbers and two 8x8 linear layers a
    step, its networks in a dict, its rows named by its declared name."""

    name = "plain_tiny_ops"

    def __init__(self, device: str = "cpu", batch_size: int | None = None) -> None:
        torch.manual_seed(0)
        self.nets = {"first": nn.Linear(8, 8).to(device), "last": nn.Linear(8, 8).to(device)}
        self.scale = torch.ones(8, device=device)
        self.optimizer = torch.optim.SGD([p for net in self.nets.values() for p in net.parameters()], lr=0.01)
        self.x = torch.randn(batch_size or 2, 8, device=device)

    def forward(self) -> torch.Tensor:
        x = self.nets["first"](self.x)
        for _ in range(100):
            x = torch.relu(x * self.scale + 0.1)
        return self.nets["last"](x)

    def train(self, niter: int = 1, step_fn: Callable[[], None] | None = None) -> None:
        for _ in range(niter):
            self.forward().square().mean().backward()
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
            if step_fn is not None:
                step_fn()

    def eval(self, niter: int = 1, step_fn: Callable[[], None] | None = None) -> None:
        with torch.no_grad():
            for _ in range(niter):
                self.forward()
                if step_fn is not None:
                    step_fn()


class PlainBilinear(PlainModel):
    """A step with a compute op the FLOP counter has no formula for: ``nn.Bilinear`` (``aten._trilinear``)
    beside a linear layer it can count, so the count is partial."""

    name = "plain_bilinear"

    def __init__(self, device: str = "cpu", batch_size: int | None = None) -> None:
        super().__init__(device, batch_size)
        self.bilinear = nn.Bilinear(8, 8, 2).to(device)
        self.optimizer = torch.optim.SGD([*self.net.parameters(), *self.bilinear.parameters()], lr=0.1)

    def train(self, niter: int = 1, step_fn: Callable[[], None] | None = None) -> None:
        for _ in range(niter):
            (self.net(self.x) + self.bilinear(self.x, self.x)).square().mean().backward()
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
            if step_fn is not None:
                step_fn()

    def eval(self, niter: int = 1, step_fn: Callable[[], None] | None = None) -> None:
        with torch.no_grad():
            for _ in range(niter):
                self.net(self.x) + self.bilinear(self.x, self.x)
                if step_fn is not None:
                    step_fn()


class PlainStepFnTwice(PlainModel):
    """Calls step_fn twice in each train step."""

    def train(self, niter: int = 1, step_fn: Callable[[], None] | None = None) -> None:
        super().train(niter, (lambda: (step_fn(), step_fn())) if step_fn else None)


class JustAModule(nn.Module):
    """A network, not a model: what a first try at a plug-in often is."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)
