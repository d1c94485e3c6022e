"""What a test reads of a rendered page: its visible text, its links, and a summary cut to one case."""

from __future__ import annotations

import dataclasses
import html
import re
from typing import Any
from urllib.parse import unquote

from torchbenchmark.results import files
from torchbenchmark.results.schema import Status


def text_of(page_html: str) -> str:
    """The words a reader sees: tags, drawings, styles and scripts removed, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<(svg|style|script)\b.*?</\1>", " ", page_html, flags=re.S)))


def one_case(summary: Any) -> Any:
    """``summary`` with only its first row that ran ok."""
    row = next(row for row in summary.rows if row.status == Status.OK)
    return dataclasses.replace(summary, rows=(row,))


def assert_links_stay_inside(page: str) -> None:
    """Every link of ``page`` is a heading of it or a relative path that stays inside its folder."""
    for href in re.findall(r'href="([^"]*)"', page):
        target = unquote(html.unescape(href))
        assert href.startswith("#") or (files.relative_inside(target) and ":" not in href), href
