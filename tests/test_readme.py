"""The README's model table is the registry's, so it cannot drift."""

from __future__ import annotations

import re
from pathlib import Path

from torchbenchmark.registry import models_markdown

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_model_table_matches_the_registry() -> None:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"<!-- models:begin -->\n(.*?)\n<!-- models:end -->", text, re.S)
    assert block, "README.md lost its <!-- models:begin/end --> markers"
    assert block.group(1) == models_markdown(), "regenerate the table: see 'Adding a model' in README.md"
