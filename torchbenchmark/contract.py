"""The model contract: metadata every model declares and the base class that runs its steps.

A model is a class constructed as ``Model(device="cpu", batch_size=None)`` whose ``train(niter, step_fn)``
and ``eval(niter, step_fn)`` run exactly ``niter`` steps and call ``step_fn()`` once at the end of each.
:class:`BenchmarkModel` owns the step loop and the annotated train step, so the loop cannot be written
wrongly twice: a model supplies how to build itself, its inputs and its loss, and nothing else.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar

import torch
from torch.profiler import record_function

from torchbenchmark.results.schema import MODES, PHASES

StepFn = Callable[[], None]


@dataclasses.dataclass(frozen=True)
class BatchSizes:
    """Default batch size for each device type and mode; a CUDA size not given is the CPU's."""

    cpu_train: int
    cpu_eval: int
    cuda_train: int | None = None
    cuda_eval: int | None = None

    def get(self, device: str | torch.device, mode: str) -> int:
        device_type = torch.device(device).type
        if device_type not in ("cpu", "cuda") or mode not in MODES:
            raise ValueError(f"no default batch size for device {device_type!r} and mode {mode!r}")
        size = getattr(self, f"{device_type}_{mode}")
        return int(size if size is not None else getattr(self, f"cpu_{mode}"))

    def sizes(self) -> tuple[int, int, int, int]:
        """cpu train, cpu eval, cuda train, cuda eval: every default filled in."""
        return (self.cpu_train, self.cpu_eval, self.get("cuda", "train"), self.get("cuda", "eval"))

    @classmethod
    def same(cls, cpu: int, cuda: int | None = None) -> BatchSizes:
        """The same batch size for train and eval on each device (on CUDA the CPU's, unless ``cuda`` is given)."""
        return cls(cpu_train=cpu, cpu_eval=cpu, cuda_train=cuda, cuda_eval=cuda)


@dataclasses.dataclass(frozen=True)
class Published:
    """A model's figures as its source publishes them, and how the suite's workload differs from that one.

    ``tests/models/test_references.py`` holds each model to them, and ``docs/models.md`` sets them side by side.
    FLOPs count a multiply-add as 2, as the suite's counter does.
    """

    source: str  # whose figures: a checkpoint's name, or torchvision's weights metadata
    params: int | None = None  # None: read from the source when asked (torchvision's weights enums)
    params_difference: int = 0  # the suite's parameter count minus the published one, explained in ``differs``
    input_size: int | None = None  # the image side the published FLOPs are counted at, where it is not the suite's
    differs: str = ""  # why the suite's figures differ from the published ones, and which part agrees


@dataclasses.dataclass(frozen=True)
class ModelMeta:
    """What a model declares about itself; the harness and the smoke test read nothing else."""

    name: str
    family: str  # task family: vision-classification, nlp, recommendation, gan, rl, ...
    batch_sizes: BatchSizes
    # Constructor keyword arguments for a configuration small enough for a fast CPU smoke test.
    smoke: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    # True when train steps carry the forward/backward/optimizer record_function labels.
    annotated: bool = True
    # Why the model is unannotated, how its defaults were chosen, or anything a user should know.
    note: str = ""
    # Importable packages the model needs beyond torch; `--list` shows it unavailable without them.
    requires: tuple[str, ...] = ()
    # The published figures it is checked against, for a model with a published counterpart.
    published: Published | None = None
    # True: `--scaling` times the model at 2, 4 and 8 times its batch instead of 1/2, 1/4 and 1/8 of it
    # (a decode step runs at batch 1, which has no smaller batch).
    scale_batch_up: bool = False

    def __post_init__(self) -> None:
        if not self.annotated and not self.note:
            raise ValueError(f"{self.name}: an unannotated model must say why in its note")


class DoesNotFit(NotImplementedError):
    """A model too large for this machine's memory, found before its weights were made: a ``skipped`` row
    whose reason gives the estimate. A kind of NotImplementedError, so every path that skips a declined
    mode skips it too."""


