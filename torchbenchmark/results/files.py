"""Writing and reading the tool's JSON and text files: one atomic write for every writer."""

from __future__ import annotations

import gzip
import json
import math
import os
import stat
import zlib
from pathlib import Path
from typing import Any

# The temporary name every writer writes under before renaming: ``.<name>.<pid>.partial``.
PARTIAL_SUFFIX = ".partial"
# The most a file of another run is read to, decompressed: a light trace of this tool's is a few MB; past
# this, a file is not one of ours, or is a gzip bomb.
MOST_READ_BYTES = 512 * 2**20


class StorageError(Exception):
    """A results file that cannot be read as what it claims to be; the message names the file and why."""


def partial_path(path: Path) -> Path:
    """Where ``path`` is written before it is renamed into place."""
    return path.with_name(f".{path.name}.{os.getpid()}{PARTIAL_SUFFIX}")


def write_atomic(path: Path, text: str | bytes) -> None:
    """Write ``text`` to ``path`` so a reader sees the old file or the new one, never half of one.

    The temporary file is removed on every failure path (a full disk included), and the error raised.
    A link at the temporary name is removed, never written through.
    """
    partial = partial_path(path)
    partial.unlink(missing_ok=True)
    data = text.encode("utf-8") if isinstance(text, str) else text
    try:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(partial, path)
    except OSError as error:
        partial.unlink(missing_ok=True)
        if error.filename is None:  # a write to an open file names none: name the one being written
            raise OSError(error.errno, error.strerror, str(path)) from error
        raise
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def relative_inside(path: str) -> bool:
    """Whether ``path``, as a row names a file (relative to its output folder), stays inside that folder:
    relative, no ``..``, no backslash, no NUL."""
    return bool(path) and not path.startswith("/") and ".." not in path.split("/") and "\\" not in path and "\0" not in path


def read_inside(root: Path, name: str) -> bytes:
    """The file a record names ``name`` under its folder ``root``, as ``read_bounded`` reads it; StorageError
    where it lies outside ``root``, by its name or by a link."""
    path = root / name
    if not relative_inside(name) or not path.resolve().is_relative_to(root.resolve()):
        raise StorageError(f"{path}: lies outside {root}, where the record's files are")
    return read_bounded(path)


def read_bounded(path: Path) -> bytes:
    """The bytes of the regular file ``path``, decompressed where its name ends ``.gz``; StorageError naming
    it where it is no regular file (a FIFO or device would hang or never end), holds more than
    ``MOST_READ_BYTES``, or cannot be read whole."""
    most = MOST_READ_BYTES
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise StorageError(f"{path}: cannot be read ({error})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise StorageError(f"{path}: {'is a folder' if stat.S_ISDIR(mode) else 'not a regular file'}, not a file to read")
    with os.fdopen(fd, "rb") as raw:
        try:
            data = (gzip.GzipFile(fileobj=raw) if path.name.endswith(".gz") else raw).read(most + 1)
        except (OSError, EOFError, zlib.error) as error:  # gzip.BadGzipFile is an OSError; a truncated stream, EOFError
            raise StorageError(f"{path}: cannot be read whole ({type(error).__name__}: {error}); truncated or corrupt?") from None
    if len(data) > most:
        raise StorageError(f"{path}: holds more than {most // 2**20} MB, past any file of this tool's")
    return data


def dumps(document: Any) -> str:
    """JSON without NaN or infinity: a figure that is not finite is written as null."""
    return json.dumps(_finite(document), indent=2, allow_nan=False) + "\n"


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def load_json(path: Path) -> Any:
    """The JSON document at ``path``; StorageError naming the file when it cannot be read or parsed."""
    try:
        text = read_bounded(path).decode("utf-8")
    except UnicodeDecodeError as error:
        raise StorageError(f"{path}: cannot be read ({error})") from None
    try:
        document = json.loads(text, parse_constant=_Constant)
    except RecursionError:
        raise StorageError(f"{path}: nested deeper than any file of this tool's") from None
    except ValueError as error:
        raise StorageError(f"{path}: not valid JSON ({error}); truncated or corrupt?") from None
    found = _constant_at(document)
    if found is not None:
        where, constant = found
        raise StorageError(f"{path}: {_row_named(document, where)} is {constant}, not a number JSON allows: a figure must be finite")
    return document


def _row_named(document: Any, where: str) -> str:
    """``where``, with the model, mode and device of the row it lies in (``results[3] (m train cpu).iqr``)."""
    head, bracket, rest = where.partition("]")
    if not head.startswith("results[") or not bracket or not head[8:].isdigit():
        return where or "the document"
    row = document["results"][int(head[8:])]
    shown = " ".join(str(row.get(name, "?"))[:60] for name in ("model", "mode", "device")) if isinstance(row, dict) else ""
    return f"{head}]" + (f" ({shown})" if shown else "") + rest


class _Constant(str):
    """NaN, Infinity or -Infinity as parsed: kept so the error can say where it sits."""


def _constant_at(value: Any, where: str = "") -> tuple[str, str] | None:
    """Where the first NaN or infinity in ``value`` sits (``results[0].step_time_ms.median``), and which."""
    if isinstance(value, _Constant):
        return where, str(value)
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _constant_at(item, f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}" if where else str(key))
        if found is not None:
            return found
    return None
