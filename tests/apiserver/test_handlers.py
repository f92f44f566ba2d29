"""The request path of :mod:`pykueue.apiserver.handlers` as kube-apiserver runs it for Kueue's CRDs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pykueue.api.feature_gates import FeatureGates
from pykueue.apiserver.app import APIServerApp
from pykueue.apiserver.handlers import APIRequest
from pykueue.kube.status import StatusError
from pykueue.store import Store

G = "kueue.x-k8s.io"


@pytest.fixture
def app() -> APIServerApp:
    app = APIServerApp(Store(None))
    app.bootstrap()
    return app


def _send(
    app: APIServerApp, method: str, resource: str, body: Any, *, name: str | None = None,
    namespace: str | None = None, subresource: str | None = None, ctype: str = "application/json",
) -> dict[str, Any]:  # fmt: skip
    req = APIRequest(method, G, "v1beta2", resource, namespace=namespace, name=name, subresource=subresource,
                     body=json.dumps(body).encode(), content_type=ctype)  # fmt: skip
    try:
        resp = app.handlers.handle(req)
    except StatusError as err:
        return err.status()
    result: dict[str, Any] = json.loads(resp.body)
    return result


def _causes(status: dict[str, Any]) -> list[str]:
    return [f"{c.get('field', '')}: {c['message']}" for c in status["details"]["causes"]]


def test_cel_rules_read_which_fields_the_request_wrote(app: APIServerApp) -> None:
    """A CEL rule that selects an optional field without ``has()`` fails to evaluate when the
    object lacks it, and kube-apiserver reports that (``no such key``); a field written empty is
    there, and the rule is evaluated (kube-apiserver v1.35 with upstream's CRDs, both answers).
    The server's typed model keeps no empty field, so the rules read the request as written."""
    spec: dict[str, Any] = {"topologyName": "default"}
    rf = {"apiVersion": f"{G}/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "rf"}, "spec": spec}
    message = "at least one nodeLabel is required when topology is set"
    assert _send(app, "POST", "resourceflavors", rf)["message"] == (
        f'ResourceFlavor.kueue.x-k8s.io "rf" is invalid: spec: Invalid value: "object": no such key: '
        f"nodeLabels evaluating rule: {message}"
    )
    spec["nodeLabels"] = {}
    assert _send(app, "POST", "resourceflavors", rf)["message"] == (
        f'ResourceFlavor.kueue.x-k8s.io "rf" is invalid: spec: Invalid value: {message}'
    )


def test_a_status_write_without_pod_set_assignments(app: APIServerApp) -> None:
    """The Workload's root rule sizes ``status.admission.podSetAssignments``: absent, it cannot be
    evaluated; written empty, it is false (kube-apiserver v1.35 with upstream's CRD)."""
    template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}
    wl = {"apiVersion": f"{G}/v1beta2", "kind": "Workload", "metadata": {"name": "w", "namespace": "default"},
          "spec": {"queueName": "a", "podSets": [{"name": "main", "count": 1, "template": template}]}}  # fmt: skip
    assert _send(app, "POST", "workloads", wl, namespace="default")["kind"] == "Workload"
    reserved = {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "m",
                "lastTransitionTime": "2026-01-01T00:00:00Z"}  # fmt: skip
    status: dict[str, Any] = {"conditions": [reserved], "admission": {"clusterQueue": "cq"}}
    patch = {"status": status}
    merge = "application/merge-patch+json"
    rule = "podSetAssignments must have the same number of podSets as the spec"
    answer = _send(app, "PATCH", "workloads", patch, name="w", namespace="default", subresource="status", ctype=merge)
    assert _causes(answer) == [f'<nil>: Invalid value: "object": no such key: podSetAssignments evaluating rule: {rule}']
    status["admission"]["podSetAssignments"] = []
    answer = _send(app, "PATCH", "workloads", patch, name="w", namespace="default", subresource="status", ctype=merge)
    assert _causes(answer) == [f"<nil>: Invalid value: {rule}"]


QUOTA_PATH = "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"
CEL_SKIPPED = (
    "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the "
    "existing errors to complete validation"
)


def _quota(kind: str, name: str, quota: Any) -> dict[str, Any]:
    flavor = {"name": "f", "resources": [{"name": "cpu", "nominalQuota": quota}]}
    return {"apiVersion": f"{G}/v1beta2", "kind": kind, "metadata": {"name": name},
            "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [flavor]}]}}  # fmt: skip


@pytest.mark.parametrize(("quota", "got"), [(0.5, "number"), (True, "boolean"), ([1], "array"), ({}, "object")])
def test_a_quantity_of_the_wrong_type_reads_as_kube_openapi_reports_it(
    app: APIServerApp, quota: Any, got: str
) -> None:
    """An int-or-string quantity (``anyOf: [{type: integer}, {type: string}]``) of another JSON
    type: kube-apiserver v1.35 with upstream's CRDs lists the type error, kube-openapi's
    ``anyOf`` error (no field path, value ``""``) and the first member's type error, then skips
    the CEL rules (a type error is blocking). A fractional JSON number is not an integer."""
    status = _send(app, "POST", "cohorts", _quota("Cohort", "co", quota))
    assert status["reason"] == "Invalid"
    assert status["message"] == (
        'Cohort.kueue.x-k8s.io "co" is invalid: ['
        f'{QUOTA_PATH}: Invalid value: "{got}": {QUOTA_PATH} in body must be of type integer,string: "{got}", '
        f'<nil>: Invalid value: "": "{QUOTA_PATH}" must validate at least one schema (anyOf), '
        f'{QUOTA_PATH}: Invalid value: "{got}": {QUOTA_PATH} in body must be of type integer: "{got}", '
        "<nil>: Invalid value: null: some validation rules were not checked because the object was "
        "invalid; correct the existing errors to complete validation]"
    )


def test_a_wrong_type_is_reported_with_the_other_openapi_errors(app: APIServerApp) -> None:
    """kube-apiserver finds a wrong type in the same OpenAPI pass as the other errors (its order
    across properties follows Go's map order, so varies), checks the enum of a mistyped value
    too, then skips the CEL rules."""
    lq = {"apiVersion": f"{G}/v1beta2", "kind": "LocalQueue", "metadata": {"name": "Bad_lq", "namespace": "default"},
          "spec": {"clusterQueue": 5, "stopPolicy": True}}  # fmt: skip
    status = _send(app, "POST", "localqueues", lq, namespace="default")
    assert sorted(_causes(status)) == sorted(
        [
            "metadata.name: Invalid value: \"Bad_lq\": a lowercase RFC 1123 subdomain must consist of lower case "
            "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
            "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
            "[a-z0-9])?)*')",
            'spec.clusterQueue: Invalid value: "integer": spec.clusterQueue in body must be of type string: "integer"',
            'spec.stopPolicy: Invalid value: "boolean": spec.stopPolicy in body must be of type string: "boolean"',
            'spec.stopPolicy: Unsupported value: true: supported values: "None", "Hold", "HoldAndDrain"',
            CEL_SKIPPED,
        ]
    )


def _workload(name: str, pod_set: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": f"{G}/v1beta2", "kind": "Workload", "metadata": {"name": name, "namespace": "default"},
            "spec": {"queueName": "q", "podSets": [pod_set]}}  # fmt: skip


def test_kueues_defaulting_webhook_runs_before_the_crd_validation_with_the_servers_gates() -> None:
    """kube-apiserver runs the mutating webhooks before the CRD's schema and CEL rules: with
    ``PartialAdmission`` off, ``mworkload.kb.io`` (upstream ``WorkloadWebhook.Default``) drops
    ``minCount`` first, so ``minCount <= count`` is never checked and the Workload is created
    without it; and since the webhook changed it, its patch carries the Go round trip's
    canonical quantities. With the gate on, ``Default`` changes nothing and controller-runtime
    answers no patch: the quantities stay as written."""
    template = {"spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1000m"}}}]}}
    pod_set = {"name": "main", "count": 1, "minCount": 2, "template": template}
    off = APIServerApp(Store(None), gates=FeatureGates({"PartialAdmission": False}))
    off.bootstrap()
    created = _send(off, "POST", "workloads", _workload("w", pod_set), namespace="default")
    assert created["spec"]["podSets"][0] == {
        "name": "main", "count": 1,
        "template": {"spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]}},
    }  # fmt: skip
    on = APIServerApp(Store(None))
    on.bootstrap()
    valid = {**pod_set, "count": 3}
    created = _send(on, "POST", "workloads", _workload("w", valid), namespace="default")
    assert created["spec"]["podSets"][0] == valid


def test_the_finalizer_kueues_webhook_adds_belongs_to_no_manager(app: APIServerApp) -> None:
    """kube-apiserver records managedFields before the mutating webhooks run, so the
    ``resource-in-use`` finalizer that ``mresourceflavor.kb.io`` adds is owned by no manager."""
    rf = {"apiVersion": f"{G}/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "rf"},
          "spec": {"nodeLabels": {"a": "b"}}}  # fmt: skip
    created = _send(app, "POST", "resourceflavors", rf)
    assert created["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]
    [entry] = created["metadata"]["managedFields"]
    assert entry["fieldsV1"] == {"f:spec": {".": {}, "f:nodeLabels": {}}}


def test_a_schema_driven_kind_is_validated_in_the_version_written(app: APIServerApp) -> None:
    """kube-apiserver validates a custom resource in the version it was written in: v1beta1's
    MultiKueueConfig has ``clusters`` as a ``listType: set`` and no CEL rule, v1beta2's an
    atomic list with a ``must be unique`` rule (kube-apiserver v1.35 with upstream's CRDs)."""
    for version, answer in (
        ("v1beta1", 'spec.clusters[1]: Duplicate value: "a"'),
        ("v1beta2", "spec.clusters: Invalid value: must be unique"),
    ):
        mkc = {"apiVersion": f"{G}/{version}", "kind": "MultiKueueConfig", "metadata": {"name": "m"},
               "spec": {"clusters": ["a", "a"]}}  # fmt: skip
        req = APIRequest("POST", G, version, "multikueueconfigs", body=json.dumps(mkc).encode(),
                         content_type="application/json")  # fmt: skip
        with pytest.raises(StatusError) as err:
            app.handlers.handle(req)
        assert err.value.message == f'MultiKueueConfig.kueue.x-k8s.io "m" is invalid: {answer}'


def _stored(app: APIServerApp, plural: str, kind: str, name: str, spec: dict[str, Any]) -> None:
    """An object stored as it is (as one stored before its CRD's rules were tightened)."""
    info = app.handlers.backend.lookup(G, "v1beta2", plural)
    assert info is not None
    app.store.create(info.key(), {"apiVersion": f"{G}/v1beta2", "kind": kind, "metadata": {"name": name}, "spec": spec})


def _patch(app: APIServerApp, plural: str, name: str, body: Any, ctype: str = "application/merge-patch+json") -> Any:
    req = APIRequest("PATCH", G, "v1beta2", plural, name=name, body=json.dumps(body).encode(), content_type=ctype)
    try:
        return app.handlers.handle(req).warnings
    except StatusError as err:
        return err.message


TOLERATION_RULE = "spec.tolerations: Invalid value: supported toleration values: 'Equal'(default), 'Exists'"
TAINT_RULE = "spec.nodeTaints: Invalid value: supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'"


def test_cel_rules_ratchet_on_values_an_update_leaves_as_they_were(app: APIServerApp) -> None:
    """kube-apiserver's CEL ratcheting (CRDValidationRatcheting): a rule without ``oldSelf`` that
    is false on a node the update left unchanged gives a warning, not an error; an atomic list
    is compared whole. A rule that cannot be evaluated is never ratcheted. Answers of
    kube-apiserver v1.35.3 with upstream's CRDs, the objects stored before the rules were added."""
    _stored(app, "resourceflavors", "ResourceFlavor", "rf", {
        "nodeLabels": {"a": "b"}, "tolerations": [{"key": "a", "operator": "Bad"}],
        "nodeTaints": [{"key": "k", "effect": "Bad"}],
    })  # fmt: skip
    assert _patch(app, "resourceflavors", "rf", {"metadata": {"labels": {"x": "y"}}}) == [TAINT_RULE, TOLERATION_RULE]
    assert _patch(app, "resourceflavors", "rf", {"spec": {"nodeLabels": {"a": "c"}}}) == [TAINT_RULE, TOLERATION_RULE]
    changed = {"spec": {"tolerations": [{"key": "a", "operator": "Bad2"}]}}
    assert _patch(app, "resourceflavors", "rf", changed) == (
        f'ResourceFlavor.kueue.x-k8s.io "rf" is invalid: {TOLERATION_RULE}'
    )
    _stored(app, "resourceflavors", "ResourceFlavor", "topo", {"topologyName": "t"})
    assert _patch(app, "resourceflavors", "topo", {"metadata": {"labels": {"x": "y"}}}) == (
        'ResourceFlavor.kueue.x-k8s.io "topo" is invalid: spec: Invalid value: "object": no such key: nodeLabels '
        "evaluating rule: at least one nodeLabel is required when topology is set"
    )
    _stored(app, "clusterqueues", "ClusterQueue", "cq", {"resourceGroups": [{"coveredResources": ["cpu", "memory"],
            "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": "1"}]}]}]})  # fmt: skip
    assert _patch(app, "clusterqueues", "cq", {"spec": {"cohortName": "co"}}) == [
        "spec.resourceGroups[0]: Invalid value: flavors must have the same number of resources as the coveredResources"
    ]


