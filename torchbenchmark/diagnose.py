"""One diagnostics case in this process: build, characterise, profile light and detailed, judge."""

from __future__ import annotations

import dataclasses
import logging
import statistics
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from tabulate import tabulate

from torchbenchmark import dispatch, safe_paths, variants
from torchbenchmark.contract import ModelMeta
from torchbenchmark.harness import Characterisation, characterise, device_sync, use_device
from torchbenchmark.profiling import KINDS, ProfileRun, run_profile, trace_name
from torchbenchmark.registry import ModelUnavailableError, meta_of, model_class
from torchbenchmark.results import CaseResult, CompileReport, Costs, Dispatch, GpuEvidence, Samples, Scaling, StepTime
from torchbenchmark.spec import Budget, CaseSpec, Compile
from torchbenchmark.stats import relative_change_pct
from torchbenchmark.steady import steady_process
from torchbenchmark.storage import write_atomic
from torchbenchmark.trace_analysis import TraceSummary, check_complete, overhead_events_of_trace, summarize_trace

log = logging.getLogger(__name__)

OUT_OF_MEMORY_HINT = "out of memory; try a smaller --batch-size"
# How running out of memory reads: the allocators' messages, and cuBLAS's and cuDNN's failed workspaces.
OUT_OF_MEMORY_MARKERS = ("out of memory", "can't allocate memory", "CUBLAS_STATUS_ALLOC_FAILED", "CUDNN_STATUS_ALLOC_FAILED")


def collect_diagnostics(
    model: str | type,
    mode: str = "train",
    device: str = "cpu",
    batch_size: int | None = None,
    out_dir: str | Path = "traces",
    budget: Budget | None = None,
    detailed: bool = True,
    config: Mapping[str, Any] | None = None,
    top: int = 10,
    compile: Compile | None = None,
    spec: CaseSpec | None = None,
    steady: bool = True,
    scaling: bool = False,
) -> CaseResult:
    """Diagnose ``model`` (a registered name, a plug-in spec or a model class) in ``mode`` on ``device``.

    Writes the case's traces and top-ops table under ``out_dir/<model>/`` and returns its result. A
    failure becomes the result's status and one-line error (the traceback goes to the log), never an
    exception: one bad model must not cost a sweep its other rows. ``compile`` diagnoses the model's
    module under ``torch.compile`` (a row with ``compile`` and ``speedup_vs_eager``). ``spec`` gives every option at once
    (its ``model`` is used unless ``model`` is a class); the keyword arguments build one otherwise.
    ``scaling`` adds the second overhead estimate, by batch-size scaling (``dispatch.scaling_from_steps``):
    it builds and times the model again at smaller batches.

    ``steady=True`` (the default) first sets this process up as a sweep sets up each case's, with
    ``torchbenchmark.steady.steady_process`` (denormals flushed to zero, freed memory kept by glibc's
    malloc, large tensors in huge pages if no tensor was made before), so the figures match a sweep's;
    the settings stay for the rest of the process.
    ``steady=False`` leaves the process as it is.
    """
    if steady:
        steady_process()
    cls = None if isinstance(model, str) else model
    if spec is None:
        name = model if isinstance(model, str) else f"{getattr(model, '__module__', '?')}:{getattr(model, '__qualname__', model)}"
        spec = CaseSpec(model=name, mode=mode, device=str(device), batch_size=batch_size,
                        budget=budget or Budget(), detailed=detailed, top_ops=top, compile=compile, scaling=scaling)  # fmt: skip
    return diagnose(spec, Path(out_dir), cls=cls, config=config)


