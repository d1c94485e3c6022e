"""Resolving what a command line names to run: models (names, ``all``, ``family:NAME``, library models and
patterns of them, plug-ins), modes, a device."""

from __future__ import annotations

from collections.abc import Callable

from torchbenchmark.cli.args import UsageError
from torchbenchmark.registry import (
    ModelUnavailableError,
    UnknownModelError,
    expand_source,
    is_plugin_spec,
    list_models,
    meta_of,
    model_class,
    source_of,
    unknown_model_message,
)
from torchbenchmark.results.schema import MODES
from torchbenchmark.run.plugins import IMPORT_TIMEOUT_S, PluginProbe, probe_plugins

FAMILY_PREFIX = "family:"


def resolve_models(
    text: str,
    import_timeout_s: float = IMPORT_TIMEOUT_S,
    probe: Callable[..., dict[str, PluginProbe]] = probe_plugins,
    registered: Callable[[], list[str]] = list_models,
) -> list[str]:
    """Registered names, library models (``hf:NAME``, ``timm:convnext*``) and plug-in specs, checked: each one
    must name a model that exists, by a usable name; a library that is not installed is a usage error.

    Plug-ins are imported in a child process; one whose import fails, hangs or crashes is kept (its cases
    become failed rows with the reason), one that names nothing is a usage error.
    """
    specs = [part.strip() for part in text.split(",") if part.strip()]
    if not specs:
        raise UsageError("--models is empty")
    plugins = [spec for spec in specs if not spec.startswith(FAMILY_PREFIX) and is_plugin_spec(spec)]
    for spec in specs:
        named_elsewhere = spec == "all" or spec.startswith(FAMILY_PREFIX) or spec in plugins or source_of(spec) is not None
        if not named_elsewhere and spec not in registered():
            raise UsageError(unknown_model_message(spec))
    for found in probe(plugins, import_timeout_s).values():
        if found.status == "unknown":
            raise UsageError(found.error)
        if found.name_error:
            raise UsageError(found.name_error)
    resolved = [name for spec in specs for name in (registered() if spec == "all" else _expand(spec))]
    return list(dict.fromkeys(resolved))  # each case once, first mention first


def _expand(spec: str) -> list[str]:
    """``all``, ``family:NAME`` and library patterns as the names they stand for; any other spec as itself."""
    if spec == "all":
        return list_models()
    if source_of(spec) is not None:
        try:
            return expand_source(spec)
        except (UnknownModelError, ModelUnavailableError) as error:
            raise UsageError(str(error)) from None
    if spec.startswith(FAMILY_PREFIX):
        return family_models(spec[len(FAMILY_PREFIX) :])
    return [spec]


def families() -> dict[str, list[str]]:
    """Every family and its registered models."""
    found: dict[str, list[str]] = {}
    for name in list_models():
        found.setdefault(meta_of(model_class(name)).family, []).append(name)
    return found


def family_models(family: str) -> list[str]:
    """The registered models of one family (``--models family:nlp``)."""
    by_family = families()
    if family not in by_family:
        raise UsageError(f"unknown family {family!r}; families: {', '.join(sorted(by_family))}")
    return by_family[family]


def exclude_models(models: list[str], text: str) -> list[str]:
    """``models`` less those ``--exclude`` names (registered names, plug-in specs or family:NAME)."""
    excluded = set(resolve_models(text))
    unknown = excluded - set(models)
    if unknown:
        raise UsageError(f"--exclude {', '.join(sorted(unknown))}: not among the models chosen")
    remaining = [model for model in models if model not in excluded]
    if not remaining:
        raise UsageError("--exclude leaves no model to run")
    return remaining


def resolve_modes(text: str) -> list[str]:
    modes = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [mode for mode in modes if mode not in MODES]
    if unknown or not modes:
        raise UsageError(f"unknown mode {unknown[0]!r}; expected train, eval or both" if unknown else "--modes is empty")
    return list(dict.fromkeys(modes))


def resolve_device(text: str) -> str:
    """The device a command runs on, checked here and named as torch names it (``auto`` picks one)."""
    from torchbenchmark.measure.environment import check_device  # torch, only for the commands that run models

    try:
        return check_device(text)
    except ValueError as error:
        raise UsageError(f"--device {error}") from None
