"""Figures that agree with references the suite did not write: torchvision's weights metadata, the published sizes
of the checkpoints the language models are configured as, and an analytic count of their train FLOPs.

Counted on batch 1 with the suite's own counter. Where the suite's workload differs on purpose, its metadata
says how (``ModelMeta.published``), and the test checks the part that should agree.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from torchbenchmark.contract import MODES
from torchbenchmark.measure.flops import count_flops
from torchbenchmark.models._images import TORCHVISION_WEIGHTS
from torchbenchmark.registry import list_models, load_model, meta_of, model_class

FLOPS_WITHIN = 0.01


def published_of(name: str) -> Any:
    return meta_of(model_class(name)).published


TORCHVISION = [name for name in list_models() if (p := published_of(name)) is not None and p.source == TORCHVISION_WEIGHTS]
CLASSIFIERS = [name for name in TORCHVISION if meta_of(model_class(name)).family == "vision-classification"]
LANGUAGE = [name for name in list_models() if name.startswith("hf_")]
# Builds and counts that take more than a few seconds on a 2-core machine.
SLOW = {"vgg16", "hf_Bart", "hf_Whisper", "hf_T5"}


def slow_marked(names: list[str]) -> list[Any]:
    return [pytest.param(name, marks=pytest.mark.slow) if name in SLOW else name for name in names]


def torchvision_figures(name: str) -> tuple[int, float]:
    """torchvision's parameter count and eval FLOPs per image; its ``_ops`` (GFLOPs) counts a multiply-add once."""
    import torchvision

    meta = torchvision.models.get_model_weights(name).DEFAULT.meta
    return meta["num_params"], 2e9 * meta["_ops"]


def parameters(model: Any) -> int:
    return sum(p.numel() for p in model.module.parameters())


def test_every_torchvision_model_and_language_model_names_its_reference() -> None:
    assert len(CLASSIFIERS) == 15
    assert {"fasterrcnn_mobilenet_v3_large_fpn", "deeplabv3_mobilenet_v3_large"} <= set(TORCHVISION)
    for name in LANGUAGE:
        assert published_of(name).params, name
    for name in TORCHVISION + LANGUAGE:  # a difference is explained
        published = published_of(name)
        assert bool(published.params_difference) <= bool(published.differs), name


@pytest.mark.parametrize("name", slow_marked(CLASSIFIERS))
def test_a_classifier_has_torchvisions_parameters_and_eval_flops(name: str) -> None:
    model = load_model(name, batch_size=1)
    params, flops = torchvision_figures(name)
    assert parameters(model) == params + published_of(name).params_difference
    count = count_flops(model, "eval")
    assert count.uncounted == ()
    assert count.total == pytest.approx(flops, rel=FLOPS_WITHIN)


@pytest.mark.slow
def test_the_detector_agrees_on_backbone_and_rpn_and_says_why_its_box_head_adds_more() -> None:
    name = "fasterrcnn_mobilenet_v3_large_fpn"
    model = load_model(name, batch_size=1)
    params, flops = torchvision_figures(name)
    assert parameters(model) == params + 24_400  # plain batch norm's weights and biases
    count = count_flops(model, "eval")
    assert count.uncounted == ()
    assert count.by_module["FasterRCNN.backbone"] + count.by_module["FasterRCNN.rpn"] == pytest.approx(flops, rel=FLOPS_WITHIN)
    assert count.total > 2 * flops  # the box head over every proposal: the difference its metadata gives
    assert "box head" in published_of(name).differs and "+24,400" in published_of(name).differs


@pytest.mark.slow
def test_deeplabv3_agrees_at_torchvisions_input_size_without_its_aux_head() -> None:
    name = "deeplabv3_mobilenet_v3_large"
    published = published_of(name)
    model = load_model(name, batch_size=1, image_size=published.input_size)
    params, flops = torchvision_figures(name)
    assert parameters(model) == params - 3_851 == params + published.params_difference
    count = count_flops(model, "eval")
    assert count.uncounted == ()
    assert count.total == pytest.approx(flops, rel=FLOPS_WITHIN)


# -- language models: the analytic count, a multiply-add as 2 FLOPs ----------------------------------------


@dataclasses.dataclass
class Tally:
    """A forward pass's FLOPs: matrix products, attention (Q K^T and its product with V, the full square
    counted), and the products whose input needs no gradient (their backward computes the weights' only)."""

    matmul: int = 0
    attention: int = 0
    no_input_gradient: int = 0

    def linear(self, tokens: int, n_in: int, n_out: int) -> None:
        self.matmul += 2 * tokens * n_in * n_out

    def attend(self, batch: int, width: int, q_len: int, kv_len: int) -> None:
        self.attention += 4 * batch * q_len * kv_len * width  # every head's share of ``width``

    def block(self, batch: int, length: int, d: int, ff: int, inner: int | None = None) -> None:
        """A transformer layer: q, k, v and output projections, self-attention, a two-matrix MLP."""
        inner = inner or d
        for _ in range(4):
            self.linear(batch * length, d, inner)
        self.attend(batch, inner, length, length)
        self.linear(batch * length, d, ff)
        self.linear(batch * length, ff, d)

    def cross(self, batch: int, q_len: int, kv_len: int, d: int, inner: int | None = None) -> None:
        """A decoder layer's cross-attention: q and output over its tokens, k and v over the encoder's."""
        inner = inner or d
        for tokens in (q_len, q_len, kv_len, kv_len):
            self.linear(batch * tokens, d, inner)
        self.attend(batch, inner, q_len, kv_len)

    def train(self, fused_attention: bool) -> int:
        """A train step: forward, then each product's input and weight gradients (2x its forward); a fused
        attention kernel's backward also computes Q K^T again (2.5x)."""
        return 3 * self.matmul - self.no_input_gradient + (3.5 if fused_attention else 3) * self.attention


