"""What every benchmark script shares: timing rounds interleaved, and each table recorded in its place in RESULTS.md."""

from __future__ import annotations

import contextlib
import datetime
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
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


@contextlib.contextmanager
def hogs(count: int) -> Iterator[None]:
    """``count`` busy Python processes beside a measurement, as a shared runner's other jobs would be."""
    started = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for process in started:
            process.kill()
            process.wait()


def ratio_of_medians(a: Sequence[float], b: Sequence[float]) -> float:
    return statistics.median(a) / statistics.median(b)


def median_of_ratios(a: Sequence[float], b: Sequence[float]) -> float:
    """The median of the per-round ratios: pairs taken in the same round share the same load."""
    return statistics.median(x / y for x, y in zip(a, b))


def header() -> str:
    import torch

    from torchbenchmark.measure.environment import cpu_name

    cpu = cpu_name()
    load = " ".join(f"{average:.2f}" for average in os.getloadavg())
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    return (
        f"- date: {now}\n- machine: {cpu}, {os.cpu_count()} cores, load average {load} at the end\n"
        f"- torch {torch.__version__}, Python {platform.python_version()}, torch threads {torch.get_num_threads()}"
    )


def command() -> str:
    return shlex.join(["python", *sys.argv])


BEGIN = "<!-- measured: {script} writes from here to the end mark on each run -->"
END = "<!-- end of measured -->"


def record(section: str, table: str, notes: str = "", part: str | None = None, dry_run: bool = False) -> None:
    """Print ``table`` and put it, with the machine, date, versions and exact command, in RESULTS.md under
    ``## section`` (and ``### part`` within it), in place of what the last run measured there; with
    ``dry_run``, only print it.

    The text a person wrote around it stays: only the block between the measured marks is replaced, or,
    in a section without marks yet, the first dated block (``- script:`` or ``- date:`` down to the end
    of its table). A section or part not on the page yet is added at its end."""
    print(table)
    if notes:
        print(notes)
    if dry_run:
        return
    script = Path(sys.argv[0]).name
    block = f"{BEGIN.format(script=script)}\n- script: `benchmarks/{script}`\n{header()}\n- command: `{command()}`\n\n```\n{table}\n```\n"
    if notes:
        block += f"\n{notes}\n"
    block += END
    text = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else "# Benchmarks of the harness itself\n"
    RESULTS.write_text(placed(text, block, section, part), encoding="utf-8")


def placed(text: str, block: str, section: str, part: str | None) -> str:
    lines = text.rstrip("\n").split("\n")
    start, end = _span(lines, 0, len(lines), "## ", section)
    if part is not None:
        start, end = _span(lines, start, end, "### ", part)
    else:  # the section's own text, not its parts': a part's measured block is not the section's
        end = next((i for i in range(start, end) if lines[i].startswith("### ")), end)
    body = lines[start:end]
    begin = next((i for i, line in enumerate(body) if line.startswith("<!-- measured:")), None)
    if begin is not None:
        stop = next(i for i in range(begin, len(body)) if body[i] == END) + 1
    else:
        begin = next((i for i, line in enumerate(body) if re.match(r"- (script|date):", line)), None)
        if begin is None:
            begin = stop = len(body)
            while begin and not body[begin - 1].strip():
                begin -= 1
            block = "\n" + block
        else:
            fences = [i for i in range(begin, len(body)) if body[i].startswith("```")]
            stop = fences[1] + 1 if len(fences) > 1 else len(body)
    body[begin:stop] = block.split("\n") + ([""] if stop == len(body) else [])
    return "\n".join([*lines[:start], *body, *lines[end:]]).rstrip("\n") + "\n"


def _span(lines: list[str], start: int, end: int, level: str, title: str) -> tuple[int, int]:
    """The lines under heading ``level + title`` within ``lines[start:end]``, up to the next heading of
    that level or above; the heading is added at ``end`` when it is missing."""
    heading = level + title
    at = next((i for i in range(start, end) if lines[i] == heading), None)
    if at is None:
        lines[end:end] = ["", heading, ""]
        at = end + 1
        end += 3
    stops = tuple("#" * n + " " for n in range(1, len(level)))
    stop = next((i for i in range(at + 1, end) if lines[i].startswith(stops)), end)
    return at + 1, stop
