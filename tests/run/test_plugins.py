"""Plug-ins are imported only in a child, with a timeout (run/plugins.py, run/probe.py): one that hangs,
crashes or exits at import, or declares a name that cannot name a folder, is a failed row with its
traceback as its log, and the sweep goes on.

Every test runs its processes with a token in their environment and checks at its end that no process
carrying it is left, and that nothing was written outside the output folder.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.local_sweeps import Sweeps
from tests.helpers.places import Place
from tests.helpers.processes import HELPERS, ROOT
from tests.helpers.specs import BAD_NAMES, IMPORT_FAULTS, faulty
from tests.helpers.stand_ins import machinery, unused
from tests.helpers.sweeps import FAST, TINY
from torchbenchmark.results.spec import CaseSpec
from torchbenchmark.run.plugins import PluginProbe
from torchbenchmark.run.sweep import SweepOptions, run_sweep

# A sweep's --timeout bounds a plug-in's import too. The hanging import has a sweep of its own whose short
# timeout is still room to start a child and reach the plug-in's file beside two CPU hogs.
HANG_TIMEOUT_S = 15
IMPORT_FAULT_ROWS = {
    "HangsAtImport": (
        f"{IMPORT_FAULTS / 'hangs.py'}:HangsAtImport",
        f"did not finish within {HANG_TIMEOUT_S} s",
        ["Timeout", 'hangs.py", line'],
    ),
    "SegfaultsAtImport": (
        f"{IMPORT_FAULTS / 'segfaults.py'}:SegfaultsAtImport",
        "crashed the process (SIGSEGV)",
        ["Fatal Python error: Segmentation fault", 'segfaults.py", line'],
    ),
    "ExitsAtImport": (f"{IMPORT_FAULTS / 'exits_quietly.py'}:ExitsAtImport", "ended the process with status 0", []),
    "SysExitsAtImport": (f"{IMPORT_FAULTS / 'sys_exits.py'}:SysExitsAtImport", "SystemExit: 3", ["Traceback", 'sys_exits.py", line']),
    "BrokenModel": (
        f"{HELPERS / 'broken_plugin.py'}:BrokenModel",
        "RuntimeError: injected fault while importing",
        ["Traceback", 'broken_plugin.py", line'],
    ),
}


def sweep(place: Place, out: Path, *args: str) -> subprocess.Popen[str]:
    """``diagnostics.py args`` into ``out``, started and not waited for."""
    command = [sys.executable, str(ROOT / "diagnostics.py"), *args, "--modes", "eval", "--out", str(out), *FAST]
    return subprocess.Popen(command, cwd=ROOT, env=place.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_plugins_that_hang_crash_or_exit_at_import_are_failed_rows_with_their_traceback(place: Place) -> None:
    """Two sweeps side by side: the hanging import alone under a short --timeout, and every other fault beside
    a good model under the default one, which runs while the hang is waited out."""
    hang, _, _ = IMPORT_FAULT_ROWS["HangsAtImport"]
    others = [spec for model, (spec, _, _) in IMPORT_FAULT_ROWS.items() if model != "HangsAtImport"]
    hung_out, others_out = place.out / "hung", place.out / "others"
    started = [
        sweep(place, hung_out, "--models", hang, "--timeout", str(HANG_TIMEOUT_S)),
        sweep(place, others_out, "--models", ",".join([*others, TINY])),
    ]
    for process in started:
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 1, stderr
        assert "Traceback" not in stderr
    rows = {**place.rows(hung_out), **place.rows(others_out)}
    assert rows[("tiny_mlp", "eval")]["status"] == "ok"
    for model, (_, reason, in_log) in IMPORT_FAULT_ROWS.items():
        row = rows[(model, "eval")]
        assert row["status"] == "failed" and reason in row["error"], row
        log = ((hung_out if model == "HangsAtImport" else others_out) / row["log"]).read_text()
        assert all(fragment in log for fragment in in_log), log[-2000:]
    assert place.temporary_files() == []
    place.check_contained()


@pytest.mark.slow
def test_run_sweep_takes_a_str_as_one_spec_and_imports_plugins_only_in_a_child(place: Place) -> None:
    spec, reason, _ = IMPORT_FAULT_ROWS["SysExitsAtImport"]
    modules_before = set(sys.modules)
    options = SweepOptions(case=CaseSpec(timeout_s=30), out_dir=place.out, progress=False)
    outcome = run_sweep(spec, "eval", options, machinery(unused))  # the real import; no case is run
    (row,) = outcome.results
    assert (row.model, row.status) == ("SysExitsAtImport", "failed") and reason in row.error
    assert not [m for m in set(sys.modules) - modules_before if "sys_exits" in m]
    place.check_contained()


@pytest.mark.slow
def test_run_sweep_makes_a_failed_row_of_each_unusable_name(place: Place) -> None:
    """The plug-ins imported for real (in one child: they share a file), no case run."""
    outcome = run_sweep([faulty(m) for m in BAD_NAMES], "train", SweepOptions(out_dir=place.out, progress=False), machinery(unused))
    assert outcome.exit_status == 1
    rows = {row.model: row for row in outcome.results}
    assert set(rows) == set(BAD_NAMES)  # named by their class, which is one folder name
    for model, message in BAD_NAMES.items():
        assert rows[model].status == "failed" and message in rows[model].error, rows[model]
    assert {(m, "train") for m in BAD_NAMES} == set(place.rows())
    assert sorted(p.name for p in place.out.iterdir()) == [".torchbenchmark.lock", "report.html", "runs", "summary.json", "summary.txt"]
    place.check_contained()


def test_a_failed_imports_row_carries_its_own_spec_and_log(sweeps: Sweeps) -> None:
    spec = "/x/first.py:Mini"
    sweeps.probes = {spec: PluginProbe(spec, "failed", error="RuntimeError: the first file's", output="first's stack")}
    out = sweeps.run(sweeps.root / "out", [spec, "alpha"], ("eval",))
    rows = {row["model"]: row for row in json.loads((out / "summary.json").read_text())["results"]}
    assert rows["Mini"]["status"] == "failed" and rows["Mini"]["error"].startswith(f"plug-in {spec}: RuntimeError: the first file's")
    log = (out / rows["Mini"]["log"]).read_text()
    assert f"importing {spec}" in log and "first's stack" in log
