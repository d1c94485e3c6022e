"""`diagnostics.py check`: exit 0 when every rule holds, 1 naming each broken rule; --list says why a class cannot run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import commands
from tests.helpers.specs import faulty, friction
from torchbenchmark import checks as check_cli
from torchbenchmark.checks import BROKEN, HOLDS, NOT_APPLICABLE

ROOT = Path(__file__).resolve().parents[2]
PLAIN = ROOT / "tests" / "helpers" / "plain_plugins.py"


def diagnostics(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "diagnostics.py"), *args], capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_a_good_model_holds_every_rule() -> None:
    done = diagnostics("check", f"{ROOT / 'tests' / 'helpers' / 'tiny_models.py'}:TinyMLP")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith("every rule holds")
    assert BROKEN not in done.stdout and NOT_APPLICABLE not in done.stdout


@pytest.mark.slow
def test_a_broken_model_exits_1_naming_the_rule_and_how() -> None:
    done = diagnostics("check", f"{ROOT / 'tests' / 'helpers' / 'tiny_models.py'}:StepFnTwice", "--modes", "train")
    assert done.returncode == 1
    assert "broken:" in done.stdout
    assert "step_fn called once per step: train(niter=3) called step_fn 6 times, expected 3" in done.stdout


def test_a_plain_contract_plugin_passes_with_base_class_rules_not_applicable() -> None:
    outcomes = check_cli.check_spec(f"{PLAIN}:PlainModel", ["train", "eval"])
    results = {(o.mode, o.rule): o.result for o in outcomes}
    assert results[("train", "step_fn called once per step")] == HOLDS
    assert results[("eval", "eval runs no backward")] == HOLDS
    assert results[("train", "gradients zeroed every step")] == NOT_APPLICABLE
    on_device = next(o for o in outcomes if o.rule == "parameters and inputs on the device")
    assert on_device.result == NOT_APPLICABLE and "model.module" in on_device.detail
    assert BROKEN not in results.values()


def test_a_plain_plugin_that_breaks_a_rule_is_caught() -> None:
    outcomes = check_cli.check_spec(f"{PLAIN}:PlainStepFnTwice", ["train"])
    broken = [o for o in outcomes if o.result == BROKEN]
    assert [o.rule for o in broken][0] == "step_fn called once per step"


@pytest.mark.slow
def test_an_nn_module_is_not_a_model_and_says_so() -> None:
    done = diagnostics("check", f"{PLAIN}:JustAModule")
    assert done.returncode == 1
    assert "its constructor takes no 'device'" in done.stdout and "subclass torchbenchmark.BenchmarkModel" in done.stdout


@pytest.mark.slow
def test_check_usage_error_exits_2() -> None:
    done = diagnostics("check", "no_such_model")
    assert done.returncode == 2 and "unknown model" in done.stderr


@pytest.mark.slow
def test_list_says_why_a_plugin_cannot_run() -> None:
    done = diagnostics("--list", "--models", f"{PLAIN}:JustAModule,{PLAIN}:PlainModel")
    assert done.returncode == 0
    lines = {line.split()[0]: line for line in done.stdout.splitlines()[2:]}
    assert "cannot run: not a model of the contract: its constructor takes no 'device'" in lines["JustAModule"]
    assert lines["PlainModel"].rstrip().endswith("yes")


@pytest.mark.slow
def test_check_on_a_plugin_that_raises_at_import_is_a_few_lines_and_exit_1() -> None:
    done = commands.diagnostics("check", f"{ROOT / 'tests' / 'helpers' / 'broken_plugin.py'}:Model")
    output = (done.stdout + done.stderr).strip().splitlines()
    assert done.returncode == 1, done.stdout + done.stderr
    assert 1 <= len(output) <= 5, output
    assert "Traceback" not in done.stdout + done.stderr
    line = next(line for line in output if "cannot be imported" in line)
    assert "RuntimeError: injected fault while importing the plug-in" in line
    log = Path(re.search(r"\(traceback: (\S+)\)", line)[1])  # type: ignore[index]
    assert "Traceback" in log.read_text()
    log.unlink()


@pytest.mark.slow
def test_check_on_a_plugin_that_cannot_be_built_names_the_rule_and_the_log() -> None:
    done = commands.diagnostics("check", faulty("RaisesInBuild"), "--modes", "train")
    assert done.returncode == 1 and "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("  raises_in_build train: built as Model("))
    assert "RuntimeError: injected fault in build (traceback: " in line, line
    log = Path(re.search(r"\(traceback: (\S+)\)", line)[1])  # type: ignore[index]
    assert "injected fault in build" in log.read_text() and "Traceback" in log.read_text()
    log.unlink()


@pytest.mark.slow
def test_a_cpu_only_model_file_passes_check() -> None:
    """A model written on a machine without a GPU declares only its CPU batch sizes: CUDA takes the same ones."""
    done = commands.diagnostics("check", friction("CpuOnly"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith("every rule holds")
