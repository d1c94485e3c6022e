"""The contract checks pass a good model and fail each broken one for the right reason."""

from __future__ import annotations

import dataclasses

import pytest

from tests.helpers import tiny_models as tm
from torchbenchmark import checks
from torchbenchmark.checks import ContractViolation


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_good_model_passes_every_check(mode: str) -> None:
    checks.check_model(tm.TinyMLP(), mode)


@pytest.mark.parametrize(
    ("model_cls", "mode", "message"),
    [
        (tm.StepFnTwice, "train", "^train\\(niter=3\\) called step_fn 6 times, expected 3$"),
        (tm.StepFnTooFew, "train", "^train\\(niter=3\\) called step_fn 2 times, expected 3$"),
        (tm.NeverZeroesGrad, "train", "gradients accumulated across steps"),
        (tm.ForwardOutsideLoop, "eval", "unequal work"),
        (tm.PartOutsideLoop, "eval", r"^eval steps dispatched unequal work: ops per step \[\d+, 4, 4\]$"),
        (tm.SkipsWorkOnEvenSteps, "eval", r"^eval steps dispatched unequal work: ops per step \[\d+, 2, 8\]$"),
        (tm.EvalTrains, "eval", r"^eval ran backward ops: \['aten::threshold_backward'\]$"),
        (tm.EvalMutates, "eval", r"^eval changed \['0.weight'\]$"),
        # The first three of the six buffers it changed.
        (tm.BatchNormLeftInTrainMode, "eval", r"^eval changed \['1.running_mean', '1.running_var', '1.num_batches_tracked'\]$"),
        (
            tm.EvalTrainsDeep,
            "eval",
            r"^eval ran backward ops: \['aten::elu_backward', 'aten::gelu_backward', "
            r"'aten::hardtanh_backward', 'aten::sigmoid_backward', 'aten::softplus_backward'\]$",
        ),
        (tm.FrozenTrainWithBatchNorm, "train", "^train did not change any parameter$"),
        (tm.NoOutputKept, "eval", "^eval left no output tensors in model.last_output$"),
        (tm.NanOutput, "eval", "^eval output is not finite$"),
        (tm.PhasesInEval, "eval", r"^eval\(niter=2\) recorded phases \{'forward': 2, 'backward': 2, 'optimizer': 0\}, expected"),
        (tm.NoBackwardLabel, "train", r"^train\(niter=2\) recorded phases \{'forward': 2, 'backward': 0, 'optimizer': 2\}"),
        (tm.NanLoss, "train", "^train loss is not finite"),
        (tm.NoLossKept, "train", "^train left no loss in model.last_loss$"),
        (tm.FrozenTrain, "train", "^train did not change any parameter$"),
        (tm.BufferOnWrongDevice, "train", "^stray is on meta, expected cpu$"),
    ],
)
def test_broken_model_fails(model_cls: type, mode: str, message: str) -> None:
    with pytest.raises(ContractViolation, match=message):
        checks.check_model(model_cls(), mode)


def test_gradients_may_accumulate_within_a_step_but_not_across_steps() -> None:
    checks.check_model(tm.TwoLossesPerStep(), "train")
    with pytest.raises(
        ContractViolation, match=r"^gradients accumulated across steps: 2.bias \(step 2\) held a gradient from the step before$"
    ):
        checks.check_gradients_zeroed(tm.NeverZeroesGrad())


@pytest.mark.parametrize(
    ("model_cls", "message"),
    [
        (tm.ForgetsZeroGradOnce, r"^gradients accumulated across steps: 2.bias \(step 3\) held"),  # counted per step
        (tm.OneParameterAccumulates, r"^gradients accumulated across steps: 0.weight \(step 2\) held"),  # every one
    ],
)
def test_stale_gradients_are_found_in_the_step_and_parameter_they_are(model_cls: type, message: str) -> None:
    with pytest.raises(ContractViolation, match=message):
        checks.check_gradients_zeroed(model_cls())


