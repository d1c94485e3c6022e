"""Reduced precision and memory layout variants: the model recast, timed in turn with an eager build beside it.

- ``amp-bf16``, ``amp-fp16``: the whole train or eval call under ``torch.autocast`` to bfloat16 or float16;
  on CUDA a float16 train step of the usual shape scales its loss (``torch.amp.GradScaler``);
- ``bf16``: the model's networks and floating-point inputs cast to bfloat16;
- channels_last: the networks and the 4-D floating-point inputs in ``torch.channels_last``.

A variant's model is built beside an eager one from the same seed, so both hold the same weights and
inputs. Before either is timed, one step of each is compared, as PyTorch's dynamo harness checks accuracy:
the eval outputs (``last_output``) or the train loss (``last_loss``), each tensor by its largest difference
over eager's largest magnitude. ``speedup_rounds`` then come from windows of each model taken in turn in
this process, as a compiled variant's do, and the eager build is let go before the profiles and costs, so
the variant's peak memory is its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from torchbenchmark.contract import BenchmarkModel, iter_tensors, modules_of
from torchbenchmark.measure.compile import SPEEDUP_ROUNDS, NotApplicable, median_step_ms, window_steps
from torchbenchmark.results.schema import MODES, Accuracy, RemedyReport
from torchbenchmark.results.spec import PRECISIONS, CaseSpec

# The largest max relative error (see above) a variant's outputs may show and still be called close to eager's.
# float16 keeps 11 significant bits, bfloat16 8; a bf16 model also keeps its weights, norms and sums in 8 bits.
TOLERANCES = {"amp-fp16": 1e-2, "amp-bf16": 5e-2, "bf16": 1e-1}
LAYOUT_TOLERANCE = 1e-3  # channels_last in float32: the same arithmetic, summed in another order
# The CPU flags that give a 16-bit type its own arithmetic; without one, it runs through float32 units.
NATIVE_CPU_FLAGS = {"bfloat16": ("avx512_bf16", "amx_bf16"), "float16": ("avx512_fp16", "amx_fp16")}
NATIVE_CUDA_CAPABILITY = {"bfloat16": (8, 0), "float16": (7, 0)}  # tensor cores for the type
ACCURACY_SEED = 0
# How torch says an op has no kernel for the type: "... not implemented for 'BFloat16'", "... not supported. Got Half".
_NO_KERNEL = re.compile(r"not (?:implemented|supported)\b.{0,40}?\b(BFloat16|Half)\b")


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str]:
    """The CPU's feature flags; where /proc/cpuinfo is not, those torch can tell."""
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    told = {"avx512_bf16": torch.cpu._is_avx512_bf16_supported(), "amx_bf16": torch.cpu._is_amx_tile_supported()}
    return {flag for flag, present in told.items() if present} | ({"amx_fp16"} if torch.cpu._is_amx_fp16_supported() else set())


def support(device: torch.device, dtype: str, flags: set[str] | None = None) -> str:
    """``native (...)`` when ``device`` has arithmetic of its own for ``dtype``, else ``emulated: why``."""
    if device.type == "cuda":
        capability = torch.cuda.get_device_capability(device)
        shown = ".".join(map(str, capability))
        if capability >= NATIVE_CUDA_CAPABILITY[dtype]:
            return f"native (compute capability {shown})"
        return f"emulated: compute capability {shown} has no {dtype} tensor cores"
    found = sorted((cpu_flags() if flags is None else flags) & set(NATIVE_CPU_FLAGS[dtype]))
    if found:
        return f"native ({', '.join(found)})"
    return f"emulated: this CPU has no {' or '.join(NATIVE_CPU_FLAGS[dtype])}, so {dtype} runs through float32 units"


