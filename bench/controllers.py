"""End-to-end admission throughput of the controllers on the embedded API (no HTTP).

Creates ClusterQueues (in one cohort, each with quota for 3/4 of its workloads) and Workloads
through the in-process client (the API server's real request pipeline on an in-memory or on-disk
SQLite store), starts the controller manager, and measures how long it takes until the cohort's
quota is filled: admissions/s including every API write the controllers make (status, events).
Workloads that cannot fit stay pending; as upstream, equivalent ones are parked without a write.

    python bench/controllers.py [--cqs 20] [--workloads 2000] [--db PATH]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from pykueue.apiserver.app import create_app
from pykueue.client import resources as R
from pykueue.client.inprocess import InProcessClient
from pykueue.controllers.manager import ControllerManager
from pykueue.store import Store


def cq(name: str, cpu: int) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "cohortName": "all",
            "resourceGroups": [
                {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}
            ],
        },
    }


def workload(i: int, queue: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": f"wl-{i}", "namespace": "default"},
        "spec": {
            "queueName": queue,
            "podSets": [
                {"name": "main", "count": 1, "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}
            ],
        },
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cqs", type=int, default=20)
    p.add_argument("--workloads", type=int, default=2000)
    p.add_argument("--db", default=None, help="SQLite file (default: in memory)")
    args = p.parse_args()
    store = Store(args.db)
    _, parts = create_app(store)
    parts.bootstrap()
    client = InProcessClient(parts.handlers)
    client.create(R.RESOURCE_FLAVORS, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "f"}})
    per_cq = args.workloads // args.cqs
    quota = per_cq * 3 // 4  # 3/4 fit: the rest wait
    expected = quota * args.cqs
    for i in range(args.cqs):
        client.create(R.CLUSTER_QUEUES, cq(f"cq-{i}", quota))
        client.create(
            R.LOCAL_QUEUES,
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": f"lq-{i}", "namespace": "default"}, "spec": {"clusterQueue": f"cq-{i}"}},
        )
    t0 = time.perf_counter()
    for i in range(args.workloads):
        client.create(R.WORKLOADS, workload(i, f"lq-{i % args.cqs}"))
    created = time.perf_counter() - t0
    mgr = ControllerManager(client)
    t1 = time.perf_counter()
    mgr.start()
    # Poll the manager's quota cache (cheap) rather than listing every Workload through the API,
    # which would compete with the controllers for the GIL; verify through the API afterwards.
    while sum(len(c.workloads) for c in list(mgr.cache.cluster_queues.values())) < expected:
        time.sleep(0.01)
    elapsed = time.perf_counter() - t1
    items, _ = client.list(R.WORKLOADS, "default")
    admitted = sum(
        1
        for w in items
        if any(c["type"] == "Admitted" and c["status"] == "True" for c in (w.get("status") or {}).get("conditions") or [])
    )
    mgr.stop()
    print(f"cluster queues:           {args.cqs}")
    print(f"workloads:                {args.workloads} (created in {created:.2f}s, {args.workloads / created:,.0f}/s)")
    print(f"admitted:                 {admitted}; waiting: {args.workloads - admitted}")
    print(f"time to fill the quota:   {elapsed:.2f}s (manager start, initial list, cycles, every API write)")
    print(f"admissions/s end to end:  {admitted / elapsed:,.0f}")
    print(f"scheduling passes:        {mgr.cycles}")


if __name__ == "__main__":
    main()
