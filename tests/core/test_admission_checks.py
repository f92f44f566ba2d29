"""Two-phase admission with AdmissionChecks across scheduling cycles (upstream ``admissionchecks.go``,
``workload_controller.go``).

The external check controller is played by the test: it edits the stored workload's
``status.admissionChecks`` and lets time advance so the simulated controllers react.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from builders import (
    Cond,
    admission_check,
    admission_of,
    admitted,
    at,
    cluster_queue,
    conditions,
    events,
    flavor,
    flavor_quotas,
    local_queue,
    queued,
    simulate,
    workload,
)

from pykueue.api.kueue import AdmissionCheckState, Workload
from pykueue.core.options import SchedulerOptions
from pykueue.core.workload import reconcile, transitions
from pykueue.sim.cluster import SimulatedCluster

NOW = at(3600)
KEY = "default/w"
RESERVED: Cond = ("True", "QuotaReserved", "Quota reserved in ClusterQueue q")
ADMITTED: Cond = ("True", "Admitted", "The workload is admitted")
UNSATISFIED: Cond = ("False", "UnsatisfiedAdmissionChecks", "The workload has not all checks ready")
NO_RESERVATION: Cond = ("False", "NoReservation", "The workload has no reservation")


def admitted_wl(w: Workload, when: Any) -> Workload:
    """``w`` holding quota in ``q`` (flavor ``default``) and admitted since ``when``."""
    return admitted(w, "q", {"cpu": "default"}, at_time=when, admitted_condition=True)


def check_state(
    name: str, state: str, message: str = "", requeue_after: int | None = None, when: Any = NOW
) -> AdmissionCheckState:
    return AdmissionCheckState(
        name=name,
        state=state,
        last_transition_time=when,
        message=message,
        requeue_after_seconds=requeue_after,
    )


def cluster(
    *, checks: dict[str, list[str]] | None = None, wl: Workload | None = None, **cq_kw: Any
) -> SimulatedCluster:
    names = sorted(checks or {})
    return simulate(
        [
            flavor("default"),
            *[admission_check(n) for n in names],
            cluster_queue("q", flavor_quotas("default", cpu=6), admission_checks=checks, **cq_kw),
            local_queue("lq", "default", "q"),
            wl if wl is not None else workload("w", requests={"cpu": 3}, created=at(3590)),
        ],
        now=NOW,
    )


def get(c: SimulatedCluster, key: str = KEY) -> Workload:
    w = c.get_workload(key)
    assert w is not None
    return w


def set_checks(c: SimulatedCluster, *states: AdmissionCheckState, key: str = KEY) -> None:
    """The check controller updates ``status.admissionChecks`` of the stored workload."""
    updated = transitions.copy_for_status(get(c, key))
    by_name = {s.name: s for s in states}
    updated.status.admission_checks = [
        by_name.pop(s.name, s) for s in updated.status.admission_checks
    ] + list(by_name.values())
    c.write_workload_status(updated)


def checks(w: Workload) -> list[tuple[str, str, str, int | None]]:
    return [(s.name, s.state, s.message, s.retry_count) for s in w.status.admission_checks]


# --- the scheduler's view (TestSchedule cases) ---------------------------------------------------------


def test_workload_fits_in_single_cluster_queue_with_check_state_ready() -> None:
    """``workload fits in single clusterQueue, with check state ready``: reserved and admitted in one write."""
    w = workload("w", requests={"cpu": 3}, created=at(3590))
    w.status.admission_checks = [check_state("check", "Ready")]
    c = cluster(checks={"check": []}, wl=w)
    assert c.run(cycles=1).cycles[0].admitted == [KEY]
    assert conditions(get(c)) == {"QuotaReserved": RESERVED, "Admitted": ADMITTED}
    assert events(c) == [
        (KEY, "Normal", "QuotaReserved", "Quota reserved in ClusterQueue q, wait time since queued was 10s"),
        (KEY, "Normal", "Admitted", "Admitted by ClusterQueue q, wait time since reservation was 0s"),
    ]
    assert checks(get(c)) == [("check", "Ready", "", None)]


def test_ready_check_not_configured_on_the_cluster_queue_is_dropped() -> None:
    """Upstream's fixture lists a Ready check the ClusterQueue does not have: the controller removes it
    (``syncAdmissionCheckConditions``), nothing applies and the workload is admitted right away."""
    w = workload("w", requests={"cpu": 3}, created=at(3590))
    w.status.admission_checks = [check_state("check", "Ready")]
    c = cluster(wl=w)
    assert checks(get(c)) == []
    assert c.run(cycles=1).cycles[0].admitted == [KEY]
    assert conditions(get(c)) == {"QuotaReserved": RESERVED, "Admitted": ADMITTED}
    assert [e[2] for e in events(c)] == ["QuotaReserved", "Admitted"]


def test_workload_fits_in_single_cluster_queue_with_check_state_pending() -> None:
    """``workload fits in single clusterQueue, with check state pending``: QuotaReserved, not Admitted
    (``SyncAdmittedCondition``)."""
    c = cluster(checks={"check": []})
    # A check on every flavor is listed before the reservation (``AdmissionChecksForWorkload``).
    assert checks(get(c)) == [("check", "Pending", "", None)]
    assert c.run(cycles=1).cycles[0].admitted == [KEY]
    w = get(c)
    assert conditions(w) == {"QuotaReserved": RESERVED, "Admitted": UNSATISFIED}
    assert admission_of(w) == ("q", [("main", {"cpu": "default"}, {"cpu": "3"}, 1)])
    assert events(c) == [
        (KEY, "Normal", "QuotaReserved", "Quota reserved in ClusterQueue q, wait time since queued was 10s")
    ]
    # The quota is held while the check is pending.
    assert c.cache.has_workload(KEY)


def test_check_becomes_ready_admits_with_event() -> None:
    """Flipping the check to Ready makes the workload controller write Admitted=True and the Admitted
    event, reacting at the time of the check's write (t+2s), not at the next cycle's."""
    c = cluster(checks={"check": []})
    c.run(cycles=1)
    c.events.clear()
    c.advance(2)
    set_checks(c, check_state("check", "Ready", "provisioned", when=c.now))
    c.advance(1)
    assert conditions(get(c)) == {"QuotaReserved": RESERVED, "Admitted": ADMITTED}
    assert events(c) == [
        (KEY, "Normal", "Admitted", "Admitted by ClusterQueue q, wait time since reservation was 2s")
    ]
    c.finalize_status()
    status = c.objects[("ClusterQueue", "", "q")].obj.status
    assert (status.reserving_workloads, status.admitted_workloads) == (1, 1)


def test_reserved_but_not_admitted_counts_in_reservation_not_usage() -> None:
    c = cluster(checks={"check": []})
    c.run(cycles=1)
    c.finalize_status()
    status = c.objects[("ClusterQueue", "", "q")].obj.status
    assert (status.pending_workloads, status.reserving_workloads, status.admitted_workloads) == (0, 1, 0)
    assert [(r.name, str(r.total)) for r in status.flavors_reservation[0].resources] == [("cpu", "3")]
    assert [(r.name, str(r.total)) for r in status.flavors_usage[0].resources] == [("cpu", "0")]


# --- Retry (upstream ``reconcileCheckBasedEviction``) -------------------------------------------------

RETRY_MSG = 'Evicted due to AdmissionCheck in Retry state: "check" (capacity not available)'


def test_retry_evicts_and_requeues_after_backoff() -> None:
    c = cluster(checks={"check": []})
    c.run(cycles=1)
    c.events.clear()
    retry_at = c.now
    set_checks(c, check_state("check", "Retry", "capacity not available", requeue_after=10, when=retry_at))

    # First reconcile: requeueAt = lastTransitionTime + requeueAfterSeconds (``NeedsRequeueAtUpdate``);
    # until then the workload controller only waits ("Waiting for backoff to finish" in upstream's
    # ``Reconcile``): the workload keeps its reservation.
    c.advance(1)
    w = get(c)
    assert w.status.requeue_state is not None and w.status.requeue_state.requeue_at == at(3610)
    assert conditions(w) == {"QuotaReserved": RESERVED, "Admitted": UNSATISFIED}
    while c.now < at(3609):
        c.advance(1)
        assert c.run_cycle().heads == 0
        assert conditions(get(c)) == {"QuotaReserved": RESERVED, "Admitted": UNSATISFIED}
    assert events(c) == []
    assert c.cache.has_workload(KEY)

    # At requeueAt the check evicts (``reconcileCheckBasedEviction``), the job integration releases
    # the quota, the expired backoff finishes and the workload is reserved again in the same second.
    c.advance(1)
    assert c.now == at(3610)
    w = get(c)
    assert w.status.admission is None
    assert conditions(w) == {
        "QuotaReserved": ("False", "PendingEvaluation", RETRY_MSG),
        "Admitted": NO_RESERVATION,
        "Evicted": ("True", "AdmissionCheck", RETRY_MSG),
        "Requeued": ("True", "BackoffFinished", "The workload backoff was finished"),
    }
    assert checks(w) == [("check", "Pending", "Reset to Pending after eviction. Previously: Retry", 1)]
    assert [(e.reason, e.count) for e in w.status.scheduling_stats.evictions] == [("AdmissionCheck", 1)]  # type: ignore[union-attr]
    assert events(c) == [(KEY, "Normal", "EvictedDueToAdmissionCheck", RETRY_MSG)]
    assert w.status.requeue_state is None
    assert c.run_cycle().heads == 1
    w = get(c)
    assert conditions(w) == {
        "QuotaReserved": RESERVED,
        "Admitted": UNSATISFIED,
        "Evicted": ("False", "QuotaReserved", f"Previously: {RETRY_MSG}"),
        "Requeued": ("True", "BackoffFinished", "The workload backoff was finished"),
    }
    assert events(c)[-1] == (
        KEY,
        "Normal",
        "QuotaReserved",
        "Quota reserved in ClusterQueue q, wait time since queued was 0s",
    )


def test_retry_without_delay_requeues_immediately() -> None:
    c = cluster(checks={"check": []})
    c.run(cycles=1)
    set_checks(c, check_state("check", "Retry", "capacity not available", when=c.now))
    c.advance(1)
    w = get(c)
    assert conditions(w)["Evicted"] == ("True", "AdmissionCheck", RETRY_MSG)
    assert w.status.requeue_state is None
    c.advance(1)
    assert conditions(get(c))["Requeued"] == ("True", "BackoffFinished", "The workload backoff was finished")
    assert c.run_cycle().admitted == [KEY]


def test_retry_check_with_a_delay_sets_requeue_at_of_a_pending_workload() -> None:
    """Upstream ``Reconcile`` runs ``NeedsRequeueAtUpdate`` before looking at the quota: a Retry
    check's delay moves ``requeueAt`` of a pending workload too, and the backoff ends there."""
    c = cluster(checks={"check": []})
    set_checks(c, check_state("check", "Retry", "capacity not available", requeue_after=5, when=NOW))
    c.advance(1)
    w = get(c)
    assert w.status.admission is None
    assert w.status.requeue_state is not None and w.status.requeue_state.requeue_at == at(3605)
    assert w.status.requeue_state.count is None
    while c.now < at(3604):
        c.advance(1)
        assert transitions.requeue_at(get(c)) == at(3605)
    c.advance(1)
    assert get(c).status.requeue_state is None
    assert events(c) == []


