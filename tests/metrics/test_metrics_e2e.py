"""Kueue's metrics end to end: a real ``pykueue serve`` (and ``pykueue controller``), real kubectl.

After borrowing, a reclaim that preempts the borrower, a deactivation that evicts the preemptor
and the borrower's re-admission, ``/metrics`` (fetched through the kubeconfig, so with whatever
authentication the API requires) holds exactly those counts and label sets.
"""

from __future__ import annotations

import re
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ABSENT, Expected, Samples, labels, parse, scrape_until

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "controllers" / "e2e"))
from support import ROOT, Kueue, is_true, job, local_queue, start_kueue, start_server, wait_for

CONFIG = """apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
metrics:
  enableClusterQueueResources: true
admissionFairSharing:
  usageHalfLifeTime: 10m
  usageSamplingInterval: 1s
"""

FLAVOR = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: m-flavor
"""

CQ = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: {name}
spec:
  namespaceSelector: {{}}
  cohortName: m-cohort
  preemption:
    reclaimWithinCohort: Any
    withinClusterQueue: LowerPriority
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: m-flavor
      resources:
      - name: cpu
        nominalQuota: 1
      - name: memory
        nominalQuota: 4Gi
"""


def scrape(k: Kueue) -> Samples:
    """``/metrics`` through the kubeconfig (kubectl adds the token and CA the API requires)."""
    return parse(k.kubectl("get", "--raw", "/metrics").stdout)


def workload_name(k: Kueue, job_name: str) -> str:
    wl = wait_for(lambda: k.workload_of(job_name), what=f"workload of {job_name}")
    return str(wl["metadata"]["name"])


def admitted(k: Kueue, job_name: str) -> bool:
    return is_true(k.workload_of(job_name), "Admitted")


def setup_queues(k: Kueue) -> None:
    k.apply(FLAVOR)
    for name in ("m-a", "m-b"):
        k.apply(CQ.format(name=name))
        k.apply(local_queue(name, name))


def run_scenario(k: Kueue) -> None:
    setup_queues(k)
    k.apply(job("m-borrower", "m-a", command="sleep 300", cpu="2"))
    wait_for(lambda: admitted(k, "m-borrower"), timeout=30, what="borrower admitted (borrowing 1 cpu)")
    k.apply(job("m-owner", "m-b", command="sleep 300", cpu="1"))
    wait_for(lambda: admitted(k, "m-owner"), timeout=30, what="owner admitted after preempting the borrower")
    owner = workload_name(k, "m-owner")
    k.kubectl("patch", "workload", owner, "-n", "default", "--type=merge", "-p", '{"spec":{"active":false}}')
    wait_for(lambda: is_true(k.get("workload", owner), "Evicted"), timeout=30, what="owner evicted (deactivated)")
    wait_for(lambda: admitted(k, "m-borrower"), timeout=60, what="borrower admitted again")


def expected_counts() -> Expected:
    cq_a = labels(cluster_queue="m-a", priority_class="")
    cq_b = labels(cluster_queue="m-b", priority_class="")
    evictions = {
        labels(cluster_queue="m-a", reason="Preempted", underlying_cause="", priority_class=""): 1.0,
        labels(cluster_queue="m-b", reason="Deactivated", underlying_cause="", priority_class=""): 1.0,
    }
    return {
        "kueue_quota_reserved_workloads_total": {cq_a: 2.0, cq_b: 1.0},
        "kueue_admitted_workloads_total": {cq_a: 2.0, cq_b: 1.0},
        "kueue_quota_reserved_wait_time_seconds_count": {cq_a: 2.0, cq_b: 1.0},
        "kueue_admission_wait_time_seconds_count": {cq_a: 2.0, cq_b: 1.0},
        "kueue_cohort_subtree_admitted_workloads_total": {labels(cohort="m-cohort", priority_class=""): 3.0},
        "kueue_preempted_workloads_total": {labels(preempting_cluster_queue="m-b", reason="InCohortReclamation"): 1.0},
        "kueue_evicted_workloads_total": evictions,
        "kueue_evicted_workloads_once_total": evictions,
        "kueue_local_queue_evicted_workloads_total": {
            labels(name="m-a", namespace="default", reason="Preempted", underlying_cause="", priority_class=""): 1.0,
            labels(name="m-b", namespace="default", reason="Deactivated", underlying_cause="", priority_class=""): 1.0,
        },
        ("kueue_admission_attempts_total", labels(result="success")): 3.0,
    }


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kueue]:
    base = tmp_path_factory.mktemp("metrics-embedded")
    (base / "config.yaml").write_text(CONFIG)
    k = start_kueue(base, "embedded", ["--config", str(base / "config.yaml")])
    yield k
    k.stop()


