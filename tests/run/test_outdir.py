"""The output folder (run/outdir.py): model names become folder names only once checked, no link leads a
write out of it, its lock and views must be files this tool wrote, a run record whose sweep is gone reads
as died, and what a killed sweep or an ended case left behind is cleared.

A refusal is checked to write nothing: the listing, or the md5 of every file, around the output folder is
as it was.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import faulty_models
from tests.helpers.commands import one_line_error
from tests.helpers.folders import md5s, record_of, temporary_files
from tests.helpers.local_sweeps import Sweeps
from tests.helpers.places import Place, listing
from tests.helpers.processes import ROOT, TOKEN_ENV, wait_until_gone
from tests.helpers.specs import faulty
from tests.helpers.stand_ins import machinery, unused
from tests.helpers.sweeps import FAST, TINY
from torchbenchmark import cli
from torchbenchmark.results.records import RunState
from torchbenchmark.results.spec import CaseSpec
from torchbenchmark.run import case as case_process
from torchbenchmark.run import outdir
from torchbenchmark.run.outdir import (
    MAX_NAME_BYTES,
    OutputUnusable,
    OutsideOutputError,
    UnsafeNameError,
    case_dir,
    check_model_name,
    inside,
)
from torchbenchmark.run.plugins import PluginProbe
from torchbenchmark.run.sweep import SweepOptions, run_sweep

TINY_PROBED = {TINY: PluginProbe(TINY, "ok", name="tiny_mlp")}  # what importing the tiny model shows, without a child


def unused_pid(skip: int = 0) -> int:
    """A process id no process holds (the ``skip``-th from the top): a sweep that had it is gone."""
    top = int(Path("/proc/sys/kernel/pid_max").read_text())
    free = (pid for pid in range(top - 1, 1, -1) if not Path(f"/proc/{pid}").exists())
    return next(itertools.islice(free, skip, None))


# --- model names become paths only once checked -------------------------------------------------------


@pytest.mark.parametrize("name", ["../..", "../../x", "/abs", "a/b", "..", ".", "", "a\0b", "x" * (MAX_NAME_BYTES + 1), 42, None])
def test_a_name_that_is_not_one_folder_name_is_refused(name: object) -> None:
    with pytest.raises(UnsafeNameError):
        check_model_name(name)


@pytest.mark.parametrize(
    "name",
    ["a\x1b[2Jb", "a\x07", "tab\there", "del\x7f", "csi\x9b", "nel\x85", "a\nb", "gpt\u202e2", "gpt\u200b2", "gpt\u20282"],
)
def test_a_name_with_a_control_character_is_refused(name: str) -> None:
    with pytest.raises(outdir.UnsafeNameError, match="contains a control, format or separator character"):
        outdir.check_model_name(name)


def test_plain_names_pass_and_a_link_out_of_the_folder_is_caught(tmp_path: Path) -> None:
    assert check_model_name("hf_Bert") == "hf_Bert" and check_model_name("x" * MAX_NAME_BYTES)
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "linked").symlink_to(elsewhere)
    assert case_dir(out, "resnet50") == out / "resnet50"
    with pytest.raises(OutsideOutputError):
        case_dir(out, "linked")
    with pytest.raises(OutsideOutputError):
        inside(out, out / "linked" / "train-cpu.log")


def test_a_link_from_a_model_folder_out_of_out_is_a_failed_row(place: Place) -> None:
    """The real case runner, which refuses before it starts a process: the plug-in's import is a stand-in."""
    elsewhere = place.root / "elsewhere"
    elsewhere.mkdir()
    place.out.mkdir()
    (place.out / "tiny_mlp").symlink_to(elsewhere)
    place.before = listing(place.root, place.out)
    outcome = run_sweep(TINY, "eval", SweepOptions(out_dir=place.out, progress=False), machinery(case_process.run_case, probes=TINY_PROBED))
    (row,) = outcome.results
    assert row.status == "failed" and "outside the output folder" in row.error, row
    assert list(elsewhere.iterdir()) == []
    place.check_contained()


# --- the lock and the views must be this tool's ----------------------------------------------------------


def test_a_lock_that_is_a_link_is_refused(place: Place, capsys) -> None:
    place.out.mkdir()
    (place.out / ".torchbenchmark.lock").symlink_to(place.root / "users-file.txt")
    place.before = listing(place.root, place.out)
    assert cli.main(["--models", TINY, "--out", str(place.out), *FAST], machinery(unused, probes=TINY_PROBED)) == 2
    one_line_error(capsys.readouterr().err, "is not a file this tool wrote")
    assert (place.root / "users-file.txt").read_text() == "the user's\n"
    place.check_contained()


def test_a_folder_named_summary_json_is_one_line_and_exit_2(place: Place, capsys) -> None:
    (place.out / "summary.json").mkdir(parents=True)
    place.before = listing(place.root, place.out)
    assert cli.main(["--models", TINY, "--out", str(place.out), *FAST], machinery(unused, probes=TINY_PROBED)) == 2
    one_line_error(capsys.readouterr().err, "summary.json: is not a file this tool wrote")
    assert sorted(p.name for p in place.out.iterdir()) == ["summary.json"]
    place.check_contained()


