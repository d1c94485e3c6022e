"""One case in a fresh process: ``python -m torchbenchmark._worker '<json request>'`` (used by the sweep)."""

from __future__ import annotations

import time

STARTED = time.time()  # before the heavy imports, so the sweep can see what process start costs

import faulthandler  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

from torchbenchmark.diagnose import collect_diagnostics  # noqa: E402
from torchbenchmark.harness import Budget  # noqa: E402
from torchbenchmark.steady import steady_process  # noqa: E402


def main(argv: list[str]) -> int:
    request = json.loads(argv[1])
    # A model that crashes the interpreter (segfault, abort) leaves its Python stack in the case's log.
    faulthandler.enable()
    imported = time.time()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="[%(name)s] %(levelname)s %(message)s")
    if request["threads"]:
        torch.set_num_threads(request["threads"])
    steady_process()  # the same steady state in every case's process: see torchbenchmark/steady.py
    result = collect_diagnostics(
        request["model"],
        mode=request["mode"],
        device=request["device"],
        batch_size=request["batch_size"],
        out_dir=request["out_dir"],
        budget=Budget(**request["budget"]),
        detailed=request["detailed"],
    )
    row = result.to_dict()
    row["timings_s"] = {
        "start": round(STARTED - request["spawned_at"], 3),
        "import": round(imported - STARTED, 3),
        **row["timings_s"],
    }
    path = Path(request["result_path"])
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(row), encoding="utf-8")
    os.replace(partial, path)
    print(f"[torchbenchmark] {result!r}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
