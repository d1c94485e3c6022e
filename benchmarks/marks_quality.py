"""The marks' quality: which rows a loaded machine distorted, and whether the tool marked them.

    python benchmarks/marks_quality.py --out DIR [--cases "pyhpc_equation_of_state eval,..."] [--hogs 0,1,2]
                                       [--threads default,1]

For every thread setting, the cases are swept quiet, then beside 1 and 2 CPU hogs (busy-looping
processes this script starts and ends), each sweep as a user runs it (`diagnostics.py`, one process a
case, `--no-detailed`). A loaded row is *distorted* when its step time is more than 1.25x its quiet
value, or its verdict differs from its quiet verdict; the tool's promise is that every distorted row is
marked `UNTRUSTWORTHY` (contended above all), and that no quiet row is marked contended. The table
gives each row beside its quiet twin; the closing lines count both goals.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tabulate import tabulate

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the repository root, for benchmarks._report

from benchmarks._report import hogs, record  # noqa: E402

DISTORTED_AT = 1.25
CASES = (
    "pyhpc_equation_of_state eval",
    "soft_actor_critic train",
    "soft_actor_critic eval",
    "dlrm eval",
    f"{ROOT / 'tests' / 'helpers' / 'synthetic_models.py'}:ManyTinyOps eval",
)


def sweep(cases: list[tuple[str, str]], threads: str, out: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Each case in a sweep of its own (its own mode), as a user would run it; the rows by (model, mode)."""
    rows = {}
    for index, (spec, mode) in enumerate(cases):
        flags = [] if threads == "default" else ["--threads", threads]
        folder = out / f"case-{index}"
        command = [sys.executable, str(ROOT / "diagnostics.py"), "--models", spec, "--modes", mode, "--no-detailed",
                   "--no-progress", "--device", "cpu", "--out", str(folder), *flags]  # fmt: skip
        subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1800, check=False)
        for row in json.loads((folder / "summary.json").read_text())["results"]:
            rows[row["model"], row["mode"]] = row
    return rows


def marked(row: dict[str, Any]) -> list[str]:
    from torchbenchmark.results.schema import CaseResult

    return list(CaseResult.from_dict(row).untrustworthy_reasons) if row["status"] == "ok" else [row["status"]]


def compare_rows(quiet: dict[str, Any], loaded: dict[str, Any]) -> tuple[float | None, bool, bool]:
    """(loaded over quiet step time, distorted, verdict changed)."""
    if quiet["status"] != "ok" or loaded["status"] != "ok":
        return None, loaded["status"] != quiet["status"], False
    ratio = loaded["step_time_ms"]["median"] / quiet["step_time_ms"]["median"]
    changed = (quiet.get("dispatch") or {}).get("verdict") != (loaded.get("dispatch") or {}).get("verdict")
    return ratio, ratio > DISTORTED_AT or changed, changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="a folder for the sweeps' outputs")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated 'model mode' pairs")
    parser.add_argument("--hogs", default="0,1,2", help="CPU hogs beside each sweep; 0 (quiet) first")
    parser.add_argument("--threads", default="default,1", help="intra-op thread settings: 'default' or a number")
    args = parser.parse_args()
    cases = [tuple(case.strip().rsplit(" ", 1)) for case in args.cases.split(",")]
    table, distorted, distorted_marked, quiet_marked, quiet_rows = [], 0, 0, 0, 0
    for threads in args.threads.split(","):
        rows = {}
        for count in (int(n) for n in args.hogs.split(",")):
            with hogs(count):
                rows[count] = sweep(cases, threads, args.out / f"threads-{threads}-hogs-{count}")
        for key, quiet in rows[0].items():
            quiet_rows += 1
            quiet_marks = [m for m in marked(quiet) if m.startswith("contended")]
            quiet_marked += bool(quiet_marks)
            for count, loaded_rows in rows.items():
                loaded = loaded_rows[key]
                ratio, bad, changed = compare_rows(quiet, loaded) if count else (1.0, False, False)
                marks = marked(loaded)
                if count:
                    distorted += bad
                    distorted_marked += bad and bool(marks)
                verdicts = f"{(quiet.get('dispatch') or {}).get('verdict')} -> {(loaded.get('dispatch') or {}).get('verdict')}"
                table.append((*key, threads, count, loaded["step_time_ms"]["median"] if loaded["status"] == "ok" else None,
                              None if ratio is None else round(ratio, 2), verdicts if changed else "", "yes" if bad else "",
                              "; ".join(marks)[:90]))  # fmt: skip
    record(
        "Marks quality",
        tabulate(table, headers=["model", "mode", "threads", "hogs", "ms/step", "x quiet", "verdict", "distorted", "marks"]),
        f"Distorted rows marked: {distorted_marked} of {distorted}; quiet rows marked contended: {quiet_marked} of {quiet_rows}.",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
