"""Instructions a case's step executes, counted under valgrind's callgrind in a child process (``--instructions``).

A wall-time figure moves with whatever else the machine runs; an instruction count does not, so a
comparison can call a change of 1% on a shared, noisy runner. The parent (``count_case``) decides whether a
case can be counted and at what cost, then runs this module as a script under callgrind. The child builds
the case's model as the case does, on one intra-op thread, starts uninstrumented (callgrind's start-up is
then three times faster), warms the step up, turns instrumentation on, and counts a few runs of steps with
collection on for those steps alone, each dumped to a file of its own (``torch._C._valgrind_toggle`` and
``_valgrind_toggle_and_dump_stats``, as ``torch.utils.benchmark``'s ``collect_callgrind`` does). A count
cannot see what runs the same instructions slower: memory stalls, other threads, the GPU. What was
measured: docs/measurement.md.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import logging
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import torch

from torchbenchmark.measure.steady import steady_process
from torchbenchmark.registry import model_class
from torchbenchmark.results.schema import EAGER, Instructions
from torchbenchmark.results.spec import DEFAULT_INSTRUCTIONS_CAP_S, CaseSpec

log = logging.getLogger(__name__)
Runner = Callable[..., "subprocess.CompletedProcess[str]"]  # runs a command as subprocess.run does

METHOD = "callgrind"
VALGRIND_MISSING = "valgrind not found: install it (apt-get install valgrind) to count instructions"
COUNTS = 5  # counted runs of steps: the median and spread are over these
# Each count covers at least this many instructions, one step at least, sized from a first step counted
# alone: the interpreter's occasional retries at specialising an instruction, and the allocator's changing
# free lists, cost tens of thousands of instructions in one step and not the next, a share of a short step
# that a run of them averages out.
COUNT_INSTRUCTIONS = 40_000_000
COUNT_NATIVE_S = 0.015  # about what COUNT_INSTRUCTIONS take natively: the shortest a count runs
MOST_STEPS_PER_COUNT = 200
# Uncounted steps before, one call each as counted: Python specialises the code of a call after several
# calls, and the first calls hold lazy set-up (dispatch tables, allocator pools, caches).
WARMUP_STEPS = 10
# Measured on a shared 2-core VM (docs/measurement.md): Python, torch and this package started under
# callgrind uninstrumented, and instrumentation turned on; then how many times slower than natively a model
# is built and stepped there, at the slow end: 6x to 130x for most, 2000x for soft_actor_critic's train step.
STARTUP_S = 40.0
SLOWDOWN = 100.0
# Of what is left of the case's timeout (counted from when the case's engine began), kept back: the process's
# start and imports before that, and writing the row after the count.
RESERVE_S = 15.0
# Every thread pool at one thread and str hashes seeded: a count that depends neither on the machine's cores
# nor on the process's random hash seed.
CHILD_ENVIRONMENT = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
# glibc's allocator, set up before the child starts: as every case's process has it (measure.steady: freed
# memory kept, never trimmed), and more. No fastbins: glibc consolidates them when a large block is freed,
# millions of instructions in one count and none in the next. A per-thread cache of 65,535 freed blocks a
# size, not 7: the rest go back to the free lists and are merged with their neighbours at a cost set by
# where the heap put them, so one build's counts moved with the length of its command line, and spread
# 0.04% to 0.8% (docs/measurement.md).
GLIBC_COUNTING = "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=2147483647:glibc.malloc.mxfast=0:glibc.malloc.tcache_count=65535"
DUMP_NAME = "callgrind.out.%p"  # callgrind puts the process id for %p, and ".<part>" after each dump asked for
DUMP_PATTERN = "callgrind.out.*"
_DUMP_TRIGGER = "Client Request"  # a dump the child asked for; the one at exit says "Program termination"


@dataclasses.dataclass(frozen=True)
class Request:
    """What the child counts: the case's model, built as the case builds it, and how many steps."""

    model: str  # a registered name or a plug-in spec, as the case's spec names it
    mode: str
    batch_size: int | None = None  # as the case asked (None: the model's default), so the same batch runs
    config: dict[str, Any] = dataclasses.field(default_factory=dict)  # the model's constructor options
    dumps: str = ""  # the folder callgrind writes its counts in: the child reads its first step's there
    counts: int = COUNTS
    warmup_steps: int = WARMUP_STEPS

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Request:
        return cls(**json.loads(text))


def steps_per_count(first_step: int) -> int:
    """Steps in one count, from the instructions of the first step counted: ``COUNT_INSTRUCTIONS``' worth."""
    return max(1, min(MOST_STEPS_PER_COUNT, math.ceil(COUNT_INSTRUCTIONS / max(first_step, 1))))


