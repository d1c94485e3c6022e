"""Every ``torchvision.models`` builder by name (``torchvision:<builder>``): one template per task, random weights.

The task is the subpackage a builder lives in (classification at the top, ``detection``, ``segmentation``,
``video``, ``optical_flow``; ``quantization``'s builders are classifiers). A model's input follows its default
weights' metadata, read from the weights enum without a download: the crop its transforms take, the smallest
size and clip length it accepts. Quantized builders run as the float model they quantize (``quantize=False``):
quantized kernels take no gradient, and their int8 weights would need a calibration pass.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
from typing import Any, ClassVar

import torch
from torch import nn
from torch.nn import functional as F

from torchbenchmark.contract import BatchSizes, ModelMeta
from torchbenchmark.models._fit import SourceModel
from torchbenchmark.models._images import ImageModel

SOURCE = "torchvision"
PACKAGE = "torchvision"

# How the CPU step times in the notes were measured.
MEASURED = "median of 3 steps after a warmup, one thread, beside a timing benchmark on a 2-core machine: an upper bound"
AUX_WEIGHT = 0.5  # an auxiliary head's share of the loss, as torchvision's segmentation reference weights it
SMOKE_SIDE = 64
# Smoke sides a builder needs beyond its weights' smallest size: ViT-H's 14-pixel patches must tile the image,
# MaxViT's 7x7 partitions need a multiple of 224, Inception's auxiliary head (trained) needs its full 299.
SMOKE_SIDES = {"vit_h_14": 56, "maxvit_t": 224, "inception_v3": 299, "quantized_inception_v3": 299}
# Builders that size their position embeddings or partitions for one input: told the size, keyed by their file.
# (MViT's builders pin theirs to 16x224x224, so its clips are always that size: its weights' smallest.)
SIZED_BUILDERS = {"vision_transformer": lambda side: {"image_size": side}, "maxvit": lambda side: {"input_size": (side, side)}}
# SSD and SSDlite resize every image to their fixed size (300, 320) inside forward; a smaller one leaves no
# feature map for their last layers. SSDlite batch-normalises 1x1 maps there, which needs two images in training.
FIXED_SIZE_DETECTORS = ("ssd", "ssdlite")
TRAIN_BATCH_AT_LEAST = {"ssdlite": 2}


def _on_meta() -> bool:
    return torch.get_default_device().type == "meta"


@dataclasses.dataclass(frozen=True)
class Builder:
    """What torchvision says of a builder without building it: where it lives and its default weights' metadata."""

    name: str
    task: str  # the subpackage of torchvision.models it lives in ("" for the classifiers)
    file: str  # the module that defines it, e.g. "resnet", "ssdlite"
    crop: int | None  # the side its weights' transforms crop (or resize) images to
    min_side: int  # the smallest side its weights accept
    min_frames: int  # the shortest clip its weights accept


def describe(name: str) -> Builder:
    """The builder ``name`` as its module and weights enum describe it; nothing is built or downloaded."""
    import torchvision

    _, _, *package, file = torchvision.models.get_model_builder(name).__module__.split(".")
    weights = torchvision.models.get_model_weights(name).DEFAULT
    transform = getattr(weights.transforms, "keywords", {})  # a functools.partial of the transform class, or the class
    crop = transform.get("crop_size", transform.get("resize_size"))
    crop = int(crop[0]) if isinstance(crop, (list, tuple)) else crop
    meta = weights.meta
    return Builder(name, ".".join(package), file, crop, meta.get("min_size", (1, 1))[0], meta.get("min_temporal_size", 1))


class TorchVisionModel(SourceModel, ImageModel):
    """A torchvision builder's model with random weights; a task's template supplies its inputs and loss, and
    how a builder's metadata sets its entry's defaults (:meth:`defaults`) and smoke configuration (:meth:`smoke`)."""

    arch: ClassVar[str]  # the builder's name in torchvision.models
    file: ClassVar[str]  # the module torchvision defines the builder in, e.g. "resnet", "ssdlite"
    family: ClassVar[str]
    batch_sizes: ClassVar[BatchSizes]
    note: ClassVar[str]

    @classmethod
    def defaults(cls, builder: Builder) -> dict[str, Any]:
        """The entry's class attributes beyond its name: its default input."""
        return {}

    @classmethod
    def smoke(cls, builder: Builder) -> dict[str, Any]:
        """Constructor keyword arguments for a fast CPU check."""
        return {"batch_size": 1}

    @classmethod
    def default_batch_sizes(cls, builder: Builder) -> BatchSizes:
        return cls.batch_sizes

    def builder_kwargs(self) -> dict[str, Any]:
        return {}

    def make_module(self) -> nn.Module:
        import torchvision  # heavy: imported only when a model is built

        kwargs = {"weights": None, **self.builder_kwargs()}
        try:
            return torchvision.models.get_model(self.arch, **kwargs)
        except Exception:
            if not _on_meta():
                raise
        # A builder that reads tensor values while building (RegNet computes its widths with torch ops) cannot
        # run on the meta device: it is counted from a CPU build instead, so it must fit in host memory once.
        with torch.device("cpu"):
            return torchvision.models.get_model(self.arch, **kwargs)


