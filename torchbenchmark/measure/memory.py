"""Peak memory of a step: the most tensor memory live during it, on its device.

- CUDA: ``torch.cuda.max_memory_allocated`` over the measured steps, its peak reset just before them.
- CPU: PyTorch's CPU allocator keeps no statistics, so the figure is the tensors live when the step
  starts (``contract.held_tensors``, each storage once) plus the highest the step's own allocations climb
  above that, from the profiler's memory events (every allocation and free the CPU allocator makes while
  it records). Neither counts memory that libraries allocate outside PyTorch's allocator (oneDNN scratch,
  Python objects), nor the process's code, so it sits well below the process's RSS; ``peak_rss_mb`` is
  that RSS high-water mark since the process started, labelled as such.
"""

from __future__ import annotations

import dataclasses
import resource
from collections.abc import Iterator
from typing import Any

import torch
from torch.autograd import DeviceType
from torch.autograd.profiler_util import MEMORY_EVENT_NAME
from torch.profiler import ProfilerActivity, profile, record_function

from torchbenchmark.contract import held_tensors
from torchbenchmark.measure.native_logs import quiet_kineto

MB = 1e6
_STEP_MARK = "torchbenchmark::memory_step"


@dataclasses.dataclass(frozen=True)
class MemoryPeak:
    peak_mb: float | None
    state_mb: float | None  # of the peak, what is live between steps (None on CUDA: not told apart)
    method: str


def _storages(tensors: Iterator[torch.Tensor], device: torch.device) -> dict[int, int]:
    """Bytes of each distinct storage on ``device`` behind ``tensors``, by its address."""
    sizes: dict[int, int] = {}
    for tensor in tensors:
        if tensor.device.type == device.type and not tensor.is_sparse and tensor.layout == torch.strided:
            storage = tensor.untyped_storage()
            sizes[storage.data_ptr()] = storage.nbytes()
    return sizes


def step_allocation_peak_bytes(model: Any, mode: str, steps: int = 2) -> int:
    """The highest the CPU allocator's live bytes climb above their level at a step's start, in the last of ``steps``.

    Read from the profiler's memory events. The first recorded step is not used: tensors allocated
    before recording began are freed in it without an event.
    """

    def mark() -> None:
        with record_function(_STEP_MARK):
            pass

    quiet_kineto()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        mark()
        getattr(model, mode)(niter=steps, step_fn=mark)
    events = sorted(
        (
            e
            for e in prof.profiler.kineto_results.events()
            if e.name() == _STEP_MARK or (e.name() == MEMORY_EVENT_NAME and e.device_type() == DeviceType.CPU)
        ),
        key=lambda e: e.start_ns(),
    )
    live = start = peak = 0
    marks = 0  # one before the first step and one after each: the last step lies after mark number `steps`
    for event in events:
        if event.name() == _STEP_MARK:
            marks += 1
            if marks == steps:
                start = peak = live
        elif marks == steps:
            live += event.nbytes()
            peak = max(peak, live)
        else:
            live += event.nbytes()
    return peak - start


def measure_memory(model: Any, mode: str, device: torch.device, steps: int = 2) -> MemoryPeak:
    """The most tensor memory live during a ``mode`` step of ``model`` on ``device`` (see the module docstring)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        getattr(model, mode)(niter=steps)
        torch.cuda.synchronize(device)
        method = f"torch.cuda.max_memory_allocated over {steps} steps, peak reset before them"
        return MemoryPeak(torch.cuda.max_memory_allocated(device) / MB, None, method)
    state = _storages(held_tensors(model, mode), device)
    step_bytes = step_allocation_peak_bytes(model, mode, steps)
    if not state:
        method = "the step's peak allocation from the profiler's memory events; no tensor found among the model's attributes"
        return MemoryPeak(step_bytes / MB, None, method)
    state_bytes = sum(state.values())
    method = "tensors live between steps + the step's peak allocation from the profiler's memory events"
    return MemoryPeak((state_bytes + step_bytes) / MB, state_bytes / MB, method)


def peak_rss_mb() -> float:
    """This process's peak resident set size since it started (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / MB
