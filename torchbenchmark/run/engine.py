"""One diagnostics case in this process: build, characterise, profile light and detailed, judge, assemble its row.

A failure becomes the row's status and one-line reason (the traceback goes to the log), never an
exception: one bad model must not cost a sweep its other rows.
"""

from __future__ import annotations

import dataclasses
import logging
import statistics
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from torchbenchmark.analyze import pricing, timesplit, verdict
from torchbenchmark.analyze.attribution import attribute_trace
from torchbenchmark.analyze.bound import bound_of
from torchbenchmark.analyze.overhead import PRICED_KINDS, SETUP_OPS, overhead_events_of_trace
from torchbenchmark.analyze.rnn import calls_rnn, with_time_steps
from torchbenchmark.analyze.scaling import scaling_batch_sizes, scaling_budget, scaling_from_steps
from torchbenchmark.analyze.stats import relative_change_pct
from torchbenchmark.analyze.steps import TraceSummary, check_complete, summarize_trace
from torchbenchmark.contract import ModelMeta
from torchbenchmark.measure import compile as compiled_variant
from torchbenchmark.measure import instructions as counting
from torchbenchmark.measure import precision as recast_variant
from torchbenchmark.measure import replay
from torchbenchmark.measure.calibration import with_rnn_prices
from torchbenchmark.measure.costs import measure_costs
from torchbenchmark.measure.harness import Characterisation, Pace, characterise, device_sync, use_device
from torchbenchmark.measure.profiling import KINDS, ProfileRun, run_profile
from torchbenchmark.measure.steady import intra_op_threads
from torchbenchmark.measure.watchdog import watchdog
from torchbenchmark.registry import meta_of, model_class
from torchbenchmark.report.tables import render_attribution, render_top_ops
from torchbenchmark.results.files import write_atomic
from torchbenchmark.results.schema import (
    Attribution,
    CaseResult,
    CompileReport,
    Costs,
    Dispatch,
    Distortion,
    GpuEvidence,
    Instructions,
    Measurement,
    RemedyReport,
    Samples,
    Scaling,
    Status,
    StepTime,
    TimeSplit,
    Traces,
    Verdict,
    Warmup,
)
from torchbenchmark.results.spec import CaseSpec
from torchbenchmark.run import outdir
from torchbenchmark.run.failures import describe_failure
from torchbenchmark.run.prices import CasePrices
from torchbenchmark.run.progress import Announce, Laps, silent

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Measured:
    """What running the model gave: step times outside any profiler, and the profiles (None: not taken)."""

    batch_size: int | None
    characterisation: Characterisation
    calibration: pricing.Calibration | None = None  # per-event prices on this machine (taken when profiling)
    profiles: dict[str, ProfileRun] | None = None
    compile: CompileReport | None = None  # a compiled variant: its cost and its speedup over eager
    costs: Costs | None = None  # taken with the profiles, once per case
    scaling_step_ms: dict[int, float] | None = None  # --scaling: median step at each smaller batch
    scaling_failed: str | None = None  # --scaling: the batch it could not run, and why
    scaling_doubts: dict[int, str] | None = None  # --scaling: the batches whose measurement is not to be trusted, and why
    remedy: RemedyReport | None = None  # a precision or layout variant: how it ran and compared with eager
    warm: replay.Warm | None = None  # the step replayed warm
    instructions: Instructions | None = None  # --instructions: the step counted under callgrind, or why not


@dataclasses.dataclass(frozen=True)
class Analysed:
    """What the light trace says, and the verdict drawn from it with the measured step time."""

    light: TraceSummary
    dispatch: Dispatch
    distortion: Distortion
    phases_pct: dict[str, float] | None  # None for a model that declares itself unannotated
    gpu: GpuEvidence | None = None  # on a GPU: the evidence the verdict rests on
    overhead_us: float = 0.0  # the estimate's overhead per step, priced from the light trace
    attribution: Attribution | None = None  # where that overhead lives (attributed)


