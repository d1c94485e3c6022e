"""torchvision object detectors, built by one template, trained on random images with random valid boxes."""

from __future__ import annotations

import torch
from torch import nn

from torchbenchmark.contract import Published
from torchbenchmark.models._images import TORCHVISION_WEIGHTS, ImageModel, torchvision_entry

NUM_CLASSES = 91  # COCO's label space, background included, as torchvision's detectors default to
BOXES_PER_IMAGE = 4


class TorchVisionDetector(ImageModel):
    """A torchvision detector with random weights; a train step sums the model's own loss dict."""

    arch: str  # the torchvision.models builder name
    image_size: int = 800  # torchvision's default min_size: the resolution detectors train at

    def __init__(
        self,
        device: str | torch.device = "cpu",
        batch_size: int | None = None,
        image_size: int | None = None,
        proposals: int | None = None,
    ) -> None:
        # Region proposals kept per image, and sampled for the box head in training; None keeps
        # torchvision's defaults (2000/1000 kept, 512 sampled), whose box head dominates a small image.
        self.proposals = proposals
        super().__init__(device=device, batch_size=batch_size, image_size=image_size)

    def build(self) -> nn.Module:
        import torchvision  # heavy: imported only when a detector is built

        limits: dict[str, int] = {}
        if self.proposals is not None:
            limits = {
                "rpn_post_nms_top_n_train": self.proposals,
                "rpn_post_nms_top_n_test": self.proposals,
                "box_batch_size_per_image": self.proposals,
            }
        # The model resizes every image to min_size inside forward; pinning both bounds to the input
        # size makes image_size the resolution the network really runs at.
        return torchvision.models.get_model(
            self.arch,
            weights=None,
            weights_backbone=None,
            num_classes=NUM_CLASSES,
            min_size=self.image_size,
            max_size=self.image_size,
            **limits,
        )

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> tuple[list, ...]:
        size = self.image_size
        images = list(torch.rand(batch_size, 3, size, size, generator=generator))
        if mode == "eval":
            return (images,)
        targets = []
        for _ in range(batch_size):
            # Corners in the top-left 70% and sides of 10-60% of the image: x1 < x2 and y1 < y2 always.
            top_left = torch.rand(BOXES_PER_IMAGE, 2, generator=generator) * 0.7 * size
            sides = (0.1 + 0.5 * torch.rand(BOXES_PER_IMAGE, 2, generator=generator)) * size
            boxes = torch.cat([top_left, (top_left + sides).clamp(max=size)], dim=1)
            labels = torch.randint(1, NUM_CLASSES, (BOXES_PER_IMAGE,), generator=generator)
            targets.append({"boxes": boxes, "labels": labels})
        return images, targets

    def loss(self, inputs: tuple[list, ...]) -> torch.Tensor:
        images, targets = inputs
        losses = self.module(images, targets)
        return sum(losses.values())


def detector(
    arch: str, cpu_train: int, cpu_eval: int, cuda: int = 8, note: str = "", published: Published | None = None
) -> type[TorchVisionDetector]:
    """A registry entry for the torchvision detector ``arch``: metadata only, no behaviour."""
    smoke = {"batch_size": 1, "image_size": 64, "proposals": 32}
    return torchvision_entry(TorchVisionDetector, arch, "detection", (cpu_train, cpu_eval, cuda), smoke, note, published)


fasterrcnn_mobilenet_v3_large_fpn = detector(
    "fasterrcnn_mobilenet_v3_large_fpn",
    cpu_train=1,
    cpu_eval=1,
    note=(
        "CPU batch 1 at torchvision's 800x800 and default RoI sampling: a train step still measured "
        "2.8 s (eval 1.25 s; median of 5 after warmup, one thread on a loaded 2-core machine), a third "
        "of it the single-threaded RoIAlign backward over 512 sampled boxes; 512x512 images saved little."
    ),
    published=Published(
        TORCHVISION_WEIGHTS,
        params_difference=24_400,
        differs=(
            "Parameters: +24,400, plain BatchNorm2d in the backbone (torchvision builds it so without weights; the "
            "published, pretrained model freezes it, leaving its weight and bias buffers). FLOPs: the published figure "
            "is the backbone and the RPN, which agree; with random weights the box head then runs on every one of "
            "the 1000 proposals the RPN keeps, which adds the rest of the suite's count."
        ),
    ),
)
