"""The package's Python face: one case in this process, a sweep, and results read back, shown in a notebook.

``load_summary`` and ``compare`` read JSON only and run where torch is not installed; what they return
displays itself in a notebook (``_repr_html_``) as the report page does. ``collect_diagnostics`` imports
torch when it is called, not before.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from torchbenchmark.analyze import compare as comparing
from torchbenchmark.analyze.costs import with_peak
from torchbenchmark.report import page
from torchbenchmark.report.html import notebook_html
from torchbenchmark.results import records
from torchbenchmark.results.files import StorageError
from torchbenchmark.results.schema import CaseResult, Status
from torchbenchmark.results.spec import DEFAULT_OUT, CaseSpec
from torchbenchmark.run import outdir

_SPEC_FIELDS = {field.name for field in dataclasses.fields(CaseSpec)} - {"model", "mode", "repeat"}


class Summary(records.Summary):
    """What a results folder, summary.json or run record holds; in a notebook, the report's content."""

    def _repr_html_(self) -> str:
        return notebook_html(page.summary_body(self))


class Comparison(comparing.Comparison):
    """Two runs compared case by case; in a notebook, the comparison page's content."""

    def _repr_html_(self) -> str:
        return notebook_html(page.comparison_body(self))


def _shown(cls: type, value: Any) -> Any:
    return cls(**{field.name: getattr(value, field.name) for field in dataclasses.fields(value)})


def load_summary(path: str | Path, pool: bool = False) -> Summary:
    """Rows from an output folder (its run records), a summary.json, or one run record.

    ``pool`` times each case of a folder with every run that measured it alike. Raises ``StorageError``
    naming the file and the problem when it cannot be read.
    """
    return _shown(Summary, outdir.load(path, pool))  # type: ignore[no-any-return]


def compare(
    base: records.Summary | str | Path,
    new: records.Summary | str | Path,
    threshold_pct: float = comparing.DEFAULT_THRESHOLD_PCT,
    pool: bool = False,
    ops: bool = False,
    instructions_threshold_pct: float = comparing.DEFAULT_INSTRUCTIONS_THRESHOLD_PCT,
) -> Comparison:
    """Compare two results (output folders, summary.json files, run records, or loaded summaries).

    Where both sides of a case counted instructions (``--instructions``), a change past
    ``instructions_threshold_pct`` calls it slower or faster beside its wall-time call (``analyze.counts``).

    Each case called slower, faster, inconclusive or verdict changed carries the ops that moved (``ops=True``:
    every case), read from both sides' light traces. Raises ValueError when the two sides have no case in
    common; ``StorageError`` when one cannot be read.
    """
    sides = [side if isinstance(side, records.Summary) else outdir.load(side, pool) for side in (base, new)]
    comparison = comparing.compare(sides[0], sides[1], threshold_pct, instructions_threshold_pct)
    roots = (outdir.folder_of(sides[0].source), outdir.folder_of(sides[1].source))
    return _shown(Comparison, comparing.with_op_diffs(comparison, sides[0], sides[1], roots, every=ops))  # type: ignore[no-any-return]


