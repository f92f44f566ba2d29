"""Workload status transitions, as pure functions on a Workload object.

Upstream ``pkg/workload/`` (``workload.go``, ``admissionchecks.go``, ``evict/``) and
``workload_controller.go`` (conditions, admission-check sync, the Admitted condition, eviction
and its completion by the job integration, backoff). The
scheduler, the dry-run engine and the controllers all use these, so each rule lives once.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import msgspec

from pykueue.api.kueue import (
    ADMISSION_GATED_BY_ANNOTATION,
    CHECK_PENDING,
    CHECK_READY,
    CHECK_REJECTED,
    CHECK_RETRY,
    STOP_HOLD_AND_DRAIN,
    STOP_NONE,
    Admission,
    AdmissionCheckState,
    PodSetRequest,
    RequeueState,
    SchedulingStats,
    Workload,
    WorkloadSchedulingStatsEviction,
)
from pykueue.api.meta import (
    EPOCH,
    Condition,
    find_condition,
    format_time,
    set_status_condition,
    to_time,
    truncate_message,
)
from pykueue.api.quantity import resource_quantity_string
from pykueue.core.options import SchedulerOptions
from pykueue.core.workload.info import (
    ADMITTED,
    BLOCKED_ON_PREEMPTION_GATES,
    DEACTIVATION_TARGET,
    EVICTED,
    PODS_READY,
    PREEMPTED,
    QUOTA_RESERVED,
    REQUEUED,
    WorkloadInfo,
    has_quota_reservation,
    is_active,
    is_admitted,
    is_evicted,
    is_finished,
)


def copy_for_status(wl: Workload) -> Workload:
    """A copy whose status lists can be changed without touching ``wl``."""
    st = wl.status
    status = msgspec.structs.replace(
        st,
        conditions=list(st.conditions),
        admission_checks=list(st.admission_checks),
        resource_requests=list(st.resource_requests),
    )
    return msgspec.structs.replace(wl, status=status)


def _gen(wl: Workload) -> int:
    return wl.metadata.generation


def set_condition(
    wl: Workload, ctype: str, status: str, reason: str, message: str, now: datetime, observed: bool = True
) -> bool:
    cond = Condition(
        type=ctype,
        status=status,
        reason=reason,
        message=truncate_message(message),
        observed_generation=_gen(wl) if observed else 0,
    )
    return set_status_condition(wl.status.conditions, cond, now)


def set_deactivation_target(wl: Workload, reason: str, message: str, now: datetime) -> bool:
    """Upstream ``workload.SetDeactivationTarget``: ``DeactivationTarget=True`` with the Workload's
    generation. Unlike the other conditions Kueue writes, its message is not truncated
    (``api.TruncateConditionMessage`` is not applied): a rejected check's message longer than the
    CRD's 32768 characters makes the write fail, and the reconcile is retried."""
    cond = Condition(
        type=DEACTIVATION_TARGET, status="True", reason=reason, message=message, observed_generation=_gen(wl)
    )
    return set_status_condition(wl.status.conditions, cond, now)


# --- quota reservation (upstream ``workload.SetQuotaReservation``) ---------------------------


def set_quota_reservation(wl: Workload, admission: Admission, now: datetime) -> None:
    """Write the admission and QuotaReserved=True; flip Evicted/Preempted/Blocked to False."""
    wl.status.admission = admission
    wl.status.resource_requests = []
    set_condition(
        wl, QUOTA_RESERVED, "True", "QuotaReserved", f"Quota reserved in ClusterQueue {admission.cluster_queue}", now
    )
    for ctype in (EVICTED, PREEMPTED, BLOCKED_ON_PREEMPTION_GATES):
        old = find_condition(wl.status.conditions, ctype)
        if old is not None and old.status == "True":
            # ``resetActiveCondition``: observedGeneration is the workload's, Preempted's too.
            set_condition(wl, ctype, "False", "QuotaReserved", f"Previously: {old.message}", now)


def all_checks_listed(wl: Workload, required: list[str]) -> bool:
    listed = {c.name for c in wl.status.admission_checks}
    return all(name in listed for name in required)