def diagnose(spec: CaseSpec, out_dir: Path, cls: type | None = None, config: Mapping[str, Any] | None = None) -> CaseResult:
    """Run the case ``spec`` describes in this process: measure, analyse, then assemble its row.

    A DistributedDataParallel case (``spec.world_size`` above 1) runs its ranks in processes of
    their own, through ``torch.distributed.run``: this process only launches and waits.
    """
    if spec.distributed:
        from torchbenchmark.distributed import run_case  # a floor above: it builds on this module

        return run_case(spec, out_dir)
    torch_device = torch.device(spec.device)
    shown = spec.model if cls is None else getattr(cls, "__name__", spec.model)
    row: dict[str, Any] = {"model": shown, "mode": spec.mode, "device": str(torch_device),
                           "variant": spec.variant, "batch_size": spec.batch_size}  # fmt: skip
    timings: dict[str, float] = {}
    try:
        cls = cls or model_class(spec.model)
        meta = meta_of(cls)
        safe_paths.check_model_name(meta.name)  # it names the case's folder: refused before any work
        row.update(model=meta.name, family=meta.family)
        measured = measure(spec, cls, meta, out_dir, config, row, timings)
        if measured.profiles is None:
            return assemble(spec, measured, None, meta, out_dir, row, timings)
        started = time.perf_counter()
        analysed = analyse(spec, measured, out_dir / meta.name, row)
        timings["analyse"] = round(time.perf_counter() - started, 3)
        return assemble(spec, measured, analysed, meta, out_dir, row, timings)
    except Exception as error:  # noqa: BLE001 - every failure becomes the case's row; Ctrl-C still stops
        status, message = describe_failure(error, spec.mode)
        log.error("%s %s %s: %s", row["model"], spec.mode, row["device"], message, exc_info=status == "failed")
        return CaseResult(**row, status=status, error=message, timings_s=timings)


def describe_failure(error: BaseException, mode: str) -> tuple[str, str]:
    """The status and one-line reason for an exception raised by a case."""
    if isinstance(error, variants.NotApplicable):
        return "skipped", f"not applicable: {_first_line(error)}"
    inner = getattr(error, "inner_exception", None)  # torch.compile's BackendCompilerFailed wraps the cause
    if isinstance(inner, BaseException):
        return "failed", f"compile failed: {_one_line(inner)}"[:300]
    if isinstance(error, NotImplementedError):
        return "skipped", f"{mode} not supported: {_first_line(error) or 'NotImplementedError'}"
    if isinstance(error, (ModelUnavailableError, ModuleNotFoundError)):
        return "skipped", f"unavailable: {_first_line(error)}"
    text = str(error)
    if isinstance(error, MemoryError) or any(marker in text for marker in OUT_OF_MEMORY_MARKERS):
        return "failed", f"{OUT_OF_MEMORY_HINT} ({_one_line(error)})"[:300]
    return "failed", _one_line(error)[:300]


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else ""


def _one_line(error: BaseException) -> str:
    """``Type: first line of the message``, or the type alone when there is no message (a bare MemoryError)."""
    first = _first_line(error)
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


class _Laps:
    """Where a case's wall time goes, lap by lap, into ``timings``."""

    def __init__(self, timings: dict[str, float]) -> None:
        self.timings = timings
        self.clock = time.perf_counter()

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.timings[name] = round(now - self.clock, 3)
        self.clock = now


@dataclasses.dataclass(frozen=True)
class Measured:
    """What running the model gave: step times outside any profiler, and the profiles (None: not taken)."""

    characterisation: Characterisation
    calibration: dispatch.Calibration | None  # per-event prices on this machine (taken when profiling)
    profiles: dict[str, ProfileRun] | None
    compile: CompileReport | None = None  # a compiled variant: its cost and its speedup over eager
    costs: Costs | None = None  # taken with the profiles, once per case
    scaling_step_ms: dict[int, float] | None = None  # --scaling: median step at each smaller batch


@dataclasses.dataclass(frozen=True)
class Analysed:
    """What the light trace says, and the verdict drawn from it with the measured step time."""

    light: TraceSummary
    verdict: str
    overhead_fraction: float  # uncapped
    distortion_pct: dict[str, float]
    priced: dispatch.Estimate
    interval: tuple[float, float]
    gpu: GpuEvidence | None = None  # on a GPU: the evidence the verdict rests on
    scaling: Scaling | None = None


