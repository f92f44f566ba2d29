"""Namespace termination through the request path: Terminating, content deletion, 403, finalize."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pykueue.apiserver.app import APIServerApp
from pykueue.apiserver.handlers import APIRequest
from pykueue.kube.status import StatusError
from pykueue.store import Store

G = "kueue.x-k8s.io"


def _app(store: Store | None = None) -> APIServerApp:
    app = APIServerApp(store or Store(None))
    app.bootstrap()
    return app


def _call(
    app: APIServerApp, method: str, group: str, version: str, resource: str, **kw: Any
) -> dict[str, Any]:
    body = kw.pop("body", None)
    req = APIRequest(method, group, version, resource, body=json.dumps(body).encode() if body else b"", **kw)
    if method == "PATCH":
        req.content_type = "application/merge-patch+json"
    resp = app.handlers.handle(req)
    assert resp.status < 300, resp.body
    result: dict[str, Any] = json.loads(resp.body)
    return result


def _namespace(app: APIServerApp, name: str) -> dict[str, Any]:
    return _call(app, "POST", "", "v1", "namespaces", body={"apiVersion": "v1", "kind": "Namespace",
                                                           "metadata": {"name": name}})  # fmt: skip


def _lease(name: str, generate: bool = False) -> dict[str, Any]:
    meta = {"generateName": name} if generate else {"name": name}
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta, "spec": {}}


def _held_workload(name: str) -> dict[str, Any]:
    return {"apiVersion": f"{G}/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "finalizers": ["example.com/hold"]},
            "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "containers": [{"name": "c", "image": "x"}]}}}]}}  # fmt: skip


def _get(app: APIServerApp, resource: str, name: str, **kw: Any) -> dict[str, Any] | None:
    group, version = ("", "v1") if resource == "namespaces" else (G, "v1beta2")
    try:
        return _call(app, "GET", group, version, resource, name=name, **kw)
    except StatusError as err:
        assert err.code == 404
        return None


def test_content_held_by_a_finalizer_keeps_the_namespace_terminating() -> None:
    app = _app()
    _namespace(app, "team")
    _call(app, "POST", "coordination.k8s.io", "v1", "leases", namespace="team", body=_lease("free"))
    _call(app, "POST", G, "v1beta2", "workloads", namespace="team", body=_held_workload("held"))

    deleted = _call(app, "DELETE", "", "v1", "namespaces", name="team")
    assert deleted["kind"] == "Namespace" and deleted["status"]["phase"] == "Terminating"
    assert deleted["metadata"]["deletionTimestamp"]
    ns = _get(app, "namespaces", "team")
    assert ns is not None and ns["status"]["phase"] == "Terminating"
    with pytest.raises(StatusError) as gone:
        _call(app, "GET", "coordination.k8s.io", "v1", "leases", namespace="team", name="free")
    assert gone.value.code == 404, "content without finalizers is deleted at once"
    held = _get(app, "workloads", "held", namespace="team")
    assert held is not None and held["metadata"]["deletionTimestamp"]

    # Removing the last finalizer deletes the Workload, and with it the now empty Namespace.
    _call(app, "PATCH", G, "v1beta2", "workloads", namespace="team", name="held",
          body={"metadata": {"finalizers": None}})  # fmt: skip
    assert _get(app, "workloads", "held", namespace="team") is None
    assert _get(app, "namespaces", "team") is None
    _namespace(app, "team")  # the name can be used again


def test_creates_in_a_terminating_namespace_are_forbidden() -> None:
    app = _app()
    _namespace(app, "team")
    _call(app, "POST", G, "v1beta2", "workloads", namespace="team", body=_held_workload("held"))
    _call(app, "DELETE", "", "v1", "namespaces", name="team")
    with pytest.raises(StatusError) as named:
        _call(app, "POST", "coordination.k8s.io", "v1", "leases", namespace="team", body=_lease("l"))
    status = named.value.status()
    assert (status["code"], status["reason"]) == (403, "Forbidden")
    assert status["message"] == (
        'leases.coordination.k8s.io "l" is forbidden: unable to create new content in namespace team '
        "because it is being terminated"
    )
    assert status["details"]["causes"] == [
        {"reason": "NamespaceTerminating", "message": "namespace team is being terminated",
         "field": "metadata.namespace"}
    ]  # fmt: skip
    with pytest.raises(StatusError) as generated:
        _call(app, "POST", "coordination.k8s.io", "v1", "leases", namespace="team", body=_lease("l-", True))
    assert generated.value.message == (
        "leases.coordination.k8s.io is forbidden: unable to create new content in namespace team "
        "because it is being terminated"
    )


def test_an_empty_namespace_goes_at_once_and_dry_run_keeps_it() -> None:
    app = _app()
    _namespace(app, "empty")
    _call(app, "DELETE", "", "v1", "namespaces", name="empty", query={"dryRun": ["All"]})
    ns = _get(app, "namespaces", "empty")
    assert ns is not None and ns["status"]["phase"] == "Active"
    _call(app, "DELETE", "", "v1", "namespaces", name="empty")
    assert _get(app, "namespaces", "empty") is None


def test_a_restart_finishes_an_empty_terminating_namespace(tmp_path: Any) -> None:
    path = str(tmp_path / "db.sqlite")
    app = _app(Store(path))
    _namespace(app, "team")
    _call(app, "POST", G, "v1beta2", "workloads", namespace="team", body=_held_workload("held"))
    _call(app, "DELETE", "", "v1", "namespaces", name="team")
    # The held Workload goes while nobody finalizes the namespace (as if the server died then).
    app.handlers.namespaces.close()  # type: ignore[union-attr]
    live = _get(app, "workloads", "held", namespace="team")
    assert live is not None
    live["metadata"]["finalizers"] = []
    _call(app, "PUT", G, "v1beta2", "workloads", namespace="team", name="held", body=live)
    assert _get(app, "namespaces", "team") is not None
    app.store.close()
    restarted = _app(Store(path))
    assert _get(restarted, "namespaces", "team") is None
    restarted.store.close()


def _denied_workload(name: str) -> dict[str, Any]:
    """A Workload Kueue's webhook denies (a negative request) that the CRD's rules accept."""
    wl = _held_workload(name)
    wl["metadata"].pop("finalizers")
    wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "-1"}}
    return wl


def _invalid_workload(name: str) -> dict[str, Any]:
    """A Workload the CRD's rules refuse (422)."""
    wl = _held_workload(name)
    wl["metadata"].pop("finalizers")
    wl["spec"]["queueName"] = "@invalid"
    return wl


