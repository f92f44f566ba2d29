"""Property tests: malformed manifests and requests never cause a 5xx or a stored change.

Hypothesis mutates valid manifests of every served kind (wrong types, nulls, unknown fields, bad
names, generateNames and labels, wrong apiVersion/kind, deep nesting), corrupts their JSON text
(invalid UTF-8 in a string, nesting up to 5,000 deep, truncation) and builds arbitrary requests
(methods, paths, content types, query parameters, bodies) against the real server process. Every
answer must be below 500; every failure must be a well-formed ``Status`` whose code is the HTTP
status; and a rejected request must leave the store's revision unchanged. Undecodable bodies must
be exactly 400.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from conftest import ServerProcess
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

G = "kueue.x-k8s.io"
SETTINGS = settings(
    max_examples=int(os.environ.get("PYKUEUE_FUZZ_EXAMPLES", "500")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=os.environ.get("PYKUEUE_FUZZ_RANDOM") is None,
)

POD_TEMPLATE = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox",
                                                                   "resources": {"requests": {"cpu": "1"}}}]}}  # fmt: skip
BASES: list[tuple[str, dict[str, Any]]] = [
    (f"/apis/{G}/v1beta2/clusterqueues", {
        "apiVersion": f"{G}/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "fz"},
        "spec": {"cohortName": "c", "namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"],
                 "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": "1", "borrowingLimit": "1"}]}]}],
                 "preemption": {"withinClusterQueue": "LowerPriority"}}}),
    (f"/apis/{G}/v1beta1/clusterqueues", {
        "apiVersion": f"{G}/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "fz1"},
        "spec": {"cohort": "c", "resourceGroups": [{"coveredResources": ["cpu"],
                 "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 1}]}]}]}}),
    (f"/apis/{G}/v1beta2/namespaces/default/localqueues", {
        "apiVersion": f"{G}/v1beta2", "kind": "LocalQueue", "metadata": {"name": "fz"}, "spec": {"clusterQueue": "cq"}}),
    (f"/apis/{G}/v1beta2/resourceflavors", {
        "apiVersion": f"{G}/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "fz"},
        "spec": {"nodeLabels": {"a": "b"}, "nodeTaints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}}),
    (f"/apis/{G}/v1beta2/namespaces/default/workloads", {
        "apiVersion": f"{G}/v1beta2", "kind": "Workload", "metadata": {"name": "fz"},
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 2, "template": POD_TEMPLATE}]}}),
    (f"/apis/{G}/v1beta2/admissionchecks", {
        "apiVersion": f"{G}/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": "fz"},
        "spec": {"controllerName": "x.io/y", "parameters": {"apiGroup": G, "kind": "ProvisioningRequestConfig", "name": "p"}}}),
    (f"/apis/{G}/v1beta2/workloadpriorityclasses", {
        "apiVersion": f"{G}/v1beta2", "kind": "WorkloadPriorityClass", "metadata": {"name": "fz"}, "value": 5}),
    (f"/apis/{G}/v1beta2/cohorts", {
        "apiVersion": f"{G}/v1beta2", "kind": "Cohort", "metadata": {"name": "fz"}, "spec": {"parentName": "root"}}),
    ("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fz", "labels": {"a": "b"}}}),
    ("/apis/batch/v1/namespaces/default/jobs", {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "fz"},
        "spec": {"parallelism": 2, "template": POD_TEMPLATE}}),
    ("/apis/scheduling.k8s.io/v1/priorityclasses", {
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "fz"}, "value": 10}),
    ("/apis/coordination.k8s.io/v1/namespaces/default/leases", {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "fz"},
        "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}}),
    ("/api/v1/namespaces/default/events", {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "fz"}, "reason": "R", "message": "m",
        "involvedObject": {"kind": "Job", "name": "j", "namespace": "default"}}),
]  # fmt: skip

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),
    st.sampled_from(["", "-1", "1Gi", "Never", "x" * 300, "UPPER", "a/b", "🙂", "\x00"]),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)


def paths(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path into a JSON document."""
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from paths(v, (*prefix, i))


