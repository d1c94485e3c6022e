"""A row's per-second costs against the machine's peak, and moved to another median step time."""

from __future__ import annotations

import dataclasses

from torchbenchmark.analyze.verdict import compute_limit
from torchbenchmark.results.schema import CaseResult


def with_peak(result: CaseResult, peak_gflops: float | None) -> CaseResult:
    """``result`` with ``pct_of_peak`` against ``peak_gflops`` and the compute limit it implies."""
    costs = result.costs
    if costs is None or costs.achieved_gflops is None or not peak_gflops:
        return result
    pct = 100.0 * costs.achieved_gflops / peak_gflops
    verdict = result.dispatch.verdict if result.dispatch else None
    costs = dataclasses.replace(costs, pct_of_peak=pct, compute_limit=compute_limit(verdict, pct))
    return dataclasses.replace(result, costs=costs)


def with_step_time(result: CaseResult, measured_ms: float) -> CaseResult:
    """``result``'s per-second costs, measured against ``measured_ms``, moved to its current median step time."""
    costs = result.costs
    if costs is None or result.step_time is None or result.step_time.median_ms == measured_ms:
        return result
    scale = measured_ms / result.step_time.median_ms

    def scaled(value: float | None) -> float | None:
        return None if value is None else value * scale

    pct = scaled(costs.pct_of_peak)
    verdict = result.dispatch.verdict if result.dispatch else None
    costs = dataclasses.replace(
        costs,
        achieved_gflops=scaled(costs.achieved_gflops),
        pct_of_peak=pct,
        compute_limit=compute_limit(verdict, pct),
        samples_per_s=scaled(costs.samples_per_s),
    )
    return dataclasses.replace(result, costs=costs)
