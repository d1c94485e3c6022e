"""What a sweep shows while it runs: a tqdm bar with ETA on a terminal, a line per case in a log, and the
running case's phase and time in it, as its process announces them.

A case's process writes ``PHASE_MARKER`` lines to its log as it moves from phase to phase (building,
warming up, measuring window k, light profile, ...); ``PhaseWatch`` reads them from the log's pipe. On a
terminal the bar's postfix shows the phase and its seconds, refreshed every second; otherwise (a CI log,
``--no-progress``) a line is printed at each change of phase.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator

from tqdm import tqdm

from torchbenchmark.report.format import console_width, escape_controls, fit, wrap

Announce = Callable[[str], None]  # says which phase a case has begun


def silent(_: str) -> None:
    pass


class Laps:
    """Where a case's wall time goes, lap by lap; each phase is announced as it starts."""

    def __init__(self, announce: Announce = silent) -> None:
        self.timings: dict[str, float] = {}
        self.announce = announce
        self._clock = self.began = time.perf_counter()

    def __call__(self, name: str) -> None:
        """The time since the last lap, added to ``name``'s (a phase can come back, as the calibration's moments do)."""
        now = time.perf_counter()
        self.timings[name] = round(self.timings.get(name, 0.0) + now - self._clock, 3)
        self._clock = now

    @contextlib.contextmanager
    def lap(self, name: str, phase: str) -> Iterator[None]:
        """The block announced as ``phase``, its time added to lap ``name``."""
        self.announce(phase)
        self._clock = time.perf_counter()
        yield
        self(name)


PHASE_MARKER = "[torchbenchmark] phase: "
_MARKER = PHASE_MARKER.encode()


def announce(phase: str) -> None:
    """Say, in this case's log, which phase it enters: the sweep's progress line reads it."""
    print(f"{PHASE_MARKER}{phase}", file=sys.stderr, flush=True)


class PhaseWatch:
    """The latest phase a case's output announced, and when; fed the output's bytes as they come."""

    def __init__(self) -> None:
        self.phase = "starting"
        self.since = time.monotonic()
        self._carry = b""
        self._passed: list[str] = []  # phases announced and left before anyone asked: a short one is still shown
        self._lock = threading.Lock()

    def feed(self, chunk: bytes) -> None:
        lines = (self._carry + chunk).split(b"\n")
        self._carry = lines.pop()[-4096:]
        for line in lines:
            at = line.find(_MARKER)
            if at >= 0:
                with self._lock:
                    self._passed.append(self.phase)
                    self.phase = line[at + len(_MARKER) :].decode("utf-8", "replace").strip()[:80]
                    self.since = time.monotonic()

    def passed(self) -> list[str]:
        """The phases entered and left since the last call, oldest first, once each."""
        with self._lock:
            passed, self._passed = self._passed, []
            return passed

    def now(self) -> tuple[str, float]:
        """The phase and the seconds spent in it so far."""
        with self._lock:
            return self.phase, time.monotonic() - self.since


METER = "{n_fmt}/{total_fmt} {elapsed}<{remaining}"  # a case line's count and times in a log


class Progress:
    """A live bar with ETA on a terminal; in a log, one line per case with the count and ETA, and a line
    per phase of the running case. Disabled (``--no-progress``): no bar, no ETA, the same lines."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total = total
        self.done = 0
        self.enabled = enabled
        self.live = enabled and sys.stderr.isatty()
        self.started = time.monotonic()
        self.bar = tqdm(total=total, unit="case", file=sys.stderr, disable=not self.live, dynamic_ncols=True)
        self.case = ""
        self._shown_phase = ""

    def start(self, case: str) -> None:
        self.case = escape_controls(case, one_line=True)
        self._shown_phase = ""
        self.bar.set_postfix_str(self.case)

    def phase(self, phase: str, seconds: float) -> None:
        """The running case is in ``phase`` for ``seconds``: shown live, or printed once per phase."""
        phase = escape_controls(phase, one_line=True)
        if self.live:
            self.bar.set_postfix_str(f"{self.case}: {phase} ({seconds:.0f} s)")
        elif phase != self._shown_phase:
            print(fit(f"  {self.case}: {phase}", console_width()), file=sys.stderr, flush=True)
        self._shown_phase = phase

    def finish(self, headline: str) -> None:
        self.done += 1
        self.bar.update()
        headline = escape_controls(headline, one_line=True)
        if self.live:
            self.bar.write(wrap(headline, console_width(), hang="    "), file=sys.stderr)
            return
        count = f"{self.done}/{self.total}"
        if self.enabled:  # in a log: the count, the time so far and the time left
            count = tqdm.format_meter(self.done, self.total, time.monotonic() - self.started, bar_format=METER)
        print(wrap(f"[{count}] {headline}", console_width(), hang="    "), file=sys.stderr, flush=True)

    def close(self) -> None:
        self.bar.close()
