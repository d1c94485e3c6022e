"""What every benchmark script shares: timing rounds interleaved, and appending a table to RESULTS.md."""

from __future__ import annotations

import datetime
import os
import platform
import shlex
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")


def interleaved(variants: dict[str, Callable[[], float]], rounds: int) -> dict[str, list[float]]:
    """Run each variant once per round, in turn (A B, then B A, ...), so load drifting on a shared
    machine hits every variant alike and none always goes first; returns each variant's figure per round."""
    figures: dict[str, list[float]] = {name: [] for name in variants}
    order = list(variants)
    for _ in range(rounds):
        for name in order:
            figures[name].append(variants[name]())
        order.reverse()
    return figures


def ratio_of_medians(a: Sequence[float], b: Sequence[float]) -> float:
    return statistics.median(a) / statistics.median(b)


def median_of_ratios(a: Sequence[float], b: Sequence[float]) -> float:
    """The median of the per-round ratios: pairs taken in the same round share the same load."""
    return statistics.median(x / y for x, y in zip(a, b))


def header() -> str:
    import torch

    from torchbenchmark.environment import cpu_name

    cpu = cpu_name()
    load = "%.2f %.2f %.2f" % os.getloadavg()
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return (
        f"- date: {now}\n- machine: {cpu}, {os.cpu_count()} cores, load average {load} at the end\n"
        f"- torch {torch.__version__}, Python {platform.python_version()}, torch threads {torch.get_num_threads()}"
    )


def command() -> str:
    return shlex.join(["python", *sys.argv])


def append(title: str, table: str, notes: str = "") -> None:
    """Print ``table`` and append it, with the machine, date, versions and exact command, to RESULTS.md."""
    print(table)
    if notes:
        print(notes)
    section = f"\n## {title}\n\n{header()}\n- command: `{command()}`\n\n```\n{table}\n```\n"
    if notes:
        section += f"\n{notes}\n"
    if not RESULTS.exists():
        RESULTS.write_text("# Benchmarks of the harness itself\n\nEach section is appended by the script it names.\n",
                           encoding="utf-8")
    with RESULTS.open("a", encoding="utf-8") as results:
        results.write(section)
