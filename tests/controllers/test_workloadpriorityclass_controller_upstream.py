"""Upstream ``pkg/controller/core/workloadpriorityclass_controller_test.go``, ported case by case (ids
are upstream's case names), against the controllers of ``pykueue serve``.

The embedded API server is seeded with the case's objects (:mod:`reconcile_harness`; the manager is
a standby that applies the watched changes to its caches but reconciles nothing by itself):

- ``TestWorkloadPriorityClassPredicates``: whether the event, made through the API, queued the
  class for the WorkloadPriorityClass reconciler (the predicates are
  ``workloadpriorityclass_controller.reconciles_on_change``, applied by the ClusterCache).
- ``TestWorkloadPriorityClassReconcile``: one reconcile of the class, then each Workload's
  ``spec.priority`` as the API server holds it, and whether the reconcile failed. Upstream's
  interceptor functions are a client that fails the case's Workload updates (a fault of the API,
  not of the reconciler under test).

Not ported: "generic event should not trigger reconcile" — pykueue has no generic source of
WorkloadPriorityClass events.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from reconcile_harness import JobReconcile, base_workload

from pykueue.client import resources as R
from pykueue.client.interface import APIError, Client, NotFound, Resource
from pykueue.controllers.cluster_cache import PRIORITY_CLASS

KUEUE = "kueue.x-k8s.io/v1beta2"


def _wpc(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": KUEUE, "kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": value}


def _workload(name: str, priority: int, wpc: str = "high") -> dict[str, Any]:
    """Upstream's ``MakeWorkload(name, "default").Priority(p).WorkloadPriorityClassRef(wpc)``."""
    return {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "queueName": "",
            "priority": priority,
            "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": wpc},
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "pause"}]}},
                }
            ],
        },
    }


