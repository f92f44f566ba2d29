"""Upstream ``pkg/controller/core/workload_controller_eviction_test.go`` (``TestReconcileEviction``),
ported case by case (ids are upstream's case names).

Each case goes through the decision of :mod:`pykueue.core.workload.reconcile` that both drivers
(the controllers of ``pykueue serve`` and the simulator) apply for its rule:
``check_based_eviction`` (``reconcileCheckBasedEviction``), ``deactivation`` (the inactive branch
of ``Reconcile``) and ``queue_state`` (``reconcileOn{Local,Cluster}QueueActiveState``). Compared as
upstream compares them with WorkloadRequestUseMergePatch (the fake client of upstream's SSA variant
cannot remove the DeactivationTarget condition nor the requeue state): conditions by type, status,
reason and message, admission-check states, scheduling stats, unhealthy nodes and events.

Cases already ported elsewhere are kept there: "admitted workload with rejected checks gets
deactivated" and "workload with retry checks should be evicted and checks should be pending"
(tests/core/test_admission_checks.py, ``CHECK_EVICTION_CASES``).

not ported: "trigger deactivation of workload when reaching backoffLimitCount" — the PodsReady
timeout lives in the controller (``WorkloadController._pods_ready_timeout``), not in a pure
decision; tests/controllers/test_workload_lifecycle.py drives it end to end.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest
from builders import admitted, workload

from pykueue.api.kueue import (
    AdmissionCheckState,
    RequeueState,
    SchedulingStats,
    Workload,
    WorkloadSchedulingStatsEviction,
)
from pykueue.api.meta import Condition
from pykueue.core.options import SchedulerOptions
from pykueue.core.workload import reconcile
from pykueue.core.workload.transitions import QueueView

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
OPTS = SchedulerOptions()
RESERVED = ("True", "QuotaReserved", "Quota reserved in ClusterQueue q1")
ADMITTED = ("True", "Admitted", "The workload is admitted")
UNSATISFIED = ("False", "UnsatisfiedAdmissionChecks", "The workload has not all checks ready")
LIMIT_TARGET = ("True", "RequeuingLimitExceeded", "exceeding the maximum number of re-queuing retries")
LIMIT_MSG = "The workload is deactivated due to exceeding the maximum number of re-queuing retries"
PODS_READY_TIMEOUT = "Exceeded the PodsReady timeout ns"


def _wl(
    *,
    cq: str = "q1",
    reserved: bool = True,
    admitted_: bool = False,
    active: bool | None = None,
    checks: tuple[tuple[str, str, str], ...] = (),
    conds: tuple[tuple[str, str, str, str], ...] = (),
    stats: tuple[tuple[str, str, int], ...] = (),
    unhealthy: tuple[str, ...] = (),
    requeue_count: int | None = None,
) -> Workload:
    w = workload("wl", "ns")
    if reserved:
        admitted(w, cq, {"cpu": "default"}, at_time=NOW, admitted_condition=admitted_)
    w.spec.active = active
    w.status.admission_checks = [
        AdmissionCheckState(name=n, state=s, message=m, last_transition_time=NOW) for n, s, m in checks
    ]
    w.status.conditions += [
        Condition(type=t, status=s, reason=r, message=m, last_transition_time=NOW) for t, s, r, m in conds
    ]
    if stats:
        w.status.scheduling_stats = SchedulingStats(
            evictions=[WorkloadSchedulingStatsEviction(reason=r, underlying_cause=u, count=n) for r, u, n in stats]
        )
    w.status.unhealthy_nodes = [{"name": n} for n in unhealthy]
    if requeue_count is not None:
        w.status.requeue_state = RequeueState(count=requeue_count)
    return w


def _pods_ready_false(reason: str) -> tuple[str, str, str, str]:
    return ("PodsReady", "False", reason, "Not all pods are ready or succeeded")


def _limit_target() -> tuple[str, str, str, str]:
    return ("DeactivationTarget", *LIMIT_TARGET)


OK_VIEW = QueueView(True, "None", "cq", True, True, "None")

# name, decision, workload factory, want: conditions, checks (name, state, message, retryCount),
# stats (reason, underlyingCause, count), events (type, reason, message)
CASES: list[tuple[str, str, Any, dict[str, Any]]] = [
    (
        "unadmitted workload with rejected checks gets deactivated",
        "checks",
        lambda: _wl(checks=(("check", "Rejected", ""),)),
        {
            "conditions": {
                "QuotaReserved": RESERVED,
                "DeactivationTarget": ("True", "AdmissionCheck", 'AdmissionCheck in Rejected state: "check"'),
                "Admitted": UNSATISFIED,
            },
            "events": [("Warning", "AdmissionCheckRejected", 'Deactivated due to AdmissionCheck in Rejected state: "check"')],
        },
    ),
    (
        "admitted workload with rejected checks gets deactivated, with message",
        "checks",
        lambda: _wl(admitted_=True, checks=(("check", "Rejected", "quota exceeded"),)),
        {
            "conditions": {
                "QuotaReserved": RESERVED,
                "Admitted": ADMITTED,
                "DeactivationTarget": (
                    "True",
                    "AdmissionCheck",
                    'AdmissionCheck in Rejected state: "check" (quota exceeded)',
                ),
            },
            "events": [
                (
                    "Warning",
                    "AdmissionCheckRejected",
                    'Deactivated due to AdmissionCheck in Rejected state: "check" (quota exceeded)',
                )
            ],
        },
    ),
    (
        "workload with deactivation target condition should be deactivated and admission checks reset",
        "deactivation",
        lambda: _wl(
            admitted_=True,
            active=False,
            checks=(("check-1", "Rejected", ""), ("check-2", "Retry", "")),
            conds=(("DeactivationTarget", "True", "AdmissionCheck", 'AdmissionCheck in Rejected state: "check-1"'),),
        ),
        {
            "conditions": {
                "QuotaReserved": RESERVED,
                "Admitted": ADMITTED,
                "Evicted": (
                    "True",
                    "DeactivatedDueToAdmissionCheck",
                    'The workload is deactivated due to AdmissionCheck in Rejected state: "check-1"',
                ),
            },
            "checks": [
                ("check-1", "Pending", "Reset to Pending after eviction. Previously: Rejected", None),
                ("check-2", "Pending", "Reset to Pending after eviction. Previously: Retry", 1),
            ],
            "stats": [("Deactivated", "AdmissionCheck", 1)],
            "events": [
                (
                    "Normal",
                    "EvictedDueToDeactivatedDueToAdmissionCheck",
                    'The workload is deactivated due to AdmissionCheck in Rejected state: "check-1"',
                )
            ],
        },
    ),
    (
        "workload with retry checks and unhealthy nodes should be evicted and checks should be pending",
        "checks",
        lambda: _wl(admitted_=True, checks=(("check-1", "Retry", ""), ("check-2", "Ready", "")), unhealthy=("xyz",)),
        {
            "conditions": {
                "QuotaReserved": RESERVED,
                "Admitted": ADMITTED,
                "Evicted": ("True", "AdmissionCheck", 'Evicted due to AdmissionCheck in Retry state: "check-1"'),
            },
            "checks": [
                ("check-1", "Pending", "Reset to Pending after eviction. Previously: Retry", 1),
                ("check-2", "Pending", "Reset to Pending after eviction. Previously: Ready", None),
            ],
            "stats": [("AdmissionCheck", "", 1)],
            "unhealthy": [],
            "events": [("Normal", "EvictedDueToAdmissionCheck", 'Evicted due to AdmissionCheck in Retry state: "check-1"')],
        },
    ),
    (
        "workload with retry checks should be evicted and checks should be pending, with message",
        "checks",
        lambda: _wl(
            checks=(
                ("check-1", "Retry", "infrastructure not prepared"),
                ("check-2", "Ready", ""),
                ("check-3", "Retry", "budget exhausted"),
            )
        ),
        {
            "conditions": {
                "QuotaReserved": RESERVED,
                "Evicted": (
                    "True",
                    "AdmissionCheck",
                    'Evicted due to AdmissionChecks in Retry state: "check-1" (infrastructure not prepared); '
                    '"check-3" (budget exhausted)',
                ),
                "Admitted": UNSATISFIED,
            },
            "checks": [
                ("check-1", "Pending", "Reset to Pending after eviction. Previously: Retry", 1),
                ("check-2", "Pending", "Reset to Pending after eviction. Previously: Ready", None),
                ("check-3", "Pending", "Reset to Pending after eviction. Previously: Retry", 1),
            ],
            "stats": [("AdmissionCheck", "", 1)],
            "events": [
                (
                    "Normal",
                    "EvictedDueToAdmissionCheck",
                    'Evicted due to AdmissionChecks in Retry state: "check-1" (infrastructure not prepared); '
                    '"check-3" (budget exhausted)',
                )
            ],
        },
    ),
    (
        "should set the Evicted condition with Deactivated reason when the .spec.active=False",
        "deactivation",
        lambda: _wl(reserved=False, active=False),
        {
            "conditions": {"Evicted": ("True", "Deactivated", "The workload is deactivated")},
            "stats": [("Deactivated", "", 1)],
            "events": [],
        },
    ),
    (
        "should set the Evicted condition with Deactivated reason when the .spec.active=False and Admitted",
        "deactivation",
        lambda: _wl(admitted_=True, active=False),
        {
            "conditions": {
                "QuotaReserved": RESERVED,
                "Admitted": ADMITTED,
                "Evicted": ("True", "Deactivated", "The workload is deactivated"),
            },
            "stats": [("Deactivated", "", 1)],
            "events": [("Normal", "EvictedDueToDeactivated", "The workload is deactivated")],
        },
    ),
    (
        "should set the Evicted condition with Deactivated reason when the .spec.active is False, Admitted, "
        "and the Workload has Evicted=False condition",
        "deactivation",
        lambda: _wl(
            admitted_=True,
            active=False,
            conds=(("Evicted", "False", "PodsReadyTimeout", PODS_READY_TIMEOUT),),
            stats=(("PodsReadyTimeout", "WaitForStart", 1),),
        ),
        {
            "conditions": {
                "QuotaReserved": RESERVED,
                "Admitted": ADMITTED,
                "Evicted": ("True", "Deactivated", "The workload is deactivated"),
            },
            "stats": [("PodsReadyTimeout", "WaitForStart", 1), ("Deactivated", "", 1)],
            "events": [("Normal", "EvictedDueToDeactivated", "The workload is deactivated")],
        },
    ),
    *[
        (
            f"with reason {label}; {limit}should set the Evicted condition with Deactivated reason, exceeded the "
            "maximum number of requeue retries"
            "when the .spec.active is False, Admitted, the Workload has Evicted=False and DeactivationTarget=True "
            f"condition{tail}",
            "deactivation",
            lambda reason=reason, count=count: _wl(
                admitted_=True,
                active=False,
                conds=(_pods_ready_false(reason), _limit_target()),
                requeue_count=count,
            ),
            {
                "conditions": {
                    "QuotaReserved": RESERVED,
                    "Admitted": ADMITTED,
                    "PodsReady": _pods_ready_false(reason)[1:],
                    "Evicted": ("True", "DeactivatedDueToRequeuingLimitExceeded", LIMIT_MSG),
                },
                "stats": [("Deactivated", "RequeuingLimitExceeded", 1)],
                "requeue_state": None,
                "events": [("Normal", "EvictedDueToDeactivatedDueToRequeuingLimitExceeded", LIMIT_MSG)],
            },
        )
        for label, reason in (("PodsReady", "PodsReady"), ("WaitForPodsStart", "WaitForStart"))
        for limit, tail, count in (
            ("", "", None),
            ("[backoffLimitCount: 100] ", ", and the requeueState.count equals to backoffLimitCount", 100),
        )
    ],
    (
        "should keep the previous eviction reason when the Workload is already evicted by other reason even though "
        "the Workload is deactivated.",
        "deactivation",
        lambda: _wl(admitted_=True, active=False, conds=(("Evicted", "True", "PodsReadyTimeout", PODS_READY_TIMEOUT),)),
        {
            "conditions": {
                "QuotaReserved": RESERVED,
                "Admitted": ADMITTED,
                "Evicted": ("True", "PodsReadyTimeout", PODS_READY_TIMEOUT),
            },
            "events": [],
        },
    ),
    # pykueue's: ``Reconcile``'s inactive branch on an evicted Workload that still has a requeue
    # state writes once more, and that write (``prepare``) removes the DeactivationTarget too (set
    # again by ``reconcileMaxExecutionTime`` on a Workload whose quota is not released yet).
    (
        "evicted inactive workload with a requeue state: the requeue state and the deactivation target are cleared",
        "deactivation",
        lambda: _wl(
            admitted_=True,
            active=False,
            requeue_count=1,
            conds=(
                ("Evicted", "True", "PodsReadyTimeout", PODS_READY_TIMEOUT),
                ("DeactivationTarget", "True", "MaximumExecutionTimeExceeded", "exceeding the maximum execution time"),
            ),
        ),
        {
            "conditions": {
                "QuotaReserved": RESERVED,
                "Admitted": ADMITTED,
                "Evicted": ("True", "PodsReadyTimeout", PODS_READY_TIMEOUT),
            },
            "requeue_state": None,
            "events": [],
        },
    ),
    # pykueue's: upstream reads the DeactivationTarget condition whatever its status
    # (``dtCond != nil``) for the eviction's cause and message, and removes it.
    (
        "inactive workload with a DeactivationTarget=False condition is evicted with its reason",
        "deactivation",
        lambda: _wl(
            admitted_=True,
            active=False,
            conds=(("DeactivationTarget", "False", "ByTest", "a target not set"),),
        ),
        {
            "conditions": {
                "QuotaReserved": RESERVED,
                "Admitted": ADMITTED,
                "Evicted": ("True", "DeactivatedDueToByTest", "The workload is deactivated due to a target not set"),
            },
            "stats": [("Deactivated", "ByTest", 1)],
            "events": [("Normal", "EvictedDueToDeactivatedDueToByTest", "The workload is deactivated due to a target not set")],
        },
    ),
    *[
        (
            f"should set the Evicted condition with {kind}Stopped reason when the StopPolicy is HoldAndDrain",
            f"queue:{field}",
            lambda: _wl(cq="cq", admitted_=True, active=True),
            {
                "conditions": {
                    "QuotaReserved": ("True", "QuotaReserved", "Quota reserved in ClusterQueue cq"),
                    "Admitted": ADMITTED,
                    "Evicted": ("True", f"{kind}Stopped", f"The {kind} is stopped"),
                },
                "stats": [(f"{kind}Stopped", "", 1)],
                "events": [("Normal", f"EvictedDueTo{kind}Stopped", f"The {kind} is stopped")],
            },
        )
        for kind, field in (("ClusterQueue", "cluster_queue_stop_policy"), ("LocalQueue", "local_queue_stop_policy"))
    ],
]


def decide(decision: str, wl: Workload) -> reconcile.Outcome:
    if decision == "checks":
        return reconcile.check_based_eviction(wl, NOW, OPTS)
    if decision == "deactivation":
        return reconcile.deactivation(wl, NOW)
    field = decision.removeprefix("queue:")
    view = msgspec.structs.replace(OK_VIEW, **{field: "HoldAndDrain"})
    return reconcile.queue_state(wl, view, NOW, OPTS)


@pytest.mark.parametrize(("name", "decision", "make", "want"), CASES, ids=[c[0] for c in CASES])
def test_reconcile_eviction(name: str, decision: str, make: Any, want: dict[str, Any]) -> None:
    wl = make()
    before = msgspec.json.encode(wl)
    outcome = decide(decision, wl)
    assert outcome.spec is None
    got = outcome.status if outcome.status is not None else wl
    st = got.status
    assert {c.type: (c.status, c.reason, c.message) for c in st.conditions} == want["conditions"]
    if "checks" in want:
        assert [(c.name, c.state, c.message, c.retry_count) for c in st.admission_checks] == want["checks"]
    stats = st.scheduling_stats.evictions if st.scheduling_stats is not None else []
    assert [(e.reason, e.underlying_cause, e.count) for e in stats] == want.get("stats", [])
    if "unhealthy" in want:
        assert st.unhealthy_nodes == want["unhealthy"]
    if "requeue_state" in want:
        assert st.requeue_state == want["requeue_state"]
    assert [(e.type, e.reason, e.note) for e in outcome.events] == want["events"]
    assert msgspec.json.encode(wl) == before  # the input is not changed
