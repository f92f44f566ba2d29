"""The workload controller's Admission Fair Sharing entry-penalty lifecycle, ported from upstream
Kueue's ``pkg/controller/core/workload_controller_test.go`` (``TestUpdateSettlesAfsEntryPenalty``,
``TestUpdateAfsConsumedUsage``, ``TestDeleteSubtractsPendingAfsEntryPenalty``,
``TestUpdateDropsUnsettleableAfsEntryPenalty``, ``TestRepeatedAfsSettlementFoldsPenaltyOnce``),
case names verbatim.

Rules ported (upstream ``WorkloadReconciler.Update`` / ``reconcileAfsPenaltiesOnUpdate`` /
``updateAfsConsumedUsage`` / ``Delete``): an active Workload's transition into Admitted in an AFS
ClusterQueue decays the LocalQueue's history (elapsed clamped at zero, the stored timestamp kept
monotonic) and folds exactly its recorded penalty; a repeated settlement folds nothing. A pending
penalty is dropped when the Workload moves to another LocalQueue, is deactivated with its
reservation gone, finishes, or is deleted; it stays when the Workload is evicted back to pending on
the same LocalQueue or deactivated while still holding its reservation.

Upstream's ``Update`` cases drive ``reconciler.Update``; here ``KueueCore.observe`` (the same
steps). ``TestUpdateAfsConsumedUsage`` and ``TestRepeatedAfsSettlementFoldsPenaltyOnce`` call
``updateAfsConsumedUsage`` directly; here ``AdmissionFairSharing.settle`` with the LocalQueue's
admitted usage, which is empty as upstream's (the Workload was never added to the cache).
"""

from __future__ import annotations

import math
from datetime import timedelta
from fractions import Fraction

import msgspec
import pytest
from builders import (
    admitted,
    at,
    cluster_queue,
    flavor,
    flavor_quotas,
    namespace,
    options,
    simulate,
    workload,
)

from pykueue.api.config import AdmissionFairSharingConfig, Duration
from pykueue.api.kueue import AdmissionScope, LocalQueue, LocalQueueSpec, Workload
from pykueue.api.meta import Condition, ObjectMeta
from pykueue.core.queue.afs import UsageLedgerEntry
from pykueue.sim.cluster import SimulatedCluster

NOW = at(3600)
LQ = "ns/lq"
WL = "ns/wl"


def _cluster(half_life: str = "5m", sampling: str = "5m") -> SimulatedCluster:
    cfg = AdmissionFairSharingConfig(
        usage_half_life_time=Duration.parse(half_life), usage_sampling_interval=Duration.parse(sampling)
    )
    cq = cluster_queue("cq", flavor_quotas("rf", cpu="8"))
    cq.spec.admission_scope = AdmissionScope(admission_mode="UsageBasedAdmissionFairSharing")
    lq = LocalQueue(metadata=ObjectMeta(name="lq", namespace="ns"), spec=LocalQueueSpec(cluster_queue="cq"))
    opts = options(gates={"AdmissionFairSharing": True}, admission_fair_sharing=cfg)
    return simulate([namespace("ns"), flavor("rf"), cq, lq], opts, NOW)


def _wl(queue: str = "lq", *, active: bool = True) -> Workload:
    wl = workload("wl", "ns", queue=queue, requests={"cpu": "4"})
    wl.spec.active = active
    return wl


def _reserved(queue: str = "lq", *, active: bool = True, admitted_condition: bool = False) -> Workload:
    return admitted(_wl(queue, active=active), "cq", {"cpu": "rf"}, at_time=NOW, admitted_condition=admitted_condition)


def _finished(wl: Workload) -> Workload:
    cond = Condition(type="Finished", status="True", reason="Succeeded", message="", last_transition_time=NOW)
    return msgspec.structs.replace(wl, status=msgspec.structs.replace(wl.status, conditions=[*wl.status.conditions, cond]))


def _cpu_milli(cluster: SimulatedCluster, lq: str = LQ) -> int:
    entry = cluster.queues.afs.ledger.get(lq)
    assert entry is not None
    return math.ceil(entry.resources.get("cpu", Fraction(0)) * 1000)


# --- TestUpdateSettlesAfsEntryPenalty ---------------------------------------------------------------

SETTLE_CASES = {
    # name: (old, new, want folded, want pending)
    "Pending to Admitted settles the entry penalty": (_wl, lambda: _reserved(admitted_condition=True), True, False),
    "QuotaReserved to Admitted settles the entry penalty": (
        _reserved,
        lambda: _reserved(admitted_condition=True),
        True,
        False,
    ),
    "Pending to QuotaReserved does not settle the entry penalty": (_wl, _reserved, False, True),
    "Admitted to Admitted does not settle the entry penalty again": (
        lambda: _reserved(admitted_condition=True),
        lambda: _reserved(admitted_condition=True),
        False,
        True,
    ),
    "deactivation in the same event does not settle and keeps the record": (
        _reserved,
        lambda: _reserved(active=False, admitted_condition=True),
        False,
        True,
    ),
}


