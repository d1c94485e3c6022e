#!/usr/bin/env python
"""Profile models and report where each step's time goes and whether it is dispatch-bound.

    python diagnostics.py --models resnet50
    python diagnostics.py --models all --out traces
    python diagnostics.py --list

See `python diagnostics.py --help` for every flag and the exit statuses; the work is done by
torchbenchmark.cli over the library, so the same sweep is available from Python as
torchbenchmark.run_sweep and one case as torchbenchmark.collect_diagnostics.
"""

import sys

try:
    from torchbenchmark.cli import main
except KeyboardInterrupt:  # Ctrl-C while the package loads: one line and 130, as anywhere later
    print("diagnostics.py: interrupted", file=sys.stderr)
    sys.exit(130)

if __name__ == "__main__":
    sys.exit(main())