def test_pending_workload_with_retry_check_is_not_scheduled() -> None:
    """``Scheduler.nominate``: a queued workload with a Retry/Rejected check is inadmissible."""
    w = workload("w", requests={"cpu": 3}, created=at(3590))
    w.status.admission_checks = [check_state("check", "Retry", "boom")]
    c = cluster(checks={"check": []}, wl=w)
    assert c.run(cycles=1).cycles[0].admitted == []
    assert conditions(get(c)) == {
        "QuotaReserved": ("False", "PendingEvaluation", "The workload has failed admission checks"),
        "Admitted": NO_RESERVATION,
    }
    assert events(c) == [(KEY, "Warning", "PendingEvaluation", "The workload has failed admission checks")]
    assert queued(c) == ({}, {"q": [KEY]})


# --- Rejected (upstream ``reconcileCheckBasedEviction``) -----------------------------------------------


@pytest.mark.parametrize(
    ("states", "rejected"),
    [
        (
            [check_state("check", "Rejected", "no capacity")],
            'AdmissionCheck in Rejected state: "check" (no capacity)',
        ),
        (
            [check_state("a-check", "Rejected"), check_state("check", "Rejected", "no capacity")],
            'AdmissionChecks in Rejected state: "a-check"; "check" (no capacity)',
        ),
    ],
    ids=["one check", "several checks"],
)
def test_rejected_deactivates(states: list[AdmissionCheckState], rejected: str) -> None:
    c = cluster(checks={"check": [], "a-check": []})
    c.run(cycles=1)
    c.events.clear()
    set_checks(c, *[msgspec.structs.replace(s, last_transition_time=c.now) for s in states])
    c.advance(1)
    w = get(c)
    deactivated = f"The workload is deactivated due to {rejected}"
    assert w.spec.active is False
    assert conditions(w)["Evicted"] == ("True", "DeactivatedDueToAdmissionCheck", deactivated)
    assert conditions(w)["Requeued"] == ("False", "DeactivatedDueToAdmissionCheck", deactivated)
    assert "DeactivationTarget" not in conditions(w)
    assert w.status.admission is None
    assert events(c) == [
        (KEY, "Warning", "AdmissionCheckRejected", f"Deactivated due to {rejected}"),
        (KEY, "Normal", "EvictedDueToDeactivatedDueToAdmissionCheck", deactivated),
    ]
    # Deactivation frees the quota at once and the workload leaves the queues.
    assert not c.cache.has_workload(KEY)
    assert queued(c) == ({}, {})
    assert c.run_cycle().heads == 0


