"""The visibility storage logic over a real queue manager (upstream ``pkg/visibility/storage``
``pending_workloads_cq_test.go``, ``pending_workloads_lq_test.go``, ``utils_test.go``)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))

from builders import at, cluster_queue, flavor_quotas, local_queue, workload

from pykueue.core.queue import QueueManager
from pykueue.kube.status import StatusError
from pykueue.visibility.api import (
    PendingWorkloadInfo,
    VisibilityAPI,
    cluster_queue_pending,
    local_queue_pending,
    pending_workload_options,
)
from pykueue.visibility.source import snapshot_pending


class QueueSource:
    """The PendingSource protocol over a real QueueManager, on the test's own thread."""

    def __init__(self, queues: QueueManager, lq_to_cq: dict[str, str]) -> None:
        self.queues = queues
        self.lq_to_cq = lq_to_cq

    def pending_workloads(self, cluster_queue: str) -> Sequence[PendingWorkloadInfo] | None:
        return snapshot_pending(self.queues, cluster_queue)

    def cluster_queue_of(self, namespace: str, local_queue: str) -> str | None:
        key = f"{namespace}/{local_queue}"
        return self.lq_to_cq[key] if self.queues.has_local_queue(key) else None


@pytest.fixture
def source() -> QueueSource:
    """cq: lq-a and lq-b (namespace ns1), lq-c (ns2); seven workloads of mixed priority/time."""
    qm = QueueManager()
    qm.add_cluster_queue(cluster_queue("cq", flavor_quotas("f", cpu=1)))
    qm.add_cluster_queue(cluster_queue("empty", flavor_quotas("f", cpu=1)))
    lqs = {"ns1/lq-a": "cq", "ns1/lq-b": "cq", "ns2/lq-c": "cq", "ns1/stopped": "cq"}
    for key, cq in lqs.items():
        ns, name = key.split("/")
        qm.add_local_queue(local_queue(name, ns, cq, stop_policy="Hold" if name == "stopped" else ""))
    for name, lq, ns, prio, t in [
        ("a1", "lq-a", "ns1", 0, 1),
        ("b1", "lq-b", "ns1", 0, 2),
        ("a2", "lq-a", "ns1", 5, 3),
        ("c1", "lq-c", "ns2", 0, 4),
        ("a3", "lq-a", "ns1", 0, 5),
        ("b2", "lq-b", "ns1", None, 6),
        ("c2", "lq-c", "ns2", 0, 7),
    ]:
        assert qm.add_or_update_workload(workload(name, ns, lq, priority=prio, created=at(t)), at(10))
    return QueueSource(qm, lqs)


def rows(doc: dict[str, object]) -> list[tuple[str, int, int]]:
    items = doc["items"]
    assert isinstance(items, list)
    return [(i["metadata"]["name"], i["positionInClusterQueue"], i["positionInLocalQueue"]) for i in items]


ALL = [("a2", 0, 0), ("a1", 1, 1), ("b1", 2, 0), ("c1", 3, 0), ("a3", 4, 2), ("b2", 5, 1), ("c2", 6, 1)]


def test_cluster_queue_order_and_local_queue_positions(source: QueueSource) -> None:
    doc = cluster_queue_pending(source, "v1beta2", "cq", {})
    assert rows(doc) == ALL
    item = doc["items"][0]  # type: ignore[index]
    assert item == {
        "metadata": {"name": "a2", "namespace": "ns1", "creationTimestamp": "2024-01-01T00:00:03Z"},
        "priority": 5,
        "localQueueName": "lq-a",
        "positionInClusterQueue": 0,
        "positionInLocalQueue": 0,
    }
    assert doc["items"][5]["priority"] == 0  # type: ignore[index]  # nil priority → 0


def test_limit_offset_query_parameters_set(source: QueueSource) -> None:
    # Positions in LocalQueues are counted from the start even for skipped entries.
    assert rows(cluster_queue_pending(source, "v1beta2", "cq", {"limit": ["2"], "offset": ["3"]})) == ALL[3:5]
    assert rows(cluster_queue_pending(source, "v1beta2", "cq", {"offset": ["6"]})) == ALL[6:]
    assert rows(cluster_queue_pending(source, "v1beta2", "cq", {"offset": ["60"]})) == []


def test_negative_limit_is_clamped_to_zero_and_returns_no_workloads(source: QueueSource) -> None:
    assert rows(cluster_queue_pending(source, "v1beta2", "cq", {"limit": ["-1"]})) == []
    assert rows(local_queue_pending(source, "v1beta2", "ns1", "lq-a", {"limit": ["-7"]})) == []


def test_local_queue_endpoint(source: QueueSource) -> None:
    assert rows(local_queue_pending(source, "v1beta1", "ns1", "lq-a", {})) == [("a2", 0, 0), ("a1", 1, 1), ("a3", 4, 2)]
    assert rows(local_queue_pending(source, "v1beta1", "ns1", "lq-a", {"offset": ["1"], "limit": ["1"]})) == [
        ("a1", 1, 1)
    ]
    assert rows(local_queue_pending(source, "v1beta2", "ns2", "lq-c", {"offset": ["1"]})) == [("c2", 6, 1)]


