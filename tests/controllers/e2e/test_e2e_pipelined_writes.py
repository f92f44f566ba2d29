"""Pipelined admissions end to end (cluster mode: ``pykueue serve --no-controllers`` and a separate
``pykueue controller`` that writes over HTTP, several Workload status writes in flight at once).

While the controller admits, another client keeps changing the pending Workloads (labels), so
admission writes meet real 409 Conflicts from the server. Upstream's admission is a loose apply: the
status, unchanged meanwhile, is sent again on the new version (over HTTP, the controller's async
path) or, where the status moved, the admission is forgotten and requeued: the ClusterQueue's quota
is never exceeded, no Workload is admitted twice, and it ends exactly full.
The real-cluster tier runs the same test against kube-apiserver (tests/cluster/test_e2e_real.py).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from support import Kueue, is_true, start_kueue, wait_for

from pykueue.client import resources as R
from pykueue.client.http import HTTPClient
from pykueue.client.interface import APIError

QUOTA = 40
WORKLOADS = 70


@pytest.fixture(scope="module")
def kueue(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kueue]:
    k = start_kueue(tmp_path_factory.mktemp("kueue-pipelined"), "cluster", ["--max-writes-in-flight", "8"], run_jobs=False)
    yield k
    k.stop()


def _workload(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": f"pipe-{i:03d}", "namespace": "default"},
        "spec": {
            "queueName": "pipe-lq",
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {"spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}},
                }
            ],
        },
    }


def test_conflicting_admissions_never_over_commit_nor_admit_twice(kueue: Kueue) -> None:
    api = HTTPClient.from_kubeconfig(kueue.server.kubeconfig)
    try:
        api.create(R.RESOURCE_FLAVORS, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "pipe-f"}})
        api.create(
            R.CLUSTER_QUEUES,
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": "pipe-cq"},
                "spec": {
                    "namespaceSelector": {},
                    "resourceGroups": [
                        {"coveredResources": ["cpu"], "flavors": [{"name": "pipe-f", "resources": [{"name": "cpu", "nominalQuota": QUOTA}]}]}
                    ],
                },
            },
        )
        # The Workloads exist before their LocalQueue: once it appears they are all admissible at once.
        for i in range(WORKLOADS):
            api.create(R.WORKLOADS, _workload(i))
        stop = threading.Event()
        over: list[int] = []
        touched = [0]

        frontier: list[str] = [f"pipe-{i:03d}" for i in range(8)]

        def storm() -> None:
            # Change the next heads (the oldest pending Workloads): their admission writes were
            # computed from the version just replaced, so the server answers 409.
            rng = random.Random(14)
            while not stop.is_set():
                names = list(frontier) or [f"pipe-{rng.randrange(WORKLOADS):03d}"]
                try:
                    api.patch(R.WORKLOADS, rng.choice(names), {"metadata": {"labels": {"touch": str(touched[0])}}}, "default")
                    touched[0] += 1
                except APIError:
                    pass

        def sample() -> None:
            while not stop.is_set():
                items, _ = api.list(R.WORKLOADS, "default")
                mine = [w for w in items if w["metadata"]["name"].startswith("pipe-")]
                reserved = sum(1 for w in mine if is_true(w, "QuotaReserved"))
                if reserved > QUOTA:
                    over.append(reserved)
                pending = sorted(
                    (w["metadata"]["creationTimestamp"], w["metadata"]["name"]) for w in mine if not is_true(w, "QuotaReserved")
                )
                frontier[:] = [name for _, name in pending[:8]]
                time.sleep(0.02)

        threads = [threading.Thread(target=storm, daemon=True) for _ in range(3)] + [threading.Thread(target=sample, daemon=True)]
        for t in threads:
            t.start()
        api.create(
            R.LOCAL_QUEUES,
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "pipe-lq", "namespace": "default"}, "spec": {"clusterQueue": "pipe-cq"}},
        )

        def reserved() -> list[dict[str, Any]]:
            items, _ = api.list(R.WORKLOADS, "default")
            return [w for w in items if w["metadata"]["name"].startswith("pipe-") and is_true(w, "QuotaReserved")]

        try:
            wait_for(lambda: len(reserved()) >= QUOTA, timeout=90, what="quota filled")
            time.sleep(1.0)  # a double admission or an over-commit would show now
            # On a loaded machine (a real kube-apiserver, etcd and the CI beside it) the storm's
            # patches may take tens of milliseconds each: it keeps going (and the sampler keeps
            # looking for an over-commit) until it made its 50 changes.
            deadline = time.monotonic() + 30
            while touched[0] <= 50 and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=10)
        assert touched[0] > 50, "the storm changed the pending Workloads while they were admitted"
        assert over == [], f"more than {QUOTA} Workloads held quota at once: {over}"
        held = reserved()
        assert len(held) == QUOTA
        cpu = sum(int(w["status"]["admission"]["podSetAssignments"][0]["resourceUsage"]["cpu"]) for w in held)
        assert cpu == QUOTA

        def status() -> dict[str, Any] | None:
            cq = api.get(R.CLUSTER_QUEUES, "pipe-cq").get("status") or {}
            return cq if cq.get("reservingWorkloads") == QUOTA and cq.get("pendingWorkloads") == WORKLOADS - QUOTA else None

        cq = wait_for(status, timeout=30, what="ClusterQueue status settled")
        usage = {r["name"]: r["total"] for f in cq["flavorsReservation"] for r in f["resources"]}
        assert usage["cpu"] == str(QUOTA)
        events, _ = api.list(R.Resource("", "v1", "events", "Event", True), "default")
        reservations: dict[str, int] = {}
        for e in events:
            if e["reason"] == "QuotaReserved" and e["involvedObject"]["name"].startswith("pipe-"):
                name = e["involvedObject"]["name"]
                reservations[name] = reservations.get(name, 0) + int(e.get("count") or 1)
        assert all(n == 1 for n in reservations.values()), f"admitted twice: {reservations}"
        assert set(reservations) <= {w["metadata"]["name"] for w in held}
    finally:
        api.close()
