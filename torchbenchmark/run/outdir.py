"""The output folder's one owner: every file name under ``--out``, the safe-path checks, the lock, reading
the folder back, rewriting its views from the records, and clearing what a killed run left behind.

Every path written is checked to lie under the output folder once links are resolved; nothing of the
user's is followed, overwritten or removed. The views (summary.json, summary.txt, report.html) are
rebuilt from the run records, by this module alone, for the sweep, DDP and merge alike.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import logging
import os
import re
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO

from torchbenchmark.analyze.pooling import pooled_summary
from torchbenchmark.report.format import unsafe_char
from torchbenchmark.report.page import render_report
from torchbenchmark.report.summary import render_text
from torchbenchmark.results.files import StorageError, dumps, write_atomic
from torchbenchmark.results.records import (
    RunRecord,
    RunState,
    Summary,
    legacy_record,
    read_record,
    read_summary_file,
    summary_of_records,
)
from torchbenchmark.results.schema import EAGER
from torchbenchmark.results.spec import DEFAULT_TIMEOUT_S, CaseSpec

RUNS_DIR = "runs"
SUMMARY_JSON = "summary.json"
SUMMARY_TXT = "summary.txt"
REPORT_HTML = "report.html"
LOCK_NAME = ".torchbenchmark.lock"
VIEWS = (SUMMARY_JSON, SUMMARY_TXT, REPORT_HTML)
TRACE_SUFFIX = ".pt.trace.json.gz"
# A model's folder name, in UTF-8 bytes: room for "<mode>-<device>-detailed.pt.trace.json.gz" and
# temporary suffixes inside the usual 255-byte limit on one path component.
MAX_NAME_BYTES = 100
# What this tool writes under before renaming, with the writer's pid: ``.<name>.<pid>.partial`` and, for a
# trace or a case's row, ``.<name>.<pid>.json``.
# ``.json.tmp``: torch's own temporary name for a trace it exports to ``<raw>.json``, left where the disk filled up.
_TEMPORARY = re.compile(r"\.(?P<name>.+)\.(?P<pid>\d+)\.(partial|json|json\.tmp)")
# A running sweep rewrites its record after every case: a record not written for a case's timeout and this
# much more (the plug-in import, the views, the guard's grace) is one whose sweep is gone.
STALE_MARGIN_S = 600.0
logger = logging.getLogger(__name__)


class UnsafeNameError(ValueError):
    """A model name that cannot be used as one folder name under the output folder."""


class OutsideOutputError(ValueError):
    """A path that, once its links are resolved, does not lie under the output folder."""


class OutputBusy(RuntimeError):
    """Another run holds the output folder."""


class OutputUnusable(RuntimeError):
    """The output folder cannot be made, locked or written."""


# Names ----------------------------------------------------------------------------------------------


def stem(mode: str, device: str, variant: str = EAGER) -> str:
    """``<mode>-<device>[-<variant>]``: every file of a case starts so; the full device keeps cuda:0 and
    cuda:1 apart."""
    return f"{mode}-{device}" if variant == EAGER else f"{mode}-{device}-{variant}"


def spec_stem(spec: CaseSpec) -> str:
    return stem(spec.mode, spec.device, spec.variant)


def trace_name(case_stem: str, kind: str) -> str:
    """The light (``<stem>.pt.trace.json.gz``) or detailed (``<stem>-detailed...``) profile's file name."""
    return case_stem + ("" if kind == "light" else f"-{kind}") + TRACE_SUFFIX


def rank_trace_name(case_stem: str, rank: int) -> str:
    return f"{case_stem}-rank{rank}{TRACE_SUFFIX}"


def top_ops_name(case_stem: str) -> str:
    return f"{case_stem}.top_ops.txt"


def attribution_name(case_stem: str) -> str:
    """Where a case's overhead by module, class and line is written, beside its top ops."""
    return f"{case_stem}.overhead_by_module.txt"


def log_name(spec: CaseSpec) -> str:
    """A case's log; a repeat past the first, which only times steps, keeps a log of its own."""
    return f"{spec_stem(spec)}.log" if spec.profiles else f"{spec_stem(spec)}.repeat{spec.repeat}.log"


def record_path(out_dir: Path, run_id: str) -> Path:
    return out_dir / RUNS_DIR / f"{run_id}.json"


def result_path(case_folder: Path, spec: CaseSpec) -> Path:
    """Where a case's process leaves its row for the sweep: a temporary name of this tool's."""
    return case_folder / f".{spec_stem(spec)}.result.{os.getpid()}.json"


