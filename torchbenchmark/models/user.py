"""A user's own network as a model of the contract: ``torchbenchmark.from_module(module, inputs, loss=...)``.

    >>> net = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    >>> Model = torchbenchmark.from_module(net, torch.randn(32, 64), loss=lambda out: out.square().mean())
    >>> torchbenchmark.collect_diagnostics(Model, "train")

The class it returns is built as every model is, ``Model(device=..., batch_size=...)``: each build copies the
module as it is then (the one you hold is never trained), and the inputs given are one batch, cycled or cut
along their first dimension for another batch size. A plug-in file may name a function that returns it
(``path/file.py:make_model``), so a sweep, ``check`` and ``--instructions`` reach it as well.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import nn

from torchbenchmark.contract import BatchSizes, BenchmarkModel, ModelMeta, iter_tensors

FAMILY = "user"
Loss = Callable[[Any], torch.Tensor]
MakeOptimizer = Callable[[Any], torch.optim.Optimizer]


class UserModel(BenchmarkModel):
    """A network given by its user, with one batch of its inputs; what :func:`from_module` returns subclasses it."""

    network: nn.Module
    given_inputs: Any
    given_batch: int
    loss_of: Loss | None
    make_optimizer: MakeOptimizer | None

    def build(self) -> nn.Module:
        return copy.deepcopy(self.network)

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> Any:
        rows = torch.arange(batch_size) % self.given_batch  # the given batch cycled, or cut, to batch_size

        def resized(value: Any) -> Any:
            if isinstance(value, torch.Tensor):
                value = value.detach().to("cpu")
                return value[rows].clone() if value.dim() and value.shape[0] == self.given_batch else value.clone()
            if isinstance(value, Mapping):
                return {key: resized(item) for key, item in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(resized(item) for item in value)
            return value

        return resized(self.given_inputs)

    def make_optimizers(self) -> list[torch.optim.Optimizer]:
        if self.make_optimizer is None:
            return super().make_optimizers()
        made = self.make_optimizer(self.module.parameters())
        if not isinstance(made, torch.optim.Optimizer):
            raise TypeError(f"optimizer(parameters) returned a {type(made).__name__}, not a torch.optim.Optimizer")
        return [made]

    def infer(self, inputs: Any) -> Any:
        if isinstance(inputs, Mapping):
            return self.module(**inputs)
        return self.module(*inputs) if isinstance(inputs, (tuple, list)) else self.module(inputs)

    def loss(self, inputs: Any) -> torch.Tensor:
        outputs = self.infer(inputs)
        value = self.loss_of(outputs) if self.loss_of is not None else _own_loss(outputs)
        if value is None:
            raise NotImplementedError("the module returns no loss; give from_module a loss, a callable of its outputs")
        if not isinstance(value, torch.Tensor) or value.numel() != 1:
            shown = f"a tensor of shape {tuple(value.shape)}" if isinstance(value, torch.Tensor) else f"a {type(value).__name__}"
            raise TypeError(f"the loss must be a single-element tensor, got {shown}")
        return value


def _own_loss(outputs: Any) -> torch.Tensor | None:
    """The loss a module returns itself: a single-element tensor, a ``loss`` field (transformers' outputs), or None."""
    if isinstance(outputs, torch.Tensor):
        return outputs if outputs.numel() == 1 else None
    found = outputs.get("loss") if isinstance(outputs, Mapping) else getattr(outputs, "loss", None)
    return found if isinstance(found, torch.Tensor) else None


def from_module(
    module: nn.Module,
    inputs: Any,
    *,
    loss: Loss | None = None,
    optimizer: MakeOptimizer | None = None,
    name: str | None = None,
) -> type[UserModel]:
    """A model class of the contract around ``module``: eval calls it on ``inputs`` under ``no_grad``; train
    adds ``loss(outputs)`` (or the loss the module returns itself), backward and ``optimizer``'s step.

    ``inputs``: a tensor, a tuple or list of positional arguments, or a dict of keyword arguments; their first
    dimension is the batch. ``optimizer``: called with the parameters, it returns the optimizer (a class such
    as ``torch.optim.AdamW``, or a ``functools.partial`` of one); SGD with momentum when not given. ``name``
    names the rows and the traces' folder (default: the module's class name). Train without a loss, where
    the module returns none, is a ``skipped`` row that says so.
    """
    if not isinstance(module, nn.Module):
        raise TypeError(f"from_module() takes an nn.Module, got {type(module).__name__}")
    for argument, value in (("loss", loss), ("optimizer", optimizer)):
        if value is not None and not callable(value):
            raise TypeError(f"from_module(): {argument} must be callable, got {type(value).__name__}")
    name = type(module).__name__ if name is None else name
    if not isinstance(name, str) or not name.strip() or "/" in name:
        raise ValueError(f"from_module(): name must be a non-empty string without '/', got {name!r}")
    first = next(iter_tensors(inputs), None)
    if first is None:
        raise TypeError("from_module(): inputs hold no tensor; give a tensor, a tuple or list, or a dict of them")
    batch = int(first.shape[0]) if first.dim() else 1
    meta = ModelMeta(
        name=name,
        family=FAMILY,
        batch_sizes=BatchSizes.same(cpu=batch, cuda=batch),
        note=f"from_module({type(module).__name__}): the batch its inputs were given at, {batch}, is the default",
    )
    attributes = {
        "meta": meta,
        "network": module,
        "given_inputs": inputs,
        "given_batch": batch,
        "loss_of": staticmethod(loss) if loss is not None else None,
        "make_optimizer": staticmethod(optimizer) if optimizer is not None else None,
        "__module__": __name__,
        "__qualname__": name,
    }
    return type(name, (UserModel,), attributes)
