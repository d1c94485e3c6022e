"""Plug-in models examined without importing them here: each plug-in file or module is imported in a
guarded child process with a timeout, so one that hangs, crashes or exits at import is a report, not our end.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import io
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterable

from torchbenchmark.run import guard
from torchbenchmark.run.outdir import UnsafeNameError, check_model_name

IMPORT_TIMEOUT_S = 60.0  # at most this long to import a plug-in (a sweep uses --timeout when shorter)
OUTPUT_HEAD_BYTES = OUTPUT_TAIL_BYTES = 32 << 10  # of a probe's output kept for the report


@dataclasses.dataclass(frozen=True)
class PluginProbe:
    """What importing a plug-in spec showed: its declared metadata, or why there is none."""

    spec: str
    status: str  # ok | unknown (names nothing: a usage error) | unavailable (ImportError) | failed
    error: str = ""  # one line, for a row or an error message
    output: str = ""  # the import's output, tracebacks included (capped)
    name: str | None = None  # the declared name when it is a str; see name_error
    name_problem: str = ""  # why the declared name is unusable, as the importing process found it
    family: str = ""
    annotated: bool = False
    batch_sizes: tuple[int, int, int, int] | None = None  # cpu train, cpu eval, cuda train, cuda eval
    missing: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()  # why the class cannot be a model of the contract (contract_problems)

    @property
    def class_name(self) -> str:
        return self.spec.rpartition(":")[2]

    @property
    def name_error(self) -> str | None:
        """Why the declared name cannot name the model's folder, or None (checked here again, not trusted)."""
        if self.status != "ok":
            return None
        try:
            check_model_name(self.name)
        except UnsafeNameError as error:
            return f"plug-in {self.spec!r}: {self.name_problem or error}"
        return None

    @property
    def row_name(self) -> str:
        """The name its rows and folder go under: its declared name when usable, else its class name."""
        if self.status == "ok" and self.name_error is None and self.name is not None:
            return self.name
        return self.class_name


def probe_plugins(specs: Iterable[str], timeout_s: float = IMPORT_TIMEOUT_S) -> dict[str, PluginProbe]:
    """Import each plug-in spec's file or module in a child process, one child per file or module."""
    by_target: dict[str, list[str]] = {}
    for spec in dict.fromkeys(specs):
        by_target.setdefault(spec.rpartition(":")[0], []).append(spec)
    keys = {target: (target, tuple(group), timeout_s, _stamp(target)) for target, group in by_target.items()}
    new = [target for target, key in keys.items() if key not in _cache]
    # Each file in a child of its own, side by side: a file that hangs costs its timeout once, not on top
    # of every other file's import. As many at once as there are CPUs: an import is mostly CPU work.
    children: list[subprocess.Popen[bytes]] = []  # every probe started, ended at once on Ctrl-C
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(len(new), os.cpu_count() or 1)))
    try:
        probed = dict(zip(new, pool.map(lambda target: _probe_target(target, by_target[target], timeout_s, children), new)))
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        for child in children:
            guard.end(child)
        raise
    pool.shutdown()
    found: dict[str, PluginProbe] = {}
    for target, key in keys.items():
        if target in probed:
            _cache[key] = probed[target]
        found.update(_cache[key])
    return found


_cache: dict[tuple[object, ...], dict[str, PluginProbe]] = {}


def _stamp(target: str) -> tuple[int, int] | None:
    """A file's modification time and size, so an edited plug-in is examined again."""
    try:
        stat = os.stat(target)
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def _probe_target(target: str, specs: list[str], timeout_s: float, children: list[subprocess.Popen[bytes]]) -> dict[str, PluginProbe]:
    output = guard.CappedLog(io.BytesIO(), OUTPUT_HEAD_BYTES, OUTPUT_TAIL_BYTES)
    results = guard.CappedLog(io.BytesIO(), 64 << 20, 0)
    # The import's stack is dumped shortly before the timeout, so a hang shows where it hangs.
    request = {"specs": specs, "dump_at": time.time() + max(0.5, 0.9 * timeout_s - 0.5)}
    output_fd, results_fd = output.pipe(), results.pipe()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    started = time.monotonic()
    try:
        child = guard.spawn("torchbenchmark.run.probe", [json.dumps(request)], env, results_fd, output_fd)
        children.append(child)
    finally:
        os.close(output_fd)
        os.close(results_fd)
    hung = False
    try:
        child.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        hung = True
    finally:
        guard.end(child)
        output.close()
        results.close()
    text = output.text()
    try:
        reported = json.loads(results.text())
    except ValueError:
        reason = _import_death(target, child.returncode, hung, timeout_s, time.monotonic() - started)
        return {spec: PluginProbe(spec, "failed", reason, text) for spec in specs}
    probes = {}
    for spec in specs:
        item = reported[spec]
        sizes = item.get("batch_sizes")
        probes[spec] = PluginProbe(
            spec=spec,
            status=item["status"],
            error=item.get("error", ""),
            output=text,
            name=item.get("name"),
            name_problem=item.get("name_problem", ""),
            family=item.get("family", ""),
            annotated=bool(item.get("annotated")),
            batch_sizes=tuple(sizes) if sizes else None,
            missing=tuple(item.get("missing", ())),
            problems=tuple(item.get("problems", ())),
        )
    return probes


def _import_death(target: str, returncode: int, hung: bool, timeout_s: float, elapsed_s: float) -> str:
    """Why importing ``target`` gave no report, from how its process ended."""
    if hung:
        return f"importing {target} did not finish within {timeout_s:g} s; its stack is in the log"
    if returncode < 0:
        signum = -returncode
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        return f"importing {target} crashed the process ({name}); its stack is in the log"
    return f"importing {target} ended the process with status {returncode} before it reported ({elapsed_s:.1f} s)"
