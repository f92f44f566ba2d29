"""SchemaNode construction from OpenAPI, plus the Kubernetes-like schemas the patch tests share."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.apiserver.patch import DEDUCED, OBJECT_META, SchemaNode, schema_node_from_openapi

REF = "#/components/schemas/"


def ref(name: str, **siblings: Any) -> dict[str, Any]:
    """A v3-style reference (wrapped in allOf when it has siblings)."""
    if not siblings:
        return {"$ref": REF + name}
    return {"allOf": [{"$ref": REF + name}], **siblings}


STR = {"type": "string"}
INT = {"type": "integer", "format": "int32"}

COMPONENTS: dict[str, Any] = {
    "ObjectMeta": {
        "type": "object",
        "properties": {
            "name": STR,
            "namespace": STR,
            "uid": STR,
            "resourceVersion": STR,
            "generation": {"type": "integer"},
            "creationTimestamp": STR,
            "labels": {"type": "object", "additionalProperties": STR},
            "annotations": {"type": "object", "additionalProperties": STR},
            "finalizers": {
                "type": "array",
                "items": STR,
                "x-kubernetes-list-type": "set",
                "x-kubernetes-patch-strategy": "merge",
            },
            "ownerReferences": {
                "type": "array",
                "items": ref("OwnerReference", default={}),
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["uid"],
                "x-kubernetes-patch-merge-key": "uid",
                "x-kubernetes-patch-strategy": "merge",
            },
            "managedFields": {"type": "array", "items": {"type": "object"}},
        },
    },
    "OwnerReference": {
        "type": "object",
        "properties": {
            "apiVersion": STR,
            "kind": STR,
            "name": STR,
            "uid": STR,
            "controller": {"type": "boolean"},
        },
        "x-kubernetes-map-type": "atomic",
    },
    "LabelSelector": {
        "type": "object",
        "properties": {"matchLabels": {"type": "object", "additionalProperties": STR}},
        "x-kubernetes-map-type": "atomic",
    },
    "EnvVar": {"type": "object", "properties": {"name": STR, "value": STR}},
    "ContainerPort": {
        "type": "object",
        "properties": {"name": STR, "containerPort": INT, "protocol": {"type": "string", "default": "TCP"}},
    },
    "Container": {
        "type": "object",
        "properties": {
            "name": STR,
            "image": STR,
            "imagePullPolicy": STR,
            "args": {"type": "array", "items": STR, "x-kubernetes-list-type": "atomic"},
            "env": {
                "type": "array",
                "items": ref("EnvVar", default={}),
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "x-kubernetes-patch-merge-key": "name",
                "x-kubernetes-patch-strategy": "merge",
            },
            "ports": {
                "type": "array",
                "items": ref("ContainerPort", default={}),
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
                "x-kubernetes-patch-merge-key": "containerPort",
                "x-kubernetes-patch-strategy": "merge",
            },
            "resources": {
                "type": "object",
                "properties": {
                    "limits": {"type": "object", "additionalProperties": STR},
                    "requests": {"type": "object", "additionalProperties": STR},
                },
            },
        },
    },
    "Toleration": {"type": "object", "properties": {"key": STR, "operator": STR, "effect": STR}},
    "Volume": {
        "type": "object",
        "properties": {
            "name": STR,
            "emptyDir": {"type": "object", "properties": {"medium": STR}},
            "configMap": {"type": "object", "properties": {"name": STR}},
        },
    },
    "PodSpec": {
        "type": "object",
        "properties": {
            "containers": {
                "type": "array",
                "items": ref("Container", default={}),
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "x-kubernetes-patch-merge-key": "name",
                "x-kubernetes-patch-strategy": "merge",
            },
            "tolerations": {
                "type": "array",
                "items": ref("Toleration", default={}),
                "x-kubernetes-list-type": "atomic",
            },
            "volumes": {
                "type": "array",
                "items": ref("Volume", default={}),
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "x-kubernetes-patch-merge-key": "name",
                "x-kubernetes-patch-strategy": "merge,retainKeys",
            },
            "nodeSelector": {
                "type": "object",
                "additionalProperties": STR,
                "x-kubernetes-map-type": "atomic",
            },
            "restartPolicy": STR,
        },
    },
    "PodTemplateSpec": {
        "type": "object",
        "properties": {"metadata": ref("ObjectMeta", default={}), "spec": ref("PodSpec", default={})},
    },
    "DeploymentStrategy": {
        "type": "object",
        "properties": {
            "type": STR,
            "rollingUpdate": {
                "type": "object",
                "properties": {"maxSurge": {"x-kubernetes-int-or-string": True}},
            },
        },
    },
    "Deployment": {
        "type": "object",
        "properties": {
            "apiVersion": STR,
            "kind": STR,
            "metadata": ref("ObjectMeta", default={}),
            "spec": {
                "type": "object",
                "properties": {
                    "replicas": INT,
                    "paused": {"type": "boolean"},
                    "selector": ref("LabelSelector"),
                    "template": ref("PodTemplateSpec", default={}),
                    "strategy": ref(
                        "DeploymentStrategy", default={}, **{"x-kubernetes-patch-strategy": "retainKeys"}
                    ),
                },
            },
            "status": {
                "type": "object",
                "properties": {
                    "replicas": INT,
                    "conditions": {
                        "type": "array",
                        "items": {"type": "object", "properties": {"type": STR, "status": STR}},
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["type"],
                        "x-kubernetes-patch-merge-key": "type",
                        "x-kubernetes-patch-strategy": "merge",
                    },
                },
            },
        },
    },
}

DEPLOYMENT = schema_node_from_openapi(ref("Deployment"), {"schemas": COMPONENTS})
"""apps/v1 Deployment semantics as the real OpenAPI describes them (trimmed)."""

CLUSTER_QUEUE_CRD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "apiVersion": STR,
        "kind": STR,
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "properties": {
                "cohort": STR,
                "namespaceSelector": {
                    "type": "object",
                    "properties": {"matchLabels": {"type": "object", "additionalProperties": STR}},
                    "x-kubernetes-map-type": "atomic",
                },
                "resourceGroups": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "coveredResources": {"type": "array", "items": STR},
                            "flavors": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "name": STR,
                                        "resources": {
                                            "type": "array",
                                            "items": {
                                                "type": "object",
                                                "properties": {
                                                    "name": STR,
                                                    "nominalQuota": {"x-kubernetes-int-or-string": True},
                                                },
                                            },
                                            "x-kubernetes-list-type": "map",
                                            "x-kubernetes-list-map-keys": ["name"],
                                        },
                                    },
                                },
                                "x-kubernetes-list-type": "map",
                                "x-kubernetes-list-map-keys": ["name"],
                            },
                        },
                    },
                    "x-kubernetes-list-type": "atomic",
                },
                "admissionChecks": {"type": "array", "items": STR, "x-kubernetes-list-type": "set"},
                "flavorFungibility": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "legacyList": {"type": "array", "items": {"type": "object", "properties": {"name": STR}}},
            },
        },
        "status": {
            "type": "object",
            "properties": {
                "pendingWorkloads": INT,
                "conditions": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"type": STR, "status": STR, "reason": STR}},
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["type"],
                },
            },
        },
    },
}

CLUSTER_QUEUE = schema_node_from_openapi(CLUSTER_QUEUE_CRD_SCHEMA)
"""A CRD (structural schema, ``metadata: {type: object}``) like Kueue's ClusterQueue."""