def test_openapi_errors_ratchet_through_an_unchanged_atomic_list(app: APIServerApp) -> None:
    """The node holding an atomic list correlates with the old one, compared whole: nine
    ``nodeTaints`` (``maxItems: 8``) stay while they are left as they were, and so does a
    ``topologyName`` its pattern refuses; adding a taint is refused (kube-apiserver v1.35.3)."""
    taints = [{"key": key, "effect": "NoSchedule"} for key in "abcdefghi"]
    _stored(app, "resourceflavors", "ResourceFlavor", "rf",
            {"nodeLabels": {"a": "b"}, "topologyName": "Bad_Name", "nodeTaints": taints})  # fmt: skip
    assert "invalid" not in str(_patch(app, "resourceflavors", "rf", {"metadata": {"labels": {"x": "y"}}}))
    assert "invalid" not in str(_patch(app, "resourceflavors", "rf", {"spec": {"nodeLabels": {"a": "c"}}}))
    add = [{"op": "add", "path": "/spec/nodeTaints/-", "value": {"key": "z", "effect": "NoSchedule"}}]
    assert _patch(app, "resourceflavors", "rf", add, "application/json-patch+json") == (
        'ResourceFlavor.kueue.x-k8s.io "rf" is invalid: [spec.nodeTaints: Too many: 10: must have at most 8 items, '
        "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; "
        "correct the existing errors to complete validation]"
    )


