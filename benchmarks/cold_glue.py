"""Cold glue: what a small piece of Python costs right after an op, by the op's length and the bytes it touched.

    python benchmarks/cold_glue.py [--threads 1] [--repeats 200] [--dry-run]

Why the overhead estimate reads the Python gap of the step replayed with no kernel (``measure.replay``):
glue right after a long op runs slower than warm. It also measures what a probe of the coldness (a chain
of ``nn.Identity`` calls timed at each module call's entry, the estimate's cold factor until the ablation
in RESULTS.md took it out) can and cannot see. Each figure is the median over ``--repeats`` of one piece
of glue timed right after one op, in a process set up as a case's (``steady_process``):

- the glue: ``sum(range(1))`` (a builtin, no torch), ``t.view(1)`` (one op through the Python binding on
  a 1-element tensor), an ``nn.Identity`` call (``Module.__call__`` and ``forward``), and the probe's own
  chain timed from a forward pre-hook of that Identity: what the probe read at a module call's entry;
- the op before it: none; ``fill_`` over 6 and 128 MB (bytes, almost no time per byte); a matrix product
  into a preallocated output (time, over the same 1.5 MB input), at four lengths.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for benchmarks._report

from benchmarks._report import record
from torchbenchmark.measure.steady import steady_process

Glue = Callable[[], int]  # runs the glue, returns its time in ns


def glues() -> dict[str, Glue]:
    one = torch.ones(1)
    identity = torch.nn.Identity()
    chain = torch.nn.Sequential(*(torch.nn.Identity() for _ in range(8)))
    hooked = torch.nn.Identity()
    seen: list[int] = []

    def probe(_module: torch.nn.Module, _args: object) -> None:  # as the probe timed its chain
        start = time.perf_counter_ns()
        chain(None)
        seen.append(time.perf_counter_ns() - start)

    hooked.register_forward_pre_hook(probe)

    def timed(work: Callable[[], object]) -> Glue:
        def run() -> int:
            start = time.perf_counter_ns()
            work()
            return time.perf_counter_ns() - start

        return run

    def chain_in_hook() -> int:
        hooked(None)
        return seen.pop()

    return {
        "sum(range(1))": timed(lambda: sum(range(1))),
        "t.view(1)": timed(lambda: one.view(1)),
        "nn.Identity call": timed(lambda: identity(None)),
        "8 nn.Identity, from a pre-hook": chain_in_hook,
    }


def ops() -> dict[str, Callable[[], object]]:
    x = torch.randn(512, 768)
    small, large = torch.empty(6 * 2**18), torch.empty(128 * 2**18)
    cases: dict[str, Callable[[], object]] = {
        "none": lambda: None,
        "fill_ 6 MB": lambda: small.fill_(1.0),
        "fill_ 128 MB": lambda: large.fill_(1.0),
    }
    for n in (64, 256, 768, 3072):
        w, out = torch.randn(n, 768), torch.empty(512, n)
        cases[f"mm 512x768x{n}"] = lambda w=w, out=out: torch.mm(x, w.t(), out=out)
    return cases


def measure(repeats: int) -> list[list[str]]:
    rows = []
    for op_name, op in ops().items():
        op()  # the first call allocates and warms
        op_ns, glue_ns = [], {name: [] for name in glues()}
        for name, glue in glues().items():
            glue()
            for _ in range(repeats):
                start = time.perf_counter_ns()
                op()
                op_ns.append(time.perf_counter_ns() - start)
                glue_ns[name].append(glue())
        rows.append([op_name, f"{statistics.median(op_ns) / 1e3:.0f}", *(f"{statistics.median(ns) / 1e3:.1f}" for ns in glue_ns.values())])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--dry-run", action="store_true", help="print the table, do not record it in RESULTS.md")
    args = parser.parse_args()
    steady_process()
    torch.set_num_threads(args.threads)
    table = tabulate(measure(args.repeats), headers=["op before", "op µs", *(f"{name} µs" for name in glues())], disable_numparse=True)
    summary = f"medians of {args.repeats}; torch threads {args.threads}"
    record("Verdict accuracy", table, summary, part="Cold glue", dry_run=args.dry_run)


if __name__ == "__main__":
    main()
