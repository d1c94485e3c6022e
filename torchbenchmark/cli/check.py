"""``diagnostics.py check SPEC [SPEC ...]``: the contract checks of ``test.py``, rule by rule, on any model."""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
from collections.abc import Sequence
from typing import TYPE_CHECKING

from torchbenchmark.cli.args import EXIT_FAILED, EXIT_OK, Parser
from torchbenchmark.cli.models import resolve_device, resolve_models, resolve_modes
from torchbenchmark.registry import is_plugin_spec
from torchbenchmark.report.format import escape_controls, program
from torchbenchmark.report.tables import render_check
from torchbenchmark.run.plugins import PluginProbe, probe_plugins

if TYPE_CHECKING:
    from torchbenchmark.checks import Outcome

EPILOG = "exit status: 0 every rule holds; 1 a rule is broken, or a model cannot be imported or built; 2 usage error."


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog=f"{program()} check",
        epilog=EPILOG,
        description="Check models against the contract, rule by rule: the checks python test.py runs.",
    )
    parser.add_argument(
        "specs",
        nargs="+",
        metavar="SPEC",
        help="a registered name, 'all', family:NAME, hf:/timm:/torchvision:NAME (or a pattern), or a plug-in spec",
    )
    parser.add_argument("--modes", default="train,eval", help="comma-separated: train, eval (default: both)")
    parser.add_argument("--device", default="cpu", help="cpu (default), cuda or cuda:N")
    return parser


def _log(text: str) -> str:
    """A log of its own for a traceback: its path."""
    with tempfile.NamedTemporaryFile("w", prefix="torchbenchmark-check-", suffix=".log", delete=False, encoding="utf-8") as log:
        log.write(text)
    return log.name


def _unimportable(probe: PluginProbe) -> str:
    """One line for a plug-in that could not be imported, its traceback kept in a log of its own."""
    return escape_controls(f"{probe.spec}: every rule not checked: cannot be imported: {probe.error} (traceback: {_log(probe.output)})")


def _logged(outcome: Outcome) -> Outcome:
    """An outcome whose model raised names the log that keeps the traceback."""
    if not outcome.traceback:
        return outcome
    return dataclasses.replace(outcome, detail=f"{outcome.detail} (traceback: {_log(outcome.traceback)})", traceback="")


def main(argv: Sequence[str]) -> int:
    """Run the checks and print the table."""
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")  # before torch is first imported: no c10 warnings
    import torch

    from torchbenchmark.checks import BROKEN, check_spec
    from torchbenchmark.measure.native_logs import quiet_kineto

    quiet_kineto()

    args = build_parser().parse_args(list(argv))
    specs = resolve_models(",".join(args.specs))
    modes = resolve_modes(args.modes)
    device = resolve_device(args.device)
    torch.set_num_threads(1)  # the checks test behaviour, not speed: one thread keeps them fast on a busy machine
    probes = probe_plugins([spec for spec in specs if is_plugin_spec(spec)])
    failed = [probe for probe in probes.values() if probe.status != "ok"]
    for probe in failed:
        print(_unimportable(probe))
    outcomes = [_logged(o) for spec in specs if spec not in {p.spec for p in failed} for o in check_spec(spec, modes, device)]
    if outcomes:
        print(render_check(outcomes, BROKEN))
    return EXIT_FAILED if failed or any(o.result == BROKEN for o in outcomes) else EXIT_OK