def test_metrics_after_borrowing_preemption_and_evictions(embedded: Kueue) -> None:
    k = embedded
    run_scenario(k)
    # The last admission is counted right after its write, each family after the other: wait for
    # all the counts at once.
    scrape_until(lambda: scrape(k), expected_counts(), timeout=20, what="the scenario's counts")
    # State gauges: m-a holds the 2-cpu borrower (1 borrowed); m-b is empty again; the deactivated
    # owner is neither pending nor reserving.
    a = {"cohort": "m-cohort", "cluster_queue": "m-a", "flavor": "m-flavor", "resource": "cpu"}
    b = {**a, "cluster_queue": "m-b"}
    scrape_until(
        lambda: scrape(k),
        {
            ("kueue_cluster_queue_resource_reservation", labels(**b)): 0.0,
            ("kueue_cluster_queue_resource_reservation", labels(**a)): 2.0,
            ("kueue_cluster_queue_nominal_quota", labels(**a)): 1.0,
            ("kueue_cluster_queue_borrowing_limit", labels(**a)): float("inf"),
            ("kueue_reserving_active_workloads", labels(cluster_queue="m-a")): 1.0,
            ("kueue_cohort_subtree_quota", labels(cohort="m-cohort", flavor="m-flavor", resource="cpu")): 2.0,
            ("kueue_cluster_queue_status", labels(cluster_queue="m-a", status="active")): 1.0,
            ("kueue_pending_workloads", labels(cluster_queue="m-b", status="active")): 0.0,
        },
        what="the state gauges after the scenario",
    )
    k.kubectl("delete", "job", "m-borrower", "m-owner", "-n", "default", "--cascade=background")


AFS_USAGE = "kueue_local_queue_admission_fair_sharing_usage"


def test_pending_resources_and_local_queue_afs_usage(embedded: Kueue) -> None:
    """``kueue_cluster_queue_resource_pending`` and ``kueue_local_queue_admission_fair_sharing_usage``
    on ``pykueue serve``'s /metrics: a job too big for its ClusterQueue is pending with its requests;
    a LocalQueue's AFS usage starts at 0, grows once a job of it is admitted and goes with it."""
    k = embedded
    k.apply(FLAVOR)
    k.apply(CQ.format(name="m-afs").replace("cohortName: m-cohort", "admissionScope: {admissionMode: UsageBasedAdmissionFairSharing}"))
    k.apply(local_queue("m-afs", "m-afs"))
    usage = labels(name="m-afs", namespace="default", cluster_queue="m-afs")
    cpu = labels(cluster_queue="m-afs", resource="cpu")
    memory = labels(cluster_queue="m-afs", resource="memory")
    scrape_until(
        lambda: scrape(k),
        {
            (AFS_USAGE, usage): 0.0,
            ("kueue_cluster_queue_resource_pending", cpu): 0.0,
            ("kueue_cluster_queue_resource_pending", memory): 0.0,
        },
        what="the new queues' usage and pending resources at 0",
    )
    k.apply(job("m-afs-big", "m-afs", command="sleep 300", cpu="3"))  # nominal 1 cpu, no cohort: pending
    scrape_until(lambda: scrape(k), {("kueue_cluster_queue_resource_pending", cpu): 3.0}, what="the big job pending")
    k.apply(job("m-afs-run", "m-afs", command="sleep 300", cpu="1"))
    wait_for(lambda: admitted(k, "m-afs-run"), timeout=30, what="the 1-cpu job admitted")
    wait_for(lambda: scrape(k).get(AFS_USAGE, {}).get(usage, 0.0) > 0.0, timeout=30, what="m-afs's AFS usage above 0")
    k.kubectl("delete", "job", "m-afs-big", "m-afs-run", "-n", "default", "--cascade=background")
    scrape_until(lambda: scrape(k), {("kueue_cluster_queue_resource_pending", cpu): 0.0}, what="nothing pending")
    k.kubectl("delete", "localqueue", "m-afs", "-n", "default")
    scrape_until(lambda: scrape(k), {(AFS_USAGE, usage): ABSENT}, what="the deleted LocalQueue's usage series cleared")


