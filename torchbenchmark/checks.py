"""Contract checks: each runs a built model and raises ContractViolation when it breaks the contract.

``test.py`` runs them over every registered model; ``diagnostics.py check`` runs them rule by rule on any
model (``check_spec``); ``tests/test_checks.py`` proves each one fails on a deliberately broken model. Each
kind of bug earlier suites shipped has a check: work done once outside the step loop, gradients never
zeroed, eval repeating train's work, missing annotations. A plug-in need not subclass ``BenchmarkModel``:
a rule that reads what only the base class exposes (its ``module``, its ``inputs``, ``last_loss``) is
reported not applicable to one that does not, rather than broken.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from traceback import format_exc
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from torchbenchmark.contract import MODES, PHASES, BenchmarkModel, contract_problems, iter_tensors
from torchbenchmark.registry import meta_of, model_class


class ContractViolation(AssertionError):
    """A model broke the contract; the message says how."""


def run(model: BenchmarkModel, mode: str, niter: int, step_fn: Any = None) -> None:
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    getattr(model, mode)(niter=niter, step_fn=step_fn)


def check_step_fn_calls(model: BenchmarkModel, mode: str, niter: int = 3) -> None:
    """``step_fn`` is called exactly once per step."""
    calls = 0

    def count() -> None:
        nonlocal calls
        calls += 1

    run(model, mode, niter, count)
    if calls != niter:
        raise ContractViolation(f"{mode}(niter={niter}) called step_fn {calls} times, expected {niter}")


class _OpCounter(TorchDispatchMode):
    """Counts aten ops, and the backward ones among them, as they are dispatched."""

    def __init__(self) -> None:
        super().__init__()
        self.ops = 0
        self.backward_ops: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.ops += 1
        name = func.name()
        if "_backward" in name:
            self.backward_ops.add(name)
        return func(*args, **(kwargs or {}))


def ops_per_step(model: BenchmarkModel, mode: str, niter: int = 3) -> tuple[list[int], set[str]]:
    """Aten ops dispatched in each of ``niter`` steps, and the names of the backward ops seen."""
    counts: list[int] = []
    with _OpCounter() as counter:
        run(model, mode, niter, lambda: counts.append(counter.ops - sum(counts)))
    return counts, counter.backward_ops


def check_every_step_does_the_work(model: BenchmarkModel, mode: str, niter: int = 3) -> None:
    """Each of the ``niter`` steps dispatches about as many ops as the others.

    Catches work done once outside the step loop: later steps then do little or nothing.
    The first step may do more (optimizer state is created lazily), so steps are compared with the last.
    """
    counts, _ = ops_per_step(model, mode, niter)
    if len(counts) != niter:
        raise ContractViolation(f"{mode}(niter={niter}) ran {len(counts)} steps")
    last = counts[-1]
    if last == 0 or any(not 0.9 * last <= count <= 2 * last for count in counts):
        raise ContractViolation(f"{mode} steps dispatched unequal work: ops per step {counts}")


def check_eval_runs_no_backward(model: BenchmarkModel, niter: int = 2) -> None:
    """Eval computes no gradients: it must not repeat train's work."""
    _, backward_ops = ops_per_step(model, "eval", niter)
    if backward_ops:
        raise ContractViolation(f"eval ran backward ops: {sorted(backward_ops)[:5]}")


def check_on_device(model: BenchmarkModel, mode: str) -> None:
    """The module's parameters and buffers and the mode's inputs are on the model's device (its GPU, too)."""
    want = model.device
    if want.type == "cuda" and want.index is None:  # plain "cuda" is the current GPU
        want = torch.device("cuda", torch.cuda.current_device())
    for name, tensor in [*model.module.named_parameters(), *model.module.named_buffers()]:
        if tensor.device != want:
            raise ContractViolation(f"{name} is on {tensor.device}, expected {want}")
    inputs = list(iter_tensors(model.inputs(mode)))
    if not inputs:
        raise ContractViolation(f"{mode} inputs hold no tensors")
    for tensor in inputs:
        if tensor.device != want:
            raise ContractViolation(f"a {mode} input is on {tensor.device}, expected {want}")


def _state(model: BenchmarkModel, with_buffers: bool) -> dict[str, torch.Tensor]:
    named = [*model.module.named_parameters(), *(model.module.named_buffers() if with_buffers else [])]
    return {name: tensor.detach().clone() for name, tensor in named}


