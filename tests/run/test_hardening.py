"""Hardening: plug-ins and signals cannot escape, hang or orphan, and nothing is written outside --out.

Every test runs its processes with a unique token in their environment, which every descendant
inherits, and checks at its end that no process carrying the token is left; and it puts the output
folder two levels down a fresh folder whose whole listing, outside the output folder, must not change.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import faulty_models
from tests.helpers.processes import TOKEN_ENV, processes_with, wait_until_gone
from torchbenchmark import cli
from torchbenchmark.api import collect_diagnostics
from torchbenchmark.results.spec import CaseSpec
from torchbenchmark.run import guard as process
from torchbenchmark.run.outdir import (
    MAX_NAME_BYTES,
    OutputUnusable,
    OutsideOutputError,
    UnsafeNameError,
    case_dir,
    check_model_name,
    inside,
)
from torchbenchmark.run.sweep import SweepOptions, run_sweep

pytestmark = pytest.mark.slow  # nearly every test here runs cases in processes of their own

ROOT = Path(__file__).resolve().parents[2]
TINY = f"{ROOT / 'tests' / 'helpers' / 'tiny_models.py'}:TinyMLP"
FAST = ["--device", "cpu", "--steps", "3", "--no-detailed", "--no-progress"]
IMPORT_FAULTS = ROOT / "tests" / "helpers" / "faulty_imports"


def faulty(name: str) -> str:
    return f"{ROOT / 'tests' / 'helpers' / 'faulty_models.py'}:{name}"


def listing(root: Path, skip: Path) -> dict[str, int]:
    """Every path under ``root`` but ``skip``'s subtree, with its size: what a stray write would change."""
    found = {}
    for path in sorted(root.rglob("*")):
        if path == skip or skip in path.parents:
            continue
        found[str(path.relative_to(root))] = path.lstat().st_size
    return found


@dataclass
class Place:
    """An output folder two levels below a folder that holds nothing else of the test's but a user file."""

    root: Path
    out: Path
    token: str
    before: dict[str, int]

    def env(self, **extra: str) -> dict[str, str]:
        return {**os.environ, "KINETO_LOG_LEVEL": "5", TOKEN_ENV: self.token, **extra}

    def check_contained(self) -> None:
        assert listing(self.root, self.out) == self.before, "something was written outside the output folder"
        assert not list(Path("/tmp").glob("torchbenchmark-absolute-name*"))
        assert wait_until_gone(self.token) == [], "a process of the case was left running"

    def rows(self) -> dict[tuple[str, str], dict[str, Any]]:
        return {(r["model"], r["mode"]): r for r in json.loads((self.out / "summary.json").read_text())["results"]}

    def temporary_files(self) -> list[str]:
        return [p.name for p in self.out.rglob("*") if "partial" in p.name or ".result." in p.name]


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Place]:
    root = tmp_path / "root"
    out = root / "a" / "b" / "out"
    out.parent.mkdir(parents=True)
    (root / "users-file.txt").write_text("the user's\n")
    token = uuid.uuid4().hex
    monkeypatch.setenv(TOKEN_ENV, token)  # for children of in-process calls
    yield Place(root, out, token, listing(root, out))
    for pid in processes_with(token):  # a failed test leaves nothing running either
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def diagnostics(place: Place, *args: str, timeout_s: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "diagnostics.py"), *args],
        cwd=ROOT,
        env=place.env(),
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def one_line_error(err: str, message: str) -> None:
    assert err.startswith("diagnostics.py: error: ") and err.count("\n") == 1 and message in err, err
    assert "Traceback" not in err


# --- model names become paths only once checked -------------------------------------------------------

BAD_NAMES = {
    "DotDotName": "contains a path separator",
    "ParentName": "is not a folder name",
    "EscapingName": "contains a path separator",
    "AbsoluteName": "contains a path separator",
    "NulName": "contains a NUL character",
    "LongName": f"longer than {MAX_NAME_BYTES} bytes",
    "NumberName": "must be a string, got int 42",
    "EmptyName": "is empty",
}