def test_rejected_workload_quota_reserved_reason_is_deactivated() -> None:
    """``syncQuotaReservedFalseCondition``: once the reservation is released the controller reports the
    inactive workload as ``Deactivated`` / ``The workload is deactivated``."""
    c = cluster(checks={"check": []})
    c.run(cycles=1)
    set_checks(c, check_state("check", "Rejected", "no capacity", when=c.now))
    c.advance(1)
    assert conditions(get(c))["QuotaReserved"] == ("False", "Deactivated", "The workload is deactivated")
    assert conditions(get(c))["Admitted"] == NO_RESERVATION


# --- onFlavors (upstream ``AdmissionChecksForWorkload``) -----------------------------------------------


def two_flavor_cluster(cpu: int) -> SimulatedCluster:
    return simulate(
        [
            flavor("small"),
            flavor("large"),
            admission_check("check"),
            cluster_queue(
                "q",
                flavor_quotas("small", cpu=1),
                flavor_quotas("large", cpu=10),
                admission_checks={"check": ["large"]},
            ),
            local_queue("lq", "default", "q"),
            workload("w", requests={"cpu": cpu}, created=at(3590)),
        ],
        now=NOW,
    )


def test_pending_admission_check_with_nofit_and_fit_flavors() -> None:
    """The first flavor does not fit; the second carries an onFlavors check that only appears after the
    reservation, so the scheduler does not write Admitted and the controller then reports the check."""
    c = two_flavor_cluster(5)
    assert checks(get(c)) == []
    assert c.run(cycles=1).cycles[0].admitted == [KEY]
    w = get(c)
    assert admission_of(w) == ("q", [("main", {"cpu": "large"}, {"cpu": "5"}, 1)])
    assert checks(w) == [("check", "Pending", "", None)]
    assert conditions(w) == {"QuotaReserved": RESERVED, "Admitted": UNSATISFIED}
    assert events(c) == [
        (
            KEY,
            "Normal",
            "QuotaReserved",
            "Quota reserved in ClusterQueue q, wait time since queued was 10s; Flavors considered: "
            "main: small(NoFit;insufficient quota for cpu in flavor small, previously considered podsets requests "
            "(0) + current podset request (5) > maximum capacity (1))",
        )
    ]


