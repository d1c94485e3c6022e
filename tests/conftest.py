"""Shared pytest setup: in-process tests run on one intra-op thread, a session's sweeps share one calibration,
and a test that starts a process is marked slow.

Behaviour, not speed, is tested here; one thread keeps intra-op threads from spinning at their barriers
while the other core is busy (a test of the multi-thread paths sets its threads itself and restores them).
The quick loop (``-m "not slow"``) is what a developer runs between edits: every test that starts no process
and runs no whole case is in it, and a test that starts one without the mark fails, naming what it started.
"""

from __future__ import annotations

import os
import platform
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from tests.helpers.local_sweeps import Sweeps
from tests.helpers.places import Place, placed
from tests.helpers.processes import TOKEN_ENV
from tests.helpers.sweeps import SHARED_ENV

torch.set_num_threads(1)
# A run record names the processor, which Python reads from a `uname` child the first time in a process:
# read here, once, so that a sweep or case run in a test's own process starts none.
platform.processor()

SPAWNS = ("subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.exec", "os.system")
_started: list[str] = []  # what the running test started, as the interpreter's audit events name it


def _audit(event: str, args: tuple[object, ...]) -> None:
    if event in SPAWNS:
        _started.append(f"{event} {str(args[0] if args else '')[:120]}")


sys.addaudithook(_audit)


@pytest.fixture(autouse=True)
def _quick_tests_start_no_process(request: pytest.FixtureRequest) -> Iterator[None]:
    _started.clear()
    yield
    if _started and request.node.get_closest_marker("slow") is None:
        pytest.fail(f"started a process ({_started[0]}) without the slow mark: the quick loop starts none", pytrace=False)


def pytest_configure(config: pytest.Config) -> None:
    # One folder for the whole session, made before pytest-xdist starts its workers so they inherit it: the
    # first test sweep measures this machine's prices into it, every later one reads them (--calibration).
    if SHARED_ENV not in os.environ:
        os.environ[SHARED_ENV] = tempfile.mkdtemp(prefix="torchbenchmark-tests-")
        config.stash[_MADE] = os.environ[SHARED_ENV]


def pytest_unconfigure(config: pytest.Config) -> None:
    made = config.stash.get(_MADE, None)
    if made:
        shutil.rmtree(made, ignore_errors=True)
        os.environ.pop(SHARED_ENV, None)


_MADE = pytest.StashKey[str]()


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Place]:
    """A run kept in its place (``tests/helpers/places.py``), its token in this process's environment too."""
    with placed(tmp_path) as found:
        monkeypatch.setenv(TOKEN_ENV, found.token)  # for children of in-process calls
        yield found


@pytest.fixture
def sweeps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Sweeps:
    """Sweeps of stand-in cases in this process, beside a user's file (``tests/helpers/local_sweeps.py``)."""
    return Sweeps.beside_a_users_file(tmp_path / "root", capsys)
