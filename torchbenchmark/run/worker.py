"""One case in a fresh process: ``python -m torchbenchmark.run.worker '<json CaseRequest>'`` (started by a sweep).

The worker chooses how the case runs: in this process (``run.engine``), or as DistributedDataParallel
ranks launched from here (``run.ddp``). It leaves the row, as JSON, where the request says.
"""

from __future__ import annotations

import time

STARTED = time.time()  # before the heavy imports, so the sweep can see what process start costs

import dataclasses  # noqa: E402
import faulthandler  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable, Mapping  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from torchbenchmark.measure.steady import steady_process  # noqa: E402
from torchbenchmark.results.files import write_atomic  # noqa: E402
from torchbenchmark.results.schema import CaseResult  # noqa: E402
from torchbenchmark.results.spec import CaseRequest, CaseSpec  # noqa: E402
from torchbenchmark.run import ddp, engine  # noqa: E402
from torchbenchmark.run.progress import announce, silent  # noqa: E402


def run_in_process(
    spec: CaseSpec,
    out_dir: Path,
    cls: type | None = None,
    config: Mapping[str, Any] | None = None,
    say: Callable[[str], None] = silent,
    started_at: float | None = None,
) -> CaseResult:
    """The case ``spec`` describes, run from this process: DDP ranks when ``spec.world_size`` is above 1.

    ``started_at`` (a ``time.time()``) is when the case's timeout began: a DDP launcher gives up in time.
    """
    if spec.distributed:
        if cls is not None or config:
            raise ValueError("a DistributedDataParallel case runs its model by name in each rank: pass a spec, not a class")
        return ddp.run_case(spec, out_dir, announce=say, started_at=started_at)
    return engine.diagnose(spec, out_dir, cls=cls, config=config, announce=say)


def main(argv: list[str]) -> int:
    request = CaseRequest.from_json(argv[1])
    spec = request.spec
    faulthandler.enable()  # a model that crashes the interpreter leaves its Python stack in the case's log
    imported = time.time()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="[%(name)s] %(levelname)s %(message)s")
    steady_process()  # the same steady state in every case's process: see measure/steady.py
    result = run_in_process(spec, Path(request.out_dir), say=announce, started_at=request.spawned_at or STARTED)
    started = {"start": round(STARTED - request.spawned_at, 3), "import": round(imported - STARTED, 3)}
    result = dataclasses.replace(result, timings_s={**started, **result.timings_s})
    write_atomic(Path(request.result_path), json.dumps(result.to_dict()))
    print(f"[torchbenchmark] {result!r}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