# Safe paths -----------------------------------------------------------------------------------------


def _has_control(text: str) -> bool:
    return any(unsafe_char(c) for c in text)


def check_model_name(name: object) -> str:
    """``name`` if it is one plain path component: a non-empty str, no separator, not ``.``/``..``, no
    control character, short."""
    if not isinstance(name, str):
        raise UnsafeNameError(f"model name must be a string, got {type(name).__name__} {name!r:.60}")
    shown = ascii(name[:60]) + ("..." if len(name) > 60 else "")
    if not name.strip():
        raise UnsafeNameError(f"model name {shown} is empty")
    if "\0" in name:
        raise UnsafeNameError(f"model name {shown} contains a NUL character")
    if _has_control(name):
        raise UnsafeNameError(f"model name {shown} contains a control, format or separator character")
    if any(sep in name for sep in {"/", os.sep} | ({os.altsep} if os.altsep else set())):
        raise UnsafeNameError(f"model name {shown} contains a path separator")
    if name in (".", ".."):
        raise UnsafeNameError(f"model name {shown} is not a folder name")
    if len(os.fsencode(name)) > MAX_NAME_BYTES:
        raise UnsafeNameError(f"model name {shown} is longer than {MAX_NAME_BYTES} bytes")
    return name


def inside(out_dir: str | Path, path: str | Path) -> Path:
    """``path`` if, with every link in it resolved, it lies under ``out_dir``; else :class:`OutsideOutputError`."""
    root = Path(out_dir).resolve()
    resolved = Path(path).resolve()
    if resolved != root and root not in resolved.parents:
        raise OutsideOutputError(f"{path} resolves to {resolved}, outside the output folder {root}")
    return Path(path)


def case_dir(out_dir: str | Path, name: object) -> Path:
    """The folder of model ``name`` under ``out_dir``, checked: a safe name, and no link leading out."""
    return inside(out_dir, Path(out_dir) / check_model_name(name))


def make_case_dir(out_dir: Path, name: str) -> Path:
    """``case_dir``, made, and checked again once made (a link put there meanwhile)."""
    folder = case_dir(out_dir, name)
    folder.mkdir(parents=True, exist_ok=True)
    return inside(out_dir, folder)


def create_new(path: str | Path) -> IO[bytes]:
    """Open ``path`` for writing as a new file of ours: whatever was there (a link too) is removed, not followed."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    return os.fdopen(fd, "wb")


# The folder -----------------------------------------------------------------------------------------


def check_usable(out_dir: Path) -> None:
    """Refuse a folder whose views, lock or records could not be this tool's; writes nothing."""
    if out_dir.exists() and not out_dir.is_dir():
        raise OutputUnusable(f"{out_dir}: exists and is not a folder")
    for name in (*VIEWS, LOCK_NAME):
        path = out_dir / name
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise OutputUnusable(f"{path}: is not a file this tool wrote; move it away or choose another --out")
    runs = out_dir / RUNS_DIR
    if runs.is_symlink() or (runs.exists() and not runs.is_dir()):
        raise OutputUnusable(f"{runs}: is not the folder of run records this tool writes; move it away or choose another --out")


