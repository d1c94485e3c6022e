"""A sweep: many cases, each in a fresh process with a timeout, the summary rewritten after every case.

A case's process is its own session, so a hung or crashed model is killed with its whole process tree
and the sweep goes on. Ctrl-C or SIGTERM ends the running case, marks the cases not yet finished
``interrupted`` and still writes the summary. Only files this tool writes for the cases it runs are
ever replaced; a lock refuses a second sweep into the same folder while one is running.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import fcntl
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from torchbenchmark import shard, storage
from torchbenchmark.costs import measure_peak, with_peak, with_step_time
from torchbenchmark.environment import collect_environment
from torchbenchmark.registry import meta_of, model_class
from torchbenchmark.results import CaseResult, Samples, StepTime
from torchbenchmark.shard import Shard
from torchbenchmark.spec import Budget, CaseSpec, Compile
from torchbenchmark.summary import render_summary_json, render_text

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
    """How a sweep runs. The per-case fields become each case's ``CaseSpec`` (see ``spec``)."""

    out_dir: Path = Path("traces")
    device: str = "cpu"
    batch_size: int | None = None
    budget: Budget = Budget()
    timeout_s: float = 600.0  # per case, process start included
    detailed: bool = True
    threads: int | None = None  # torch intra-op threads in each case; None: torch's default
    command: str | None = None  # recorded in the run record's environment
    progress: bool = True
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
            threads=self.threads, detailed=self.detailed, timeout_s=self.timeout_s, repeat=repeat, compile=compile,
            world_size=self.world_size,
        )  # fmt: skip

    def flags(self) -> dict[str, Any]:
        """What shapes every case's figures: shards of one sweep must agree on all of it to be merged."""
        return {
            "device": self.device, "batch_size": self.batch_size, "budget": dataclasses.asdict(self.budget),
            "timeout_s": self.timeout_s, "detailed": self.detailed, "threads": self.threads,
            "repeat": self.repeat, "world_size": self.world_size,
        }  # fmt: skip


@dataclasses.dataclass(frozen=True)
class SweepOutcome:
    results: tuple[CaseResult, ...]  # this sweep's rows, in the order the cases ran
    interrupted_by: int | None = None  # the signal that stopped the sweep, if one did
    run_id: str | None = None
    record: Path | None = None  # the run record written

    @property
    def exit_status(self) -> int:
        """130 (SIGINT) or 143 (SIGTERM) when interrupted, 1 when a case failed or timed out, else 0."""
        if self.interrupted_by is not None:
            return 128 + self.interrupted_by
        return 1 if any(r.status in ("failed", "timeout") for r in self.results) else 0


def model_name(spec: str) -> str:
    """The name a model's rows and traces go under: its declared name, else the spec's class name."""
    try:
        return meta_of(model_class(spec)).name
    except Exception:  # noqa: BLE001 - the case's own process reports why it cannot load
        # Not the spec itself: a plug-in's path would put its folder outside the output folder.
        return spec.rpartition(":")[2] or spec


def run_sweep(models: Sequence[str], modes: Sequence[str], options: SweepOptions = SweepOptions()) -> SweepOutcome:
    """Run every model x mode, each in its own process, writing traces, logs, a run record and the summary.

    With ``options.repeat`` N > 1, every case runs in N processes, in rounds over all cases so that a
    spell of load falls on different cases rather than on all of one case's processes; the first
    round profiles, later rounds only time steps.
    """
    out_dir = Path(options.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    cases = [options.spec(model, mode, variant) for model in models for mode in modes for variant in options.variants]
    names = {model: model_name(model) for model in models}
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
        progress = _Progress(len(cases) * options.repeat, enabled=options.progress)

        def save(state: str = "running", not_run: tuple[tuple[str, ...], ...] = (), **extra: Any) -> None:
            nonlocal record
            ended = None if state == "running" else datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
            rows = tuple(dataclasses.replace(row, run_id=record.run_id) for row in done.values())
            record = dataclasses.replace(record, rows=rows, state=state, ended_at=ended, not_run=not_run,
                                         extra={**record.extra, **extra})  # fmt: skip
            storage.write_record(out_dir, record)
            view = storage.summary_of_records([*earlier, record], str(out_dir))
            storage.write_atomic(out_dir / storage.SUMMARY_JSON, render_summary_json(view))
            storage.write_atomic(out_dir / storage.SUMMARY_TXT, render_text(view, record.run_id))

        save(flags=options.flags(), **({"shard": shard_info} if shard_info else {}))
        try:
            for repeat in range(options.repeat):
                for case in cases:
                    key = (names[case.model], case.mode, case.variant)
                    progress.start(" ".join(key))
                    result = with_peak(_run_case(case.replace(repeat=repeat), key[0], out_dir), peak.gflops)
                    done[key] = combine_repeats(done[key], result) if repeat else result
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
                                record=out_dir / storage.RUNS_DIR / f"{record.run_id}.json")  # fmt: skip
        finally:
            progress.close()
        save("complete")
    return SweepOutcome(tuple(done.values()), run_id=record.run_id, record=out_dir / storage.RUNS_DIR / f"{record.run_id}.json")


