"""Create / get / update / delete semantics, errors as the apiserver reports them, dry-run, reopen."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from storetesting import CM, CQ, NS, WL, FakeClock, check_invariants, cm, cq, open_store, wl

from pykueue.store import (
    AlreadyExists,
    BadRequest,
    Conflict,
    InternalError,
    Invalid,
    NotFound,
    ResourceKey,
    Store,
)
from pykueue.store.ops import GENERATED_SUFFIX_ALPHABET


@pytest.fixture
def store() -> Store:
    return open_store()


# --- create ---------------------------------------------------------------------------------------


def test_create_sets_identity_and_bookkeeping(store: Store) -> None:
    sent = cq("a")
    sent["metadata"]["deletionTimestamp"] = "2020-01-01T00:00:00Z"
    sent["metadata"]["creationTimestamp"] = "2020-01-01T00:00:00Z"
    before = copy.deepcopy(sent)
    obj = store.create(CQ, sent)
    meta = obj["metadata"]
    assert sent == before, "the caller's object is not modified"
    assert meta["resourceVersion"] == "1" and store.revision == 1
    assert meta["generation"] == 1
    assert meta["creationTimestamp"] == "2023-11-14T22:13:20Z"
    assert len(meta["uid"]) == 36
    assert "deletionTimestamp" not in meta
    assert store.get(CQ, None, "a") == obj


def test_create_keeps_a_uid_assigned_by_the_handler(store: Store) -> None:
    sent = cq("a")
    sent["metadata"]["uid"] = "0f2b6f6e-7c2e-4a4e-9f0e-123456789abc"
    assert store.create(CQ, sent)["metadata"]["uid"] == "0f2b6f6e-7c2e-4a4e-9f0e-123456789abc"


def test_cluster_scoped_create_drops_namespace(store: Store) -> None:
    sent = cq("a")
    sent["metadata"]["namespace"] = "ignored"
    assert "namespace" not in store.create(CQ, sent)["metadata"]
    assert store.get(CQ, "whatever", "a")["metadata"]["name"] == "a"


def test_revisions_are_global_and_strictly_increasing(store: Store) -> None:
    revs = [
        int(store.create(k, o)["metadata"]["resourceVersion"])
        for k, o in [(CQ, cq("a")), (WL, wl("w")), (CQ, cq("b"))]
    ]
    assert revs == [1, 2, 3]
    assert store.revision == 3


def test_create_already_exists(store: Store) -> None:
    store.create(CQ, cq("a"))
    with pytest.raises(AlreadyExists) as err:
        store.create(CQ, cq("a"))
    assert err.value.code == 409 and err.value.reason == "AlreadyExists"
    assert err.value.message == 'clusterqueues.kueue.x-k8s.io "a" already exists'
    assert err.value.details == {"name": "a", "group": "kueue.x-k8s.io", "kind": "clusterqueues"}
    assert store.revision == 1


def test_same_name_in_other_namespace_or_resource_is_fine(store: Store) -> None:
    store.create(WL, wl("x", "a"))
    store.create(WL, wl("x", "b"))
    store.create(CM, cm("x", "a"))
    assert store.count(WL) == 2 and store.count(CM) == 1
    assert store.count(WL, "a") == 1


def test_generate_name(store: Store) -> None:
    sent = cq()
    sent["metadata"] = {"generateName": "team-"}
    made = {store.create(CQ, sent)["metadata"]["name"] for _ in range(20)}
    assert len(made) == 20
    for name in made:
        assert name.startswith("team-") and len(name) == len("team-") + 5
        assert set(name[5:]) <= set(GENERATED_SUFFIX_ALPHABET)


def test_generate_name_truncates_long_prefix(store: Store) -> None:
    sent = cq()
    sent["metadata"] = {"generateName": "x" * 70}
    name = store.create(CQ, sent)["metadata"]["name"]
    assert len(name) == 63 and name.startswith("x" * 58)


def test_generate_name_exhaustion(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    import pykueue.store.ops as ops

    monkeypatch.setattr(ops._random, "choices", lambda population, k: ["b"] * k)
    sent = cq()
    sent["metadata"] = {"generateName": "p-"}
    store.create(CQ, sent)
    with pytest.raises(AlreadyExists) as err:
        store.create(CQ, sent)
    assert err.value.message == (
        'clusterqueues.kueue.x-k8s.io "p-bbbbb" already exists, the server was not able to generate a unique '
        "name for the object"
    )
    assert err.value.details["retryAfterSeconds"] == 1


def test_name_when_both_given_wins(store: Store) -> None:
    sent = cq("fixed")
    sent["metadata"]["generateName"] = "gen-"
    assert store.create(CQ, sent)["metadata"]["name"] == "fixed"


@pytest.mark.parametrize(
    ("key", "obj", "error", "message"),
    [
        (
            CQ,
            {"kind": "ClusterQueue", "metadata": {}},
            Invalid,
            'ClusterQueue.kueue.x-k8s.io "" is invalid: metadata.name: Required value: name or generateName is required',
        ),
        (
            WL,
            {"kind": "Workload", "metadata": {"name": "w"}},
            Invalid,
            'Workload.kueue.x-k8s.io "w" is invalid: metadata.namespace: Required value',
        ),
        (
            CQ,
            {"metadata": {"name": "a/b"}},
            BadRequest,
            "Name parameter invalid: \"a/b\": may not contain '/'",
        ),
        (CQ, {"metadata": {"name": ".."}}, BadRequest, "Name parameter invalid: \"..\": may not be '..'"),
        (
            CQ,
            {"metadata": {"name": "a", "resourceVersion": "7"}},
            InternalError,
            "resourceVersion should not be set on objects to be created",
        ),
        (CQ, ["not", "an", "object"], BadRequest, "the object provided is not a JSON object"),
    ],
)
def test_create_rejects(
    store: Store, key: ResourceKey, obj: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as err:
        store.create(key, obj)
    assert str(err.value) == message
    assert store.revision == 0


def test_invalid_error_status_shape(store: Store) -> None:
    with pytest.raises(Invalid) as err:
        store.create(CQ, {"kind": "ClusterQueue", "metadata": {}})
    assert err.value.status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'ClusterQueue.kueue.x-k8s.io "" is invalid: metadata.name: Required value: name or generateName is required',
        "reason": "Invalid",
        "details": {
            "name": "",
            "group": "kueue.x-k8s.io",
            "kind": "ClusterQueue",
            "causes": [
                {
                    "reason": "FieldValueRequired",
                    "message": "Required value: name or generateName is required",
                    "field": "metadata.name",
                }
            ],
        },
        "code": 422,
    }


def test_resource_version_set_on_create_status_has_no_reason(store: Store) -> None:
    with pytest.raises(InternalError) as err:
        store.create(CQ, {"metadata": {"name": "a", "resourceVersion": "7"}})
    status = err.value.status()
    assert status["code"] == 500 and "reason" not in status


# --- get ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "namespace", "message", "details"),
    [
        (
            CQ,
            None,
            'clusterqueues.kueue.x-k8s.io "x" not found',
            {"name": "x", "group": "kueue.x-k8s.io", "kind": "clusterqueues"},
        ),
        (NS, None, 'namespaces "x" not found', {"name": "x", "kind": "namespaces"}),
        (
            WL,
            "default",
            'workloads.kueue.x-k8s.io "x" not found',
            {"name": "x", "group": "kueue.x-k8s.io", "kind": "workloads"},
        ),
    ],
)
def test_get_not_found(
    store: Store, key: ResourceKey, namespace: str | None, message: str, details: dict[str, Any]
) -> None:
    with pytest.raises(NotFound) as err:
        store.get(key, namespace, "x")
    assert (err.value.code, err.value.reason, err.value.message, err.value.details) == (
        404,
        "NotFound",
        message,
        details,
    )


def test_get_returns_independent_copies(store: Store) -> None:
    store.create(CQ, cq("a"))
    first = store.get(CQ, None, "a")
    first["spec"]["mutated"] = True
    assert "mutated" not in store.get(CQ, None, "a")["spec"]


# --- update ---------------------------------------------------------------------------------------


def test_update_with_current_resource_version(store: Store) -> None:
    obj = store.create(CQ, cq("a"))
    obj["spec"] = {"cohort": "x"}
    updated = store.update(CQ, obj)
    assert updated["metadata"]["resourceVersion"] == "2"
    assert updated["metadata"]["generation"] == 2
    assert store.get(CQ, None, "a") == updated


def test_update_stale_resource_version_conflicts_and_changes_nothing(store: Store) -> None:
    obj = store.create(CQ, cq("a"))
    fresh = store.update(CQ, dict(obj, spec={"cohort": "x"}))
    with pytest.raises(Conflict) as err:
        store.update(CQ, dict(obj, spec={"cohort": "y"}))
    assert err.value.message == (
        'Operation cannot be fulfilled on clusterqueues.kueue.x-k8s.io "a": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    assert err.value.details == {"name": "a", "group": "kueue.x-k8s.io", "kind": "clusterqueues"}
    assert store.get(CQ, None, "a") == fresh and store.revision == 2


def test_conflict_message_core_group_has_no_suffix(store: Store) -> None:
    obj = store.create(NS, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}})
    store.update(NS, dict(obj, metadata=dict(obj["metadata"], labels={"a": "b"})))
    with pytest.raises(
        Conflict, match=r'^Operation cannot be fulfilled on namespaces "n": the object has been modified'
    ):
        store.update(NS, dict(obj, metadata=dict(obj["metadata"], labels={"a": "c"})))


def test_unconditional_update_without_resource_version(store: Store) -> None:
    obj = store.create(CQ, cq("a"))
    del obj["metadata"]["resourceVersion"]
    assert store.update(CQ, dict(obj, spec={"cohort": "z"}))["metadata"]["resourceVersion"] == "2"


def test_update_missing_object(store: Store) -> None:
    with pytest.raises(NotFound, match=r'^clusterqueues\.kueue\.x-k8s\.io "nope" not found$'):
        store.update(CQ, cq("nope"))


def test_update_preserves_system_fields(store: Store) -> None:
    obj = store.create(CQ, cq("a"))
    sent = copy.deepcopy(obj)
    sent["metadata"].update(
        creationTimestamp="1999-01-01T00:00:00Z", generation=42, deletionTimestamp="2000-01-01T00:00:00Z"
    )
    del sent["metadata"]["uid"]
    sent["metadata"]["labels"] = {"x": "y"}
    updated = store.update(CQ, sent)
    for field in ("uid", "creationTimestamp"):
        assert updated["metadata"][field] == obj["metadata"][field]
    assert updated["metadata"]["generation"] == 1
    assert "deletionTimestamp" not in updated["metadata"]
    assert updated["metadata"]["labels"] == {"x": "y"}


def test_update_rejects_a_different_uid(store: Store) -> None:
    obj = store.create(CQ, cq("a"))
    obj["metadata"]["uid"] = "other"
    with pytest.raises(Invalid) as err:
        store.update(CQ, obj)
    assert (
        err.value.message
        == 'ClusterQueue.kueue.x-k8s.io "a" is invalid: metadata.uid: Invalid value: "other": field is immutable'
    )
    assert err.value.details["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "other": field is immutable',
            "field": "metadata.uid",
        }
    ]


# generation: (status subresource?, change) -> generation after one update
def _spec(o: dict[str, Any]) -> None:
    o["spec"] = {"cohort": "new"}


def _status(o: dict[str, Any]) -> None:
    o["status"] = {"pendingWorkloads": 3}


def _labels(o: dict[str, Any]) -> None:
    o["metadata"]["labels"] = {"a": "b"}


def _annotations(o: dict[str, Any]) -> None:
    o["metadata"]["annotations"] = {"a": "b"}


def _finalizers(o: dict[str, Any]) -> None:
    o["metadata"]["finalizers"] = ["x"]


def _other_top_level(o: dict[str, Any]) -> None:
    o["data"] = {"k": "v"}


def _nothing(o: dict[str, Any]) -> None:
    pass


@pytest.mark.parametrize(
    ("status_subresource", "change", "generation", "bumps_revision"),
    [
        (True, _spec, 2, True),
        (True, _status, 1, False),  # status is reset to the stored one: a no-op
        (True, _labels, 1, True),
        (True, _annotations, 1, True),
        (True, _finalizers, 1, True),
        (True, _other_top_level, 2, True),
        (True, _nothing, 1, False),
        (False, _spec, 2, True),
        (False, _status, 2, True),  # without a status subresource, status is just content
        (False, _labels, 1, True),
        (False, _nothing, 1, False),
    ],
)
def test_generation_rules(
    store: Store, status_subresource: bool, change: Any, generation: int, bumps_revision: bool
) -> None:
    obj = store.create(CQ, cq("a"))
    change(obj)
    updated = store.update(CQ, obj, status_subresource=status_subresource)
    assert updated["metadata"]["generation"] == generation
    assert (store.revision == 2) is bumps_revision
    assert int(updated["metadata"]["resourceVersion"]) == store.revision


def test_main_update_keeps_stored_status(store: Store) -> None:
    obj = store.create(CQ, dict(cq("a"), status={"phase": "old"}))
    obj["status"] = {"phase": "client"}
    obj["spec"] = {"cohort": "c"}
    updated = store.update(CQ, obj)
    assert updated["status"] == {"phase": "old"} and updated["spec"] == {"cohort": "c"}


def test_status_update_changes_only_status(store: Store) -> None:
    obj = store.create(CQ, cq("a"))
    sent = copy.deepcopy(obj)
    sent["status"] = {"pendingWorkloads": 1}
    sent["spec"] = {"cohort": "ignored"}
    sent["metadata"]["labels"] = {"ignored": "yes"}
    sent["metadata"]["managedFields"] = [{"manager": "kueue", "operation": "Update", "subresource": "status"}]
    updated = store.update(CQ, sent, subresource="status")
    assert updated["status"] == {"pendingWorkloads": 1}
    assert updated["spec"] == obj["spec"]
    assert "labels" not in updated["metadata"]
    assert updated["metadata"]["managedFields"] == sent["metadata"]["managedFields"]
    assert updated["metadata"]["generation"] == 1
    assert updated["metadata"]["resourceVersion"] == "2"


def test_status_update_removing_status(store: Store) -> None:
    store.create(CQ, dict(cq("a"), status={"x": 1}))
    obj = store.get(CQ, None, "a")
    del obj["status"]
    assert "status" not in store.update(CQ, obj, subresource="status")


def test_status_update_checks_resource_version(store: Store) -> None:
    obj = store.create(CQ, cq("a"))
    store.update(CQ, dict(obj, spec={"cohort": "x"}))
    with pytest.raises(Conflict):
        store.update(CQ, dict(obj, status={"x": 1}), subresource="status")


def test_status_subresource_of_kind_without_one(store: Store) -> None:
    obj = store.create(CM, cm("c"))
    with pytest.raises(NotFound):
        store.update(CM, obj, subresource="status", status_subresource=False)


def test_noop_update_returns_stored_without_new_revision(store: Store) -> None:
    obj = store.create(CQ, cq("a"))
    assert store.update(CQ, copy.deepcopy(obj)) == obj
    assert store.revision == 1


# --- delete ---------------------------------------------------------------------------------------


def test_delete_returns_last_state_with_deletion_revision(store: Store) -> None:
    obj = store.create(CQ, cq("a"))
    deleted = store.delete(CQ, None, "a")
    assert deleted["metadata"]["resourceVersion"] == "2"
    assert dict(deleted, metadata=obj["metadata"]) == obj
    with pytest.raises(NotFound):
        store.get(CQ, None, "a")
    with pytest.raises(NotFound, match=r'^clusterqueues\.kueue\.x-k8s\.io "a" not found$'):
        store.delete(CQ, None, "a")
    assert store.count(CQ) == 0


def test_delete_preconditions(store: Store) -> None:
    obj = store.create(WL, wl("w"))
    uid, rv = obj["metadata"]["uid"], obj["metadata"]["resourceVersion"]
    with pytest.raises(Conflict) as err:
        store.delete(WL, "default", "w", preconditions={"uid": "bad"})
    assert err.value.message == (
        'Operation cannot be fulfilled on Workload.kueue.x-k8s.io "w": the UID in the precondition (bad) does not '
        f"match the UID in record ({uid}). The object might have been deleted and then recreated"
    )
    assert err.value.details == {"name": "w", "group": "kueue.x-k8s.io", "kind": "Workload"}
    with pytest.raises(Conflict) as err:
        store.delete(WL, "default", "w", preconditions={"resourceVersion": "99"})
    assert err.value.message == (
        'Operation cannot be fulfilled on Workload.kueue.x-k8s.io "w": the ResourceVersion in the precondition (99) '
        f"does not match the ResourceVersion in record ({rv}). The object might have been modified"
    )
    assert store.revision == 1
    store.delete(WL, "default", "w", preconditions={"uid": uid, "resourceVersion": rv})
    assert store.count(WL) == 0


def test_delete_rejects_unknown_propagation(store: Store) -> None:
    store.create(CQ, cq("a"))
    with pytest.raises(Invalid) as err:
        store.delete(CQ, None, "a", propagation="Sideways")
    assert err.value.message == (
        'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Sideways": '
        'supported values: "Foreground", "Background", "Orphan"'
    )


def test_delete_collection(store: Store) -> None:
    for i in range(3):
        store.create(WL, wl(f"w{i}", labels={"keep": "no" if i else "yes"}))
    store.create(WL, wl("other", "ns2"))
    gone = store.delete_collection(WL, "default", label_selector="keep=no")
    assert sorted(o["metadata"]["name"] for o in gone) == ["w1", "w2"]
    assert store.count(WL) == 2


# --- dry run --------------------------------------------------------------------------------------


def test_dry_run_create_leaves_no_trace(store: Store) -> None:
    watch = store.watch(None)
    obj = store.create(CQ, cq("a"), dry_run=True)
    assert obj["metadata"]["name"] == "a" and obj["metadata"]["uid"]
    assert "resourceVersion" not in obj["metadata"]
    assert store.revision == 0 and store.count(CQ) == 0
    assert watch.next(0) is None
    with pytest.raises(NotFound):
        store.get(CQ, None, "a")


def test_dry_run_create_still_detects_conflicts(store: Store) -> None:
    store.create(CQ, cq("a"))
    with pytest.raises(AlreadyExists):
        store.create(CQ, cq("a"), dry_run=True)


def test_dry_run_update_and_delete(store: Store) -> None:
    obj = store.create(CQ, cq("a"))
    result = store.update(CQ, dict(obj, spec={"cohort": "x"}), dry_run=True)
    assert result["spec"] == {"cohort": "x"} and result["metadata"]["generation"] == 2
    assert result["metadata"]["resourceVersion"] == "1"
    deleted = store.delete(CQ, None, "a", dry_run=True)
    assert deleted["metadata"]["resourceVersion"] == "1"
    assert store.get(CQ, None, "a") == obj and store.revision == 1


def test_dry_run_delete_with_finalizer_shows_marked_object(store: Store) -> None:
    obj = store.create(CQ, dict(cq("a"), metadata={"name": "a", "finalizers": ["x"]}))
    marked = store.delete(CQ, None, "a", dry_run=True)
    assert marked["metadata"]["deletionTimestamp"] and marked["metadata"]["resourceVersion"] == "1"
    assert store.get(CQ, None, "a") == obj


# --- persistence ----------------------------------------------------------------------------------


def test_reopen_keeps_objects_revision_and_counts(tmp_path: Path) -> None:
    path = str(tmp_path / "db.sqlite")
    with open_store(path) as store:
        store.create(CQ, cq("a"))
        w = store.create(WL, wl("w"))
        store.update(WL, dict(w, spec={"queueName": "z"}))
        store.create(CQ, cq("b"))
        store.delete(CQ, None, "b")
        before = store.list(CQ)[0], store.get(WL, "default", "w")
    with open_store(path) as store:
        assert store.revision == 5
        assert (store.list(CQ)[0], store.get(WL, "default", "w")) == before
        assert store.count(CQ) == 1 and store.count(WL) == 1
        assert store.create(CQ, cq("c"))["metadata"]["resourceVersion"] == "6"
        watch = store.watch(None, since=0)
        replay = []
        while (event := watch.next(0)) is not None:
            replay.append((event.type, event.object["metadata"]["name"], event.revision))
        assert replay == [
            ("ADDED", "a", 1),
            ("ADDED", "w", 2),
            ("MODIFIED", "w", 3),
            ("ADDED", "b", 4),
            ("DELETED", "b", 5),
            ("ADDED", "c", 6),
        ]
    check_invariants(path)


def test_closed_store_rejects_calls() -> None:
    store = open_store()
    store.close()
    store.close()
    with pytest.raises(InternalError):
        store.get(CQ, None, "a")


def test_clock_drives_timestamps() -> None:
    clock = FakeClock(0)
    store = Store(None, clock=clock)
    assert store.create(CQ, cq("a"))["metadata"]["creationTimestamp"] == "1970-01-01T00:00:00Z"
    clock.now = 946_684_799.9
    assert store.create(CQ, cq("b"))["metadata"]["creationTimestamp"] == "1999-12-31T23:59:59Z"


def test_one_process_owns_the_file(tmp_path: Path) -> None:
    path = str(tmp_path / "db.sqlite")
    with open_store(path) as store:
        store.create(CQ, cq("a"))
        with pytest.raises(InternalError, match="cannot open the store"):
            open_store(path)
    with open_store(path) as store:
        assert store.count(CQ) == 1


def _ns(name: str, *finalizers: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "finalizers": list(finalizers)}}


def test_namespace_exists_follows_commits_and_survives_reopen(tmp_path: Path) -> None:
    path = str(tmp_path / "db.sqlite")
    with open_store(path) as store:
        assert not store.namespace_exists("team-a")
        store.create(NS, _ns("team-a"), dry_run=True)
        assert not store.namespace_exists("team-a"), "a dry run stores nothing"
        store.create(NS, _ns("team-a"))
        store.create(NS, _ns("team-b", "example.com/hold"))
        store.create(CM, cm("x", namespace="team-a"))
        assert store.namespace_exists("team-a") and store.namespace_exists("team-b")
        assert not store.namespace_exists("x"), "only Namespaces count"
        store.delete(NS, None, "team-b")
        assert store.namespace_exists("team-b"), "still stored while a finalizer holds it"
        live = store.get(NS, None, "team-b")
        live["metadata"]["finalizers"] = []
        store.update(NS, live)
        assert not store.namespace_exists("team-b")
    with open_store(path) as store:
        assert store.namespace_exists("team-a") and not store.namespace_exists("team-b")
        store.delete(NS, None, "team-a")
        assert not store.namespace_exists("team-a")


def _held_ns(name: str) -> dict[str, Any]:
    ns = _ns(name)
    ns["spec"] = {"finalizers": ["kubernetes"]}
    ns["status"] = {"phase": "Active"}
    return ns


def test_namespace_spec_finalizers_hold_its_deletion(store: Store) -> None:
    store.create(NS, _held_ns("team"))
    marked = store.delete(NS, None, "team")
    assert marked["metadata"]["deletionTimestamp"] and marked["status"]["phase"] == "Terminating"
    assert store.namespace_exists("team") and store.get(NS, None, "team") == marked
    assert store.delete(NS, None, "team") == marked, "deleting again changes nothing"
    marked["spec"]["finalizers"] = []
    store.update(NS, marked)  # what the namespace controller's finalize does
    assert not store.namespace_exists("team")
    with pytest.raises(NotFound):
        store.get(NS, None, "team")


def test_a_namespace_without_spec_finalizers_goes_at_once(store: Store) -> None:
    store.create(NS, _ns("plain"))
    deleted = store.delete(NS, None, "plain")
    assert "status" not in deleted or deleted["status"].get("phase") != "Terminating"
    assert not store.namespace_exists("plain")


def test_metadata_and_spec_finalizers_both_hold_a_namespace(store: Store) -> None:
    ns = _held_ns("both")
    ns["metadata"]["finalizers"] = ["example.com/hold"]
    store.create(NS, ns)
    marked = store.delete(NS, None, "both")
    marked["spec"]["finalizers"] = []
    still = store.update(NS, marked)
    assert still["metadata"]["finalizers"] == ["example.com/hold"], "the metadata finalizer still holds it"
    still["metadata"]["finalizers"] = []
    store.update(NS, still)
    assert not store.namespace_exists("both")


def test_only_namespaces_are_held_by_spec_finalizers(store: Store) -> None:
    obj = cq("x")
    obj["spec"]["finalizers"] = ["kubernetes"]
    store.create(CQ, obj)
    store.delete(CQ, None, "x")
    with pytest.raises(NotFound):
        store.get(CQ, None, "x")


# --- the handlers' read before a write ------------------------------------------------------------


def _object_reads(store: Store, action: Any) -> int:
    """How many times ``action`` reads one object's stored JSON from SQLite."""
    from pykueue.store.tx import SQL_GET

    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    try:
        action()
    finally:
        store._conn.set_trace_callback(None)
    return sum(1 for s in statements if s.startswith(SQL_GET.split("?")[0]))