def sync_admitted_condition(wl: Workload, now: datetime, options: SchedulerOptions) -> bool:
    """``SyncAdmittedCondition``. Returns whether Admitted became True."""
    reserved = has_quota_reservation(wl)
    checks_ready = all(c.state == CHECK_READY for c in wl.status.admission_checks)
    # ``HasTopologyAssignmentsPending``: a delayed request still Pending and no assignment yet.
    topology_ready = wl.status.admission is None or not any(
        psa.topology_assignment is None and psa.delayed_topology_request == "Pending"
        for psa in wl.status.admission.pod_set_assignments
    )
    current = find_condition(wl.status.conditions, ADMITTED)
    was_admitted = current is not None and current.status == "True"
    observability = options.gate_unadmitted_observability
    if observability:
        qr = find_condition(wl.status.conditions, QUOTA_RESERVED)
        if qr is None and current is None and not options.gate("UnadmittedWorkloadsExplicitStatus"):
            return False
        if not reserved:
            status, reason, msg = "False", "NoReservation", "The workload has no reservation"
        elif not checks_ready:
            status, reason, msg = "False", "UnsatisfiedAdmissionChecks", "The workload has not all checks ready"
        elif not topology_ready:
            status, reason, msg = "False", "PendingDelayedTopologyRequests", "There are pending delayed topology requests"
        else:
            status, reason, msg = "True", "Admitted", "The workload is admitted"
    else:
        target = reserved and checks_ready and topology_ready
        if target == was_admitted:
            return False
        if target:
            status, reason, msg = "True", "Admitted", "The workload is admitted"
        elif not reserved and not checks_ready:
            status, reason, msg = (
                "False",
                "NoReservationUnsatisfiedChecks",
                "The workload has no reservation and not all checks ready",
            )
        elif not reserved:
            status, reason, msg = "False", "NoReservation", "The workload has no reservation"
        elif not checks_ready:
            status, reason, msg = "False", "UnsatisfiedChecks", "The workload has not all checks ready"
        else:
            status, reason, msg = "False", "PendingDelayedTopologyRequests", "There are pending delayed topology requests"
    if was_admitted and status == "False" and current is not None:
        elapsed = int((to_time(now) - current.last_transition_time).total_seconds())
        wl.status.accumulated_past_execution_time_seconds = (
            wl.status.accumulated_past_execution_time_seconds or 0
        ) + elapsed
    set_condition(wl, ADMITTED, status, reason, msg, now)
    return status == "True" and not was_admitted


def unreserved_admitted_stale(wl: Workload, options: SchedulerOptions) -> bool:
    """Whether :func:`sync_admitted_condition` would change a Workload holding no quota and not
    admitted (only ``Admitted=False NoReservation`` is then possible, and only with
    ``UnadmittedWorkloadsObservability``); read-only, so callers copy the status only to write."""
    if not options.gate_unadmitted_observability:
        return False
    current = find_condition(wl.status.conditions, ADMITTED)
    if current is None:
        return find_condition(wl.status.conditions, QUOTA_RESERVED) is not None or options.gate(
            "UnadmittedWorkloadsExplicitStatus"
        )
    return (current.status, current.reason, current.message, current.observed_generation) != (
        "False",
        "NoReservation",
        "The workload has no reservation",
        _gen(wl),
    )


# --- pending status (upstream ``Scheduler.requeueAndUpdate``) -----------------------------------


def resource_requests_of(info: WorkloadInfo) -> list[PodSetRequest]:
    return [
        PodSetRequest(
            name=ps.name,
            resources={r: resource_quantity_string(r, v) for r, v in sorted(ps.total.items())},
        )
        for ps in info.pod_sets
    ]


def set_pending(
    wl: Workload, info: WorkloadInfo, reason: str, message: str, now: datetime, options: SchedulerOptions
) -> str | None:
    """QuotaReserved=False with the scheduler's reason; returns the Warning event's reason (None: no event).

    An empty granular reason (e.g. a NoFit pod set whose flavor attempts resolve to no reason)
    means the scheduler writes none: upstream's requeueAndUpdate sets the condition with reason ""
    and the workload controller (``resolveGranularUnadmittedQuotaReservedCondition``) replaces it
    with PendingEvaluation and its own message. That end state is written here directly (an empty
    reason is not a valid condition); the workload controller then swaps in the "Bypassed" message
    if the workload's scheduling hash was bulk-moved (``pending_condition``). The Warning event
    upstream records carries the same empty reason and action, which events.k8s.io/v1 rejects,
    so there is none.
    """
    event_reason: str | None = reason
    if not options.gate_unadmitted_observability:
        reason = event_reason = "Pending"
    elif not reason:
        reason, message, event_reason = PENDING_EVALUATION, PENDING_EVALUATION_MESSAGE, None
    set_condition(wl, QUOTA_RESERVED, "False", reason, message, now)
    wl.status.admission = None
    sync_admitted_condition(wl, now, options)
    requests = resource_requests_of(info)
    if requests != wl.status.resource_requests:
        wl.status.resource_requests = requests
    return event_reason


