"""The /openapi/v3 documents: OpenAPI 3.0 validity, Kubernetes shapes, and real kubectl against them.

The kubectl tests serve the documents (plus a minimal discovery and a one-collection object
stub) from a throwaway local HTTP server and run the real ``kubectl`` 1.32 binary:
``kubectl explain`` walks the paths, the GVK extensions and the component references, and
``kubectl apply`` detects server-side field validation from the PATCH operation's
``fieldValidation`` parameter and computes a strategic merge patch from the Job schema's
patch metadata.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlparse

import pytest
from openapi_spec_validator import validate as validate_openapi

from pykueue.apiserver.builtin.schema import GVK_EXTENSION, REF_PREFIX
from pykueue.apiserver.openapi import (
    crd_component_name,
    document_for_path,
    document_hash,
    openapi_v3_document,
    openapi_v3_index,
    openapi_v3_paths,
)
from pykueue.apiserver.resources import REGISTRY

KUBECTL = shutil.which("kubectl")


def _ecma_compatible(value: Any) -> Any:
    """Drop the RE2 inline flag ``(?i)`` (valid for Kubernetes, not an ECMA 262 regex)."""
    if isinstance(value, dict):
        return {
            k: v.replace("(?i)", "") if k == "pattern" and isinstance(v, str) else _ecma_compatible(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_ecma_compatible(v) for v in value]
    return value


# --- document structure ----------------------------------------------------------------------------


def test_index_lists_every_group_version_with_its_hash() -> None:
    index = openapi_v3_index()
    assert set(index) == {"paths"}
    assert list(index["paths"]) == openapi_v3_paths()
    assert "api/v1" in index["paths"]
    assert "apis/kueue.x-k8s.io/v1beta2" in index["paths"]
    assert "apis/kueue.x-k8s.io/v1beta1" in index["paths"]
    assert "apis/autoscaling.x-k8s.io/v1beta1" in index["paths"]
    for path, entry in index["paths"].items():
        digest = document_hash(document_for_path(path))
        assert entry == {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}


@pytest.mark.parametrize("path", openapi_v3_paths())
def test_documents_are_valid_openapi_3(path: str) -> None:
    document = document_for_path(path)
    assert document["openapi"].startswith("3.0")
    validate_openapi(_ecma_compatible(document))


@pytest.mark.parametrize("path", openapi_v3_paths())
def test_every_reference_resolves(path: str) -> None:
    document = document_for_path(path)
    schemas = document["components"]["schemas"]
    text = json.dumps(document)
    for chunk in text.split('"$ref": "')[1:]:
        name = chunk.split('"', 1)[0]
        assert name.startswith(REF_PREFIX)
        assert name.removeprefix(REF_PREFIX) in schemas, name


def _patch_supports(document: dict[str, Any], group: str, version: str, kind: str, param: str) -> bool:
    """kubectl's ``supportsQueryParamV3``: a PATCH operation tagged with the GVK lists ``param``."""
    gvk = {"group": group, "version": version, "kind": kind}
    for item in document["paths"].values():
        op = item.get("patch")
        if op is None or op.get("x-kubernetes-group-version-kind") != gvk:
            continue
        return any(p["name"] == param and p["in"] == "query" for p in op["parameters"])
    return False


@pytest.mark.parametrize("info", REGISTRY.all(), ids=lambda i: f"{i.group}/{i.kind}")
def test_patch_operations_advertise_field_validation(info: Any) -> None:
    for version in info.versions:
        document = openapi_v3_document(info.group, version)
        for param in ("fieldValidation", "dryRun", "fieldManager", "force"):
            assert _patch_supports(document, info.group, version, info.kind, param)


