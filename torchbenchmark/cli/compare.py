"""``diagnostics.py compare BASE NEW``: two runs compared case by case, and a regression gate."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from torchbenchmark.analyze.compare import DEFAULT_INSTRUCTIONS_THRESHOLD_PCT, DEFAULT_THRESHOLD_PCT, Comparison, compare, with_op_diffs
from torchbenchmark.cli.args import EXIT_OK, Parser, UsageError, check_new_files, percent
from torchbenchmark.report.format import program
from torchbenchmark.report.page import render_comparison_report
from torchbenchmark.report.tables import COLUMN_NAMES, render_comparison
from torchbenchmark.results.files import StorageError, dumps, write_atomic
from torchbenchmark.results.records import Summary
from torchbenchmark.run import outdir

__all__ = ["DEFAULT_INSTRUCTIONS_THRESHOLD_PCT", "DEFAULT_THRESHOLD_PCT", "Outputs", "Reading", "build_parser", "load_side", "main", "run"]

EPILOG = """\
BASE, NEW: an output folder (its run records), a summary.json, or one run record (OUT/runs/<run-id>.json).
calls: slower, faster, same, inconclusive, new failure, fixed, verdict changed, not compared, only in base, only in new.
Where both sides counted instructions (--instructions on both sweeps), the counts' call stands beside the wall time's.
exit status: 0 nothing slower or newly failing; 1 a case regressed; 2 usage error (one line, nothing written);
3 nothing slower, but some case inconclusive (--allow-inconclusive: 0). docs/comparing.md: how to read it."""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog=f"{program()} compare",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Compare two runs: each case's step-time ratio with a 95% interval, and a regression gate.",
    )
    parser.add_argument("base", metavar="BASE")
    parser.add_argument("new", metavar="NEW")
    parser.add_argument(
        "--threshold",
        type=percent,
        default=DEFAULT_THRESHOLD_PCT,
        help=f"smallest change in %% called faster or slower (default: {DEFAULT_THRESHOLD_PCT:g})",
    )
    parser.add_argument(
        "--instructions-threshold",
        metavar="PCT",
        type=percent,
        default=DEFAULT_INSTRUCTIONS_THRESHOLD_PCT,
        help="smallest change in instructions per step, in %%, called faster or slower where both sides counted them "
        f"(default: {DEFAULT_INSTRUCTIONS_THRESHOLD_PCT:g})",
    )
    parser.add_argument("--pool", action="store_true", help="time each case with every run in BASE and NEW that measured it alike")
    parser.add_argument(
        "--ops",
        action="store_true",
        help="list the ops that moved for every case, not only those slower, faster or inconclusive or whose op events moved",
    )
    parser.add_argument(
        "--columns",
        type=column_names,
        metavar="NAMES",
        help=f"the table's columns, comma-separated, of: {', '.join(COLUMN_NAMES)}; or all (default: a table that fits "
        "the terminal, each case's verdict and notes under it)",
    )
    parser.add_argument("--json", metavar="FILE", type=Path, help="also write the comparison as JSON")
    parser.add_argument("--html", metavar="FILE", type=Path, help="also write it as a self-contained HTML page")
    parser.add_argument("--allow-inconclusive", action="store_true", help="exit 0, not 3, when a case is inconclusive")
    return parser


def load_side(path: str | Path, flag: str, pool: bool = False) -> Summary:
    try:
        return outdir.load(path, pool)
    except StorageError as error:
        raise UsageError(f"{flag}: {error}" if flag.startswith("--") else str(error)) from None


def column_names(text: str) -> tuple[str, ...]:
    """--columns: names of ``COLUMN_NAMES``, or ``all``."""
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if names == ("all",):
        return names
    unknown = [name for name in names if name not in COLUMN_NAMES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"no column {', '.join(unknown) or 'named'}: name some of {', '.join(COLUMN_NAMES)}, or all")
    return names


@dataclasses.dataclass(frozen=True)
class Outputs:
    """What a comparison shows: its table's columns (--columns; None: the terminal's), and the files it writes
    besides (--json, --html)."""

    json: Path | None = None
    html: Path | None = None
    columns: tuple[str, ...] | None = None


@dataclasses.dataclass(frozen=True)
class Reading:
    """How each side is read (--pool: every run that measured a case alike) and whose ops are listed (--ops: every case's)."""

    pool: bool = False
    ops: bool = False


def run(
    base: str | Path,
    new: str | Path,
    threshold_pct: float,
    outputs: Outputs = Outputs(),
    reading: Reading = Reading(),
    allow_inconclusive: bool = False,
    instructions_threshold_pct: float = DEFAULT_INSTRUCTIONS_THRESHOLD_PCT,
) -> int:
    """Compare, print the table, write --json and --html; a usage error for unreadable input or nothing in common.

    The ops that moved are listed for the cases called slower, faster, inconclusive or verdict changed, or whose
    op events per step moved, and with ``reading.ops`` for every case.
    """
    check_new_files((("--json", outputs.json), ("--html", outputs.html)), inputs=(Path(base), Path(new)))
    sides = load_side(base, "BASE", reading.pool), load_side(new, "NEW", reading.pool)
    try:
        comparison = compare(*sides, threshold_pct, instructions_threshold_pct)
    except ValueError as error:
        raise UsageError(str(error)) from None
    comparison = with_op_diffs(comparison, *sides, roots=(outdir.folder_of(base), outdir.folder_of(new)), every=reading.ops)
    files = [(path, "--json", lambda: dumps(comparison.to_dict())) for path in [outputs.json] if path is not None]
    files += [(path, "--html", lambda: render_comparison_report(comparison, *sides)) for path in [outputs.html] if path is not None]
    texts = [(path, flag, render()) for path, flag, render in files]  # drawn before any is written
    print(render_comparison(comparison, outputs.columns), end="")
    for path, flag, text in texts:
        try:
            write_atomic(path, text)
        except OSError as error:  # a full disk, a folder gone meanwhile: nothing half-written stays
            raise UsageError(f"{flag} {path}: cannot be written: {error.strerror or error}") from None
        if flag == "--html":
            print(f"page: {path}", file=sys.stderr)
    return exit_status(comparison, allow_inconclusive)


def exit_status(comparison: Comparison, allow_inconclusive: bool) -> int:
    status = comparison.exit_status
    return EXIT_OK if allow_inconclusive and status == 3 else status


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    outputs, reading = Outputs(args.json, args.html, args.columns), Reading(args.pool, args.ops)
    return run(args.base, args.new, args.threshold, outputs, reading, args.allow_inconclusive, args.instructions_threshold)
