"""Upstream ``pkg/controller/core/resourceflavor_controller_test.go``, ported case by case (ids are
upstream's case names), against the controllers of ``pykueue serve``.

Each case seeds the embedded API server (:mod:`reconcile_harness`; the manager is a standby that
applies the watched changes to its caches but reconciles nothing by itself) and observes what
upstream's test observes:

- ``TestResourceFlavorPredicates``: whether the event reconciles the flavor, i.e. whether the
  change, made through the API, queued the flavor's key for the ResourceFlavor reconciler
  (pykueue's ``ClusterCache._apply_resourceflavors`` holds upstream's ``Create``, ``Update`` and
  ``Delete`` handlers).
- ``TestResourceFlavorReconcile``: one reconcile of the flavor (``QueueControllers._reconcile_rf``),
  then the flavor the API server holds.
- ``TestNotifyClusterQueueUpdate``: whether a ClusterQueue change sends its old version to the
  flavor handler (:func:`cluster_queue_update_event`).
- ``TestCqHandlerGeneric``: the flavors the handler queues for reconciling
  (``ClusterCache.reconcile_unused_flavors``) with the case's ClusterQueues in the cache.

A flavor change's retry of parked workloads (upstream's ``Create`` and ``Update`` call
``NotifyRetryInadmissible`` with the ClusterQueues it concerns) has no case in upstream's file; it
is checked below on upstream's rule (:func:`test_flavor_change_retries_the_cluster_queues_it_concerns`).

Not ported:
- the watcher notifications (``wantOld``/``wantNew`` of ``TestResourceFlavorPredicates``): pykueue's
  ClusterQueue status follows every flavor change through ``ClusterCache._cluster_queues_changed``
  instead of a watcher interface.
- "generic returns true without notifying" — pykueue has no generic ResourceFlavor source but the
  ClusterQueue handler, whose cases (``TestCqHandlerGeneric``) are ported.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from reconcile_harness import FINALIZER, JobReconcile

from pykueue.api.conversion import to_internal
from pykueue.api.kueue import ClusterQueue
from pykueue.client import resources as R
from pykueue.controllers.cluster_cache import FLAVOR, cluster_queue_update_event
from pykueue.core.queue.manager import RetryRequest

KUEUE = "kueue.x-k8s.io/v1beta2"


def _flavor(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def _cq(name: str, *flavors: str, cohort: str = "") -> dict[str, Any]:
    """Upstream's ``makeCQWithFlavors``: one resource group, 10 CPUs in each flavor."""
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [{"name": f, "resources": [{"name": "cpu", "nominalQuota": "10"}]} for f in flavors],
            }
        ]
        if flavors
        else [],
    }
    if cohort:
        spec["cohortName"] = cohort
    return {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def _typed_cq(name: str, *flavors: str) -> ClusterQueue:
    typed, _ = to_internal(_cq(name, *flavors))
    assert isinstance(typed, ClusterQueue)
    return typed


@pytest.fixture
def world() -> Iterator[JobReconcile]:
    with JobReconcile() as w:
        yield w


def _queued_flavors(world: JobReconcile) -> list[str]:
    return world.take_queued(FLAVOR)


def _flavor_in_api(world: JobReconcile, name: str) -> dict[str, Any] | None:
    items, _ = world.client.list(R.RESOURCE_FLAVORS)
    return next((f for f in items if f["metadata"]["name"] == name), None)


# --- TestResourceFlavorPredicates ----------------------------------------------------------------------


def _create(world: JobReconcile) -> None:
    world.add(R.RESOURCE_FLAVORS, _flavor("test-flavor"))


def _delete(world: JobReconcile) -> None:
    world.client.delete(R.RESOURCE_FLAVORS, "test-flavor")


def _update(world: JobReconcile) -> None:
    rf = world.client.get(R.RESOURCE_FLAVORS, "test-flavor")
    rf["metadata"]["labels"] = {"changed": "true"}
    world.client.replace(R.RESOURCE_FLAVORS, rf)


@pytest.mark.parametrize(
    ("event", "finalizer", "want"),
    [
        pytest.param(_create, False, True, id="create returns true and notifies with nil old"),
        pytest.param(_delete, False, False, id="delete returns false and notifies with nil new"),
        pytest.param(_update, False, False, id="update without deletion timestamp returns false"),
        pytest.param(_delete, True, True, id="update with deletion timestamp returns true"),
    ],
)
def test_resource_flavor_predicates(world: JobReconcile, event: Any, finalizer: bool, want: bool) -> None:
    if event is not _create:
        rf = world.add(R.RESOURCE_FLAVORS, _flavor("test-flavor"))
        if not finalizer:
            # Without the finalizer a delete removes the flavor at once (a DELETE event).
            rf["metadata"]["finalizers"] = []
            world.client.replace(R.RESOURCE_FLAVORS, rf)
    world.settle()
    _queued_flavors(world)  # what came before
    event(world)
    assert _queued_flavors(world) == (["test-flavor"] if want else [])


# --- TestResourceFlavorReconcile ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("finalizer", "cluster_queues", "delete", "want"),
    [
        pytest.param(False, [], False, [FINALIZER], id="adds finalizer when missing"),
        pytest.param(True, [], False, [FINALIZER], id="no-op when finalizer already present"),
        pytest.param(True, [], True, None, id="removes finalizer when deleted and not in use"),
        pytest.param(
            True, [_cq("cq-using-flavor", "flavor")], True, [FINALIZER],
            id="keeps finalizer when deleted but still in use",
        ),
    ],
)  # fmt: skip
def test_resource_flavor_reconcile(
    world: JobReconcile,
    finalizer: bool,
    cluster_queues: list[dict[str, Any]],
    delete: bool,
    want: list[str] | None,
) -> None:
    rf = world.add(R.RESOURCE_FLAVORS, _flavor("flavor"))
    if not finalizer:
        rf["metadata"]["finalizers"] = []
        rf = world.client.replace(R.RESOURCE_FLAVORS, rf)
    assert rf["metadata"].get("finalizers", []) == ([FINALIZER] if finalizer else [])
    for cq in cluster_queues:
        world.add(R.CLUSTER_QUEUES, cq)
    if delete:
        world.client.delete(R.RESOURCE_FLAVORS, "flavor")
    before = _flavor_in_api(world, "flavor")
    world.run(lambda: world.mgr.queue_controllers.reconcilers()[FLAVOR]("flavor"))
    got = _flavor_in_api(world, "flavor")
    if want is None:
        assert got is None
        return
    assert got is not None and got["metadata"].get("finalizers") == want
    if finalizer:
        assert before is not None and got["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_ignores_not_found_flavor(world: JobReconcile) -> None:
    """Upstream: "ignores not-found flavor"."""
    world.run(lambda: world.mgr.queue_controllers.reconcilers()[FLAVOR]("flavor"))
    assert _flavor_in_api(world, "flavor") is None


# --- TestNotifyClusterQueueUpdate ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "expect_event"),
    [
        pytest.param(None, ("cq", "flavor-a"), False, id="create event (oldCQ nil) does not send"),
        pytest.param(("cq", "flavor-a"), None, True, id="delete event (newCQ nil) sends old CQ to channel"),
        pytest.param(("cq", "flavor-a"), ("cq", "flavor-a"), False, id="update with same flavors does not send"),
        pytest.param(("cq", "flavor-a"), ("cq", "flavor-a", "flavor-b"), True, id="update with added flavor sends"),
        pytest.param(
            ("cq", "flavor-a", "flavor-b"), ("cq", "flavor-a"), True, id="update with removed flavor sends"
        ),
        pytest.param(("cq", "flavor-a"), ("cq", "flavor-b"), True, id="update with replaced flavor sends"),
    ],
)
def test_notify_cluster_queue_update(
    old: tuple[str, ...] | None, new: tuple[str, ...] | None, expect_event: bool
) -> None:
    old_cq = _typed_cq(*old) if old is not None else None
    new_cq = _typed_cq(*new) if new is not None else None
    got = cluster_queue_update_event(old_cq, new_cq)
    assert (got is not None) == expect_event
    if got is not None:
        assert got is old_cq