def test_sparse_gradients_that_accumulate_are_found() -> None:
    with pytest.raises(ContractViolation, match=r"^gradients accumulated across steps: weight \(step 2\)"):
        checks.check_gradients_zeroed(tm.SparseGradientsAccumulate())


def test_each_check_runs_its_documented_number_of_steps() -> None:
    for check, mode, steps in [
        (lambda m: checks.check_step_fn_calls(m, "train"), "train", 3),
        (lambda m: checks.check_every_step_does_the_work(m, "eval"), "eval", 3),
        (checks.check_eval_runs_no_backward, "eval", 2),
        (checks.check_train_updates_and_is_finite, "train", 2),
        (checks.check_eval_is_pure_and_finite, "eval", 2),
        (checks.check_gradients_zeroed, "train", 3),
        (lambda m: checks.check_annotations(m, "train"), "train", 2),
    ]:
        model = tm.CountsSteps()
        check(model)
        assert model.steps[mode] == steps, (mode, steps)
    model = tm.CountsSteps()
    checks.check_eval_runs_no_backward(model, niter=5)
    checks.check_annotations(model, "train", niter=4)
    assert model.steps == {"train": 4, "eval": 5}


def test_ops_per_step_counts_from_the_first_op() -> None:
    assert checks.ops_per_step(tm.OneAddPerStep(), "eval") == ([1, 1, 1], set())


def test_inputs_left_off_the_device_fail() -> None:
    with pytest.raises(ContractViolation, match="^a eval input is on meta, expected cpu$"):
        checks.check_on_device(tm.InputsOffDevice(), "eval")
    checks.check_on_device(tm.InputsOffDevice(), "train")
    with pytest.raises(ContractViolation, match="^eval inputs hold no tensors$"):
        checks.check_on_device(tm.NoInputs(), "eval")


@pytest.mark.parametrize(
    ("counts", "ok"),
    [
        ([40, 20, 20], True),  # the first step may do up to twice the work (lazy optimizer state)
        ([41, 20, 20], False),
        ([20, 18, 20], True),  # and any step down to 0.9 of the last
        ([20, 17, 20], False),
        ([20, 20, 40], False),  # later steps are compared with the last: here they do half
        ([0, 0, 0], False),
        ([20, 20], False),  # fewer steps than asked for
    ],
)
def test_equal_work_band_is_0_9_to_2_times_the_last_step(monkeypatch: pytest.MonkeyPatch, counts: list[int], ok: bool) -> None:
    monkeypatch.setattr(checks, "ops_per_step", lambda model, mode, niter: (counts, set()))
    if ok:
        checks.check_every_step_does_the_work(tm.TinyMLP(), "eval", niter=3)
    else:
        with pytest.raises(ContractViolation, match=r"^eval( steps dispatched unequal work: ops per step|\(niter=3\) ran 2 steps)"):
            checks.check_every_step_does_the_work(tm.TinyMLP(), "eval", niter=3)


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="^unknown mode 'infer'$"):
        checks.run(tm.TinyMLP(), "infer", 1)


def test_unannotated_models_skip_the_phase_check() -> None:
    class Unannotated(tm.NoBackwardLabel):
        meta = dataclasses.replace(tm.TinyMLP.meta, annotated=False, note="no backward label")

    checks.check_model(Unannotated(), "train")


def test_annotation_counts_are_per_step() -> None:
    counts = checks.phase_counts(tm.TinyMLP(), "train", niter=3)
    assert counts == {"forward": 3, "backward": 3, "optimizer": 3}


def test_ops_per_step_counts_each_step() -> None:
    counts, backward = checks.ops_per_step(tm.TinyMLP(), "eval", niter=4)
    # The first step also builds the eval inputs; the rest do identical work.
    assert len(counts) == 4 and counts[-1] > 0 and len(set(counts[1:])) == 1
    assert backward == set()
    counts, backward = checks.ops_per_step(tm.TinyMLP(), "train", niter=2)
    assert len(counts) == 2 and counts[1] > 0
    assert backward == {"aten::nll_loss_backward", "aten::_log_softmax_backward_data", "aten::threshold_backward"}
