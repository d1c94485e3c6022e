"""A case's process tree ends with it (run/guard.py): descendants in sessions of their own, a sweep killed
by SIGKILL or hung up by SIGHUP, a guard whose parent died; and the log of a model that floods is capped,
keeping its head and tail.

Every sweep runs with a token in its environment, which every descendant inherits; each test checks that
no process carrying it is left and that nothing was written outside the output folder. The sweeps mostly
wait (on a hang to time out, on a case to reach the hang it is signalled in), so one fixture runs them side
by side and the tests read what each left.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import faulty_models
from tests.helpers.places import Place, placed
from tests.helpers.processes import ROOT, TOKEN_ENV, processes_with, wait_until_gone
from tests.helpers.specs import faulty
from tests.helpers.sweeps import FAST, TINY
from torchbenchmark.run import guard as process

# Every test but the last reads the fixture's sweeps: one worker runs them all, and the sweeps run once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_guard")]

HANG_TIMEOUT_S = 20  # the hung case's --timeout: room to start and build beside two CPU hogs, then waited out
HANG = "hangs_with_detached_child"


@dataclasses.dataclass
class Sweep:
    """A sweep started in the background into ``out``, its stderr kept in a file."""

    place: Place
    out: Path
    pid_dir: Path
    process: subprocess.Popen[str]
    stderr_path: Path
    running: int = 0  # processes carrying the place's token when the sweep was signalled
    left: list[int] = dataclasses.field(default_factory=list)  # those still there 5 s after it ended

    @classmethod
    def start(cls, place: Place, out: Path, models: list[str], mode: str, timeout_s: float | None = None) -> Sweep:
        pid_dir = place.root.parent / "pids"
        pid_dir.mkdir(exist_ok=True)
        stderr_path = place.root.parent / f"{out.name}.stderr"
        timeout = ["--timeout", f"{timeout_s:g}"] if timeout_s else []
        flags = ["--models", ",".join(models), "--modes", mode, *timeout, "--out", str(out), *FAST]
        command = [sys.executable, str(ROOT / "diagnostics.py"), *flags]
        with open(stderr_path, "w") as stderr:
            env = place.env(**{faulty_models.PID_DIR_ENV: str(pid_dir)})
            started = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr, text=True)
        return cls(place, out, pid_dir, started, stderr_path)

    def reach(self, model: str) -> None:
        """Return once ``model``'s case has recorded its processes (it is built, and hangs if it hangs)."""
        deadline = time.monotonic() + 180
        while not (self.pid_dir / f"{model}.pids").exists():
            assert self.process.poll() is None and time.monotonic() < deadline, "the sweep ended or never reached the hang"
            time.sleep(0.2)

    def signal(self, signum: int) -> None:
        self.running = len(processes_with(self.place.token))
        self.process.send_signal(signum)
        self.end(60)

    def end(self, timeout_s: float = 300) -> None:
        self.process.wait(timeout=timeout_s)
        self.left = wait_until_gone(self.place.token, within_s=5.0)

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text()

    def rows(self) -> dict[tuple[str, str], dict[str, object]]:
        return self.place.rows(self.out)


@dataclasses.dataclass
class Runs:
    ok: Sweep  # SpawnsDetached and Floods, whose cases end by themselves
    hung: Sweep  # a case that hangs with a detached child, timed out (same place as ``ok``)
    killed: Sweep  # a sweep killed by SIGKILL while its case hangs
    hung_up: Sweep  # a sweep sent SIGHUP while its second case hangs


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    with contextlib.ExitStack() as stack:
        detached, killed, hung_up = (stack.enter_context(placed(tmp_path_factory.mktemp(name))) for name in ("detached", "killed", "hup"))
        hung = Sweep.start(detached, detached.out / "hung", [faulty("HangsWithDetachedChild")], "eval", HANG_TIMEOUT_S)
        ok = Sweep.start(detached, detached.out / "ok", [faulty("SpawnsDetached"), faulty("Floods")], "eval")
        hung.reach(HANG)  # built: from here on the hang only waits, while the sweeps below start beside it
        signalled = [
            Sweep.start(killed, killed.out, [faulty("HangsWithDetachedChild")], "train", 300),
            Sweep.start(hung_up, hung_up.out, [TINY, faulty("HangsWithDetachedChild"), faulty("Healthy")], "train", 300),
        ]
        for sweep, signum in zip(signalled, (signal.SIGKILL, signal.SIGHUP)):
            sweep.reach(HANG)
            sweep.signal(signum)
        hung.end()
        ok.end()
        yield Runs(ok, hung, *signalled)


def test_detached_descendants_end_with_their_case(runs: Runs) -> None:
    assert runs.hung.process.returncode == 1, runs.hung.stderr  # the hang timed out
    assert runs.ok.process.returncode == 0, runs.ok.stderr
    assert runs.ok.rows()[("spawns_detached", "eval")]["status"] == "ok"
    assert runs.hung.rows()[(HANG, "eval")]["status"] == "timeout"
    for name in ("spawns_detached", HANG):
        assert (runs.ok.pid_dir / f"{name}.pids").exists()  # each did start its detached child
    assert runs.ok.left == runs.hung.left == []
    runs.ok.place.check_contained()  # the detached children, in sessions of their own, were found and ended


def test_log_of_a_model_that_floods_is_capped_keeping_head_and_tail(runs: Runs) -> None:
    assert runs.ok.process.returncode == 0, runs.ok.stderr
    row = runs.ok.rows()[("floods", "eval")]
    assert row["status"] == "ok"
    log = (runs.ok.out / str(row["log"])).read_bytes()
    cap = process.LOG_HEAD_BYTES + process.LOG_TAIL_BYTES
    assert cap < len(log) < cap + 1024
    text = log.decode()
    assert text.index(faulty_models.FLOOD_FIRST_LINE) < text.index("log cut: ") < text.index(faulty_models.FLOOD_LAST_LINE)
    cut = int(text.split("log cut: ")[1].split()[0])
    assert cut > faulty_models.FLOOD_BYTES - cap
    runs.ok.place.check_contained()


def test_sigkill_of_a_sweep_leaves_no_process_of_its_case(runs: Runs) -> None:
    assert runs.killed.running >= 4  # the sweep, the case's guard, its worker and the worker's detached child
    assert runs.killed.process.returncode == -signal.SIGKILL
    assert runs.killed.left == []
    runs.killed.place.check_contained()


def test_sighup_is_handled_as_sigterm(runs: Runs) -> None:
    hung_up = runs.hung_up
    assert hung_up.process.returncode == 129, hung_up.stderr
    rows = hung_up.rows()
    assert rows[("tiny_mlp", "train")]["status"] == "ok"
    for model in (HANG, "healthy"):
        assert rows[(model, "train")]["status"] == "interrupted"
    assert rows[(HANG, "train")]["error"] == "interrupted by SIGHUP"  # the case that was running
    assert rows[("healthy", "train")]["error"] == "not started: interrupted by SIGHUP"
    assert "interrupted" in (hung_up.out / HANG / "train-cpu.log").read_text()
    assert hung_up.left == []
    assert hung_up.place.temporary_files() == []
    hung_up.place.check_contained()


def test_guard_dies_with_its_parent_and_takes_its_tree() -> None:
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
