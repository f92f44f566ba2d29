"""The workload controller (upstream ``pkg/controller/core/workload_controller.go``): conditions, checks, deactivation, backoff, timeouts.

Each reconcile reads the manager's cached Workload, takes the decisions the simulator takes too
(:mod:`pykueue.core.workload.reconcile`: queue state, admission checks, check-based eviction and
deactivation) or computes the next status with the pure transitions of
:mod:`pykueue.core.workload.transitions`, and performs at most one write, as upstream's
``Reconcile`` does; the write's watch event (or the write-through) triggers the next step. Steps
that must wait (backoff expiry, PodsReady timeout, retention) ask for a timed requeue.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

import msgspec

from pykueue.api.kueue import JOB_UID_LABEL, Workload
from pykueue.api.kueue import RESOURCE_IN_USE_FINALIZER as RESOURCE_IN_USE
from pykueue.api.meta import find_condition, is_condition_true, to_time
from pykueue.client import resources as R
from pykueue.controllers.cluster_cache import WORKLOAD
from pykueue.core.events import NORMAL, WORKLOAD_CONTROLLER, Event
from pykueue.core.state import outcome_decision
from pykueue.core.workload import transitions
from pykueue.core.workload.info import (
    DEACTIVATION_TARGET,
    has_quota_reservation,
    is_active,
    is_evicted,
    is_finished,
    workload_key,
)
from pykueue.core.workload.reconcile import (
    Outcome,
    admission_checks,
    check_based_eviction,
    deactivate,
    evict_inactive,
    max_execution_time,
    queue_state,
    queue_view,
    requeue_at_update,
)

if TYPE_CHECKING:
    from pykueue.controllers.context import ReconcileContext



class WorkloadController:
    """Reconciles one Workload at a time; see the module docstring."""

    def __init__(self, ctx: ReconcileContext) -> None:
        self.ctx = ctx
        self.options = ctx.sched_options

    def _event(self, wl: Workload, type_: str, reason: str, note: str) -> None:
        self.ctx.record_event(
            Event.for_workload(wl.metadata.namespace, wl.metadata.name, type_, reason, note, WORKLOAD_CONTROLLER)
        )

    def reconcile(self, key: str) -> None:
        """One reconcile of Workload ``namespace/name``."""
        wl = self.ctx.workloads.get(key)
        if wl is None:
            return
        if self._orphaned(wl):
            return
        if is_finished(wl):
            self._retention(wl)
            return
        if wl.metadata.deletion_timestamp is not None:
            return
        delayed = requeue_at_update(wl, self.ctx.now())  # ``NeedsRequeueAtUpdate``, with or without quota
        if delayed.writes:
            self._apply(delayed)
            return
        if is_active(wl) and _condition_true(wl, DEACTIVATION_TARGET):
            self._deactivate(wl)
            return
        if not is_active(wl):
            # Upstream ``Reconcile``'s inactive branch returns after its write (the eviction, or
            # clearing the requeue state); an inactive Workload already evicted, without a requeue
            # state, goes on to the rules below, ``reconcileMaxExecutionTime`` included.
            outcome = evict_inactive(wl, self.ctx.now())
            if outcome.writes:
                self._apply(outcome)
                return
        if is_active(wl) and self._backoff(wl):
            return
        # Upstream's order (as the simulator's ``SimulatedCluster._reconcile_workload``):
        # ``reconcileSyncAdmissionChecks`` and ``SyncAdmittedCondition``, then
        # ``reconcileCheckBasedEviction`` (a check the ClusterQueue no longer requires is dropped
        # first, it evicts nothing), then ``reconcileOnLocalQueueActiveState`` /
        # ``reconcileOnClusterQueueActiveState``; only ``mayUpdateConditionForAdmissionGatedBy``
        # (part of the queue rules here) comes before them.
        gated = transitions.admission_gate_transition(wl, self.options) is not None
        if gated and self._queue_state(wl):
            return
        if self._sync_checks(wl):
            return
        if has_quota_reservation(wl) and not is_evicted(wl) and self._check_based_eviction(wl):
            return
        if not gated and self._queue_state(wl):
            return
        self._timeouts(wl)

    # --- orphans and retention (``Reconcile``, ``WithWorkloadRetention``) ---------------------------------------------------------------

    def _orphaned(self, wl: Workload) -> bool:
        md = wl.metadata
        # ``isOrphanedWorkload``: no owner references, and being deleted or, under
        # FinishOrphanedWorkloads only, still labelled with its Job's uid.
        if md.owner_references or not (
            md.deletion_timestamp is not None
            or (self.options.gate("FinishOrphanedWorkloads") and JOB_UID_LABEL in md.labels)
        ):
            return False
        if RESOURCE_IN_USE not in md.finalizers and is_finished(wl):
            return False
        updated = transitions.copy_for_status(wl)
        if md.deletion_timestamp is None and not is_finished(wl):
            transitions.set_condition(
                updated, "Finished", "True", "OwnerNotFound", "The workload's owner no longer exists", self.ctx.now()
            )
            self.ctx.write_workload(updated)
            return True
        if RESOURCE_IN_USE in md.finalizers:
            self.remove_finalizer(wl)
            return True
        return False

    def remove_finalizer(self, wl: Workload) -> bool:
        """Drop Kueue's finalizer from a Workload."""
        finalizers = [f for f in wl.metadata.finalizers if f != RESOURCE_IN_USE]
        if finalizers == wl.metadata.finalizers:
            return False
        updated = msgspec.structs.replace(wl, metadata=msgspec.structs.replace(wl.metadata, finalizers=finalizers))
        return self.ctx.write_workload(updated, status=False)

    def _retention(self, wl: Workload) -> None:
        after = self.ctx.options.finished_retention_seconds
        if after is None:
            return
        finished = find_condition(wl.status.conditions, "Finished")
        if finished is None:
            return
        due = to_time(finished.last_transition_time) + timedelta(seconds=after)
        now = self.ctx.now()
        if now < due:
            self.ctx.requeue_after(WORKLOAD, workload_key(wl), (due - now).total_seconds())
            return
        if RESOURCE_IN_USE in wl.metadata.finalizers:
            self.remove_finalizer(wl)
        self.ctx.client.delete(R.WORKLOADS, wl.metadata.name, wl.metadata.namespace)
        self._event(wl, NORMAL, "Deleted", "Deleted finished workload due to elapsed retention")

    # --- deactivation (``Reconcile``: spec.active=false) ---------------------------------------------------------------------------

    def _apply(self, outcome: Outcome) -> None:
        """Write a decision of :mod:`pykueue.core.workload.reconcile`; its events follow a successful
        write. A status write is sent without waiting for its answer
        (:meth:`ReconcileContext.write_workload_status_ahead`): the reconcile ends with the write
        either way, and its events and trail entry follow the answer."""
        wl = outcome.spec if outcome.spec is not None else outcome.status
        if wl is None:
            return
        # The decision trail: this reconcile reacted to the Workload as last observed, or to its timer.
        stimulus = self.ctx.stimulus(WORKLOAD, workload_key(wl), wl.metadata.resource_version or 0)
        decision = outcome_decision(workload_key(wl), outcome, stimulus, self.ctx.now())

        def done(written: bool) -> None:
            if written:
                for event in outcome.events:
                    self.ctx.record_event(event)
            self.ctx.core.record(decision, written)

        if outcome.spec is not None:
            done(self.ctx.write_workload(outcome.spec, status=False))
        else:
            self.ctx.write_workload_status_ahead(wl, done)

    def _deactivate(self, wl: Workload) -> None:
        """Phase two of Kueue-initiated deactivation: ``spec.active=false`` (plain update)."""
        self._apply(deactivate(wl))

    # --- check-based eviction (``reconcileCheckBasedEviction``) ---------------------------------------------------------------------

    def _check_based_eviction(self, wl: Workload) -> bool:
        outcome = check_based_eviction(wl, self.ctx.now(), self.options)
        if outcome.requeue_after is not None:  # a retry delay still running: only wait (``Reconcile``)
            self.ctx.requeue_after(WORKLOAD, workload_key(wl), outcome.requeue_after)
            return True
        self._apply(outcome)
        return outcome.writes

    # --- queue state: QuotaReserved=False reasons, stopPolicy (``reconcileOnLocalQueueActiveState``,
    # ``reconcileOnClusterQueueActiveState``, ``syncQuotaReservedFalseCondition``) ------------------------------------------------------------------------

    def _queue_view(self, wl: Workload) -> transitions.QueueView:
        mgr = self.ctx
        lq = mgr.local_queues.get(f"{wl.metadata.namespace}/{wl.spec.queue_name}")
        cq_name = mgr.cluster_queue_of(wl) or (lq.spec.cluster_queue if lq is not None else "")
        cq = mgr.cache.cluster_queues.get(cq_name)
        return queue_view(
            wl,
            lq,
            cq_name,
            cq.queue_facts() if cq is not None else None,
            mgr.namespace_labels(wl.metadata.namespace) if cq is not None else None,
            mgr.queues.is_inadmissible_with_bulk_reason(workload_key(wl)),
            mgr.limit_range_summary(wl.metadata.namespace),
        )

    def _queue_state(self, wl: Workload) -> bool:
        outcome = queue_state(wl, self._queue_view(wl), self.ctx.now(), self.options)
        self._apply(outcome)
        return outcome.writes

    # --- admission checks and Admitted (``reconcileSyncAdmissionChecks``, ``workload.SyncAdmittedCondition``) ------------------------------------------------------

    def _sync_checks(self, wl: Workload) -> bool:
        mgr = self.ctx
        cq = mgr.cache.cluster_queues.get(mgr.cluster_queue_of(wl) or "")
        if cq is None:
            return False
        if wl.status.admission is not None:
            flavors = {f for psa in wl.status.admission.pod_set_assignments for f in psa.flavors.values()}
            required = cq.checks_for_flavors(flavors)
        else:
            required = cq.checks_for_all_flavors()
        outcome = admission_checks(wl, required, cq.name, mgr.now(), self.options)
        self._apply(outcome)
        return outcome.writes

    # --- requeue backoff (``Reconcile``: ``status.requeueState``) ---------------------------------------------------------------------------------

    def _backoff(self, wl: Workload) -> bool:
        """For an active Workload: wait while ``requeueAt`` is ahead, pending or holding quota
        (upstream ``Reconcile``, "Waiting for backoff to finish", returns before the check sync,
        the Admitted sync and the queue rules); then end a pending one's backoff. True: this
        reconcile is done."""
        now = self.ctx.now()
        at = transitions.requeue_at(wl)
        if at is not None and at > now:
            self.ctx.requeue_after(WORKLOAD, workload_key(wl), (at - now).total_seconds())
            return True
        if has_quota_reservation(wl):
            return False
        updated = transitions.copy_for_status(wl)
        if transitions.finish_backoff(updated, now):
            self._apply(Outcome(status=updated, reason="BackoffFinished"))
            return True
        return False

    # --- PodsReady timeout (``reconcileNotReadyTimeout``), maximum execution time (``reconcileMaxExecutionTime``) ---------------------------------------

    def _timeouts(self, wl: Workload) -> None:
        """Upstream ``Reconcile``'s last step for a Workload holding quota: ``reconcileNotReadyTimeout``
        (an active Workload not evicted) then ``reconcileMaxExecutionTime``, which reads only the
        Admitted condition: an evicted or inactive Workload whose quota is not released yet is
        deactivated again once its time has run out (the eviction removed its target)."""
        if not has_quota_reservation(wl):
            return
        pods_ready = self._pods_ready_timeout(wl) if is_active(wl) and not is_evicted(wl) else None
        waits = [w for w in (pods_ready, self._max_execution_time(wl)) if w]
        if waits:
            self.ctx.requeue_after(WORKLOAD, workload_key(wl), min(waits))

    def _pods_ready_timeout(self, wl: Workload) -> float | None:
        opts = self.ctx.options
        if not self.options.wait_for_pods_ready or not opts.pods_ready_timeout_seconds:
            return None
        now = self.ctx.now()
        cause, remaining = transitions.admitted_not_ready(
            wl, now, opts.pods_ready_timeout_seconds, opts.pods_ready_recovery_timeout_seconds or None
        )
        if not cause:
            return None
        if remaining > 0:
            return remaining
        count = (wl.status.requeue_state.count or 0) if wl.status.requeue_state else 0
        updated = transitions.copy_for_status(wl)
        limit_count = self.options.backoff_limit_count
        if limit_count is not None and count + 1 > limit_count:
            transitions.set_deactivation_target(
                updated, "RequeuingLimitExceeded", "exceeding the maximum number of re-queuing retries", now
            )
            self.ctx.write_workload(updated)
            return None
        message = f"Exceeded the PodsReady timeout {wl.metadata.namespace}/{wl.metadata.name}"
        transitions.evict(updated, "PodsReadyTimeout", message, now, cause)
        delay = transitions.pods_ready_backoff_seconds(
            count + 1, self.options.backoff_base_seconds, self.options.backoff_max_seconds
        )
        # ``workload.UpdateRequeueState``: a later requeueAt already set is kept.
        transitions.set_requeue_state(updated, now + timedelta(seconds=delay), increment_count=True)
        if self.ctx.write_workload(updated):
            self._event(wl, NORMAL, "EvictedDueToPodsReadyTimeout", message)
        return None

    def _max_execution_time(self, wl: Workload) -> float | None:
        outcome = max_execution_time(wl, self.ctx.now())
        self._apply(outcome)
        return outcome.requeue_after


def _condition_true(wl: Workload, ctype: str) -> bool:
    return is_condition_true(wl.status.conditions, ctype)