def test_on_flavors_check_does_not_apply_to_other_flavors() -> None:
    c = two_flavor_cluster(1)
    assert c.run(cycles=1).cycles[0].admitted == [KEY]
    w = get(c)
    assert admission_of(w) == ("q", [("main", {"cpu": "small"}, {"cpu": "1"}, 1)])
    assert checks(w) == []
    assert conditions(w) == {"QuotaReserved": RESERVED, "Admitted": ADMITTED}
    assert [e[2] for e in events(c)] == ["QuotaReserved", "Admitted"]


# --- preemption of a workload with checks ---------------------------------------------------------------

PREEMPT_MSG = (
    "Preempted to accommodate a workload (UID: uid-default-high, JobUID: UNKNOWN) due to prioritization in the "
    "ClusterQueue; preemptor path: /q; preemptee path: /q"
)


def test_preempted_workload_keeps_admitted_until_quota_is_released() -> None:
    """Eviction resets the checks to Pending but does not touch ``Admitted`` (``evict.Evict``); it turns
    False only when the job integration releases the quota (``JobReconciler``), accumulating the admitted
    time."""
    victim = workload("victim", requests={"cpu": 4})
    victim.status.admission_checks = [check_state("check", "Ready", "ok", when=at(0))]
    objs = [
        flavor("default"),
        admission_check("check"),
        cluster_queue(
            "q",
            flavor_quotas("default", cpu=4),
            preemption={"within_cluster_queue": "LowerPriority"},
            admission_checks={"check": []},
        ),
        local_queue("lq", "default", "q"),
        admitted_wl(victim, at(3599)),
        workload("high", priority=10, requests={"cpu": 4}, created=at(10)),
    ]
    c = simulate(objs, now=NOW)
    assert c.run(cycles=1).cycles[0].preempted == ["default/victim"]
    w = get(c, "default/victim")
    assert conditions(w) == {
        "QuotaReserved": RESERVED,
        "Admitted": ADMITTED,
        "Evicted": ("True", "Preempted", PREEMPT_MSG),
        "Preempted": ("True", "InClusterQueue", PREEMPT_MSG),
    }
    assert checks(w) == [("check", "Pending", "Reset to Pending after eviction. Previously: Ready", None)]
    assert w.status.accumulated_past_execution_time_seconds is None

    c.advance(1)
    w = get(c, "default/victim")
    assert conditions(w)["Admitted"] == NO_RESERVATION
    # Admitted at 3599, released at 3600 when the job integration completed the eviction, at the
    # preempting cycle's time (``JobReconciler.ReconcileGenericJob``), not at the next cycle's.
    assert w.status.accumulated_past_execution_time_seconds == 1
    assert c.run_cycle().admitted == ["default/high"]
    # The preemptor reserves quota; its check (on every flavor) is still pending.
    assert conditions(get(c, "default/high")) == {"QuotaReserved": RESERVED, "Admitted": UNSATISFIED}


