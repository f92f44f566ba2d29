"""The visibility API end to end: real ``pykueue serve`` (its controllers in their own process), real kubectl and
the official ``kubernetes`` Python client, after a scenario with borrowing and a preemption."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_support import Kueue, run_scenario, start_kueue

CQ_A = "/apis/visibility.kueue.x-k8s.io/{v}/clusterqueues/cq-a/pendingworkloads"
CQ_B = "/apis/visibility.kueue.x-k8s.io/{v}/clusterqueues/cq-b/pendingworkloads"
LQ = "/apis/visibility.kueue.x-k8s.io/{v}/namespaces/default/localqueues/{lq}/pendingworkloads"


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Kueue, dict[str, str]]]:
    k = start_kueue(tmp_path_factory.mktemp("visibility"), "embedded", ["--no-job-runner"])
    try:
        names = run_scenario(k)
        yield k, names
    finally:
        k.stop()


def raw(k: Kueue, path: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(k.kubectl("get", "--raw", path).stdout)
    return out


def positions(doc: dict[str, Any]) -> list[tuple[str, str, int, int, int]]:
    return [
        (i["metadata"]["name"], i["localQueueName"], i["priority"], i["positionInClusterQueue"], i["positionInLocalQueue"])
        for i in doc["items"]
    ]


@pytest.mark.parametrize("version", ["v1beta2", "v1beta1"])
def test_cluster_queue_positions_follow_the_queue_order(scenario: tuple[Kueue, dict[str, str]], version: str) -> None:
    k, wl = scenario
    doc = raw(k, CQ_A.format(v=version))
    assert doc["kind"] == "PendingWorkloadsSummary"
    assert doc["apiVersion"] == f"visibility.kueue.x-k8s.io/{version}"
    assert doc["metadata"] == {}
    # Higher priority first, then earlier creation; LocalQueue positions count within the CQ order.
    assert positions(doc) == [
        (wl["p-mid"], "lq-a2", 50, 0, 0),
        (wl["p-low-1"], "lq-a1", 10, 1, 0),
        (wl["p-low-2"], "lq-a2", 10, 2, 1),
        (wl["p-low-3"], "lq-a1", 10, 3, 1),
    ]
    first = doc["items"][0]["metadata"]
    job = k.get("job", "p-mid")
    assert first["namespace"] == "default"
    assert first["ownerReferences"] == [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "p-mid", "uid": job["metadata"]["uid"]}
    ]
    assert first["creationTimestamp"] == k.get("workload", wl["p-mid"])["metadata"]["creationTimestamp"]


def test_preempted_workload_queues_first_in_its_cluster_queue(scenario: tuple[Kueue, dict[str, str]]) -> None:
    k, wl = scenario
    doc = raw(k, CQ_B.format(v="v1beta2"))
    assert positions(doc) == [(wl["b1"], "lq-b", 0, 0, 0), (wl["b2"], "lq-b", 0, 1, 1)]
    admitted_names = {i["metadata"]["name"] for i in raw(k, CQ_A.format(v="v1beta2"))["items"]}
    assert wl["a-hi"] not in admitted_names  # admitted workloads are not pending


def test_local_queue_positions_and_paging(scenario: tuple[Kueue, dict[str, str]]) -> None:
    k, wl = scenario
    doc = raw(k, LQ.format(v="v1beta2", lq="lq-a1"))
    assert positions(doc) == [(wl["p-low-1"], "lq-a1", 10, 1, 0), (wl["p-low-3"], "lq-a1", 10, 3, 1)]
    paged = raw(k, LQ.format(v="v1beta2", lq="lq-a1") + "?offset=1&limit=1")
    assert positions(paged) == [(wl["p-low-3"], "lq-a1", 10, 3, 1)]
    cq_paged = raw(k, CQ_A.format(v="v1beta2") + "?limit=2&offset=1")
    assert positions(cq_paged) == [(wl["p-low-1"], "lq-a1", 10, 1, 0), (wl["p-low-2"], "lq-a2", 10, 2, 1)]
    # limit=0 is defaulted to 1000; a negative limit is clamped to 0; a negative offset to 0.
    assert len(raw(k, CQ_A.format(v="v1beta2") + "?limit=0")["items"]) == 4
    assert raw(k, CQ_A.format(v="v1beta2") + "?limit=-1")["items"] == []
    assert len(raw(k, CQ_A.format(v="v1beta2") + "?offset=-5")["items"]) == 4
    assert raw(k, LQ.format(v="v1beta2", lq="lq-b"))["items"][0]["metadata"]["name"] == wl["b1"]


def test_unknown_queues_and_malformed_parameters(scenario: tuple[Kueue, dict[str, str]]) -> None:
    k, _ = scenario
    missing = k.kubectl("get", "--raw", CQ_A.format(v="v1beta2").replace("cq-a", "nope"), check=False)
    assert missing.returncode != 0
    assert 'clusterqueue.visibility.kueue.x-k8s.io "nope" not found' in missing.stderr
    lq = k.kubectl("get", "--raw", LQ.format(v="v1beta2", lq="nope"), check=False)
    assert 'localqueue.visibility.kueue.x-k8s.io "nope" not found' in lq.stderr
    bad = k.kubectl("get", "--raw", CQ_A.format(v="v1beta2") + "?limit=ten", check=False)
    assert bad.returncode != 0 and "strconv.ParseInt: parsing" in bad.stderr


def _get(api: Any, path: str, path_params: dict[str, str], query: list[tuple[str, str]] | None = None) -> Any:
    """A GET through the official client's serializer, auth and error handling (kubernetes 32+)."""
    method, url, headers, body, post = api.param_serialize(
        "GET", path, path_params=path_params, query_params=query or [], header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
    )
    response = api.call_api(method, url, header_params=headers, body=body, post_params=post)
    response.read()
    return api.response_deserialize(response, {"200": "object"})


