"""What a sweep shows while a case runs (run/progress.py): its phase and seconds on the bar of a terminal,
refreshed every second, or a line per phase with --no-progress, a phase shorter than a poll included.

The case sleeps through its build (steps of a few milliseconds after it), so its two sweeps (one on a
pseudo-terminal, one with --no-progress) run side by side, once for the file, each with a short budget: no
assertion here needs the default measuring windows.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.friction_models import BUILD_ENV
from tests.helpers.processes import ROOT
from tests.helpers.specs import friction
from tests.helpers.sweeps import PRICED
from torchbenchmark.results.schema import CaseResult, Dispatch, StepTime, Warmup
from torchbenchmark.run.progress import PHASE_MARKER, PhaseWatch, Progress

PHASES_SEEN = ("building", "warming up", "measuring window 1", "light profile", "costs")
CASE = "slow_build eval eager: "  # the progress line names the case by the name its class declares
BAR_BUILD_S = "8"  # long enough for five refreshes of the bar while the case builds


def sweep_command(out: Path, *flags: str) -> list[str]:
    command = [sys.executable, str(ROOT / "diagnostics.py"), "--models", friction("SlowBuild"), "--modes", "eval", "--out", str(out)]
    return [*command, "--device", "cpu", "--steps", "3", "--no-detailed", *PRICED, *flags]


def sweep_in_a_terminal(out: Path, build_s: str) -> str:
    """A sweep of the slowly built case with stderr on a pseudo-terminal (so the live bar is drawn); all it wrote."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))  # a terminal 200 columns wide
    env = {**os.environ, BUILD_ENV: build_s}
    child = subprocess.Popen(sweep_command(out), cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=follower)
    os.close(follower)
    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: the sweep is done
                break
            if not chunk:
                break
            chunks.append(chunk)
        elif child.poll() is not None:
            break
    child.wait(timeout=60)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.fixture(scope="module")
def shown(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, subprocess.CompletedProcess[str]]]:
    """What the bar drew on a terminal, and the sweep with --no-progress run beside it."""
    folder = tmp_path_factory.mktemp("progress")
    env = {**os.environ, BUILD_ENV: "2"}
    command = sweep_command(folder / "lines", "--no-progress")
    with open(folder / "lines.stderr", "w+") as stderr:
        lines = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr, text=True)
        try:
            bar = sweep_in_a_terminal(folder / "bar", BAR_BUILD_S)
            lines.wait(timeout=600)
        finally:
            if lines.poll() is None:
                lines.kill()
                lines.wait()
        stderr.seek(0)
        yield bar, subprocess.CompletedProcess(command, lines.returncode, "", stderr.read())


@pytest.mark.slow
@pytest.mark.xdist_group("test_progress")
def test_a_long_case_shows_its_phase_on_the_bar_every_few_seconds(shown) -> None:
    text, _ = shown
    updates = [part for part in re.split(r"[\r\n]", text) if CASE in part]
    named = [update for update in updates if re.search(r": [a-z][a-z0-9 ]+ \(\d+ s\)", update)]
    assert len(named) >= 5, updates[-10:]
    assert len([update for update in named if "building (" in update]) >= 5, "no update while the case was building"
    for phase in PHASES_SEEN:
        assert any(f": {phase} (" in update for update in named), (phase, updates[-10:])


@pytest.mark.slow
@pytest.mark.xdist_group("test_progress")
def test_a_long_case_prints_a_line_per_phase_with_no_progress(shown) -> None:
    _, done = shown
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line.strip() for line in done.stderr.splitlines() if line.startswith(f"  {CASE}")]
    assert len(lines) >= 5, done.stderr
    for phase in PHASES_SEEN:
        assert f"{CASE}{phase}" in lines, (phase, lines)
    assert max(map(len, done.stderr.splitlines())) <= 120, done.stderr  # a log's lines fit 120 columns


@pytest.mark.parametrize("enabled, start", [(True, "[1/1 00:0"), (False, "[1/1] ")], ids=["a log", "--no-progress"])
def test_a_case_line_fits_the_terminal_and_keeps_its_mark(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], enabled: bool, start: str
) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    row = CaseResult(
        model="fasterrcnn_mobilenet_v3_large_fpn", mode="train", device="cpu", status="ok", batch_size=4,
        step_time=StepTime(1130.0, 300.0, 1000.0, 2), dispatch=Dispatch("compute-bound", 0.08, 900.0, 1.0, 1.0),
        warmup=Warmup(steady=False),
    )  # fmt: skip
    progress = Progress(1, enabled)
    progress.finish(row.headline(compact=True))
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith(start) and all(line.startswith("    ") for line in lines[1:]), lines  # one line, wrapped
    assert max(map(len, lines)) <= 120, lines
    said = " ".join(" ".join(lines).split())
    assert "compute-bound 8%; UNTRUSTWORTHY (3): warmup not steady" in said and "IQR" not in said, said
    assert "UNTRUSTWORTHY: warmup not steady; IQR 27% of the median; only 2 steps" in row.headline()  # the whole line


def test_a_phase_shorter_than_the_poll_is_still_shown_once() -> None:
    watch = PhaseWatch()  # three phases announced between two polls
    watch.feed("".join(f"{PHASE_MARKER}{phase}\n" for phase in ("calibrating", "light profile", "costs")).encode())
    assert watch.passed() == ["starting", "calibrating", "light profile"] and watch.now()[0] == "costs"
    assert watch.passed() == []  # each once
