"""DLRM (Naumov et al., 2019): embedding bags for sparse features, MLPs for dense ones, pairwise dot interaction."""

from __future__ import annotations

import torch
from torch import nn

from torchbenchmark.contract import BatchSizes, BenchmarkModel, ModelMeta


def mlp(sizes: list[int], final_sigmoid: bool = False) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (fan_in, fan_out) in enumerate(zip(sizes, sizes[1:])):
        layers.append(nn.Linear(fan_in, fan_out))
        last = i == len(sizes) - 2
        layers.append(nn.Sigmoid() if last and final_sigmoid else nn.ReLU())
    return nn.Sequential(*layers)


class DLRMNet(nn.Module):
    def __init__(self, num_dense: int, table_rows: list[int], dim: int, bottom: list[int], top: list[int]) -> None:
        super().__init__()
        self.bottom_mlp = mlp([num_dense, *bottom, dim])
        # Sparse gradients, as in the reference DLRM: only the looked-up rows are updated.
        self.tables = nn.ModuleList(nn.EmbeddingBag(rows, dim, mode="sum", sparse=True) for rows in table_rows)
        num_features = len(table_rows) + 1
        self.register_buffer("pairs", torch.tril_indices(num_features, num_features, offset=-1), persistent=False)
        interactions = num_features * (num_features - 1) // 2
        self.top_mlp = mlp([dim + interactions, *top, 1], final_sigmoid=True)

    def forward(self, dense: torch.Tensor, indices: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        # indices: (tables, batch * lookups), offsets: (tables, batch): one bag per sample per table.
        x = self.bottom_mlp(dense)
        embedded = [table(indices[t], offsets[t]) for t, table in enumerate(self.tables)]
        features = torch.stack([x, *embedded], dim=1)  # (batch, tables + 1, dim)
        dots = torch.bmm(features, features.transpose(1, 2))
        interactions = dots[:, self.pairs[0], self.pairs[1]]  # strictly lower triangle: each pair once
        return self.top_mlp(torch.cat([x, interactions], dim=1)).squeeze(1)


class DLRM(BenchmarkModel):
    meta = ModelMeta(
        name="dlrm",
        family="recommendation",
        batch_sizes=BatchSizes(cpu_train=512, cpu_eval=1024, cuda_train=2048, cuda_eval=4096),
        smoke={"batch_size": 8, "num_tables": 3, "rows_per_table": 100, "embedding_dim": 8},
        note="Criteo-like shape: 13 dense features, 26 tables, 20 lookups per bag; CPU batch keeps a train step near 0.1 s.",
    )

    def __init__(
        self,
        device: str | torch.device = "cpu",
        batch_size: int | None = None,
        num_tables: int = 26,
        rows_per_table: int = 100_000,
        embedding_dim: int = 64,
        lookups_per_bag: int = 20,
    ) -> None:
        self.num_dense = 13
        self.num_tables = num_tables
        self.rows_per_table = rows_per_table
        self.embedding_dim = embedding_dim
        self.lookups_per_bag = lookups_per_bag
        super().__init__(device=device, batch_size=batch_size)
        self.loss_fn = nn.BCELoss()

    def build(self) -> nn.Module:
        return DLRMNet(
            self.num_dense,
            [self.rows_per_table] * self.num_tables,
            self.embedding_dim,
            bottom=[512, 256],
            top=[512, 256],
        )

    def make_optimizers(self) -> list[torch.optim.Optimizer]:
        return [torch.optim.SGD(self.module.parameters(), lr=0.01)]  # plain SGD takes sparse gradients

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> tuple[torch.Tensor, ...]:
        dense = torch.rand(batch_size, self.num_dense, generator=generator)
        lookups = batch_size * self.lookups_per_bag
        indices = torch.randint(0, self.rows_per_table, (self.num_tables, lookups), generator=generator)
        offsets = (torch.arange(batch_size) * self.lookups_per_bag).expand(self.num_tables, batch_size).contiguous()
        if mode == "eval":
            return dense, indices, offsets
        clicks = torch.randint(0, 2, (batch_size,), generator=generator).float()
        return dense, indices, offsets, clicks

    def loss(self, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
        *features, clicks = inputs
        return self.loss_fn(self.module(*features), clicks)
