"""The one deep copy of a decoded JSON tree (``pykueue.kube.jsontree``)."""

from __future__ import annotations

import copy
from collections import OrderedDict
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pykueue.kube.jsontree import json_copy

_json_leaves = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8),
    st.tuples(st.integers()), st.datetimes(), st.builds(OrderedDict, st.dictionaries(st.text(max_size=3), st.integers())),
)  # fmt: skip
_json_trees = st.recursive(
    _json_leaves,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=4)),
    max_leaves=30,
)


def _containers(value: Any) -> list[Any]:
    out: list[Any] = []
    if isinstance(value, dict):
        out.append(value)
        for item in value.values():
            out += _containers(item)
    elif isinstance(value, list):
        out.append(value)
        for item in value:
            out += _containers(item)
    return out


@settings(max_examples=300, deadline=None)
@given(_json_trees)
def test_json_copy_is_deepcopy_of_a_json_tree(tree: Any) -> None:
    """Equal to deepcopy's result, type by type, sharing no container with the original (other
    values — tuples, datetimes, dict subclasses — are deepcopy's own copies)."""
    got = json_copy(tree)
    want = copy.deepcopy(tree)
    assert got == want
    assert repr(got) == repr(want)  # types and key order too
    originals = {id(c) for c in _containers(tree)}
    assert not originals & {id(c) for c in _containers(got)}