@pytest.mark.parametrize(("old", "new", "folded", "pending"), SETTLE_CASES.values(), ids=list(SETTLE_CASES))
def test_update_settles_afs_entry_penalty(old: object, new: object, folded: bool, pending: bool) -> None:
    cluster = _cluster(half_life="1m", sampling="1s")
    afs = cluster.queues.afs
    afs.push_entry_penalty(LQ, WL, {"cpu": 4000}, NOW.timestamp())
    assert afs.ledger.has_pending_penalty(LQ)
    assert callable(old) and callable(new)
    cluster.core.observe(old(), new(), NOW)
    assert afs.ledger.has_pending_penalty(LQ) is pending
    assert (_cpu_milli(cluster) != 0) is folded


# --- TestUpdateAfsConsumedUsage ----------------------------------------------------------------------

CONSUMED_CASES = {
    # name: (initial entry: (cpu, last update offset, status accounted) or None, want milli,
    #        want status accounted, want last update offset)
    "creates a penalty-only entry on a cache miss": (None, 2_000, False, 0.0),
    "folds into an existing entry and preserves StatusAccounted": ((8, 0.0, True), 10_000, True, 0.0),
    "clamps a future LastUpdate and keeps the timestamp monotonic": ((8, 300.0, True), 10_000, True, 300.0),
}


@pytest.mark.parametrize(
    ("initial", "want_milli", "want_accounted", "want_last"), CONSUMED_CASES.values(), ids=list(CONSUMED_CASES)
)
def test_update_afs_consumed_usage(
    initial: tuple[int, float, bool] | None, want_milli: int, want_accounted: bool, want_last: float
) -> None:
    cluster = _cluster()
    afs = cluster.queues.afs
    now = NOW.timestamp()
    if initial is not None:
        cpu, offset, accounted = initial
        entry = UsageLedgerEntry(resources={"cpu": Fraction(cpu)}, last_update=now + offset, status_accounted=accounted)
        afs.ledger.update(LQ, lambda _old, _found: entry)
    afs.ledger.push_penalty(LQ, WL, {"cpu": Fraction(2)}, now)
    afs.settle(LQ, WL, {}, now)
    got = afs.ledger.get(LQ)
    assert got is not None
    assert _cpu_milli(cluster) == want_milli
    assert got.last_update == now + want_last
    assert got.status_accounted is want_accounted


# --- TestDeleteSubtractsPendingAfsEntryPenalty -------------------------------------------------------


def test_delete_subtracts_pending_afs_entry_penalty() -> None:
    cluster = _cluster()
    afs = cluster.queues.afs
    afs.ledger.push_penalty(LQ, WL, {"cpu": Fraction(2)}, NOW.timestamp())
    cluster.core.observe(_reserved(), None, NOW)
    assert not afs.ledger.has_pending_penalty(LQ)
    assert _cpu_milli(cluster) == 0


# --- TestUpdateDropsUnsettleableAfsEntryPenalty ------------------------------------------------------

DROP_CASES = {
    # name: (old, new, {LocalQueue: want pending})
    "moving to another LocalQueue drops the record under the previous one": (
        _wl,
        lambda: _wl("lq2"),
        {LQ: False, "ns/lq2": False},
    ),
    "deactivation with the reservation gone drops the record": (_reserved, lambda: _wl(active=False), {LQ: False}),
    "deactivation that keeps the reservation keeps the record": (
        _reserved,
        lambda: _reserved(active=False),
        {LQ: True},
    ),
    "finishing without admission drops the record": (_reserved, lambda: _finished(_wl()), {LQ: False}),
    "eviction back to pending on the same LocalQueue keeps the record": (_reserved, _wl, {LQ: True}),
}


@pytest.mark.parametrize(("old", "new", "want"), DROP_CASES.values(), ids=list(DROP_CASES))
def test_update_drops_unsettleable_afs_entry_penalty(old: object, new: object, want: dict[str, bool]) -> None:
    cluster = _cluster()
    afs = cluster.queues.afs
    afs.ledger.push_penalty(LQ, WL, {"cpu": Fraction(2)}, NOW.timestamp())
    assert callable(old) and callable(new)
    cluster.core.observe(old(), new(), NOW + timedelta(seconds=1))
    for lq, pending in want.items():
        assert afs.ledger.has_pending_penalty(lq) is pending, lq
    # The subtraction must not materialize an entry for an untracked queue.
    assert afs.ledger.get("ns/lq2") is None


# --- TestRepeatedAfsSettlementFoldsPenaltyOnce -------------------------------------------------------


def test_repeated_afs_settlement_folds_penalty_once() -> None:
    cluster = _cluster()
    afs = cluster.queues.afs
    now = NOW.timestamp()
    afs.ledger.push_penalty(LQ, WL, {"cpu": Fraction(2)}, now)
    afs.settle(LQ, WL, {}, now)
    afs.settle(LQ, WL, {}, now)
    assert _cpu_milli(cluster) == 2_000
    assert not afs.ledger.has_pending_penalty(LQ)
