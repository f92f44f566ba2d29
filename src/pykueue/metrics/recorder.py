"""Where the controllers count: Workload transitions they write or observe, and scheduling cycles.

Upstream counts inside the code that performs each step (``pkg/scheduler/scheduler.go``
``recordQuotaReservationMetrics``/``recordWorkloadAdmissionEvents``, ``pkg/workload/evict``,
``pkg/scheduler/preemption`` ``IssuePreemptions``, ``pkg/controller/core/workload_controller.go``,
``pkg/controller/jobframework/reconciler.go``). pykueue's controllers perform every Workload write
through :meth:`ControllerManager.write`, so the same counts are taken from the transition each
successful write made (old → written object): the counts are those of the writes this process
performed, exactly like upstream's, and never those of somebody else's writes. Transitions
upstream counts in the watch handler (finish, eviction latency) are taken from observed changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec

from pykueue.api.kueue import LocalQueue, Workload
from pykueue.api.meta import (
    Condition,
    LabelSelector,
    find_condition,
    label_selector_matches,
    parse_time,
    to_time,
)
from pykueue.core.scheduler.flavorassigner.assignment import Mode
from pykueue.metrics.families import KueueMetrics

OVERLAPPING_TARGETS = "Workload has overlapping preemption targets with another workload"

QUOTA_RESERVED = "QuotaReserved"
ADMITTED = "Admitted"
EVICTED = "Evicted"
FINISHED = "Finished"
PODS_READY = "PodsReady"
REQUEUED = "Requeued"
STARTED = "Started"


def _true(wl: Workload, ctype: str) -> Condition | None:
    c = find_condition(wl.status.conditions, ctype)
    return c if c is not None and c.status == "True" else None


def _seconds(later: datetime, earlier: Any) -> float:
    return (to_time(later) - to_time(earlier)).total_seconds()


def priority_class_name(wl: Workload) -> str:
    """``patching.PriorityClassName``."""
    ref = wl.spec.priority_class_ref
    return ref.name if ref is not None else ""


def queued_wait_time(wl: Workload, now: datetime) -> float:
    """``workload.QueuedWaitTime``: since the last Requeued transition, else since creation."""
    requeued = find_condition(wl.status.conditions, REQUEUED)
    since = requeued.last_transition_time if requeued is not None else wl.metadata.creation_timestamp
    return _seconds(now, since) if since is not None else 0.0


def workload_status(wl: Workload) -> str:
    """``workload.Status``: Finished, Admitted, QuotaReserved or Pending."""
    if _true(wl, FINISHED):
        return FINISHED
    if _true(wl, ADMITTED):
        return ADMITTED
    if _true(wl, QUOTA_RESERVED):
        return QUOTA_RESERVED
    return "Pending"


def total_execution_time(wl: Workload) -> float | None:
    """``workload.TotalExecutionTime``: accumulated past + (Finished LTT − Admitted LTT)."""
    admitted = _true(wl, ADMITTED)
    finished = _true(wl, FINISHED)
    if admitted is None or finished is None:
        return None
    past = float(wl.status.accumulated_past_execution_time_seconds or 0)
    return past + _seconds(finished.last_transition_time, admitted.last_transition_time)


class ControllerMetrics:
    """Counts the controllers' Workload transitions and scheduling cycles into :class:`KueueMetrics`."""

    def __init__(
        self,
        metrics: KueueMetrics,
        *,
        cohorts_of: Callable[[str], Sequence[str]] = lambda cq: (),
        local_queue: Callable[[str], LocalQueue | None] = lambda key: None,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.metrics = metrics
        self.now = now
        """The controllers' clock, read only when a transition is counted."""
        self.cohorts_of = cohorts_of
        self.local_queue = local_queue

    @staticmethod
    def selector_from_config(cfg: dict[str, Any] | None) -> tuple[bool, LabelSelector | None]:
        """``metrics.localQueueMetrics``: (enable, localQueueSelector)."""
        if cfg is None:
            return True, None
        raw = cfg.get("localQueueSelector")
        selector = msgspec.convert(raw, LabelSelector) if raw is not None else None
        return bool(cfg.get("enable", True)), selector

    # --- LocalQueue exposure (``ShouldExposeLocalQueueMetricsForWorkload``) ----------------------------

    def expose_local_queue(self, lq: LocalQueue) -> bool:
        """``LocalQueueMetricsConfig.ShouldExposeLocalQueueMetrics``."""
        if self.metrics.lq is None:
            return False
        sel = self.metrics.local_queue_selector
        return sel is None or label_selector_matches(sel, dict(lq.metadata.labels))

    def local_queue_afs_usage(self, lq: LocalQueue, usage: float) -> None:
        """``LocalQueueReconciler.reportAfsUsage`` (the caller checked that AFS is enabled): only for a
        LocalQueue whose metrics are exposed."""
        if self.expose_local_queue(lq):
            self.metrics.local_queue_afs_usage((lq.metadata.name, lq.metadata.namespace), lq.spec.cluster_queue, usage)

    def local_queue_updated(self, old: LocalQueue, new: LocalQueue, afs_usage: Callable[[], float | None]) -> None:
        """The metric steps of ``LocalQueueReconciler.Update``: a LocalQueue whose metrics stop being
        exposed loses its series (``clearLocalQueueMetrics``); one whose metrics start being exposed,
        unless it is being stopped, reports its AFS usage from the ledger at once
        (``resyncLocalQueueGaugeMetrics``; ``afs_usage()`` is None when AFS is off or the ledger has
        no entry). The other LocalQueue gauges are computed at scrape time."""
        old_exposed, new_exposed = self.expose_local_queue(old), self.expose_local_queue(new)
        if old_exposed and not new_exposed:
            self.metrics.clear_local_queue(old.metadata.namespace, old.metadata.name)
            return
        old_stop, new_stop = old.spec.stop_policy or "None", new.spec.stop_policy or "None"
        stopping = old_stop != new_stop and new_stop != "None"
        if new_exposed and not old_exposed and not stopping:
            usage = afs_usage()
            if usage is not None:
                self.local_queue_afs_usage(new, usage)

    def _lq_of(self, wl: Workload) -> tuple[str, str] | None:
        if self.metrics.lq is None or wl.status.admission is None or not wl.spec.queue_name:
            return None
        lq = self.local_queue(f"{wl.metadata.namespace}/{wl.spec.queue_name}")
        if lq is None or not self.expose_local_queue(lq):
            return None
        return wl.spec.queue_name, wl.metadata.namespace

    # --- writes the controllers made ------------------------------------------------------------------

    def workload_written(self, old: Workload | None, new: Workload) -> None:
        """A Workload write of ours succeeded: count reservation, admission, readiness, evictions."""
        if old is None:
            return
        m = self.metrics
        admission = new.status.admission
        reserved_now = _true(new, QUOTA_RESERVED) is not None and _true(old, QUOTA_RESERVED) is None
        admitted_now = _true(new, ADMITTED) is not None and _true(old, ADMITTED) is None
        if admission is not None and (reserved_now or admitted_now):
            cq = admission.cluster_queue
            pc = priority_class_name(new)
            lq = self._lq_of(new)
            now = self.now()
            wait = queued_wait_time(new, now)
            if reserved_now:
                # The scheduler's admit: quota reserved, and admitted in the same write when every
                # check was already Ready (checks wait 0, reported only when there are checks).
                m.quota_reserved(cq, pc, wait, lq)
                if admitted_now and not old.status.unhealthy_nodes:
                    checks = 0.0 if new.status.admission_checks else None
                    m.admitted(cq, pc, wait, checks, self.cohorts_of(cq), lq)
            else:
                # The workload controller's admission once the checks are Ready.
                reserved = _true(new, QUOTA_RESERVED)
                checks_wait = _seconds(now, reserved.last_transition_time) if reserved is not None else 0.0
                m.admitted(cq, pc, wait, checks_wait, self.cohorts_of(cq), lq)
        self._count_evictions(old, new)
        ready = _true(new, PODS_READY)
        if ready is not None and ready.reason == STARTED and admission is not None:
            before = _true(old, PODS_READY)
            if before is None or before.reason != STARTED:
                admitted = find_condition(new.status.conditions, ADMITTED)
                until_ready = (
                    _seconds(ready.last_transition_time, admitted.last_transition_time)
                    if admitted is not None and admitted.last_transition_time is not None
                    else None
                )
                queued = queued_wait_time(new, self.now())
                m.ready(admission.cluster_queue, priority_class_name(new), queued, until_ready, self._lq_of(new))

    def _count_evictions(self, old: Workload, new: Workload) -> None:
        stats = new.status.scheduling_stats
        if stats is None or not stats.evictions:
            return
        # Evict() counts into schedulingStats.evictions[(reason, cause)] in the same write, so the
        # entry that grew names the raw reason and cause (``Deactivated``, not ``DeactivatedDueTo…``).
        before: dict[tuple[str, str], int] = {}
        if old.status.scheduling_stats is not None:
            for e in old.status.scheduling_stats.evictions:
                before[(e.reason, e.underlying_cause)] = e.count
        admission = new.status.admission or old.status.admission
        if admission is None or old.status.admission is None:
            return  # Evict() reports nothing for a workload without an admission
        for e in stats.evictions:
            previous = before.get((e.reason, e.underlying_cause), 0)
            if e.count <= previous:
                continue
            pods_ready = _true(new, PODS_READY)
            evicted = _true(new, EVICTED)
            ready_to_evicted = (
                _seconds(evicted.last_transition_time, pods_ready.last_transition_time)
                if pods_ready is not None and evicted is not None
                else None
            )
            self.metrics.evicted(
                admission.cluster_queue,
                e.reason,
                e.underlying_cause,
                priority_class_name(new),
                previous == 0,
                ready_to_evicted,
                self._lq_of(new),
            )

    # --- changes the controllers observed (the workload controller's update handler) ---------------------

    def workload_changed(self, old: Workload | None, new: Workload | None) -> None:
        """Any observed update: the first finish, and eviction → pending latency."""
        if old is None or new is None:
            return
        prev, status = workload_status(old), workload_status(new)
        if status == FINISHED:
            if prev != FINISHED:
                admission = new.status.admission
                cq = admission.cluster_queue if admission is not None else ""
                self.metrics.finished(cq, priority_class_name(new), total_execution_time(new), self._lq_of(new))
            return
        if prev in (QUOTA_RESERVED, ADMITTED) and status == "Pending":
            evicted = _true(new, EVICTED)
            if evicted is not None and old.status.admission is not None and old.status.admission.cluster_queue:
                self.metrics.eviction_latency(
                    old.status.admission.cluster_queue, evicted.reason, _seconds(self.now(), evicted.last_transition_time)
                )

    def workload_created(self, job: dict[str, Any], workload: dict[str, Any], kind: str) -> None:
        """``RecordWorkloadCreationLatency``: Workload creation − job creation, job generation ≤ 1."""
        meta = job.get("metadata") or {}
        if int(meta.get("generation") or 0) > 1:
            return
        job_created = meta.get("creationTimestamp")
        wl_created = (workload.get("metadata") or {}).get("creationTimestamp")
        if job_created and wl_created:
            self.metrics.workload_creation(kind, _seconds(parse_time(wl_created), parse_time(job_created)))

    # --- scheduling cycles -------------------------------------------------------------------------------

    def cycle(self, result: Any, seconds: float) -> None:
        """``AdmissionAttempt`` for a cycle that had heads, ``ReportPreemption`` per issued preemption
        and ``ReportPreemptionTargetRecomputation`` per recomputed assignment.

        ``result`` is the core's ``CycleResult``: success when a workload was assumed; a preemption
        is counted for the entry whose issued targets it names (an entry skipped for overlapping
        targets issued nothing).
        """
        if not result.heads:
            return
        skips: dict[str, int] | None = None
        for entry in result.entries:
            if entry.overlap_recomputation:
                self.metrics.preemption_target_recomputation(entry.info.cluster_queue, entry.overlap_recomputation)
            # scheduler.go processEntry: skipped for overlapping targets, or no longer fitting
            # while it needed preemption.
            if entry.status == "skipped" and (entry.message == OVERLAPPING_TARGETS or entry.mode is Mode.PREEMPT):
                if skips is None:
                    skips = {}
                cq = entry.info.cluster_queue
                skips[cq] = skips.get(cq, 0) + 1
        if skips:
            for cq, count in skips.items():
                self.metrics.preemption_skips(cq, count)
        self.metrics.admission_attempt(bool(result.admitted), seconds)
        if result.preempted:
            issued = set(result.preempted)
            for entry in result.entries:
                if not entry.targets or entry.status == "skipped" or entry.deferred_fit:
                    continue
                for target in entry.targets:
                    if target.workload.key in issued:
                        issued.discard(target.workload.key)
                        self.metrics.preempted(entry.info.cluster_queue, target.reason)