def test_crd_kinds_are_named_like_the_apiextensions_builder() -> None:
    document = openapi_v3_document("kueue.x-k8s.io", "v1beta2")
    schemas = document["components"]["schemas"]
    name = crd_component_name("kueue.x-k8s.io", "v1beta2", "ClusterQueue")
    assert name == "io.x-k8s.kueue.v1beta2.ClusterQueue"
    cq = schemas[name]
    assert cq[GVK_EXTENSION] == [{"group": "kueue.x-k8s.io", "kind": "ClusterQueue", "version": "v1beta2"}]
    assert cq["properties"]["metadata"]["allOf"] == [
        {"$ref": REF_PREFIX + "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    ]
    assert schemas[name + "List"][GVK_EXTENSION][0]["kind"] == "ClusterQueueList"
    flavors = cq["properties"]["spec"]["properties"]["resourceGroups"]["items"]["properties"]["flavors"]
    assert flavors["x-kubernetes-list-type"] == "map"
    assert flavors["x-kubernetes-list-map-keys"] == ["name"]


def test_standard_meta_components_are_present() -> None:
    schemas = openapi_v3_document("batch", "v1")["components"]["schemas"]
    for name in (
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta",
        "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
        "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
        "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
        "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent",
        "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
        "io.k8s.apimachinery.pkg.api.resource.Quantity",
        "io.k8s.api.batch.v1.Job",
        "io.k8s.api.core.v1.PodTemplateSpec",
        "io.k8s.api.core.v1.Container",
    ):
        assert name in schemas, name
    quantity = schemas["io.k8s.apimachinery.pkg.api.resource.Quantity"]
    assert quantity["x-kubernetes-int-or-string"] is True
    assert {"group": "batch", "kind": "WatchEvent", "version": "v1"} in schemas[
        "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent"
    ][GVK_EXTENSION]


def test_builtin_schemas_carry_strategic_merge_metadata() -> None:
    schemas = openapi_v3_document("batch", "v1")["components"]["schemas"]
    pod_spec = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]
    container = schemas["io.k8s.api.core.v1.Container"]["properties"]
    assert pod_spec["containers"]["x-kubernetes-patch-merge-key"] == "name"
    assert pod_spec["containers"]["x-kubernetes-patch-strategy"] == "merge"
    assert pod_spec["volumes"]["x-kubernetes-patch-strategy"] == "merge,retainKeys"
    assert container["env"]["x-kubernetes-patch-merge-key"] == "name"
    assert container["ports"]["x-kubernetes-patch-merge-key"] == "containerPort"
    assert container["ports"]["x-kubernetes-list-map-keys"] == ["containerPort", "protocol"]
    assert container["volumeMounts"]["x-kubernetes-patch-merge-key"] == "mountPath"


def test_strategic_merge_patch_only_for_builtins() -> None:
    job_paths = openapi_v3_document("batch", "v1")["paths"]
    job_patch = job_paths["/apis/batch/v1/namespaces/{namespace}/jobs/{name}"]["patch"]
    assert "application/strategic-merge-patch+json" in job_patch["requestBody"]["content"]
    cq_paths = openapi_v3_document("kueue.x-k8s.io", "v1beta2")["paths"]
    cq_patch = cq_paths["/apis/kueue.x-k8s.io/v1beta2/clusterqueues/{name}"]["patch"]
    assert "application/strategic-merge-patch+json" not in cq_patch["requestBody"]["content"]
    assert "application/apply-patch+yaml" in cq_patch["requestBody"]["content"]


def test_paths_cover_scopes_and_status() -> None:
    paths = openapi_v3_document("kueue.x-k8s.io", "v1beta2")["paths"]
    base = "/apis/kueue.x-k8s.io/v1beta2"
    assert f"{base}/namespaces/{{namespace}}/workloads/{{name}}/status" in paths
    assert f"{base}/workloads" in paths  # all namespaces
    assert f"{base}/clusterqueues/{{name}}/status" in paths
    assert f"{base}/resourceflavors/{{name}}/status" not in paths
    listing = paths[f"{base}/namespaces/{{namespace}}/workloads"]["get"]
    assert listing["x-kubernetes-action"] == "list"
    assert "watch" in [p["name"] for p in listing["parameters"]]
    assert listing["operationId"] == "listKueueXK8sIoV1beta2NamespacedWorkload"
    core = openapi_v3_document("", "v1")["paths"]
    assert core["/api/v1/namespaces/{name}"]["get"]["operationId"] == "readCoreV1Namespace"


def test_unknown_group_version_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        openapi_v3_document("kueue.x-k8s.io", "v1alpha1")
    with pytest.raises(KeyError):
        document_for_path("apis/kueue.x-k8s.io")


# --- real kubectl against a stub server ---------------------------------------------------------------


class _Stub(BaseHTTPRequestHandler):
    """Discovery, OpenAPI v3 and a tiny object store for one Job collection."""

    objects: ClassVar[dict[str, dict[str, Any]]] = {}
    requests: ClassVar[list[tuple[str, str, dict[str, list[str]], str, Any]]] = []

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def _send(self, obj: Any, code: int = 200) -> None:
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _not_found(self) -> None:
        self._send(
            {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404},
            404,
        )

    def _record(self) -> tuple[str, dict[str, list[str]], Any]:
        url = urlparse(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        self.requests.append(
            (self.command, url.path, parse_qs(url.query), self.headers.get("Content-Type", ""), body)
        )
        return url.path.rstrip("/"), parse_qs(url.query), body

    def do_GET(self) -> None:
        path, _, _ = self._record()
        parts = path.split("/")
        if path == "/version":
            return self._send({"major": "1", "minor": "32", "gitVersion": "v1.32.0"})
        if path == "/api":
            return self._send(
                {
                    "kind": "APIVersions",
                    "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
                }
            )
        if path == "/apis":
            return self._send(REGISTRY.api_group_list())
        if path == "/api/v1":
            return self._send(REGISTRY.api_resource_list("", "v1"))
        if len(parts) == 4 and parts[1] == "apis":
            return self._send(REGISTRY.api_resource_list(parts[2], parts[3]))
        if path == "/openapi/v3":
            return self._send(openapi_v3_index())
        if path.startswith("/openapi/v3/"):
            try:
                return self._send(document_for_path(path.removeprefix("/openapi/v3/")))
            except KeyError:
                return self._not_found()
        if path in self.objects:
            return self._send(self.objects[path])
        return self._not_found()

    def do_POST(self) -> None:
        path, _, body = self._record()
        name = body["metadata"]["name"]
        obj = {
            **body,
            "metadata": {**body["metadata"], "uid": "u-1", "resourceVersion": "1", "namespace": "default"},
        }
        self.objects[f"{path}/{name}"] = obj
        self._send(obj, 201)

    def do_PATCH(self) -> None:
        path, _, _ = self._record()
        if path not in self.objects:
            return self._not_found()
        self._send(self.objects[path])


@pytest.fixture()
def kubectl_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed")
    _Stub.objects = {}
    _Stub.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: s, cluster: {{server: 'http://127.0.0.1:{server.server_address[1]}'}}}}]\n"
        "users: [{name: u, user: {}}]\n"
        "contexts: [{name: c, context: {cluster: s, user: u, namespace: default}}]\n"
        "current-context: c\n"
    )
    env = dict(
        os.environ, KUBECONFIG=str(kubeconfig), KUBECACHEDIR=str(tmp_path / "cache"), HOME=str(tmp_path)
    )
    try:
        yield env
    finally:
        server.shutdown()
        server.server_close()