def set_path(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    parent = obj
    for p in path[:-1]:
        parent = parent[p]
    parent[path[-1]] = value
    return obj


def delete_path(obj: Any, path: tuple[Any, ...]) -> Any:
    if not path:
        return obj
    parent = obj
    for p in path[:-1]:
        parent = parent[p]
    del parent[path[-1]]
    return obj


@st.composite
def mutated_manifest(draw: st.DrawFn) -> tuple[str, Any]:
    url, base = draw(st.sampled_from(BASES))
    obj = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        candidates = list(paths(obj)) if isinstance(obj, (dict, list)) else [()]
        path = draw(st.sampled_from(candidates))
        action = draw(st.sampled_from(["replace", "delete", "unknown", "name", "label", "deep"]))
        if action == "replace":
            obj = set_path(obj, path, draw(json_values))
        elif action == "delete" and path:
            obj = delete_path(obj, path)
        elif action == "unknown" and isinstance(obj, dict):
            target = obj
            for p in path:
                target = target[p]
            if isinstance(target, dict):
                target[draw(st.text(min_size=1, max_size=8))] = draw(json_values)
        elif action == "name" and isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
            bad = ["", "UPPER", "a" * 300, "bad_name", "-x", "a.b", "ok-1", "x/y", "a..b", "sp ace", "nul\x00"]
            if draw(st.booleans()):
                obj["metadata"]["name"] = draw(st.sampled_from(bad))
            else:  # names generated from a bad prefix must be refused like bad names
                obj["metadata"].pop("name", None)
                obj["metadata"]["generateName"] = draw(st.sampled_from([*bad, "ok-"]))
        elif action == "label" and isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
            obj["metadata"]["labels"] = {draw(st.text(max_size=70)): draw(st.text(max_size=70))}
        elif action == "deep":
            nested: Any = "x"
            for _ in range(draw(st.integers(50, 400))):
                nested = [nested]
            obj = set_path(obj, path, nested)
    return url, obj


def revision(server: ServerProcess) -> str:
    r = server.http.get(f"{server.url}/api/v1/namespaces?limit=1", timeout=10)
    assert r.status_code == 200
    return str(r.json()["metadata"]["resourceVersion"])


def check_answer(r: requests.Response) -> None:
    assert r.status_code < 500, (r.status_code, r.text[:500])
    if r.status_code >= 400:
        status = r.json()
        assert status["kind"] == "Status" and status["apiVersion"] == "v1"
        assert status["status"] == "Failure"
        assert status["code"] == r.status_code
        assert isinstance(status["message"], str) and status["message"]


def cleanup(server: ServerProcess, url: str, obj: Any) -> None:
    if (
        isinstance(obj, dict)
        and isinstance(obj.get("metadata"), dict)
        and isinstance(obj["metadata"].get("name"), str)
    ):
        name = obj["metadata"]["name"]
        if (
            name
            and "/" not in name
            and name not in ("default", "kube-system", "kube-public", "kube-node-lease")
        ):
            server.http.delete(f"{url}/{name}", timeout=10)


@SETTINGS
@given(case=mutated_manifest(), method=st.sampled_from(["POST", "PUT", "APPLY"]),
       validation=st.sampled_from(["Strict", "Warn", "Ignore"]))  # fmt: skip
def test_malformed_manifests_never_5xx_and_rejections_store_nothing(
    server: ServerProcess, case: tuple[str, Any], method: str, validation: str
) -> None:
    url, obj = case
    base = server.url + url
    before = revision(server)
    body = json.dumps(obj)
    name = (
        obj.get("metadata", {}).get("name")
        if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict)
        else None
    )
    target = f"{base}/{name}" if isinstance(name, str) and name and "/" not in name else f"{base}/fz"
    params = {"fieldValidation": validation}
    if method == "POST":
        r = server.http.post(
            base, data=body, params=params, headers={"Content-Type": "application/json"}, timeout=20
        )
    elif method == "PUT":
        r = server.http.put(
            target, data=body, params=params, headers={"Content-Type": "application/json"}, timeout=20
        )
    else:
        params["fieldManager"] = "fuzz"
        r = server.http.patch(
            target,
            data=body,
            params=params,
            headers={"Content-Type": "application/apply-patch+yaml"},
            timeout=20,
        )
    check_answer(r)
    if r.status_code >= 400:
        assert revision(server) == before, (r.status_code, r.text[:300])
    else:
        cleanup(server, base, r.json())


