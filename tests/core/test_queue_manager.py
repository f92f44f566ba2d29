"""Tests for the queue manager (upstream ``pkg/cache/queue``).

Test names mirror the upstream cases of ``pkg/cache/queue/*_test.go``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.structs import replace as sreplace

from pykueue.api.config import AdmissionFairSharingConfig, Duration
from pykueue.api.feature_gates import DEFAULT_GATES
from pykueue.api.kueue import (
    BEST_EFFORT_FIFO,
    PRIORITY_BOOST_ANNOTATION,
    STRICT_FIFO,
    AdmissionScope,
    ClusterQueue,
    ClusterQueueSpec,
    Cohort,
    CohortSpec,
    FairSharing,
    LocalQueue,
    LocalQueueSpec,
    PodSet,
    PodTemplateSpec,
    PreemptionGate,
    ReclaimablePod,
    RequeueState,
    Workload,
    WorkloadSpec,
)
from pykueue.api.meta import Condition, LabelSelector, LabelSelectorRequirement, ObjectMeta
from pykueue.core.cache.cache import Cache
from pykueue.core.options import SchedulerOptions
from pykueue.core.queue import (
    REQUEST_CLUSTER_QUEUE,
    REQUEST_COHORT,
    REQUEUE_REASON_FAILED_AFTER_NOMINATION,
    REQUEUE_REASON_GENERIC,
    REQUEUE_REASON_NAMESPACE_MISMATCH,
    REQUEUE_REASON_NO_FIT,
    REQUEUE_REASON_PENDING_MIGRATION,
    REQUEUE_REASON_PENDING_PREEMPTION,
    REQUEUE_REASON_PREEMPTION_FAILED,
    REQUEUE_REASON_PREEMPTION_GATED,
    REQUEUE_REASON_PREEMPTION_NO_CANDIDATES,
    PendingClusterQueue,
    QueueManager,
    RetryRequest,
    RootOfCohortTree,
    backoff_expired,
    has_closed_preemption_gate,
    seconds,
)
from pykueue.core.workload.info import QUOTA_RESERVED, LastAssignment, WorkloadInfo, new_workload_info

T0 = datetime(2024, 1, 1, tzinfo=UTC)
NOW = (T0 + timedelta(hours=1)).timestamp()
NS = "default"
OPTS = SchedulerOptions()
ALL = LabelSelector()
ACTIVE: Callable[[str], bool] = lambda _name: True  # noqa: E731


# --- builders ---------------------------------------------------------------------------------------


def cond(ctype: str, status: str, reason: str = "", at: datetime = T0, message: str = "") -> Condition:
    return Condition(type=ctype, status=status, reason=reason, message=message, last_transition_time=at)


def wl(
    name: str,
    *,
    ns: str = NS,
    queue: str = "lq",
    created: float = 0.0,
    priority: int | None = None,
    uid: str | None = None,
    generation: int = 1,
    cpu: str = "1",
    count: int = 1,
    conditions: list[Condition] | None = None,
    requeue_at: datetime | None = None,
    annotations: dict[str, str] | None = None,
    reclaimable: list[ReclaimablePod] | None = None,
) -> Workload:
    """A pending workload created ``created`` seconds after ``T0``."""
    w = Workload(
        metadata=ObjectMeta(
            name=name,
            namespace=ns,
            uid=uid if uid is not None else f"uid-{name}",
            generation=generation,
            creation_timestamp=T0 + timedelta(seconds=created),
            annotations=annotations or {},
        ),
        spec=WorkloadSpec(
            queue_name=queue,
            priority=priority,
            pod_sets=[
                PodSet(
                    name="main",
                    count=count,
                    template=PodTemplateSpec(
                        spec={"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
                    ),
                )
            ],
        ),
    )
    w.status.conditions = list(conditions or [])
    if requeue_at is not None:
        w.status.requeue_state = RequeueState(count=1, requeue_at=requeue_at)
    w.status.reclaimable_pods = list(reclaimable or [])
    return w


def info(w: Workload, options: SchedulerOptions = OPTS) -> WorkloadInfo:
    return new_workload_info(w, options)


def cq_obj(
    name: str,
    strategy: str = BEST_EFFORT_FIFO,
    cohort: str = "",
    selector: LabelSelector | None = ALL,
    admission_mode: str = "",
) -> ClusterQueue:
    return ClusterQueue(
        metadata=ObjectMeta(name=name),
        spec=ClusterQueueSpec(
            queueing_strategy=strategy,
            cohort_name=cohort,
            namespace_selector=selector,
            admission_scope=AdmissionScope(admission_mode=admission_mode) if admission_mode else None,
        ),
    )


def lq_obj(name: str, cq: str, ns: str = NS, stop_policy: str = "") -> LocalQueue:
    return LocalQueue(
        metadata=ObjectMeta(name=name, namespace=ns),
        spec=LocalQueueSpec(cluster_queue=cq, stop_policy=stop_policy),
    )


def cohort_obj(name: str, parent: str = "") -> Cohort:
    return Cohort(metadata=ObjectMeta(name=name), spec=CohortSpec(parent_name=parent))


def pending_cq(
    strategy: str = BEST_EFFORT_FIFO, options: SchedulerOptions = OPTS, selector: LabelSelector | None = ALL
) -> PendingClusterQueue:
    cq = PendingClusterQueue("cq", options, set())
    cq.configure(strategy, selector)
    return cq


def gates(**overrides: bool) -> SchedulerOptions:
    return SchedulerOptions(gates=DEFAULT_GATES.with_overrides(overrides or {}))


def manager(
    *cqs: ClusterQueue,
    lqs: tuple[tuple[str, str], ...] = (("lq", "cq"),),
    options: SchedulerOptions = OPTS,
    cache: Cache | None = None,
) -> QueueManager:
    """A manager with the given ClusterQueues, LocalQueues ``(name, cq)`` in ``default``."""
    m = QueueManager(options, tree=cache)
    m.set_namespace_labels(NS, {"dep": "eng"})
    for cq in cqs or (cq_obj("cq"),):
        m.add_cluster_queue(cq)
    for lq_name, cq_name in lqs:
        m.add_local_queue(lq_obj(lq_name, cq_name))
    return m


def active_keys(m: QueueManager, cq: str) -> list[str]:
    state = m.cluster_queue(cq)
    assert state is not None
    return sorted(state.active.keys())


def inadmissible_keys(m: QueueManager, cq: str) -> list[str]:
    state = m.cluster_queue(cq)
    assert state is not None
    return sorted(state.inadmissible)


def head_names(heads: list[WorkloadInfo]) -> list[str]:
    return [h.name for h in heads]


def pop_order(cq: PendingClusterQueue) -> list[str]:
    out = []
    while (entry := cq.pop()) is not None:
        out.append(entry.info.name)
    return out


# --- BestEffortFIFO vs StrictFIFO (upstream ``queueOrderingFunc``) ----------------------------------


def test_worked_example_c_best_effort_fifo() -> None:
    m = manager(cq_obj("q"), lqs=(("lq", "q"),))
    store = {"w1": wl("w1", created=1, cpu="4"), "w2": wl("w2", created=2, cpu="1")}
    for w in store.values():
        assert m.add_or_update_workload(w, NOW)
    # Cycle 1: w1 does not fit → NoFit, not immediate, no flavor progress → inadmissible.
    (head,) = m.heads(ACTIVE)
    assert head.name == "w1"
    assert m.requeue_workload(head, REQUEUE_REASON_NO_FIT, "", NOW, store["w1"])  # inserted
    assert inadmissible_keys(m, "q") == ["default/w1"]
    # Cycle 2: w2 is the head and gets admitted (leaves the queues).
    (head,) = m.heads(ACTIVE)
    assert head.name == "w2"
    m.delete_workload(head.key)
    assert m.heads(ACTIVE) == []
    # A workload of q finishes → retry; nothing moves before the 1 s batch delay.
    m.queue_inadmissible_workloads({"q"}, NOW + 10)
    assert m.next_due_time() == NOW + 11
    assert m.process_due_requeues(NOW + 10.5) == 0
    assert inadmissible_keys(m, "q") == ["default/w1"]
    assert m.process_due_requeues(NOW + 11) == 1
    assert head_names(m.heads(ACTIVE)) == ["w1"]


def test_worked_example_c_strict_fifo() -> None:
    m = manager(cq_obj("q", STRICT_FIFO), lqs=(("lq", "q"),))
    store = {"w1": wl("w1", created=1, cpu="4"), "w2": wl("w2", created=2, cpu="1")}
    for w in store.values():
        m.add_or_update_workload(w, NOW)
    for _cycle in range(3):
        (head,) = m.heads(ACTIVE)
        assert head.name == "w1"  # head-of-line blocking
        assert m.requeue_workload(head, REQUEUE_REASON_NO_FIT, "", NOW, store["w1"])
    assert inadmissible_keys(m, "q") == []
    assert active_keys(m, "q") == ["default/w1", "default/w2"]


# --- RequeueIfNotPresent decision matrix (upstream ``requeueIfNotPresent``) -------------------------

PENDING_FLAVORS = LastAssignment([{"cpu": -1, "memory": 0}, {"memory": 1}], 1, 1, "h")
NO_PENDING_FLAVORS = LastAssignment([{"memory": -1}, {"cpu": -1, "memory": -1}], 1, 1, "h")


@pytest.mark.parametrize(
    ("name", "reason", "last_assignment", "want_inadmissible"),
    [
        ("failure after nomination", REQUEUE_REASON_FAILED_AFTER_NOMINATION, None, False),
        ("namespace doesn't match", REQUEUE_REASON_NAMESPACE_MISMATCH, None, True),
        ("didn't fit and no pending flavors", REQUEUE_REASON_GENERIC, NO_PENDING_FLAVORS, True),
        ("didn't fit but pending flavors", REQUEUE_REASON_GENERIC, PENDING_FLAVORS, False),
        ("nofit", REQUEUE_REASON_NO_FIT, None, True),
        ("preempt no candidates", REQUEUE_REASON_PREEMPTION_NO_CANDIDATES, None, True),
        ("pending preemption", REQUEUE_REASON_PENDING_PREEMPTION, None, False),
        ("pending migration", REQUEUE_REASON_PENDING_MIGRATION, None, False),
        ("preemption failed", REQUEUE_REASON_PREEMPTION_FAILED, None, False),
        ("preemption gated", REQUEUE_REASON_PREEMPTION_GATED, None, True),
    ],
)
def test_best_effort_fifo_requeue_if_not_present(
    name: str, reason: str, last_assignment: LastAssignment | None, want_inadmissible: bool
) -> None:
    cq = pending_cq(BEST_EFFORT_FIFO)
    i = info(wl("workload-1"))
    i.last_assignment = last_assignment
    assert cq.requeue_if_not_present(i, reason, "", NOW), name
    assert ("default/workload-1" in cq.inadmissible) == want_inadmissible
    assert ("default/workload-1" in cq.active) != want_inadmissible
    # Upstream's wantSticky (``stickyMatches``): only a preemptor of a BestEffortFIFO queue.
    want_sticky = reason in (REQUEUE_REASON_PENDING_PREEMPTION, REQUEUE_REASON_PENDING_MIGRATION)
    pre = cq.preemptor
    assert (pre is not None and pre.sticky and pre.key == "default/workload-1") == want_sticky
    assert not cq.requeue_if_not_present(info(wl("workload-1")), reason, "", NOW), "already present"


def test_requeue_if_not_present_moves_the_parked_view_to_the_heap() -> None:
    """``requeueIfNotPresent``: when the requeued head is to go back to the heap while a view of it
    already waits in ``inadmissible`` (observed after it left ``inflight``: deleted and re-added, or
    its LocalQueue moved, with its hash bulk-moved), ``MoveToActive(key, inadmissibleWl)`` moves that
    parked view, not the requeued info: the next cycle scans flavors from the parked view's
    (here no) progress, not from the requeued head's."""
    cq = pending_cq(BEST_EFFORT_FIFO)
    parked = info(wl("a"))
    parked.scheduling_hash = "h"
    cq.hash_to_bulk_move_reason["h"] = "dummy-reason"
    cq.push_or_update(parked, NOW)
    assert cq.inadmissible["default/a"].info is parked
    requeued = info(wl("a"))
    requeued.scheduling_hash = "h"
    requeued.last_assignment = PENDING_FLAVORS  # pending flavors: back to the heap
    assert cq.requeue_if_not_present(requeued, REQUEUE_REASON_GENERIC, "", NOW)
    assert "default/a" not in cq.inadmissible
    entry = cq.active.get("default/a")
    assert entry is not None and entry.info is parked