def diagnose(
    spec: CaseSpec, out_dir: Path, cls: type | None = None, config: Mapping[str, Any] | None = None, announce: Announce = silent
) -> CaseResult:
    """Run the single-process case ``spec`` describes in this process, at its threads; ``cls`` stands for ``spec.model``."""
    name = spec.model if cls is None else getattr(cls, "__name__", spec.model)
    device, variant = str(torch.device(spec.device)), spec.variant
    row = CaseResult(model=name, mode=spec.mode, device=device, status=Status.OK, variant=variant, batch_size=spec.batch_size)
    laps = Laps(announce)
    try:
        with intra_op_threads(spec.threads):
            cls = cls or model_class(spec.model)
            meta = meta_of(cls)
            outdir.check_model_name(meta.name)  # it names the case's folder: refused before any work
            row = dataclasses.replace(row, model=meta.name, family=meta.family)
            measured = measure(spec, cls, meta, out_dir, config, laps)
            if spec.instructions and spec.profiles:  # once per case, as its profiles are (measure.instructions)
                laps.announce("counting instructions under callgrind")
                estimate = counting.Estimate(measured.characterisation.steps.median_ms, laps.timings.get("build", 0.0))
                found = counting.count_case(spec, config, estimate, spec.timeout_s - (time.perf_counter() - laps.began))
                measured = dataclasses.replace(measured, instructions=found)
                laps("instructions")
            row = dataclasses.replace(row, batch_size=measured.batch_size)
            analysed = None
            if measured.profiles is not None:
                laps.announce("analysing")
                analysed = analyse(spec, measured, out_dir, meta)
                laps("analyse")
                analysed = attributed(spec, measured, analysed, meta.name)
                laps("attribute")
            return assemble(row, measured, analysed, out_dir, laps.timings)
    except Exception as error:
        status, message = describe_failure(error, spec.mode)
        log.error("%s %s %s: %s", row.model, spec.mode, row.device, message, exc_info=status == Status.FAILED)
        return dataclasses.replace(row, status=status, error=message, timings_s=laps.timings)


def _build(cls: type, spec: CaseSpec, batch_size: int | None, config: Mapping[str, Any] | None) -> Any:
    return cls(device=str(torch.device(spec.device)), batch_size=batch_size, **dict(config or {}))


def _batch_size(model: Any, meta: ModelMeta, mode: str, device: torch.device, requested: int | None) -> int | None:
    """The batch the model runs: its own word, else the one asked for, else its declared default; None
    for a plug-in that declares none (its neutral metadata's 1 is no figure of the model's)."""
    if callable(getattr(model, "batch_size", None)):
        return int(model.batch_size(mode))
    own = getattr(model, "batch_size", None)
    if isinstance(own, int) and not isinstance(own, bool) and own > 0:
        return own
    if requested is not None or not isinstance(getattr(type(model), "meta", None), ModelMeta):
        return requested
    return meta.batch_sizes.get(device, mode)


def measure(spec: CaseSpec, cls: type, meta: ModelMeta, out_dir: Path, config: Mapping[str, Any] | None, laps: Laps) -> Measured:
    """Build the model, characterise its step time, then take its profiles and costs (the first repeat only)."""
    device = torch.device(spec.device)
    use_device(device)
    laps.announce("building")
    model = _build(cls, spec, spec.batch_size, config)
    batch_size = _batch_size(model, meta, spec.mode, device, spec.batch_size)
    laps("build")
    eager_model, remedy = None, None
    if spec.recast:  # recast in place; an eager build beside it to compare with, in turn (measure.precision)
        laps.announce("recasting, checking outputs against eager")
        eager_model, remedy = recast_variant.prepare(model, lambda: _build(cls, spec, spec.batch_size, config), spec, device_sync(device))
        laps("recast")
    report = None
    if spec.compile is not None:  # the compiled module goes in place; the eager one is kept to compare
        laps.announce("compiling")
        eager, compiled, report = compiled_variant.compile_and_measure_first_step(model, spec.mode, spec.compile, device_sync(device))
        laps("compile")
    steps = characterise(model, spec.mode, spec.budget, Pace.on(device, announce=laps.announce))
    laps.timings["warmup"] = round(steps.warmup_s, 3)
    laps("characterise")
    laps.timings["characterise"] = round(laps.timings["characterise"] - laps.timings["warmup"], 3)
    if eager_model is not None:
        laps.announce("timing eager against the variant")
        rounds = recast_variant.interleaved_speedup(eager_model, model, spec.mode, steps.steps.median_ms, device_sync(device))
        remedy = dataclasses.replace(remedy, speedup_rounds=rounds)
        eager_model = None  # let go before the profiles and costs: the peak memory is the variant's own
        laps("speedup")
    elif report is not None:
        laps.announce("timing eager against compiled")
        rounds = compiled_variant.interleaved_speedup(model, spec.mode, eager, compiled, steps.steps.median_ms, device_sync(device))
        report = dataclasses.replace(report, speedup_rounds=rounds)
        laps("speedup")
    measured = Measured(batch_size, steps, compile=report, remedy=remedy)
    if not spec.profiles:
        return measured
    return _profile(spec, model, cls, config, outdir.case_dir(out_dir, meta.name), measured, laps)