def measure(
    spec: CaseSpec, cls: type, meta: ModelMeta, out_dir: Path, config: Mapping[str, Any] | None,
    row: dict[str, Any], timings: dict[str, float],
) -> Measured:  # fmt: skip
    """Build the model, characterise its step time, then take its profiles (the first repeat only)."""
    device = torch.device(spec.device)
    lap = _Laps(timings)
    use_device(device)
    model = cls(device=str(device), batch_size=spec.batch_size, **dict(config or {}))
    row["batch_size"] = _batch_size(model, meta, spec.mode, device)
    lap("build")
    report = None
    if spec.compile is not None:  # the compiled module goes in place; the eager one is kept to compare
        eager, compiled, report = variants.compile_and_measure_first_step(model, spec.mode, spec.compile, device_sync(device))
        lap("compile")

    measured = characterise(model, spec.mode, spec.budget, device)
    timings["warmup"] = round(measured.warmup_s, 3)
    lap("characterise")
    timings["characterise"] = round(timings["characterise"] - timings["warmup"], 3)
    if report is not None:
        rounds = variants.interleaved_speedup(model, spec.mode, eager, compiled, measured.steps.median_ms, device_sync(device))
        report = dataclasses.replace(report, speedup_rounds=rounds)
        lap("speedup")
    if not spec.profiles:
        return Measured(measured, None, None, report)
    # Priced after the model has run: a case that fails fails fast, and the prices are taken beside the trace.
    calibration = dispatch.calibrate(device)
    lap("calibrate")

    case_dir = safe_paths.case_dir(out_dir, meta.name)  # its name, checked, before any path is made of it
    profiles = {}
    for kind in KINDS if spec.detailed else ("light",):
        active = spec.budget.profiled_steps(kind, measured.steps.median_ms)
        path = case_dir / trace_name(spec.mode, device, kind, spec.variant)
        profiles[kind] = run_profile(model, spec.mode, device, kind, active, path)
        lap(kind)
    timings["export"] = round(sum(p.export_s for p in profiles.values()), 3)
    # Counted after the timed and profiled steps: the counter and the memory profile slow the steps they see.
    from torchbenchmark.costs import measure_costs  # the FLOP counter's imports: only for a case that ran

    costs = measure_costs(model, spec.mode, device, row["batch_size"], measured.steps.median_ms)
    lap("costs")
    scaling_step_ms = None
    if spec.scaling:
        del model  # a smaller build at a time, not two models in memory
        batches = dispatch.scaling_batch_sizes(row["batch_size"])
        scaling_step_ms = {b: _median_step_ms(cls, spec, b, config) for b in batches} if len(batches) >= 2 else None
        lap("scaling")
    return Measured(measured, calibration, profiles, report, costs, scaling_step_ms)


def _median_step_ms(cls: type, spec: CaseSpec, batch_size: int, config: Mapping[str, Any] | None) -> float:
    """The median step time of a fresh build of the model at ``batch_size``, on a short budget."""
    device = torch.device(spec.device)
    model = cls(device=str(device), batch_size=batch_size, **dict(config or {}))
    return characterise(model, spec.mode, dispatch.scaling_budget(spec.budget), device).steps.median_ms


def analyse(spec: CaseSpec, measured: Measured, case_dir: Path, row: dict[str, Any]) -> Analysed:
    """Read the light trace, estimate the overhead share against the unprofiled median step time."""
    assert measured.profiles is not None and measured.calibration is not None
    device = torch.device(spec.device)
    light_path = measured.profiles["light"].trace_path
    light = summarize_trace(light_path, top=spec.top_ops)
    check_complete(light, measured.profiles["light"].steps.n, on_gpu=device.type == "cuda")
    _write_top_ops(case_dir / f"{spec.file_stem}.top_ops.txt", light, row)
    steps = measured.characterisation.steps
    median_ms = steps.median_ms
    probe_us = measured.characterisation.cold_probe_us
    detailed = measured.profiles.get("detailed")
    events = overhead_events_of_trace(light_path, shapes_path=detailed.trace_path if detailed else None)
    priced = dispatch.estimate(events, measured.calibration, median_ms, steps.iqr_ms, probe_us)
    fraction, interval = priced.fraction, priced.interval
    verdict = dispatch.verdict(fraction)
    gpu = dispatch.judge_gpu(light, median_ms) if device.type == "cuda" else None
    if gpu is not None:  # measured, not estimated: which side waits on which
        verdict, fraction = dispatch.gpu_verdict(gpu)
        interval = (fraction, fraction)
    scaling = None
    if measured.scaling_step_ms:
        scaling = dispatch.scaling_from_steps({**measured.scaling_step_ms, row["batch_size"]: median_ms}, row["batch_size"], fraction)
    distortion = {kind: relative_change_pct(run.steps.median_ms, median_ms) for kind, run in measured.profiles.items()}
    return Analysed(light, verdict, fraction, distortion, priced, interval, gpu, scaling)


