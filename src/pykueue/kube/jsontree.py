"""Decoded JSON trees: the one deep copy (serve's patches, the controllers' conversions)."""

from __future__ import annotations

import copy
from typing import Any, Final

_JSON_SCALARS: Final = frozenset({str, int, float, bool, type(None)})


def json_copy(value: Any) -> Any:
    """``copy.deepcopy(value)`` for a decoded JSON tree, about 3× faster.

    Plain dicts and lists are copied here and the immutable JSON scalars are kept; anything else
    (a dict subclass, a tuple, a datetime) goes to ``copy.deepcopy``, so every value comes out as
    deepcopy makes it. Only a container that appears twice in the tree is copied twice (deepcopy's
    memo keeps one copy); decoded JSON never shares containers.
    """
    cls = type(value)
    if cls is dict:
        return {key: json_copy(item) for key, item in value.items()}
    if cls is list:
        return [json_copy(item) for item in value]
    if cls in _JSON_SCALARS:
        return value
    return copy.deepcopy(value)
