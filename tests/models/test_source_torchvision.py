"""torchvision builders by name: every builder is offered with its task's template, a sample of each task steps at its
smoke settings, and a model too large for the memory is skipped before its weights are made."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch
import torchvision

from tests.helpers.source_models import one_step, tryout
from tests.helpers.templates import is_metadata_only
from torchbenchmark.contract import MODES
from torchbenchmark.models import source_torchvision as tv
from torchbenchmark.models._fit import SourceModel

FAMILIES = {
    torchvision.models: "vision-classification",
    torchvision.models.quantization: "vision-classification",
    torchvision.models.detection: "detection",
    torchvision.models.segmentation: "segmentation",
    torchvision.models.video: "video",
    torchvision.models.optical_flow: "optical-flow",
}
SAMPLE_EVERY = 3  # the slow sweep takes every third builder: 41 across the tasks
# One builder of each task, small enough to build and step in a second or two.
SAMPLE = ["resnet18", "fasterrcnn_mobilenet_v3_large_320_fpn", "lraspp_mobilenet_v3_large", "r3d_18", "raft_small"]


def smoke(name: str, **overrides: object) -> tv.TorchVisionModel:
    cls = tv.model_class(name)
    return cls(**{**cls.meta.smoke, **overrides})


def step_both_modes(model: tv.TorchVisionModel) -> None:
    for mode in MODES:
        one_step(model, mode)


def test_names_are_every_builder_torchvision_lists() -> None:
    assert tv.names() == sorted(torchvision.models.list_models())
    assert len(tv.names()) > 100


def test_importing_the_module_imports_neither_library() -> None:
    tree = ast.parse(Path(tv.__file__).read_text(encoding="utf-8"))
    top = {alias.name for node in tree.body if isinstance(node, ast.Import) for alias in node.names}
    top |= {node.module for node in tree.body if isinstance(node, ast.ImportFrom) and node.module}
    assert not {name for name in top if name.split(".")[0] in ("torchvision", "timm")}


def test_every_builder_gets_its_tasks_family_and_metadata() -> None:
    assert sorted(name for package in FAMILIES for name in torchvision.models.list_models(module=package)) == tv.names()
    for package, family in FAMILIES.items():
        for name in torchvision.models.list_models(module=package):
            cls = tv.model_class(name)
            assert is_metadata_only(cls, tv.TEMPLATES[package.__name__.removeprefix("torchvision.models").lstrip(".")])
            assert (cls.meta.name, cls.meta.family, cls.meta.requires) == (f"torchvision:{name}", family, ("torchvision",))
            assert cls.meta.annotated and cls.meta.note and cls.meta.smoke["batch_size"] >= 1
            assert issubclass(cls, SourceModel)
            assert tv.model_class(name) is cls  # one class per name


def test_unknown_names_raise_lookup_error_with_close_matches() -> None:
    with pytest.raises(
        LookupError, match="torchvision:resnet19 is not a builder torchvision.models lists; close matches: resnet18"
    ) as raised:
        tv.model_class("resnet19")
    assert "\n" not in str(raised.value)
    with pytest.raises(LookupError, match="close matches: resnet18$"):
        tv.model_class("ResNet18")  # a name in the wrong case names the right one
    with pytest.raises(LookupError, match="`list torchvision` names them all$"):
        tv.model_class("no_such_model")


def test_inputs_follow_the_default_weights() -> None:
    assert tv.model_class("inception_v3").image_size == 299
    assert tv.model_class("efficientnet_b3").image_size == 300
    assert tv.model_class("resnet50").image_size == 224
    assert (tv.model_class("r3d_18").image_size, tv.model_class("r3d_18").frames) == (112, 16)
    assert (tv.model_class("mvit_v1_b").image_size, tv.model_class("mvit_v1_b").frames) == (224, 16)
    assert tv.model_class("s3d").meta.smoke == {"batch_size": 1, "image_size": 224, "frames": 14}  # its fixed pooling
    assert tv.model_class("deeplabv3_resnet50").image_size == 520


@pytest.mark.parametrize("name", SAMPLE)
def test_a_sample_of_each_task_steps_at_its_smoke_settings(name: str) -> None:
    step_both_modes(smoke(name))


def test_googlenet_trains_on_its_logits_and_auxiliary_heads() -> None:
    model = smoke("googlenet")
    images, labels = model.inputs("train")
    model.module.train()
    assert len(model.module(images)) == 3  # logits and two auxiliary heads
    step_both_modes(model)


@pytest.mark.parametrize("name, key", [("maskrcnn_resnet50_fpn", "masks"), ("keypointrcnn_resnet50_fpn", "keypoints")])
def test_instance_models_get_the_targets_their_heads_need(name: str, key: str) -> None:
    model = smoke(name)
    _, targets = model.inputs("train")
    boxes, extra = targets[0]["boxes"], targets[0][key]
    if key == "masks":
        assert extra.shape == (len(boxes), 64, 64) and extra.dtype == torch.uint8
        assert extra.flatten(1).any(1).all()  # every box has pixels
    else:
        assert extra.shape == (len(boxes), 17, 3)
        x, y = extra[..., 0], extra[..., 1]
        assert ((x >= boxes[:, None, 0]) & (x <= boxes[:, None, 2]) & (y >= boxes[:, None, 1]) & (y <= boxes[:, None, 3])).all()
    assert model.image_size == 64 and model.module.transform.min_size == (64,)


def test_a_detector_without_an_image_size_runs_at_its_own_resolution() -> None:
    model = tv.model_class("ssdlite320_mobilenet_v3_large")(batch_size=2)
    assert model.image_size == 320
    assert model.meta.batch_sizes.cpu_train == 2  # its batch norms over 1x1 maps need two images


def test_a_builder_that_cannot_build_on_the_meta_device_is_counted_from_a_cpu_build() -> None:
    with pytest.raises(NotImplementedError, match="meta"), torch.device("meta"):
        torchvision.models.get_model("regnet_x_400mf", weights=None)  # RegNet reads its widths' values
    model = smoke("regnet_x_400mf")
    assert model.parameter_count == torchvision.models.get_model_weights("regnet_x_400mf").DEFAULT.meta["num_params"]


def test_a_quantized_builder_runs_as_the_float_model() -> None:
    model = smoke("quantized_shufflenet_v2_x0_5")
    assert all(parameter.is_floating_point() for parameter in model.module.parameters())
    step_both_modes(model)


@pytest.mark.slow
@pytest.mark.parametrize("name", tv.names()[::SAMPLE_EVERY])
def test_a_third_of_the_builders_step_at_their_smoke_settings_or_say_why_not(name: str) -> None:
    """Every third builder by name builds and takes a train and an eval step; one that cannot is a skip with its
    reason. (All of them took 3.4 minutes of the suite's time; ``benchmarks/catalogue.py`` sweeps every one.)"""
    skipped, failed = tryout([name], smoke)
    assert failed == {}
    assert all(skipped.values())
