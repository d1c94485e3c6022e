"""Models by transformers class name (``hf:<ClassName>``): offered, built from configs, fed, trained, declined.

The quick tests build smoke configurations (two layers of width 64, sequences of 16), a few seconds each; the
slow one steps every class of the dynamo harness's offline list.
"""

from __future__ import annotations

import ast
import inspect
import math
import sys
from typing import Any

import pytest
import torch

from tests.helpers.source_models import tryout
from torchbenchmark.contract import DoesNotFit
from torchbenchmark.models import _fit, source_hf

# class -> (family, the keys a train step's inputs carry beyond the main input)
SAMPLE = {
    "AlbertForMaskedLM": ("nlp", {"labels"}),
    "GPT2ForSequenceClassification": ("nlp", {"labels"}),  # batch 2: needs the pad id its default config lacks
    "T5ForConditionalGeneration": ("nlp", {"decoder_input_ids", "labels"}),
    "BertForQuestionAnswering": ("nlp", {"start_positions", "end_positions"}),
    "ViTForImageClassification": ("vision-classification", {"labels"}),
    "WhisperForConditionalGeneration": ("speech", {"decoder_input_ids", "labels"}),
    "Wav2Vec2ForCTC": ("speech", {"labels"}),
}


def smoke(name: str, **overrides: Any) -> source_hf.TransformersModel:
    cls = source_hf.model_class(name)
    return cls(**{**cls.meta.smoke, **overrides})


def counted_steps(model: source_hf.TransformersModel, mode: str, niter: int) -> int:
    calls = []
    getattr(model, mode)(niter=niter, step_fn=lambda: calls.append(1))
    return len(calls)


def test_it_offers_the_dynamo_list_and_every_causal_lm_sorted() -> None:
    import transformers

    names = source_hf.names()
    assert names == sorted(names) and len(names) == len(set(names)) > 1000
    assert len(source_hf.DYNAMO_OFFLINE) == len(set(source_hf.DYNAMO_OFFLINE)) == 42
    assert set(source_hf.DYNAMO_OFFLINE) <= set(names)
    causal_lms = {name for name in dir(transformers) if name.endswith("ForCausalLM") and not name.startswith("Auto")}
    assert causal_lms - set(names) == set()
    assert {"LlamaForCausalLM", "GPT2LMHeadModel", "XLNetLMHeadModel", "BertModel"} <= set(names)


def test_importing_the_module_does_not_import_transformers() -> None:
    tree = ast.parse(inspect.getsource(source_hf))
    top_level = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    imported = {alias.name for node in top_level if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in top_level if isinstance(node, ast.ImportFrom)}
    assert not any(module.split(".")[0] == "transformers" for module in imported), imported


def test_without_transformers_names_and_model_class_raise_import_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "transformers", None)  # what `import transformers` finds when it is not installed
    source_hf._index.cache_clear()
    source_hf.model_class.cache_clear()
    with pytest.raises(ImportError):
        source_hf.names()
    with pytest.raises(ImportError):
        source_hf.model_class("BertModel")


@pytest.mark.parametrize(("asked", "suggested"), [("AlbertForMaskedLMM", "AlbertForMaskedLM"), ("gpt2lmheadmodel", "GPT2LMHeadModel")])
def test_an_unknown_name_raises_lookup_error_naming_close_matches(asked: str, suggested: str) -> None:
    with pytest.raises(LookupError, match=f"hf:{asked} .*close matches: .*{suggested}"):
        source_hf.model_class(asked)


def test_a_name_with_no_close_match_says_where_the_names_are() -> None:
    with pytest.raises(LookupError, match="list hf"):
        source_hf.model_class("Zzzzqqqq")


@pytest.mark.parametrize("name", sorted(SAMPLE))
def test_a_sample_class_trains_and_evaluates_one_step_per_step_fn_call(name: str) -> None:
    family, label_keys = SAMPLE[name]
    meta = source_hf.model_class(name).meta
    assert (meta.name, meta.family, meta.requires, meta.annotated) == (f"hf:{name}", family, ("transformers",), True)
    model = smoke(name)
    assert label_keys <= set(model.inputs("train"))
    assert not (label_keys - {"decoder_input_ids"}) & set(model.inputs("eval"))  # eval carries no labels
    assert counted_steps(model, "train", niter=2) == 2
    assert model.last_loss is not None and math.isfinite(float(model.last_loss))
    assert counted_steps(model, "eval", niter=2) == 2
    assert isinstance(model.last_output, torch.Tensor) and model.last_output.shape[0] == meta.smoke["batch_size"]
    assert model.parameter_count == sum(p.numel() for p in model.module.parameters())


