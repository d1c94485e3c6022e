"""This package's version, from its installed metadata (``pyproject.toml`` is its one source)."""

from __future__ import annotations

import importlib.metadata


def package_version() -> str:
    """The installed version; ``0+unknown`` when the package runs from a folder that was never installed."""
    try:
        return importlib.metadata.version("torchbenchmark")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"