def make(out_dir: Path) -> None:
    """Make the output folder (checked first with ``check_usable``)."""
    check_usable(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputUnusable(f"{out_dir}: cannot create the output folder: {error.strerror or error}") from None


@contextlib.contextmanager
def locked(out_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``out_dir``; refuse if another process holds it. Take it last, once every
    check has passed: a refusal writes nothing, the lock included."""
    path = out_dir / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as error:
        raise OutputUnusable(f"{path}: cannot open the lock: {error.strerror or error}") from None
    with open(fd, "a+", encoding="utf-8") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "another process"
            raise OutputBusy(f"{out_dir} is in use by another diagnostics run ({holder}); wait or choose another --out") from None
        lock.seek(0)
        lock.truncate()
        lock.write(f"pid {os.getpid()}")
        lock.flush()
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale(out_dir: Path) -> list[Path]:
    """This tool's temporary files in ``out_dir``, its records and its model folders whose writer is gone."""
    folders = [out_dir, out_dir / RUNS_DIR, *(p for p in out_dir.iterdir() if p.is_dir() and not p.is_symlink())]
    return [path for folder in folders for path in remove_stale_in(folder)]


def remove_stale_in(folder: Path) -> list[Path]:
    """This tool's temporary files in ``folder`` (``.<name>.<pid>.partial``, ``.json`` or ``.json.tmp``) whose writer is gone."""
    removed = []
    with contextlib.suppress(OSError):
        for path in folder.iterdir():
            found = _TEMPORARY.fullmatch(path.name)
            if found and not _alive(int(found["pid"])) and (path.is_file() or path.is_symlink()):
                path.unlink()
                removed.append(path)
    return removed


# Records and views ----------------------------------------------------------------------------------


def write_record(out_dir: Path, record: RunRecord) -> Path:
    path = record_path(out_dir, record.run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, dumps(record.to_dict()))
    return path


def settled(record: RunRecord, path: Path) -> RunRecord:
    """``record``, read as ``died`` when it says ``running`` but its sweep no longer exists: its pid is gone
    (on this host), or (another host's, or no pid) the record was last written longer ago than a case may
    take. A running sweep rewrites its record after every case, within its timeout."""
    if record.state != RunState.RUNNING:
        return record
    if record.pid is not None and record.environment.get("host") == socket.gethostname():
        gone = not _alive(record.pid)
    else:
        flags = record.extra.get("flags")
        timeout_s = flags.get("timeout_s") if isinstance(flags, dict) else None
        timeout_s = timeout_s if isinstance(timeout_s, (int, float)) and not isinstance(timeout_s, bool) else DEFAULT_TIMEOUT_S
        try:
            age_s = time.time() - path.stat().st_mtime
        except OSError:
            return record
        gone = age_s > timeout_s + STALE_MARGIN_S
    return dataclasses.replace(record, state=RunState.DIED) if gone else record


def read_record_file(path: Path) -> RunRecord:
    """One run record, strictly read, its state settled."""
    return settled(read_record(path), path)


def read_records(out_dir: Path) -> list[RunRecord]:
    """Every run record in ``out_dir``, oldest first; any unreadable one is an error naming it."""
    folder = out_dir / RUNS_DIR
    if not folder.is_dir():
        return []
    paths = [path for path in folder.glob("*.json") if not path.name.startswith(".")]
    return sorted((read_record_file(path) for path in paths), key=lambda record: record.run_id)


def earlier_records(out_dir: Path) -> list[RunRecord]:
    """The folder's records; a summary.json from before run records, carried as a record of its own."""
    records = read_records(out_dir)
    legacy = legacy_record(out_dir / SUMMARY_JSON) if not records else None
    return [legacy] if legacy is not None else records


def load(path: str | Path, pool: bool = False) -> Summary:
    """Rows from an output folder (its records), a summary.json, or one run record.

    ``pool`` times each case of a folder with every run that measured it alike (``analyze.pooling``); only
    a folder holds several runs. StorageError naming the file and the problem when it cannot be read.
    """
    path = Path(path)
    records = read_records(path) if path.is_dir() else []
    if records:
        return pooled_summary(records, str(path)) if pool else summary_of_records(records, str(path))
    if pool:
        raise StorageError(f"{path}: pooling needs an output folder with run records ({RUNS_DIR}/*.json)")
    if path.is_dir():
        if (path / SUMMARY_JSON).is_file():
            return read_summary_file(path / SUMMARY_JSON)
        raise StorageError(f"{path}: no run records ({RUNS_DIR}/*.json) and no {SUMMARY_JSON}: not an output folder")
    if not path.exists():
        raise StorageError(f"{path}: no such file or folder")
    return read_summary_file(path)


def folder_of(source: str | Path) -> Path:
    """The output folder that the rows read from ``source`` (a folder, its summary.json or one of its run
    records) name their traces and logs relative to."""
    path = Path(source)
    if path.is_dir():
        return path
    return path.parent.parent if path.parent.name == RUNS_DIR else path.parent


def rewrite_views(
    out_dir: Path,
    records: Sequence[RunRecord],
    run_id: str | None = None,
    text: Callable[[Summary], str] | None = None,
    report: bool = True,
) -> Path | None:
    """summary.json, summary.txt and (``report``) report.html, rebuilt from ``records``; the page's path.

    ``text`` renders summary.txt (default: ``report.summary.render_text`` naming ``run_id`` as this run).
    A page that cannot be drawn is a warning, never a lost run: the records and summary are written.
    """
    view = summary_of_records(records, str(out_dir))
    write_atomic(out_dir / SUMMARY_JSON, dumps(view.to_dict()))
    write_atomic(out_dir / SUMMARY_TXT, text(view) if text else render_text(view, run_id))
    if not report:
        return None
    try:
        write_atomic(out_dir / REPORT_HTML, render_report(view))
    except OSError:
        raise
    except Exception as error:
        logger.warning("report.html not written: %s: %s", type(error).__name__, error)
        return None
    return out_dir / REPORT_HTML
