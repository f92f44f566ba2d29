"""When the controller manager's thread wakes up without a change to react to.

Upstream runs the batched retry of parked workloads on a delaying queue's timer
(``pkg/cache/queue/inadmissible_workloads.go``, ``AddAfter(requeueRequest, batchPeriod)``) and the
scheduler's loop with a 1 ms → 10 ms backoff after a cycle that admitted nothing
(``pkg/util/wait/backoff.go`` ``UntilWithBackoff``), popping the next heads as long as the queues
have any (``Manager.Heads`` blocks only when they are empty). The manager thread drives both: it
must not sleep past the retry's due time, nor wait for an unrelated change while heads remain.

The manager is driven by hand here (its thread is not started; the test thread is its owner), with
an injected clock: every assertion is on state and on the sleep the manager asks for, none on
elapsed wall time.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from test_workload_lifecycle import ManualClock, cond, workload

from pykueue.apiserver.app import create_app
from pykueue.client import resources as R
from pykueue.client.inprocess import InProcessClient
from pykueue.client.interface import Resource
from pykueue.controllers.cluster_cache import compact
from pykueue.controllers.manager import ControllerManager
from pykueue.runtime.informer import ADDED, DELETED, MODIFIED, Change
from pykueue.store import Store


class Driven:
    """An API server and a controller manager whose loop the test runs step by step."""

    def __init__(self, cpu: int) -> None:
        self.store = Store(None)
        _, parts = create_app(self.store)
        parts.bootstrap()
        self.client = InProcessClient(parts.handlers)
        self.clock = ManualClock()
        self.clock.advance(0.9)  # mid-second: the next whole second is 0.1 s away, the retry 1 s
        self.mgr = ControllerManager(self.client, clock=self.clock)
        self.mgr._unsynced.clear()  # the test delivers the changes the informers would
        self._add(R.RESOURCE_FLAVORS, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "f"}})
        quota = {"name": "cpu", "nominalQuota": cpu}
        self._add(R.CLUSTER_QUEUES, {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"},
            "spec": {"namespaceSelector": {}, "queueingStrategy": "BestEffortFIFO",
                     "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [quota]}]}]},
        })  # fmt: skip
        self._add(R.LOCAL_QUEUES, {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": "default"}, "spec": {"clusterQueue": "cq"},
        })  # fmt: skip
        self._add(R.NAMESPACES, self.client.get(R.NAMESPACES, "default", None), create=False)
        self.settle()

    def _add(self, res: Resource, obj: dict[str, Any], create: bool = True) -> dict[str, Any]:
        out = self.client.create(res, obj) if create else obj
        self.mgr._receive((Change(res, ADDED, None, compact(out)), self.clock()))
        return out

    def create_workload(self, name: str, cpu: str, priority: int = 0) -> None:
        self._add(R.WORKLOADS, workload(name, cpu=cpu, priority=priority))

    def observe(self, name: str) -> dict[str, Any]:
        """The watch event of the Workload's current version."""
        obj = self.client.get(R.WORKLOADS, name, "default")
        self.mgr._receive((Change(R.WORKLOADS, MODIFIED, None, compact(obj)), self.clock()))
        return obj

    def flush_writes(self) -> None:
        """Wait for the admissions in flight and run their completions (as the manager thread would)."""
        deadline = time.monotonic() + 10
        while self.mgr.writes.pending():
            assert time.monotonic() < deadline, "an admission write did not complete"
            self.mgr._drain(0.05)

    def step(self) -> bool:
        """One pass of the manager thread: pending completions and changes, then its step."""
        self.flush_writes()
        self.mgr._drain(0.0)
        return self.mgr._step()

    def settle(self) -> None:
        """Steps until the manager has nothing ready (bounded)."""
        for _ in range(20):
            if not self.step():
                return
        raise AssertionError("the manager did not settle")

    def admitted(self, name: str) -> bool:
        c = cond(self.client.get(R.WORKLOADS, name, "default"), "Admitted")
        return c is not None and c["status"] == "True"

    def close(self) -> None:
        self.mgr.writes.close(timeout=5.0)
        self.mgr.recorder.flush(timeout=2.0)
        self.store.close()