def _path(node: SchemaNode, *names: str) -> SchemaNode:
    for name in names:
        node = node.items if name == "[]" else node.field(name)
    return node


@pytest.mark.parametrize(
    ("names", "kind", "list_type", "keys", "strategy", "merge_key"),
    [
        (("spec", "template", "spec", "containers"), "list", "map", ("name",), "merge", "name"),
        (("spec", "template", "spec", "containers", "[]", "env"), "list", "map", ("name",), "merge", "name"),
        (
            ("spec", "template", "spec", "containers", "[]", "ports"),
            "list",
            "map",
            ("containerPort", "protocol"),
            "merge",
            "containerPort",
        ),
        (("spec", "template", "spec", "tolerations"), "list", "atomic", (), "", ""),
        (("spec", "template", "spec", "volumes"), "list", "map", ("name",), "merge,retainKeys", "name"),
        (("metadata", "finalizers"), "list", "set", (), "merge", ""),
        (("metadata", "ownerReferences"), "list", "map", ("uid",), "merge", "uid"),
        (("spec", "template", "metadata", "finalizers"), "list", "set", (), "merge", ""),
        (("status", "conditions"), "list", "map", ("type",), "merge", "type"),
        (("spec", "template", "spec", "containers", "[]", "args"), "list", "atomic", (), "", ""),
    ],
)
def test_list_semantics_from_openapi(
    names: tuple[str, ...], kind: str, list_type: str, keys: tuple[str, ...], strategy: str, merge_key: str
) -> None:
    node = _path(DEPLOYMENT, *names)
    assert (node.kind, node.list_type, node.list_map_keys, node.patch_strategy, node.patch_merge_key) == (
        kind,
        list_type,
        keys,
        strategy,
        merge_key,
    )


