"""Finalizers, deletion and ownerReference garbage collection (Background, Foreground, Orphan)."""

from __future__ import annotations

from typing import Any

import pytest
from storetesting import CM, CQ, JOB, WL, cm, cq, job, open_store, owner_ref, wl

from pykueue.store import FOREGROUND, ORPHAN, Invalid, NotFound, Store, Watch


@pytest.fixture
def store() -> Store:
    return open_store()


def drain(watch: Watch) -> list[tuple[str, str]]:
    out = []
    while (event := watch.next(0)) is not None:
        out.append((event.type, event.object["metadata"]["name"]))
    return out


def exists(store: Store, key: Any, namespace: str | None, name: str) -> bool:
    try:
        store.get(key, namespace, name)
    except NotFound:
        return False
    return True


# --- finalizers -----------------------------------------------------------------------------------


def test_finalizer_lifecycle(store: Store) -> None:
    created = store.create(
        CQ, dict(cq("a"), metadata={"name": "a", "finalizers": ["kueue.x-k8s.io/resource-in-use"]})
    )
    watch = store.watch(CQ)
    marked = store.delete(CQ, None, "a")
    meta = marked["metadata"]
    assert meta["deletionTimestamp"] == "2023-11-14T22:13:20Z"
    assert meta["deletionGracePeriodSeconds"] == 0
    assert meta["generation"] == 2, "markAsDeleting bumps the generation"
    assert meta["resourceVersion"] == "2"
    assert store.get(CQ, None, "a") == marked
    # deleting again changes nothing
    assert store.delete(CQ, None, "a") == marked and store.revision == 2
    # no new finalizers once deleting
    with pytest.raises(Invalid) as err:
        store.update(
            CQ, dict(marked, metadata=dict(meta, finalizers=[*meta["finalizers"], "new", "another"]))
        )
    assert err.value.message == (
        'ClusterQueue.kueue.x-k8s.io "a" is invalid: metadata.finalizers: Forbidden: no new finalizers can be '
        'added if the object is being deleted, found new finalizers []string{"another", "new"}'
    )
    # other changes are still allowed, and the deletion timestamp cannot be cleared
    relabeled = store.update(
        CQ, dict(marked, metadata={**meta, "labels": {"x": "y"}, "deletionTimestamp": None})
    )
    assert relabeled["metadata"]["deletionTimestamp"] == meta["deletionTimestamp"]
    # removing the last finalizer deletes the object: the returned / watched object is its last state
    gone = store.update(CQ, dict(relabeled, metadata=dict(relabeled["metadata"], finalizers=[])))
    assert gone["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]
    assert gone["metadata"]["resourceVersion"] == "4"
    assert not exists(store, CQ, None, "a")
    assert drain(watch) == [("MODIFIED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
    assert created["metadata"]["uid"] == gone["metadata"]["uid"]


def test_removing_one_of_two_finalizers_keeps_object(store: Store) -> None:
    store.create(CQ, dict(cq("a"), metadata={"name": "a", "finalizers": ["x", "y"]}))
    marked = store.delete(CQ, None, "a")
    kept = store.update(CQ, dict(marked, metadata=dict(marked["metadata"], finalizers=["y"])))
    assert kept["metadata"]["finalizers"] == ["y"] and exists(store, CQ, None, "a")


def test_finalizers_on_live_object_are_just_metadata(store: Store) -> None:
    obj = store.create(CQ, cq("a"))
    updated = store.update(CQ, dict(obj, metadata=dict(obj["metadata"], finalizers=["x"])))
    assert updated["metadata"]["generation"] == 1
    updated = store.update(CQ, dict(updated, metadata=dict(updated["metadata"], finalizers=[])))
    assert exists(store, CQ, None, "a")


# --- background -----------------------------------------------------------------------------------


def test_background_deletes_dependents(store: Store) -> None:
    owner = store.create(JOB, job("j"))
    workload = wl("w1")
    workload["metadata"]["ownerReferences"] = [owner_ref(owner, controller=True, block=True)]
    store.create(WL, workload)
    store.create(CM, cm("c1", ownerReferences=[owner_ref(owner)]))
    store.create(CM, cm("unrelated"))
    watch = store.watch(None)
    deleted = store.delete(JOB, "default", "j")
    assert deleted["metadata"]["name"] == "j"
    # dependents are collected in (group, resource, namespace/name) order
    assert drain(watch) == [("DELETED", "j"), ("DELETED", "c1"), ("DELETED", "w1")]
    assert exists(store, CM, "default", "unrelated")


def test_background_cascades_through_generations(store: Store) -> None:
    a = store.create(CQ, cq("a"))
    b = store.create(CM, cm("b", ownerReferences=[owner_ref(a)]))
    store.create(CM, cm("c", ownerReferences=[owner_ref(b)]))
    watch = store.watch(None)
    store.delete(CQ, None, "a")
    assert drain(watch) == [("DELETED", "a"), ("DELETED", "b"), ("DELETED", "c")]


def test_dependent_with_another_live_owner_only_loses_the_reference(store: Store) -> None:
    a = store.create(CQ, cq("a"))
    b = store.create(CQ, cq("b"))
    store.create(CM, cm("dep", ownerReferences=[owner_ref(a), owner_ref(b)]))
    store.delete(CQ, None, "a")
    dep = store.get(CM, "default", "dep")
    assert [r["name"] for r in dep["metadata"]["ownerReferences"]] == ["b"]
    store.delete(CQ, None, "b")
    assert not exists(store, CM, "default", "dep")


def test_background_dependent_with_finalizer_is_marked(store: Store) -> None:
    owner = store.create(JOB, job("j"))
    store.create(CM, cm("dep", ownerReferences=[owner_ref(owner)], finalizers=["hold"]))
    store.delete(JOB, "default", "j")
    dep = store.get(CM, "default", "dep")
    assert dep["metadata"]["deletionTimestamp"]
    store.update(CM, dict(dep, metadata=dict(dep["metadata"], finalizers=[])))
    assert not exists(store, CM, "default", "dep")


def test_owner_with_finalizer_keeps_dependents_until_gone(store: Store) -> None:
    owner = store.create(JOB, job("j", finalizers=["hold"]))
    store.create(CM, cm("dep", ownerReferences=[owner_ref(owner)]))
    marked = store.delete(JOB, "default", "j")
    assert exists(store, CM, "default", "dep"), "a marked owner still exists: dependents are safe"
    store.update(JOB, dict(marked, metadata=dict(marked["metadata"], finalizers=[])))
    assert not exists(store, CM, "default", "dep")


def test_dangling_reference_on_create_is_collected(store: Store) -> None:
    owner = store.create(JOB, job("j"))
    bad_uid = dict(owner_ref(owner), uid="not-the-uid")
    watch = store.watch(CM)
    created = store.create(CM, cm("dep", ownerReferences=[bad_uid]))
    assert created["metadata"]["name"] == "dep"
    assert drain(watch) == [("ADDED", "dep"), ("DELETED", "dep")]
    missing = {"apiVersion": "batch/v1", "kind": "Job", "name": "ghost", "uid": "u"}
    store.create(CM, cm("dep2", ownerReferences=[missing]))
    assert not exists(store, CM, "default", "dep2")


@pytest.mark.parametrize(
    ("dependent_ns", "owner_ns", "survives"),
    [("default", "default", True), ("other", "default", False)],
)
def test_owner_must_be_in_the_dependents_namespace(
    store: Store, dependent_ns: str, owner_ns: str, survives: bool
) -> None:
    owner = store.create(JOB, job("j", owner_ns))
    store.create(CM, cm("dep", dependent_ns, ownerReferences=[owner_ref(owner)]))
    assert exists(store, CM, dependent_ns, "dep") is survives


def test_cluster_scoped_owner_of_namespaced_dependent(store: Store) -> None:
    owner = store.create(CQ, cq("a"))
    store.create(
        WL, dict(wl("w"), metadata={"name": "w", "namespace": "ns", "ownerReferences": [owner_ref(owner)]})
    )
    assert exists(store, WL, "ns", "w")


def test_adding_a_dangling_reference_by_update_collects(store: Store) -> None:
    obj = store.create(CM, cm("c"))
    store.update(
        CM,
        dict(
            obj,
            metadata=dict(
                obj["metadata"],
                ownerReferences=[{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "y"}],
            ),
        ),
    )
    assert not exists(store, CM, "default", "c")


def test_garbage_collection_disabled() -> None:
    store = open_store(garbage_collection=False)
    owner = store.create(JOB, job("j"))
    store.create(CM, cm("dep", ownerReferences=[owner_ref(owner)]))
    store.create(
        CM, cm("dangling", ownerReferences=[{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "y"}])
    )
    store.delete(JOB, "default", "j", propagation="Foreground")
    assert not exists(store, JOB, "default", "j")
    assert exists(store, CM, "default", "dep") and exists(store, CM, "default", "dangling")


# --- orphan ---------------------------------------------------------------------------------------


def test_orphan_keeps_dependents_and_drops_the_reference(store: Store) -> None:
    owner = store.create(JOB, job("j"))
    other = store.create(JOB, job("k"))
    store.create(CM, cm("only", ownerReferences=[owner_ref(owner)]))
    store.create(CM, cm("both", ownerReferences=[owner_ref(owner), owner_ref(other)]))
    watch = store.watch(None)
    marked = store.delete(JOB, "default", "j", propagation="Orphan")
    assert marked["metadata"]["finalizers"] == [ORPHAN] and marked["metadata"]["deletionTimestamp"]
    assert drain(watch) == [("MODIFIED", "j"), ("MODIFIED", "both"), ("MODIFIED", "only"), ("DELETED", "j")]
    assert "ownerReferences" not in store.get(CM, "default", "only")["metadata"]
    assert [r["name"] for r in store.get(CM, "default", "both")["metadata"]["ownerReferences"]] == ["k"]


def test_orphan_with_other_finalizer_leaves_owner_marked(store: Store) -> None:
    owner = store.create(JOB, job("j", finalizers=["hold"]))
    store.create(CM, cm("dep", ownerReferences=[owner_ref(owner)]))
    store.delete(JOB, "default", "j", propagation="Orphan")
    left = store.get(JOB, "default", "j")
    assert left["metadata"]["finalizers"] == ["hold"] and left["metadata"]["deletionTimestamp"]
    assert "ownerReferences" not in store.get(CM, "default", "dep")["metadata"]


def test_unspecified_propagation_follows_existing_finalizer(store: Store) -> None:
    owner = store.create(JOB, job("j", finalizers=[ORPHAN]))
    store.create(CM, cm("dep", ownerReferences=[owner_ref(owner)]))
    store.delete(JOB, "default", "j", propagation=None)
    assert not exists(store, JOB, "default", "j")
    assert exists(store, CM, "default", "dep")


def test_explicit_background_overrides_orphan_finalizer(store: Store) -> None:
    owner = store.create(JOB, job("j", finalizers=[ORPHAN]))
    store.create(CM, cm("dep", ownerReferences=[owner_ref(owner)]))
    deleted = store.delete(JOB, "default", "j", propagation="Background")
    assert deleted["metadata"]["finalizers"] == [ORPHAN], "deleted at once: the last stored state"
    assert not exists(store, CM, "default", "dep")


# --- foreground -----------------------------------------------------------------------------------


def test_foreground_deletes_dependents_first(store: Store) -> None:
    owner = store.create(JOB, job("j"))
    store.create(CM, cm("blocking", ownerReferences=[owner_ref(owner, block=True)]))
    store.create(CM, cm("free", ownerReferences=[owner_ref(owner, block=False)]))
    watch = store.watch(None)
    marked = store.delete(JOB, "default", "j", propagation="Foreground")
    assert marked["metadata"]["finalizers"] == [FOREGROUND]
    assert marked["metadata"]["deletionTimestamp"] and marked["metadata"]["generation"] == 2
    assert drain(watch) == [("MODIFIED", "j"), ("DELETED", "blocking"), ("DELETED", "free"), ("DELETED", "j")]


def test_foreground_waits_for_blocking_dependent_with_finalizer(store: Store) -> None:
    owner = store.create(JOB, job("j"))
    store.create(CM, cm("dep", ownerReferences=[owner_ref(owner, block=True)], finalizers=["hold"]))
    store.delete(JOB, "default", "j", propagation="Foreground")
    waiting = store.get(JOB, "default", "j")
    assert waiting["metadata"]["finalizers"] == [FOREGROUND]
    dep = store.get(CM, "default", "dep")
    assert dep["metadata"]["deletionTimestamp"]
    watch = store.watch(None)
    store.update(CM, dict(dep, metadata=dict(dep["metadata"], finalizers=[])))
    assert drain(watch) == [("DELETED", "dep"), ("DELETED", "j")]


def test_foreground_not_blocked_by_non_blocking_dependent(store: Store) -> None:
    owner = store.create(JOB, job("j"))
    store.create(CM, cm("dep", ownerReferences=[owner_ref(owner)], finalizers=["hold"]))
    store.delete(JOB, "default", "j", propagation="Foreground")
    assert not exists(store, JOB, "default", "j")
    dep = store.get(CM, "default", "dep")
    assert dep["metadata"]["deletionTimestamp"]


def test_foreground_owner_released_when_blocking_reference_is_dropped(store: Store) -> None:
    owner = store.create(JOB, job("j"))
    dep = store.create(CM, cm("dep", ownerReferences=[owner_ref(owner, block=True)], finalizers=["hold"]))
    store.delete(JOB, "default", "j", propagation="Foreground")
    dep = store.get(CM, "default", "dep")
    refs = [dict(r, blockOwnerDeletion=False) for r in dep["metadata"]["ownerReferences"]]
    store.update(CM, dict(dep, metadata=dict(dep["metadata"], ownerReferences=refs)))
    assert not exists(store, JOB, "default", "j")


def test_foreground_dependent_with_another_owner_survives(store: Store) -> None:
    owner = store.create(JOB, job("j"))
    other = store.create(JOB, job("k"))
    store.create(CM, cm("dep", ownerReferences=[owner_ref(owner, block=True), owner_ref(other)]))
    store.delete(JOB, "default", "j", propagation="Foreground")
    assert not exists(store, JOB, "default", "j")
    assert [r["name"] for r in store.get(CM, "default", "dep")["metadata"]["ownerReferences"]] == ["k"]


def test_foreground_is_recursive(store: Store) -> None:
    a = store.create(JOB, job("a"))
    b = store.create(JOB, job("b", ownerReferences=[owner_ref(a, block=True)]))
    store.create(CM, cm("c", ownerReferences=[owner_ref(b, block=True)]))
    watch = store.watch(None)
    store.delete(JOB, "default", "a", propagation="Foreground")
    assert drain(watch) == [
        ("MODIFIED", "a"),  # a: foregroundDeletion
        ("MODIFIED", "b"),  # b has dependents: deleted in the foreground too
        ("DELETED", "c"),
        ("DELETED", "b"),
        ("DELETED", "a"),
    ]


def test_foreground_cycle_terminates(store: Store) -> None:
    a = store.create(CM, cm("a"))
    b = store.create(CM, cm("b", ownerReferences=[owner_ref(a, block=True)]))
    store.update(CM, dict(a, metadata=dict(a["metadata"], ownerReferences=[owner_ref(b, block=True)])))
    store.delete(CM, "default", "a", propagation="Foreground")
    assert store.count(CM) == 0


def test_background_delete_of_foreground_waiting_owner_finishes_it(store: Store) -> None:
    owner = store.create(JOB, job("j"))
    store.create(CM, cm("dep", ownerReferences=[owner_ref(owner, block=True)], finalizers=["hold"]))
    store.delete(JOB, "default", "j", propagation="Foreground")
    store.delete(JOB, "default", "j", propagation="Background")
    assert not exists(store, JOB, "default", "j")