def _profile(
    spec: CaseSpec, model: Any, cls: type, config: Mapping[str, Any] | None, folder: Path, measured: Measured, laps: Laps
) -> Measured:
    """The prices, the profiles, the costs and (``--scaling``) the smaller batches' step times."""
    device = torch.device(spec.device)
    median_ms = measured.characterisation.steps.median_ms
    with laps.lap("calibrate", "calibrating"):  # after the model has run: a case that fails fails fast
        prices = CasePrices(device, spec.calibration)  # timed now, before the replay and after it
    profiles = {}
    for kind in KINDS if spec.detailed else ("light",):
        laps.announce(f"{kind} profile")
        path = folder / outdir.trace_name(outdir.spec_stem(spec), kind)
        profiles[kind] = run_profile(model, spec.mode, device, kind, spec.budget.profiled_steps(kind, median_ms), path)
        laps(kind)
    laps.timings["export"] = round(sum(p.export_s for p in profiles.values()), 3)
    laps.timings["name modules"] = round(sum(p.naming_s for p in profiles.values()), 3)
    laps.announce("costs")
    costs = measure_costs(model, spec.mode, device, measured.batch_size, median_ms)
    laps("costs")
    with laps.lap("calibrate", "calibrating"):
        prices.moment()
    warm = _replayed(spec, model, folder, median_ms, laps)
    with laps.lap("calibrate", "calibrating"):
        prices.moment()
    calibration, source = prices.taken()
    log.info("%s %s: per-event prices %s", spec.model, spec.mode, source)
    if calls_rnn(profiles["light"].trace_path):
        laps.announce("pricing its RNN layers")
        calibration = with_rnn_prices(calibration, device, train=spec.mode == "train")
        laps("rnn prices")
    scaling_step_ms, scaling_failed, doubts = None, None, None
    batches = scaling_batch_sizes(measured.batch_size or 1, up=meta_of(cls).scale_batch_up) if spec.scaling else []
    if len(batches) >= 2:
        del model  # one build at a time, not two models in memory
        laps.announce("scaling")
        scaling_step_ms, scaling_failed, doubts = _scaled(cls, spec, config, batches, device, measured.batch_size or 1)
        laps("scaling")
    return dataclasses.replace(
        measured, calibration=calibration, profiles=profiles, costs=costs, scaling_step_ms=scaling_step_ms, warm=warm,
        scaling_failed=scaling_failed, scaling_doubts=doubts,
    )  # fmt: skip


def _scaled(
    cls: type, spec: CaseSpec, config: Mapping[str, Any] | None, batches: list[int], device: torch.device, own: int
) -> tuple[dict[int, float], str | None, dict[int, str]]:
    """The median step at each of ``batches``, nearest the case's ``own`` first, up to the first that fails; why it failed
    (the case's figures stand whatever a batch it was not asked for does); the batches whose measurement is in doubt."""
    step_ms: dict[int, float] = {}
    doubts: dict[int, str] = {}
    for batch in sorted(batches, key=lambda b: abs(b - own)):
        try:
            taken = characterise(_build(cls, spec, batch, config), spec.mode, scaling_budget(spec.budget), Pace.on(device))
        except Exception as error:
            return step_ms, f"failed at batch {batch}: {describe_failure(error, spec.mode)[1]}", doubts
        step_ms[batch] = taken.steps.median_ms
        if not taken.windows_agree or not taken.steady:
            doubts[batch] = f"windows {taken.window_diff_pct:.0f}% apart" if not taken.windows_agree else "warm-up not steady"
    return step_ms, None, doubts


