"""The deterministic tier of a comparison: instructions per step (``--instructions``) and op events per step.

A count does not move with load on the machine: callgrind's instructions per step repeat within a few
hundredths of a percent beside two CPU hogs, and a trace's op events per step are exact. So where both sides
of a case were counted, a change of 1% is called where wall time, on a shared runner, sees 10% at best. A
change within the counts' own spread (each side's, across its counted steps) is not called, so two runs of
the same code do not trip it. Counts cannot see what runs the same instructions slower (threads waiting on
each other, memory stalls, the GPU, a slower kernel), so the wall-time call stays beside them, shown
(``combined_call``).
"""

from __future__ import annotations

import dataclasses

from torchbenchmark.results.schema import Call, CaseResult

DEFAULT_INSTRUCTIONS_THRESHOLD_PCT = 1.0
# Op events per step are means over the profiled steps, which hold whole events: a kind whose means differ by
# less than half an event did not change.
EVENTS_ROUNDING = 0.5
BY_INSTRUCTIONS, BY_TIME = "instructions", "wall time"  # the reason of a call: which tier decided it


@dataclasses.dataclass(frozen=True)
class InstructionsChange:
    """A case's instructions per step on both sides, the change, and what the counts' own spread allows."""

    base_per_step: float
    new_per_step: float
    change_pct: float  # new over base, less 1, in percent
    noise_pct: float  # both sides' spread across their counted steps, summed: a change within it is not called

    def call(self, threshold_pct: float, ops_moved: float = 0.0) -> Call:
        """``slower`` or ``faster`` past the threshold and the counts' own noise; else ``same``.

        ``ops_moved``: the op events per step, new less base. Ops added (or removed) are work added for certain,
        so where they moved the same way as the instructions, a change past the counts' noise alone is called:
        1% more ops moves a step's instructions by less than 1%, the rest of the step's work staying put.
        """
        if abs(self.change_pct) <= self.noise_pct:
            return Call.SAME
        confirmed = ops_moved * self.change_pct > 0
        if abs(self.change_pct) <= threshold_pct and not confirmed:
            return Call.SAME
        return Call.SLOWER if self.change_pct > 0 else Call.FASTER


def instructions_change(base: CaseResult, new: CaseResult) -> InstructionsChange | None:
    """Both sides' counts of a case, or None where either side was not counted (or was counted another way)."""
    counts = base.instructions, new.instructions
    if counts[0] is None or counts[1] is None or counts[0].method != counts[1].method:
        return None
    before, after = counts[0].per_step, counts[1].per_step
    if before is None or after is None or before <= 0:
        return None
    noise_pct = (counts[0].spread_pct or 0.0) + (counts[1].spread_pct or 0.0)
    return InstructionsChange(before, after, 100.0 * (after / before - 1.0), noise_pct)


def events_moved(base: CaseResult, new: CaseResult) -> dict[str, tuple[float, float]]:
    """The op events per step, by kind (and ``ops``: the light trace's ops per step), that differ beyond rounding."""
    if base.dispatch is None or new.dispatch is None:
        return {}
    sides = [{"ops": row.dispatch.ops_per_step, **(row.dispatch.events_per_step or {})} for row in (base, new)]
    moved = {}
    for kind in sides[0].keys() | sides[1].keys():
        pair = sides[0].get(kind, 0.0), sides[1].get(kind, 0.0)
        if abs(pair[1] - pair[0]) > EVENTS_ROUNDING:
            moved[kind] = pair
    return dict(sorted(moved.items()))


def events_note(moved: dict[str, tuple[float, float]]) -> str:
    """``op events per step changed: call 300 -> 303``."""
    return "op events per step changed: " + ", ".join(f"{kind} {b:.0f} -> {n:.0f}" for kind, (b, n) in moved.items())


def combined_call(wall: Call, counts: Call | None) -> tuple[Call, str]:
    """The case's call from the wall-time call and the counts' call (None: not counted), and which decided it.

    Where both sides were counted, the counts decide: they do not move with load, so two runs of the same code
    on a shared runner never differ by them, while their wall times can by 10%. A wall-time call they do not
    confirm is shown beside theirs (``wall_call``), never instead. What counts cannot see (a kernel slower at
    the same instructions, threads waiting on each other, the GPU) is the wall-time gate's: compare runs
    without ``--instructions``, with ``--repeat`` processes a side (docs/comparing.md).
    """
    if counts is None:
        return wall, BY_TIME
    return counts, BY_INSTRUCTIONS