@pytest.mark.parametrize("name", ["../..", "../../x", "/abs", "a/b", "..", ".", "", "a\0b", "x" * (MAX_NAME_BYTES + 1), 42, None])
def test_a_name_that_is_not_one_folder_name_is_refused(name: object) -> None:
    with pytest.raises(UnsafeNameError):
        check_model_name(name)


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


@pytest.mark.parametrize("model", sorted(BAD_NAMES))
def test_cli_refuses_a_plugin_whose_name_is_not_a_folder_name(place: Place, capsys, model: str) -> None:
    status = cli.main(["--models", faulty(model), "--out", str(place.out), *FAST])
    one_line_error(capsys.readouterr().err, BAD_NAMES[model])
    assert status == 2
    assert not place.out.exists()
    place.check_contained()


@pytest.mark.parametrize(
    "spec, message",
    [
        (faulty("../../../x"), "'../../../x' is not a class name"),
        (f"{ROOT / 'README.md'}:Model", "a plug-in file must be a Python file ending in .py"),
    ],
    ids=["class-part-is-a-path", "file-without-.py"],
)
def test_cli_refuses_a_spec_that_names_no_class(place: Place, capsys, spec: str, message: str) -> None:
    assert cli.main(["--models", spec, "--out", str(place.out), *FAST]) == 2
    one_line_error(capsys.readouterr().err, message)
    assert not place.out.exists()
    place.check_contained()


def test_run_sweep_makes_a_failed_row_of_each_unusable_name(place: Place) -> None:
    outcome = run_sweep([faulty(m) for m in BAD_NAMES], "train", SweepOptions(out_dir=place.out, progress=False))
    assert outcome.exit_status == 1
    rows = {row.model: row for row in outcome.results}
    assert set(rows) == set(BAD_NAMES)  # named by their class, which is one folder name
    for model, message in BAD_NAMES.items():
        assert rows[model].status == "failed" and message in rows[model].error, rows[model]
    assert {(m, "train") for m in BAD_NAMES} == set(place.rows())
    assert sorted(p.name for p in place.out.iterdir()) == [".torchbenchmark.lock", "report.html", "runs", "summary.json", "summary.txt"]
    place.check_contained()


def test_collect_diagnostics_refuses_an_unusable_name_before_any_work(place: Place) -> None:
    result = collect_diagnostics(faulty_models.EscapingName, out_dir=place.out)
    assert result.status == "failed" and "UnsafeNameError" in result.error and "path separator" in result.error
    assert sorted(p.name for p in place.out.iterdir()) == [".torchbenchmark.lock", "report.html", "runs", "summary.json", "summary.txt"]
    place.check_contained()


def test_a_link_from_a_model_folder_out_of_out_is_a_failed_row(place: Place) -> None:
    elsewhere = place.root / "elsewhere"
    elsewhere.mkdir()
    place.out.mkdir()
    (place.out / "tiny_mlp").symlink_to(elsewhere)
    place.before = listing(place.root, place.out)
    outcome = run_sweep(TINY, "eval", SweepOptions(out_dir=place.out, progress=False))
    (row,) = outcome.results
    assert row.status == "failed" and "outside the output folder" in row.error, row
    assert list(elsewhere.iterdir()) == []
    place.check_contained()


def test_a_lock_that_is_a_link_is_refused(place: Place, capsys) -> None:
    place.out.mkdir()
    (place.out / ".torchbenchmark.lock").symlink_to(place.root / "users-file.txt")
    place.before = listing(place.root, place.out)
    assert cli.main(["--models", TINY, "--out", str(place.out), *FAST]) == 2
    one_line_error(capsys.readouterr().err, "is not a file this tool wrote")
    assert (place.root / "users-file.txt").read_text() == "the user's\n"
    place.check_contained()


# --- plug-ins are imported only in a child, with a timeout ----------------------------------------------

IMPORT_TIMEOUT_S = 30  # the sweep's --timeout, which bounds a plug-in's import too
IMPORT_FAULT_ROWS = {
    "HangsAtImport": (
        f"{IMPORT_FAULTS / 'hangs.py'}:HangsAtImport",
        f"did not finish within {IMPORT_TIMEOUT_S} s",
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
        f"{ROOT / 'tests' / 'helpers' / 'broken_plugin.py'}:BrokenModel",
        "RuntimeError: injected fault while importing",
        ["Traceback", 'broken_plugin.py", line'],
    ),
}


