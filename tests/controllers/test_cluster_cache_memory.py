"""What the controller manager keeps per Workload: one typed copy, no managedFields, shared strings.

The memory target (bench/controller_memory.py) rests on these; each assertion fails on the cache
that kept the informers' raw objects, ClusterCache's raw objects and the typed ones, managedFields
included.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from test_workload_lifecycle import ManualClock, cond, wait, workload

from pykueue.apiserver.app import create_app
from pykueue.client import resources as R
from pykueue.client.inprocess import InProcessClient
from pykueue.controllers.manager import ControllerManager
from pykueue.store import Store


@pytest.fixture
def client() -> Iterator[InProcessClient]:
    store = Store(None)
    _, parts = create_app(store)
    parts.bootstrap()
    yield InProcessClient(parts.handlers)
    store.close()


def test_workloads_are_cached_once_typed_without_managed_fields(client: InProcessClient) -> None:
    for name in ("a", "b"):
        client.create(R.WORKLOADS, workload(name, queue="missing"))
    mgr = ControllerManager(client, clock=ManualClock())
    mgr.start()
    try:
        assert mgr.wait_ready(10)
        # The controllers write a status on each (no LocalQueue): a write of the cached object.
        wait(lambda: all(cond(client.get(R.WORKLOADS, n, "default"), "QuotaReserved") for n in ("a", "b")))
        wait(lambda: all(mgr.cluster.workloads[f"default/{n}"].status.conditions for n in ("a", "b")))

        def view() -> tuple[object, ...]:
            a, b = mgr.cluster.workloads["default/a"], mgr.cluster.workloads["default/b"]
            return (dict(mgr.cluster.raw["workloads"]), [inf._cache for inf in mgr.informers.values()], a, b)

        raw, informer_caches, a, b = mgr.call_in_manager_thread(view)
    finally:
        mgr.stop()
    assert raw == {}, "Workloads are kept typed only"
    assert all(cache == {} for cache in informer_caches), "the informers keep resourceVersions only"
    assert a.metadata.managed_fields == [] and b.metadata.managed_fields == []
    # Repeated strings are one object; per-object ones stay apart.
    assert a.metadata.namespace is b.metadata.namespace
    assert a.spec.queue_name is b.spec.queue_name
    assert a.status.conditions[0].message is b.status.conditions[0].message
    assert a.spec.pod_sets[0].template.spec["containers"][0]["name"] is b.spec.pod_sets[0].template.spec["containers"][0]["name"]
    # Writing objects cached without managedFields keeps the live ones (decodeLiveOrNew).
    entries = client.get(R.WORKLOADS, "a", "default")["metadata"]["managedFields"]
    assert {(e.get("subresource", ""), next(iter(e["fieldsV1"]))) for e in entries} == {("", "f:spec"), ("status", "f:status")}
