"""High availability on a real kube-apiserver: two ``pykueue controller --leader-elect`` replicas
(each as the least-privilege user), the leader kill -9'd during an admission storm.

Each Workload is reserved at most once, the ClusterQueue is never over its quota, the standby
takes the Lease over within ``leaseDuration`` (+ one ``retryPeriod`` to notice) and finishes the
job. Timings come from the Configuration's ``leaderElection`` (shortened so the test is quick).
"""

from __future__ import annotations

import datetime
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import support
from realcluster import (
    CONTROLLER_USER,
    ROOT,
    forbidden_requests,
    install_controller_rbac,
    start_real_cluster,
)

JOBS = int(os.environ.get("PYKUEUE_HA_JOBS", "500"))
QUOTA = JOBS * 3 // 5
LEASE, RENEW, RETRY = 6.0, 4.0, 1.0
LEASE_NAME = "c1f6bfd2.kueue.x-k8s.io"

CONFIG = f"""
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
leaderElection:
  leaderElect: true
  leaseDuration: {LEASE:g}s
  renewDeadline: {RENEW:g}s
  retryPeriod: {RETRY:g}s
"""

QUEUES = f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: ha-flavor
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: ha-cq
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: ha-flavor
      resources:
      - name: cpu
        nominalQuota: {QUOTA}
      - name: memory
        nominalQuota: {QUOTA}Gi