@pytest.mark.parametrize(
    ("body", "refusal"),
    [
        (_denied_workload("w"), (403, 'admission webhook "vworkload.kb.io" denied the request: ')),
        (_invalid_workload("w"), (422, 'Workload.kueue.x-k8s.io "w" is invalid: ')),
    ],
    ids=["webhook", "crd"],
)
def test_the_namespace_is_checked_before_the_object_is_validated(
    body: dict[str, Any], refusal: tuple[int, str]
) -> None:
    """NamespaceLifecycle runs in kube-apiserver's mutating admission (``Lifecycle.Admit``), before
    the CRD's validation (422) and the validating webhooks (403): a refused object sent to a
    missing or terminating namespace gets the namespace's answer."""
    app = _app()
    with pytest.raises(StatusError) as missing:
        _call(app, "POST", G, "v1beta2", "workloads", namespace="nowhere", body=body)
    assert (missing.value.code, missing.value.message) == (404, 'namespaces "nowhere" not found')
    _namespace(app, "team")
    _call(app, "POST", G, "v1beta2", "workloads", namespace="team", body=_held_workload("held"))
    _call(app, "DELETE", "", "v1", "namespaces", name="team")
    with pytest.raises(StatusError) as terminating:
        _call(app, "POST", G, "v1beta2", "workloads", namespace="team", body=body)
    assert terminating.value.code == 403
    assert terminating.value.message == (
        'workloads.kueue.x-k8s.io "w" is forbidden: unable to create new content in namespace team '
        "because it is being terminated"
    )
    _namespace(app, "live")  # and in a namespace that exists, the object's own refusal
    with pytest.raises(StatusError) as refused:
        _call(app, "POST", G, "v1beta2", "workloads", namespace="live", body=body)
    assert refused.value.code == refusal[0] and refused.value.message.startswith(refusal[1])