def test_official_python_client_and_status_objects(scenario: tuple[Kueue, dict[str, str]]) -> None:
    from kubernetes.client.exceptions import ApiException

    k, wl = scenario
    api = k.server.api_client()
    result = _get(
        api,
        "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{namespace}/localqueues/{name}/pendingworkloads",
        {"namespace": "default", "name": "lq-a2"},
        [("limit", "1")],
    )
    assert result.status_code == 200
    items = result.data["items"]
    assert [(i["metadata"]["name"], i["positionInClusterQueue"], i["positionInLocalQueue"]) for i in items] == [
        (wl["p-mid"], 0, 0)
    ]
    cq_path = "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{name}/pendingworkloads"
    with pytest.raises(ApiException) as missing:
        _get(api, cq_path, {"name": "nope"})
    assert missing.value.status == 404
    assert json.loads(missing.value.body) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'clusterqueue.visibility.kueue.x-k8s.io "nope" not found',
        "reason": "NotFound",
        "details": {"name": "nope", "group": "visibility.kueue.x-k8s.io", "kind": "clusterqueue"},
        "code": 404,
    }
    with pytest.raises(ApiException) as bad:
        _get(api, cq_path, {"name": "cq-a"}, [("offset", "1.5")])
    assert bad.value.status == 400
    body = json.loads(bad.value.body)
    assert (body["reason"], body["message"]) == ("BadRequest", 'strconv.ParseInt: parsing "1.5": invalid syntax')


def test_discovery_lists_the_group(scenario: tuple[Kueue, dict[str, str]], tmp_path: Path) -> None:
    k, _ = scenario
    versions = k.kubectl("api-versions").stdout.split()
    assert "visibility.kueue.x-k8s.io/v1beta2" in versions and "visibility.kueue.x-k8s.io/v1beta1" in versions
    listing = raw(k, "/apis/visibility.kueue.x-k8s.io/v1beta2")
    assert [(r["name"], r["namespaced"], r["verbs"]) for r in listing["resources"]] == [
        ("clusterqueues", False, []),
        ("clusterqueues/pendingworkloads", False, ["get"]),
        ("localqueues", True, []),
        ("localqueues/pendingworkloads", True, ["get"]),
    ]
    group = raw(k, "/apis/visibility.kueue.x-k8s.io")
    assert group["preferredVersion"]["version"] == "v1beta2"
    # kubectl api-resources reads aggregated discovery; the parents have no verbs, so, exactly as on
    # a real cluster with Kueue, it lists nothing for the group, while the rest still resolves.
    resources = k.kubectl("api-resources", "--api-group=visibility.kueue.x-k8s.io", "--no-headers").stdout
    assert resources.strip() == ""
    assert "clusterqueues" in k.kubectl("api-resources", "--api-group=kueue.x-k8s.io").stdout


# --- cluster mode: `pykueue controller` serves the group on its own HTTPS port ----------------------


def test_controller_serves_visibility_on_its_own_https_port(tmp_path: Path) -> None:
    import re

    from e2e_support import wait_for

    k = start_kueue(
        tmp_path,
        "cluster",
        # pykueue serve has no TokenReview/SubjectAccessReview to delegate to (tests/cluster covers that)
        ["--visibility-port", "0", "--visibility-bind-address", "127.0.0.1", "--visibility-auth", "none"],
        run_jobs=False,
    )
    try:
        line = wait_for(
            lambda: re.search(r"visibility API on (https://\S+)", k.controller_log()), what="visibility server up"
        )
        url = line.group(1)
        ca = tmp_path / "pods" / "visibility-certs" / "ca.crt"

        def kubectl_raw(path: str, check: bool = True) -> Any:
            # The real kubectl against the controller's port, verifying its self-signed CA (a token
            # keeps kubectl from prompting for a password over https; this port does not use it).
            return k.server.kubectl(
                "--server", url, "--certificate-authority", str(ca), "--token", "unused",
                "get", "--raw", path, check=check,
            )  # fmt: skip

        names = run_scenario(
            k, lambda path: [i["metadata"]["name"] for i in json.loads(kubectl_raw(path).stdout)["items"]]
        )
        doc = json.loads(kubectl_raw(CQ_A.format(v="v1beta2")).stdout)
        assert [i["metadata"]["name"] for i in doc["items"]] == [
            names["p-mid"], names["p-low-1"], names["p-low-2"], names["p-low-3"]
        ]
        lq = json.loads(kubectl_raw(LQ.format(v="v1beta1", lq="lq-b")).stdout)
        assert positions(lq) == [(names["b1"], "lq-b", 0, 0, 0), (names["b2"], "lq-b", 0, 1, 1)]
        assert lq["apiVersion"] == "visibility.kueue.x-k8s.io/v1beta1"
        missing = kubectl_raw(CQ_A.format(v="v1beta2").replace("cq-a", "gone"), check=False)
        assert 'clusterqueue.visibility.kueue.x-k8s.io "gone" not found' in missing.stderr
        groups = json.loads(kubectl_raw("/apis").stdout)
        assert [g["name"] for g in groups["groups"]] == ["visibility.kueue.x-k8s.io"]
        assert kubectl_raw("/readyz").stdout == "ok"
        # The embedded server does not serve the group when the controllers run elsewhere.
        absent = k.kubectl("get", "--raw", CQ_A.format(v="v1beta2"), check=False)
        assert absent.returncode != 0 and "NotFound" in absent.stderr
    finally:
        k.stop()
