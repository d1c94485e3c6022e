"""What the image models share: square inputs whose side a smoke configuration can shrink, and one way
to make a registry entry for a torchvision architecture on a family's template."""

from __future__ import annotations

from typing import Any

import torch

from torchbenchmark.contract import BatchSizes, BenchmarkModel, ModelMeta, Published

# torchvision publishes each architecture's parameters and FLOPs in its weights enums' metadata
# (``num_params``, and ``_ops`` in GFLOPs counting a multiply-add once), readable without a download.
TORCHVISION_WEIGHTS = "torchvision weights metadata (get_model_weights(arch).DEFAULT.meta)"


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


def torchvision_entry(
    template: type[ImageModel],
    arch: str,
    family: str,
    batch_sizes: tuple[int, int, int],
    smoke: dict[str, Any],
    note: str,
    published: Published | None = None,
    **attributes: Any,
) -> type:
    """A registry entry for the torchvision model ``arch`` on ``template``: metadata only, no behaviour.

    ``batch_sizes`` is (cpu_train, cpu_eval, cuda): CUDA trains and evaluates at one size. The entry
    reports the template's module as its own, where its factory (``classifier``, ...) defines it.
    ``published`` says how it differs from torchvision's published figures; by default it does not.
    """
    cpu_train, cpu_eval, cuda = batch_sizes
    meta = ModelMeta(
        name=arch,
        family=family,
        batch_sizes=BatchSizes(cpu_train=cpu_train, cpu_eval=cpu_eval, cuda_train=cuda, cuda_eval=cuda),
        smoke=smoke,
        note=note,
        published=published or Published(TORCHVISION_WEIGHTS),
    )
    return type(arch, (template,), {"arch": arch, "meta": meta, "__module__": template.__module__, **attributes})
