"""What a test of a timed figure accepts: the right figure, or a row the tool marked."""

from __future__ import annotations


def contended(result: object) -> bool:
    """The tool's promise on a loaded machine: the right verdict, or a row that says other work distorted it."""
    return any(reason.startswith("contended") for reason in result.untrustworthy_reasons)
