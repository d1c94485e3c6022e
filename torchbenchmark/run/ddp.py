"""DistributedDataParallel cases, the launching side: a train case run by N ranks through ``torch.distributed.run``.

``run_case`` (in the case's process) starts ``python -m torch.distributed.run --standalone --nproc-per-node
N -m torchbenchmark.run.rank --request ...`` and waits; each rank's work is ``run.rank``. Every rank keeps
its pid, phase and how many collectives it entered in ``rank<R>.status.json``; one that raises writes why
to ``rank<R>.error.json``, one that crashes leaves its fault in ``rank<R>.fault``. From those the row names
the rank that failed first of its own accord, or on a timeout the rank that got least far. While the
ranks run, the launcher announces where they are (the sweep's progress line reads it).

torchrun starts every rank in a session of its own, out of reach of a kill of the case's, so the launcher
stops torchrun and then kills each rank's session itself.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from torchbenchmark.measure.schedstat import cpu_share
from torchbenchmark.registry import meta_of, model_class
from torchbenchmark.report.format import plural
from torchbenchmark.results.schema import CaseResult, Status
from torchbenchmark.results.spec import CaseRequest, CaseSpec
from torchbenchmark.run.progress import Announce, silent

log = logging.getLogger(__name__)


# Each rank's progress, in order: a hung case is blamed on the rank that got least far.
PHASES = ("start", "init", "build", "wrap", "characterise", "profile", "analyse", "gather", "done")
STOP_GRACE_S = 5.0  # after SIGTERM, how long torchrun gets to stop its ranks before everything is killed
# The case's process is killed at spec.timeout_s from when the sweep started it: the launcher stops
# waiting this much earlier, so it can still stop torchrun, say which rank hung and kill the ranks itself.
DEADLINE_MARGIN_FRACTION = 0.15
MIN_DEADLINE_MARGIN_S = STOP_GRACE_S + 5.0
POLL_S = 1.0  # how often the launcher reads the ranks' status files to announce where they are
# What a rank's error says when another rank went away: a consequence, not a cause.
PEER_FAILURE_MARKERS = ("Connection closed by peer", "Connection reset by peer", "Broken pipe", "remote worker")
RANK_MODULE = "torchbenchmark.run.rank"
# The lines of torchrun's failure report that say which rank ended how, and which failed first.
REPORT_LINE = re.compile(r"^\s*(rank|exitcode)\s*:|Root Cause")
MAX_REPORTED_RANKS = 1024


@dataclasses.dataclass(frozen=True)
class Exits:
    """What torchrun's failure report says: each rank's exit status and the rank it saw fail first."""

    codes: dict[int, int]
    first: int | None


def status_path(scratch: Path, rank: int) -> Path:
    return scratch / f"rank{rank}.status.json"


def error_path(scratch: Path, rank: int) -> Path:
    return scratch / f"rank{rank}.error.json"


def fault_path(scratch: Path, rank: int) -> Path:
    return scratch / f"rank{rank}.fault"


def stack_path(scratch: Path, rank: int) -> Path:
    """Where a rank writes its Python stack when asked (``STACK_SIGNAL``): where a hung case's ranks were."""
    return scratch / f"rank{rank}.stack"


STACK_SIGNAL = signal.SIGUSR1
STACK_WAIT_S = 1.0
# A stack's innermost frame: faulthandler writes the most recent call first.
FRAME = re.compile(r'^\s*File "(?P<path>[^"]*)", line (?P<line>\d+) in (?P<function>\S+)', re.M)


def _rank_pids(scratch: Path) -> dict[int, int]:
    """Each rank's pid from its status file, where that process's command line still holds this case's scratch
    folder (a pid can be reused)."""
    pids = {}
    for path in scratch.glob("rank*.status.json"):
        pid = (_read_json(path) or {}).get("pid")
        rank = path.name.removeprefix("rank").split(".")[0]
        if isinstance(pid, int) and rank.isdigit() and _command_line(pid).find(str(scratch)) >= 0:
            pids[int(rank)] = pid
    return pids


def where_ranks_were(scratch: Path) -> dict[int, tuple[str, str]]:
    """Each live rank's innermost Python frame, as (its file's path, ``file.py:line in function``): asked of every
    rank at once (``STACK_SIGNAL``), then read back."""
    pids = _rank_pids(scratch)
    for pid in pids.values():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, STACK_SIGNAL)
    time.sleep(STACK_WAIT_S if pids else 0.0)
    frames = {}
    for rank in pids:
        try:
            found = FRAME.search(stack_path(scratch, rank).read_text(encoding="utf-8", errors="replace")[:65536])
        except OSError:
            continue
        if found:
            frames[rank] = (found["path"], f"{Path(found['path']).name}:{found['line']} in {found['function']}")
    return frames


def result_path(scratch: Path) -> Path:
    return scratch / "result.json"


