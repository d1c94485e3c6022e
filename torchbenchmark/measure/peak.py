"""The machine's peak FLOP/s, measured once per sweep on the cases' device and thread count.

On a CPU, the better of large float32 matrix products (the BLAS: MKL or OpenBLAS) and 3x3 convolutions
(oneDNN), since either library can leave half the machine unused; on a GPU, float32 matrix products.
Each kernel's figure is the best, not the median, of as many runs as fit in its share of the time: on a
shared machine the peak is what the machine does in its quietest moment, and load only makes a kernel
slower. A row above 100% of it says the peak was measured under load. A sweep with reduced-precision
variants also measures the peak of each 16-bit type they compute in, with the same kernels in that type.
The kernels are as large as fit the time: a type the CPU has no instructions for runs a 2048-wide matrix
product in tens of seconds, so the size doubles from 256 only while the runs still fit.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch


@dataclasses.dataclass(frozen=True)
class MachinePeak:
    gflops: float
    method: str

    def environment(self, dtype: str = "float32") -> dict[str, Any]:
        """The fields a sweep records in its environment: ``peak_gflops``, or ``peak_gflops_<dtype>`` for a 16-bit type."""
        suffix = "" if dtype == "float32" else f"_{dtype}"
        return {f"peak_gflops{suffix}": self.gflops, f"peak_method{suffix}": self.method}


def measure_peak(
    device: str | torch.device = "cpu",
    threads: int | None = None,
    size: int | None = None,
    min_repeats: int = 3,
    seconds: float = 2.0,
    dtype: str = "float32",
) -> MachinePeak:
    """The best FLOP/s of ``dtype`` kernels up to ``size`` wide on ``device`` with ``threads`` intra-op threads (see above)."""
    device = torch.device(device)
    largest = size or (8192 if device.type == "cuda" else 2048)
    saved = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        size = _affordable_size(device, getattr(torch, dtype), largest, seconds / (1 + min_repeats))
        kernels = _peak_kernels(device, size, getattr(torch, dtype))
        readings = [_best_gflops(run, flops, device, min_repeats, seconds / len(kernels)) for _, run, flops in kernels]
        used = torch.get_num_threads()
    finally:
        torch.set_num_threads(saved)
    where = f"{used} thread{'' if used == 1 else 's'}" if device.type == "cpu" else torch.cuda.get_device_name(device)
    parts = [f"{name} {best:.1f} (median {median:.1f}, {n} runs)" for (name, _, _), (best, median, n) in zip(kernels, readings)]
    method = f"best of {dtype} {' and '.join(parts)} GFLOP/s on {where}"
    return MachinePeak(round(max(best for best, _, _ in readings), 1), method)


def _affordable_size(device: torch.device, dtype: torch.dtype, largest: int, seconds: float) -> int:
    """The widest power-of-two matrix product from 256 up to ``largest`` whose run is predicted to take under ``seconds``.

    Doubling the width multiplies a product's work by 8, so each width is timed (its second run, the first sets up)
    before the next is tried: the search costs about a seventh of the run it picks.
    """
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    size = min(256, largest)
    while size * 2 <= largest:
        a = torch.ones(size, size, device=device, dtype=dtype)
        torch.mm(a, a)
        sync()
        started = time.perf_counter()
        torch.mm(a, a)
        sync()
        if 8 * (time.perf_counter() - started) > seconds:
            break
        size *= 2
    return size


def _peak_kernels(device: torch.device, size: int, dtype: torch.dtype) -> list[tuple[str, Callable[[], object], int]]:
    """(name, run, FLOPs per run) of each kernel the peak is the best of."""
    generator = torch.Generator().manual_seed(0)
    a = torch.randn(size, size, generator=generator).to(device, dtype)
    b = torch.randn(size, size, generator=generator).to(device, dtype)
    kernels: list[tuple[str, Callable[[], object], int]] = [(f"torch.mm {size}x{size}x{size}", lambda: torch.mm(a, b), 2 * size**3)]
    if device.type == "cpu":
        # A resnet-like layer; at the default size, 256 channels of 8 56x56 images: 30 GFLOP a run.
        channels, side, batch = max(8, size // 8), 56, 8
        x = torch.randn(batch, channels, side, side, generator=generator).to(dtype)
        w = torch.randn(channels, channels, 3, 3, generator=generator).to(dtype)
        flops = 2 * batch * channels * channels * 9 * side * side
        kernels.append(
            (f"conv2d 3x3 {channels}->{channels} {batch}x{side}x{side}", lambda: torch.nn.functional.conv2d(x, w, padding=1), flops)
        )
    return kernels


def _best_gflops(run: Callable[[], object], flops: int, device: torch.device, min_repeats: int, seconds: float) -> tuple[float, float, int]:
    """(best, median) GFLOP/s of ``run`` over as many runs as fit in ``seconds`` (at least ``min_repeats``)."""
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    run()  # the first run sets up the library's threads and buffers
    sync()
    times: list[float] = []
    deadline = time.perf_counter() + seconds
    while len(times) < min_repeats or time.perf_counter() < deadline:
        started = time.perf_counter()
        run()
        sync()
        times.append(time.perf_counter() - started)
    return flops / min(times) / 1e9, flops / statistics.median(times) / 1e9, len(times)