# --- admission checks (upstream ``syncAdmissionCheckConditions``) -------------------------------


def sync_admission_checks(wl: Workload, required: list[str], now: datetime) -> bool:
    """Add missing required checks as Pending, drop the others, sort by name."""
    current = {c.name: c for c in wl.status.admission_checks}
    wanted = sorted(set(required))
    new: list[AdmissionCheckState] = []
    for name in wanted:
        existing = current.get(name)
        if existing is None:
            existing = AdmissionCheckState(name=name, state=CHECK_PENDING, last_transition_time=to_time(now))
        new.append(existing)
    if [c.name for c in new] == [c.name for c in wl.status.admission_checks] and len(new) == len(current):
        return False
    wl.status.admission_checks = new
    return True


def _check_items(checks: list[AdmissionCheckState]) -> tuple[str, str]:
    noun = "AdmissionCheck" if len(checks) == 1 else "AdmissionChecks"
    items = "; ".join(
        f'"{c.name}" ({c.message})' if c.message else f'"{c.name}"' for c in sorted(checks, key=lambda c: c.name)
    )
    return noun, items


def rejected_checks_message(wl: Workload) -> str | None:
    rejected = [c for c in wl.status.admission_checks if c.state == CHECK_REJECTED]
    if not rejected:
        return None
    noun, items = _check_items(rejected)
    return f"{noun} in Rejected state: {items}"


def retry_checks_message(wl: Workload) -> str | None:
    retry = [c for c in wl.status.admission_checks if c.state == CHECK_RETRY]
    if not retry:
        return None
    noun, items = _check_items(retry)
    return f"Evicted due to {noun} in Retry state: {items}"


# --- eviction (upstream ``evict.Evict``) and its completion (``JobReconciler``) ----------------


def evict(wl: Workload, reason: str, message: str, now: datetime, underlying_cause: str = "") -> str:
    """Write Evicted=True and its side effects; returns the Evicted reason written."""
    ev_reason = f"DeactivatedDueTo{underlying_cause}" if reason == "Deactivated" and underlying_cause else reason
    set_condition(wl, EVICTED, "True", ev_reason, message, now)
    wl.status.cluster_name = None
    wl.status.nominated_cluster_names = []
    reset: list[AdmissionCheckState] = []
    for c in wl.status.admission_checks:
        if c.state == CHECK_PENDING:
            reset.append(c)
            continue
        reset.append(
            AdmissionCheckState(
                name=c.name,
                state=CHECK_PENDING,
                last_transition_time=to_time(now),
                message=f"Reset to Pending after eviction. Previously: {c.state}",
                requeue_after_seconds=c.requeue_after_seconds,
                retry_count=(c.retry_count or 0) + 1 if c.state == CHECK_RETRY else None,
            )
        )
    wl.status.admission_checks = reset
    wl.status.unhealthy_nodes = []
    wl.status.preemption_gates = [
        {**gate, "position": "Closed", "lastTransitionTime": format_time(now)} for gate in wl.status.preemption_gates
    ]
    blocked = find_condition(wl.status.conditions, BLOCKED_ON_PREEMPTION_GATES)
    if blocked is not None and blocked.status == "True":
        set_condition(wl, BLOCKED_ON_PREEMPTION_GATES, "False", ev_reason, message, now)
    stats = wl.status.scheduling_stats or SchedulingStats()
    evictions = list(stats.evictions)
    for i, e in enumerate(evictions):
        if e.reason == reason and e.underlying_cause == underlying_cause:
            evictions[i] = msgspec.structs.replace(e, count=e.count + 1)
            break
    else:
        evictions.append(WorkloadSchedulingStatsEviction(reason=reason, count=1, underlying_cause=underlying_cause))
    wl.status.scheduling_stats = SchedulingStats(evictions=evictions)
    return ev_reason


