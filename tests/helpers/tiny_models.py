"""Small models for the library's own tests: one that keeps the contract and broken ones that each do not."""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import time
from typing import Any

import torch
from torch import nn
from torch.profiler import record_function

from torchbenchmark.contract import BatchSizes, BenchmarkModel, ModelMeta


class TinyMLP(BenchmarkModel):
    """A two-layer MLP that honours the contract."""

    meta = ModelMeta(name="tiny_mlp", family="test", batch_sizes=BatchSizes.same(cpu=4, cuda=4))

    def build(self) -> nn.Module:
        return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> Any:
        x = torch.randn(batch_size, 8, generator=generator)
        return x if mode == "eval" else (x, torch.randint(0, 2, (batch_size,), generator=generator))

    def loss(self, inputs: Any) -> torch.Tensor:
        x, y = inputs
        return nn.functional.cross_entropy(self.module(x), y)


class StepFnTwice(TinyMLP):
    def train(self, niter: int = 1, step_fn: Any = None) -> None:
        super().train(niter, lambda: (step_fn(), step_fn()) if step_fn else None)


class NeverZeroesGrad(TinyMLP):
    def train_step(self, inputs: Any) -> None:
        with record_function("forward"):
            loss = self.loss(inputs)
        with record_function("backward"):
            loss.backward()
        with record_function("optimizer"):
            self.optimizers[0].step()
        self.last_loss = loss.detach()


class ForwardOutsideLoop(TinyMLP):
    """The DLRM bug: the forward pass runs once, before the loop, so later steps do nothing."""

    def eval(self, niter: int = 1, step_fn: Any = None) -> None:
        with torch.no_grad():
            with record_function("forward"):
                self.last_output = self.module(self.inputs("eval"))
            for _ in range(niter):
                if step_fn:
                    step_fn()


class EvalTrains(TinyMLP):
    """The MAML bug: eval repeats train's gradient work."""

    def eval(self, niter: int = 1, step_fn: Any = None) -> None:
        x = self.inputs("eval")
        for _ in range(niter):
            with record_function("forward"):
                out = self.module(x)
                torch.autograd.grad(out.sum(), list(self.module.parameters()))
            self.last_output = out.detach()
            if step_fn:
                step_fn()


class EvalMutates(TinyMLP):
    def eval_step(self, inputs: Any) -> None:
        super().eval_step(inputs)
        self.module[0].weight.add_(1.0)


class NoBackwardLabel(TinyMLP):
    def train_step(self, inputs: Any) -> None:
        with record_function("forward"):
            loss = self.loss(inputs)
        loss.backward()
        with record_function("optimizer"):
            self.optimizers[0].step()
            self.optimizers[0].zero_grad()
        self.last_loss = loss.detach()


class NanLoss(TinyMLP):
    def loss(self, inputs: Any) -> torch.Tensor:
        return super().loss(inputs) * float("nan")


class FrozenTrain(TinyMLP):
    def make_optimizers(self) -> list[torch.optim.Optimizer]:
        return [torch.optim.SGD(self.module.parameters(), lr=0.0)]


class BufferOnWrongDevice(TinyMLP):
    """Leaves a buffer behind on another device (meta stands in for a GPU on a CPU-only machine)."""

    def __init__(self, device: str = "cpu", batch_size: int | None = None) -> None:
        super().__init__(device, batch_size)
        self.module.register_buffer("stray", torch.zeros(1, device="meta"))


class StepFnTooFew(TinyMLP):
    """Calls step_fn after every step but the last."""

    def train(self, niter: int = 1, step_fn: Any = None) -> None:
        calls = iter(range(niter))
        super().train(niter, lambda: step_fn() if step_fn and next(calls) < niter - 1 else None)


