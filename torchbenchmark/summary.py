"""The summary of a sweep: rendered as a table for people (summary.txt) and as JSON for programs.

Rendering returns strings and never prints. Writing is atomic (temporary name, then rename), and a
summary already in the output folder keeps the rows of cases this run did not touch.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tabulate import tabulate

from torchbenchmark.results import CaseResult

SUMMARY_TXT = "summary.txt"
SUMMARY_JSON = "summary.json"

HEADERS = [
    "model", "mode", "device", "batch", "status", "ms/step", "IQR ms", "n",
    "light %", "detailed %", "edge %", "fwd/bwd/opt %", "ops/step", "op µs", "overhead %", "verdict", "note",
]  # fmt: skip


def _number(value: float | None, digits: int) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _significant(value: float | None) -> str:
    """Step times span 0.01 ms to seconds: three significant figures, never scientific notation."""
    if value is None:
        return ""
    if abs(value) < 1:
        return f"{value:.3g}"
    return f"{value:.{max(0, 3 - len(str(int(abs(value)))))}f}"


def table_row(result: CaseResult) -> list[str]:
    step = result.step_time
    dispatch = result.dispatch
    phases = result.phases_pct
    return [
        result.model,
        result.mode,
        result.device,
        "" if result.batch_size is None else str(result.batch_size),
        result.status,
        _significant(step.median_ms if step else None),
        _significant(step.iqr_ms if step else None),
        "" if step is None else str(step.n),
        _number(result.light_distortion_pct, 1),
        _number(result.detailed_distortion_pct, 0),
        _number(result.edge_distortion_pct, 1),
        "/".join(f"{phases[p]:.0f}" for p in ("forward", "backward", "optimizer")) if phases else "",
        _number(dispatch.ops_per_step if dispatch else None, 0),
        _number(dispatch.median_op_us if dispatch else None, 1),
        _number(100 * dispatch.overhead_fraction if dispatch else None, 1),
        dispatch.verdict if dispatch else "",
        result.error or note(result),
    ]


def note(result: CaseResult) -> str:
    """Why an ok row's figure deserves less trust than the others', or nothing."""
    notes = []
    if result.steady is False:
        notes.append("warmup not steady")
    if result.windows_agree is False:
        notes.append(f"noisy: windows {result.window_diff_pct:.0f}% apart")
    return "; ".join(notes)


def render_table(results: Iterable[CaseResult]) -> str:
    """summary.txt: one row per case, sorted by model then mode."""
    rows = [table_row(r) for r in sorted(results, key=lambda r: (r.model.lower(), r.mode, r.device))]
    numeric = {"batch", "ms/step", "IQR ms", "n", "light %", "detailed %", "edge %", "ops/step", "op µs", "overhead %"}
    align = ["right" if header in numeric else "left" for header in HEADERS]
    return tabulate(rows, headers=HEADERS, tablefmt="simple", colalign=align, disable_numparse=True)


def render_text(results: Sequence[CaseResult], environment: Mapping[str, Any]) -> str:
    counts: dict[str, int] = {}
    for result in results:
        counts[result.status] = counts.get(result.status, 0) + 1
    tally = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    header = [
        f"torchbenchmark diagnostics, started {environment.get('started_at', '?')}",
        f"torch {environment.get('torch', '?')} on {environment.get('device_name', '?')}, "
        f"{environment.get('threads', '?')} threads; {len(results)} cases: {tally or 'none'}",
        "ms/step: median step time; light/detailed/edge %: how much each profile, and timing whole calls, "
        "add to it; overhead %: estimated per-op overhead share of the step (see README).",
    ]
    return "\n".join(header) + "\n\n" + render_table(results) + "\n"


def _finite(value: Any) -> Any:
    """JSON has no NaN or infinity: a figure that is not finite is written as null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def render_json(results: Sequence[CaseResult], environment: Mapping[str, Any]) -> str:
    rows = [r.to_dict() for r in sorted(results, key=lambda r: (r.model.lower(), r.mode, r.device))]
    document = {"environment": dict(environment), "results": rows}
    return json.dumps(_finite(document), indent=2, allow_nan=False) + "\n"


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a reader sees the old file or the new one, never half of one."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.unlink(missing_ok=True)  # a link left there is removed, not written through
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    finally:  # on every path: a failed write (a full disk) leaves no temporary file
        partial.unlink(missing_ok=True)


def read_rows(out_dir: Path) -> list[CaseResult]:
    """The rows of the summary.json already in ``out_dir``; none if there is none or it is unreadable."""
    try:
        data = json.loads((out_dir / SUMMARY_JSON).read_text(encoding="utf-8"))
        return [CaseResult.from_dict(row) for row in data["results"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def merge(earlier: Iterable[CaseResult], current: Iterable[CaseResult]) -> list[CaseResult]:
    """Earlier rows, with each case the current run produced replaced by its new row."""
    merged = {r.key: r for r in earlier}
    merged.update((r.key, r) for r in current)
    return list(merged.values())


def write_summary(out_dir: Path, results: Sequence[CaseResult], environment: Mapping[str, Any]) -> None:
    write_atomic(out_dir / SUMMARY_JSON, render_json(results, environment))
    write_atomic(out_dir / SUMMARY_TXT, render_text(results, environment))
