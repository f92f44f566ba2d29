"""The request path of :mod:`pykueue.apiserver.handlers` as kube-apiserver runs it for Kueue's CRDs."""

from __future__ import annotations

import json
from typing import Any

import pytest

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