def complete_eviction(wl: Workload, now: datetime, options: SchedulerOptions, pod_owned: bool = False) -> bool:
    """The job integration releasing quota of an evicted workload (``JobReconciler.ReconcileGenericJob``)."""
    ev = find_condition(wl.status.conditions, EVICTED)
    if ev is None or ev.status != "True" or not has_quota_reservation(wl):
        return False
    requeued = ev.reason in ("Preempted", "NodeFailures") and not (
        pod_owned and options.gate("SkipReassignmentForPodOwnedWorkloads")
    )
    set_condition(wl, REQUEUED, "True" if requeued else "False", ev.reason, ev.message, now)
    pending_reason = "PendingEvaluation" if options.gate_unadmitted_observability else "Pending"
    set_condition(wl, QUOTA_RESERVED, "False", pending_reason, ev.message, now)
    wl.status.admission = None
    sync_admitted_condition(wl, now, options)
    return True


# --- backoff (upstream ``workload.UpdateRequeueState``) ---------------------------------------


def backoff_seconds(n: int, base: float, cap: float) -> float:
    """d₁ = base; dₖ₊₁ = min(2·dₖ, cap) — without jitter (deterministic core)."""
    d = float(base)
    for _ in range(max(0, n - 1)):
        d = min(2 * d, float(cap))
    return d


_UNCAPPED_BACKOFF_SECONDS = (2**63 - 1) // 2 / 1e9
"""``pkg/util/wait.NewBackoff``: a zero cap means ``math.MaxInt64 / ceil(factor)`` nanoseconds."""


def pods_ready_backoff_seconds(n: int, base: float, cap: float) -> float:
    """``workload.UpdateRequeueState``'s wait for the ``n``-th requeue: ``backoffMaxSeconds: 0``
    (allowed, only negatives are rejected) leaves the backoff uncapped instead of zeroing it."""
    return backoff_seconds(n, base, cap if cap > 0 else _UNCAPPED_BACKOFF_SECONDS)


def set_requeue_state(wl: Workload, wait_until: datetime, increment_count: bool) -> bool:
    """``workload.SetRequeueState``: move ``requeueAt`` to ``wait_until`` unless it is already at
    or past it (the state is shared, a later requeue is never overwritten), and count one more
    requeue if asked. Returns whether anything changed."""
    rs = wl.status.requeue_state or RequeueState()
    when = to_time(wait_until)
    updated = False
    at = rs.requeue_at
    if at is None or at < when:
        at, updated = when, True
    count = rs.count
    if increment_count:
        count, updated = (count or 0) + 1, True
    wl.status.requeue_state = RequeueState(count=count, requeue_at=at)
    return updated


def retry_check_requeue_at(wl: Workload) -> datetime | None:
    """Latest ``lastTransitionTime + requeueAfterSeconds`` over Retry checks; None for upstream's zero
    time (``admissionchecks.go`` ``GetMaxRetryTime``: a check without ``requeueAfterSeconds`` or with
    a zero ``lastTransitionTime`` is skipped; ``requeueAfterSeconds: 0`` counts)."""
    best: datetime | None = None
    for c in wl.status.admission_checks:
        if c.requeue_after_seconds is None or c.last_transition_time == EPOCH or c.state != CHECK_RETRY:
            continue
        at = to_time(c.last_transition_time) + timedelta(seconds=math.floor(c.requeue_after_seconds))
        if best is None or at > best:
            best = at
    return best


def admitted_not_ready(
    wl: Workload, now: datetime, timeout: float, recovery_timeout: float | None
) -> tuple[str, float]:
    """Upstream ``WorkloadReconciler.admittedNotReadyWorkload`` with waitForPodsReady configured:
    the eviction's underlying cause ("" when the workload is not timed) and the seconds left
    before it times out (0 once exceeded)."""
    admitted = find_condition(wl.status.conditions, ADMITTED)
    if admitted is None or admitted.status != "True":
        return "", 0.0
    ready = find_condition(wl.status.conditions, PODS_READY)
    if ready is not None and ready.status == "True":
        return "", 0.0
    if ready is None or ready.reason in ("WaitForStart", "PodsReady"):
        elapsed = (to_time(now) - admitted.last_transition_time).total_seconds()
        return "WaitForStart", max(timeout - elapsed, 0.0)
    if ready.reason == "WaitForRecovery" and recovery_timeout is not None:
        elapsed = (to_time(now) - ready.last_transition_time).total_seconds()
        return "WaitForRecovery", max(recovery_timeout - elapsed, 0.0)
    return "", 0.0


