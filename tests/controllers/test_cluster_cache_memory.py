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


def test_a_workload_is_typed_without_a_copy_and_as_to_internal_types_it(
    client: InProcessClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every Workload watch event and write answer the manager applies is typed; to_internal's
    # deep copy of the (already private) compacted object was most of that.
    from datetime import UTC, datetime

    import msgspec

    from pykueue.api import conversion
    from pykueue.api.conversion import DecodeError, to_internal
    from pykueue.checks import testing as t
    from pykueue.controllers.cluster_cache import _typed_workload, compact

    now = datetime.now(UTC)
    client.create(R.WORKLOADS, workload("plain"))
    client.create(
        R.WORKLOADS,
        t.workload(
            "rich",
            "default",
            [t.pod_set("a", 2, {"cpu": "1"}, {"cpu": "2"}, {"pool": "x"}), t.pod_set("b", 1, {"memory": "1Gi"})],
            priority=7,
            annotations={"k": "v"},
        ),
    )
    t.reserve_quota(client, "default", "rich", ["c1", "c2"], now, flavors={"cpu": "f", "memory": "m"})
    t.evict(client, "default", "rich", now)
    t.set_conditions(client, "default", "rich", now, Finished="True")
    objs = [client.get(R.WORKLOADS, n, "default") for n in ("plain", "rich")]
    copies: list[object] = []
    real_copy = conversion.json_copy

    def counting(value: object) -> object:
        copies.append(value)
        return real_copy(value)

    monkeypatch.setattr(conversion, "json_copy", counting)
    for obj in objs:
        ours = compact(obj)
        typed = _typed_workload(ours)
        assert copies == []
        before = to_internal(compact(obj))[0]  # what the manager made of it before
        assert typed == before
        assert msgspec.to_builtins(typed) == msgspec.to_builtins(before)
        assert msgspec.json.encode(typed) == msgspec.json.encode(before)
        copies.clear()
    # An invalid one fails as to_internal fails: its error names the field.
    bad = compact(objs[0])
    bad["spec"]["podSets"][0]["count"] = "two"
    with pytest.raises(DecodeError) as ours_err:
        _typed_workload(bad)
    with pytest.raises(DecodeError) as theirs:
        to_internal(bad)
    assert str(ours_err.value) == str(theirs.value)
