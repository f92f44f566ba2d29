"""Kueue's validating webhooks deny every write path as kube-apiserver reports a webhook's denial.

controller-runtime answers a webhook's ``field.ErrorList.ToAggregate()`` with ``admission.Denied``
(403, reason Forbidden); kube-apiserver's ``webhookerrors.ToStatusErr`` prefixes the message with
``admission webhook "<name>" denied the request: `` and sends no details. The webhooks are
registered for CREATE and UPDATE, so a create, a replace, each kind of patch, a server-side
apply and (``vworkload.kb.io`` lists ``workloads/status``) a Workload's status writes all get
that answer; what the CRD's own rules refuse stays ``422 Invalid`` with its causes.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from pykueue.api.feature_gates import FeatureGates
from pykueue.apiserver.app import APIServerApp
from pykueue.apiserver.handlers import APIRequest
from pykueue.kube.status import StatusError
from pykueue.store import Store

G = "kueue.x-k8s.io"
MERGE, JSON_PATCH, APPLY = (
    "application/merge-patch+json",
    "application/json-patch+json",
    "application/apply-patch+yaml",
)
QUOTA = "/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota"
CQ_DENIAL = (
    'admission webhook "vclusterqueue.kb.io" denied the request: spec.resourceGroups[0].flavors[0]'
    '.resources[0].nominalQuota: Invalid value: "-1": must be greater than or equal to 0'
)
WL_DENIAL = (
    'admission webhook "vworkload.kb.io" denied the request: status.reclaimablePods[main].count: '
    "Invalid value: 5: should be less or equal to 2"
)


def _status(
    app: APIServerApp, method: str, resource: str, name: str | None, body: Any, ctype: str = "application/json",
    *, namespace: str | None = None, subresource: str | None = None, dry_run: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """The Status the request is answered with (or the object, for a success)."""
    query = {"fieldManager": ["test"], "force": ["true"]} if ctype == APPLY else {}
    if dry_run:
        query["dryRun"] = ["All"]
    req = APIRequest(method, G, "v1beta2", resource, namespace=namespace, name=name, subresource=subresource,
                     body=json.dumps(body).encode(), content_type=ctype, query=query)  # fmt: skip
    try:
        resp = app.handlers.handle(req)
    except StatusError as err:
        return err.status()
    result: dict[str, Any] = json.loads(resp.body)
    return result


def _cluster_queue(name: str, quota: str) -> dict[str, Any]:
    flavor = {"name": "f", "resources": [{"name": "cpu", "nominalQuota": quota}]}
    return {"apiVersion": f"{G}/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [flavor]}]}}  # fmt: skip


def _forbidden(message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": "Forbidden", "code": 403}  # fmt: skip


@pytest.fixture
def app() -> APIServerApp:
    app = APIServerApp(Store(None))
    app.bootstrap()
    assert _status(app, "POST", "clusterqueues", None, _cluster_queue("cq", "1"))["kind"] == "ClusterQueue"
    return app


@pytest.mark.parametrize(
    "write", ["create", "dry-run create", "replace", "merge", "json", "apply", "apply create"]
)
def test_a_cluster_queue_denial_is_forbidden_on_every_write(app: APIServerApp, write: str) -> None:
    bad = _cluster_queue("cq", "-1")
    live = _status(app, "GET", "clusterqueues", "cq", None)
    replaced = copy.deepcopy(live)
    replaced["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "-1"
    requests = {
        "create": ("POST", None, _cluster_queue("new", "-1"), "application/json"),
        "replace": ("PUT", "cq", replaced, "application/json"),
        "merge": ("PATCH", "cq", {"spec": bad["spec"]}, MERGE),
        "json": ("PATCH", "cq", [{"op": "replace", "path": QUOTA, "value": "-1"}], JSON_PATCH),
        "apply": ("PATCH", "cq", bad, APPLY),
        "apply create": ("PATCH", "new", _cluster_queue("new", "-1"), APPLY),
    }
    method, name, body, ctype = requests[write.removeprefix("dry-run ")]
    answer = _status(app, method, "clusterqueues", name, body, ctype, dry_run=write.startswith("dry-run"))
    assert answer == _forbidden(CQ_DENIAL)
    assert (
        _status(app, "GET", "clusterqueues", "cq", None)["metadata"]["resourceVersion"]
        == (live["metadata"]["resourceVersion"])
    )


def test_a_crd_rule_stays_invalid_on_update(app: APIServerApp) -> None:
    status = _status(app, "PATCH", "clusterqueues", "cq", [{"op": "replace", "path": "/spec/resourceGroups/0/flavors/0/name",
                                                           "value": "@f"}], JSON_PATCH)  # fmt: skip
    assert (status["code"], status["reason"]) == (422, "Invalid")
    assert status["message"].startswith('ClusterQueue.kueue.x-k8s.io "cq" is invalid: ')
    assert status["details"]["causes"][0]["field"] == "spec.resourceGroups[0].flavors[0].name"


@pytest.mark.parametrize("ctype", ["application/json", MERGE, APPLY])
def test_a_workload_status_write_is_denied_by_the_workload_webhook(app: APIServerApp, ctype: str) -> None:
    pod_set = {
        "name": "main",
        "count": 2,
        "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}},
    }
    wl = {"apiVersion": f"{G}/v1beta2", "kind": "Workload", "metadata": {"name": "w", "namespace": "default"},
          "spec": {"queueName": "q", "podSets": [pod_set]}}  # fmt: skip
    assert _status(app, "POST", "workloads", None, wl, namespace="default")["kind"] == "Workload"
    status = {"reclaimablePods": [{"name": "main", "count": 5}]}
    if ctype == "application/json":
        body = {**_status(app, "GET", "workloads", "w", None, namespace="default"), "status": status}
    elif ctype == MERGE:
        body = {"status": status}
    else:
        body = {
            "apiVersion": wl["apiVersion"],
            "kind": "Workload",
            "metadata": wl["metadata"],
            "status": status,
        }
    answer = _status(app, "PUT" if ctype == "application/json" else "PATCH", "workloads", "w", body, ctype,
                     namespace="default", subresource="status")  # fmt: skip
    assert answer == _forbidden(WL_DENIAL)


def test_the_webhooks_read_the_servers_feature_gates() -> None:
    """Upstream's webhooks read the controller manager's gates (its Configuration's
    ``featureGates``): ``validateConcurrentAdmissionPolicy`` refuses a StrictFIFO policy only
    where ``ConcurrentAdmission`` is on, and ``validateTASSliceSize`` runs only where
    ``TASValidateWorkloadSliceSize`` is."""
    cq = _cluster_queue("strict", "1")
    cq["spec"] |= {
        "queueingStrategy": "StrictFIFO",
        "concurrentAdmissionPolicy": {"migration": {"mode": "TryPreferredFlavors"}},
    }
    pod_set = {"name": "main", "count": 1, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}},
               "topologyRequest": {"podSetSliceSize": 1}}  # fmt: skip
    wl = {"apiVersion": f"{G}/v1beta2", "kind": "Workload", "metadata": {"name": "sliced", "namespace": "default"},
          "spec": {"queueName": "q", "podSets": [pod_set]}}  # fmt: skip
    answers = {}
    for gates in ({}, {"ConcurrentAdmission": True, "TASValidateWorkloadSliceSize": False}):
        app = APIServerApp(Store(None), gates=FeatureGates(gates))
        app.bootstrap()
        answers[bool(gates)] = (
            _status(app, "POST", "clusterqueues", None, cq).get("code", 201),
            _status(app, "POST", "workloads", None, wl, namespace="default").get("code", 201),
        )
    assert answers == {False: (201, 403), True: (403, 201)}


def test_the_job_webhook_reads_the_servers_feature_gates() -> None:
    """``ValidateJobOnCreate`` checks the ``admission-gated-by`` format only under AdmissionGatedBy,
    read from the server's gates as Kueue's other webhooks are."""
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "j", "namespace": "default", "labels": {f"{G}/queue-name": "q"},
                        "annotations": {f"{G}/admission-gated-by": "a.io/x,a.io/x"}},
           "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}}  # fmt: skip
    answers = {}
    for gate in (True, False):
        app = APIServerApp(Store(None), gates=FeatureGates({"AdmissionGatedBy": gate}))
        app.bootstrap()
        req = APIRequest("POST", "batch", "v1", "jobs", namespace="default", body=json.dumps(job).encode(),
                         content_type="application/json", query={})  # fmt: skip
        try:
            app.handlers.handle(req)
            answers[gate] = 201
        except StatusError as err:
            answers[gate] = err.code
    assert answers == {True: 403, False: 201}
