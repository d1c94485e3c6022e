"""Ctrl-C anywhere is one line and 130 (cli/__init__.py's ``main``, and the entry points around it): while
the package loads, while plug-ins are imported, and while compare or merge reads an input that arrives slowly.

Each command runs in a process group of its own, as a terminal's foreground job does, and is sent SIGINT as
the terminal sends it on Ctrl-C: to the whole group.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.commands import one_line_error
from tests.helpers.local_sweeps import Sweeps
from tests.helpers.processes import ROOT, TOKEN_ENV, processes_with, wait_until_gone
from tests.helpers.specs import IMPORT_FAULTS
from tests.helpers.sweeps import FAST

pytestmark = pytest.mark.slow  # every test here runs the command line in a process of its own


@contextlib.contextmanager
def started(*args: str, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[str]]:
    """``diagnostics.py args`` in a process group of its own, as a terminal's foreground job is: with SIGINT
    at its default even where these tests were started in the background, which leaves it ignored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # a handler is reset to the default by exec
    try:
        process = subprocess.Popen(
            [sys.executable, str(ROOT / "diagnostics.py"), *args],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def ctrl_c(process: subprocess.Popen[str]) -> tuple[str, str]:
    """What the terminal does on Ctrl-C: SIGINT to the whole foreground process group."""
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=60)
    return out, err


def assert_interrupted(process: subprocess.Popen[str], err: str) -> None:
    assert process.returncode == 130, err
    assert err == "diagnostics.py: interrupted\n", err


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def fed_slowly(fifo: Path, text: str) -> threading.Thread:
    """A writer that opens ``fifo``, writes the start of ``text`` and keeps it open: the reader blocks there."""
    opened = threading.Event()

    def write() -> None:
        with open(fifo, "w") as stream:
            stream.write(text[: len(text) // 2])
            stream.flush()
            opened.set()
            time.sleep(30)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    assert opened.wait(120), "the command never opened its input"
    return writer


def _alive(token: str) -> list[int]:
    found = []
    for pid in processes_with(token):
        with contextlib.suppress(OSError):
            Path(f"/proc/{pid}/cmdline").read_text()
            found.append(pid)
    return found


def test_ctrl_c_while_plugins_are_imported(tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    out = tmp_path / "out"
    spec = f"{IMPORT_FAULTS / 'hangs.py'}:HangsAtImport"
    with started("--models", spec, "--timeout", "120", "--out", str(out), *FAST, env={**os.environ, TOKEN_ENV: token}) as sweep_process:
        deadline = time.monotonic() + 120
        while not any("torchbenchmark.run.probe" in Path(f"/proc/{pid}/cmdline").read_text(errors="replace") for pid in _alive(token)):
            assert sweep_process.poll() is None and time.monotonic() < deadline, "the import never started"
            time.sleep(0.1)
        time.sleep(0.5)
        _, err = ctrl_c(sweep_process)
    assert_interrupted(sweep_process, err)
    assert wait_until_gone(token) == [] and not out.exists()


def test_a_fifo_given_to_compare_or_merge_is_refused_at_once_not_waited_on(sweeps: Sweeps) -> None:
    """An input that would arrive slowly, or never (a FIFO no one writes), is no results file: refused, not read."""
    b = sweeps.run(sweeps.root / "b")
    fifo = _fifo(sweeps.root / "record.json")
    merged = sweeps.root / "merged"
    for args in (("compare", str(b), str(fifo)), ("merge", str(b), str(fifo), "--out", str(merged))):
        with started(*args) as command:
            out, err = command.communicate(timeout=60)
        assert command.returncode == 2 and out == "" and not merged.exists(), err
        one_line_error(err, str(fifo), "not a regular file")


def test_ctrl_c_while_the_package_loads(tmp_path: Path) -> None:
    """A module the command line loads (tabulate, shadowed here) that blocks on a fifo: Ctrl-C lands in the imports."""
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    fifo = _fifo(tmp_path / "slow-import")
    (shadow / "tabulate.py").write_text(f"open({str(fifo)!r}).read()\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shadow), str(ROOT)])}
    with started("compare", "a", "b", env=env) as command:
        fed_slowly(fifo, "x" * 64)
        time.sleep(0.3)
        _, err = ctrl_c(command)
    assert_interrupted(command, err)


@pytest.mark.parametrize(
    "argv0, said",
    [("/repo/diagnostics.py", "diagnostics.py"), ("/venv/lib/torchbenchmark/__main__.py", "python -m torchbenchmark"),
     ("/venv/bin/torchbenchmark", "torchbenchmark")],
)  # fmt: skip
def test_messages_name_the_command_as_it_was_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv0: str, said: str
) -> None:
    from torchbenchmark.cli import main

    monkeypatch.setattr(sys, "argv", [argv0])
    assert main(["--models", "no_such_model"]) == 2
    assert capsys.readouterr().err.startswith(f"{said}: error: unknown model 'no_such_model'")
    assert main(["compare", "only-one-side"]) == 2
    assert capsys.readouterr().err.startswith(f"{said}: error: ")
