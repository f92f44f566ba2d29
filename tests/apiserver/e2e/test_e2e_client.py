"""The official ``kubernetes`` Python client (unchanged) against a real ``pykueue serve``."""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import requests
from conftest import ServerProcess, start_server, wait_for
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

G, V2, V1 = "kueue.x-k8s.io", "v1beta2", "v1beta1"
JSON_PATCH = "application/json-patch+json"


def cq(name: str, cohort: str = "", cpu: str = "4", labels: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": cpu}]}],
            }
        ],
    }
    if cohort:
        spec["cohortName"] = cohort
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": f"{G}/{V2}", "kind": "ClusterQueue", "metadata": meta, "spec": spec}


def workload(name: str, queue: str = "lq") -> dict[str, Any]:
    return {
        "apiVersion": f"{G}/{V2}",
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {
            "queueName": queue,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox",
                                 "resources": {"requests": {"cpu": "1"}}}]}},
                }
            ],
        },
    }  # fmt: skip


@pytest.fixture(scope="module")
def api(server: ServerProcess) -> Any:
    return server.api_client()


@pytest.fixture(scope="module")
def co(api: Any) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


# --- custom objects --------------------------------------------------------------------------------------


def test_custom_object_crud(co: client.CustomObjectsApi) -> None:
    created = co.create_cluster_custom_object(G, V2, "clusterqueues", cq("crud", "c1"))
    assert created["metadata"]["uid"] and created["metadata"]["generation"] == 1
    rv = created["metadata"]["resourceVersion"]
    got = co.get_cluster_custom_object(G, V2, "clusterqueues", "crud")
    assert got["metadata"]["resourceVersion"] == rv
    assert got["spec"]["queueingStrategy"] == "BestEffortFIFO"  # defaulted
    patched = co.patch_cluster_custom_object(G, V2, "clusterqueues", "crud", {"spec": {"cohortName": "c2"}})
    assert patched["spec"]["cohortName"] == "c2" and patched["metadata"]["generation"] == 2
    assert int(patched["metadata"]["resourceVersion"]) > int(rv)
    got["spec"]["cohortName"] = "stale"
    with pytest.raises(ApiException) as err:
        co.replace_cluster_custom_object(G, V2, "clusterqueues", "crud", got)
    assert err.value.status == 409
    status = json.loads(err.value.body)
    assert status["kind"] == "Status" and status["reason"] == "Conflict"
    marked = co.delete_cluster_custom_object(G, V2, "clusterqueues", "crud")
    # Kueue's webhook added its finalizer; without controllers it stays until removed
    assert marked["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]
    assert marked["metadata"]["deletionTimestamp"]
    co.patch_cluster_custom_object(
        G,
        V2,
        "clusterqueues",
        "crud",
        [{"op": "remove", "path": "/metadata/finalizers"}],
        _content_type=JSON_PATCH,
    )
    with pytest.raises(ApiException) as err:
        co.get_cluster_custom_object(G, V2, "clusterqueues", "crud")
    assert err.value.status == 404
    body = json.loads(err.value.body)
    assert body["message"] == 'clusterqueues.kueue.x-k8s.io "crud" not found'
    assert body["details"] == {"name": "crud", "group": G, "kind": "clusterqueues"}


def test_served_versions_convert(co: client.CustomObjectsApi) -> None:
    old = cq("conv")
    old["apiVersion"] = f"{G}/{V1}"
    old["spec"]["cohort"] = "legacy"
    co.create_cluster_custom_object(G, V1, "clusterqueues", old)
    v2 = co.get_cluster_custom_object(G, V2, "clusterqueues", "conv")
    assert v2["spec"]["cohortName"] == "legacy" and "cohort" not in v2["spec"]
    v1 = co.get_cluster_custom_object(G, V1, "clusterqueues", "conv")
    assert v1["apiVersion"] == f"{G}/{V1}" and v1["spec"]["cohort"] == "legacy"


def test_invalid_object_gets_422_and_store_untouched(co: client.CustomObjectsApi) -> None:
    before = co.list_cluster_custom_object(G, V2, "clusterqueues")["metadata"]["resourceVersion"]
    bad = cq("bad", cpu="lots")
    with pytest.raises(ApiException) as err:
        co.create_cluster_custom_object(G, V2, "clusterqueues", bad)
    assert err.value.status == 422
    status = json.loads(err.value.body)
    assert status["reason"] == "Invalid"
    assert status["message"].startswith('ClusterQueue.kueue.x-k8s.io "bad" is invalid: ')
    assert status["details"]["name"] == "bad" and status["details"]["kind"] == "ClusterQueue"
    fields = [c["field"] for c in status["details"]["causes"]]
    assert any("nominalQuota" in f for f in fields)
    after = co.list_cluster_custom_object(G, V2, "clusterqueues")["metadata"]["resourceVersion"]
    assert after == before


def test_update_rules_immutable_fields(co: client.CustomObjectsApi, api: Any) -> None:
    client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="immut")))
    co.create_namespaced_custom_object(G, V2, "immut", "localqueues", {
        "apiVersion": f"{G}/{V2}", "kind": "LocalQueue", "metadata": {"name": "lq"}, "spec": {"clusterQueue": "a"}})  # fmt: skip
    with pytest.raises(ApiException) as err:
        co.patch_namespaced_custom_object(
            G, V2, "immut", "localqueues", "lq", {"spec": {"clusterQueue": "b"}}
        )
    assert err.value.status == 422
    assert "field is immutable" in json.loads(err.value.body)["message"]


