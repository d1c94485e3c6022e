"""The profiler's native libraries log to stderr on their own: set their levels before they first read them.

Two libraries under ``torch.profiler`` print lines that read like failures but are not:

- **Kineto** (the profiler's engine) prints a ``USDT: ... profiler_start`` and ``profiler_stop`` pair
  for every profile, and on a machine without a GPU ``ERROR: ... gpuGetDeviceCount failed with code 35``.
  Its level is ``KINETO_LOG_LEVEL``, read once, when the process starts its first profile: 4 shows
  errors and those markers (5), 6 shows nothing.
- **c10** (torch's core) prints ``[W ... CPUAllocator.cpp] Memory block of unknown size was allocated
  before the profiling started`` whenever a memory profile (the detailed one) sees a tensor from before
  it freed. Its level is ``TORCH_CPP_LOG_LEVEL``, read once, when torch is imported; ``ERROR`` keeps its
  errors and drops its warnings. Python warnings (``TORCH_WARN``) do not go through it.

A value the user set is kept. Each case of a sweep logs at the levels of ``CASE_LOG_LEVELS`` into its
own ``.log`` file, so what the profiler said about a case is kept there rather than on the terminal.
"""

from __future__ import annotations

import os
import sys

# Nothing from Kineto; c10's errors only.
QUIET_LEVELS = {"KINETO_LOG_LEVEL": "6", "TORCH_CPP_LOG_LEVEL": "ERROR"}
# A case's log keeps the profiler's errors and warnings: it is where a failed case is read.
CASE_LOG_LEVELS = {"KINETO_LOG_LEVEL": "4", "TORCH_CPP_LOG_LEVEL": "WARNING"}

_set_here: set[str] = set()  # the variables this module set, as opposed to the user


def quiet_native_logs() -> None:
    """Set the quiet levels, unless the user set their own; call before the first profile.

    ``TORCH_CPP_LOG_LEVEL`` only counts before torch is imported, so it is left alone after: a
    process that imported torch before this package may see c10's allocator warning once.
    """
    names = ["KINETO_LOG_LEVEL"] + (["TORCH_CPP_LOG_LEVEL"] if "torch" not in sys.modules else [])
    for name in names:
        if name not in os.environ:
            os.environ[name] = QUIET_LEVELS[name]
            _set_here.add(name)


def case_log_environment(environ: dict[str, str]) -> dict[str, str]:
    """``environ`` with the case-log levels wherever the user set none (for a case's process)."""
    user = {name: value for name, value in environ.items() if name not in _set_here}
    return {**environ, **CASE_LOG_LEVELS, **user}
