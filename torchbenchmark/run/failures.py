"""How a case that raised is reported: its status and one line of reason, the traceback left to its log."""

from __future__ import annotations

import errno
import os

from torchbenchmark.contract import DoesNotFit
from torchbenchmark.measure.compile import NotApplicable
from torchbenchmark.registry import ModelUnavailableError
from torchbenchmark.results.schema import Status

OUT_OF_MEMORY_HINT = "out of memory; try a smaller --batch-size"
# How running out of memory reads: the allocators' messages, and cuBLAS's and cuDNN's failed workspaces.
OUT_OF_MEMORY_MARKERS = ("out of memory", "can't allocate memory", "CUBLAS_STATUS_ALLOC_FAILED", "CUDNN_STATUS_ALLOC_FAILED")
REASON_CHARS = 300


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else ""


def one_line(error: BaseException) -> str:
    """``Type: first line of the message``, or the type alone when there is no message (a bare MemoryError)."""
    first = first_line(error)
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


def _no_space(error: BaseException) -> str | None:
    """The reason of a write that found the disk full, naming the file; None for any other error."""
    while error is not None:
        if isinstance(error, OSError) and error.errno == errno.ENOSPC:
            where = f" ({error.filename})" if error.filename else ""
            return f"cannot write its outputs: {os.strerror(errno.ENOSPC)}{where}"
        error = error.__cause__ or error.__context__  # type: ignore[assignment]
    return None


def describe_failure(error: BaseException, mode: str) -> tuple[Status, str]:
    """The status and one-line reason for an exception raised by a case."""
    if isinstance(error, NotApplicable):
        return Status.SKIPPED, f"not applicable: {first_line(error)}"
    inner = getattr(error, "inner_exception", None)  # torch.compile's BackendCompilerFailed wraps the cause
    if isinstance(inner, BaseException):
        return Status.FAILED, f"compile failed: {one_line(inner)}"[:REASON_CHARS]
    if isinstance(error, DoesNotFit):
        return Status.SKIPPED, f"does not fit: {first_line(error)}"
    if isinstance(error, NotImplementedError):
        return Status.SKIPPED, f"{mode} not supported: {first_line(error) or 'NotImplementedError'}"
    if isinstance(error, (ModelUnavailableError, ModuleNotFoundError)):
        return Status.SKIPPED, f"unavailable: {first_line(error)}"
    full = _no_space(error)
    if full is not None:
        return Status.FAILED, full[:REASON_CHARS]
    if isinstance(error, MemoryError) or any(marker in str(error) for marker in OUT_OF_MEMORY_MARKERS):
        return Status.FAILED, f"{OUT_OF_MEMORY_HINT} ({one_line(error)})"[:REASON_CHARS]
    return Status.FAILED, one_line(error)[:REASON_CHARS]
