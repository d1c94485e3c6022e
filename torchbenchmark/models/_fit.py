"""Whether a model built by name from a library (``hf:``, ``timm:``, ``torchvision:``) fits this machine,
decided before its weights are made: its parameters counted on the meta device, which allocates nothing."""

from __future__ import annotations

import os
from collections.abc import Callable

import torch
from torch import nn

from torchbenchmark.contract import BenchmarkModel, DoesNotFit, StepFn

GIB = 1024**3
# Bytes a parameter holds in each mode, in float32: eval its weight; train its weight, gradient and two
# optimizer moments (AdamW; SGD with momentum holds one fewer).
BYTES_PER_PARAMETER = {"train": 16, "eval": 4}
# The share of the memory available that weights and optimizer state may take, leaving the rest for activations.
SHARE_FOR_PARAMETERS = 0.5


def parameters_on_meta(build: Callable[[], nn.Module]) -> int:
    """The parameter count of the module ``build()`` makes, made on the meta device: no memory, no weights."""
    with torch.device("meta"):
        module = build()
    return sum(parameter.numel() for parameter in module.parameters())


def available_bytes(device: torch.device) -> int | None:
    """Memory a model could still take on ``device``: the kernel's ``MemAvailable`` on the CPU, the free
    device memory on CUDA; None where neither can be read."""
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free)
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return None


def check_fits(name: str, parameters: int, mode: str, device: torch.device, held: int = 0) -> None:
    """Raise :class:`DoesNotFit` with the estimate when ``parameters`` would take more than their share of
    the memory ``device`` has available in ``mode``; ``held``: bytes of it already made (and so no longer
    available), such as the weights when train's state is asked for."""
    available = available_bytes(device)
    needed = parameters * BYTES_PER_PARAMETER[mode]
    if available is None or needed - held <= SHARE_FOR_PARAMETERS * available:
        return
    raise DoesNotFit(
        f"{name} has {parameters / 1e6:,.0f}M parameters: about {needed / GIB:.1f} GiB in {mode} (weights"
        f"{', gradients and optimizer state' if mode == 'train' else ''}), more than half of the"
        f" {available / GIB:.1f} GiB available on {device.type}"
    )


# A base-size transformer's cost a token, as layers x hidden size squared (BERT-base, GPT-2: 12 x 768^2): the
# size the default batches of ``source_hf`` are set for.
BASE_TOKEN_COST = 12 * 768**2


def token_cost_ratio(config: object) -> float:
    """How many times a base-size transformer's cost a token a config's layers and hidden size make (1 where it
    names neither): AlbertConfig's defaults, ALBERT-xxlarge's 12 layers of 4,096, make 28."""
    layers, hidden = getattr(config, "num_hidden_layers", None), getattr(config, "hidden_size", None)
    return layers * hidden**2 / BASE_TOKEN_COST if isinstance(layers, int) and isinstance(hidden, int) else 1.0


class SourceModel(BenchmarkModel):
    """A model built by name from a library: it checks it fits before its weights are made (eval's share in
    :meth:`build`, train's before the first train step), then builds the module :meth:`make_module` makes."""

    cost_ratio: float = 1.0  # its config's cost a token over a base-size model's, where the source reads one

    def make_module(self) -> nn.Module:
        """The network with random weights; called once on the meta device to count, then for real."""
        raise NotImplementedError

    def build(self) -> nn.Module:
        self.parameter_count = parameters_on_meta(self.make_module)
        check_fits(self.meta.name, self.parameter_count, "eval", self.device)
        torch.manual_seed(self.seed)  # counting on the meta device drew nothing, but a builder may have
        return self.make_module()

    def batch_size(self, mode: str) -> int:
        """The default batch divided by ``cost_ratio`` (at least 1), where the config costs that many times a token
        what its source's defaults are set for, so its step stays about as long; a batch asked for is kept."""
        default = super().batch_size(mode)
        return default if self.requested_batch_size else max(1, int(default / max(1.0, self.cost_ratio)))

    def train(self, niter: int = 1, step_fn: StepFn | None = None) -> None:
        weights = self.parameter_count * BYTES_PER_PARAMETER["eval"]  # made at build: no longer available
        check_fits(self.meta.name, self.parameter_count, "train", self.device, held=weights)
        super().train(niter, step_fn)
