"""No native profiler line reaches the user, whose own output and the profiler's errors in a case's log still do."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from torchbenchmark.measure import native_logs

ROOT = Path(__file__).resolve().parents[2]
# Kineto's lines start with its level and a date; c10's with a bracketed level letter and a date.
NATIVE_LINE = re.compile(r"^(USDT|ERROR|WARNING|INFO|STAGE|VERBOSE):\d{4}-|^\[[WEI]\d{4} |gpuGetDeviceCount", re.M)


def clean_environment() -> dict[str, str]:
    """This environment without the levels a test runner may have set: as a user's fresh shell has it."""
    return {k: v for k, v in os.environ.items() if k not in ("KINETO_LOG_LEVEL", "TORCH_CPP_LOG_LEVEL")}


@pytest.mark.slow
def test_the_pattern_matches_what_the_profiler_prints_unquieted() -> None:
    """Without the levels, a profile in a fresh interpreter prints the lines this file checks are gone."""
    script = "import torch\nwith torch.profiler.profile(): torch.ones(2) + 1\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=clean_environment(), timeout=300)
    assert NATIVE_LINE.search(done.stderr), done.stderr


@pytest.mark.slow
def test_smoke_test_stderr_holds_no_native_profiler_line() -> None:
    done = subprocess.run(
        [sys.executable, "test.py", "-k", "resnet18"], cwd=ROOT, capture_output=True, text=True, env=clean_environment(), timeout=600
    )
    assert done.returncode == 0, done.stderr
    assert "Ran 2 tests" in done.stderr
    assert not NATIVE_LINE.search(done.stderr), done.stderr


@pytest.mark.slow
def test_collect_diagnostics_in_a_fresh_interpreter_prints_only_the_users_output(tmp_path: Path) -> None:
    tiny = f"{ROOT / 'tests' / 'helpers' / 'tiny_models.py'}:TinyMLP"
    script = (
        "import sys, torchbenchmark as tb\n"
        "from torchbenchmark.results.spec import Budget\n"
        "print('mine to stderr', file=sys.stderr)\n"
        f"r = tb.collect_diagnostics({tiny!r}, mode='train', out_dir=sys.argv[1], budget=Budget(steps=3))\n"
        "print(r.status)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, env=clean_environment(), timeout=600
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
    assert done.stderr.strip() == "mine to stderr"


def test_a_case_log_gets_kinetos_errors_on_a_gpu_and_keeps_the_users_cpp_level() -> None:
    user = {"KINETO_LOG_LEVEL": "6", "TORCH_CPP_LOG_LEVEL": "INFO", "PATH": "/bin"}
    assert native_logs.case_log_environment(user, "cuda:0")["KINETO_LOG_LEVEL"] == "3"
    env = native_logs.case_log_environment(user, "cpu")
    assert env["KINETO_LOG_LEVEL"] == "5" and env["TORCH_CPP_LOG_LEVEL"] == "INFO" and env["PATH"] == "/bin"
    assert native_logs.case_log_environment({}, "cpu")["TORCH_CPP_LOG_LEVEL"] == "WARNING"
