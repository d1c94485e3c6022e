"""What the tests of the library sources (``torchvision:``, ``timm:``) share: one counted step of a mode, and a
sweep over many models that records which skip, and why, and which fail."""

from __future__ import annotations

import gc
import math
from collections.abc import Callable
from typing import Any

from torchbenchmark.contract import MODES


def one_step(model: Any, mode: str) -> None:
    """One step of ``mode`` that calls step_fn exactly once; a train step leaves a finite loss, eval an output."""
    calls: list[str] = []
    getattr(model, mode)(niter=1, step_fn=lambda: calls.append(mode))
    assert calls == [mode]
    if mode == "train":
        assert model.last_loss is not None and math.isfinite(float(model.last_loss))
    else:
        assert model.last_output is not None


def tryout(names: list[str], build: Callable[[str], Any]) -> tuple[dict[str, str], dict[str, str]]:
    """Build each model and take one step of each mode, one model at a time: the skips (NotImplementedError,
    DoesNotFit among them) with their reasons, and every other error, by ``name`` or ``name/mode``."""
    skipped: dict[str, str] = {}
    failed: dict[str, str] = {}
    for name in names:
        model = None
        try:
            model = build(name)
            for mode in MODES:
                try:
                    one_step(model, mode)
                except NotImplementedError as reason:
                    skipped[f"{name}/{mode}"] = str(reason)
        except NotImplementedError as reason:
            skipped[name] = str(reason)
        except Exception as error:  # recorded, then reported all at once
            failed[name] = f"{type(error).__name__}: {str(error)[:300]}"
        finally:
            del model
            gc.collect()
    return skipped, failed