@dataclasses.dataclass(frozen=True)
class Estimate:
    """What counting a case would take under callgrind, from its native figures."""

    step_ms: float  # the case's median step, measured natively
    build_s: float = 0.0  # building its model, natively
    startup_s: float = STARTUP_S
    slowdown: float = SLOWDOWN

    @property
    def seconds(self) -> float:
        """Start-up, then the build, the warmup, the first step and the counts, each slowed down."""
        step_s = self.step_ms / 1e3
        native_s = self.build_s + (WARMUP_STEPS + 1) * step_s + COUNTS * max(step_s, COUNT_NATIVE_S)
        return self.startup_s + self.slowdown * native_s


@dataclasses.dataclass(frozen=True)
class Dump:
    """One callgrind output file: which part of the run it is, what made it, and its instructions."""

    part: int
    trigger: str
    instructions: int


def parse_dump(text: str) -> Dump:
    """A callgrind output file's part number, trigger and total instructions (``Ir``).

    The total is the ``totals:`` line (``summary:`` in older files), in the column the ``events:`` line names
    ``Ir``; a column left off the end of the line is zero, as the format has it.
    """
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, colon, value = line.partition(":")
        value = value.strip()
        if colon and (key in ("events", "totals", "summary", "part") or (key == "desc" and value.startswith("Trigger"))):
            fields.setdefault(key, value)  # the header's: the first of each
    events, totals = fields.get("events", "").split(), (fields.get("totals") or fields.get("summary") or "").split()
    if "Ir" not in events or not totals:
        raise ValueError("not a callgrind output file: no 'events:' line naming Ir, or no 'totals:'/'summary:' line")
    column = events.index("Ir")
    trigger = fields.get("desc", "").partition(":")[2].strip()
    return Dump(int(fields.get("part", "1")), trigger, int(totals[column]) if column < len(totals) else 0)


def read_dumps(folder: Path) -> list[int]:
    """The instructions of each dump the child asked for, in order: its first step's, then its counts'."""
    dumps = [parse_dump(path.read_text(encoding="utf-8", errors="replace")) for path in folder.glob(DUMP_PATTERN)]
    return [dump.instructions for dump in sorted(dumps, key=lambda d: d.part) if dump.trigger.startswith(_DUMP_TRIGGER)]


def summarise(counts: Iterable[int], steps_each: int = 1) -> Instructions:
    """The row's figure from the counts of ``steps_each`` steps each: per step, their median; their spread."""
    counts = list(counts)
    if not counts or min(counts) <= 0:
        return Instructions(method=METHOD, reason=f"not counted: callgrind counted no instructions in {len(counts)} counts")
    median = statistics.median(counts)
    spread = 100 * (max(counts) - min(counts)) / median
    return Instructions(method=METHOD, per_step=round(median / steps_each, 1), spread_pct=round(spread, 4), steps=len(counts) * steps_each)


def not_counted(spec: CaseSpec) -> str | None:
    """Why a case is not one to count, or None: only an eager case on the CPU is."""
    if spec.variant != EAGER:
        return f"not counted: only eager cases are counted, and this is the {spec.variant} variant"
    if spec.device_type != "cpu":
        return f"not counted: callgrind counts the CPU's instructions, and this case ran on {spec.device}"
    if not torch._C._valgrind_supported_platform():
        return "not counted: this torch build has no valgrind support (torch._C._valgrind_supported_platform() is False)"
    return None


def valgrind_missing(find: Callable[[str], str | None] = shutil.which) -> str | None:
    """Why nothing can be counted on this machine, or None: valgrind is not on the PATH ``find`` searches."""
    return VALGRIND_MISSING if find("valgrind") is None else None


def over_cap(estimate: Estimate, left_s: float, cap_s: float = DEFAULT_INSTRUCTIONS_CAP_S) -> str | None:
    """Why counting would cost too much, or None: an estimate above the cap, or above what the case has left."""
    limit = min(cap_s, left_s)
    if estimate.seconds <= limit:
        return None
    whose = "the cap" if limit == cap_s else "what is left of the case's timeout,"
    return f"skipped: counting would take about {estimate.seconds:.0f} s under callgrind, over {whose} of {limit:.0f} s"


def count_case(
    spec: CaseSpec,
    config: Mapping[str, Any] | None,
    estimate: Estimate,
    left_s: float,
    find: Callable[[str], str | None] = shutil.which,
) -> Instructions:
    """Count ``spec``'s steps under callgrind, or say why not. ``left_s`` is what is left of the case's timeout;
    ``find`` looks valgrind up on the PATH."""
    reason = not_counted(spec)
    valgrind = find("valgrind") if reason is None else None
    if reason is None and valgrind is None:
        reason = VALGRIND_MISSING
    reason = reason or over_cap(estimate, left_s - RESERVE_S, spec.instructions_cap_s)
    if reason is not None:
        return Instructions(method=METHOD, reason=reason)
    request = Request(spec.model, spec.mode, spec.batch_size, dict(config or {}))
    try:
        request.to_json()
    except TypeError as error:  # a config of objects: the child is built from JSON
        return Instructions(method=METHOD, reason=f"not counted: the model's config cannot be passed to a child process: {error}")
    assert valgrind is not None
    return count(request, valgrind, left_s - RESERVE_S)


