"""What the image models share: square inputs whose side a smoke configuration can shrink."""

from __future__ import annotations

import torch

from torchbenchmark.contract import BenchmarkModel


class ImageModel(BenchmarkModel):
    """A model of square RGB images, ``image_size`` pixels a side: the class default, or the constructor's."""

    image_size: int

    def __init__(
        self,
        device: str | torch.device = "cpu",
        batch_size: int | None = None,
        image_size: int | None = None,
    ) -> None:
        if image_size is not None:
            self.image_size = image_size
        super().__init__(device=device, batch_size=batch_size)