# --- the decisions as tables over core.workload.reconcile (upstream workload_controller_test.go) -----
#
# Both drivers (the simulator above, the controllers of ``pykueue serve``) apply these outcomes;
# the cases are named after upstream's ``TestReconcile`` / ``TestSyncCheckStates`` where they match.


def _reserved(checks: list[AdmissionCheckState], *, admitted_condition: bool = False) -> Workload:
    w = workload("w", requests={"cpu": 3}, created=at(3590))
    w = admitted_wl(w, at(3590)) if admitted_condition else admitted(w, "q", {"cpu": "default"}, at_time=at(3590))
    w.status.admission_checks = list(checks)
    return w


Ev3 = tuple[str, str, str]


def _summary(outcome: reconcile.Outcome) -> tuple[str, dict[str, Cond], list[tuple[str, str]], list[Ev3]]:
    written = outcome.status if outcome.status is not None else outcome.spec
    if written is None:
        return "", {}, [], []
    kind = "status" if outcome.status is not None else "spec"
    checks = [(c.name, c.state) for c in written.status.admission_checks]
    return kind, conditions(written), checks, [(e.type, e.reason, e.note) for e in outcome.events]


ADMISSION_CHECK_CASES: list[tuple[str, list[AdmissionCheckState], list[str], bool, Any]] = [
    # (name, current checks, checks the ClusterQueue requires, already admitted, expected summary or None)
    (
        "assign Admission Checks from ClusterQueue.spec.AdmissionChecks",
        [],
        ["ac1", "ac2"],
        False,
        ("status", {"QuotaReserved": RESERVED, "Admitted": UNSATISFIED}, [("ac1", "Pending"), ("ac2", "Pending")], []),
    ),
    (
        "admit",
        [check_state("check", "Ready")],
        ["check"],
        False,
        (
            "status",
            {"QuotaReserved": RESERVED, "Admitted": ADMITTED},
            [("check", "Ready")],
            [("Normal", "Admitted", "Admitted by ClusterQueue q, wait time since reservation was 10s")],
        ),
    ),
    ("already admitted", [check_state("check", "Ready")], ["check"], True, None),
    ("preserve conditions data", [check_state("check", "Pending")], ["check"], False, None),
    (
        "cleanup",
        [check_state("ac0", "Pending"), check_state("ac1", "Pending")],
        [],
        False,
        (
            "status",
            {"QuotaReserved": RESERVED, "Admitted": ADMITTED},
            [],
            [("Normal", "Admitted", "Admitted by ClusterQueue q, wait time since reservation was 10s")],
        ),
    ),
]


