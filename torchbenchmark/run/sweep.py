"""A sweep: many cases, each in a fresh process with a timeout, the run record and views rewritten after every case.

A case's process runs under a guard (``run.guard``), so a hung or crashed model is ended with its whole
process tree and the sweep goes on; a case whose sweep dies, even by SIGKILL, dies with it. Plug-ins are
imported only in child processes. Ctrl-C, SIGTERM or SIGHUP ends the running case, marks the cases not
yet finished ``interrupted`` and still writes the record and views. Every argument and the output folder
are checked before anything is written; the lock is taken last.
"""

from __future__ import annotations

import dataclasses
import importlib.machinery
import os
import signal
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from torchbenchmark.analyze.costs import with_peak
from torchbenchmark.analyze.pooling import combine_repeats
from torchbenchmark.measure.environment import check_device, check_ranks, collect_environment
from torchbenchmark.measure.peak import MachinePeak, measure_peak
from torchbenchmark.measure.schedstat import busy_machine
from torchbenchmark.registry import (
    ModelUnavailableError,
    UnknownModelError,
    expand_source,
    is_plugin_spec,
    list_models,
    source_of,
    unknown_model_message,
)
from torchbenchmark.report.format import console, program
from torchbenchmark.results.records import RunRecord, RunState, new_run_id, timestamp
from torchbenchmark.results.schema import FAILURES, MODES, CaseResult, Status
from torchbenchmark.results.spec import DEFAULT_OUT, PRECISIONS, CaseSpec, Compile
from torchbenchmark.run import case as case_process
from torchbenchmark.run import outdir, shard
from torchbenchmark.run.plugins import IMPORT_TIMEOUT_S, PluginProbe, probe_plugins
from torchbenchmark.run.progress import Progress

Key = tuple[str, str, str]  # (name, mode, variant): a case of this run
# A case whose processes time out or crash this many times in a row gets no more repeats.
GIVE_UP_AFTER = 3


class SweepArgumentError(ValueError):
    """An argument of :func:`run_sweep` that the command line would refuse as a usage error."""


class Interrupted(KeyboardInterrupt):
    """Raised in the sweep's process when a signal asks it to stop."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@dataclasses.dataclass(frozen=True)
class SweepOptions:
    """How a sweep runs: every case's options, as a ``CaseSpec`` template, and what only the sweep decides."""

    case: CaseSpec = CaseSpec()  # each case is this with its model, mode and variant filled in
    out_dir: Path = Path(DEFAULT_OUT)
    compile: Compile | None = None  # also run each case with its module compiled so, beside eager
    precisions: tuple[str, ...] = ()  # also run each case in each of these precisions (measure.precision)
    channels_last: bool = False  # also run each case in channels_last
    repeat: int = 1  # processes per case, interleaved across cases: the samples a comparison uses
    shard: shard.Shard | None = None  # run only this shard of the cases (run.shard)
    peak_gflops: float | None = None  # the machine's float32 peak, as the user knows it; None: measured (2 s)
    command: str | None = None  # recorded in the run record's environment
    progress: bool = True  # a bar on a terminal; False: only a line per case

    def __post_init__(self) -> None:
        if isinstance(self.repeat, bool) or not isinstance(self.repeat, int) or self.repeat < 1:
            raise ValueError(f"repeat must be at least 1, got {self.repeat!r}")
        if self.peak_gflops is not None and not (isinstance(self.peak_gflops, (int, float)) and 0 < self.peak_gflops < float("inf")):
            raise ValueError(f"peak_gflops must be a positive number of GFLOP/s, or None; got {self.peak_gflops!r}")
        if self.case.model:
            raise ValueError("SweepOptions.case is a template: leave its model empty")
        unknown = [p for p in self.precisions if p not in PRECISIONS]
        if unknown:
            raise ValueError(f"unknown precision {unknown[0]!r}; expected one of {', '.join(PRECISIONS)}")

    def cases(self, model: str, mode: str) -> list[CaseSpec]:
        """The cases of one model and mode: eager, each variant asked for alone, then, when variants of more
        than one kind are asked for, all of them together (one case per precision)."""
        eager = self.case.replace(model=model, mode=mode)
        alone = [eager.replace(compile=self.compile)] if self.compile else []
        alone += [eager.replace(precision=precision) for precision in self.precisions]
        alone += [eager.replace(channels_last=True)] if self.channels_last else []
        if bool(self.compile) + bool(self.precisions) + self.channels_last < 2:
            return [eager, *alone]
        together = [eager.replace(precision=p, channels_last=self.channels_last, compile=self.compile) for p in self.precisions or (None,)]
        return [eager, *alone, *together]

    def flags(self) -> dict[str, Any]:
        """What shapes every case's figures: shards of one sweep must agree on all of it to be merged."""
        recast = {"precisions": list(self.precisions), "channels_last": self.channels_last} if self.precisions or self.channels_last else {}
        return {**self.case.flags(), "repeat": self.repeat, "compile": dataclasses.asdict(self.compile) if self.compile else None, **recast}


