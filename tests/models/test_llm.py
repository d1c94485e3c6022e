"""The decoder language models: decode steps that are alike, a cache that does not grow, tokens the cache gets right.

Every test builds the smoke configuration (tiny widths, a context of 16), so the whole module runs in seconds.
"""

from __future__ import annotations

import pytest
import torch

from tests.helpers.templates import is_metadata_only
from torchbenchmark.checks import ops_per_step
from torchbenchmark.measure.flops import count_flops
from torchbenchmark.measure.memory import measure_memory
from torchbenchmark.models import llm
from torchbenchmark.registry import list_models, load_model, meta_of, model_class

DECODE = [name for name in list_models() if meta_of(model_class(name)).family == "llm" and name.endswith("_decode")]
CPU = torch.device("cpu")


def smoke(name: str, **overrides: object) -> llm.CausalLM:
    return load_model(name, **{**meta_of(model_class(name)).smoke, **overrides})


def test_every_architecture_has_a_decode_workload_and_says_what_it_follows() -> None:
    family = [name for name in list_models() if meta_of(model_class(name)).family == "llm"]
    assert sorted(DECODE) == sorted(f"{name}_decode" for name in family if not name.endswith("_decode"))
    assert len(DECODE) >= 3
    for name in family:
        cls = model_class(name)
        assert "Follows " in cls.meta.note, name
        assert is_metadata_only(cls, llm.DecodeLM if name in DECODE else llm.CausalLM), name  # one template each


@pytest.mark.parametrize("name", DECODE)
def test_a_decode_step_dispatches_the_same_ops_every_step(name: str) -> None:
    model = smoke(name)
    counts, backward = ops_per_step(model, "eval", niter=6)
    assert len(set(counts)) == 1, counts
    assert not backward


@pytest.mark.parametrize("name", DECODE)
def test_the_cache_holds_the_same_memory_after_50_steps_as_after_5(name: str) -> None:
    model = smoke(name)
    pointers = [t.data_ptr() for t in model.cache_tensors]
    model.eval(niter=5)
    after_5 = measure_memory(model, "eval", CPU)
    model.eval(niter=45)
    after_50 = measure_memory(model, "eval", CPU)
    assert after_5.peak_mb == after_50.peak_mb
    assert after_5.state_mb == after_50.state_mb
    assert [t.data_ptr() for t in model.cache_tensors] == pointers  # written in place, never reallocated
    assert model.cache_bytes() > 0
    assert after_5.state_mb is not None and after_5.state_mb * 1e6 >= model.cache_bytes()  # the state counts the cache


def _full_forward_logits(model: llm.DecodeLM, tokens: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model.module(input_ids=tokens, use_cache=False).logits[:, -1]


@pytest.mark.parametrize("name", DECODE)
def test_decode_steps_give_the_logits_of_a_forward_pass_over_their_context(name: str) -> None:
    """The cache is right: an attention model's step sees the prompt and its own token (the slot it rewrites
    each step); Mamba's sees every token so far (its state carries them all)."""
    model = smoke(name)
    prompt = model.inputs("eval")["input_ids"]
    context = prompt
    for _ in range(3):
        token = model.next_token
        context = torch.cat([context if model.recurrent else prompt, token], dim=1)
        model.eval(niter=1)
        logits, _ = model.last_output
        assert torch.allclose(logits, _full_forward_logits(model, context), atol=1e-4, rtol=1e-4)
        assert torch.equal(model.next_token, logits.argmax(-1, keepdim=True))  # greedy


@pytest.mark.parametrize("name", ["llama_decode", "mixtral_decode"])
def test_a_decode_step_counts_attention_over_every_cached_position(name: str) -> None:
    model = smoke(name, batch_size=1)
    config = model.module.config
    per_layer = 2 * 2 * config.num_attention_heads * config.head_dim * model.seq_len  # q.k and p.v, one query
    count = count_flops(model, "eval")
    assert count.by_kind["attention"] == per_layer * config.num_hidden_layers
    assert count.note is None


def test_the_experts_grouped_product_is_counted_as_matmul() -> None:
    """Mixtral's experts run as grouped products: each token meets top-k experts, 3 projections each."""
    model = smoke("mixtral_decode", batch_size=1)
    config = model.module.config
    count = count_flops(model, "eval")
    experts = 2 * config.num_experts_per_tok * 3 * config.hidden_size * config.intermediate_size * config.num_hidden_layers
    router = 2 * config.hidden_size * config.num_local_experts * config.num_hidden_layers
    attention_projections = 2 * config.hidden_size * config.head_dim * (2 * config.num_attention_heads + 2 * config.num_key_value_heads)
    head = 2 * config.hidden_size * config.vocab_size
    assert count.by_kind["matmul"] == experts + router + attention_projections * config.num_hidden_layers + head


@pytest.mark.parametrize("name", DECODE)
def test_decode_has_no_train_step(name: str) -> None:
    with pytest.raises(NotImplementedError, match="inference only"):
        smoke(name).train(niter=1)


def test_a_decode_context_needs_two_positions() -> None:
    with pytest.raises(ValueError, match="at least 2 positions"):
        smoke("llama_decode", seq_len=1)