def run_case(spec: CaseSpec, out_dir: Path, announce: Announce = silent, started_at: float | None = None) -> CaseResult:
    """Run ``spec`` as DistributedDataParallel with ``spec.world_size`` ranks on this machine.

    ``started_at`` (a ``time.time()``) is when the case's timeout began, the process's start by default:
    the launcher gives up in time to name the rank that hung before the case's process is killed.
    """
    row = CaseResult.failed(spec, model=_model_name(spec.model), device=spec.device_type)
    started = time.perf_counter()
    spent_s = max(0.0, time.time() - started_at) if started_at else 0.0
    margin_s = max(MIN_DEADLINE_MARGIN_S, DEADLINE_MARGIN_FRACTION * spec.timeout_s)
    deadline_s = max(1.0, spec.timeout_s - spent_s - margin_s)
    with tempfile.TemporaryDirectory(prefix="torchbenchmark-ddp-") as folder:
        scratch = Path(folder)
        request = CaseRequest(spec, str(Path(out_dir).resolve()), scratch=folder)
        command = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc-per-node={spec.world_size}",
            "--max-restarts=0",
            "-m",
            RANK_MODULE,
            "--request",
            request.to_json(),
        ]
        log.info("launching %d ranks: torchrun --standalone -m %s", spec.world_size, RANK_MODULE)
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_launch_environment(spec))
        report = _Tee(process.stderr)  # type: ignore[arg-type]
        report.start()
        frames: dict[int, tuple[str, str]] = {}
        try:
            returncode = _wait(process, deadline_s, scratch, spec.world_size, announce)
            frames = where_ranks_were(scratch) if returncode is None else {}
        finally:
            stop_ranks(process, scratch)
            report.join(STOP_GRACE_S)
        timings = {"total": round(time.perf_counter() - started, 3)}
        if returncode is None:
            reason = f"no result within the {spec.timeout_s:g} s timeout: {laggard(scratch, spec.world_size, frames)}; every rank killed"
            return dataclasses.replace(row, status=Status.TIMEOUT, error=reason, timings_s=timings)
        found = _read_json(result_path(scratch))
        if returncode == 0 and found is not None:
            found["timings_s"] = {**found.get("timings_s", {}), "launch": timings["total"]}
            return CaseResult.from_dict(found)
        status, reason = rank_failure(scratch, spec.world_size, returncode, exits_of(report.kept))
        return dataclasses.replace(row, status=status, error=reason, timings_s=timings)


def _wait(process: subprocess.Popen[Any], deadline_s: float, scratch: Path, world_size: int, announce: Announce) -> int | None:
    """torchrun's exit status, or None when it had not ended by the deadline; announces where the ranks are."""
    end = time.monotonic() + deadline_s
    shown = ""
    while True:
        try:
            return process.wait(timeout=max(0.0, min(POLL_S, end - time.monotonic())))
        except subprocess.TimeoutExpired:
            if time.monotonic() >= end:
                return None
        now = whereabouts(scratch, world_size)
        if now != shown:
            announce(now)
            shown = now


def whereabouts(scratch: Path, world_size: int) -> str:
    """Where the ranks are, from their status files: ``2 ranks: characterise (measuring window 2)``."""
    groups: dict[str, list[int]] = {}
    for rank in range(world_size):
        status = _read_json(status_path(scratch, rank)) or {}
        phase = str(status.get("phase", "not started"))
        detail = status.get("detail")
        groups.setdefault(f"{phase} ({detail})" if detail else phase, []).append(rank)
    if len(groups) == 1:
        return f"{world_size} ranks: {next(iter(groups))}"
    return "; ".join(f"rank{'s' if len(ranks) > 1 else ''} {','.join(map(str, ranks))} {where}" for where, ranks in groups.items())


class _Tee(threading.Thread):
    """Copies torchrun's stderr (its ranks' too) to this process's, keeping the lines of its failure report."""

    def __init__(self, stream: IO[bytes]) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.kept: list[str] = []

    def run(self) -> None:
        for line in iter(self.stream.readline, b""):
            with contextlib.suppress(OSError):
                written = 0
                while written < len(line):
                    written += os.write(2, line[written:])
            text = line.decode("utf-8", "replace")
            if REPORT_LINE.search(text) and len(self.kept) < 4 * MAX_REPORTED_RANKS:
                self.kept.append(text)


def exits_of(lines: Sequence[str]) -> Exits:
    """Each rank's exit status from torchrun's failure report, and the rank it saw fail first (None: none)."""
    codes: dict[int, int] = {}
    first, rank, in_root = None, None, False
    for line in lines:
        if "Root Cause" in line:
            in_root = True
        elif (found := re.match(r"\s*rank\s*:\s*(\d+)", line)) is not None:
            rank = int(found[1])
        elif (found := re.match(r"\s*exitcode\s*:\s*(-?\d+)", line)) is not None and rank is not None:
            codes[rank] = int(found[1])
            first = rank if in_root and first is None else first
            rank = None
    return Exits(codes, first)