REQUEST_PATHS = [
    "/api/v1/namespaces", "/api/v1/namespaces/default", "/api/v1/namespaces/default/events",
    "/api/v1/namespaces/default/events/x", f"/apis/{G}/v1beta2/clusterqueues", f"/apis/{G}/v1beta2/clusterqueues/x",
    f"/apis/{G}/v1beta2/clusterqueues/x/status", f"/apis/{G}/v1beta2/clusterqueues/x/scale",
    f"/apis/{G}/v1beta2/namespaces/default/workloads", f"/apis/{G}/v1beta2/namespaces/default/workloads/x/status",
    f"/apis/{G}/v1beta2/namespaces/nowhere/localqueues", f"/apis/{G}/v1beta1/watch/clusterqueues",
    f"/apis/{G}/v1beta2/namespaces/default/clusterqueues", f"/apis/{G}/v9/clusterqueues", "/apis/batch/v1/jobs",
    "/apis/batch/v1/namespaces/default/jobs/x", "/api/v1/namespaces/default/status", "/api/v1/x/y/z/w/v",
    "/apis", "/api", "/apis/kueue.x-k8s.io", "/openapi/v3/apis/kueue.x-k8s.io/v1beta2", "/openapi/v3/nope",
    "/version", "/nope", "/apis/a/b/c/d/e/f/g/h",
]  # fmt: skip
CONTENT_TYPES = [
    "application/json", "application/yaml", "application/merge-patch+json", "application/json-patch+json",
    "application/strategic-merge-patch+json", "application/apply-patch+yaml", "application/vnd.kubernetes.protobuf",
    "text/plain", "", "application/json; charset=utf-8",
]  # fmt: skip
QUERY_KEYS = ["labelSelector", "fieldSelector", "limit", "continue", "resourceVersion", "dryRun", "fieldValidation",
              "fieldManager", "force", "propagationPolicy", "timeoutSeconds", "includeObject", "watch", "gracePeriodSeconds"]  # fmt: skip
QUERY_VALUES = ["", "x", "-1", "0", "1", "true", "All", "a=b", "a in (", "!!", "metadata.name=x", "spec.x=1",
                "Orphan", "Strict", "abc==", "9999999999999999999999", "\u2603", "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ"]  # fmt: skip
bodies = st.one_of(
    st.binary(max_size=200),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.sampled_from([b"", b"{", b"[]", b"null", b'{"apiVersion":"v1"}', b"a: &a [*a]", b"- op: remove\n  path: /spec",
                     b'[{"op":"move","from":"/metadata","path":"/metadata/x"}]', b'{"metadata":{"name":"other"}}',
                     b'{"metadata":{"name":"\xff"}}', b"[" * 1000 + b"]" * 1000, b'{"a":' * 5000 + b"1" + b"}" * 5000]),
)  # fmt: skip


@SETTINGS
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]),
    path=st.one_of(st.sampled_from(REQUEST_PATHS), st.text(alphabet="abc/%-._~:", max_size=30).map(lambda s: "/" + s)),
    content_type=st.sampled_from(CONTENT_TYPES),
    accept=st.sampled_from(["application/json", "application/json;as=Table;v=v1;g=meta.k8s.io", "text/html", "*/*",
                            "application/yaml", "application/json;as=Table;v=v9;g=meta.k8s.io"]),
    query=st.dictionaries(st.sampled_from(QUERY_KEYS), st.sampled_from(QUERY_VALUES), max_size=4),
    body=bodies,
)  # fmt: skip
def test_arbitrary_requests_never_5xx(
    server: ServerProcess,
    method: str,
    path: str,
    content_type: str,
    accept: str,
    query: dict[str, str],
    body: bytes,
) -> None:
    if query.get("watch") in ("true", "1") or "/watch/" in path:
        query["timeoutSeconds"] = "1"
    before = revision(server)
    headers = {"Accept": accept}
    if content_type:
        headers["Content-Type"] = content_type
    r = server.http.request(method, server.url + path, params=query, data=body, headers=headers, timeout=20)
    check_answer(r)
    if r.status_code >= 400 and method != "GET":
        assert revision(server) == before, (method, path, r.status_code, r.text[:300])