def count(request: Request, valgrind: str, timeout_s: float, run: Runner = subprocess.run) -> Instructions:
    """Run the child under callgrind for ``request`` with ``run`` and read its counts; a child that fails is the reason."""
    with tempfile.TemporaryDirectory(prefix="torchbenchmark-callgrind-") as folder:
        request = dataclasses.replace(request, dumps=folder)
        command = [
            valgrind,
            "--quiet",
            "--tool=callgrind",
            "--instr-atstart=no",  # start-up runs uninstrumented, three times faster; the child turns it on
            "--collect-atstart=no",  # nothing counted until the child turns collection on around its steps
            "--vgdb=yes",  # how callgrind_control reaches the child
            f"--callgrind-out-file={Path(folder) / DUMP_NAME}",
            sys.executable,
            "-m",
            __name__,
            request.to_json(),
        ]
        try:
            done = run(
                command,
                env=child_environment(os.environ),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
                timeout=max(1.0, timeout_s),
            )
        except subprocess.TimeoutExpired:
            return Instructions(method=METHOD, reason=f"not counted: callgrind took more than the {timeout_s:.0f} s left to the case")
        last = _last_line(done.stderr)
        if done.returncode != 0:
            log.warning("counting under callgrind failed (exit %d):\n%s", done.returncode, done.stderr[-4000:])
            return Instructions(method=METHOD, reason=f"not counted: callgrind's run failed (exit {done.returncode}): {last}")
        dumps = read_dumps(Path(folder))
    if len(dumps) != 1 + request.counts:
        return Instructions(method=METHOD, reason=f"not counted: callgrind wrote {len(dumps)} counts of {1 + request.counts}: {last}")
    first, *counts = dumps
    return summarise(counts, steps_per_count(first))


def child_environment(parent: Mapping[str, str]) -> dict[str, str]:
    """``parent``'s environment with ``CHILD_ENVIRONMENT``, and ``GLIBC_COUNTING`` after any glibc tunables it
    sets (the later of two settings of a tunable stands)."""
    tunables = ":".join(filter(None, (parent.get("GLIBC_TUNABLES"), GLIBC_COUNTING)))
    return {**parent, **CHILD_ENVIRONMENT, "GLIBC_TUNABLES": tunables}


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"


def _child(request: Request) -> None:
    """Build the model as its case does, warm it up, count a first step alone, then runs of steps sized from it."""
    torch.set_num_threads(1)
    steady_process()  # denormals flushed; the allocator is already set (GLIBC_COUNTING), and left as it is
    model = model_class(request.model)(device="cpu", batch_size=request.batch_size, **request.config)
    step = model.train if request.mode == "train" else model.eval
    for _ in range(request.warmup_steps):  # one call each, as counted
        step(niter=1)
    _instrument()
    _count_steps(step, 1)  # also settles what asking for instrumentation left on the heap
    mine = Path(request.dumps) / DUMP_NAME.replace("%p", str(os.getpid()))
    first = parse_dump(mine.with_name(f"{mine.name}.1").read_text(encoding="utf-8"))
    for _ in range(request.counts):
        _count_steps(step, steps_per_count(first.instructions))


def _count_steps(step: Callable[..., Any], steps: int) -> None:
    """``steps`` calls of one step each, with collection on for them alone, dumped to a file of their own."""
    gc.collect()  # before every count alike, and none inside one: a collection costs what the heap holds
    gc.disable()
    try:
        torch._C._valgrind_toggle()
        for _ in range(steps):
            step(niter=1)
        torch._C._valgrind_toggle_and_dump_stats()
    finally:
        gc.enable()


def _instrument() -> None:
    """Turn callgrind's instrumentation on in this process, which started with it off (``--instr-atstart=no``).

    ``callgrind_control`` asks through valgrind's gdbserver; Python keeps running meanwhile, so callgrind
    reads the request between blocks of code, with no need to be woken by ptrace from a blocking wait.
    """
    control = shutil.which("callgrind_control")
    if control is None:
        raise RuntimeError("callgrind_control not found: it comes with valgrind, and turns its instrumentation on")
    asked = subprocess.Popen([control, "--instr=on", str(os.getpid())], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    gc.disable()  # the wait's length is the machine's load: no collection may fall in it a load-dependent number of times
    try:
        while asked.poll() is None:
            pass
    finally:
        gc.enable()
    if asked.returncode != 0:
        raise RuntimeError(f"callgrind_control could not turn instrumentation on (exit {asked.returncode})")


def main(argv: list[str]) -> int:
    """The child: ``valgrind --tool=callgrind ... python -m torchbenchmark.measure.instructions '<json Request>'``."""
    _child(Request.from_json(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