@pytest.mark.parametrize(
    ("name", "checks", "required", "is_admitted", "want"), ADMISSION_CHECK_CASES, ids=[c[0] for c in ADMISSION_CHECK_CASES]
)
def test_admission_checks_decision(
    name: str, checks: list[AdmissionCheckState], required: list[str], is_admitted: bool, want: Any
) -> None:
    w = _reserved(checks, admitted_condition=is_admitted)
    if checks and not is_admitted:  # the Admitted condition the last sync left, while the checks were Pending
        w.status.admission_checks = [msgspec.structs.replace(c, state="Pending") for c in checks]
        transitions.sync_admitted_condition(w, at(3590), SchedulerOptions())
        w.status.admission_checks = list(checks)
    outcome = reconcile.admission_checks(w, required, "q", NOW, SchedulerOptions())
    assert (_summary(outcome) if outcome.writes else None) == want


REJECTED = 'AdmissionCheck in Rejected state: "check" (no capacity)'
LONG = "x" * 32768  # the longest message an AdmissionCheckState may hold
LONG_REJECTED = f'AdmissionCheck in Rejected state: "check" ({LONG})'
RETRY = 'Evicted due to AdmissionCheck in Retry state: "check-1" (try again)'
CHECK_EVICTION_CASES: list[tuple[str, list[AdmissionCheckState], Any]] = [
    (
        "admitted workload with rejected checks gets deactivated",
        [check_state("check", "Rejected", "no capacity")],
        (
            "status",
            {"QuotaReserved": RESERVED, "Admitted": ADMITTED, "DeactivationTarget": ("True", "AdmissionCheck", REJECTED)},
            [("check", "Rejected")],
            [("Warning", "AdmissionCheckRejected", f"Deactivated due to {REJECTED}")],
        ),
    ),
    (
        "workload with retry checks should be evicted and checks should be pending",
        [check_state("check-1", "Retry", "try again"), check_state("check-2", "Ready")],
        (
            "status",
            {
                "QuotaReserved": RESERVED,
                "Admitted": ADMITTED,
                "Evicted": ("True", "AdmissionCheck", RETRY),
            },
            [("check-1", "Pending"), ("check-2", "Pending")],
            [("Normal", "EvictedDueToAdmissionCheck", RETRY)],
        ),
    ),
    (
        "retry check with a delay: requeue at the delay, no eviction yet",
        [check_state("check", "Retry", "later", requeue_after=60)],
        ("status", {"QuotaReserved": RESERVED, "Admitted": ADMITTED}, [("check", "Retry")], []),
    ),
    ("ready checks: nothing to do", [check_state("check", "Ready")], None),
    # pykueue's: upstream ``workload.SetDeactivationTarget`` does not truncate the message (the
    # CRD's maxLength then refuses the write), while the event is truncated to 1024 bytes
    # (``api.TruncateEventMessage``).
    (
        "admitted workload with rejected checks gets deactivated, with a message longer than a condition's",
        [check_state("check", "Rejected", LONG)],
        (
            "status",
            {"QuotaReserved": RESERVED, "Admitted": ADMITTED, "DeactivationTarget": ("True", "AdmissionCheck", LONG_REJECTED)},
            [("check", "Rejected")],
            [("Warning", "AdmissionCheckRejected", f"Deactivated due to {LONG_REJECTED}"[:1020] + " ...")],
        ),
    ),
]