@pytest.mark.parametrize(
    ("reason", "want_inadmissible"),
    [
        (REQUEUE_REASON_FAILED_AFTER_NOMINATION, False),
        (REQUEUE_REASON_NAMESPACE_MISMATCH, True),
        (REQUEUE_REASON_GENERIC, False),
        (REQUEUE_REASON_NO_FIT, False),
        (REQUEUE_REASON_PREEMPTION_NO_CANDIDATES, False),
    ],
)
def test_strict_fifo_requeue_if_not_present(reason: str, want_inadmissible: bool) -> None:
    cq = pending_cq(STRICT_FIFO)
    assert cq.requeue_if_not_present(info(wl("workload-1")), reason, "", NOW)
    assert ("default/workload-1" in cq.inadmissible) == want_inadmissible
    assert not cq.requeue_if_not_present(info(wl("workload-1")), reason, "", NOW)


def test_requeue_immediate_still_waits_for_backoff() -> None:
    cq = pending_cq(STRICT_FIFO)
    w = wl("w", requeue_at=T0 + timedelta(hours=2))
    assert cq.requeue_if_not_present(info(w), REQUEUE_REASON_FAILED_AFTER_NOMINATION, "", NOW)
    assert list(cq.inadmissible) == ["default/w"]


def test_queue_inadmissible_workloads_during_scheduling() -> None:
    cq = pending_cq()
    cq.push_or_update(info(wl("workload-1")), NOW)
    head = cq.pop()
    assert head is not None
    cq.flush_inadmissible(lambda _ns: True, NOW)  # a retry while the head is being scheduled
    cq.requeue_if_not_present(head.info, REQUEUE_REASON_GENERIC, "", NOW)
    assert list(cq.active.keys()) == ["default/workload-1"]
    head = cq.pop()
    assert head is not None
    cq.requeue_if_not_present(head.info, REQUEUE_REASON_GENERIC, "", NOW)
    assert list(cq.active.keys()) == []
    assert list(cq.inadmissible) == ["default/workload-1"]


# --- heap order (upstream ``queueOrderingFunc``) ----------------------------------------------------

T1, T2, T3 = 1.0, 2.0, 3.0


@pytest.mark.parametrize(
    ("name", "w1", "w2", "options", "expected"),
    [
        (
            "w1.priority is higher than w2.priority",
            wl("w1", created=T1, priority=1000),
            wl("w2", created=T2, priority=0),
            OPTS,
            "w1",
        ),
        (
            "w1.priority equals w2.priority and w1.create time is earlier than w2.create time",
            wl("w1", created=T1),
            wl("w2", created=T2),
            OPTS,
            "w1",
        ),
        (
            "w1.priority equals w2.priority and w1.create time is earlier than w2.create time but w1 was evicted",
            wl(
                "w1",
                created=T1,
                conditions=[
                    cond("Evicted", "True", "PodsReadyTimeout", T0 + timedelta(seconds=T3), "by test")
                ],
            ),
            wl("w2", created=T2),
            OPTS,
            "w2",
        ),
        (
            "w1 was evicted but kueue is configured to always use the creation timestamp",
            wl(
                "w1",
                created=T1,
                conditions=[
                    cond("Evicted", "True", "PodsReadyTimeout", T0 + timedelta(seconds=T3), "by test")
                ],
            ),
            wl("w2", created=T2),
            SchedulerOptions(requeue_timestamp_eviction=False),
            "w1",
        ),
        (
            "p1.priority is lower than p2.priority and w1.create time is earlier than w2.create time",
            wl("w1", created=T1, priority=0),
            wl("w2", created=T2, priority=1000),
            OPTS,
            "w2",
        ),
        ("same priority and time: smaller uid first", wl("w1", uid="b"), wl("w2", uid="a"), OPTS, "w2"),
    ],
)
def test_strict_fifo(name: str, w1: Workload, w2: Workload, options: SchedulerOptions, expected: str) -> None:
    cq = pending_cq(STRICT_FIFO, options)
    cq.push_or_update(info(w1, options), NOW)
    cq.push_or_update(info(w2, options), NOW)
    head = cq.pop()
    assert head is not None and head.info.name == expected, name


def test_fifo_cluster_queue_update_reorders() -> None:
    cq = pending_cq(STRICT_FIFO)
    for name, created in (("now", 10.0), ("before", 9.0), ("after", 11.0)):
        cq.push_or_update(info(wl(name, created=created)), NOW)
    assert (e := cq.pop()) is not None and e.info.name == "before"
    cq.push_or_update(info(wl("after", created=-50.0)), NOW)
    assert (e := cq.pop()) is not None and e.info.name == "after"
    cq.delete("default/now")
    assert cq.pop() is None


# --- TestClusterQueueImpl (upstream ``cluster_queue_test.go``) --------------------------------------

SELECTOR = LabelSelector(match_expressions=[LabelSelectorRequirement("dep", "In", ["eng", "sales"])])
NAMESPACE_LABELS = {"ns1": {"dep": "eng"}, "ns2": {"dep": "sales"}, "ns3": {"dep": "marketing"}}
W = {
    "w1": wl("w1", ns="ns1", queue="q1"),
    "w2": wl("w2", ns="ns2", queue="q2"),
    "w3": wl("w3", ns="ns3", queue="q3"),
    "w4": wl(
        "w4-requeue-state",
        ns="ns1",
        queue="q1",
        requeue_at=T0 + timedelta(hours=1, minutes=1),
        conditions=[cond("Evicted", "True", "PodsReadyTimeout")],
    ),
}
W_UPDATED = {"w1": sreplace(W["w1"], spec=sreplace(W["w1"].spec, queue_name="q2"))}
W_UPDATED["w2"] = sreplace(W["w2"], spec=sreplace(W["w2"].spec, queue_name="q1"))
W_SMALL = wl("w", ns="ns1", queue="", cpu="1", count=1)
W_RECLAIM = wl("w", ns="ns1", queue="", cpu="1", count=2, reclaimable=[ReclaimablePod("main", 1)])


