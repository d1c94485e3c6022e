"""The documentation keeps its promises: its tables and quotes are the real ones, its code parses, its
commands parse with the real parsers, every flag is documented, and every link leads somewhere."""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import io
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from torchbenchmark.cli import SUBCOMMANDS
from torchbenchmark.cli.sweep import build_parser as sweep_parser
from torchbenchmark.registry import models_markdown
from torchbenchmark.run import guard
from torchbenchmark.run.outdir import MAX_NAME_BYTES
from torchbenchmark.run.rank import build_parser as rank_parser

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
CLI_PAGE = ROOT / "docs" / "cli.md"
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
API_PAGE = ROOT / "docs" / "python-api.md"
README_MAX_LINES = 200

# Every parser a documented command line reaches: the sweep, each subcommand, and one DDP rank.
PARSERS: dict[str, Callable[[], argparse.ArgumentParser]] = {
    "sweep": sweep_parser,
    **{name: importlib.import_module(f"torchbenchmark.cli.{module}").build_parser for name, module in SUBCOMMANDS.items()},
    "distributed": rank_parser,
}
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)\n(?P<body>.*?)^(?P=indent)```", re.M | re.S)
LINK = re.compile(r"!?\[[^\]]*\]\((?P<target>[^)\s]+)\)")


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def blocks(path: Path, *langs: str) -> Iterator[str]:
    """The fenced code blocks of a page in one of ``langs``, their indentation removed."""
    for match in FENCE.finditer(read(path)):
        if match["lang"] in langs:
            indent = len(match["indent"])
            yield "\n".join(line[indent:] for line in match["body"].splitlines())


def prose(path: Path) -> str:
    """A page without its fenced code blocks."""
    return FENCE.sub("", read(path))


def snippet_pages() -> list[Path]:
    return [page for page in PAGES if "<!-- adding-a-model:begin -->" in read(page)]


# -- the README's tables and quotes ---------------------------------------------------------------------


def test_readme_model_table_matches_the_registry() -> None:
    block = re.search(r"<!-- models:begin -->\n(.*?)\n<!-- models:end -->", read(README), re.S)
    assert block, "README.md lost its <!-- models:begin/end --> markers"
    assert block.group(1) == models_markdown(), "regenerate the table: see docs/adding-a-model.md"


def test_readme_summary_excerpt_is_rows_of_the_file_it_names() -> None:
    block = re.search(r"<!-- summary:begin -->\nAn excerpt of `([^`]+)`.*?\n```\n(.*?)\n```\n<!-- summary:end -->", read(README), re.S)
    assert block, "README.md lost its <!-- summary:begin/end --> excerpt"
    source = ROOT / block.group(1)
    assert source.is_file(), f"the README quotes {block.group(1)}, which does not exist"
    # Column widths depend on the rows shown, so rows are compared cell by cell (split on whitespace).
    reference = [line.split() for line in read(source).splitlines()]
    header, dashes, *rows = block.group(2).splitlines()
    assert header.split() in reference and set(dashes) <= {"-", " "}
    assert rows, "the excerpt shows no rows"
    for row in rows:
        assert row.split() in reference, f"not a row of {block.group(1)}: {row}"


def test_readme_is_a_front_page() -> None:
    lines = len(read(README).splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines: move the detail to docs/"


@pytest.mark.slow
def test_adding_a_model_snippet_runs_as_written(tmp_path: Path) -> None:
    """The documented model is complete: saved as my_net.py, `diagnostics.py check` passes it."""
    (page,) = snippet_pages()
    block = re.search(r"<!-- adding-a-model:begin -->\n```python\n(.*?)```\n<!-- adding-a-model:end -->", read(page), re.S)
    assert block, f"{page.name}: the snippet is not one python block between its markers"
    (tmp_path / "my_net.py").write_text(block.group(1), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(ROOT / "diagnostics.py"), "check", "my_net.py:MyNet"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "my_net" in done.stdout and "every rule holds" in done.stdout


def test_the_adding_a_model_snippet_is_in_one_place() -> None:
    assert len(snippet_pages()) == 1, "the <!-- adding-a-model:begin/end --> snippet must be on exactly one page"


# -- the Python recipe: the README's is the API page's, shortened, so one run runs both ----------------


def recipe(page: Path) -> str:
    """The page's first Python block: its recipe."""
    return next(blocks(page, "python"))


def shows_only(statement: ast.stmt) -> bool:
    """A statement that only shows a value, as a notebook cell's last line does: a name or its attribute."""
    value = statement.value if isinstance(statement, ast.Expr) else None
    while isinstance(value, ast.Attribute):
        value = value.value
    return isinstance(value, ast.Name)


def runs_as(short: ast.stmt, full: ast.stmt, read: set[str]) -> bool:
    """Whether ``full`` does what ``short`` does: the same statement, or the same call kept in a name ``short``'s
    recipe never reads."""
    if ast.dump(short) == ast.dump(full):
        return True
    kept = isinstance(full, ast.Assign) and len(full.targets) == 1 and isinstance(full.targets[0], ast.Name)
    return isinstance(short, ast.Expr) and kept and full.targets[0].id not in read and ast.dump(short.value) == ast.dump(full.value)


def left_over(short: str, full: str) -> list[str]:
    """What keeps a run of ``full`` from running ``short`` as written: a statement of ``short`` that is not the
    next of ``full``'s, or one of ``full``'s, left out of ``short``, that does more than show a value."""
    tree = ast.parse(short)
    read = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    rest = list(ast.parse(full).body)
    problems = []
    for statement in tree.body:
        while rest and not runs_as(statement, rest[0], read):
            skipped = rest.pop(0)
            if not shows_only(skipped):
                problems.append(f"only the API page runs {ast.unparse(skipped)!r}")
        if not rest:
            return [*problems, f"the API page does not run {ast.unparse(statement)!r} where the README does"]
        rest.pop(0)
    return problems + [f"only the API page runs {ast.unparse(left)!r}" for left in rest if not shows_only(left)]


def test_the_readme_recipe_is_the_python_api_recipe_shortened() -> None:
    """Each statement of the README's recipe is the API page's next (comments aside), and each the README leaves
    out only shows a value: running the API page's recipe runs the README's as written."""
    for page in (README, API_PAGE):
        assert 'out_dir="traces"' in recipe(page) and 'load_summary("traces")' in recipe(page), page.name
    assert left_over(recipe(README), recipe(API_PAGE)) == []


def test_a_recipe_that_does_more_than_the_api_page_is_caught() -> None:
    full = "import x\nresult = x.run()\nresult\nresult.reasons\nsummary = x.load()\n"
    assert left_over("import x\nx.run()\nsummary = x.load()\n", full) == []
    assert left_over("import x\nresult = x.run()\nprint(result)\n", full) == [
        "only the API page runs 'summary = x.load()'",
        "the API page does not run 'print(result)' where the README does",
    ]
    # A bare call whose result the README goes on to read is not the page's call kept in that name.
    assert left_over("import x\nx.run()\nresult\n", full)[-1] == "the API page does not run 'x.run()' where the README does"
    assert left_over("import x\n", full) == ["only the API page runs 'result = x.run()'", "only the API page runs 'summary = x.load()'"]


@pytest.mark.slow
def test_the_documented_python_recipe_runs_as_written(tmp_path: Path) -> None:
    """The API page's recipe, which runs the README's too (see above), in a folder of its own (benchmarks/
    linked in for the reference)."""
    (tmp_path / "benchmarks").symlink_to(ROOT / "benchmarks")
    check = "\nassert summary.rows and summary.rows[0].model == 'resnet18', summary\nprint('recipe ok')\n"
    done = subprocess.run([sys.executable, "-c", recipe(API_PAGE) + check], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0 and "recipe ok" in done.stdout, done.stderr[-3000:]
    assert (tmp_path / "traces" / "runs").is_dir() and (tmp_path / "traces" / "summary.json").is_file()


# -- code blocks ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_python_block_parses(page: Path) -> None:
    for block in blocks(page, "python"):
        ast.parse(block)


def invocations(line: str) -> Iterator[tuple[str, list[str]]]:
    """Each command line of this tool in one shell line: which parser reads it, and its arguments.

    Shell variables stand for a concrete value (``1``), enough for parsing; a quoted string that is itself
    a command (``sbatch --wrap "python diagnostics.py merge ..."``) is read as one too.
    """
    lexer = shlex.shlex(re.sub(r"\$\{?\w+\}?", "1", line), posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    words = list(lexer)
    command: list[str] = []
    for word in [*words, ";"]:
        if word and set(word) <= set(";&|()"):
            yield from _invocation(command)
            command = []
            continue
        if " " in word and ("diagnostics.py" in word or "torchbenchmark" in word):
            yield from invocations(word)
        command.append(word)


def _invocation(words: list[str]) -> Iterator[tuple[str, list[str]]]:
    for i, word in enumerate(words):
        if word == "diagnostics.py" or word.endswith("/diagnostics.py") or (word == "torchbenchmark" and i == 0):
            args = words[i + 1 :]
        elif word == "-m" and i + 1 < len(words) and words[i + 1] in ("torchbenchmark", "torchbenchmark.distributed"):
            if words[i + 1] == "torchbenchmark.distributed":
                yield "distributed", words[i + 2 :]
                return
            args = words[i + 2 :]
        else:
            continue
        if args and args[0] in SUBCOMMANDS:
            yield args[0], args[1:]
        else:
            yield "sweep", args
        return


def parse_error(parser_name: str, args: list[str]) -> str | None:
    """Why the real parser refuses ``args``, or None when it takes them (``--help`` included)."""
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as errors:
            PARSERS[parser_name]().parse_args(args)
    except SystemExit as stop:
        return None if stop.code == 0 else f"exit {stop.code}: {errors.getvalue().strip()}"
    except Exception as error:  # the subcommands' UsageError
        return f"{type(error).__name__}: {error}"
    return None


def documented_commands() -> list[tuple[Path, str, str, list[str]]]:
    found = []
    for page in PAGES:
        for block in blocks(page, "bash", "sh", "shell"):
            for line in block.replace("\\\n", " ").splitlines():
                found += [(page, line, parser, args) for parser, args in invocations(line)]
    return found


def test_the_command_lines_are_found() -> None:
    parsers = {parser for _, _, parser, _ in documented_commands()}
    assert parsers == set(PARSERS), f"no documented command line for {sorted(set(PARSERS) - parsers)}"


def test_every_documented_command_line_parses() -> None:
    refused = [
        f"{page.name}: {line.strip()}\n    {error}"
        for page, line, parser, args in documented_commands()
        if (error := parse_error(parser, args)) is not None
    ]
    assert refused == [], "\n".join(refused)


def test_every_flag_of_every_parser_is_in_docs_cli() -> None:
    text = read(CLI_PAGE)
    missing = [
        f"{name} {flag}"
        for name, build in PARSERS.items()
        for action in build()._actions
        if action.help != argparse.SUPPRESS
        for flag in action.option_strings
        if flag.startswith("--") and flag != "--help" and not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text)
    ]
    assert missing == [], f"docs/cli.md does not mention {missing}"


# -- RESULTS.md and links -------------------------------------------------------------------------------


def results_sections() -> dict[str, str]:
    sections: dict[str, str] = {}
    heading = None
    for line in prose(RESULTS).splitlines():
        if line.startswith("## "):
            heading = line[3:].strip()
            assert heading not in sections, f"benchmarks/RESULTS.md has the section {heading!r} twice"
            sections[heading] = ""
        elif heading is not None:
            sections[heading] += line + "\n"
    return sections


def test_results_has_one_section_per_benchmark_each_with_its_date_and_command() -> None:
    sections = results_sections()
    assert sections
    for heading, body in sections.items():
        assert re.search(r"^- date:", body, re.M), f"RESULTS.md: {heading!r} gives no date"
        assert re.search(r"^- commands?\b", body, re.M), f"RESULTS.md: {heading!r} gives no command"


@pytest.mark.parametrize("page", [*PAGES, RESULTS, ROOT / "CHANGELOG.md", ROOT / "traces" / "README.md"], ids=lambda p: p.name)
def test_every_relative_link_leads_to_a_file(page: Path) -> None:
    broken = []
    for match in LINK.finditer(prose(page)):
        target = match["target"]
        if re.match(r"[a-z][a-z+.-]*:", target) or target.startswith("#"):
            continue  # a web address, or a heading of this page
        path = target.split("#", 1)[0]
        if not (page.parent / path).exists():
            broken.append(target)
    assert broken == [], f"{page.relative_to(ROOT)} links to what does not exist: {broken}"


def test_a_benchmark_replaces_its_own_figures_and_keeps_the_prose_around_them():
    sys.path.insert(0, str(ROOT))
    from benchmarks._report import END, placed

    page = "# B\n\n## One\n\nWhy it matters.\n\n- date: old\n- command: `x`\n\n```\nold table\n```\n\nWhat it shows.\n\n## Two\n\nSecond.\n"
    block = "<!-- measured: x.py writes from here to the end mark on each run -->\n- date: {}\n```\nnew\n```\n" + END
    once = placed(page, block.format(1), "One", None)
    assert "old table" not in once and "Why it matters." in once and "What it shows." in once and "## Two\n\nSecond." in once
    twice = placed(once, block.format(2), "One", None)
    assert twice == once.replace("- date: 1", "- date: 2")
    parted = placed(twice, block.format(3), "Two", "Part")
    assert parted.index("## Two") < parted.index("### Part") < parted.index("- date: 3") and parted.count("- date: 2") == 1
    added = placed(parted, block.format(4), "Three", None)
    assert added.rstrip().endswith(END) and "## Three" in added and added.count("## ") == 3 + 1
    # A section whose own figures have no marks yet, and a part whose have: the section's run replaces its own.
    sectioned = placed(parted, block.format(5), "Two", None)
    assert sectioned.count("- date: 3") == 1 and sectioned.index("- date: 5") < sectioned.index("### Part")


# -- the promises of the tool's hardening are stated where users read them -------------------------------


def test_traces_readme_and_docs_cli_state_the_promises() -> None:
    pages = [ROOT / "traces" / "README.md", CLI_PAGE]
    cap_mib = (guard.LOG_HEAD_BYTES + guard.LOG_TAIL_BYTES) >> 20
    for text in (" ".join(read(page).split()) for page in pages):
        assert f"capped at {cap_mib} MiB" in text
        assert "first and last" in text and "cut" in text
        assert "under --out" in text or "under the output folder" in text
        assert "129" in text and "SIGHUP" in text
        assert "imported only in a child process" in text
        assert "detached" in text and "SIGKILL" in text
        assert f"at most {MAX_NAME_BYTES} bytes" in text


def test_every_schema_version_the_docs_show_is_the_one_written() -> None:
    from torchbenchmark.results.records import SCHEMA_VERSION

    pages = [ROOT / "traces" / "README.md", *PAGES]
    shown = {int(found) for page in pages for found in re.findall(r'"schema_version": (\d+)', read(page))}
    assert shown == {SCHEMA_VERSION}, shown
