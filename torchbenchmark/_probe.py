"""Import plug-ins in a guarded child process and report what each declares: ``python -m torchbenchmark._probe '<json>'``."""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    import faulthandler
    import importlib.util
    import json
    import os
    import time
    import traceback

    request = json.loads(argv[1])
    results = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # the plug-in's own prints join its output, not the results
    faulthandler.enable()  # a crash at import leaves the plug-in's Python stack in the output
    # A hang at import leaves its stack too, shortly before the caller's timeout ends this process.
    faulthandler.dump_traceback_later(max(0.1, request["dump_at"] - time.time()), exit=False)

    from torchbenchmark.contract import contract_problems
    from torchbenchmark.registry import ModelUnavailableError, UnknownModelError, meta_of, model_class
    from torchbenchmark.safe_paths import UnsafeNameError, check_model_name

    def name_problem(name: object) -> str:
        try:
            check_model_name(name)
        except UnsafeNameError as error:
            return str(error)
        return ""

    def importable(package: str) -> bool:
        try:
            return importlib.util.find_spec(package) is not None
        except (ImportError, ValueError):
            return False

    def probe(spec: str) -> dict[str, object]:
        try:
            cls = model_class(spec)
            meta = meta_of(cls)
            sizes = meta.batch_sizes
            found = {
                "status": "ok",
                "name": meta.name if isinstance(meta.name, str) else None,
                "name_problem": name_problem(meta.name),
                "family": str(meta.family),
                "annotated": bool(meta.annotated),
                "batch_sizes": [sizes.cpu_train, sizes.cpu_eval, sizes.cuda_train, sizes.cuda_eval],
                "missing": [dep for dep in meta.requires if not importable(dep)],
                "problems": contract_problems(cls),
            }
            json.dumps(found)  # a batch size that is no number fails here, as a failed probe
            return found
        except UnknownModelError as error:
            return {"status": "unknown", "error": str(error)}
        except ModelUnavailableError as error:
            traceback.print_exc()
            return {"status": "unavailable", "error": str(error)}
        except (Exception, SystemExit) as error:  # noqa: BLE001 - the plug-in's own code: its traceback, then a row
            traceback.print_exc()
            first = (str(error).strip().splitlines() or [""])[0]
            return {"status": "failed", "error": f"{type(error).__name__}: {first}" if first else type(error).__name__}

    found = {spec: probe(spec) for spec in request["specs"]}
    faulthandler.cancel_dump_traceback_later()
    json.dump(found, results)
    results.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
