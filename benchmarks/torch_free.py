"""Compare and merge where torch cannot be imported: seconds of work past Python's own start.

    python benchmarks/torch_free.py [--rounds 7] [--run benchmarks/reference]

Every command runs in a fresh interpreter whose ``sys.modules["torch"]`` is None (so any import of torch
fails). The figure is each command's median wall time minus the median of a bare interpreter started
the same way, all taken in turn in each round. The shards merged are the run's rows split in two
halves, each written as the record of shard i/2 of the run; the goal is under 1 s for the comparison
of the run against itself and for the merge.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tabulate import tabulate

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the repository root, for benchmarks._report

from benchmarks._report import interleaved, record  # noqa: E402
from torchbenchmark.results.files import dumps, write_atomic  # noqa: E402
from torchbenchmark.run import outdir  # noqa: E402

GOAL_S = 1.0
NO_TORCH = "import sys; sys.modules['torch'] = None\n"


def diagnostics(*argv: str) -> str:
    return (
        NO_TORCH
        + f"import runpy; sys.argv = {['diagnostics.py', *argv]!r}; runpy.run_path({str(ROOT / 'diagnostics.py')!r}, run_name='__main__')"
    )


def timed(code: str, scratch: Path) -> float:
    """Seconds from starting the interpreter to its exit; the command must succeed."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], cwd=scratch, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 3):  # 3: compare's "inconclusive", an answer all the same
        raise SystemExit(f"failed ({done.returncode}): {code}\n{done.stderr}")
    return elapsed


def split_into_shards(run: Path, scratch: Path) -> list[Path]:
    """The run's rows as two shards' output folders: each a record of half the cases, marked shard i/2."""
    (source,) = outdir.read_records(run)
    halves = source.rows[0::2], source.rows[1::2]
    folders = []
    for index, rows in enumerate(halves, start=1):
        folder = scratch / f"shard{index}"
        (folder / "runs").mkdir(parents=True)
        shard = {"index": index, "count": 2, "of_cases": len(source.rows)}
        part = dataclasses.replace(source, run_id=f"{source.run_id}-{index}", rows=rows, extra={**source.extra, "shard": shard})
        write_atomic(folder / "runs" / f"{part.run_id}.json", dumps(part.to_dict()))
        folders.append(folder)
    return folders


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--run", type=Path, default=ROOT / "benchmarks" / "reference", help="an output folder of one run")
    args = parser.parse_args()
    run = args.run.resolve()
    cases = len(outdir.read_records(run)[0].rows)
    with tempfile.TemporaryDirectory(prefix="torch_free.") as name:
        scratch = Path(name)
        shards = split_into_shards(run, scratch)
        merged = scratch / "merged"

        def merge() -> float:
            shutil.rmtree(merged, ignore_errors=True)
            return timed(diagnostics("merge", *map(str, shards), "--out", str(merged)), scratch)

        commands = {
            "python start": lambda: timed(NO_TORCH, scratch),
            "compare RUN RUN": lambda: timed(diagnostics("compare", str(run), str(run)), scratch),
            "compare RUN RUN --json --html": lambda: timed(
                diagnostics("compare", str(run), str(run), "--json", "c.json", "--html", "c.html"), scratch
            ),
            "merge SHARD1 SHARD2": merge,
        }
        seconds = interleaved(commands, args.rounds)
    start = statistics.median(seconds["python start"])
    rows = []
    for name, runs in seconds.items():
        work = statistics.median(runs) - (0.0 if name == "python start" else start)
        goal = "" if name in ("python start", "compare RUN RUN --json --html") else ("yes" if work < GOAL_S else "no")
        rows.append((name, statistics.median(runs), min(runs), max(runs), work, goal))
    table = tabulate(rows, headers=["command", "median s", "min s", "max s", "past start s", f"< {GOAL_S:g} s"], floatfmt=".3f")
    record(
        "Without torch",
        table,
        f"{cases} cases; {args.rounds} rounds, commands in turn; torch unimportable in every interpreter. "
        "The merge joins the run's rows split into two shard records.",
    )


if __name__ == "__main__":
    main()
