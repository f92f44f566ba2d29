"""Upstream ``pkg/cache/queue`` unit-test tables (``cluster_queue_test.go``, ``manager_test.go``),
ported case by case (ids are upstream's case names, or the test function's name for single-case
tests) on pykueue's queue manager (:mod:`pykueue.core.queue`). Where upstream drives an internal of
its ClusterQueue (``handleInadmissibleHash``, ``hashToBulkMoveReason``, ``popCycle``) the same
internal of :class:`~pykueue.core.queue.PendingClusterQueue` is used (``_bulk_move``,
``hash_to_bulk_move_reason``, ``pop_cycle``); otherwise the manager's public methods.

Already covered in tests/core/test_queue_manager.py under the same or another name (not repeated):
TestStrictFIFORequeueIfNotPresent (test_strict_fifo_requeue_if_not_present), TestFIFOClusterQueue
(test_fifo_cluster_queue_update_reorders), TestStrictFIFO (test_strict_fifo), Test_PushOrUpdate
(test_push_or_update), TestPushOrUpdateGenerationChanged, TestPushOrUpdateSkipsInflightWorkload
(test_push_or_update_while_inflight_is_ignored), TestQueueInadmissibleWorkloadsDuringScheduling,
TestBackoffWaitingTimeExpired, TestRequeueHashTriggerByReason, TestClusterQueueImpl (but for
the three flush-count cases below), TestBestEffortFIFORequeueIfNotPresent (test_best_effort_fifo_requeue_if_not_present, with
upstream's wantSticky), TestRequeueWorkloadsCohortCycle, TestUpdateClusterQueue
(test_update_cluster_queue_moves_to_cohort_and_retries), TestUpdateWorkload, TestHeads,
TestUpdateLocalQueue (test_update_local_queue_moves_workloads), TestDeleteWorkload and
TestDeleteAndForgetWorkload (test_delete_workload_keeps_or_forgets_assignment).

not ported:
- TestPendingResourcesAfterLocalQueueResync, TestClusterQueuePendingTrackers,
  TestPendingInLocalQueueCountsInflight — upstream's incremental pending-resources total and
  per-label trackers (metrics); pykueue computes the total when metrics are read (TestPendingResources
  below), and the one-bucket invariant they also check is test_queue_manager.py::test_cluster_queue_invariants.
- TestClusterQueueToActive, TestHeadsAsync, TestHeadsCancelled*, TestSnapshot*Concurrent*,
  TestSnapshotConcurrentWithRequeueNoDataRace, TestAddLocalQueue_DRAReconcileChannelGuaranteedDelivery
  — Go condition variables, channels and data races; pykueue's ``heads`` takes the ClusterQueue's
  activeness from the cache and never blocks.
- TestSnapshotDeterministicOrder, TestSnapshotConsistentUnderConcurrentStickyChange — the lock-free
  Snapshot sort of Kueue#12740; pykueue's ``sorted_pending`` is one sort by a total key (ties end on
  the workload key), whose agreement with the heap test_cluster_queue_invariants checks. Test_Info —
  the heap lookup, ``PendingClusterQueue.active.get``, used by every test here.
- TestQueueSecondPassIfNeeded — Topology Aware Scheduling's second pass (delayed topology requests)
  is not implemented.
- TestResync*GaugeMetrics, TestPendingResourceMetrics, TestUpdateUnadmittedWorkload*,
  TestDeleteLocalQueue_UnadmittedWorkloads — metrics.
- TestSnapshotFallsBackToBaseOrderingOnLocalQueueLookupError, TestHeapOrderingStableOnLocalQueueLookupError,
  TestSnapshotUsesDefaultWeightForMissingLocalQueue — failures of the API client's LocalQueue lookup;
  pykueue reads the weights it caches and has no lookup that can fail.
- inadmissible_workloads_test.go (TestInadmissibleWorkloads_Get/Insert/Delete/Len/Empty) — the Go map
  wrapper ``inadmissibleWorkloads``; pykueue's is a plain ``dict``. TestNewRequeuer — the batch period
  option (pykueue's is the constant ``RETRY_BATCH_PERIOD``, checked by the retry tests of
  test_queue_manager.py).
- scheduling_hash_counts_test.go — the per-hash pending counts behind a metric (the bulk-move
  decisions they accompany are TestRecordInadmissibleHash and the tests after it).
- TestAddOrUpdateWorkloadCarriesLastAssignment's "carried by reference" check — Go aliasing; pykueue
  never mutates a recorded ``LastAssignment`` (each cycle builds a new one).

The last two tests are not upstream cases: each is a manager-level scenario of an upstream rule
that pykueue did not follow (see their docstrings).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from types import SimpleNamespace

import pytest
from msgspec.structs import replace as sreplace
from test_queue_manager import (
    ACTIVE,
    NAMESPACE_LABELS,
    NOW,
    OPTS,
    SELECTOR,
    W,
    cohort_obj,
    cond,
    cq_obj,
    gates,
    info,
    lq_obj,
    pending_cq,
    pop_order,
    wl,
)

from pykueue.api.config import AdmissionFairSharingConfig
from pykueue.api.kueue import Admission, FairSharing, LocalQueue, Workload
from pykueue.api.meta import label_selector_matches
from pykueue.core.cache.cache import Cache
from pykueue.core.options import SchedulerOptions
from pykueue.core.queue import (
    REQUEUE_REASON_FAILED_AFTER_NOMINATION,
    REQUEUE_REASON_GENERIC,
    REQUEUE_REASON_NAMESPACE_MISMATCH,
    REQUEUE_REASON_NO_FIT,
    REQUEUE_REASON_PENDING_PREEMPTION,
    REQUEUE_REASON_PREEMPTION_NO_CANDIDATES,
    PendingClusterQueue,
    QueueManager,
)
from pykueue.core.workload.info import LastAssignment, WorkloadInfo
from pykueue.metrics.state import _pending_requests

EVERYTHING: Callable[[str], bool] = lambda _ns: True  # noqa: E731  (``labels.Everything()``)


def hashed(name: str, scheduling_hash: str, created: float = 0.0) -> WorkloadInfo:
    """A workload's info with upstream's test-set ``SchedulingHash``."""
    i = info(wl(name, created=created))
    i.scheduling_hash = scheduling_hash
    return i


def pending(cq: PendingClusterQueue) -> tuple[int, int]:
    """Upstream ``ClusterQueue.Pending``: (active incl. inflight, inadmissible)."""
    return len(cq.active) + len(cq.inflight), len(cq.inadmissible)


def pending_hashes(cq: PendingClusterQueue) -> tuple[int, int]:
    """Upstream ``PendingSchedulingHashes``: distinct hashes among active and inadmissible."""
    return (
        len({e.info.scheduling_hash for e in cq.active.items()}),
        len({e.info.scheduling_hash for e in cq.inadmissible.values()}),
    )


def bare_manager(options: SchedulerOptions = OPTS, cache: Cache | None = None) -> QueueManager:
    """``NewManagerForUnitTests``: no queues; every namespace known and labelled alike."""
    m = QueueManager(options, tree=cache)
    for ns in ("", "default", "earth", "mars", "moon"):
        m.set_namespace_labels(ns, {})
    return m


def cq_of(m: QueueManager, name: str) -> PendingClusterQueue:
    cq = m.cluster_queue(name)
    assert cq is not None
    return cq


def dump(m: QueueManager) -> dict[str, list[str]]:
    """Upstream ``Manager.Dump``: the heap keys of each ClusterQueue with a non-empty heap."""
    return {n: sorted(cq_of(m, n).active.keys()) for n in m.cluster_queue_names() if cq_of(m, n).active}


def dump_inadmissible(m: QueueManager) -> dict[str, list[str]]:
    """Upstream ``Manager.DumpInadmissible``."""
    return {n: sorted(cq_of(m, n).inadmissible) for n in m.cluster_queue_names() if cq_of(m, n).inadmissible}


# --- cluster_queue_test.go -------------------------------------------------------------------------


def test_pop() -> None:
    """``Test_Pop``."""
    cq = pending_cq()
    assert cq.pop() is None
    cq.push_or_update(info(wl("workload-1", created=0)), NOW)
    cq.push_or_update(info(wl("workload-2", created=1)), NOW)
    assert (e := cq.pop()) is not None and e.info.name == "workload-1"
    assert (e := cq.pop()) is not None and e.info.name == "workload-2"
    assert cq.pop() is None


def test_delete() -> None:
    """``Test_Delete``: deletion goes by key only."""
    cq = pending_cq()
    wl1, wl2 = wl("workload-1"), wl("workload-2")
    cq.push_or_update(info(wl1), NOW)
    cq.push_or_update(info(wl2), NOW)
    assert cq.pending_total() == 2
    cq.delete(info(wl1).key)
    assert cq.pending_total() == 1
    changed = sreplace(wl2, spec=sreplace(wl2.spec, queue_name="default"))
    cq.delete(info(changed).key)
    assert cq.pending_total() == 0


@pytest.mark.parametrize(
    ("add", "inadmissible", "want_moved", "want_active", "want_pending"),
    [
        pytest.param(
            [],
            ["w1", "w2"],
            2,
            ["w1", "w2"],
            2,
            id="re-queue multiple inadmissible workloads and count",
        ),
        pytest.param(
            ["w1"],
            ["w2", "w3"],
            1,
            ["w1", "w2"],
            3,
            id="count only workloads that actually moved",
        ),
        pytest.param(
            ["w2"],
            ["w2"],
            0,
            ["w2"],
            1,
            id="workload already on heap is not made inadmissible",
        ),
    ],
)
def test_cluster_queue_impl_flush_counts(
    add: list[str], inadmissible: list[str], want_moved: int, want_active: list[str], want_pending: int
) -> None:
    """``TestClusterQueueImpl``'s cases on how many workloads ``queueInadmissibleWorkloads`` moved
    (the namespace selector admits ns1 and ns2, not ns3)."""
    cq = pending_cq(selector=SELECTOR)
    for k in add:
        cq.push_or_update(info(W[k]), NOW)
    for k in inadmissible:
        cq.requeue_if_not_present(info(W[k]), REQUEUE_REASON_GENERIC, "", NOW)
    namespace_matches = lambda ns: label_selector_matches(SELECTOR, NAMESPACE_LABELS[ns])  # noqa: E731
    assert cq.flush_inadmissible(namespace_matches, NOW) == want_moved
    assert sorted(cq.active.keys()) == sorted(info(W[k]).key for k in want_active)
    assert cq.pending_total() == want_pending


def test_add_from_local_queue() -> None:
    """``Test_AddFromLocalQueue``: a tracked workload is not added again (``PushActiveIfNotPresent``)."""
    cq = pending_cq()
    w_info = info(wl("workload-1"))
    cq.push_or_update(w_info, NOW)
    assert not cq.push_if_absent(w_info)
    cq.delete(w_info.key)
    assert cq.push_if_absent(w_info)


def test_delete_from_local_queue() -> None:
    """``Test_DeleteFromLocalQueue``: deleting a LocalQueue drops its heap and inadmissible workloads."""
    m = bare_manager()
    m.add_cluster_queue(cq_obj("cq"))
    lq = lq_obj("foo", "cq", ns="")
    m.add_local_queue(lq)
    for name in ("wl1", "wl2"):
        assert m.add_or_update_workload(wl(name, ns="", queue="foo"), NOW)
    for name in ("wl3", "wl4"):
        w = wl(name, ns="", queue="foo")
        assert m.requeue_workload(info(w), REQUEUE_REASON_GENERIC, "", NOW, w)
    cq = cq_of(m, "cq")
    assert cq.pending_total() == 4 and len(cq.inadmissible) == 2
    m.delete_local_queue(lq)
    assert cq.pending_total() == 0


def test_pending_resources() -> None:
    """``TestPendingResources``: the requests of the heap, inadmissible and inflight workloads
    (``PendingResources``, pykueue's ``metrics.state._pending_requests``; cpu in millis)."""
    no_resource_groups = SimpleNamespace(resource_groups=[])
    cq = pending_cq()
    assert _pending_requests(no_resource_groups, cq) == {}

    def with_memory(name: str, cpu: str, memory: str) -> WorkloadInfo:
        w = wl(name, cpu=cpu)
        w.spec.pod_sets[0].template.spec["containers"][0]["resources"]["requests"]["memory"] = memory
        return info(w)

    cq.push_or_update(with_memory("wl1", "2", "1Gi"), NOW)
    cq.push_or_update(with_memory("wl3", "3", "2Gi"), NOW)
    cq.requeue_if_not_present(with_memory("wl2", "1", "512Mi"), REQUEUE_REASON_GENERIC, "", NOW)
    assert cq.pop() is not None
    assert _pending_requests(no_resource_groups, cq) == {"cpu": 6000, "memory": (3 * 1024 + 512) * 2**20}


def test_cluster_queue_is_preemptor() -> None:
    """``TestClusterQueueIsPreemptor``: the record holds the requeued info's evaluated generation."""
    cq = pending_cq()
    w = wl("wl", generation=1)
    w_info = info(w)
    w_info.last_evaluated_generation = 1
    other = info(wl("other"))
    assert not cq.is_preemptor(w_info.key, w_info.obj.metadata.generation)
    cq.requeue_if_not_present(w_info, REQUEUE_REASON_PENDING_PREEMPTION, "", NOW)
    assert cq.is_preemptor(w_info.key, w_info.obj.metadata.generation)
    assert not cq.is_preemptor(other.key, other.obj.metadata.generation)
    modified = info(sreplace(w, metadata=sreplace(w.metadata, generation=2)))
    assert not cq.is_preemptor(modified.key, modified.obj.metadata.generation)


@pytest.mark.parametrize(
    ("hash_to_record", "heap_workloads", "want_moved", "want_active", "want_inadmissible"),
    [
        pytest.param(
            "gpu-class",
            {
                "gpu-1": "gpu-class",
                "gpu-2": "gpu-class",
                "gpu-3": "gpu-class",
                "cpu-1": "cpu-class",
                "cpu-2": "cpu-class",
            },
            3,
            2,
            3,
            id="bulk-moves matching workloads",
        ),
        pytest.param("", {"wl-1": "some-hash"}, 0, 1, 0, id="no-op for empty hash"),
        pytest.param(
            "nonexistent", {"wl-1": "hash-a", "wl-2": "hash-b"}, 0, 2, 0, id="no-op when no workloads match"
        ),
    ],
)
def test_record_inadmissible_hash(
    hash_to_record: str,
    heap_workloads: dict[str, str],
    want_moved: int,
    want_active: int,
    want_inadmissible: int,
) -> None:
    """``TestRecordInadmissibleHash`` (``handleInadmissibleHash``)."""
    cq = pending_cq()
    for i, (name, h) in enumerate(heap_workloads.items()):
        cq.push_or_update(hashed(name, h, created=i), NOW)
    assert cq._bulk_move(hash_to_record, "dummy-reason") == want_moved
    assert pending(cq) == (want_active, want_inadmissible)


@pytest.mark.parametrize(
    ("inadmissible_hashes", "push_hash", "want_active", "want_inadmissible"),
    [
        pytest.param(["blocked"], "blocked", 0, 1, id="workload with blocked hash goes to inadmissible"),
        pytest.param(["blocked"], "allowed", 1, 0, id="workload with non-blocked hash goes to heap"),
    ],
)
def test_push_or_update_respects_inadmissible_hashes(
    inadmissible_hashes: list[str], push_hash: str, want_active: int, want_inadmissible: int
) -> None:
    """``TestPushOrUpdateRespectsInadmissibleHashes``."""
    cq = pending_cq()
    for h in inadmissible_hashes:
        cq.hash_to_bulk_move_reason[h] = "dummy-reason"
    cq.push_or_update(hashed("wl", push_hash), NOW)
    assert pending(cq) == (want_active, want_inadmissible)


def test_queue_inadmissible_workloads_clears_hashes() -> None:
    """``TestQueueInadmissibleWorkloadsClearsHashes``."""
    cq = pending_cq(options=gates(SchedulingEquivalenceHashing=True))
    cq.push_or_update(hashed("wl", "test-hash"), NOW)
    cq._bulk_move("test-hash", "dummy-reason")
    assert "test-hash" in cq.hash_to_bulk_move_reason
    assert pending_hashes(cq) == (0, 1)
    cq.flush_inadmissible(EVERYTHING, NOW)
    assert "test-hash" not in cq.hash_to_bulk_move_reason
    assert pending(cq) == (1, 0)
    assert pending_hashes(cq) == (1, 0)


@pytest.mark.parametrize(
    ("condition_reason", "requeue_reason", "delete_from_inadmissible", "want_reason"),
    [
        pytest.param(
            "ExceedsMaxQuota",
            REQUEUE_REASON_NO_FIT,
            False,
            "ExceedsMaxQuota",
            id="records status reason when requeued as NoFit",
        ),
        pytest.param(
            "WaitingForPreemptedWorkloads",
            REQUEUE_REASON_PREEMPTION_NO_CANDIDATES,
            False,
            "WaitingForPreemptedWorkloads",
            id="records status reason when requeued as PreemptionNoCandidates",
        ),
        pytest.param(
            "",
            REQUEUE_REASON_NO_FIT,
            False,
            "PendingEvaluation",
            id="falls back to PendingEvaluation if no status condition is present",
        ),
        pytest.param(
            "ExceedsMaxQuota",
            REQUEUE_REASON_NO_FIT,
            True,
            None,
            id="returns false if workload is not in inadmissibleWorkloads",
        ),
        pytest.param(
            "ExceedsMaxQuota",
            REQUEUE_REASON_NAMESPACE_MISMATCH,
            False,
            None,
            id="returns false if requeued with non-capacity reason",
        ),
    ],
)
def test_get_no_fit_reason(
    condition_reason: str, requeue_reason: str, delete_from_inadmissible: bool, want_reason: str | None
) -> None:
    """``TestGetNoFitReason`` (``GetNoFitReason`` is ``bulk_move_reason``; None is ``ok == false``)."""
    options = gates(SchedulingEquivalenceHashing=True)
    cq = pending_cq(options=options)
    conditions = (
        [cond("QuotaReserved", "False", condition_reason, message="failed")] if condition_reason else []
    )
    w_info = info(wl("wl", conditions=conditions), options)
    w_info.scheduling_hash = "test-hash"
    cq.requeue_if_not_present(w_info, requeue_reason, condition_reason, NOW)
    if delete_from_inadmissible:
        del cq.inadmissible[w_info.key]
    assert cq.bulk_move_reason(w_info.key) == want_reason


def afs_manager(config: AdmissionFairSharingConfig | None) -> QueueManager:
    return bare_manager(SchedulerOptions(admission_fair_sharing=config))


def weighted_lq(name: str, weight: str | None, cq: str = "cq", ns: str = "default") -> LocalQueue:
    lq = lq_obj(name, cq, ns=ns)
    if weight is not None:
        lq.spec.fair_sharing = FairSharing(weight=weight)
    return lq


GPU = "example.com/gpu"


@pytest.mark.parametrize(
    ("admission_mode", "lq_weights", "afs_config", "consumed", "workloads", "want"),
    [
        pytest.param(
            "UsageBasedAdmissionFairSharing",
            {"lqA": "1", "lqB": "1"},
            AdmissionFairSharingConfig(),
            {"default/lqA": {"cpu": Fraction(2)}, "default/lqB": {"cpu": Fraction(1)}},
            [("wlA-high", "lqA", 2), ("wlB-low", "lqB", 1)],
            "wlB-low",
            id="workloads are ordered by LQ usage, instead of priorities",
        ),
        pytest.param(
            "UsageBasedAdmissionFairSharing",
            {"lqA": "1", "lqB": "1"},
            AdmissionFairSharingConfig(resource_weights={"cpu": 0, GPU: 1}),
            {
                "default/lqA": {"cpu": Fraction(1), GPU: Fraction(10)},
                "default/lqB": {"cpu": Fraction(1000), GPU: Fraction(1)},
            },
            [("wlA-high", "lqA", 2), ("wlB-low", "lqB", 1)],
            "wlB-low",
            id="workloads are ordered by LQ usage with respect to resource weights",
        ),
        pytest.param(
            "UsageBasedAdmissionFairSharing",
            {"lqA": "1", "lqB": "2"},
            AdmissionFairSharingConfig(),
            {"default/lqA": {"cpu": Fraction(10)}, "default/lqB": {"cpu": Fraction(6)}},
            [("wlA-high", "lqA", 2), ("wlB-low", "lqB", 1)],
            "wlB-low",
            id="workloads are ordered by LQ usage with respect to LQs' fair sharing weights",
        ),
        pytest.param(
            "UsageBasedAdmissionFairSharing",
            {"lqA": "1"},
            AdmissionFairSharingConfig(),
            {"default/lqA": {"cpu": Fraction(10)}},
            [("wlA-low", "lqA", 1), ("wlA-high", "lqA", 2)],
            "wlA-high",
            id="workloads with the same LQ usage are ordered by priority",
        ),
        pytest.param(
            "NoAdmissionFairSharing",
            {"lqA": None},
            AdmissionFairSharingConfig(),
            {},
            [("wlA-low", "lqA", 1), ("wlA-high", "lqA", 2)],
            "wlA-high",
            id="workloads with NoFairSharing CQ are ordered by priority",
        ),
        pytest.param(
            "NoAdmissionFairSharing",
            {"lqA": None},
            None,
            {},
            [("wlA-low", "lqA", 1), ("wlA-high", "lqA", 2)],
            "wlA-high",
            id="workloads with no FS config are ordered by priority",
        ),
    ],
)
def test_fs_admission(
    admission_mode: str,
    lq_weights: dict[str, str | None],
    afs_config: AdmissionFairSharingConfig | None,
    consumed: dict[str, dict[str, Fraction]],
    workloads: list[tuple[str, str, int]],
    want: str,
) -> None:
    """``TestFsAdmission``: the head of a ClusterQueue under admission fair sharing."""
    m = afs_manager(afs_config)
    for lq_key, resources in consumed.items():
        m.afs.ledger.set_for_test(lq_key, resources, NOW)
    m.add_cluster_queue(cq_obj("cq", admission_mode=admission_mode))
    for name, weight in lq_weights.items():
        m.add_local_queue(weighted_lq(name, weight))
    for name, queue, priority in workloads:
        assert m.add_or_update_workload(wl(name, queue=queue, priority=priority), NOW)
    (head,) = m.heads(ACTIVE)
    assert head.name == want


# --- manager_test.go -------------------------------------------------------------------------------


def test_add_local_queue_orphans() -> None:
    """``TestAddLocalQueueOrphans``: workloads listed before the LocalQueue exists."""
    reserved = wl("d", ns="earth", queue="foo", conditions=[cond("QuotaReserved", "True", "AdmittedByTest")])
    reserved.status.admission = Admission(cluster_queue="cq")
    inactive = wl("e", ns="earth", queue="foo")
    inactive.spec.active = False
    existing = [
        wl("a", ns="earth", queue="foo"),
        wl("b", ns="earth", queue="bar"),
        wl("c", ns="earth", queue="foo"),
        reserved,
        inactive,
        wl("f", ns="earth", queue="foo", conditions=[cond("Finished", "True", "ByTest")]),
        wl("a", ns="moon", queue="foo"),
    ]
    m = bare_manager()
    m.add_local_queue(lq_obj("foo", "", ns="earth"), existing)
    assert m.local_queue_workload_keys("earth/foo") == ["earth/a", "earth/c"]
    assigned = {f"{w.metadata.namespace}/{w.metadata.name}" for w in existing}
    assert {k: v for k in sorted(assigned) if (v := m.assigned_local_queue(k)) is not None} == {
        "earth/a": "earth/foo",
        "earth/c": "earth/foo",
        "earth/d": "earth/foo",
        "earth/e": "earth/foo",
        "earth/f": "earth/foo",
    }


def test_add_cluster_queue_orphans() -> None:
    """``TestAddClusterQueueOrphans``: a re-created ClusterQueue adopts its LocalQueues' workloads."""
    reserved = wl("c", ns="", queue="foo", conditions=[cond("QuotaReserved", "True", "AdmittedByTest")])
    reserved.status.admission = Admission(cluster_queue="cq")
    listed = [
        wl("a", ns="", queue="foo", created=1),
        wl("b", ns="", queue="bar", created=0),
        reserved,
        wl("d", ns="", queue="baz"),
    ]
    m = bare_manager()
    cq = cq_obj("cq")
    m.add_cluster_queue(cq)
    for name in ("foo", "bar"):
        m.add_local_queue(lq_obj(name, "cq", ns=""), listed)
    assert dump(m) == {"cq": ["/a", "/b"]}
    m.delete_cluster_queue(cq)
    assert dump(m) == {}
    m.add_cluster_queue(cq)
    assert pop_order(cq_of(m, "cq")) == ["b", "a"]


def test_delete_local_queue() -> None:
    """``TestDeleteLocalQueue``: a deleted LocalQueue's workloads leave its ClusterQueue."""
    m = bare_manager()
    m.add_cluster_queue(cq_obj("cq"))
    lq = lq_obj("foo", "cq", ns="")
    m.add_local_queue(lq, [wl("a", ns="", queue="foo")])
    assert dump(m) == {"cq": ["/a"]}
    m.delete_local_queue(lq)
    assert dump(m) == {}


ROOT_TREE = [cohort_obj("root"), cohort_obj("child1", "root"), cohort_obj("child2", "root")]
CYCLE = [
    cohort_obj("cohort-a", "cohort-b"),
    cohort_obj("cohort-b", "cohort-c"),
    cohort_obj("cohort-c", "cohort-a"),
]


@pytest.mark.parametrize(
    (
        "cohorts",
        "cluster_queues",
        "local_queues",
        "workloads",
        "want_inadmissible",
        "want_active",
        "want_moved",
    ),
    [
        pytest.param(
            ROOT_TREE,
            [("cq1", "child1"), ("cq2", "child2")],
            [("foo", "cq1"), ("bar", "cq2")],
            [("a", "foo", 0), ("b", "bar", 1)],
            {},
            {"cq1": ["default/a"], "cq2": ["default/b"]},
            2,
            id="deduplication with shared root",
        ),
        pytest.param(
            ROOT_TREE,
            [("cq1", "child1"), ("cq2", "child1"), ("cq3", "child2")],
            [("q1", "cq1"), ("q2", "cq2"), ("q3", "cq3")],
            [("a", "q1", 0), ("b", "q2", 1), ("c", "q3", 2), ("d", "q3", 3)],
            {},
            {"cq1": ["default/a"], "cq2": ["default/b"], "cq3": ["default/c", "default/d"]},
            4,
            id="cohort subtree aggregates count across multiple cluster queues",
        ),
        pytest.param(
            CYCLE,
            [("cq1", "cohort-a")],
            [("foo", "cq1")],
            [("a", "foo", 0)],
            {"cq1": ["default/a"]},
            {},
            0,
            id="cohort cycle",
        ),
    ],
)
def test_queue_inadmissible_workloads(
    cohorts: list[object],
    cluster_queues: list[tuple[str, str]],
    local_queues: list[tuple[str, str]],
    workloads: list[tuple[str, str, float]],
    want_inadmissible: dict[str, list[str]],
    want_active: dict[str, list[str]],
    want_moved: int,
) -> None:
    """``TestQueueInadmissibleWorkloads``: the retries requested by adding the Cohorts and
    ClusterQueues (``NotifyRetryInadmissible`` once per root, nothing for a cycle) move every
    inadmissible workload of the tree when processed."""
    cache = Cache()
    m = bare_manager(cache=cache)
    for c in cohorts:
        cache.add_or_update_cohort(c)  # type: ignore[arg-type]
        m.notify_cohort(c.metadata.name, NOW)  # type: ignore[attr-defined]
    for name, cohort in cluster_queues:
        cq = cq_obj(name, cohort=cohort)
        cache.add_or_update_cluster_queue(cq)
        m.add_cluster_queue(cq, NOW)
        cq_of(m, name).pop_cycle += 1  # the workloads below are requeued as inadmissible
    for name, cq_name in local_queues:
        m.add_local_queue(lq_obj(name, cq_name))
    for name, queue, created in workloads:
        w = wl(name, queue=queue, created=created)
        m.requeue_workload(info(w), REQUEUE_REASON_GENERIC, "", NOW, w)
    assert m.process_due_requeues(NOW + 1) == want_moved
    assert dump_inadmissible(m) == want_inadmissible
    assert dump(m) == want_active


def _reserved(w: Workload) -> Workload:
    """``ReserveQuotaAt(&Admission{ClusterQueue: "cq"}, now)``: the condition and the admission."""
    w.status.conditions = [cond("QuotaReserved", "True", "AdmittedByTest")]
    w.status.admission = Admission(cluster_queue="cq")
    return w


def admitted_obj(w: Workload) -> Workload:
    w.status.admission = Admission()
    return w


@pytest.mark.parametrize(
    ("workload", "in_client", "in_queue", "want_requeued"),
    [
        pytest.param(wl("wl", ns="", queue="foo"), True, False, True, id="existing queue and obj"),
        pytest.param(wl("wl", ns="", queue="baz"), True, False, False, id="non existing queue"),
        pytest.param(wl("wl", ns="", queue="bar"), True, False, False, id="non existing cluster queue"),
        pytest.param(wl("wl", ns="", queue="foo"), False, False, False, id="not in client"),
        pytest.param(
            _reserved(wl("wl", ns="", queue="foo")),
            True,
            True,
            False,
            id="has no quota reservation",
        ),
        pytest.param(
            wl("wl", ns="", queue="foo", conditions=[cond("Finished", "True", "ByTest")]),
            True,
            True,
            False,
            id="finished",
        ),
        pytest.param(
            sreplace(wl("wl", ns="", queue="foo"), spec=sreplace(wl("wl", queue="foo").spec, active=False)),
            True,
            True,
            False,
            id="deactivated",
        ),
        pytest.param(wl("wl", ns="", queue="foo"), True, True, False, id="already in queue"),
        pytest.param(admitted_obj(wl("wl", ns="", queue="foo")), True, True, False, id="already admitted"),
    ],
)
def test_requeue_workload_strict_fifo(
    workload: Workload, in_client: bool, in_queue: bool, want_requeued: bool
) -> None:
    """``TestRequeueWorkloadStrictFIFO`` (upstream's ClusterQueue there is ``MakeClusterQueue``'s
    default, BestEffortFIFO). ``in_client`` is whether ``latest`` is given."""
    m = bare_manager()
    m.add_cluster_queue(cq_obj("cq"))
    m.add_local_queue(lq_obj("foo", "cq", ns=""))
    m.add_local_queue(lq_obj("bar", "", ns=""))
    if in_queue:
        m.add_or_update_workload(workload, NOW)
    latest = workload if in_client else None
    assert m.requeue_workload(info(workload), REQUEUE_REASON_GENERIC, "", NOW, latest) == want_requeued


@pytest.mark.parametrize(
    ("workload", "want_ok", "want_assigned"),
    [
        pytest.param(
            wl("finished", ns="earth", queue="foo", conditions=[cond("Finished", "True", "ByTest")]),
            False,
            {},
            id="finished",
        ),
        pytest.param(
            sreplace(
                wl("inactive", ns="earth", queue="foo"),
                spec=sreplace(wl("x", queue="foo").spec, active=False),
            ),
            False,
            {},
            id="inactive",
        ),
        pytest.param(
            _reserved(wl("quota_already_reserved", ns="earth", queue="foo")),
            False,
            {},
            id="quota_already_reserved",
        ),
        pytest.param(
            wl("existing_queue", ns="earth", queue="foo"),
            True,
            {"earth/existing_queue": "earth/foo"},
            id="existing_queue",
        ),
        pytest.param(wl("non_existing_queue", ns="earth", queue="baz"), False, {}, id="non_existing_queue"),
        pytest.param(
            wl("non_existing_cluster_queue", ns="mars", queue="bar"),
            False,
            {"mars/non_existing_cluster_queue": "mars/bar"},
            id="non_existing_cluster_queue",
        ),
        pytest.param(wl("wrong_namespace", ns="mars", queue="foo"), False, {}, id="wrong_namespace"),
        pytest.param(
            wl("non_existing_local_queue", ns="earth", queue="baz"), False, {}, id="non_existing_local_queue"
        ),
    ],
)
def test_add_workload(workload: Workload, want_ok: bool, want_assigned: dict[str, str]) -> None:
    """``TestAddWorkload`` (``wantErr == nil`` is ``add_or_update_workload``'s True)."""
    m = bare_manager()
    m.add_cluster_queue(cq_obj("cq"))
    m.add_local_queue(lq_obj("foo", "cq", ns="earth"))
    m.add_local_queue(lq_obj("bar", "", ns="mars"))
    assert m.add_or_update_workload(workload, NOW) == want_ok
    key = f"{workload.metadata.namespace}/{workload.metadata.name}"
    got = m.assigned_local_queue(key)
    assert ({key: got} if got is not None else {}) == want_assigned


@pytest.mark.parametrize(
    ("queue", "want_pending", "want_exists"),
    [
        pytest.param("foo", 3, True, id="foo"),
        pytest.param("bar", 1, True, id="bar"),
        pytest.param("fake", 0, False, id="fake"),
    ],
)
def test_status(queue: str, want_pending: int, want_exists: bool) -> None:
    """``TestStatus``: the pending count of a LocalQueue whose ClusterQueue does not exist
    (``ErrLocalQueueDoesNotExistOrInactive`` is ``has_local_queue`` false)."""
    m = bare_manager()
    m.add_local_queue(lq_obj("foo", "fooCq", ns=""))
    m.add_local_queue(lq_obj("bar", "barCq", ns=""))
    for name, q, created in (("a", "foo", 3600), ("b", "bar", 0), ("c", "foo", 0), ("d", "foo", 0)):
        m.add_or_update_workload(wl(name, ns="", queue=q, created=created), NOW)
    assert m.has_local_queue(f"/{queue}") == want_exists
    assert m.pending_count_local_queue(f"/{queue}") == want_pending


@pytest.mark.parametrize(
    ("cq_name", "want"),
    [
        pytest.param("invalid", [], id="Invalid ClusterQueue name"),
        pytest.param("cq", ["a", "b"], id="ClusterQueue with 2 pending workloads"),
    ],
)
def test_get_pending_workloads_info(cq_name: str, want: list[str]) -> None:
    """``TestGetPendingWorkloadsInfo`` (``PendingWorkloadsInfo`` is ``pending_workloads``)."""
    m = bare_manager()
    m.add_cluster_queue(cq_obj("cq"))
    m.add_local_queue(lq_obj("foo", "cq", ns=""))
    for name, created in (("a", 0), ("b", 1)):
        assert m.add_or_update_workload(wl(name, ns="", queue="foo", created=created), NOW)
    assert [(i.name, i.obj.spec.queue_name) for i in m.pending_workloads(cq_name)] == [
        (n, "foo") for n in want
    ]


PENDING = [{"cpu": 1}]
EXHAUSTED = [{"cpu": -1}]


@pytest.mark.parametrize(
    ("preserve_progress", "inadmissible", "inflight", "change_shape", "recorded", "want_carried"),
    [
        pytest.param(True, False, False, False, PENDING, True, id="tracked in the heap"),
        pytest.param(True, True, False, False, EXHAUSTED, True, id="tracked in inadmissibleWorkloads"),
        pytest.param(
            False, False, False, False, PENDING, False, id="without the gate the progress is dropped"
        ),
        pytest.param(
            False,
            True,
            False,
            False,
            EXHAUSTED,
            False,
            id="without the gate the progress is dropped for an inadmissible workload",
        ),
        pytest.param(True, False, True, False, PENDING, True, id="tracked as inflight"),
        pytest.param(
            False,
            False,
            True,
            False,
            PENDING,
            False,
            id="without the gate the progress is dropped for an inflight workload",
        ),
        pytest.param(
            True, False, False, True, PENDING, False, id="a changed scheduling shape is not carried"
        ),
    ],
)
def test_add_or_update_workload_carries_last_assignment(
    preserve_progress: bool,
    inadmissible: bool,
    inflight: bool,
    change_shape: bool,
    recorded: list[dict[str, int]],
    want_carried: bool,
) -> None:
    """``TestAddOrUpdateWorkloadCarriesLastAssignment``."""
    m = bare_manager(gates(FlavorFungibilityPreserveScanProgress=preserve_progress))
    m.add_cluster_queue(cq_obj("cq"))
    m.add_local_queue(lq_obj("lq", "cq", ns=""))
    w = wl("wl", ns="", queue="lq")
    assert m.add_or_update_workload(w, NOW)
    cq = cq_of(m, "cq")
    key = "/wl"
    entry = cq.tracked(key)
    assert entry is not None
    tracked = entry.info
    last = LastAssignment([dict(d) for d in recorded], 3, 7, tracked.scheduling_hash)
    tracked.last_assignment = last
    if inadmissible or inflight:
        assert cq.pop() is not None
    if inadmissible:
        assert cq.requeue_if_not_present(tracked, REQUEUE_REASON_NO_FIT, "", NOW)
        assert key in cq.inadmissible
    updated = sreplace(w, metadata=sreplace(w.metadata, labels={"updated": "true"}))
    if change_shape:
        pod_set = sreplace(w.spec.pod_sets[0], count=w.spec.pod_sets[0].count + 3)
        updated = sreplace(updated, spec=sreplace(w.spec, pod_sets=[pod_set]))
    assert m.add_or_update_workload(updated, NOW)
    if inflight:
        got = m._lqs["/lq"].items[key]
    else:
        got_entry = cq.tracked(key)
        assert got_entry is not None
        got = got_entry.info
    assert got.obj is updated
    assert got.last_assignment == (last if want_carried else None)


def afs_weight_manager() -> QueueManager:
    """``WithAdmissionFairSharing`` with resource weights ``{cpu: 1}`` (the AdmissionFairSharing gate is on by default)."""
    config = AdmissionFairSharingConfig(resource_weights={"cpu": 1})
    return bare_manager(SchedulerOptions(admission_fair_sharing=config))


def test_heads_respect_local_queue_weight_for_preexisting_workloads() -> None:
    """``TestHeadsRespectLocalQueueWeightForPreexistingWorkloads``: a zero-weight LocalQueue known
    before its ClusterQueue adopts its workload is the most disadvantaged (+Inf usage)."""
    m = afs_weight_manager()
    listed = [
        wl("wl-zero", queue="lq-zero", created=0),
        wl("wl-normal", queue="lq-normal", created=1),
    ]
    for lq in (weighted_lq("lq-normal", "1"), weighted_lq("lq-zero", "0")):
        m.add_local_queue(lq, listed)
    for name in ("lq-normal", "lq-zero"):
        m.afs.ledger.set_for_test(f"default/{name}", {"cpu": Fraction(0)}, NOW)
    m.add_cluster_queue(cq_obj("cq", admission_mode="UsageBasedAdmissionFairSharing"))
    assert pop_order(cq_of(m, "cq")) == ["wl-normal", "wl-zero"]


@pytest.mark.parametrize(
    ("workloads", "update", "want"),
    [
        pytest.param(
            [("wl-a", "lq-a"), ("wl-b", "lq-b")],
            ("lq-b", "2"),
            ["wl-b", "wl-a"],
            id="TestUpdateLocalQueueWeightReheapifies",
        ),
        pytest.param(
            [("wl-a1", "lq-a"), ("wl-b1", "lq-b"), ("wl-a2", "lq-a"), ("wl-b2", "lq-b")],
            ("lq-b", "2"),
            ["wl-b1", "wl-b2", "wl-a1", "wl-a2"],
            id="TestUpdateLocalQueueWeightReheapifiesMultipleWorkloads",
        ),
        pytest.param(
            [("wl-a", "lq-a"), ("wl-b", "lq-b")],
            ("lq-a", "0"),
            ["wl-b", "wl-a"],
            id="TestUpdateLocalQueueWeightZeroReheapifies",
        ),
    ],
)
def test_update_local_queue_weight_reheapifies(
    workloads: list[tuple[str, str]], update: tuple[str, str], want: list[str]
) -> None:
    """``TestUpdateLocalQueueWeightReheapifies*``: equal usage (4 cpu) and weight 1, so creation order;
    a LocalQueue weight change through ``UpdateLocalQueue`` re-sorts every affected workload."""
    m = afs_weight_manager()
    m.add_cluster_queue(cq_obj("cq", admission_mode="UsageBasedAdmissionFairSharing"))
    for name in ("lq-a", "lq-b"):
        m.add_local_queue(weighted_lq(name, "1"))
        m.afs.ledger.set_for_test(f"default/{name}", {"cpu": Fraction(4)}, NOW)
    for i, (name, queue) in enumerate(workloads):
        assert m.add_or_update_workload(wl(name, queue=queue, created=i), NOW)
    m.update_local_queue(weighted_lq(*update))
    assert pop_order(cq_of(m, "cq")) == want


def test_requeue_into_another_cluster_queue_keeps_the_evaluated_generation() -> None:
    """``ClusterQueue.requeueIfNotPresent`` stores the requeued info with its
    ``LastEvaluatedGeneration`` (set by ``PopActive``) even when the workload was popped from another
    ClusterQueue (its LocalQueue moved meanwhile). Its watch event with the newer generation then
    finds ``specChangedSinceEval`` in ``PushOrUpdate`` and leaves ``inadmissible`` for the heap."""
    m = bare_manager()
    for name in ("cq1", "cq2"):
        m.add_cluster_queue(cq_obj(name))
    m.add_local_queue(lq_obj("foo", "cq1"))
    m.add_local_queue(lq_obj("bar", "cq2"))
    first = wl("a", queue="foo", generation=1)
    assert m.add_or_update_workload(first, NOW)
    (head,) = m.heads(ACTIVE)
    assert head.last_evaluated_generation == 1
    moved = wl("a", queue="bar", generation=2)
    cq_of(m, "cq2").pop_cycle += 1  # no retry since: the requeue parks it
    assert m.requeue_workload(head, REQUEUE_REASON_GENERIC, "", NOW, moved)
    assert dump_inadmissible(m) == {"cq2": ["default/a"]}
    assert m.add_or_update_workload(moved, NOW)
    assert dump(m) == {"cq2": ["default/a"]} and dump_inadmissible(m) == {}


def test_carried_last_assignment_must_match_its_recorded_shape() -> None:
    """``Manager.AddOrUpdateWorkloadWithoutLock`` carries the tracked ``LastAssignment`` only when
    ``MatchesSchedulingShape`` of the new info's hash: the hash the assignment was recorded for, not
    the tracked info's. After a head's shape changed between its pop and its requeue (the requeue
    refreshes the info's hash but keeps the recorded progress), the watch event of that object
    does not carry progress recorded for the old shape."""
    m = bare_manager()
    m.add_cluster_queue(cq_obj("cq"))
    m.add_local_queue(lq_obj("lq", "cq"))
    assert m.add_or_update_workload(wl("a", cpu="1", generation=1), NOW)
    (head,) = m.heads(ACTIVE)
    head.last_assignment = LastAssignment([{"cpu": -1}], 3, 7, head.scheduling_hash)
    reshaped = wl("a", cpu="2", generation=2)
    assert m.requeue_workload(head, REQUEUE_REASON_NO_FIT, "", NOW, reshaped)
    assert head.scheduling_hash != head.last_assignment.scheduling_hash  # type: ignore[union-attr]
    assert m.add_or_update_workload(reshaped, NOW)
    entry = cq_of(m, "cq").tracked("default/a")
    assert entry is not None and entry.info.obj is reshaped
    assert entry.info.last_assignment is None


def test_requeue_after_the_local_queue_moved_to_another_cluster_queue() -> None:
    """``Manager.RequeueWorkload`` requeues a head into the ClusterQueue its LocalQueue names now:
    ``UpdateLocalQueue`` moved the LocalQueue's pending workloads (``DeleteFromLocalQueue``,
    ``AddFromLocalQueue``) but not the head the scheduler had popped, which its failed admission
    (``Scheduler.admit`` → ``requeueAndUpdate``) still requeues. pykueue's ``KueueCore.forget_admission``
    finds that head through ``QueueManager.inflight``, which lost it when the LocalQueue moved, so
    the workload was dropped from the queues."""
    m = bare_manager()
    for name in ("cq1", "cq2"):
        m.add_cluster_queue(cq_obj(name))
    m.add_local_queue(lq_obj("foo", "cq1"))
    first = wl("a", queue="foo", generation=1)
    assert m.add_or_update_workload(first, NOW)
    (head,) = m.heads(ACTIVE)
    m.update_local_queue(lq_obj("foo", "cq2"))
    assert m.inflight("default/a") is head
    assert m.requeue_workload(head, REQUEUE_REASON_FAILED_AFTER_NOMINATION, "", NOW, first)
    assert dump(m) == {"cq2": ["default/a"]} and dump_inadmissible(m) == {}
    assert m.inflight("default/a") is None


def test_requeue_after_the_cluster_queue_was_deleted_and_created_again() -> None:
    """Upstream's scheduler still holds a head whose ClusterQueue was deleted (``DeleteClusterQueue``
    drops the queue and its inflight set, not the LocalQueue's items); its failed admission's
    ``RequeueWorkload`` adds it to its LocalQueue (``addWorkload``) and returns false, so the
    re-created ClusterQueue adopts it (``AddFromLocalQueue``). pykueue's ``KueueCore.forget_admission``
    finds the head through ``QueueManager.inflight``; it lost the head with the ClusterQueue, so the
    workload was missing from the re-created one."""
    m = bare_manager()
    m.add_cluster_queue(cq_obj("cq1"))
    m.add_local_queue(lq_obj("foo", "cq1"))
    first = wl("a", queue="foo", generation=1)
    assert m.add_or_update_workload(first, NOW)
    (head,) = m.heads(ACTIVE)
    m.delete_cluster_queue("cq1")
    assert m.inflight("default/a") is head
    assert not m.requeue_workload(head, REQUEUE_REASON_FAILED_AFTER_NOMINATION, "", NOW, first)
    assert m.inflight("default/a") is None
    m.add_cluster_queue(cq_obj("cq1"))
    assert dump(m) == {"cq1": ["default/a"]}


def test_moved_heads_are_dropped_by_every_path_that_ends_the_popped_head() -> None:
    """A head kept after its LocalQueue moved (or its ClusterQueue went) is forgotten when the
    workload is deleted, moves to another LocalQueue, is popped again or requeued: nothing is kept
    for a head the scheduler no longer holds."""
    m = bare_manager()
    for name in ("cq1", "cq2", "cq3"):
        m.add_cluster_queue(cq_obj(name))
    workloads: dict[str, Workload] = {}
    for i, n in enumerate(("a", "b", "c", "d")):
        m.add_local_queue(lq_obj(f"lq{n}", f"cq{1 + i % 2}"))
        workloads[n] = wl(n, queue=f"lq{n}", generation=1)
        assert m.add_or_update_workload(workloads[n], NOW)
    heads = {h.key: h for _ in range(2) for h in m.heads(ACTIVE)}
    assert sorted(heads) == ["default/a", "default/b", "default/c", "default/d"]
    for n in ("a", "b", "c"):
        m.update_local_queue(lq_obj(f"lq{n}", "cq3"))
    m.delete_cluster_queue("cq2")
    assert all(m.inflight(key) is head for key, head in heads.items())
    m.delete_workload("default/a", forget=True)
    assert m.inflight("default/a") is None
    b = workloads["b"]
    m.add_local_queue(lq_obj("lqe", "cq1"))
    assert m.add_or_update_workload(sreplace(b, spec=sreplace(b.spec, queue_name="lqe")), NOW)
    assert m.add_or_update_workload(workloads["c"], NOW)
    assert sorted(h.key for h in m.heads(ACTIVE)) == ["default/b", "default/c"]
    assert m.inflight("default/c") is not heads["default/c"]
    m.requeue_workload(heads["default/d"], REQUEUE_REASON_FAILED_AFTER_NOMINATION, "", NOW, workloads["d"])
    assert m.inflight("default/d") is None
    assert m._moved_heads == {}