def test_status_subresource_and_field_selector(co: client.CustomObjectsApi, api: Any) -> None:
    client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="wl-ns")))
    for name in ("wl-a", "wl-b"):
        co.create_namespaced_custom_object(G, V2, "wl-ns", "workloads", workload(name))
    # a spec change through /status is ignored; status through the main resource is ignored
    main = co.patch_namespaced_custom_object(
        G, V2, "wl-ns", "workloads", "wl-a", {"status": {"conditions": []}}
    )
    assert "admission" not in main.get("status", {})
    admission = {
        "clusterQueue": "cq-x",
        "podSetAssignments": [
            {"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}, "count": 1}
        ],
    }
    status = co.patch_namespaced_custom_object_status(
        G,
        V2,
        "wl-ns",
        "workloads",
        "wl-a",
        {"status": {"admission": admission}, "spec": {"queueName": "ignored"}},
    )
    assert status["status"]["admission"]["clusterQueue"] == "cq-x"
    assert status["spec"]["queueName"] == "lq"
    selected = co.list_namespaced_custom_object(
        G, V2, "wl-ns", "workloads", field_selector="status.admission.clusterQueue=cq-x"
    )
    assert [i["metadata"]["name"] for i in selected["items"]] == ["wl-a"]
    everywhere = co.list_cluster_custom_object(
        G, V2, "workloads", field_selector="status.admission.clusterQueue!=cq-x"
    )
    assert "wl-b" in [i["metadata"]["name"] for i in everywhere["items"]]
    with pytest.raises(ApiException) as err:
        co.list_cluster_custom_object(G, V2, "workloads", field_selector="spec.queueName=lq")
    assert err.value.status == 400


def test_list_limit_continue_and_label_selector(co: client.CustomObjectsApi) -> None:
    for i in range(5):
        co.create_cluster_custom_object(
            G, V2, "clusterqueues", cq(f"page-{i}", labels={"page": "yes", "i": str(i)})
        )
    seen: list[str] = []
    token = None
    while True:
        kwargs: dict[str, Any] = {"label_selector": "page=yes", "limit": 2}
        if token:
            kwargs["_continue"] = token
        page = co.list_cluster_custom_object(G, V2, "clusterqueues", **kwargs)
        seen += [i["metadata"]["name"] for i in page["items"]]
        token = page["metadata"].get("continue")
        if not token:
            break
    assert seen == [f"page-{i}" for i in range(5)]
    picked = co.list_cluster_custom_object(G, V2, "clusterqueues", label_selector="page=yes,i in (1,3)")
    assert [i["metadata"]["name"] for i in picked["items"]] == ["page-1", "page-3"]
    with pytest.raises(ApiException) as err:
        co.list_cluster_custom_object(G, V2, "clusterqueues", label_selector="i in (1")
    assert err.value.status == 400


def test_dry_run_create_and_delete(co: client.CustomObjectsApi) -> None:
    obj = co.create_cluster_custom_object(G, V2, "clusterqueues", cq("dry-c"), dry_run="All")
    assert obj["metadata"]["name"] == "dry-c"
    with pytest.raises(ApiException):
        co.get_cluster_custom_object(G, V2, "clusterqueues", "dry-c")
    co.create_cluster_custom_object(G, V2, "clusterqueues", cq("dry-d"))
    co.delete_cluster_custom_object(G, V2, "clusterqueues", "dry-d", dry_run="All")
    assert co.get_cluster_custom_object(G, V2, "clusterqueues", "dry-d")["metadata"]["name"] == "dry-d"


def test_server_side_apply_via_client(co: client.CustomObjectsApi) -> None:
    _, code, _ = co.patch_cluster_custom_object_with_http_info(
        G, V2, "clusterqueues", "ssa-client", cq("ssa-client", "a"), field_manager="tester",
        _content_type="application/apply-patch+yaml",
    )  # fmt: skip
    assert code == 201  # apply created the object
    obj = co.get_cluster_custom_object(G, V2, "clusterqueues", "ssa-client")
    entries = {(m["manager"], m["operation"]) for m in obj["metadata"]["managedFields"]}
    assert ("tester", "Apply") in entries
    with pytest.raises(ApiException) as err:
        co.patch_cluster_custom_object(
            G, V2, "clusterqueues", "ssa-client", cq("ssa-client", "b"), field_manager="intruder",
            _content_type="application/apply-patch+yaml",
        )  # fmt: skip
    assert err.value.status == 409
    status = json.loads(err.value.body)
    assert status["message"].startswith('Apply failed with 1 conflict: conflict with "tester"')
    assert status["details"]["causes"][0]["field"] == ".spec.cohortName"



def test_a_status_apply_with_a_stale_resource_version_conflicts(co: client.CustomObjectsApi) -> None:
    """The applied resourceVersion is a precondition on /status too (upstream's scheduler-perf
    runner applies Finished with the version it read)."""
    created = co.create_cluster_custom_object(G, V2, "clusterqueues", cq("ssa-status"))
    stale = created["metadata"]["resourceVersion"]
    co.patch_cluster_custom_object(G, V2, "clusterqueues", "ssa-status", {"metadata": {"labels": {"x": "1"}}})

    def apply(version: str) -> Any:
        body = {"apiVersion": f"{G}/{V2}", "kind": "ClusterQueue",
                "metadata": {"name": "ssa-status", "resourceVersion": version},
                "status": {"pendingWorkloads": 3}}  # fmt: skip
        return co.patch_cluster_custom_object_status(
            G, V2, "clusterqueues", "ssa-status", body, field_manager="runner", force=True,
            _content_type="application/apply-patch+yaml",
        )  # fmt: skip

    with pytest.raises(ApiException) as err:
        apply(stale)
    assert err.value.status == 409
    assert "the object has been modified" in json.loads(err.value.body)["message"]
    current = co.get_cluster_custom_object(G, V2, "clusterqueues", "ssa-status")["metadata"]["resourceVersion"]
    assert apply(current)["status"]["pendingWorkloads"] == 3

# --- built-in kinds --------------------------------------------------------------------------------------


def test_namespaces_events_jobs_priorityclasses_leases(api: Any) -> None:
    core = client.CoreV1Api(api)
    names = [n.metadata.name for n in core.list_namespace().items]
    assert {"default", "kube-system"} <= set(names)
    ns = core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="typed")))
    assert ns.status.phase == "Active"
    job = client.BatchV1Api(api).create_namespaced_job(
        "typed",
        client.V1Job(
            metadata=client.V1ObjectMeta(name="pi"),
            spec=client.V1JobSpec(
                suspend=True,
                template=client.V1PodTemplateSpec(
                    spec=client.V1PodSpec(
                        restart_policy="Never",
                        containers=[client.V1Container(name="pi", image="perl", command=["perl", "-e", "1"])],
                    )
                ),
            ),
        ),
    )
    assert (
        job.spec.backoff_limit == 6 and job.spec.completion_mode == "NonIndexed" and job.spec.suspend is True
    )
    assert job.spec.template.metadata.labels["job-name"] == "pi"
    assert job.spec.selector.match_labels == {"batch.kubernetes.io/controller-uid": job.metadata.uid}
    patched = client.BatchV1Api(api).patch_namespaced_job(
        "pi",
        "typed",
        {"metadata": {"labels": {"x": "1"}}},
        _content_type="application/strategic-merge-patch+json",
    )
    assert patched.metadata.labels["x"] == "1"
    event = core.create_namespaced_event(
        "typed",
        client.CoreV1Event(
            metadata=client.V1ObjectMeta(name="pi.1"),
            involved_object=client.V1ObjectReference(
                kind="Job", name="pi", namespace="typed", uid=job.metadata.uid
            ),
            reason="Created",
            message="created",
            type="Normal",
        ),
    )
    assert event.reason == "Created"
    found = core.list_namespaced_event(
        "typed", field_selector="involvedObject.name=pi,involvedObject.kind=Job"
    )
    assert [e.metadata.name for e in found.items] == ["pi.1"]
    pc = client.SchedulingV1Api(api).create_priority_class(
        client.V1PriorityClass(metadata=client.V1ObjectMeta(name="high"), value=1000)
    )
    assert pc.value == 1000
    lease = client.CoordinationV1Api(api).create_namespaced_lease(
        "kube-system",
        client.V1Lease(
            metadata=client.V1ObjectMeta(name="kueue"), spec=client.V1LeaseSpec(holder_identity="me")
        ),
    )
    lease.spec.holder_identity = "you"
    updated = client.CoordinationV1Api(api).replace_namespaced_lease("kueue", "kube-system", lease)
    assert updated.spec.holder_identity == "you"