@pytest.mark.parametrize(
    "content, message",
    [("{}", "not a summary"), ('{"mine": [1, 2]}', "not a summary"), ("my notes", "not valid JSON")],
    ids=["empty-object", "users-json", "not-json"],
)
def test_a_folder_holding_only_the_users_summary_json_is_refused_without_a_lock(
    sweeps: Sweeps, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    out = sweeps.root / "out"
    out.mkdir()
    (out / "summary.json").write_text(content)
    before = md5s(sweeps.root)
    assert sweeps.cli("--models", "alpha", "--out", str(out), *FAST) == 2
    one_line_error(capsys.readouterr().err, "summary.json", message)
    assert md5s(sweeps.root) == before and sorted(p.name for p in out.iterdir()) == ["summary.json"]


def test_run_sweep_refuses_an_out_it_cannot_make(place: Place) -> None:
    with pytest.raises(OutputUnusable, match="cannot create the output folder"):
        run_sweep(
            TINY, "train", SweepOptions(out_dir=Path("/proc/torchbenchmark-x"), progress=False), machinery(unused, probes=TINY_PROBED)
        )
    place.check_contained()


# --- a record whose sweep is gone, and what a killed sweep or an ended case left ---------------------------


def running_record(out: Path, **fields: Any) -> Path:
    """The folder's record, rewritten as a sweep leaves it while it runs (or when it was killed)."""
    path = record_of(out)
    data = json.loads(path.read_text())
    data.update(state="running", ended_at=None, **fields)
    path.write_text(json.dumps(data))
    return path


def test_a_running_record_whose_sweep_is_gone_reads_as_died(sweeps: Sweeps, tmp_path: Path) -> None:
    out = sweeps.run(sweeps.root / "out")
    path = running_record(out, pid=unused_pid())
    assert [r.state for r in outdir.read_records(out)] == [RunState.DIED]
    running_record(out, pid=os.getpid())  # this process: alive
    assert [r.state for r in outdir.read_records(out)] == [RunState.RUNNING]
    data = json.loads(path.read_text())
    data["environment"]["host"] = "another-host"
    path.write_text(json.dumps(data))
    assert [r.state for r in outdir.read_records(out)] == [RunState.RUNNING]  # written just now: may be running
    old = time.time() - (data["flags"]["timeout_s"] + outdir.STALE_MARGIN_S + 60)
    os.utime(path, (old, old))
    assert [r.state for r in outdir.read_records(out)] == [RunState.DIED]
    merged = tmp_path / "merged"
    sweeps.cli("merge", str(out), "--out", str(merged))
    assert json.loads(record_of(merged).read_text())["state"] == "died"


def test_the_next_sweep_removes_what_a_killed_one_left(sweeps: Sweeps) -> None:
    out = sweeps.run(sweeps.root / "out", ["alpha"])
    gone, alive = unused_pid(), os.getpid()
    left = [
        out / "alpha" / f".train-cpu.log.{gone}.partial",  # a killed sweep's log, never renamed
        out / "alpha" / f".train-cpu.result.{gone}.json",  # a case's row, never read
        out / "alpha" / f".train-cpu.result.{gone}.json.{unused_pid(1)}.partial",
        out / "alpha" / f".train-cpu.pt.trace.json.gz.{gone}.json",  # a trace's raw export
        out / "alpha" / f".train-cpu.pt.trace.json.gz.{gone}.json.tmp",  # torch's own, where the export filled the disk
        out / "runs" / f".x.json.{gone}.partial",
        out / f".summary.json.{gone}.partial",
    ]
    for path in left:
        path.write_bytes(b"")
    kept = [out / "alpha" / f".train-cpu.log.{alive}.partial", out / "alpha" / "notes.partial", out / "users.tmp"]
    for path in kept:
        path.write_bytes(b"the user's")
    sweeps.run(out, ["beta"])
    assert [p for p in left if p.exists()] == []
    assert all(p.read_bytes() == b"the user's" for p in kept)


@pytest.mark.slow
def test_a_sweep_killed_by_sigkill_leaves_what_the_next_sweep_clears(sweeps: Sweeps, tmp_path: Path) -> None:
    out = sweeps.root / "out"
    token = uuid.uuid4().hex
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    env = {**os.environ, TOKEN_ENV: token, faulty_models.PID_DIR_ENV: str(pid_dir)}
    killed = subprocess.Popen(
        [sys.executable, str(ROOT / "diagnostics.py"), "--models", faulty("Hangs"), "--modes", "eval", "--timeout", "300", "--out", str(out), *FAST],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while not (pid_dir / "hangs.pids").exists():
            assert killed.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
    finally:
        killed.kill()
        killed.wait()
    assert wait_until_gone(token) == []
    partial = [p for p in (out / "hangs").iterdir() if p.name.endswith(".partial")]
    assert partial and all(p.stat().st_size >= 0 for p in partial)  # the log it was writing, never renamed
    assert json.loads(record_of(out).read_text())["state"] == "running"  # as it was left...
    assert [r.state for r in outdir.read_records(out)] == [RunState.DIED]  # ...and read as what it is
    sweeps.run(out, ["alpha"], ("eval",))
    assert temporary_files(out) == []


@pytest.mark.slow
def test_what_an_ended_case_process_was_writing_is_removed_with_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    folder = out / "raises_in_build"
    folder.mkdir(parents=True)
    gone = unused_pid()
    left = [folder / f".eval-cpu.pt.trace.json.gz.{gone}.partial", folder / f".eval-cpu.pt.trace.json.gz.{gone}.json"]
    for path in left:
        path.write_bytes(b"half a trace")
    spec = CaseSpec(model=faulty("RaisesInBuild"), mode="eval", device="cpu", timeout_s=120)
    row = case_process.run_case(spec, "raises_in_build", out)
    assert row.status == "failed" and "injected fault in build" in (row.error or "")
    assert temporary_files(out) == [] and (folder / "eval-cpu.log").is_file()