def assemble(
    spec: CaseSpec, measured: Measured, analysed: Analysed | None, meta: ModelMeta, out_dir: Path,
    row: dict[str, Any], timings: dict[str, float],
) -> CaseResult:  # fmt: skip
    """The case's row: its figures, where its traces are, and how its time was spent."""
    steps = measured.characterisation
    figures: dict[str, Any] = {}
    if analysed is not None and measured.profiles is not None:
        light = analysed.light
        figures = dict(
            light_distortion_pct=analysed.distortion_pct["light"],
            detailed_distortion_pct=analysed.distortion_pct.get("detailed"),
            phases_pct=light.phases_pct if meta.annotated else None,
            dispatch=Dispatch(
                verdict=analysed.verdict,
                overhead_fraction=min(1.0, analysed.overhead_fraction),
                ops_per_step=light.ops_per_step,
                median_op_us=light.median_op_us,
                per_op_overhead_us=measured.calibration.prices.call_us if measured.calibration else 0.0,
                overhead_fraction_uncapped=analysed.overhead_fraction,
                overhead_interval=analysed.interval,
                borderline=dispatch.verdict(analysed.interval[0]) != dispatch.verdict(analysed.interval[1]),
                events_per_step=analysed.priced.events_per_step,
                prices_us=dataclasses.asdict(measured.calibration.prices) if measured.calibration else None,
                python_us_per_step=analysed.priced.python_us,
                cold_factor=analysed.priced.cold,
                scaling=analysed.scaling,
            ),
            gpu_busy_pct=None if analysed.gpu is None else analysed.gpu.busy_pct,
            gpu=analysed.gpu,
            top_ops=light.top_ops,
            traces={kind: measured.profiles[kind].trace_path.relative_to(out_dir).as_posix()
                    if kind in measured.profiles else None for kind in KINDS},  # fmt: skip
        )
    return CaseResult(
        **row,
        status="ok",
        step_time=StepTime(steps.steps.median_ms, steps.steps.iqr_ms, steps.steps.min_ms, steps.steps.n),
        edge_distortion_pct=steps.edge_distortion_pct,
        warmup_steps=steps.warmup_steps,
        steady=steps.steady,
        windows=steps.windows,
        window_diff_pct=steps.window_diff_pct,
        windows_agree=steps.windows_agree,
        samples=Samples((steps.steps.median_ms,), (steps.window_medians_ms,)),
        compile=measured.compile,
        speedup_vs_eager=statistics.median(measured.compile.speedup_rounds) if measured.compile else None,
        timings_s=timings,
        costs=measured.costs,
        **figures,
    )


def _batch_size(model: Any, meta: Any, mode: str, device: torch.device) -> int:
    if callable(getattr(model, "batch_size", None)):
        return model.batch_size(mode)
    return getattr(model, "batch_size", None) or meta.batch_sizes.get(device, mode)


def _write_top_ops(path: Path, summary: TraceSummary, row: dict[str, Any]) -> None:
    kernel = summary.gpu is not None  # on a GPU, the kernel time each op launched too
    table = tabulate(
        [(op.name, op.self_ms_per_step, *([op.kernel_ms_per_step] if kernel else []), op.calls_per_step, op.pct_of_step)
         for op in summary.top_ops],
        headers=["op", "self ms/step", *(["kernel ms/step"] if kernel else []), "calls/step", "% of step"],
        floatfmt=(".0f", ".3f", *([".3f"] if kernel else []), ".1f", ".1f"),
    )  # fmt: skip
    by = "self time or launched kernel time" if kernel else "self time"
    title = f"{row['model']} {row['mode']} {row['device']}: top ops by {by} in the light profile"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, f"{title}\n\n{table}\n")
