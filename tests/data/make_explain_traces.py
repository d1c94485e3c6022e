"""Writes the hand-made traces the attribution and op-diff tests read: ``python tests/data/make_explain_traces.py``.

attribution_train: one train step of a detailed profile, in the shape torch.profiler writes it (Python
    calls as ``python_function`` events with their ``CallFrom``, ops as ``cpu_op``, on one thread): a module
    ``Net_0`` holding a ``Linear_0`` and two elementwise ops, a loss outside any module, a backward node
    whose forward op shares its ``Sequence number``, an ``AccumulateGrad`` node with none, and an op after
    the step.
opdiff_base, opdiff_new: two light-profile steps of 1000 µs: three multiplies (the first holding a nested
    copy) and then adds, 5 a step on the base side and 105 on the new one, each add holding a nested
    ``aten::_to_copy`` whose own time is the larger; and one op only each side runs (``aten::relu`` on
    the base, ``aten::to`` on the new).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
MODEL = "/work/tests/model.py"
TORCH = "torch/nn/modules/linear.py"


def _x(name: str, ts: float, dur: float, cat: str = "cpu_op", **args: Any) -> dict[str, Any]:
    event = {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": 1}
    return {**event, "args": args} if args else event


def _py(name: str, ts: float, dur: float, called_from: str | None = None) -> dict[str, Any]:
    return _x(name, ts, dur, cat="python_function", **({"CallFrom": called_from} if called_from else {}))


def attribution_train() -> list[dict[str, Any]]:
    return [
        _x("ProfilerStep#1", 0, 100, cat="user_annotation"),
        _py(f"{MODEL}(10): train", -5, 200),  # opened before the step: the step loop's own frame
        _py("nn.Module: Net_0", 2, 58, called_from=f"{MODEL}:12"),
        _py(f"{MODEL}(20): forward", 3, 56, called_from="torch/nn/modules/module.py:1750"),
        _py("nn.Module: Linear_0", 5, 15, called_from=f"{MODEL}:21"),  # the line that called the layer
        _py(f"{TORCH}(125): forward", 6, 13, called_from="torch/nn/modules/module.py:1750"),  # torch's: not the model's
        _x("aten::linear", 7, 11, **{"Sequence number": 1}),  # call
        _x("aten::addmm", 8, 9, **{"Sequence number": 1}),  # nested
        _x("aten::mul", 25, 2, **{"Sequence number": 2}),  # call, in Net itself: an operator, no call event
        _py("<built-in method add of type object at 0x1>", 29, 4, called_from=f"{MODEL}:23"),  # a torch function's call
        _x("aten::add", 30, 2),  # call, in Net itself, made at line 23
        _py("<built-in method sum of Tensor object at 0x2>", 61, 4, called_from=f"{MODEL}:13"),
        _x("aten::sum", 62, 2),  # call, outside any module: the loss
        _x("autograd::engine::evaluate_function: MulBackward0", 70, 10, **{"Sequence number": 2}),  # where aten::mul ran
        _x("MulBackward0", 71, 8),  # nested in the node
        _x("aten::mul", 72, 6),  # nested in the node
        _x("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", 85, 3),  # no forward op: outside
        _x("aten::add", 150, 2),  # after the step: not counted
    ]


def opdiff(adds: int, extra: str) -> list[dict[str, Any]]:
    events = []
    for step in range(2):
        t = 1000.0 * step
        events.append(_x(f"ProfilerStep#{step}", t, 1000, cat="user_annotation"))
        events += [_x("aten::mul", t + 1 + 5 * i, 4) for i in range(3)]
        events.append(_x("aten::copy_", t + 2, 1))  # nested in the first multiply: 1 µs of its 4 is not its own
        for i in range(adds):
            events += [_x("aten::add", t + 20 + 8 * i, 7), _x("aten::_to_copy", t + 21 + 8 * i, 5)]
        events.append(_x(extra, t + 900, 7))
    return events


TRACES = {
    "attribution_train": attribution_train(),
    "opdiff_base": opdiff(5, "aten::relu"),
    "opdiff_new": opdiff(105, "aten::to"),
}


if __name__ == "__main__":
    for name, events in TRACES.items():
        (HERE / f"{name}.pt.trace.json").write_text(json.dumps({"traceEvents": events}, indent=0) + "\n", encoding="utf-8")
