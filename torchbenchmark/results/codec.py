"""JSON that follows the dataclasses: one encoder, and one strict decoder, for every result type.

A field's JSON form is its own name and value unless its metadata (``json_field``) says otherwise: another
key (``median`` for ``median_ms``), its fields merged into the parent object (``inline``), left out when
None (``omit_none``), or the parent's unknown keys (``extra``). A class's ``JSON_DERIVED`` names properties
written beside its fields for readers of the JSON and skipped when read (recomputed from the fields). Decoding checks every value against the
field's type, and every number against its bound: a figure read back is a finite number in its range, or
a ``SchemaError`` that names where it sits (``results[3].step_time_ms.median``).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import math
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_MISSING: Any = dataclasses.MISSING


class SchemaError(ValueError):
    """A document that does not follow its schema; the message says where and what."""


@dataclasses.dataclass(frozen=True)
class Bound:
    """The range a number must lie in: ``low`` (exclusive when ``open_low``) to ``high``, either end open."""

    low: float | None = None
    high: float | None = None
    open_low: bool = False

    def holds(self, value: float) -> bool:
        if self.low is not None and (value <= self.low if self.open_low else value < self.low):
            return False
        return self.high is None or value <= self.high

    def __str__(self) -> str:
        low = "" if self.low is None else f"{'above' if self.open_low else 'at least'} {self.low:g}"
        high = "" if self.high is None else f"at most {self.high:g}"
        return " and ".join(part for part in (low, high) if part)


# No figure of a row comes near this (flops per step included); beyond it, arithmetic on figures overflows.
MAX_MAGNITUDE = 1e18
POSITIVE = Bound(0.0, open_low=True)
# A duration in ms read back: a nanosecond to about eleven days. Outside it, no step was measured, and
# ratios of such figures overflow or vanish.
DURATION_MS = Bound(1e-6, 1e9)
NON_NEGATIVE = Bound(0.0)
FRACTION = Bound(0.0, 1.0)
AT_LEAST_ONE = Bound(1.0)


def json_field(
    *,
    key: str | None = None,
    inline: bool = False,
    omit_none: bool = False,
    extra: bool = False,
    bound: Bound | None = None,
    default: Any = _MISSING,
    default_factory: Any = _MISSING,
) -> Any:
    """A dataclass field with its JSON form declared (see the module docstring)."""
    metadata = {"key": key, "inline": inline, "omit_none": omit_none, "extra": extra, "bound": bound}
    return dataclasses.field(default=default, default_factory=default_factory, metadata=metadata)


def _key(field: dataclasses.Field[Any]) -> str:
    return field.metadata.get("key") or field.name


def encode(value: Any) -> Any:
    """``value`` as JSON data: dataclasses as objects (their fields' JSON forms), enums as their values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        data: dict[str, Any] = {}
        for field in dataclasses.fields(value):
            item = getattr(value, field.name)
            if field.metadata.get("extra"):
                data = {**item, **data}  # known keys win over kept unknown ones
            elif field.metadata.get("inline"):
                data.update(encode(item) if item is not None else dict.fromkeys(_keys(_hints(type(value))[field.name])))
            elif not (item is None and field.metadata.get("omit_none")):
                data[_key(field)] = encode(item)
        for name in getattr(type(value), "JSON_DERIVED", ()):  # figures derived from the fields, written for readers
            data[name] = encode(getattr(value, name))
        return data
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [encode(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): encode(item) for key, item in value.items()}
    return value


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _keys(annotation: Any) -> list[str]:
    """The JSON keys an inline field's dataclass writes."""
    cls = next(arg for arg in typing.get_args(annotation) or (annotation,) if dataclasses.is_dataclass(arg))
    return [_key(field) for field in dataclasses.fields(cls)]


def decode(annotation: Any, data: Any, where: str = "", bound: Bound | None = None) -> Any:
    """``data`` read as a value of type ``annotation``; SchemaError if it is not one."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        (inner,) = [arg for arg in args if arg is not type(None)]
        return decode(inner, data, where, bound)
    if annotation is Any:
        return data
    if dataclasses.is_dataclass(annotation):
        return decode_object(annotation, data, where)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        try:
            return annotation(data)
        except ValueError:
            known = ", ".join(str(member.value) for member in annotation)
            raise SchemaError(f"{where or 'value'} must be one of {known}, got {data!r:.60}") from None
    if origin in (tuple, list):
        return _sequence(origin, args, data, where, bound)
    if origin in (dict, Mapping) or annotation is dict:
        if not isinstance(data, dict):
            raise SchemaError(f"{where or 'value'} must be an object, got {_kind(data)}")
        value_type = args[1] if args else Any
        return {key: decode(value_type, item, f"{where}.{key}", bound) for key, item in data.items()}
    return _scalar(annotation, data, where, bound)


def _sequence(origin: Any, args: tuple[Any, ...], data: Any, where: str, bound: Bound | None) -> Any:
    if not isinstance(data, list):
        raise SchemaError(f"{where or 'value'} must be a list, got {_kind(data)}")
    if origin is tuple and args and args[-1] is not Ellipsis:
        if len(data) != len(args):
            raise SchemaError(f"{where} must hold {len(args)} items, got {len(data)}")
        return tuple(decode(arg, item, f"{where}[{i}]", bound) for i, (arg, item) in enumerate(zip(args, data)))
    items = [decode(args[0] if args else Any, item, f"{where}[{i}]", bound) for i, item in enumerate(data)]
    return tuple(items) if origin is tuple else items


def _scalar(annotation: Any, data: Any, where: str, bound: Bound | None) -> Any:
    if annotation is bool:
        if not isinstance(data, bool):
            raise SchemaError(f"{where} must be true or false, got {_kind(data)}")
        return data
    if annotation in (int, float):
        number_types = (int,) if annotation is int else (int, float)
        if isinstance(data, bool) or not isinstance(data, number_types):
            raise SchemaError(f"{where} must be {'a whole number' if annotation is int else 'a number'}, got {_kind(data)}")
        if abs(data) > MAX_MAGNITUDE or not math.isfinite(data):  # abs first: a huge int cannot become a float
            raise SchemaError(f"{where} must be a finite number of magnitude at most {MAX_MAGNITUDE:g}, got {data!r:.40}")
        if bound is not None and not bound.holds(data):
            raise SchemaError(f"{where} must be {bound}, got {data!r}")
        return data
    if annotation in (str, Path):
        if not isinstance(data, str):
            raise SchemaError(f"{where} must be a string, got {_kind(data)}")
        return annotation(data)
    raise TypeError(f"no JSON form for {annotation!r}")  # a schema this module does not support


def decode_object(cls: type, data: Any, where: str = "") -> Any:
    """An instance of the dataclass ``cls`` from its JSON object; a key it lacks takes the field's default."""
    if not isinstance(data, dict):
        raise SchemaError(f"{where or 'value'} must be an object, got {_kind(data)}")
    hints, values, known = _hints(cls), {}, set(getattr(cls, "JSON_DERIVED", ()))  # derived ones: recomputed, not read
    extra_field = None
    for field in dataclasses.fields(cls):
        meta = field.metadata
        if meta.get("extra"):
            extra_field = field.name
            continue
        if meta.get("inline"):
            keys = _keys(hints[field.name])
            known.update(keys)
            part = {key: data[key] for key in keys if data.get(key) is not None}
            values[field.name] = decode(hints[field.name], part, where) if part else None
            continue
        key = _key(field)
        known.add(key)
        path = f"{where}.{key}" if where else key
        if key in data:
            values[field.name] = decode(hints[field.name], data[key], path, meta.get("bound"))
        elif field.default is _MISSING and field.default_factory is _MISSING:
            raise SchemaError(f"{where or 'object'} has no {key!r}")
    if extra_field is not None:
        values[extra_field] = {key: item for key, item in data.items() if key not in known}
    try:
        return cls(**values)
    except (TypeError, ValueError) as error:
        raise SchemaError(f"{where or cls.__name__}: {error}") from None


def _kind(data: Any) -> str:
    return "null" if data is None else f"{type(data).__name__} {data!r:.40}"