def _cross_entropy(output: Any, labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of the logits; GoogLeNet's and Inception's train outputs add their auxiliary heads'."""
    if isinstance(output, tuple):  # InceptionOutputs(logits, aux_logits), GoogLeNetOutputs(logits, aux2, aux1)
        logits, *aux = output
        return F.cross_entropy(logits, labels) + AUX_WEIGHT * sum(F.cross_entropy(a, labels) for a in aux if a is not None)
    return F.cross_entropy(output, labels)


class Classifier(TorchVisionModel):
    """Images at the crop of the default weights' transforms, cross-entropy over the builder's 1000 classes."""

    family = "vision-classification"
    batch_sizes = BatchSizes(cpu_train=2, cpu_eval=4, cuda_train=32, cuda_eval=64)
    note = (
        "CPU batch 2/4 (train/eval) at the weights' crop: ResNet-50 measured 1.45 s a train step, 0.7 s an eval step,"
        f" EfficientNet-B0 0.5 s and 0.2 s ({MEASURED}); CUDA 32/64."
    )
    num_classes = 1000  # the builders' default: ImageNet's

    @classmethod
    def defaults(cls, builder: Builder) -> dict[str, Any]:
        return {"image_size": builder.crop or 224}

    @classmethod
    def smoke(cls, builder: Builder) -> dict[str, Any]:
        side = SMOKE_SIDE if builder.file in SIZED_BUILDERS else max(SMOKE_SIDE, builder.min_side)
        return {"batch_size": 2, "image_size": SMOKE_SIDES.get(builder.name, side)}

    def builder_kwargs(self) -> dict[str, Any]:
        sized = SIZED_BUILDERS.get(self.file)
        return sized(self.image_size) if sized else {}

    def sample_shape(self) -> tuple[int, ...]:
        return (3, self.image_size, self.image_size)

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> tuple[torch.Tensor, ...]:
        images = torch.randn(batch_size, *self.sample_shape(), generator=generator)
        if mode == "eval":
            return (images,)
        return images, torch.randint(0, self.num_classes, (batch_size,), generator=generator)

    def loss(self, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
        images, labels = inputs
        return _cross_entropy(self.module(images), labels)


class VideoClassifier(Classifier):
    """Clips (B, 3, T, H, W) at the default weights' crop and ``frames`` long, cross-entropy over Kinetics-400."""

    family = "video"
    batch_sizes = BatchSizes(cpu_train=1, cpu_eval=1, cuda_train=8, cuda_eval=16)
    note = (
        "CPU batch 1, the least there is: R3D-18 on a 16x112x112 clip measured 3.1 s a train step, 0.8 s an eval step"
        f" ({MEASURED}); fewer frames or a smaller image_size make a CPU step faster; CUDA 8/16."
    )
    num_classes = 400
    # torchvision's video references train on 16-frame clips; a model that needs more (weights' metadata) gets more.
    frames: int = 16

    def __init__(
        self,
        device: str | torch.device = "cpu",
        batch_size: int | None = None,
        image_size: int | None = None,
        frames: int | None = None,
    ) -> None:
        if frames is not None:
            self.frames = frames
        super().__init__(device=device, batch_size=batch_size, image_size=image_size)

    @classmethod
    def defaults(cls, builder: Builder) -> dict[str, Any]:
        return {**super().defaults(builder), "frames": max(cls.frames, builder.min_frames)}

    @classmethod
    def smoke(cls, builder: Builder) -> dict[str, Any]:
        # The smallest clip its weights accept: S3D's last pooling is fixed (2x7x7), MViT's builders fix its input.
        return {**super().smoke(builder), "batch_size": 1, "frames": max(4, builder.min_frames)}

    def builder_kwargs(self) -> dict[str, Any]:
        return {"num_classes": self.num_classes}

    def sample_shape(self) -> tuple[int, ...]:
        return (3, self.frames, self.image_size, self.image_size)


class Segmenter(TorchVisionModel):
    """Per-pixel cross-entropy of ``out`` (plus ``aux``, where the builder adds that head) on random masks."""

    family = "segmentation"
    batch_sizes = BatchSizes(cpu_train=2, cpu_eval=1, cuda_train=8, cuda_eval=16)
    note = (
        "CPU train batch 2 (the least DeepLabV3's ASPP batch norm trains with), eval 1, at the weights' 520x520: LR-ASPP"
        " MobileNetV3 measured 1.9 s a train step, 0.16 s an eval step, DeepLabV3 ResNet-50 17.8 s and 2.4 s"
        f" ({MEASURED}); image_size=256 makes a CPU step about 4 times faster; CUDA 8/16."
    )
    num_classes = 21  # Pascal VOC's label space, background included: the builders' default

    @classmethod
    def defaults(cls, builder: Builder) -> dict[str, Any]:
        return {"image_size": builder.crop}

    @classmethod
    def smoke(cls, builder: Builder) -> dict[str, Any]:
        return {"batch_size": 2, "image_size": SMOKE_SIDE}

    def builder_kwargs(self) -> dict[str, Any]:
        return {"weights_backbone": None, "num_classes": self.num_classes}

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> tuple[torch.Tensor, ...]:
        size = self.image_size
        images = torch.randn(batch_size, 3, size, size, generator=generator)
        if mode == "eval":
            return (images,)
        return images, torch.randint(0, self.num_classes, (batch_size, size, size), generator=generator)

    def loss(self, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
        images, masks = inputs
        output = self.module(images)
        loss = F.cross_entropy(output["out"], masks)
        return loss + AUX_WEIGHT * F.cross_entropy(output["aux"], masks) if "aux" in output else loss


BOXES_PER_IMAGE = 4


class Detector(TorchVisionModel):
    """Images and targets (boxes, labels; masks for Mask R-CNN, keypoints for Keypoint R-CNN); train sums the model's
    loss dict. Images are the size the model resizes to (800 for most), or ``image_size``, its resize pinned to it."""

    family = "detection"
    batch_sizes = BatchSizes(cpu_train=1, cpu_eval=1, cuda_train=4, cuda_eval=8)
    note = (
        "CPU batch 1 at the model's own resolution (800 for most): Faster R-CNN MobileNetV3-FPN measured 2.6 s a train"
        f" step, 0.8 s an eval step, Faster R-CNN ResNet-50-FPN 12.4 s and 4.7 s ({MEASURED}); SSDlite trains at 2,"
        " the least its batch norms over 1x1 maps take; CUDA 4/8."
    )
    image_size: int | None = None  # type: ignore[assignment]  # None: the size the model's transform resizes to

    @classmethod
    def smoke(cls, builder: Builder) -> dict[str, Any]:
        sized = {} if builder.file in FIXED_SIZE_DETECTORS else {"image_size": SMOKE_SIDE}
        return {"batch_size": TRAIN_BATCH_AT_LEAST.get(builder.file, 1), **sized}

    @classmethod
    def default_batch_sizes(cls, builder: Builder) -> BatchSizes:
        at_least = TRAIN_BATCH_AT_LEAST.get(builder.file, 1)
        return dataclasses.replace(cls.batch_sizes, cpu_train=max(at_least, cls.batch_sizes.cpu_train))

    def builder_kwargs(self) -> dict[str, Any]:
        return {"weights_backbone": None}

    def make_module(self) -> nn.Module:
        module = super().make_module()
        transform = module.transform
        if self.image_size is None:
            if not _on_meta():  # the real build reads the model's own size; counting leaves it unread
                self.image_size = int(transform.fixed_size[0] if transform.fixed_size else transform.min_size[-1])
        else:
            transform.min_size, transform.max_size = (self.image_size,), self.image_size
            if transform.fixed_size:
                transform.fixed_size = (self.image_size, self.image_size)
        return module

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> tuple[list, ...]:
        size = self.image_size
        assert size is not None  # set when the module was made
        images = list(torch.rand(batch_size, 3, size, size, generator=generator))
        if mode == "eval":
            return (images,)
        heads = getattr(self.module, "roi_heads", None)
        keypoints = heads.keypoint_predictor.kps_score_lowres.out_channels if heads is not None and heads.has_keypoint() else 0
        targets = []
        for _ in range(batch_size):
            # Corners in the top-left 70% and sides of 10-60% of the image: x1 < x2 and y1 < y2 always.
            top_left = torch.rand(BOXES_PER_IMAGE, 2, generator=generator) * 0.7 * size
            sides = (0.1 + 0.5 * torch.rand(BOXES_PER_IMAGE, 2, generator=generator)) * size
            boxes = torch.cat([top_left, (top_left + sides).clamp(max=size)], dim=1)
            # Class 1 (COCO's person): the one class every detector has, Keypoint R-CNN's only one.
            target = {"boxes": boxes, "labels": torch.ones(BOXES_PER_IMAGE, dtype=torch.int64)}
            if heads is not None and heads.has_mask():
                target["masks"] = _box_masks(boxes, size)
            if keypoints:
                spread = torch.rand(BOXES_PER_IMAGE, keypoints, 2, generator=generator)
                inside = boxes[:, None, :2] + spread * (boxes[:, None, 2:] - boxes[:, None, :2])
                target["keypoints"] = torch.cat([inside, torch.ones(BOXES_PER_IMAGE, keypoints, 1)], dim=2)  # all visible
            targets.append(target)
        return images, targets

    def loss(self, inputs: tuple[list, ...]) -> torch.Tensor:
        images, targets = inputs
        return sum(self.module(images, targets).values())  # type: ignore[return-value]


def _box_masks(boxes: torch.Tensor, size: int) -> torch.Tensor:
    """One uint8 mask per box, set inside it."""
    pixels = torch.arange(size)
    rows = (pixels[None, :] >= boxes[:, 1:2]) & (pixels[None, :] < boxes[:, 3:4])
    columns = (pixels[None, :] >= boxes[:, 0:1]) & (pixels[None, :] < boxes[:, 2:3])
    return (rows[:, :, None] & columns[:, None, :]).to(torch.uint8)


CHAIRS_CROP = (368, 496)  # the FlyingChairs crop RAFT's authors train on (height, width)
FLOW_DISCOUNT = 0.8  # RAFT's sequence loss: the i-th of n predictions weighs 0.8 ** (n - i - 1)


class OpticalFlow(TorchVisionModel):
    """Two frames (H and W multiples of 8); train is RAFT's sequence loss, L1 of every flow prediction against
    a random flow, later predictions weighing more. Without ``image_size`` the frames are 368x496."""

    family = "optical-flow"
    batch_sizes = BatchSizes(cpu_train=1, cpu_eval=1, cuda_train=8, cuda_eval=16)
    note = (
        "CPU batch 1 at 368x496, 12 flow updates: RAFT-small measured 3.8 s a train step, 1.1 s an eval step,"
        f" RAFT-large 12.9 s and 3.8 s ({MEASURED}); CUDA 8/16."
    )
    image_size: int | None = None  # type: ignore[assignment]

    @classmethod
    def smoke(cls, builder: Builder) -> dict[str, Any]:
        return {"batch_size": 1, "image_size": max(128, builder.min_side)}  # the smallest RAFT's weights accept

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> tuple[torch.Tensor, ...]:
        height, width = CHAIRS_CROP if self.image_size is None else (self.image_size, self.image_size)
        if height % 8 or width % 8:
            raise ValueError(f"{self.arch}: frames must be multiples of 8 a side, got {height}x{width}")
        first, second = torch.rand(2, batch_size, 3, height, width, generator=generator) * 2 - 1  # RAFT takes [-1, 1]
        if mode == "eval":
            return first, second
        return first, second, torch.randn(batch_size, 2, height, width, generator=generator)

    def loss(self, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
        first, second, flow = inputs
        predictions = self.module(first, second)
        last = len(predictions) - 1
        return sum(FLOW_DISCOUNT ** (last - i) * (p - flow).abs().mean() for i, p in enumerate(predictions))  # type: ignore[return-value]


# The subpackage a builder lives in, and the template of its task.
TEMPLATES: dict[str, type[TorchVisionModel]] = {
    "": Classifier,
    "quantization": Classifier,
    "detection": Detector,
    "segmentation": Segmenter,
    "video": VideoClassifier,
    "optical_flow": OpticalFlow,
}


def _hint(name: str, offered: list[str], source: str) -> str:
    folded = [known for known in offered if known.lower() == name.lower()]
    close = folded or difflib.get_close_matches(name, offered, n=5, cutoff=0.6)
    return f"; close matches: {', '.join(close)}" if close else f"; `list {source}` names them all"


def names() -> list[str]:
    """Every builder torchvision.models lists, sorted."""
    import torchvision

    return sorted(torchvision.models.list_models())


@functools.cache
def model_class(name: str) -> type[TorchVisionModel]:
    """The model of the builder ``name``: its task's template with the defaults its weights' metadata gives."""
    offered = names()
    if name not in offered:
        raise LookupError(f"torchvision:{name} is not a builder torchvision.models lists{_hint(name, offered, SOURCE)}")
    found = describe(name)
    if found.task not in TEMPLATES:
        raise LookupError(f"torchvision:{name} is a {found.task} model, a task this source has no template for")
    template = TEMPLATES[found.task]
    meta = ModelMeta(
        name=f"{SOURCE}:{name}",
        family=template.family,
        batch_sizes=template.default_batch_sizes(found),
        smoke=template.smoke(found),
        note=template.note,
        requires=(PACKAGE,),
    )
    attributes = {"arch": name, "file": found.file, "meta": meta, "__module__": __name__, "__qualname__": name, **template.defaults(found)}
    return type(name, (template,), attributes)
