"""Model names that may become folder names, and output paths that must stay inside the output folder."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO

# A model's folder name, in UTF-8 bytes: room for "<mode>-<device>-detailed.pt.trace.json.gz" and
# temporary suffixes inside the usual 255-byte limit on one path component.
MAX_NAME_BYTES = 100


class UnsafeNameError(ValueError):
    """A model name that cannot be used as one folder name under the output folder."""


class OutsideOutputError(ValueError):
    """A path that, once its links are resolved, does not lie under the output folder."""


def check_model_name(name: object) -> str:
    """``name`` if it is one plain path component: a non-empty str, no separator, not ``.``/``..``, no NUL, short."""
    if not isinstance(name, str):
        raise UnsafeNameError(f"model name must be a string, got {type(name).__name__} {name!r:.60}")
    shown = repr(name[:60]) + ("..." if len(name) > 60 else "")
    if not name.strip():
        raise UnsafeNameError(f"model name {shown} is empty")
    if "\0" in name:
        raise UnsafeNameError(f"model name {shown} contains a NUL character")
    separators = {"/", os.sep} | ({os.altsep} if os.altsep else set())
    if any(sep in name for sep in separators):
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


def create_new(path: str | Path) -> IO[bytes]:
    """Open ``path`` for writing as a new file of ours: whatever was there (a link too) is removed, not followed."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    return os.fdopen(fd, "wb")
