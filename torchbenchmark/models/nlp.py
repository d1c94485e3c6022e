"""Language models from transformers, built from their config classes with random weights.

One template serves every entry: an entry names its config and model classes, the loss its task uses
and a small config for the smoke test. transformers is imported only when a model is built.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from torchbenchmark.contract import BatchSizes, BenchmarkModel, ModelMeta, Published


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
            inputs.update(self.decoder_inputs(batch_size, mode, generator))
        elif mode == "train":
            # Masked and causal LMs predict their own tokens (causal models shift internally).
            inputs["labels"] = inputs["input_ids"].clone()
        return inputs

    def decoder_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> dict[str, torch.Tensor]:
        """Teacher-forced decoder inputs, and in train the next-token targets they predict.

        Shifted here rather than left to the model: a model derives ``decoder_input_ids`` from the labels
        through its config's ``decoder_start_token_id``, which some configs no longer carry (T5's in
        transformers 5 moved it to the generation config), so that path fails on random-weight builds.
        """
        tokens = torch.randint(0, self.vocab_size, (batch_size, self.seq_len + 1), generator=generator)
        inputs = {"decoder_input_ids": tokens[:, :-1].clone()}
        if mode == "train":
            inputs["labels"] = tokens[:, 1:].clone()
        return inputs

    def make_optimizers(self) -> list[torch.optim.Optimizer]:
        # Fused, as the transformers Trainer defaults to ("adamw_torch_fused") on torch >= 2.8. The unfused
        # loop makes ~10 passes over 100M+ parameters: on a 2-core CPU that alone took longer than the
        # whole forward and backward of a base-size model.
        return [torch.optim.AdamW(self.module.parameters(), lr=1e-4, fused=True)]

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
    base: type[HuggingFaceModel] = HuggingFaceModel,
    published: Published | None = None,
) -> type[HuggingFaceModel]:
    """A registry entry for a transformers model: metadata only, no behaviour.

    ``base`` lets a modality whose inputs are not token ids (speech) reuse the template through a
    subclass that overrides only :meth:`HuggingFaceModel.make_inputs`.
    """
    meta = ModelMeta(
        name=name,
        family=family,
        batch_sizes=batch_sizes,
        smoke={"batch_size": 2, "seq_len": 16, "config": dict(smoke_config)},
        note=note,
        published=published,
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
    return type(name, (base,), attributes)


# How the CPU batch sizes of the entries below were chosen; each note adds its own figures.
_HOW_MEASURED = (
    " Measured as single-thread CPU time per step, median of 3 after 2 warmup steps, because the shared 2-core"
    " machine was loaded and wall times were not repeatable; an idle 2-thread step takes roughly half as long."
    " Target: a default train step well under 1 s idle."
)

_TINY_BERT_LIKE = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 2, "intermediate_size": 128}

hf_Bert = hf_model(
    "hf_Bert",
    "BertConfig",
    "BertForMaskedLM",
    "masked-lm",
    batch_sizes=BatchSizes(cpu_train=2, cpu_eval=4, cuda_train=32, cuda_eval=64),
    smoke_config=_TINY_BERT_LIKE,
    note=(
        "BertConfig() defaults (bert-base, 110M). CPU batch 2/4 (train/eval), in line with the other base-size "
        "encoders: batch 4 train took about 3 s CPU, over the target." + _HOW_MEASURED
    ),
    published=Published(
        "bert-base-uncased (BertModel)",
        params=109_482_240,
        params_difference=32_058,
        differs=(
            "Parameters: +32,058, BertForMaskedLM's head in place of BertModel's pooler: -590,592 pooler, +590,592 "
            "prediction transform, +1,536 its LayerNorm, +30,522 output bias (the decoder is tied to the word embeddings)."
        ),
    ),
)

hf_GPT2 = hf_model(
    "hf_GPT2",
    "GPT2Config",
    "GPT2LMHeadModel",
    "causal-lm",
    batch_sizes=BatchSizes(cpu_train=1, cpu_eval=2, cuda_train=16, cuda_eval=32),
    smoke_config={"n_layer": 2, "n_embd": 64, "n_head": 2},
    note=(
        "GPT2Config() defaults (gpt2, 124M). CPU batch 1/2 (train/eval): default train step 1.35 s CPU "
        "(about 0.65 s of it does not scale with batch: AdamW over 124M parameters, the 50k-vocab head), "
        "eval 0.53 s, peak RSS 3.1 GiB; batch 2 train took 2.0 s CPU, over the target." + _HOW_MEASURED
    ),
    published=Published("gpt2 (GPT2LMHeadModel, head tied to the embeddings)", params=124_439_808),
)

hf_T5 = hf_model(
    "hf_T5",
    "T5Config",
    "T5ForConditionalGeneration",
    "seq2seq",
    batch_sizes=BatchSizes(cpu_train=2, cpu_eval=4, cuda_train=32, cuda_eval=64),
    smoke_config={
        "num_layers": 2,
        "num_decoder_layers": 2,
        "d_model": 64,
        "d_ff": 128,
        "d_kv": 32,
        "num_heads": 2,
    },
    note=(
        "T5Config() defaults (t5-small, 60M). CPU batch 2/4 (train/eval): default train step 1.22 s CPU, eval "
        "0.54 s, peak RSS 2.1 GiB; batch 4 train took 2.2 s CPU." + _HOW_MEASURED
    ),
    published=Published("t5-small (T5ForConditionalGeneration, head tied to the embeddings)", params=60_506_624),
)

# BartConfig() is bart-large (406M): with AdamW state that is about 6.5 GB before activations, over the
# 4 GiB CPU budget, so the default is bart-base's shape (140M), as the original torchbench entry used.
hf_Bart = hf_model(
    "hf_Bart",
    "BartConfig",
    "BartForConditionalGeneration",
    "seq2seq",
    batch_sizes=BatchSizes(cpu_train=1, cpu_eval=2, cuda_train=16, cuda_eval=32),
    smoke_config={
        "encoder_layers": 1,
        "decoder_layers": 1,
        "d_model": 64,
        "encoder_attention_heads": 2,
        "decoder_attention_heads": 2,
        "encoder_ffn_dim": 128,
        "decoder_ffn_dim": 128,
    },
    config={
        "d_model": 768,
        "encoder_layers": 6,
        "decoder_layers": 6,
        "encoder_attention_heads": 12,
        "decoder_attention_heads": 12,
        "encoder_ffn_dim": 3072,
        "decoder_ffn_dim": 3072,
    },
    note=(
        "bart-base shape (BartConfig() is bart-large, over the CPU memory budget). CPU batch 1/2 "
        "(train/eval): default train step 1.52 s CPU, eval 0.65 s, peak RSS 3.3 GiB; batch 2 train took 2.4 s "
        "CPU." + _HOW_MEASURED
    ),
    published=Published("bart-base (BartModel; the LM head is tied to the embeddings)", params=139_420_416),
)

hf_DistilBert = hf_model(
    "hf_DistilBert",
    "DistilBertConfig",
    "DistilBertForMaskedLM",
    "masked-lm",
    batch_sizes=BatchSizes(cpu_train=2, cpu_eval=4, cuda_train=32, cuda_eval=64),
    smoke_config={"n_layers": 2, "dim": 64, "n_heads": 2, "hidden_dim": 128},
    note=(
        "DistilBertConfig() defaults (distilbert-base, 66M). CPU batch 2/4 (train/eval): default train step "
        "1.06 s CPU, eval 0.51 s, peak RSS 2.1 GiB; batch 4 train took 2.0 s CPU." + _HOW_MEASURED
    ),
    published=Published(
        "distilbert-base-uncased (DistilBertModel)",
        params=66_362_880,
        params_difference=622_650,
        differs=(
            "Parameters: +622,650, DistilBertForMaskedLM's head: +590,592 vocab transform, +1,536 its LayerNorm, "
            "+30,522 output bias (the projector is tied to the word embeddings)."
        ),
    ),
)

# AlbertConfig() is albert-xxlarge (hidden 4096, 64 heads): 223M parameters whose AdamW state alone nears
# the 4 GiB CPU budget and whose step takes many seconds, so the default is albert-base-v2's shape.
hf_Albert = hf_model(
    "hf_Albert",
    "AlbertConfig",
    "AlbertForMaskedLM",
    "masked-lm",
    batch_sizes=BatchSizes(cpu_train=2, cpu_eval=4, cuda_train=32, cuda_eval=64),
    smoke_config={**_TINY_BERT_LIKE, "embedding_size": 32},
    config={"hidden_size": 768, "num_attention_heads": 12, "intermediate_size": 3072},
    note=(
        "albert-base-v2 shape (AlbertConfig() is albert-xxlarge, too slow and large for CPU). CPU batch 2/4 "
        "(train/eval): default train step 1.34 s CPU, eval 0.83 s, peak RSS 1.4 GiB; batch 4 train took 2.4 s "
        "CPU." + _HOW_MEASURED
    ),
    published=Published(
        "albert-base-v2 (AlbertModel)",
        params=11_683_584,
        params_difference=-461_904,
        differs=(
            "Parameters: -461,904, AlbertForMaskedLM's head in place of AlbertModel's pooler: -590,592 pooler, "
            "+98,432 prediction dense, +256 its LayerNorm, +30,000 output bias (the decoder is tied to the embeddings)."
        ),
    ),
)
