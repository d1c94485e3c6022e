"""MAML (Finn et al., 2017): few-shot classification of synthetic Omniglot-sized images."""

from __future__ import annotations

import torch
from torch import nn
from torch.func import functional_call
from torch.nn import functional as F

from torchbenchmark.contract import BatchSizes, BenchmarkModel, ModelMeta


def conv_block(cin: int, cout: int) -> list[nn.Module]:
    # No running statistics, as in the reference MAML: every forward normalises with its own batch
    # (a task's support or query set), and the network holds no buffers for eval to disturb.
    norm = nn.BatchNorm2d(cout, track_running_stats=False)
    return [nn.Conv2d(cin, cout, 3, padding=1), norm, nn.ReLU(), nn.MaxPool2d(2)]


def omniglot_net(n_way: int, width: int) -> nn.Sequential:
    """Finn et al.'s 4-conv Omniglot classifier: 28x28 -> 14 -> 7 -> 3 -> 1 spatially."""
    return nn.Sequential(
        *conv_block(1, width),
        *conv_block(width, width),
        *conv_block(width, width),
        *conv_block(width, width),
        nn.Flatten(),
        nn.Linear(width, n_way),
    )


class MAML(BenchmarkModel):
    meta = ModelMeta(
        name="maml",
        family="meta-learning",
        # The batch size is the meta-batch: tasks per outer update (Finn et al. use 32 for Omniglot).
        batch_sizes=BatchSizes(cpu_train=8, cpu_eval=8, cuda_train=32, cuda_eval=32),
        smoke={"batch_size": 2, "width": 8, "k_query": 2},
        annotated=False,
        note=(
            "Unannotated: the inner loop's gradients (autograd.grad with create_graph) are taken inside the "
            "outer forward, so a step has no separate forward/backward/optimizer phases. Eval is the "
            "meta-learned network on the query sets without adaptation, so it does none of train's work. "
            "CPU meta-batch 8 (5-way 1-shot, 15 queries): default train step 1.10 s single-thread CPU, "
            "eval 0.43 s (median of 3; the shared 2-core machine was loaded, an idle 2-thread step is roughly "
            "half that), peak RSS 1.2 GiB; Finn et al.'s 32 tasks would take about 4x as long."
        ),
    )

    def __init__(
        self,
        device: str | torch.device = "cpu",
        batch_size: int | None = None,
        n_way: int = 5,
        k_shot: int = 1,
        k_query: int = 15,
        inner_steps: int = 1,
        inner_lr: float = 0.4,  # Finn et al.'s Omniglot settings: one step of size 0.4
        width: int = 64,
    ) -> None:
        self.n_way, self.k_shot, self.k_query = n_way, k_shot, k_query
        self.inner_steps, self.inner_lr, self.width = inner_steps, inner_lr, width
        super().__init__(device=device, batch_size=batch_size)

    def build(self) -> nn.Module:
        return omniglot_net(self.n_way, self.width)

    def make_optimizers(self) -> list[torch.optim.Optimizer]:
        return [torch.optim.Adam(self.module.parameters(), lr=1e-3)]

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> dict[str, torch.Tensor]:
        def split(shots: int) -> tuple[torch.Tensor, torch.Tensor]:
            images = torch.rand(batch_size, self.n_way * shots, 1, 28, 28, generator=generator)
            labels = torch.arange(self.n_way).repeat_interleave(shots).expand(batch_size, -1).clone()
            return images, labels

        query_x, query_y = split(self.k_query)
        if mode == "eval":
            return {"query_x": query_x}
        support_x, support_y = split(self.k_shot)
        return {"support_x": support_x, "support_y": support_y, "query_x": query_x, "query_y": query_y}

    def adapt(self, support_x: torch.Tensor, support_y: torch.Tensor) -> dict[str, torch.Tensor]:
        """Fast weights after the inner loop, differentiable with respect to the meta-parameters."""
        params = dict(self.module.named_parameters())
        for _ in range(self.inner_steps):
            loss = F.cross_entropy(functional_call(self.module, params, (support_x,)), support_y)
            # create_graph: the outer update differentiates through this step (second-order MAML).
            grads = torch.autograd.grad(loss, list(params.values()), create_graph=True)
            params = {name: p - self.inner_lr * g for (name, p), g in zip(params.items(), grads)}
        return params

    def train_step(self, batch: dict[str, torch.Tensor]) -> None:
        (optimizer,) = self.optimizers
        optimizer.zero_grad(set_to_none=True)
        tasks = batch["query_x"].shape[0]
        meta_loss = torch.zeros((), device=self.device)
        for t in range(tasks):
            fast = self.adapt(batch["support_x"][t], batch["support_y"][t])
            logits = functional_call(self.module, fast, (batch["query_x"][t],))
            meta_loss = meta_loss + F.cross_entropy(logits, batch["query_y"][t])
        meta_loss = meta_loss / tasks
        meta_loss.backward()
        optimizer.step()
        self.last_loss = meta_loss.detach()

    def infer(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        # One forward per task: the batch-statistics BatchNorm must normalise each query set on its own.
        return torch.stack([self.module(query) for query in inputs["query_x"]])
