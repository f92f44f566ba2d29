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


def _cohort(name: str, quota: str) -> dict[str, Any]:
    flavor = {"name": "f", "resources": [{"name": "cpu", "nominalQuota": quota}]}
    return {"apiVersion": f"{G}/v1beta2", "kind": "Cohort", "metadata": {"name": name},
            "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [flavor]}]}}  # fmt: skip


@pytest.mark.parametrize(
    ("resource", "make", "webhook"),
    [("clusterqueues", _cluster_queue, "vclusterqueue.kb.io"), ("cohorts", _cohort, "vcohort.kb.io")],
)
def test_status_writes_of_cluster_queues_and_cohorts_are_not_sent_to_the_webhook(
    app: APIServerApp, resource: str, make: Any, webhook: str
) -> None:
    """Upstream's ``vclusterqueue.kb.io`` and ``vcohort.kb.io`` rules name ``clusterqueues`` and
    ``cohorts`` only (``config/components/webhook/manifests.yaml``, from the ``+kubebuilder:webhook``
    markers of ``pkg/webhooks/clusterqueue_webhook.go`` and ``cohort_webhook.go``), unlike
    ``vworkload.kb.io``'s ``workloads/status``: a status write of an object the webhook would
    deny (stored before a rule or gate refused it) is stored, a spec write is denied."""
    info = app.handlers.backend.lookup(G, "v1beta2", resource)
    assert info is not None
    app.store.create(info.key(), make("legacy", "-1"))  # as stored before the webhook refused it
    live = _status(app, "GET", resource, "legacy", None)
    live["status"] = {"fairSharing": {"weightedShare": 7}}
    stored = _status(app, "PUT", resource, "legacy", live, subresource="status")
    assert stored["status"]["fairSharing"]["weightedShare"] == 7, stored
    live = _status(app, "GET", resource, "legacy", None)
    live["metadata"]["labels"] = {"touched": "yes"}
    denied = _status(app, "PUT", resource, "legacy", live)
    assert (denied["code"], denied["message"].split(":")[0]) == (403, f'admission webhook "{webhook}" denied the request')


def _v1beta1(obj: dict[str, Any]) -> dict[str, Any]:
    return {**copy.deepcopy(obj), "apiVersion": f"{G}/v1beta1"}


_WL = {"apiVersion": f"{G}/v1beta2", "kind": "Workload", "metadata": {"name": "w", "namespace": "default"},
       "spec": {"podSets": [{"name": "main", "count": 1,
                             "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}]}}  # fmt: skip


def _wl_with(path: str, value: Any) -> dict[str, Any]:
    wl = copy.deepcopy(_WL)
    node = wl
    *parents, last = path.split(".")
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    node[last] = value
    return wl


V1BETA2_ONLY_BOUNDS = [
    pytest.param(
        "admissionchecks",
        {"apiVersion": f"{G}/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": "ac"},
         "spec": {"controllerName": ""}},
        "spec.controllerName: Invalid value: \"\": spec.controllerName in body should be at least 1 chars long",
        id="AdmissionCheck controllerName minLength",
    ),
    pytest.param(
        "clusterqueues",
        {"apiVersion": f"{G}/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "checked"},
         "spec": {"admissionChecksStrategy": {"admissionChecks": []}}},
        "spec.admissionChecksStrategy.admissionChecks in body should have at least 1 items",
        id="ClusterQueue admissionChecksStrategy minItems",
    ),
    pytest.param(
        "workloads",
        _wl_with("spec.podSets.0.topologyRequest", {"required": "x" * 64}),
        "spec.podSets[0].topologyRequest.required: Too long: may not be more than 63 bytes",
        id="Workload topologyRequest.required maxLength",
    ),
    pytest.param(
        "workloadpriorityclasses",
        {"apiVersion": f"{G}/v1beta2", "kind": "WorkloadPriorityClass", "metadata": {"name": "p"}, "value": 1,
         "description": "x" * 2049},
        "description: Too long: may not be more than 2048 bytes",
        id="WorkloadPriorityClass description maxLength",
    ),
]


@pytest.mark.parametrize(("resource", "obj", "v1beta2_error"), V1BETA2_ONLY_BOUNDS)
def test_a_v1beta1_write_is_checked_against_the_v1beta1_schema(
    app: APIServerApp, resource: str, obj: dict[str, Any], v1beta2_error: str
) -> None:
    """kube-apiserver validates a custom resource in the version it is written in (one
    ``customResourceStrategy`` per served version in apiextensions-apiserver): bounds only
    v1beta2's schema has refuse a v1beta2 write and not the same object written as v1beta1."""
    namespace = "default" if resource == "workloads" else None
    refused = _status(app, "POST", resource, None, obj, namespace=namespace)
    assert (refused["code"], refused["reason"]) == (422, "Invalid")
    assert v1beta2_error in refused["message"]
    req = APIRequest("POST", G, "v1beta1", resource, namespace=namespace, body=json.dumps(_v1beta1(obj)).encode(),
                     content_type="application/json", query={})  # fmt: skip
    assert app.handlers.handle(req).status == 201


def _v1beta1_answer(app: APIServerApp, method: str, resource: str, name: str | None, body: Any,
                    subresource: str | None = None, namespace: str | None = None) -> dict[str, Any]:  # fmt: skip
    req = APIRequest(method, G, "v1beta1", resource, namespace=namespace, name=name, subresource=subresource,
                     body=json.dumps(body).encode(), content_type="application/json", query={})  # fmt: skip
    try:
        return dict(json.loads(app.handlers.handle(req).body))
    except StatusError as err:
        return err.status()


def test_v1beta1_rules_apply_at_v1beta1_paths(app: APIServerApp) -> None:
    """v1beta1's own schema and CEL rules, with v1beta1's field names: ``spec.cohort``'s pattern and
    the Workload's ``priority should not be nil when priorityClassName is set`` (v1beta2's rule
    is on ``priorityClassRef``, which a v1beta1 ``priorityClassName`` without a source does not
    even convert to)."""
    cq = {"apiVersion": f"{G}/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "bad"}, "spec": {"cohort": "@x"}}
    answer = _v1beta1_answer(app, "POST", "clusterqueues", None, cq)
    assert answer["details"]["causes"][0]["field"] == "spec.cohort"
    wl = _v1beta1(_WL)
    wl["spec"]["priorityClassName"] = "p"
    answer = _v1beta1_answer(app, "POST", "workloads", None, wl, namespace="default")
    assert answer["message"] == (
        'Workload.kueue.x-k8s.io "w" is invalid: spec: Invalid value: '
        "priority should not be nil when priorityClassName is set"
    )


def test_a_v1beta1_status_write_is_not_held_to_v1beta2_status_bounds(app: APIServerApp) -> None:
    """``status.conditions`` has ``maxItems: 16`` in v1beta2 only."""
    wl = _status(app, "POST", "workloads", None, _WL, namespace="default")
    conditions = [{"type": f"T{i}", "status": "True", "reason": "R", "message": "m",
                   "lastTransitionTime": "2024-01-01T00:00:00Z"} for i in range(17)]  # fmt: skip
    refused = _status(app, "PUT", "workloads", "w", {**wl, "status": {"conditions": conditions}},
                      namespace="default", subresource="status")  # fmt: skip
    assert "status.conditions: Too many: 17: must have at most 16 items" in refused["message"]
    live = _v1beta1_answer(app, "GET", "workloads", "w", None, namespace="default")
    stored = _v1beta1_answer(app, "PUT", "workloads", "w", {**live, "status": {"conditions": conditions}},
                             subresource="status", namespace="default")  # fmt: skip
    assert len(stored["status"]["conditions"]) == 17


def test_a_v1beta2_update_keeps_what_only_v1beta2_refuses_as_it_was(app: APIServerApp) -> None:
    """kube-apiserver's CRD validation ratcheting (``CRDValidationRatcheting``, on by default since
    Kubernetes 1.30) holds in the storage version too: a Workload stored through v1beta1 with 17
    ``status.conditions`` (v1beta2's ``maxItems: 16``) is still updated through v1beta2, as the
    Kueue controllers write it, while its conditions stay as they were; a write changing them is
    refused. The same for an AdmissionCheck stored with an empty ``controllerName``."""
    _status(app, "POST", "workloads", None, _WL, namespace="default")
    conditions = [{"type": f"T{i}", "status": "True", "reason": "R", "message": "m",
                   "lastTransitionTime": "2024-01-01T00:00:00Z"} for i in range(17)]  # fmt: skip
    live = _v1beta1_answer(app, "GET", "workloads", "w", None, namespace="default")
    _v1beta1_answer(app, "PUT", "workloads", "w", {**live, "status": {"conditions": conditions}},
                    subresource="status", namespace="default")  # fmt: skip
    live = _status(app, "GET", "workloads", "w", None, namespace="default")
    assert len(live["status"]["conditions"]) == 17
    live["metadata"]["labels"] = {"touched": "yes"}
    relabelled = _status(app, "PUT", "workloads", "w", live, namespace="default")
    assert relabelled.get("metadata", {}).get("labels") == {"touched": "yes"}, relabelled.get("message")
    same = _status(app, "PUT", "workloads", "w", relabelled, namespace="default", subresource="status")
    assert len(same.get("status", {}).get("conditions", [])) == 17, same.get("message")
    same["status"]["conditions"][0]["message"] = "changed"
    refused = _status(app, "PUT", "workloads", "w", same, namespace="default", subresource="status")
    assert "status.conditions: Too many: 17: must have at most 16 items" in refused["message"]

    ac = {"apiVersion": f"{G}/v1beta1", "kind": "AdmissionCheck", "metadata": {"name": "ac"},
          "spec": {"controllerName": ""}}  # fmt: skip
    assert _v1beta1_answer(app, "POST", "admissionchecks", None, ac)["metadata"]["name"] == "ac"
    live = _status(app, "GET", "admissionchecks", "ac", None)
    live["metadata"]["labels"] = {"touched": "yes"}
    relabelled = _status(app, "PUT", "admissionchecks", "ac", live)
    assert relabelled.get("metadata", {}).get("labels") == {"touched": "yes"}, relabelled.get("message")
    live = _status(app, "GET", "workloads", "w", None, namespace="default")
    live["status"]["conditions"].reverse()  # a listType=map list: its items correlate by their type
    reordered = _status(app, "PUT", "workloads", "w", live, namespace="default", subresource="status")
    assert reordered.get("status", {}).get("conditions", [{}])[0].get("type") == "T16", reordered.get("message")


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_an_unchanged_atomic_list_keeps_what_its_crd_now_refuses(app: APIServerApp, version: str) -> None:
    """Ratcheting pairs an atomic list's items with nothing (apiextensions-apiserver's
    ``correlateOldValueForChildAtNewIndex``), so an error inside one is the list's, and the
    list is compared whole (``CorrelatedObject.CachedDeepEqual``): a ClusterQueue stored with a
    flavor name its CRD refuses (``resourceGroups`` is ``listType: atomic``) may be updated
    while the list stays as it was, whichever version the update is written in, and not once
    the list changes. kube-apiserver v1.35.3 with upstream's CRD, the ClusterQueue created
    under a CRD without the pattern: the label and the replace pass, a create is refused."""
    cq = _cluster_queue("legacy", "1")
    cq["spec"]["resourceGroups"][0]["flavors"][0]["name"] = "@f"
    info = app.handlers.backend.lookup(G, "v1beta2", "clusterqueues")
    assert info is not None
    app.store.create(info.key(), cq)  # as stored before a rule refused it
    if version == "v1beta1":
        live = _v1beta1_answer(app, "GET", "clusterqueues", "legacy", None)
        live["metadata"]["labels"] = {"touched": "yes"}
        answer = _v1beta1_answer(app, "PUT", "clusterqueues", "legacy", live)
    else:
        live = _status(app, "GET", "clusterqueues", "legacy", None)
        live["metadata"]["labels"] = {"touched": "yes"}
        answer = _status(app, "PUT", "clusterqueues", "legacy", live)
    assert answer.get("metadata", {}).get("labels") == {"touched": "yes"}, answer
    changed = _status(app, "GET", "clusterqueues", "legacy", None)
    changed["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "2"
    answer = _status(app, "PUT", "clusterqueues", "legacy", changed)
    assert (answer.get("code"), answer.get("reason")) == (422, "Invalid"), answer
    assert answer["details"]["causes"][0]["field"] == "spec.resourceGroups[0].flavors[0].name"
