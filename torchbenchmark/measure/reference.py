"""The machine's pace beside a case's steps: a fixed loop of tiny torch ops, timed in the case's own process.

A shared machine's pace moves: between processes seconds apart (its other tenants, where the host placed
this machine's CPUs, the allocator's luck) and between runs minutes apart, by 10% or more where a comparison
looks for 5%. The loop is the same in every run whatever the case's code, so its time is the machine's and
this process's, not the code's: timed in bursts before each measurement window and after the last, its median
is the process's ``samples.reference_us``. ``compare`` takes it as a covariate of the step time
(``analyze.ratios.ratio_interval``), between runs of one machine and one torch only.
"""

from __future__ import annotations

import statistics
import time

import torch

OPS = 100  # tiny adds a pass: a dispatch-bound pass, of a few tens of microseconds
PASSES = 40  # passes a burst: a few milliseconds, beside windows of a second


class ReferenceLoop:
    """Times a burst of passes each call; ``us`` is the median pass in µs over every burst."""

    def __init__(self) -> None:
        self._left, self._right = torch.ones(64), torch.ones(64)
        self._passes_ns: list[int] = []

    def __call__(self) -> None:
        left, right, add = self._left, self._right, torch.add
        with torch.no_grad():
            for _ in range(PASSES):
                started = time.perf_counter_ns()
                for _ in range(OPS):
                    add(left, right)
                self._passes_ns.append(time.perf_counter_ns() - started)

    @property
    def us(self) -> float | None:
        return statistics.median(self._passes_ns) / 1e3 if self._passes_ns else None
