"""The command line: ``main(argv) -> int`` over the library, the only layer that prints.

``diagnostics.py``, ``python -m torchbenchmark`` and the ``torchbenchmark`` console script all run this
``main``. A subcommand is named first (``compare``, ``check``, ``merge``, ``list``); anything else is the
sweep. One error type, ``UsageError``, maps to one exit status, 2; Ctrl-C anywhere is one line and 130.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from torchbenchmark.cli.args import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, UsageError
from torchbenchmark.report.format import escape_controls, program

if TYPE_CHECKING:  # the sweep's module loads torch: imported only when a sweep runs
    from torchbenchmark.run.sweep import Machinery

SUBCOMMANDS = {"compare": "compare", "check": "check", "merge": "merge", "list": "listing"}  # name -> cli module


def main(argv: Sequence[str] | None = None, machinery: Machinery | None = None) -> int:
    """Run the command ``argv`` names; ``machinery`` stands in for what a sweep runs its cases with (tests)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] and argv[0] in SUBCOMMANDS:
            # Each subcommand imports only what it needs: compare and merge run where torch is not installed.
            command = importlib.import_module(f"torchbenchmark.cli.{SUBCOMMANDS[argv[0]]}")
            return int(command.main(argv[1:]))
        from torchbenchmark.cli import sweep

        args = sweep.build_parser().parse_args(argv)
        if args.list:
            from torchbenchmark.cli import listing

            return listing.show(args.models, args.exclude)
        return sweep.main(args, argv) if machinery is None else sweep.main(args, argv, machinery)
    except UsageError as error:
        print(f"{program()}: error: {escape_controls(str(error), one_line=True)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"{program()}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the output piped into a command that stopped reading (head)
        return EXIT_OK
