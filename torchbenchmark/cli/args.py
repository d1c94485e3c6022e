"""What every subcommand parses alike: the one usage error, number arguments, and files and folders to write."""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INCONCLUSIVE = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT


class UsageError(Exception):
    """Bad input: reported in one line, exit status 2, before anything runs or is written."""


class Parser(argparse.ArgumentParser):
    """argparse whose errors are a UsageError, so every subcommand reports them the same way."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def _number(text: str, kind: type, what: str, within: Callable[[float], bool], bounds: str) -> Any:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if not within(value):
        raise argparse.ArgumentTypeError(f"must be {bounds}, got {text}")
    return value


def positive_int(text: str) -> int:
    return int(_number(text, int, "a whole number", lambda value: value >= 1, "at least 1"))


MOST_THREADS = 1024  # torch takes a C int; past any machine's cores, a number is a mistake


def thread_count(text: str) -> int:
    return int(_number(text, int, "a whole number", lambda value: 1 <= value <= MOST_THREADS, f"from 1 to {MOST_THREADS}"))


def positive_float(text: str) -> float:
    return float(_number(text, float, "a number of seconds", lambda value: 0 < value <= 1e9, "more than 0 and at most 1e9"))


def percent(text: str) -> float:
    return float(_number(text, float, "a percentage", lambda value: 0 <= value < 1000, "between 0 and 1000"))


def check_out_dir(path: Path, flag: str = "--out") -> None:
    """The output folder must be a folder we can write, or a path where one can be made."""
    if path.exists():
        if not path.is_dir():
            raise UsageError(f"{flag} {path}: exists and is not a folder")
        if not _writable(path):
            raise UsageError(f"{flag} {path}: folder is not writable")
        return
    parent = path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not _writable(parent):
        raise UsageError(f"{flag} {path}: cannot create the output folder: {parent} is not a writable folder")


def _writable(folder: Path) -> bool:
    """Whether a file can be made in ``folder``, tried with an unnamed one that never stays (permission
    bits alone do not say: root passes them, /proc and a read-only mount refuse anyway)."""
    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def _protected(inputs: Iterable[Path]) -> list[Path]:
    """What a command's inputs put out of bounds for its outputs: each input, and for a run record
    (``OUT/runs/<id>.json``) the output folder it belongs to, whose records are never to be touched."""
    protected = []
    for item in inputs:
        source = Path(item).resolve()
        protected.append(source)
        if not source.is_dir() and source.parent.name == "runs":
            protected.append(source.parent.parent)
    return protected


def check_apart(path: Path, flag: str, inputs: Iterable[Path]) -> None:
    """``path``, once its links are resolved, is none of the inputs and lies inside none of them."""
    resolved = path.resolve()
    for source in _protected(inputs):
        if resolved == source or source in resolved.parents:
            raise UsageError(f"{flag} {path}: it would overwrite {source}, an input of this command; write it elsewhere")


def check_new_file(path: Path, flag: str, inputs: Iterable[Path] = ()) -> None:
    """A file we will write: a regular file or none yet, in a writable folder, and none of the inputs'.

    ``inputs`` are what the command reads (output folders or files): a path that resolves to one, or to a
    file under one, would destroy what it reads. Checked before anything is read or written.
    """
    check_apart(path, flag, inputs)
    if path.exists() or path.is_symlink():
        if path.is_dir():
            raise UsageError(f"{flag} {path}: is a folder")
        if not path.is_file():
            raise UsageError(f"{flag} {path}: exists and is not a regular file (a device, fifo, socket or dangling link)")
    parent = path.resolve().parent
    if not parent.is_dir() or not _writable(parent):
        raise UsageError(f"{flag} {path}: {parent} is not a writable folder")


def check_new_files(named: Iterable[tuple[str, Path | None]], inputs: Iterable[Path] = ()) -> None:
    """``check_new_file`` for each (flag, path) given, and no two of them the same file."""
    seen: dict[Path, str] = {}
    inputs = list(inputs)
    for flag, path in named:
        if path is None:
            continue
        check_new_file(path, flag, inputs)
        if path.resolve() in seen:
            raise UsageError(f"{flag} {path}: {seen[path.resolve()]} names the same file")
        seen[path.resolve()] = flag
