"""What a step costs: FLOPs, achieved FLOP/s against this machine's measured peak, peak memory and throughput.

FLOPs are counted once per case with ``torch.utils.flop_counter.FlopCounterMode`` over one whole step
(forward, backward and optimizer in train), outside the timed and profiled steps. The counter knows
matrix products, convolutions and attention, the ops that hold nearly all the arithmetic of a neural
network and the ones published figures count (a multiply-add is 2 FLOPs); elementwise ops, reductions
and the optimizer's update count nothing. A step with none of those ops has ``flops_per_step`` null,
with the reason, rather than 0; a step with a compute op the counter has no formula for keeps its count
and names the op in ``flops_note``.

Peak memory is the most tensor memory live during a step on its device:

- CUDA: ``torch.cuda.max_memory_allocated`` over the measured steps, its peak reset just before them.
- CPU: PyTorch's CPU allocator keeps no statistics, so the figure is the tensors live when the step
  starts (parameters, gradients, buffers, optimizer state, inputs and last outputs, each storage once)
  plus the highest the step's own allocations climb above that, from the profiler's memory events
  (``profile_memory``: every allocation and free the CPU allocator makes while it records). Neither
  counts memory that libraries allocate outside PyTorch's allocator (oneDNN scratch, Python objects),
  nor the process's code and libraries, so it sits well below the process's RSS. ``peak_rss_mb`` is
  that RSS high-water mark since the process started (model build included), labelled as such.

The machine's peak is measured once per sweep (:func:`measure_peak`): on a CPU the better of large
float32 matrix products and 3x3 convolutions on the cases' thread count, since the BLAS and oneDNN can
differ twofold; on a GPU, float32 matrix products on the device. ``pct_of_peak`` compares a step against it; on a
machine shared with other work the peak is only as good as the quietest moment it found, and a row above
100% says the peak was measured under load.

The verdict's evidence, read with ``pct_of_peak``: a compute-bound step (little per-op overhead) that runs
its arithmetic at under KERNEL_LIMITED_BELOW_PCT of the peak is limited by its kernels, not its op count
(memory-bound elementwise work, matrix-vector products, depthwise convolutions, small or badly shaped
matrices): better kernels, fusion or layouts help, fewer ops do not. At or above it the step is limited
by its arithmetic: only fewer FLOPs (a smaller model, lower precision) make it much faster.
"""

from __future__ import annotations

import dataclasses
import math
import re
import resource
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.autograd import DeviceType
from torch.autograd.profiler_util import MEMORY_EVENT_NAME
from torch.profiler import ProfilerActivity, profile, record_function
from torch.utils import flop_counter
from torch.utils._python_dispatch import TorchDispatchMode

from torchbenchmark.contract import iter_tensors
from torchbenchmark.results import CaseResult, Costs

KERNEL_LIMITED_BELOW_PCT = 10.0
MB = 1e6
FLOP_KINDS = ("matmul", "convolution", "attention", "recurrent", "other")
# An op whose name says it does matrix arithmetic, for naming those the counter has no formula for.
_COMPUTE_OP = re.compile(r"conv|mm$|matmul|attention|rnn|lstm|gru|linear")
_STEP_MARK = "torchbenchmark::costs_step"


@dataclasses.dataclass(frozen=True)
class FlopCount:
    total: int | None  # None when the step has no op the counter can count
    by_kind: dict[str, int]
    note: str | None  # why total is None, or which compute ops it leaves out


@dataclasses.dataclass(frozen=True)
class MemoryPeak:
    peak_mb: float
    state_mb: float | None  # of the peak, what is live between steps (None on CUDA: not told apart)
    method: str


@dataclasses.dataclass(frozen=True)
class MachinePeak:
    gflops: float
    method: str

    def environment(self) -> dict[str, Any]:
        """The fields a sweep records in its environment."""
        return {"peak_gflops": self.gflops, "peak_method": self.method}


# -- FLOPs --------------------------------------------------------------------------------------


