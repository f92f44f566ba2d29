"""Upstream ``pkg/controller/core/workload_controller_test.go``: ``TestSyncCheckStates`` and the
``TestReconcile`` cases whose rules are pykueue's pure decisions, ported case by case (ids are
upstream's case names).

``TestReconcile`` cases go through :func:`pykueue.core.workload.reconcile.queue_state` (the
QuotaReserved=False reason, AdmissionGatedBy, Admitted of a workload that is not admitted) or
:func:`~pykueue.core.workload.reconcile.admission_checks` (the check list, Admitted). As upstream's
(merge-patch variant), conditions are compared by type, status, reason and message; events by type,
reason and message. Cases run with upstream's default gates unless the case sets its own.

Kept where they are (tests/core/test_admission_checks.py, ``ADMISSION_CHECK_CASES``): "assign
Admission Checks from ClusterQueue.spec.AdmissionChecks", "admit", "already admitted"; and
TestSyncCheckStates' "cleanup" and "preserve conditions data" there too, as ``admission_checks``
decisions (ported again below on ``sync_admission_checks`` itself, upstream's unit).

not ported:
- the finalizer, orphan and retention cases ("remove finalizer for ...", "should handle finished
  workload logic for orphaned workloads ...", "shouldn't delete the workload ...", "should delete
  the workload because the retention period has elapsed ...", "workload with existing controller
  owner should not be finished") — they read and write the API server (finalizers, deletion,
  owner lookups) and live in ``controllers/workload_controller.py``;
  tests/controllers/test_workload_lifecycle.py drives them.

"admitted workload with max execution time[ - expired]" run on
:func:`~pykueue.core.workload.reconcile.max_execution_time` (``reconcileMaxExecutionTime``), the
decision both the controller and ``pykueue schedule`` take.
- "should synchronize the status of preemption gates" — MultiKueueOrchestratedPreemption, not
  implemented (pykueue has no spec.preemptionGates sync).
- "inadmissible workload due to broken ClusterQueue namespace selector (observability enabled)" —
  the API server's validation rejects such a selector before it reaches the controllers.
- TestUpdateSkipsRequeueForOnHoldWorkload, TestUpdateRemovesStaleQueueEntryForOnHoldWorkload — OnHold
  comes from integrations pykueue does not have. The AdmissionFairSharing entry-penalty tests
  (TestUpdateSettlesAfsEntryPenalty, TestUpdateAfsConsumedUsage,
  TestDeleteSubtractsPendingAfsEntryPenalty, TestUpdateDropsUnsettleableAfsEntryPenalty,
  TestRepeatedAfsSettlementFoldsPenaltyOnce) are ported in test_workload_controller_afs_upstream.py.

TestAdmittedNotReadyWorkload is ported on ``transitions.admitted_not_ready``, which the controller
calls only with waitForPodsReady configured (``WorkloadController._pods_ready_timeout``): "workload
without Admitted condition; not counting" runs with a timeout (it must still not count); "workload
with Admitted=True, no PodsReady, but no timeout configured; not counting" is that guard, not ported.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest
from builders import (
    admitted,
    build_cache,
    cluster_queue,
    flavor,
    flavor_quotas,
    options,
    resource_group,
    workload,
)

from pykueue.api.kueue import AdmissionCheckState, Workload
from pykueue.api.meta import Condition
from pykueue.core.workload import reconcile, transitions
from pykueue.core.workload.transitions import QueueView

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
NO_RESERVATION = ("False", "NoReservation", "The workload has no reservation")
PENDING_EVALUATION = ("False", "PendingEvaluation", "Workload is pending evaluation in the scheduling queue")
BYPASSED = "Bypassed scheduling evaluation because an equivalent workload recently failed"
GATE = "kueue.x-k8s.io/admission-gated-by"


# --- TestSyncCheckStates (``syncAdmissionCheckConditions``) ---------------------------------------


def _states(*pairs: tuple[str, str, str]) -> list[AdmissionCheckState]:
    return [AdmissionCheckState(name=n, state=s, message=m, last_transition_time=NOW) for n, s, m in pairs]


SYNC_CHECK_CASES: list[tuple[str, list[AdmissionCheckState], list[str], list[tuple[str, str, str]], bool]] = [
    ("nil conditions, nil list", [], [], [], False),
    ("add to nil conditions", [], ["ac1", "ac2"], [("ac1", "Pending", ""), ("ac2", "Pending", "")], True),
    (
        "add and remove",
        _states(("ac0", "Pending", ""), ("ac1", "Pending", "")),
        ["ac1", "ac2"],
        [("ac1", "Pending", ""), ("ac2", "Pending", "")],
        True,
    ),
    ("cleanup", _states(("ac0", "Pending", ""), ("ac1", "Pending", "")), [], [], True),
    (
        "preserve conditions data",
        _states(("ac0", "Ready", "Message one"), ("ac1", "Pending", "")),
        ["ac0", "ac1"],
        [("ac0", "Ready", "Message one"), ("ac1", "Pending", "")],
        False,
    ),
]


@pytest.mark.parametrize(
    ("name", "states", "required", "want", "want_change"), SYNC_CHECK_CASES, ids=[c[0] for c in SYNC_CHECK_CASES]
)
def test_sync_check_states(
    name: str, states: list[AdmissionCheckState], required: list[str], want: list[tuple[str, str, str]], want_change: bool
) -> None:
    wl = workload("wl", "ns")
    wl.status.admission_checks = list(states)
    assert transitions.sync_admission_checks(wl, required, NOW) == want_change
    assert [(c.name, c.state, c.message) for c in wl.status.admission_checks] == want
    # Kept states keep their transition time.
    kept = {c.name: c.last_transition_time for c in states}
    assert all(c.last_transition_time == kept.get(c.name, NOW) for c in wl.status.admission_checks)


# --- TestReconcile: the admission-check list of a reserved workload -------------------------------


def test_assign_admission_checks_from_cluster_queue_spec_admission_check_strategy() -> None:
    """upstream "assign Admission Checks from ClusterQueue.spec.AdmissionCheckStrategy": ``ac1`` on
    flavor1 only, ``ac2`` on every flavor; the workload holds flavor1."""
    cq = cluster_queue(
        "cq",
        resource_group(flavor_quotas("flavor1", cpu=1), flavor_quotas("flavor2", cpu=1)),
        admission_checks={"ac1": ["flavor1"], "ac2": []},
    )
    cache = build_cache([flavor("flavor1"), flavor("flavor2"), cq])
    wl = admitted(workload("wl", "ns", queue="queue", requests={"cpu": "1"}), "cq", {"cpu": "flavor1"}, at_time=NOW)
    required = cache.cluster_queues["cq"].checks_for_flavors({"flavor1"})
    outcome = reconcile.admission_checks(wl, required, "cq", NOW, options())
    assert outcome.status is not None
    assert [(c.name, c.state) for c in outcome.status.status.admission_checks] == [("ac1", "Pending"), ("ac2", "Pending")]


# --- TestReconcile: the QuotaReserved=False reason of a pending workload ----------------------------

OK = QueueView(True, "None", "cq", True, True, "None")


def _wl(*conds: tuple[str, str, str, str], queue: str = "lq", active: bool | None = None, gate: str = "") -> Workload:
    wl = workload("wl", "ns", queue=queue)
    wl.spec.active = active
    if gate:
        wl.metadata.annotations[GATE] = gate
    wl.status.conditions = [Condition(type=t, status=s, reason=r, message=m, last_transition_time=NOW) for t, s, r, m in conds]
    return wl


def _qr(reason: str, message: str) -> tuple[str, str, str, str]:
    return ("QuotaReserved", "False", reason, message)


# name, workload factory, view overrides, gates, want conditions, want events (type, reason, message)
PENDING_CASES: list[tuple[str, Any, dict[str, Any], dict[str, bool], dict[str, Any], list[tuple[str, str, str]]]] = [
    (
        "workload that is deactivated should set QuotaReserved condition to Deactivated (observability enabled)",
        lambda: _wl(("Evicted", "True", "Deactivated", "The workload is deactivated"), active=False),
        {"local_queue_exists": False, "cluster_queue_exists": False, "cluster_queue_active": False},
        {},
        {
            "Evicted": ("True", "Deactivated", "The workload is deactivated"),
            "QuotaReserved": ("False", "Deactivated", "The workload is deactivated"),
            "Admitted": NO_RESERVATION,
        },
        [],
    ),
    (
        "workload that is reactivated should clear Deactivated condition and transition to PendingEvaluation "
        "(observability enabled)",
        lambda: _wl(_qr("Deactivated", "The workload is deactivated"), active=True),
        {},
        {},
        {"QuotaReserved": PENDING_EVALUATION, "Admitted": NO_RESERVATION},
        [],
    ),
    (
        "workload with AdmissionGatedBy annotation should set QuotaReserved condition to AdmissionGated",
        lambda: _wl(gate="example.com/controller1"),
        {},
        {},
        {
            "QuotaReserved": ("False", "AdmissionGated", "Admission is gated by: example.com/controller1"),
            "Admitted": NO_RESERVATION,
        },
        [("Normal", "AdmissionGated", "Workload admission is gated by: example.com/controller1")],
    ),
    (
        "workload with legacy Pending reason should transition to PendingEvaluation (observability enabled)",
        lambda: _wl(_qr("Pending", "Workload is pending")),
        {},
        {},
        {"QuotaReserved": PENDING_EVALUATION, "Admitted": NO_RESERVATION},
        [],
    ),
    (
        "workload with granular PendingEvaluation reason should preserve it when queue is active (observability enabled)",
        lambda: _wl(_qr(*PENDING_EVALUATION[1:])),
        {},
        {},
        {"QuotaReserved": PENDING_EVALUATION, "Admitted": NO_RESERVATION},
        [],
    ),
    (
        "workload with granular PendingEvaluation reason should transition to Inadmissible when queue is missing "
        "(observability disabled)",
        lambda: _wl(_qr(*PENDING_EVALUATION[1:])),
        {"local_queue_exists": False, "cluster_queue_exists": False, "cluster_queue_active": False},
        {"UnadmittedWorkloadsObservability": False},
        # With observability off upstream's test drops Admitted=False of a never-admitted workload
        # (``AdjustConditionsForDisabledObservabilityInWorkloadController``).
        {"QuotaReserved": ("False", "Inadmissible", "LocalQueue lq doesn't exist")},
        [],
    ),
    (
        "workload with AdmissionGatedBy annotation removed should clear the gate and emit event",
        lambda: _wl(_qr("AdmissionGated", "Admission is gated by: example.com/controller1")),
        {},
        {},
        {
            "QuotaReserved": ("False", "PendingEvaluation", "AdmissionGatedBy cleared, waiting for quota reservation"),
            "Admitted": NO_RESERVATION,
        },
        [("Normal", "AdmissionGateCleared", "Admission gate cleared, workload is now admissible")],
    ),
    (
        "workload with multiple AdmissionGatedBy gates should remain gated",
        lambda: _wl(gate="example.com/controller1,example.com/controller2"),
        {},
        {},
        {
            "QuotaReserved": (
                "False",
                "AdmissionGated",
                "Admission is gated by: example.com/controller1,example.com/controller2",
            ),
            "Admitted": NO_RESERVATION,
        },
        [("Normal", "AdmissionGated", "Workload admission is gated by: example.com/controller1,example.com/controller2")],
    ),
    (
        "workload with AdmissionGatedBy should not be admitted even with quota reserved",
        lambda: admitted(_wl(gate="example.com/controller1"), "cq", {"cpu": "f"}, at_time=NOW),
        {},
        {},
        {
            "QuotaReserved": ("False", "AdmissionGated", "Admission is gated by: example.com/controller1"),
            "Admitted": NO_RESERVATION,
        },
        [("Normal", "AdmissionGated", "Workload admission is gated by: example.com/controller1")],
    ),
    (
        "workload without AdmissionGatedBy annotation and no gated condition should not be affected",
        _wl,
        {"cluster_queue_active": False},  # a ClusterQueue without resource groups is inactive
        {},
        {"QuotaReserved": ("False", "Suspended", "ClusterQueue cq is inactive"), "Admitted": NO_RESERVATION},
        [],
    ),
    (
        "inadmissible workload due to missing LocalQueue (observability enabled)",
        lambda: _wl(queue="non-existent-lq"),
        {"local_queue_exists": False, "cluster_queue_exists": False, "cluster_queue_active": False},
        {},
        {"QuotaReserved": ("False", "Misconfigured", "LocalQueue non-existent-lq doesn't exist"), "Admitted": NO_RESERVATION},
        [],
    ),
    (
        "inadmissible workload due to stopped ClusterQueue (observability enabled)",
        _wl,
        {"cluster_queue_active": False, "cluster_queue_stop_policy": "Hold"},
        {},
        {"QuotaReserved": ("False", "Suspended", "ClusterQueue cq is inactive"), "Admitted": NO_RESERVATION},
        [],
    ),
    (
        "newly created workload (initial reconcile, ExplicitStatus enabled)",
        _wl,
        {},
        {"UnadmittedWorkloadsExplicitStatus": True},
        {"QuotaReserved": PENDING_EVALUATION, "Admitted": NO_RESERVATION},
        [],
    ),
    ("newly created workload (initial reconcile, ExplicitStatus disabled)", _wl, {}, {}, {}, []),
    (
        "reconcile bypassed workload when SchedulingEquivalenceHashing is enabled (stale status -> bypassed status)",
        _wl,
        {"bulk_bypass_reason": "WaitingForQuota"},
        {"UnadmittedWorkloadsExplicitStatus": True},
        {"QuotaReserved": ("False", "WaitingForQuota", BYPASSED), "Admitted": NO_RESERVATION},
        [],
    ),
    (
        "reconcile bypassed workload when SchedulingEquivalenceHashing is enabled and UnadmittedWorkloadsExplicitStatus "
        "is disabled (no status stamped on creation)",
        _wl,
        {"bulk_bypass_reason": "WaitingForQuota"},
        {},
        {},
        [],
    ),
    (
        "reconcile bypassed workload when SchedulingEquivalenceHashing is enabled (keep detailed scheduler message)",
        lambda: _wl(_qr("WaitingForQuota", "insufficient CPU in ClusterQueue cq")),
        {"bulk_bypass_reason": "WaitingForQuota"},
        {"UnadmittedWorkloadsExplicitStatus": True},
        {"QuotaReserved": ("False", "WaitingForQuota", "insufficient CPU in ClusterQueue cq"), "Admitted": NO_RESERVATION},
        [],
    ),
    (
        "reconcile bypassed workload when SchedulingEquivalenceHashing is disabled (stale status remains pending)",
        _wl,
        {"bulk_bypass_reason": "WaitingForQuota"},
        {"SchedulingEquivalenceHashing": False, "UnadmittedWorkloadsExplicitStatus": True},
        {"QuotaReserved": PENDING_EVALUATION, "Admitted": NO_RESERVATION},
        [],
    ),
]


@pytest.mark.parametrize(("name", "make", "view_kw", "gates", "want", "want_events"), PENDING_CASES, ids=[c[0] for c in PENDING_CASES])
def test_reconcile_queue_state(
    name: str,
    make: Any,
    view_kw: dict[str, Any],
    gates: dict[str, bool],
    want: dict[str, Any],
    want_events: list[tuple[str, str, str]],
) -> None:
    wl = make()
    before = msgspec.json.encode(wl)
    outcome = reconcile.queue_state(wl, msgspec.structs.replace(OK, **view_kw), NOW, options(gates=gates))
    assert outcome.spec is None
    got = outcome.status if outcome.status is not None else wl
    assert {c.type: (c.status, c.reason, c.message) for c in got.status.conditions} == want
    if want.get("QuotaReserved", ("",))[0] == "False":
        assert got.status.admission is None
    assert [(e.type, e.reason, e.note) for e in outcome.events] == want_events
    assert msgspec.json.encode(wl) == before  # the input is not changed


# --- TestAdmittedNotReadyWorkload (``admittedNotReadyWorkload``) --------------------------------------

MINUTE_AGO = NOW - timedelta(minutes=1)


def _timed(*conds: tuple[str, str, str, datetime]) -> Workload:
    wl = workload("wl", "ns")
    wl.status.conditions = [
        Condition(type=t, status=s, reason=r, message="", last_transition_time=when) for t, s, r, when in conds
    ]
    return wl


ADMITTED_AGO = ("Admitted", "True", "", MINUTE_AGO)

# name, workload, timeout (s), recoveryTimeout (s), want cause, want recheckAfter (s)
NOT_READY_CASES: list[tuple[str, Workload, float, float | None, str, float]] = [
    ("workload without Admitted condition; not counting", _timed(), 300, None, "", 0),
    ("workload with Admitted=True, no PodsReady; counting", _timed(ADMITTED_AGO), 300, None, "WaitForStart", 240),
    (
        "workload with Admitted=True, no PodsReady; timeout exceeded",
        _timed(("Admitted", "True", "", NOW - timedelta(minutes=7))),
        300,
        None,
        "WaitForStart",
        0,
    ),
    (
        "with reason WorkloadWaitForPodsReadyStart; workload with Admitted=True, PodsReady=False; counting since "
        "admitted.LastTransitionTime",
        _timed(ADMITTED_AGO, ("PodsReady", "False", "WaitForStart", NOW)),
        300,
        None,
        "WaitForStart",
        240,
    ),
    (
        "with reason PodsReady; workload with Admitted=True, PodsReady=False; counting since admitted.LastTransitionTime",
        _timed(ADMITTED_AGO, ("PodsReady", "False", "PodsReady", NOW)),
        300,
        None,
        "WaitForStart",
        240,
    ),
    (
        "workload with Admitted=True, PodsReady=False, Reason=WorkloadWaitForPodsReadyRecovery",
        _timed(ADMITTED_AGO, ("PodsReady", "False", "WaitForRecovery", NOW)),
        0,
        180,
        "WaitForRecovery",
        180,
    ),
    (
        "workload with Admitted=True, PodsReady=False, Reason=WorkloadWaitForPodsReadyRecovery, recoveryTimeout not "
        "configured",
        _timed(ADMITTED_AGO, ("PodsReady", "False", "WaitForRecovery", NOW)),
        0,
        None,
        "",
        0,
    ),
    (
        "workload with Admitted=Unknown; not counting",
        _timed(("Admitted", "Unknown", "", MINUTE_AGO)),
        300,
        None,
        "",
        0,
    ),
    ("workload with Admitted=False, not counting", _timed(("Admitted", "Unknown", "", MINUTE_AGO)), 300, None, "", 0),
    (
        "workload with Admitted=True, PodsReady=True; not counting",
        _timed(ADMITTED_AGO, ("PodsReady", "True", "", NOW)),
        300,
        None,
        "",
        0,
    ),
]


@pytest.mark.parametrize(
    ("name", "wl", "timeout", "recovery", "want_cause", "want_after"), NOT_READY_CASES, ids=[c[0] for c in NOT_READY_CASES]
)
def test_admitted_not_ready_workload(
    name: str, wl: Workload, timeout: float, recovery: float | None, want_cause: str, want_after: float
) -> None:
    assert transitions.admitted_not_ready(wl, NOW, timeout, recovery) == (want_cause, want_after)


# --- TestReconcile: maximum execution time (``reconcileMaxExecutionTime``) --------------------------------------

MAX_EXEC_TARGET = ("True", "MaximumExecutionTimeExceeded", "exceeding the maximum execution time")

# name, maximumExecutionTimeSeconds, admitted this long ago (None: not admitted), accumulated past
# execution time, DeactivationTarget already True; want: requeue after (s), DeactivationTarget, events
MAX_EXEC_CASES: list[tuple[str, int | None, int | None, int | None, bool, float | None, Any, list[Any]]] = [
    ("admitted workload with max execution time", 120, 60, None, False, 60.0, None, []),
    (
        "admitted workload with max execution time - expired",
        60,
        120,
        None,
        False,
        None,
        MAX_EXEC_TARGET,
        [("Warning", "MaximumExecutionTimeExceeded", "The maximum execution time (60s) exceeded")],
    ),
    # pykueue's: the accumulated past execution time counts; it is cleared with the target.
    ("accumulated past execution time counts", 120, 60, 30, False, 30.0, None, []),
    (
        "accumulated past execution time makes it expire",
        120,
        60,
        70,
        False,
        None,
        MAX_EXEC_TARGET,
        [("Warning", "MaximumExecutionTimeExceeded", "The maximum execution time (120s) exceeded")],
    ),
    ("expired with the target already set: nothing more", 60, 120, None, True, None, MAX_EXEC_TARGET, []),
    ("reserved, not admitted: not timed", 60, None, None, False, None, None, []),
    ("admitted without a maximum: not timed", None, 120, None, False, None, None, []),
]


@pytest.mark.parametrize(
    ("name", "limit", "ago", "past", "target", "want_after", "want_target", "want_events"),
    MAX_EXEC_CASES,
    ids=[c[0] for c in MAX_EXEC_CASES],
)
def test_reconcile_max_execution_time(
    name: str,
    limit: int | None,
    ago: int | None,
    past: int | None,
    target: bool,
    want_after: float | None,
    want_target: Any,
    want_events: list[Any],
) -> None:
    wl = workload("wl", "ns")
    admitted(wl, "q1", {"cpu": "default"}, at_time=NOW)
    wl.spec.maximum_execution_time_seconds = limit
    wl.status.accumulated_past_execution_time_seconds = past
    if ago is not None:
        wl.status.conditions.append(
            Condition(
                type="Admitted",
                status="True",
                reason="Admitted",
                message="The workload is admitted",
                last_transition_time=NOW - timedelta(seconds=ago),
            )
        )
    if target:
        wl.status.conditions.append(
            Condition(type="DeactivationTarget", status="True", reason=MAX_EXEC_TARGET[1], message=MAX_EXEC_TARGET[2])
        )
    out = reconcile.max_execution_time(wl, NOW)
    assert out.requeue_after == want_after
    assert [(e.type, e.reason, e.note) for e in out.events] == want_events
    written = out.status if out.status is not None else wl
    got = next(
        ((c.status, c.reason, c.message) for c in written.status.conditions if c.type == "DeactivationTarget"), None
    )
    assert got == want_target
    if out.status is not None:
        assert out.status.status.accumulated_past_execution_time_seconds is None
        assert wl.status.accumulated_past_execution_time_seconds == past  # the input is not changed
