"""``diagnostics.py merge OUT1 OUT2 ... --out MERGED``: the outputs of a sweep's shards joined into one folder."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from torchbenchmark.cli.args import EXIT_FAILED, EXIT_OK, Parser, UsageError
from torchbenchmark.report.format import escape_controls, program
from torchbenchmark.results.files import StorageError
from torchbenchmark.run import outdir
from torchbenchmark.run.merge import MergeConflict, VersionsDiffer, merge


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog=f"{program()} merge",
        epilog="exit status: 0 merged; 1 a write failed midway (a full disk: the message names the file);\n"
        "2 usage error or shards that disagree (nothing written).",
        description="Join the outputs of a sweep's shards (--shard I/N) into one output folder and summary.",
    )
    parser.add_argument("sources", nargs="+", metavar="OUT", help="output folders (or run records) of the shards")
    parser.add_argument("--out", required=True, type=Path, metavar="MERGED", help="the folder to merge into (not one of the shards)")
    parser.add_argument("--keep-latest", action="store_true", help="where shards disagree, keep the latest row of each case")
    return parser


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    try:
        outcome = merge(args.sources, args.out, keep_latest=args.keep_latest)
    except VersionsDiffer as error:
        raise UsageError(str(error)) from None
    except MergeConflict as error:
        raise UsageError(f"{error}; --keep-latest keeps the latest row of each case") from None
    except (StorageError, outdir.OutputBusy, outdir.OutputUnusable) as error:
        raise UsageError(str(error)) from None
    except OSError as error:  # after the checks, while writing: what was written stays, nothing half-written
        print(
            escape_controls(f"{program()}: error: merge cannot write {error.filename or args.out}: {error.strerror or error}"),
            file=sys.stderr,
        )
        return EXIT_FAILED
    for item in outcome.left_out:
        print(escape_controls(f"{program()} merge: warning: {item}"), file=sys.stderr)
    note = f"; missing shards {', '.join(outcome.missing_shards)}" if outcome.missing_shards else ""
    print(
        f"merged {len(outcome.summary.rows)} case(s) from {len(outcome.sources)} source(s) on "
        f"{len(outcome.machines)} machine(s) into {args.out}{note}",
        file=sys.stderr,
    )
    return EXIT_OK
