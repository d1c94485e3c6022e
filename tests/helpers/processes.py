"""Processes a test started, found by a token every descendant inherits in its environment."""

from __future__ import annotations

import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HELPERS = ROOT / "tests" / "helpers"
TOKEN_ENV = "TORCHBENCHMARK_TEST_TOKEN"  # set to a fresh token in the environment of the processes a test starts


def processes_with(token: str) -> list[int]:
    """Living processes (not zombies) whose environment or command line holds ``token``, this one aside."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            state = Path(f"/proc/{entry.name}/stat").read_text().rpartition(")")[2].split()[0]
            marks = Path(f"/proc/{entry.name}/environ").read_bytes() + Path(f"/proc/{entry.name}/cmdline").read_bytes()
        except OSError:
            continue
        if state not in ("Z", "X") and token.encode() in marks:
            found.append(int(entry.name))
    return found


def wait_until_gone(token: str, within_s: float = 10.0) -> list[int]:
    """The processes still holding ``token`` after waiting up to ``within_s`` for them to end."""
    deadline = time.monotonic() + within_s
    while (left := processes_with(token)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left