# --- watch ---------------------------------------------------------------------------------------------


def test_watch_resume_from_resource_version(co: client.CustomObjectsApi) -> None:
    plural = "workloadpriorityclasses"
    start = co.list_cluster_custom_object(G, V2, plural)["metadata"]["resourceVersion"]
    for i in range(3):
        co.create_cluster_custom_object(G, V2, plural, {
            "apiVersion": f"{G}/{V2}", "kind": "WorkloadPriorityClass", "metadata": {"name": f"w-{i}"}, "value": i})  # fmt: skip
    co.delete_cluster_custom_object(G, V2, plural, "w-0")
    w = watch.Watch()
    events = []
    for ev in w.stream(
        co.list_cluster_custom_object, G, V2, plural, resource_version=start, timeout_seconds=2
    ):
        events.append((ev["type"], ev["object"]["metadata"]["name"]))
        if len(events) == 4:
            w.stop()
    assert events == [("ADDED", "w-0"), ("ADDED", "w-1"), ("ADDED", "w-2"), ("DELETED", "w-0")]


def test_watch_live_events_and_bookmarks(api: Any, co: client.CustomObjectsApi) -> None:
    rv = co.list_cluster_custom_object(G, V2, "admissionchecks")["metadata"]["resourceVersion"]
    got: list[tuple[str, str]] = []

    def consume() -> None:
        w = watch.Watch()
        for ev in w.stream(co.list_cluster_custom_object, G, V2, "admissionchecks", resource_version=rv,
                           allow_watch_bookmarks=True, timeout_seconds=3):  # fmt: skip
            got.append((ev["type"], ev["object"]["metadata"].get("name", "")))

    t = threading.Thread(target=consume)
    t.start()
    time.sleep(0.5)
    co.create_cluster_custom_object(G, V2, "admissionchecks", {
        "apiVersion": f"{G}/{V2}", "kind": "AdmissionCheck", "metadata": {"name": "live"},
        "spec": {"controllerName": "example.com/ctrl"}})  # fmt: skip
    t.join(10)
    assert ("ADDED", "live") in got
    assert any(t == "BOOKMARK" for t, _ in got)