@pytest.mark.parametrize(
    ("name", "add", "inadmissible", "admissible", "update", "delete", "flush", "want_active", "want_pending"),
    [
        (
            "add, update, delete workload",
            ["w1", "w2", "w4"],
            [],
            [],
            [W_UPDATED["w1"]],
            ["w1"],
            False,
            ["w2"],
            2,
        ),
        (
            "re-queue inadmissible workload; workloads with requeueState can't re-queue",
            ["w1"],
            ["w2", "w4"],
            [],
            [],
            [],
            False,
            ["w1"],
            3,
        ),
        (
            "re-queue admissible workload that was inadmissible",
            ["w1"],
            ["w2", "w4"],
            ["w2", "w4"],
            [],
            [],
            False,
            ["w1", "w2"],
            3,
        ),
        ("re-queue inadmissible workload and flush", ["w1"], ["w2", "w4"], [], [], [], True, ["w1", "w2"], 3),
        (
            "avoid re-queueing inadmissible workloads not matching namespace selector",
            ["w1"],
            ["w3"],
            [],
            [],
            [],
            True,
            ["w1"],
            2,
        ),
        ("update inadmissible workload", ["w1"], ["w2"], [], [W_UPDATED["w2"]], [], False, ["w1", "w2"], 2),
        ("delete inadmissible workload", ["w1"], ["w2"], [], [], ["w2"], True, ["w1"], 1),
        ("update inadmissible workload without changes", [], ["w2"], [], [W["w2"]], [], False, [], 1),
        ("requeue inadmissible workload twice", [], ["w2", "w2"], [], [], [], False, [], 1),
    ],
)
def test_cluster_queue_impl(
    name: str,
    add: list[str],
    inadmissible: list[str],
    admissible: list[str],
    update: list[Workload],
    delete: list[str],
    flush: bool,
    want_active: list[str],
    want_pending: int,
) -> None:
    cq = pending_cq(selector=SELECTOR)
    for k in add:
        cq.push_or_update(info(W[k]), NOW)
    for k in inadmissible:
        cq.requeue_if_not_present(info(W[k]), REQUEUE_REASON_GENERIC, "", NOW)
    for k in admissible:
        cq.requeue_if_not_present(info(W[k]), REQUEUE_REASON_FAILED_AFTER_NOMINATION, "", NOW)
    for w in update:
        cq.push_or_update(info(w), NOW)
    for k in delete:
        cq.delete(info(W[k]).key)
    if flush:
        cq.flush_inadmissible(lambda ns: ns in NAMESPACE_LABELS and ns != "ns3", NOW)
    want = sorted(info(W[k]).key for k in want_active)
    assert sorted(cq.active.keys()) == want, name
    assert cq.pending_total() == want_pending, name


def test_update_reclaimable_pods_in_inadmissible() -> None:
    cq = pending_cq()
    cq.requeue_if_not_present(info(W_SMALL), REQUEUE_REASON_GENERIC, "", NOW)
    cq.push_or_update(info(W_RECLAIM), NOW)
    assert list(cq.active.keys()) == ["ns1/w"]
    assert cq.pending_total() == 1


@pytest.mark.parametrize(
    ("name", "mutate", "want_inadmissible"),
    [
        (
            "status-only change (QuotaReserved) keeps it inadmissible",
            lambda w: w.status.conditions.append(cond("QuotaReserved", "False", "Pending")),
            True,
        ),
        (
            "annotation change keeps it inadmissible",
            lambda w: w.metadata.annotations.update({"x": "y"}),
            True,
        ),
        ("spec change moves it", lambda w: setattr(w.spec, "priority", 5), False),
        (
            "Requeued condition change moves it",
            lambda w: w.status.conditions.append(cond("Requeued", "True")),
            False,
        ),
        (
            "Evicted condition change moves it",
            lambda w: w.status.conditions.append(cond("Evicted", "False")),
            False,
        ),
        (
            "closed preemption gate appears",
            lambda w: setattr(w.spec, "preemption_gates", [PreemptionGate("g")]),
            False,
        ),
    ],
)
def test_update_inadmissible_workload_change_detection(
    name: str, mutate: Callable[[Workload], Any], want_inadmissible: bool
) -> None:
    cq = pending_cq()
    original = wl("w")
    cq.requeue_if_not_present(info(original), REQUEUE_REASON_GENERIC, "", NOW)
    updated = wl("w")
    mutate(updated)
    cq.push_or_update(info(updated), NOW)
    assert ("default/w" in cq.inadmissible) == want_inadmissible, name
    assert cq.inadmissible.get("default/w", cq.active.get("default/w")).info.obj is not original  # type: ignore[union-attr]


def test_priority_boost_annotation_change_moves_only_with_gate() -> None:
    for enabled, want_inadmissible in ((True, False), (False, True)):
        options = gates(PriorityBoost=enabled)
        cq = pending_cq(options=options)
        cq.requeue_if_not_present(info(wl("w"), options), REQUEUE_REASON_GENERIC, "", NOW)
        boosted = wl("w", annotations={"kueue.x-k8s.io/priority-boost": "5"})
        cq.push_or_update(info(boosted, options), NOW)
        assert ("default/w" in cq.inadmissible) == want_inadmissible


def test_has_closed_preemption_gate() -> None:
    w = wl("w")
    assert not has_closed_preemption_gate(w)
    w.spec.preemption_gates = [PreemptionGate("g")]
    assert has_closed_preemption_gate(w)
    w.status.preemption_gates = [{"name": "g", "position": "Open"}]
    assert not has_closed_preemption_gate(w)


# --- backoff (upstream ``backoffWaitingTimeExpired``) -----------------------------------------------

MINUTE_LATER = T0 + timedelta(hours=1, minutes=1)
MINUTE_AGO = T0 + timedelta(minutes=59)
PODS_READY_EVICTED = cond("Evicted", "True", "PodsReadyTimeout")


@pytest.mark.parametrize(
    ("name", "workload", "want"),
    [
        ("workload still have Requeued=false", wl("wl", conditions=[cond("Requeued", "False")]), False),
        ("workload doesn't have requeueState", wl("wl"), True),
        (
            "workload doesn't have an evicted condition with reason=PodsReadyTimeout",
            sreplace(wl("wl"), status=sreplace(wl("wl").status, requeue_state=RequeueState(count=10))),
            True,
        ),
        (
            "now already has exceeded requeueAt",
            wl("wl", requeue_at=MINUTE_AGO, conditions=[PODS_READY_EVICTED]),
            True,
        ),
        (
            "now hasn't yet exceeded requeueAt",
            wl("wl", requeue_at=MINUTE_LATER, conditions=[PODS_READY_EVICTED]),
            False,
        ),
        ("now equals requeueAt", wl("wl", requeue_at=T0 + timedelta(hours=1)), True),
        (
            "Requeued=true with requeueAt in the past",
            wl("wl", requeue_at=MINUTE_AGO, conditions=[cond("Requeued", "True")]),
            True,
        ),
    ],
)
def test_backoff_waiting_time_expired(name: str, workload: Workload, want: bool) -> None:
    assert backoff_expired(workload, NOW) == want, name


@pytest.mark.parametrize(
    ("name", "workload", "want_in_heap"),
    [
        ("workload doesn't have re-queue state", wl("workload-1"), True),
        (
            "workload is still under the backoff waiting time",
            wl(
                "workload-1",
                requeue_at=MINUTE_LATER,
                conditions=[PODS_READY_EVICTED, cond("Requeued", "False")],
            ),
            False,
        ),
        (
            "should wait for Requeued=true after backoff waiting time before push to heap",
            wl("workload-1", conditions=[PODS_READY_EVICTED, cond("Requeued", "False")]),
            False,
        ),
        (
            "should push workload to heap after Requeued=true",
            wl("workload-1", conditions=[PODS_READY_EVICTED, cond("Requeued", "True")]),
            True,
        ),
    ],
)
def test_push_or_update(name: str, workload: Workload, want_in_heap: bool) -> None:
    cq = pending_cq()
    cq.push_or_update(info(workload), NOW)
    assert cq.pending_total() == 1
    updated = sreplace(workload, metadata=sreplace(workload.metadata, resource_version="1"))
    cq.push_or_update(info(updated), NOW)
    assert cq.pending_total() == 1, name
    head = cq.pop()
    if want_in_heap:
        assert head is not None and head.info.obj.metadata.resource_version == "1"
        assert not cq.inadmissible
    else:
        assert head is None
        assert cq.inadmissible["default/workload-1"].info.obj.metadata.resource_version == "1"


def test_push_or_update_while_inflight_is_ignored() -> None:
    cq = pending_cq()
    cq.push_or_update(info(wl("workload-1")), NOW)
    assert cq.pop() is not None
    cq.push_or_update(info(wl("workload-1")), NOW)
    assert len(cq.active) == 0 and not cq.inadmissible
    assert list(cq.inflight) == ["default/workload-1"]


@pytest.mark.parametrize(
    ("name", "updated", "want_active", "want_inadmissible"),
    [
        ("moves to heap when generation changed", wl("workload-1", generation=2, priority=300), 1, 0),
        (
            "stays inadmissible when generation changed but backoff unexpired",
            wl(
                "workload-1",
                generation=2,
                priority=300,
                requeue_at=T0 + timedelta(hours=2),
                conditions=[cond("Requeued", "False", "PodsReadyTimeout")],
            ),
            0,
            1,
        ),
    ],
)
def test_push_or_update_generation_changed(
    name: str, updated: Workload, want_active: int, want_inadmissible: int
) -> None:
    cq = pending_cq()
    cq.push_or_update(info(wl("workload-1", generation=1)), NOW)
    head = cq.pop()
    assert head is not None and head.last_evaluated_generation == 1
    # RequeueWorkload refreshed the info from the newest object: generation 2, evaluated at 1.
    cq.requeue_if_not_present(info(updated), REQUEUE_REASON_GENERIC, "", NOW)
    assert cq.inadmissible["default/workload-1"].last_evaluated_generation == 1
    # The informer event of that same object.
    cq.push_or_update(info(updated), NOW)
    assert (len(cq.active), len(cq.inadmissible)) == (want_active, want_inadmissible), name


# --- scheduling-equivalence bulk moves (upstream ``handleInadmissibleHash``) ------------------------


def same_shape(name: str, created: float = 0.0) -> Workload:
    return wl(name, created=created, cpu="2")


