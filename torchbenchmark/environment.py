"""The environment a sweep ran in, recorded beside its results so figures can be compared later."""

from __future__ import annotations

import datetime
import os
import platform
import socket
import sys
from typing import Any

import torch

from torchbenchmark.steady import malloc_setting


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def collect_environment(device: str, threads: int | None, command: str | None = None) -> dict[str, Any]:
    """Versions, hardware and settings of a run on ``device`` with ``threads`` intra-op threads."""
    from torchbenchmark import __version__

    on_gpu = device.startswith("cuda")
    return {
        "torchbenchmark": __version__,
        "torch": torch.__version__,
        "cuda": torch.version.cuda if on_gpu else None,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "host": socket.gethostname(),
        "device": device,
        "device_name": torch.cuda.get_device_name(torch.device(device)) if on_gpu else cpu_name(),
        "cpu": cpu_name(),
        "cpu_count": os.cpu_count(),
        "threads": threads or torch.get_num_threads(),
        # What each case's process sets for a steady step time: see torchbenchmark/steady.py.
        "flush_denormal": True,
        "malloc": malloc_setting(),
        "command": command,
        "executable": sys.executable,
        "started_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
