"""Test suite time: the README's test command in a fresh clone, its wall time, each test file's seconds, and how
busy the two workers kept the machine.

    python benchmarks/test_suite_time.py                       # three runs quiet
    python benchmarks/test_suite_time.py --runs 3 --hogs 2     # three runs beside two CPU hogs
    python benchmarks/test_suite_time.py --quick               # the quick loop (-m "not slow"), one process

Each run clones the committed HEAD into a temporary folder and runs the command there, as CI does (the
packages already installed). A file's seconds are its tests' durations summed (setup, call and teardown, from
pytest's JUnit XML); the overlap is that sum over the run's wall time: 2.0 would be both workers busy from
the first test to the last. ``--junit FILE`` reads an earlier run's XML instead of running (a run before a
change, for the table of both).
"""

from __future__ import annotations

import argparse
import collections
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for benchmarks._report

from benchmarks._report import hogs, record

ROOT = Path(__file__).resolve().parents[1]
README_COMMAND = ["python", "-m", "pytest", "test.py", "tests", "-q", "-n", "2", "--dist", "loadgroup"]
QUICK_COMMAND = ["python", "-m", "pytest", "-q", "-m", "not slow"]


def run_once(command: list[str], hog_count: int) -> tuple[float, Path, str]:
    """The command's wall time in a fresh clone of HEAD, its JUnit XML, and its last line."""
    folder = Path(tempfile.mkdtemp(prefix="suite-time-"))
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(folder / "clone")], check=True)
    junit = folder / "junit.xml"
    with hogs(hog_count):
        started = time.perf_counter()
        done = subprocess.run([*command, f"--junitxml={junit}"], cwd=folder / "clone", capture_output=True, text=True)
        wall_s = time.perf_counter() - started
    last = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
    if done.returncode != 0:
        print(done.stdout[-4000:], done.stderr[-2000:], file=sys.stderr)
    return wall_s, junit, last


def seconds_by_file(junit: Path) -> dict[str, float]:
    """Each test file's tests' durations, summed."""
    by_file: dict[str, float] = collections.Counter()
    for case in ElementTree.parse(junit).iter("testcase"):
        module = case.get("classname", "").split(".")
        # classname is the dotted module path (and class): tests.run.test_sweep[.Class]
        parts = [part for part in module if not part[:1].isupper()]
        by_file["/".join(parts) + ".py"] += float(case.get("time", 0.0))
    return dict(by_file)


def table(by_file: dict[str, float], top: int) -> str:
    rows = sorted(by_file.items(), key=lambda item: -item[1])
    shown = [(name, f"{seconds:.1f}") for name, seconds in rows[:top]]
    rest = sum(seconds for _, seconds in rows[top:])
    if rest:
        shown.append((f"{len(rows) - top} other files", f"{rest:.1f}"))
    shown.append(("all", f"{sum(by_file.values()):.1f}"))
    return tabulate(shown, headers=["file", "seconds"], tablefmt="simple", disable_numparse=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--hogs", type=int, default=0, help="busy processes beside each run")
    parser.add_argument("--quick", action="store_true", help="time the quick loop instead")
    parser.add_argument("--junit", type=Path, help="read this JUnit XML (with --wall-s) instead of running")
    parser.add_argument("--wall-s", type=float, help="with --junit: that run's wall time")
    parser.add_argument("--top", type=int, default=20, help="files shown by name")
    parser.add_argument("--part", help="the RESULTS.md part to record under (default: by the flags)")
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    command = QUICK_COMMAND if args.quick else README_COMMAND
    if args.junit is not None:
        runs = [(args.wall_s or 0.0, args.junit, "read from an earlier run")]
    else:
        runs = [run_once(command, args.hogs) for _ in range(args.runs)]
    walls = [wall for wall, _, _ in runs]
    lines = [f"run {i + 1}: {wall / 60:.1f} min ({wall:.0f} s): {last}" for i, (wall, _, last) in enumerate(runs)]
    by_file = seconds_by_file(runs[-1][1])
    total = sum(by_file.values())
    summary = [
        f"command: {' '.join(command)}" + (f", beside {args.hogs} CPU hogs" if args.hogs else "")
        if args.junit is None
        else f"an earlier run's JUnit XML, {args.junit.name}",
        *lines,
        f"median wall: {statistics.median(walls) / 60:.1f} min",
        f"last run: tests' durations sum to {total:.0f} s; overlap {total / walls[-1]:.2f} (2.0: both workers busy throughout)"
        if walls[-1]
        else f"tests' durations sum to {total:.0f} s",
    ]
    text = "\n".join(summary) + "\n\n" + table(by_file, args.top)
    part = args.part or ("quick loop" if args.quick else f"README command, {args.hogs} hogs")
    record("Test suite", text, part=part, dry_run=args.dry_run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
