"""Reliability: every fault in a case becomes its row, bad input a one-line error, and the user's files survive.

Real sweeps through diagnostics.py with the fault-injection plug-ins of tests/helpers/faulty_models.py, each mixed
with a good model; every sweep's output folder holds files the test put there first, which must come out
byte-identical. The two fault sweeps run side by side (one mostly waits on a hung case) to keep this fast.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.helpers import faulty_models
from tests.helpers.sweeps import FAST, TINY
from torchbenchmark import cli, registry
from torchbenchmark.cli import listing

pytestmark = pytest.mark.xdist_group("run_case")  # one worker runs the module's sweeps once, for all its tests


ROOT = Path(__file__).resolve().parents[2]
HANG_TIMEOUT_S = 20  # the hung case's sweep has no other case, so nothing else must fit in it
BROKEN_PLUGIN = f"{ROOT / 'tests' / 'helpers' / 'broken_plugin.py'}:BrokenModel"  # raises while its file is imported


def faulty(name: str) -> str:
    return f"{ROOT / 'tests' / 'helpers' / 'faulty_models.py'}:{name}"


def diagnostics_command(*args: str) -> list[str]:
    return [sys.executable, str(ROOT / "diagnostics.py"), *args]


def worker_env(pid_dir: Path) -> dict[str, str]:
    return {**os.environ, "KINETO_LOG_LEVEL": "5", faulty_models.PID_DIR_ENV: str(pid_dir)}


def place_sentinels(out: Path) -> dict[Path, bytes]:
    """Files of the user's in the output folder, one at the top and one inside a model's folder."""
    sentinels = {out / "my-notes.txt": os.urandom(64), out / "tiny_mlp" / "my-notes.txt": os.urandom(64)}
    for path, data in sentinels.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return sentinels


def assert_untouched(sentinels: dict[Path, bytes]) -> None:
    for path, data in sentinels.items():
        assert path.read_bytes() == data, f"{path} was changed"


def read_rows(out: Path) -> dict[tuple[str, str], dict[str, Any]]:
    return {(row["model"], row["mode"]): row for row in json.loads((out / "summary.json").read_text())["results"]}


def process_gone(pid: int) -> bool:
    """Gone, or a zombie waiting for a parent (init here may not reap) to collect its status."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


@dataclass
class Sweep:
    name: str
    out: Path
    returncode: int
    stderr: str
    sentinels: dict[Path, bytes]
    pid_dir: Path

    @property
    def rows(self) -> dict[tuple[str, str], dict[str, Any]]:
        return read_rows(self.out)