class BatchNormLeftInTrainMode(TinyMLP):
    """Eval forgets ``module.eval()``: no parameter changes, but BatchNorm's running statistics do."""

    def build(self) -> nn.Module:
        return nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 2), nn.BatchNorm1d(2))

    def eval(self, niter: int = 1, step_fn: Any = None) -> None:
        self.module.train()
        with torch.no_grad():
            for _ in range(niter):
                self.eval_step(self.inputs("eval"))
                if step_fn:
                    step_fn()


class InputsOffDevice(TinyMLP):
    """Its eval inputs stay behind on another device (meta stands in for a GPU, as above)."""

    def inputs(self, mode: str) -> Any:
        return torch.zeros(4, 8, device="meta") if mode == "eval" else super().inputs(mode)


class NoInputs(TinyMLP):
    def inputs(self, mode: str) -> Any:
        return {"batch": None}


class PartOutsideLoop(TinyMLP):
    """Runs the first four of five layers once, before the loop: each step repeats only the last."""

    def build(self) -> nn.Module:
        return nn.Sequential(*(nn.Linear(8, 8) for _ in range(4)), nn.Linear(8, 2))

    def eval(self, niter: int = 1, step_fn: Any = None) -> None:
        with torch.no_grad():
            hidden = self.module[:4](self.inputs("eval"))
            for _ in range(niter):
                with record_function("forward"):
                    self.last_output = self.module[4](hidden)
                if step_fn:
                    step_fn()


class SkipsWorkOnEvenSteps(TinyMLP):
    """Every second step returns the previous output without computing anything."""

    def eval(self, niter: int = 1, step_fn: Any = None) -> None:
        with torch.no_grad():
            for step in range(niter):
                with record_function("forward"):
                    if step % 2 == 0:
                        self.last_output = self.module(self.inputs("eval")) + 0
                if step_fn:
                    step_fn()


class NoLossKept(TinyMLP):
    def train_step(self, inputs: Any) -> None:
        super().train_step(inputs)
        self.last_loss = None


class NoOutputKept(TinyMLP):
    def eval_step(self, inputs: Any) -> None:
        super().eval_step(inputs)
        self.last_output = None


class NanOutput(TinyMLP):
    def infer(self, inputs: Any) -> Any:
        return (self.module(inputs) * float("nan"), torch.tensor([1, 2]))


class TwoLossesPerStep(TinyMLP):
    """Two backward passes in one step (as a GAN's discriminator takes), gradients zeroed between steps."""

    def train_step(self, inputs: Any) -> None:
        with record_function("forward"):
            loss = self.loss(inputs)
            again = self.loss(inputs)
        with record_function("backward"):
            loss.backward()
            again.backward()
        with record_function("optimizer"):
            self.optimizers[0].step()
            self.optimizers[0].zero_grad(set_to_none=False)  # zeros, not None: the check must read them
        self.last_loss = loss.detach()


class PhasesInEval(TinyMLP):
    """Labels its eval step as a backward pass too."""

    def eval_step(self, inputs: Any) -> None:
        super().eval_step(inputs)
        with record_function("backward"):
            pass


class ReportsSettings(TinyMLP):
    """Writes the settings its case process runs with to its log, so a test can see the flags take effect."""

    meta = dataclasses.replace(TinyMLP.meta, name="reports_settings")

    def __init__(self, device: str = "cpu", batch_size: int | None = None) -> None:
        super().__init__(device, batch_size)
        shape = tuple(self.inputs("eval").shape)
        print(f"settings: threads={torch.get_num_threads()} device={self.device} eval inputs {shape}", file=sys.stderr, flush=True)


class CountsSteps(TinyMLP):
    """Counts the steps each mode ran, so a test can see how many steps a check takes."""

    def __init__(self, device: str = "cpu", batch_size: int | None = None) -> None:
        super().__init__(device, batch_size)
        self.steps = {"train": 0, "eval": 0}

    def train_step(self, inputs: Any) -> None:
        super().train_step(inputs)
        self.steps["train"] += 1

    def eval_step(self, inputs: Any) -> None:
        super().eval_step(inputs)
        self.steps["eval"] += 1


