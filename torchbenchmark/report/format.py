"""How figures and tables are written, for text and HTML alike: a table's columns are declared once, as data."""

from __future__ import annotations

import dataclasses
import html
import shlex
import shutil
import sys
import textwrap
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import tabulate as tabulate_module
from tabulate import tabulate

from torchbenchmark.results.schema import format_ms


def number(value: float | None, digits: int) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def significant(value: float | None) -> str:
    """Step times span 0.01 ms to seconds: three significant figures, never scientific notation."""
    return "" if value is None else format_ms(value)


def plural(count: int, noun: str) -> str:
    """``1 case``, ``2 cases``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def unsafe_char(c: str) -> bool:
    """A character that drives a terminal or changes how the text around it reads: a control character (C0,
    DEL, C1), or a Unicode format or separator character (a zero-width space, a right-to-left override,
    U+2028), which would make one name look like another or a line end where none is shown."""
    return ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or unicodedata.category(c) in ("Cf", "Zl", "Zp")


def escape_controls(text: str, one_line: bool = False) -> str:
    """``text`` with every ``unsafe_char`` shown as an escape (``\\x1b``, ``\\u202e``): text from a model never
    drives a terminal nor passes for other text. Newlines and tabs stay, but for ``one_line`` text: a name
    or a line of output, where a newline would forge a line of its own."""

    def shown(c: str) -> str:
        if not unsafe_char(c) or (c in "\n\t" and not one_line):
            return c
        return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"

    return "".join(shown(c) for c in text)


def program() -> str:
    """How this command was run, for its messages and the commands it suggests: ``python -m torchbenchmark``,
    the ``torchbenchmark`` console script, or ``diagnostics.py``."""
    started = Path(sys.argv[0] if sys.argv else "")
    if started.name == "__main__.py" and started.parent.name == "torchbenchmark":
        return "python -m torchbenchmark"
    return "torchbenchmark" if started.name == "torchbenchmark" else "diagnostics.py"


CONSOLE_COLUMNS = 120  # the terminal view's width where the terminal does not say its own (a CI log)


def console_width() -> int:
    """The terminal's columns (``COLUMNS`` first), else ``CONSOLE_COLUMNS``."""
    return shutil.get_terminal_size((CONSOLE_COLUMNS, 24)).columns


def fit(line: str, width: int) -> str:
    """One line cut to ``width`` characters, the cut shown by an ellipsis: the whole line is in summary.txt."""
    return line if len(line) <= width else line[: max(0, width - 1)] + "…"


def wrap(text: str, width: int, indent: str = "", hang: str = "  ") -> str:
    """Prose over lines of at most ``width`` where its words allow, later lines indented by ``hang`` more."""
    return textwrap.fill(
        text, width, initial_indent=indent, subsequent_indent=indent + hang, break_on_hyphens=False, break_long_words=False
    )


def console(text: str) -> str:
    """A message for the terminal, wrapped at its width, its later lines indented."""
    return wrap(escape_controls(text, one_line=True), console_width())


def wrap_command(command: str, width: int, indent: str = "") -> str:
    """A shell command over lines of at most ``width`` where its words allow, ended by `` \\`` so that it
    pastes as one command; a word longer than a line stands alone on its line."""
    lines = [indent]
    for word in shlex.split(command):
        quoted = shlex.quote(word)
        if lines[-1].strip() and len(lines[-1]) + 1 + len(quoted) + 2 > width:
            lines[-1] += " \\"
            lines.append(indent + "  ")
        lines[-1] += (" " if lines[-1].strip() else "") + quoted
    return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class Column:
    """One column of a table: its header, its cell for a row, whether it is a number (right-aligned)."""

    header: str
    cell: Callable[[Any], str]
    numeric: bool = True
    html: Callable[[Any], str] | None = None  # the cell as HTML (links); None: the text cell, escaped
    figure: str = ""  # the row's figure it shows, by name (report.case.field): a table shows each figure once


def render_columns(columns: Sequence[Column], rows: Iterable[Any], tight: bool = False) -> str:
    """Any text table of this package: the given columns over the given rows, with tabulate; ``tight``: no
    column wider than its widest cell or header (tabulate pads each header by two), for a terminal's width."""
    cells = [[escape_controls(column.cell(row), one_line=True) for column in columns] for row in rows]
    padding = tabulate_module.MIN_PADDING
    tabulate_module.MIN_PADDING = 0 if tight else padding  # read by tabulate at each call; restored below
    try:
        return tabulate(
            cells,
            headers=[column.header for column in columns],
            tablefmt="simple",
            colalign=["right" if column.numeric else "left" for column in columns],
            disable_numparse=True,
        )
    finally:
        tabulate_module.MIN_PADDING = padding


def render_columns_html(
    columns: Sequence[Column], rows: Iterable[Any], row_id: Callable[[Any], str] | None = None, kind: str = "sortable"
) -> str:
    """The same table as an HTML ``<table>``; a numeric column's cells are right-aligned."""

    def align(column: Column) -> str:
        return ' class="num"' if column.numeric else ""

    def cell(column: Column, row: Any) -> str:
        content = column.html(row) if column.html else html.escape(column.cell(row))
        return f"<td{align(column)}>{content}</td>"

    head = "".join(f'<th{align(c)} scope="col">{html.escape(c.header)}</th>' for c in columns)
    body = []
    for row in rows:
        anchor = f' id="{html.escape(row_id(row))}"' if row_id else ""
        body.append(f"<tr{anchor}>" + "".join(cell(column, row) for column in columns) + "</tr>")
    return f'<table class="{kind}">\n<thead><tr>{head}</tr></thead>\n<tbody>\n' + "\n".join(body) + "\n</tbody>\n</table>"
