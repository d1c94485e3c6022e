"""timm models by name: every registered name is offered, inputs follow the pretrained configuration, a sample steps
at its smoke settings, and a model too large for the memory is skipped before its weights are made."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from tests.helpers.source_models import one_step, tryout
from tests.helpers.templates import is_metadata_only
from torchbenchmark.contract import MODES
from torchbenchmark.models import source_timm as source
from torchbenchmark.models._fit import SourceModel

timm = pytest.importorskip("timm")

SAMPLE_EVERY = 80  # the slow sweep takes every 80th name: 18 models across the families (the catalogue sweeps more)


def smoke(name: str, **overrides: object) -> source.TimmModel:
    cls = source.model_class(name)
    return cls(**{**cls.meta.smoke, **overrides})


def test_names_are_every_model_timm_registers() -> None:
    names = source.names()
    assert names == sorted(timm.list_models()) and len(names) > 1000


def test_importing_the_module_imports_neither_library() -> None:
    tree = ast.parse(Path(source.__file__).read_text(encoding="utf-8"))
    top = {alias.name for node in tree.body if isinstance(node, ast.Import) for alias in node.names}
    top |= {node.module for node in tree.body if isinstance(node, ast.ImportFrom) and node.module}
    assert not {name for name in top if name.split(".")[0] in ("torchvision", "timm")}


def test_without_timm_names_and_model_class_raise_import_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "timm", None)  # what `import timm` finds when it is not installed
    monkeypatch.setitem(sys.modules, "timm.models", None)
    source.model_class.cache_clear()
    with pytest.raises(ImportError):
        source.names()
    with pytest.raises(ImportError):
        source.model_class("resnet18")


def test_unknown_names_raise_lookup_error_with_close_matches() -> None:
    with pytest.raises(LookupError, match="timm:convnext_ato is not a model timm registers; close matches: convnext_atto") as raised:
        source.model_class("convnext_ato")
    assert "\n" not in str(raised.value)
    with pytest.raises(LookupError, match="`list timm` names them all$"):
        source.model_class("no_such_model")


def test_metadata_and_input_size_come_from_the_pretrained_configuration() -> None:
    for name in ("resnet18", "efficientnet_b3", "vit_base_patch16_384"):
        cls = source.model_class(name)
        assert is_metadata_only(cls, source.TimmModel) and issubclass(cls, SourceModel)
        assert (cls.meta.name, cls.meta.family, cls.meta.requires) == (f"timm:{name}", "vision-classification", ("timm",))
        assert cls.meta.annotated and cls.meta.note
        assert cls.input_size == timm.models.get_pretrained_cfg(name).input_size
    assert source.model_class("vit_base_patch16_384").fixed_input_size
    model = source.model_class("convnext_atto")(batch_size=1)  # no image_size: the configuration's 224
    assert model.inputs("eval")[0].shape == (1, 3, 224, 224)


@pytest.mark.parametrize("name", ["resnet18", "convnext_atto", "vit_tiny_patch16_224"])
def test_a_sample_steps_at_a_small_image_size(name: str) -> None:
    model = smoke(name)
    assert model.inputs("train")[0].shape == (2, 3, 64, 64)
    for mode in MODES:
        one_step(model, mode)


def test_a_fixed_size_model_is_built_for_the_image_size_asked() -> None:
    model = smoke("vit_tiny_patch16_224")
    assert tuple(model.module.patch_embed.img_size) == (64, 64)


def test_a_feature_backbone_has_no_train_step_but_evaluates() -> None:
    model = smoke("vit_tiny_patch16_dinov3_qkvb")
    with pytest.raises(NotImplementedError, match="num_classes=0"):
        model.train(niter=1)
    one_step(model, "eval")


@pytest.mark.slow
@pytest.mark.parametrize("name", source.names()[::SAMPLE_EVERY])
def test_a_sample_of_timm_models_steps_at_its_smoke_settings_or_says_why_not(name: str) -> None:
    """Every 80th name builds and takes a train and an eval step; one that cannot is a skip with its reason."""
    skipped, failed = tryout([name], smoke)
    assert failed == {}
    assert all(skipped.values())