SWEEPS = {
    # Faults inside train cases, beside one good model.
    "train": (
        [
            "--modes",
            "train",
            "--timeout",
            "120",
            "--models",
            ",".join(
                [
                    TINY,
                    faulty("RaisesInBuild"),
                    faulty("RaisesInTrain"),
                    faulty("OutOfMemory"),
                    faulty("MissingDependency"),
                    faulty("Aborts"),
                    faulty("Segfaults"),
                    faulty("KillsItself"),
                    faulty("AbortsLeavingChild"),
                    BROKEN_PLUGIN,
                    faulty("Healthy"),
                ]
            ),
        ]
    ),
    # Faults of eval cases, beside the good model.
    "eval": (
        [
            "--modes",
            "eval",
            "--timeout",
            "120",
            "--models",
            ",".join(
                [
                    faulty("RaisesInEval"),
                    faulty("EvalNotImplemented"),
                    TINY,
                ]
            ),
        ]
    ),
    # A hang alone, under a short timeout no good case has to share: a timeout is the sweep's only fault.
    "hang": ["--modes", "eval", "--timeout", str(HANG_TIMEOUT_S), "--models", faulty("HangsWithChild")],
}


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Sweep]:
    running = {}
    for name, args in SWEEPS.items():
        out = tmp_path_factory.mktemp(name)
        pid_dir = tmp_path_factory.mktemp(f"{name}-pids")
        sentinels = place_sentinels(out)
        if name == "train":  # a file of the user's where the healthy model's folder would go
            sentinels[out / "healthy"] = b"not a folder\n"
            (out / "healthy").write_bytes(sentinels[out / "healthy"])
        process = subprocess.Popen(
            diagnostics_command(*args, "--out", str(out), *FAST),
            cwd=ROOT,
            env=worker_env(pid_dir),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        running[name] = (process, out, sentinels, pid_dir)
    done = {}
    for name, (process, out, sentinels, pid_dir) in running.items():
        _, stderr = process.communicate(timeout=300)
        done[name] = Sweep(name, out, process.returncode, stderr, sentinels, pid_dir)
    return done


def check_case(sweep: Sweep, model: str, mode: str, status: str, *reasons: str) -> dict[str, Any]:
    """The faulty row has its status and reason and a log; the good model, if in the sweep, is ok; the user's
    files are intact."""
    rows = sweep.rows
    row = rows[(model, mode)]
    assert row["status"] == status, row
    for reason in reasons:
        assert reason in row["error"], row["error"]
    assert "\n" not in row["error"]
    log = sweep.out / row["log"]
    assert log.parent == sweep.out / model and log.read_text().strip(), "a full log beside the traces"
    if TINY in " ".join(SWEEPS[sweep.name]):
        assert rows[("tiny_mlp", mode)]["status"] == "ok", rows[("tiny_mlp", mode)]
    assert sweep.returncode == 1, sweep.stderr  # some case in each sweep failed or timed out
    assert_untouched(sweep.sentinels)
    leftovers = [p.name for p in sweep.out.rglob("*") if "partial" in p.name or ".result." in p.name]
    assert leftovers == []
    return row


@pytest.mark.slow
@pytest.mark.parametrize(
    "sweep_name, model, mode, reason",
    [
        ("train", "raises_in_build", "train", "RuntimeError: injected fault in build"),
        ("train", "raises_in_train", "train", "RuntimeError: injected fault in train"),
        ("eval", "raises_in_eval", "eval", "RuntimeError: injected fault in eval"),
        # Named by its class, not its spec: a plug-in's path must not put its folder outside --out.
        ("train", "BrokenModel", "train", "RuntimeError: injected fault while importing the plug-in"),
    ],
)
def test_model_that_raises_is_a_failed_row(sweeps, sweep_name: str, model: str, mode: str, reason: str) -> None:
    row = check_case(sweeps[sweep_name], model, mode, "failed", reason)
    assert "Traceback" in (sweeps[sweep_name].out / row["log"]).read_text()
    assert not list((ROOT / "tests").glob("*:*"))


@pytest.mark.slow
@pytest.mark.parametrize("model, signame", [("aborts", "SIGABRT"), ("segfaults", "SIGSEGV"), ("kills_itself", "SIGKILL")])
def test_process_that_dies_is_a_failed_row_with_the_signal(sweeps, model: str, signame: str) -> None:
    row = check_case(sweeps["train"], model, "train", "failed", signame)
    log = (sweeps["train"].out / row["log"]).read_text()
    assert signame in log
    if signame != "SIGKILL":  # the interpreter's own crash report names the model's frame
        assert "Fatal Python error" in log and "faulty_models.py" in log


@pytest.mark.slow
def test_child_left_by_a_crashed_model_is_killed(sweeps) -> None:
    sweep = sweeps["train"]
    check_case(sweep, "aborts_leaving_child", "train", "failed", "SIGABRT")
    (child,) = [int(pid) for pid in (sweep.pid_dir / "aborts_leaving_child.pids").read_text().split()]
    assert process_gone(child)


@pytest.mark.slow
def test_user_file_where_a_model_folder_goes_is_a_failed_row_and_kept(sweeps) -> None:
    sweep = sweeps["train"]
    row = sweep.rows[("healthy", "train")]
    assert row["status"] == "failed" and row["error"].startswith("cannot write its outputs"), row
    assert sweep.rows[("tiny_mlp", "train")]["status"] == "ok"
    assert_untouched(sweep.sentinels)


@pytest.mark.slow
def test_hung_model_times_out_and_its_process_tree_is_killed(sweeps) -> None:
    sweep = sweeps["hang"]
    row = check_case(sweep, "hangs_with_child", "eval", "timeout", f"no result after {HANG_TIMEOUT_S} s")
    assert row["timings_s"]["total"] >= HANG_TIMEOUT_S
    assert list(sweep.rows) == [("hangs_with_child", "eval")]  # exit 1 for the timeout alone (check_case)
    pids = [int(pid) for pid in (sweep.pid_dir / "hangs_with_child.pids").read_text().split()]
    assert len(pids) == 2  # the model's process and the child it started
    assert all(process_gone(pid) for pid in pids)


@pytest.mark.slow
def test_out_of_memory_is_a_failed_row_with_a_batch_size_hint(sweeps) -> None:
    check_case(sweeps["train"], "out_of_memory", "train", "failed", "out of memory", "--batch-size", "MemoryError")


@pytest.mark.slow
def test_missing_optional_dependency_is_a_skipped_row(sweeps) -> None:
    check_case(sweeps["train"], "missing_dependency", "train", "skipped", "unavailable", faulty_models.MISSING_PACKAGE)


@pytest.mark.slow
def test_not_implemented_mode_is_a_skipped_row(sweeps) -> None:
    check_case(sweeps["eval"], "eval_not_implemented", "eval", "skipped", "eval not supported", "no inference mode")


@pytest.mark.slow
def test_list_shows_a_plugin_with_a_missing_requirement_unavailable(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--list", "--models", f"{TINY},{faulty('MissingDependency')}"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[2:]}
    assert lines["tiny_mlp"].endswith("yes")
    assert f"unavailable: needs {faulty_models.MISSING_PACKAGE}" in lines["missing_dependency"]


def test_list_shows_a_registered_model_with_a_missing_requirement_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torchbenchmark.models.faulty_models", faulty_models)
    monkeypatch.setitem(registry._MODELS, "missing_dependency", "faulty_models:MissingDependency")
    line = next(line for line in listing.listing().splitlines() if line.startswith("missing_dependency"))
    assert f"unavailable: needs {faulty_models.MISSING_PACKAGE}" in line
    assert "resnet50" in listing.listing()


@pytest.mark.slow
def test_exit_status_is_zero_when_every_case_is_ok_or_skipped_and_a_rerun_keeps_other_rows(sweeps, tmp_path: Path) -> None:
    """Re-run two models of the train sweep into a copy of its folder: their rows update, the rest stay."""
    out = tmp_path / "out"
    shutil.copytree(sweeps["train"].out, out)
    sentinels = place_sentinels(out)
    before = read_rows(out)
    done = subprocess.run(
        diagnostics_command("--models", f"{TINY},{faulty('MissingDependency')}", "--modes", "train", "--out", str(out), *FAST),
        cwd=ROOT,
        env=worker_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    after = read_rows(out)
    assert set(after) == set(before)
    rerun = {("tiny_mlp", "train"), ("missing_dependency", "train")}
    assert after[("tiny_mlp", "train")]["status"] == "ok"
    assert after[("tiny_mlp", "train")]["timings_s"] != before[("tiny_mlp", "train")]["timings_s"]  # a new row
    assert after[("missing_dependency", "train")]["status"] == "skipped"
    # --no-detailed: the light profile only.
    assert after[("tiny_mlp", "train")]["traces"]["detailed"] is None
    assert not (out / "tiny_mlp" / "train-cpu-detailed.pt.trace.json.gz").exists()
    assert {key: row for key, row in after.items() if key not in rerun} == {key: row for key, row in before.items() if key not in rerun}
    assert_untouched(sentinels)
    assert_untouched(sweeps["train"].sentinels)  # the copy's origin was not touched either


@pytest.mark.slow
@pytest.mark.parametrize(
    ("signum", "again"),
    [(signal.SIGINT, False), (signal.SIGTERM, False), (signal.SIGINT, True)],
    ids=["SIGINT", "SIGTERM", "SIGINT-twice"],
)
def test_signal_ends_the_running_case_and_marks_the_rest_interrupted(tmp_path: Path, signum: int, again: bool) -> None:
    """A second Ctrl-C, as an impatient user presses it, must not cut short the summary the first one writes."""
    out = tmp_path / "out"
    sentinels = place_sentinels(out)
    models = ",".join([TINY, faulty("Hangs"), faulty("Healthy")])
    sweep = subprocess.Popen(
        diagnostics_command("--models", models, "--modes", "train", "--timeout", "300", "--out", str(out), *FAST),
        cwd=ROOT,
        env=worker_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # As a shell or CI starts a background job: SIGINT ignored. The sweep must still stop on it.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    pid_file = tmp_path / "hangs.pids"
    try:
        deadline = time.monotonic() + 180
        while not (out / "summary.json").exists() or not pid_file.exists():  # first row written, hang running
            assert sweep.poll() is None and time.monotonic() < deadline, "the sweep ended or never reached the hang"
            time.sleep(0.2)
        hung_pid = int(pid_file.read_text())
        sweep.send_signal(signum)
        if again:
            sweep.send_signal(signal.SIGINT)
        _, stderr = sweep.communicate(timeout=60)
    finally:  # on failure, leave nothing running: the sweep, nor the hung case in its own session
        sweep.kill()
        if pid_file.exists() and not process_gone(pid := int(pid_file.read_text())):
            os.kill(pid, signal.SIGKILL)
    assert sweep.returncode == 128 + signum, stderr
    rows = read_rows(out)
    assert rows[("tiny_mlp", "train")]["status"] == "ok"
    name = signal.Signals(signum).name
    assert rows[("hangs", "train")]["status"] == rows[("healthy", "train")]["status"] == "interrupted"
    assert rows[("hangs", "train")]["error"] == f"interrupted by {name}"  # the case that was running
    assert rows[("healthy", "train")]["error"] == f"not started: interrupted by {name}"
    assert "interrupted" in (out / "summary.txt").read_text()
    assert "interrupted" in (out / "hangs" / "train-cpu.log").read_text()
    assert process_gone(hung_pid)
    assert_untouched(sentinels)


@pytest.mark.slow
def test_second_sweep_into_a_folder_in_use_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    sentinels = place_sentinels(out)
    with open(out / ".torchbenchmark.lock", "a+") as lock:  # as a running sweep holds it
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        done = subprocess.run(
            diagnostics_command("--models", TINY, "--out", str(out), *FAST),
            cwd=ROOT,
            env=worker_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "in use by another diagnostics run" in done.stderr
    assert sorted(p.name for p in out.rglob("*")) == sorted([".torchbenchmark.lock", "my-notes.txt", "tiny_mlp", "my-notes.txt"])
    assert_untouched(sentinels)


def _bad_inputs() -> list[Any]:
    cases = [
        (["--models", "resnet5"], "unknown model 'resnet5'; did you mean resnet50"),
        (["--models", "tests/no_such_file.py:Model"], "no such file"),
        (["--models", faulty("NoSuchClass")], "has no class 'NoSuchClass'"),
        (["--modes", "train,infer"], "unknown mode 'infer'"),
        (["--steps", "0"], "--steps: must be at least 1"),
        (["--batch-size", "-4"], "--batch-size: must be at least 1"),
        (["--threads", "0"], "--threads: must be from 1 to 1024"),
        (["--timeout", "0"], "--timeout: must be more than 0"),
        (["--timeout", "-5"], "--timeout: must be more than 0"),
        (["--device", "tpu"], "unknown device 'tpu'"),
        (["--bogus"], "unrecognized arguments: --bogus"),
    ]
    cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
    return [pytest.param(*case, id=" ".join(case[0])) for case in cases] + [
        pytest.param(["--device", "cuda"], "no CUDA GPU is available", marks=cuda, id="--device cuda")
    ]


@pytest.mark.slow
@pytest.mark.parametrize("existing", [False, True], ids=["new-out", "existing-out"])
@pytest.mark.parametrize("args, message", _bad_inputs())
def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str, existing: bool
) -> None:
    out = tmp_path / "out"
    sentinels = place_sentinels(out) if existing else {}
    status = cli.main(["--models", TINY, "--out", str(out), *FAST, *args])
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith("diagnostics.py: error: ") and err.count("\n") == 1 and message in err, err
    if existing:
        assert sorted(p.name for p in out.rglob("*")) == ["my-notes.txt", "my-notes.txt", "tiny_mlp"]
        assert_untouched(sentinels)
    else:
        assert not out.exists()


@pytest.mark.parametrize("where, message", [("file", "exists and is not a folder"), ("under-file", "cannot create the output folder")])
def test_out_that_is_a_file_or_cannot_be_made_is_refused(tmp_path: Path, capsys, where: str, message: str) -> None:
    existing = tmp_path / "results.csv"
    existing.write_bytes(b"the user's data\n")
    out = existing if where == "file" else existing / "traces"
    assert cli.main(["--models", TINY, "--out", str(out), *FAST]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert existing.read_bytes() == b"the user's data\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.csv"]


@pytest.mark.slow
def test_bad_input_from_the_command_line(tmp_path: Path) -> None:
    """The same through the script itself: exit status 2 and one line, with no Python traceback."""
    done = subprocess.run(
        diagnostics_command("--models", "resnet5", "--out", str(tmp_path / "out")),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "did you mean resnet50" in done.stderr
    assert not (tmp_path / "out").exists()


def test_help_documents_the_exit_statuses() -> None:
    from torchbenchmark.cli.sweep import build_parser

    text = " ".join(build_parser().format_help().split())
    for fragment in (
        "exit status",
        "0 every case ok or skipped",
        "1 a case failed or timed out",
        "2 usage error",
        "130 Ctrl-C",
        "143 SIGTERM",
        "129 SIGHUP",
        "3 (--baseline) nothing slower but something inconclusive",
    ):
        assert fragment in text
    assert len(build_parser().format_help().splitlines()) <= 50
