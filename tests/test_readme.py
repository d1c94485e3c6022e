"""The README keeps its promises: the model table is the registry's, its snippet runs, its flags exist."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from torchbenchmark.cli import build_parser
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


def test_adding_a_model_snippet_runs_as_written(tmp_path: Path) -> None:
    """The README's model is complete: saved as my_net.py, `diagnostics.py check` passes it."""
    text = README.read_text(encoding="utf-8")
    block = re.search(r"<!-- adding-a-model:begin -->\n```python\n(.*?)```\n<!-- adding-a-model:end -->", text, re.S)
    assert block, "README.md lost its <!-- adding-a-model:begin/end --> markers"
    (tmp_path / "my_net.py").write_text(block.group(1), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(ROOT / "diagnostics.py"), "check", "my_net.py:MyNet"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "my_net" in done.stdout and "every rule holds" in done.stdout


def test_every_flag_of_help_is_in_the_readme() -> None:
    text = README.read_text(encoding="utf-8")
    flags = [option for action in build_parser()._actions for option in action.option_strings if option.startswith("--")]
    missing = [flag for flag in flags if flag != "--help" and f"`{flag}" not in text and f" {flag} " not in text]
    assert missing == []
    assert "diagnostics.py check" in text and "family:" in text
