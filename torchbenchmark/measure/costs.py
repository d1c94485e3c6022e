"""What a step costs: FLOPs, achieved FLOP/s, peak memory and throughput, counted once per case.

Counted after the timed and profiled steps: the FLOP counter and the memory profile slow the steps they
see. ``pct_of_peak`` waits for the sweep's measured peak (``analyze.costs.with_peak``).
"""

from __future__ import annotations

from typing import Any

import torch

from torchbenchmark.measure.flops import count_flops
from torchbenchmark.measure.memory import MB, measure_memory, peak_rss_mb
from torchbenchmark.results.schema import Costs


def cache_memory_mb(model: Any) -> float | None:
    """What a decode model's cache holds (its ``cache_bytes()``), in MB; None for a model without one."""
    cache_bytes = getattr(model, "cache_bytes", None)
    return cache_bytes() / MB if callable(cache_bytes) else None


def measure_costs(model: Any, mode: str, device: torch.device, batch_size: int | None, step_ms: float) -> Costs:
    """A case's costs from its median step time."""
    flops = count_flops(model, mode)
    memory = measure_memory(model, mode, device)
    return Costs(
        flops_per_step=flops.total,
        flops_by_kind=flops.by_kind,
        flops_note=flops.note,
        flops_uncounted=flops.uncounted,
        achieved_gflops=None if flops.total is None else flops.total / (step_ms * 1e6),
        peak_memory_mb=memory.peak_mb,
        state_memory_mb=memory.state_mb,
        cache_memory_mb=cache_memory_mb(model),
        memory_method=memory.method,
        peak_rss_mb=peak_rss_mb(),
        samples_per_s=None if batch_size is None else batch_size / (step_ms / 1e3),
    )
