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
from typing import Any

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
SINGLE_PROCESS = {"backend": None, "rank": 0, "world_size": 1}


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
                if not torch.distributed.is_available() or not torch.distributed.is_initialized():
                    # torch writes distributedInfo for a rank of a process group only; HTA reads
                    # every trace's rank from it. Spliced in after the opening brace: no re-parse.
                    opening = source.read(64)
                    brace = opening.index(b"{")  # a Chrome trace is one JSON object: ValueError otherwise
                    target.write(opening[: brace + 1])
                    target.write(b'"distributedInfo": ' + json.dumps(SINGLE_PROCESS).encode() + b",")
                    target.write(opening[brace + 1 :])
                shutil.copyfileobj(source, target, EXPORT_CHUNK)
        finally:
            raw.unlink(missing_ok=True)
        os.replace(partial, trace_path)
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