def _register_missing_formulas() -> None:
    """Formulas for CPU kernels this torch's counter lacks: they hold a transformer's or an LSTM's arithmetic."""
    aten = torch.ops.aten

    def sdpa_cpu(query_shape: Any, key_shape: Any, value_shape: Any, *args: Any, **kwargs: Any) -> int:
        return flop_counter.sdpa_flop_count(query_shape, key_shape, value_shape)

    def sdpa_cpu_backward(grad_out_shape: Any, query_shape: Any, key_shape: Any, value_shape: Any, *args: Any, **kwargs: Any) -> int:
        return flop_counter.sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)

    def rnn_layer(input_shape: Any, w_ih_shape: Any, w_hh_shape: Any, *args: Any, **kwargs: Any) -> int:
        # Every time step multiplies its input and the hidden state by all gates' weights.
        rows = math.prod(input_shape) // input_shape[-1]
        return 2 * rows * (math.prod(w_ih_shape) + math.prod(w_hh_shape))

    def rnn_layer_backward(input_shape: Any, w_ih_shape: Any, w_hh_shape: Any, *args: Any, **kwargs: Any) -> int:
        return 2 * rnn_layer(input_shape, w_ih_shape, w_hh_shape)  # gradients of the inputs and of the weights

    formulas: dict[str, Callable[..., int]] = {
        "_scaled_dot_product_flash_attention_for_cpu": sdpa_cpu,
        "_scaled_dot_product_flash_attention_for_cpu_backward": sdpa_cpu_backward,
        "mkldnn_rnn_layer": rnn_layer,
        "mkldnn_rnn_layer_backward": rnn_layer_backward,
    }
    for name, formula in formulas.items():
        packet = getattr(aten, name, None)
        if packet is not None and packet not in flop_counter.flop_registry:
            flop_counter.register_flop_formula(packet)(formula)


_register_missing_formulas()


def _convolution_backward_flops(
    grad_out_shape: Any, x_shape: Any, w_shape: Any, _bias: Any, _stride: Any, _padding: Any, _dilation: Any,
    transposed: bool, _output_padding: Any, groups: int, output_mask: Any, out_shape: Any = None, **kwargs: Any,
) -> int:
    """``flop_counter.conv_backward_flop`` with the weight gradient of a grouped convolution corrected.

    A weight's gradient sums over its own group's channels only; this torch's formula sums over all of
    them, ``groups`` times too many: a depthwise layer's gradient counted once per channel (efficientnet_b0
    train read 32 GFLOP a sample, against 2.3 for three times its forward pass).
    """

    def swapped(shape: Any) -> list[int]:
        return [shape[1], shape[0], *shape[2:]]

    flops = 0
    if output_mask[0]:  # the input's gradient: a convolution of the output's gradient with the weight
        flops += flop_counter.conv_flop_count(grad_out_shape, w_shape, out_shape[0], not transposed)
    if output_mask[1]:  # the weight's gradient: a convolution of the input with the output's gradient
        x, grad_out = (swapped(grad_out_shape), swapped(x_shape)) if transposed else (swapped(x_shape), swapped(grad_out_shape))
        flops += flop_counter.conv_flop_count(x, grad_out, swapped(out_shape[1])) // groups
    return flops


_CORRECTED_FORMULAS = {torch.ops.aten.convolution_backward: _convolution_backward_flops}


def flop_kind(op_name: str) -> str:
    """``matmul``, ``convolution``, ``attention``, ``recurrent`` or ``other`` for an aten op's name."""
    if "attention" in op_name:
        return "attention"
    if "conv" in op_name:
        return "convolution"
    if "rnn" in op_name or "lstm" in op_name or "gru" in op_name:
        return "recurrent"
    if op_name.rpartition(".")[2] in ("mm", "addmm", "bmm", "baddbmm", "_scaled_mm", "_int_mm", "matmul"):
        return "matmul"
    return "other"