def test_record_inadmissible_hash() -> None:
    cq = pending_cq()
    for i, name in enumerate(["w2", "w3"]):
        cq.push_or_update(info(same_shape(name, created=i + 1)), NOW)
    cq.push_or_update(info(wl("other", cpu="3")), NOW)
    w1 = info(same_shape("w1"))
    assert cq.requeue_if_not_present(w1, REQUEUE_REASON_NO_FIT, "", NOW)
    assert cq.hash_to_bulk_move_reason == {w1.scheduling_hash: "PendingEvaluation"}
    assert sorted(cq.inadmissible) == ["default/w1", "default/w2", "default/w3"]
    assert list(cq.active.keys()) == ["default/other"]
    assert cq.bulk_move_reason("default/w2") == "PendingEvaluation"
    assert cq.bulk_move_reason("default/other") is None


@pytest.mark.parametrize(
    ("name", "strategy", "options", "qr_reason", "want_record", "want_moved"),
    [
        (
            "best effort records the scheduler's reason",
            BEST_EFFORT_FIFO,
            OPTS,
            "WaitingForQuota",
            "WaitingForQuota",
            True,
        ),
        ("strict fifo never records or moves", STRICT_FIFO, OPTS, "WaitingForQuota", None, False),
        (
            "gate off: no record",
            BEST_EFFORT_FIFO,
            gates(SchedulingEquivalenceHashing=False),
            "x",
            None,
            False,
        ),
    ],
)
def test_record_inadmissible_hash_conditions(
    name: str,
    strategy: str,
    options: SchedulerOptions,
    qr_reason: str,
    want_record: str | None,
    want_moved: bool,
) -> None:
    cq = pending_cq(strategy, options)
    cq.push_or_update(info(same_shape("w2", 1), options), NOW)
    w1 = info(same_shape("w1"), options)
    cq.requeue_if_not_present(w1, REQUEUE_REASON_NO_FIT, qr_reason, NOW)
    assert cq.hash_to_bulk_move_reason.get(w1.scheduling_hash) == want_record, name
    assert ("default/w2" in cq.inadmissible) == want_moved, name


def test_push_or_update_respects_inadmissible_hashes() -> None:
    cq = pending_cq()
    cq.push_or_update(info(wl("unrelated", cpu="7")), NOW)
    cq.requeue_if_not_present(info(same_shape("w1")), REQUEUE_REASON_NO_FIT, "", NOW)
    # A new equivalent workload goes straight to inadmissible.
    cq.push_or_update(info(same_shape("w5", 5)), NOW)
    assert "default/w5" in cq.inadmissible
    # A workload already in the heap that changes to the blocked shape is updated in place.
    cq.push_or_update(info(wl("unrelated", cpu="2")), NOW)
    assert "default/unrelated" in cq.active
    # A flush clears the records; the next equivalent workload is pushed normally.
    cq.flush_inadmissible(lambda _ns: True, NOW)
    assert cq.hash_to_bulk_move_reason == {}
    cq.push_or_update(info(same_shape("w6", 6)), NOW)
    assert "default/w6" in cq.active


def test_push_or_update_ignores_hashes_in_strict_fifo() -> None:
    cq = pending_cq()
    cq.requeue_if_not_present(info(same_shape("w1")), REQUEUE_REASON_NO_FIT, "", NOW)
    cq.configure(STRICT_FIFO, ALL)
    cq.push_or_update(info(same_shape("w5", 5)), NOW)
    assert "default/w5" in cq.active


@pytest.mark.parametrize(
    ("reason", "want_trigger"),
    [
        (REQUEUE_REASON_NO_FIT, True),
        (REQUEUE_REASON_PREEMPTION_NO_CANDIDATES, True),
        (REQUEUE_REASON_GENERIC, False),
        (REQUEUE_REASON_NAMESPACE_MISMATCH, False),
        (REQUEUE_REASON_PREEMPTION_GATED, False),
    ],
)
def test_requeue_hash_trigger_by_reason(reason: str, want_trigger: bool) -> None:
    cq = pending_cq()
    cq.push_or_update(info(same_shape("w2", 1)), NOW)
    w1 = info(same_shape("w1"))
    assert cq.requeue_if_not_present(w1, reason, "", NOW)
    assert "default/w1" in cq.inadmissible
    assert (w1.scheduling_hash in cq.hash_to_bulk_move_reason) == want_trigger
    assert ("default/w2" in cq.inadmissible) == want_trigger


def test_is_inadmissible_with_bulk_reason() -> None:
    m = manager()
    store = {n: same_shape(n, i) for i, n in enumerate(["a", "b"])}
    for w in store.values():
        m.add_or_update_workload(w, NOW)
    (head,) = m.heads(ACTIVE)
    m.requeue_workload(head, REQUEUE_REASON_NO_FIT, "WaitingForQuota", NOW, store["a"])
    assert m.is_inadmissible_with_bulk_reason("default/b") == "WaitingForQuota"
    assert m.is_inadmissible_with_bulk_reason("default/missing") is None
    m.queue_inadmissible_workloads({"cq"}, NOW)
    m.process_due_requeues(NOW + 1)
    assert m.is_inadmissible_with_bulk_reason("default/b") is None


# --- retry batching (upstream ``NotifyRetryInadmissible``) ------------------------------------------


def cohort_env(cycle: bool = False) -> tuple[QueueManager, Cache]:
    """root ← child1 ← cq1, root ← child2 ← cq2, plus standalone cq3 (or a cohort cycle)."""
    cache = Cache()
    cohorts = (
        [
            cohort_obj("cohort-a", "cohort-b"),
            cohort_obj("cohort-b", "cohort-c"),
            cohort_obj("cohort-c", "cohort-a"),
        ]
        if cycle
        else [cohort_obj("root"), cohort_obj("child1", "root"), cohort_obj("child2", "root")]
    )
    for c in cohorts:
        cache.add_or_update_cohort(c)
    cqs = (
        [cq_obj("cq1", cohort="cohort-a")]
        if cycle
        else [cq_obj("cq1", cohort="child1"), cq_obj("cq2", cohort="child2"), cq_obj("cq3")]
    )
    for cq in cqs:
        cache.add_or_update_cluster_queue(cq)
    lqs = (("lq1", "cq1"),) if cycle else (("lq1", "cq1"), ("lq2", "cq2"), ("lq3", "cq3"))
    return manager(*cqs, lqs=lqs, cache=cache), cache


def park(m: QueueManager, store: dict[str, Workload]) -> None:
    """Make every workload inadmissible through a real pop + NoFit-free generic requeue."""
    for w in store.values():
        m.add_or_update_workload(w, NOW)
    while heads := m.heads(ACTIVE):
        for h in heads:
            m.requeue_workload(h, REQUEUE_REASON_GENERIC, "", NOW, store[h.name])


def test_queue_inadmissible_workloads_root_cohort_scope_and_dedup() -> None:
    m, _ = cohort_env()
    store = {
        "a": wl("a", queue="lq1"),
        "b": wl("b", queue="lq2", cpu="2"),
        "c": wl("c", queue="lq3", cpu="3"),
    }
    park(m, store)
    assert [inadmissible_keys(m, c) for c in ("cq1", "cq2", "cq3")] == [
        ["default/a"],
        ["default/b"],
        ["default/c"],
    ]
    m.queue_inadmissible_workloads({"cq1", "cq2"}, NOW)
    m.queue_inadmissible_workloads({"cq2"}, NOW + 0.5)  # de-duplicated, earliest due time kept
    assert m.pending_requests() == {RetryRequest(REQUEST_COHORT, "root"): NOW + 1}
    assert m.process_due_requeues(NOW + 0.99) == 0
    assert m.process_due_requeues(NOW + 1) == 2
    assert active_keys(m, "cq1") == ["default/a"] and active_keys(m, "cq2") == ["default/b"]
    assert inadmissible_keys(m, "cq3") == ["default/c"]  # another tree
    assert m.next_due_time() is None


def test_queue_inadmissible_workloads_standalone_cluster_queue() -> None:
    m, _ = cohort_env()
    store = {"a": wl("a", queue="lq1"), "c": wl("c", queue="lq3", cpu="3")}
    park(m, store)
    m.queue_inadmissible_workloads({"cq3", "unknown"}, NOW)
    assert m.pending_requests() == {RetryRequest(REQUEST_CLUSTER_QUEUE, "cq3"): NOW + 1}
    assert m.process_due_requeues(NOW + 2) == 1
    assert inadmissible_keys(m, "cq1") == ["default/a"]


def test_queue_inadmissible_workloads_updates_cycle_and_clears_hashes_even_if_empty() -> None:
    m, _ = cohort_env()
    cq = m.cluster_queue("cq3")
    assert cq is not None
    m.heads(ACTIVE)
    cq.hash_to_bulk_move_reason["h"] = "x"
    m.queue_inadmissible_workloads({"cq3"}, NOW)
    m.process_due_requeues(NOW + 1)
    assert cq.queue_inadmissible_cycle == cq.pop_cycle == 1
    assert cq.hash_to_bulk_move_reason == {}


def test_requeue_workloads_cohort_cycle() -> None:
    m, cache = cohort_env(cycle=True)
    w = wl("a", queue="lq1")
    park(m, {"a": w})
    assert m.assigned_local_queue("default/a") == "default/lq1"
    m.queue_inadmissible_workloads({"cq1"}, NOW)
    m.notify_cohort("cohort-a", NOW)
    assert m.pending_requests() == {}
    assert m.process_due_requeues(NOW + 5) == 0
    assert inadmissible_keys(m, "cq1") == ["default/a"]
    # Breaking the cycle and the Cohort event retry the tree.
    cache.add_or_update_cohort(cohort_obj("cohort-c"))
    m.notify_cohort("cohort-c", NOW + 5)
    assert m.pending_requests() == {RetryRequest(REQUEST_COHORT, "cohort-c"): NOW + 6}
    assert m.process_due_requeues(NOW + 6) == 1
    assert active_keys(m, "cq1") == ["default/a"]


