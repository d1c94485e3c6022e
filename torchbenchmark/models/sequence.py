"""A word-level LSTM language model, as in PyTorch's word_language_model example, on random token ids."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from torchbenchmark.contract import BatchSizes, BenchmarkModel, ModelMeta


class LSTMNet(nn.Module):
    """Embedding, stacked LSTM, and a decoder that shares the embedding's weights."""

    def __init__(self, vocab_size: int, dim: int, num_layers: int, dropout: float) -> None:
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(vocab_size, dim)
        self.rnn = nn.LSTM(dim, dim, num_layers, dropout=dropout, batch_first=True)
        self.decoder = nn.Linear(dim, vocab_size)
        # Weight tying (Press & Wolf, 2017) is why the hidden size must equal the embedding size.
        self.decoder.weight = self.encoder.weight
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        # No hidden state is carried between steps, so each step is the same work and independent.
        output, _ = self.rnn(self.drop(self.encoder(tokens)))
        return self.decoder(self.drop(output))  # (batch, seq_len, vocab)


class LSTMLanguageModel(BenchmarkModel):
    meta = ModelMeta(
        name="lstm_lm",
        family="sequence",
        batch_sizes=BatchSizes(cpu_train=20, cpu_eval=20, cuda_train=64, cuda_eval=64),
        smoke={"batch_size": 2, "vocab_size": 500, "dim": 32, "seq_len": 8},
        note=(
            "CPU batch 20 is the example's own; its train step measured 1.1 s, eval 0.33 s (35 tokens, "
            "33k-word decoder; median of 5 after warmup, one thread on a loaded 2-core machine)."
        ),
    )

    def __init__(
        self,
        device: str | torch.device = "cpu",
        batch_size: int | None = None,
        vocab_size: int = 33278,  # WikiText-2's vocabulary, the example's dataset
        dim: int = 200,  # the example's default embedding and hidden size
        num_layers: int = 2,
        seq_len: int = 35,  # the example's bptt
        dropout: float = 0.2,
    ) -> None:
        self.vocab_size = vocab_size
        self.dim = dim
        self.num_layers = num_layers
        self.seq_len = seq_len
        self.dropout = dropout
        super().__init__(device=device, batch_size=batch_size)

    def build(self) -> nn.Module:
        return LSTMNet(self.vocab_size, self.dim, self.num_layers, self.dropout)

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> tuple[torch.Tensor, ...]:
        # One extra token so the targets are the inputs shifted by one.
        tokens = torch.randint(0, self.vocab_size, (batch_size, self.seq_len + 1), generator=generator)
        if mode == "eval":
            return (tokens[:, :-1],)
        return tokens[:, :-1], tokens[:, 1:]

    def loss(self, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
        tokens, targets = inputs
        logits = self.module(tokens)
        return F.cross_entropy(logits.reshape(-1, self.vocab_size), targets.reshape(-1))
