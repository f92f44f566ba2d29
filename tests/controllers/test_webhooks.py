"""The webhook answers ``pykueue controller`` gives a real kube-apiserver (pure functions; the
real-cluster tier in tests/cluster exercises them over HTTPS)."""

from __future__ import annotations

import base64
import json
from typing import Any

from pykueue.api.feature_gates import FeatureGates
from pykueue.controllers import webhooks as wh


def test_json_patch_walks_objects_and_escapes_keys() -> None:
    old = {"metadata": {"labels": {"a/b": "1"}}, "spec": {"x": 1, "gone": True, "list": [1]}}
    new = {"metadata": {"labels": {"a/b": "2", "c~d": "3"}}, "spec": {"x": 1, "list": [1, 2]}}
    assert wh.json_patch(old, new) == [
        {"op": "replace", "path": "/metadata/labels/a~1b", "value": "2"},
        {"op": "add", "path": "/metadata/labels/c~0d", "value": "3"},
        {"op": "remove", "path": "/spec/gone"},
        {"op": "replace", "path": "/spec/list", "value": [1, 2]},
    ]
    assert wh.json_patch(1, 1.0) == [{"op": "replace", "path": "", "value": 1.0}]  # JSON types differ


def test_conversion_review_keeps_v1beta1_only_fields() -> None:
    cq = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "team-a", "uid": "u1", "resourceVersion": "7"},
        "spec": {"cohort": "team-ab", "admissionChecks": ["prov"]},
    }
    answer = wh.convert_review(
        {"request": {"uid": "r1", "desiredAPIVersion": "kueue.x-k8s.io/v1beta2", "objects": [cq]}}
    )
    response = answer["response"]
    assert answer["kind"] == "ConversionReview" and response["uid"] == "r1"
    assert response["result"] == {"status": "Success"}
    (up,) = response["convertedObjects"]
    assert up["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert up["spec"]["cohortName"] == "team-ab"
    assert up["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "prov"}]}
    assert up["metadata"] == cq["metadata"]  # identity untouched
    back = wh.convert_review(
        {"request": {"uid": "r2", "desiredAPIVersion": "kueue.x-k8s.io/v1beta1", "objects": [up]}}
    )["response"]["convertedObjects"][0]
    assert back["spec"]["cohort"] == "team-ab"


def test_conversion_review_failure_names_the_object() -> None:
    bad = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Nope", "metadata": {"name": "x"}}
    response = wh.convert_review({"request": {"uid": "r", "desiredAPIVersion": "kueue.x-k8s.io/v1beta2", "objects": [bad]}})[
        "response"
    ]
    assert response["result"]["status"] == "Failure"
    assert "Nope" in response["result"]["message"]


def _review(path: str, obj: dict[str, Any], operation: str = "CREATE", old: dict[str, Any] | None = None) -> Any:
    hooks = wh.Webhooks(client=None)  # type: ignore[arg-type]  # Kueue kinds need no lookup
    request = {"uid": "u", "operation": operation, "object": obj, "oldObject": old}
    answer = hooks.review(path, {"request": request})
    assert answer is not None and answer["response"]["uid"] == "u"
    return answer["response"]


CQ: dict[str, Any] = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "ClusterQueue",
    "metadata": {"name": "cq"},
    "spec": {
        "namespaceSelector": {},
        "resourceGroups": [
            {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 1}]}]}
        ],
    },
}


def test_mutating_cluster_queue_webhook_adds_the_finalizer() -> None:
    response = _review("/mutate-kueue-x-k8s-io-v1beta2-clusterqueue", CQ)
    assert response["allowed"] is True and response["patchType"] == "JSONPatch"
    patch = json.loads(base64.b64decode(response["patch"]))
    assert {"op": "add", "path": "/metadata/finalizers", "value": ["kueue.x-k8s.io/resource-in-use"]} in patch
    assert not any(op["path"] in ("/metadata/name", "/metadata/uid") for op in patch)


def test_validating_cluster_queue_webhook_denies_with_the_webhook_errors() -> None:
    bad = json.loads(json.dumps(CQ))
    bad["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["name"] = "memory"
    response = _review("/validate-kueue-x-k8s-io-v1beta2-clusterqueue", bad)
    assert response["allowed"] is False
    assert response["status"]["code"] == 403
    assert response["status"]["message"] == (
        'spec.resourceGroups[0].flavors[0].resources[0].name: Invalid value: "memory": '
        "must match the name in coveredResources"
    )
    assert _review("/validate-kueue-x-k8s-io-v1beta2-clusterqueue", CQ)["allowed"] is True


def test_registered_configurations_match_the_served_paths() -> None:
    mutating, validating = wh.webhook_configurations("https://127.0.0.1:9443", None, "Q0E=")
    served = {hook.path for hook in wh.HOOKS}
    for config in (mutating, validating):
        for hook in config["webhooks"]:
            assert hook["clientConfig"]["url"].removeprefix("https://127.0.0.1:9443") in served
            assert hook["clientConfig"]["caBundle"] == "Q0E="
            assert hook["failurePolicy"] == "Fail" and hook["sideEffects"] == "None"
    assert {h["name"] for h in mutating["webhooks"]} == {
        "mjob.kb.io", "mclusterqueue.kb.io", "mresourceflavor.kb.io", "mworkload.kb.io"
    }  # fmt: skip
    assert {h["name"] for h in validating["webhooks"]} == {
        "vjob.kb.io", "vclusterqueue.kb.io", "vcohort.kb.io", "vresourceflavor.kb.io", "vworkload.kb.io"
    }  # fmt: skip
    # upstream's config/components/webhook/manifests.yaml: only vworkload also names a subresource
    assert {h["name"]: h["rules"][0]["resources"] for h in validating["webhooks"]} == {
        "vjob.kb.io": ["jobs"],
        "vclusterqueue.kb.io": ["clusterqueues"],
        "vcohort.kb.io": ["cohorts"],
        "vresourceflavor.kb.io": ["resourceflavors"],
        "vworkload.kb.io": ["workloads", "workloads/status"],
    }


def test_validating_webhooks_read_the_configured_feature_gates() -> None:
    """``pykueue controller`` serves Kueue's webhooks with its Configuration's gates, as upstream's
    controller manager does: a StrictFIFO ConcurrentAdmission policy is denied only with the gate on."""
    strict = json.loads(json.dumps(CQ))
    strict["spec"] |= {
        "queueingStrategy": "StrictFIFO",
        "concurrentAdmissionPolicy": {"migration": {"mode": "TryPreferredFlavors"}},
    }
    request = {"uid": "u", "operation": "CREATE", "object": strict}
    path = "/validate-kueue-x-k8s-io-v1beta2-clusterqueue"
    allowed = {}
    for enabled in (False, True):
        gates = FeatureGates({"ConcurrentAdmission": enabled})
        answer = wh.Webhooks(client=None, gates=gates).review(path, {"request": request})  # type: ignore[arg-type]
        assert answer is not None
        allowed[enabled] = answer["response"]["allowed"]
    assert allowed == {False: True, True: False}
