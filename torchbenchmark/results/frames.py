"""Results as flat records, one per row, and as pandas DataFrames for notebooks (pandas is optional)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from torchbenchmark.results.schema import PHASES, CaseResult

# The scalar figures of a row's costs; flops_by_kind, a dict, stays out of a flat record.
COST_FIGURES = (
    "flops_per_step",
    "flops_note",
    "flops_partial",
    "achieved_gflops",
    "pct_of_peak",
    "compute_limit",
    "peak_memory_mb",
    "state_memory_mb",
    "cache_memory_mb",
    "memory_method",
    "peak_rss_mb",
    "samples_per_s",
)


def case_record(row: CaseResult) -> dict[str, Any]:
    """A row's figures as one flat dict: a column each, None where the row has no such figure."""
    step, dispatch, compiled = row.step_time, row.dispatch, row.compile
    record: dict[str, Any] = {
        "model": row.model,
        "mode": row.mode,
        "device": row.device,
        "variant": row.variant,
        "batch_size": row.batch_size,
        "status": str(row.status),
        "error": row.error,
        "family": row.family,
        "median_ms": step.median_ms if step else None,
        "iqr_ms": step.iqr_ms if step else None,
        "min_ms": step.min_ms if step else None,
        "n": step.n if step else None,
        "light_distortion_pct": row.distortion.light_pct,
        "detailed_distortion_pct": row.distortion.detailed_pct,
        "edge_distortion_pct": row.edge_distortion_pct,
        **{f"{phase}_pct": (row.phases_pct or {}).get(phase) for phase in PHASES},
        "verdict": str(dispatch.verdict) if dispatch else None,
        "overhead_fraction": dispatch.overhead_fraction if dispatch else None,
        "ops_per_step": dispatch.ops_per_step if dispatch else None,
        "median_op_us": dispatch.median_op_us if dispatch else None,
        "gpu_busy_pct": row.gpu_busy_pct,
        "steady": row.warmup.steady,
        "windows_agree": row.measurement.agree,
        "trace_light": row.traces.light,
        "trace_detailed": row.traces.detailed,
        "log": row.log,
        **{name: getattr(row.costs, name) if row.costs else None for name in COST_FIGURES},
        "speedup_vs_eager": row.speedup_vs_eager,
        "compile_time_s": compiled.compile_time_s if compiled else None,
        "graph_breaks": compiled.graph_breaks if compiled else None,
        "run_id": row.run_id,
    }
    # Figures a newer version wrote that this one keeps among a row's unknown keys: their scalars only.
    record.update({key: value for key, value in row.extra.items() if isinstance(value, (int, float, str, bool))})
    return record


def dataframe(records: Iterable[dict[str, Any]]) -> Any:
    """A pandas DataFrame of flat records; ImportError saying how to get pandas when it is not installed."""
    try:
        import pandas
    except ImportError:
        raise ImportError("to_dataframe() needs pandas, which torchbenchmark does not require: pip install pandas") from None
    return pandas.DataFrame.from_records(list(records))
