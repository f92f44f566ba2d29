"""An in-memory cluster that drives the scheduling core: the engine behind ``pykueue schedule``.

It plays the parts the controllers play on a real control plane, in-process and deterministically:
it loads objects as the informers would, routes every Workload change into the cache and queues
(upstream ``WorkloadReconciler.Create/Update/Delete``), syncs admission checks, completes
evictions as a Job integration would (``JobReconciler.ReconcileGenericJob``), finishes backoffs
(``WorkloadReconciler.Reconcile``) and computes queue status (``pkg/controller/core/``). Time only
moves when told.
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

from pykueue.api.kueue import (
    AdmissionCheck,
    ClusterQueue,
    Cohort,
    LimitRange,
    LocalQueue,
    LocalQueueStatus,
    Namespace,
    ResourceFlavor,
    RuntimeClass,
    Workload,
    WorkloadPriorityClass,
)
from pykueue.api.meta import CONDITION_MESSAGE_LIMIT, Condition, ObjectMeta, to_time
from pykueue.core.cache.cache import cache_weight_of
from pykueue.core.decision import Decision, watch_stimulus
from pykueue.core.events import Event
from pykueue.core.options import SchedulerOptions
from pykueue.core.scheduler.entry import CycleResult, Entry
from pykueue.core.state import KueueCore
from pykueue.core.status import cluster_queue_status, cohort_status, local_queue_status
from pykueue.core.workload import reconcile, transitions
from pykueue.core.workload.info import (
    WorkloadInfo,
    has_active_quota_reservation,
    has_failed_checks,
    has_quota_reservation,
    is_active,
    is_admitted,
    is_finished,
    new_workload_info,
    workload_key,
)

ObjectKey = tuple[str, str, str]
"""(kind, namespace, name)."""

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
_UID_NAMESPACE = uuid.UUID("6c1f2b1e-6d0e-4b8f-9c53-2f3b3b1b6a11")

# Kinds in the order the controllers need them (dependencies first).
LOAD_ORDER = (
    "Namespace",
    "LimitRange",
    "RuntimeClass",
    "PriorityClass",
    "WorkloadPriorityClass",
    "ResourceFlavor",
    "AdmissionCheck",
    "ProvisioningRequestConfig",
    "Cohort",
    "ClusterQueue",
    "LocalQueue",
    "Workload",
)


@dataclass
class LoadedObject:
    obj: Any
    api_version: str


@dataclass
class RunResult:
    cycles: list[CycleResult] = field(default_factory=list)
    last_entry: dict[str, Entry] = field(default_factory=dict)


class SimulatedCluster:
    """Objects plus controller behaviour around one scheduler; see module docstring."""

    observes_writes_as_written = True
    """Every write lands at once and is observed, as the object written, in order, right after the
    cycle (``run_cycle``) at the cycle's time: the core may take the scheduler's pending status
    writes as observed when they land (``KueueCore``)."""

    def __init__(self, options: SchedulerOptions, now: datetime, *, sync_admitted_without_checks: bool = True) -> None:
        """``sync_admitted_without_checks``: the workload controller's ``SyncAdmittedCondition`` for
        a Workload holding quota in a ClusterQueue without admission checks (it is Admitted: no
        check is not Ready). Only a loaded Workload can need it (the scheduler writes Admitted
        with the reservation when there is no check). Off for the ports of upstream's scheduler
        tests (``pkg/scheduler/scheduler_test.go`` ``TestSchedule``), which run the scheduler
        without the workload controller on Workloads that hold quota without Admitted
        (``ReserveQuota``) and expect no Admitted condition or event."""
        self.options = options
        self._sync_admitted_without_checks = sync_admitted_without_checks
        self.now = to_time(now)
        self.objects: dict[ObjectKey, LoadedObject] = {}
        self.order: list[ObjectKey] = []
        self.events: list[Event] = []
        self.core = KueueCore(options, self)
        # The core's parts, read by ``schedule --explain``, status computation and tests.
        self.cache = self.core.cache
        self.queues = self.core.queues
        self.scheduler = self.core.scheduler
        self._updates: deque[tuple[Workload, Workload]] = deque()
        self._writes = 0
        self._versions: dict[ObjectKey, int] = {}
        self._implicit_namespaces: set[str] = set()
        # Workloads that need controller attention, kept current on every change, so the
        # controller steps never scan every workload.
        self._touched: set[ObjectKey] = set()
        self._failed_checks: set[ObjectKey] = set()
        self._evicted_reserved: set[ObjectKey] = set()
        self._backing_off: set[ObjectKey] = set()
        # Admitted Workloads with ``maximumExecutionTimeSeconds`` and no DeactivationTarget yet:
        # when their time runs out (upstream ``reconcileMaxExecutionTime``'s ``RequeueAfter``).
        self._max_exec_due: dict[ObjectKey, datetime] = {}
        # While catching up between cycles: the previous cycle's time (see ``advance``).
        self._retry_from: datetime | None = None
        # Admission Fair Sharing: when each LocalQueue's reconcile is next due (epoch seconds).
        self._afs_due: dict[str, float] = {}

    # --- the core's Driver ----------------------------------------------------------------------

    def get_workload(self, key: str) -> Workload | None:
        ns, _, name = key.partition("/")
        lo = self.objects.get(("Workload", ns, name))
        return lo.obj if lo is not None else None

    def write_workload_status(self, wl: Workload) -> bool:
        key: ObjectKey = ("Workload", wl.metadata.namespace, wl.metadata.name)
        lo = self.objects.get(key)
        if lo is None:
            return False
        if any(len(c.message) > CONDITION_MESSAGE_LIMIT for c in wl.status.conditions):
            # The API server refuses it (the CRD's maxLength of ``conditions[].message``, in
            # characters): only an untruncated DeactivationTarget message (upstream
            # ``workload.SetDeactivationTarget``) can be that long. Upstream's reconcile fails, no
            # event, and is retried: here the rule is tried again at each step.
            return False
        old = lo.obj
        lo.obj = wl
        self._updates.append((old, wl))
        self._writes += 1
        self._versions[key] = self._writes
        self._index(key, wl)
        self._touched.add(key)
        return True

    def _index(self, key: ObjectKey, wl: Workload) -> None:
        # Every write comes here. The first QuotaReserved, Evicted and Requeued conditions are found
        # in one pass (each predicate reads the first condition of its type, as ``find_condition``):
        # the same sets as ``has_quota_reservation``, ``is_evicted``, ``is_evicted_and_reserved``
        # and ``find_condition(.., "Requeued")`` give, compared with them by
        # tests/core/test_core_shortcuts.py::test_simulator_index_in_one_pass_equals_the_predicates.
        first: dict[str, Condition] = {}
        for c in wl.status.conditions:
            if c.type not in first:
                first[c.type] = c
        qr = first.get("QuotaReserved")
        ev = first.get("Evicted")
        rq = first.get("Requeued")
        reserved = qr is not None and qr.status == "True"
        evicted = ev is not None and ev.status == "True"
        _mark(self._failed_checks, key, reserved and not evicted and has_failed_checks(wl))
        _mark(self._evicted_reserved, key, evicted and reserved)
        due = _max_exec_due(wl, first)
        if due is None:
            self._max_exec_due.pop(key, None)
        else:
            self._max_exec_due[key] = due
        _mark(
            self._backing_off,
            key,
            transitions.requeue_at(wl) is not None
            or (rq is not None and rq.status == "False" and rq.reason in ("PodsReadyTimeout", "AdmissionCheck")),
        )

    def apply(self, decision: Decision) -> bool:
        """Apply a core decision: the write lands at once, then its events are recorded."""
        written = decision.spec if decision.spec is not None else decision.status
        landed = written is None or self.write_workload_status(written)
        if landed or decision.events_if_unwritten:
            self.events.extend(decision.events)
        return landed

    def _stimulus(self, key: ObjectKey) -> str:
        """The watch event a controller step reacts to: the sim's write counter stands in for the
        resourceVersion of the workload's last write (or the loaded one)."""
        version = self._versions.get(key)
        return watch_stimulus(version if version is not None else self.objects[key].obj.metadata.resource_version or 0)

    def update_workload(self, wl: Workload) -> bool:
        """An external writer (e.g. an admission-check controller) updates a Workload."""
        return self.write_workload_status(wl)

    def record_event(self, event: Event) -> None:
        self.events.append(event)

    def namespace_labels(self, namespace: str) -> dict[str, str] | None:
        lo = self.objects.get(("Namespace", "", namespace))
        if lo is None:
            return None
        labels = dict(lo.obj.metadata.labels)
        labels.setdefault(NAMESPACE_NAME_LABEL, namespace)
        return labels

    # --- loading --------------------------------------------------------------------------------

    def load(self, objects: Iterable[tuple[Any, str]]) -> None:
        """Add objects as informers would deliver them, dependencies first."""
        items = list(objects)
        for obj, api_version in items:
            key = _key(obj)
            if key in self.objects:
                raise ValueError(f"duplicate object {key[0]} {_display(key)}")
            self._fill_metadata(obj)
            self.objects[key] = LoadedObject(obj, api_version)
            self.order.append(key)
        self._ensure_namespaces()
        rank = {k: i for i, k in enumerate(LOAD_ORDER)}
        position = {k: i for i, k in enumerate(self.order)}
        for key in sorted(self.objects, key=lambda k: (rank.get(k[0], 99), position.get(k, -1))):
            self._register(self.objects[key].obj)
        self._propagate_priority_classes()
        for key in self._workload_keys():
            self._index(key, self.objects[key].obj)
            # The workload controller's first reconcile: a check already Retry or Rejected evicts
            # (or deactivates) at once, before the queue-state rules, as upstream ``Reconcile``
            # runs ``reconcileCheckBasedEviction`` before ``reconcileOnLocalQueueActiveState``.
            self._reconcile_workload(key, checks=True)
        self._deliver_updates()
        # Evictions the controllers just issued (e.g. stopPolicy HoldAndDrain, deactivation,
        # a check to retry): on a live cluster the job integration completes them before the
        # scheduler's first cycle runs.
        self._complete_evictions()
        # ... and the workload controller's reaction to the release: a Requeued=False
        # AdmissionCheck/PodsReadyTimeout with no requeueAt ahead becomes BackoffFinished (upstream
        # ``Reconcile``), so the first cycle can take the Workload, as after an eviction in ``advance``.
        self._finish_backoffs()
        self._deliver_updates()
        # The queue controllers' first reconcile, at load time: ``Active`` gets its
        # lastTransitionTime now and keeps it after the run (``apimeta.SetStatusCondition`` keeps
        # it while the status stays), as upstream's ClusterQueue and LocalQueue reconcilers write
        # it when the queue is created, however long the run lasts.
        self.finalize_status()

    def _fill_metadata(self, obj: Any) -> None:
        md = obj.metadata
        if not md.uid:
            md.uid = stable_uid(obj.kind, md.namespace, md.name)
        if md.creation_timestamp is None:
            md.creation_timestamp = self.now
        if not md.generation:
            md.generation = 1

    def _ensure_namespaces(self) -> None:
        needed = {k[1] for k in self.objects if k[1]}
        for ns in sorted(needed):
            if ("Namespace", "", ns) not in self.objects:
                namespace = Namespace(metadata=ObjectMeta(name=ns, labels={NAMESPACE_NAME_LABEL: ns}))
                self._fill_metadata(namespace)
                self.objects[("Namespace", "", ns)] = LoadedObject(namespace, "v1")
                self._implicit_namespaces.add(ns)

    def _register(self, obj: Any) -> None:
        if isinstance(obj, Namespace):
            self.queues.set_namespace_labels(obj.metadata.name, self.namespace_labels(obj.metadata.name) or {})
        elif isinstance(obj, LimitRange):
            self.core.observe_limit_range(obj.metadata.namespace, obj.metadata.name, obj.spec)
        elif isinstance(obj, RuntimeClass):
            self.core.observe_runtime_class(obj.metadata.name, (obj.overhead or {}).get("podFixed"))
        elif isinstance(obj, ResourceFlavor):
            self.cache.add_or_update_flavor(obj)
        elif isinstance(obj, AdmissionCheck):
            self.cache.add_or_update_admission_check(obj)
        elif isinstance(obj, Cohort):
            self.cache.add_or_update_cohort(obj)
        elif isinstance(obj, ClusterQueue):
            state = self.cache.add_or_update_cluster_queue(obj)
            self.queues.add_cluster_queue(state)
        elif isinstance(obj, LocalQueue):
            self.queues.add_local_queue(obj)
        elif isinstance(obj, Workload):
            self._on_workload_added(obj)

    def _propagate_priority_classes(self) -> None:
        """WorkloadPriorityClass values flow into the workloads that reference them
        (``WorkloadPriorityClassReconciler.Reconcile``)."""
        values = {
            lo.obj.metadata.name: lo.obj.value
            for lo in self.objects.values()
            if isinstance(lo.obj, WorkloadPriorityClass)
        }
        for key in self._workload_keys():
            wl = self.objects[key].obj
            ref = wl.spec.priority_class_ref
            if ref is None or ref.kind != "WorkloadPriorityClass" or ref.name not in values:
                continue
            if wl.spec.priority != values[ref.name]:
                # A new object, never a change in place: the queues and the cache recognise an
                # object they already hold by identity (QueueManager's observed own writes,
                # new_workload_info's reused base priority) and would keep the old priority.
                wl = msgspec.structs.replace(wl, spec=msgspec.structs.replace(wl.spec, priority=values[ref.name]))
                self.objects[key].obj = wl
                self._replace_in_queues(wl)

    def _replace_in_queues(self, wl: Workload) -> None:
        if has_active_quota_reservation(wl):
            self.cache.add_workload(self._info(wl))
        else:
            self.queues.add_or_update_workload(wl, self._ts())

    # --- event routing (upstream ``WorkloadReconciler.Create/Update/Delete``) -------------------

    def _ts(self) -> float:
        return self.now.timestamp()

    def _info(self, wl: Workload) -> WorkloadInfo:
        return new_workload_info(wl, self.options, self.cache.workload(workload_key(wl)))

    def _on_workload_added(self, wl: Workload) -> None:
        self._route(None, wl)

    def _deliver_updates(self) -> None:
        while self._updates:
            old, new = self._updates.popleft()
            self._route(old, new)

    def _route(self, old: Workload | None, new: Workload) -> None:
        self.core.observe(old, new, self.now, retry_from=self._retry_from)

    # --- controller behaviour between cycles ---------------------------------------------------

    def _workload_keys(self) -> list[ObjectKey]:
        return [k for k in self.order if k[0] == "Workload"]

    def _cq_for(self, wl: Workload) -> str | None:
        if wl.status.admission is not None:
            return wl.status.admission.cluster_queue
        lo = self.objects.get(("LocalQueue", wl.metadata.namespace, wl.spec.queue_name))
        return lo.obj.spec.cluster_queue if lo is not None else None

    def _apply(self, key: ObjectKey, outcome: reconcile.Outcome) -> bool:
        """Apply a decision of :mod:`pykueue.core.workload.reconcile` through the core (so it is logged)."""
        if not outcome.writes:
            # ``KueueCore.apply_outcome`` does nothing for an outcome without a write (not even log
            # it); most calls are such (``NOTHING`` from the deactivation and queue rules on every
            # touched workload), so the key and the watch stimulus are not formatted for them.
            return False
        return self.core.apply_outcome(f"{key[1]}/{key[2]}", outcome, self._stimulus(key), self.now)

    def _sync_checks(self, key: ObjectKey) -> None:
        """Admission-check list sync (``syncAdmissionCheckConditions``) and, for reserved workloads, the
        Admitted condition."""
        wl: Workload = self.objects[key].obj
        cq = self.cache.cluster_queues.get(self._cq_for(wl) or "")
        # Fast path: nothing to sync without checks on either side, unless the Workload holds quota
        # without Admitted (loaded so): ``SyncAdmittedCondition`` admits it (no checks: all Ready).
        if cq is None or (
            not cq.check_flavors
            and not wl.status.admission_checks
            and (not self._sync_admitted_without_checks or wl.status.admission is None or is_admitted(wl))
        ):
            return
        if wl.status.admission is not None:
            flavors = {f for psa in wl.status.admission.pod_set_assignments for f in psa.flavors.values()}
            required = cq.checks_for_flavors(flavors)
        else:
            required = cq.checks_for_all_flavors()
        self._apply(key, reconcile.admission_checks(wl, required, cq.name, self.now, self.options))

    def _queue_view(self, wl: Workload) -> transitions.QueueView:
        lq_lo = self.objects.get(("LocalQueue", wl.metadata.namespace, wl.spec.queue_name))
        cq_name = self._cq_for(wl) or ""
        cq = self.cache.cluster_queues.get(cq_name)
        return reconcile.queue_view(
            wl,
            lq_lo.obj if lq_lo is not None else None,
            cq_name,
            cq.queue_facts() if cq is not None else None,
            self.namespace_labels(wl.metadata.namespace) if cq is not None else None,
            self.queues.is_inadmissible_with_bulk_reason(workload_key(wl)),
            self.core.limit_range_summaries.get(wl.metadata.namespace),
        )

    def _reconcile_queue_state(self, key: ObjectKey) -> None:
        """The workload controller's queue-related writes (``pkg/controller/core/workload_controller.go``)."""
        wl: Workload = self.objects[key].obj
        if is_finished(wl) or self._queue_state_settled(wl):
            return
        self._apply(key, reconcile.queue_state(wl, self._queue_view(wl), self.now, self.options))

    def _queue_state_settled(self, wl: Workload) -> bool:
        """``reconcile.queue_state_settled`` from what ``_queue_view`` would read (most Workloads a
        cycle writes: a pending status with the scheduler's reason, or a reservation)."""
        namespace = wl.metadata.namespace
        lq_lo = self.objects.get(("LocalQueue", namespace, wl.spec.queue_name))
        if lq_lo is None:
            return False
        cq = self.cache.cluster_queues.get(self._cq_for(wl) or "")
        return (
            cq is not None
            and namespace not in self.core.limit_range_summaries
            and reconcile.queue_state_settled(
                wl, lq_lo.obj, cq.queue_facts(), ("Namespace", "", namespace) in self.objects, self.options
            )
        )

    def _reconcile_workload(self, key: ObjectKey, checks: bool = False) -> None:
        """The workload controller's rules for one workload, in upstream ``WorkloadReconciler.Reconcile``'s
        order: the checks' requeueAt, deactivation, then (with ``checks``) check-based eviction, then
        (unless a reserved workload waits for its checks' retry delay) the queue-state rules and the
        check-list sync."""
        wl: Workload = self.objects[key].obj
        if is_finished(wl):
            return
        if wl.status.admission_checks and not has_quota_reservation(wl):
            # ``NeedsRequeueAtUpdate`` for a Workload without quota (a reserved one gets it in
            # ``_reconcile_checks``).
            self._apply(key, reconcile.requeue_at_update(wl, self.now))
        self._deactivate(key)
        if checks and key in self._failed_checks:
            self._reconcile_checks(key)
        wl = self.objects[key].obj
        if is_active(wl):
            retry_at = transitions.requeue_at(wl)
            if retry_at is not None and retry_at > self.now:
                # "Waiting for backoff to finish": upstream ``Reconcile`` returns for any active
                # Workload whose requeueAt is ahead (a check's retry delay or a requeue backoff),
                # pending or reserved, before the check sync, the Admitted sync and the queue rules.
                return
        # Upstream's order: ``reconcileSyncAdmissionChecks`` and ``SyncAdmittedCondition`` come
        # before ``reconcileOnLocalQueueActiveState`` / ``reconcileOnClusterQueueActiveState``, so a
        # reserved Workload whose checks are all Ready is admitted first, and then a HoldAndDrain
        # stop policy evicts it (``workloadevict.Evict``) instead of releasing it silently. Only
        # ``mayUpdateConditionForAdmissionGatedBy`` (part of the queue rules here) comes before them.
        if transitions.admission_gate_transition(wl, self.options) is not None:
            self._reconcile_queue_state(key)
            self._sync_checks(key)
        else:
            self._sync_checks(key)
            self._reconcile_queue_state(key)
        self._max_execution_time(key)

    def _max_execution_time(self, key: ObjectKey) -> None:
        """``reconcileMaxExecutionTime`` (last in upstream ``Reconcile``, for a Workload holding
        quota): DeactivationTarget once the time is exceeded, then the deactivation protocol.

        Each write's watch event brings the workload controller back before the job integration
        releases the quota: the eviction removes the target, so the rule sets it once more on the
        evicted, inactive Workload (a second event). Set, the target stops the rule, and an evicted
        Workload without a requeue state is not evicted again: two rounds at most."""
        while True:
            wl: Workload = self.objects[key].obj
            if key not in self._max_exec_due or not has_quota_reservation(wl) or is_finished(wl):
                return
            if not self._apply(key, reconcile.max_execution_time(wl, self.now)):
                return
            self._deactivate(key)

    def _deactivate(self, key: ObjectKey) -> None:
        """The deactivation protocol (``reconcile.deactivation``): DeactivationTarget=True makes
        ``spec.active`` false, an inactive workload is evicted. Each write's watch event makes the
        workload controller take the next step before the next cycle, until nothing is left."""
        while self._apply(key, reconcile.deactivation(self.objects[key].obj, self.now)):
            pass

    def _reconcile_checks(self, key: ObjectKey) -> None:
        """Retry evicts; Rejected deactivates in upstream's three writes
        (``WorkloadReconciler.reconcileCheckBasedEviction``)."""
        outcome = reconcile.check_based_eviction(self.objects[key].obj, self.now, self.options)
        if outcome.reason in ("EvictedDueToAdmissionCheck", "AdmissionCheckRejected"):
            # Past ``NeedsRequeueAtUpdate`` and the wait for requeueAt, upstream ``Reconcile`` runs
            # ``reconcileSyncAdmissionChecks`` and ``SyncAdmittedCondition`` before
            # ``reconcileCheckBasedEviction``: a failed check the ClusterQueue no longer requires is
            # dropped first and evicts nothing.
            self._sync_checks(key)
            outcome = reconcile.check_based_eviction(self.objects[key].obj, self.now, self.options)
        if self._apply(key, outcome) and outcome.reason == "AdmissionCheckRejected":
            # DeactivationTarget, then spec.active=false, then the eviction.
            self._deactivate(key)

    def _complete_evictions(self) -> bool:
        """The job integration's step for every evicted Workload still holding quota: stop the job,
        then clear the reservation, in one reconcile at the eviction's time (upstream
        ``JobReconciler.ReconcileGenericJob``, "6. handle eviction": ``stopJob``, then, the job no
        longer active, ``UnsetQuotaReservationWithCondition`` at ``r.clock.Now()``). Returns whether
        one was completed."""
        completed = False
        for key in sorted(self._evicted_reserved):
            wl: Workload = self.objects[key].obj
            if transitions.is_evicted_and_reserved(wl):
                updated = transitions.copy_for_status(wl)
                if transitions.complete_eviction(updated, self.now, self.options):
                    if not is_active(updated) and self.options.gate("UnadmittedWorkloadsObservability"):
                        # The workload controller's view of a non-reserved inactive workload
                        # (upstream ``WorkloadReconciler.syncQuotaReservedFalseCondition``).
                        transitions.set_condition(
                            updated, "QuotaReserved", "False", "Deactivated", "The workload is deactivated", self.now
                        )
                    completed = self.write_workload_status(updated) or completed
        return completed

    def _settle(self) -> None:
        """The controllers react to every write at the current time: the workload controller's
        rules for each changed Workload, the job integration's completion of each eviction they (or
        the cycle) issued, and the workload controller again on what that wrote, until nothing is
        left; evictions never wait for the next cycle's clock."""
        while True:
            self._deliver_updates()
            self._sync_touched()
            self._deliver_updates()
            if not self._complete_evictions():
                return

    def _finish_backoffs(self) -> None:
        for key in sorted(self._backing_off):
            wl: Workload = self.objects[key].obj
            if has_quota_reservation(wl) or not is_active(wl):
                continue
            updated = transitions.copy_for_status(wl)
            if transitions.finish_backoff(updated, self.now):
                self.write_workload_status(updated)

    def advance(self, seconds: float = 1.0, *, idle: bool = False) -> None:
        """Move time forward and let the controllers catch up before the next cycle.

        The clock advances, failed checks evict, evictions complete (quota released, Requeued
        set), backoffs finish, then every retry due at the new time is processed. A change made
        between cycles 1 s apart happened, on a live cluster, right after the previous cycle, so the
        1 s batched retry of parked workloads it requests (upstream's requeuer,
        ``QueueAssociatedInadmissibleWorkloadsAfter``) runs from the previous cycle's time and is
        due when the next cycle starts. After ``idle`` time (nothing happened since the previous
        cycle, the clock skips to the next due time: see :meth:`run`) the changes happen at the new
        time and their batched retry is due 1 s later.
        """
        previous = self.now
        # The previous cycle's evictions (preemptions) complete at that cycle's time, as the job
        # integration completes them at once, not at the next cycle's.
        self._settle()
        self.now = previous + timedelta(seconds=seconds)
        self._retry_from = None if idle else previous
        try:
            for key in sorted(self._failed_checks):
                self._reconcile_checks(key)
            for key in sorted(k for k, at in self._max_exec_due.items() if at <= self.now):
                self._max_execution_time(key)
            self._settle()
            self._finish_backoffs()
            self._deliver_updates()
        finally:
            self._retry_from = None
        self._reconcile_local_queue_usage()
        self.core.requeue_due(self.now)

    def _reconcile_local_queue_usage(self) -> None:
        """Admission Fair Sharing: each LocalQueue's reconcile when its ``RequeueAfter`` is due or
        an entry penalty of it is pending (the assume notifies its watchers), as upstream's
        ``LocalQueueReconciler`` does; it writes ``status.fairSharing``."""
        afs = self.queues.afs
        if not afs.enabled:
            return
        now = self.now.timestamp()
        for key in self.order:
            if key[0] != "LocalQueue":
                continue
            lq = self.objects[key].obj
            assert isinstance(lq, LocalQueue)
            lq_key = f"{key[1]}/{key[2]}"
            due = self._afs_due.get(lq_key)
            if due is not None and due > now and not afs.ledger.has_pending_penalty(lq_key):
                continue
            fair_sharing, requeue_after = self.core.reconcile_local_queue_usage(lq, self.now)
            if fair_sharing is not None:
                status = lq.status if lq.status is not None else LocalQueueStatus()
                lq.status = msgspec.structs.replace(status, fair_sharing=fair_sharing)
            if requeue_after is None:
                self._afs_due.pop(lq_key, None)
            else:
                self._afs_due[lq_key] = now + requeue_after

    # --- running --------------------------------------------------------------------------------

    def run_cycle(self) -> CycleResult:
        self._reconcile_local_queue_usage()
        result = self.core.cycle(self.now)
        self._deliver_updates()
        self._sync_touched()
        self._deliver_updates()
        return result

    def _sync_touched(self) -> None:
        """Queue-state, check-list and Admitted sync for workloads that changed."""
        keys = self._touched
        self._touched = set()
        for key in sorted(keys):
            self._reconcile_workload(key)

    def run(self, cycles: int = 1, until_quiet: bool = False, cap: int = 60) -> RunResult:
        """Run ``cycles`` cycles 1 s apart, or (``until_quiet``) until a cycle changes nothing and
        nothing is due any more, at most ``cap`` cycles.

        Until quiet, the simulation is discrete-event: after a cycle that changed nothing, while a
        workload waits out a requeue backoff or a check's retry delay (``requeueState.requeueAt``)
        and no batched retry is pending, nothing can happen before that time, so the clock skips
        to it (as upstream's reconciler, which returns ``RequeueAfter`` at "Waiting for backoff to
        finish", is woken then) instead of running idle cycles 1 s apart."""
        out = RunResult()
        n = cap if until_quiet else cycles
        step: timedelta | None = None
        for i in range(n):
            writes = self._writes
            if i > 0:
                idle = step is not None
                self.advance((step or timedelta(seconds=1)).total_seconds(), idle=idle)
            result = self.run_cycle()
            out.cycles.append(result)
            for e in result.entries:
                out.last_entry[e.info.key] = e
            step = None
            if until_quiet and result.heads == 0 and self._writes == writes:
                if self.queues.has_pending_requests():
                    continue  # a batched retry is due within 1 s
                due = self._next_requeue_at()
                if due is None:
                    break
                # A LocalQueue's Admission Fair Sharing sample due before it is woken first (its
                # reconcile's ``RequeueAfter``), so the decay steps are the sampling interval's.
                sample = self._next_local_queue_sample()
                if sample is not None and sample < due:
                    due = sample
                if due - self.now > timedelta(seconds=1):
                    step = due - self.now
        return out

    def settle(self) -> None:
        """Let the controllers finish reacting at the current time: the last cycle's evictions
        (preemptions) complete as the job integration completes them, at once (upstream
        ``JobReconciler.ReconcileGenericJob``, "6. handle eviction"). ``pykueue schedule`` calls
        it after the run; a test of the scheduler's cycle alone reads the state before it."""
        self._settle()

    def _next_local_queue_sample(self) -> datetime | None:
        """The earliest Admission Fair Sharing reconcile of a LocalQueue still ahead."""
        now = self.now.timestamp()
        ahead = [t for t in self._afs_due.values() if t > now]
        return datetime.fromtimestamp(min(ahead), UTC) if ahead else None

    def _next_requeue_at(self) -> datetime | None:
        """The earliest ``requeueAt`` still ahead among the workloads backing off."""
        ahead = [
            at for k in self._backing_off if (at := transitions.requeue_at(self.objects[k].obj)) is not None and at > self.now
        ]
        ahead.extend(at for at in self._max_exec_due.values() if at > self.now)
        return min(ahead, default=None)

    # --- final status ------------------------------------------------------------------------

    def finalize_status(self) -> None:
        """Write ClusterQueue, LocalQueue and Cohort status as their controllers would."""
        fs = self.options.fair_sharing
        weight_of = cache_weight_of(self.cache)
        for key in self.order:
            lo = self.objects[key]
            obj = lo.obj
            if isinstance(obj, ClusterQueue):
                state = self.cache.cluster_queues[obj.metadata.name]
                obj.status = cluster_queue_status(
                    state, obj.status, self.queues.pending_count(obj.metadata.name), self.now, fs, weight_of
                )
            elif isinstance(obj, LocalQueue):
                lq_key = f"{obj.metadata.namespace}/{obj.metadata.name}"
                obj.status = local_queue_status(obj, self.cache, self.queues.pending_count_local_queue(lq_key), self.now)
            elif isinstance(obj, Cohort):
                node = self.cache.cohorts.get(obj.metadata.name)
                obj.status = cohort_status(node, fs) if node is not None else None

    def output(self) -> list[tuple[Any, str]]:
        """Every input object (implicit namespaces excluded), in input order."""
        return [(self.objects[k].obj, self.objects[k].api_version) for k in self.order]

    def workloads(self) -> list[Workload]:
        return [self.objects[k].obj for k in self._workload_keys()]


