"""A sweep: many cases, each in a fresh process with a timeout, the summary rewritten after every case.

A case's process runs under a guard (``torchbenchmark/process.py``), so a hung or crashed model is
ended with its whole process tree, detached descendants included, and the sweep goes on; a case whose
sweep dies, even by SIGKILL, dies with it. Plug-ins are imported only in such child processes. Ctrl-C,
SIGTERM or SIGHUP ends the running case, marks the cases not yet finished ``interrupted`` and still
writes the summary. Only files this tool writes for the cases it runs are ever replaced, each checked
to lie under the output folder; a lock refuses a second sweep into the same folder while one is running.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import fcntl
import importlib.machinery
import json
import logging
import math
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from torchbenchmark import process, safe_paths, shard, storage
from torchbenchmark.contract import MODES
from torchbenchmark.costs import measure_peak, with_peak
from torchbenchmark.environment import collect_environment
from torchbenchmark.native_logs import case_log_environment
from torchbenchmark.plugins import IMPORT_TIMEOUT_S, PluginProbe, probe_plugins
from torchbenchmark.registry import is_plugin_spec, list_models, unknown_model_message
from torchbenchmark.results import CaseResult, Samples
from torchbenchmark.shard import Shard
from torchbenchmark.spec import Budget, CaseSpec, Compile
from torchbenchmark.summary import render_summary_json, render_text

LOCK_NAME = ".torchbenchmark.lock"
logger = logging.getLogger(__name__)
OUT_OF_MEMORY_KILL = "killed by SIGKILL: the system may have run out of memory; try a smaller --batch-size"


class OutputBusy(RuntimeError):
    """Another sweep holds the output folder."""


class OutputUnusable(RuntimeError):
    """The output folder cannot be made, locked or written."""


class SweepArgumentError(ValueError):
    """An argument of :func:`run_sweep` that the command line would refuse as a usage error."""


class Interrupted(KeyboardInterrupt):
    """Raised in the sweep's process when a signal asks it to stop."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@dataclasses.dataclass(frozen=True)
class SweepOptions:
    """How a sweep runs. The per-case fields become each case's ``CaseSpec`` (see ``spec``)."""

    out_dir: Path = Path("traces")
    device: str = "cpu"
    batch_size: int | None = None
    budget: Budget = Budget()
    timeout_s: float = 600.0  # per case, process start included
    detailed: bool = True
    scaling: bool = False  # the second overhead estimate, by batch-size scaling (dispatch.scaling_estimate)
    threads: int | None = None  # torch intra-op threads in each case; None: torch's default
    command: str | None = None  # recorded in the run record's environment
    progress: bool = True  # a bar on a terminal; False: only a line per case
    repeat: int = 1  # processes per case, interleaved across cases: the samples a comparison uses
    compile: Compile | None = None  # also run each case with its module compiled so
    world_size: int = 1  # above 1: each (train) case as DistributedDataParallel with this many ranks
    shard: Shard | None = None  # run only this shard of the cases (see torchbenchmark/shard.py)

    def __post_init__(self) -> None:
        if self.repeat < 1:
            raise ValueError(f"repeat must be at least 1, got {self.repeat}")

    @property
    def variants(self) -> tuple[Compile | None, ...]:
        return (None,) if self.compile is None else (None, self.compile)

    def spec(self, model: str, mode: str, compile: Compile | None = None, repeat: int = 0) -> CaseSpec:
        return CaseSpec(
            model=model, mode=mode, device=self.device, batch_size=self.batch_size, budget=self.budget,
            threads=self.threads, detailed=self.detailed, scaling=self.scaling, timeout_s=self.timeout_s, repeat=repeat, compile=compile,
            world_size=self.world_size,
        )  # fmt: skip

    def flags(self) -> dict[str, Any]:
        """What shapes every case's figures: shards of one sweep must agree on all of it to be merged."""
        return {
            "device": self.device, "batch_size": self.batch_size, "budget": dataclasses.asdict(self.budget),
            "timeout_s": self.timeout_s, "detailed": self.detailed, "threads": self.threads,
            "repeat": self.repeat, "world_size": self.world_size, "scaling": self.scaling,
            "compile": dataclasses.asdict(self.compile) if self.compile else None,
        }  # fmt: skip


