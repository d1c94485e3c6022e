"""Smoke test for CI: every registered model honours the contract, in each mode, on each device here.

    python test.py                      # every model
    python test.py -k resnet            # unittest's own filter
    python -m pytest test.py -q         # the same tests under pytest

One test per model x mode x device, each building the model with its small smoke configuration.
A mode a model does not support is skipped only if it is listed in ``EXPECTED_SKIPS`` and raises
NotImplementedError when run; any other NotImplementedError, or a listed mode that runs, fails.
"""

from __future__ import annotations

import os
import unittest

# The profiler's native libraries log to stderr unless told not to; c10 reads its level when torch is imported.
os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
os.environ.setdefault("KINETO_LOG_LEVEL", "6")

import pytest
import torch

from torchbenchmark import MODES, list_models, load_model, model_class
from torchbenchmark.checks import check_model
from torchbenchmark.contract import iter_tensors

# The checks test behaviour, not speed, and on a shared 2-core machine two intra-op threads spin at
# barriers while the other core is busy: one thread makes the smoke test several times faster there.
torch.set_num_threads(1)


# (model, mode) pairs that raise NotImplementedError by design, with the reason.
EXPECTED_SKIPS = {
    ("pyhpc_equation_of_state", "train"): "an equation of state has no parameters to train",
    **{(f"{name}_decode", "train"): "a decode workload runs inference only" for name in ("llama", "mixtral", "mamba")},
}


def devices() -> list[str]:
    return ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]


@pytest.mark.slow
class TestModels(unittest.TestCase):
    """Filled in below with one test method per model, mode and device."""


def assert_same_build(first, second) -> None:  # type: ignore[no-untyped-def]
    """Seeded builds: every parameter, buffer and input of each mode equal (before either model runs)."""
    for (name, a), (_, b) in zip(first.module.state_dict().items(), second.module.state_dict().items(), strict=True):
        assert torch.equal(a, b), f"{name} differs between two builds"
    for mode in MODES:
        for a, b in zip(iter_tensors(first.inputs(mode)), iter_tensors(second.inputs(mode)), strict=True):
            assert torch.equal(a, b), f"{mode} inputs differ between two builds"


def _make_test(name: str, mode: str, device: str):  # type: ignore[no-untyped-def]
    def test(self: unittest.TestCase) -> None:
        model = load_model(name, device=device, **model_class(name).meta.smoke)
        reason = EXPECTED_SKIPS.get((name, mode))
        if reason is not None:
            with self.assertRaisesRegex(NotImplementedError, reason):
                getattr(model, mode)(niter=1)
            self.skipTest(f"{name} does not support {mode}: {reason}")
        if mode == "train":  # once per model: a second build has the same weights and inputs
            assert_same_build(model, load_model(name, device=device, **model_class(name).meta.smoke))
        check_model(model, mode)

    test.__doc__ = f"{name} {mode} on {device} honours the contract"
    return test


class TestExpectedSkips(unittest.TestCase):
    def test_every_expected_skip_names_a_registered_model_and_mode(self) -> None:
        for name, mode in EXPECTED_SKIPS:
            self.assertIn(name, list_models())
            self.assertIn(mode, MODES)


for _name in list_models():
    for _mode in MODES:
        for _device in devices():
            setattr(TestModels, f"test_{_name}_{_mode}_{_device}", _make_test(_name, _mode, _device))


if __name__ == "__main__":
    unittest.main(verbosity=2)
