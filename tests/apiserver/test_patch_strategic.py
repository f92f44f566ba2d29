"""Strategic merge patch for built-in kinds (apimachinery ``strategicpatch`` semantics)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from test_patch_schema import DEPLOYMENT

from pykueue.apiserver.patch import PatchError, strategic_merge_patch


def pod(spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    """A Deployment whose pod template has ``spec``."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", **meta},
        "spec": {"replicas": 1, "template": {"metadata": {"labels": {"app": "web"}}, "spec": spec}},
    }


def template_patch(spec: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"template": {"spec": spec}}}


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["spec"]["template"]["spec"]  # type: ignore[no-any-return]


def containers(*names_images: tuple[str, str], **extra: Any) -> list[dict[str, Any]]:
    return [{"name": n, "image": i, **extra} for n, i in names_images]


CASES: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]] = [
    (
        "new container goes before server-only ones (kubectl patch docs example)",
        {"containers": containers(("patch-demo-ctr", "nginx"))},
        {"containers": containers(("patch-demo-ctr-2", "redis"))},
        {"containers": containers(("patch-demo-ctr-2", "redis"), ("patch-demo-ctr", "nginx"))},
    ),
    (
        "container merged by name",
        {"containers": containers(("a", "a:1"), ("b", "b:1"))},
        {"containers": [{"name": "b", "image": "b:2"}]},
        {"containers": containers(("a", "a:1"), ("b", "b:2"))},
    ),
    (
        "env merged by name inside a container",
        {"containers": [{"name": "a", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}]},
        {"containers": [{"name": "a", "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}]}]},
        {
            "containers": [
                {
                    "name": "a",
                    "env": [
                        {"name": "A", "value": "1"},
                        {"name": "B", "value": "3"},
                        {"name": "C", "value": "4"},
                    ],
                }
            ]
        },
    ),
    (
        "ports merged by containerPort",
        {"containers": [{"name": "a", "ports": [{"containerPort": 80, "protocol": "TCP"}]}]},
        {"containers": [{"name": "a", "ports": [{"containerPort": 80, "name": "http"}]}]},
        {"containers": [{"name": "a", "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}]}]},
    ),
    (
        "tolerations have no patch strategy: replaced",
        {"tolerations": [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}]},
        {"tolerations": [{"key": "disktype", "effect": "NoSchedule"}]},
        {"tolerations": [{"key": "disktype", "effect": "NoSchedule"}]},
    ),
    (
        "atomic primitive list (args) replaced",
        {"containers": [{"name": "a", "args": ["x", "y"]}]},
        {"containers": [{"name": "a", "args": ["z"]}]},
        {"containers": [{"name": "a", "args": ["z"]}]},
    ),
    (
        "$patch: delete removes the keyed item",
        {"containers": containers(("a", "a:1"), ("b", "b:1"))},
        {"containers": [{"name": "a", "$patch": "delete"}]},
        {"containers": containers(("b", "b:1"))},
    ),
    (
        "$patch: replace in a list replaces it",
        {"containers": containers(("a", "a:1"), ("b", "b:1"))},
        {"containers": [{"name": "c", "image": "c:1"}, {"$patch": "replace"}]},
        {"containers": containers(("c", "c:1"))},
    ),
    (
        "$patch: replace in a map replaces it",
        {"nodeSelector": {"a": "1", "b": "2"}, "restartPolicy": "Always"},
        {"nodeSelector": {"$patch": "replace", "c": "3"}},
        {"nodeSelector": {"c": "3"}, "restartPolicy": "Always"},
    ),
    (
        "$patch: delete in a map empties it",
        {"nodeSelector": {"a": "1"}},
        {"nodeSelector": {"$patch": "delete"}},
        {"nodeSelector": {}},
    ),
    (
        "null deletes a member",
        {"nodeSelector": {"a": "1", "b": "2"}, "restartPolicy": "Always"},
        {"nodeSelector": {"a": None}, "restartPolicy": None, "absent": None},
        {"nodeSelector": {"b": "2"}},
    ),
    (
        "$setElementOrder reorders and keeps omitted items",
        {"containers": containers(("a", "a:1"), ("b", "b:1"))},
        {
            "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
            "containers": [{"name": "a", "image": "a:2"}],
        },
        {"containers": containers(("b", "b:1"), ("a", "a:2"))},
    ),
    (
        "$setElementOrder appends a new item where it is listed (kubectl apply)",
        {"containers": containers(("a", "a:1"))},
        {
            "$setElementOrder/containers": [{"name": "a"}, {"name": "c"}],
            "containers": [{"name": "c", "image": "c:1"}],
        },
        {"containers": containers(("a", "a:1"), ("c", "c:1"))},
    ),
    (
        "$setElementOrder alone",
        {"containers": containers(("a", "a:1"), ("b", "b:1"))},
        {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]},
        {"containers": containers(("b", "b:1"), ("a", "a:1"))},
    ),
    (
        "$setElementOrder for a list absent on both sides is dropped",
        {"restartPolicy": "Always"},
        {"$setElementOrder/volumes": [{"name": "v"}]},
        {"restartPolicy": "Always"},
    ),
    (
        "$retainKeys on a merged list item (volumes: merge,retainKeys)",
        {"volumes": [{"name": "v", "emptyDir": {}}, {"name": "w", "emptyDir": {}}]},
        {"volumes": [{"name": "v", "$retainKeys": ["configMap", "name"], "configMap": {"name": "cm"}}]},
        {"volumes": [{"name": "v", "configMap": {"name": "cm"}}, {"name": "w", "emptyDir": {}}]},
    ),
    (
        "value of another type replaces",
        {"nodeSelector": {"a": "1"}},
        {"nodeSelector": "oops"},
        {"nodeSelector": "oops"},
    ),
    (
        "new list member is taken without directives and nulls",
        {},
        {"volumes": [{"name": "v", "emptyDir": {"medium": None}}, {"name": "x", "$patch": "delete"}]},
        {"volumes": [{"name": "v", "emptyDir": {}}]},
    ),
    (
        "new map member with $patch: delete is ignored",
        {},
        {"nodeSelector": {"$patch": "delete"}},
        {},
    ),
]


@pytest.mark.parametrize(("name", "live", "patch", "expected"), CASES, ids=[c[0] for c in CASES])
def test_pod_spec_patches(
    name: str, live: dict[str, Any], patch: dict[str, Any], expected: dict[str, Any]
) -> None:
    obj = pod(copy.deepcopy(live))
    original = copy.deepcopy(obj)
    result = strategic_merge_patch(obj, template_patch(patch), DEPLOYMENT)
    assert pod_spec(result) == expected
    assert obj == original


@pytest.mark.parametrize(
    ("live", "patch", "expected"),
    [
        (["a", "b"], {"finalizers": ["c", "a"]}, ["c", "a", "b"]),
        (["a", "b"], {"finalizers": ["b"]}, ["a", "b"]),
        (["a", "b", "c"], {"$deleteFromPrimitiveList/finalizers": ["b", "z"]}, ["a", "c"]),
        (["a", "b"], {"$setElementOrder/finalizers": ["b", "a", "c"], "finalizers": ["c"]}, ["b", "a", "c"]),
        (None, {"finalizers": ["x", "x"]}, ["x"]),
        (None, {"$deleteFromPrimitiveList/finalizers": ["x"]}, None),
    ],
)
def test_finalizers_merge_as_a_set(
    live: list[str] | None, patch: dict[str, Any], expected: list[str] | None
) -> None:
    obj = pod({}) if live is None else pod({}, finalizers=live)
    result = strategic_merge_patch(obj, {"metadata": patch}, DEPLOYMENT)
    assert result["metadata"].get("finalizers") == expected


def test_retain_keys_on_a_struct_field() -> None:
    obj = pod({})
    obj["spec"]["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    assert strategic_merge_patch(obj, patch, DEPLOYMENT)["spec"]["strategy"] == {"type": "Recreate"}


def test_owner_references_and_conditions_merge_by_key() -> None:
    obj = pod({}, ownerReferences=[{"uid": "1", "name": "a"}, {"uid": "2", "name": "b"}])
    obj["status"] = {
        "conditions": [{"type": "Available", "status": "False"}, {"type": "Progressing", "status": "True"}]
    }
    patch = {
        "metadata": {"ownerReferences": [{"uid": "2", "name": "b2"}]},
        "status": {"conditions": [{"type": "Available", "status": "True"}]},
    }
    result = strategic_merge_patch(obj, patch, DEPLOYMENT)
    assert result["metadata"]["ownerReferences"] == [{"uid": "1", "name": "a"}, {"uid": "2", "name": "b2"}]
    assert result["status"]["conditions"] == [
        {"type": "Available", "status": "True"},
        {"type": "Progressing", "status": "True"},
    ]


def test_labels_and_scalars() -> None:
    obj = pod({}, labels={"a": "1", "b": "2"})
    result = strategic_merge_patch(
        obj, {"metadata": {"labels": {"a": None, "c": "3"}}, "spec": {"replicas": 5}}, DEPLOYMENT
    )
    assert result["metadata"]["labels"] == {"b": "2", "c": "3"}
    assert result["spec"]["replicas"] == 5


@pytest.mark.parametrize(
    ("patch", "code", "message"),
    [
        (
            {"containers": [{"image": "x"}]},
            500,
            "map: map[image:x] does not contain declared merge key: name",
        ),
        (
            {"containers": [{"$patch": "delete"}]},
            500,
            "map: map[$patch:delete] does not contain declared merge key: name",
        ),
        (
            {"containers": [{"name": "a", "$patch": "merge"}]},
            500,
            "merging lists cannot yet be specified in the patch",
        ),
        (
            {"containers": [{"name": "a", "$patch": "bogus"}]},
            500,
            "unknown patch type: bogus in map: map[$patch:bogus name:a]",
        ),
        ({"nodeSelector": {"$patch": "merge"}}, 500, "unknown patch type: merge in map: map[$patch:merge]"),
        ({"$retainKeys": "restartPolicy"}, 400, "invalid patch format of retainKeys"),
        (
            {"$retainKeys": ["containers"], "restartPolicy": "Never"},
            400,
            "invalid patch format of retainKeys",
        ),
        ({"$setElementOrder/containers": {"name": "a"}}, 400, "invalid patch format of setElementOrder list"),
        ({"containers": [["a"]]}, 422, "lists of lists are not supported"),
    ],
)
def test_errors(patch: dict[str, Any], code: int, message: str) -> None:
    obj = pod({"containers": containers(("a", "a:1"))})
    with pytest.raises(PatchError) as info:
        strategic_merge_patch(obj, template_patch(patch), DEPLOYMENT)
    assert (info.value.code, info.value.message) == (code, message)


def test_set_element_order_must_match_the_patch_order() -> None:
    obj = pod({"containers": containers(("a", "a:1"), ("b", "b:1"))})
    patch = {
        "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
        "containers": [{"name": "b"}, {"name": "a"}],
    }
    with pytest.raises(PatchError) as info:
        strategic_merge_patch(obj, template_patch(patch), DEPLOYMENT)
    assert info.value.code == 500
    assert info.value.message.startswith("The order in patch list:")


def test_top_level_directives_and_non_object_patch() -> None:
    obj = pod({})
    assert strategic_merge_patch(obj, {"$patch": "replace", "kind": "X"}, DEPLOYMENT) == {"kind": "X"}
    with pytest.raises(PatchError) as info:
        strategic_merge_patch(obj, [], DEPLOYMENT)  # type: ignore[arg-type]
    assert info.value.code == 400