class _OpsSeen(TorchDispatchMode):
    """Records the name of every op dispatched under it."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: set[Any] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.ops.add(func._overloadpacket)
        return func(*args, **(kwargs or {}))


def count_flops(model: Any, mode: str) -> FlopCount:
    """The FLOPs of one ``mode`` step of ``model``, by kind; never raises for a model the counter cannot count."""
    counter = flop_counter.FlopCounterMode(display=False, custom_mapping=_CORRECTED_FORMULAS)
    seen = _OpsSeen()
    try:
        with counter, seen:
            getattr(model, mode)(niter=1)
    except Exception as error:  # noqa: BLE001 - an uncountable model is a null figure, not a failed case
        return FlopCount(None, {}, f"FlopCounterMode could not run the step: {type(error).__name__}: {error}"[:300])
    by_kind = dict.fromkeys(FLOP_KINDS, 0)
    for op, flops in counter.get_flop_counts().get("Global", {}).items():
        by_kind[flop_kind(str(op))] += int(flops)
    uncounted = sorted(str(op) for op in seen.ops if op not in flop_counter.flop_registry and _COMPUTE_OP.search(str(op)))
    missing = f"not counted: {', '.join(uncounted)}" if uncounted else None
    total = sum(by_kind.values())
    if total == 0:
        reason = "no matrix product, convolution or attention op in the step: the counter counts only those"
        return FlopCount(None, {}, f"{reason}; {missing}" if missing else reason)
    return FlopCount(total, {kind: n for kind, n in by_kind.items() if n}, missing)


# -- memory -------------------------------------------------------------------------------------


def _storages(tensors: Iterator[torch.Tensor], device: torch.device) -> dict[int, int]:
    """Bytes of each distinct storage on ``device`` behind ``tensors``, by its address."""
    sizes: dict[int, int] = {}
    for tensor in tensors:
        if tensor.device.type == device.type and not tensor.is_sparse and tensor.layout == torch.strided:
            storage = tensor.untyped_storage()
            sizes[storage.data_ptr()] = storage.nbytes()
    return sizes


def state_tensors(model: Any, mode: str) -> Iterator[torch.Tensor]:
    """Every tensor a model holds between steps: parameters, gradients, buffers, optimizer state, inputs, outputs."""
    module: torch.nn.Module = model.module
    yield from module.parameters()
    yield from (p.grad for p in module.parameters() if p.grad is not None)
    yield from module.buffers()
    for optimizer in getattr(model, "optimizers", ()):
        yield from iter_tensors(list(optimizer.state.values()))
    if hasattr(model, "inputs"):
        yield from iter_tensors(model.inputs(mode))
    yield from iter_tensors([getattr(model, "last_output", None), getattr(model, "last_loss", None)])


def step_allocation_peak_bytes(model: Any, mode: str, steps: int = 2) -> int:
    """The highest the CPU allocator's live bytes climb above their level at a step's start, in the last of ``steps``.

    Read from the profiler's memory events. The first recorded step is not used: tensors allocated
    before recording began are freed in it without an event.
    """

    def mark() -> None:
        with record_function(_STEP_MARK):
            pass

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        mark()
        getattr(model, mode)(niter=steps, step_fn=mark)
    events = sorted(
        (e for e in prof.profiler.kineto_results.events()
         if e.name() == _STEP_MARK or (e.name() == MEMORY_EVENT_NAME and e.device_type() == DeviceType.CPU)),
        key=lambda e: e.start_ns(),
    )  # fmt: skip
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
    state_bytes = sum(_storages(state_tensors(model, mode), device).values())
    step_bytes = step_allocation_peak_bytes(model, mode, steps)
    method = "tensors live between steps + the step's peak allocation from the profiler's memory events"
    return MemoryPeak((state_bytes + step_bytes) / MB, state_bytes / MB, method)


def peak_rss_mb() -> float:
    """This process's peak resident set size since it started (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / MB


# -- the machine's peak -------------------------------------------------------------------------