def _replayed(spec: CaseSpec, model: Any, folder: Path, median_ms: float, laps: Laps) -> replay.Warm | None:
    """The step replayed with no kernel run (``measure.replay``); None on a GPU, for a compiled step, and where
    the step cannot be replayed (the reason goes to the log)."""
    if torch.device(spec.device).type != "cpu" or spec.compile is not None:
        return None
    laps.announce("replaying the step warm")
    path = folder / f".{outdir.spec_stem(spec)}-replay{outdir.TRACE_SUFFIX}"
    deadline_s = replay.deadline_s(median_ms)
    watching = replay.Replay(deadline_s=deadline_s, watch=SETUP_OPS)
    try:
        with watchdog(deadline_s + replay.WATCHDOG_GRACE_S, replay.Abandoned):
            return replay.warm_reading(model, spec.mode, path, watching)
    except Exception as error:  # a step that refuses the mode, or checks values a replay does not keep
        log.warning("%s %s: no warm replay, the real step's gap stands: %s: %s", spec.model, spec.mode, type(error).__name__, error)
        return None
    finally:
        path.unlink(missing_ok=True)
        laps("replay")


def analyse(spec: CaseSpec, measured: Measured, out_dir: Path, meta: ModelMeta) -> Analysed:
    """Read the light trace, estimate the overhead share against the unprofiled median step time."""
    assert measured.profiles is not None and measured.calibration is not None
    on_gpu = torch.device(spec.device).type == "cuda"
    light_run, detailed = measured.profiles["light"], measured.profiles.get("detailed")
    light = summarize_trace(light_run.trace_path, top=spec.top_ops)
    check_complete(light, light_run.steps.n, on_gpu=on_gpu)
    title = f"{meta.name} {spec.mode} {spec.device}"
    write_atomic(light_run.trace_path.parent / outdir.top_ops_name(outdir.spec_stem(spec)), render_top_ops(title, light))
    steps = measured.characterisation.steps
    events = overhead_events_of_trace(light_run.trace_path, light_run.steps.times_ms)
    warm, diverged = replay.trusted(measured.warm, events.mean_events("call"))
    events = with_time_steps(events, detailed.trace_path if detailed else None, warm.time_steps if warm else None)
    # The steps no other work stretched; on a CPU, what the step spent blocked (a sleep) is no overhead: read from the
    # replayed steps if any, as the real ones at two threads also wait at each op's join, inside the op, not in a gap.
    events = events.only(timesplit.kept(light_run.samples))
    events = events if on_gpu else events.less(warm.blocked_us if warm else timesplit.blocked_us(light_run.samples))
    replayed = None if warm is None else warm.events
    priced = pricing.estimate(events, measured.calibration, steps.median_ms, replayed)
    fraction, interval, judged = priced.fraction, priced.interval, verdict.verdict(priced.fraction)
    split = time_split_of(measured)
    if not on_gpu and split is not None and split.blocked_pct >= timesplit.BLOCKED_AT_PCT:
        judged = Verdict.BLOCKED  # off the CPU half the step or more: what it waits for decides its speed
    gpu = verdict.judge_gpu(light, steps.median_ms) if on_gpu else None
    if gpu is not None:  # measured, not estimated: which side waits on which
        judged, fraction = verdict.gpu_verdict(gpu)
        interval = (fraction, fraction)
    scaling = _scaling(measured, steps.median_ms, fraction)
    distortion = {kind: relative_change_pct(run.steps.median_ms, steps.median_ms) for kind, run in measured.profiles.items()}
    dispatch = Dispatch(
        verdict=judged,
        overhead_fraction=min(1.0, fraction),
        ops_per_step=light.ops_per_step,
        median_op_us=light.median_op_us,
        per_op_overhead_us=measured.calibration.prices.call_us,
        overhead_fraction_uncapped=fraction,
        overhead_interval=interval,
        borderline=verdict.borderline(interval),
        interval_note="; ".join(note for note in (diverged, pricing.NOT_REPLAYED if warm is None and not on_gpu else None) if note) or None,
        events_per_step=priced.events_per_step,
        prices_us=dataclasses.asdict(measured.calibration.prices),
        python_us_per_step=priced.python_us,
        warm_gap_us=None if warm is None else warm.gap_us,
        real_gap_us=None if on_gpu else events.least_gap_us,
        scaling=scaling,
        scaling_failed=measured.scaling_failed,
        terms_us=None if on_gpu else priced.terms_us,
        calibration_spread_pct=measured.calibration.spread_pct,
    )
    phases = light.phases_pct if meta.annotated else None
    return Analysed(light, dispatch, Distortion(distortion["light"], distortion.get("detailed")), phases, gpu, priced.overhead_us)


