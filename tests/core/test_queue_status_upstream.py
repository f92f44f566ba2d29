"""Upstream ``pkg/controller/core/clusterqueue_controller_test.go`` (``TestUpdateCqStatusIfChanged``)
and ``localqueue_controller_test.go`` (``TestLocalQueueReconcile``), ported case by case (ids are
upstream's case names) on :mod:`pykueue.core.status`, which both the controllers and the simulator
use to write ClusterQueue and LocalQueue status.

``updateCqStatusIfChanged`` takes the Active condition from its caller; pykueue's
``cluster_queue_status`` derives it from the cache (``clusterQueue.inactiveReason``), so each case
builds the ClusterQueue state that yields the condition upstream passes in. Compared as upstream:
conditions without ``lastTransitionTime``, and the pending count.

not ported:
- "empty ClusterQueueStatus" — its FlavorNotFound message ("Can't admit new workloads; some flavors
  are not found") is the test's own input, not one the cache writes (the cache's is "Can't admit new
  workloads: references missing ResourceFlavor(s): ...", covered by tests/core/test_cycle_rules.py).
- "cluster queue does not exist on manager", "cluster queue does not exist on cache" — errors of
  the reconciler's lookups, not status rules.
- TestClusterQueueReconcile, TestRecordResourceMetrics — finalizer handling against the API
  server (tests/controllers/test_workload_lifecycle.py) and metrics.
- TestLocalQueueReconcile's decaying-usage and AFS cases — AdmissionFairSharing is not implemented.
- cohort_controller_test.go — its cases check the reconciler's cache snapshots and event filters;
  the Cohort status rule (fair-sharing share only) is ``cohort_status``, covered by
  tests/core/test_fair_sharing.py.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from builders import admitted, build_cache, cluster_queue, flavor, flavor_quotas, workload

from pykueue.api.kueue import ClusterQueue, ClusterQueueStatus, LocalQueue, LocalQueueSpec, LocalQueueStatus
from pykueue.api.meta import Condition, ObjectMeta
from pykueue.core.status import cluster_queue_status, local_queue_status

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
READY = ("True", "Ready", "Can admit new workloads")
FLAVOR_NOT_FOUND = ("False", "FlavorNotFound", "Can't admit new workloads; some flavors are not found")


def _cq(*, terminating: bool = False) -> ClusterQueue:
    cq = cluster_queue("test-cq", flavor_quotas("f", cpu=1), queueing_strategy="StrictFIFO")
    cq.metadata.generation = 1
    if terminating:
        cq.metadata.deletion_timestamp = NOW
    return cq


def _active(c: tuple[str, str, str]) -> Condition:
    return Condition(type="Active", status=c[0], reason=c[1], message=c[2])


# name, ClusterQueue, old condition, pending workloads, want condition (status, reason, message, observedGeneration)
CQ_CASES: list[tuple[str, ClusterQueue, tuple[str, str, str], int, tuple[str, str, str, int]]] = [
    ("same condition status", _cq(), READY, 2, (*READY, 1)),
    (
        "same condition status with different reason and message",
        _cq(terminating=True),
        ("False", "FlavorNotFound", "Can't admit new workloads; Can't admit new workloads; some flavors are not found"),
        2,
        ("False", "Terminating", "Can't admit new workloads; clusterQueue is terminating", 1),
    ),
    ("different condition status", _cq(), FLAVOR_NOT_FOUND, 2, (*READY, 1)),
    ("different pendingWorkloads with same condition status", _cq(), READY, 3, (*READY, 1)),
]


@pytest.mark.parametrize(("name", "cq", "old", "pending", "want"), CQ_CASES, ids=[c[0] for c in CQ_CASES])
def test_update_cq_status_if_changed(
    name: str, cq: ClusterQueue, old: tuple[str, str, str], pending: int, want: tuple[str, str, str, int]
) -> None:
    cache = build_cache([flavor("f"), cq])
    status = cluster_queue_status(
        cache.cluster_queues["test-cq"], ClusterQueueStatus(conditions=[_active(old)]), pending, NOW, False
    )
    assert [(c.type, c.status, c.reason, c.message, c.observed_generation) for c in status.conditions] == [
        ("Active", *want)
    ]
    assert status.pending_workloads == pending


def _lq(stop_policy: str = "", pending: int = 0) -> LocalQueue:
    return LocalQueue(
        metadata=ObjectMeta(name="test-queue", namespace="default", generation=1),
        spec=LocalQueueSpec(cluster_queue="test-cluster-queue", stop_policy=stop_policy),
        status=LocalQueueStatus(pending_workloads=pending),
    )


def _inactive_cq() -> list[Any]:
    """``MakeClusterQueue("test-cluster-queue")`` as upstream's test stores it: no resource groups and
    no ``Active=True`` condition, so the LocalQueue reconciler finds it inactive. pykueue reads
    activity from the cache; a stopped ClusterQueue without resource groups is its inactive one."""
    return [cluster_queue("test-cluster-queue", stop_policy="Hold")]


# name, objects in the cache, LocalQueue, pending (what the queue manager counts), want condition,
# want pending, want reserving/admitted
LQ_CASES: list[tuple[str, list[Any], LocalQueue, int, tuple[str, str, str], int, tuple[int, int]]] = [
    (
        "local queue with Hold StopPolicy",
        _inactive_cq(),
        _lq("Hold", 1),
        1,
        ("False", "Stopped", "LocalQueue is stopped"),
        0,
        (0, 0),
    ),
    (
        "local queue with HoldAndDrain StopPolicy",
        _inactive_cq(),
        _lq("HoldAndDrain", 1),
        1,
        ("False", "Stopped", "LocalQueue is stopped"),
        0,
        (0, 0),
    ),
    (
        "cluster queue is inactive",
        _inactive_cq(),
        _lq(pending=1),
        0,  # an inactive ClusterQueue is not in upstream's queue manager: nothing pending
        ("False", "ClusterQueueIsInactive", "Can't submit new workloads to clusterQueue"),
        0,
        (0, 0),
    ),
    (
        "cluster queue deleted while its scheduler cache entry is still present",
        [flavor("rf")],  # the ClusterQueue is gone: nothing of it reaches the LocalQueue's status
        _lq(),
        0,
        ("False", "ClusterQueueDoesNotExist", "Can't submit new workloads to clusterQueue"),
        0,
        (0, 0),
    ),
]


@pytest.mark.parametrize(
    ("name", "objs", "lq", "pending", "want", "want_pending", "want_counts"), LQ_CASES, ids=[c[0] for c in LQ_CASES]
)
def test_local_queue_reconcile(
    name: str,
    objs: list[Any],
    lq: LocalQueue,
    pending: int,
    want: tuple[str, str, str],
    want_pending: int,
    want_counts: tuple[int, int],
) -> None:
    cache = build_cache(objs)
    status = local_queue_status(lq, cache, pending, NOW)
    assert [(c.type, c.status, c.reason, c.message, c.observed_generation) for c in status.conditions] == [
        ("Active", *want, 1)
    ]
    assert status.pending_workloads == want_pending
    assert (status.reserving_workloads, status.admitted_workloads) == want_counts
    assert status.flavors_reservation == [] and status.flavors_usage == []


def test_local_queue_counts_its_reserving_and_admitted_workloads() -> None:
    """Control case for the cases above: a running workload of the LocalQueue is counted (upstream
    ``LocalQueueUsage``)."""
    cq = cluster_queue("test-cluster-queue", flavor_quotas("rf", cpu=10))
    wl = admitted(
        workload("wl", "default", queue="test-queue", requests={"cpu": "4"}), "test-cluster-queue", {"cpu": "rf"},
        admitted_condition=True,
    )
    cache = build_cache([flavor("rf"), cq, wl])
    status = local_queue_status(_lq(), cache, 0, NOW)
    assert (status.reserving_workloads, status.admitted_workloads) == (1, 1)
    assert [(c.status, c.reason) for c in status.conditions] == [("True", "Ready")]