@dataclasses.dataclass(frozen=True)
class SweepOutcome:
    results: tuple[CaseResult, ...]  # this sweep's rows, in the order the cases ran
    interrupted_by: int | None = None  # the signal that stopped the sweep, if one did
    run_id: str | None = None
    record: Path | None = None  # the run record written
    report: Path | None = None  # OUT/report.html, None when it could not be written (a warning says why)
    summary_error: str | None = None  # why the record or summary could not be written, if it could not

    @property
    def exit_status(self) -> int:
        """128 + the signal (130 SIGINT, 143 SIGTERM, 129 SIGHUP) when interrupted; 1 when a case failed
        or timed out or the summary could not be written; else 0."""
        if self.interrupted_by is not None:
            return 128 + self.interrupted_by
        failed = any(r.status in ("failed", "timeout") for r in self.results)
        return 1 if failed or self.summary_error else 0


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


def run_sweep(
    models: Sequence[str | type] | str, modes: Sequence[str] | str = MODES, options: SweepOptions = SweepOptions()
) -> SweepOutcome:
    """Run every model x mode, each in its own process, writing traces, logs, a run record and the summary.

    With ``options.repeat`` N > 1, every case runs in N processes, in rounds over all cases so that a
    spell of load falls on different cases rather than on all of one case's processes; the first
    round profiles, later rounds only time steps. ``models`` are registered names, plug-in specs, or
    classes that a fresh process can import.

    Arguments are checked as the command line checks them (a str is one model spec or one mode):
    :class:`SweepArgumentError` for a bad one, :class:`OutputUnusable` or :class:`OutputBusy` for
    an output folder that cannot be used; a plug-in that cannot be imported is a row, not an error.
    """
    models, modes = _checked_arguments(models, modes, options)
    out_dir = Path(options.out_dir)
    _prepare_out_dir(out_dir)
    probes = probe_plugins([m for m in models if is_plugin_spec(m)], min(IMPORT_TIMEOUT_S, options.timeout_s))
    unknown = [probe.error for probe in probes.values() if probe.status == "unknown"]
    if unknown:
        raise SweepArgumentError(unknown[0])
    cases = [options.spec(model, mode, variant) for model in models for mode in modes for variant in options.variants]
    names = {model: probes[model].row_name if model in probes else model for model in models}
    shard_info: dict[str, Any] = {}
    if options.shard is not None:  # every variant of a model and mode goes to the same shard
        pairs = list(dict.fromkeys((names[case.model], case.mode) for case in cases))
        mine = set(shard.select(pairs, options.shard, shard.reference_costs()))
        shard_info = {"index": options.shard.index, "count": options.shard.count, "of_cases": len(pairs)}
        cases = [case for case in cases if (names[case.model], case.mode) in mine]
    with locked(out_dir):
        earlier = storage.read_records(out_dir)  # strict: an unreadable record stops us before any write
        legacy = storage.legacy_record(out_dir / storage.SUMMARY_JSON) if not earlier else None
        if legacy is not None:  # rows of a summary from before run records: carried as a record of their own
            storage.write_record(out_dir, legacy)
            earlier = [legacy]
        # The machine's peak, measured once per sweep on the cases' device and thread count: see costs.py.
        peak = measure_peak(options.device, options.threads)
        environment = {**collect_environment(options.device, options.threads, options.command), **peak.environment()}
        record = storage.RunRecord(storage.new_run_id(), environment, options.command)
        done: dict[tuple[str, str, str], CaseResult] = {}  # (name, mode, variant) -> this run's row
        processes: dict[tuple[str, str, str], list[CaseResult]] = {}  # and the row of each process it ran in
        progress = _Progress(len(cases) * options.repeat, enabled=options.progress)

        report: Path | None = None
        write_error: list[str] = []  # the last failed write of the record or summary, reported once

        def save(state: str = "running", not_run: tuple[tuple[str, ...], ...] = (), **extra: Any) -> None:
            try:
                _save(state, not_run, **extra)
            except OSError as error:  # a full disk: said in one line, and the cases go on
                message = f"cannot write the run record or summary in {out_dir}: {error.strerror or error}"
                if message not in write_error:
                    print(f"diagnostics: {message}", file=sys.stderr, flush=True)
                write_error[:] = [message]
            else:
                write_error.clear()

        def _save(state: str = "running", not_run: tuple[tuple[str, ...], ...] = (), **extra: Any) -> None:
            nonlocal record, report
            ended = None if state == "running" else datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
            rows = tuple(dataclasses.replace(row, run_id=record.run_id) for row in done.values())
            record = dataclasses.replace(record, rows=rows, state=state, ended_at=ended, not_run=not_run,
                                         extra={**record.extra, **extra})  # fmt: skip
            storage.write_record(out_dir, record)
            view = storage.summary_of_records([*earlier, record], str(out_dir))
            storage.write_atomic(out_dir / storage.SUMMARY_JSON, render_summary_json(view))
            storage.write_atomic(out_dir / storage.SUMMARY_TXT, render_text(view, record.run_id))
            if state != "running":  # the page takes seconds to draw: once, when the run ends
                report = write_report(out_dir, view)

        save(flags=options.flags(), **({"shard": shard_info} if shard_info else {}))
        try:
            for repeat in range(options.repeat):
                for case in cases:
                    key = (names[case.model], case.mode, case.variant)
                    progress.start(" ".join(key))
                    this = case.replace(repeat=repeat)
                    row = _unstartable(probes.get(case.model), this, key[0], out_dir) or _run_case(this, key[0], out_dir)
                    result = with_peak(row, peak.gflops)
                    processes[key] = [*processes.get(key, ()), result]
                    done[key] = combine_repeats(processes[key])
                    save()
                    progress.finish(done[key].headline() if repeat == options.repeat - 1 else result.headline())
        except KeyboardInterrupt as stop:
            signum = stop.signum if isinstance(stop, Interrupted) else signal.SIGINT
            reason = f"interrupted by {signal.Signals(signum).name}"
            if len(done) < len(cases) and options.repeat == 1:  # the case that was running
                case = cases[len(done)]
                done[(names[case.model], case.mode, case.variant)] = CaseResult(
                    model=names[case.model], mode=case.mode, device=case.device, variant=case.variant,
                    status="interrupted", error=reason,
                )  # fmt: skip
            not_run = tuple((names[c.model], c.mode, c.device, c.variant) for c in cases
                            if (names[c.model], c.mode, c.variant) not in done)  # fmt: skip
            save("interrupted", not_run, interrupted_by=reason)
            return SweepOutcome(tuple(done.values()), interrupted_by=int(signum), run_id=record.run_id,
                                record=out_dir / storage.RUNS_DIR / f"{record.run_id}.json",
                                summary_error=(write_error or [None])[0], report=report)  # fmt: skip
        finally:
            progress.close()
        save("complete")
    return SweepOutcome(tuple(done.values()), run_id=record.run_id, record=out_dir / storage.RUNS_DIR / f"{record.run_id}.json",
                        summary_error=(write_error or [None])[0], report=report)  # fmt: skip


