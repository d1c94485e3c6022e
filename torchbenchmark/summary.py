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

from torchbenchmark.dispatch import COMPUTE_BOUND_BELOW, DISPATCH_BOUND_AT
from torchbenchmark.results import MIN_STEPS_FOR_SPREAD, UNTRUSTWORTHY_IQR_FRACTION, CaseResult, format_ms

SUMMARY_TXT = "summary.txt"
SUMMARY_JSON = "summary.json"

HEADERS = [
    "model", "mode", "device", "batch", "status", "ms/step", "IQR ms", "n",
    "light %", "detailed %", "edge %", "fwd/bwd/opt %", "ops/step", "op µs", "overhead %", "verdict", "note",
]  # fmt: skip


def _number(value: float | None, digits: int) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _significant(value: float | None) -> str:
    return "" if value is None else format_ms(value)


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
    """Why an ok row's figure is not to be trusted, or nothing."""
    reasons = result.untrustworthy_reasons
    return f"UNTRUSTWORTHY: {'; '.join(reasons)}" if reasons else ""


def plural(count: int, noun: str) -> str:
    """``1 case``, ``2 cases``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def render_untrustworthy(results: Iterable[CaseResult], specs: Mapping[str, str] | None = None) -> str:
    """The closing lines of a sweep: each row not to be trusted, why, and what to do; empty if none.

    ``specs`` maps a row's model name to what ``--models`` took for it (a plug-in's spec).
    """
    rows = [r for r in results if r.status == "ok" and r.untrustworthy_reasons]
    if not rows:
        return ""
    lines = [f"{plural(len(rows), 'row')} not to be trusted (marked UNTRUSTWORTHY in summary.txt):"]
    for row in rows:
        lines.append(f"  {row.model} {row.mode} {row.device}: {'; '.join(row.untrustworthy_reasons)}")
        if row.step_time is not None and row.step_time.n < MIN_STEPS_FOR_SPREAD:
            lines.append(f"    measure more steps: drop --steps, or give --steps {MIN_STEPS_FOR_SPREAD} or more")
        else:
            spec = (specs or {}).get(row.model, row.model)
            lines.append(f"    rerun it on a quieter machine: python diagnostics.py --models {spec} --modes {row.mode}")
    return "\n".join(lines)


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
        f"{environment.get('threads', '?')} threads; {plural(len(results), 'case')}: {tally or 'none'}",
    ]
    return "\n".join(header) + "\n\n" + LEGEND + "\n\n" + render_table(results) + "\n"


LEGEND = f"""\
ms/step      median step time, measured outside any profiler; IQR ms: the spread of the middle half of the steps
n            steps measured (the figures rest on these)
light %      how much slower a step is inside the light profile; detailed %: inside the detailed one
edge %       what timing a whole train/eval call adds to the step inside it. A negative percentage is a
             step measured faster there than outside: noise between the two measurements, read it as 0
fwd/bwd/opt  share of the profiled step in the forward, backward and optimizer annotations; blank for a
             model that declares itself unannotated (a GAN, RL, meta-learning), not zero
ops/step     op events per step in the light trace; op µs: median duration of a top-level op
overhead %   estimated per-op overhead share of the step; verdict: dispatch-bound at {DISPATCH_BOUND_AT:.0%} or
             more, compute-bound under {COMPUTE_BOUND_BELOW:.0%}, mixed between (README: how the verdict is decided)
note         why a case did not end ok; UNTRUSTWORTHY and why for an ok row whose figure is not to be
             trusted: warmup not steady, measurement windows that never agreed, an IQR above
             {UNTRUSTWORTHY_IQR_FRACTION:.0%} of the median, or fewer than {MIN_STEPS_FOR_SPREAD} steps. Rerun those on a quieter machine."""


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
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


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
