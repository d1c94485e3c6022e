"""Import plug-ins in a guarded child process and report what each declares: ``python -m torchbenchmark.run.probe '<json>'``.

Only the standard library is imported before the fault handlers are set: a plug-in that crashes or hangs
while being imported (with torch, which the suite's modules bring) leaves its Python stack in the output.
"""

from __future__ import annotations

import faulthandler
import importlib.util
import json
import os
import sys
import time
import traceback
from typing import Any


def _importable(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


def _name_problem(name: object) -> str:
    from torchbenchmark.run.outdir import UnsafeNameError, check_model_name

    try:
        check_model_name(name)
    except UnsafeNameError as error:
        return str(error)
    return ""


def probe(spec: str) -> dict[str, Any]:
    """What importing ``spec`` shows: its declared metadata, or why there is none."""
    from torchbenchmark.contract import contract_problems
    from torchbenchmark.registry import ModelUnavailableError, UnknownModelError, meta_of, model_class

    try:
        cls = model_class(spec)
        meta = meta_of(cls)
        found = {
            "status": "ok",
            "name": meta.name if isinstance(meta.name, str) else None,
            "name_problem": _name_problem(meta.name),
            "family": str(meta.family),
            "annotated": bool(meta.annotated),
            "batch_sizes": list(meta.batch_sizes.sizes()),
            "missing": [dep for dep in meta.requires if not _importable(dep)],
            "problems": contract_problems(cls),
        }
        json.dumps(found)  # a batch size that is no number fails here, as a failed probe
        return found
    except UnknownModelError as error:
        return {"status": "unknown", "error": str(error)}
    except ModelUnavailableError as error:
        traceback.print_exc()
        return {"status": "unavailable", "error": str(error)}
    except (Exception, SystemExit) as error:  # the plug-in's own code: its traceback, then a row
        traceback.print_exc()
        first = (str(error).strip().splitlines() or [""])[0]
        return {"status": "failed", "error": f"{type(error).__name__}: {first}" if first else type(error).__name__}


def main(argv: list[str]) -> int:
    request = json.loads(argv[1])
    results = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # the plug-in's own prints join its output, not the results
    faulthandler.enable()  # a crash at import leaves the plug-in's Python stack in the output
    # A hang at import leaves its stack too, shortly before the caller's timeout ends this process.
    faulthandler.dump_traceback_later(max(0.1, request["dump_at"] - time.time()), exit=False)
    found = {spec: probe(spec) for spec in request["specs"]}
    faulthandler.cancel_dump_traceback_later()
    json.dump(found, results)
    results.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