def measure_peak(device: str | torch.device = "cpu", threads: int | None = None, size: int | None = None,
                 min_repeats: int = 3, seconds: float = 2.0) -> MachinePeak:  # fmt: skip
    """The best FLOP/s of large float32 kernels on ``device`` with ``threads`` intra-op threads.

    On a GPU, ``size``-square matrix products. On a CPU, the better of two libraries' kernels: a
    ``size``-square product (BLAS: MKL or OpenBLAS) and a 3x3 convolution (oneDNN), since either can
    leave half the machine unused: MKL runs its AVX2 path on AMD processors with AVX-512, where oneDNN's
    convolutions reach twice its FLOP/s. Each kernel's figure is the best, not the median, of as many
    runs as fit in its share of ``seconds``: on a shared machine the peak is what the machine does in its
    quietest moment, and load can only make a kernel slower.
    """
    device = torch.device(device)
    size = size or (8192 if device.type == "cuda" else 2048)
    saved = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        kernels = _peak_kernels(device, size)
        readings = [_best_gflops(run, flops, device, min_repeats, seconds / len(kernels)) for _, run, flops in kernels]
        used = torch.get_num_threads()
    finally:
        torch.set_num_threads(saved)
    where = f"{used} threads" if device.type == "cpu" else torch.cuda.get_device_name(device)
    parts = [f"{name} {best:.1f} (median {median:.1f}, {n} runs)" for (name, _, _), (best, median, n) in zip(kernels, readings)]
    method = f"best of float32 {' and '.join(parts)} GFLOP/s on {where}"
    return MachinePeak(round(max(best for best, _, _ in readings), 1), method)


def _peak_kernels(device: torch.device, size: int) -> list[tuple[str, Callable[[], object], int]]:
    """(name, run, FLOPs per run) of each kernel the peak is the best of."""
    generator = torch.Generator().manual_seed(0)
    a = torch.randn(size, size, generator=generator).to(device)
    b = torch.randn(size, size, generator=generator).to(device)
    kernels: list[tuple[str, Callable[[], object], int]] = [
        (f"torch.mm {size}x{size}x{size}", lambda: torch.mm(a, b), 2 * size**3)
    ]
    if device.type == "cpu":
        # A resnet-like layer; at the default size, 256 channels of 8 56x56 images: 30 GFLOP a run.
        channels, side, batch = max(8, size // 8), 56, 8
        x = torch.randn(batch, channels, side, side, generator=generator)
        w = torch.randn(channels, channels, 3, 3, generator=generator)
        flops = 2 * batch * channels * channels * 9 * side * side
        kernels.append((f"conv2d 3x3 {channels}->{channels} {batch}x{side}x{side}",
                        lambda: torch.nn.functional.conv2d(x, w, padding=1), flops))  # fmt: skip
    return kernels


def _best_gflops(run: Callable[[], object], flops: int, device: torch.device, min_repeats: int,
                 seconds: float) -> tuple[float, float, int]:  # fmt: skip
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


# -- a case's costs -----------------------------------------------------------------------------


def measure_costs(model: Any, mode: str, device: torch.device, batch_size: int | None, step_ms: float) -> Costs:
    """A case's costs from its median step time; ``pct_of_peak`` waits for the sweep's peak (:func:`with_peak`)."""
    flops = count_flops(model, mode)
    memory = measure_memory(model, mode, device)
    return Costs(
        flops_per_step=flops.total,
        flops_by_kind=flops.by_kind,
        flops_note=flops.note,
        achieved_gflops=None if flops.total is None else flops.total / (step_ms * 1e6),
        pct_of_peak=None,
        compute_limit=None,
        peak_memory_mb=memory.peak_mb,
        state_memory_mb=memory.state_mb,
        memory_method=memory.method,
        peak_rss_mb=peak_rss_mb(),
        samples_per_s=None if batch_size is None else batch_size / (step_ms / 1e3),
    )


def compute_limit(verdict: str | None, pct_of_peak: float | None) -> str | None:
    """``kernels`` or ``arithmetic`` for a compute-bound step with a known ``pct_of_peak`` (the rule above)."""
    if verdict != "compute-bound" or pct_of_peak is None:
        return None
    return "kernels" if pct_of_peak < KERNEL_LIMITED_BELOW_PCT else "arithmetic"


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
    costs = dataclasses.replace(costs, achieved_gflops=scaled(costs.achieved_gflops), pct_of_peak=pct,
                                compute_limit=compute_limit(verdict, pct), samples_per_s=scaled(costs.samples_per_s))  # fmt: skip
    return dataclasses.replace(result, costs=costs)