def check_train_updates_and_is_finite(model: BenchmarkModel, niter: int = 2) -> None:
    """Train changes the parameters and leaves a finite loss."""
    before = _state(model, with_buffers=False)
    model.last_loss = None
    run(model, "train", niter)
    after = _state(model, with_buffers=False)
    if not any(not torch.equal(before[name], after[name]) for name in before):
        raise ContractViolation("train did not change any parameter")
    if not isinstance(model.last_loss, torch.Tensor):
        raise ContractViolation("train left no loss in model.last_loss")
    if not torch.isfinite(model.last_loss).all():
        raise ContractViolation(f"train loss is not finite: {model.last_loss}")


def check_eval_is_pure_and_finite(model: BenchmarkModel, niter: int = 2) -> None:
    """Eval changes no parameter or buffer and produces finite outputs.

    The rule is about the network, not about every tensor the model holds: a decode step writes its cache
    (keys and values, or a recurrent state) and feeds its own output back as the next input, and that
    state is neither a parameter nor a buffer, so the rule leaves it out; that each step does the same work
    on it is :func:`check_every_step_does_the_work`'s rule.
    """
    before = _state(model, with_buffers=True)
    model.last_output = None
    run(model, "eval", niter)
    after = _state(model, with_buffers=True)
    changed = [name for name in before if not torch.equal(before[name], after[name])]
    if changed:
        raise ContractViolation(f"eval changed {changed[:3]}")
    outputs = list(iter_tensors(model.last_output))
    if not outputs:
        raise ContractViolation("eval left no output tensors in model.last_output")
    for output in outputs:
        if output.is_floating_point() and not torch.isfinite(output).all():
            raise ContractViolation("eval output is not finite")


def check_gradients_zeroed(model: BenchmarkModel, niter: int = 3) -> None:
    """Gradients do not accumulate across steps.

    The first time a parameter receives a gradient in a step, its ``.grad`` must be None or zero;
    later contributions within the same step (a GAN's two discriminator losses) may accumulate.
    """
    step = 0
    seen: set[int] = set()  # indices of the parameters that received a gradient this step
    stale: list[str] = []
    handles = []

    def watch(index: int, name: str, parameter: torch.Tensor) -> Any:
        def hook(grad: torch.Tensor) -> None:
            if index in seen:
                return
            seen.add(index)
            held = parameter.grad
            if held is not None:
                held = held.to_dense() if held.is_sparse else held
                if torch.count_nonzero(held).item() and not stale:
                    stale.append(f"{name} (step {step + 1})")

        return hook

    def next_step() -> None:
        nonlocal step
        step += 1
        seen.clear()

    for index, (name, parameter) in enumerate(model.module.named_parameters()):
        if parameter.requires_grad:
            handles.append(parameter.register_hook(watch(index, name, parameter)))
    try:
        run(model, "train", niter, next_step)
    finally:
        for handle in handles:
            handle.remove()
    if stale:
        raise ContractViolation(f"gradients accumulated across steps: {stale[0]} held a gradient from the step before")


