"""summary.txt read as a test reads it: the table's header and rows apart from the legend under them.

A word the legend always prints (``ms/step``, ``contended:``, ``blocked``, ``variant``) proves nothing when
looked for in the whole file; looked for in the header or a row, it fails when the table lacks it.
"""

from __future__ import annotations

import itertools
from pathlib import Path


def table(summary_txt: Path | str) -> tuple[str, list[str]]:
    """The table's header line and its rows' lines."""
    text = Path(summary_txt).read_text() if isinstance(summary_txt, Path) else summary_txt
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("model "))
    return lines[start], list(itertools.takewhile(str.strip, lines[start + 2 :]))


def row_line(summary_txt: Path | str, model: str, mode: str | None = None) -> str:
    """The one row of ``model`` (and ``mode``) in the table."""
    (found,) = [line for line in table(summary_txt)[1] if line.split()[:1] == [model] and (mode is None or line.split()[1] == mode)]
    return found
