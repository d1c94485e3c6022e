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

A value the user set is kept. Each case of a sweep logs into its own ``.log`` file at the levels of
``case_log_environment``, so what the profiler says about a case goes there, not to the terminal.
"""

from __future__ import annotations

import os
import sys

# Nothing from Kineto; c10's errors only.
QUIET_LEVELS = {"KINETO_LOG_LEVEL": "6", "TORCH_CPP_LOG_LEVEL": "ERROR"}
# A case's log is where a failed case is read. On a GPU it keeps Kineto's errors and stages (3): they
# say why a trace lacks GPU events. On a CPU Kineto's only messages are noise about the GPU it does
# not need (5 keeps only its start/stop markers). c10's warnings are kept on both.
CASE_KINETO_LEVEL = {"cuda": "3", "cpu": "5"}
CASE_CPP_LOG_LEVEL = "WARNING"

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


def case_log_environment(environ: dict[str, str], device: str) -> dict[str, str]:
    """``environ`` with a case's log levels for ``device``: Kineto's always, c10's where the user set none."""
    env = {**environ, "KINETO_LOG_LEVEL": CASE_KINETO_LEVEL["cuda" if device.startswith("cuda") else "cpu"]}
    if "TORCH_CPP_LOG_LEVEL" not in environ or "TORCH_CPP_LOG_LEVEL" in _set_here:
        env["TORCH_CPP_LOG_LEVEL"] = CASE_CPP_LOG_LEVEL
    return env
