"""torchbenchmark: real PyTorch models behind one contract, and diagnostics of where their step time goes.

    >>> import torchbenchmark
    >>> torchbenchmark.list_models()[:2]
    >>> model = torchbenchmark.load_model("resnet50", device="cpu", batch_size=4)
    >>> model.train(niter=3)

Importing this package changes nothing in the process and imports nothing heavy: every name below is
loaded when first used, so ``load_summary`` and ``compare`` run where torch is not installed.
"""

from __future__ import annotations

import importlib
from typing import Any

from torchbenchmark.results.schema import MODES, PHASES

# name -> the module that defines it; each is imported when the name is first used.
_LAZY = {
    "BatchSizes": "torchbenchmark.contract",
    "BenchmarkModel": "torchbenchmark.contract",
    "ModelMeta": "torchbenchmark.contract",
    "ModelUnavailableError": "torchbenchmark.registry",
    "UnknownModelError": "torchbenchmark.registry",
    "list_models": "torchbenchmark.registry",
    "load_model": "torchbenchmark.registry",
    "meta_of": "torchbenchmark.registry",
    "model_class": "torchbenchmark.registry",
    "from_module": "torchbenchmark.models.user",
    "collect_diagnostics": "torchbenchmark.api",
    "load_summary": "torchbenchmark.api",
    "compare": "torchbenchmark.api",
    "run_sweep": "torchbenchmark.run.sweep",
    "SweepOptions": "torchbenchmark.run.sweep",
    "CaseResult": "torchbenchmark.results.schema",
    "CaseSpec": "torchbenchmark.results.spec",
    "Budget": "torchbenchmark.results.spec",
    "Compile": "torchbenchmark.results.spec",
    "StorageError": "torchbenchmark.results.files",
}


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from torchbenchmark.results.version import package_version

        return package_version()
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'torchbenchmark' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The loaded names and the lazy ones, so completion and ``dir()`` show ``collect_diagnostics``."""
    return sorted(__all__)


__all__ = ["MODES", "PHASES", "__version__", *_LAZY]
