"""The profiler's native libraries log to stderr on their own: their levels, set before they first read them.

Two libraries under ``torch.profiler`` print lines that read like failures but are not:

- **Kineto** (the profiler's engine) prints a ``USDT: ... profiler_start`` and ``profiler_stop`` pair
  for every profile, and on a machine without a GPU ``ERROR: ... gpuGetDeviceCount failed with code 35``.
  Its level is ``KINETO_LOG_LEVEL``, read once, when the process starts its first profile: 4 shows
  errors and those markers (5), 6 shows nothing.
- **c10** (torch's core) prints ``[W ... CPUAllocator.cpp] Memory block of unknown size was allocated
  before the profiling started`` whenever a memory profile sees a tensor from before it freed. Its level
  is ``TORCH_CPP_LOG_LEVEL``, read once, when torch is imported.

Where the tool's own global module hook is on (the module naming of the detailed profile, the cache probe,
the FLOP counter's module tracker), torch warns that a compiled module makes global hooks fire once more;
``own_global_hook`` keeps that warning, meant for a user who set such a hook, from the case's log.

Importing this package sets neither. ``quiet_kineto`` sets Kineto's level, unless the user set one, just
before a profile is taken in this process. A sweep's case runs in a process of its own, started with the
levels of ``case_log_environment``, so what the profiler says about a case goes to the case's ``.log``.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator, Mapping

QUIET_KINETO_LEVEL = "6"  # nothing from Kineto in a process of the user's own
# A case's log is where a failed case is read. On a GPU it keeps Kineto's errors and stages (3): they
# say why a trace lacks GPU events. On a CPU Kineto's only messages are noise about the GPU it does
# not need (5 keeps only its start/stop markers). c10's warnings are kept, unless the user chose a level.
CASE_KINETO_LEVEL = {"cuda": "3", "cpu": "5"}
CASE_CPP_LOG_LEVEL = "WARNING"


def quiet_kineto() -> None:
    """Silence Kineto in this process unless the user chose a level; effective before the first profile."""
    os.environ.setdefault("KINETO_LOG_LEVEL", QUIET_KINETO_LEVEL)


def case_log_environment(environ: Mapping[str, str], device: str) -> dict[str, str]:
    """``environ`` with a case's log levels for ``device``: Kineto's always, c10's where the user set none."""
    env = {**environ, "KINETO_LOG_LEVEL": CASE_KINETO_LEVEL["cuda" if device.startswith("cuda") else "cpu"]}
    env.setdefault("TORCH_CPP_LOG_LEVEL", CASE_CPP_LOG_LEVEL)
    return env


@contextlib.contextmanager
def own_global_hook() -> Iterator[None]:
    """For the life of this tool's own global module hook: torch's warning that a compiled module makes global
    hooks fire once more (for its ``OptimizedModule``) is not for the user, who set none. That extra call is
    the one the profiler records and names too, and it recompiles nothing."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Using `torch\.compile\(module\)` when there are global hooks", category=UserWarning)
        yield
