"""Results as flat records, one per row, and as pandas DataFrames for notebooks (pandas is optional)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from torchbenchmark.contract import PHASES
from torchbenchmark.results import CaseResult, Costs

# The scalar figures of a row's costs; flops_by_kind, a dict, stays out of a flat record.
COST_FIGURES = tuple(field.name for field in dataclasses.fields(Costs) if field.name != "flops_by_kind")


def case_record(row: CaseResult) -> dict[str, Any]:
    """A row's figures as one flat dict: a column each, None where the row has no such figure."""
    step, dispatch = row.step_time, row.dispatch
    record: dict[str, Any] = {
        "model": row.model, "mode": row.mode, "device": row.device, "variant": row.variant,
        "batch_size": row.batch_size, "status": row.status, "error": row.error, "family": row.family,
        "median_ms": step.median_ms if step else None, "iqr_ms": step.iqr_ms if step else None,
        "min_ms": step.min_ms if step else None, "n": step.n if step else None,
        "light_distortion_pct": row.light_distortion_pct, "detailed_distortion_pct": row.detailed_distortion_pct,
        "edge_distortion_pct": row.edge_distortion_pct,
        **{f"{phase}_pct": (row.phases_pct or {}).get(phase) for phase in PHASES},
        "verdict": dispatch.verdict if dispatch else None,
        "overhead_fraction": dispatch.overhead_fraction if dispatch else None,
        "ops_per_step": dispatch.ops_per_step if dispatch else None,
        "median_op_us": dispatch.median_op_us if dispatch else None,
        "gpu_busy_pct": row.gpu_busy_pct, "steady": row.steady, "windows_agree": row.windows_agree,
        "trace_light": row.traces.get("light"), "trace_detailed": row.traces.get("detailed"), "log": row.log,
        **{name: getattr(row.costs, name) if row.costs else None for name in COST_FIGURES},
        "speedup_vs_eager": row.speedup_vs_eager,
        "compile_time_s": row.compile.compile_time_s if row.compile else None,
        "graph_breaks": row.compile.graph_breaks if row.compile else None,
        "run_id": row.run_id,
    }  # fmt: skip
    # Figures this version keeps among a row's unknown keys (FLOPs, memory, speedup): their scalars only.
    record.update({key: value for key, value in row.extra.items() if isinstance(value, (int, float, str, bool))})
    return record


def dataframe(records: Iterable[dict[str, Any]]) -> Any:
    """A pandas DataFrame of flat records; ImportError saying how to get pandas when it is not installed."""
    try:
        import pandas
    except ImportError:
        raise ImportError("to_dataframe() needs pandas, which torchbenchmark does not require: pip install pandas") from None
    return pandas.DataFrame.from_records(list(records))
