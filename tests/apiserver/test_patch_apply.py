"""Server-side apply and managedFields bookkeeping (structured-merge-diff semantics)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_patch_schema import CLUSTER_QUEUE, DEPLOYMENT

from pykueue.apiserver.patch import (
    ANCIENT_CHANGES,
    DEDUCED,
    ApplyConflict,
    PatchError,
    decode_managed_fields,
    encode_managed_fields,
    from_fields_v1,
    manager_identifier,
    server_side_apply,
    to_fields_v1,
    update_managed_fields,
)

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
T1 = T0 + timedelta(minutes=5)
T2 = T0 + timedelta(minutes=10)


def deployment(**spec: Any) -> dict[str, Any]:
    """An apply configuration of Deployment ``web``."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": spec,
    }


def container(name: str, image: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": image, **extra}


def pod_template(*containers: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": list(containers)}}


def apply(
    live: dict[str, Any] | None,
    config: dict[str, Any],
    manager: str,
    *,
    force: bool = False,
    now: datetime = T0,
    **kw: Any,
) -> dict[str, Any]:
    schema = kw.pop("schema", DEPLOYMENT)
    return server_side_apply(live, config, manager, force=force, schema=schema, now=now, **kw)


def fields_of(obj: dict[str, Any], manager: str) -> dict[str, Any]:
    """The fieldsV1 of ``manager``'s entry (exactly one expected)."""
    entries = [e for e in obj["metadata"].get("managedFields", []) if e["manager"] == manager]
    assert len(entries) == 1, entries
    return entries[0]["fieldsV1"]  # type: ignore[no-any-return]


def managers(obj: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e["manager"], e["operation"]) for e in obj["metadata"].get("managedFields", [])]


def created(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as the store persists it (server-set metadata added)."""
    out = copy.deepcopy(obj)
    out["metadata"].update(
        uid="0f1e", resourceVersion="7", generation=1, creationTimestamp="2024-05-01T12:00:00Z"
    )
    return out


# --- apply: create, ownership, conflicts --------------------------------------------------------


def test_create_via_apply_records_the_applied_field_set() -> None:
    config = deployment(
        replicas=2,
        selector={"matchLabels": {"app": "web"}},
        template=pod_template(container("nginx", "nginx:1.25", ports=[{"containerPort": 80}])),
    )
    obj = apply(None, config, "kubectl")
    assert obj["spec"] == config["spec"]
    [entry] = obj["metadata"]["managedFields"]
    assert entry == {
        "manager": "kubectl",
        "operation": "Apply",
        "apiVersion": "apps/v1",
        "time": "2024-05-01T12:00:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:spec": {
                "f:replicas": {},
                "f:selector": {},
                "f:template": {
                    "f:metadata": {"f:labels": {"f:app": {}}},
                    "f:spec": {
                        "f:containers": {
                            'k:{"name":"nginx"}': {
                                ".": {},
                                "f:image": {},
                                "f:name": {},
                                "f:ports": {
                                    'k:{"containerPort":80,"protocol":"TCP"}': {
                                        ".": {},
                                        "f:containerPort": {},
                                    }
                                },
                            }
                        }
                    },
                },
            }
        },
    }
    assert "f:metadata" not in entry["fieldsV1"]  # name/namespace are never tracked


def test_second_applier_conflicts_on_a_different_value() -> None:
    live = created(apply(None, deployment(replicas=2), "alice"))
    with pytest.raises(ApplyConflict) as info:
        apply(live, deployment(replicas=3), "bob")
    err = info.value
    assert err.code == 409 and err.reason == "Conflict"
    assert err.message == 'Apply failed with 1 conflict: conflict with "alice": .spec.replicas'
    assert err.conflicts == [("alice", ".spec.replicas")]
    assert err.status()["details"] == {
        "causes": [
            {"reason": "FieldManagerConflict", "message": 'conflict with "alice"', "field": ".spec.replicas"}
        ]
    }


def test_conflict_with_an_update_manager_names_its_version() -> None:
    live = created(deployment(replicas=2, paused=False))
    update_managed_fields(None, live, "kubectl-client-side-apply", schema=DEPLOYMENT, now=T0)
    with pytest.raises(ApplyConflict) as info:
        apply(live, deployment(replicas=3, paused=True), "kubectl")
    assert info.value.message == (
        'Apply failed with 2 conflicts: conflicts with "kubectl-client-side-apply" using apps/v1:\n'
        "- .spec.paused\n"
        "- .spec.replicas"
    )
    assert [c["message"] for c in info.value.causes] == [
        'conflict with "kubectl-client-side-apply" using apps/v1'
    ] * 2


def test_conflicts_grouped_per_manager_in_identifier_order() -> None:
    live = created(apply(None, deployment(replicas=2), "zed"))
    live = created(apply(live, deployment(paused=False), "amy"))
    with pytest.raises(ApplyConflict) as info:
        apply(live, deployment(replicas=5, paused=True), "bob")
    assert info.value.message == (
        'Apply failed with 2 conflicts: conflicts with "amy":\n- .spec.paused\nconflicts with "zed":\n- .spec.replicas'
    )


def test_same_value_is_shared_ownership_not_a_conflict() -> None:
    live = created(apply(None, deployment(replicas=2), "alice"))
    obj = apply(live, deployment(replicas=2), "bob")
    assert fields_of(obj, "alice") == {"f:spec": {"f:replicas": {}}}
    assert fields_of(obj, "bob") == {"f:spec": {"f:replicas": {}}}


def test_force_takes_ownership() -> None:
    live = created(apply(None, deployment(replicas=2, paused=False), "alice"))
    obj = apply(live, deployment(replicas=3), "bob", force=True, now=T1)
    assert obj["spec"] == {"replicas": 3, "paused": False}
    assert fields_of(obj, "alice") == {"f:spec": {"f:paused": {}}}
    assert fields_of(obj, "bob") == {"f:spec": {"f:replicas": {}}}


def test_fields_dropped_from_the_configuration_are_removed() -> None:
    config = deployment(replicas=2, paused=True)
    config["metadata"]["labels"] = {"app": "web", "tier": "front"}
    live = created(apply(None, config, "alice"))
    config = deployment(replicas=2)
    config["metadata"]["labels"] = {"app": "web"}
    obj = apply(live, config, "alice", now=T1)
    assert obj["metadata"]["labels"] == {"app": "web"}
    assert obj["spec"] == {"replicas": 2}
    assert fields_of(obj, "alice") == {
        "f:metadata": {"f:labels": {"f:app": {}}},
        "f:spec": {"f:replicas": {}},
    }
    assert obj["metadata"]["uid"] == "0f1e"  # server metadata untouched


def test_shared_ownership_keeps_a_dropped_field() -> None:
    live = created(apply(None, deployment(replicas=2, paused=True), "alice"))
    live = created(apply(live, deployment(paused=True), "bob"))
    obj = apply(live, deployment(replicas=2), "alice", now=T1)
    assert obj["spec"] == {"replicas": 2, "paused": True}
    assert fields_of(obj, "bob") == {"f:spec": {"f:paused": {}}}
    assert fields_of(obj, "alice") == {"f:spec": {"f:replicas": {}}}


def test_field_taken_over_by_an_update_survives_the_applier_dropping_it() -> None:
    live = created(apply(None, deployment(replicas=2, paused=True), "alice"))
    edited = copy.deepcopy(live)
    edited["spec"]["paused"] = False
    update_managed_fields(live, edited, "kubectl-edit", schema=DEPLOYMENT, now=T1)
    assert fields_of(edited, "alice") == {"f:spec": {"f:replicas": {}}}
    assert fields_of(edited, "kubectl-edit") == {"f:spec": {"f:paused": {}}}
    obj = apply(edited, deployment(replicas=2), "alice", now=T2)
    assert obj["spec"] == {"replicas": 2, "paused": False}


def test_map_list_items_merge_by_key_across_appliers() -> None:
    live = created(apply(None, deployment(template=pod_template(container("app", "app:1"))), "alice"))
    live = created(
        apply(live, deployment(template={"spec": {"containers": [container("sidecar", "proxy:2")]}}), "bob")
    )
    names = [c["name"] for c in live["spec"]["template"]["spec"]["containers"]]
    assert names == ["app", "sidecar"]
    bob = fields_of(live, "bob")["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert list(bob) == ['k:{"name":"sidecar"}']
    # Alice updates her container: no conflict with bob's item; then drops it entirely.
    live = created(apply(live, deployment(template=pod_template(container("app", "app:2"))), "alice", now=T1))
    assert [c["image"] for c in live["spec"]["template"]["spec"]["containers"]] == ["app:2", "proxy:2"]
    obj = apply(live, deployment(template={"metadata": {"labels": {"app": "web"}}}), "alice", now=T2)
    assert obj["spec"]["template"]["spec"]["containers"] == [container("sidecar", "proxy:2")]


def test_map_list_item_fields_conflict_individually() -> None:
    live = created(apply(None, deployment(template=pod_template(container("app", "app:1"))), "alice"))
    with pytest.raises(ApplyConflict) as info:
        apply(live, deployment(template={"spec": {"containers": [container("app", "app:9")]}}), "bob")
    assert info.value.conflicts == [("alice", '.spec.template.spec.containers[name="app"].image')]


def test_env_items_merge_and_keep_live_order() -> None:
    env = [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    live = created(
        apply(None, deployment(template=pod_template(container("app", "app:1", env=env))), "alice")
    )
    config = deployment(
        template={
            "spec": {
                "containers": [
                    container("app", "app:1", env=[{"name": "C", "value": "3"}, {"name": "A", "value": "1"}])
                ]
            }
        }
    )
    obj = apply(live, config, "bob")
    assert [e["name"] for e in obj["spec"]["template"]["spec"]["containers"][0]["env"]] == ["C", "A", "B"]


def test_atomic_list_in_a_crd_conflicts_as_a_whole() -> None:
    def cq(groups: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {"resourceGroups": groups},
        }

    group: dict[str, Any] = {
        "coveredResources": ["cpu"],
        "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": 9}]}],
    }
    live = created(apply(None, cq([group]), "alice", schema=CLUSTER_QUEUE))
    assert fields_of(live, "alice") == {"f:spec": {"f:resourceGroups": {}}}
    other = copy.deepcopy(group)
    other["flavors"][0]["resources"][0]["nominalQuota"] = 10
    with pytest.raises(ApplyConflict) as info:
        apply(live, cq([other]), "bob", schema=CLUSTER_QUEUE)
    assert info.value.conflicts == [("alice", ".spec.resourceGroups")]
    obj = apply(live, cq([other]), "bob", force=True, schema=CLUSTER_QUEUE)
    assert obj["spec"]["resourceGroups"] == [other]
    assert managers(obj) == [("bob", "Apply")]


def test_set_lists_union_and_prune_per_applier() -> None:
    def cq(checks: list[str]) -> dict[str, Any]:
        return {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {"admissionChecks": checks},
        }

    live = created(apply(None, cq(["a", "b"]), "alice", schema=CLUSTER_QUEUE))
    live = created(apply(live, cq(["c", "b"]), "bob", schema=CLUSTER_QUEUE))
    assert live["spec"]["admissionChecks"] == ["a", "c", "b"]
    assert fields_of(live, "bob") == {"f:spec": {"f:admissionChecks": {'v:"b"': {}, 'v:"c"': {}}}}
    obj = apply(live, cq([]), "alice", schema=CLUSTER_QUEUE)
    assert obj["spec"]["admissionChecks"] == ["c", "b"]  # "b" is still bob's


def test_finalizers_are_a_set_owned_per_value() -> None:
    config = deployment(replicas=1)
    config["metadata"]["finalizers"] = ["example.com/a"]
    live = created(apply(None, config, "alice"))
    config2 = deployment()
    config2["metadata"]["finalizers"] = ["example.com/b"]
    obj = apply(live, config2, "bob")
    assert obj["metadata"]["finalizers"] == ["example.com/a", "example.com/b"]
    # An empty map in the configuration is owned as a whole (``spec: {}``).
    assert fields_of(obj, "bob") == {"f:metadata": {"f:finalizers": {'v:"example.com/b"': {}}}, "f:spec": {}}


def test_untyped_content_merges_granularly() -> None:
    def cq(fungibility: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {"flavorFungibility": fungibility},
        }

    live = created(
        apply(None, cq({"whenCanBorrow": "Borrow", "deep": {"x": [1]}}), "alice", schema=CLUSTER_QUEUE)
    )
    obj = apply(live, cq({"whenCanPreempt": "Preempt", "deep": {"y": 2}}), "bob", schema=CLUSTER_QUEUE)
    assert obj["spec"]["flavorFungibility"] == {
        "whenCanBorrow": "Borrow",
        "deep": {"x": [1], "y": 2},
        "whenCanPreempt": "Preempt",
    }
    assert fields_of(obj, "bob") == {
        "f:spec": {"f:flavorFungibility": {"f:deep": {".": {}, "f:y": {}}, "f:whenCanPreempt": {}}}
    }


def test_status_subresource_apply_only_touches_status() -> None:
    live = created(apply(None, deployment(replicas=2), "alice"))
    config = deployment(replicas=7)
    config["status"] = {"replicas": 2, "conditions": [{"type": "Available", "status": "True"}]}
    obj = apply(live, config, "controller", subresource="status", now=T1)
    assert obj["spec"] == {"replicas": 2}
    assert obj["status"] == config["status"]
    [entry] = [e for e in obj["metadata"]["managedFields"] if e["manager"] == "controller"]
    assert entry["subresource"] == "status"
    assert entry["fieldsV1"] == {
        "f:status": {
            "f:conditions": {'k:{"type":"Available"}': {".": {}, "f:status": {}, "f:type": {}}},
            "f:replicas": {},
        }
    }


def test_main_resource_apply_ignores_reset_status() -> None:
    live = created(deployment(replicas=1))
    live["status"] = {"replicas": 1}
    config = deployment(replicas=1)
    config["status"] = {"replicas": 9}
    obj = apply(live, config, "alice", reset_fields=("status",))
    assert obj["status"] == {"replicas": 1}
    assert fields_of(obj, "alice") == {"f:spec": {"f:replicas": {}}}


def test_noop_apply_keeps_the_timestamp() -> None:
    live = created(apply(None, deployment(replicas=2), "alice", now=T0))
    again = apply(live, deployment(replicas=2), "alice", now=T2)
    assert again["metadata"]["managedFields"][0]["time"] == "2024-05-01T12:00:00Z"
    changed = apply(live, deployment(replicas=3), "alice", now=T2)
    assert changed["metadata"]["managedFields"][0]["time"] == "2024-05-01T12:10:00Z"


def test_null_in_the_configuration_owns_and_clears_the_field() -> None:
    live = created(apply(None, deployment(replicas=2, paused=True), "alice"))
    obj = apply(live, deployment(replicas=2, paused=None), "alice")
    assert obj["spec"] == {"replicas": 2}
    assert fields_of(obj, "alice") == {"f:spec": {"f:paused": {}, "f:replicas": {}}}


def test_apply_rejects_managed_fields_and_bad_lists() -> None:
    config = deployment(replicas=1)
    config["metadata"]["managedFields"] = [{"manager": "x"}]
    with pytest.raises(PatchError) as info:
        apply(None, config, "alice")
    assert (info.value.code, info.value.message) == (400, "metadata.managedFields must be nil")
    dup = deployment(template={"spec": {"containers": [container("a", "x"), container("a", "y")]}})
    with pytest.raises(PatchError) as info:
        apply(None, dup, "alice")
    assert info.value.code == 500
    assert 'duplicate entries for key [name="a"]' in info.value.message
    keyless = deployment(template={"spec": {"containers": [{"image": "x"}]}})
    with pytest.raises(PatchError, match='omits key field "name"'):
        apply(None, keyless, "alice")
    with pytest.raises(ValueError):
        apply(None, deployment(), "")


def test_apply_does_not_modify_its_inputs() -> None:
    live = created(apply(None, deployment(replicas=2), "alice"))
    config = deployment(replicas=2, paused=True)
    live_copy, config_copy = copy.deepcopy(live), copy.deepcopy(config)
    apply(live, config, "bob")
    assert live == live_copy and config == config_copy


# --- updates -----------------------------------------------------------------------------------


def test_create_by_update_owns_everything_it_set() -> None:
    obj = created(deployment(replicas=1, template=pod_template(container("app", "app:1"))))
    update_managed_fields(None, obj, "kubectl-create", schema=DEPLOYMENT, now=T0)
    [entry] = obj["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"], entry["apiVersion"], entry["time"]) == (
        "kubectl-create",
        "Update",
        "apps/v1",
        "2024-05-01T12:00:00Z",
    )
    spec = entry["fieldsV1"]["f:spec"]
    assert spec["."] == {} and spec["f:replicas"] == {}
    assert spec["f:template"]["f:spec"]["f:containers"]['k:{"name":"app"}'] == {
        ".": {},
        "f:image": {},
        "f:name": {},
    }
    assert "f:name" not in entry["fieldsV1"].get("f:metadata", {})


def test_update_moves_changed_fields_and_drops_removed_ones() -> None:
    live = created(apply(None, deployment(replicas=2, paused=True), "alice"))
    new = copy.deepcopy(live)
    new["spec"]["replicas"] = 4
    del new["spec"]["paused"]
    update_managed_fields(live, new, "hpa", schema=DEPLOYMENT, now=T1)
    assert managers(new) == [("hpa", "Update")]
    assert fields_of(new, "hpa") == {"f:spec": {"f:replicas": {}}}


def test_update_without_changes_records_nothing() -> None:
    live = created(apply(None, deployment(replicas=2), "alice"))
    new = copy.deepcopy(live)
    update_managed_fields(live, new, "kubectl-edit", schema=DEPLOYMENT, now=T1)
    assert managers(new) == [("alice", "Apply")]


def test_repeated_updates_accumulate_and_bump_time() -> None:
    live = created(deployment(replicas=1))
    update_managed_fields(None, live, "ctl", schema=DEPLOYMENT, now=T0)
    new = copy.deepcopy(live)
    new["spec"]["paused"] = True
    update_managed_fields(live, new, "ctl", schema=DEPLOYMENT, now=T1)
    [entry] = new["metadata"]["managedFields"]
    assert entry["time"] == "2024-05-01T12:05:00Z"
    assert entry["fieldsV1"] == {"f:spec": {".": {}, "f:paused": {}, "f:replicas": {}}}


def test_update_by_different_versions_are_different_managers() -> None:
    live = created(deployment(replicas=1))
    update_managed_fields(None, live, "ctl", schema=DEPLOYMENT, now=T0)
    new = copy.deepcopy(live)
    new["spec"]["paused"] = True
    update_managed_fields(live, new, "ctl", schema=DEPLOYMENT, now=T1, api_version="apps/v1beta2")
    assert [(e["manager"], e["apiVersion"]) for e in new["metadata"]["managedFields"]] == [
        ("ctl", "apps/v1"),
        ("ctl", "apps/v1beta2"),
    ]


def test_status_update_tracks_only_status() -> None:
    live = created(deployment(replicas=1))
    update_managed_fields(None, live, "ctl", schema=DEPLOYMENT, now=T0)
    new = copy.deepcopy(live)
    new["status"] = {"replicas": 1}
    new["metadata"]["labels"] = {"sneaky": "yes"}
    update_managed_fields(live, new, "deployment-controller", subresource="status", schema=DEPLOYMENT, now=T1)
    entry = next(e for e in new["metadata"]["managedFields"] if e["manager"] == "deployment-controller")
    assert entry["subresource"] == "status"
    assert entry["fieldsV1"] == {"f:status": {".": {}, "f:replicas": {}}}


def test_main_resource_update_can_reset_status() -> None:
    live = created(deployment(replicas=1))
    new = copy.deepcopy(live)
    new["status"] = {"replicas": 3}
    new["spec"]["paused"] = True
    update_managed_fields(live, new, "ctl", schema=DEPLOYMENT, now=T1, reset_fields=("status",))
    assert fields_of(new, "ctl") == {"f:spec": {"f:paused": {}}}


def test_request_managed_fields_replace_or_reset_the_live_ones() -> None:
    live = created(apply(None, deployment(replicas=2), "alice"))
    # A client sending managedFields back (GET-modify-PUT) keeps them.
    new = copy.deepcopy(live)
    update_managed_fields(live, new, "kubectl-edit", schema=DEPLOYMENT, now=T1)
    assert managers(new) == [("alice", "Apply")]
    # An explicit empty list resets them.
    new = copy.deepcopy(live)
    new["metadata"]["managedFields"] = []
    update_managed_fields(live, new, "kubectl-edit", schema=DEPLOYMENT, now=T1)
    assert "managedFields" not in new["metadata"]
    # Dropped from the request: the live ones are kept.
    new = copy.deepcopy(live)
    del new["metadata"]["managedFields"]
    new["spec"]["paused"] = True
    update_managed_fields(live, new, "kubectl-edit", schema=DEPLOYMENT, now=T1)
    assert managers(new) == [("alice", "Apply"), ("kubectl-edit", "Update")]
    # Garbage in the request falls back to the live ones too.
    new = copy.deepcopy(live)
    new["metadata"]["managedFields"] = [{"manager": "x", "operation": "Bogus"}]
    update_managed_fields(live, new, "kubectl-edit", schema=DEPLOYMENT, now=T1)
    assert managers(new) == [("alice", "Apply")]


def test_unfit_object_clears_managed_fields_instead_of_failing() -> None:
    live = created(apply(None, deployment(replicas=2), "alice"))
    new = copy.deepcopy(live)
    new["spec"]["template"] = {"spec": {"containers": [{"image": "no-name"}]}}
    update_managed_fields(live, new, "kubectl-edit", schema=DEPLOYMENT, now=T1)
    assert "managedFields" not in new["metadata"]
    with pytest.raises(ValueError):
        update_managed_fields(None, new, "x", "Apply")


def test_untyped_schema_treats_lists_atomically() -> None:
    obj = {
        "apiVersion": "v1",
        "kind": "Thing",
        "metadata": {"name": "t"},
        "data": {"a": [1, 2], "b": {"c": 1}},
    }
    update_managed_fields(None, obj, "ctl", schema=DEDUCED, now=T0)
    assert fields_of(obj, "ctl") == {"f:data": {".": {}, "f:a": {}, "f:b": {".": {}, "f:c": {}}}}


def test_update_managers_are_capped_into_ancient_changes() -> None:
    obj = created(deployment())
    previous: dict[str, Any] | None = None
    for i in range(12):
        new = copy.deepcopy(obj)
        new["metadata"].setdefault("labels", {})[f"l{i}"] = "x"
        update_managed_fields(previous, new, f"m{i:02d}", schema=DEPLOYMENT, now=T0 + timedelta(seconds=i))
        previous = obj = new
    names = [e["manager"] for e in obj["metadata"]["managedFields"]]
    assert len(names) == 10
    assert names[0] == ANCIENT_CHANGES
    ancient = obj["metadata"]["managedFields"][0]
    assert set(ancient["fieldsV1"]["f:metadata"]["f:labels"]) >= {"f:l0", "f:l1", "f:l2"}
    assert ancient["time"] == "2024-05-01T12:00:02Z"


def test_entries_sorted_apply_first_then_time() -> None:
    live = created(deployment(replicas=1))
    update_managed_fields(None, live, "zzz", schema=DEPLOYMENT, now=T0)
    new = copy.deepcopy(live)
    new["spec"]["paused"] = True
    update_managed_fields(live, new, "aaa", schema=DEPLOYMENT, now=T1)
    obj = apply(new, deployment(replicas=1), "mmm", now=T2)
    assert managers(obj) == [("mmm", "Apply"), ("zzz", "Update"), ("aaa", "Update")]


# --- encoding -----------------------------------------------------------------------------------


FIELDS_V1_SAMPLES: list[dict[str, Any]] = [
    {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}},
    {
        "f:spec": {
            "f:template": {
                "f:spec": {
                    "f:containers": {
                        'k:{"name":"nginx"}': {
                            ".": {},
                            "f:image": {},
                            "f:ports": {
                                'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}
                            },
                        }
                    }
                }
            }
        }
    },
    {"f:metadata": {"f:finalizers": {".": {}, 'v:"a/b"': {}, 'v:"c"': {}}}},
    {"f:data": {"i:0": {}, "i:10": {}, "f:x": {}}},
]


@pytest.mark.parametrize("fields", FIELDS_V1_SAMPLES)
def test_fields_v1_round_trip(fields: dict[str, Any]) -> None:
    decoded = from_fields_v1(fields)
    encoded = to_fields_v1(decoded)
    assert encoded == fields
    assert from_fields_v1(encoded) == decoded


def test_managed_fields_entries_round_trip() -> None:
    entries = [
        {
            "manager": "kubectl",
            "operation": "Apply",
            "apiVersion": "apps/v1",
            "time": "2024-05-01T12:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": FIELDS_V1_SAMPLES[1],
        },
        {
            "manager": "kube-controller-manager",
            "operation": "Update",
            "apiVersion": "apps/v1",
            "time": "2024-05-01T12:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": {"f:replicas": {}}},
            "subresource": "status",
        },
    ]
    decoded = decode_managed_fields(entries)
    assert set(decoded) == {
        '{"manager":"kubectl","operation":"Apply"}',
        '{"manager":"kube-controller-manager","operation":"Update","apiVersion":"apps/v1","subresource":"status"}',
    }
    assert encode_managed_fields(decoded) == entries
    assert decoded[manager_identifier("kubectl", "Apply")].describe() == '"kubectl"'
    status = decoded[manager_identifier("kube-controller-manager", "Update", "apps/v1", "status")]
    assert status.describe() == '"kube-controller-manager" with subresource "status" using apps/v1'


@pytest.mark.parametrize(
    "bad",
    [
        [{"operation": "Apply", "fieldsType": "FieldsV2", "fieldsV1": {}}],
        [{"operation": "Patch"}],
        [{"operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": {"x:y": {}}}],
        [{"operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": {"f:a": 1}}],
        [{"operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": {"k:[1]": {}}}],
        ["nope"],
    ],
)
def test_malformed_managed_fields_are_rejected(bad: list[Any]) -> None:
    with pytest.raises(ValueError):
        decode_managed_fields(bad)


# --- upgrading from client-side apply -----------------------------------------------------------

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def client_side_applied(replicas: int) -> dict[str, Any]:
    """A Deployment written by ``kubectl apply`` (client-side) with its annotation."""
    config = deployment(replicas=replicas, paused=False)
    obj = created(config)
    obj["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(config) + "\n"}
    update_managed_fields(None, obj, "kubectl-client-side-apply", schema=DEPLOYMENT, now=T0)
    return obj


def test_kubectl_takes_over_fields_from_its_last_applied_configuration() -> None:
    live = client_side_applied(2)
    obj = apply(live, deployment(replicas=3, paused=False), "kubectl", now=T1)
    assert obj["spec"]["replicas"] == 3
    assert fields_of(obj, "kubectl") == {"f:spec": {"f:paused": {}, "f:replicas": {}}}
    csa = fields_of(obj, "kubectl-client-side-apply")
    assert "f:replicas" not in csa["f:spec"] and "f:paused" in csa["f:spec"]
    annotation = json.loads(obj["metadata"]["annotations"][LAST_APPLIED])
    assert annotation["spec"] == {"replicas": 3, "paused": False}
    assert obj["metadata"]["annotations"][LAST_APPLIED].endswith("\n")


def test_takeover_needs_the_kubectl_manager_and_unchanged_values() -> None:
    live = client_side_applied(2)
    with pytest.raises(ApplyConflict):
        apply(live, deployment(replicas=3), "helm")
    edited = copy.deepcopy(live)
    edited["spec"]["replicas"] = 5
    update_managed_fields(live, edited, "kubectl-edit", schema=DEPLOYMENT, now=T1)
    with pytest.raises(ApplyConflict) as info:
        apply(edited, deployment(replicas=3, paused=True), "kubectl", now=T2)
    assert info.value.conflicts == [("kubectl-edit", ".spec.replicas")]
    broken = copy.deepcopy(live)
    broken["metadata"]["annotations"][LAST_APPLIED] = "{not json"
    with pytest.raises(ApplyConflict):
        apply(broken, deployment(replicas=3), "kubectl")


# --- properties ---------------------------------------------------------------------------------

_leaf = st.integers(0, 2) | st.sampled_from(["a", "b"]) | st.booleans()
_configs = st.recursive(
    st.dictionaries(st.sampled_from(["p", "q", "r"]), _leaf, max_size=3),
    lambda children: st.dictionaries(
        st.sampled_from(["p", "q", "r", "s"]), children | _leaf | st.lists(_leaf, max_size=2), max_size=3
    ),
    max_leaves=10,
)


def _content(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k != "metadata"}


@settings(max_examples=150, deadline=None)
@given(_configs, _configs)
def test_a_sole_applier_converges_to_its_configuration(first: dict[str, Any], second: dict[str, Any]) -> None:
    obj = apply(None, first, "solo", schema=DEDUCED)
    assert _content(obj) == first
    obj = apply(created(obj) if "metadata" in obj else obj, second, "solo", schema=DEDUCED, now=T1)
    assert _content(obj) == second
    assert _content(apply(obj, second, "solo", schema=DEDUCED, now=T2)) == second


@settings(max_examples=150, deadline=None)
@given(_configs, _configs)
def test_disjoint_appliers_never_conflict(first: dict[str, Any], second: dict[str, Any]) -> None:
    left = {"left": first}
    right = {"right": second}
    obj = apply(apply(None, left, "l", schema=DEDUCED), right, "r", schema=DEDUCED)
    assert _content(obj) == {**left, **right}
    obj = apply(obj, {"left": {}}, "l", schema=DEDUCED, now=T1)
    assert _content(obj) == {"left": {}, **right}
