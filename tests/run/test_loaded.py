"""On a loaded machine the tool is right or says it is not: rows whose threads waited beside CPU hogs are
marked, a step that sleeps is blocked rather than overhead, and a comparison that cannot see says inconclusive."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.blocking_models import COUNTER_ENV
from tests.helpers.hogs import cpu_hogs
from tests.helpers.summaries import row_line
from torchbenchmark.results.schema import TimeSplit

pytestmark = pytest.mark.slow  # sweeps in processes of their own, beside busy processes

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests" / "helpers"
QUICK = ["--device", "cpu", "--no-detailed", "--no-progress"]


def diagnostics(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "diagnostics.py"), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=900, env={**os.environ, **env})  # fmt: skip


def rows(out: Path) -> list[dict]:
    return json.loads((out / "summary.json").read_text())["results"]


def test_a_case_beside_two_cpu_hogs_is_marked_where_its_own_threads_waited(tmp_path: Path) -> None:
    """Two busy processes on top of whatever else runs here: the kernel sees the case's threads wait for the
    CPUs, or the other work. Only the case's own wait marks it; the other work alone is information."""
    with cpu_hogs(2):
        done = diagnostics("--models", f"{TESTS / 'synthetic_models.py'}:ManyTinyOps", "--modes", "eval", "--threads", "2",
                           "--out", str(tmp_path), *QUICK)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "the machine is busy" in done.stderr.splitlines()[0]
    (row,) = rows(tmp_path)
    split = TimeSplit.from_dict(row["time_split"])
    assert split.method == "schedstat" and (split.waiting_pct > 5 or split.shared), split
    said = " ".join(done.stderr.split())  # the closing list of rows not to trust, wrapped at the terminal's width
    if split.waited:
        assert "UNTRUSTWORTHY" in said and "contended: " in said, done.stderr
        assert "contended: " in row_line(tmp_path / "summary.txt", row["model"])
    else:  # enough steps ran without waiting: they make the step time, and nothing marks it contended
        assert "contended: " not in said, done.stderr


def test_a_step_that_sleeps_is_blocked_not_overhead(tmp_path: Path) -> None:
    done = diagnostics("--models", f"{TESTS / 'blocking_models.py'}:Sleeper", "--modes", "eval", "--out", str(tmp_path), *QUICK)
    assert done.returncode == 0, done.stderr
    (row,) = rows(tmp_path)
    assert row["dispatch"]["verdict"] == "blocked", row["dispatch"]
    # Timed shares: right, or a row the tool marked (beside other work its thread also waits for a CPU).
    assert row["time_split"]["blocked_pct"] >= 80 or row["untrustworthy_reasons"], row["time_split"]
    assert row["dispatch"]["overhead_fraction"] <= 0.15 or row["untrustworthy_reasons"], row["dispatch"]
    assert "blocked" in row_line(tmp_path / "summary.txt", row["model"]).split()


def test_processes_that_differ_wildly_compare_inconclusive_and_exit_3(tmp_path: Path) -> None:
    spread, counter = f"{TESTS / 'blocking_models.py'}:SpreadByProcess", str(tmp_path / "processes")
    for side in ("base", "new"):
        out = str(tmp_path / side)
        done = diagnostics("--models", spread, "--modes", "eval", "--repeat", "3", "--steps", "20", "--out", out, *QUICK,
                           **{COUNTER_ENV: counter})  # fmt: skip
        assert done.returncode == 0, done.stderr
    done = diagnostics("compare", str(tmp_path / "base"), str(tmp_path / "new"))
    assert done.returncode == 3, done.stdout + done.stderr
    assert "inconclusive" in done.stdout.splitlines()[2]
    allowed = diagnostics("compare", str(tmp_path / "base"), str(tmp_path / "new"), "--allow-inconclusive")
    assert allowed.returncode == 0