def attributed(spec: CaseSpec, measured: Measured, analysed: Analysed, name: str) -> Analysed:
    """``analysed`` with its estimated overhead placed in modules and lines, the table written beside the top ops."""
    assert measured.profiles is not None and measured.calibration is not None
    detailed = measured.profiles.get("detailed")
    prices = {kind: measured.calibration.prices.of(kind) for kind in PRICED_KINDS}
    try:
        found = attribute_trace(detailed and detailed.trace_path, prices, analysed.overhead_us, *(detailed.names if detailed else ()))
    except (ValueError, KeyError, TypeError, IndexError, OSError) as error:  # a trace it cannot read costs the row only this
        log.warning("%s: overhead not attributed: %s", name, error)
        found = Attribution(attribution_note=f"not attributed: the detailed trace could not be read ({type(error).__name__}: {error})")
    folder = measured.profiles["light"].trace_path.parent
    write_atomic(folder / outdir.attribution_name(outdir.spec_stem(spec)), render_attribution(f"{name} {spec.mode} {spec.device}", found))
    return dataclasses.replace(analysed, attribution=found)


def time_split_of(measured: Measured) -> TimeSplit | None:
    """What the kernel saw of the measured steps (and of the light profile's, when taken)."""
    steps = measured.characterisation
    light = (measured.profiles or {}).get("light")
    machine = steps.machine
    figures = (machine.pressure_pct, machine.other_work_pct, machine.load_average, machine.cpus) if machine else (None,) * 4
    return timesplit.time_split(steps.samples, steps.clock_method, figures, light.samples if light else ())  # fmt: skip


def _scaling(measured: Measured, median_ms: float, fraction: float) -> Scaling | None:
    if not measured.scaling_step_ms or measured.batch_size is None:
        return None
    step_ms = {**measured.scaling_step_ms, measured.batch_size: median_ms}
    return scaling_from_steps(step_ms, measured.batch_size, fraction, measured.scaling_doubts)


def _speedup(measured: Measured) -> float | None:
    """Over eager: a recast variant's rounds time the whole variant (compiled too, if so), else the compiled one's."""
    timed = measured.remedy or measured.compile
    return statistics.median(timed.speedup_rounds) if timed is not None and timed.speedup_rounds else None


def assemble(row: CaseResult, measured: Measured, analysed: Analysed | None, out_dir: Path, timings: dict[str, float]) -> CaseResult:
    """The case's row: its figures, where its traces are, and how its time was spent."""
    steps = measured.characterisation
    stats = steps.steps
    row = dataclasses.replace(
        row,
        status=Status.OK,
        step_time=StepTime(stats.median_ms, stats.iqr_ms, stats.min_ms, stats.n),
        edge_distortion_pct=steps.edge_distortion_pct,
        warmup=Warmup(steps.warmup_steps, steps.steady),
        measurement=Measurement(steps.windows, steps.window_diff_pct, steps.windows_agree),
        time_split=time_split_of(measured),
        samples=Samples((stats.median_ms,), (steps.window_medians_ms,)),
        compile=measured.compile,
        remedy=measured.remedy,
        speedup_vs_eager=_speedup(measured),
        timings_s=dict(timings),
        costs=measured.costs,
        instructions=measured.instructions,
    )
    if analysed is None or measured.profiles is None:
        return row
    traces = {kind: run.trace_path.relative_to(out_dir).as_posix() for kind, run in measured.profiles.items()}
    return dataclasses.replace(
        row,
        distortion=analysed.distortion,
        phases_pct=analysed.phases_pct,
        dispatch=analysed.dispatch,
        bound=bound_of(stats.median_ms, analysed.dispatch),
        attribution=analysed.attribution,
        gpu_busy_pct=None if analysed.gpu is None else analysed.gpu.busy_pct,
        gpu=analysed.gpu,
        top_ops=analysed.light.top_ops,
        traces=Traces(traces.get("light"), traces.get("detailed")),
    )