@dataclasses.dataclass(frozen=True)
class Machinery:
    """What a sweep calls on to run its cases and size them: the real parts by default.

    A test passes its own (a runner that writes a row, a fixed peak) to run a sweep in its own process.
    """

    run_case: Callable[..., CaseResult] = case_process.run_case  # (spec, name, out_dir, on_phase) -> the case's row
    measure_peak: Callable[..., MachinePeak] = measure_peak  # (device, threads, dtype=...) -> the machine's peak
    busy_machine: Callable[[int], str | None] = busy_machine  # (threads) -> why the machine is too busy, or None
    case_costs: Callable[[], dict[tuple[str, str], float]] = shard.reference_costs  # what --shard balances by
    probe_plugins: Callable[..., dict[str, PluginProbe]] = probe_plugins  # (specs, timeout) -> each plug-in's import, in a child
    registered: Callable[[], list[str]] = list_models  # the names a sweep accepts besides plug-in specs


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
        """128 + the signal when interrupted; 1 when a case failed or timed out or the summary could not be
        written; else 0."""
        if self.interrupted_by is not None:
            return 128 + self.interrupted_by
        failed = any(r.status in FAILURES for r in self.results)
        return 1 if failed or self.summary_error else 0


def spec_of(model: str | type) -> str:
    """The spec a case's process imports ``model`` by: a name or spec as given, a class as ``module:Class``.

    A class defined in a notebook or a script's ``__main__`` lives only in this process, so a case's fresh
    process cannot import it: that is an error which says what to do instead.
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
    return f"{model.__module__ if by_name else getattr(module, '__file__', '')}:{model.__name__}"


def checked_arguments(
    models: Sequence[str | type] | str | type, modes: Sequence[str] | str, registered: Callable[[], list[str]] = list_models
) -> tuple[list[str], list[str]]:
    """The models and modes as lists, once every one is one the command line would accept."""
    models = [models] if isinstance(models, (str, type)) else models
    modes = [modes] if isinstance(modes, str) else modes
    if isinstance(models, Sequence):  # a class becomes the spec its fresh process imports
        models = [spec_of(model) if isinstance(model, type) else model for model in models]
    if not isinstance(models, Sequence) or not models or not all(isinstance(m, str) and m.strip() for m in models):
        raise SweepArgumentError(f"models must be a model name or spec, or a non-empty sequence of them; got {models!r:.80}")
    models = [name for spec in models for name in (registered() if spec == "all" else _expanded(spec))]
    for spec in models:
        if not is_plugin_spec(spec) and source_of(spec) is None and spec not in registered():
            raise SweepArgumentError(unknown_model_message(spec))
    if not isinstance(modes, Sequence) or not modes or any(mode not in MODES for mode in modes):
        raise SweepArgumentError(f"modes must be train, eval or both; got {modes!r:.80}")
    return list(dict.fromkeys(models)), list(dict.fromkeys(modes))


def _expanded(spec: str) -> list[str]:
    """A library spec or pattern (``timm:convnext*``) as the specs it names; any other spec as itself."""
    if source_of(spec) is None:
        return [spec]
    try:
        return expand_source(spec)
    except (UnknownModelError, ModelUnavailableError) as error:
        raise SweepArgumentError(str(error)) from None


def names_of(models: Sequence[str], probes: dict[str, PluginProbe]) -> dict[str, str]:
    """Each model's row name; two specs that name one model are an error naming both."""
    names = {model: probes[model].row_name if model in probes else model for model in models}
    seen: dict[str, str] = {}
    for model, name in names.items():
        if name in seen:
            unimported = [spec for spec in (seen[name], model) if spec in probes and probes[spec].status != "ok"]
            why = " (a plug-in that cannot be imported goes by its class name)" if unimported else ""
            raise SweepArgumentError(f"{seen[name]} and {model} both name the model {name!r}{why}: one name, one case")
        seen[name] = model
    return names


