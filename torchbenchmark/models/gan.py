"""DCGAN (Radford et al., 2016) on random 64x64 images: two networks, two optimizers, one step."""

from __future__ import annotations

import torch
from torch import nn

from torchbenchmark.contract import BatchSizes, BenchmarkModel, ModelMeta

LATENT = 100


def generator(width: int) -> nn.Sequential:
    def up(cin: int, cout: int) -> list[nn.Module]:
        return [nn.ConvTranspose2d(cin, cout, 4, 2, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(True)]

    return nn.Sequential(
        nn.ConvTranspose2d(LATENT, width * 8, 4, 1, 0, bias=False),
        nn.BatchNorm2d(width * 8),
        nn.ReLU(True),
        *up(width * 8, width * 4),
        *up(width * 4, width * 2),
        *up(width * 2, width),
        nn.ConvTranspose2d(width, 3, 4, 2, 1, bias=False),
        nn.Tanh(),
    )


def discriminator(width: int) -> nn.Sequential:
    def down(cin: int, cout: int) -> list[nn.Module]:
        return [nn.Conv2d(cin, cout, 4, 2, 1, bias=False), nn.BatchNorm2d(cout), nn.LeakyReLU(0.2, True)]

    return nn.Sequential(
        nn.Conv2d(3, width, 4, 2, 1, bias=False),
        nn.LeakyReLU(0.2, True),
        *down(width, width * 2),
        *down(width * 2, width * 4),
        *down(width * 4, width * 8),
        nn.Conv2d(width * 8, 1, 4, 1, 0, bias=False),
        nn.Flatten(0),
    )


class DCGAN(BenchmarkModel):
    meta = ModelMeta(
        name="dcgan",
        family="gan",
        batch_sizes=BatchSizes(cpu_train=32, cpu_eval=64, cuda_train=128, cuda_eval=256),
        smoke={"batch_size": 2, "width": 8},
        annotated=False,
        note="A GAN step trains the discriminator then the generator, so it has no single forward/backward/optimizer shape.",
    )

    def __init__(self, device: str | torch.device = "cpu", batch_size: int | None = None, width: int = 64) -> None:
        self.width = width
        super().__init__(device=device, batch_size=batch_size)
        self.loss_fn = nn.BCEWithLogitsLoss()

    def build(self) -> nn.Module:
        return nn.ModuleDict({"generator": generator(self.width), "discriminator": discriminator(self.width)})

    def make_optimizers(self) -> list[torch.optim.Optimizer]:
        return [
            torch.optim.Adam(self.module["generator"].parameters(), lr=2e-4, betas=(0.5, 0.999)),
            torch.optim.Adam(self.module["discriminator"].parameters(), lr=2e-4, betas=(0.5, 0.999)),
        ]

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> tuple[torch.Tensor, ...]:
        noise = torch.randn(batch_size, LATENT, 1, 1, generator=generator)
        if mode == "eval":
            return (noise,)
        real = torch.rand(batch_size, 3, 64, 64, generator=generator) * 2 - 1
        return noise, real

    def train_step(self, inputs: tuple[torch.Tensor, ...]) -> None:
        noise, real = inputs
        netG, netD = self.module["generator"], self.module["discriminator"]
        optG, optD = self.optimizers
        ones = torch.ones(real.shape[0], device=self.device)
        zeros = torch.zeros(real.shape[0], device=self.device)

        # Discriminator: real images towards 1, generated ones (detached from G) towards 0.
        optD.zero_grad(set_to_none=True)
        fake = netG(noise)
        errD = self.loss_fn(netD(real), ones) + self.loss_fn(netD(fake.detach()), zeros)
        errD.backward()
        optD.step()

        # Generator: make the discriminator call its images real.
        optG.zero_grad(set_to_none=True)
        errG = self.loss_fn(netD(fake), ones)
        errG.backward()
        optG.step()
        self.last_loss = (errD + errG).detach()

    def infer(self, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
        (noise,) = inputs
        return self.module["generator"](noise)
