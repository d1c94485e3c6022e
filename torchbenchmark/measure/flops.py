"""Counting a step's FLOPs with ``torch.utils.flop_counter.FlopCounterMode``, over one whole step.

The counter knows matrix products, convolutions and attention, the ops that hold nearly all the arithmetic
of a neural network and the ones published figures count (a multiply-add is 2 FLOPs); elementwise ops,
reductions and the optimizer's update count nothing. A step with none of those ops has no count, with the
reason, rather than 0; a step with a compute op the counter has no formula for keeps its count, a lower
bound, and names the op (``uncounted``): the row's FLOP figures are then marked partial.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from typing import Any

import torch
from torch.utils import flop_counter
from torch.utils._python_dispatch import TorchDispatchMode

from torchbenchmark.measure.native_logs import own_global_hook

FLOP_KINDS = ("matmul", "convolution", "attention", "recurrent", "other")
# An op whose name says it does matrix arithmetic, for naming those the counter has no formula for;
# interpolation (upsample_bilinear2d, ...) is elementwise work, counted as nothing like the others.
_COMPUTE_OP = re.compile(r"^(?!.*upsample).*(conv|mm$|matmul|attention|rnn|lstm|gru|linear)")


@dataclasses.dataclass(frozen=True)
class FlopCount:
    total: int | None  # None when the step has no op the counter can count
    by_kind: dict[str, int]
    note: str | None  # why total is None, or which compute ops it leaves out
    uncounted: tuple[str, ...] = ()  # compute ops the step ran that no formula counts: total is then a lower bound
    by_module: dict[str, int] = dataclasses.field(default_factory=dict)  # by module path, as the counter names them


def _convolution_backward_flops(
    grad_out_shape: Any,
    x_shape: Any,
    w_shape: Any,
    _bias: Any,
    _stride: Any,
    _padding: Any,
    _dilation: Any,
    transposed: bool,
    _output_padding: Any,
    groups: int,
    output_mask: Any,
    out_shape: Any = None,
    **kwargs: Any,
) -> int:
    """``flop_counter.conv_backward_flop`` with the weight gradient of a grouped convolution corrected.

    A weight's gradient sums over its own group's channels only; this torch's formula sums over all of
    them, ``groups`` times too many: a depthwise layer's gradient counted once per channel.
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


def _formulas() -> dict[Any, Callable[..., int]]:
    """Formulas beside the counter's own: CPU kernels it lacks (they hold a transformer's or an LSTM's
    arithmetic), and the grouped convolution's backward corrected."""
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

    missing: dict[str, Callable[..., int]] = {
        "_scaled_dot_product_flash_attention_for_cpu": sdpa_cpu,
        "_scaled_dot_product_flash_attention_for_cpu_backward": sdpa_cpu_backward,
        "mkldnn_rnn_layer": rnn_layer,
        "mkldnn_rnn_layer_backward": rnn_layer_backward,
    }
    found: dict[Any, Callable[..., int]] = {aten.convolution_backward: _convolution_backward_flops}
    missing.update(_fused_transformer_formulas())
    for name, formula in missing.items():
        packet = getattr(aten, name, None)
        if packet is not None and packet not in flop_counter.flop_registry:
            found[packet] = formula
    return found


def _attention_block_flops(batch: int, q_len: int, kv_len: int, embed_dim: int) -> int:
    """One multi-head attention block: the q, k, v and output projections, Q K^T and its product with V.

    The heads split ``embed_dim`` between them, so their number changes none of the arithmetic.
    """
    projections = 2 * batch * embed_dim * embed_dim * (2 * q_len + 2 * kv_len)  # q and out over q_len; k, v over kv_len
    return projections + 4 * batch * q_len * kv_len * embed_dim