@pytest.mark.parametrize(
    ("cq", "cluster_queues", "want"),
    [
        pytest.param(None, [], [], id="empty CQ name is a no-op"),
        pytest.param(("cq", "flavor-orphan"), [], ["flavor-orphan"], id="enqueues flavors not used by any other CQ"),
        pytest.param(
            ("cq", "flavor-shared"), [("other-cq", "flavor-shared")], [],
            id="does not enqueue flavors still used by another CQ",
        ),
        pytest.param(
            ("cq", "flavor-orphan", "flavor-shared"), [("other-cq", "flavor-shared")], ["flavor-orphan"],
            id="enqueues only orphaned flavors when CQ has multiple",
        ),
    ],
)  # fmt: skip
def test_cq_handler_generic(
    world: JobReconcile, cq: tuple[str, ...] | None, cluster_queues: list[tuple[str, ...]], want: list[str]
) -> None:
    for other in cluster_queues:
        world.add(R.CLUSTER_QUEUES, _cq(*other))
    world.settle()
    _queued_flavors(world)  # what came before
    handled = _typed_cq(*cq) if cq is not None else _typed_cq("")
    world.run(lambda: world.mgr.cluster.reconcile_unused_flavors(handled))
    assert _queued_flavors(world) == want


def test_a_deleted_cluster_queue_reconciles_its_flavor_being_deleted(world: JobReconcile) -> None:
    """The two handlers together (``NotifyClusterQueueUpdate`` then ``cqHandler.Generic``): once its
    last ClusterQueue is deleted, a flavor being deleted is reconciled and loses its finalizer."""
    world.add(R.RESOURCE_FLAVORS, _flavor("flavor"))
    world.add(R.CLUSTER_QUEUES, _cq("cq", "flavor"))
    world.client.delete(R.RESOURCE_FLAVORS, "flavor")
    world.settle()
    _queued_flavors(world)  # what came before
    cq = world.client.get(R.CLUSTER_QUEUES, "cq")
    cq["metadata"]["finalizers"] = []
    world.client.replace(R.CLUSTER_QUEUES, cq)
    world.client.delete(R.CLUSTER_QUEUES, "cq")
    assert _queued_flavors(world) == ["flavor"]
    world.run(lambda: world.mgr.queue_controllers.reconcilers()[FLAVOR]("flavor"))
    assert _flavor_in_api(world, "flavor") is None


