"""The two profiles of a case, driven through ``step_fn`` with a profiler schedule, and their traces.

light:    CPU activity (plus CUDA on a GPU) and nothing else, so it distorts the step as little as
          torch.profiler can; its trace is what the verdict is computed from.
detailed: shapes, memory events and Python stacks, for follow-up questions (which op, which line,
          which shape); it distorts much more and is kept for reading, not for timing. It asks for
          FLOPs too, but this torch exports none in the trace: a case's FLOPs come from costs.py.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, BinaryIO

import torch
from torch.profiler import ProfilerActivity, profile, schedule

from torchbenchmark.harness import StepTimer, device_sync, timed_call
from torchbenchmark.stats import StepStats

KINDS = ("light", "detailed")
DETAILED_OPTIONS = {"record_shapes": True, "profile_memory": True, "with_stack": True, "with_flops": True}
# Level 3 compresses a Chrome trace about 8x faster than torch's level 9, for files about 30% larger
# (benchmarks/RESULTS.md): export time is sweep time, and the traces stay small.
GZIP_LEVEL = 3
EXPORT_CHUNK = 1 << 20
# Every trace says which rank wrote it: Holistic Trace Analysis (HTA) reads a folder of traces as the
# ranks of one job and needs ``distributedInfo.rank`` in each; a case runs as a single process.
SINGLE_PROCESS_INFO = {"rank": 0, "world_size": 1, "backend": "none"}


@dataclasses.dataclass(frozen=True)
class ProfileRun:
    kind: str
    steps: StepStats  # the active steps, timed as in characterisation
    trace_path: Path
    profile_s: float  # wall time of the profiled call, export included
    export_s: float


def trace_name(mode: str, device: torch.device, kind: str, variant: str = "eager") -> str:
    """``<mode>-<device>[-<variant>].pt.trace.json.gz``, or ``...-detailed...`` for the detailed profile; the
    full device (``cuda:1``), so cases on two GPUs of one machine keep their own traces."""
    suffix = ("" if variant == "eager" else f"-{variant}") + ("" if kind == "light" else f"-{kind}")
    return f"{mode}-{device}{suffix}.pt.trace.json.gz"


def run_profile(model: Any, mode: str, device: torch.device, kind: str, active: int, trace_path: Path) -> ProfileRun:
    """Profile ``active`` steps of ``model`` and export them as a gzipped Chrome trace at ``trace_path``."""
    if kind not in KINDS:
        raise ValueError(f"unknown profile kind {kind!r}")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    options = DETAILED_OPTIONS if kind == "detailed" else {}
    # The light profile skips a step so the profiler's start-up is not in the warmup step it records;
    # the detailed one is costly per step, so it records as few steps as it can.
    wait, warmup = (1, 1) if kind == "light" else (0, 1)
    export_s = 0.0

    def export(prof: profile) -> None:
        nonlocal export_s
        started = time.perf_counter()
        trace_path.parent.mkdir(parents=True, exist_ok=True)
        # Written under a temporary name and renamed, so a crash never leaves half a trace.
        partial = trace_path.with_name(f".{trace_path.name}.{os.getpid()}.partial")
        raw = partial.with_suffix(".json")
        try:
            # torch would gzip a .gz path itself, at level 9: several seconds for a large trace.
            prof.export_chrome_trace(str(raw))
            with open(raw, "rb") as source, gzip.open(partial, "wb", compresslevel=GZIP_LEVEL) as target:
                _copy_with_distributed_info(source, target)
            os.replace(partial, trace_path)
        finally:  # on every path: a failed export (a full disk) leaves no temporary file
            raw.unlink(missing_ok=True)
            partial.unlink(missing_ok=True)
        export_s = time.perf_counter() - started

    started = time.perf_counter()
    with profile(
        activities=activities,
        schedule=schedule(wait=wait, warmup=warmup, active=active, repeat=1),
        on_trace_ready=export,
        **options,
    ) as prof:
        timer = StepTimer(device_sync(device), after_step=prof.step)
        timed_call(model, mode, wait + warmup + active, timer)
    return ProfileRun(
        kind=kind,
        steps=StepStats.from_ns(timer.durations_ns[wait + warmup :]),
        trace_path=trace_path,
        profile_s=time.perf_counter() - started,
        export_s=export_s,
    )


def _copy_with_distributed_info(source: BinaryIO, target: BinaryIO) -> None:
    """Copy a Chrome trace, adding ``distributedInfo`` as its first key unless it has one.

    torch writes ``distributedInfo`` itself when a process group is running; otherwise the key goes
    in front of the object's first key, so a trace of any size is streamed, never parsed.
    """
    head = source.read(EXPORT_CHUNK)
    brace = head.find(b"{")
    if brace < 0 or torch.distributed.is_available() and torch.distributed.is_initialized():
        target.write(head)
    else:
        info = json.dumps({"distributedInfo": SINGLE_PROCESS_INFO})[1:-1].encode()
        target.write(head[: brace + 1] + info + b"," + head[brace + 1 :])
    shutil.copyfileobj(source, target, EXPORT_CHUNK)
