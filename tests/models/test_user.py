"""``from_module``: a user's network and one batch of its inputs as a model of the contract, through the paths
a user takes: the class itself, ``check``, ``collect_diagnostics`` and a plug-in spec naming a function."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
import torch

import torchbenchmark
from torchbenchmark.checks import HOLDS, check_spec
from torchbenchmark.registry import UnknownModelError, model_class

PLUGINS = Path(__file__).resolve().parents[1] / "helpers" / "module_plugins.py"


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))


def counted(model: object, mode: str, niter: int) -> int:
    calls = []
    getattr(model, mode)(niter=niter, step_fn=lambda: calls.append(1))
    return len(calls)


def test_a_sequential_and_a_tensor_run_both_modes_and_never_train_the_users_module() -> None:
    net = mlp()
    before = [p.detach().clone() for p in net.parameters()]
    Model = torchbenchmark.from_module(net, torch.randn(8, 16), loss=lambda out: out.square().mean())
    model = Model()
    assert Model.meta.name == "Sequential" and Model.meta.family == "user"
    assert counted(model, "train", 3) == 3 and counted(model, "eval", 2) == 2
    assert torch.isfinite(model.last_loss)
    assert model.last_output.shape == (8, 4)
    assert all(torch.equal(a, b) for a, b in zip(before, net.parameters()))  # the build trained its own copy
    assert any(not torch.equal(a, b) for a, b in zip(before, model.module.parameters()))


def test_another_batch_size_cycles_or_cuts_the_given_batch_along_its_first_dimension() -> None:
    inputs = torch.arange(8.0).repeat(16, 1).T.contiguous()  # row i holds i
    Model = torchbenchmark.from_module(mlp(), inputs)
    assert Model.meta.batch_sizes.get("cpu", "eval") == 8
    assert Model(batch_size=20).inputs("eval")[:, 0].tolist() == [float(i % 8) for i in range(20)]
    assert Model(batch_size=3).inputs("eval").shape == (3, 16)


def test_keyword_inputs_a_loss_the_module_returns_and_an_optimizer_factory() -> None:
    class Scored(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(4, 1)

        def forward(self, x: torch.Tensor, target: torch.Tensor) -> dict[str, torch.Tensor]:
            out = self.linear(x)
            return {"out": out, "loss": torch.nn.functional.mse_loss(out, target)}

    made = []

    def adamw(parameters: object) -> torch.optim.Optimizer:
        made.append(1)
        return torch.optim.AdamW(parameters, lr=1e-3)  # type: ignore[arg-type]

    Model = torchbenchmark.from_module(Scored(), {"x": torch.randn(5, 4), "target": torch.randn(5, 1)}, optimizer=adamw, name="scored")
    model = Model(batch_size=10)
    assert made == [1] and isinstance(model.optimizers[0], torch.optim.AdamW)
    assert counted(model, "train", 2) == 2 and model.last_loss.dim() == 0
    assert model.inputs("train")["target"].shape == (10, 1)


def test_train_without_a_loss_is_declined_and_eval_still_runs() -> None:
    model = torchbenchmark.from_module(mlp(), torch.randn(8, 16))()
    assert counted(model, "eval", 1) == 1
    with pytest.raises(NotImplementedError, match="returns no loss; give from_module a loss"):
        model.train()


def test_a_loss_that_is_no_scalar_is_an_error_that_says_what_it_got() -> None:
    model = torchbenchmark.from_module(mlp(), torch.randn(8, 16), loss=lambda out: out)()
    with pytest.raises(TypeError, match=r"single-element tensor, got a tensor of shape \(8, 4\)"):
        model.train()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ((torch.randn(2, 2), torch.randn(2)), "takes an nn.Module, got Tensor"),
        ((torch.nn.Linear(2, 2), [1, 2]), "inputs hold no tensor"),
        ((torch.nn.Linear(2, 2), torch.randn(2, 2), {"loss": 3}), "loss must be callable, got int"),
        ((torch.nn.Linear(2, 2), torch.randn(2, 2), {"name": "a/b"}), "without '/'"),
    ],
)
def test_bad_arguments_are_refused_at_once(arguments: tuple, message: str) -> None:
    *positional, keywords = arguments if isinstance(arguments[-1], dict) else (*arguments, {})
    with pytest.raises((TypeError, ValueError), match=message):
        torchbenchmark.from_module(*positional, **keywords)


def test_check_passes_every_rule_and_declines_train_without_a_loss() -> None:
    Model = torchbenchmark.from_module(mlp(), torch.randn(8, 16), loss=lambda out: out.square().mean())
    outcomes = check_spec(f"{PLUGINS}:make_model", ["train", "eval"])
    assert outcomes and all(outcome.result == HOLDS for outcome in outcomes), [o for o in outcomes if o.result != HOLDS]
    assert {outcome.model for outcome in outcomes} == {"user_mlp"}
    assert Model.meta.name == "Sequential"


@pytest.mark.slow
def test_collect_diagnostics_gives_ok_eval_and_train_rows(tmp_path: Path) -> None:
    Model = torchbenchmark.from_module(mlp(), torch.randn(8, 16), loss=functools.partial(torch.mean))
    rows = {
        mode: torchbenchmark.collect_diagnostics(Model, mode, out_dir=tmp_path, detailed=False, steady=False) for mode in ("eval", "train")
    }
    for mode, row in rows.items():
        assert (row.status.value, row.error) == ("ok", None), mode
        assert row.model == "Sequential" and row.mode == mode and row.step_time.median_ms > 0
        assert row.dispatch.verdict in ("dispatch-bound", "mixed", "compute-bound")
    skipped = torchbenchmark.collect_diagnostics(
        torchbenchmark.from_module(mlp(), torch.randn(8, 16)), "train", out_dir=tmp_path, steady=False
    )
    assert skipped.status.value == "skipped" and "returns no loss" in skipped.error


def test_a_plugin_spec_may_name_a_function_that_returns_the_model_class() -> None:
    cls = model_class(f"{PLUGINS}:make_model")
    assert cls.meta.name == "user_mlp" and counted(cls(), "eval", 1) == 1
    with pytest.raises(UnknownModelError, match=r"make_nothing\(\) returned 3 \(an int\), not a model class"):
        model_class(f"{PLUGINS}:make_nothing")
    with pytest.raises(UnknownModelError, match=r"make_with_argument\(\) must take no arguments"):
        model_class(f"{PLUGINS}:make_with_argument")