@pytest.fixture
def driven() -> Iterator[Driven]:
    d = Driven(cpu=1)
    yield d
    d.close()


def test_the_manager_sleeps_only_until_the_retry_of_parked_workloads_is_due(driven: Driven) -> None:
    d = driven
    d.create_workload("first", cpu="1")
    d.settle()
    assert d.admitted("first")
    d.create_workload("second", cpu="1")
    d.settle()
    assert not d.admitted("second")  # parked behind "first" (inadmissible until a retry)

    first = d.client.get(R.WORKLOADS, "first", "default")
    first["status"]["conditions"].append(
        {"type": "Finished", "status": "True", "reason": "Succeeded", "message": "done",
         "lastTransitionTime": "2026-11-22T12:00:00Z"}
    )  # fmt: skip
    d.client.replace(R.WORKLOADS, first, subresource="status")
    d.observe("first")
    d.settle()
    # Finishing "first" freed its quota and asked for the batched retry of the ClusterQueue's
    # parked workloads, due 1 s later on the controllers' precise clock (12:00:01.9), not on the
    # next whole second of the API's timestamps.
    due = d.mgr.core.next_due()
    assert due is not None
    until_due = due - d.clock().timestamp()
    assert until_due == pytest.approx(1.0)
    assert not d.admitted("second")

    d.clock.advance(0.1)  # the next whole second: the retry is not due yet
    d.step()
    d.flush_writes()
    assert not d.admitted("second")
    d.clock.advance(0.8)
    # Nothing else is due sooner: the manager sleeps until the retry, not for its idle period.
    assert d.mgr._wait_seconds() == pytest.approx(0.1)

    d.clock.advance(0.1)
    d.step()
    d.flush_writes()
    assert d.admitted("second")
    assert d.mgr.core.next_due() is None


def test_a_cycle_without_progress_backs_off_while_heads_remain() -> None:
    d = Driven(cpu=1)
    try:
        # "big" never fits (2 CPU of 1) and, with the higher priority, is popped first; "small"
        # waits behind it in the same heap.
        d.create_workload("big", cpu="2", priority=10)
        d.create_workload("small", cpu="1")
        d.mgr._drain(0.0)
        d.mgr.cluster.deliver_updates()
        # Drain every reconcile the creations queued, so that only the scheduler has work left.
        d.mgr._reconcile_ready()
        d.mgr.cluster.deliver_updates()
        d.mgr.work.take_ready()
        assert d.mgr.core.has_heads()
        cycles = d.mgr.cycles
        d.mgr._step()  # pops "big", which is parked: no progress
        assert d.mgr.cycles == cycles + 1 and not d.admitted("big")
        assert d.mgr.core.has_heads()  # "small" is still in the heap
        # The next cycle comes after upstream's first backoff step, not with the next change.
        assert d.mgr._wait_seconds() == pytest.approx(0.001)
        d.mgr._step()
        d.flush_writes()
        assert d.admitted("small")
        # Progress resets the backoff; with the queues empty the manager waits for a change.
        assert not d.mgr.core.has_heads()
        assert d.mgr._wait_seconds() > 0.01
    finally:
        d.close()


def test_the_cycle_backoff_doubles_up_to_ten_milliseconds() -> None:
    d = Driven(cpu=1)
    try:
        # Two workloads that never fit: each no-progress cycle parks one and doubles the backoff.
        for i in range(5):
            d.create_workload(f"big-{i}", cpu="2", priority=10 - i)
        d.mgr._drain(0.0)
        waits = []
        for _ in range(4):
            d.mgr._step()
            waits.append(round(d.mgr._wait_seconds(), 6))
        assert waits == [0.001, 0.002, 0.004, 0.008]
        d.mgr._step()  # the last one: the queues are empty, the manager waits for a change or timer
        assert not d.mgr.core.has_heads()
        assert d.mgr._wait_seconds() > 0.01
        assert d.mgr._cycle_backoff == 0.010
        assert d.clock() - ManualClock().now == timedelta(seconds=0.9)  # no time passed meanwhile
    finally:
        d.close()


