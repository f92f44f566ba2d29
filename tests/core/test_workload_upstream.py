"""Upstream ``pkg/workload/workload_test.go``: the helpers whose results reach the API,
ported case by case (ids are upstream's case names): ``TestSetQuotaReservation`` and
``TestSetRequeueState`` (``transitions.set_quota_reservation`` / ``set_requeue_state``).

not ported (covered elsewhere or not API-visible here):
- TestNewInfo, TestResourceUsage, TestPropagateResourceRequests, TestReclaimablePodsAreEqual,
  TestLimitReclaimablePodsToPodSetSizes, TestUpdateReclaimablePods — the
  scheduler's workload info (tests/core/test_flavor_assignment.py, test_scheduler.py own those
  rules, ported by the scheduler helpers).
- TestSchedulingHash "DRA translation producing different TotalRequests produces different hash"
  — DRA, not implemented (its other cases are ported below).
- TestGetQueueOrderTimestamp, TestAssignmentClusterQueueState, TestNeedsSecondPass,
  TestShouldSkipClusterNomination, TestUsedNodes, TestIsExplicitlyRequestingTAS,
  TestWithPreprocessedDRAResources*, TestSumTotalRequestsWithDRAFromAdmission — queue order
  (tests/core/test_queue_manager.py), TAS, MultiKueue and DRA, which pykueue does not implement.
- TestCalcLocalQueueFSUsage — AdmissionFairSharing, not implemented.
- podsetscounts_test.go (TestExtractPodSetCounts, TestExtractPodSetCountsFromWorkload,
  TestApplyPodSetCounts, TestPodSetsCounts_HasFewerReplicasThan) — the pod-set count helpers of
  elastic workloads (``workloadslicing``, ``ElasticJobsViaWorkloadSlices``), not implemented.
- resources_test.go: TestAdjustResources and TestValidateResources are in tests/api/test_podspec.py,
  TestValidateLimitRange in tests/api/test_limitrange.py.
- TestIsOnHold, TestFromQuotaReservedOrAdmittedToPending, TestWorkloadPriorityClassChanged,
  TestUpdateWithRebuild, TestSetConditionAndUpdate, TestFilterChecksForAdmission,
  TestAdmissionChecksForWorkload, TestEvictionPendingLatency, TestTotalExecutionTime — predicates
  and client helpers with no status output of their own, or metrics.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import msgspec
import pytest
from builders import options, workload

from pykueue.api.kueue import (
    PRIORITY_BOOST_ANNOTATION,
    WORKLOAD_ALLOWED_RESOURCE_FLAVOR_ANNOTATION,
    Admission,
    RequeueState,
    Workload,
)
from pykueue.api.meta import EPOCH, Condition
from pykueue.core.queue.cluster_queue import SCHEDULING_HASH_UNKNOWN
from pykueue.core.workload import transitions
from pykueue.core.workload.info import new_workload_info

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
FIVE_MINUTES_AGO = NOW - timedelta(minutes=5)
ADMISSION = Admission(cluster_queue="test-queue")
RESERVED = ("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue test-queue", 1, NOW)

C = tuple[str, str, str, str, int, datetime]


def _cond(ctype: str, status: str, reason: str, message: str, when: datetime) -> Condition:
    return Condition(
        type=ctype, status=status, reason=reason, message=message, observed_generation=1, last_transition_time=when
    )


def _wl(*conds: Condition) -> Workload:
    wl = workload("test", "default")
    wl.metadata.generation = 1
    wl.status.conditions = list(conds)
    return wl


QUOTA_CASES: list[tuple[str, Workload, list[C]]] = [
    ("WorkloadWithoutConditions", _wl(), [RESERVED]),
    (
        "WorkloadWithActiveConditions",
        _wl(
            _cond("Evicted", "True", "TestEvictedReason", "test evicted message", FIVE_MINUTES_AGO),
            _cond("Preempted", "True", "TestPreemptedReason", "test preempted message", FIVE_MINUTES_AGO),
            _cond("QuotaReserved", "False", "TestReason", "test message", FIVE_MINUTES_AGO),
        ),
        [
            ("Evicted", "False", "QuotaReserved", "Previously: test evicted message", 1, NOW),
            ("Preempted", "False", "QuotaReserved", "Previously: test preempted message", 1, NOW),
            RESERVED,
        ],
    ),
    (
        "WorkloadWithInactiveConditions",
        _wl(
            _cond("Evicted", "False", "QuotaReserved", "Previously: test evicted message", FIVE_MINUTES_AGO),
            _cond("Preempted", "False", "QuotaReserved", "Previously: test preempted message", FIVE_MINUTES_AGO),
            _cond("QuotaReserved", "False", "QuotaReserved", "Quota reserved in ClusterQueue test-queue", FIVE_MINUTES_AGO),
        ),
        [
            ("Evicted", "False", "QuotaReserved", "Previously: test evicted message", 1, FIVE_MINUTES_AGO),
            ("Preempted", "False", "QuotaReserved", "Previously: test preempted message", 1, FIVE_MINUTES_AGO),
            RESERVED,
        ],
    ),
]


@pytest.mark.parametrize(("name", "wl", "want"), QUOTA_CASES, ids=[c[0] for c in QUOTA_CASES])
def test_set_quota_reservation(name: str, wl: Workload, want: list[C]) -> None:
    transitions.set_quota_reservation(wl, ADMISSION, NOW)
    assert wl.status.admission == ADMISSION
    assert [
        (c.type, c.status, c.reason, c.message, c.observed_generation, c.last_transition_time) for c in wl.status.conditions
    ] == want


BASE = datetime(2024, 1, 1, 12, 0, 0, tzinfo=UTC)
FUTURE = BASE + timedelta(minutes=5)
EVEN_MORE_FUTURE = BASE + timedelta(minutes=10)
PAST = BASE - timedelta(minutes=5)

# name, requeue state (None: nil), waitUntil, incrementCount, want updated, want requeueAt, want count
REQUEUE_CASES: list[tuple[str, RequeueState | None, datetime, bool, bool, datetime, int | None]] = [
    ("should initialize and set time when requeue state is nil without increment", None, FUTURE, False, True, FUTURE, None),
    ("should initialize and set time and count when requeue state is nil with increment", None, FUTURE, True, True, FUTURE, 1),
    (
        "should update time when existing requeue time is earlier",
        RequeueState(requeue_at=PAST, count=2),
        FUTURE,
        False,
        True,
        FUTURE,
        2,
    ),
    (
        "should not update time when existing requeue time is later",
        RequeueState(requeue_at=EVEN_MORE_FUTURE, count=3),
        FUTURE,
        False,
        False,
        EVEN_MORE_FUTURE,
        3,
    ),
    (
        "should increment count but keep later requeue time",
        RequeueState(requeue_at=EVEN_MORE_FUTURE, count=3),
        FUTURE,
        True,
        True,
        EVEN_MORE_FUTURE,
        4,
    ),
    (
        "should increment count when requeue time is same",
        RequeueState(requeue_at=FUTURE, count=1),
        FUTURE,
        True,
        True,
        FUTURE,
        2,
    ),
    ("should increment from zero count", RequeueState(requeue_at=PAST, count=0), FUTURE, True, True, FUTURE, 1),
    ("should handle zero time in requeue state", RequeueState(requeue_at=EPOCH, count=0), FUTURE, True, True, FUTURE, 1),
]


@pytest.mark.parametrize(
    ("name", "state", "wait_until", "increment", "want_updated", "want_at", "want_count"),
    REQUEUE_CASES,
    ids=[c[0] for c in REQUEUE_CASES],
)
def test_set_requeue_state(
    name: str,
    state: RequeueState | None,
    wait_until: datetime,
    increment: bool,
    want_updated: bool,
    want_at: datetime,
    want_count: int | None,
) -> None:
    wl = workload("wl")
    wl.status.requeue_state = state
    assert transitions.set_requeue_state(wl, wait_until, increment) == want_updated
    assert wl.status.requeue_state is not None
    assert (wl.status.requeue_state.requeue_at, wl.status.requeue_state.count) == (want_at, want_count)


_HASH_GATE = {"SchedulingEquivalenceHashing": True}


@pytest.mark.parametrize(
    ("wl1", "wl2", "want_same", "gates"),
    [
        pytest.param(
            workload("wl1", ns="ns1", requests={"cpu": "2", "memory": "1Gi"}),
            workload("wl2", ns="ns2", requests={"cpu": "2", "memory": "1Gi"}),
            True,
            _HASH_GATE,
            id="same spec different identity produces same hash",
        ),
        pytest.param(
            workload("wl1", ns="ns", requests={"cpu": "1"}),
            workload("wl2", ns="ns", requests={"cpu": "2"}),
            False,
            _HASH_GATE,
            id="different resource requests",
        ),
        pytest.param(
            workload("wl1", ns="ns", count=3, requests={"cpu": "1"}),
            workload("wl2", ns="ns", count=5, requests={"cpu": "1"}),
            False,
            _HASH_GATE,
            id="different pod counts",
        ),
        pytest.param(
            workload("wl1", ns="ns", priority=100, requests={"cpu": "1"}),
            workload("wl2", ns="ns", priority=200, requests={"cpu": "1"}),
            False,
            _HASH_GATE,
            id="different workload priorities",
        ),
        pytest.param(
            workload("wl1", ns="ns", priority=100, requests={"cpu": "1"}, annotations={PRIORITY_BOOST_ANNOTATION: "10"}),
            workload("wl2", ns="ns", priority=100, requests={"cpu": "1"}),
            False,
            {**_HASH_GATE, "PriorityBoost": True},
            id="same raw priority but different effective priority",
        ),
        pytest.param(
            workload(
                "wl1", ns="ns", requests={"cpu": "1"}, annotations={WORKLOAD_ALLOWED_RESOURCE_FLAVOR_ANNOTATION: "flavor1"}
            ),
            workload(
                "wl2", ns="ns", requests={"cpu": "1"}, annotations={WORKLOAD_ALLOWED_RESOURCE_FLAVOR_ANNOTATION: "flavor2"}
            ),
            False,
            {**_HASH_GATE, "ConcurrentAdmission": True},
            id="same spec, different allowed flavors annotation, concurrent admission enabled produces different hash",
        ),
    ],
)
def test_scheduling_hash(wl1: Workload, wl2: Workload, want_same: bool, gates: dict[str, bool]) -> None:
    opts = options(gates=gates)
    h1 = new_workload_info(wl1, opts).scheduling_hash
    h2 = new_workload_info(wl2, opts).scheduling_hash
    assert h1 and h1 != SCHEDULING_HASH_UNKNOWN
    assert (h1 == h2) == want_same


def test_scheduling_hash_follows_an_allowed_flavors_change_of_the_same_spec() -> None:
    """``Info.Update`` recomputes the hash from the object (``computeSchedulingHash``): a view rebuilt
    for a metadata change that keeps the spec object (pykueue reuses the previous view's hash for
    an unchanged spec and priority) still follows a changed allowed-flavors annotation."""
    opts = options(gates={**_HASH_GATE, "ConcurrentAdmission": True})
    before = workload("wl", requests={"cpu": "1"}, annotations={WORKLOAD_ALLOWED_RESOURCE_FLAVOR_ANNOTATION: "flavor1"})
    after = msgspec.structs.replace(
        before,
        metadata=msgspec.structs.replace(
            before.metadata, annotations={WORKLOAD_ALLOWED_RESOURCE_FLAVOR_ANNOTATION: "flavor2"}
        ),
    )
    previous = new_workload_info(before, opts)
    assert new_workload_info(after, opts, previous).scheduling_hash == new_workload_info(after, opts).scheduling_hash
    assert new_workload_info(after, opts, previous).scheduling_hash != previous.scheduling_hash