class _FailingUpdates:
    """Upstream's ``interceptor.Funcs{Update: ...}``: Workload updates (not creates, not status) of
    the names in ``fail`` get that error; everything else goes to the real client."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self.fail: dict[str, Callable[[], APIError]] = {}

    def replace(self, res: Resource, obj: dict[str, Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
        name = obj["metadata"]["name"]
        if res.plural == R.WORKLOADS.plural and kwargs.get("subresource") is None and name in self.fail:
            raise self.fail[name]()
        return self._client.replace(res, obj, *args, **kwargs)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._client, attr)


@pytest.fixture
def world() -> Iterator[JobReconcile]:
    with JobReconcile() as w:
        yield w


def _queued_classes(world: JobReconcile) -> list[str]:
    return world.take_queued(PRIORITY_CLASS)


# --- TestWorkloadPriorityClassPredicates -----------------------------------------------------------------


def _set_value(value: int, label: bool = False) -> Callable[[JobReconcile], None]:
    def update(world: JobReconcile) -> None:
        wpc = world.client.get(R.WORKLOAD_PRIORITY_CLASSES, "test")
        wpc["value"] = value
        if label:
            wpc["metadata"]["labels"] = {"touched": "yes"}  # an update even when the value is unchanged
        world.client.replace(R.WORKLOAD_PRIORITY_CLASSES, wpc)

    return update


def _delete(world: JobReconcile) -> None:
    world.client.delete(R.WORKLOAD_PRIORITY_CLASSES, "test")


@pytest.mark.parametrize(
    ("event", "want"),
    [
        pytest.param(None, True, id="create event should trigger reconcile"),
        pytest.param(_delete, False, id="delete event should not trigger reconcile"),
        pytest.param(_set_value(200), True, id="update event with changed priority should trigger reconcile"),
        pytest.param(
            _set_value(100, label=True), False, id="update event with unchanged priority should not trigger reconcile"
        ),
    ],
)
def test_workload_priority_class_predicates(
    world: JobReconcile, event: Callable[[JobReconcile], None] | None, want: bool
) -> None:
    world.add(R.WORKLOAD_PRIORITY_CLASSES, _wpc("test", 100))
    if event is not None:
        world.settle()
        _queued_classes(world)  # the create's
        event(world)
    assert _queued_classes(world) == (["test"] if want else [])


# --- TestWorkloadPriorityClassReconcile --------------------------------------------------------------------


def _not_found(name: str) -> Callable[[], APIError]:
    return lambda: NotFound(404, "NotFound", f'workloads.kueue.x-k8s.io "{name}" not found')


def _failed(message: str) -> Callable[[], APIError]:
    return lambda: APIError(500, "InternalError", message)


@pytest.mark.parametrize(
    ("workloads", "fail", "want", "want_error"),
    [
        pytest.param(
            [("wl1", 100)], {}, {"wl1": 1000}, False,
            id="reconcile updates workload priority when WPC priority changes",
        ),
        pytest.param(
            [("wl1", 100), ("wl2", 200)], {}, {"wl1": 1000, "wl2": 1000}, False,
            id="reconcile updates multiple workloads",
        ),
        pytest.param(
            [("wl1", 1000)], {}, {"wl1": 1000}, False, id="reconcile skips workloads with up-to-date priority"
        ),
        pytest.param([], {}, {}, False, id="reconcile succeeds when no workloads use the WPC"),
        pytest.param(
            [("wl1", 100)], {"wl1": _not_found("wl1")}, {"wl1": 100}, False,
            id="reconcile handles workload not found error",
        ),
        pytest.param(
            [("wl1", 100)], {"wl1": _failed("update failed")}, {"wl1": 100}, True,
            id="reconcile returns error when update fails",
        ),
        pytest.param(
            [("wl1", 100), ("wl2", 200)], {"wl2": _failed("update failed for wl2")}, {"wl1": 1000, "wl2": 200}, True,
            id="reconcile handles partial update failures",
        ),
    ],
)  # fmt: skip
def test_workload_priority_class_reconcile(
    workloads: list[tuple[str, int]],
    fail: dict[str, Callable[[], APIError]],
    want: dict[str, int],
    want_error: bool,
) -> None:
    with JobReconcile() as world:
        failing = _FailingUpdates(world.mgr.ctx.client)
        world.mgr.ctx.client = failing  # type: ignore[assignment]
        world.add(R.WORKLOAD_PRIORITY_CLASSES, _wpc("high", 1000))
        for name, priority in workloads:
            world.add(R.WORKLOADS, _workload(name, priority))
        failing.fail = fail
        error: Exception | None = None
        try:
            world.run(lambda: world.mgr.priority_class_controller.reconcile("high"))
        except APIError as err:
            error = err
        assert (error is not None) == want_error
        got = {w["metadata"]["name"]: w["spec"]["priority"] for w in world.client.list(R.WORKLOADS, "default")[0]}
        assert got == want


def test_reconcile_handles_wpc_not_found(world: JobReconcile) -> None:
    """Upstream: "reconcile handles WPC not found" (the class is gone: nothing to do, no error)."""
    world.run(lambda: world.mgr.priority_class_controller.reconcile("high"))
    assert world.client.list(R.WORKLOADS, "default")[0] == []


def test_a_failed_reconcile_is_retried(world: JobReconcile) -> None:
    """``Reconcile`` returns the joined update errors: controller-runtime requeues the class with
    backoff (pykueue's manager: ``add_rate_limited``), where a Conflict alone would be forgotten."""
    failing = _FailingUpdates(world.mgr.ctx.client)
    world.mgr.ctx.client = failing  # type: ignore[assignment]
    world.add(R.WORKLOAD_PRIORITY_CLASSES, _wpc("high", 1000))
    world.add(R.WORKLOADS, _workload("wl1", 100))
    failing.fail = {"wl1": lambda: APIError(409, "Conflict", "the object has been modified")}
    world.settle()
    _queued_classes(world)
    world.run(lambda: world.mgr._reconcile((PRIORITY_CLASS, "high")))
    assert world.run(lambda: world.mgr.work.pending((PRIORITY_CLASS, "high")))


def test_a_new_class_value_reaches_pending_workloads_in_their_queue() -> None:
    """End to end (a leading manager): the class's new value is written to the Workloads using it,
    and the queued pending Workload is ordered with it."""
    with JobReconcile() as world:
        world.add(R.WORKLOAD_PRIORITY_CLASSES, _wpc("high", 100))
        world.add(
            R.CLUSTER_QUEUES,
            {
                "apiVersion": KUEUE,
                "kind": "ClusterQueue",
                "metadata": {"name": "cq"},
                "spec": {
                    "namespaceSelector": {},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "0"}]}],
                        }
                    ],
                },
            },
        )
        world.add(
            R.LOCAL_QUEUES,
            {
                "apiVersion": KUEUE,
                "kind": "LocalQueue",
                "metadata": {"name": "lq", "namespace": "default"},
                "spec": {"clusterQueue": "cq"},
            },
        )
        wl = _workload("wl1", 100)
        wl["spec"]["queueName"] = "lq"
        wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
        world.add(R.WORKLOADS, wl)
        wpc = world.client.get(R.WORKLOAD_PRIORITY_CLASSES, "high")
        wpc["value"] = 500
        world.client.replace(R.WORKLOAD_PRIORITY_CLASSES, wpc)
        # The caches hold the Workload before the class's reconcile can run: the informers of the
        # two kinds deliver independently, and a reconcile that lists before the Workload arrives
        # finds none to update (as upstream's would from its informer cache).
        world.settle()
        world.mgr.lead()
        deadline = time.monotonic() + 20
        while world.client.get(R.WORKLOADS, "wl1", "default")["spec"]["priority"] != 500:
            assert time.monotonic() < deadline, "the class's value did not reach the Workload"
            time.sleep(0.02)
        world.settle()
        priorities = world.run(lambda: [i.priority for i in world.mgr.queues.pending_workloads("cq")])
        assert priorities == [500]


def test_admitted_workloads_follow_the_class_and_pod_priority_classes_do_not() -> None:
    """Upstream's reconcile lists every Workload of the ``spec.priorityClassRef`` index
    (``IndexWorkloadPriorityClass``: WorkloadPriorityClass references only), admitted or not: an
    admitted Workload gets the new value; one referencing a scheduling.k8s.io PriorityClass of the
    same name keeps its own priority."""
    with JobReconcile() as world:
        world.add(R.WORKLOAD_PRIORITY_CLASSES, _wpc("high", 1000))
        admitted = base_workload("admitted", "default", admitted=True)
        admitted["spec"]["priority"] = 100
        admitted["spec"]["priorityClassRef"] = _workload("x", 0)["spec"]["priorityClassRef"]
        world.add_workload(admitted)
        pod_class = _workload("pod-class", 100)
        pod_class["spec"]["priorityClassRef"] = {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "high"}
        world.add(R.WORKLOADS, pod_class)
        world.run(lambda: world.mgr.priority_class_controller.reconcile("high"))
        got = {w["metadata"]["name"]: w["spec"]["priority"] for w in world.client.list(R.WORKLOADS, "default")[0]}
        assert got == {"admitted": 1000, "pod-class": 100}
