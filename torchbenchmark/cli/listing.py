"""``diagnostics.py list [SPEC ...]`` (and ``--list``): the registered models, or those named, and whether each can
run here; ``list hf|timm|torchvision``: every model a library offers by name, and how many."""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import shutil
from collections.abc import Sequence

from torchbenchmark.cli.args import EXIT_OK, Parser, UsageError
from torchbenchmark.cli.models import exclude_models, resolve_models
from torchbenchmark.contract import contract_problems
from torchbenchmark.registry import SOURCES, ModelUnavailableError, is_plugin_spec, list_models, meta_of, model_class, source_names
from torchbenchmark.report.format import program
from torchbenchmark.report.tables import Listed, render_list
from torchbenchmark.run.plugins import IMPORT_TIMEOUT_S, PluginProbe, probe_plugins

PATTERN_EXAMPLES = {"hf": "hf:*ForCausalLM", "timm": "timm:convnext*", "torchvision": "torchvision:resnet*"}
DESCRIPTION = (
    "List the registered models (or the names and plug-ins given), their families and defaults;"
    f" {'|'.join(SOURCES)}: every model that library offers by name."
)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog=f"{program()} list", epilog="exit status: 0 listed; 2 usage error.", description=DESCRIPTION)
    parser.add_argument(
        "specs",
        nargs="*",
        metavar="SPEC",
        help=f"names, 'all', family:NAME, {'|'.join(SOURCES)} or a pattern like timm:convnext*, plug-in specs (default: every model)",
    )
    parser.add_argument("--exclude", help="models to leave out")
    return parser


def _importable(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):  # a dotted name whose parent package is missing
        return False


def _cannot_run(problems: Sequence[str]) -> str:
    return f"cannot run: not a model of the contract: {'; '.join(problems)}"


def _registered(name: str) -> Listed:
    try:
        cls = model_class(name)
        meta = meta_of(cls)
    except Exception as error:
        return Listed(name, available=f"unavailable: {error}")
    if contract_problems(cls):
        return Listed(name, meta.family, available=_cannot_run(contract_problems(cls)))
    missing = [dep for dep in meta.requires if not _importable(dep)]
    return Listed(
        name, meta.family, meta.annotated, meta.batch_sizes.sizes(), f"unavailable: needs {', '.join(missing)}" if missing else "yes"
    )


def _plugin(probe: PluginProbe) -> Listed:
    """A plug-in's line from its probe; an import that failed shows its own error, first line."""
    if probe.status != "ok":
        return Listed(probe.spec, available=f"unavailable: {probe.error}")
    if probe.name_error:
        return Listed(probe.spec, available=f"unusable: {probe.name_error}")
    if probe.problems:
        return Listed(probe.row_name, probe.family, available=_cannot_run(probe.problems))
    return Listed(
        probe.row_name,
        probe.family,
        probe.annotated,
        probe.batch_sizes,
        f"unavailable: needs {', '.join(probe.missing)}" if probe.missing else "yes",
    )


def listing(specs: Sequence[str] | None = None, import_timeout_s: float = IMPORT_TIMEOUT_S) -> str:
    """The table of the registered models, or of the given names and plug-in specs."""
    specs = list_models() if specs is None else list(specs)
    probes = probe_plugins([spec for spec in specs if is_plugin_spec(spec)], import_timeout_s)
    return render_list([_plugin(probes[spec]) if spec in probes else _registered(spec) for spec in specs])


def library(source: str, width: int | None = None) -> str:
    """Every name the library ``source`` offers, how many, and how to name one; UsageError without the library."""
    try:
        names = source_names(source)
    except ModelUnavailableError as error:
        raise UsageError(str(error)) from None
    package = importlib.import_module(f"torchbenchmark.models.{SOURCES[source][0]}").PACKAGE
    width = width or shutil.get_terminal_size((120, 24)).columns
    column = max(map(len, names), default=0) + 2
    per_line = max(1, width // column)
    lines = ["".join(name.ljust(column) for name in names[at : at + per_line]).rstrip() for at in range(0, len(names), per_line)]
    head = f"{source}: {len(names):,} models ({package} {importlib.metadata.version(package)}); name one as {source}:NAME, or a pattern: '{PATTERN_EXAMPLES[source]}'"
    return "\n".join([head, *lines])


def show(specs_text: str | None, exclude: str | None, import_timeout_s: float = IMPORT_TIMEOUT_S) -> int:
    named = [part.strip() for part in (specs_text or "").split(",") if part.strip()]
    libraries = [part for part in named if part in SOURCES]
    if libraries:
        if exclude:
            raise UsageError("--exclude takes models, not a whole library")
        for source in libraries:
            print(library(source))
        rest = ",".join(part for part in named if part not in SOURCES)
        if not rest:
            return EXIT_OK
        specs_text = rest
    specs = resolve_models(specs_text, import_timeout_s) if specs_text else None
    if exclude:
        specs = exclude_models(specs if specs is not None else list_models(), exclude)
    print(listing(specs, import_timeout_s))
    return EXIT_OK


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    return show(",".join(args.specs) or None, args.exclude)