def finish_backoff(wl: Workload, now: datetime) -> bool:
    """Clear an expired requeueAt and flip Requeued=False to BackoffFinished
    (``WorkloadReconciler.Reconcile``, which returns first for a finished workload)."""
    if is_finished(wl):
        return False
    rs = wl.status.requeue_state
    changed = False
    if rs is not None and rs.requeue_at is not None and to_time(now) >= rs.requeue_at:
        wl.status.requeue_state = RequeueState(count=rs.count) if rs.count is not None else None
        changed = True
    if wl.status.requeue_state is None or wl.status.requeue_state.requeue_at is None:
        rq = find_condition(wl.status.conditions, REQUEUED)
        if rq is not None and rq.status == "False" and rq.reason in ("PodsReadyTimeout", "AdmissionCheck"):
            set_condition(wl, REQUEUED, "True", "BackoffFinished", "The workload backoff was finished", now)
            changed = True
    return changed


def requeue_at(wl: Workload) -> datetime | None:
    rs = wl.status.requeue_state
    return rs.requeue_at if rs is not None else None


def is_evicted_and_reserved(wl: Workload) -> bool:
    return is_evicted(wl) and has_quota_reservation(wl)




# --- the workload controller's view of queues (upstream ``getQueueBlocker``) --------------------

SCHEDULER_REASONS = frozenset(
    {
        "WaitingForQuota",
        "NoMatchingFlavor",
        "ExceedsMaxQuota",
        "TopologyPlacementFailed",
        "WaitingForPreemptedWorkloads",
        "WaitingForPodsReady",
        "PendingEvaluation",
    }
)
BYPASSABLE_REASONS = frozenset({"", "Deactivated", "PendingEvaluation", "Suspended", "Pending"})
BYPASSED_MESSAGE = "Bypassed scheduling evaluation because an equivalent workload recently failed"
PENDING_EVALUATION = "PendingEvaluation"
PENDING_EVALUATION_MESSAGE = "Workload is pending evaluation in the scheduling queue"


class QueueView(msgspec.Struct, frozen=True, gc=False):
    """What the workload controller knows about a workload's queues (a msgspec Struct, built in C:
    one per workload change the controller handles)."""

    local_queue_exists: bool
    local_queue_stop_policy: str
    cluster_queue: str
    cluster_queue_exists: bool
    cluster_queue_active: bool
    cluster_queue_stop_policy: str
    bulk_bypass_reason: str | None = None
    admissibility_error: str | None = None
    cluster_queue_terminating: bool = False


ADMISSION_GATED = "AdmissionGated"
ADMISSION_GATE_CLEARED_MESSAGE = "AdmissionGatedBy cleared, waiting for quota reservation"


def admission_gate(wl: Workload, options: SchedulerOptions) -> str:
    """The gates in the ``admission-gated-by`` annotation ("" when none or the feature is off;
    ``workload.HasAdmissionGate``)."""
    if not options.gate_admission_gated_by:
        return ""
    return wl.metadata.annotations.get(ADMISSION_GATED_BY_ANNOTATION) or ""


def is_admission_gated(wl: Workload) -> bool:
    """QuotaReserved carries the AdmissionGated reason (``hasAdmissionGatedCondition``)."""
    current = find_condition(wl.status.conditions, QUOTA_RESERVED)
    return current is not None and current.reason == ADMISSION_GATED


