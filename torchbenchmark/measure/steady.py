"""Process settings that keep a model's step time steady within a process, and the same across processes.

A sweep measures each case in a fresh process, so a figure is only repeatable if a fresh process reaches
the same steady state every time. On the CPU, ``steady_process``:

- keeps freed memory in glibc's heap (no mmap'd chunks, no trimming), so a step's activations are not
  page-faulted in again every step; PyTorch's own CPU launcher preloads an allocator set up the same way;
- puts tensors of 2 MB and more in transparent huge pages (PyTorch's ``THP_MEM_ALLOC_ENABLE``), where the
  kernel offers them, so which physical pages a process drew matters less;
- flushes denormal floats to zero: a model trained on one fixed batch drives its gradients into
  denormals, which the CPU handles up to 100x slower.

A user who chose an allocator (``LD_PRELOAD``, or ``glibc.malloc`` tunables in ``GLIBC_TUNABLES``) keeps
it, and one who set ``THP_MEM_ALLOC_ENABLE`` keeps that: it is part of what they mean to measure. PyTorch
reads ``THP_MEM_ALLOC_ENABLE`` at its first tensor allocation, so ``steady_process`` must run before any
tensor is made. What was measured and why: benchmarks/RESULTS.md, "Process spread".
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
from collections.abc import Iterator

import torch

# mallopt(3) parameters, from glibc's <malloc.h>.
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_TRIM_NEVER = 2**31 - 1  # mallopt takes an int: trim only once 2 GiB at the heap's top is free

GLIBC_KEEPS_MEMORY = "glibc malloc keeps freed memory (no mmap, no trim)"
HUGE_PAGES = "tensors of 2 MB or more in transparent huge pages"
THP_ENV = "THP_MEM_ALLOC_ENABLE"  # read by PyTorch's CPU allocator (c10/core/alloc_cpu.cpp)
_THP_MODE = "/sys/kernel/mm/transparent_hugepage/enabled"
_USERS_THP = os.environ.get(THP_ENV)  # as the process started: steady_process may set it later


def _huge_pages_available() -> bool:
    """The kernel hands out transparent huge pages to a region that asks (``always`` or ``madvise``)."""
    try:
        with open(_THP_MODE, encoding="ascii") as mode:
            return "[never]" not in mode.read()
    except OSError:
        return False


def _user_allocator() -> str | None:
    """The allocator setting the user made themselves, if any (valgrind's own preloaded libraries are none)."""
    preloaded = [path for path in os.environ.get("LD_PRELOAD", "").split(":") if path]
    if any(not os.path.basename(path).startswith("vgpreload_") for path in preloaded):
        return f"LD_PRELOAD={os.environ['LD_PRELOAD']}"
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    if "glibc.malloc." in tunables:
        return f"GLIBC_TUNABLES={tunables}"
    return None


def huge_pages_setting() -> str | None:
    """What ``steady_process`` does about huge pages, in words; None where it does nothing."""
    if _user_allocator():
        return None  # the user's allocator, as they set it up
    if _USERS_THP is not None:
        return f"the user's: {THP_ENV}={_USERS_THP}"
    return HUGE_PAGES if _huge_pages_available() else None


def malloc_setting() -> str:
    """What ``steady_process`` does to the allocator on this machine, in words (recorded with results)."""
    user = _user_allocator()
    if user:
        return f"the user's: {user}"
    glibc = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
    setting = GLIBC_KEEPS_MEMORY if glibc else "system default (not glibc)"
    huge = huge_pages_setting()
    return f"{setting}; {huge}" if huge else setting


def steady_process() -> str:
    """Flush denormals, keep freed memory in this process and put large tensors in huge pages; returns
    ``malloc_setting()``.

    A sweep calls it first thing in each case's process, before any tensor is made. Call it before
    building a model for in-process figures (``collect_diagnostics``) that match a sweep's.
    """
    torch.set_flush_denormal(True)
    setting = malloc_setting()
    if setting.startswith(GLIBC_KEEPS_MEMORY):
        libc = ctypes.CDLL(None)
        if not (libc.mallopt(_M_MMAP_MAX, 0) and libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_NEVER)):
            raise OSError("mallopt refused to keep freed memory")  # glibc accepts both: never expected
    if huge_pages_setting() == HUGE_PAGES:
        os.environ[THP_ENV] = "1"
    return setting


@contextlib.contextmanager
def intra_op_threads(threads: int | None) -> Iterator[None]:
    """torch's intra-op threads at ``threads`` for the block (None: as they are), as they were after it."""
    before = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)
