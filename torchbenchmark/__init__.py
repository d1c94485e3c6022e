"""torchbenchmark: real PyTorch models behind one contract, and diagnostics of where their step time goes.

    >>> import torchbenchmark
    >>> torchbenchmark.list_models()[:2]
    >>> model = torchbenchmark.load_model("resnet50", device="cpu", batch_size=4)
    >>> model.train(niter=3)

Importing this package imports torch and nothing heavier: torchvision and transformers load when a
model that needs them is built, and the diagnostics engine when it is first used.
"""

from __future__ import annotations

from typing import Any

from torchbenchmark.native_logs import quiet_native_logs

quiet_native_logs()  # before torch is imported: see torchbenchmark/native_logs.py

from torchbenchmark.contract import MODES, PHASES, BatchSizes, BenchmarkModel, ModelMeta  # noqa: E402
from torchbenchmark.registry import (  # noqa: E402
    ModelUnavailableError,
    UnknownModelError,
    list_models,
    load_model,
    meta_of,
    model_class,
)

__version__ = "0.1.0"

# The diagnostics engine pulls in the profiler, tabulate and tqdm; load it on first use.
_LAZY = {
    "collect_diagnostics": "torchbenchmark.diagnose",
    "CaseResult": "torchbenchmark.results",
    "CaseSpec": "torchbenchmark.spec",
    "Budget": "torchbenchmark.spec",
    "run_sweep": "torchbenchmark.sweep",
    "load_summary": "torchbenchmark.storage",
    "compare": "torchbenchmark.compare",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'torchbenchmark' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The loaded names and the lazy ones, so completion and ``dir()`` show ``collect_diagnostics``."""
    return sorted(__all__)


__all__ = [
    "MODES",
    "PHASES",
    "BatchSizes",
    "BenchmarkModel",
    "ModelMeta",
    "ModelUnavailableError",
    "UnknownModelError",
    "list_models",
    "load_model",
    "meta_of",
    "model_class",
    *_LAZY,
]
