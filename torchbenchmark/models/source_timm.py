"""Every timm model by name (``timm:<name>``): ``timm.create_model(name, pretrained=False)``, trained with
cross-entropy on random images at the input size of its pretrained configuration.

timm is optional: importing this module imports neither it nor torchvision; :func:`names` and
:func:`model_class` raise ImportError without it. A model's configuration (input size, classes, whether its
size is fixed) is read from timm's registry without building the model.
"""

from __future__ import annotations

import difflib
import functools
from typing import Any, ClassVar

import torch
from torch import nn
from torch.nn import functional as F

from torchbenchmark.contract import BatchSizes, ModelMeta
from torchbenchmark.models._fit import SourceModel
from torchbenchmark.models._images import ImageModel

SOURCE = "timm"
PACKAGE = "timm"

AUX_WEIGHT = 0.5  # a second head's share of the loss (a distilled model's distillation head, where it returns one)
# Smoke: batch 2 (a batch norm over a pooled 1x1 map needs two samples in training) of images 64 pixels a side, or
# the configuration's smallest input where it names one.
SMOKE_BATCH, SMOKE_SIDE = 2, 64
# Models tied to their configuration's input size, whose smoke keeps it: CrossViT's two branches must cut the image
# into patch grids that agree, EfficientFormer's last attention has a 7x7 bias table, halo attention's blocks must
# tile the feature maps of its 256 pixels.
SMOKE_AT_OWN_SIZE = ("crossvit_", "efficientformer_l", "halo2botnet", "lamhalobotnet")
BATCH_SIZES = BatchSizes(cpu_train=2, cpu_eval=4, cuda_train=32, cuda_eval=64)
NOTE = (
    "CPU batch 2/4 (train/eval), as for torchvision's classifiers, at the pretrained configuration's input size:"
    " ResNet-50 at 224 measured 1.4 s a train step, 0.7 s an eval step, EfficientNet-B0 0.5 s and 0.2 s (median of"
    " 3 steps after a warmup, one thread, beside a timing benchmark on a 2-core machine: an upper bound); CUDA 32/64."
)


def _on_meta() -> bool:
    return torch.get_default_device().type == "meta"


class TimmModel(SourceModel, ImageModel):
    """A timm model with random weights; without ``image_size`` its input is its pretrained configuration's."""

    arch: ClassVar[str]  # the name timm registers the model under
    # The pretrained configuration's input (channels, height, width), or None where timm registers none: then
    # the built model's own ``pretrained_cfg`` gives it.
    input_size: ClassVar[tuple[int, int, int] | None]
    # True: the model sizes its position embeddings for one input, so a chosen image_size is passed to it as img_size.
    fixed_input_size: ClassVar[bool]
    image_size: int | None = None  # type: ignore[assignment]

    def make_module(self) -> nn.Module:
        import timm  # optional and heavy: imported only when a model is built

        sized = {"img_size": self.image_size} if self.image_size is not None and self.fixed_input_size else {}
        try:
            return timm.create_model(self.arch, pretrained=False, **sized)
        except Exception:
            if not _on_meta():
                raise
        # A model that reads tensor values while building cannot be built on the meta device (none of timm 1.0.31's
        # does): it is counted from a CPU build instead, so it must fit in host memory once.
        with torch.device("cpu"):
            return timm.create_model(self.arch, pretrained=False, **sized)

    def input_shape(self) -> tuple[int, int, int]:
        channels, height, width = self.input_size or self.module.pretrained_cfg["input_size"]
        return (channels, height, width) if self.image_size is None else (channels, self.image_size, self.image_size)

    @property
    def num_classes(self) -> int:
        return int(getattr(self.module, "num_classes", 0))

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> tuple[torch.Tensor, ...]:
        images = torch.randn(batch_size, *self.input_shape(), generator=generator)
        if mode == "eval":
            return (images,)
        if self.num_classes < 1:
            raise NotImplementedError(f"timm:{self.arch} has no classifier (num_classes=0): a feature backbone, with no loss to train")
        return images, torch.randint(0, self.num_classes, (batch_size,), generator=generator)

    def loss(self, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
        images, labels = inputs
        output = self.module(images)
        if isinstance(output, tuple):  # a head and its auxiliary (distillation) heads
            logits, *aux = output
            return F.cross_entropy(logits, labels) + AUX_WEIGHT * sum(F.cross_entropy(a, labels) for a in aux)
        return F.cross_entropy(output, labels)


def _hint(name: str, offered: list[str], source: str) -> str:
    folded = [known for known in offered if known.lower() == name.lower()]
    close = folded or difflib.get_close_matches(name, offered, n=5, cutoff=0.6)
    return f"; close matches: {', '.join(close)}" if close else f"; `list {source}` names them all"


def names() -> list[str]:
    """Every model timm registers, sorted; ImportError without timm."""
    import timm

    return sorted(timm.list_models())


@functools.cache
def model_class(name: str) -> type[TimmModel]:
    """The model timm registers as ``name``, with its pretrained configuration's input; LookupError if none."""
    import timm.models

    offered = names()
    if name not in offered:
        raise LookupError(f"timm:{name} is not a model timm registers{_hint(name, offered, SOURCE)}")
    config = timm.models.get_pretrained_cfg(name)
    smallest = max(config.min_input_size[1:]) if config is not None and config.min_input_size else 0
    smoke: dict[str, Any] = {"batch_size": SMOKE_BATCH}
    if not name.startswith(SMOKE_AT_OWN_SIZE):
        smoke["image_size"] = max(SMOKE_SIDE, smallest)
    attributes: dict[str, Any] = {
        "arch": name,
        "input_size": tuple(config.input_size) if config is not None else None,
        "fixed_input_size": bool(config is not None and config.fixed_input_size),
        "__module__": __name__,
        "__qualname__": name,
    }
    attributes["meta"] = ModelMeta(
        name=f"{SOURCE}:{name}",
        family="vision-classification",
        batch_sizes=BATCH_SIZES,
        smoke=smoke,
        note=NOTE,
        requires=(PACKAGE,),
    )
    return type(name, (TimmModel,), attributes)