def test_a_train_step_changes_the_weights_and_leaves_no_gradients() -> None:
    model = smoke("GPT2ForSequenceClassification")
    before = [p.detach().clone() for p in model.module.parameters()]
    model.train(niter=1)
    assert any(not torch.equal(b, p) for b, p in zip(before, model.module.parameters()))
    assert all(p.grad is None for p in model.module.parameters())


def test_two_builds_draw_the_same_inputs_and_weights() -> None:
    first, second = smoke("GPT2ForSequenceClassification"), smoke("GPT2ForSequenceClassification")
    for key, value in first.inputs("train").items():
        assert torch.equal(value, second.inputs("train")[key]), key
    assert all(torch.equal(a, b) for a, b in zip(first.module.parameters(), second.module.parameters()))


def test_the_sequence_is_cut_to_the_positions_the_config_has() -> None:
    model = smoke("BertForMaskedLM", seq_len=64, config={**source_hf.SMOKE_CONFIG, "max_position_embeddings": 8})
    assert model.inputs("train")["input_ids"].shape == (2, 8)


def test_a_config_costlier_a_token_than_a_base_model_gets_a_smaller_default_batch() -> None:
    """AlbertConfig's defaults are ALBERT-xxlarge (12 layers of 4,096: 28 times BERT-base a token): the default
    batch is divided by that, so its step costs about what a base model's does; a batch asked for is kept."""
    import transformers

    assert _fit.token_cost_ratio(transformers.AlbertConfig()) == pytest.approx(12 * 4096**2 / (12 * 768**2))
    wide = {"hidden_size": 1080, "num_attention_heads": 12, "intermediate_size": 32, "embedding_size": 16, "vocab_size": 64}
    cls = source_hf.model_class("AlbertForMaskedLM")  # 1080 wide: 1.98 times a base model's cost a token
    model = cls(config=wide)
    assert (model.batch_size("train"), model.batch_size("eval")) == (1, 2)  # of the defaults 2 and 4
    assert cls(batch_size=3, config=wide).batch_size("eval") == 3
    assert smoke("BertForMaskedLM").cost_ratio < 1 and smoke("BertForMaskedLM").batch_size("eval") == 2  # smoke's own


def test_the_config_overrides_reach_the_model() -> None:
    model = smoke("GPT2ForSequenceClassification", config={**source_hf.SMOKE_CONFIG, "num_labels": 5})
    assert model.module.config.num_labels == 5
    assert int(model.inputs("train")["labels"].max()) < 5
    model.eval(niter=1)
    assert model.last_output.shape == (2, 5)


def test_a_default_llama_does_not_fit_and_is_found_before_any_weights_are_made(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_fit, "available_bytes", lambda device: 8 * _fit.GIB)
    made_on: list[torch.device] = []
    make_module = source_hf.TransformersModel.make_module

    def recording(self: source_hf.TransformersModel) -> torch.nn.Module:
        module = make_module(self)
        made_on.append(next(module.parameters()).device)
        return module

    monkeypatch.setattr(source_hf.TransformersModel, "make_module", recording)
    with pytest.raises(DoesNotFit, match=r"hf:LlamaForCausalLM has 6,738M parameters"):
        source_hf.model_class("LlamaForCausalLM")()
    assert made_on == [torch.device("meta")]


def test_a_bare_model_evaluates_but_declines_to_train() -> None:
    model = smoke("BertModel")
    assert counted_steps(model, "eval", niter=1) == 1
    assert model.last_output.shape == (2, 16, 64)  # the last hidden state: the first output
    with pytest.raises(NotImplementedError, match="BertModel has no loss to train"):
        model.train(niter=1)


@pytest.mark.parametrize(("name", "reason"), [("MusicgenForCausalLM", "codebook"), ("DecisionTransformerModel", "'states'")])
def test_a_class_whose_inputs_cannot_be_made_is_declined_at_construction(name: str, reason: str) -> None:
    with pytest.raises(NotImplementedError, match=reason):
        smoke(name)


@pytest.mark.slow
def test_every_class_of_the_dynamo_offline_list_steps_with_its_smoke_config() -> None:
    skipped, failed = tryout(list(source_hf.DYNAMO_OFFLINE), smoke)
    assert failed == {}
    assert all(reason.strip() for reason in skipped.values()), skipped  # a skipped row says why
    assert len(skipped) < len(source_hf.DYNAMO_OFFLINE) // 4, skipped
