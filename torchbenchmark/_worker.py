"""One case in a fresh process: ``python -m torchbenchmark._worker '<json request>'`` (used by the sweep).

The request holds the case's ``CaseSpec`` (serialised once, by the sweep) and where to put the result.
"""

from __future__ import annotations

import time

STARTED = time.time()  # before the heavy imports, so the sweep can see what process start costs

import faulthandler  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

from torchbenchmark.diagnose import diagnose  # noqa: E402
from torchbenchmark.spec import CaseSpec  # noqa: E402
from torchbenchmark.steady import steady_process  # noqa: E402
from torchbenchmark.storage import write_atomic  # noqa: E402


def main(argv: list[str]) -> int:
    request = json.loads(argv[1])
    spec = CaseSpec.from_json(request["spec"])
    # A model that crashes the interpreter (segfault, abort) leaves its Python stack in the case's log.
    faulthandler.enable()
    imported = time.time()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="[%(name)s] %(levelname)s %(message)s")
    if spec.threads:
        torch.set_num_threads(spec.threads)
    steady_process()  # the same steady state in every case's process: see torchbenchmark/steady.py
    result = diagnose(spec, Path(request["out_dir"]))
    row = result.to_dict()
    row["timings_s"] = {
        "start": round(STARTED - request["spawned_at"], 3),
        "import": round(imported - STARTED, 3),
        **row["timings_s"],
    }
    write_atomic(Path(request["result_path"]), json.dumps(row))
    print(f"[torchbenchmark] {result!r}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