def test_plugins_that_hang_crash_or_exit_at_import_are_failed_rows_with_their_traceback(place: Place) -> None:
    specs = [spec for spec, _, _ in IMPORT_FAULT_ROWS.values()]
    done = diagnostics(
        place, "--models", ",".join([*specs, TINY]), "--modes", "eval", "--timeout", str(IMPORT_TIMEOUT_S), "--out", str(place.out), *FAST
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    rows = place.rows()
    assert rows[("tiny_mlp", "eval")]["status"] == "ok"
    for model, (_, reason, in_log) in IMPORT_FAULT_ROWS.items():
        row = rows[(model, "eval")]
        assert row["status"] == "failed" and reason in row["error"], row
        log = (place.out / row["log"]).read_text()
        assert all(fragment in log for fragment in in_log), log[-2000:]
    assert place.temporary_files() == []
    place.check_contained()


def test_list_shows_a_plugins_own_import_error(place: Place, capsys) -> None:
    broken, _, _ = IMPORT_FAULT_ROWS["BrokenModel"]
    exits, _, _ = IMPORT_FAULT_ROWS["ExitsAtImport"]
    assert cli.main(["--list", "--models", f"{TINY},{broken},{exits}"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[2:]}
    assert lines["tiny_mlp"].endswith("yes")
    assert "unavailable: RuntimeError: injected fault while importing the plug-in" in lines[broken]
    assert "has no class" not in lines[broken]
    assert "ended the process with status 0" in lines[exits]
    place.check_contained()


def test_run_sweep_takes_a_str_as_one_spec_and_imports_plugins_only_in_a_child(place: Place) -> None:
    spec, reason, _ = IMPORT_FAULT_ROWS["SysExitsAtImport"]
    modules_before = set(sys.modules)
    outcome = run_sweep(spec, "eval", SweepOptions(case=CaseSpec(timeout_s=IMPORT_TIMEOUT_S), out_dir=place.out, progress=False))
    (row,) = outcome.results
    assert (row.model, row.status) == ("SysExitsAtImport", "failed") and reason in row.error
    assert not [m for m in set(sys.modules) - modules_before if "sys_exits" in m]
    place.check_contained()


# --- a case's process tree ends with it ------------------------------------------------------------------


def test_detached_descendants_end_with_their_case(place: Place, tmp_path: Path) -> None:
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    models = ",".join([faulty("SpawnsDetached"), faulty("HangsWithDetachedChild")])
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "diagnostics.py"),
            "--models",
            models,
            "--modes",
            "eval",
            "--timeout",
            "30",
            "--out",
            str(place.out),
            *FAST,
        ],
        cwd=ROOT,
        env=place.env(**{faulty_models.PID_DIR_ENV: str(pid_dir)}),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr  # the hang timed out
    rows = place.rows()
    assert rows[("spawns_detached", "eval")]["status"] == "ok"
    assert rows[("hangs_with_detached_child", "eval")]["status"] == "timeout"
    for name in ("spawns_detached", "hangs_with_detached_child"):
        assert (pid_dir / f"{name}.pids").exists()  # each did start its detached child
    place.check_contained()  # the detached children, in sessions of their own, were found and ended