def test_retry_skips_unknown_or_mismatching_namespaces_and_backoff() -> None:
    m = manager(cq_obj("cq", selector=LabelSelector(match_labels={"dep": "eng"})))
    m.add_local_queue(lq_obj("lq", "cq", ns="sales"))
    m.add_local_queue(lq_obj("lq", "cq", ns="ghost"))
    m.set_namespace_labels("sales", {"dep": "sales"})
    store = {
        "ok": wl("ok"),
        "mismatch": wl("mismatch", ns="sales", cpu="2"),
        "ghost": wl("ghost", ns="ghost", cpu="3"),
        "backoff": wl("backoff", cpu="4", requeue_at=T0 + timedelta(hours=3)),
    }
    for name in ("ok", "mismatch", "ghost"):
        m.add_or_update_workload(store[name], NOW)
    while heads := m.heads(ACTIVE):
        for h in heads:
            m.requeue_workload(h, REQUEUE_REASON_GENERIC, "", NOW, store[h.name])
    m.add_or_update_workload(store["backoff"], NOW)  # backoff running → inadmissible directly
    assert len(inadmissible_keys(m, "cq")) == 4
    m.queue_inadmissible_workloads({"cq"}, NOW)
    assert m.process_due_requeues(NOW + 1) == 1
    assert active_keys(m, "cq") == ["default/ok"]
    # The namespace label change makes "sales" match: the caller is told which CQs to retry.
    assert m.set_namespace_labels("sales", {"dep": "eng"}) == {"cq"}
    assert m.set_namespace_labels("sales", {"dep": "eng", "x": "y"}) == set()


def test_nil_namespace_selector_matches_nothing() -> None:
    m = manager(cq_obj("cq", selector=None))
    w = wl("a")
    park(m, {"a": w})
    m.queue_inadmissible_workloads({"cq"}, NOW)
    assert m.process_due_requeues(NOW + 1) == 0


def test_queue_associated_inadmissible_workloads_after() -> None:
    m = manager()
    park(m, {"a": wl("a")})
    calls: list[str] = []
    m.queue_associated_inadmissible_workloads_after(wl("finished", cpu="9"), NOW, lambda: calls.append("x"))
    assert calls == ["x"]
    assert m.pending_requests() == {RetryRequest(REQUEST_CLUSTER_QUEUE, "cq"): NOW + 1}


def test_update_cluster_queue_moves_to_cohort_and_retries() -> None:
    cache = Cache()
    cqs = [cq_obj("cq1", cohort="alpha"), cq_obj("cq2", cohort="beta")]
    for cq in cqs:
        cache.add_or_update_cluster_queue(cq)
    m = manager(*cqs, lqs=(("foo", "cq1"), ("bar", "cq2")), cache=cache)
    store = {"a": wl("a", queue="foo", created=1), "b": wl("b", queue="bar", cpu="2")}
    for w in store.values():
        assert m.requeue_workload(info(w), REQUEUE_REASON_GENERIC, "", NOW, w)
    assert (inadmissible_keys(m, "cq1"), inadmissible_keys(m, "cq2")) == (["default/a"], ["default/b"])
    moved = cq_obj("cq2", cohort="alpha")
    cache.add_or_update_cluster_queue(moved)
    m.update_cluster_queue(moved, NOW)
    assert m.pending_requests() == {RetryRequest(REQUEST_COHORT, "alpha"): NOW + 1}
    assert m.process_due_requeues(NOW + 1) == 2
    assert (active_keys(m, "cq1"), active_keys(m, "cq2")) == (["default/a"], ["default/b"])


def test_root_of_callable_tree_and_cluster_queue_state() -> None:
    cache = Cache()
    roots = {"cq1": "root", "cq2": "root", "cq3": None}
    m = QueueManager(OPTS, roots.get)
    assert isinstance(m.tree, RootOfCohortTree)
    m.set_namespace_labels(NS, {})
    for name in roots:
        m.add_cluster_queue(cache.add_or_update_cluster_queue(cq_obj(name)))  # a ClusterQueueState
        m.add_local_queue(lq_obj(f"lq-{name}", name))
    store = {n: wl(n, queue=f"lq-{n}", cpu=str(i + 1)) for i, n in enumerate(roots)}
    park(m, store)
    m.queue_inadmissible_workloads({"cq1"}, NOW)
    assert m.has_pending_requests()
    assert m.pending_requests() == {RetryRequest(REQUEST_COHORT, "root"): NOW + 1}
    assert m.process_due_requeues(NOW + 1) == 2
    assert not m.has_pending_requests()
    assert inadmissible_keys(m, "cq3") == ["default/cq3"]


def test_add_and_update_cluster_queue_notify_their_tree() -> None:
    m, cache = cohort_env()
    park(m, {"a": wl("a", queue="lq1")})
    m.update_cluster_queue(cq_obj("cq2", cohort="child2"), NOW, spec_changed=False)
    assert m.pending_requests() == {}
    m.update_cluster_queue(cq_obj("cq2", cohort="child2"), NOW)
    cache.add_or_update_cluster_queue(cq_obj("cq4", cohort="child1"))
    m.add_cluster_queue(cq_obj("cq4", cohort="child1"), NOW + 0.2)
    assert m.pending_requests() == {RetryRequest(REQUEST_COHORT, "root"): NOW + 1}


# --- heads (upstream ``Manager.Heads``) -------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "workloads", "want_heads"),
    [
        ("empty clusterQueues", [], []),
        ("active clusterQueues", [wl("a", queue="foo"), wl("b", queue="bar")], ["b", "a"]),
        (
            "active clusterQueues with multiple workloads",
            [wl("a1", queue="foo"), wl("a2", queue="foo", created=3600), wl("b", queue="bar")],
            ["b", "a1"],
        ),
        (
            "inactive clusterQueues",
            [wl("a", queue="foo"), wl("b", queue="bar"), wl("c", queue="baz", created=3600)],
            ["b", "a"],
        ),
    ],
)
def test_heads(name: str, workloads: list[Workload], want_heads: list[str]) -> None:
    m = manager(
        cq_obj("active-fooCq"),
        cq_obj("active-barCq"),
        cq_obj("pending-bazCq"),
        lqs=(("foo", "active-fooCq"), ("bar", "active-barCq"), ("baz", "pending-bazCq")),
    )
    for w in workloads:
        assert m.add_or_update_workload(w, NOW)
    want_assigned = {f"default/{w.metadata.name}": f"default/{w.spec.queue_name}" for w in workloads}
    heads = m.heads(lambda n: n.startswith("active-"))
    assert head_names(heads) == want_heads, name  # sorted by ClusterQueue name
    assert {h.key: m.assigned_local_queue(h.key) for h in heads} == {
        k: want_assigned[k] for k in (h.key for h in heads)
    }
    assert all(m.assigned_local_queue(k) == v for k, v in want_assigned.items())
    for h in heads:
        assert h.cluster_queue.startswith("active-")
        assert h.key not in m.local_queue_workload_keys(want_assigned[h.key])
    inactive = m.cluster_queue("pending-bazCq")
    assert inactive is not None and inactive.pop_cycle == 0
    active = m.cluster_queue("active-fooCq")
    assert active is not None and active.pop_cycle == 1  # counted even when the heap is empty


def test_heads_marks_inflight_and_leaves_local_queue() -> None:
    m = manager()
    m.add_or_update_workload(wl("a", generation=7), NOW)
    assert m.pending_count_local_queue("default/lq") == 1
    (head,) = m.heads(ACTIVE)
    cq = m.cluster_queue("cq")
    assert cq is not None and list(cq.inflight) == ["default/a"]
    assert cq.inflight["default/a"].last_evaluated_generation == 7
    assert m.pending_count_local_queue("default/lq") == 0
    assert m.pending_count("cq") == 1
    assert m.pending_breakdown("cq") == (1, 0)
    assert not m.has_pending_heads()
    assert head.cluster_queue == "cq"


# --- sticky preemptor (upstream ``preemptorWorkload``) ----------------------------------------------


@pytest.mark.parametrize(
    ("strategy", "want_next"), [(BEST_EFFORT_FIFO, "preemptor"), (STRICT_FIFO, "urgent")]
)
def test_sticky_preemptor_ordering(strategy: str, want_next: str) -> None:
    m = manager(cq_obj("cq", strategy))
    store = {
        "preemptor": wl("preemptor", priority=0),
        "urgent": wl("urgent", priority=100, created=60, cpu="2"),
    }
    m.add_or_update_workload(store["preemptor"], NOW)
    (head,) = m.heads(ACTIVE)
    assert m.requeue_workload(
        head, REQUEUE_REASON_PENDING_PREEMPTION, "WaitingForPreemptedWorkloads", NOW, store["preemptor"]
    )
    cq = m.cluster_queue("cq")
    assert cq is not None and cq.preemptor is not None
    assert (cq.preemptor.key, cq.preemptor.generation, cq.preemptor.sticky) == (
        "default/preemptor",
        1,
        strategy == BEST_EFFORT_FIFO,
    )
    m.add_or_update_workload(store["urgent"], NOW)
    (head,) = m.heads(ACTIVE)
    assert head.name == want_next
    assert m.is_preemptor(head) == (want_next == "preemptor")
    assert m.pending_workloads("cq")[0].name == want_next