def test_after_an_admission_the_manager_takes_a_few_inbox_items_before_its_next_cycle(driven: Driven) -> None:
    # A burst of answers (completions) and watch changes used to be applied whole before the next
    # cycle: serve idled meanwhile and the next admissions left in a run. After a step that made
    # progress the manager's loop takes _BUSY_DRAIN_LIMIT items per admission of that step, the
    # rest the next pass; everything once the backlog is long (a slow cycle admitting few).
    from pykueue.controllers import manager as manager_module
    from pykueue.controllers.manager import _Call

    limit = manager_module._BUSY_DRAIN_LIMIT
    d = driven
    d.create_workload("first", cpu="1")
    d.mgr._drain(0.0)
    assert d.mgr._step() and d.mgr._progress == 1  # the cycle admitted "first"
    d.flush_writes()
    ran: list[int] = []
    for i in range(10):
        d.mgr._inbox.put(_Call(lambda i=i: ran.append(i)))
    assert d.mgr._busy_drain_limit() == limit
    d.mgr._drain(0.0, limit=d.mgr._busy_drain_limit())
    assert ran == list(range(limit))
    d.mgr._progress = 3  # a cycle that admitted three (three ClusterQueues' heads)
    assert d.mgr._busy_drain_limit() == 3 * limit
    d.mgr._drain(0.0)  # a pass after no progress (or a test's flush) takes everything
    assert ran == list(range(10))
    for _ in range(manager_module._BUSY_BACKLOG_MAX + 1):
        d.mgr._inbox.put(_Call(lambda: None))
    assert d.mgr._busy_drain_limit() is None
    d.mgr._drain(0.0)
    assert d.mgr.writes.finish_batch == manager_module._FINISH_BATCH

def test_the_informers_skip_the_watch_echo_of_the_managers_own_admission(driven: Driven) -> None:
    # The admission's answer is applied to the cache at once (write-through); its watch event used
    # to be decoded again on the informer's thread and handed over only to be dropped as not newer.
    d = driven
    d.create_workload("first", cpu="1")
    d.settle()
    assert d.admitted("first")
    version = d.client.get(R.WORKLOADS, "first", "default")["metadata"]["resourceVersion"]
    assert d.mgr.cluster.workloads["default/first"].metadata.resource_version == version
    own = d.mgr.cluster.own_writes
    assert own is not None and all(inf.own_writes is own for inf in d.mgr.informers.values())
    assert own.echo(R.WORKLOADS.plural, ("default", "first"), version)


def test_a_deletion_older_than_the_cached_object_is_not_applied(driven: Driven) -> None:
    # The DELETED of an earlier object of the same name can reach the manager after our own write
    # created the new one and applied it from the answer; its later events are then skipped as
    # echoes, so applying that deletion would lose the new object from the cache for good.
    d = driven
    d.create_workload("first", cpu="1")
    d.settle()
    version = d.mgr.cluster.workloads["default/first"].metadata.resource_version
    stale = {"metadata": {"namespace": "default", "name": "first", "resourceVersion": str(int(version) - 1)}}
    d.mgr.cluster.on_change(Change(R.WORKLOADS, DELETED, None, stale))
    assert "default/first" in d.mgr.cluster.workloads
    current = {"metadata": {"namespace": "default", "name": "first", "resourceVersion": str(int(version) + 1)}}
    d.mgr.cluster.on_change(Change(R.WORKLOADS, DELETED, None, current))
    assert "default/first" not in d.mgr.cluster.workloads