def forward_flops(name: str, config: Any, batch: int, seq: int) -> Tally:
    """The analytic count of one forward pass of the language model ``name`` with ``config``."""
    tally, tokens = Tally(), batch * seq
    if name == "hf_Albert":
        d, e = config.hidden_size, config.embedding_size
        tally.linear(tokens, e, d)  # the embeddings' projection to the hidden width
        for _ in range(config.num_hidden_layers):  # one layer's weights, applied at every depth
            tally.block(batch, seq, d, config.intermediate_size)
        tally.linear(tokens, d, e)
        tally.linear(tokens, e, config.vocab_size)
    elif name in ("hf_Bert", "hf_DistilBert", "hf_GPT2"):
        d = getattr(config, "hidden_size", None) or getattr(config, "dim", None) or config.n_embd
        layers = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layers", None) or config.n_layer
        ff = getattr(config, "intermediate_size", None) or getattr(config, "hidden_dim", None) or 4 * d
        for _ in range(layers):
            tally.block(batch, seq, d, ff)
        if name != "hf_GPT2":
            tally.linear(tokens, d, d)  # the masked-LM head's transform
        tally.linear(tokens, d, config.vocab_size)  # the output head, tied to the embeddings
    elif name == "hf_T5":
        d, inner, ff = config.d_model, config.num_heads * config.d_kv, config.d_ff
        for _ in range(config.num_layers):
            tally.block(batch, seq, d, ff, inner)
        for _ in range(config.num_decoder_layers):
            tally.block(batch, seq, d, ff, inner)
            tally.cross(batch, seq, seq, d, inner)
        tally.linear(tokens, d, config.vocab_size)
    else:  # hf_Bart, hf_Whisper: encoder-decoders of one width
        d = config.d_model
        source = config.max_source_positions if name == "hf_Whisper" else seq
        if name == "hf_Whisper":  # two 3-wide convolutions over 2 x source log-mel frames, the second strided
            tally.no_input_gradient = 2 * (2 * source) * 3 * config.num_mel_bins * d
            tally.matmul += tally.no_input_gradient + 2 * source * 3 * d * d
        for _ in range(config.encoder_layers):
            tally.block(batch, source, d, config.encoder_ffn_dim)
        for _ in range(config.decoder_layers):
            tally.block(batch, seq, d, config.decoder_ffn_dim)
            tally.cross(batch, seq, source, d)
        tally.linear(tokens, d, config.vocab_size)
    return tally


@pytest.mark.parametrize("name", slow_marked(LANGUAGE))
def test_a_language_model_has_its_checkpoints_parameters_and_analytic_train_flops(name: str) -> None:
    seq = 32
    model = load_model(name, batch_size=1, seq_len=seq)
    published = published_of(name)
    assert parameters(model) == published.params + published.params_difference
    tally = forward_flops(name, model.module.config, 1, seq)
    assert count_flops(model, "eval").total == tally.matmul + tally.attention
    count = count_flops(model, "train")
    assert count.uncounted == ()
    assert count.total == tally.train(fused_attention="attention" in count.by_kind)


# -- every suite model is counted whole --------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list_models())
def test_every_compute_op_a_suite_model_runs_has_a_formula(name: str, mode: str) -> None:
    meta = meta_of(model_class(name))
    model = load_model(name, **{"batch_size": None, **meta.smoke})
    try:
        count = count_flops(model, mode)
    except NotImplementedError:
        pytest.skip(f"{name} has no {mode}")
    assert count.uncounted == (), count.note


# -- the table of these figures in docs/models.md ----------------------------------------------------------


def _figures_script() -> Any:
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "model_figures.py"
    spec = importlib.util.spec_from_file_location("model_figures", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_docs_table_has_every_model_and_the_published_figures_and_reasons_of_today() -> None:
    script = _figures_script()
    current, measured = script.on_page(script.PAGE.read_text(encoding="utf-8"))
    assert set(measured) == set(list_models())
    assert script.table(measured) == current, "regenerate it: python benchmarks/model_figures.py"


@pytest.mark.slow
def test_the_docs_table_holds_what_the_models_measure() -> None:
    script = _figures_script()
    _, measured = script.on_page(script.PAGE.read_text(encoding="utf-8"))
    assert {name: script.measure(name) for name in list_models()} == measured
