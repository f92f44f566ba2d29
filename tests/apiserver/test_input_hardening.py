"""Request bodies the decoder must refuse cleanly and names generated from a bad ``generateName``.

Through the request path (``Handlers.handle``), as the HTTP layer calls it: a malformed body is a
400 ``Status`` (never an internal error), a body without a Content-Type a 415, and
``metadata.generateName`` is validated like a name for every kind that validates names.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pykueue.apiserver.app import APIServerApp
from pykueue.apiserver.handlers import MAX_NESTING_DEPTH, APIRequest
from pykueue.kube.status import StatusError
from pykueue.store import Store

G = "kueue.x-k8s.io"
V = "v1beta2"
RF = b'{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"ResourceFlavor","metadata":{"name":"%s"}%s}'


@pytest.fixture(scope="module")
def app() -> APIServerApp:
    server = APIServerApp(Store(None))
    server.bootstrap()
    return server


def _post(app: APIServerApp, resource: str, body: bytes, content_type: str = "application/json",
          group: str = G, version: str = V, namespace: str | None = None) -> tuple[int, dict[str, Any]]:  # fmt: skip
    req = APIRequest("POST", group, version, resource, namespace=namespace, body=body)
    req.content_type = content_type
    try:
        resp = app.handlers.handle(req)
    except StatusError as err:
        return err.code, err.status()
    return resp.status, json.loads(resp.body)


def _nested(depth: int) -> bytes:
    return b'{"a":' * (depth - 1) + b"{}" + b"}" * (depth - 1)


def _rf_names(app: APIServerApp) -> set[str]:
    listed = app.handlers.handle(APIRequest("GET", G, V, "resourceflavors"))
    return {item["metadata"]["name"] for item in json.loads(listed.body)["items"]}


@pytest.mark.parametrize(
    "body",
    [
        RF % (b"bad-utf8-\xff", b""),
        RF % (b"surrogate", b',"spec":{"nodeLabels":{"a":"\xed\xa0\x80"}}'),
        RF % (b"deep-spec", b',"spec":' + _nested(1000)),
        RF % (b"deep-labels", b',"metadata2":' + _nested(MAX_NESTING_DEPTH + 1)),
        _nested(1000),
        b"[" * 5000 + b"]" * 5000,
        b'{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"ResourceFlavor","metadata":{"name":"x"}',
    ],
    ids=["invalid-utf8-name", "utf8-surrogate", "nested-1000", "nested-over-limit", "bare-1000",
         "arrays-5000", "truncated"],
)
def test_malformed_json_is_a_400_status_and_stores_nothing(app: APIServerApp, body: bytes) -> None:
    before = _rf_names(app)
    code, status = _post(app, "resourceflavors", body)
    assert code == 400, status
    assert status["kind"] == "Status" and status["reason"] == "BadRequest"
    assert status["message"].startswith("error decoding JSON: ")
    assert _rf_names(app) == before


def test_deep_nesting_is_refused_in_yaml_and_patches_too(app: APIServerApp) -> None:
    deep_yaml = "a:\n" + "".join("  " * i + "b:\n" for i in range(1, MAX_NESTING_DEPTH + 2)) + "  " * (
        MAX_NESTING_DEPTH + 2
    ) + "c: 1\n"
    code, status = _post(app, "resourceflavors", deep_yaml.encode(), "application/yaml")
    assert code == 400 and "exceeded max depth" in status["message"], status
    assert _post(app, "resourceflavors", RF % (b"patched", b""))[0] == 201
    req = APIRequest("PATCH", G, V, "resourceflavors", name="patched", body=_nested(2000))
    req.content_type = "application/merge-patch+json"
    with pytest.raises(StatusError) as err:
        app.handlers.handle(req)
    assert err.value.code == 400 and "exceeded max depth" in err.value.status()["message"]


def test_nesting_within_the_limit_is_decoded(app: APIServerApp) -> None:
    # Unknown fields are pruned after decoding: a deep but legal body creates the object.
    code, status = _post(app, "resourceflavors", RF % (b"deep-ok", b',"spec":{"x":' + _nested(MAX_NESTING_DEPTH - 3) + b"}"))
    assert code == 201, status


@pytest.mark.parametrize("content_type", ["", "text/plain", "text/plain;charset=UTF-8",
                                          "application/x-www-form-urlencoded", "multipart/form-data"])  # fmt: skip
def test_a_body_without_a_kubernetes_media_type_is_415(app: APIServerApp, content_type: str) -> None:
    code, status = _post(app, "resourceflavors", RF % (b"no-type", b""), content_type)
    assert code == 415, status
    assert status["reason"] == "UnsupportedMediaType"
    assert status["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/yaml, application/vnd.kubernetes.protobuf"
    )
    assert "no-type" not in _rf_names(app)


BAD_GENERATE_NAMES = ["Bad Name", "a..b", "nul\u0000", "UPPER", "dots.."]


@pytest.mark.parametrize("generate", BAD_GENERATE_NAMES)
@pytest.mark.parametrize(
    ("group", "version", "resource", "kind", "extra", "namespace"),
    [
        ("", "v1", "namespaces", "Namespace", {}, None),
        (G, V, "clusterqueues", "ClusterQueue", {"spec": {}}, None),
        (G, V, "localqueues", "LocalQueue", {"spec": {"clusterQueue": "cq"}}, "default"),
        (G, V, "resourceflavors", "ResourceFlavor", {}, None),
        (G, V, "cohorts", "Cohort", {}, None),
        (G, V, "workloadpriorityclasses", "WorkloadPriorityClass", {"value": 1}, None),
        (G, V, "admissionchecks", "AdmissionCheck", {"spec": {"controllerName": "x"}}, None),
        (G, V, "topologies", "Topology", {"spec": {"levels": [{"nodeLabel": "a"}]}}, None),
        ("batch", "v1", "jobs", "Job", {}, "default"),
        ("coordination.k8s.io", "v1", "leases", "Lease", {"spec": {}}, "default"),
    ],
)
def test_bad_generate_name_is_refused_like_a_bad_name(
    app: APIServerApp, group: str, version: str, resource: str, kind: str, extra: dict[str, Any],
    namespace: str | None, generate: str,
) -> None:  # fmt: skip
    api_version = f"{group}/{version}" if group else version
    body = {"apiVersion": api_version, "kind": kind, "metadata": {"generateName": generate}, **extra}
    code, status = _post(app, resource, json.dumps(body).encode(), group=group, version=version,
                         namespace=namespace)  # fmt: skip
    assert code == 422, status
    assert status["reason"] == "Invalid"
    shown = json.dumps(generate)  # Go's %q: the NUL byte is shown escaped
    assert f"metadata.generateName: Invalid value: {shown}: a lowercase RFC 1123 " in status["message"]
    causes = {c["field"] for c in status["details"]["causes"]}
    assert {"metadata.generateName", "metadata.name"} <= causes


def test_good_generate_name_still_creates_with_a_generated_name(app: APIServerApp) -> None:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"generateName": "team-"}}
    code, created = _post(app, "namespaces", json.dumps(body).encode(), group="", version="v1")
    assert code == 201, created
    name = created["metadata"]["name"]
    assert name.startswith("team-") and len(name) == len("team-") + 5
    long = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"generateName": "a" * 70}}
    code, status = _post(app, "namespaces", json.dumps(long).encode(), group="", version="v1")
    # The prefix itself is too long for a label; the generated name (58 + 5) would fit.
    assert code == 422 and "metadata.generateName: Invalid value" in status["message"], status