def stop_ranks(process: subprocess.Popen[Any], scratch: Path) -> None:
    """Stop torchrun (it stops its ranks), then kill the session of every rank still there."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    for pid in _rank_pids(scratch).values():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def _launch_environment(spec: CaseSpec) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", str(spec.threads or cpu_share(spec.world_size)))  # as each rank sets it; torchrun warns without
    return env


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _peer_failure(reason: str) -> bool:
    """True when a rank's error says another rank went away, not what went wrong in it."""
    return any(marker in reason for marker in PEER_FAILURE_MARKERS)


def _fault(scratch: Path, rank: int) -> str | None:
    """The fatal error a rank's faulthandler wrote (a signal that killed it), in one line; None if none."""
    try:
        text = fault_path(scratch, rank).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    first = next((line.strip() for line in text.splitlines() if line.startswith("Fatal Python error")), "")
    return first or None


def rank_failure(scratch: Path, world_size: int, returncode: int, exits: Exits | None = None) -> tuple[Status, str]:
    """The status and reason of a case whose torchrun failed: the first rank that failed of its own accord.

    A rank that crashed (a signal its fault handler caught) comes first; then one whose error is its own,
    not a peer gone away, whatever the order their reports were written; then the earliest report. A rank
    that went away without a word is named with the signal torchrun saw end it (``exits``), if any.
    """
    exits = exits or Exits({}, None)
    for rank in range(world_size):
        fault = _fault(scratch, rank)
        if fault is not None:
            return Status.FAILED, f"rank {rank} crashed: {fault}"
    errors = [error for rank in range(world_size) if (error := _read_json(error_path(scratch, rank)))]
    own = [error for error in errors if not _peer_failure(str(error.get("reason", "")))]
    if own:
        first = min(own, key=lambda error: error.get("at", 0.0))
        return Status(first.get("status", "failed")), f"rank {first['rank']}: {first['reason']}"
    silent = [rank for rank in range(world_size) if not error_path(scratch, rank).exists()]
    if exits.first in silent:  # torchrun saw it fail first, and it said nothing itself
        silent = [exits.first, *(rank for rank in silent if rank != exits.first)]
    if errors and silent:  # every report is a peer's: the rank that said nothing is the one that went away
        return Status.FAILED, f"rank {silent[0]} {_went(exits.codes.get(silent[0]))} ({laggard(scratch, world_size)}; see the log)"
    if errors:
        first = min(errors, key=lambda error: error.get("at", 0.0))
        return Status(first.get("status", "failed")), f"rank {first['rank']}: {first['reason']}"
    if exits.first is not None and exits.codes.get(exits.first, 0) < 0:
        return Status.FAILED, f"rank {exits.first} {_went(exits.codes[exits.first])} ({laggard(scratch, world_size)}; see the log)"
    return Status.FAILED, f"torchrun exited with status {returncode} and no rank reported why; {laggard(scratch, world_size)} (see the log)"


def _went(code: int | None) -> str:
    """How a rank that left no report ended, from its exit status (None: not known)."""
    if code is None or code >= 0:
        return "died without a report"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    return f"was killed by {name}" + (": the system may have run out of memory" if name == "SIGKILL" else "")


def laggard(scratch: Path, world_size: int, frames: dict[int, tuple[str, str]] | None = None) -> str:
    """Which rank got least far, by the phase its status file reached and the collectives it entered; among ranks
    tied there, the one whose innermost frame (``where_ranks_were``) was outside torch, where the others waited
    for it in a collective (a rank hung inside a step, its peers in DDP's all-reduce)."""
    frames = frames or {}
    order = {phase: index for index, phase in enumerate(("not started", *PHASES))}
    reached = {}
    for rank in range(world_size):
        status = _read_json(status_path(scratch, rank)) or {}
        reached[rank] = (status.get("phase", "not started"), int(status.get("collectives", 0)))
    progress = {rank: (order.get(phase, 0), count) for rank, (phase, count) in reached.items()}
    last = min(progress, key=progress.__getitem__)
    tied = [rank for rank in progress if progress[rank] == progress[last]]
    outside = [rank for rank in tied if rank in frames and f"{os.sep}torch{os.sep}" not in frames[rank][0]]
    if len(tied) > 1 and len(outside) == 1 and all(rank in frames for rank in tied):
        tied = outside  # the others were in torch: waiting in a collective for it
    last = tied[0]
    shown = {rank: f"{phase}, {plural(count, 'collective')}" for rank, (phase, count) in reached.items()}
    others = "; ".join(f"rank {rank} {shown[rank]}" for rank in reached if rank not in tied)
    who = f"rank {last}" if len(tied) == 1 else "ranks " + " and ".join(map(str, tied))
    where = "; ".join(f"rank {rank} was at {frames[rank][1]}" for rank in sorted(frames))
    return f"{who} got least far ({shown[last]}{'; ' + others if others else ''})" + (f": {where}" if where else "")


def _model_name(spec: str) -> str:
    try:
        return meta_of(model_class(spec)).name
    except Exception:
        return spec.rpartition(":")[2] or spec
