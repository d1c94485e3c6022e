"""Smoke test for CI: every registered model honours the contract, in each mode, on each device here.

    python test.py                      # every model
    python test.py -k resnet            # unittest's own filter
    python -m pytest test.py -q         # the same tests under pytest

One test per model x mode x device, each building the model with its small smoke configuration.
A mode a model does not support (NotImplementedError) is skipped with the reason.
"""

from __future__ import annotations

import unittest

# torchbenchmark first: it sets the profiler's native log levels before torch reads them.
from torchbenchmark import MODES, list_models, load_model, model_class
from torchbenchmark.checks import check_model

import torch  # noqa: E402  isort: skip

# The checks test behaviour, not speed, and on a shared 2-core machine two intra-op threads spin at
# barriers while the other core is busy: one thread makes the smoke test several times faster there.
torch.set_num_threads(1)


def devices() -> list[str]:
    return ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]


class TestModels(unittest.TestCase):
    """Filled in below with one test method per model, mode and device."""


def _make_test(name: str, mode: str, device: str):  # type: ignore[no-untyped-def]
    def test(self: unittest.TestCase) -> None:
        smoke = dict(model_class(name).meta.smoke)
        try:
            model = load_model(name, device=device, **smoke)
            check_model(model, mode)
        except NotImplementedError as error:
            self.skipTest(f"{name} does not support {mode}: {error}")

    test.__doc__ = f"{name} {mode} on {device} honours the contract"
    return test


for _name in list_models():
    for _mode in MODES:
        for _device in devices():
            setattr(TestModels, f"test_{_name}_{_mode}_{_device}", _make_test(_name, _mode, _device))


if __name__ == "__main__":
    unittest.main(verbosity=2)