def test_watch_without_resource_version_sends_current_state(co: client.CustomObjectsApi) -> None:
    co.create_cluster_custom_object(G, V2, "cohorts", {
        "apiVersion": f"{G}/{V2}", "kind": "Cohort", "metadata": {"name": "co-1"}})  # fmt: skip
    w = watch.Watch()
    events = [(e["type"], e["object"]["metadata"]["name"]) for e in w.stream(
        co.list_cluster_custom_object, G, V2, "cohorts", timeout_seconds=1)]  # fmt: skip
    assert ("ADDED", "co-1") in events


def test_http_details(server: ServerProcess) -> None:
    base = server.url
    r = server.http.get(f"{base}/apis/{G}/{V2}/nothings")
    assert r.status_code == 404 and r.json()["kind"] == "Status"
    r = server.http.get(
        f"{base}/api/v1/namespaces/default", headers={"Accept": "application/vnd.kubernetes.protobuf"}
    )
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.json()["metadata"]["name"] == "default"
    r = server.http.get(
        f"{base}/api/v1/namespaces", headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    )
    assert r.json()["kind"] == "Table"
    assert [c["name"] for c in r.json()["columnDefinitions"]][:3] == ["Name", "Status", "Age"]
    r = server.http.patch(
        f"{base}/apis/{G}/{V2}/clusterqueues/x",
        data="{}",
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    )
    assert r.status_code == 415
    assert r.json()["reason"] == "UnsupportedMediaType"
    r = server.http.post(
        f"{base}/apis/{G}/{V2}/clusterqueues", data="{not json", headers={"Content-Type": "application/json"}
    )
    assert r.status_code == 400 and r.json()["kind"] == "Status"
    r = server.http.get(f"{base}/apis/{G}/{V1}/clusterqueues")
    assert "deprecated" in r.headers.get("warning", "")
    r = server.http.get(f"{base}/openapi/v3")
    path = r.json()["paths"]["apis/kueue.x-k8s.io/v1beta2"]["serverRelativeURL"]
    doc = server.http.get(base + path)
    assert doc.status_code == 200 and "components" in doc.json()
    etag = doc.headers["etag"]
    assert server.http.get(base + path, headers={"If-None-Match": etag}).status_code == 304