def _takes(function: Any, *names: str) -> list[str]:
    """Which of ``names`` the callable cannot take as keyword arguments."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):  # a builtin without a signature: assume it takes them
        return []
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return []
    return [name for name in names if name not in parameters]


def contract_problems(cls: Any) -> list[str]:
    """Why ``cls`` cannot be a model of the contract, from its signatures alone; empty if none shows.

    A model need not subclass :class:`BenchmarkModel`, but it must be a class built as
    ``cls(device=..., batch_size=...)`` with ``train(niter, step_fn)`` and ``eval(niter, step_fn)``.
    """
    if not isinstance(cls, type):
        return [f"{cls!r} is not a class"]
    problems = []
    missing = _takes(cls.__init__, "device", "batch_size")
    if missing:
        problems.append(f"its constructor takes no {' or '.join(repr(name) for name in missing)} argument")
    for method in MODES:
        function = getattr(cls, method, None)
        if not callable(function):
            problems.append(f"it has no {method}() method")
        elif _takes(function, "niter", "step_fn"):
            problems.append(f"its {method}() takes no 'niter' and 'step_fn'")
    if problems and issubclass(cls, torch.nn.Module):
        problems.append("an nn.Module is the network, not the model: subclass torchbenchmark.BenchmarkModel and return it from build()")
    return problems


def iter_tensors(value: Any) -> Iterator[torch.Tensor]:
    """Every tensor inside nested tuples, lists, dicts and dataclass-free containers."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from iter_tensors(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from iter_tensors(item)


def modules_of(model: Any) -> list[torch.nn.Module]:
    """The networks a model holds: its ``module`` when it exposes one, else every ``nn.Module`` among its
    attributes, in lists, tuples and dicts too (a plain class that honours the contract need not subclass
    :class:`BenchmarkModel`); empty when it holds none."""
    module = getattr(model, "module", None)
    if isinstance(module, torch.nn.Module):
        return [module]
    found: dict[int, torch.nn.Module] = {}
    pending = list(getattr(model, "__dict__", {}).values())
    while pending:
        value = pending.pop(0)
        if isinstance(value, torch.nn.Module):
            found.setdefault(id(value), value)
        elif isinstance(value, Mapping):
            pending.extend(value.values())
        elif isinstance(value, (list, tuple)):
            pending.extend(value)
    return list(found.values())


def held_tensors(model: Any, mode: str) -> Iterator[torch.Tensor]:
    """Every tensor a model holds between steps: its networks' parameters, gradients and buffers, its
    optimizers' state, its inputs and outputs, and any tensor it keeps as an attribute."""
    for module in modules_of(model):
        yield from module.parameters()
        yield from (p.grad for p in module.parameters() if p.grad is not None)
        yield from module.buffers()
    attributes = list(getattr(model, "__dict__", {}).values())
    for value in [*getattr(model, "optimizers", ()), *attributes]:
        if isinstance(value, torch.optim.Optimizer):
            yield from iter_tensors(list(value.state.values()))
    if callable(getattr(model, "inputs", None)):
        yield from iter_tensors(model.inputs(mode))
    yield from iter_tensors([value for value in attributes if not isinstance(value, torch.nn.Module)])


