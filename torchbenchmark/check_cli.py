"""``diagnostics.py check SPEC [SPEC ...]``: the contract checks of ``test.py``, rule by rule, on any model.

Exit status: 0 every rule holds (or does not apply); 1 a rule is broken, each one named with how;
2 a usage error. A plug-in need not subclass ``BenchmarkModel``: a rule that reads what only the base
class exposes (its ``module``, its ``inputs``, ``last_loss``) is reported not applicable to one that
does not, rather than broken.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from tabulate import tabulate

from torchbenchmark import checks
from torchbenchmark.cli import Parser, resolve_device, resolve_models, resolve_modes
from torchbenchmark.contract import MODES, contract_problems
from torchbenchmark.registry import meta_of, model_class
from torchbenchmark.summary import plural

EXIT_OK, EXIT_BROKEN = 0, 1
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
    Rule("step_fn called once per step", MODES, checks.check_step_fn_calls),
    Rule("parameters and inputs on the device", MODES, checks.check_on_device, needs=("module", "inputs")),
    Rule("train changes the parameters, loss finite", ("train",),
         lambda model, _: checks.check_train_updates_and_is_finite(model), needs=("module", "last_loss")),
    Rule("gradients zeroed every step", ("train",), lambda model, _: checks.check_gradients_zeroed(model), needs=("module",)),
    Rule("eval changes nothing, outputs finite", ("eval",),
         lambda model, _: checks.check_eval_is_pure_and_finite(model), needs=("module", "last_output")),
    Rule("eval runs no backward", ("eval",), lambda model, _: checks.check_eval_runs_no_backward(model)),
    Rule("every step does the same work", MODES, checks.check_every_step_does_the_work),
    Rule("forward/backward/optimizer annotated once per step", MODES, checks.check_annotations, annotated_only=True),
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Outcome:
    model: str
    mode: str
    rule: str
    result: str  # HOLDS, BROKEN, NOT_APPLICABLE or SKIPPED
    detail: str = ""


def _missing(model: Any, needs: Sequence[str]) -> list[str]:
    import torch

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
    cls = model_class(spec)
    meta = meta_of(cls)
    name = meta.name
    problems = contract_problems(cls)
    if problems:
        return [Outcome(name, "", "built as Model(device=..., batch_size=None)", BROKEN, "; ".join(problems))]
    outcomes = []
    for mode in modes:
        try:
            model = cls(device=device, **{"batch_size": None, **meta.smoke})  # the smoke test's configuration
        except Exception as error:  # noqa: BLE001 - the model's own code raised: that is the finding
            outcomes.append(Outcome(name, mode, "built as Model(device=..., batch_size=None)", BROKEN, _one_line(error)))
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
            except checks.ContractViolation as error:
                outcomes.append(Outcome(name, mode, rule.name, BROKEN, str(error)))
            except Exception as error:  # noqa: BLE001 - a crash while checking breaks the rule too
                outcomes.append(Outcome(name, mode, rule.name, BROKEN, f"raised {_one_line(error)}"))
            else:
                outcomes.append(Outcome(name, mode, rule.name, HOLDS))
    return outcomes


def _one_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__


def render(outcomes: Sequence[Outcome]) -> str:
    """The table of every rule checked, then one line per broken rule and the verdict."""
    table = tabulate(
        [(o.model, o.mode, o.rule, o.result, o.detail) for o in outcomes],
        headers=["model", "mode", "rule", "result", "detail"],
        maxcolwidths=[None, None, None, None, 80],
    )
    broken = [o for o in outcomes if o.result == BROKEN]
    lines = [table, ""]
    if broken:
        lines.append(f"{plural(len(broken), 'rule')} broken:")
        lines.extend(f"  {' '.join(filter(None, (o.model, o.mode)))}: {o.rule}: {o.detail}" for o in broken)
        lines.append("The contract: README.md, 'The model contract' and 'Adding a model'.")
    else:
        lines.append("every rule holds")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="diagnostics.py check",
        description="Check models against the contract, rule by rule: the checks python test.py runs.",
        epilog="exit status: 0 every rule holds; 1 a rule is broken; 2 usage error.",
    )
    parser.add_argument("specs", nargs="+", metavar="SPEC", help="a registered name, 'all', family:NAME, or a plug-in spec")
    parser.add_argument("--modes", default="train,eval", help="comma-separated: train, eval (default: both)")
    parser.add_argument("--device", default="cpu", help="cpu (default), cuda or cuda:N")
    return parser


def main(argv: Sequence[str]) -> int:
    """Run the checks and print the table; a usage error is raised as ``UsageError`` for the caller."""
    import torch

    args = build_parser().parse_args(list(argv))
    specs = resolve_models(",".join(args.specs))
    modes = resolve_modes(args.modes)
    device = resolve_device(args.device)
    # The checks test behaviour, not speed: one thread keeps them fast on a busy machine.
    torch.set_num_threads(1)
    outcomes = [outcome for spec in specs for outcome in check_spec(spec, modes, device)]
    print(render(outcomes))
    return EXIT_BROKEN if any(o.result == BROKEN for o in outcomes) else EXIT_OK
