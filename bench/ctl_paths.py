"""Microseconds per call of the controller manager's per-Workload paths that branch ctlshare cut.

Usage: python bench/ctl_paths.py [--src DIR] [--number N]

On the embedded API server (no HTTP) it makes an admitted Workload shaped like
``bench/large-scale-20.yaml``'s and a ClusterQueue with a status, then times, best of 5:

* typing a Workload change the cache applies: ``to_internal(compact(obj))`` (before) and
  ``_typed_workload(compact(obj))`` (after; absent in older trees);
* encoding a ClusterQueue status write (``to_external``): done for every status refresh before,
  only for those sent after;
* ``WorkQueue.add_after`` of a key already due sooner (a queue status refresh request).

``--src`` runs another tree's ``src`` (e.g. ``git archive 0df7e02 src | tar -x -C /tmp/base``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import timeit
from datetime import UTC, datetime
from typing import Any


def measure(number: int) -> None:
    from pykueue.api.conversion import to_external, to_internal
    from pykueue.api.kueue import ClusterQueue, ClusterQueueStatus
    from pykueue.checks import testing as t
    from pykueue.client import resources as r
    from pykueue.controllers import cluster_cache
    from pykueue.runtime.controller import WorkQueue

    client = t.embedded_client()
    client.create(
        r.WORKLOADS,
        t.workload("w", "default", [t.pod_set("main", 1, {"cpu": "1"})], priority=50),
    )
    wl = t.reserve_quota(client, "default", "w", [], datetime.now(UTC), flavors={"cpu": "default"})
    cq_obj: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq", "uid": "u", "resourceVersion": "7", "finalizers": ["kueue.x-k8s.io/resource-in-use"]},
        "spec": {
            "namespaceSelector": {},
            "cohortName": "cohort-0",
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": 20, "borrowingLimit": 100}]}],
                }
            ],
        },
        "status": {
            "pendingWorkloads": 31,
            "reservingWorkloads": 6,
            "admittedWorkloads": 6,
            "flavorsReservation": [{"name": "default", "resources": [{"name": "cpu", "total": "26", "borrowed": "6"}]}],
            "flavorsUsage": [{"name": "default", "resources": [{"name": "cpu", "total": "26", "borrowed": "6"}]}],
            "conditions": [
                {
                    "type": "Active",
                    "status": "True",
                    "reason": "Ready",
                    "message": "Can admit new workloads",
                    "lastTransitionTime": "2026-11-26T20:00:00Z",
                    "observedGeneration": 1,
                }
            ],
        },
    }
    cq, _ = to_internal(cq_obj)
    assert isinstance(cq, ClusterQueue) and isinstance(cq.status, ClusterQueueStatus)
    queue: WorkQueue[tuple[str, str]] = WorkQueue()
    queue.add_after(("cq", "cq"), 1.0)
    cases: list[tuple[str, Any]] = [
        ("type a Workload change: to_internal(compact(obj))", lambda: to_internal(cluster_cache.compact(wl))),
    ]
    typed_workload = getattr(cluster_cache, "_typed_workload", None)
    if typed_workload is not None:
        cases.append(("type a Workload change: _typed_workload(compact(obj))", lambda: typed_workload(cluster_cache.compact(wl))))
    cases += [
        ("  of which compact(obj)", lambda: cluster_cache.compact(wl)),
        ("encode a ClusterQueue status write: to_external(cq)", lambda: to_external(cq)),
        ("WorkQueue.add_after of a key already due sooner", lambda: queue.add_after(("cq", "cq"), 1.0)),
    ]
    for name, fn in cases:
        best = min(timeit.repeat(fn, number=number, repeat=5)) / number
        print(f"{best * 1e6:8.2f} µs  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--src", help="run this tree's src instead of the installed one")
    parser.add_argument("--number", type=int, default=5000)
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner or not args.src:
        measure(args.number)
        return
    env = {**os.environ, "PYTHONPATH": args.src}
    cmd = [sys.executable, __file__, "--inner", "--number", str(args.number)]
    raise SystemExit(subprocess.call(cmd, env=env))


if __name__ == "__main__":
    main()