def test_metrics_endpoint_requires_the_api_credentials(embedded: Kueue) -> None:
    server = embedded.server
    url = server.url.rstrip("/") + "/metrics"
    context = ssl.create_default_context(cafile=str(server.ca_file)) if server.ca_file else None

    def get(headers: dict[str, str]) -> int:
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10, context=context) as r:
                return int(r.status)
        except urllib.error.HTTPError as err:
            return err.code

    assert get(server.headers()) == 200
    if server.token:  # the API requires a bearer token: so does /metrics
        assert get({}) == 401
        assert get({"Authorization": "Bearer not-the-token"}) == 401


def _metrics_url(k: Kueue) -> str:
    def found() -> str | None:
        m = re.search(r"serving metrics at (http://\S+)", k.controller_log())
        return m.group(1) if m else None

    return str(wait_for(found, timeout=30, what="controller metrics address in its log"))


def test_controller_metrics_port(tmp_path: Path) -> None:
    k = start_kueue(tmp_path, "cluster", ["--metrics-bind-address", "127.0.0.1:0"], run_jobs=False)
    try:
        url = _metrics_url(k)
        setup_queues(k)
        k.apply(job("m-port", "m-a", command="sleep 300", cpu="1"))
        wait_for(lambda: admitted(k, "m-port"), timeout=30, what="job admitted by the separate controller")
        cq_a = labels(cluster_queue="m-a", priority_class="")

        def scraped() -> Samples:
            with urllib.request.urlopen(url, timeout=10) as resp:
                return parse(resp.read().decode())

        scrape_until(
            scraped,
            {"kueue_admitted_workloads_total": {cq_a: 1.0}, "kueue_quota_reserved_workloads_total": {cq_a: 1.0}},
            timeout=20,
            what="admission counted on the controller's port",
        )
        # The API-only server has no controllers, so nothing to expose at its /metrics.
        missing = k.kubectl("get", "--raw", "/metrics", check=False)
        assert missing.returncode != 0 and "NotFound" in missing.stderr + missing.stdout
    finally:
        k.stop()


def test_controller_metrics_port_disabled_with_0(tmp_path: Path) -> None:
    k = start_kueue(tmp_path, "cluster", ["--metrics-bind-address", "0"], run_jobs=False)
    try:
        wait_for(lambda: "running" in k.controller_log(), timeout=30, what="controller running")
        assert "serving metrics" not in k.controller_log()
    finally:
        k.stop()


def test_controller_fails_when_the_requested_metrics_port_is_taken(tmp_path: Path) -> None:
    import socket

    server = start_server(tmp_path, ["--no-controllers"])
    taken = socket.socket()
    try:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        cmd = [sys.executable, "-m", "pykueue", "controller", "--kubeconfig", str(server.kubeconfig)]
        out = subprocess.run(
            [*cmd, "--metrics-bind-address", f"127.0.0.1:{port}"], capture_output=True, text=True, cwd=tmp_path, timeout=60
        )
        assert out.returncode == 2, out.stdout + out.stderr
        assert f"error: --metrics-bind-address 127.0.0.1:{port}: Address already in use" in out.stdout
    finally:
        taken.close()
        server.stop()


def test_controller_rejects_a_malformed_metrics_address(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "pykueue", "controller", "--kubeconfig", str(tmp_path / "none")]
    out = subprocess.run(
        [*cmd, "--metrics-bind-address", "localhost"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert out.returncode == 2
    assert 'error: --metrics-bind-address "localhost": missing port' in out.stdout