@pytest.mark.parametrize(("name", "checks", "want"), CHECK_EVICTION_CASES, ids=[c[0] for c in CHECK_EVICTION_CASES])
def test_check_based_eviction_decision(name: str, checks: list[AdmissionCheckState], want: Any) -> None:
    outcome = reconcile.check_based_eviction(_reserved(checks, admitted_condition=True), NOW, SchedulerOptions())
    assert (_summary(outcome) if outcome.writes else None) == want


def test_check_based_eviction_with_deactivation_target_already_set_does_nothing() -> None:
    w = _reserved([check_state("check", "Rejected", "no capacity")], admitted_condition=True)
    transitions.set_condition(w, "DeactivationTarget", "True", "AdmissionCheck", REJECTED, NOW)
    assert reconcile.check_based_eviction(w, NOW, SchedulerOptions()) == reconcile.NOTHING


def test_workload_with_deactivation_target_condition_should_be_deactivated_and_admission_checks_reset() -> None:
    """Upstream's three-write protocol, one decision per write, as both drivers apply it."""
    w = _reserved([check_state("check", "Rejected", "no capacity")], admitted_condition=True)
    phase1 = reconcile.check_based_eviction(w, NOW, SchedulerOptions())
    assert phase1.status is not None and phase1.reason == "AdmissionCheckRejected"
    assert reconcile.deactivation(w, NOW) == reconcile.NOTHING  # active, no target yet
    phase2 = reconcile.deactivation(phase1.status, NOW)
    assert phase2.spec is not None and phase2.status is None and phase2.events == ()
    assert phase2.spec.spec.active is False
    phase3 = reconcile.deactivation(phase2.spec, NOW)
    deactivated = f"The workload is deactivated due to {REJECTED}"
    assert _summary(phase3) == (
        "status",
        {"QuotaReserved": RESERVED, "Admitted": ADMITTED, "Evicted": ("True", "DeactivatedDueToAdmissionCheck", deactivated)},
        [("check", "Pending")],
        [("Normal", "EvictedDueToDeactivatedDueToAdmissionCheck", deactivated)],
    )
    assert phase3.status is not None and phase3.status.status.requeue_state is None
    assert reconcile.deactivation(phase3.status, NOW) == reconcile.NOTHING  # done


@pytest.mark.parametrize("how", ["spec.active=false", "DeactivationTarget"])
def test_workload_deactivated_between_cycles_is_evicted_and_its_quota_released(how: str) -> None:
    # The deactivation protocol runs on every workload the simulated controllers see change
    # (``_sync_touched``), as upstream ``WorkloadReconciler.Reconcile`` on each watch event.
    c = cluster()
    c.run(cycles=1)
    assert c.cache.has_workload(KEY)
    w = get(c)
    if how == "spec.active=false":
        c.update_workload(msgspec.structs.replace(w, spec=msgspec.structs.replace(w.spec, active=False)))
        reason, message = "Deactivated", "The workload is deactivated"
    else:
        updated = transitions.copy_for_status(w)
        transitions.set_condition(updated, "DeactivationTarget", "True", "AdmissionCheck", "x", c.now)
        c.update_workload(updated)
        reason, message = "DeactivatedDueToAdmissionCheck", "The workload is deactivated due to x"
    c.advance(1)
    w = get(c)
    assert w.spec.active is False
    assert conditions(w)["Evicted"] == ("True", reason, message)
    # The job integration releases the quota on its next pass, as for any other eviction.
    c.advance(1)
    w = get(c)
    assert conditions(w) == {
        "QuotaReserved": ("False", "Deactivated", "The workload is deactivated"),
        "Admitted": NO_RESERVATION,
        "Evicted": ("True", reason, message),
        "Requeued": ("False", reason, message),
    }
    assert w.status.admission is None
    assert [(e.reason, e.count) for e in w.status.scheduling_stats.evictions] == [("Deactivated", 1)]  # type: ignore[union-attr]
    assert not c.cache.has_workload(KEY)
    assert c.run_cycle().heads == 0