# --- the retry of parked workloads a flavor change requests (``Create``, ``Update``, ``Delete``) ---------


def _retry_requests(world: JobReconcile) -> list[tuple[str, str]]:
    def requests() -> list[tuple[str, str]]:
        return sorted((r.kind, r.name) for r in world.mgr.queues.pending_requests())

    return world.run(requests)


def _drop_retry_requests(world: JobReconcile) -> None:
    world.run(lambda: world.mgr.queues.process_due_requeues(float("inf")))


def _cq_request(name: str) -> tuple[str, str]:
    request = RetryRequest("ClusterQueue", name)
    return (request.kind, request.name)


@pytest.mark.parametrize(
    ("change", "want"),
    [
        pytest.param({"nodeLabels": {"zone": "b"}}, ["cq-a"], id="nodeLabels changed: the ClusterQueues using it"),
        pytest.param(
            {"nodeLabels": {"zone": "a"}, "nodeTaints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
            ["cq-a"],
            id="nodeTaints changed: the ClusterQueues using it",
        ),
        pytest.param(
            {"nodeLabels": {"zone": "a"}, "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]},
            ["cq-a"],
            id="tolerations changed: the ClusterQueues using it",
        ),
        pytest.param({"nodeLabels": {"zone": "a"}}, [], id="no scheduling field changed: none"),
        pytest.param(
            {"nodeLabels": {"zone": "a"}, "topologyName": "t"}, [], id="another spec field changed: none"
        ),
    ],
)
def test_flavor_change_retries_the_cluster_queues_it_concerns(
    world: JobReconcile, change: dict[str, Any], want: list[str]
) -> None:
    """``ResourceFlavorReconciler.Update``: ``NotifyRetryInadmissible`` for the ClusterQueues the
    change activated and, when nodeLabels, nodeTaints or tolerations changed
    (``flavorSchedulingFieldsChanged``), those using the flavor; not every ClusterQueue."""
    world.add(R.RESOURCE_FLAVORS, _flavor("flavor-a", nodeLabels={"zone": "a"}))
    world.add(R.RESOURCE_FLAVORS, _flavor("flavor-b"))
    world.add(R.CLUSTER_QUEUES, _cq("cq-a", "flavor-a"))
    world.add(R.CLUSTER_QUEUES, _cq("cq-b", "flavor-b"))
    world.settle()
    _drop_retry_requests(world)
    rf = world.client.get(R.RESOURCE_FLAVORS, "flavor-a")
    rf["spec"] = change
    rf["metadata"]["annotations"] = {"touched": "yes"}  # an update even when the spec is unchanged
    world.client.replace(R.RESOURCE_FLAVORS, rf)
    assert _retry_requests(world) == [_cq_request(n) for n in want]


def test_flavor_create_retries_the_cluster_queues_it_activates(world: JobReconcile) -> None:
    """``ResourceFlavorReconciler.Create``: the ClusterQueues ``AddOrUpdateResourceFlavor`` turned
    from pending to active (``updateClusterQueues``), not the others."""
    world.add(R.RESOURCE_FLAVORS, _flavor("flavor-b"))
    world.add(R.CLUSTER_QUEUES, _cq("cq-a", "flavor-a"))  # pending: flavor-a is missing
    world.add(R.CLUSTER_QUEUES, _cq("cq-b", "flavor-b"))
    world.settle()
    _drop_retry_requests(world)
    world.add(R.RESOURCE_FLAVORS, _flavor("flavor-a"))
    assert _retry_requests(world) == [_cq_request("cq-a")]


@pytest.mark.parametrize("finalizer", [pytest.param(True, id="being deleted"), pytest.param(False, id="deleted")])
def test_flavor_deletion_retries_nothing(world: JobReconcile, finalizer: bool) -> None:
    """``ResourceFlavorReconciler.Update`` returns before the cache for a flavor being deleted, and
    ``Delete`` retries only ClusterQueues a deletion activated (none)."""
    rf = world.add(R.RESOURCE_FLAVORS, _flavor("flavor-a"))
    if not finalizer:
        rf["metadata"]["finalizers"] = []
        world.client.replace(R.RESOURCE_FLAVORS, rf)
    world.add(R.CLUSTER_QUEUES, _cq("cq-a", "flavor-a"))
    world.settle()
    _drop_retry_requests(world)
    world.client.delete(R.RESOURCE_FLAVORS, "flavor-a")
    assert _retry_requests(world) == []
