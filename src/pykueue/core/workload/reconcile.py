"""The workload controller's decisions as pure functions (upstream
``pkg/controller/core/workload_controller.go``, ``WorkloadReconciler.Reconcile``).

Each function looks at one Workload (and what the caller knows about its queues) at time ``now``
and returns an :class:`Outcome`: the object to write, the events to record once the write has
succeeded, and when to look again. Nothing here writes or reads outside its arguments, so the
simulator (``pykueue schedule``) and the controllers of ``pykueue serve`` apply the same
decisions, and tests state them as tables.

Deactivation follows upstream's protocol in three writes, in every driver:

1. a rejected admission check sets ``DeactivationTarget=True`` (``reconcileCheckBasedEviction``);
2. an active Workload with ``DeactivationTarget=True`` gets ``spec.active=false`` (a plain update);
3. an inactive Workload is evicted with reason ``DeactivatedDueTo<target reason>``, the target
   condition is removed and the requeue state cleared.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime

import msgspec

from pykueue.api.kueue import ADMISSION_GATED_BY_ANNOTATION, STOP_NONE, LocalQueue, Workload
from pykueue.api.limitrange import Summary
from pykueue.api.meta import (
    Condition,
    LabelSelector,
    find_condition,
    is_condition_true,
    remove_condition,
    to_time,
)
from pykueue.core.events import NORMAL, WARNING, WORKLOAD_CONTROLLER, Event
from pykueue.core.options import SchedulerOptions
from pykueue.core.workload import transitions
from pykueue.core.workload.admissibility import admissibility_error
from pykueue.core.workload.info import (
    DEACTIVATION_TARGET,
    has_quota_reservation,
    is_active,
    is_admitted,
    is_evicted,
    is_finished,
)


class Outcome(msgspec.Struct, frozen=True):
    """What one decision asks its driver to do.

    ``spec`` is written with a plain update (spec, metadata), ``status`` through the status
    subresource; a decision sets at most one of them, as upstream's reconciler performs one write
    per pass. ``events`` are recorded only once that write succeeded. ``reason`` names the
    decision for the transition log (e.g. ``"AdmissionCheckRejected"``).
    """

    status: Workload | None = None
    spec: Workload | None = None
    events: tuple[Event, ...] = ()
    requeue_after: float | None = None
    reason: str = ""

    @property
    def writes(self) -> bool:
        return self.status is not None or self.spec is not None


NOTHING = Outcome()


def _event(wl: Workload, type_: str, reason: str, note: str) -> Event:
    # The workload controller's (upstream's Reconcile records through its own recorder).
    return Event.for_workload(wl.metadata.namespace, wl.metadata.name, type_, reason, note, WORKLOAD_CONTROLLER)


# --- queue state (upstream: the LocalQueue/ClusterQueue branches of Reconcile) ----------------------


class QueueFacts(msgspec.Struct, frozen=True):
    """What a driver knows about the ClusterQueue a Workload would use (from the scheduler's cache)."""

    exists: bool
    active: bool
    stop_policy: str
    namespace_selector: LabelSelector | None


def queue_view(
    wl: Workload,
    local_queue: LocalQueue | None,
    cluster_queue: str,
    facts: QueueFacts | None,
    namespace_labels: Mapping[str, str] | None,
    bulk_bypass_reason: str | None,
    limit_ranges: Summary | None = None,
) -> transitions.QueueView:
    """The :class:`~pykueue.core.workload.transitions.QueueView` of ``wl``; a LocalQueue being
    deleted counts as missing, as upstream's cache drops it on its deletion event.
    ``limit_ranges``: the summary of the namespace's LimitRanges, if it has any (checked against
    the Workload as stored, as upstream's controller reads it: not adjusted)."""
    admissibility: str | None = None
    if facts is not None:
        # Only read: a driver's own map is used as is (copied only when it is another Mapping).
        labels = (
            namespace_labels
            if namespace_labels is None or isinstance(namespace_labels, dict)
            else dict(namespace_labels)
        )
        admissibility = (
            admissibility_error(wl, facts.namespace_selector, labels)
            if limit_ranges is None
            else admissibility_error(wl, facts.namespace_selector, labels, limit_ranges=limit_ranges)
        )
    return transitions.QueueView(
        local_queue_exists=local_queue is not None and local_queue.metadata.deletion_timestamp is None,
        local_queue_stop_policy=local_queue.spec.stop_policy if local_queue is not None else "",
        cluster_queue=cluster_queue,
        # A terminating ClusterQueue still exists for upstream's API reads (``getQueueBlocker`` then
        # finds it inactive); only the reservation rule treats it as missing.
        cluster_queue_exists=facts is not None,
        cluster_queue_terminating=facts is not None and not facts.exists,
        cluster_queue_active=facts is not None and facts.active,
        cluster_queue_stop_policy=facts.stop_policy if facts is not None else "",
        bulk_bypass_reason=bulk_bypass_reason,
        admissibility_error=admissibility,
    )


def queue_state_settled(
    wl: Workload,
    local_queue: LocalQueue | None,
    facts: QueueFacts | None,
    namespace_exists: bool,
    options: SchedulerOptions,
) -> bool:
    """True only if :func:`queue_state` would decide nothing for ``wl`` with the view
    :func:`queue_view` gives from this LocalQueue and these ClusterQueue facts, whatever the
    namespace's labels (when it exists) and the bulk-move reason. False says nothing.

    It answers for the two commonest shapes only. A Workload holding quota (the scheduler has just
    reserved it) with its queues in order: see :func:`_reserved_queue_state_settled`. And a pending
    Workload whose QuotaReserved=False reason is one of the scheduler's own (``SCHEDULER_REASONS``)
    and not bypassable (so the bulk-move rule does not apply), not ``Requeued=False``, active, with
    no queue blocker, not gated, behind a
    ClusterQueue with an empty namespace selector (which matches every label set, so only the
    namespace's existence and the spec's requests decide admissibility; the caller answers for
    namespaces with a LimitRange, whose bounds this does not read). ``pending_condition`` then
    leaves the condition as it is (without ``UnadmittedWorkloadsObservability`` it reads only the
    blockers), and nothing else in :func:`queue_state` applies to a pending Workload: the caller
    need not build the view."""
    requeued: Condition | None = None
    reserved: Condition | None = None
    admitted: Condition | None = None
    for c in wl.status.conditions:  # the first condition of each type, as ``find_condition``
        if c.type == "Requeued":
            if requeued is None:
                requeued = c
        elif c.type == "QuotaReserved":
            if reserved is None:
                reserved = c
        elif c.type == "Admitted" and admitted is None:
            admitted = c
    if reserved is not None and reserved.status == "True":
        return _reserved_queue_state_settled(wl, reserved, requeued, local_queue, facts, options)
    if (
        reserved is None
        or reserved.status != "False"
        # ``newQuotaReservedCondition`` re-stamps a kept reason with the generation (granular rule)
        or (reserved.observed_generation != wl.metadata.generation and options.gate_unadmitted_observability)
        or reserved.reason not in transitions.SCHEDULER_REASONS
        or reserved.reason in transitions.BYPASSABLE_REASONS
        or (requeued is not None and requeued.status == "False")
        or not is_active(wl)
    ):
        return False
    if (
        local_queue is None
        or local_queue.metadata.deletion_timestamp is not None
        or local_queue.spec.stop_policy not in ("", STOP_NONE)
        or facts is None
        or not facts.exists
        or not facts.active
        or not namespace_exists
    ):
        return False
    selector = facts.namespace_selector
    if selector is None or selector.match_labels or selector.match_expressions:
        return False
    if options.gate_admission_gated_by and wl.metadata.annotations.get(ADMISSION_GATED_BY_ANNOTATION):
        return False
    # ``SyncAdmittedCondition`` of a pending Workload (``unreserved_admitted_stale``, from the
    # condition found above): with QuotaReserved present only Admitted=False NoReservation is settled.
    if options.gate_unadmitted_observability and (
        admitted is None
        or admitted.reason != "NoReservation"
        or admitted.status != "False"
        or admitted.message != "The workload has no reservation"
        or admitted.observed_generation != wl.metadata.generation
    ):
        return False
    # Any labels give the same outcome under an empty selector.
    return admissibility_error(wl, selector, {}) is None


def _reserved_queue_state_settled(
    wl: Workload,
    reserved: Condition,
    requeued: Condition | None,
    local_queue: LocalQueue | None,
    facts: QueueFacts | None,
    options: SchedulerOptions,
) -> bool:
    """:func:`queue_state_settled` for a Workload holding quota (``reserved``, its first QuotaReserved
    condition, is True; ``requeued`` its first Requeued condition): not ``Requeued=False`` (no
    reactivation nor restart), no admission-gate transition (no gate annotation and not
    AdmissionGated, or the feature off), and ``stopped_queue_action``'s common case: LocalQueue
    present, not being deleted, not stopped, ClusterQueue known, not terminating, not stopped.
    :func:`queue_state` then decides nothing whatever the view's other fields (activity, namespace
    labels, admissibility, bulk-move reason), which it does not read for such a Workload."""
    if requeued is not None and requeued.status == "False":
        return False
    if options.gate_admission_gated_by and (
        wl.metadata.annotations.get(ADMISSION_GATED_BY_ANNOTATION) or reserved.reason == transitions.ADMISSION_GATED
    ):
        return False
    return (
        local_queue is not None
        and local_queue.metadata.deletion_timestamp is None
        and local_queue.spec.stop_policy in ("", STOP_NONE)
        and facts is not None
        and facts.exists
        and facts.stop_policy in ("", STOP_NONE)
    )


def queue_state(wl: Workload, view: transitions.QueueView, now: datetime, options: SchedulerOptions) -> Outcome:
    """Reactivation, queue restarts, the ``QuotaReserved=False`` reason of a pending Workload, and
    what a stopped or missing queue does to a Workload holding quota."""
    if is_finished(wl):
        return NOTHING
    # The status is copied only once a rule will change it: most calls (a status the scheduler just
    # wrote) change nothing. ``reactivate`` and ``restart_after_stop`` act only on Requeued=False.
    updated: Workload | None = None
    changed = False
    requeued = find_condition(wl.status.conditions, "Requeued")
    if requeued is not None and requeued.status == "False":
        updated = transitions.copy_for_status(wl)
        changed = transitions.reactivate(updated, now)
        changed = transitions.restart_after_stop(updated, view, now) or changed
    events: tuple[Event, ...] = ()
    reason = "QueueState"
    if not has_quota_reservation(wl):
        # ``mayUpdateConditionForAdmissionGatedBy`` first (its write and event), then
        # ``syncQuotaReservedFalseCondition`` on what it wrote (upstream's next reconcile).
        gate = transitions.admission_gate_transition(wl, options)
        target = transitions.pending_condition(wl, view, options, gate) or gate
        current = find_condition(wl.status.conditions, "QuotaReserved")
        if gate is not None:
            events = (_event(wl, NORMAL, *transitions.admission_gate_event(gate)),)
        if target is not None and (
            current is None
            or (current.reason, current.message) != target
            or current.observed_generation != wl.metadata.generation
        ):
            if updated is None:
                updated = transitions.copy_for_status(wl)
            transitions.release_reservation(updated, target[0], target[1], now, options)
            changed, reason = True, target[0]
        elif not is_admitted(wl) and transitions.unreserved_admitted_stale(wl, options):
            # ``Reconcile``: a Workload that is not admitted gets ``SyncAdmittedCondition`` in the
            # same patch as its QuotaReserved=False condition.
            if updated is None:
                updated = transitions.copy_for_status(wl)
            transitions.sync_admitted_condition(updated, now, options)
            changed = True
    elif (gate := transitions.admission_gate_transition(wl, options)) is not None:
        # ``mayUpdateConditionForAdmissionGatedBy`` runs before the queue rules, for a Workload
        # holding quota too: the reservation is released (``UnsetQuotaReservationWithCondition``).
        if updated is None:
            updated = transitions.copy_for_status(wl)
        transitions.release_reservation(updated, *gate, now, options)
        events = (_event(wl, NORMAL, *transitions.admission_gate_event(gate)),)
        changed, reason = True, gate[0]
    elif wl.spec.queue_name or is_admitted(wl):  # without a queue name no LocalQueue manages it
        action = transitions.stopped_queue_action(wl, view)
        if action is not None:
            if updated is None:
                updated = transitions.copy_for_status(wl)
            if action[0] == "release":
                # ``UnadmittedWorkloadReasonWithFallback(granular, Inadmissible)``.
                released = action[1] if options.gate_unadmitted_observability else "Inadmissible"
                transitions.release_reservation(updated, released, action[2], now, options)
                changed, reason = True, released
            else:
                transitions.evict(updated, action[1], action[2], now)
                events = (_event(wl, NORMAL, f"EvictedDueTo{action[1]}", action[2]),)
                changed, reason = True, f"EvictedDueTo{action[1]}"
    return Outcome(status=updated, events=events, reason=reason) if changed and updated is not None else NOTHING


# --- admission checks and Admitted (upstream: reconcileSyncAdmissionChecks, SyncAdmittedCondition) --


def admission_checks(
    wl: Workload, required: Collection[str], cluster_queue: str, now: datetime, options: SchedulerOptions
) -> Outcome:
    """Sync the Workload's admission-check list with the checks its ClusterQueue requires and, for a
    reserved Workload not yet admitted, the ``Admitted`` condition (with upstream's event)."""
    if is_finished(wl):
        return NOTHING
    updated = transitions.copy_for_status(wl)
    changed = transitions.sync_admission_checks(updated, list(required), now)
    became_admitted = False
    # Never re-sync an admitted workload: an eviction resets its checks to Pending, yet Admitted
    # stays True until the job integration releases the quota.
    if has_quota_reservation(updated) and not is_admitted(updated):
        before = list(updated.status.conditions)  # conditions are replaced, never changed in place
        became_admitted = transitions.sync_admitted_condition(updated, now, options)
        changed = changed or before != updated.status.conditions
    if not changed:
        return NOTHING
    if not became_admitted:
        return Outcome(status=updated, reason="AdmissionChecksSynced")
    qr = find_condition(updated.status.conditions, "QuotaReserved")
    waited = (now - to_time(qr.last_transition_time)).total_seconds() if qr else 0.0
    note = f"Admitted by ClusterQueue {cluster_queue}, wait time since reservation was {waited:.0f}s"
    return Outcome(status=updated, events=(_event(wl, NORMAL, "Admitted", note),), reason="Admitted")


# --- check-based eviction and deactivation (upstream: reconcileCheckBasedEviction, Reconcile) -------


def requeue_at_update(wl: Workload, now: datetime) -> Outcome:
    """Upstream ``Reconcile`` with ``workload.NeedsRequeueAtUpdate``: a Retry check's delay
    (``GetMaxRetryTime``, the latest ``lastTransitionTime + requeueAfterSeconds``) still ahead and
    past the current ``requeueState.requeueAt`` moves ``requeueAt`` there (``SetRequeueState``
    without counting a requeue). Upstream runs it for every Workload that is not finished, with or
    without quota."""
    if is_finished(wl):
        return NOTHING
    at = transitions.retry_check_requeue_at(wl)
    current = transitions.requeue_at(wl)
    if at is None or at <= now or (current is not None and current >= at):
        return NOTHING
    updated = transitions.copy_for_status(wl)
    transitions.set_requeue_state(updated, at, increment_count=False)
    return Outcome(status=updated, reason="AdmissionCheckRetryDelayed")


def check_based_eviction(wl: Workload, now: datetime, options: SchedulerOptions) -> Outcome:
    """A rejected check starts deactivation (phase 1); a check to retry evicts the Workload, after
    the check's retry delay if it asks for one.

    Upstream ``Reconcile``: ``NeedsRequeueAtUpdate`` first moves ``requeueState.requeueAt`` to the
    latest retry time (:func:`requeue_at_update`); while ``requeueAt`` is ahead an active Workload
    only waits ("Waiting for backoff to finish"), so a reserved Workload keeps its reservation until
    then and ``reconcileCheckBasedEviction`` evicts it at ``requeueAt``; that runs after the
    ``SyncAdmittedCondition`` of a Workload that is not admitted, in the same pass.
    """
    if not has_quota_reservation(wl) or is_evicted(wl) or is_finished(wl):
        return NOTHING
    delayed = requeue_at_update(wl, now)
    if delayed.writes:
        return delayed
    current = transitions.requeue_at(wl)
    if is_active(wl) and current is not None and current > now:
        return Outcome(requeue_after=(current - now).total_seconds(), reason="AdmissionCheckRetryWaiting")
    rejected = transitions.rejected_checks_message(wl)
    if rejected is not None:
        if is_condition_true(wl.status.conditions, DEACTIVATION_TARGET):
            return NOTHING
        updated = transitions.copy_for_status(wl)
        if not is_admitted(wl):
            transitions.sync_admitted_condition(updated, now, options)
        transitions.set_deactivation_target(updated, "AdmissionCheck", rejected, now)
        event = _event(wl, WARNING, "AdmissionCheckRejected", f"Deactivated due to {rejected}")
        return Outcome(status=updated, events=(event,), reason="AdmissionCheckRejected")
    retry = transitions.retry_checks_message(wl)
    if retry is None:
        return NOTHING
    updated = transitions.copy_for_status(wl)
    if not is_admitted(wl):
        transitions.sync_admitted_condition(updated, now, options)
    transitions.evict(updated, "AdmissionCheck", retry, now)
    return Outcome(
        status=updated,
        events=(_event(wl, NORMAL, "EvictedDueToAdmissionCheck", retry),),
        reason="EvictedDueToAdmissionCheck",
    )


def deactivate(wl: Workload) -> Outcome:
    """Phase 2: an active Workload whose ``DeactivationTarget`` is True gets ``spec.active=false``."""
    if not is_active(wl) or not is_condition_true(wl.status.conditions, DEACTIVATION_TARGET):
        return NOTHING
    updated = msgspec.structs.replace(wl, spec=msgspec.structs.replace(wl.spec, active=False))
    return Outcome(spec=updated, reason="Deactivated")


def evict_inactive(wl: Workload, now: datetime) -> Outcome:
    """Phase 3: an inactive Workload is evicted (``DeactivatedDueTo<target reason>``), its
    ``DeactivationTarget`` removed and its requeue state cleared.

    Upstream ``Reconcile``'s ``!workload.IsActive`` branch: it writes when the Workload is not
    evicted yet or still has a requeue state, and either write removes a ``DeactivationTarget``
    condition of any status (``prepare``: ``dtCond != nil``), whose reason and message, when it
    is there, make the eviction's cause and message. An evicted Workload without a requeue state
    is left as it is (a target set again by ``reconcileMaxExecutionTime`` stays)."""
    if is_active(wl):
        return NOTHING
    target = find_condition(wl.status.conditions, DEACTIVATION_TARGET)
    evict = not is_evicted(wl)
    if not evict and wl.status.requeue_state is None:
        return NOTHING
    updated = transitions.copy_for_status(wl)
    events: tuple[Event, ...] = ()
    reason = "RequeueStateCleared"
    if evict:
        cause = target.reason if target is not None else ""
        message = "The workload is deactivated"
        if target is not None:
            message += f" due to {target.message}"
        reason = transitions.evict(updated, "Deactivated", message, now, cause)
        if wl.status.admission is not None:
            events = (_event(wl, NORMAL, f"EvictedDueTo{reason}", message),)
        reason = f"EvictedDueTo{reason}"
    if target is not None:
        remove_condition(updated.status.conditions, DEACTIVATION_TARGET)
    updated.status.requeue_state = None
    return Outcome(status=updated, events=events, reason=reason)


def max_execution_time(wl: Workload, now: datetime) -> Outcome:
    """Upstream ``reconcileMaxExecutionTime``: an admitted Workload with
    ``maximumExecutionTimeSeconds`` is looked at again when its time runs out (``requeue_after``,
    counting ``accumulatedPastExecutionTimeSeconds``); then ``DeactivationTarget=True``
    ``MaximumExecutionTimeExceeded`` is set (once), ``accumulatedPastExecutionTimeSeconds``
    cleared, and the Warning event recorded. The deactivation protocol does the rest."""
    limit = wl.spec.maximum_execution_time_seconds
    admitted = find_condition(wl.status.conditions, "Admitted")
    if admitted is None or admitted.status != "True" or limit is None:
        return NOTHING
    past = wl.status.accumulated_past_execution_time_seconds or 0
    remaining = (limit - past) - (now - to_time(admitted.last_transition_time)).total_seconds()
    if remaining > 0:
        return Outcome(requeue_after=remaining, reason="MaximumExecutionTimeWaiting")
    if is_condition_true(wl.status.conditions, DEACTIVATION_TARGET):
        return NOTHING
    updated = transitions.copy_for_status(wl)
    transitions.set_deactivation_target(
        updated, "MaximumExecutionTimeExceeded", "exceeding the maximum execution time", now
    )
    updated.status.accumulated_past_execution_time_seconds = None
    event = _event(wl, WARNING, "MaximumExecutionTimeExceeded", f"The maximum execution time ({limit}s) exceeded")
    return Outcome(status=updated, events=(event,), reason="MaximumExecutionTimeExceeded")


def deactivation(wl: Workload, now: datetime) -> Outcome:
    """The next step of the deactivation protocol for ``wl``: phase 2 or 3, or nothing."""
    if is_finished(wl):
        return NOTHING
    if is_active(wl):
        return deactivate(wl)
    return evict_inactive(wl, now)


__all__ = [
    "NOTHING",
    "Outcome",
    "QueueFacts",
    "admission_checks",
    "check_based_eviction",
    "deactivate",
    "deactivation",
    "evict_inactive",
    "max_execution_time",
    "queue_state",
    "queue_state_settled",
    "queue_view",
    "requeue_at_update",
]
