"""``serve`` refuses writes that lack a property the CRD marks ``required``, as kube-apiserver does.

The typed model behind the Kueue kinds gives some required properties a default (an admission
check state's ``message``), so reading the object into it used to fill them in silently; a real
kube-apiserver answers 422 ``<path>: Required value`` on create, update and status update, in the
version written (v1beta1 and v1beta2 require different things), unless the CRD's OpenAPI
``default`` fills the property first. Driven with the real kubectl and the official client.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import ServerProcess

WORKLOAD_V1BETA2: dict[str, Any] = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "Workload",
    "metadata": {"name": "", "namespace": "default"},
    "spec": {
        "queueName": "q",
        "podSets": [
            {
                "name": "main",
                "count": 1,
                "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}},
            }
        ],
    },
}
CHECK = {"name": "prov", "state": "Pending", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}
RESERVED = {
    "clusterQueue": "cq",
    "podSetAssignments": [{"name": "main", "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "1"}, "count": 1}],
}


def _workload(server: ServerProcess, name: str, version: str = "v1beta2") -> dict[str, Any]:
    obj = json.loads(json.dumps(WORKLOAD_V1BETA2))
    obj["metadata"]["name"] = name
    obj["apiVersion"] = f"kueue.x-k8s.io/{version}"
    server.kubectl("create", "-f", "-", stdin=json.dumps(obj))
    return obj


def _status_patch(server: ServerProcess, name: str, status: dict[str, Any], version: str = "v1beta2") -> Any:
    return server.kubectl(
        "patch", f"workloads.{version}.kueue.x-k8s.io", name, "-n", "default", "--subresource=status",
        "--type=merge", "-p", json.dumps({"status": status}), check=False,
    )  # fmt: skip


def test_status_write_without_a_check_message_is_refused(server: ServerProcess) -> None:
    _workload(server, "no-message")
    check = {k: v for k, v in CHECK.items() if k != "message"}
    refused = _status_patch(server, "no-message", {"admissionChecks": [check]})
    assert refused.returncode != 0
    assert (
        'The Workload "no-message" is invalid: \n'
        "* status.admissionChecks[0].message: Required value\n"
        "* <nil>: Invalid value: null: some validation rules were not checked because the object was "
        "invalid; correct the existing errors to complete validation"
    ) in refused.stderr, refused.stderr
    stored = json.loads(server.kubectl("get", "workload", "no-message", "-n", "default", "-o", "json").stdout)
    assert "admissionChecks" not in stored.get("status", {})  # nothing half-written
    accepted = _status_patch(server, "no-message", {"admissionChecks": [CHECK]})
    assert accepted.returncode == 0, accepted.stderr
    stored = json.loads(server.kubectl("get", "workload", "no-message", "-n", "default", "-o", "json").stdout)
    assert stored["status"]["admissionChecks"][0]["message"] == ""  # and read back with it


def test_every_missing_field_is_named_with_the_official_client(server: ServerProcess) -> None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    _workload(server, "several")
    api = client.CustomObjectsApi(server.api_client())
    status = {"admissionChecks": [{"name": "a", "state": "Ready"}], "admission": {"clusterQueue": "cq"}}
    body = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "several"}, "status": status}
    with pytest.raises(ApiException) as err:
        api.patch_namespaced_custom_object_status("kueue.x-k8s.io", "v1beta1", "default", "workloads", "several", body)
    assert err.value.status == 422
    causes = {(c["field"], c["reason"]) for c in json.loads(err.value.body)["details"]["causes"]}
    assert {
        ("status.admissionChecks[0].message", "FieldValueRequired"),
        ("status.admissionChecks[0].lastTransitionTime", "FieldValueRequired"),
        ("status.admission.podSetAssignments", "FieldValueRequired"),  # v1beta1 requires it, v1beta2 not
    } <= causes, causes


def test_v1beta2_admission_needs_no_cluster_queue_but_v1beta1_does(server: ServerProcess) -> None:
    _workload(server, "no-cq")
    admission = {"podSetAssignments": RESERVED["podSetAssignments"]}
    refused = _status_patch(server, "no-cq", {"admission": admission}, "v1beta1")
    assert "status.admission.clusterQueue: Required value" in refused.stderr, refused.stderr
    accepted = _status_patch(server, "no-cq", {"admission": admission})
    assert accepted.returncode == 0, accepted.stderr
    v2 = json.loads(server.kubectl("get", "workloads.v1beta2.kueue.x-k8s.io", "no-cq", "-n", "default", "-o", "json").stdout)
    assert v2["status"]["admission"] == {"podSetAssignments": admission["podSetAssignments"]}
    # v1beta1's Go type always writes the field (no omitempty): a v1beta1 reader sees it empty ...
    v1 = json.loads(server.kubectl("get", "workloads.v1beta1.kueue.x-k8s.io", "no-cq", "-n", "default", "-o", "json").stdout)
    assert v1["status"]["admission"]["clusterQueue"] == ""
    # ... and a v1beta1 write that leaves the admission as it is stays possible (ratcheting)
    v1["status"]["conditions"] = [
        {"type": "Finished", "status": "True", "reason": "Succeeded", "message": "done", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    ]
    replaced = server.kubectl("replace", "--subresource=status", "-f", "-", stdin=json.dumps(v1), check=False)
    assert replaced.returncode == 0, replaced.stderr


def test_spec_required_fields_on_create_and_update(server: ServerProcess) -> None:
    cq = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "req-cq"},
        "spec": {"admissionScope": {}},
    }
    refused = server.kubectl("create", "-f", "-", stdin=json.dumps(cq), check=False)
    assert 'The ClusterQueue "req-cq" is invalid: \n* spec.admissionScope.admissionMode: Required value' in refused.stderr, refused.stderr
    cq["spec"] = {}
    server.kubectl("create", "-f", "-", stdin=json.dumps(cq))
    patch = json.dumps({"spec": {"admissionChecksStrategy": {}}})
    updated = server.kubectl("patch", "clusterqueue", "req-cq", "--type=merge", "-p", patch, check=False)
    assert "spec.admissionChecksStrategy.admissionChecks: Required value" in updated.stderr, updated.stderr
    # v1beta2 podSets need a template; v1beta1 podSets' count has an OpenAPI default: defaulted, not refused
    wl = json.loads(json.dumps(WORKLOAD_V1BETA2))
    wl["metadata"]["name"] = "no-template"
    del wl["spec"]["podSets"][0]["template"]
    refused = server.kubectl("create", "-f", "-", stdin=json.dumps(wl), check=False)
    assert "spec.podSets[0].template: Required value" in refused.stderr, refused.stderr
    wl = json.loads(json.dumps(WORKLOAD_V1BETA2))
    wl["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    wl["metadata"]["name"] = "no-count"
    del wl["spec"]["podSets"][0]["count"]
    server.kubectl("create", "-f", "-", stdin=json.dumps(wl))
