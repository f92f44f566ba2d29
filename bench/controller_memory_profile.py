"""Where the controllers' bytes per Workload go: a heap breakdown by structure and by allocation site.

Usage: python bench/controller_memory_profile.py [--workloads 20000] [--settle 0] [--tracemalloc]

Same set-up as ``controller_memory.py`` (in-memory store, one ClusterQueue with quota for a tenth
of the Workloads, the manager on an in-process client). After the initial sync (and ``--settle``
seconds of work, if asked) it walks the object graph from each of the controllers' structures in
turn and reports, per Workload, the bytes first reachable from it (objects also reachable from the
store, or from a structure listed earlier, are not counted again):

- ``informers``: the manager's informers' caches (objects, or resourceVersions only);
- ``cluster.raw``: ClusterCache's raw objects; ``cluster.workloads``: its typed Workloads;
- ``core.cache`` / ``core.queues``: the scheduler cache and the queue manager (WorkloadInfo etc.);
- ``manager (rest)``: everything else the manager holds (work queue, metrics, ...).

With ``--tracemalloc`` the allocations made while the manager starts and syncs are also grouped by
the source line that made them (top 25), which tells which code builds the bytes that stay.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
import tracemalloc
import types
from collections.abc import Iterable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from controller_memory import G, rss, workload

_OPAQUE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.CodeType)


def walk(roots: Iterable[Any], seen: set[int]) -> tuple[int, int]:
    """Bytes and object count reachable from ``roots`` and not in ``seen`` (which grows)."""
    total = count = 0
    stack = list(roots)
    while stack:
        obj = stack.pop()
        oid = id(obj)
        if oid in seen or isinstance(obj, _OPAQUE):
            continue
        seen.add(oid)
        total += sys.getsizeof(obj)
        count += 1
        if isinstance(obj, dict):
            stack.extend(obj.keys())  # str keys are not visited by dict's tp_traverse
            stack.extend(obj.values())
        else:
            stack.extend(gc.get_referents(obj))
    return total, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=20_000)
    parser.add_argument("--settle", type=float, default=0.0)
    parser.add_argument("--tracemalloc", action="store_true")
    args = parser.parse_args()

    import json

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

    def post(plural: str, obj: dict[str, Any], namespace: str | None = None) -> None:
        req = APIRequest("POST", G, "v1beta2", plural, namespace=namespace, body=json.dumps(obj).encode())
        assert parts.handlers.handle(req).status == 201

    n = args.workloads
    quota = str(max(1, n // 10))
    post("resourceflavors", {"apiVersion": f"{G}/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default"}})
    post("clusterqueues", {"apiVersion": f"{G}/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {
        "namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
            {"name": "default", "resources": [{"name": "cpu", "nominalQuota": quota},
                                              {"name": "memory", "nominalQuota": f"{quota}Gi"}]}]}]}})  # fmt: skip
    post("localqueues", {"apiVersion": f"{G}/v1beta2", "kind": "LocalQueue",
                         "metadata": {"name": "lq", "namespace": "default"}, "spec": {"clusterQueue": "cq"}}, "default")  # fmt: skip
    for i in range(n):
        post("workloads", workload(i), "default")

    before = rss()
    if args.tracemalloc:
        tracemalloc.start(1)
    manager = ControllerManager(
        InProcessClient(parts.handlers), ControllerOptions.from_config(load_config(None)), clock=clock_from(None)
    )
    t = time.perf_counter()
    manager.start()
    manager.wait_ready(900)
    print(f"initial sync {time.perf_counter() - t:.1f}s")
    if args.settle:
        time.sleep(args.settle)
    snap = tracemalloc.take_snapshot() if args.tracemalloc else None
    tracemalloc.stop()
    after = rss()
    print(f"RSS growth {(after - before) / n / 1024:.2f} KiB/workload (store revision {store.revision})")

    # Freeze the manager thread's view while walking: the walk reads live dicts.
    def breakdown() -> list[tuple[str, int, int]]:
        seen: set[int] = set()
        walk([store], seen)  # the store's own objects are not the controllers'
        parts_ = [
            ("informers", [(inf._cache, inf._versions) for inf in manager.informers.values()]),
            ("cluster.raw", [manager.cluster.raw]),
            ("cluster.workloads", [manager.cluster.workloads]),
            ("core.cache", [manager.cache]),
            ("core.queues", [manager.queues]),
            ("manager (rest)", [manager]),
        ]
        return [(name, *walk(roots, seen)) for name, roots in parts_]

    rows = manager.call_in_manager_thread(breakdown, timeout=600)
    total = 0
    for name, size, count in rows:
        total += size
        print(f"{name:20s} {size / n / 1024:7.2f} KiB/workload  {count / n:7.1f} objects/workload")
    print(f"{'total (getsizeof)':20s} {total / n / 1024:7.2f} KiB/workload")
    if snap is not None:
        stats = snap.filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)]).statistics("lineno")
        print("\ntop allocation sites still alive after the sync (per workload):")
        for st in stats[:25]:
            print(f"  {st.size / n:8.0f} B  {st.count / n:6.1f} blocks  {st.traceback[0]}")
    manager.stop()


if __name__ == "__main__":
    main()