def stable_uid(kind: str, namespace: str, name: str) -> str:
    """The uid a state object without one gets: the same on every run."""
    return str(uuid.uuid5(_UID_NAMESPACE, f"{kind}/{namespace}/{name}"))


def _key(obj: Any) -> ObjectKey:
    kind = obj.kind
    ns = obj.metadata.namespace if kind in ("Workload", "LocalQueue") else ""
    return (kind, ns, obj.metadata.name)


def _display(key: ObjectKey) -> str:
    return f"{key[1]}/{key[2]}" if key[1] else key[2]


def _mark(index: set[ObjectKey], key: ObjectKey, present: bool) -> None:
    if present:
        index.add(key)
    else:
        index.discard(key)


def _max_exec_due(wl: Workload, first: dict[str, Condition]) -> datetime | None:
    """When ``reconcileMaxExecutionTime`` sets ``wl``'s DeactivationTarget (``first``: its first
    condition of each type): Admitted=True plus ``maximumExecutionTimeSeconds`` less the accumulated
    past execution time; None when it does not apply or DeactivationTarget is already True.

    As upstream's, the rule reads only the Admitted condition, active or not, evicted or not: a
    Workload it has just deactivated is looked at again by the workload controller once evicted,
    before the job integration releases its quota (between cycles the workload controller reacts to
    the eviction first, :meth:`SimulatedCluster._settle`), and gets the target set again, with a
    second event, as upstream's reconciler gets it while the job's pods are still terminating."""
    limit = wl.spec.maximum_execution_time_seconds
    admitted = first.get("Admitted")
    target = first.get("DeactivationTarget")
    if limit is None or admitted is None or admitted.status != "True" or (target is not None and target.status == "True"):
        return None
    past = wl.status.accumulated_past_execution_time_seconds or 0
    return to_time(admitted.last_transition_time) + timedelta(seconds=limit - past)