def run_sweep(
    models: Sequence[str | type] | str,
    modes: Sequence[str] | str = MODES,
    options: SweepOptions = SweepOptions(),
    machinery: Machinery = Machinery(),
) -> SweepOutcome:
    """Run every model x mode (x variant), each in its own process, writing traces, logs, a run record and views.

    With ``options.repeat`` N > 1, every case runs in N processes, in rounds over all cases so that a spell
    of load falls on different cases rather than on all of one case's processes; the first round profiles,
    later rounds only time steps. ``models`` are registered names, plug-in specs, or classes that a fresh
    process can import. Arguments are checked as the command line checks them: :class:`SweepArgumentError`
    for a bad one, ``outdir.OutputUnusable`` or ``outdir.OutputBusy`` for an output folder that cannot be
    used, ``StorageError`` for an unreadable record in it; a plug-in that cannot be imported is a row.
    """
    models, modes = checked_arguments(models, modes, machinery.registered)
    try:
        crowded = check_ranks(check_device(options.case.device), options.case.world_size, options.case.threads)
    except ValueError as error:
        raise SweepArgumentError(str(error)) from None
    if crowded:
        warnings.warn(crowded, stacklevel=2)
    if not str(options.out_dir).strip():
        raise SweepArgumentError("out_dir is empty; name the output folder")
    out_dir = Path(options.out_dir)
    outdir.check_usable(out_dir)
    probes = machinery.probe_plugins([m for m in models if is_plugin_spec(m)], min(IMPORT_TIMEOUT_S, options.case.timeout_s))
    unknown = [probe.error for probe in probes.values() if probe.status == "unknown"]
    if unknown:
        raise SweepArgumentError(unknown[0])
    names = names_of(models, probes)
    cases = [spec for model in models for mode in modes for spec in options.cases(model, mode)]
    shard_info: dict[str, Any] = {}
    if options.shard is not None:  # every variant of a model and mode goes to the same shard
        pairs = list(dict.fromkeys((names[spec.model], spec.mode) for spec in cases))
        mine = set(shard.select(pairs, options.shard, machinery.case_costs()))
        shard_info = {"shard": {"index": options.shard.index, "count": options.shard.count, "of_cases": len(pairs)}}
        cases = [spec for spec in cases if (names[spec.model], spec.mode) in mine]
    earlier = outdir.earlier_records(out_dir) if out_dir.is_dir() else []  # strict: a bad record stops us here
    outdir.make(out_dir)
    with outdir.locked(out_dir):
        outdir.remove_stale(out_dir)
        _say_if_busy(options.case.threads, machinery.busy_machine)  # once every check has passed: a refusal is one line
        sweep = _Sweep(options, out_dir, earlier, names, probes, machinery)
        return sweep.run(cases, {"flags": options.flags(), **shard_info})


def _say_if_busy(threads: int | None, busy_machine: Callable[[int], str | None]) -> None:
    import torch  # the peak measured next needs it anyway

    busy = busy_machine(threads or torch.get_num_threads())
    if busy:
        print(console(f"{program()}: the machine is busy ({busy}): steps other work stretches are left out, "
                      "and rows left with too few are marked contended"), file=sys.stderr)  # fmt: skip


