"""Semantic segmentation: a hand-written U-Net and torchvision's DeepLabV3, trained on random masks."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from torchbenchmark.contract import BatchSizes, ModelMeta, Published
from torchbenchmark.models._images import TORCHVISION_WEIGHTS, ImageModel, torchvision_entry


class SegmentationModel(ImageModel):
    """Per-pixel cross-entropy of a network's logits against a random mask of ``num_classes`` labels."""

    num_classes: int

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> tuple[torch.Tensor, ...]:
        size = self.image_size
        images = torch.randn(batch_size, 3, size, size, generator=generator)
        if mode == "eval":
            return (images,)
        masks = torch.randint(0, self.num_classes, (batch_size, size, size), generator=generator)
        return images, masks

    def logits(self, images: torch.Tensor) -> torch.Tensor:
        return self.module(images)

    def loss(self, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
        images, masks = inputs
        return F.cross_entropy(self.logits(images), masks)


# -- U-Net (Ronneberger et al., 2015), in the shape of the widely used milesial/Pytorch-UNet ---------------


def double_conv(cin: int, cout: int, mid: int | None = None) -> nn.Sequential:
    mid = mid or cout
    return nn.Sequential(
        nn.Conv2d(cin, mid, 3, padding=1, bias=False),
        nn.BatchNorm2d(mid),
        nn.ReLU(inplace=True),
        nn.Conv2d(mid, cout, 3, padding=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
    )


class Up(nn.Module):
    """Upsample, concatenate the skip connection, double conv."""

    def __init__(self, cin: int, cout: int, bilinear: bool) -> None:
        super().__init__()
        if bilinear:
            # Upsampling keeps the channels, so the first conv halves them instead.
            self.up: nn.Module = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
            self.conv = double_conv(cin, cout, mid=cin // 2)
        else:
            self.up = nn.ConvTranspose2d(cin, cin // 2, 2, stride=2)
            self.conv = double_conv(cin, cout)

    def forward(self, x: torch.Tensor, skip: torch.Tensor) -> torch.Tensor:
        x = self.up(x)
        # Odd sizes lose a pixel on the way down; pad back so the skip connection lines up.
        dy, dx = skip.shape[2] - x.shape[2], skip.shape[3] - x.shape[3]
        x = F.pad(x, [dx // 2, dx - dx // 2, dy // 2, dy - dy // 2])
        return self.conv(torch.cat([skip, x], dim=1))


class UNetNet(nn.Module):
    """Four max-pool downsamplings and four upsamplings, channels doubling from ``width`` on the way down."""

    def __init__(self, in_channels: int, num_classes: int, width: int = 64, bilinear: bool = False) -> None:
        super().__init__()
        factor = 2 if bilinear else 1  # bilinear upsampling cannot halve channels, so the bottom is narrower
        w = [width * 2**i for i in range(5)]
        self.inc = double_conv(in_channels, w[0])
        self.downs = nn.ModuleList(
            nn.Sequential(nn.MaxPool2d(2), double_conv(w[i], w[i + 1] // (factor if i == 3 else 1))) for i in range(4)
        )
        self.ups = nn.ModuleList(Up(w[i + 1], w[i] // (factor if i > 0 else 1), bilinear) for i in reversed(range(4)))
        self.outc = nn.Conv2d(w[0], num_classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skips = [self.inc(x)]
        for down in self.downs:
            skips.append(down(skips[-1]))
        x = skips.pop()
        for up in self.ups:
            x = up(x, skips.pop())
        return self.outc(x)


class UNet(SegmentationModel):
    meta = ModelMeta(
        name="pytorch_unet",
        family="segmentation",
        batch_sizes=BatchSizes(cpu_train=1, cpu_eval=2, cuda_train=4, cuda_eval=8),
        smoke={"batch_size": 1, "image_size": 64, "width": 8},
        note=(
            "128x128 images, not the reference's 640x959 Carvana crops: at full width a 256x256 train step "
            "already took 5.2 s, 128x128 took 1.1 s (batch 1, median of 5 after warmup, one thread on a "
            "loaded 2-core machine: an upper bound); eval batch 2 measured 0.4 s per image."
        ),
    )
    num_classes = 2  # foreground/background, as in the Carvana car masks the reference trains on
    image_size = 128

    def __init__(
        self,
        device: str | torch.device = "cpu",
        batch_size: int | None = None,
        image_size: int | None = None,
        width: int = 64,
        bilinear: bool = False,
    ) -> None:
        self.width = width
        self.bilinear = bilinear
        super().__init__(device=device, batch_size=batch_size, image_size=image_size)

    def build(self) -> nn.Module:
        return UNetNet(3, self.num_classes, self.width, self.bilinear)


# -- torchvision segmenters ------------------------------------------------------------------------------


class TorchVisionSegmenter(SegmentationModel):
    """A torchvision segmentation model with random weights; its logits are the ``out`` entry."""

    arch: str  # the torchvision.models builder name
    num_classes = 21  # Pascal VOC's label space, background included, as torchvision's weights use
    # torchvision's references train on 480 crops and evaluate at 520; 256 keeps a CPU step near a second.
    image_size = 256

    def build(self) -> nn.Module:
        import torchvision  # heavy: imported only when a segmenter is built

        return torchvision.models.get_model(self.arch, weights=None, weights_backbone=None, num_classes=self.num_classes, aux_loss=False)

    def logits(self, images: torch.Tensor) -> torch.Tensor:
        return self.module(images)["out"]


def segmenter(
    arch: str, cpu_train: int, cpu_eval: int, cuda: int = 8, note: str = "", published: Published | None = None
) -> type[TorchVisionSegmenter]:
    """A registry entry for the torchvision segmentation model ``arch``: metadata only, no behaviour."""
    # Batch 2: the ASPP pooling branch batch-normalises a 1x1 map, which needs two samples in training.
    smoke = {"batch_size": 2, "image_size": 64}
    return torchvision_entry(TorchVisionSegmenter, arch, "segmentation", (cpu_train, cpu_eval, cuda), smoke, note, published)


deeplabv3_mobilenet_v3_large = segmenter(
    "deeplabv3_mobilenet_v3_large",
    cpu_train=2,
    cpu_eval=4,
    note=(
        "CPU batch 2, the smallest its ASPP batch norm trains with, at 256x256: the train step measured "
        "1.0 s (4.3 s at 520x520; median of 5 after warmup, one thread on a loaded 2-core machine); "
        "eval batch 4 keeps an eval step near 0.4 s."
    ),
    published=Published(
        TORCHVISION_WEIGHTS,
        params_difference=-3_851,
        input_size=520,
        differs=(
            "Runs at 256x256; the published FLOPs are at 520x520, where the suite's model agrees. Parameters: -3,851, "
            "no auxiliary head (aux_loss=False: its loss is not the one trained here)."
        ),
    ),
)