# --- process lifecycle ----------------------------------------------------------------------------------


def test_token_and_tls_on_non_loopback_bind(tmp_path: Path) -> None:
    srv = start_server(tmp_path, ["--host", "0.0.0.0", "--no-controllers"])
    try:
        assert srv.token and srv.url.startswith("https://127.0.0.1:")
        url, ca = f"{srv.url}/api/v1/namespaces", srv.verify()
        r = requests.get(url, verify=ca)
        assert r.status_code == 401
        assert r.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                            "message": "Unauthorized", "reason": "Unauthorized", "code": 401}  # fmt: skip
        assert requests.get(url, headers={"Authorization": "Bearer wrong"}, verify=ca).status_code == 401
        assert requests.get(url, headers=srv.headers(), verify=ca).status_code == 200
        assert requests.get(f"{srv.url}/healthz", verify=ca).text == "ok"
        out = srv.kubectl("get", "namespaces", "-o", "name").stdout.split()
        assert "namespace/default" in out
        assert client.CoreV1Api(srv.api_client()).read_namespace("default").metadata.name == "default"
    finally:
        srv.stop()


def test_state_survives_restart_and_ctrl_c_is_clean(tmp_path: Path) -> None:
    srv = start_server(tmp_path)
    co = client.CustomObjectsApi(srv.api_client())
    created = co.create_cluster_custom_object(G, V2, "clusterqueues", cq("durable", "keep"))
    # an open watch must not hold up shutdown
    stream = srv.session().get(f"{srv.url}/apis/{G}/{V2}/clusterqueues?watch=true", stream=True, timeout=30)
    assert stream.status_code == 200
    started = time.monotonic()
    assert srv.stop(signal.SIGINT) == 0
    assert time.monotonic() - started < 8
    assert "stopped" in "".join(srv.output)
    srv2 = start_server(tmp_path, data_dir=srv.data_dir)
    try:
        co2 = client.CustomObjectsApi(srv2.api_client())
        got = co2.get_cluster_custom_object(G, V2, "clusterqueues", "durable")
        assert got["metadata"]["uid"] == created["metadata"]["uid"]
        assert got["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
        more = co2.create_cluster_custom_object(G, V2, "clusterqueues", cq("after"))
        assert int(more["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
        names = [n.metadata.name for n in client.CoreV1Api(srv2.api_client()).list_namespace().items]
        assert names.count("default") == 1
    finally:
        assert srv2.stop(signal.SIGTERM) == 0


def test_watch_expired_resource_version_is_410(tmp_path: Path) -> None:
    srv = start_server(tmp_path, ["--watch-history", "5", "--no-controllers"])
    try:
        co = client.CustomObjectsApi(srv.api_client())
        first = co.list_cluster_custom_object(G, V2, "resourceflavors")["metadata"]["resourceVersion"]
        for i in range(12):
            co.create_cluster_custom_object(
                G,
                V2,
                "resourceflavors",
                {"apiVersion": f"{G}/{V2}", "kind": "ResourceFlavor", "metadata": {"name": f"x-{i}"}},
            )
        with pytest.raises(ApiException) as err:
            for _ in watch.Watch().stream(
                co.list_cluster_custom_object,
                G,
                V2,
                "resourceflavors",
                resource_version=first,
                timeout_seconds=2,
            ):
                pass
        assert err.value.status == 410
        r = srv.http.get(
            f"{srv.url}/apis/{G}/{V2}/resourceflavors?watch=true&resourceVersion={first}", timeout=10
        )
        event = json.loads(r.text.splitlines()[0])
        assert event["type"] == "ERROR"
        assert event["object"]["code"] == 410 and event["object"]["reason"] == "Expired"
        assert event["object"]["message"].startswith(f"too old resource version: {first} (")
    finally:
        srv.stop()


def test_no_controllers_flag_is_accepted(tmp_path: Path) -> None:
    srv = start_server(tmp_path, ["--no-controllers"])
    try:
        assert "controllers: disabled" in "".join(srv.output)
        wait_for(lambda: srv.http.get(f"{srv.url}/readyz").text == "ok")
    finally:
        srv.stop()
