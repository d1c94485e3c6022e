"""A sweep: many cases, each in a fresh process with a timeout, the summary rewritten after every case.

A case's process is its own session, so a hung or crashed model is killed with its whole process tree
and the sweep goes on. Ctrl-C or SIGTERM ends the running case, marks the cases not yet finished
``interrupted`` and still writes the summary. Only files this tool writes for the cases it runs are
ever replaced; a lock refuses a second sweep into the same folder while one is running.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import importlib.machinery
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from torchbenchmark.environment import collect_environment
from torchbenchmark.harness import Budget
from torchbenchmark.native_logs import case_log_environment
from torchbenchmark.registry import meta_of, model_class
from torchbenchmark.results import CaseResult
from torchbenchmark.summary import merge, read_rows, write_summary

LOCK_NAME = ".torchbenchmark.lock"
OUT_OF_MEMORY_KILL = "killed by SIGKILL: the system may have run out of memory; try a smaller --batch-size"


class OutputBusy(RuntimeError):
    """Another sweep holds the output folder."""


class Interrupted(KeyboardInterrupt):
    """Raised in the sweep's process when a signal asks it to stop."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@dataclasses.dataclass(frozen=True)
class SweepOptions:
    out_dir: Path = Path("traces")
    device: str = "cpu"
    batch_size: int | None = None
    budget: Budget = Budget()
    timeout_s: float = 600.0  # per case, process start included
    detailed: bool = True
    threads: int | None = None  # torch intra-op threads in each case; None: torch's default
    command: str | None = None  # recorded in the summary's environment
    progress: bool = True  # a bar on a terminal; False: only a line per case


@dataclasses.dataclass(frozen=True)
class SweepOutcome:
    results: tuple[CaseResult, ...]  # this sweep's rows, in the order the cases ran
    interrupted_by: int | None = None  # the signal that stopped the sweep, if one did

    @property
    def exit_status(self) -> int:
        """130 (SIGINT) or 143 (SIGTERM) when interrupted, 1 when a case failed or timed out, else 0."""
        if self.interrupted_by is not None:
            return 128 + self.interrupted_by
        return 1 if any(r.status in ("failed", "timeout") for r in self.results) else 0


def spec_of(model: str | type) -> str:
    """The spec a case's process imports ``model`` by: a name or spec as given, a class as ``module:Class``.

    A class defined in a notebook or a script's ``__main__`` lives only in this process, so a case's
    fresh process cannot import it: that is an error which says what to do instead.
    """
    if isinstance(model, str):
        return model
    if not isinstance(model, type):
        raise TypeError(f"run_sweep takes model names, plug-in specs or classes, got {model!r}")
    module = sys.modules.get(model.__module__)
    importable = model.__module__ != "__main__" and "<locals>" not in model.__qualname__
    if not importable or getattr(module, model.__name__, None) is not model:
        raise TypeError(
            f"run_sweep runs each case in a fresh process, which cannot import {model.__qualname__}: it is "
            f"defined in {model.__module__!r} (a notebook or a script run directly). Save the class in a file "
            f"and pass 'path/to/file.py:{model.__name__}', or run it in this process with "
            f"collect_diagnostics({model.__name__})."
        )
    # sys.path is searched, not sys.modules: a module imported from a file is there under any name.
    by_name = "." in model.__module__ or importlib.machinery.PathFinder.find_spec(model.__module__) is not None
    # A plug-in loaded from a file sits under a made-up module name: its file is what imports it.
    return f"{model.__module__ if by_name else module.__file__}:{model.__name__}"


def model_name(spec: str) -> str:
    """The name a model's rows and traces go under: its declared name, else the spec's class name."""
    try:
        return meta_of(model_class(spec)).name
    except Exception:  # noqa: BLE001 - the case's own process reports why it cannot load
        # Not the spec itself: a plug-in's path would put its folder outside the output folder.
        return spec.rpartition(":")[2] or spec


