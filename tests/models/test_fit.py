"""A library model too large for the machine is declined before its weights are made: counted on the meta
device, then a ``DoesNotFit`` (a skipped row) with the estimate."""

from __future__ import annotations

import pytest
import torch

from torchbenchmark.contract import DoesNotFit
from torchbenchmark.models import _fit
from torchbenchmark.registry import model_class


@pytest.mark.parametrize("spec", ["torchvision:resnet18", "timm:resnet18", "hf:BertForMaskedLM"])
def test_too_large_for_the_memory_is_declined_on_the_meta_device(spec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if spec.startswith("timm:"):
        pytest.importorskip("timm")
    cls = model_class(spec)
    devices: list[str] = []
    make_module = cls.make_module

    def recording(self: _fit.SourceModel) -> torch.nn.Module:
        devices.append(torch.get_default_device().type)
        return make_module(self)

    monkeypatch.setattr(cls, "make_module", recording)
    monkeypatch.setattr(_fit, "available_bytes", lambda device: 1 << 20)
    with pytest.raises(DoesNotFit, match=rf"^{spec} has \d+M parameters: about .* GiB in eval \(weights\), more than half of the 0.0 GiB"):
        cls(**{"batch_size": None, **cls.meta.smoke})
    assert devices == ["meta"]


def test_train_asks_only_for_what_the_built_weights_do_not_hold_already(monkeypatch: pytest.MonkeyPatch) -> None:
    """Weights made at build are no longer available: train's check counts its gradients and optimizer state
    against what is left, not the weights twice."""
    parameters = 1_000_000
    monkeypatch.setattr(_fit, "available_bytes", lambda device: 25 * parameters)  # 12 B a parameter more fits in half of it
    _fit.check_fits("m", parameters, "train", torch.device("cpu"), held=4 * parameters)
    with pytest.raises(DoesNotFit, match="about 0.0 GiB in train"):
        _fit.check_fits("m", parameters, "train", torch.device("cpu"))