def test_not_found(source: QueueSource) -> None:
    with pytest.raises(StatusError) as cq:
        cluster_queue_pending(source, "v1beta2", "missing", {})
    assert (cq.value.code, cq.value.message) == (404, 'clusterqueue.visibility.kueue.x-k8s.io "missing" not found')
    assert cq.value.details == {"name": "missing", "group": "visibility.kueue.x-k8s.io", "kind": "clusterqueue"}
    # A stopped LocalQueue is not tracked by the queue manager: 404 as upstream.
    for ns, name in (("ns1", "stopped"), ("ns2", "lq-a"), ("ns1", "nope")):
        with pytest.raises(StatusError) as lq:
            local_queue_pending(source, "v1beta2", ns, name, {})
        assert (lq.value.code, lq.value.message) == (404, f'localqueue.visibility.kueue.x-k8s.io "{name}" not found')
    assert cluster_queue_pending(source, "v1beta2", "empty", {})["items"] == []


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({}, (1000, 0)),
        ({"limit": ["0"]}, (1000, 0)),  # SetDefaults_PendingWorkloadOptions
        ({"pretty": ["true"]}, (1000, 0)),
        ({"limit": ["-3"], "offset": ["-2"]}, (0, 0)),
        ({"limit": ["100001"]}, (100_000, 0)),
        ({"limit": ["+7"], "offset": ["0012"]}, (7, 12)),
        ({"limit": ["5", "x"]}, (5, 0)),  # the first value counts
        ({"limit": ["9223372036854775807"]}, (100_000, 0)),
    ],
)
def test_options_decoding(query: dict[str, list[str]], expected: tuple[int, int]) -> None:
    assert pending_workload_options(query) == expected


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"limit": ["ten"]}, 'strconv.ParseInt: parsing "ten": invalid syntax'),
        ({"limit": [""]}, 'strconv.ParseInt: parsing "": invalid syntax'),
        ({"offset": [" 1"]}, 'strconv.ParseInt: parsing " 1": invalid syntax'),
        ({"offset": ["1_000"]}, 'strconv.ParseInt: parsing "1_000": invalid syntax'),
        ({"offset": ['"']}, 'strconv.ParseInt: parsing "\\"": invalid syntax'),
        ({"limit": ["9223372036854775808"]}, 'strconv.ParseInt: parsing "9223372036854775808": value out of range'),
    ],
)
def test_malformed_options_are_bad_requests(query: dict[str, list[str]], message: str) -> None:
    with pytest.raises(StatusError) as err:
        pending_workload_options(query)
    assert (err.value.code, err.value.reason, err.value.message) == (400, "BadRequest", message)


def test_http_dispatch(source: QueueSource) -> None:
    api = VisibilityAPI()
    unavailable = api.handle("GET", "/v1beta2/clusterqueues/cq/pendingworkloads", {})
    assert unavailable.status == 503
    api.attach(source)
    ok = api.handle("GET", "/v1beta2/namespaces/ns1/localqueues/lq-b/pendingworkloads", {})
    assert ok.status == 200 and [i["metadata"]["name"] for i in json.loads(ok.body)["items"]] == ["b1", "b2"]
    as_yaml = api.handle("GET", "/v1beta1/clusterqueues/cq/pendingworkloads", {"limit": ["1"]}, "application/yaml")
    assert as_yaml.content_type == "application/yaml" and b"positionInClusterQueue: 0" in as_yaml.body
    assert api.handle("POST", "/v1beta2/clusterqueues/cq/pendingworkloads", {}).status == 405
    for path in ("/v1/clusterqueues/cq/pendingworkloads", "/v1beta2/clusterqueues/cq", "/v1beta2/clusterqueues/cq/x"):
        assert api.handle("GET", path, {}).status == 404, path
    assert json.loads(api.handle("GET", "/v1beta2", {}).body)["groupVersion"] == "visibility.kueue.x-k8s.io/v1beta2"


def test_cluster_manifests_point_the_apiservices_at_the_visibility_port() -> None:
    import subprocess

    import yaml

    from pykueue.visibility.api import GROUP, VERSIONS
    from pykueue.visibility.server import DEFAULT_PORT

    root = Path(__file__).resolve().parents[2] / "config" / "visibility"
    out = subprocess.run(["kubectl", "kustomize", str(root)], capture_output=True, text=True, check=True).stdout
    docs = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(out)}
    service = docs[("Service", "kueue-visibility-server")]
    assert service["spec"]["ports"][0]["targetPort"] == DEFAULT_PORT
    for version in VERSIONS:
        spec = docs[("APIService", f"{version}.{GROUP}")]["spec"]
        assert (spec["group"], spec["version"]) == (GROUP, version)
        assert spec["service"] == {"name": "kueue-visibility-server", "namespace": service["metadata"]["namespace"]}
    resources = {
        r for (kind, _), d in docs.items() if kind == "ClusterRole" for rule in d["rules"] for r in rule["resources"]
    }
    assert resources == {"clusterqueues/pendingworkloads", "localqueues/pendingworkloads"}
