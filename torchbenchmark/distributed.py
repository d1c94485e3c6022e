"""``python -m torchbenchmark.distributed MODEL``: one rank of a DDP train case under a torchrun of your own."""

import sys

from torchbenchmark.run.rank import main

if __name__ == "__main__":
    sys.exit(main())
