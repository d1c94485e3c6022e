"""``python -m torchbenchmark ...``: the same command line as ``diagnostics.py ...``."""

import sys

try:
    from torchbenchmark.cli import main
except KeyboardInterrupt:  # Ctrl-C while the package loads: one line and 130, as anywhere later
    print("diagnostics.py: interrupted", file=sys.stderr)
    sys.exit(130)

if __name__ == "__main__":
    sys.exit(main())
