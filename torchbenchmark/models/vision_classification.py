"""Every torchvision image classifier, built by one template so the copies cannot drift apart.

Each registry entry is a subclass made by :func:`classifier` that sets metadata and nothing else;
a test fails if any entry overrides the template's behaviour.
"""

from __future__ import annotations

import torch
from torch import nn

from torchbenchmark.contract import BatchSizes, BenchmarkModel, ModelMeta

NUM_CLASSES = 1000


class TorchVisionClassifier(BenchmarkModel):
    """A torchvision classifier with random weights, trained with cross-entropy on random images."""

    arch: str  # the torchvision.models builder name
    image_size: int = 224

    def __init__(
        self,
        device: str | torch.device = "cpu",
        batch_size: int | None = None,
        image_size: int | None = None,
    ) -> None:
        if image_size is not None:
            self.image_size = image_size
        super().__init__(device=device, batch_size=batch_size)
        self.loss_fn = nn.CrossEntropyLoss()

    def build(self) -> nn.Module:
        import torchvision  # heavy: imported only when a classifier is built

        return torchvision.models.get_model(self.arch, weights=None, num_classes=NUM_CLASSES)

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> tuple[torch.Tensor, ...]:
        images = torch.randn(batch_size, 3, self.image_size, self.image_size, generator=generator)
        if mode == "eval":
            return (images,)
        labels = torch.randint(0, NUM_CLASSES, (batch_size,), generator=generator)
        return images, labels

    def loss(self, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
        images, labels = inputs
        return self.loss_fn(self.module(images), labels)


def classifier(
    arch: str,
    cpu_train: int,
    cpu_eval: int,
    cuda: int = 64,
    smoke_image_size: int = 64,
    note: str = "",
) -> type[TorchVisionClassifier]:
    """A registry entry for the torchvision classifier ``arch``: metadata only, no behaviour."""
    meta = ModelMeta(
        name=arch,
        family="vision-classification",
        batch_sizes=BatchSizes(cpu_train=cpu_train, cpu_eval=cpu_eval, cuda_train=cuda, cuda_eval=cuda),
        smoke={"batch_size": 2, "image_size": smoke_image_size},
        note=note,
    )
    return type(arch, (TorchVisionClassifier,), {"arch": arch, "meta": meta, "__module__": __name__})


# CPU batch sizes keep a default train step between about 0.05 and 2 s on a 2-core machine.
resnet50 = classifier("resnet50", cpu_train=8, cpu_eval=8)
