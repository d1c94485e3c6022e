"""The two profiles of a case, driven through ``step_fn`` with a profiler schedule, and their traces.

light:    CPU activity (plus CUDA on a GPU) and nothing else, so it distorts the step as little as
          torch.profiler can; its trace is what the verdict is computed from.
detailed: shapes, memory events and Python stacks, for follow-up questions (which op, which line,
          which shape); it distorts much more and is kept for reading, not for timing. It asks for
          FLOPs too, but this torch exports none in the trace: a case's FLOPs come from measure.flops.
          Its Python stacks name each nn.Module call (``with_stack`` records them in eager mode;
          ``with_modules`` only for TorchScript, so it is not asked for), and its warmup step, which it
          does not record, runs with a module hook that learns each module's path (``ModuleNames``):
          what ``analyze.attribution`` reads. torch.profiler drops the call of a module whose class name
          it cannot write (a character outside printable ASCII, a quote, a backslash), and its events fall
          to its parent's: through the profile such a class goes by a stand-in name, mapped back.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import json
import os
import shutil
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import torch
from torch.profiler import ProfilerActivity, profile, schedule

from torchbenchmark.analyze.stats import StepStats
from torchbenchmark.analyze.timesplit import StepSample
from torchbenchmark.measure.harness import StepTimer, device_sync, timed_call
from torchbenchmark.measure.native_logs import own_global_hook, quiet_kineto
from torchbenchmark.measure.schedstat import StepAccount

KINDS = ("light", "detailed")
DETAILED_OPTIONS = {"record_shapes": True, "profile_memory": True, "with_stack": True, "with_flops": True}
# Level 3: export time is sweep time, and level 9 (torch's own) takes several times as long for traces
# only somewhat smaller (benchmarks/RESULTS.md).
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
    samples: tuple[StepSample, ...] = ()  # what the kernel saw of each active step (measure.schedstat)
    module_names: dict[str, str] | None = None  # detailed: the profiler's module names to their paths (ModuleNames)
    class_names: dict[str, str] | None = None  # detailed: stand-in names of classes torch.profiler cannot name, to theirs
    naming_s: float = 0.0  # wall time spent naming them, beside the warmup step's

    @property
    def names(self) -> tuple[dict[str, str] | None, dict[str, str] | None]:
        """What ``analyze.attribution`` needs to name the trace's modules: ``module_names`` and ``class_names``."""
        return self.module_names, self.class_names


def run_profile(model: Any, mode: str, device: torch.device, kind: str, active: int, trace_path: Path) -> ProfileRun:
    """Profile ``active`` steps of ``model`` and export them as a gzipped Chrome trace at ``trace_path``."""
    if kind not in KINDS:
        raise ValueError(f"unknown profile kind {kind!r}")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    options = DETAILED_OPTIONS if kind == "detailed" else {}
    quiet_kineto()
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
        except OSError as error:  # a full disk: the row names the trace it could not write
            if error.filename is None:
                raise OSError(error.errno, error.strerror, str(trace_path)) from error
            raise
        finally:  # on every path: a failed export (a full disk) leaves no temporary file
            for path in (raw, raw.with_name(f"{raw.name}.tmp"), partial):  # .tmp: torch's own, left by a full disk
                path.unlink(missing_ok=True)
        export_s = time.perf_counter() - started

    started = time.perf_counter()
    naming = ModuleNames(model) if kind == "detailed" else None  # during the warmup step only (wait is 0)
    with (
        naming.stand_ins() if naming else contextlib.nullcontext(),  # left last: the export reads the names
        profile(
            activities=activities, schedule=schedule(wait=wait, warmup=warmup, active=active, repeat=1), on_trace_ready=export, **options
        ) as prof,
    ):
        account = StepAccount()  # read before the profiler's step: its bookkeeping is no step's
        timer = StepTimer(device_sync(device), after_step=lambda: (account(), naming and naming.stop(), prof.step()))
        account.start()
        with naming or contextlib.nullcontext():
            timed_call(model, mode, wait + warmup + active, timer)
    account.clock.close()
    return ProfileRun(
        kind=kind,
        steps=StepStats.from_ns(timer.durations_ns[wait + warmup :]),
        trace_path=trace_path,
        profile_s=time.perf_counter() - started,
        export_s=export_s,
        samples=tuple(account.steps[wait + warmup :]),
        module_names=naming.names() if naming else None,
        class_names=dict(naming.stand_in_names) if naming else None,
        naming_s=naming.spent_s if naming else 0.0,
    )