def phase_counts(model: BenchmarkModel, mode: str, niter: int = 2) -> dict[str, int]:
    """How often each phase label was recorded while running ``niter`` steps under the profiler."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(activities=activities) as profiler:
        run(model, mode, niter)
    counts = dict.fromkeys(PHASES, 0)
    for event in profiler.events():
        if event.name in counts:
            counts[event.name] += 1
    return counts


def check_annotations(model: BenchmarkModel, mode: str, niter: int = 2) -> None:
    """An annotated model records forward/backward/optimizer once per train step, forward once per eval step."""
    expected = dict.fromkeys(PHASES, niter) if mode == "train" else {"forward": niter, "backward": 0, "optimizer": 0}
    counts = phase_counts(model, mode, niter)
    if counts != expected:
        raise ContractViolation(f"{mode}(niter={niter}) recorded phases {counts}, expected {expected}")


def check_model(model: BenchmarkModel, mode: str) -> None:
    """Every contract check for one built model and mode, cheapest first."""
    check_step_fn_calls(model, mode)
    check_on_device(model, mode)
    if mode == "train":
        check_train_updates_and_is_finite(model)
        check_gradients_zeroed(model)
    else:
        check_eval_is_pure_and_finite(model)
        check_eval_runs_no_backward(model)
    check_every_step_does_the_work(model, mode)
    if model.meta.annotated:
        check_annotations(model, mode)


HOLDS, BROKEN, NOT_APPLICABLE, SKIPPED = "ok", "BROKEN", "not applicable", "skipped"


@dataclasses.dataclass(frozen=True)
class Rule:
    """One rule of the contract, the modes it is checked in, and what of the model it reads."""

    name: str
    modes: tuple[str, ...]
    check: Callable[[Any, str], None]
    needs: tuple[str, ...] = ()  # attributes only BenchmarkModel guarantees
    annotated_only: bool = False


RULES = (
    Rule("step_fn called once per step", MODES, check_step_fn_calls),
    Rule("parameters and inputs on the device", MODES, check_on_device, needs=("module", "inputs")),
    Rule(
        "train changes the parameters, loss finite",
        ("train",),
        lambda model, _: check_train_updates_and_is_finite(model),
        needs=("module", "last_loss"),
    ),
    Rule("gradients zeroed every step", ("train",), lambda model, _: check_gradients_zeroed(model), needs=("module",)),
    Rule(
        "eval changes no parameter or buffer, outputs finite",
        ("eval",),
        lambda model, _: check_eval_is_pure_and_finite(model),
        needs=("module", "last_output"),
    ),
    Rule("eval runs no backward", ("eval",), lambda model, _: check_eval_runs_no_backward(model)),
    Rule("every step does the same work", MODES, check_every_step_does_the_work),
    Rule("forward/backward/optimizer annotated once per step", MODES, check_annotations, annotated_only=True),
)


@dataclasses.dataclass(frozen=True)
class Outcome:
    model: str
    mode: str
    rule: str
    result: str  # HOLDS, BROKEN, NOT_APPLICABLE or SKIPPED
    detail: str = ""
    traceback: str = ""  # where the model raised, when it did: for a log, not for the table


def _missing(model: Any, needs: Sequence[str]) -> list[str]:
    missing = []
    for name in needs:
        value = getattr(model, name, None)
        if name == "module" and not isinstance(value, torch.nn.Module):
            missing.append("model.module (an nn.Module)")
        elif name == "inputs" and not callable(value):
            missing.append("model.inputs(mode)")
        elif name not in ("module", "inputs") and not hasattr(model, name):
            missing.append(f"model.{name}")
    return missing


def check_spec(spec: str, modes: Sequence[str], device: str = "cpu") -> list[Outcome]:
    """Every rule of the contract for one registered name or plug-in spec, in each mode."""
    try:
        cls = model_class(spec)
        meta = meta_of(cls)
    except Exception as error:  # a registered model whose own imports fail: no rule can be checked
        return [Outcome(spec, "", "every rule", BROKEN, f"not checked: cannot be imported: {_one_line(error)}", format_exc())]
    name = meta.name
    problems = contract_problems(cls)
    if problems:
        return [Outcome(name, "", "built as Model(device=..., batch_size=None)", BROKEN, "; ".join(problems))]
    outcomes = []
    for mode in modes:
        try:
            model = cls(device=device, **{"batch_size": None, **meta.smoke})  # the smoke test's configuration
        except NotImplementedError as error:  # declined before it was built: too large for this machine, or inputs it cannot make
            outcomes.append(Outcome(name, mode, "every rule", SKIPPED, f"not built: {error}"))
            continue
        except Exception as error:
            outcomes.append(Outcome(name, mode, "built as Model(device=..., batch_size=None)", BROKEN, _one_line(error), format_exc()))
            continue
        outcomes.extend(_check_mode(model, name, mode, meta.annotated))
    return outcomes


def _check_mode(model: Any, name: str, mode: str, annotated: bool) -> list[Outcome]:
    outcomes = []
    for rule in RULES:
        if mode not in rule.modes:
            continue
        missing = _missing(model, rule.needs)
        if rule.annotated_only and not annotated:
            outcomes.append(Outcome(name, mode, rule.name, NOT_APPLICABLE, "the model declares itself unannotated"))
        elif missing:
            detail = f"needs {', '.join(missing)}, which BenchmarkModel exposes"
            outcomes.append(Outcome(name, mode, rule.name, NOT_APPLICABLE, detail))
        else:
            try:
                rule.check(model, mode)
            except NotImplementedError as error:  # the contract's way to decline a mode
                return [Outcome(name, mode, "every rule", SKIPPED, f"{mode} not supported: {error}")]
            except ContractViolation as error:
                outcomes.append(Outcome(name, mode, rule.name, BROKEN, str(error)))
            except Exception as error:
                outcomes.append(Outcome(name, mode, rule.name, BROKEN, f"raised {_one_line(error)}", format_exc()))
            else:
                outcomes.append(Outcome(name, mode, rule.name, HOLDS))
    return outcomes


def _one_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__
