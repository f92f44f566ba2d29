"""RFC 7386 JSON merge patch (appendix A of the RFC) and ``create_merge_patch``."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykueue.apiserver.patch import PatchError, create_merge_patch, json_equal, merge_patch, merge_patch_value

RFC7386_APPENDIX_A: list[tuple[Any, Any, Any]] = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "expected"), RFC7386_APPENDIX_A)
def test_rfc7386_appendix_a(target: Any, patch: Any, expected: Any) -> None:
    assert merge_patch_value(target, patch) == expected


def test_rfc7386_section3_example() -> None:
    target = {
        "title": "Goodbye!",
        "author": {"givenName": "John", "familyName": "Doe"},
        "tags": ["example", "sample"],
        "content": "This will be unchanged",
    }
    patch = {
        "title": "Hello!",
        "phoneNumber": "+01-123-456-7890",
        "author": {"familyName": None},
        "tags": ["example"],
    }
    assert merge_patch(target, patch) == {
        "title": "Hello!",
        "author": {"givenName": "John"},
        "tags": ["example"],
        "content": "This will be unchanged",
        "phoneNumber": "+01-123-456-7890",
    }
    assert target["author"] == {"givenName": "John", "familyName": "Doe"}  # not modified


def test_merge_patch_requires_an_object() -> None:
    with pytest.raises(PatchError) as info:
        merge_patch({"a": 1}, ["x"])  # type: ignore[arg-type]
    assert info.value.code == 400


@pytest.mark.parametrize(
    ("original", "modified", "patch"),
    [
        ({"a": 1}, {"a": 1}, {}),
        ({"a": 1, "b": 2}, {"a": 1}, {"b": None}),
        ({"spec": {"x": 1, "y": [1]}}, {"spec": {"x": 2, "y": [1, 2]}}, {"spec": {"x": 2, "y": [1, 2]}}),
        ({"a": {"b": 1}}, {"a": "s"}, {"a": "s"}),
        ({"a": 1}, {"a": 1.0}, {}),
        ({"a": 1}, {"a": True}, {"a": True}),
        ([1], {"a": 1}, {"a": 1}),
    ],
)
def test_create_merge_patch_examples(original: Any, modified: Any, patch: Any) -> None:
    assert create_merge_patch(original, modified) == patch


_scalars = st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=4)
_keys = st.text(alphabet="abcxyz", min_size=1, max_size=3)
# Object members are never null (a merge patch cannot express them); arrays may hold nulls.
_values = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children | st.none(), max_size=3) | st.dictionaries(_keys, children, max_size=4)
    ),
    max_leaves=12,
)
_documents = st.dictionaries(_keys, _values, max_size=5)


@settings(max_examples=200, deadline=None)
@given(_documents, _documents)
def test_merge_patch_of_diff_gives_the_target(a: dict[str, Any], b: dict[str, Any]) -> None:
    patch = create_merge_patch(a, b)
    assert json_equal(merge_patch(a, patch), b)


@settings(max_examples=200, deadline=None)
@given(_documents)
def test_diff_with_itself_is_empty_and_patch_is_idempotent(a: dict[str, Any]) -> None:
    assert create_merge_patch(a, a) == {}
    patch = {"k": {"x": None, "y": 1}}
    once = merge_patch(a, patch)
    assert merge_patch(once, patch) == once
