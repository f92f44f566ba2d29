"""JSON value helpers shared by the patch modules (equality, ordering, Go-style encoding)."""

from __future__ import annotations

import json
from typing import Any, Final

from pykueue.kube.jsontree import json_copy

JSON = Any
"""A decoded JSON value: dict, list, str, int, float, bool or None."""

JSONDict = dict[str, Any]


class _Missing:
    """Marker for an absent value (distinct from JSON ``null``)."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Final = _Missing()


deep_copy = json_copy
"""A deep copy of a JSON value (every patch copies whole objects)."""


def is_number(value: JSON) -> bool:
    """True for int/float values that are not booleans."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def json_equal(a: JSON, b: JSON) -> bool:
    """Structural JSON equality: numbers compare numerically, booleans never equal numbers."""
    if is_number(a) and is_number(b):
        return bool(a == b)
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(json_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def sort_key(value: JSON) -> tuple[Any, ...]:
    """Total order of structured-merge-diff ``value.Compare``: numbers < strings < bools < lists < maps < null."""
    if is_number(value):
        return (0, value)
    if isinstance(value, str):
        return (1, value)
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, list):
        return (3, tuple(sort_key(v) for v in value))
    if isinstance(value, dict):
        return (4, tuple((k, sort_key(value[k])) for k in sorted(value)))
    return (5, 0)


def _normalise_numbers(value: JSON) -> JSON:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {k: _normalise_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalise_numbers(v) for v in value]
    return value


_HTML_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def go_json(value: JSON, *, sort_keys: bool = True) -> str:
    """Compact JSON as Go's ``encoding/json`` writes it (HTML-escaped, integral floats as ints)."""
    text = json.dumps(
        _normalise_numbers(value), separators=(",", ":"), ensure_ascii=False, sort_keys=sort_keys
    )
    for char, escaped in _HTML_ESCAPES.items():
        text = text.replace(char, escaped)
    return text


def go_quote(text: str) -> str:
    """``fmt.Sprintf("%q", text)`` for ordinary strings."""
    return json.dumps(text, ensure_ascii=False)


def go_string(value: JSON) -> str:
    """structured-merge-diff ``value.ToString``: strings quoted, other scalars plain."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return "[" + ", ".join(go_string(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={go_string(value[k])}" for k in sorted(value)) + "}"
    return str(value)


def drop_nulls(value: JSON) -> JSON:
    """Remove object members whose value is ``null`` (recursively, lists kept as they are)."""
    if isinstance(value, dict):
        return {k: drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [drop_nulls(v) for v in value]
    return value
