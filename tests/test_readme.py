"""The README's model table is the registry's and its summary excerpt is the reference run's, so neither can drift."""

from __future__ import annotations

import re
from pathlib import Path

from torchbenchmark.registry import models_markdown

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def test_readme_model_table_matches_the_registry() -> None:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"<!-- models:begin -->\n(.*?)\n<!-- models:end -->", text, re.S)
    assert block, "README.md lost its <!-- models:begin/end --> markers"
    assert block.group(1) == models_markdown(), "regenerate the table: see 'Adding a model' in README.md"


def test_readme_summary_excerpt_is_rows_of_the_file_it_names() -> None:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"<!-- summary:begin -->\nAn excerpt of `([^`]+)`.*?\n```\n(.*?)\n```\n<!-- summary:end -->", text, re.S)
    assert block, "README.md lost its <!-- summary:begin/end --> excerpt"
    source = ROOT / block.group(1)
    assert source.is_file(), f"the README quotes {block.group(1)}, which does not exist"
    # Column widths depend on the rows shown, so rows are compared cell by cell (split on whitespace).
    reference = [line.split() for line in source.read_text(encoding="utf-8").splitlines()]
    header, dashes, *rows = block.group(2).splitlines()
    assert header.split() in reference and set(dashes) <= {"-", " "}
    assert rows, "the excerpt shows no rows"
    for row in rows:
        assert row.split() in reference, f"not a row of {block.group(1)}: {row}"
