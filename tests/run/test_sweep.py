"""The sweep (run/sweep.py): its arguments checked as the command line checks them, one name for one case,
a run record that cannot be written said once while the cases go on, and --repeat giving up on a case after
three failures in a row."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.commands import one_line_error
from tests.helpers.folders import md5s
from tests.helpers.local_sweeps import Sweeps, ok_row
from tests.helpers.places import Place
from tests.helpers.processes import HELPERS
from tests.helpers.specs import faulty, hostile
from tests.helpers.stand_ins import machinery, unused
from tests.helpers.sweeps import FAST, TINY
from torchbenchmark import cli
from torchbenchmark.results.schema import CaseResult, Status
from torchbenchmark.results.spec import CaseSpec
from torchbenchmark.run import outdir
from torchbenchmark.run.plugins import PluginProbe
from torchbenchmark.run.sweep import GIVE_UP_AFTER, SweepArgumentError, SweepOptions, run_sweep

# --- every bad argument is refused before anything is written ---------------------------------------------


@pytest.mark.parametrize(
    "models, modes, options, message",
    [
        ("ab", "train", {}, "unknown model 'ab'"),
        ([], "train", {}, "non-empty sequence"),
        ([1], "train", {}, "non-empty sequence"),
        (TINY, "infer", {}, "modes must be train, eval or both"),
        (TINY, ["train", "infer"], {}, "modes must be train, eval or both"),
        (TINY, "train", {"device": "tpu"}, "unknown device 'tpu'"),
        (TINY, "train", {"threads": 0}, "threads must be a whole number of at least 1"),
        (TINY, "train", {"threads": 2.5}, "threads must be a whole number of at least 1"),
        (TINY, "train", {"batch_size": -1}, "batch_size must be a whole number of at least 1"),
        (TINY, "train", {"timeout_s": 0}, "timeout_s must be a number of seconds more than 0"),
        (TINY, "train", {"timeout_s": float("nan")}, "timeout_s must be a number of seconds more than 0"),
        (TINY, "eval", {"instructions_cap_s": -1.0}, "instructions_cap_s must be a number of seconds more than 0"),
        (TINY, "train", {"out_dir": ""}, "out_dir is empty"),
    ],
)
def test_run_sweep_checks_its_arguments_as_the_command_line_does(
    place: Place, models: Any, modes: Any, options: dict[str, Any], message: str
) -> None:
    out_dir = options.pop("out_dir", place.out)
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):  # SweepArgumentError, or the spec's own
        run_sweep(models, modes, SweepOptions(case=CaseSpec(**options), out_dir=out_dir, progress=False))
    assert not place.out.exists()
    place.check_contained()


# --- one name, one case -------------------------------------------------------------------------------------


def test_two_specs_of_one_name_are_a_usage_error_naming_both(sweeps: Sweeps, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = "/x/a.py:Mini", "/x/b.py:Mini"
    sweeps.probes = {a: PluginProbe(a, "ok", name="mini"), b: PluginProbe(b, "ok", name="mini")}
    out = sweeps.root / "out"
    before = md5s(sweeps.root)
    assert sweeps.cli("--models", f"{a},{b}", "--out", str(out), *FAST) == 2
    one_line_error(capsys.readouterr().err, f"{a} and {b} both name the model 'mini'", "one name, one case")
    assert md5s(sweeps.root) == before and not out.exists() and sweeps.calls == []
    # a plug-in that declares the name of a registered model, and two that cannot be imported, alike
    sweeps.probes = {a: PluginProbe(a, "ok", name="alpha")}
    assert sweeps.cli("--models", f"alpha,{a}", "--out", str(out), *FAST) == 2
    one_line_error(capsys.readouterr().err, f"alpha and {a} both name the model 'alpha'")
    failed = {spec: PluginProbe(spec, "failed", error=f"importing {spec} crashed") for spec in (a, b)}
    sweeps.probes = failed
    with pytest.raises(SweepArgumentError, match="a plug-in that cannot be imported goes by its class name"):
        run_sweep([a, b], "train", SweepOptions(out_dir=out, progress=False), sweeps.machinery())
    assert md5s(sweeps.root) == before and not out.exists()


@pytest.mark.slow
def test_real_twin_plugins_and_twin_failed_imports_are_refused_before_anything_runs(tmp_path: Path, capsys) -> None:
    """The plug-ins imported for real, in children; the command line run in this process."""
    out = tmp_path / "out"
    first, second = (f"{HELPERS / 'hostile_imports' / name}.py:Mini" for name in ("first", "second"))
    for models, message in (
        (f"{hostile('TwinA')},{hostile('TwinB')}", "both name the model 'twin'"),
        (f"{first},{second}", "both name the model 'Mini' (a plug-in that cannot be imported goes by its class name)"),
    ):
        assert cli.main(["--models", models, "--out", str(out), *FAST], machinery(unused)) == 2
        one_line_error(capsys.readouterr().err, message)
        assert not out.exists()


# --- a run record that cannot be written ------------------------------------------------------------------


def test_summary_that_cannot_be_written_is_reported_and_the_cases_still_run(place: Place, monkeypatch, capsys) -> None:
    """A full disk when the record and summary are written (simulated: every such write raises ENOSPC)."""

    def full(path: Path, text: str) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(outdir, "write_atomic", full)
    specs = [faulty(m) for m in ("EmptyName", "NulName")]
    probes = {spec: PluginProbe(spec, "ok", name=name) for spec, name in zip(specs, ("", "nul\0name"))}  # as their imports declare
    outcome = run_sweep(specs, "eval", SweepOptions(out_dir=place.out, progress=False), machinery(unused, probes=probes))
    assert [r.status for r in outcome.results] == ["failed", "failed"]  # both cases ran
    assert outcome.summary_error and "No space left on device" in outcome.summary_error
    assert outcome.exit_status == 1
    err = capsys.readouterr().err
    assert err.count("cannot write the run record or summary") == 1 and "Traceback" not in err  # said once
    assert place.temporary_files() == []
    place.check_contained()


# --- --repeat gives up on a case after three failures in a row ---------------------------------------------


@pytest.mark.parametrize("status", [Status.TIMEOUT, Status.FAILED])
def test_repeats_of_a_case_stop_after_three_failures_in_a_row(sweeps: Sweeps, status: Status) -> None:
    def failing(spec: Any, name: str, out_dir: Path, on_phase: Any = None) -> CaseResult:
        row = ok_row(spec, name, out_dir)
        return row if name == "beta" else dataclasses.replace(row, status=status, step_time=None, error="no result after 5 s")

    sweeps.run_case(failing)
    out = sweeps.run(sweeps.root / "out", ["alpha", "beta"], ("train",), repeat=20)
    assert sum(1 for name, _, _ in sweeps.calls if name == "alpha") == GIVE_UP_AFTER
    assert sum(1 for name, _, _ in sweeps.calls if name == "beta") == 20
    rows = {row["model"]: row for row in json.loads((out / "summary.json").read_text())["results"]}
    assert rows["alpha"]["status"] == status
    assert rows["alpha"]["error"] == f"no result after 5 s; {GIVE_UP_AFTER} processes in a row failed, so its last 17 repeats were not run"


def test_failures_that_are_not_in_a_row_do_not_stop_the_repeats(sweeps: Sweeps) -> None:
    def flaky(spec: Any, name: str, out_dir: Path, on_phase: Any = None) -> CaseResult:
        row = ok_row(spec, name, out_dir)
        return row if spec.repeat % 3 == 2 else dataclasses.replace(row, status=Status.TIMEOUT, step_time=None, error="slow")

    sweeps.run_case(flaky)
    sweeps.run(sweeps.root / "out", ["alpha"], ("train",), repeat=8)
    assert len(sweeps.calls) == 8


def test_a_given_peak_is_recorded_as_given_and_none_is_measured(tmp_path: Path) -> None:
    def measured(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the peak was measured though the user gave it")

    options = SweepOptions(out_dir=tmp_path, progress=False, peak_gflops=123.5)
    run_sweep(["alexnet"], ["eval"], options, dataclasses.replace(machinery(ok_row), measure_peak=measured))
    environment = json.loads((tmp_path / "summary.json").read_text())["environment"]
    assert (environment["peak_gflops"], environment["peak_method"]) == (123.5, "given: --peak-gflops")
    for bad in (0, -1.0, float("inf"), "fast"):
        with pytest.raises(ValueError, match="peak_gflops must be a positive number"):
            SweepOptions(peak_gflops=bad)


def test_a_calibration_that_names_a_folder_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = cli.main(["--models", "alexnet", "--out", str(tmp_path / "out"), "--calibration", str(tmp_path)], machinery(unused))
    assert status == 2
    one_line_error(capsys.readouterr().err, "--calibration", "name a file")
    assert not (tmp_path / "out").exists()
