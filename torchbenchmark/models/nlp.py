"""Language models from transformers, built from their config classes with random weights.

One template serves every entry: an entry names its config and model classes, the loss its task uses
and a small config for the smoke test. transformers is imported only when a model is built.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from torchbenchmark.contract import BatchSizes, BenchmarkModel, ModelMeta


class HuggingFaceModel(BenchmarkModel):
    """A transformers model trained on random token ids with the loss of its task."""

    config_class: str  # e.g. "BertConfig"
    model_class: str  # e.g. "BertForMaskedLM"
    task: str  # "masked-lm", "causal-lm" or "seq2seq": decides which labels the loss sees
    config_overrides: Mapping[str, Any] = {}
    seq_len: int = 128

    def __init__(
        self,
        device: str | torch.device = "cpu",
        batch_size: int | None = None,
        seq_len: int | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        if seq_len is not None:
            self.seq_len = seq_len
        self.config_overrides = {**self.config_overrides, **(config or {})}
        super().__init__(device=device, batch_size=batch_size)

    def build(self) -> nn.Module:
        import transformers  # heavy: imported only when a language model is built

        config = getattr(transformers, self.config_class)(**self.config_overrides)
        self.vocab_size = config.vocab_size
        return getattr(transformers, self.model_class)(config)

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> dict[str, torch.Tensor]:
        shape = (batch_size, self.seq_len)
        inputs = {
            "input_ids": torch.randint(0, self.vocab_size, shape, generator=generator),
            "attention_mask": torch.ones(shape, dtype=torch.long),
        }
        if self.task == "seq2seq":
            inputs["decoder_input_ids"] = torch.randint(0, self.vocab_size, shape, generator=generator)
        if mode == "train":
            # Masked and causal LMs predict their own tokens (causal models shift internally);
            # seq2seq models predict the decoder's targets.
            inputs["labels"] = (inputs["decoder_input_ids"] if self.task == "seq2seq" else inputs["input_ids"]).clone()
            if self.task == "seq2seq":
                del inputs["decoder_input_ids"]  # derived from the labels by the model
        return inputs

    def make_optimizers(self) -> list[torch.optim.Optimizer]:
        return [torch.optim.AdamW(self.module.parameters(), lr=1e-4)]

    def loss(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.module(**inputs).loss

    def infer(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.module(**inputs).logits


def hf_model(
    name: str,
    config_class: str,
    model_class: str,
    task: str,
    batch_sizes: BatchSizes,
    smoke_config: Mapping[str, Any],
    seq_len: int = 128,
    config: Mapping[str, Any] | None = None,
    family: str = "nlp",
    note: str = "",
) -> type[HuggingFaceModel]:
    """A registry entry for a transformers model: metadata only, no behaviour."""
    meta = ModelMeta(
        name=name,
        family=family,
        batch_sizes=batch_sizes,
        smoke={"batch_size": 2, "seq_len": 16, "config": dict(smoke_config)},
        note=note,
    )
    attributes = {
        "meta": meta,
        "config_class": config_class,
        "model_class": model_class,
        "task": task,
        "seq_len": seq_len,
        "config_overrides": dict(config or {}),
        "__module__": __name__,
    }
    return type(name, (HuggingFaceModel,), attributes)


_TINY_BERT_LIKE = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 2, "intermediate_size": 128}

# CPU batch sizes keep a default train step between about 0.05 and 2 s on a 2-core machine.
hf_Bert = hf_model(
    "hf_Bert", "BertConfig", "BertForMaskedLM", "masked-lm",
    batch_sizes=BatchSizes(cpu_train=4, cpu_eval=8, cuda_train=32, cuda_eval=64),
    smoke_config=_TINY_BERT_LIKE,
)
