"""What one diagnostics case is asked to do: a frozen ``CaseSpec``, built once and passed whole.

The command line and the Python API build a spec; the sweep serialises it once to the case's process
(``to_json``/``from_json``), and the engine reads every option from it. A new option of a case is one
field here, not a parameter threaded through every layer.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from torchbenchmark.contract import MODES

EAGER = "eager"
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune")
DEFAULT_BACKEND = "inductor"


def ddp_variant(world_size: int) -> str:
    """The variant of a case run as DistributedDataParallel: its rows sit beside the single-process ones."""
    return f"ddp{world_size}"


@dataclasses.dataclass(frozen=True)
class Budget:
    """How much time a case may spend where. Time limits are targets; step counts are floors and caps."""

    warmup_s: float = 8.0  # stop waiting for a steady step time after this long (then steady=False)
    warmup_window: int = 3  # steady when the median of the last window matches the window before
    # (fewer, down to 2, when two windows of steps would not fit in warmup_s)
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
        floor, seconds, cap = (
            (self.light_steps, self.light_s, 50) if kind == "light" else (self.detailed_steps, self.detailed_s, 5)
        )
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
    """One model x mode x device x variant, and every option its measurement takes."""

    model: str  # a registered name or a plug-in spec (package.module:Class, path/file.py:Class)
    mode: str
    device: str = "cpu"  # as torch.device reads it: cpu, cuda, cuda:N
    batch_size: int | None = None  # None: the model's default for this device and mode
    compile: Compile | None = None  # None: the eager model; else its module compiled (torchbenchmark.variants)
    budget: Budget = Budget()
    threads: int | None = None  # torch intra-op threads; None: torch's default
    detailed: bool = True  # take the detailed profile too
    scaling: bool = False  # also bound the overhead by batch-size scaling (dispatch.scaling_estimate)
    top_ops: int = 10  # rows in the top-ops table
    timeout_s: float = 600.0  # the case's process, start-up included
    repeat: int = 0  # which of the sweep's --repeat processes this is (0: the first, the one that profiles)
    world_size: int = 1  # ranks: above 1, a train case run as DistributedDataParallel (torchbenchmark/distributed.py)

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model:
            raise ValueError(f"model must be a non-empty string (a name or plug-in spec), got {self.model!r}")
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; expected one of {', '.join(MODES)}")
        if self.batch_size is not None and self.batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {self.batch_size}")
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"threads must be at least 1, got {self.threads}")
        if self.world_size < 1:
            raise ValueError(f"world_size must be at least 1, got {self.world_size}")
        if self.world_size > 1 and self.mode != "train":
            raise ValueError(f"DistributedDataParallel runs train cases only, not {self.mode!r}")
        if self.world_size > 1 and self.compile is not None:
            raise ValueError("DistributedDataParallel cases run eager modules: compile and world_size do not combine")
        if not self.timeout_s > 0:
            raise ValueError(f"timeout_s must be more than 0, got {self.timeout_s}")

    @property
    def variant(self) -> str:
        """Part of the row's key: ``eager``, the compiled variant's name, or ``ddp<N>`` for DistributedDataParallel."""
        if self.world_size > 1:
            return ddp_variant(self.world_size)
        return EAGER if self.compile is None else self.compile.variant

    @property
    def file_stem(self) -> str:
        """``<mode>-<device>``, then ``-<variant>`` for any but eager: every file a case writes starts so."""
        stem = f"{self.mode}-{self.device}"  # the full device: cuda:0 and cuda:1 keep their own files
        return stem if self.variant == EAGER else f"{stem}-{self.variant}"

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

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> CaseSpec:
        data = json.loads(text)
        compile_options = Compile(**data["compile"]) if data.get("compile") else None
        return cls(**{**data, "budget": Budget(**data["budget"]), "compile": compile_options})
