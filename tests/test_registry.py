"""The registry: explicit, complete, cheap to import, and every templated family built by its template."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.templates import is_metadata_only
from torchbenchmark import BatchSizes, BenchmarkModel, ModelMeta, UnknownModelError, list_models, load_model, model_class
from torchbenchmark.models.nlp import HuggingFaceModel
from torchbenchmark.models.vision_classification import TorchVisionClassifier

ROOT = Path(__file__).resolve().parent.parent
TORCHVISION_CLASSIFIERS = {
    "resnet18",
    "resnet50",
    "resnext50_32x4d",
    "mobilenet_v2",
    "mobilenet_v3_large",
    "shufflenet_v2_x1_0",
    "squeezenet1_1",
    "densenet121",
    "vgg16",
    "alexnet",
    "mnasnet1_0",
    "efficientnet_b0",
    "vit_b_16",
    "convnext_tiny",
    "swin_t",
}


def test_at_least_30_models_in_9_families_sorted() -> None:
    names = list_models()
    assert names == sorted(names, key=str.lower)
    assert len(names) >= 30
    assert len({model_class(name).meta.family for name in names}) >= 9


@pytest.mark.parametrize("name", list_models())
def test_entry_declares_its_metadata(name: str) -> None:
    cls = model_class(name)
    assert issubclass(cls, BenchmarkModel)
    meta = cls.meta
    assert meta.name == name
    assert meta.family
    assert all(size >= 1 for size in vars(meta.batch_sizes).values())
    assert isinstance(meta.smoke, dict)
    parameters = inspect.signature(cls).parameters
    assert list(parameters)[:2] == ["device", "batch_size"]
    assert parameters["device"].default == "cpu" and parameters["batch_size"].default is None


def test_an_unannotated_model_must_say_why() -> None:
    with pytest.raises(ValueError, match="^quiet: an unannotated model must say why in its note$"):
        ModelMeta(name="quiet", family="test", batch_sizes=BatchSizes.same(cpu=1, cuda=1), annotated=False)
    assert ModelMeta(name="quiet", family="test", batch_sizes=BatchSizes.same(cpu=1, cuda=1), annotated=False, note="a GAN").note


@pytest.mark.parametrize("name", sorted(TORCHVISION_CLASSIFIERS))
def test_every_torchvision_classifier_is_built_by_the_one_template(name: str) -> None:
    cls = model_class(name)
    assert is_metadata_only(cls, TorchVisionClassifier), f"{name} must be a classifier(...) entry, not hand-written"


def test_no_other_vision_classifier_escapes_the_template() -> None:
    vision = {name for name in list_models() if model_class(name).meta.family == "vision-classification"}
    assert vision == TORCHVISION_CLASSIFIERS


def test_template_check_catches_a_hand_written_classifier() -> None:
    class HandWritten(TorchVisionClassifier):
        def loss(self, inputs):  # type: ignore[no-untyped-def]
            return super().loss(inputs)

    assert not is_metadata_only(HandWritten, TorchVisionClassifier)


def test_transformers_language_models_share_their_template() -> None:
    for name in list_models():
        cls = model_class(name)
        if cls.meta.family == "nlp":
            assert is_metadata_only(cls, HuggingFaceModel), name


@pytest.mark.slow
def test_listing_and_loading_classes_imports_no_heavy_package() -> None:
    code = (
        "import sys, torchbenchmark as tb\n"
        "[tb.model_class(name) for name in tb.list_models()]\n"
        "heavy = [m for m in ('transformers', 'torchvision') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120)


def test_unknown_name_suggests_the_closest() -> None:
    with pytest.raises(UnknownModelError, match="did you mean resnet50"):
        model_class("resnet5")
    with pytest.raises(UnknownModelError, match="did you mean hf_Bert"):
        load_model("hf_bert")


def test_plugins_resolve_from_a_file_or_a_module() -> None:
    from tests.helpers.tiny_models import TinyMLP

    by_file = model_class(f"{ROOT / 'tests' / 'helpers' / 'tiny_models.py'}:TinyMLP")
    assert by_file.meta.name == "tiny_mlp" and by_file.__name__ == "TinyMLP"
    assert model_class("tests.helpers.tiny_models:TinyMLP") is TinyMLP
    with pytest.raises(UnknownModelError, match="has no class 'Nope'"):
        model_class("tests.helpers.tiny_models:Nope")
    with pytest.raises(UnknownModelError, match="no such file"):
        model_class("tests/missing.py:TinyMLP")
    with pytest.raises(UnknownModelError, match="no module named"):
        model_class("tests.missing_module:TinyMLP")


def test_two_builds_give_the_same_weights_and_inputs() -> None:
    import torch

    first, second = load_model("dcgan", batch_size=2, width=8), load_model("dcgan", batch_size=2, width=8)
    for a, b in zip(first.module.parameters(), second.module.parameters()):
        assert torch.equal(a, b)
    assert torch.equal(first.inputs("train")[1], second.inputs("train")[1])
