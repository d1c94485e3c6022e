"""Mutation testing of the core modules with mutmut: how many planted bugs the unit tests catch.

    pip install -r requirements-dev.txt
    python benchmarks/mutation.py [MODULE ...] [--max-children 2]      # MODULE: analyze.stats, measure.harness, ...

Each module (named by its path under torchbenchmark/, as in ``TESTS``) is mutated in a scratch copy of
the tracked tree and its mutants run only against the test files mapped to it in ``TESTS`` (mutmut
further narrows each mutant to the tests that reach its function), so a run stays within minutes on
two cores. A module not in ``TESTS`` is added by naming it and its test files there. Prints each
module's score and every surviving mutant's diff; ``EQUIVALENT`` names the mutants that cannot change
behaviour, and why, and the score leaves them out. Not part of CI's run: it takes minutes, and mutmut
is a development requirement only.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tabulate import tabulate

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "torchbenchmark"

# Module (its dotted path under torchbenchmark/) -> the pytest arguments that select its tests: the unit
# tests that hold its figures and rules, not the end-to-end ones that reach it too (they would run for
# every mutant).
_PRICING_TESTS = ("tests/analyze/test_pricing.py", "-k", "not many_tiny_ops and not few_large_matmuls")
_REPORT_TESTS = ("tests/report/test_summary.py", "tests/analyze/test_compare.py", "-k", "not end_to_end")  # compare's tables too
_COMPARE_TESTS = ("tests/analyze/test_compare.py", "-k", "not end_to_end")
TESTS: dict[str, tuple[str, ...]] = {
    "analyze.stats": ("tests/analyze/test_stats.py",),
    "measure.harness": ("tests/measure/test_harness.py",),
    "results.spec": ("tests/measure/test_harness.py",),
    "analyze.pricing": _PRICING_TESTS,
    "analyze.verdict": _PRICING_TESTS,
    "analyze.scaling": ("tests/analyze/test_scaling.py",),
    "analyze.rnn": ("tests/analyze/test_rnn.py",),
    "measure.calibration": _PRICING_TESTS,
    "analyze.trace": ("tests/analyze/test_trace.py",),
    "analyze.steps": ("tests/analyze/test_trace.py",),
    "analyze.overhead": ("tests/analyze/test_overhead.py",),
    "analyze.comm": ("tests/run/test_ddp.py", "-m", "not slow"),
    "checks": ("tests/test_checks.py",),
    "report.summary": _REPORT_TESTS,
    "report.format": _REPORT_TESTS,
    "report.tables": _REPORT_TESTS,
    "analyze.compare": _COMPARE_TESTS,
    "analyze.walltime": _COMPARE_TESTS,
    "analyze.counts": _COMPARE_TESTS,
    "analyze.ratios": _COMPARE_TESTS,
}

# Modules of which only some functions hold figures or rules: mutmut names (fnmatch patterns) to mutate.
# results/spec.py declares a case's options; only its Budget decides step counts (the rest is plumbing).
ONLY: dict[str, str] = {"results.spec": "torchbenchmark.results.spec.xǁBudgetǁ*"}

# Mutants that survive because no input can tell them from the original, each with the reason.
# Keyed by mutmut's mutant name; a name that no longer exists is reported so the list stays true.
_H, _C, _T = "torchbenchmark.measure.harness.", "torchbenchmark.measure.calibration.", "torchbenchmark.analyze.trace."
_S, _F = "torchbenchmark.report.summary.", "torchbenchmark.report.format."
EQUIVALENT: dict[str, str] = {
    **dict.fromkeys(
        [f"{_H}xǁStepTimerǁ__init____mutmut_{n}" for n in (5, 6, 7, 8)],
        "StepTimer's first _start_ns and _first: begin_call sets both before any step is timed",
    ),
    f"{_H}x_warm_up__mutmut_80": "max(estimate, 2) for max(estimate, 1): either way 0.25 s / estimate exceeds the window",
    f"{_H}x_warm_up__mutmut_75": "250000001 for 0.25e9 ns: changes int(...) only if k x estimate = 41^2 x 148721 ns for "
    "some k up to the window, so only for windows of 41 steps or more",
    **dict.fromkeys(
        [f"{_T}x_load_events__mutmut_{n}" for n in (10, 13, 17)],
        "encoding None, omitted or 'UTF-8' for 'utf-8': the same codec where the locale's is UTF-8, as on CI",
    ),
    **dict.fromkeys(
        [f"{_T}x_is_step__mutmut_{n}" for n in (6, 8, 11)],
        "the default name of a nameless event: None, 'None' and 'XXXX' never start with ProfilerStep#",
    ),
    f"{_C}x__workloads__mutmut_191": "a * 3.0 for a * 2.0: the same op on a one-element tensor, same cost",
    **dict.fromkeys(
        [f"{_F}x_render_columns__mutmut_{n}" for n in (6, 11, 14, 15)],
        "tablefmt None, omitted or an unknown name: tabulate falls back to 'simple', the value given",
    ),
    f"{_S}x_render_text__mutmut_61": "the run column's numeric None for False: only its truth is read",
    f"{_S}x_note__mutmut_16": "(pct_of_peak or 1) > 100 for (... or 0) > 100: a None or 0 share is under 100 either way",
}

KILLED = {"killed", "timeout", "segfault", "caught by type check"}


def module_of(mutant: str) -> str:
    """The module a mutant name belongs to: ``torchbenchmark.analyze.stats.x_f__mutmut_3`` -> ``analyze.stats``."""
    return mutant.removeprefix(f"{PACKAGE}.").rpartition(".")[0]


def scratch_copy(module: str, tests: tuple[str, ...], into: Path) -> None:
    """The tracked tree, plus a setup.cfg that tells mutmut what to mutate and which tests to run."""
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for name in files:
        source = ROOT / name
        if source.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    lines = "\n    ".join
    (into / "setup.cfg").write_text(
        "[mutmut]\n"
        f"source_paths = {PACKAGE}\n"
        f"only_mutate = {PACKAGE}/{module.replace('.', '/')}.py\n"
        "also_copy =\n    tests\n    test.py\n"
        "pytest_add_cli_args =\n    -p\n    no:cacheprovider\n"
        f"pytest_add_cli_args_test_selection =\n    {lines(tests)}\n"
    )


def run_module(module: str, max_children: int) -> dict[str, str]:
    """Mutate one module and run its tests against each mutant; returns mutant name -> status."""
    with tempfile.TemporaryDirectory(prefix=f"mutation-{module}-") as scratch:
        work = Path(scratch)
        scratch_copy(module, TESTS[module], work)
        env = {**os.environ, "PYTHONPATH": str(work), "KINETO_LOG_LEVEL": "5", "HF_HUB_OFFLINE": "1"}
        mutmut = [sys.executable, "-m", "mutmut"]
        names = [ONLY[module]] if module in ONLY else []
        subprocess.run([*mutmut, "run", "--max-children", str(max_children), *names], cwd=work, env=env, check=False,
                       stdout=subprocess.DEVNULL)  # fmt: skip
        listing = subprocess.run([*mutmut, "results", "--all", "true"], cwd=work, env=env, capture_output=True,
                                 text=True, check=True).stdout  # fmt: skip
        statuses = dict(re.findall(r"^\s*(\S+): (.+?)\s*$", listing, re.M))
        if module in ONLY:
            statuses = {name: status for name, status in statuses.items() if fnmatch.fnmatch(name, ONLY[module])}
        for name, status in statuses.items():
            if status not in KILLED and name not in EQUIVALENT:
                diff = subprocess.run([*mutmut, "show", name], cwd=work, env=env, capture_output=True, text=True).stdout
                changed = [line for line in diff.splitlines() if line[:1] in "-+" and line[:3] not in ("---", "+++")]
                print(f"{status}: {name}", *changed, sep="\n    ", flush=True)
        return statuses


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", default=list(TESTS), help=f"modules of {PACKAGE} (default: {' '.join(TESTS)})")
    parser.add_argument("--max-children", type=int, default=2, help="mutants run at once")
    args = parser.parse_args()
    unknown = [m for m in args.modules if m not in TESTS]
    if unknown:
        parser.error(f"no tests mapped for {', '.join(unknown)}: add them to TESTS in {Path(__file__).name}")

    rows = []
    seen: set[str] = set()
    for module in args.modules:
        statuses = run_module(module, args.max_children)
        seen |= set(statuses)
        killed = sum(status in KILLED for status in statuses.values())
        equivalent = sum(name in EQUIVALENT for name in statuses)
        scored = len(statuses) - equivalent
        survived = [name for name, status in statuses.items() if status not in KILLED and name not in EQUIVALENT]
        rows.append([module, len(statuses), killed, equivalent, len(survived), f"{100 * killed / max(scored, 1):.1f}"])
    total = [sum(row[i] for row in rows) for i in range(1, 5)]
    rows.append(["all", *total, f"{100 * total[1] / max(total[0] - total[2], 1):.1f}"])
    print(tabulate(rows, headers=["module", "mutants", "killed", "equivalent", "survived", "score %"], tablefmt="github"))
    stale = sorted(name for name in EQUIVALENT if name not in seen and module_of(name) in args.modules)
    if stale:
        print(f"equivalent mutants that no longer exist (remove from EQUIVALENT): {', '.join(stale)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