class BenchmarkModel:
    """Base class for the suite's models.

    Subclasses set :attr:`meta` and implement :meth:`build` and :meth:`make_inputs`, plus
    :meth:`loss` (train) and :meth:`infer` (eval). A model whose step does not have the shape
    forward/backward/optimizer (GANs, RL, meta-learning) overrides :meth:`train_step` instead of
    :meth:`loss` and declares itself unannotated.

    After construction a model exposes ``module`` (every parameter it trains), ``optimizers`` and,
    through :meth:`inputs`, the synthetic inputs of each mode; the smoke test checks all three.
    """

    meta: ClassVar[ModelMeta]
    seed: ClassVar[int] = 0
    # Set by a float16 variant on CUDA (measure.precision): the train step scales its loss and steps through it.
    grad_scaler: torch.amp.GradScaler | None = None

    def __init__(self, device: str | torch.device = "cpu", batch_size: int | None = None) -> None:
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.device = torch.device(device)
        self.requested_batch_size = batch_size
        self.last_loss: torch.Tensor | None = None
        self.last_output: Any = None
        self._inputs: dict[str, Any] = {}
        torch.manual_seed(self.seed)  # same weights on every build
        self.module: torch.nn.Module = self.build().to(self.device)
        self.optimizers: list[torch.optim.Optimizer] = self.make_optimizers()

    # -- what a model supplies -------------------------------------------------------------

    def build(self) -> torch.nn.Module:
        """Create the module (random weights, no downloads). Several networks go in a ModuleDict."""
        raise NotImplementedError

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> Any:
        """Synthetic inputs for one step, drawn from ``generator`` on the CPU."""
        raise NotImplementedError

    def make_optimizers(self) -> list[torch.optim.Optimizer]:
        """One optimizer over every parameter; models with several networks override this."""
        return [torch.optim.SGD(self.module.parameters(), lr=0.01, momentum=0.9)]

    def loss(self, inputs: Any) -> torch.Tensor:
        """Forward pass and loss of a train step."""
        raise NotImplementedError

    def infer(self, inputs: Any) -> Any:
        """Forward pass of an eval step; by default the module called on the inputs."""
        return self.module(*inputs) if isinstance(inputs, tuple) else self.module(inputs)

    # -- the contract ----------------------------------------------------------------------

    def batch_size(self, mode: str) -> int:
        """The batch size this model runs ``mode`` with: the one asked for, else its default."""
        return self.requested_batch_size or self.meta.batch_sizes.get(self.device, mode)

    def inputs(self, mode: str) -> Any:
        """The synthetic inputs of ``mode``, built once per mode from a seeded generator."""
        if mode not in self._inputs:
            generator = torch.Generator().manual_seed(self.seed + MODES.index(mode))
            cpu_inputs = self.make_inputs(self.batch_size(mode), mode, generator)
            self._inputs[mode] = _to_device(cpu_inputs, self.device)
        return self._inputs[mode]

    def convert_inputs(self, mode: str, convert: Callable[[Any], Any]) -> None:
        """Replace ``mode``'s inputs by ``convert(inputs)``, once: how a variant casts them or changes their layout."""
        self._inputs[mode] = convert(self.inputs(mode))

    def train(self, niter: int = 1, step_fn: StepFn | None = None) -> None:
        """Run ``niter`` train steps, calling ``step_fn()`` after each."""
        inputs = self.inputs("train")
        self.module.train()
        for _ in range(niter):
            self.train_step(inputs)
            if step_fn is not None:
                step_fn()

    def eval(self, niter: int = 1, step_fn: StepFn | None = None) -> None:
        """Run ``niter`` inference steps under ``torch.no_grad()``, calling ``step_fn()`` after each."""
        inputs = self.inputs("eval")
        self.module.eval()
        with torch.no_grad():
            for _ in range(niter):
                self.eval_step(inputs)
                if step_fn is not None:
                    step_fn()

    def train_step(self, inputs: Any) -> None:
        """The one annotated train step every model of the usual shape shares."""
        with record_function("forward"):
            loss = self.loss(inputs)
        scaler = self.grad_scaler
        with record_function("backward"):
            (loss if scaler is None else scaler.scale(loss)).backward()
        with record_function("optimizer"):
            for optimizer in self.optimizers:
                if scaler is None:
                    optimizer.step()
                else:
                    scaler.step(optimizer)  # skips the step when the scaled gradients overflowed
            if scaler is not None:
                scaler.update()
            # Zeroed here rather than at the top of the next step: the step's time stays inside
            # the three phases and no stale gradients are held between calls.
            for optimizer in self.optimizers:
                optimizer.zero_grad(set_to_none=True)
        self.last_loss = loss.detach()

    def eval_step(self, inputs: Any) -> None:
        with record_function("forward"):
            self.last_output = self.infer(inputs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.meta.name!r}, device={str(self.device)!r})"


def _to_device(value: Any, device: torch.device) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, dict):
        return {key: _to_device(item, device) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_device(item, device) for item in value)
    return value


__all__ = [
    "MODES",
    "PHASES",
    "BatchSizes",
    "BenchmarkModel",
    "DoesNotFit",
    "ModelMeta",
    "Published",
    "StepFn",
    "contract_problems",
    "held_tensors",
    "iter_tensors",
    "modules_of",
]
