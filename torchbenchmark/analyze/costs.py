"""A row's per-second costs against the machine's peak, and its figures drawn from the step time moved to another median step."""

from __future__ import annotations

import dataclasses

from torchbenchmark.analyze.bound import bound_of
from torchbenchmark.analyze.verdict import borderline, compute_limit
from torchbenchmark.analyze.verdict import verdict as verdict_of
from torchbenchmark.results.schema import CaseResult, Verdict


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
    """``result``'s figures drawn from its step time, measured against ``measured_ms``, moved to its current
    median step (a pooled one): on a CPU the overhead's share, its interval and the verdict they give (the
    overhead is µs a step, and stays); the bound; the per-second costs. The one place they are redrawn."""
    if result.step_time is None or result.step_time.median_ms == measured_ms:
        return result
    scale = measured_ms / result.step_time.median_ms

    def scaled(value: float | None) -> float | None:
        return None if value is None else value * scale

    dispatch = result.dispatch
    if dispatch is not None and result.gpu is None:  # a GPU's share is measured, of its own step
        fraction, interval = dispatch.fraction * scale, dispatch.overhead_interval
        interval = None if interval is None else (interval[0] * scale, interval[1] * scale)
        dispatch = dataclasses.replace(
            dispatch,
            verdict=dispatch.verdict if dispatch.verdict == Verdict.BLOCKED else verdict_of(fraction),
            overhead_fraction=min(1.0, fraction),
            overhead_fraction_uncapped=fraction,
            overhead_interval=interval,
            borderline=dispatch.borderline if interval is None else borderline(interval),
        )
    result = dataclasses.replace(
        result, dispatch=dispatch, bound=None if result.bound is None else bound_of(result.step_time.median_ms, dispatch)
    )
    costs = result.costs
    if costs is None:
        return result
    pct = scaled(costs.pct_of_peak)
    costs = dataclasses.replace(
        costs,
        achieved_gflops=scaled(costs.achieved_gflops),
        pct_of_peak=pct,
        compute_limit=compute_limit(dispatch.verdict if dispatch else None, pct),
        samples_per_s=scaled(costs.samples_per_s),
    )
    return dataclasses.replace(result, costs=costs)