def profiler_writes(name: str) -> bool:
    """Whether torch.profiler's trace keeps a module call of a class so named: printable ASCII, no quote nor
    backslash (it drops the call outright for any other character, or rewrites a quote or a backslash)."""
    return all(" " <= c <= "~" and c not in '"\\' for c in name)


def module_path(prefix: str, name: str, network: torch.nn.Module) -> str:
    """A module's path as a reader finds it in the model: ``name`` in ``network`` under ``prefix``, without
    torch.compile's ``_orig_mod`` wrapper; the child of a root ``Sequential`` under the root's class
    (``Sequential.2``, not a bare ``2``); the root itself by its class."""
    parts = [part for part in name.split(".") if part and part != "_orig_mod"]
    root = type(getattr(network, "_orig_mod", network)).__name__
    if not prefix and parts and parts[0].isdigit():
        parts.insert(0, root)
    return ".".join(part for part in (prefix, *parts) if part) or root


class ModuleNames:
    """The profiler's name of each module a step calls, ``<Class>_<k>``, to its path in the model.

    torch.profiler names the k-th instance of a class that it sees called ``<Class>_<k>``; a global forward
    pre-hook over one step (the detailed profile's warmup step, which it does not record) sees them called
    in the same order. Paths are in ``model.module`` (its own path: its class name), or else in the
    model's attributes that are modules (``net.linear``); a module held elsewhere keeps the profiler's name.
    Used as a context manager: the hook is on from entry until ``stop()`` or exit.
    """

    def __init__(self, model: Any) -> None:
        started = time.perf_counter()
        root = getattr(model, "module", None)
        roots = (
            {"": root} if isinstance(root, torch.nn.Module) else {k: v for k, v in vars(model).items() if isinstance(v, torch.nn.Module)}
        )
        self.paths: dict[int, str] = {}
        for prefix, network in roots.items():
            for name, module in network.named_modules():
                self.paths.setdefault(id(module), module_path(prefix, name, network))
        self.order: dict[str, list[int]] = defaultdict(list)
        self.stand_in_names: dict[str, str] = {}  # a stand-in class name to the class's own
        self._seen: set[int] = set()
        self._classes = [type(module) for network in roots.values() for module in network.modules()]
        self._handle: Any = None
        self._quiet: Any = None
        self.spent_s = time.perf_counter() - started

    def _called(self, module: torch.nn.Module, _: Any) -> None:
        if id(module) not in self._seen:
            self._seen.add(id(module))
            self.order[type(module).__name__].append(id(module))

    @contextlib.contextmanager
    def stand_ins(self) -> Iterator[None]:
        """Each of the model's module classes whose name torch.profiler cannot write, renamed for the block."""
        renamed: dict[type, str] = {}
        try:
            for cls in dict.fromkeys(self._classes):
                if not profiler_writes(name := cls.__name__):
                    with contextlib.suppress(TypeError):  # a class of an extension's, whose name is fixed: left as it is
                        cls.__name__ = f"RenamedModule{len(renamed)}"  # its instances numbered _0, _1, ... by the profiler
                        renamed[cls], self.stand_in_names[cls.__name__] = name, name
            yield
        finally:
            for cls, name in renamed.items():
                cls.__name__ = name

    def __enter__(self) -> ModuleNames:
        self._quiet = own_global_hook()
        self._quiet.__enter__()
        self._handle = torch.nn.modules.module.register_module_forward_pre_hook(self._called)
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None
            self._quiet.__exit__(None, None, None)

    def names(self) -> dict[str, str]:
        return {f"{cls}_{k}": self.paths[i] for cls, ids in self.order.items() for k, i in enumerate(ids) if i in self.paths}


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