def combine_repeats(first: CaseResult, later: CaseResult) -> CaseResult:
    """One row for a case run in several processes: the first's profile and verdict, every process's timing.

    The step time becomes the median of the processes' medians; a process that did not end ok makes
    the row that process's row, with the earlier processes' samples kept.
    """
    if first.status != "ok":
        return first
    samples = Samples(
        first.samples.process_medians_ms + later.samples.process_medians_ms,
        first.samples.window_medians_ms + later.samples.window_medians_ms,
    )
    if later.status != "ok" or later.step_time is None or first.step_time is None:
        return dataclasses.replace(later, samples=samples)
    medians = samples.process_medians_ms
    step = StepTime(
        median_ms=statistics.median(medians),
        iqr_ms=statistics.median([first.step_time.iqr_ms, later.step_time.iqr_ms]),
        min_ms=min(first.step_time.min_ms, later.step_time.min_ms),
        n=first.step_time.n + later.step_time.n,
    )
    combined = dataclasses.replace(first, step_time=step, samples=samples,
                                   windows_agree=bool(first.windows_agree and later.windows_agree))  # fmt: skip
    return with_step_time(combined, first.step_time.median_ms)  # per-second costs follow the pooled median


class _Progress:
    """A live tqdm bar with ETA on a terminal; in a log (CI), one line per case with tqdm's count and ETA."""

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

    def close(self) -> None:
        self.bar.close()


@contextlib.contextmanager
def locked(out_dir: Path) -> Iterator[None]:
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


def _worker_environment(device: str) -> dict[str, str]:
    env = dict(os.environ)
    # Kineto's errors go to the case's log on a GPU, where they say why a trace lacks GPU events; on a CPU
    # its only messages are noise about the GPU it does not need.
    kineto_level = "3" if device.startswith("cuda") else "5"
    env.update(PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", KINETO_LOG_LEVEL=kineto_level)
    return env


def _run_case(spec: CaseSpec, name: str, out_dir: Path) -> CaseResult:
    """Run one case in a child process and turn whatever happens to it into a row."""
    device = spec.device  # the full device (cuda:1) in the row's key and its files' names
    mode = spec.mode
    case_dir = out_dir / name
    try:
        case_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:  # e.g. a file of the user's where the model's folder would go: left alone
        return CaseResult(model=name, mode=mode, device=device, status="failed", error=f"cannot write its outputs: {error}")
    stem = spec.file_stem
    log_path = case_dir / (f"{stem}.log" if spec.profiles else f"{stem}.repeat{spec.repeat}.log")
    partial_log = case_dir / f".{log_path.name}.{os.getpid()}.partial"
    result_path = case_dir / f".{stem}.result.{os.getpid()}.json"
    request = {"spec": spec.to_json(), "out_dir": str(out_dir), "result_path": str(result_path), "spawned_at": time.time()}
    base = {"model": name, "mode": mode, "device": device, "variant": spec.variant, "log": log_path.relative_to(out_dir).as_posix()}
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
                env=_worker_environment(device), start_new_session=True,
            )  # fmt: skip
            try:
                returncode = process.wait(timeout=spec.timeout_s)
            except subprocess.TimeoutExpired:
                _kill_tree(process)
                return ended("timeout", f"no result after {spec.timeout_s:g} s; process tree killed")
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
        for leftover in (result_path, *case_dir.glob(f".{result_path.name}.*.partial")):
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