def _kubectl(env: dict[str, str], *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None
    return subprocess.run(
        [KUBECTL, *args], env=env, input=stdin, capture_output=True, text=True, timeout=60, check=False
    )


def test_kubectl_explain_kueue_field(kubectl_env: dict[str, str]) -> None:
    result = _kubectl(
        kubectl_env, "explain", "clusterqueue.spec.resourceGroups", "--api-version=kueue.x-k8s.io/v1beta2"
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "GROUP:      kueue.x-k8s.io" in out
    assert "KIND:       ClusterQueue" in out
    assert "VERSION:    v1beta2" in out
    assert "FIELD: resourceGroups <[]Object>" in out
    assert "coveredResources\t<[]string> -required-" in out
    assert "flavors\t<[]Object> -required-" in out


def test_kubectl_explain_v1beta1_fields_and_enums(kubectl_env: dict[str, str]) -> None:
    result = _kubectl(
        kubectl_env, "explain", "workload.spec.priorityClassSource", "--api-version=kueue.x-k8s.io/v1beta1"
    )
    assert result.returncode == 0, result.stderr
    assert "VERSION:    v1beta1" in result.stdout
    assert "kueue.x-k8s.io/workloadpriorityclass" in result.stdout
    cq = _kubectl(kubectl_env, "explain", "cq.spec", "--api-version=kueue.x-k8s.io/v1beta1")
    assert cq.returncode == 0, cq.stderr
    assert "cohort\t<string>" in cq.stdout
    assert "cohortName" not in cq.stdout


def test_kubectl_explain_builtin_through_references(kubectl_env: dict[str, str]) -> None:
    result = _kubectl(kubectl_env, "explain", "job.spec.template.spec.containers.ports")
    assert result.returncode == 0, result.stderr
    assert "FIELD: ports <[]ContainerPort>" in result.stdout
    assert "containerPort\t<integer> -required-" in result.stdout
    limits = _kubectl(kubectl_env, "explain", "job.spec.template.spec.containers.resources.limits")
    assert limits.returncode == 0, limits.stderr
    assert "<map[string]Quantity>" in limits.stdout


_JOB = """apiVersion: batch/v1
kind: Job
metadata:
  name: pi
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: {image}
        env:
        - name: A
          value: "1"
"""


def test_kubectl_apply_uses_server_validation_and_strategic_merge(kubectl_env: dict[str, str]) -> None:
    created = _kubectl(kubectl_env, "apply", "-f", "-", stdin=_JOB.format(image="busybox:1"))
    assert created.returncode == 0, created.stderr
    post = next(r for r in _Stub.requests if r[0] == "POST")
    assert post[1] == "/apis/batch/v1/namespaces/default/jobs"
    assert post[2].get("fieldValidation") == ["Strict"]
    updated = _kubectl(kubectl_env, "apply", "-f", "-", stdin=_JOB.format(image="busybox:2"))
    assert updated.returncode == 0, updated.stderr
    patch = next(r for r in _Stub.requests if r[0] == "PATCH")
    assert patch[3].startswith("application/strategic-merge-patch+json")
    assert patch[2].get("fieldValidation") == ["Strict"]
    containers = patch[4]["spec"]["template"]["spec"]
    assert containers["$setElementOrder/containers"] == [{"name": "main"}]
    assert containers["containers"] == [{"image": "busybox:2", "name": "main"}]
