"""Splitting a sweep's cases into N shards: the same split on every machine, balanced by expected cost.

Each machine of a CI matrix or a Slurm array runs ``--shard I/N`` over the same ``--models``, and
``diagnostics.py merge`` joins their outputs. The split depends only on the cases and the cost table,
never on the machine or the clock: cases are dealt, most expensive first, to the shard with the least
expected time so far (ties to the lower shard), and run in their usual order within a shard.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path

# A case's expected cost: its wall time in the reference run (benchmarks/reference/summary.json).
REFERENCE_SUMMARY = Path(__file__).resolve().parents[2] / "benchmarks" / "reference" / "summary.json"

Case = tuple[str, str]  # (model name, mode)


@dataclasses.dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count``, counted from 1 as ``--shard 1/4`` is written."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 1 <= self.index <= self.count:
            raise ValueError(f"shard {self.index}/{self.count}: expected I/N with 1 <= I <= N")

    @classmethod
    def parse(cls, text: str) -> Shard:
        index, slash, count = text.partition("/")
        if not slash or not index.strip().isdigit() or not count.strip().isdigit():
            raise ValueError(f"expected I/N, e.g. 2/4, got {text!r}")
        return cls(int(index), int(count))

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def reference_costs(path: Path = REFERENCE_SUMMARY) -> dict[Case, float]:
    """Seconds each (model, mode) took in a summary.json's rows (``timings_s.total``); empty without one."""
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))["results"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    costs: dict[Case, float] = {}
    for row in rows:
        total = (row.get("timings_s") or {}).get("total")
        if isinstance(total, (int, float)) and total > 0 and row.get("variant", "eager") == "eager":
            costs[(row["model"], row["mode"])] = float(total)
    return costs


def partition(cases: Sequence[Case], count: int, costs: Mapping[Case, float]) -> list[list[Case]]:
    """``count`` shards of ``cases``: every case in exactly one, each in the order the cases were given.

    A case the cost table lacks costs the median of those it has (all cost 1 when it has none, which
    balances by count).
    """
    known = [costs[case] for case in cases if case in costs]
    default = statistics.median(known) if known else 1.0
    position = {case: index for index, case in enumerate(cases)}
    loads = [0.0] * count
    members: list[list[Case]] = [[] for _ in range(count)]
    for case in sorted(position, key=lambda case: (-costs.get(case, default), case)):
        lightest = min(range(count), key=lambda shard: (loads[shard], shard))
        loads[lightest] += costs.get(case, default)
        members[lightest].append(case)
    return [sorted(shard, key=position.__getitem__) for shard in members]


def select(cases: Sequence[Case], shard: Shard, costs: Mapping[Case, float]) -> list[Case]:
    """The cases of ``shard``, in the order given."""
    return partition(cases, shard.count, costs)[shard.index - 1]
