"""Process settings that keep a model's step time steady within a process, and the same across processes.

A sweep measures each case in a fresh process, so a figure is only repeatable if a fresh process
reaches the same steady state every time. Three things stood in the way on the CPU:

- **glibc's malloc returned freed tensor memory to the kernel every step.** Tensors above its mmap
  threshold get fresh pages on each allocation, and the heap is trimmed when large blocks are freed,
  so each step page-faults its activations in again: `mobilenet_v2` eval took 160,000 minor faults
  (about 600 MB of zeroed pages) per step. The threshold adapts to the sizes the process has freed
  so far, so how much of a step went to faults was decided by the order of early allocations, and
  fixed for the life of the process: four processes taking turns measured 205 to 264 ms a step.
  Keeping freed memory in the heap (no mmap'd chunks, no trimming) made it 0 faults and 127 to
  133 ms in every process (``benchmarks/process_spread.py``), for 1 to 3% more peak memory. On a
  GPU PyTorch's caching allocator already keeps freed memory; on the CPU, PyTorch's own launcher
  (``torch.backends.xeon.run_cpu``) preloads jemalloc or tcmalloc configured to keep it, for the same
  reason.
- **Which physical pages a process's tensors landed on.** Memory comes in 4 KB pages scattered over
  physical memory, and which of them collide in the caches, or miss the TLB, is drawn anew in every
  process and fixed for its life. With tensors of 2 MB and more in transparent huge pages (PyTorch's
  own ``THP_MEM_ALLOC_ENABLE``: 2 MB aligned, and asked for huge pages with ``madvise``), processes
  taking turns ran 1 to 5% faster in every run, and `dlrm` train's processes came within 2.1% and
  1.5% of each other against 5.7% and 3.7% with 4 KB pages; for `mobilenet_v2` and `efficientnet_b0`
  eval the spread changed by no clear amount (``benchmarks/process_spread.py --setups
  steady,small_pages``; RESULTS.md). Where the kernel's huge pages are off
  (``/sys/kernel/mm/transparent_hugepage/enabled`` reads ``[never]``) nothing changes.
- **Denormal floats.** A model trained on one fixed batch drives its loss to zero and its gradients
  into denormals, which the CPU handles up to 100x slower: `vit_b_16`'s train step went from 0.7 s to
  30 s mid-measurement. Real training rarely gets there, so they are flushed to zero.

A user who chose an allocator already (``LD_PRELOAD``, or ``glibc.malloc`` tunables in
``GLIBC_TUNABLES``) keeps it, huge pages or not, and so does one who set ``THP_MEM_ALLOC_ENABLE``:
that choice is part of what they mean to measure. PyTorch reads ``THP_MEM_ALLOC_ENABLE`` at its first
tensor allocation, so ``steady_process`` must run before any tensor is made.
"""

from __future__ import annotations

import ctypes
import os
import platform

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
    """The allocator setting the user made themselves, if any."""
    if os.environ.get("LD_PRELOAD"):
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