def test_a_write_after_this_threads_read_of_the_object_does_not_read_it_again(store: Store) -> None:
    """A status write right after the same thread read the object (what every handler does) takes
    the stored JSON it read instead of querying it again; without that read, or after a read of
    another object, the write reads it itself, and writes as before either way."""
    store.create(WL, wl("a"))
    store.create(WL, wl("b"))

    def read_then_write(read: str, status: str) -> None:
        live = store.get(WL, "default", read)
        live["status"] = {"conditions": [{"type": status}]}
        live["metadata"]["name"] = "a"
        live["metadata"].pop("resourceVersion")
        store.update(WL, live, subresource="status")

    assert _object_reads(store, lambda: read_then_write("a", "One")) == 1
    assert _object_reads(store, lambda: read_then_write("b", "Two")) == 2
    got = store.get(WL, "default", "a")
    assert got["status"] == {"conditions": [{"type": "Two"}]} and got["spec"] == wl("a")["spec"]


def test_a_read_that_another_write_made_stale_is_not_taken(store: Store) -> None:
    """When another thread wrote the object after this thread read it, this thread's write reads
    the object again: a stale resourceVersion is a Conflict, and a write without one keeps the
    other thread's change (the status strategy takes the rest of the object from the store)."""
    import threading

    store.create(WL, wl("a", labels={"v": "1"}))
    read: dict[str, Any] = {}
    outcome: list[Any] = []
    first_read, other_wrote = threading.Event(), threading.Event()

    def this_thread() -> None:
        read["obj"] = store.get(WL, "default", "a")
        first_read.set()
        other_wrote.wait(10)
        stale = copy.deepcopy(read["obj"])
        stale["status"] = {"conditions": [{"type": "Stale"}]}
        try:
            store.update(WL, stale, subresource="status")
        except Conflict as err:
            outcome.append(err)
        store.get(WL, "default", "a")  # read again, then another write in between, no version
        other_wrote.clear()
        first_read.set()
        other_wrote.wait(10)
        unversioned = copy.deepcopy(read["obj"])
        unversioned["metadata"].pop("resourceVersion")
        unversioned["status"] = {"conditions": [{"type": "Mine"}]}
        outcome.append(store.update(WL, unversioned, subresource="status"))

    worker = threading.Thread(target=this_thread)
    worker.start()
    for value in ("2", "3"):
        assert first_read.wait(10)
        first_read.clear()
        other = store.get(WL, "default", "a")
        other["metadata"]["labels"] = {"v": value}
        store.update(WL, other)
        other_wrote.set()
    worker.join(10)
    assert isinstance(outcome[0], Conflict)
    assert outcome[1]["metadata"]["labels"] == {"v": "3"}
    assert outcome[1]["status"] == {"conditions": [{"type": "Mine"}]}
    assert store.get(WL, "default", "a") == outcome[1]