def start_sweep_into_a_hang(place: Place, tmp_path: Path) -> tuple[subprocess.Popen[str], int]:
    """A sweep whose second case hangs with a detached child; returns once that case is running."""
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    models = ",".join([TINY, faulty("HangsWithDetachedChild"), faulty("Healthy")])
    sweep = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "diagnostics.py"),
            "--models",
            models,
            "--modes",
            "train",
            "--timeout",
            "300",
            "--out",
            str(place.out),
            *FAST,
        ],
        cwd=ROOT,
        env=place.env(**{faulty_models.PID_DIR_ENV: str(pid_dir)}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    pid_file = pid_dir / "hangs_with_detached_child.pids"
    deadline = time.monotonic() + 180
    while not pid_file.exists():
        assert sweep.poll() is None and time.monotonic() < deadline, "the sweep ended or never reached the hang"
        time.sleep(0.2)
    return sweep, len(processes_with(place.token))


def test_sigkill_of_a_sweep_leaves_no_process_of_its_case(place: Place, tmp_path: Path) -> None:
    sweep, running = start_sweep_into_a_hang(place, tmp_path)
    assert running >= 4  # the sweep, the case's guard, its worker and the worker's detached child
    sweep.kill()
    sweep.communicate(timeout=60)
    assert wait_until_gone(place.token, within_s=5.0) == []
    place.check_contained()


def test_sighup_is_handled_as_sigterm(place: Place, tmp_path: Path) -> None:
    sweep, _ = start_sweep_into_a_hang(place, tmp_path)
    sweep.send_signal(signal.SIGHUP)
    _, stderr = sweep.communicate(timeout=60)
    assert sweep.returncode == 129, stderr
    rows = place.rows()
    assert rows[("tiny_mlp", "train")]["status"] == "ok"
    for model in ("hangs_with_detached_child", "healthy"):
        assert rows[(model, "train")]["status"] == "interrupted"
    assert rows[("hangs_with_detached_child", "train")]["error"] == "interrupted by SIGHUP"  # the case that was running
    assert rows[("healthy", "train")]["error"] == "not started: interrupted by SIGHUP"
    assert "interrupted" in (place.out / "hangs_with_detached_child" / "train-cpu.log").read_text()
    assert wait_until_gone(place.token, within_s=5.0) == []
    assert place.temporary_files() == []
    place.check_contained()


def test_guard_dies_with_its_parent_and_takes_its_tree(tmp_path: Path) -> None:
    """The guard alone: its parent killed by SIGKILL, nothing it started survives."""
    token = uuid.uuid4().hex
    script = (
        "import os, sys, time\n"
        "from torchbenchmark.run import guard as process\n"
        "child = process.spawn('tests.helpers.faulty_imports.hangs', [], os.environ, sys.stdout, sys.stderr)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, env={**os.environ, TOKEN_ENV: token})
    try:
        deadline = time.monotonic() + 60
        while len(processes_with(token)) < 3:  # the parent, the guard and the work it forked
            assert time.monotonic() < deadline
            time.sleep(0.1)
        parent.kill()
        parent.wait()
        assert wait_until_gone(token, within_s=5.0) == []
    finally:
        for pid in processes_with(token):
            os.kill(pid, signal.SIGKILL)


# --- logs are capped; a full disk or an unwritable folder is a row ---------------------------------------


def test_log_of_a_model_that_floods_is_capped_keeping_head_and_tail(place: Place) -> None:
    done = diagnostics(place, "--models", faulty("Floods"), "--modes", "eval", "--out", str(place.out), *FAST)
    assert done.returncode == 0, done.stderr
    row = place.rows()[("floods", "eval")]
    assert row["status"] == "ok"
    log = (place.out / row["log"]).read_bytes()
    cap = process.LOG_HEAD_BYTES + process.LOG_TAIL_BYTES
    assert cap < len(log) < cap + 1024
    text = log.decode()
    assert text.index(faulty_models.FLOOD_FIRST_LINE) < text.index("log cut: ") < text.index(faulty_models.FLOOD_LAST_LINE)
    cut = int(text.split("log cut: ")[1].split()[0])
    assert cut > faulty_models.FLOOD_BYTES - cap
    place.check_contained()


@contextlib.contextmanager
def mounted_tmpfs(path: Path, options: str) -> Iterator[None]:
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def test_full_disk_and_read_only_model_folder_are_failed_rows_and_the_sweep_goes_on(place: Place) -> None:
    """--out on an 8 MiB tmpfs holding 6.5 MiB of the user's, and a read-only folder where one model's goes."""
    with mounted_tmpfs(place.out, "size=8m"):
        ballast = place.out / "users-ballast.bin"
        ballast.write_bytes(b"\1" * (13 << 19))
        with mounted_tmpfs(place.out / "healthy", "ro,size=1m"):
            models = ",".join([faulty("Floods"), faulty("Healthy"), TINY])
            done = diagnostics(place, "--models", models, "--modes", "eval", "--out", str(place.out), *FAST)
            assert done.returncode == 1, done.stderr
            assert "Traceback" not in done.stderr
            rows = place.rows()
            assert rows[("floods", "eval")]["status"] == "failed"
            assert "No space left on device" in rows[("floods", "eval")]["error"]
            assert rows[("healthy", "eval")]["status"] == "failed"
            assert "Read-only file system" in rows[("healthy", "eval")]["error"]
            assert rows[("tiny_mlp", "eval")]["status"] == "ok"  # after the full disk, the sweep went on
            assert place.temporary_files() == []
            assert ballast.read_bytes() == b"\1" * (13 << 19)
        assert not place.out.joinpath("floods", "eval-cpu.log").exists()  # removed, to give its space back
    place.check_contained()


def test_summary_that_cannot_be_written_is_reported_and_the_cases_still_run(place: Place, monkeypatch, capsys) -> None:
    """A full disk when the record and summary are written (simulated: every such write raises ENOSPC)."""
    import errno

    from torchbenchmark.run import outdir

    def full(path: Path, text: str) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(outdir, "write_atomic", full)
    outcome = run_sweep([faulty(m) for m in ("EmptyName", "NulName")], "eval", SweepOptions(out_dir=place.out, progress=False))
    assert [r.status for r in outcome.results] == ["failed", "failed"]  # both cases ran
    assert outcome.summary_error and "No space left on device" in outcome.summary_error
    assert outcome.exit_status == 1
    err = capsys.readouterr().err
    assert err.count("cannot write the run record or summary") == 1 and "Traceback" not in err  # said once
    assert place.temporary_files() == []
    place.check_contained()


# --- every bad input is one line and the documented exit status ------------------------------------------


@pytest.mark.parametrize(
    "out, message",
    [("", "--out is empty"), ("/proc/torchbenchmark-x", "cannot create the output folder")],
    ids=["empty", "in-proc"],
)
def test_out_that_cannot_be_used_is_one_line_and_exit_2(place: Place, capsys, out: str, message: str) -> None:
    assert cli.main(["--models", TINY, "--out", out, *FAST]) == 2
    one_line_error(capsys.readouterr().err, message)
    assert not Path("summary.json").exists() and not Path(out or ".").joinpath(".torchbenchmark.lock").exists()
    place.check_contained()


def test_a_folder_named_summary_json_is_one_line_and_exit_2(place: Place, capsys) -> None:
    (place.out / "summary.json").mkdir(parents=True)
    place.before = listing(place.root, place.out)
    assert cli.main(["--models", TINY, "--out", str(place.out), *FAST]) == 2
    one_line_error(capsys.readouterr().err, "summary.json: is not a file this tool wrote")
    assert sorted(p.name for p in place.out.iterdir()) == ["summary.json"]
    place.check_contained()


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


def test_run_sweep_refuses_an_out_it_cannot_make(place: Place) -> None:
    with pytest.raises(OutputUnusable, match="cannot create the output folder"):
        run_sweep(TINY, "train", SweepOptions(out_dir=Path("/proc/torchbenchmark-x"), progress=False))
    place.check_contained()


# --- the promises are stated where users read them -------------------------------------------------------


def test_traces_readme_and_docs_cli_state_the_promises() -> None:
    pages = [ROOT / "traces" / "README.md", ROOT / "docs" / "cli.md"]
    cap_mib = (process.LOG_HEAD_BYTES + process.LOG_TAIL_BYTES) >> 20
    for text in (" ".join(page.read_text(encoding="utf-8").split()) for page in pages):
        assert f"capped at {cap_mib} MiB" in text
        assert "first and last" in text and "cut" in text
        assert "under --out" in text or "under the output folder" in text
        assert "129" in text and "SIGHUP" in text
        assert "imported only in a child process" in text
        assert "detached" in text and "SIGKILL" in text
        assert f"at most {MAX_NAME_BYTES} bytes" in text