def test_preemptor_record_replaced_and_cleared() -> None:
    cq = pending_cq()
    for w in (wl("p1", created=0), wl("p2", created=5, cpu="2")):
        cq.push_or_update(info(w), NOW)
    head = cq.pop()
    assert head is not None and head.info.name == "p1"
    assert cq.requeue_if_not_present(head.info, REQUEUE_REASON_PENDING_PREEMPTION, "", NOW)
    cq.push_or_update(info(wl("other", cpu="3", priority=50, created=9)), NOW)
    assert [i.name for i in cq.sorted_pending()] == ["p1", "other", "p2"]  # sticky beats priority
    # p3 becomes the preemptor: p1, still in the heap, loses its stickiness.
    assert cq.requeue_if_not_present(
        info(wl("p3", cpu="4", created=7)), REQUEUE_REASON_PENDING_MIGRATION, "", NOW
    )
    assert cq.preemptor is not None and cq.preemptor.key == "default/p3" and cq.preemptor.generation == 0
    assert [i.name for i in cq.sorted_pending()] == ["p3", "other", "p1", "p2"]
    # Deleting the preemptor clears the record.
    cq.delete("default/p3")
    assert cq.preemptor is None
    assert pop_order(cq) == ["other", "p1", "p2"]


def test_preemptor_record_kept_on_other_requeue_reasons() -> None:
    cq = pending_cq()
    cq.push_or_update(info(wl("p1")), NOW)
    head = cq.pop()
    assert head is not None
    cq.requeue_if_not_present(head.info, REQUEUE_REASON_PENDING_PREEMPTION, "", NOW)
    head = cq.pop()
    assert head is not None and cq.is_preemptor("default/p1", 1)
    cq.requeue_if_not_present(head.info, REQUEUE_REASON_NO_FIT, "", NOW)
    assert cq.preemptor is not None and cq.preemptor.key == "default/p1"
    assert not cq.is_preemptor("default/p1", 2)


# --- AddOrUpdate / update / delete (upstream ``Manager.AddOrUpdateWorkload``) ----------------------


def test_add_or_update_workload_carries_last_assignment() -> None:
    for options, mutate, want_carried in (
        (OPTS, lambda w: w.metadata.annotations.update({"a": "b"}), True),
        (OPTS, lambda w: setattr(w.spec.pod_sets[0], "count", 3), False),
        (gates(FlavorFungibilityPreserveScanProgress=False), lambda w: None, False),
    ):
        m = manager(options=options)
        w = wl("a")
        m.add_or_update_workload(w, NOW)
        (head,) = m.heads(ACTIVE)
        # A cycle records its progress for the head's scheduling shape.
        recorded = sreplace(PENDING_FLAVORS, scheduling_hash=head.scheduling_hash)
        head.last_assignment = recorded
        assert m.requeue_workload(head, REQUEUE_REASON_GENERIC, "", NOW, w)  # pending flavors → heap
        updated = wl("a")
        mutate(updated)
        m.add_or_update_workload(updated, NOW)
        cq = m.cluster_queue("cq")
        assert cq is not None
        entry = cq.tracked("default/a")
        assert entry is not None and entry.info.obj is updated
        assert (entry.info.last_assignment is recorded) == want_carried


def test_own_pending_write_carries_last_assignment_as_its_observation_would() -> None:
    """``observe_own_write`` must leave the entry ``add_or_update_workload`` of the written object
    would (``AddOrUpdateWorkloadWithoutLock``): the recorded flavor-scan progress survives only when
    ``MatchesSchedulingShape`` of the hash it was recorded for. A priority-boost annotation landing
    between the pop and the requeue changes the head's scheduling hash (priority is part of it)
    without bumping its generation, so the shortcut applies and must drop the progress too."""
    options = gates(PriorityBoost=True)
    entries = []
    for shortcut in (True, False):
        m = manager(options=options)
        assert m.add_or_update_workload(wl("a"), NOW)
        (head,) = m.heads(ACTIVE)
        recorded = LastAssignment([{"cpu": -1}], 3, 7, head.scheduling_hash)  # scan exhausted
        head.last_assignment = recorded
        boosted = wl("a", annotations={PRIORITY_BOOST_ANNOTATION: "5"})
        assert m.requeue_workload(head, REQUEUE_REASON_NO_FIT, "", NOW, boosted)
        assert head.scheduling_hash != recorded.scheduling_hash
        written = sreplace(
            boosted, status=sreplace(boosted.status, conditions=[cond(QUOTA_RESERVED, "False", "Pending")])
        )
        if shortcut:
            assert m.observe_own_write(head, written)
        else:
            assert m.add_or_update_workload(written, NOW)
        cq = m.cluster_queue("cq")
        assert cq is not None
        entry = cq.inadmissible.get("default/a")
        assert entry is not None and entry.info.obj is written
        entries.append(entry)
    fast, general = entries
    assert general.info.last_assignment is None
    assert fast == general


@pytest.mark.parametrize(
    ("name", "lqs", "cqs", "initial", "update", "want_ok", "want_order", "want_members", "want_assigned"),
    [
        (
            "in queue",
            (("foo", "cq"),),
            ("cq",),
            [wl("a", queue="foo", created=0), wl("b", queue="foo", created=1)],
            lambda w: setattr(w.metadata, "creation_timestamp", T0 + timedelta(minutes=1)),
            True,
            {"cq": ["b", "a"]},
            {"default/foo": ["default/a", "default/b"]},
            {"default/a": "default/foo", "default/b": "default/foo"},
        ),
        (
            "between queues",
            (("foo", "cq"), ("bar", "cq")),
            ("cq",),
            [wl("a", queue="foo")],
            lambda w: setattr(w.spec, "queue_name", "bar"),
            True,
            {"cq": ["a"]},
            {"default/foo": [], "default/bar": ["default/a"]},
            {"default/a": "default/bar"},
        ),
        (
            "between cluster queues",
            (("foo", "cq1"), ("bar", "cq2")),
            ("cq1", "cq2"),
            [wl("a", queue="foo")],
            lambda w: setattr(w.spec, "queue_name", "bar"),
            True,
            {"cq1": [], "cq2": ["a"]},
            {"default/foo": [], "default/bar": ["default/a"]},
            {"default/a": "default/bar"},
        ),
        (
            "to non existent queue",
            (("foo", "cq"),),
            ("cq",),
            [wl("a", queue="foo")],
            lambda w: setattr(w.spec, "queue_name", "bar"),
            False,
            {"cq": []},
            {"default/foo": []},
            {},
        ),
        (
            "from non existing queue",
            (("foo", "cq"),),
            ("cq",),
            [wl("a", queue="bar")],
            lambda w: setattr(w.spec, "queue_name", "foo"),
            True,
            {"cq": ["a"]},
            {"default/foo": ["default/a"]},
            {"default/a": "default/foo"},
        ),
    ],
)
def test_update_workload(
    name: str,
    lqs: tuple[tuple[str, str], ...],
    cqs: tuple[str, ...],
    initial: list[Workload],
    update: Callable[[Workload], Any],
    want_ok: bool,
    want_order: dict[str, list[str]],
    want_members: dict[str, list[str]],
    want_assigned: dict[str, str],
) -> None:
    m = manager(*(cq_obj(c) for c in cqs), lqs=lqs)
    for w in initial:
        m.add_or_update_workload(w, NOW)
    updated = sreplace(initial[0], metadata=sreplace(initial[0].metadata), spec=sreplace(initial[0].spec))
    update(updated)
    assert m.add_or_update_workload(updated, NOW) == want_ok, name
    members = {k: m.local_queue_workload_keys(k) for k in want_members}
    assert members == want_members
    assert {k: m.assigned_local_queue(k) for k in want_assigned} == want_assigned
    assert m.assigned_local_queue("default/a") == want_assigned.get("default/a")
    order = {}
    for c in cqs:
        cq = m.cluster_queue(c)
        assert cq is not None
        order[c] = pop_order(cq)
    assert order == want_order


@pytest.mark.parametrize(
    ("name", "workload", "want_ok", "want_assigned"),
    [
        ("finished", wl("finished", queue="foo", conditions=[cond("Finished", "True")]), False, None),
        (
            "inactive",
            sreplace(
                wl("inactive", queue="foo"), spec=sreplace(wl("i").spec, queue_name="foo", active=False)
            ),
            False,
            None,
        ),
        (
            "quota_already_reserved",
            wl("q", queue="foo", conditions=[cond("QuotaReserved", "True")]),
            False,
            None,
        ),
        ("on hold", wl("h", queue="foo", conditions=[cond("QuotaReserved", "False", "OnHold")]), False, None),
        (
            "admission gated",
            wl("g", queue="foo", annotations={"kueue.x-k8s.io/admission-gated-by": "x"}),
            False,
            None,
        ),
        ("existing_queue", wl("existing_queue", queue="foo"), True, "default/foo"),
        ("non_existing_queue", wl("non_existing_queue", queue="baz"), False, None),
        ("non_existing_cluster_queue", wl("non_existing_cluster_queue", queue="bar"), False, "default/bar"),
        ("wrong_namespace", wl("wrong_namespace", ns="mars", queue="foo"), False, None),
    ],
)
def test_add_workload(name: str, workload: Workload, want_ok: bool, want_assigned: str | None) -> None:
    m = manager(lqs=(("foo", "cq"), ("bar", "missing-cq")))
    assert m.add_or_update_workload(workload, NOW) == want_ok, name
    key = f"{workload.metadata.namespace}/{workload.metadata.name}"
    assert m.assigned_local_queue(key) == want_assigned


def test_delete_workload_keeps_or_forgets_assignment() -> None:
    for forget in (False, True):
        m = manager(lqs=(("foo", "cq"),))
        for n in ("wl1", "wl2"):
            m.add_or_update_workload(wl(n, queue="foo", cpu=str(len(n))), NOW)
        m.delete_workload(wl("wl1", queue="foo"), forget=forget)
        assert m.pending_count_local_queue("default/foo") == 1
        assert m.pending_count("cq") == 1
        assert m.assigned_local_queue("default/wl1") == (None if forget else "default/foo")
        assert m.assigned_local_queue("default/wl2") == "default/foo"