class OneAddPerStep(TinyMLP):
    """Each eval step dispatches exactly one op, and nothing runs before the first."""

    def __init__(self, device: str = "cpu", batch_size: int | None = None) -> None:
        super().__init__(device, batch_size)
        self.x = torch.ones(1)

    def eval(self, niter: int = 1, step_fn: Any = None) -> None:
        for _ in range(niter):
            self.last_output = self.x + 1
            if step_fn:
                step_fn()


class EvalTrainsDeep(EvalTrains):
    """EvalTrains through six kinds of activation: six backward ops."""

    def build(self) -> nn.Module:
        acts = (nn.Sigmoid(), nn.Tanh(), nn.Softplus(), nn.GELU(), nn.ELU(), nn.Hardtanh())
        return nn.Sequential(nn.Linear(8, 2), *acts)


class FrozenTrainWithBatchNorm(FrozenTrain):
    """Trains nothing, though its BatchNorm buffers move: buffers are not parameters."""

    def build(self) -> nn.Module:
        return nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 2))


class ForgetsZeroGradOnce(TinyMLP):
    """Zeroes gradients after every train step but the second."""

    def __init__(self, device: str = "cpu", batch_size: int | None = None) -> None:
        super().__init__(device, batch_size)
        self.step = 0

    def train_step(self, inputs: Any) -> None:
        self.step += 1
        loss = self.loss(inputs)
        loss.backward()
        self.optimizers[0].step()
        if self.step != 2:
            self.optimizers[0].zero_grad()
        self.last_loss = loss.detach()


class OneParameterAccumulates(TinyMLP):
    """Zeroes every gradient except the first layer's weight, which backward reaches last."""

    def train_step(self, inputs: Any) -> None:
        loss = self.loss(inputs)
        loss.backward()
        self.optimizers[0].step()
        for name, parameter in self.module.named_parameters():
            if name != "0.weight":
                parameter.grad = None
        self.last_loss = loss.detach()


class SparseGradientsAccumulate(TinyMLP):
    """An embedding with sparse gradients, never zeroed."""

    def build(self) -> nn.Module:
        return nn.Embedding(10, 2, sparse=True)

    def make_optimizers(self) -> list[torch.optim.Optimizer]:
        return [torch.optim.SGD(self.module.parameters(), lr=0.1)]

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> Any:
        return torch.randint(0, 10, (batch_size,), generator=generator)

    def loss(self, inputs: Any) -> torch.Tensor:
        return self.module(inputs).square().mean()

    def train_step(self, inputs: Any) -> None:
        loss = self.loss(inputs)
        loss.backward()
        self.optimizers[0].step()
        self.last_loss = loss.detach()


class RankOneFails(TinyMLP):
    """Under DistributedDataParallel, rank 1 cannot build the model; rank 0 can."""

    def __init__(self, device: str = "cpu", batch_size: int | None = None) -> None:
        if os.environ.get("RANK") == "1":
            raise RuntimeError("rank one fails on purpose")
        super().__init__(device, batch_size)


class RankOneHangs(TinyMLP):
    """Under DistributedDataParallel, rank 1 never finishes building the model."""

    def __init__(self, device: str = "cpu", batch_size: int | None = None) -> None:
        if os.environ.get("RANK") == "1":
            time.sleep(3600)
        super().__init__(device, batch_size)


class RankOneSegfaults(TinyMLP):
    """Under DistributedDataParallel, rank 1 dies of SIGSEGV in its third train step."""

    def train(self, niter: int = 1, step_fn: Any = None) -> None:
        if os.environ.get("RANK") == "1":
            self.steps_taken = getattr(self, "steps_taken", 0) + niter
            if self.steps_taken > 3:
                os.kill(os.getpid(), signal.SIGSEGV)
        super().train(niter, step_fn)
