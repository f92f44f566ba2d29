"""RFC 6902 JSON patch (examples of RFC 6902 appendix A) and RFC 6901 JSON pointers."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pykueue.apiserver.patch import (
    INVALID_MESSAGE,
    MAX_JSON_PATCH_OPERATIONS,
    MISSING,
    PatchError,
    apply_operations,
    escape_token,
    json_patch,
    parse_pointer,
    resolve_pointer,
)

# (name, document, patch, expected result or None when the patch must fail)
RFC6902_APPENDIX_A: list[tuple[str, Any, list[dict[str, Any]], Any]] = [
    (
        "A.1 adding an object member",
        {"foo": "bar"},
        [{"op": "add", "path": "/baz", "value": "qux"}],
        {"baz": "qux", "foo": "bar"},
    ),
    (
        "A.2 adding an array element",
        {"foo": ["bar", "baz"]},
        [{"op": "add", "path": "/foo/1", "value": "qux"}],
        {"foo": ["bar", "qux", "baz"]},
    ),
    (
        "A.3 removing an object member",
        {"baz": "qux", "foo": "bar"},
        [{"op": "remove", "path": "/baz"}],
        {"foo": "bar"},
    ),
    (
        "A.4 removing an array element",
        {"foo": ["bar", "qux", "baz"]},
        [{"op": "remove", "path": "/foo/1"}],
        {"foo": ["bar", "baz"]},
    ),
    (
        "A.5 replacing a value",
        {"baz": "qux", "foo": "bar"},
        [{"op": "replace", "path": "/baz", "value": "boo"}],
        {"baz": "boo", "foo": "bar"},
    ),
    (
        "A.6 moving a value",
        {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
        [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
        {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}},
    ),
    (
        "A.7 moving an array element",
        {"foo": ["all", "grass", "cows", "eat"]},
        [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
        {"foo": ["all", "cows", "eat", "grass"]},
    ),
    (
        "A.8 testing a value: success",
        {"baz": "qux", "foo": ["a", 2, "c"]},
        [{"op": "test", "path": "/baz", "value": "qux"}, {"op": "test", "path": "/foo/1", "value": 2}],
        {"baz": "qux", "foo": ["a", 2, "c"]},
    ),
    ("A.9 testing a value: error", {"baz": "qux"}, [{"op": "test", "path": "/baz", "value": "bar"}], None),
    (
        "A.10 adding a nested member object",
        {"foo": "bar"},
        [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
        {"foo": "bar", "child": {"grandchild": {}}},
    ),
    (
        "A.11 ignoring unrecognized elements",
        {"foo": "bar"},
        [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}],
        {"foo": "bar", "baz": "qux"},
    ),
    (
        "A.12 adding to a nonexistent target",
        {"foo": "bar"},
        [{"op": "add", "path": "/baz/bat", "value": "qux"}],
        None,
    ),
    (
        "A.14 ~ escape ordering",
        {"/": 9, "~1": 10},
        [{"op": "test", "path": "/~01", "value": 10}],
        {"/": 9, "~1": 10},
    ),
    (
        "A.15 comparing strings and numbers",
        {"/": 9, "~1": 10},
        [{"op": "test", "path": "/~01", "value": "10"}],
        None,
    ),
    (
        "A.16 adding an array value",
        {"foo": ["bar"]},
        [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
        {"foo": ["bar", ["abc", "def"]]},
    ),
]


@pytest.mark.parametrize(
    ("name", "doc", "patch", "expected"), RFC6902_APPENDIX_A, ids=[c[0] for c in RFC6902_APPENDIX_A]
)
def test_rfc6902_appendix_a(name: str, doc: Any, patch: list[dict[str, Any]], expected: Any) -> None:
    original = copy.deepcopy(doc)
    if expected is None:
        with pytest.raises(PatchError) as info:
            json_patch(doc, patch)
        assert (info.value.code, info.value.reason, info.value.message) == (422, "Invalid", INVALID_MESSAGE)
    else:
        assert json_patch(doc, patch) == expected
    assert doc == original  # input untouched


RFC6901_DOC: dict[str, Any] = {
    "foo": ["bar", "baz"],
    "": 0,
    "a/b": 1,
    "c%d": 2,
    "e^f": 3,
    "g|h": 4,
    "i\\j": 5,
    'k"l': 6,
    " ": 7,
    "m~n": 8,
}


@pytest.mark.parametrize(
    ("pointer", "expected"),
    [
        ("", RFC6901_DOC),
        ("/foo", ["bar", "baz"]),
        ("/foo/0", "bar"),
        ("/", 0),
        ("/a~1b", 1),
        ("/c%d", 2),
        ("/e^f", 3),
        ("/g|h", 4),
        ("/i\\j", 5),
        ('/k"l', 6),
        ("/ ", 7),
        ("/m~0n", 8),
    ],
)
def test_rfc6901_pointers(pointer: str, expected: Any) -> None:
    assert resolve_pointer(RFC6901_DOC, pointer) == expected
    assert json_patch(RFC6901_DOC, [{"op": "test", "path": pointer, "value": expected}]) == RFC6901_DOC


@pytest.mark.parametrize("pointer", ["/foo/2", "/foo/-", "/foo/01", "/nope", "/foo/0/x", "nope", "/~2"])
def test_unresolvable_pointers(pointer: str) -> None:
    assert resolve_pointer(RFC6901_DOC, pointer) is MISSING


def test_pointer_helpers() -> None:
    assert parse_pointer("/a~1b/~0c/") == ["a/b", "~c", ""]
    assert escape_token("a/b~c") == "a~1b~0c"
    with pytest.raises(ValueError):
        parse_pointer("x")
    with pytest.raises(ValueError):
        parse_pointer("/~x")


@pytest.mark.parametrize(
    ("doc", "ops", "detail"),
    [
        ({"a": 1}, [{"op": "remove", "path": "/b"}], "Unable to remove nonexistent key: b: missing value"),
        (
            {"a": 1},
            [{"op": "replace", "path": "/b", "value": 1}],
            "replace operation does not apply: doc is missing key: /b: missing value",
        ),
        (
            {"a": 1},
            [{"op": "add", "path": "/b/c", "value": 1}],
            'add operation does not apply: doc is missing path: "/b/c": missing value',
        ),
        (
            {"a": [1]},
            [{"op": "add", "path": "/a/5", "value": 1}],
            "Unable to access invalid index: 5: invalid index referenced",
        ),
        (
            {"a": [1]},
            [{"op": "remove", "path": "/a/-"}],
            "Unable to access invalid index: -: invalid index referenced",
        ),
        (
            {"a": 1},
            [{"op": "move", "from": "/x", "path": "/y"}],
            "move operation does not apply: doc is missing from path: /x: missing value",
        ),
        (
            {"a": {"b": 1}},
            [{"op": "move", "from": "/a", "path": "/a/b/c"}],
            "move operation does not apply: from /a is a prefix of path /a/b/c",
        ),
        (
            {"a": 1},
            [{"op": "copy", "from": "/x", "path": "/y"}],
            "copy operation does not apply: doc is missing from path: /x: missing value",
        ),
        ({"a": 1}, [{"op": "test", "path": "/a", "value": True}], "testing value /a failed: test failed"),
        (
            {"a": 1},
            [{"op": "test", "path": "/x/y", "value": None}],
            "test operation does not apply: is nil for /x/y",
        ),
        ({"a": 1}, [{"op": "frobnicate", "path": "/a"}], "Unexpected kind: frobnicate"),
        ({"a": 1}, [{"op": "add", "path": "/b"}], "add operation does not apply: missing 'value' member"),
        ({"a": 1}, [{"op": "add", "value": 1}], "add operation does not apply: missing 'path' member"),
        (
            {"a": 1},
            [{"op": "remove", "path": ""}],
            'remove operation does not apply: doc is missing path: "": missing value',
        ),
        (
            {"a": 1},
            [{"op": "replace", "path": "", "value": [1]}],
            "the patched document is not an object but array",
        ),
    ],
)
def test_operation_failures_are_422(doc: Any, ops: list[dict[str, Any]], detail: str) -> None:
    with pytest.raises(PatchError) as info:
        json_patch(doc, ops)
    assert info.value.code == 422
    assert info.value.detail == detail
    status = info.value.status()
    assert status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": INVALID_MESSAGE,
        "reason": "Invalid",
        "code": 422,
    }


def test_malformed_patch_documents() -> None:
    with pytest.raises(PatchError) as info:
        json_patch({}, {"op": "add"})  # type: ignore[arg-type]
    assert (info.value.code, info.value.reason) == (400, "BadRequest")
    with pytest.raises(PatchError) as info:
        json_patch({}, ["add"])  # type: ignore[list-item]
    assert info.value.code == 400
    ops = [{"op": "test", "path": "", "value": {}}] * (MAX_JSON_PATCH_OPERATIONS + 1)
    with pytest.raises(PatchError) as info:
        json_patch({}, ops)
    assert (info.value.code, info.value.reason) == (413, "RequestEntityTooLarge")


def test_more_operations() -> None:
    doc = {"metadata": {"labels": {"a": "1"}}, "spec": {"list": [1, 2, 3]}}
    ops: list[dict[str, Any]] = [
        {"op": "copy", "from": "/metadata/labels", "path": "/metadata/annotations"},
        {"op": "add", "path": "/metadata/labels/b", "value": "2"},
        {"op": "replace", "path": "/spec/list/0", "value": 10},
        {"op": "move", "from": "/spec/list/2", "path": "/spec/list/0"},
        {"op": "add", "path": "/spec/list/-", "value": 4},
        {"op": "test", "path": "/spec/missing", "value": None},
        {"op": "test", "path": "/spec/list/1", "value": 10.0},
        {"op": "move", "from": "/spec", "path": "/spec"},
    ]
    assert json_patch(doc, ops) == {
        "metadata": {"labels": {"a": "1", "b": "2"}, "annotations": {"a": "1"}},
        "spec": {"list": [3, 10, 2, 4]},
    }
    # The copied value is independent of its source.
    assert apply_operations(
        {"a": {"x": 1}},
        [{"op": "copy", "from": "/a", "path": "/b"}, {"op": "add", "path": "/b/y", "value": 2}],
    ) == {
        "a": {"x": 1},
        "b": {"x": 1, "y": 2},
    }
    assert apply_operations({"a": 1}, [{"op": "add", "path": "", "value": [1]}]) == [1]
    assert json_patch({"a": 1}, [{"op": "replace", "path": "", "value": {"b": 2}}]) == {"b": 2}
