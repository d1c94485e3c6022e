"""CPU hogs for tests that must hold on a loaded machine: busy-looping processes, started and always ended."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def cpu_hogs(count: int) -> Iterator[list[int]]:
    """``count`` processes that spin on a CPU for as long as the block runs; their pids."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield [hog.pid for hog in hogs]
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait()