def test_a_failed_request_keeps_its_warnings(app: APIServerApp) -> None:
    """kube-apiserver sends a request's warnings with its failure too: a v1beta1 write of a
    Topology its rules refuse answers the deprecation warning with the 422 (kube-apiserver
    v1.35.3 with upstream's CRDs), as a ratcheted rule's warning comes with another's error."""
    topology = {"apiVersion": f"{G}/v1beta1", "kind": "Topology", "metadata": {"name": "t"},
                "spec": {"levels": [{"nodeLabel": "a"}, {"nodeLabel": "a"}]}}  # fmt: skip
    req = APIRequest("POST", G, "v1beta1", "topologies", body=json.dumps(topology).encode(),
                     content_type="application/json")  # fmt: skip
    with pytest.raises(StatusError) as err:
        app.handlers.handle(req)
    assert err.value.code == 422
    assert err.value.warnings == ["This version is deprecated. Use v1beta2 instead."]
    _stored(app, "resourceflavors", "ResourceFlavor", "rf", {
        "nodeLabels": {"a": "b"}, "tolerations": [{"key": "a", "operator": "Bad"}],
        "nodeTaints": [{"key": "k", "effect": "Bad"}],
    })  # fmt: skip
    req = APIRequest("PATCH", G, "v1beta2", "resourceflavors", name="rf", content_type="application/merge-patch+json",
                     body=json.dumps({"spec": {"tolerations": [{"key": "a", "operator": "Bad2"}]}}).encode())  # fmt: skip
    with pytest.raises(StatusError) as err:
        app.handlers.handle(req)
    assert err.value.warnings == [TAINT_RULE]


