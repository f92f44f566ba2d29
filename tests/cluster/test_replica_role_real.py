"""``replica_role`` on a real kube-apiserver: two ``pykueue controller --leader-elect`` replicas.

Both metrics ports are scraped (parsed with prometheus_client's parser): the Lease holder's series
say ``leader``, the standby's ``follower`` (its caches and queues are warm, so it reports the same
state gauges, as upstream's replicas do); after the leader is killed the standby takes the Lease and
its series say ``leader`` (upstream ``pkg/util/roletracker``).
"""

from __future__ import annotations

import signal
import subprocess
import urllib.request
from pathlib import Path

import support
from prometheus_client.parser import text_string_to_metric_families
from realcluster import CONTROLLER_USER, install_controller_rbac, start_real_cluster
from test_ha_real import CONFIG, LEASE, _controller, _holder, _identity

QUEUES = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: role-flavor
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: role-cq
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: role-flavor
      resources:
      - name: cpu
        nominalQuota: 1
      - name: memory
        nominalQuota: 1Gi
"""

FLAGS = ("--metrics-bind-address", "127.0.0.1:0", "--visibility-port", "-1")


def _metrics_url(base: Path, name: str) -> str:
    def found() -> str | None:
        for line in (base / name / "controller.log").read_text().splitlines():
            if "serving metrics at " in line:
                return line.rsplit(" ", 1)[1]
        return None

    return str(support.wait_for(found, timeout=60, what=f"{name} metrics port"))


def _roles(url: str, family: str) -> dict[tuple[tuple[str, str], ...], str]:
    """``replica_role`` of each series of ``family`` (keyed by its other labels)."""
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    out: dict[tuple[tuple[str, str], ...], str] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == family:
                rest = tuple(sorted((k, v) for k, v in s.labels.items() if k != "replica_role"))
                out[rest] = s.labels["replica_role"]
    return out


def test_metrics_say_leader_and_follower_and_follow_a_takeover(tmp_path: Path) -> None:
    cluster = start_real_cluster(tmp_path, (CONTROLLER_USER,))
    procs: list[subprocess.Popen[str]] = []
    try:
        install_controller_rbac(cluster)
        cluster.kubectl("apply", "-f", "-", stdin=QUEUES)
        cluster.kubectl("apply", "-f", "-", stdin=support.local_queue("role-lq", "role-cq"))
        config = tmp_path / "config.yaml"
        config.write_text(CONFIG)
        procs.append(_controller(cluster, tmp_path, "a", config, FLAGS))
        first = _identity(tmp_path, "a")
        support.wait_for(lambda: _holder(cluster) == first, timeout=60, what="a leads")
        procs.append(_controller(cluster, tmp_path, "b", config, FLAGS))
        second = _identity(tmp_path, "b")
        url_a, url_b = _metrics_url(tmp_path, "a"), _metrics_url(tmp_path, "b")
        series = ((("cluster_queue", "role-cq"), ("status", "active")),)

        def reports(url: str, role: str) -> bool:
            found = _roles(url, "kueue_cluster_queue_status")
            return bool(found) and all(found.get(s) == role for s in series) and set(found.values()) == {role}

        support.wait_for(lambda: reports(url_a, "leader"), timeout=60, what="a's series say leader")
        support.wait_for(lambda: reports(url_b, "follower"), timeout=60, what="b's series say follower")
        assert _holder(cluster) == first
        # The leader counts what it does as leader: one admission.
        cluster.kubectl("apply", "-f", "-", stdin=support.job("role-1", "role-lq", command="sleep 600", cpu="1"))
        support.wait_for(
            lambda: _roles(url_a, "kueue_admitted_workloads_total") == {(("cluster_queue", "role-cq"), ("priority_class", "")): "leader"},
            timeout=60,
            what="a counted the admission as leader",
        )
        assert _roles(url_b, "kueue_admitted_workloads_total") == {}, "a standby admitted"
        # The standby's queues are warm: it reports the same workload as reserving, as follower.
        support.wait_for(
            lambda: _roles(url_b, "kueue_reserving_active_workloads") == {(("cluster_queue", "role-cq"),): "follower"},
            timeout=60,
            what="b's reserving gauge as follower",
        )

        procs[0].send_signal(signal.SIGKILL)
        procs[0].wait(timeout=10)
        support.wait_for(lambda: _holder(cluster) == second, timeout=LEASE * 4, interval=0.2, what="b takes over")
        support.wait_for(lambda: reports(url_b, "leader"), timeout=30, what="b's series say leader")
        cluster.kubectl("apply", "-f", "-", stdin=support.job("role-2", "role-lq", command="sleep 600", cpu="1"))
        support.wait_for(
            lambda: _roles(url_b, "kueue_pending_workloads").get((("cluster_queue", "role-cq"), ("status", "inadmissible")))
            == "leader",
            timeout=60,
            what="b reports pending as leader",
        )
    except BaseException:
        print(cluster.kubectl("get", "workloads,jobs", "-A", "-o", "yaml", check=False).stdout[-6000:])
        for name in ("a", "b"):
            print(name, (tmp_path / name / "controller.log").read_text()[-3000:])
        raise
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=30)
        cluster.stop()
