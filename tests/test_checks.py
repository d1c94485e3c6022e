"""The contract checks pass a good model and fail each broken one for the right reason."""

from __future__ import annotations

import pytest

from tests import tiny_models as tm
from torchbenchmark import checks
from torchbenchmark.checks import ContractViolation


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_good_model_passes_every_check(mode: str) -> None:
    checks.check_model(tm.TinyMLP(), mode)


@pytest.mark.parametrize(
    ("model_cls", "mode", "message"),
    [
        (tm.StepFnTwice, "train", "called step_fn 6 times, expected 3"),
        (tm.NeverZeroesGrad, "train", "gradients accumulated across steps"),
        (tm.ForwardOutsideLoop, "eval", "unequal work"),
        (tm.EvalTrains, "eval", "eval ran backward ops"),
        (tm.EvalMutates, "eval", "eval changed"),
        (tm.NoBackwardLabel, "train", "recorded phases"),
        (tm.NanLoss, "train", "not finite"),
        (tm.FrozenTrain, "train", "did not change any parameter"),
        (tm.BufferOnWrongDevice, "train", "stray is on meta"),
    ],
)
def test_broken_model_fails(model_cls: type, mode: str, message: str) -> None:
    with pytest.raises(ContractViolation, match=message):
        checks.check_model(model_cls(), mode)


def test_annotation_counts_are_per_step() -> None:
    counts = checks.phase_counts(tm.TinyMLP(), "train", niter=3)
    assert counts == {"forward": 3, "backward": 3, "optimizer": 3}


def test_ops_per_step_counts_each_step() -> None:
    counts, backward = checks.ops_per_step(tm.TinyMLP(), "eval", niter=4)
    # The first step also builds the eval inputs; the rest do identical work.
    assert len(counts) == 4 and counts[-1] > 0 and len(set(counts[1:])) == 1
    assert backward == set()
