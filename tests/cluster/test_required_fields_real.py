"""Writes lacking a ``required`` property: ``serve`` answers as the real kube-apiserver does.

The same requests (create, merge patch, status merge patch; v1beta1 and v1beta2) go to a real
kube-apiserver with the generated CRDs (no webhooks: the CRD alone) and to ``pykueue serve
--no-controllers`` through the official client; the status code and the field errors must be
the same.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import support
from realcluster import RealCluster

GROUP = "kueue.x-k8s.io"
TEMPLATE = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}
TIME = "2026-01-01T00:00:00Z"


def _wl(name: str, version: str = "v1beta2", **pod_set: Any) -> dict[str, Any]:
    pod_set = {"name": "main", "count": 1, "template": TEMPLATE, **pod_set}
    return {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"queueName": "q", "podSets": [{k: v for k, v in pod_set.items() if v is not None}]},
    }


def _cq(name: str, spec: dict[str, Any], version: str = "v1beta2") -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{version}", "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


ASSIGNMENT = {"name": "main", "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "1"}, "count": 1}

# name: (plural, object to create first, version of the write, status patch or None, spec patch or None)
CASES: dict[str, tuple[str, dict[str, Any], str, dict[str, Any] | None, dict[str, Any] | None]] = {
    "check-message": (
        "workloads", _wl("check-message"), "v1beta2",
        {"admissionChecks": [{"name": "a", "state": "Pending", "lastTransitionTime": TIME}]}, None,
    ),
    "check-v1beta1": (
        "workloads", _wl("check-v1beta1"), "v1beta1",
        {"admissionChecks": [{"name": "a", "state": "Ready"}], "admission": {"podSetAssignments": [ASSIGNMENT]}},
        None,
    ),
    "no-cluster-queue": (
        "workloads", _wl("no-cluster-queue"), "v1beta2", {"admission": {"podSetAssignments": [ASSIGNMENT]}}, None,
    ),
    "no-assignments": ("workloads", _wl("no-assignments"), "v1beta1", {"admission": {"clusterQueue": "cq"}}, None),
    "eviction-cause": (
        "workloads", _wl("eviction-cause"), "v1beta2",
        {"schedulingStats": {"evictions": [{"reason": "Preempted", "count": 1}]}}, None,
    ),
    "cq-usage": (
        "clusterqueues", _cq("cq-usage", {}), "v1beta2", {"flavorsUsage": [{"name": "f"}]}, None,
    ),
    "cq-strategy": ("clusterqueues", _cq("cq-strategy", {}), "v1beta2", None, {"admissionChecksStrategy": {}}),
    "cq-scope": ("clusterqueues", _cq("cq-scope", {}), "v1beta1", None, {"admissionScope": {}}),
}  # fmt: skip

CREATES: dict[str, tuple[str, dict[str, Any]]] = {
    "no-template": ("workloads", _wl("no-template", template=None)),
    "no-template-v1beta1": ("workloads", _wl("no-template-v1beta1", "v1beta1", template=None)),
    "no-count-v1beta1": ("workloads", _wl("no-count-v1beta1", "v1beta1", count=None)),
    "scope": ("clusterqueues", _cq("scope", {"admissionScope": {}})),
    "taint": (
        "resourceflavors",
        {"apiVersion": f"{GROUP}/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "taint"},
         "spec": {"nodeTaints": [{"value": "x"}]}},
    ),
    "quota-v1beta1": (
        "clusterqueues",
        _cq("quota-v1beta1", {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu"}]}]}]}, "v1beta1"),
    ),
    "container-name": (
        "workloads", _wl("container-name", template={"spec": {"containers": [{"image": "busybox"}]}}),
    ),
    "no-value": (
        "workloadpriorityclasses",
        {"apiVersion": f"{GROUP}/v1beta2", "kind": "WorkloadPriorityClass", "metadata": {"name": "no-value"}},
    ),
    "no-controller": (
        "admissionchecks",
        {"apiVersion": f"{GROUP}/v1beta1", "kind": "AdmissionCheck", "metadata": {"name": "no-controller"}, "spec": {}},
    ),
}  # fmt: skip


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    server = support.start_server(tmp_path_factory.mktemp("serve"))
    yield server
    server.stop()


def _answer(call: Any, *args: Any) -> tuple[int, set[tuple[str, str, str]]]:
    """The status code and the (reason, field, message) causes of ``call(*args)``."""
    from kubernetes.client.exceptions import ApiException

    try:
        call(*args)
    except ApiException as err:
        body = json.loads(err.body)
        causes = {(c.get("reason", ""), c.get("field", ""), c.get("message", "")) for c in body["details"]["causes"]}
        return err.status, causes
    return 200, set()


def _write(server: Any, plural: str, obj: dict[str, Any], version: str, status: Any, spec: Any) -> Any:
    from kubernetes import client

    api = client.CustomObjectsApi(server.api_client())
    name, namespace = obj["metadata"]["name"], obj["metadata"].get("namespace")
    base = {"apiVersion": f"{GROUP}/{version}", "kind": obj["kind"], "metadata": {"name": name}}
    if status is not None:
        body = {**base, "status": status}
        if namespace:
            return api.patch_namespaced_custom_object_status(GROUP, version, namespace, plural, name, body)
        return api.patch_cluster_custom_object_status(GROUP, version, plural, name, body)
    body = {**base, "spec": spec}
    if namespace:
        return api.patch_namespaced_custom_object(GROUP, version, namespace, plural, name, body)
    return api.patch_cluster_custom_object(GROUP, version, plural, name, body)


def _create(server: Any, plural: str, obj: dict[str, Any]) -> Any:
    from kubernetes import client

    api = client.CustomObjectsApi(server.api_client())
    version = obj["apiVersion"].rpartition("/")[2]
    namespace = obj["metadata"].get("namespace")
    if namespace:
        return api.create_namespaced_custom_object(GROUP, version, namespace, plural, obj)
    return api.create_cluster_custom_object(GROUP, version, plural, obj)


def test_writes_missing_required_fields_are_answered_alike(real_cluster: RealCluster, serve: Any) -> None:
    differences = []
    for name, (plural, obj, version, status, spec) in CASES.items():
        answers = []
        for server in (real_cluster, serve):
            _create(server, plural, json.loads(json.dumps(obj)))
            answers.append(_answer(_write, server, plural, obj, version, status, spec))
        if answers[0] != answers[1]:
            differences.append((name, "real", answers[0], "serve", answers[1]))
    assert differences == [], "\n".join(map(repr, differences))


def test_creates_missing_required_fields_are_answered_alike(real_cluster: RealCluster, serve: Any) -> None:
    differences = []
    for name, (plural, obj) in CREATES.items():
        answers = [_answer(_create, s, plural, json.loads(json.dumps(obj))) for s in (real_cluster, serve)]
        if answers[0] != answers[1]:
            differences.append((name, "real", answers[0], "serve", answers[1]))
    assert differences == [], "\n".join(map(repr, differences))