def _fused_transformer_formulas() -> dict[str, Callable[..., int]]:
    """The fused ops ``nn.MultiheadAttention`` and ``nn.TransformerEncoderLayer`` take in inference (no grad,
    eval, batch first): each is one op holding the projections, the attention and (the layer) the MLP.
    vit_b_16's eval runs ``_native_multi_head_attention`` in every block."""

    def native_multi_head_attention(query_shape: Any, key_shape: Any, _value_shape: Any, embed_dim: int, *args: Any, **kwargs: Any) -> int:
        *batch, q_len, _ = query_shape  # (batch, tokens, embed) or, unbatched, (tokens, embed)
        return _attention_block_flops(math.prod(batch), q_len, key_shape[-2], embed_dim)

    def transformer_encoder_layer(src_shape: Any, embed_dim: int, _heads: int, *args: Any, **kwargs: Any) -> int:
        *batch, length, _ = src_shape
        ffn_weight_1 = args[11] if len(args) > 11 else kwargs["ffn_weight_1"]  # (hidden, embed)
        rows = math.prod(batch) * length
        return _attention_block_flops(math.prod(batch), length, length, embed_dim) + 2 * 2 * rows * math.prod(ffn_weight_1)

    return {"_native_multi_head_attention": native_multi_head_attention, "_transformer_encoder_layer_fwd": transformer_encoder_layer}


def grouped_mm_flops(a_shape: Any, b_shape: Any, *args: Any, out_shape: Any = None, **kwargs: Any) -> int:
    """A grouped matrix product (a mixture-of-experts layer's experts, ``aten._grouped_mm``): 2 FLOPs per
    multiply-add of every group, whichever way the groups are laid out.

    2-D ``a`` (rows of every group, k) by 3-D ``b`` (groups, k, n): each row meets its group's matrix once.
    3-D by 3-D: a batch of products. 3-D by 2-D: each group's rows by its own columns of ``b``. 2-D by 2-D
    (a weight's gradient, groups along k): every row and column meet once over the whole of k.
    """
    if len(a_shape) == 2 and len(b_shape) == 3:
        return 2 * a_shape[0] * a_shape[1] * b_shape[2]
    if len(a_shape) == 3 and len(b_shape) == 3:
        return 2 * a_shape[0] * a_shape[1] * a_shape[2] * b_shape[2]
    if len(a_shape) == 3 and len(b_shape) == 2:
        return 2 * a_shape[1] * a_shape[2] * b_shape[1]
    return 2 * a_shape[0] * a_shape[1] * b_shape[1]


def _decoder_formulas() -> dict[Any, Callable[..., int]]:
    """Formulas for the ops decoder language models add (``models.llm``): the grouped product of their experts.

    Attention over a cache needs none: the CPU attention formula above takes the keys' length from the keys
    themselves, so a decode step's single query is counted against every cached position it attends to.
    """
    packet = getattr(torch.ops.aten, "_grouped_mm", None)
    if packet is None or packet in flop_counter.flop_registry:
        return {}
    return {packet: grouped_mm_flops}


def flop_kind(op_name: str) -> str:
    """``matmul``, ``convolution``, ``attention``, ``recurrent`` or ``other`` for an aten op's name."""
    if "attention" in op_name:
        return "attention"
    if "conv" in op_name:
        return "convolution"
    if "rnn" in op_name or "lstm" in op_name or "gru" in op_name:
        return "recurrent"
    if op_name.rpartition(".")[2] in ("mm", "addmm", "bmm", "baddbmm", "_scaled_mm", "_int_mm", "matmul", "_grouped_mm"):
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
    counter = flop_counter.FlopCounterMode(display=False, custom_mapping={**_formulas(), **_decoder_formulas()})
    seen = _OpsSeen()
    try:
        with own_global_hook(), counter, seen:  # the counter's module tracker is a global module hook
            getattr(model, mode)(niter=1)
    except Exception as error:
        return FlopCount(None, {}, f"FlopCounterMode could not run the step: {type(error).__name__}: {error}"[:300])
    by_kind = dict.fromkeys(FLOP_KINDS, 0)
    counts = counter.get_flop_counts()
    for op, flops in counts.get("Global", {}).items():
        by_kind[flop_kind(str(op))] += int(flops)
    by_module = {name: sum(int(n) for n in ops.values()) for name, ops in counts.items() if name != "Global"}
    uncounted = tuple(sorted(str(op) for op in seen.ops if op not in counter.flop_registry and _COMPUTE_OP.search(str(op))))
    missing = f"not counted: {', '.join(uncounted)}" if uncounted else None
    total = sum(by_kind.values())
    if total == 0:
        reason = "no matrix product, convolution or attention op in the step: the counter counts only those"
        return FlopCount(None, {}, f"{reason}; {missing}" if missing else reason, uncounted)
    return FlopCount(total, {kind: n for kind, n in by_kind.items() if n}, missing, uncounted, by_module)