def admission_gate_transition(wl: Workload, options: SchedulerOptions) -> tuple[str, str] | None:
    """The QuotaReserved=False (reason, message) upstream's ``mayUpdateConditionForAdmissionGatedBy``
    writes, or None. It runs before ``syncQuotaReservedFalseCondition`` and is gated only by
    AdmissionGatedBy: a gate first seen sets AdmissionGated; a removed gate writes
    ``UnadmittedWorkloadReasonWithFallback("PendingEvaluation", "Pending")``."""
    if not options.gate_admission_gated_by:
        return None
    gated = admission_gate(wl, options)
    was_gated = is_admission_gated(wl)
    if gated and not was_gated:
        return ADMISSION_GATED, f"Admission is gated by: {gated}"
    if not gated and was_gated:
        reason = PENDING_EVALUATION if options.gate_unadmitted_observability else "Pending"
        return reason, ADMISSION_GATE_CLEARED_MESSAGE
    return None


def admission_gate_event(transition: tuple[str, str]) -> tuple[str, str]:
    """The Normal event (reason, note) ``mayUpdateConditionForAdmissionGatedBy`` records after
    writing ``transition`` (from :func:`admission_gate_transition`)."""
    if transition[0] == ADMISSION_GATED:
        return ADMISSION_GATED, "Workload admission is gated by: " + transition[1].removeprefix("Admission is gated by: ")
    return "AdmissionGateCleared", "Admission gate cleared, workload is now admissible"


def pending_condition(
    wl: Workload, view: QueueView, options: SchedulerOptions, gate: tuple[str, str] | None = None
) -> tuple[str, str] | None:
    """``syncQuotaReservedFalseCondition`` for a workload without reservation; None: leave as is.
    A (reason, message) is written with the Workload's generation (``newQuotaReservedCondition``),
    also when it is the current condition's.

    ``gate`` is the condition :func:`admission_gate_transition` just wrote (upstream writes it in
    the previous reconcile, which then reads it as the current condition). While the gate
    annotation is present and QuotaReserved says AdmissionGated, the queue blockers (and
    Deactivated) are not applied: upstream's ``syncQuotaReservedFalseCondition`` would write them
    and its next ``mayUpdateConditionForAdmissionGatedBy`` gate the Workload again, alternating
    without end; here the gate's write is the settled state."""
    current = find_condition(wl.status.conditions, QUOTA_RESERVED)
    if gate is not None:
        current = Condition(type=QUOTA_RESERVED, status="False", reason=gate[0], message=gate[1])
    reason = current.reason if current is not None else ""
    gated = admission_gate(wl, options)
    if gated and reason == ADMISSION_GATED:
        # Without blockers upstream's granular rule writes the same reason (with the gates' current
        # list); the legacy rule leaves it.
        if not options.gate_unadmitted_observability:
            return None
        return ADMISSION_GATED, f"Admission is gated by: {gated}"
    if not options.gate_unadmitted_observability:
        blocker = _queue_blocker(wl, view)
        return ("Inadmissible", blocker[1]) if blocker else None
    if not is_active(wl):
        return "Deactivated", "The workload is deactivated"
    if current is not None and current.status == "False" and current.reason == "OnHold":
        return current.reason, current.message  # kept, re-stamped with the generation
    blocker = _queue_blocker(wl, view)
    if blocker is not None:
        return blocker
    if view.admissibility_error is not None:
        return "Misconfigured", view.admissibility_error
    if (
        view.bulk_bypass_reason is not None
        and options.gate_equivalence_hashing  # ``shouldCheckEquivalenceHash``
        and reason in BYPASSABLE_REASONS
        and (current is not None or options.gate("UnadmittedWorkloadsExplicitStatus"))
    ):
        return view.bulk_bypass_reason or "PendingEvaluation", BYPASSED_MESSAGE
    if current is not None and reason in SCHEDULER_REASONS:
        return current.reason, current.message  # the scheduler's feedback kept, re-stamped
    if current is None and not options.gate("UnadmittedWorkloadsExplicitStatus"):
        return None
    return PENDING_EVALUATION, PENDING_EVALUATION_MESSAGE


def _queue_blocker(wl: Workload, view: QueueView) -> tuple[str, str] | None:
    lq = wl.spec.queue_name
    if not view.local_queue_exists:
        return "Misconfigured", f"LocalQueue {lq} doesn't exist"
    if view.local_queue_stop_policy not in ("", STOP_NONE):
        return "Suspended", f"LocalQueue {lq} is inactive"
    if not view.cluster_queue_exists:
        return "Misconfigured", f"ClusterQueue {view.cluster_queue} doesn't exist"
    if not view.cluster_queue_active:
        return "Suspended", f"ClusterQueue {view.cluster_queue} is inactive"
    return None