def test_delete_inflight_workload_clears_inflight() -> None:
    m = manager()
    m.add_or_update_workload(wl("a"), NOW)
    m.heads(ACTIVE)
    m.delete_workload("default/a")
    assert m.pending_count("cq") == 0


# --- RequeueWorkload (manager level) ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "workload", "in_store", "in_queue", "want"),
    [
        ("existing_queue_and_obj", wl("existing_queue_and_obj", queue="foo"), True, False, True),
        ("non_existing_queue", wl("non_existing_queue", queue="baz"), True, False, False),
        ("non_existing_cluster_queue", wl("non_existing_cluster_queue", queue="bar"), True, False, False),
        ("not_in_client", wl("not_in_client", queue="foo"), False, False, False),
        ("already_in_queue", wl("already_in_queue", queue="foo"), True, True, False),
        (
            "already_admitted",
            wl("already_admitted", queue="foo", conditions=[cond("QuotaReserved", "True")]),
            True,
            True,
            False,
        ),
    ],
)
def test_requeue_workload_strict_fifo(
    name: str, workload: Workload, in_store: bool, in_queue: bool, want: bool
) -> None:
    m = manager(cq_obj("cq", STRICT_FIFO), lqs=(("foo", "cq"), ("bar", "missing")))
    if in_queue:
        m.add_or_update_workload(workload, NOW)
    latest = workload if in_store else None
    assert m.requeue_workload(info(workload), REQUEUE_REASON_GENERIC, "", NOW, latest) == want, name


def test_requeue_with_out_of_date_workload_uses_latest() -> None:
    m = manager()
    old = wl("a")
    m.add_or_update_workload(old, NOW)
    (head,) = m.heads(ACTIVE)
    newer = wl("a", annotations={"foo": "bar"}, cpu="2")
    head.last_assignment = NO_PENDING_FLAVORS
    assert m.requeue_workload(head, REQUEUE_REASON_FAILED_AFTER_NOMINATION, "", NOW, newer)
    (head2,) = m.heads(ACTIVE)
    assert head2 is head and head.obj is newer
    assert head.pod_sets[0].total == {"cpu": 2000}
    assert head.last_assignment is NO_PENDING_FLAVORS
    assert m.pending_count_local_queue("default/lq") == 0


def test_requeue_with_queue_changed_workload() -> None:
    m = manager(cq_obj("fooCq"), cq_obj("barCq"), lqs=(("foo", "fooCq"), ("bar", "barCq")))
    w = wl("a", queue="foo")
    m.add_or_update_workload(w, NOW)
    (head,) = m.heads(ACTIVE)
    moved = wl("a", queue="bar")
    assert m.requeue_workload(head, REQUEUE_REASON_FAILED_AFTER_NOMINATION, "", NOW, moved)
    (head,) = m.heads(ACTIVE)
    assert head.cluster_queue == "barCq"
    assert m.pending_count("fooCq") == 0
    assert m.assigned_local_queue("default/a") == "default/bar"


def test_requeue_of_deleted_workload_releases_inflight() -> None:
    m = manager()
    m.add_or_update_workload(wl("a"), NOW)
    (head,) = m.heads(ACTIVE)
    assert not m.requeue_workload(head, REQUEUE_REASON_GENERIC, "", NOW, None)
    assert m.pending_count("cq") == 0


# --- LocalQueues and ClusterQueues -----------------------------------------------------------------


def test_add_local_queue_orphans() -> None:
    m = manager(lqs=())
    existing = [
        wl("a", queue="foo"),
        wl("b", queue="bar"),
        wl("c", queue="foo", cpu="2"),
        wl("d", queue="foo", conditions=[cond("QuotaReserved", "True")]),
        wl("e", queue="foo", conditions=[cond("Finished", "True")]),
        wl("a", ns="moon", queue="foo"),
    ]
    m.add_local_queue(lq_obj("foo", "cq"), existing)
    assert m.local_queue_workload_keys("default/foo") == ["default/a", "default/c"]
    assert {k: m.assigned_local_queue(k) for k in ("default/a", "default/b", "default/d", "moon/a")} == {
        "default/a": "default/foo",
        "default/b": None,
        "default/d": "default/foo",
        "moon/a": None,
    }
    assert active_keys(m, "cq") == ["default/a", "default/c"]


def test_add_cluster_queue_orphans() -> None:
    m = manager(lqs=(("foo", "cq"), ("bar", "cq")))
    m.add_or_update_workload(wl("a", queue="foo", created=1), NOW)
    m.add_or_update_workload(wl("b", queue="bar", created=0, cpu="2"), NOW)
    m.delete_cluster_queue("cq")
    assert m.pending_count("cq") == 0 and m.heads(ACTIVE) == []
    m.add_cluster_queue(cq_obj("cq"))
    cq = m.cluster_queue("cq")
    assert cq is not None and pop_order(cq) == ["b", "a"]


def test_update_local_queue_moves_workloads() -> None:
    m = manager(cq_obj("cq1"), cq_obj("cq2"), lqs=(("foo", "cq1"), ("bar", "cq2")))
    m.add_or_update_workload(wl("a", queue="foo", created=1), NOW)
    m.add_or_update_workload(wl("b", queue="bar", created=0, cpu="2"), NOW)
    m.update_local_queue(lq_obj("foo", "cq2"))
    order = {}
    for c in ("cq1", "cq2"):
        cq = m.cluster_queue(c)
        assert cq is not None
        order[c] = pop_order(cq)
    assert order == {"cq1": [], "cq2": ["b", "a"]}


def test_delete_and_stop_local_queue() -> None:
    m = manager()
    m.add_or_update_workload(wl("a"), NOW)
    m.add_or_update_workload(wl("b", cpu="2"), NOW)
    m.heads(ACTIVE)  # "a" is inflight
    m.update_local_queue(lq_obj("lq", "cq", stop_policy="Hold"))
    assert not m.has_local_queue("default/lq")
    assert m.pending_count("cq") == 0
    assert not m.add_or_update_workload(wl("c"), NOW)
    m.add_local_queue(lq_obj("lq", "cq", stop_policy="HoldAndDrain"))
    assert not m.has_local_queue("default/lq")
    m.update_local_queue(lq_obj("lq", "cq"), [wl("a"), wl("b", cpu="2")])
    assert m.pending_count("cq") == 2
    m.delete_local_queue("default/lq")
    assert m.pending_count("cq") == 0


def test_pending_workloads_and_counts() -> None:
    m = manager()
    store = {"a": wl("a", created=0), "b": wl("b", created=1, cpu="2"), "c": wl("c", created=2, cpu="3")}
    for w in store.values():
        m.add_or_update_workload(w, NOW)
    (head,) = m.heads(ACTIVE)
    m.requeue_workload(head, REQUEUE_REASON_NO_FIT, "", NOW, store["a"])
    assert [i.name for i in m.pending_workloads("cq")] == ["a", "b", "c"]
    assert m.pending_count("cq") == 3
    assert m.pending_breakdown("cq") == (2, 1)
    assert m.pending_count_local_queue("default/lq") == 3
    assert m.pending_workloads("nope") == [] and m.pending_count("nope") == 0
    assert m.cluster_queue_for_workload("default/a") == "cq"
    assert m.cluster_queue_for_workload(wl("x", queue="other")) is None
    assert m.has_pending_heads() and m.has_pending_heads(ACTIVE)
    assert not m.has_pending_heads(lambda _n: False)


def test_afs_hook_orders_before_priority_and_sticky() -> None:
    usage = {"default/lq-a": 5.0, "default/lq-b": 1.0}
    m = QueueManager(OPTS, afs_usage=lambda i: usage[i.local_queue])
    m.set_namespace_labels(NS, {})
    m.add_cluster_queue(cq_obj("cq", admission_mode="UsageBasedAdmissionFairSharing"))
    m.add_local_queue(lq_obj("lq-a", "cq"))
    m.add_local_queue(lq_obj("lq-b", "cq"))
    m.add_or_update_workload(wl("high", queue="lq-a", priority=100), NOW)
    m.add_or_update_workload(wl("low", queue="lq-b", priority=1, cpu="2"), NOW)
    assert [i.name for i in m.pending_workloads("cq")] == ["low", "high"]
    usage["default/lq-b"] = 10.0
    m.rebuild_heap("cq")
    assert head_names(m.heads(ACTIVE)) == ["high"]


def _afs_manager_a4_b2() -> QueueManager:
    """A queue manager with AFS configured: ClusterQueue cq (UsageBasedAdmissionFairSharing),
    LocalQueues lq-a (consumed 4 cpu) and lq-b (consumed 2 cpu), workload a in lq-a and b in lq-b."""
    afs_cfg = AdmissionFairSharingConfig(usage_half_life_time=Duration.parse("10m"))
    m = QueueManager(SchedulerOptions(admission_fair_sharing=afs_cfg))
    m.set_namespace_labels(NS, {})
    m.add_cluster_queue(cq_obj("cq", admission_mode="UsageBasedAdmissionFairSharing"))
    m.add_local_queue(lq_obj("lq-a", "cq"))
    m.add_local_queue(lq_obj("lq-b", "cq"))
    m.afs.ledger.set_for_test("default/lq-a", {"cpu": Fraction(4)}, 0.0)
    m.afs.ledger.set_for_test("default/lq-b", {"cpu": Fraction(2)}, 0.0)
    m.add_or_update_workload(wl("a", queue="lq-a"), NOW)
    m.add_or_update_workload(wl("b", queue="lq-b", cpu="2"), NOW)
    return m