def collect_diagnostics(
    model: str | type | CaseSpec,
    mode: str = "train",
    *,
    out_dir: str | Path = DEFAULT_OUT,
    config: Mapping[str, Any] | None = None,
    steady: bool = True,
    **options: Any,
) -> CaseResult:
    """Diagnose ``model`` in this process: a registered name, a plug-in spec, a model class, or a whole ``CaseSpec``.

    ``options`` are ``CaseSpec`` fields (``device``, ``batch_size``, ``budget``, ``detailed``, ``compile``,
    ``scaling``, ``instructions``, ``top_ops``, ``threads``, ...); with a spec, give none. The case's traces and top-ops table
    go under ``out_dir/<model>/``, and a run record of its own under ``out_dir/runs/``, so ``load_summary(out_dir)``
    reads it. A failure, a bad argument value or an output folder that cannot be used included, is the
    row's status and one-line error, never an exception; an unknown option, or a model that is none of
    those four, is a TypeError.

    ``steady=True`` first sets this process up as a sweep sets up each case's (``measure.steady``:
    denormals flushed, freed memory kept, large tensors in huge pages if no tensor was made before) and
    silences the profiler's native logging unless you set its levels; the settings stay for the process.
    """
    unknown = sorted(set(options) - _SPEC_FIELDS)
    if unknown:
        raise TypeError(
            f"collect_diagnostics() got unknown options {', '.join(unknown)}; CaseSpec fields are {', '.join(sorted(_SPEC_FIELDS))}"
        )
    if isinstance(model, CaseSpec) and (options or mode != "train"):
        raise TypeError("collect_diagnostics(spec) takes its options from the spec: give no mode or options beside it")
    if not isinstance(model, (str, type, CaseSpec)):
        raise TypeError(f"collect_diagnostics() takes a model name, plug-in spec, model class or CaseSpec, got {model!r:.80}")
    cls = model if isinstance(model, type) else None
    name = model.model if isinstance(model, CaseSpec) else model if isinstance(model, str) else f"{model.__module__}:{model.__qualname__}"
    try:
        spec = model if isinstance(model, CaseSpec) else CaseSpec(model=name, mode=mode, **options)
        if not str(out_dir).strip():
            raise ValueError("out_dir is empty; name the output folder")
    except (ValueError, TypeError) as error:
        return CaseResult(model=str(name), mode=str(mode), device=str(options.get("device", "cpu")), status=Status.FAILED, error=str(error))
    return _run_here(spec, Path(out_dir), cls, config, steady)


def _run_here(spec: CaseSpec, out_dir: Path, cls: type | None, config: Mapping[str, Any] | None, steady: bool) -> CaseResult:
    if steady:
        os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")  # read when torch is first imported: now, at the latest
    from torchbenchmark.measure.environment import check_device, check_ranks, collect_environment
    from torchbenchmark.measure.native_logs import quiet_kineto
    from torchbenchmark.measure.steady import steady_process
    from torchbenchmark.run.worker import run_in_process

    try:  # every argument and the output folder checked before any work: a bad one is the row's error
        crowded = check_ranks(check_device(spec.device), spec.world_size, spec.threads)
        outdir.check_usable(out_dir)
        if out_dir.is_dir():
            outdir.earlier_records(out_dir)  # strict: a record that cannot be read stops us here, not after the case
    except (ValueError, outdir.OutputUnusable, StorageError) as error:
        return _refused(spec, str(error))
    if crowded:
        warnings.warn(crowded, stacklevel=3)
    if steady:
        steady_process()
        quiet_kineto()
    with contextlib.ExitStack() as held:
        try:
            outdir.make(out_dir)
            held.enter_context(outdir.locked(out_dir))  # held while the case runs, as a sweep holds it
        except (outdir.OutputUnusable, outdir.OutputBusy) as error:
            return _refused(spec, str(error))
        row = run_in_process(spec, out_dir, cls=cls, config=config)
        environment = collect_environment(spec.device, spec.threads, f"collect_diagnostics({spec.model!r}, {spec.mode!r})")
        if row.costs is not None and row.costs.achieved_gflops:  # pct_of_peak, as a sweep's rows have it
            dtype = row.remedy.dtype if row.remedy is not None and row.remedy.dtype else "float32"
            peak = _peak(spec.device, spec.threads, dtype)
            environment.update(peak.environment(dtype))
            row = with_peak(row, peak.gflops)
        record = records.RunRecord(
            records.new_run_id(),
            environment,
            environment["command"],
            state=records.RunState.COMPLETE,
            ended_at=records.timestamp(),
            extra={"flags": spec.flags()},
        )
        record = dataclasses.replace(record, rows=(dataclasses.replace(row, run_id=record.run_id),))
        outdir.write_record(out_dir, record)
        outdir.rewrite_views(out_dir, outdir.read_records(out_dir), record.run_id)
    return record.rows[0]


@functools.cache
def _peak(device: str, threads: int | None, dtype: str) -> Any:
    """The machine's peak for ``dtype`` on ``device`` at ``threads``, measured once a process (2 s), as a sweep measures it once."""
    from torchbenchmark.measure.peak import measure_peak

    return measure_peak(device, threads, dtype=dtype)


def _refused(spec: CaseSpec, reason: str) -> CaseResult:
    return CaseResult.failed(spec, reason)
