"""Decoder language models from transformers' config classes: a causal-LM template and a decode template.

Each architecture is two registry entries built from one config:
- ``<model>``: ``train`` is a causal-LM step on a sequence (forward, loss, backward, optimizer); ``eval`` is
  the prefill of a prompt: one forward pass over it that fills a fresh cache and picks the first token.
- ``<model>_decode``: ``eval`` generates one token for each sequence of the batch from a cache filled once,
  at build, with the model's own greedy pick fed back as the next input. Every step does the same work
  at the same context length, and the cache never grows:
  - attention models keep a ``StaticCache`` of ``seq_len`` positions, the prompt in the first
    ``seq_len - 1``; each step writes its token's keys and values at the last position, attends over all
    ``seq_len`` and then rolls the cache's length back by one (``Cache.crop(-1)``), so the next step
    writes the same slot: the same shapes, the same writes, the same attention every step;
  - Mamba keeps its recurrent state (a convolution window and an SSM state per layer), fixed in size by
    construction and updated in place, so any number of steps costs the same.
  A decode model has no ``train`` (NotImplementedError: a skipped row). Its cache is state that eval
  writes, neither parameter nor buffer: eval still changes no parameter and no buffer. The cache's
  tensors are held in ``cache_tensors``, so the memory count sees them (``Costs.cache_memory_mb``).

Weights are random, nothing is downloaded; transformers is imported only when a model is built. Without
the fused kernels (``mamba_ssm``, ``causal_conv1d``), Mamba runs transformers' PyTorch path: its scan is a
loop over time steps in train and eval, a single state update per layer in decode.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import torch
from torch.profiler import record_function

from torchbenchmark.contract import BatchSizes, ModelMeta, StepFn, iter_tensors
from torchbenchmark.models.nlp import HuggingFaceModel

FAMILY = "llm"
# GPU defaults: a train batch and a prefill batch of a base-size model; decode at a small serving batch.
_TRAIN = BatchSizes(cpu_train=1, cpu_eval=1, cuda_train=8, cuda_eval=16)
_DECODE = BatchSizes(cpu_train=1, cpu_eval=1, cuda_train=8, cuda_eval=8)
DECODE_TRAIN_UNSUPPORTED = "a decode workload runs inference only: its train step is the causal-LM model's"


class CausalLM(HuggingFaceModel):
    """A decoder trained on random token ids (causal-LM loss); its eval is a prompt's prefill."""

    task = "causal-lm"

    def infer(self, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        # Prefill as generation runs it: a fresh cache written over the whole prompt, logits of the last
        # position only, and the greedy pick of the first new token.
        output = self.module(**inputs, use_cache=True, logits_to_keep=1)
        logits = output.logits[:, -1]
        return logits, logits.argmax(-1)


class DecodeLM(CausalLM):
    """One generated token per sequence per step, from a cache filled once at build (module docstring)."""

    recurrent: bool = False  # True: the model's cache is a recurrent state (Mamba), not keys and values

    def __init__(
        self,
        device: str | torch.device = "cpu",
        batch_size: int | None = None,
        seq_len: int | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(device=device, batch_size=batch_size, seq_len=seq_len, config=config)
        if self.seq_len < 2:
            raise ValueError(f"a decode context needs at least 2 positions, got seq_len={self.seq_len}")
        self.module.eval()
        with torch.no_grad():
            self._prefill()

    def make_optimizers(self) -> list[torch.optim.Optimizer]:
        return []  # inference only

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> dict[str, torch.Tensor]:
        # The prompt the cache is filled from: every position but the one each step writes.
        return {"input_ids": torch.randint(0, self.vocab_size, (batch_size, self.seq_len - 1), generator=generator)}

    def new_cache(self) -> Any:
        """An empty cache; the prefill allocates its tensors, and no later step allocates another."""
        import transformers

        config = self.module.config
        if self.recurrent:
            return transformers.DynamicCache(config=config)
        return transformers.StaticCache(config=config, max_cache_len=self.seq_len)

    def _prefill(self) -> None:
        prompt = self.inputs("eval")["input_ids"]
        batch_size = prompt.shape[0]
        self.cache = self.new_cache()
        output = self.module(input_ids=prompt, cache=self.cache, use_cache=True, logits_to_keep=1)
        self.next_token = output.logits[:, -1].argmax(-1, keepdim=True)
        # The position every step's token takes: the last of the context (attention models only).
        self.step_kwargs: dict[str, Any] = {}
        if not self.recurrent:
            position = torch.full((batch_size, 1), self.seq_len - 1, dtype=torch.long, device=self.device)
            self.step_kwargs["position_ids"] = position
        # Held as an attribute so every count of the model's tensors (memory) sees the cache.
        self.cache_tensors = tuple(t for layer in self.cache.layers for t in iter_tensors(list(vars(layer).values())))

    def cache_bytes(self) -> int:
        """What the cache holds (keys and values, or the recurrent state), each storage once."""
        storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in self.cache_tensors}
        return sum(storages.values())

    def train(self, niter: int = 1, step_fn: StepFn | None = None) -> None:
        raise NotImplementedError(DECODE_TRAIN_UNSUPPORTED)

    def eval_step(self, inputs: Any) -> None:
        with record_function("forward"):
            output = self.module(input_ids=self.next_token, cache=self.cache, use_cache=True, **self.step_kwargs)
            logits = output.logits[:, -1]
            token = logits.argmax(-1, keepdim=True)  # greedy sampling
            if not self.recurrent:
                self.cache.crop(-1)  # the next step writes the same slot (module docstring)
        self.next_token = token
        self.last_output = (logits, token)


@dataclasses.dataclass(frozen=True)
class Architecture:
    """One published model, scaled: the config both of its registry entries are built from."""

    config_class: str  # e.g. "LlamaConfig"
    model_class: str  # e.g. "LlamaForCausalLM"
    config: Mapping[str, Any]
    smoke: Mapping[str, Any]  # a config small enough for the smoke test
    note: str  # which published model it follows and how it was scaled
    recurrent: bool = False  # its cache is a recurrent state, not keys and values
    seq_len: int = 128  # the sequence a train step learns from and a prefill reads


def llm_model(name: str, architecture: Architecture, decode: bool = False) -> type[CausalLM]:
    """A registry entry: the causal-LM model, or (``decode``) its decode workload."""
    cache = _RECURRENT if architecture.recurrent else _STATIC
    meta = ModelMeta(
        name=name,
        family=FAMILY,
        batch_sizes=_DECODE if decode else _TRAIN,
        smoke={"batch_size": 2, "seq_len": 16, "config": dict(architecture.smoke)},
        note=architecture.note + (_DECODE_NOTE.format(cache=cache) if decode else ""),
        scale_batch_up=decode,
    )
    attributes = {
        "meta": meta,
        "config_class": architecture.config_class,
        "model_class": architecture.model_class,
        "seq_len": DECODE_CONTEXT if decode else architecture.seq_len,
        "config_overrides": dict(architecture.config),
        "recurrent": architecture.recurrent,
        "__module__": __name__,
    }
    return type(name, (DecodeLM if decode else CausalLM,), attributes)


DECODE_CONTEXT = 256  # the positions a decode step attends to: the prompt and its own token
_DECODE_NOTE = (
    " Decode: one token per sequence per step at a fixed context of 256 positions, greedy, the cache filled"
    " once at build ({cache}); train not supported. Batch 1 on CPU, 8 on CUDA."
)
_STATIC = "a StaticCache written at its last position each step, its length rolled back after"
_RECURRENT = "its recurrent state, fixed in size and updated in place"

# Llama-3.2-1B: hidden 2048, 16 layers, 32 query and 8 key/value heads of 64 (GQA 4:1), SwiGLU FFN 8192 (4x),
# RMSNorm, rotary theta 500000, tied embeddings, vocabulary 128256. A quarter of its width and depth.
LLAMA = Architecture(
    "LlamaConfig",
    "LlamaForCausalLM",
    config={
        "hidden_size": 512,
        "intermediate_size": 2048,
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "vocab_size": 32000,
        "tie_word_embeddings": True,
        "max_position_embeddings": 2048,
        "rope_parameters": {"rope_type": "default", "rope_theta": 500000.0},
    },
    smoke={
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 8,
        "vocab_size": 128,
    },  # fmt: skip
    note=(
        "Follows Llama-3.2-1B (LlamaConfig: RMSNorm, rotary, SwiGLU, grouped-query attention) at a quarter of its "
        "width and depth: hidden 512, 4 layers, 8 query and 2 key/value heads of 64 (GQA 4:1 kept), FFN 2048 (4x "
        "kept), tied embeddings, rope theta 500000; vocabulary 32000 (Llama 2's) so the head does not dominate."
    ),
)

# Mixtral-8x7B: hidden 4096, 32 layers, 32 query and 8 key/value heads of 128 (GQA 4:1), 8 SwiGLU experts of
# 14336 (3.5x) with top-2 routing, rotary theta 1e6, vocabulary 32000, untied.
MIXTRAL = Architecture(
    "MixtralConfig",
    "MixtralForCausalLM",
    config={
        "hidden_size": 256,
        "intermediate_size": 896,
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 32,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
        "vocab_size": 32000,
        "sliding_window": None,
        "max_position_embeddings": 2048,
        "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0},
    },
    smoke={
        "hidden_size": 32,
        "intermediate_size": 56,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 8,
        "vocab_size": 128,
    },  # fmt: skip
    note=(
        "Follows Mixtral-8x7B (MixtralConfig: 8 SwiGLU experts, top-2 routing, grouped-query attention) at 1/16 of "
        "its width and 1/8 of its depth: hidden 256, 4 layers, 8 query and 2 key/value heads of 32 (GQA 4:1 kept), "
        "experts of 896 (3.5x kept), 8 experts top-2 (kept), vocabulary 32000 (kept). The experts run transformers' "
        "default grouped_mm path: one grouped product per projection, whichever experts the router picks, so the "
        "op count does not depend on the routing."
    ),
)

# mamba-130m: hidden 768, 24 layers, SSM state 16, expand 2, convolution 4, dt rank hidden/16, vocabulary
# 50280, tied embeddings. A third of its width and a sixth of its depth.
MAMBA = Architecture(
    "MambaConfig",
    "MambaForCausalLM",
    config={
        "hidden_size": 256,
        "num_hidden_layers": 4,
        "state_size": 16,
        "expand": 2,
        "conv_kernel": 4,
        "vocab_size": 50280,
        "tie_word_embeddings": True,
    },
    smoke={"hidden_size": 16, "num_hidden_layers": 2, "state_size": 4, "vocab_size": 128},
    note=(
        "Follows mamba-130m (MambaConfig: selective state-space layers, no attention) at a third of its width and a "
        "sixth of its depth: hidden 256, 4 layers, SSM state 16, expand 2, convolution 4, dt rank hidden/16 (all "
        "kept), vocabulary 50280 (kept). Without mamba_ssm and causal_conv1d installed it runs transformers' PyTorch "
        "path, whose scan over a sequence is a loop of small ops per time step: train and prefill read 64 tokens, "
        "not 128, so that a train step stays under a second."
    ),
    recurrent=True,
    seq_len=64,
)

llama = llm_model("llama", LLAMA)
llama_decode = llm_model("llama_decode", LLAMA, decode=True)
mixtral = llm_model("mixtral", MIXTRAL)
mixtral_decode = llm_model("mixtral_decode", MIXTRAL, decode=True)
mamba = llm_model("mamba", MAMBA)
mamba_decode = llm_model("mamba_decode", MAMBA, decode=True)
