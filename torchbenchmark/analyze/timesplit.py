"""Where a step's wall time went, by what the kernel saw, and which steps a busy machine left alone.

From per-step samples (``measure.schedstat``): the step thread's share of the wall time on a CPU, waiting
for a CPU and neither (blocked), and the other threads' wait. A step whose threads waited for a CPU for
more than ``CLEAN_WAIT_FRACTION`` of it was stretched by other work on the machine, not by the model:
such steps are left out of the step time, and a row is marked contended only when too few steps were
left (``results.schema.enough_clean``). A step thread blocked for ``BLOCKED_AT_PCT`` of its steps or more
is neither compute- nor dispatch-bound: it waits for something.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from torchbenchmark.analyze.stats import StepStats
from torchbenchmark.results.schema import TimeSplit, enough_clean

StepSample = tuple[int, int, int, int]  # wall, main on a CPU, main waiting, others waiting (ns)
# A step is clean when its threads together waited for a CPU at most this share of its wall time.
CLEAN_WAIT_FRACTION = 0.02
BLOCKED_AT_PCT = 50.0


def waited(step: StepSample) -> float:
    """The share of a step's wall time its threads together waited for a CPU."""
    wall, _, main_wait, others_wait = step
    return (main_wait + others_wait) / wall if wall > 0 else 0.0


def blocked_us(steps: Sequence[StepSample]) -> float:
    """What every kept one of these steps (``kept``, those the estimate rests on) spent blocked, in µs: its thread
    neither on a CPU nor waiting for one (a sleep, a read, a lock; at more than one intra-op thread, a wait at a
    join too). 0 without samples.

    A step that waited for a CPU is no measure of it: what the kernel saw is read at its boundaries, not at each
    wait's edges (``measure.schedstat.ThreadClock.boundary``), so its wait may hide some of its blocked time."""
    flags = kept(steps)
    return min((max(0, wall - cpu - wait) / 1e3 for (wall, cpu, wait, _), keep in zip(steps, flags) if keep), default=0.0)


def clean(steps: Sequence[StepSample]) -> list[bool]:
    """Which steps no other work on the machine stretched (their threads waited at most CLEAN_WAIT_FRACTION)."""
    return [waited(step) <= CLEAN_WAIT_FRACTION for step in steps]


def kept(steps: Sequence[StepSample]) -> list[bool]:
    """The steps a figure rests on: the clean ones when there are enough, else every one (the row is marked)."""
    flags = clean(steps)
    return flags if enough_clean(sum(flags), len(flags)) else [True] * len(flags)


@dataclasses.dataclass(frozen=True)
class Split:
    """Shares of the summed wall time of some steps, in percent."""

    on_cpu_pct: float
    waiting_pct: float  # every thread of the step's process, together
    blocked_pct: float  # the step's thread neither on a CPU nor waiting for one
    others_waiting_pct: float  # the other threads' part of waiting_pct (the intra-op pool)


def split(steps: Sequence[StepSample]) -> Split | None:
    wall = sum(step[0] for step in steps)
    if not steps or wall <= 0:
        return None
    cpu, main_wait, others = (sum(step[i] for step in steps) for i in (1, 2, 3))
    blocked = max(0, wall - cpu - main_wait)
    return Split(100 * cpu / wall, 100 * (main_wait + others) / wall, 100 * blocked / wall, 100 * others / wall)


def unwaited_iqr_pct(steps: Sequence[StepSample]) -> float | None:
    """Where some steps were left out (``kept``): the IQR of every step less what its threads waited for a CPU, in
    % of their median; None where none was."""
    if all(kept(steps)):
        return None
    unwaited = StepStats.from_ns([max(0, wall - main_wait - others_wait) for wall, _, main_wait, others_wait in steps])
    return 100 * unwaited.iqr_ms / unwaited.median_ms if unwaited.median_ms else None


def time_split(steps: Sequence[StepSample], method: str, machine: tuple[float | None, float | None, float | None, int | None],
               profiled: Sequence[StepSample] = ()) -> TimeSplit | None:  # fmt: skip
    """The row's ``time_split``: the measured steps' split, how many stayed clean, and the profiled steps' wait.

    ``machine`` is the machine's CPU pressure (%), the other work on it (% of its CPUs), its load average and its CPUs.
    """
    whole = split(steps)
    if whole is None:
        return None
    profile = split(profiled)
    return TimeSplit(
        method=method, on_cpu_pct=whole.on_cpu_pct, waiting_pct=whole.waiting_pct, blocked_pct=whole.blocked_pct,
        others_waiting_pct=whole.others_waiting_pct, steps_measured=len(steps), steps_kept=sum(clean(steps)),
        pressure_pct=machine[0], other_work_pct=machine[1], load_average=machine[2], cpus=machine[3],
        profiled_waiting_pct=None if profile is None else profile.waiting_pct,
        profiled_steps_kept=sum(clean(profiled)) if profiled else None, profiled_steps=len(profiled) or None,
        unwaited_iqr_pct=unwaited_iqr_pct(steps),
    )  # fmt: skip
