"""One case of a sweep, from the sweep's side: its process started under a guard, watched, and turned into a row.

Whatever happens to the process (a result, a crash, a hang, a full disk) becomes the case's row; a case's
tree ends with the case, so nothing it started keeps running or writing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from torchbenchmark.measure.native_logs import case_log_environment
from torchbenchmark.results.codec import SchemaError
from torchbenchmark.results.files import write_atomic
from torchbenchmark.results.schema import CaseResult, Status
from torchbenchmark.results.spec import CaseRequest, CaseSpec
from torchbenchmark.run import guard, outdir
from torchbenchmark.run.plugins import PluginProbe
from torchbenchmark.run.progress import PhaseWatch

OUT_OF_MEMORY_KILL = "killed by SIGKILL: the system may have run out of memory; try a smaller --batch-size"
WORKER_MODULE = "torchbenchmark.run.worker"
PHASE_POLL_S = 1.0
NO_SPACE_FILE = re.compile(rb"\[Errno 28\] No space left on device: '([^'\n]{1,500})'")
OnPhase = Callable[[str, float], None]


def worker_environment(device: str) -> dict[str, str]:
    """A case process's environment: the profiler's messages go to the case's log (``measure.native_logs``)."""
    env = case_log_environment(os.environ, device)
    env.update(PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return env


def _reason(error: BaseException, path: Path | None = None) -> str:
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return f"cannot write its outputs: {os.strerror(errno.ENOSPC)} ({error.filename or path or 'its log'})"
    return f"cannot write its outputs: {error}"


def run_case(spec: CaseSpec, name: str, out_dir: Path, on_phase: OnPhase | None = None) -> CaseResult:
    """Run one case in a guarded child process and turn whatever happens to it into a row."""
    row = CaseResult.failed(spec, model=name)
    try:
        folder = outdir.make_case_dir(out_dir, name)
        log_path = outdir.inside(out_dir, folder / outdir.log_name(spec))
        partial_log = folder / f".{log_path.name}.{os.getpid()}.partial"
        sink = outdir.create_new(partial_log)
    except (OSError, ValueError) as error:  # a file of the user's where the model's folder would go is left alone
        return dataclasses.replace(row, error=_reason(error))
    result_path = outdir.result_path(folder, spec)
    row = dataclasses.replace(row, log=log_path.relative_to(out_dir).as_posix())
    request = CaseRequest(spec, str(out_dir), str(result_path), spawned_at=time.time())
    watch = PhaseWatch()
    log = guard.CappedLog(sink, watch=watch.feed)
    started = time.perf_counter()
    try:
        result = _run_worker(request, log, row, watch, on_phase)
    finally:
        log.close()
        with contextlib.suppress(OSError):
            sink.close()
        if log.error is None:
            try:
                os.replace(partial_log, log_path)
            except OSError as error:
                log.error = error
        # A log that could not be written whole (a full disk) is removed: the space goes to the cases after it.
        for leftover in (partial_log, result_path):
            with contextlib.suppress(OSError):
                leftover.unlink()
        outdir.remove_stale_in(folder)  # what the ended process was writing: its row, a trace (named with its pid)
    timings = {**result.timings_s, "total": round(time.perf_counter() - started, 3)}
    if log.error is not None:
        return dataclasses.replace(row, error=f"{_reason(log.error, log_path)}; its log was removed", log=None, timings_s=timings)
    return dataclasses.replace(result, model=name, log=row.log, timings_s=timings)  # a model it could not load is named by its spec


def _run_worker(request: CaseRequest, log: guard.CappedLog, row: CaseResult, watch: PhaseWatch, on_phase: OnPhase | None) -> CaseResult:
    write_end = log.pipe()
    try:
        child = guard.spawn(WORKER_MODULE, [request.to_json()], worker_environment(request.spec.device), write_end, write_end)
    finally:
        os.close(write_end)
    deadline = time.monotonic() + request.spec.timeout_s

    def ended(status: Status, reason: str) -> CaseResult:
        log.write(f"\n[torchbenchmark] {status}: {reason}\n")
        return dataclasses.replace(row, status=status, error=reason)

    try:
        while True:
            try:
                returncode = child.wait(timeout=max(0.0, min(PHASE_POLL_S, deadline - time.monotonic())))
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() >= deadline:
                    guard.end(child)
                    phase, seconds = watch.now()
                    return ended(
                        Status.TIMEOUT,
                        f"no result after {request.spec.timeout_s:g} s (in {phase} for {seconds:.0f} s); process tree killed",
                    )
                _show_phases(watch, on_phase)
    except BaseException:
        guard.end(child)
        log.write("\n[torchbenchmark] interrupted: process tree killed\n")
        raise
    guard.end(child)  # a child the model started can outlive it: the case's tree ends with the case
    _show_phases(watch, on_phase)  # the phases of the last poll's interval
    return _read_row(Path(request.result_path)) or ended(Status.FAILED, death_reason(returncode, log))


def _show_phases(watch: PhaseWatch, on_phase: OnPhase | None) -> None:
    """Each phase since the last poll, one shorter than the poll included, then the current one."""
    if on_phase is None:
        return
    for phase in watch.passed():
        on_phase(phase, 0.0)
    on_phase(*watch.now())


def _read_row(path: Path) -> CaseResult | None:
    try:
        return CaseResult.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, SchemaError):
        return None


def death_reason(returncode: int, log: guard.CappedLog | None = None) -> str:
    """Why a case's process ended without a result, from its exit status (and a full disk its log shows)."""
    if returncode < 0:
        try:
            signame = signal.Signals(-returncode).name
        except ValueError:  # a real-time signal has no name of its own
            signame = f"signal {-returncode}"
        return OUT_OF_MEMORY_KILL if signame == "SIGKILL" else f"process killed by {signame}"
    if log is not None and log.saw(b"No space left on device"):
        named = NO_SPACE_FILE.findall(bytes(log.last))  # the file Python's error names, the last one said
        where = named[-1].decode("utf-8", "replace") if named else "see its log"
        return f"cannot write its outputs: {os.strerror(errno.ENOSPC)} ({where})"
    return f"process exited with status {returncode} before reporting a result"


def unstartable(probe: PluginProbe | None, spec: CaseSpec, name: str, out_dir: Path) -> CaseResult | None:
    """The row of a plug-in case that cannot start (its import failed, or its name is unusable), else None."""
    if probe is None or (probe.status == "ok" and probe.name_error is None):
        return None
    row = CaseResult.failed(spec, model=name)
    if probe.status == "ok":
        return dataclasses.replace(row, error=probe.name_error)
    status, error = (Status.SKIPPED, f"unavailable: {probe.error}") if probe.status == "unavailable" else (Status.FAILED, probe.error)
    error = f"plug-in {probe.spec}: {error}"  # its own spec: the class name alone may not say which file
    try:  # the import's output, tracebacks included, as the case's own log
        folder = outdir.make_case_dir(out_dir, name)
        log_path = outdir.inside(out_dir, folder / outdir.log_name(spec))
        text = f"[torchbenchmark] importing {probe.spec}\n{probe.output}\n[torchbenchmark] {status}: {error}\n"
        write_atomic(log_path, text)
        log = log_path.relative_to(out_dir).as_posix()
    except (OSError, ValueError) as write_error:
        error, log = f"{error}; its log cannot be written: {write_error}", None
    return dataclasses.replace(row, status=status, error=error[:300], log=log)
