"""A run kept in its place: its output folder two levels below a folder that holds a user's file, and a
token in the environment of every process it starts.

A test checks at its end that the folder's listing outside the output folder did not change and that no
process carrying the token is left.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.helpers.processes import TOKEN_ENV, processes_with, wait_until_gone


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
        """The environment of the processes the test starts: the token, the profiler's messages quiet."""
        return {**os.environ, "KINETO_LOG_LEVEL": "5", TOKEN_ENV: self.token, **extra}

    def check_contained(self) -> None:
        assert listing(self.root, self.out) == self.before, "something was written outside the output folder"
        assert not list(Path("/tmp").glob("torchbenchmark-absolute-name*"))
        assert wait_until_gone(self.token) == [], "a process of the case was left running"

    def rows(self, out: Path | None = None) -> dict[tuple[str, str], dict[str, Any]]:
        """The rows of ``out``'s summary (the place's output folder by default), by model and mode."""
        document = json.loads(((out or self.out) / "summary.json").read_text())
        return {(r["model"], r["mode"]): r for r in document["results"]}

    def temporary_files(self) -> list[str]:
        return [p.name for p in self.out.rglob("*") if "partial" in p.name or ".result." in p.name]


@contextlib.contextmanager
def placed(folder: Path) -> Iterator[Place]:
    """A place under ``folder``; whatever carries its token when the block ends is killed (a failed test
    leaves nothing running either)."""
    root = folder / "root"
    out = root / "a" / "b" / "out"
    out.parent.mkdir(parents=True)
    (root / "users-file.txt").write_text("the user's\n")
    place = Place(root, out, uuid.uuid4().hex, {})
    place.before = listing(root, out)
    try:
        yield place
    finally:
        for pid in processes_with(place.token):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