def test_map_semantics_and_siblings_of_refs() -> None:
    assert _path(DEPLOYMENT, "spec", "selector").map_type == "atomic"
    assert _path(DEPLOYMENT, "spec", "template", "spec", "nodeSelector").map_type == "atomic"
    assert _path(DEPLOYMENT, "metadata", "labels").map_type == "granular"
    assert _path(DEPLOYMENT, "metadata", "labels", "app").kind == "scalar"
    assert _path(DEPLOYMENT, "metadata", "ownerReferences", "[]").map_type == "atomic"
    # Extensions next to an allOf reference win over the target's.
    assert _path(DEPLOYMENT, "spec", "strategy").patch_strategy == "retainKeys"
    assert _path(DEPLOYMENT, "spec", "strategy", "rollingUpdate", "maxSurge").kind == "scalar"
    port = _path(DEPLOYMENT, "spec", "template", "spec", "containers", "[]", "ports", "[]")
    assert port.field("protocol").default == "TCP"


def test_crd_lists_default_to_atomic_and_metadata_is_object_meta() -> None:
    spec = CLUSTER_QUEUE.field("spec")
    assert spec.field("resourceGroups").list_type == "atomic"
    assert spec.field("legacyList").list_type == "atomic"
    assert spec.field("admissionChecks").list_type == "set"
    assert spec.field("flavorFungibility").kind == "map"
    assert spec.field("flavorFungibility").field("anything") is DEDUCED
    assert CLUSTER_QUEUE.field("metadata") is OBJECT_META
    assert CLUSTER_QUEUE.field("metadata").field("finalizers").list_type == "set"
    assert CLUSTER_QUEUE.has_field("apiVersion") and CLUSTER_QUEUE.has_field("kind")


def test_patch_strategy_merge_without_list_type() -> None:
    schema = {
        "type": "object",
        "properties": {
            "keyed": {
                "type": "array",
                "items": {"type": "object", "properties": {"id": STR}},
                "x-kubernetes-patch-strategy": "merge",
                "x-kubernetes-patch-merge-key": "id",
            },
            "prims": {"type": "array", "items": STR, "x-kubernetes-patch-strategy": "merge"},
            "replaced": {"type": "array", "items": STR, "x-kubernetes-patch-strategy": "replace"},
        },
    }
    node = schema_node_from_openapi(schema)
    assert (node.field("keyed").list_type, node.field("keyed").list_map_keys) == ("map", ("id",))
    assert node.field("prims").list_type == "set"
    assert node.field("replaced").list_type == "atomic"


def test_recursive_schemas_resolve_lazily() -> None:
    components = {
        "Props": {
            "type": "object",
            "properties": {
                "properties": {"type": "object", "additionalProperties": {"$ref": REF + "Props"}},
                "items": {"$ref": REF + "Props"},
                "type": STR,
            },
        }
    }
    node = schema_node_from_openapi({"$ref": REF + "Props"}, components)
    deep = node.field("properties").field("x").field("items").field("properties").field("y")
    assert deep.kind == "map" and deep.has_field("type")
    assert node.field("items") is node.field("items").field("items")  # cached bare references


def test_v2_definitions_and_unknown_references() -> None:
    node = schema_node_from_openapi(
        {"type": "object", "properties": {"x": {"$ref": "#/definitions/X"}}},
        {"X": {"type": "array", "items": STR, "x-kubernetes-list-type": "set"}},
    )
    assert node.field("x").list_type == "set"
    broken = schema_node_from_openapi({"type": "object", "properties": {"x": {"$ref": REF + "Nope"}}}, {})
    with pytest.raises(KeyError):
        broken.field("x")


def test_hand_built_nodes() -> None:
    node = SchemaNode.struct(
        {
            "items": SchemaNode.list_of(
                SchemaNode.struct({"k": SchemaNode.scalar()}), list_type="map", keys=("k",)
            )
        }
    )
    assert node.field("items").items.has_field("k")
    assert node.field("undeclared") is DEDUCED
    assert DEDUCED.items is DEDUCED
    assert "map" in repr(node)
    with pytest.raises(ValueError):
        SchemaNode("bogus")
