"""What one diagnostics case is asked to do: a frozen ``CaseSpec``, built once and passed whole.

The command line and the Python API build a spec; a sweep serialises it once, in a ``CaseRequest``, to
the case's process, and the engine reads every option from it. A new option of a case is one field here
(and the flag that sets it): the request, the sweep's flags in the run record and the shards' agreement
check all follow the dataclass.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from torchbenchmark.results.codec import decode_object, encode
from torchbenchmark.results.schema import EAGER, MODES

COMPILE_MODES = ("default", "reduce-overhead", "max-autotune")
# Reduced precision (measure.precision), each with its arithmetic's type: autocast to a 16-bit type
# (amp-), or the model and its inputs cast to bfloat16.
PRECISIONS = {"amp-bf16": "bfloat16", "amp-fp16": "float16", "bf16": "bfloat16"}
CHANNELS_LAST = "channels-last"  # the memory-layout variant's part of a variant name
DEFAULT_BACKEND = "inductor"
DEFAULT_TIMEOUT_S = 600.0
DEFAULT_INSTRUCTIONS_CAP_S = 300.0  # the most a count may be expected to take; a longer one is skipped
DEFAULT_OUT = "traces"


def ddp_variant(world_size: int) -> str:
    """The variant of a case run as DistributedDataParallel: its rows sit beside the single-process ones."""
    return f"ddp{world_size}"


@dataclasses.dataclass(frozen=True)
class Budget:
    """How much time a case may spend where. Time limits are targets; step counts are floors and caps."""

    warmup_s: float = 8.0  # stop waiting for a steady step time after this long (then steady=False)
    warmup_window: int = 3  # steady when the median of the last window matches the window before
    warmup_tolerance: float = 0.05
    measure_s: float = 2.0  # time spent on the measured steps of one window, within the floor and cap below
    min_steps: int = 3  # per window
    max_steps: int = 100_000  # a cap for runaway counts only: a 0.2 ms step still gets its 2 s
    windows: int = 3  # measure windows until two agree, at most this many (at least two)...
    window_tolerance: float = 0.03  # ...within this much of each other's median
    steps: int | None = None  # measure exactly this many steps instead, in one window
    edge_calls: int = 3  # whole niter=1 calls timed to price the edge, at most...
    edge_s: float = 1.0  # ...until this long is spent (at least one call): slow steps dwarf their edge
    light_steps: int = 3  # active steps in the light profile, at least...
    light_s: float = 1.0  # ...and as many more as fit in this long, up to 50: fast steps need more for a median
    detailed_steps: int = 1  # active steps in the detailed profile, at least...
    detailed_s: float = 0.5  # ...and as many more as fit in this long, up to 5: it is costly per op

    def __post_init__(self) -> None:
        for name in ("min_steps", "max_steps", "edge_calls", "light_steps", "detailed_steps", "warmup_window"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.windows < 2:
            raise ValueError("windows must be at least 2: one window cannot be checked against another")
        if self.steps is not None and self.steps < 1:
            raise ValueError("steps must be at least 1")

    def measured_steps(self, step_estimate_ns: float) -> int:
        if self.steps is not None:
            return self.steps
        wanted = math.ceil(self.measure_s * 1e9 / max(step_estimate_ns, 1.0))
        return max(self.min_steps, min(self.max_steps, wanted))

    def profiled_steps(self, kind: str, step_ms: float) -> int:
        """Active steps for the ``light`` or ``detailed`` profile of a model whose step takes ``step_ms``."""
        floor, seconds, cap = (self.light_steps, self.light_s, 50) if kind == "light" else (self.detailed_steps, self.detailed_s, 5)
        return max(floor, min(cap, int(seconds * 1e3 / max(step_ms, 1e-6))))


@dataclasses.dataclass(frozen=True)
class Compile:
    """How to compile: a ``torch._dynamo.list_backends()`` name and, for inductor, a mode."""

    backend: str = DEFAULT_BACKEND
    mode: str = "default"

    def __post_init__(self) -> None:
        if self.mode not in COMPILE_MODES:
            raise ValueError(f"unknown compile mode {self.mode!r}; expected one of {', '.join(COMPILE_MODES)}")

    @property
    def variant(self) -> str:
        """The row key's variant: the backend, and the mode when it is not the default.

        Dynamo's ``eager`` backend is named ``dynamo-eager`` so its rows never take the eager rows' key.
        """
        name = "dynamo-eager" if self.backend == EAGER else self.backend
        return name if self.mode == "default" else f"{name}-{self.mode}"


@dataclasses.dataclass(frozen=True)
class CaseSpec:
    """One model x mode x device x variant, and every option its measurement takes.

    A spec with no ``model`` is a template: a sweep fills in each case's model and mode.
    """

    model: str = ""  # a registered name or a plug-in spec (package.module:Class, path/file.py:Class)
    mode: str = "train"
    device: str = "cpu"  # as torch.device reads it: cpu, cuda, cuda:N
    batch_size: int | None = None  # None: the model's default for this device and mode
    compile: Compile | None = None  # None: the eager model; else its module compiled (measure.compile)
    budget: Budget = Budget()
    threads: int | None = None  # torch intra-op threads; None: torch's default
    detailed: bool = True  # take the detailed profile too
    scaling: bool = False  # also bound the overhead by batch-size scaling (analyze.scaling.scaling_from_steps)
    top_ops: int = 10  # rows in the top-ops table
    timeout_s: float = DEFAULT_TIMEOUT_S  # the case's process, start-up included
    repeat: int = 0  # which of the sweep's --repeat processes this is (0: the first, the one that profiles)
    world_size: int = 1  # ranks: above 1, a train case run as DistributedDataParallel (run.ddp)
    precision: str | None = None  # one of PRECISIONS; None: float32 (measure.precision)
    channels_last: bool = False  # the module and 4-D inputs in channels_last (measure.precision)
    instructions: bool = False  # also count an eager CPU step's instructions under callgrind (measure.instructions)
    instructions_cap_s: float = DEFAULT_INSTRUCTIONS_CAP_S  # a count estimated to take longer is skipped
    calibration: str | None = None  # a file of this machine's prices, read where it holds them, else written (run.prices)

    def __post_init__(self) -> None:
        if not isinstance(self.model, str):
            raise ValueError(f"model must be a string (a name or plug-in spec), got {self.model!r}")
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; expected one of {', '.join(MODES)}")
        for name in ("batch_size", "threads"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"{name} must be a whole number of at least 1, or None; got {value!r}")
        if not isinstance(self.device, str) or not self.device.strip():
            raise ValueError(f"device must be a string (cpu, cuda, cuda:N), got {self.device!r}")
        kinds = {"compile": ((Compile, type(None)), "Compile or None"), "budget": (Budget, "Budget"), "detailed": (bool, "bool")}
        for name, (kind, shown) in {**kinds, "scaling": (bool, "bool"), "instructions": (bool, "bool")}.items():
            if not isinstance(getattr(self, name), kind):
                raise ValueError(f"{name} must be a {shown}, got {getattr(self, name)!r}")
        for name, least in (("top_ops", 0), ("world_size", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"{name} must be a whole number of at least {least}, got {value!r}")
        if self.world_size > 1 and self.mode != "train":
            raise ValueError(f"DistributedDataParallel runs train cases only, not {self.mode!r}")
        if self.world_size > 1 and self.compile is not None:
            raise ValueError("DistributedDataParallel cases run eager modules: compile and world_size do not combine")
        if self.precision is not None and self.precision not in PRECISIONS:
            raise ValueError(f"unknown precision {self.precision!r}; expected one of {', '.join(PRECISIONS)}")
        if self.world_size > 1 and self.recast:
            raise ValueError("DistributedDataParallel cases run eager modules: precision, channels_last and world_size do not combine")
        for name in ("timeout_s", "instructions_cap_s"):
            seconds = getattr(self, name)
            if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not (math.isfinite(seconds) and 0 < seconds <= 1e9):
                raise ValueError(f"{name} must be a number of seconds more than 0 and at most 1e9; got {seconds!r}")

    @property
    def variant(self) -> str:
        """Part of the row's key: ``eager``, ``ddp<N>`` for DistributedDataParallel, or the variant's parts joined
        by ``+`` in this order: precision, ``channels-last``, the compiled variant (``amp-bf16+channels-last+inductor``)."""
        if self.world_size > 1:
            return ddp_variant(self.world_size)
        parts = [self.precision or "", CHANNELS_LAST if self.channels_last else "", self.compile.variant if self.compile else ""]
        return "+".join(part for part in parts if part) or EAGER

    @property
    def recast(self) -> bool:
        """A precision or layout variant: timed against an eager build of the model beside it (measure.precision)."""
        return self.precision is not None or self.channels_last

    @property
    def device_type(self) -> str:
        return self.device.split(":")[0]

    @property
    def profiles(self) -> bool:
        """Repeats beyond the first only time steps: their profiles would repeat the first's."""
        return self.repeat == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    def replace(self, **changes: Any) -> CaseSpec:
        return dataclasses.replace(self, **changes)

    def flags(self) -> dict[str, Any]:
        """Every option but the case's own model, mode and repeat: what shards of one sweep must share."""
        return {key: value for key, value in encode(self).items() if key not in ("model", "mode", "repeat")}


@dataclasses.dataclass(frozen=True)
class CaseRequest:
    """What a case's process is asked: the spec, where its outputs go, and where to leave its row."""

    spec: CaseSpec
    out_dir: str
    result_path: str = ""  # the single-process worker's row; empty for a DDP rank (it writes to scratch)
    scratch: str = ""  # a DDP case's folder for its ranks' reports
    spawned_at: float = 0.0  # time.time() when the sweep started the process: what process start costs

    def to_json(self) -> str:
        return json.dumps(encode(self))

    @classmethod
    def from_json(cls, text: str) -> CaseRequest:
        return decode_object(cls, json.loads(text))  # type: ignore[no-any-return]
