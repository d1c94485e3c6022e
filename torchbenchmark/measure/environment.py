"""The environment a sweep ran in, recorded beside its results so figures can be compared later."""

from __future__ import annotations

import datetime
import os
import platform
import socket
import sys
from typing import Any

import torch

from torchbenchmark.measure.schedstat import cpu_share
from torchbenchmark.measure.steady import malloc_setting
from torchbenchmark.results.version import package_version


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_name() -> str:
    """This machine as a calibration kept in a file names it: its host and processor."""
    return f"{socket.gethostname()} ({cpu_name()})"


def collect_environment(device: str, threads: int | None, command: str | None = None) -> dict[str, Any]:
    """Versions, hardware and settings of a run on ``device`` with ``threads`` intra-op threads."""
    on_gpu = device.startswith("cuda")
    return {
        "torchbenchmark": package_version(),
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
        # What each case's process sets for a steady step time: see measure/steady.py.
        "flush_denormal": True,
        "malloc": malloc_setting(),
        "command": command,
        "executable": sys.executable,
        "started_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def check_device(text: str) -> str:
    """The device named as torch names it (``auto`` picks cuda when there is one); ValueError naming why not."""
    if text == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    unknown = f"unknown device {text!r}; expected auto, cpu, cuda or cuda:N"
    try:
        device = torch.device(text)  # refuses what torch would refuse later ("cuda:00", "cuda:-1")
    except (RuntimeError, ValueError, TypeError):
        raise ValueError(unknown) from None
    if device.type == "cpu":
        return "cpu"
    if device.type != "cuda":
        raise ValueError(unknown)
    if not torch.cuda.is_available():
        raise ValueError(f"device {text}: no CUDA GPU is available here; use cpu")
    if device.index is not None and device.index >= torch.cuda.device_count():
        raise ValueError(f"device {text}: there are {torch.cuda.device_count()} CUDA devices")
    return str(device)


def check_ranks(device: str, world_size: int, threads: int | None) -> str | None:
    """A warning when ``world_size`` ranks of ``threads`` threads each outnumber this machine's cores; None
    when they fit. ValueError when they are CUDA ranks and outnumber the GPUs (each rank takes one)."""
    if world_size <= 1:
        return None
    if device.startswith("cuda") and world_size > torch.cuda.device_count():
        count = torch.cuda.device_count()
        raise ValueError(f"{world_size} ranks on CUDA take one GPU each; this machine has {count} CUDA device{'s' * (count != 1)}")
    cores, threads = os.cpu_count() or 1, threads or cpu_share(world_size)
    if world_size * threads <= cores:
        return None
    return (
        f"{world_size} ranks x {threads} thread{'s' * (threads != 1)} is more than this machine's {cores} cores: "
        "the ranks will wait for CPUs, and their figures show it"
    )
