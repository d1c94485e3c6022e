"""Every torchvision image classifier, built by one template so the copies cannot drift apart.

Each registry entry is a subclass made by :func:`classifier` that sets metadata and nothing else;
a test fails if any entry overrides the template's behaviour.
"""

from __future__ import annotations

import torch
from torch import nn

from torchbenchmark.models._images import ImageModel, torchvision_entry

NUM_CLASSES = 1000
CPU_BATCH_NOTE = (
    "CPU batch sizes: powers of two chosen so a 224px train step measured 0.6-1.5 s (median of 5 steps "
    "after warmup, one thread on a shared 2-core machine, so an upper bound for two idle cores)."
)


class TorchVisionClassifier(ImageModel):
    """A torchvision classifier with random weights, trained with cross-entropy on random images."""

    arch: str  # the torchvision.models builder name
    image_size: int = 224
    # ViT sizes its position embeddings for one image size, so its builder must be told the size.
    builder_takes_image_size: bool = False

    def build(self) -> nn.Module:
        import torchvision  # heavy: imported only when a classifier is built

        sized = {"image_size": self.image_size} if self.builder_takes_image_size else {}
        return torchvision.models.get_model(self.arch, weights=None, num_classes=NUM_CLASSES, **sized)

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> tuple[torch.Tensor, ...]:
        images = torch.randn(batch_size, 3, self.image_size, self.image_size, generator=generator)
        if mode == "eval":
            return (images,)
        labels = torch.randint(0, NUM_CLASSES, (batch_size,), generator=generator)
        return images, labels

    def loss(self, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
        images, labels = inputs
        return nn.functional.cross_entropy(self.module(images), labels)


def classifier(
    arch: str,
    cpu_train: int,
    cpu_eval: int,
    cuda: int = 64,
    smoke_image_size: int = 64,
    builder_takes_image_size: bool = False,
    note: str = CPU_BATCH_NOTE,
) -> type[TorchVisionClassifier]:
    """A registry entry for the torchvision classifier ``arch``: metadata only, no behaviour."""
    return torchvision_entry(
        TorchVisionClassifier,
        arch,
        "vision-classification",
        (cpu_train, cpu_eval, cuda),
        smoke={"batch_size": 2, "image_size": smoke_image_size},
        note=note,
        builder_takes_image_size=builder_takes_image_size,
    )


# CPU batch sizes keep a default train step between about 0.05 and 2 s on a 2-core machine (CPU_BATCH_NOTE).
resnet50 = classifier(
    "resnet50",
    cpu_train=8,
    cpu_eval=8,
    note="CPU batch 8 predates the measured ones: a train step measured 2.2 s, eval 0.7 s (one thread, shared).",
)
resnet18 = classifier("resnet18", cpu_train=8, cpu_eval=16)
resnext50_32x4d = classifier("resnext50_32x4d", cpu_train=4, cpu_eval=8)
mobilenet_v2 = classifier("mobilenet_v2", cpu_train=8, cpu_eval=16)
mobilenet_v3_large = classifier("mobilenet_v3_large", cpu_train=16, cpu_eval=32)
shufflenet_v2_x1_0 = classifier("shufflenet_v2_x1_0", cpu_train=16, cpu_eval=32)
squeezenet1_1 = classifier("squeezenet1_1", cpu_train=16, cpu_eval=32)
densenet121 = classifier("densenet121", cpu_train=4, cpu_eval=8)
vgg16 = classifier("vgg16", cpu_train=1, cpu_eval=2)
alexnet = classifier("alexnet", cpu_train=16, cpu_eval=32)
mnasnet1_0 = classifier("mnasnet1_0", cpu_train=8, cpu_eval=16)
efficientnet_b0 = classifier("efficientnet_b0", cpu_train=8, cpu_eval=16)
vit_b_16 = classifier("vit_b_16", cpu_train=1, cpu_eval=2, smoke_image_size=32, builder_takes_image_size=True)
convnext_tiny = classifier("convnext_tiny", cpu_train=2, cpu_eval=4)
swin_t = classifier("swin_t", cpu_train=2, cpu_eval=4)