def test_afs_ledger_orders_heap_and_weight_change_resorts() -> None:
    """With ``admissionFairSharing`` configured the heap reads the ledger (no hook needed); a
    LocalQueue weight change re-sorts (``UpdateLocalQueueWeight``); stopping a LocalQueue keeps its
    history, deleting the object drops it (``LocalQueueReconciler.Delete``)."""
    m = _afs_manager_a4_b2()
    assert [i.name for i in m.pending_workloads("cq")] == ["b", "a"]
    heavy_b = lq_obj("lq-b", "cq")
    heavy_b.spec.fair_sharing = FairSharing(weight="0.25")  # usage 2 / 0.25 = 8 > 4
    m.update_local_queue(heavy_b)
    assert [i.name for i in m.pending_workloads("cq")] == ["a", "b"]
    m.update_local_queue(lq_obj("lq-b", "cq", stop_policy="Hold"))
    assert m.afs.ledger.get("default/lq-b") is not None
    m.forget_local_queue_usage("default/lq-b")
    assert m.afs.ledger.get("default/lq-b") is None


def test_time_may_be_a_datetime() -> None:
    assert seconds(T0) == T0.timestamp() and seconds(3.5) == 3.5
    m = manager()
    m.add_or_update_workload(wl("a"), T0)
    m.queue_inadmissible_workloads({"cq"}, T0)
    assert m.next_due_time() == T0.timestamp() + 1


# --- invariants under random operations ------------------------------------------------------------

REASONS = [
    REQUEUE_REASON_GENERIC,
    REQUEUE_REASON_NO_FIT,
    REQUEUE_REASON_PREEMPTION_NO_CANDIDATES,
    REQUEUE_REASON_PENDING_PREEMPTION,
    REQUEUE_REASON_FAILED_AFTER_NOMINATION,
    REQUEUE_REASON_NAMESPACE_MISMATCH,
]
POOL = {f"w{i}": info(wl(f"w{i}", cpu=str(1 + i % 3), priority=i % 2, created=i)) for i in range(8)}


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from([BEST_EFFORT_FIFO, STRICT_FIFO]),
    st.lists(
        st.tuples(
            st.sampled_from(["push", "pop", "requeue", "delete", "flush"]),
            st.sampled_from(sorted(POOL)),
            st.sampled_from(REASONS),
        ),
        max_size=60,
    ),
)
def test_cluster_queue_invariants(strategy: str, operations: list[tuple[str, str, str]]) -> None:
    """A pending workload is in exactly one of heap / inadmissible / inflight; indexes agree."""
    cq = pending_cq(strategy)
    popped: list[WorkloadInfo] = []
    for op, name, reason in operations:
        if op == "push":
            cq.push_or_update(POOL[name], NOW)
        elif op == "pop" and (entry := cq.pop()) is not None:
            popped.append(entry.info)
        elif op == "requeue" and popped:
            cq.requeue_if_not_present(popped.pop(0), reason, "", NOW)
        elif op == "delete":
            cq.delete(POOL[name].key)
        elif op == "flush":
            cq.flush_inadmissible(lambda _ns: True, NOW)
        heap, inad, infl = set(cq.active.keys()), set(cq.inadmissible), set(cq.inflight)
        assert not (heap & inad or heap & infl or inad & infl)
        indexed = {k for keys in cq._active_by_hash.values() for k in keys}
        assert indexed == heap
        assert cq.pending_total() == len(heap | inad | infl)
        assert ("cq" in cq._nonempty) == bool(heap)
        in_heap_order = [i.key for i in cq.sorted_pending() if i.key in heap]
        assert in_heap_order == [e.info.key for e in cq.active.sorted_items()]


# --- performance ------------------------------------------------------------------------------------


def test_scale_1000_cluster_queues_100k_workloads() -> None:
    """1,000 ClusterQueues × 100 pending workloads: operations stay logarithmic."""
    m = QueueManager(OPTS)
    m.set_namespace_labels(NS, {})
    template = info(wl("tmpl"))
    for c in range(1000):
        m.add_cluster_queue(cq_obj(f"cq{c:04d}"))
        m.add_local_queue(lq_obj(f"lq{c:04d}", f"cq{c:04d}"))
    start = time.perf_counter()
    for c in range(1000):
        cq = m.cluster_queue(f"cq{c:04d}")
        assert cq is not None
        for j in range(100):
            key = f"{NS}/w{c}-{j}"
            cq.push_or_update(sreplace(template, key=key, uid=key, order_ts=float(j), priority=j % 7), NOW)
    fill = time.perf_counter() - start
    start = time.perf_counter()
    for _cycle in range(20):
        for h in m.heads(ACTIVE):
            m.cluster_queue(h.cluster_queue).requeue_if_not_present(  # type: ignore[union-attr]
                h, REQUEUE_REASON_NO_FIT, "", NOW
            )
    cycles = time.perf_counter() - start
    assert sum(m.pending_count(n) for n in m.cluster_queue_names()) == 100_000
    assert fill < 20 and cycles < 10, (fill, cycles)


def test_observing_a_refreshed_but_unobserved_object_takes_the_general_path() -> None:
    """An object the queues already hold, but stored by ``requeue_workload``'s refresh before its
    watch event arrived (not as ``add_or_update_workload`` leaves it), is not taken as observed
    when that event comes: the spec changed, so ``PushOrUpdate`` moves it out of
    ``inadmissible`` into the heap (``QueueManager._observed`` must say no)."""
    from datetime import UTC, datetime

    from pykueue.core.cache.cache import Cache
    from pykueue.core.options import SchedulerOptions
    from pykueue.core.queue.cluster_queue import REQUEUE_REASON_GENERIC
    from pykueue.core.state import route_workload_change

    m = manager()
    old = wl("w", cpu="4", generation=1)
    assert m.add_or_update_workload(old, NOW)
    (head,) = m.heads(ACTIVE)
    new = wl("w", cpu="1", generation=2)  # the spec changed after the pop; its event comes later
    m.requeue_workload(head, REQUEUE_REASON_GENERIC, "", NOW, new)
    cq = m._cqs["cq"]
    assert "default/w" in cq.inadmissible and cq.inadmissible["default/w"].info.obj is new
    route_workload_change(
        old,
        new,
        cache=Cache(),
        queues=m,
        issued_evictions=set(),
        options=SchedulerOptions(),
        now=datetime.fromtimestamp(NOW, UTC),
    )
    assert "default/w" in cq.active and "default/w" not in cq.inadmissible


def _afs_manager_a_then_b() -> QueueManager:
    """An AFS ClusterQueue with LocalQueues lq-a and lq-b, one workload each: "a" (older) in lq-a
    and "b" in lq-b; no usage nor penalty yet."""
    afs_cfg = AdmissionFairSharingConfig(
        usage_half_life_time=Duration.parse("10m"), usage_sampling_interval=Duration.parse("5m")
    )
    m = QueueManager(SchedulerOptions(admission_fair_sharing=afs_cfg))
    m.set_namespace_labels(NS, {})
    m.add_cluster_queue(cq_obj("cq", admission_mode="UsageBasedAdmissionFairSharing"))
    m.add_local_queue(lq_obj("lq-a", "cq"))
    m.add_local_queue(lq_obj("lq-b", "cq"))
    m.add_or_update_workload(wl("a", queue="lq-a", created=0.0), NOW)
    m.add_or_update_workload(wl("b", queue="lq-b", created=1.0), NOW)
    return m


def test_afs_pending_penalty_resorts_the_heap_at_pop() -> None:
    """Upstream ``ClusterQueue.Pop``: while a LocalQueue of the ClusterQueue has a pending entry
    penalty the heap is rebuilt before the pop (``hasPendingPenalties``), so the penalised
    LocalQueue's other workloads move behind the others'. No LocalQueue reconcile runs here."""
    m = _afs_manager_a_then_b()
    m.afs.push_entry_penalty("default/lq-a", "default/other", {"cpu": 4000}, 0.0)
    assert head_names(m.heads(ACTIVE)) == ["b"]


def test_is_next_head_names_the_head_a_pending_penalty_moves_to_the_top() -> None:
    """``is_next_head`` names what the next :meth:`QueueManager.heads` pops (the controllers hold a
    cycle back while a status write of that workload is in flight): with a pending AFS entry
    penalty that pop re-sorts the heap first (``ClusterQueue.Pop``), so the head is the one the
    re-sorted order puts first, not the heap's stale top. It reads; the heap is not re-sorted."""
    m = _afs_manager_a_then_b()
    assert m.is_next_head("default/a") and not m.is_next_head("default/b")
    m.afs.push_entry_penalty("default/lq-a", "default/other", {"cpu": 4000}, 0.0)
    assert m.is_next_head("default/b") and not m.is_next_head("default/a")
    # Asking did not re-sort the heap: its stale top is still the penalised LocalQueue's.
    pending = m.cluster_queue("cq")
    assert pending is not None and (top := pending.active.peek()) is not None and top.info.key == "default/a"
    assert head_names(m.heads(ACTIVE)) == ["b"]


def test_afs_weight_change_resorts_the_heap_heads() -> None:
    """``ClusterQueue.UpdateLocalQueueWeight`` re-heapifies: the next pop reflects a new weight
    (the pending listing sorts afresh, so it alone cannot tell)."""
    m = _afs_manager_a4_b2()
    heavy_b = lq_obj("lq-b", "cq")
    heavy_b.spec.fair_sharing = FairSharing(weight="0.25")  # usage 2 / 0.25 = 8 > 4
    m.update_local_queue(heavy_b)
    assert head_names(m.heads(ACTIVE)) == ["a"]
