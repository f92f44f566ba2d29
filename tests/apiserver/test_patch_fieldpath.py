"""Field paths, FieldsV1 encoding and the schema-aware walks (ToFieldSet, Compare, Merge, RemoveItems)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_patch_schema import DEPLOYMENT

from pykueue.apiserver.patch import (
    DEDUCED,
    MISSING,
    SchemaNode,
    TypedError,
    compare,
    ensure_named_fields_are_members,
    field_path,
    from_fields_v1,
    iter_paths,
    key_element,
    merge,
    path_to_string,
    remove_items,
    to_field_set,
    to_fields_v1,
    value_element,
)

CONTAINERS = (*field_path("spec", "template", "spec", "containers"),)


def test_key_elements_are_canonical() -> None:
    assert key_element({"protocol": "TCP", "containerPort": 80}) == 'k:{"containerPort":80,"protocol":"TCP"}'
    assert key_element({"port": 80.0}) == 'k:{"port":80}'
    assert key_element({"name": "a<b>&"}) == 'k:{"name":"a\\u003cb\\u003e\\u0026"}'
    assert key_element({"name": "é"}) == 'k:{"name":"é"}'
    assert value_element("x") == 'v:"x"'
    assert value_element(True) == "v:true"
    # Decoding canonicalises the JSON of foreign encodings.
    assert from_fields_v1({'k:{ "b": 1, "a": "x" }': {}}) == {('k:{"a":"x","b":1}',)}


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (field_path("spec", "replicas"), ".spec.replicas"),
        (
            (*CONTAINERS, key_element({"name": "nginx"}), "f:image"),
            '.spec.template.spec.containers[name="nginx"].image',
        ),
        (
            (
                *CONTAINERS,
                key_element({"name": "a"}),
                "f:ports",
                key_element({"containerPort": 80, "protocol": "TCP"}),
            ),
            '.spec.template.spec.containers[name="a"].ports[containerPort=80,protocol="TCP"]',
        ),
        ((*field_path("metadata", "finalizers"), value_element("x/y")), '.metadata.finalizers[="x/y"]'),
        (("f:data", "i:3"), ".data[3]"),
        (field_path("data", ".dockerconfigjson"), ".data..dockerconfigjson"),
        (
            field_path("metadata", "labels", "app.kubernetes.io/version"),
            ".metadata.labels.app.kubernetes.io/version",
        ),
    ],
)
def test_path_strings(path: tuple[str, ...], text: str) -> None:
    assert path_to_string(path) == text


def test_fields_v1_order_and_members() -> None:
    paths = {
        ("f:b",),
        ("f:a", "f:z"),
        ("f:a",),
        ("f:list", 'v:"x"'),
        ("f:list", "v:1"),
        ("f:list", 'k:{"name":"b"}'),
        ("f:list", 'k:{"name":"a"}', "f:name"),
        ("f:list", "i:2"),
    }
    encoded = to_fields_v1(paths)
    assert list(encoded) == ["f:a", "f:b", "f:list"]
    assert encoded["f:a"] == {".": {}, "f:z": {}}
    assert list(encoded["f:list"]) == ['k:{"name":"a"}', 'k:{"name":"b"}', "v:1", 'v:"x"', "i:2"]
    assert from_fields_v1(encoded) == paths
    assert list(iter_paths(paths))[:3] == [("f:a",), ("f:b",), ("f:a", "f:z")]


def test_to_field_set_rules() -> None:
    obj = {
        "apiVersion": "apps/v1",
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"a": "b"}},
            "template": {
                "spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80}]}], "tolerations": []}
            },
            "strategy": {},
            "paused": None,
        },
    }
    fields = to_field_set(obj, DEPLOYMENT)
    port = (
        *CONTAINERS,
        key_element({"name": "a"}),
        "f:ports",
        key_element({"containerPort": 80, "protocol": "TCP"}),
    )
    assert fields == {
        ("f:apiVersion",),
        field_path("spec", "replicas"),
        field_path("spec", "selector"),  # atomic map
        field_path("spec", "strategy"),  # empty map
        field_path("spec", "paused"),  # null
        field_path("spec", "template", "spec", "tolerations"),  # atomic list, even empty
        (*CONTAINERS, key_element({"name": "a"})),
        (*CONTAINERS, key_element({"name": "a"}), "f:name"),
        port,
        (*port, "f:containerPort"),
    }


def test_to_field_set_checks_keys() -> None:
    with pytest.raises(
        TypedError, match=r'\.spec\.template\.spec\.containers: element 0: .*omits key field "name"'
    ):
        to_field_set({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}, DEPLOYMENT)
    dup = {"spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}}}
    assert len(to_field_set(dup, DEPLOYMENT)) == 2
    with pytest.raises(TypedError, match="duplicate entries"):
        to_field_set(dup, DEPLOYMENT, unique=True)


def test_compare() -> None:
    old = {
        "spec": {
            "replicas": 1,
            "paused": True,
            "template": {"spec": {"containers": [{"name": "a", "image": "1"}]}},
        }
    }
    new = {
        "spec": {
            "replicas": 2,
            "template": {"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b"}]}},
        }
    }
    result = compare(old, new, DEPLOYMENT)
    b = (*CONTAINERS, key_element({"name": "b"}))
    assert result.modified == {field_path("spec", "replicas")}
    assert result.removed == {field_path("spec", "paused")}
    assert result.added == {b, (*b, "f:name")}
    created = compare(MISSING, {"spec": {"x": {"y": 1}}}, DEDUCED)
    assert created.added == {("f:spec",), ("f:spec", "f:x"), ("f:spec", "f:x", "f:y")}
    reshaped = compare({"a": None}, {"a": {"b": 1}}, DEDUCED)
    assert reshaped.modified == {("f:a",)} and reshaped.added == {("f:a", "f:b")}
    assert compare({"a": {}}, {"a": None}, DEDUCED).modified == {("f:a",)}


def test_compare_with_duplicate_keys() -> None:
    def obj(*items: dict[str, Any]) -> dict[str, Any]:
        return {"spec": {"template": {"spec": {"containers": list(items)}}}}

    a = (*CONTAINERS, key_element({"name": "a"}))
    assert compare(obj({"name": "a"}, {"name": "a"}), obj({"name": "a"}), DEPLOYMENT).modified == {a}
    assert compare(obj({"name": "a"}, {"name": "a"}), obj(), DEPLOYMENT).removed == {a}
    assert compare(obj(), obj({"name": "a"}, {"name": "a"}), DEPLOYMENT).added == {a}


LIST = SchemaNode.struct(
    {
        "items": SchemaNode.list_of(
            SchemaNode.struct({"k": SchemaNode.scalar(), "v": SchemaNode.scalar()}),
            list_type="map",
            keys=("k",),
        ),
        "set": SchemaNode.list_of(list_type="set"),
    }
)


def items(*keys: str) -> dict[str, Any]:
    return {"items": [{"k": k} for k in keys]}


@pytest.mark.parametrize(
    ("live", "applied", "expected"),
    [
        (["a", "b"], ["c"], ["a", "b", "c"]),
        (["a", "b", "c"], ["c", "a"], ["b", "c", "a"]),
        (["a", "b", "c"], ["b"], ["a", "b", "c"]),
        (["a", "x", "b"], ["b", "y", "a"], ["x", "b", "y", "a"]),
        ([], ["a"], ["a"]),
    ],
)
def test_merge_keeps_live_order_for_map_lists(
    live: list[str], applied: list[str], expected: list[str]
) -> None:
    result = merge(items(*live), items(*applied), LIST)
    assert [i["k"] for i in result["items"]] == expected


def test_merge_values() -> None:
    live = {"items": [{"k": "a", "v": 1}], "set": [1, 2], "other": {"x": 1}}
    applied = {"items": [{"k": "a", "v": 2}], "set": [3, 1], "other": {"y": 2}}
    assert merge(live, applied, LIST) == {
        "items": [{"k": "a", "v": 2}],
        "set": [3, 1, 2],
        "other": {"x": 1, "y": 2},
    }
    assert merge({"items": [{"k": "a"}]}, {"items": []}, LIST) == {"items": [{"k": "a"}]}
    assert merge({"items": None}, {"items": []}, LIST) == {"items": []}
    assert merge({"a": [1]}, {"a": [2]}, DEDUCED) == {"a": [2]}


def test_remove_items_and_named_fields() -> None:
    obj: dict[str, Any] = {
        "spec": {
            "replicas": 1,
            "template": {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b"}]}},
        }
    }
    removed = remove_items(
        obj,
        [(*CONTAINERS, key_element({"name": "a"}), "f:image"), (*CONTAINERS, key_element({"name": "b"}))],
        DEPLOYMENT,
    )
    assert removed == {"spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "a"}]}}}}
    assert obj["spec"]["template"]["spec"]["containers"][1] == {"name": "b"}  # input untouched
    labels = field_path("metadata", "labels", "app")
    ensured = ensure_named_fields_are_members(
        {labels, (*CONTAINERS, key_element({"name": "a"}), "f:image")}, DEPLOYMENT
    )
    assert field_path("metadata") in ensured
    assert field_path("metadata", "labels") in ensured
    assert field_path("spec", "template", "spec", "containers") in ensured
    assert (*CONTAINERS, key_element({"name": "a"})) not in ensured  # keyed items are not named fields


_leaf = st.integers(0, 3) | st.sampled_from(["a", "b"])
_docs = st.recursive(
    st.dictionaries(st.sampled_from(["x", "y", "z"]), _leaf, max_size=3),
    lambda children: st.dictionaries(
        st.sampled_from(["x", "y", "z"]), children | _leaf | st.lists(_leaf, max_size=2), max_size=3
    ),
    max_leaves=10,
)


@settings(max_examples=150, deadline=None)
@given(_docs, _docs)
def test_compare_is_consistent_with_field_sets(a: dict[str, Any], b: dict[str, Any]) -> None:
    result = compare(a, b, DEDUCED)
    fa, fb = to_field_set(a, DEDUCED), to_field_set(b, DEDUCED)
    assert result.added.isdisjoint(result.removed)
    assert (fb - fa) <= result.added
    assert (fa - fb) <= result.removed
    assert merge(a, b, DEDUCED) == {**a, **{k: merge(a.get(k, MISSING), v, DEDUCED) for k, v in b.items()}}
    assert compare(a, a, DEDUCED).changed() == frozenset()
