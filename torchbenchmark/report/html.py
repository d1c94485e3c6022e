"""The HTML every page of the report is built of: escaping, sections, figures, badges, links, the page itself."""

from __future__ import annotations

import functools
import html
import importlib.resources
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

from torchbenchmark.results.files import relative_inside


@functools.cache
def static(name: str) -> str:
    """A file of ``report/static/``: the page's style sheet and sorting script."""
    return importlib.resources.files("torchbenchmark.report").joinpath("static", name).read_text(encoding="utf-8")


def escape(value: Any) -> str:
    return html.escape(str(value))


def section(section_id: str, heading: str, *parts: str) -> str:
    return f'<section id="{section_id}">\n<h2>{escape(heading)}</h2>\n' + "\n".join(parts) + "\n</section>"


def figure_html(svg_text: str | None, caption: str) -> str:
    if svg_text is None:
        return "<p>Nothing to draw: no case has these figures.</p>"
    return f"<figure>\n{svg_text}\n<figcaption>{caption}</figcaption>\n</figure>"


def badge(text: str | None) -> str:
    return f'<span class="badge {escape((text or "").replace(" ", "-"))}">{escape(text)}</span>' if text else ""


def link(path: str | None, text: str) -> str:
    """A link to a file a row names, relative to the page's folder; a path that leaves the folder is not linked."""
    if not path:
        return ""
    if not relative_inside(path):
        return f"{escape(text)} (not linked: its path leaves the output folder)"
    return f'<a href="{escape(quote(path))}">{escape(text)}</a>'  # quoted: no part of a name reads as a scheme


def key_values(pairs: Iterable[tuple[str, str]], kind: str = "") -> str:
    items = "".join(f"<dt>{escape(key)}</dt><dd>{value}</dd>" for key, value in pairs if value)
    return (f'<dl class="{kind}">' if kind else "<dl>") + items + "</dl>"


def page(title: str, body: str) -> str:
    """A whole HTML document around ``body``: inline style and script, nothing fetched."""
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n<style>{static('report.css')}</style>\n</head>\n<body>\n{body}\n"
        f"<script>{static('sort.js')}</script>\n</body>\n</html>\n"
    )


def notebook_html(body: str) -> str:
    """What a notebook shows: the body with its style (scoped to the report); sorting needs the page's script."""
    return f"<style>{static('report.css')}</style>\n{body}"