class _Sweep:
    """One sweep's state while it runs: its record, its rows so far, and how writing them went."""

    def __init__(
        self,
        options: SweepOptions,
        out_dir: Path,
        earlier: list[RunRecord],
        names: dict[str, str],
        probes: dict[str, PluginProbe],
        machinery: Machinery,
    ) -> None:
        self.options, self.out_dir, self.names, self.probes, self.run_case = options, out_dir, names, probes, machinery.run_case
        self.earlier = [record for record in earlier if outdir.record_path(out_dir, record.run_id).exists()]
        for record in earlier:  # a summary from before run records: carried as a record of its own
            if record not in self.earlier:
                outdir.write_record(out_dir, record)
                self.earlier.append(record)
        device, threads = options.case.device, options.case.threads
        if options.peak_gflops is not None:  # the user's word, recorded as such in the environment
            self.peak = MachinePeak(options.peak_gflops, "given: --peak-gflops")
        else:  # once per sweep, on the cases' device and thread count
            self.peak = machinery.measure_peak(device, threads)
        dtypes = sorted({PRECISIONS[precision] for precision in options.precisions})  # and of each 16-bit type asked for
        self.peaks = {dtype: machinery.measure_peak(device, threads, dtype=dtype) for dtype in dtypes}
        environment = {**collect_environment(device, threads, options.command), **self.peak.environment()}
        environment.update({key: value for dtype, peak in self.peaks.items() for key, value in peak.environment(dtype).items()})
        self.record = RunRecord(new_run_id(), environment, options.command, pid=os.getpid())
        self.done: dict[Key, CaseResult] = {}  # this run's row of each case
        self.processes: dict[Key, list[CaseResult]] = {}  # and the row of each process it ran in
        self.write_error: str | None = None  # the last failed write of the record or views, said once
        self.report: Path | None = None

    def key(self, spec: CaseSpec) -> Key:
        return (self.names[spec.model], spec.mode, spec.variant)

    def save(self, state: RunState = RunState.RUNNING, not_run: tuple[tuple[str, ...], ...] = (), **extra: Any) -> None:
        """The record and the views, rewritten; a write that fails (a full disk) is said once, and the cases go on."""
        rows = tuple(dataclasses.replace(row, run_id=self.record.run_id) for row in self.done.values())
        self.record = dataclasses.replace(
            self.record,
            rows=rows,
            state=state,
            not_run=not_run,
            ended_at=None if state == RunState.RUNNING else timestamp(),
            extra={**self.record.extra, **extra},
        )
        try:
            outdir.write_record(self.out_dir, self.record)
            # The page takes seconds to draw: once, when the run ends.
            self.report = outdir.rewrite_views(
                self.out_dir, [*self.earlier, self.record], self.record.run_id, report=state != RunState.RUNNING
            )
        except OSError as error:
            message = f"cannot write the run record or summary in {self.out_dir}: {error.strerror or error}"
            if message != self.write_error:
                print(console(f"diagnostics: {message}"), file=sys.stderr, flush=True)
            self.write_error = message
        else:
            self.write_error = None

    def outcome(self, interrupted_by: int | None = None) -> SweepOutcome:
        return SweepOutcome(
            tuple(self.done.values()),
            interrupted_by,
            self.record.run_id,
            outdir.record_path(self.out_dir, self.record.run_id),
            self.report,
            self.write_error,
        )

    def run(self, cases: list[CaseSpec], extra: dict[str, Any]) -> SweepOutcome:
        progress = Progress(len(cases) * self.options.repeat, enabled=self.options.progress)
        self.save(**extra)
        try:
            for repeat in range(self.options.repeat):
                for spec in cases:
                    self.run_one(spec.replace(repeat=repeat), progress)
        except KeyboardInterrupt as stop:
            return self.interrupted(stop, cases)
        finally:
            progress.close()
        self.save(RunState.COMPLETE)
        return self.outcome()

    def run_one(self, spec: CaseSpec, progress: Progress) -> None:
        key = self.key(spec)
        earlier = self.processes.get(key, [])
        if len(earlier) >= GIVE_UP_AFTER and all(row.status in FAILURES for row in earlier[-GIVE_UP_AFTER:]):
            return  # its row already says so
        progress.start(" ".join(key))
        name = key[0]
        row = case_process.unstartable(self.probes.get(spec.model), spec, name, self.out_dir)
        row = row or self.run_case(spec, name, self.out_dir, on_phase=progress.phase)
        dtype = row.remedy.dtype if row.remedy is not None else None  # a 16-bit variant: of that type's peak
        result = with_peak(row, self.peaks.get(dtype or "", self.peak).gflops)
        self.processes[key] = [*earlier, result]
        self.done[key] = combine_repeats(self.processes[key])
        tail = self.processes[key][-GIVE_UP_AFTER:]
        if len(tail) == GIVE_UP_AFTER and all(r.status in FAILURES for r in tail) and spec.repeat < self.options.repeat - 1:
            skipped = self.options.repeat - 1 - spec.repeat
            error = f"{self.done[key].error}; {GIVE_UP_AFTER} processes in a row failed, so its last {skipped} repeats were not run"
            self.done[key] = dataclasses.replace(self.done[key], error=error)
        self.save()
        last = spec.repeat == self.options.repeat - 1
        progress.finish((self.done[key] if last else result).headline(compact=True))

    def interrupted(self, stop: KeyboardInterrupt, cases: list[CaseSpec]) -> SweepOutcome:
        signum = stop.signum if isinstance(stop, Interrupted) else int(signal.SIGINT)
        reason = f"interrupted by {signal.Signals(signum).name}"
        if len(self.done) < len(cases) and self.options.repeat == 1:  # the case that was running
            spec = cases[len(self.done)]
            self.done[self.key(spec)] = CaseResult(
                model=self.names[spec.model],
                mode=spec.mode,
                device=spec.device,
                variant=spec.variant,
                status=Status.INTERRUPTED,
                error=reason,
            )
        not_run = tuple((self.names[s.model], s.mode, s.device, s.variant) for s in cases if self.key(s) not in self.done)
        self.save(RunState.INTERRUPTED, not_run, interrupted_by=reason)
        return self.outcome(signum)
