"""Upstream ``pkg/controller/core/workload_controller_inadmissible_test.go`` (``TestReconcileInadmissible``),
ported case by case (ids are upstream's case names).

Upstream runs each case through ``WorkloadReconciler.Reconcile`` with a fake client; here the
Workload, its LocalQueue and what the scheduler's cache knows of its ClusterQueue go through
``reconcile.queue_view`` and ``reconcile.queue_state``, the decision the controllers of ``pykueue
serve`` and the simulator apply for these rules (``reconcileOnLocalQueueActiveState``,
``reconcileOnClusterQueueActiveState``, ``syncQuotaReservedFalseCondition`` and the
``SyncAdmittedCondition`` of a Workload that is not admitted). Upstream compares conditions by
type, status, reason and message (``lastTransitionTime`` ignored), and, with
WorkloadRequestUseMergePatch, a released reservation has no ``status.admission``: so here.

Cases run with upstream's default gates (``UnadmittedWorkloadsObservability`` on) unless the case
sets its own; the legacy (observability off) variants of ``runReconcileTestCases`` are not repeated.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest
from builders import admitted, local_queue, options, workload

from pykueue.api.kueue import AdmissionCheckState, LocalQueue, Workload
from pykueue.api.meta import Condition, LabelSelector
from pykueue.core.workload import reconcile

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
NO_RESERVATION = ("False", "NoReservation", "The workload has no reservation")


def _facts(*, exists: bool = True, active: bool = True, stop_policy: str = "None") -> reconcile.QueueFacts:
    return reconcile.QueueFacts(exists=exists, active=active, stop_policy=stop_policy, namespace_selector=LabelSelector())


def _lq(stop_policy: str = "", *, terminating: bool = False) -> LocalQueue:
    q = local_queue("lq", "ns", "cq", stop_policy=stop_policy)
    if terminating:
        q.metadata.deletion_timestamp = NOW
    return q


def _reserved() -> Workload:
    """Quota reserved in ``cq`` (flavor1, 1 cpu) with the Pending check ``check``."""
    wl = admitted(workload("wl", "ns", requests={"cpu": "1"}), "cq", {"cpu": "flavor1"}, at_time=NOW)
    wl.spec.active = True
    wl.status.admission_checks = [AdmissionCheckState(name="check", state="Pending", last_transition_time=NOW)]
    return wl


def _pending(*conds: tuple[str, str, str, str], active: bool = True, gate: str = "") -> Workload:
    wl = workload("wl", "ns")
    wl.spec.active = active
    if gate:
        wl.metadata.annotations["kueue.x-k8s.io/admission-gated-by"] = gate
    wl.status.conditions = [Condition(type=t, status=s, reason=r, message=m, last_transition_time=NOW) for t, s, r, m in conds]
    return wl


# A ClusterQueue with the admission check "check", which does not exist: inactive.
CQ_WITH_MISSING_CHECK = _facts(active=False)

# name, workload, LocalQueue, ClusterQueue facts, gates, want conditions (type -> (status, reason, message))
CASES: list[tuple[str, Any, LocalQueue | None, reconcile.QueueFacts | None, dict[str, bool], dict[str, Any]]] = [
    (
        "should set the Misconfigured reason on QuotaReservation condition when the LocalQueue was deleted",
        _reserved,
        None,
        CQ_WITH_MISSING_CHECK,
        {},
        {"QuotaReserved": ("False", "Misconfigured", "LocalQueue lq is terminating or missing"), "Admitted": NO_RESERVATION},
    ),
    (
        "should set the Misconfigured reason on QuotaReservation condition when the LocalQueue is terminating",
        _reserved,
        _lq(terminating=True),
        CQ_WITH_MISSING_CHECK,
        {},
        {"QuotaReserved": ("False", "Misconfigured", "LocalQueue lq is terminating or missing"), "Admitted": NO_RESERVATION},
    ),
    (
        "should set the Suspended reason on QuotaReservation condition when the LocalQueue was Hold",
        _reserved,
        _lq("Hold"),
        CQ_WITH_MISSING_CHECK,
        {},
        {"QuotaReserved": ("False", "Suspended", "LocalQueue lq is stopped"), "Admitted": NO_RESERVATION},
    ),
    (
        "should set the Misconfigured reason on QuotaReservation condition when the ClusterQueue was deleted",
        _reserved,
        _lq(),
        None,
        {},
        {"QuotaReserved": ("False", "Misconfigured", "ClusterQueue cq is terminating or missing"), "Admitted": NO_RESERVATION},
    ),
    (
        "should set the Misconfigured reason on QuotaReservation condition when the ClusterQueue is terminating",
        _reserved,
        _lq(),
        _facts(exists=False, active=False),
        {},
        {"QuotaReserved": ("False", "Misconfigured", "ClusterQueue cq is terminating or missing"), "Admitted": NO_RESERVATION},
    ),
    (
        "should set the Suspended reason on QuotaReservation condition when the ClusterQueue was Hold",
        _reserved,
        _lq(),
        _facts(active=False, stop_policy="Hold"),
        {},
        {"QuotaReserved": ("False", "Suspended", "ClusterQueue cq is stopped"), "Admitted": NO_RESERVATION},
    ),
    (
        "should set status QuotaReserved conditions to False with reason Misconfigured if quota not reserved LocalQueue is not created",
        _pending,
        None,
        None,
        {},
        {"QuotaReserved": ("False", "Misconfigured", "LocalQueue lq doesn't exist"), "Admitted": NO_RESERVATION},
    ),
    (
        "should set status QuotaReserved conditions to False with reason Deactivated if workload is deactivated even if LocalQueue doesn't exist",
        lambda: _pending(("Evicted", "True", "Deactivated", "The workload is deactivated"), active=False),
        None,
        None,
        {},
        {
            "Evicted": ("True", "Deactivated", "The workload is deactivated"),
            "QuotaReserved": ("False", "Deactivated", "The workload is deactivated"),
            "Admitted": NO_RESERVATION,
        },
    ),
    *[
        (
            f"should preserve {reason} reason",
            lambda reason=reason, message=message: _pending(("QuotaReserved", "False", reason, message)),
            _lq(),
            _facts(),
            {},
            {"QuotaReserved": ("False", reason, message), "Admitted": NO_RESERVATION},
        )
        for reason, message in (
            ("NoMatchingFlavor", "No matching flavor"),
            ("WaitingForPodsReady", "Waiting for pods ready"),
            ("ExceedsMaxQuota", "Exceeds max quota"),
        )
    ],
    (
        "should write AdmissionGated reason when admission gate is active",
        lambda: _pending(("QuotaReserved", "False", "AdmissionGated", "Admission is gated by: foo-gate"), gate="foo-gate"),
        _lq(),
        _facts(),
        {"AdmissionGatedBy": True},
        {"QuotaReserved": ("False", "AdmissionGated", "Admission is gated by: foo-gate"), "Admitted": NO_RESERVATION},
    ),
    (
        "should transition to PendingEvaluation when all blockages are resolved",
        lambda: _pending(("QuotaReserved", "False", "Suspended", "LocalQueue lq is inactive")),
        _lq(),
        _facts(),
        {},
        {
            "QuotaReserved": ("False", "PendingEvaluation", "Workload is pending evaluation in the scheduling queue"),
            "Admitted": NO_RESERVATION,
        },
    ),
    (
        "should transition to PendingEvaluation when misconfiguration (missing LocalQueue) is resolved",
        lambda: _pending(("QuotaReserved", "False", "Misconfigured", "LocalQueue lq doesn't exist")),
        _lq(),
        _facts(),
        {},
        {
            "QuotaReserved": ("False", "PendingEvaluation", "Workload is pending evaluation in the scheduling queue"),
            "Admitted": NO_RESERVATION,
        },
    ),
    (
        "should not write QuotaReserved condition on newly created workload",
        _pending,
        _lq(),
        _facts(),
        {"UnadmittedWorkloadsObservability": False},
        {},
    ),
    (
        "should write QuotaReserved condition on newly created workload",
        _pending,
        _lq(),
        _facts(),
        {"UnadmittedWorkloadsExplicitStatus": True},
        {
            "Admitted": NO_RESERVATION,
            "QuotaReserved": ("False", "PendingEvaluation", "Workload is pending evaluation in the scheduling queue"),
        },
    ),
    (
        "should set status QuotaReserved conditions to False with reason Suspended if quota not reserved LocalQueue StopPolicy=Hold",
        _pending,
        _lq("Hold"),
        None,
        {},
        {"QuotaReserved": ("False", "Suspended", "LocalQueue lq is inactive"), "Admitted": NO_RESERVATION},
    ),
    (
        "should set status QuotaReserved conditions to False with reason Suspended if quota not reserved LocalQueue StopPolicy=HoldAndDrain",
        _pending,
        _lq("HoldAndDrain"),
        None,
        {},
        {"QuotaReserved": ("False", "Suspended", "LocalQueue lq is inactive"), "Admitted": NO_RESERVATION},
    ),
    (
        "should set status QuotaReserved conditions to False with reason Misconfigured if quota not reserved ClusterQueue is not created",
        _pending,
        _lq("None"),
        None,
        {},
        {"QuotaReserved": ("False", "Misconfigured", "ClusterQueue cq doesn't exist"), "Admitted": NO_RESERVATION},
    ),
    (
        "should set status QuotaReserved conditions to False with reason Suspended if quota not reserved ClusterQueue StopPolicy=Hold",
        _pending,
        _lq("None"),
        _facts(active=False, stop_policy="Hold"),
        {},
        {"QuotaReserved": ("False", "Suspended", "ClusterQueue cq is inactive"), "Admitted": NO_RESERVATION},
    ),
]


def decide(wl: Workload, lq: LocalQueue | None, cq: reconcile.QueueFacts | None, gates: dict[str, bool]) -> Workload:
    """The Workload after the controller's queue-state decision (unchanged when it decides nothing)."""
    opts = options(gates=gates)
    view = reconcile.queue_view(wl, lq, "cq", cq, {} if cq is not None else None, None)
    outcome = reconcile.queue_state(wl, view, NOW, opts)
    assert outcome.spec is None
    return outcome.status if outcome.status is not None else wl


@pytest.mark.parametrize(("name", "make", "lq", "cq", "gates", "want"), CASES, ids=[c[0] for c in CASES])
def test_reconcile_inadmissible(
    name: str,
    make: Any,
    lq: LocalQueue | None,
    cq: reconcile.QueueFacts | None,
    gates: dict[str, bool],
    want: dict[str, Any],
) -> None:
    wl = make()
    before = msgspec.json.encode(wl)
    got = decide(wl, lq, cq, gates)
    assert {c.type: (c.status, c.reason, c.message) for c in got.status.conditions} == want
    if "QuotaReserved" in want and want["QuotaReserved"][0] == "False":
        assert got.status.admission is None
    if wl.status.admission_checks:
        assert [(c.name, c.state) for c in got.status.admission_checks] == [("check", "Pending")]
    assert msgspec.json.encode(wl) == before  # the input is not changed
