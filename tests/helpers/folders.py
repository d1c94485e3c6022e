"""What a test reads of an output folder and the files around it: every entry's md5, the tool's temporary
files left behind, the run record, and a record edited as an editor or a corrupt copy would."""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path

from torchbenchmark.results import files
from torchbenchmark.run import outdir


def md5s(root: Path, skip: Path | None = None) -> dict[str, str]:
    """Every entry under ``root`` (``skip``'s subtree aside): a file's md5, a link's target, a folder, a device."""
    found = {}
    for path in sorted(root.rglob("*")):
        if skip is not None and (path == skip or skip in path.parents):
            continue
        mode = path.lstat().st_mode
        if stat.S_ISREG(mode):
            found[str(path.relative_to(root))] = hashlib.md5(path.read_bytes()).hexdigest()
        elif stat.S_ISLNK(mode):
            found[str(path.relative_to(root))] = f"link to {os.readlink(path)}"
        else:
            found[str(path.relative_to(root))] = stat.filemode(mode)[0]
    return found


def temporary_files(root: Path) -> list[str]:
    """This tool's temporary names left anywhere under ``root``."""
    return [str(p) for p in root.rglob("*") if p.name.endswith(files.PARTIAL_SUFFIX) or outdir._TEMPORARY.fullmatch(p.name)]


def record_of(out: Path) -> Path:
    """The one run record of the output folder ``out``."""
    (path,) = (out / "runs").glob("*.json")
    return path


def poison(record: Path, value: str, field: str = '"median": ') -> None:
    """Put ``value`` (raw JSON text) for the first value after ``field``, as an editor or a corrupt copy would."""
    text, count = re.subn(
        re.escape(field) + r'(\s*)(-?[0-9][0-9.eE+-]*|true|false|null|"[^"]*")', lambda m: field + m[1] + value, record.read_text(), count=1
    )
    assert count == 1, field
    record.write_text(text)