def write_report(out_dir: Path, view: storage.Summary) -> Path | None:
    """OUT/report.html from the summary view; a page that cannot be drawn is a warning, never a lost sweep."""
    try:
        from torchbenchmark.report import render_report

        path = out_dir / storage.REPORT_HTML
        storage.write_atomic(path, render_report(view))
        return path
    except Exception as error:  # noqa: BLE001 - the records and summary are written; the page is a view of them
        logger.warning("report.html not written: %s: %s", type(error).__name__, error)
        return None


def _checked_arguments(
    models: Sequence[str | type] | str, modes: Sequence[str] | str, options: SweepOptions
) -> tuple[list[str], list[str]]:
    """The models and modes as lists, once every argument is one the command line would accept."""
    models = [models] if isinstance(models, (str, type)) else models
    modes = [modes] if isinstance(modes, str) else modes
    if isinstance(models, Sequence):  # a class becomes the spec its fresh process imports
        models = [spec_of(model) if isinstance(model, type) else model for model in models]
    if not isinstance(models, Sequence) or not models or not all(isinstance(m, str) and m.strip() for m in models):
        raise SweepArgumentError(f"models must be a model name or spec, or a non-empty sequence of them; got {models!r:.80}")
    models = [name for spec in models for name in (list_models() if spec == "all" else [spec])]
    for spec in models:
        if not is_plugin_spec(spec) and spec not in list_models():
            raise SweepArgumentError(unknown_model_message(spec))
    if not isinstance(modes, Sequence) or not modes or any(mode not in MODES for mode in modes):
        raise SweepArgumentError(f"modes must be train, eval or both; got {modes!r:.80}")
    _check_device(options.device)
    for field, value in (("batch_size", options.batch_size), ("threads", options.threads)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise SweepArgumentError(f"{field} must be a whole number of at least 1, or None; got {value!r}")
    timeout = options.timeout_s
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not (math.isfinite(timeout) and timeout > 0):
        raise SweepArgumentError(f"timeout_s must be a number of seconds more than 0; got {timeout!r}")
    if not str(options.out_dir).strip():
        raise SweepArgumentError("out_dir is empty; name the output folder")
    return list(dict.fromkeys(models)), list(dict.fromkeys(modes))


def _check_device(device: object) -> None:
    import torch

    if device == "cpu":
        return
    if isinstance(device, str) and (device == "cuda" or device.startswith("cuda:")):
        index = device.partition(":")[2]
        if not torch.cuda.is_available():
            raise SweepArgumentError(f"device {device}: no CUDA GPU is available here; use cpu")
        if index and (not index.isdigit() or int(index) >= torch.cuda.device_count()):
            raise SweepArgumentError(f"device {device}: there are {torch.cuda.device_count()} CUDA devices")
        return
    raise SweepArgumentError(f"unknown device {device!r}; expected cpu, cuda or cuda:N")


def _prepare_out_dir(out_dir: Path) -> None:
    """Make the output folder; refuse one where the lock or summary cannot be ours."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputUnusable(f"{out_dir}: cannot create the output folder: {error.strerror or error}") from None
    if not out_dir.is_dir():
        raise OutputUnusable(f"{out_dir}: exists and is not a folder")
    for name in (storage.SUMMARY_JSON, storage.SUMMARY_TXT, storage.REPORT_HTML, LOCK_NAME):
        path = out_dir / name
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise OutputUnusable(f"{path}: is not a file this tool wrote; move it away or choose another --out")
    runs = out_dir / storage.RUNS_DIR
    if runs.is_symlink() or (runs.exists() and not runs.is_dir()):
        raise OutputUnusable(f"{runs}: is not the folder of run records this tool writes; move it away or choose another --out")


def _unstartable(probe: PluginProbe | None, spec: CaseSpec, name: str, out_dir: Path) -> CaseResult | None:
    """The row of a plug-in case that cannot start (its import failed, or its name is unusable), else None."""
    if probe is None or (probe.status == "ok" and probe.name_error is None):
        return None
    key = {"model": name, "mode": spec.mode, "device": spec.device, "variant": spec.variant}
    if probe.status == "ok":
        return CaseResult(**key, status="failed", error=probe.name_error)
    status, error = ("skipped", f"unavailable: {probe.error}") if probe.status == "unavailable" else ("failed", probe.error)
    log = None
    try:  # the import's output, tracebacks included, as the case's log
        case_dir = safe_paths.case_dir(out_dir, name)
        case_dir.mkdir(parents=True, exist_ok=True)
        log_path = safe_paths.inside(out_dir, case_dir / f"{spec.file_stem}.log")
        partial = case_dir / f".{log_path.name}.{os.getpid()}.partial"
        try:
            with safe_paths.create_new(partial) as sink:
                text = f"[torchbenchmark] importing {probe.spec}\n{probe.output}\n[torchbenchmark] {status}: {error}\n"
                sink.write(text.encode())
            os.replace(partial, log_path)
        finally:
            partial.unlink(missing_ok=True)
        log = log_path.relative_to(out_dir).as_posix()
    except (OSError, ValueError) as write_error:
        error = f"{error}; its log cannot be written: {write_error}"
    return CaseResult(**key, status=status, error=error[:300], log=log)


def combine_repeats(processes: Sequence[CaseResult]) -> CaseResult:
    """One row for a case run in several processes, in the order they ran: the first's profile and verdict,
    every process's timing (``storage.pool_processes``).

    A process that did not end ok ends the case: the row is that process's row, with the samples of the
    processes before it kept.
    """
    first = processes[0]
    if first.status != "ok":
        return first
    for index, later in enumerate(processes[1:], start=1):
        if later.status != "ok" or later.step_time is None:
            return dataclasses.replace(later, samples=sum((p.samples for p in processes[: index + 1]), Samples()))
    return storage.pool_processes(first, processes) if len(processes) > 1 else first


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
def locked(out_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``out_dir`` for the sweep; refuse if another process holds it."""
    path = out_dir / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as error:
        raise OutputUnusable(f"{path}: cannot open the lock: {error.strerror or error}") from None
    with open(fd, "a+", encoding="utf-8") as lock:

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


def _worker_environment(device: str) -> dict[str, str]:
    # The profiler's errors and warnings go to the case's log (see native_logs.py), never the terminal.
    env = case_log_environment(dict(os.environ), device)
    env.update(PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return env


def _run_case(spec: CaseSpec, name: str, out_dir: Path) -> CaseResult:
    """Run one case in a guarded child process and turn whatever happens to it into a row."""
    device = spec.device  # the full device (cuda:1) in the row's key and its files' names
    mode = spec.mode
    try:
        case_dir = safe_paths.case_dir(out_dir, name)
        case_dir.mkdir(parents=True, exist_ok=True)
        safe_paths.inside(out_dir, case_dir)  # a link put there meanwhile
        log_name = f"{spec.file_stem}.log" if spec.profiles else f"{spec.file_stem}.repeat{spec.repeat}.log"
        log_path = safe_paths.inside(out_dir, case_dir / log_name)
        partial_log = case_dir / f".{log_path.name}.{os.getpid()}.partial"
        sink = safe_paths.create_new(partial_log)
    except (OSError, ValueError) as error:  # a file of the user's where the model's folder would go is left alone
        reason = f"cannot write its outputs: {error}"
        return CaseResult(model=name, mode=mode, device=device, variant=spec.variant, status="failed", error=reason)
    result_path = case_dir / f".{spec.file_stem}.result.{os.getpid()}.json"
    request = {"spec": spec.to_json(), "out_dir": str(out_dir), "result_path": str(result_path), "spawned_at": time.time()}
    base = {"model": name, "mode": mode, "device": device, "variant": spec.variant, "log": log_path.relative_to(out_dir).as_posix()}
    started = time.perf_counter()
    log = process.CappedLog(sink)

    def ended(status: str, reason: str) -> CaseResult:
        """The row of a case that could not report one itself."""
        log.write(f"\n[torchbenchmark] {status}: {reason}\n")
        return CaseResult(**base, status=status, error=reason, timings_s={"total": round(time.perf_counter() - started, 3)})

    try:
        result = _run_worker(request, log, spec.timeout_s, _worker_environment(device), ended)
        result.timings_s["total"] = round(time.perf_counter() - started, 3)
    finally:
        log.close()
        try:
            sink.close()
        except OSError as error:
            log.error = log.error or error
        if log.error is None:
            try:
                os.replace(partial_log, log_path)
            except OSError as error:
                log.error = error
        # A log that could not be written whole (a full disk) is removed: the space goes to the cases after it.
        partial_log.unlink(missing_ok=True)
        _remove_partials(case_dir, result_path)
    if log.error is not None:
        reason = f"cannot write its outputs: {log.error}; its log was removed"
        return CaseResult(model=name, mode=mode, device=device, variant=spec.variant, status="failed", error=reason,
                          timings_s=result.timings_s)  # fmt: skip
    return dataclasses.replace(result, model=name, log=base["log"])  # a model it could not load is named by its spec


def _run_worker(request: dict[str, Any], log: process.CappedLog, timeout_s: float, env: dict[str, str], ended: Any) -> CaseResult:
    write_end = log.pipe()
    try:
        child = process.spawn("torchbenchmark._worker", [json.dumps(request)], env, write_end, write_end)
    finally:
        os.close(write_end)
    try:
        returncode = child.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.end(child)
        return ended("timeout", f"no result after {timeout_s:g} s; process tree killed")
    except BaseException:
        process.end(child)
        log.write("\n[torchbenchmark] interrupted: process tree killed\n")
        raise
    # A child process the model started can outlive it (above all when it crashed): the case's
    # tree ends with the case, so nothing it started keeps running or writing.
    process.end(child)
    row = _read_row(Path(request["result_path"]))
    if row is None:
        return ended("failed", _death_reason(returncode))
    row.setdefault("timings_s", {})
    return CaseResult.from_dict(row)


# The temporary names this tool writes under before renaming: ".<name>.<pid>.partial", and the raw
# trace ".<trace>.gz.<pid>.json" that is gzipped into place.
_TEMPORARY = re.compile(r"\..+\.\d+\.partial|\..+\.pt\.trace\.json\.gz\.\d+\.json")


def _remove_partials(case_dir: Path, result_path: Path) -> None:
    """Temporary files of this tool left in a case's folder by a case that was killed or failed to write."""
    leftovers = [result_path, result_path.with_name(result_path.name + ".partial")]
    with contextlib.suppress(OSError):
        leftovers += [p for p in case_dir.iterdir() if _TEMPORARY.fullmatch(p.name)]
    for leftover in leftovers:
        with contextlib.suppress(OSError):
            leftover.unlink()


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