def stopped_queue_action(wl: Workload, view: QueueView) -> tuple[str, str, str] | None:
    """For a workload holding quota: ("release"|"evict", reason, message) when its LocalQueue or
    ClusterQueue is stopped, missing or terminating; None: nothing to do.

    Upstream ``workload_controller.go``: ``reconcileOnLocalQueueActiveState`` first, then
    ``reconcileOnClusterQueueActiveState``. An admitted workload is only ever evicted, by a
    HoldAndDrain stop policy (the LocalQueue's first) and only once; a reserved one that is not
    admitted is released when its queue is missing or terminating, then when it is stopped.
    """
    lq, cq = wl.spec.queue_name, view.cluster_queue
    lq_policy, cq_policy = view.local_queue_stop_policy or STOP_NONE, view.cluster_queue_stop_policy or STOP_NONE
    if (
        lq_policy == STOP_NONE
        and cq_policy == STOP_NONE
        and view.local_queue_exists
        and view.cluster_queue_exists
        and not view.cluster_queue_terminating
    ):
        return None  # the common case, decided without reading the conditions
    if is_admitted(wl):
        if is_evicted(wl):
            return None
        if lq_policy == STOP_HOLD_AND_DRAIN:
            return "evict", "LocalQueueStopped", "The LocalQueue is stopped"
        if cq_policy == STOP_HOLD_AND_DRAIN:
            return "evict", "ClusterQueueStopped", "The ClusterQueue is stopped"
        return None
    if not view.local_queue_exists:
        return "release", "Misconfigured", f"LocalQueue {lq} is terminating or missing"
    if lq_policy != STOP_NONE:
        return "release", "Suspended", f"LocalQueue {lq} is stopped"
    if not view.cluster_queue_exists or view.cluster_queue_terminating:
        return "release", "Misconfigured", f"ClusterQueue {cq} is terminating or missing"
    if cq_policy != STOP_NONE:
        return "release", "Suspended", f"ClusterQueue {cq} is stopped"
    return None


def release_reservation(wl: Workload, reason: str, message: str, now: datetime, options: SchedulerOptions) -> None:
    """Drop a reservation without eviction (stopped or missing queue,
    ``reconcileOnClusterQueueActiveState``)."""
    set_condition(wl, QUOTA_RESERVED, "False", reason, message, now)
    wl.status.admission = None
    sync_admitted_condition(wl, now, options)


def reactivate(wl: Workload, now: datetime) -> bool:
    """``Requeued`` False/Deactivated → True/Reactivated for an active workload
    (``WorkloadReconciler.Reconcile``)."""
    rq = find_condition(wl.status.conditions, REQUEUED)
    if is_active(wl) and rq is not None and rq.status == "False" and rq.reason == "Deactivated":
        set_condition(wl, REQUEUED, "True", "Reactivated", "The workload was reactivated", now)
        return True
    return False


def restart_after_stop(wl: Workload, view: QueueView, now: datetime) -> bool:
    """``Requeued`` False → True once the queue that evicted the workload runs again (upstream
    ``WorkloadReconciler.Reconcile``): the LocalQueue must exist and not be stopped
    (``lqExists && lqActive``); for the ClusterQueue, the LocalQueue must be tracked by the queue
    manager (a stopped one is not: ``ClusterQueueForWorkload``) and the ClusterQueue must exist,
    not stopped. A missing queue is not a restarted one."""
    rq = find_condition(wl.status.conditions, REQUEUED)
    if rq is None or rq.status != "False" or not view.local_queue_exists:
        return False
    lq_running = view.local_queue_stop_policy in ("", STOP_NONE)
    if (
        rq.reason == "ClusterQueueStopped"
        and lq_running
        and view.cluster_queue_exists
        and view.cluster_queue_stop_policy in ("", STOP_NONE)
    ):
        set_condition(
            wl, REQUEUED, "True", "ClusterQueueRestarted", "The ClusterQueue was restarted after being stopped", now
        )
        return True
    if rq.reason == "LocalQueueStopped" and lq_running:
        set_condition(
            wl, REQUEUED, "True", "LocalQueueRestarted", "The LocalQueue was restarted after being stopped", now
        )
        return True
    return False