def _mapped(value: Any, convert: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    if isinstance(value, torch.Tensor):
        return convert(value)
    if isinstance(value, dict):
        return {key: _mapped(item, convert) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_mapped(item, convert) for item in value)
    return value


def _channels_last(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.contiguous(memory_format=torch.channels_last) if tensor.dim() == 4 and tensor.is_floating_point() else tensor


def _bfloat16(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.to(torch.bfloat16) if tensor.is_floating_point() else tensor


def _under_autocast(method: Callable[..., Any], device_type: str, dtype: torch.dtype) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        with torch.autocast(device_type, dtype=dtype):
            return method(*args, **kwargs)

    return run


def _converter(model: Any, what: str) -> Callable[[str, Callable[[Any], Any]], None]:
    """The model's ``convert_inputs`` and networks, or NotApplicable saying which it lacks."""
    convert = getattr(model, "convert_inputs", None)
    if not modules_of(model) or not callable(convert) or not callable(getattr(model, "inputs", None)):
        raise NotApplicable(f"{what} recasts the model's networks and inputs, and this model exposes no module and convert_inputs()")
    return convert  # type: ignore[no-any-return]


def recast(model: Any, spec: CaseSpec) -> bool:
    """Make ``model`` (built, no step run yet) ``spec``'s variant in place; True when its train step got a grad scaler."""
    device = torch.device(spec.device)
    if spec.channels_last:
        convert = _converter(model, "channels_last")
        if not any(t.dim() == 4 and t.is_floating_point() for t in iter_tensors(model.inputs(spec.mode))):
            raise NotApplicable("channels_last: the model has no 4-D floating-point input")
        for module in modules_of(model):
            module.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
        convert(spec.mode, lambda inputs: _mapped(inputs, _channels_last))
    if spec.precision == "bf16":
        convert = _converter(model, "bf16")
        for module in modules_of(model):
            module.to(torch.bfloat16)
        convert(spec.mode, lambda inputs: _mapped(inputs, _bfloat16))
    elif spec.precision is not None:
        dtype = getattr(torch, PRECISIONS[spec.precision])
        for mode in MODES:
            setattr(model, mode, _under_autocast(getattr(model, mode), device.type, dtype))
        usual_step = isinstance(model, BenchmarkModel) and type(model).train_step is BenchmarkModel.train_step
        if dtype == torch.float16 and device.type == "cuda" and spec.mode == "train" and usual_step:
            model.grad_scaler = torch.amp.GradScaler("cuda")
            return True
    return False


def paired_tensors(variant: Any, eager: Any) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The outputs' floating-point tensors that pair up, in float64 on the CPU: none where the two hold
    another count of tensors; a pair of other shapes is left out."""
    got, expected = list(iter_tensors(variant)), list(iter_tensors(eager))
    if len(got) != len(expected):
        return []
    pairs = [(v, e) for v, e in zip(got, expected) if v.is_floating_point() and e.is_floating_point() and v.shape == e.shape]
    return [(v.detach().double().cpu(), e.detach().double().cpu()) for v, e in pairs]


def relative_error(variant: Any, eager: Any) -> tuple[float | None, bool]:
    """(the largest max|variant - eager| / max|eager| over the paired tensors, where both are finite; whether
    the variant is finite wherever eager is and holds eager's infinities and NaNs where eager holds them).

    An infinity equal to eager's (a masked logit's -inf) is no error. None where no finite values pair up.
    """
    errors, finite = [], True
    for v, e in paired_tensors(variant, eager):
        both = torch.isfinite(v) & torch.isfinite(e)
        alike = (v == e) | (torch.isnan(v) & torch.isnan(e))
        finite = finite and bool((both | alike).all())
        if bool(both.any()):
            scale, difference = float(e[both].abs().max()), float((v[both] - e[both]).abs().max())
            errors.append(difference / scale if scale > 0 else difference)
    return (max(errors) if errors else None), finite


def _first_outputs(model: Any, mode: str, sync: Callable[[], None]) -> Any:
    torch.manual_seed(ACCURACY_SEED)  # both steps draw the same random numbers (dropout masks), as far as their types allow
    getattr(model, mode)(niter=1)
    sync()
    return getattr(model, "last_output" if mode == "eval" else "last_loss", None)


def check_accuracy(eager: Any, model: Any, spec: CaseSpec, sync: Callable[[], None]) -> Accuracy:
    """One step of each on the same inputs and weights, compared; the variant's step raising for want of
    a 16-bit kernel is NotApplicable."""
    expected = _first_outputs(eager, spec.mode, sync)
    try:
        got = _first_outputs(model, spec.mode, sync)
    except RuntimeError as error:
        found = _NO_KERNEL.search(str(error))
        if found is None:
            raise
        raise NotApplicable(f"an op has no {found[1]} kernel on {spec.device_type}: {str(error).splitlines()[0]}") from error
    kept = "last_output" if spec.mode == "eval" else "last_loss"
    if expected is None or got is None:
        return Accuracy("", not_checked=f"the model keeps no {kept} after a step to compare (BenchmarkModel does)")
    error, finite = relative_error(got, expected)
    compared = "eval outputs" if spec.mode == "eval" else "train loss"
    tolerance = TOLERANCES[spec.precision] if spec.precision else LAYOUT_TOLERANCE
    if error is None and finite:
        held = "no finite value where eager's has one" if paired_tensors(got, expected) else "no floating-point tensor shaped as eager's"
        return Accuracy("", not_checked=f"its {kept} holds {held}")
    return Accuracy(compared, error, tolerance, finite=finite)


def prepare(model: Any, build_eager: Callable[[], Any], spec: CaseSpec, sync: Callable[[], None]) -> tuple[Any, RemedyReport]:
    """Recast ``model`` into ``spec``'s variant, build the eager model to time it against, and compare their outputs."""
    scaled = recast(model, spec)
    eager = build_eager()
    accuracy = check_accuracy(eager, model, spec, sync)
    dtype = PRECISIONS[spec.precision] if spec.precision else None
    how = support(torch.device(spec.device), dtype) if dtype else None
    return eager, RemedyReport(spec.precision, spec.channels_last, dtype, how, scaled, accuracy)


def interleaved_speedup(eager: Any, model: Any, mode: str, step_ms: float, sync: Callable[[], None]) -> tuple[float, ...]:
    """Eager over variant median step time for each of ``SPEEDUP_ROUNDS`` window pairs taken in turn."""
    steps = window_steps(step_ms)
    median_step_ms(eager, mode, 3, sync)  # eager has run one step only: warm it before its windows count
    ratios = []
    for _ in range(SPEEDUP_ROUNDS):
        eager_ms = median_step_ms(eager, mode, steps, sync)
        ratios.append(eager_ms / median_step_ms(model, mode, steps, sync))
    return tuple(ratios)