def test_a_built_in_kind_stores_its_quantities_as_its_go_type_writes_them(app: APIServerApp) -> None:
    """kube-apiserver decodes a Job or a Pod into its Go type: ``resource.Quantity`` takes any
    JSON number, and what is stored is each quantity's canonical form (kube-apiserver v1.35.3:
    ``1000m`` is ``1``, ``0.5Gi`` is ``512Mi``, the number ``2.5`` is ``2500m``). A Workload the
    Job reconciler builds from the stored Job so gets canonical quantities, as upstream's does."""
    container = {"name": "c", "image": "i", "resources": {"requests": {"cpu": "1000m", "memory": "0.5Gi"},
                                                         "limits": {"cpu": 2.5}}}  # fmt: skip
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "default"},
           "spec": {"suspend": True, "template": {"spec": {"restartPolicy": "Never", "containers": [container]}}}}  # fmt: skip
    req = APIRequest("POST", "batch", "v1", "jobs", namespace="default", body=json.dumps(job).encode(),
                     content_type="application/json")  # fmt: skip
    created = json.loads(app.handlers.handle(req).body)
    assert created["spec"]["template"]["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "1", "memory": "512Mi"}, "limits": {"cpu": "2500m"}
    }  # fmt: skip


def test_a_schema_driven_kind_ratchets_its_openapi_errors(app: APIServerApp) -> None:
    """A Topology stored with a node label its pattern refuses can be labeled while its levels
    stay as they were, and not changed (kube-apiserver v1.35.3 with upstream's CRD, the Topology
    created under a CRD without the pattern)."""
    info = app.handlers.backend.lookup(G, "v1beta2", "topologies")
    assert info is not None
    app.store.create(info.key(), {"apiVersion": f"{G}/v1beta2", "kind": "Topology", "metadata": {"name": "t"},
                                  "spec": {"levels": [{"nodeLabel": "Bad Label"}]}})  # fmt: skip
    assert "invalid" not in str(_patch(app, "topologies", "t", {"metadata": {"labels": {"x": "y"}}}))
    changed = _patch(app, "topologies", "t", {"spec": {"levels": [{"nodeLabel": "Bad Label2"}]}})
    assert 'spec.levels[0].nodeLabel: Invalid value: "Bad Label2"' in changed
