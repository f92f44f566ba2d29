"""Memory the in-process controllers take per stored Workload.

Usage: python bench/controller_memory.py [--workloads 50000] [--settle 60] [--quiet 5]

In one process: an in-memory store behind the API server's handlers holds a ResourceFlavor, a
ClusterQueue (quota for a tenth of the Workloads), a LocalQueue and ``--workloads`` Workloads;
then Kueue's controller manager starts on an in-process client, lists everything and works
until the store has not changed for ``--quiet`` seconds (at most ``--settle`` seconds; at
100,000 Workloads or under load the first admissions can come more than 5 s after the sync: raise
it). The process's resident memory
(after ``gc.collect()`` and ``malloc_trim``) before the controllers start and after they settle,
divided by the number of Workloads, is what the controllers keep per Workload (informer caches,
queues, scheduler cache) plus what the store grew by from their status writes (reported apart).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import time
from typing import Any

G = "kueue.x-k8s.io"


def rss() -> int:
    """Resident bytes after a full collection and returning freed heap to the OS."""
    gc.collect()
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def workload(i: int) -> dict[str, Any]:
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    return {
        "apiVersion": f"{G}/v1beta2", "kind": "Workload", "metadata": {"name": f"wl-{i:06d}", "namespace": "default"},
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {
            "spec": {"restartPolicy": "Never", "containers": [container]}}}]},
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=50_000)
    parser.add_argument("--settle", type=float, default=60.0)
    parser.add_argument("--quiet", type=float, default=5.0)
    args = parser.parse_args()

    from pykueue.api.config import load_config
    from pykueue.apiserver.app import create_app
    from pykueue.apiserver.handlers import APIRequest
    from pykueue.client.inprocess import InProcessClient
    from pykueue.controllers.manager import ControllerManager
    from pykueue.controllers.options import ControllerOptions
    from pykueue.runtime.clock import clock_from
    from pykueue.store import Store

    store = Store(None)
    _app, parts = create_app(store)
    parts.bootstrap()

    def post(group: str, plural: str, obj: dict[str, Any], namespace: str | None = None) -> None:
        req = APIRequest("POST", group, "v1beta2", plural, namespace=namespace, body=json.dumps(obj).encode())
        resp = parts.handlers.handle(req)
        assert resp.status == 201, resp.body

    n = args.workloads
    quota = str(max(1, n // 10))
    post(G, "resourceflavors", {"apiVersion": f"{G}/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default"}})
    post(G, "clusterqueues", {"apiVersion": f"{G}/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {
        "namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
            {"name": "default", "resources": [{"name": "cpu", "nominalQuota": quota},
                                              {"name": "memory", "nominalQuota": f"{quota}Gi"}]}]}]}})  # fmt: skip
    post(G, "localqueues", {"apiVersion": f"{G}/v1beta2", "kind": "LocalQueue",
                            "metadata": {"name": "lq", "namespace": "default"}, "spec": {"clusterQueue": "cq"}}, "default")  # fmt: skip
    t = time.perf_counter()
    for i in range(n):
        post(G, "workloads", workload(i), "default")
    print(f"stored {n} workloads in {time.perf_counter() - t:.0f}s")

    before = rss()
    manager = ControllerManager(
        InProcessClient(parts.handlers), ControllerOptions.from_config(load_config(None)), clock=clock_from(None)
    )
    t = time.perf_counter()
    manager.start()
    manager.wait_ready(600)
    synced = time.perf_counter() - t
    after_sync = rss()
    revision = store.revision
    quiet_since = time.perf_counter()
    deadline = t + args.settle
    while time.perf_counter() < deadline:
        time.sleep(1)
        if store.revision != revision:
            revision, quiet_since = store.revision, time.perf_counter()
        elif time.perf_counter() - quiet_since >= args.quiet:
            break
    settled = time.perf_counter() - t
    after = rss()
    print(f"controllers: initial sync {synced:.1f}s, settled after {settled:.0f}s (store revision {store.revision})")
    print(f"RSS before {before / 2**20:.0f} MiB, after the initial sync {after_sync / 2**20:.0f} MiB "
          f"({(after_sync - before) / n / 1024:.1f} KiB/workload), settled {after / 2**20:.0f} MiB "
          f"({(after - before) / n / 1024:.1f} KiB/workload)")  # fmt: skip
    manager.stop()
    del manager
    stopped = rss()
    print(f"controllers stopped and dropped: {stopped / 2**20:.0f} MiB (what stays is the store's growth from "
          f"their writes and allocator slack: {(stopped - before) / n / 1024:.1f} KiB/workload)")  # fmt: skip


if __name__ == "__main__":
    main()
