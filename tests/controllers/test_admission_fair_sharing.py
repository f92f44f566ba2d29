"""Admission Fair Sharing through the controller manager: the LocalQueue controller writes
``status.fairSharing.admissionFairSharingStatus`` (upstream ``LocalQueueReconciler``
``reconcileConsumedUsage``) and the scheduler orders a UsageBasedAdmissionFairSharing
ClusterQueue's workloads by their LocalQueue's usage."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from test_workload_lifecycle import Env, change_status_concurrently, cond, wait, workload

from pykueue.api.config import load_config
from pykueue.client import resources as R
from pykueue.controllers.options import ControllerOptions

CONFIG = """apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
admissionFairSharing:
  usageHalfLifeTime: 10m
  usageSamplingInterval: 1m
"""


@pytest.fixture
def env() -> Iterator[Env]:
    e = Env(ControllerOptions.from_config(load_config(CONFIG)))
    yield e
    e.close()


def _lq(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"clusterQueue": "cq"},
    }


def _afs_cluster_queue(create: Callable[[Any, dict[str, Any]], Any], cpu: int) -> None:
    """Flavor ``f`` and ClusterQueue ``cq`` (``cpu`` cpus) in UsageBasedAdmissionFairSharing mode."""
    create(R.RESOURCE_FLAVORS, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "f"}})
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "admissionScope": {"admissionMode": "UsageBasedAdmissionFairSharing"},
        "resourceGroups": [
            {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}
        ],
    }
    create(R.CLUSTER_QUEUES, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": spec})


def test_local_queue_usage_orders_admission_and_is_written_to_status(env: Env) -> None:
    _afs_cluster_queue(env.create, cpu=1)
    for name in ("lq-a", "lq-b"):
        env.create(R.LOCAL_QUEUES, _lq(name))
    # The first reconcile of each LocalQueue writes an empty consumed usage.
    for name in ("lq-a", "lq-b"):
        status = wait(lambda n=name: ((env.get(R.LOCAL_QUEUES, n).get("status") or {}).get("fairSharing") or {}).get("admissionFairSharingStatus"))
        assert status["consumedResources"] == {}
    env.create(R.WORKLOADS, workload("a1", queue="lq-a"))
    wait(lambda: (c := cond(env.get(R.WORKLOADS, "a1"), "Admitted")) is not None and c["status"] == "True")
    # lq-a now carries a1's entry penalty: of two parked workloads the newer one of lq-b goes first
    # when a1's quota frees.
    env.create(R.WORKLOADS, workload("a2", queue="lq-a"))
    env.create(R.WORKLOADS, workload("b1", queue="lq-b"))
    # One is evaluated and parked; the other, of the same shape, is parked with it (scheduling
    # equivalence) without a condition.
    wait(
        lambda: any(
            (c := cond(env.get(R.WORKLOADS, n), "QuotaReserved")) is not None and c["status"] == "False"
            for n in ("a2", "b1")
        )
    )
    env.finish("a1")

    def b1_admitted_later() -> Any:
        env.clock.advance(1)  # parked workloads are retried in 1s batches
        return (c := cond(env.get(R.WORKLOADS, "b1"), "Admitted")) is not None and c["status"] == "True"

    wait(b1_admitted_later)
    a2 = cond(env.get(R.WORKLOADS, "a2"), "QuotaReserved")
    assert a2 is None or a2["status"] == "False"
    # A sampling interval later lq-a's history holds a1's usage.
    env.clock.advance(61)
    consumed = wait(
        lambda: (
            ((env.get(R.LOCAL_QUEUES, "lq-a").get("status") or {}).get("fairSharing") or {})
            .get("admissionFairSharingStatus", {})
            .get("consumedResources", {})
            .get("cpu")
        )
    )
    assert consumed not in ("0", None)


def test_entry_penalty_is_rolled_back_when_the_admission_write_fails() -> None:
    """Upstream ``Scheduler.admit``: the assume pushes the workload's entry penalty
    (``updateEntryPenalty(add)``); when ``PatchAdmissionStatus`` then fails, the routine subtracts it
    again (``updateEntryPenalty(subtract)``), or the LocalQueue would carry a penalty no admission
    will settle. Here the write meets a concurrent change (a real 409 from the server) and the
    ClusterQueue is put on hold at the same moment, so the workload is not admitted again: the
    ledger must hold no penalty of it afterwards."""
    from test_workload_lifecycle import ManualClock
    from test_write_pipeline import SlowClient

    from pykueue.apiserver.app import create_app
    from pykueue.client.inprocess import InProcessClient
    from pykueue.controllers.manager import ControllerManager
    from pykueue.store import Store

    store = Store(None)
    _, parts = create_app(store)
    parts.bootstrap()
    client = SlowClient(parts.handlers, 0.05)
    api = InProcessClient(parts.handlers)
    _afs_cluster_queue(api.create, cpu=4)
    api.create(R.LOCAL_QUEUES, _lq("lq-a"))
    api.create(R.WORKLOADS, workload("a", queue="lq-a"))
    conflicted: list[str] = []

    def conflict_and_hold(name: str) -> None:
        conflicted.append(name)
        change_status_concurrently(api, name)  # a label change would not fail the loose write
        api.patch(R.CLUSTER_QUEUES, "cq", {"spec": {"stopPolicy": "Hold"}}, None)
        # The manager sees the hold before this write's 409 comes back (on this writer thread; the
        # manager thread goes on meanwhile): else, on a loaded machine, its next cycle could admit
        # the workload again, with a new penalty, before the hold arrived.
        wait(lambda: mgr.call_in_manager_thread(lambda: mgr.cluster.cluster_queues["cq"].spec.stop_policy == "Hold"))

    client.before_write["a"] = conflict_and_hold
    mgr = ControllerManager(client, ControllerOptions.from_config(load_config(CONFIG)), clock=ManualClock())
    mgr.start()
    try:
        assert mgr.wait_ready(10)

        def outcomes() -> list[str]:
            story = mgr.call_in_manager_thread(lambda: mgr.core.story("default/a"))
            return [t.outcome for t in story if t.reason in ("Admitted", "QuotaReserved")]

        wait(lambda: conflicted and "failed" in outcomes())
        assert outcomes()[:2] == ["applied", "failed"]  # assumed (penalty pushed), then the 409

        def penalty_of_a() -> Any:
            entry = mgr.queues.afs.ledger.get("default/lq-a")
            return entry is not None and entry.has_penalty_record("default/a"), mgr.queues.afs.ledger.has_pending_penalty(
                "default/lq-a"
            )

        assert mgr.call_in_manager_thread(penalty_of_a) == (False, False)
        reserved = cond(api.get(R.WORKLOADS, "a", "default"), "QuotaReserved")
        assert reserved is None or reserved["status"] != "True"  # held: not admitted again
    finally:
        mgr.stop()
        store.close()