def run_sweep(models: Sequence[str | type], modes: Sequence[str], options: SweepOptions = SweepOptions()) -> SweepOutcome:
    """Run every model x mode, each in its own process, writing traces, logs and the summary.

    ``models`` are registered names, plug-in specs, or classes that a fresh process can import.
    """
    models = [spec_of(model) for model in models]
    out_dir = Path(options.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    cases = [(spec, model_name(spec), mode) for spec in models for mode in modes]
    with _locked(out_dir):
        earlier = read_rows(out_dir)
        environment = collect_environment(options.device, options.threads, options.command)
        done: list[CaseResult] = []
        progress = _Progress(len(cases), enabled=options.progress)
        try:
            for spec, name, mode in cases:
                progress.start(f"{name} {mode}")
                result = _run_case(spec, name, mode, options)
                done.append(result)
                write_summary(out_dir, merge(earlier, done), environment)
                progress.finish(result.headline())
        except KeyboardInterrupt as stop:
            signum = stop.signum if isinstance(stop, Interrupted) else signal.SIGINT
            reason = f"interrupted by {signal.Signals(signum).name}"
            for _, name, mode in cases[len(done) :]:
                done.append(CaseResult(model=name, mode=mode, device=_device_type(options), status="interrupted", error=reason))
            write_summary(out_dir, merge(earlier, done), environment)
            return SweepOutcome(tuple(done), interrupted_by=int(signum))
        finally:
            progress.close()
    return SweepOutcome(tuple(done))


class _Progress:
    """A live tqdm bar with ETA on a terminal; in a log (CI), one line per case with tqdm's count and ETA.

    Disabled (``--no-progress``), there is no bar and no ETA, and still one line per case.
    """

    def __init__(self, total: int, enabled: bool) -> None:
        self.total = total
        self.done = 0
        self.enabled = enabled
        self.live = enabled and sys.stderr.isatty()
        self.started = time.monotonic()
        self.bar = tqdm(total=total, unit="case", file=sys.stderr, disable=not self.live, dynamic_ncols=True)

    def start(self, case: str) -> None:
        self.bar.set_postfix_str(case)

    def finish(self, headline: str) -> None:
        self.done += 1
        self.bar.update()
        if self.live:
            self.bar.write(headline, file=sys.stderr)
        elif self.enabled:
            elapsed = time.monotonic() - self.started
            meter = tqdm.format_meter(self.done, self.total, elapsed, ncols=50, unit="case", ascii=True)
            print(f"{meter}  {headline}", file=sys.stderr, flush=True)
        else:
            print(f"[{self.done}/{self.total}] {headline}", file=sys.stderr, flush=True)

    def close(self) -> None:
        self.bar.close()


@contextlib.contextmanager
def _locked(out_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``out_dir`` for the sweep; refuse if another process holds it."""
    path = out_dir / LOCK_NAME
    with open(path, "a+", encoding="utf-8") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "another process"
            raise OutputBusy(f"{out_dir} is in use by another diagnostics run ({holder}); wait or choose another --out") from None
        lock.seek(0)
        lock.truncate()
        lock.write(f"pid {os.getpid()}")
        lock.flush()
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _device_type(options: SweepOptions) -> str:
    return options.device.split(":")[0]


def _worker_environment() -> dict[str, str]:
    env = case_log_environment(dict(os.environ))  # the profiler's errors go to the case's log
    env.update(PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return env


def _run_case(spec: str, name: str, mode: str, options: SweepOptions) -> CaseResult:
    """Run one case in a child process and turn whatever happens to it into a row."""
    out_dir = Path(options.out_dir)
    device = _device_type(options)
    case_dir = out_dir / name
    try:
        case_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:  # e.g. a file of the user's where the model's folder would go: left alone
        return CaseResult(model=name, mode=mode, device=device, status="failed", error=f"cannot write its outputs: {error}")
    log_path = case_dir / f"{mode}-{device}.log"
    partial_log = case_dir / f".{log_path.name}.{os.getpid()}.partial"
    result_path = case_dir / f".{mode}-{device}.result.{os.getpid()}.json"
    request = {
        "model": spec,
        "mode": mode,
        "device": options.device,
        "batch_size": options.batch_size,
        "out_dir": str(out_dir),
        "budget": dataclasses.asdict(options.budget),
        "detailed": options.detailed,
        "threads": options.threads,
        "result_path": str(result_path),
        "spawned_at": time.time(),
    }
    base = {"model": name, "mode": mode, "device": device, "log": log_path.relative_to(out_dir).as_posix()}
    started = time.perf_counter()

    def ended(status: str, reason: str) -> CaseResult:
        """The row of a case that could not report one itself."""
        log.write(f"\n[torchbenchmark] {status}: {reason}\n")
        return CaseResult(**base, status=status, error=reason, timings_s={"total": round(time.perf_counter() - started, 3)})

    try:
        with open(partial_log, "w", encoding="utf-8") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "torchbenchmark._worker", json.dumps(request)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=_worker_environment(), start_new_session=True,
            )  # fmt: skip
            try:
                returncode = process.wait(timeout=options.timeout_s)
            except subprocess.TimeoutExpired:
                _kill_tree(process)
                return ended("timeout", f"no result after {options.timeout_s:g} s; process tree killed")
            except BaseException:
                _kill_tree(process)
                log.write("\n[torchbenchmark] interrupted: process tree killed\n")
                raise
            # A child process the model started can outlive it (above all when it crashed): the
            # case's session ends with the case, so nothing it started keeps running or writing.
            _kill_tree(process)
            row = _read_row(result_path)
            if row is None:
                return ended("failed", _death_reason(returncode))
        row.update(model=name, log=base["log"])  # the worker names a model it could not load by its spec
        row.setdefault("timings_s", {})["total"] = round(time.perf_counter() - started, 3)
        return CaseResult.from_dict(row)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.replace(partial_log, log_path)
        for leftover in (result_path, result_path.with_name(result_path.name + ".partial")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()


def _kill_tree(process: subprocess.Popen[Any]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _read_row(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _death_reason(returncode: int) -> str:
    """Why a case's process ended without a result, from its exit status."""
    if returncode < 0:
        try:
            signame = signal.Signals(-returncode).name
        except ValueError:  # a real-time signal has no name of its own
            signame = f"signal {-returncode}"
        return OUT_OF_MEMORY_KILL if signame == "SIGKILL" else f"process killed by {signame}"
    return f"process exited with status {returncode} before reporting a result"