"""


def _controller(cluster: Any, base: Path, name: str, config: Path, extra: tuple[str, ...] = ()) -> subprocess.Popen[str]:
    work = base / name
    work.mkdir()
    log = open(work / "controller.log", "w")  # noqa: SIM115 - owned by the child
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "pykueue", "controller", "--kubeconfig", str(cluster.kubeconfig),
            "--context", f"user-{CONTROLLER_USER}", "--config", str(config), "--leader-elect",
            "--work-dir", str(work), "--health-probe-bind-address", "127.0.0.1:0", *extra,
        ],
        stdout=log, stderr=subprocess.STDOUT, text=True, env=env, cwd=work,
    )  # fmt: skip
    log.close()
    return proc


def _identity(base: Path, name: str) -> str:
    def found() -> str | None:
        for line in (base / name / "controller.log").read_text().splitlines():
            if "waiting for lease as " in line:
                return line.rsplit(" ", 1)[1]
        return None

    return str(support.wait_for(found, timeout=60, what=f"{name} campaigning"))


def _probe(base: Path, name: str, path: str) -> tuple[int, str]:
    """GET a health endpoint of controller ``name``: (status, body)."""
    import urllib.error
    import urllib.request

    def port() -> int | None:
        for line in (base / name / "controller.log").read_text().splitlines():
            if "health probes on port " in line:
                return int(line.rsplit(" ", 1)[1])
        return None

    number = support.wait_for(port, timeout=60, what=f"{name} health port")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{number}{path}", timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def _holder(cluster: Any) -> str | None:
    result = cluster.kubectl("get", "lease", LEASE_NAME, "-n", "kueue-system", "-o", "json", check=False)
    if result.returncode != 0:
        return None
    holder: str | None = json.loads(result.stdout)["spec"].get("holderIdentity")
    return holder


def test_standby_takes_over_after_kill_9_without_double_admission(tmp_path: Path) -> None:
    cluster = start_real_cluster(tmp_path, (CONTROLLER_USER,), audit=True)
    procs: list[subprocess.Popen[str]] = []
    try:
        install_controller_rbac(cluster)
        config = tmp_path / "config.yaml"
        config.write_text(CONFIG)
        procs.append(_controller(cluster, tmp_path, "a", config))
        first = _identity(tmp_path, "a")
        support.wait_for(lambda: _holder(cluster) == first, timeout=60, what="a leads")
        procs.append(_controller(cluster, tmp_path, "b", config))  # its webhook registration wins
        second = _identity(tmp_path, "b")
        assert _holder(cluster) == first
        for name in ("a", "b"):
            assert _probe(tmp_path, name, "/healthz") == (200, "ok")
            assert _probe(tmp_path, name, "/readyz") == (200, "ok")
        assert _probe(tmp_path, "a", "/replica-role") == (200, "leader")
        assert _probe(tmp_path, "b", "/replica-role") == (200, "follower")
        cluster.kubectl("apply", "-f", "-", stdin=QUEUES)
        cluster.kubectl("apply", "-f", "-", stdin=support.local_queue("ha-lq", "ha-cq"))
        manifests = "---".join(support.job(f"ha-{i}", "ha-lq", command="sleep 600", cpu="1") for i in range(JOBS))
        submitted = threading.Thread(target=lambda: cluster.kubectl("apply", "-f", "-", stdin=manifests, timeout=600))
        submitted.start()

        def reserved() -> list[dict[str, Any]]:
            items = json.loads(cluster.kubectl("get", "workloads", "-n", "default", "-o", "json").stdout)["items"]
            return [w for w in items if support.is_true(w, "QuotaReserved")]

        support.wait_for(lambda: len(reserved()) >= QUOTA // 4, timeout=300, interval=0.5, what="storm under way")
        procs[0].send_signal(signal.SIGKILL)
        killed_at = datetime.datetime.now(datetime.UTC)
        procs[0].wait(timeout=10)
        support.wait_for(lambda: _holder(cluster) == second, timeout=LEASE * 4, interval=0.2, what="b takes over")
        # When b acquired the Lease, by its own record (a wall-clock MicroTime on this machine), not
        # when the test saw it: each kubectl poll took up to seconds with the storm under way.
        spec = json.loads(cluster.kubectl("get", "lease", LEASE_NAME, "-n", "kueue-system", "-o", "json").stdout)["spec"]
        acquired = datetime.datetime.fromisoformat(spec["acquireTime"].replace("Z", "+00:00"))
        takeover = (acquired - killed_at).total_seconds()
        assert takeover <= LEASE + 2 * RETRY + 1.0, f"takeover after {takeover:.1f}s (lease {LEASE:g}s)"
        print(f"takeover {takeover:.1f}s after kill -9 (leaseDuration {LEASE:g}s)")
        support.wait_for(lambda: _probe(tmp_path, "b", "/replica-role") == (200, "leader"), what="b reports leader")
        submitted.join(timeout=600)

        def settled() -> list[dict[str, Any]] | None:
            items = json.loads(cluster.kubectl("get", "workloads", "-n", "default", "-o", "json").stdout)["items"]
            cq = json.loads(cluster.kubectl("get", "clusterqueue", "ha-cq", "-o", "json").stdout).get("status") or {}
            done = [w for w in items if support.is_true(w, "QuotaReserved")]
            if len(items) == JOBS and len(done) == QUOTA and cq.get("pendingWorkloads") == JOBS - QUOTA:
                return items
            return None

        items = support.wait_for(settled, timeout=600, interval=1.0, what="storm settled under the new leader")
        owners = [w["metadata"]["ownerReferences"][0]["name"] for w in items]
        assert len(set(owners)) == JOBS, "one Workload per Job"
        cpu = sum(
            int(w["status"]["admission"]["podSetAssignments"][0]["resourceUsage"]["cpu"])
            for w in items
            if support.is_true(w, "QuotaReserved")
        )
        assert cpu == QUOTA, "quota exactly used, never over"
        events = json.loads(cluster.kubectl("get", "events", "-n", "default", "-o", "json").stdout)["items"]
        reservations: dict[str, int] = {}
        for e in events:
            if e["reason"] == "QuotaReserved":
                reservations[e["involvedObject"]["name"]] = reservations.get(e["involvedObject"]["name"], 0) + int(
                    e.get("count") or 1
                )
        assert max(reservations.values()) == 1, "a Workload reserved twice"
        running = [
            j
            for j in json.loads(cluster.kubectl("get", "jobs", "-n", "default", "-o", "json").stdout)["items"]
            if not j["spec"].get("suspend")
        ]
        assert len(running) == QUOTA
        assert forbidden_requests(cluster) == []
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=30)
        cluster.stop()