def test_yaml_alias_bomb_is_refused(server: ServerProcess) -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n"
    prev = "a"
    for level in "bcdefghij":
        bomb += f"{level}: &{level} [" + ", ".join([f"*{prev}"] * 9) + "]\n"
        prev = level
    r = server.http.post(
        f"{server.url}/apis/{G}/v1beta2/resourceflavors",
        data=bomb,
        headers={"Content-Type": "application/yaml"},
        timeout=30,
    )
    assert r.status_code == 400 and r.json()["kind"] == "Status"


@pytest.mark.parametrize("size", [3 * 1024 * 1024 + 1])
def test_oversized_body_is_413(server: ServerProcess, size: int) -> None:
    r = server.http.post(
        f"{server.url}/apis/{G}/v1beta2/resourceflavors",
        data=b" " * size,
        headers={"Content-Type": "application/json"},
        timeout=30,
    )
    assert r.status_code == 413 and r.json()["reason"] == "RequestEntityTooLarge"


BAD_UTF8 = [b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xe2\x82", b"\xf8\x88\x80\x80\x80", b"a\x80b"]
MARK = "\u2603MARK\u2603"


@st.composite
def undecodable_body(draw: st.DrawFn) -> tuple[str, str, bytes]:
    """(collection URL, object name, JSON text) of a manifest made undecodable in one place."""
    url, base = draw(st.sampled_from(BASES))
    obj = copy.deepcopy(base)
    name = f"bad-{draw(st.integers(0, 10**6))}"
    obj["metadata"]["name"] = name
    path = draw(st.sampled_from([p for p in paths(obj) if p]))
    set_path(obj, path, MARK)
    text = json.dumps(obj).encode()
    mark = json.dumps(MARK).encode()
    how = draw(st.sampled_from(["utf8", "deep-array", "deep-object", "truncate"]))
    if how == "utf8":
        bad = b'"' + draw(st.text(max_size=5)).encode() + draw(st.sampled_from(BAD_UTF8)) + b'"'
        return url, name, text.replace(mark, bad)
    depth = draw(st.sampled_from([101, 500, 999, 1000, 1001, 5000]))
    if how == "deep-array":
        return url, name, text.replace(mark, b"[" * depth + b"1" + b"]" * depth)
    if how == "deep-object":
        return url, name, text.replace(mark, b'{"a":' * depth + b"1" + b"}" * depth)
    text = text.replace(mark, b'"x"')
    return url, name, text[: draw(st.integers(1, len(text) - 1))]


@settings(SETTINGS, max_examples=min(SETTINGS.max_examples, 200))
@given(case=undecodable_body(), method=st.sampled_from(["POST", "PUT", "MERGE", "APPLY"]))
def test_undecodable_bodies_are_400_and_store_nothing(
    server: ServerProcess, case: tuple[str, str, bytes], method: str
) -> None:
    url, name, body = case
    base = server.url + url
    before = revision(server)
    if method == "POST":
        r = server.http.post(base, data=body, headers={"Content-Type": "application/json"}, timeout=20)
    elif method == "PUT":
        r = server.http.put(f"{base}/{name}", data=body, headers={"Content-Type": "application/json"}, timeout=20)
    else:
        ctype = "application/merge-patch+json" if method == "MERGE" else "application/apply-patch+yaml"
        r = server.http.patch(f"{base}/{name}", data=body, params={"fieldManager": "fuzz"},
                              headers={"Content-Type": ctype}, timeout=20)  # fmt: skip
    check_answer(r)
    assert r.status_code == 400, (method, r.status_code, r.text[:300])
    assert r.json()["reason"] == "BadRequest"
    assert revision(server) == before
