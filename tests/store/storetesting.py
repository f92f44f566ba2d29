"""Shared helpers for the store tests (keys, object builders, a fake clock, invariant checks)."""

from __future__ import annotations

import sqlite3
from typing import Any

from pykueue.store import ResourceKey, Store
from pykueue.store.types import decode

CQ = ResourceKey("kueue.x-k8s.io", "clusterqueues", namespaced=False)
WL = ResourceKey("kueue.x-k8s.io", "workloads", namespaced=True)
LQ = ResourceKey("kueue.x-k8s.io", "localqueues", namespaced=True)
NS = ResourceKey("", "namespaces", namespaced=False)
CM = ResourceKey("", "configmaps", namespaced=True)
JOB = ResourceKey("batch", "jobs", namespaced=True)


class FakeClock:
    """A settable clock (POSIX seconds)."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def cq(name: str = "cq", **spec: Any) -> dict[str, Any]:
    """A ClusterQueue manifest."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": spec or {"namespaceSelector": {}},
    }


def wl(
    name: str = "wl", namespace: str = "default", labels: dict[str, str] | None = None, **extra: Any
) -> dict[str, Any]:
    """A Workload manifest."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    obj: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": meta,
        "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1}]},
    }
    obj.update(extra)
    return obj


def cm(name: str, namespace: str = "default", **meta: Any) -> dict[str, Any]:
    """A ConfigMap manifest (extra metadata fields as keyword arguments)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, **meta},
    }


def job(name: str, namespace: str = "default", **meta: Any) -> dict[str, Any]:
    """A batch/v1 Job manifest."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, **meta},
        "spec": {"parallelism": 1},
    }


def owner_ref(
    owner: dict[str, Any], *, block: bool | None = None, controller: bool | None = None
) -> dict[str, Any]:
    """An ownerReference to a stored object."""
    ref: dict[str, Any] = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
    }
    if controller is not None:
        ref["controller"] = controller
    if block is not None:
        ref["blockOwnerDeletion"] = block
    return ref


def names(items: list[dict[str, Any]]) -> list[str]:
    """metadata.name of each item."""
    return [i["metadata"]["name"] for i in items]


def check_invariants(path: str) -> tuple[int, int]:
    """Check a store file's persistent invariants with a raw connection; returns (revision, floor).

    * the change log is contiguous from the history floor to the newest revision;
    * every live object points at a change row of its own key, whose data carries that revision;
    * replaying the retained log from the floor agrees with the object table for every key it
      touches (last event DELETED <=> absent, otherwise the same row).
    """
    conn = sqlite3.connect(path)
    try:
        floor = conn.execute("SELECT value FROM meta WHERE key = 'floor'").fetchone()[0]
        revision = conn.execute("SELECT MAX(rev) FROM changes").fetchone()[0] or 0
        revs = [r for (r,) in conn.execute("SELECT rev FROM changes WHERE rev >= ? ORDER BY rev", (floor,))]
        assert revs == list(range(floor, revision + 1)), "change log has gaps above the floor"
        live: dict[tuple[str, str, str], int] = {}
        for g, r, k, rv, cg, cr, ck, data in conn.execute(
            "SELECT o.grp, o.resource, o.k, o.rv, c.grp, c.resource, c.k, c.data "
            "FROM objects o LEFT JOIN changes c ON c.rev = o.rv"
        ):
            assert (cg, cr, ck) == (g, r, k), f"object {k} points at a foreign change row"
            assert rv <= revision
            assert decode(data)["metadata"]["resourceVersion"] == str(rv)
            live[(g, r, k)] = rv
        last: dict[tuple[str, str, str], tuple[int, str]] = {}
        for rev, g, r, k, t in conn.execute(
            "SELECT rev, grp, resource, k, type FROM changes WHERE rev >= ? ORDER BY rev", (floor,)
        ):
            last[(g, r, k)] = (rev, t)
        for ident, (rev, t) in last.items():
            if t == "DELETED":
                assert ident not in live, f"{ident} deleted at {rev} but still live"
            else:
                assert live.get(ident) == rev, f"{ident}: log says {rev}, table says {live.get(ident)}"
        return revision, floor
    finally:
        conn.close()


def open_store(path: str | None = None, **kwargs: Any) -> Store:
    """A store with a fake clock."""
    kwargs.setdefault("clock", FakeClock())
    return Store(path, **kwargs)
