"""Property test: random operation sequences keep the store's invariants.

* every write moves the revision forward (or, when it fails or changes nothing, leaves it alone);
* the change log agrees with the object table (check_invariants);
* replaying the log rebuilds the current state, and a list at any retained revision equals the
  state the store had then (consistent pagination over pruned history);
* per-resource counts equal the number of listed objects.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from storetesting import CM, CQ, check_invariants, open_store

from pykueue.store import ResourceKey, Store, StoreError

KEYS = {"cm": CM, "cq": CQ}
NAMES = ["a", "b", "c"]
pick = st.integers(0, 20)  # which existing object an operation targets

op_strategy = st.one_of(
    st.tuples(
        st.just("create"),
        st.sampled_from(["cm", "cq"]),
        st.sampled_from(NAMES),
        st.dictionaries(st.sampled_from(["x", "y"]), st.sampled_from(["1", "2"]), max_size=2),
        st.booleans(),  # finalizer
        st.one_of(st.none(), st.tuples(pick, st.booleans())),  # owner, blockOwnerDeletion
        st.booleans(),  # dry run
    ),
    st.tuples(st.just("spec"), pick, st.integers(0, 3), st.booleans()),
    st.tuples(st.just("labels"), pick, st.sampled_from(["1", "2"])),
    st.tuples(st.just("status"), pick, st.integers(0, 3)),
    st.tuples(st.just("unfinalize"), pick),
    st.tuples(
        st.just("delete"),
        pick,
        st.sampled_from(["Background", "Foreground", "Orphan", None]),
        st.booleans(),  # dry run
        st.booleans(),  # stale uid precondition
    ),
)


def manifest(kind: str, name: str, labels: dict[str, str], finalizer: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if kind == "cm":
        meta["namespace"] = "ns"
    if labels:
        meta["labels"] = labels
    if finalizer:
        meta["finalizers"] = ["test/hold"]
    api = "v1" if kind == "cm" else "kueue.x-k8s.io/v1beta2"
    return {
        "apiVersion": api,
        "kind": "ConfigMap" if kind == "cm" else "ClusterQueue",
        "metadata": meta,
        "spec": {"v": 0},
    }


def namespace(kind: str) -> str | None:
    return "ns" if kind == "cm" else None


def target(store: Store, index: int) -> tuple[str, dict[str, Any]]:
    """The index-th live object (by kind, name), or NotFound-raising fallback."""
    live = sorted(state(store).items())
    if not live:
        return "cm", store.get(CM, "ns", "nothing")
    (kind, _), obj = live[index % len(live)]
    return kind, obj


def apply(store: Store, op: tuple[Any, ...]) -> None:
    action = op[0]
    if action == "create":
        _, kind, name, labels, finalizer, owner, dry_run = op
        obj = manifest(kind, name, labels, finalizer)
        if owner is not None:
            _, owner_obj = target(store, owner[0])
            obj["metadata"]["ownerReferences"] = [
                {
                    "apiVersion": owner_obj["apiVersion"],
                    "kind": owner_obj["kind"],
                    "name": owner_obj["metadata"]["name"],
                    "uid": owner_obj["metadata"]["uid"],
                    "blockOwnerDeletion": owner[1],
                }
            ]
        store.create(KEYS[kind], obj, dry_run=dry_run)
        return
    kind, obj = target(store, op[1])
    key: ResourceKey = KEYS[kind]
    if action == "spec":
        obj["spec"] = {"v": op[2]}
        store.update(key, obj, dry_run=op[3])
    elif action == "labels":
        obj["metadata"]["labels"] = {"x": op[2]}
        store.update(key, obj)
    elif action == "status":
        obj["status"] = {"s": op[2]}
        store.update(key, obj, subresource="status")
    elif action == "unfinalize":
        obj["metadata"]["finalizers"] = [f for f in obj["metadata"].get("finalizers", []) if f != "test/hold"]
        store.update(key, obj)
    else:
        _, _, propagation, dry_run, stale = op
        pre = {"uid": "stale"} if stale else {"resourceVersion": obj["metadata"]["resourceVersion"]}
        store.delete(
            key,
            namespace(kind),
            obj["metadata"]["name"],
            propagation=propagation,
            preconditions=pre,
            dry_run=dry_run,
        )


def state(store: Store, at: int | None = None) -> dict[tuple[str, str], dict[str, Any]]:
    result = {}
    for kind, key in KEYS.items():
        items, _, _ = store.list(key, at_revision=at)
        for item in items:
            result[(kind, item["metadata"]["name"])] = item
    return result


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(op_strategy, min_size=1, max_size=40), history=st.sampled_from([6, 100_000]))
def test_random_operations_keep_invariants(ops: list[tuple[Any, ...]], history: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "db.sqlite")
        store = open_store(path, history=history)
        snapshots = {0: {}}
        for op in ops:
            before = store.revision
            try:
                apply(store, op)
            except StoreError:
                assert store.revision == before, f"a failed {op[0]} must not write"
            assert store.revision >= before
            snapshots[store.revision] = state(store)
            for kind, key in KEYS.items():
                assert store.count(key) == sum(1 for k in snapshots[store.revision] if k[0] == kind)
        final = state(store)
        floor = store.oldest_revision
        for revision, snapshot in snapshots.items():
            if revision >= floor - 1:
                assert state(store, at=revision) == snapshot, f"list at {revision}"
        if floor == 1:
            rebuilt: dict[tuple[str, str], dict[str, Any]] = {}
            watch = store.watch(None, since=0)
            revisions = []
            while (event := watch.next(0)) is not None:
                revisions.append(event.revision)
                kind = "cm" if event.key == CM else "cq"
                ident = (kind, event.object["metadata"]["name"])
                if event.type == "DELETED":
                    del rebuilt[ident]
                else:
                    rebuilt[ident] = event.object
            assert revisions == list(range(1, store.revision + 1))
            assert rebuilt == final
        store.close()
        revision, _ = check_invariants(path)
        assert revision == max(snapshots)
        reopened = open_store(path, history=history)
        assert reopened.revision == revision and state(reopened) == final
        reopened.close()