def test_a_write_that_deleted_its_object_expects_no_echo(driven: Driven) -> None:
    # Removing the last finalizer of a deleting object deletes it: its only watch event is a
    # DELETED (never skipped), which may pass the informer (and forget the key) before the
    # manager applies the answer. An expectation recorded then would never be removed.
    d = driven
    d.create_workload("first", cpu="1")
    d.settle()
    own = d.mgr.cluster.own_writes
    assert own is not None
    obj = d.client.get(R.WORKLOADS, "first", "default")
    meta = obj["metadata"]
    meta["deletionTimestamp"], meta["finalizers"] = "2026-01-01T00:00:00Z", []
    meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
    own.forget(R.WORKLOADS.plural, ("default", "first"))  # the DELETED passed the informer first
    d.mgr.cluster.observe_write(R.WORKLOADS, obj)
    assert (R.WORKLOADS.plural, ("default", "first")) not in own._versions


def test_completions_a_delivery_left_run_before_the_inbox_items_behind_them(driven: Driven) -> None:
    # The pipeline's deliveries run at most _FINISH_BATCH completions each; the rest must still run
    # before any later change (a preemptor's watch event must not find its victims' admissions
    # busy: a victim whose write is busy is skipped). They used to go back to the end of the inbox.
    import asyncio

    from pykueue.controllers.manager import _Call

    d = driven
    order: list[str] = []
    # The fixture's last step may have left queue status writes in flight: their completions would
    # take batch slots of the deliveries counted below. Let them end and run first.
    deadline = time.monotonic() + 10
    while d.mgr.writes.pending() or d.mgr.writes._ended:
        assert time.monotonic() < deadline, "the fixture's writes did not end"
        d.flush_writes()
        d.mgr._drain(0.0)

    def write(i: int) -> Any:
        async def send() -> dict[str, Any]:
            await asyncio.sleep(0)
            return {"i": i}

        return send

    for i in range(5):
        d.mgr.writes.submit_async(("test", i), write(i), lambda r, e: order.append(f"completion {r['i'] if r else e}"))
    deadline = time.monotonic() + 10
    while len(d.mgr.writes._ended) < 5:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    d.mgr._inbox.put(_Call(lambda: order.append("later change")))
    d.mgr._drain(0.0, limit=2)  # 2 completions per item, the oldest first
    assert order == [f"completion {i}" for i in range(4)]
    d.mgr._drain(0.0)
    assert order == [*(f"completion {i}" for i in range(5)), "later change"]


@pytest.mark.parametrize(
    ("selector", "new_labels", "want_retry"),
    [
        # upstream cqNamespaceHandler.Update (clusterqueue_controller.go): only the ClusterQueues the
        # namespace newly matches are retried (NotifyRetryInadmissible).
        pytest.param({}, {"team": "a"}, False, id="label change not affecting the selector: no retry"),
        pytest.param(
            {"matchLabels": {"team": "a"}}, {"team": "a"}, True, id="namespace newly matching the selector: retried"
        ),
    ],
)
def test_namespace_label_change_retries_only_newly_matching_cluster_queues(
    selector: dict[str, Any], new_labels: dict[str, str], want_retry: bool
) -> None:
    d = Driven(cpu=1)
    try:
        d.client.patch(R.CLUSTER_QUEUES, "cq", {"spec": {"namespaceSelector": selector}}, None)
        cq = compact(d.client.get(R.CLUSTER_QUEUES, "cq", None))
        d.mgr._receive((Change(R.CLUSTER_QUEUES, MODIFIED, None, cq), d.clock()))
        d.create_workload("big", cpu="2")
        d.settle()
        d.clock.advance(5)
        d.settle()
        assert not d.mgr.queues.pending_requests()
        ns = d.client.get(R.NAMESPACES, "default", None)
        ns["metadata"].setdefault("labels", {}).update(new_labels)
        ns = d.client.replace(R.NAMESPACES, ns)
        d.mgr._receive((Change(R.NAMESPACES, MODIFIED, None, compact(ns)), d.clock()))
        d.mgr._drain(0.0)
        assert bool(d.mgr.queues.pending_requests()) == want_retry
    finally:
        d.close()
