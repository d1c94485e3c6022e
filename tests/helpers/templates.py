"""Whether a registered model is a template's one-line entry."""

from __future__ import annotations


def is_metadata_only(cls: type, template: type) -> bool:
    """A subclass made by a template's factory: the template as its only base, and no behaviour of its own."""
    own = {key: value for key, value in vars(cls).items() if not key.startswith("__")}
    return cls.__bases__ == (template,) and not any(
        callable(value) or isinstance(value, (staticmethod, classmethod, property)) for value in own.values()
    )
