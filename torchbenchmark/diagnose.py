"""One diagnostics case in this process: build, characterise, profile light and detailed, judge."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from tabulate import tabulate

from torchbenchmark import dispatch, safe_paths
from torchbenchmark.contract import MODES
from torchbenchmark.harness import Budget, characterise
from torchbenchmark.profiling import KINDS, run_profile, trace_name
from torchbenchmark.registry import ModelUnavailableError, meta_of, model_class
from torchbenchmark.results import CaseResult, Dispatch, StepTime
from torchbenchmark.stats import relative_change_pct
from torchbenchmark.trace_analysis import TraceSummary, summarize_trace

log = logging.getLogger(__name__)

OUT_OF_MEMORY_HINT = "out of memory; try a smaller --batch-size"


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
) -> CaseResult:
    """Diagnose ``model`` (a registered name, a plug-in spec or a model class) in ``mode`` on ``device``.

    Writes the case's traces and top-ops table under ``out_dir/<model>/`` and returns its result. A
    failure becomes the result's status and one-line error (the traceback goes to the log), never an
    exception: one bad model must not cost a sweep its other rows.

    A sweep runs each case in a fresh process set up by ``torchbenchmark.steady.steady_process``; call
    it first for in-process figures that match a sweep's.
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    budget = budget or Budget()
    torch_device = torch.device(device)
    name = model if isinstance(model, str) else getattr(model, "__name__", str(model))
    row: dict[str, Any] = {"model": name, "mode": mode, "device": torch_device.type, "batch_size": batch_size}
    timings: dict[str, float] = {}
    try:
        cls = model_class(model) if isinstance(model, str) else model
        meta = meta_of(cls)
        safe_paths.check_model_name(meta.name)  # it names the case's folder: refused before any work
        row.update(model=meta.name, family=meta.family)
        return _diagnose(cls, meta, mode, torch_device, batch_size, Path(out_dir), budget, detailed, config, top, row, timings)
    except Exception as error:  # noqa: BLE001 - every failure becomes the case's row; Ctrl-C still stops
        status, message = describe_failure(error, mode)
        log.error("%s %s %s: %s", row["model"], mode, torch_device.type, message, exc_info=status == "failed")
        return CaseResult(**row, status=status, error=message, timings_s=timings)


def describe_failure(error: BaseException, mode: str) -> tuple[str, str]:
    """The status and one-line reason for an exception raised by a case."""
    if isinstance(error, NotImplementedError):
        return "skipped", f"{mode} not supported: {_first_line(error) or 'NotImplementedError'}"
    if isinstance(error, (ModelUnavailableError, ModuleNotFoundError)):
        return "skipped", f"unavailable: {_first_line(error)}"
    text = str(error)
    if isinstance(error, MemoryError) or "out of memory" in text or "can't allocate memory" in text:
        return "failed", f"{OUT_OF_MEMORY_HINT} ({_one_line(error)})"[:300]
    return "failed", _one_line(error)[:300]


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else ""


def _one_line(error: BaseException) -> str:
    """``Type: first line of the message``, or the type alone when there is no message (a bare MemoryError)."""
    first = _first_line(error)
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


def _diagnose(
    cls: type,
    meta: Any,
    mode: str,
    device: torch.device,
    batch_size: int | None,
    out_dir: Path,
    budget: Budget,
    detailed: bool,
    config: Mapping[str, Any] | None,
    top: int,
    row: dict[str, Any],
    timings: dict[str, float],
) -> CaseResult:
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[name] = round(now - clock, 3)
        clock = now

    per_op_us = dispatch.calibrate_per_op_overhead_us(device)
    lap("calibrate")
    model = cls(device=str(device), batch_size=batch_size, **dict(config or {}))
    row["batch_size"] = _batch_size(model, meta, mode, device)
    lap("build")

    measured = characterise(model, mode, budget, device)
    timings["warmup"] = round(measured.warmup_s, 3)
    lap("characterise")
    timings["characterise"] = round(timings["characterise"] - timings["warmup"], 3)

    case_dir = safe_paths.case_dir(out_dir, meta.name)  # its name, checked, before any path is made of it
    profiles = {}
    for kind in KINDS if detailed else ("light",):
        active = budget.profiled_steps(kind, measured.steps.median_ms)
        profiles[kind] = run_profile(model, mode, device, kind, active, case_dir / trace_name(mode, device, kind))
        lap(kind)
    timings["export"] = round(sum(p.export_s for p in profiles.values()), 3)

    light = summarize_trace(profiles["light"].trace_path, top=top)
    _write_top_ops(case_dir / f"{mode}-{device.type}.top_ops.txt", light, row)
    lap("analyse")

    median_ms = measured.steps.median_ms
    fraction = dispatch.overhead_fraction(light.ops_per_step, per_op_us, median_ms)
    if light.gpu_busy_fraction is not None:  # measured, not estimated: an idle GPU waits on the CPU
        fraction = 1.0 - light.gpu_busy_fraction
    distortion = {kind: relative_change_pct(run.steps.median_ms, median_ms) for kind, run in profiles.items()}
    return CaseResult(
        **row,
        status="ok",
        step_time=StepTime(median_ms, measured.steps.iqr_ms, measured.steps.min_ms, measured.steps.n),
        light_distortion_pct=distortion["light"],
        detailed_distortion_pct=distortion.get("detailed"),
        edge_distortion_pct=measured.edge_distortion_pct,
        phases_pct=light.phases_pct if meta.annotated else None,
        dispatch=Dispatch(
            verdict=dispatch.verdict(fraction),
            overhead_fraction=fraction,
            ops_per_step=light.ops_per_step,
            median_op_us=light.median_op_us,
            per_op_overhead_us=per_op_us,
        ),
        gpu_busy_pct=None if light.gpu_busy_fraction is None else 100.0 * light.gpu_busy_fraction,
        top_ops=light.top_ops,
        traces={kind: profiles[kind].trace_path.relative_to(out_dir).as_posix() if kind in profiles else None
                for kind in KINDS},
        warmup_steps=measured.warmup_steps,
        steady=measured.steady,
        windows=measured.windows,
        window_diff_pct=measured.window_diff_pct,
        windows_agree=measured.windows_agree,
        timings_s=timings,
    )


def _batch_size(model: Any, meta: Any, mode: str, device: torch.device) -> int:
    if callable(getattr(model, "batch_size", None)):
        return model.batch_size(mode)
    return getattr(model, "batch_size", None) or meta.batch_sizes.get(device, mode)


def _write_top_ops(path: Path, summary: TraceSummary, row: dict[str, Any]) -> None:
    table = tabulate(
        [(op.name, op.self_ms_per_step, op.calls_per_step, op.pct_of_step) for op in summary.top_ops],
        headers=["op", "self ms/step", "calls/step", "% of step"],
        floatfmt=(".0f", ".3f", ".1f", ".1f"),
    )
    title = f"{row['model']} {row['mode']} {row['device']}: top ops by self time in the light profile"
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_text(f"{title}\n\n{table}\n", encoding="utf-8")
    os.replace(partial, path)
