"""An in-memory cluster that drives the scheduling core: the engine behind ``pykueue schedule``.

It plays the parts the controllers play on a real control plane, in-process and deterministically:
it loads objects as the informers would, routes every Workload change into the cache and queues
(API reference §3.14a), syncs admission checks, completes evictions as a Job integration would
(§3.7), finishes backoffs (§4.8) and computes queue status (§4). Time only moves when told.
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import msgspec

from pykueue.api.kueue import (
    AdmissionCheck,
    ClusterQueue,
    Cohort,
    LocalQueue,
    Namespace,
    ResourceFlavor,
    Workload,
    WorkloadPriorityClass,
)
from pykueue.api.meta import ObjectMeta, find_condition, remove_condition, to_time
from pykueue.core.cache.cache import Cache, cache_weight_of
from pykueue.core.events import NORMAL, WARNING, Event
from pykueue.core.options import SchedulerOptions
from pykueue.core.queue import QueueManager
from pykueue.core.scheduler.cycle import Scheduler
from pykueue.core.scheduler.entry import CycleResult, Entry
from pykueue.core.state import route_workload_change
from pykueue.core.status import cluster_queue_status, cohort_status, local_queue_status
from pykueue.core.workload import transitions
from pykueue.core.workload.admissibility import admissibility_error
from pykueue.core.workload.info import (
    DEACTIVATION_TARGET,
    WorkloadInfo,
    has_active_quota_reservation,
    has_failed_checks,
    has_quota_reservation,
    is_active,
    is_admitted,
    is_evicted,
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

    def __init__(self, options: SchedulerOptions, now: datetime) -> None:
        self.options = options
        self.now = to_time(now)
        self.objects: dict[ObjectKey, LoadedObject] = {}
        self.order: list[ObjectKey] = []
        self.events: list[Event] = []
        self.cache = Cache()
        self.queues = QueueManager(options, self.cache)
        self.scheduler = Scheduler(self.cache, self.queues, self, options)
        self._updates: deque[tuple[Workload, Workload]] = deque()
        self._writes = 0
        self._implicit_namespaces: set[str] = set()
        # Workloads that need controller attention, kept current on every change, so the
        # controller steps never scan every workload.
        self._touched: set[ObjectKey] = set()
        self._failed_checks: set[ObjectKey] = set()
        self._evicted_reserved: set[ObjectKey] = set()
        self._backing_off: set[ObjectKey] = set()
        # While catching up between cycles: the previous cycle's time (see ``advance``).
        self._retry_from: datetime | None = None

    # --- WorkloadStore ------------------------------------------------------------------------

    def get_workload(self, key: str) -> Workload | None:
        ns, _, name = key.partition("/")
        lo = self.objects.get(("Workload", ns, name))
        return lo.obj if lo is not None else None

    def write_workload_status(self, wl: Workload) -> bool:
        key: ObjectKey = ("Workload", wl.metadata.namespace, wl.metadata.name)
        lo = self.objects.get(key)
        if lo is None:
            return False
        old = lo.obj
        lo.obj = wl
        self._updates.append((old, wl))
        self._writes += 1
        self._index(key, wl)
        self._touched.add(key)
        return True

    def _index(self, key: ObjectKey, wl: Workload) -> None:
        _mark(
            self._failed_checks,
            key,
            has_quota_reservation(wl) and not is_evicted(wl) and has_failed_checks(wl),
        )
        _mark(self._evicted_reserved, key, transitions.is_evicted_and_reserved(wl))
        rq = find_condition(wl.status.conditions, "Requeued")
        _mark(
            self._backing_off,
            key,
            transitions.requeue_at(wl) is not None
            or (rq is not None and rq.status == "False" and rq.reason in ("PodsReadyTimeout", "AdmissionCheck")),
        )

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
            self._reconcile_queue_state(key)
            self._sync_checks(key, admitted_sync=True)
        self._deliver_updates()
        # Evictions the controllers just issued (e.g. stopPolicy HoldAndDrain): on a live cluster
        # the job integration completes them before the scheduler's first cycle runs.
        self._complete_evictions()
        self._deliver_updates()

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
        """WorkloadPriorityClass values flow into the workloads that reference them (§2.1)."""
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
                wl.spec = msgspec.structs.replace(wl.spec, priority=values[ref.name])
                self._replace_in_queues(wl)

    def _replace_in_queues(self, wl: Workload) -> None:
        if has_active_quota_reservation(wl):
            self.cache.add_workload(self._info(wl))
        else:
            self.queues.add_or_update_workload(wl, self._ts())

    # --- event routing (API reference §3.14a) ---------------------------------------------------

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
        route_workload_change(
            old,
            new,
            cache=self.cache,
            queues=self.queues,
            scheduler=self.scheduler,
            options=self.options,
            now=self.now,
            retry_from=self._retry_from,
        )

    # --- controller behaviour between cycles ---------------------------------------------------

    def _workload_keys(self) -> list[ObjectKey]:
        return [k for k in self.order if k[0] == "Workload"]

    def _cq_for(self, wl: Workload) -> str | None:
        if wl.status.admission is not None:
            return wl.status.admission.cluster_queue
        lo = self.objects.get(("LocalQueue", wl.metadata.namespace, wl.spec.queue_name))
        return lo.obj.spec.cluster_queue if lo is not None else None

    def _sync_checks(self, key: ObjectKey, admitted_sync: bool) -> None:
        """Admission-check list sync (§3.5) and, for reserved workloads, the Admitted condition."""
        wl: Workload = self.objects[key].obj
        if is_finished(wl):
            return
        cq = self.cache.cluster_queues.get(self._cq_for(wl) or "")
        if cq is None or (not cq.check_flavors and not wl.status.admission_checks):
            return
        if wl.status.admission is not None:
            flavors = {f for psa in wl.status.admission.pod_set_assignments for f in psa.flavors.values()}
            required = cq.checks_for_flavors(flavors)
        else:
            required = cq.checks_for_all_flavors()
        updated = transitions.copy_for_status(wl)
        changed = transitions.sync_admission_checks(updated, required, self.now)
        became_admitted = False
        # Like upstream's workload controller, never re-sync an admitted workload: an eviction resets
        # its checks to Pending, yet Admitted stays True until the job integration releases the quota.
        if admitted_sync and has_quota_reservation(updated) and not is_admitted(updated):
            before = [msgspec.to_builtins(c) for c in updated.status.conditions]
            became_admitted = transitions.sync_admitted_condition(updated, self.now, self.options)
            changed = changed or before != [msgspec.to_builtins(c) for c in updated.status.conditions]
        if changed:
            self.write_workload_status(updated)
        if became_admitted:
            qr = find_condition(updated.status.conditions, "QuotaReserved")
            waited = (self.now - qr.last_transition_time).total_seconds() if qr else 0.0
            self.record_event(
                Event.for_workload(
                    wl.metadata.namespace,
                    wl.metadata.name,
                    NORMAL,
                    "Admitted",
                    f"Admitted by ClusterQueue {cq.name}, wait time since reservation was {waited:.0f}s",
                )
            )

    def _queue_view(self, wl: Workload) -> transitions.QueueView:
        lq_lo = self.objects.get(("LocalQueue", wl.metadata.namespace, wl.spec.queue_name))
        lq: LocalQueue | None = lq_lo.obj if lq_lo is not None else None
        cq_name = self._cq_for(wl) or ""
        cq = self.cache.cluster_queues.get(cq_name)
        admissibility: str | None = None
        if cq is not None:
            labels = self.namespace_labels(wl.metadata.namespace)
            admissibility = admissibility_error(wl, cq.namespace_selector, labels)
        return transitions.QueueView(
            local_queue_exists=lq is not None,
            local_queue_stop_policy=lq.spec.stop_policy if lq is not None else "",
            cluster_queue=cq_name,
            cluster_queue_exists=cq is not None and not cq.terminating,
            cluster_queue_active=cq is not None and cq.is_active(),
            cluster_queue_stop_policy=cq.stop_policy if cq is not None else "",
            bulk_bypass_reason=self.queues.is_inadmissible_with_bulk_reason(workload_key(wl)),
            admissibility_error=admissibility,
        )

    def _reconcile_queue_state(self, key: ObjectKey) -> None:
        """The workload controller's queue-related writes (§10.5, §3.9, §3.12)."""
        wl: Workload = self.objects[key].obj
        if is_finished(wl):
            return
        view = self._queue_view(wl)
        updated = transitions.copy_for_status(wl)
        changed = transitions.reactivate(updated, self.now)
        changed = transitions.restart_after_stop(updated, view, self.now) or changed
        if not has_quota_reservation(wl):
            target = transitions.pending_condition(wl, view, self.options)
            current = find_condition(wl.status.conditions, "QuotaReserved")
            if target is not None and (current is None or (current.reason, current.message) != target):
                transitions.release_reservation(updated, target[0], target[1], self.now, self.options)
                changed = True
        elif (
            wl.spec.queue_name  # a workload without a queue name is not managed by any LocalQueue
            and not is_admitted(wl)
            and (not view.local_queue_exists or not view.cluster_queue_exists)
        ):
            kind, name = (
                ("LocalQueue", wl.spec.queue_name) if not view.local_queue_exists else ("ClusterQueue", view.cluster_queue)
            )
            transitions.release_reservation(
                updated, "Misconfigured", f"{kind} {name} is terminating or missing", self.now, self.options
            )
            changed = True
        else:
            action = transitions.stopped_queue_action(wl, view)
            if action is not None and action[0] == "release":
                transitions.release_reservation(updated, action[1], action[2], self.now, self.options)
                changed = True
            elif action is not None:
                transitions.evict(updated, action[1], action[2], self.now)
                self.record_event(
                    Event.for_workload(
                        wl.metadata.namespace, wl.metadata.name, NORMAL, f"EvictedDueTo{action[1]}", action[2]
                    )
                )
                changed = True
        if changed:
            self.write_workload_status(updated)

    def _reconcile_checks(self, key: ObjectKey) -> None:
        """Retry evicts, Rejected deactivates (§9.3, API reference §3.8-§3.9)."""
        wl: Workload = self.objects[key].obj
        if not has_quota_reservation(wl) or is_evicted(wl) or is_finished(wl):
            return
        ns, name = wl.metadata.namespace, wl.metadata.name
        rejected = transitions.rejected_checks_message(wl)
        if rejected is not None and is_active(wl):
            updated = transitions.copy_for_status(wl)
            transitions.set_condition(updated, DEACTIVATION_TARGET, "True", "AdmissionCheck", rejected, self.now)
            updated.spec = msgspec.structs.replace(updated.spec, active=False)
            message = f"The workload is deactivated due to {rejected}"
            reason = transitions.evict(updated, "Deactivated", message, self.now, "AdmissionCheck")
            remove_condition(updated.status.conditions, DEACTIVATION_TARGET)
            updated.status.requeue_state = None
            self.record_event(Event.for_workload(ns, name, WARNING, "AdmissionCheckRejected", f"Deactivated due to {rejected}"))
            self.record_event(Event.for_workload(ns, name, NORMAL, f"EvictedDueTo{reason}", message))
            self.write_workload_status(updated)
            return
        retry = transitions.retry_checks_message(wl)
        if retry is None:
            return
        updated = transitions.copy_for_status(wl)
        at = transitions.retry_check_requeue_at(wl)
        current = transitions.requeue_at(wl)
        if at is not None and at > self.now and (current is None or at > current):
            transitions.set_requeue_at(updated, at)
            self.write_workload_status(updated)
            return
        transitions.evict(updated, "AdmissionCheck", retry, self.now)
        self.record_event(Event.for_workload(ns, name, NORMAL, "EvictedDueToAdmissionCheck", retry))
        self.write_workload_status(updated)

    def _complete_evictions(self) -> None:
        for key in sorted(self._evicted_reserved):
            wl: Workload = self.objects[key].obj
            if transitions.is_evicted_and_reserved(wl):
                updated = transitions.copy_for_status(wl)
                if transitions.complete_eviction(updated, self.now, self.options):
                    if not is_active(updated) and self.options.gate("UnadmittedWorkloadsObservability"):
                        # The workload controller's view of a non-reserved inactive workload
                        # (scheduling reference §10.5, API reference §3.2 step 1).
                        transitions.set_condition(
                            updated, "QuotaReserved", "False", "Deactivated", "The workload is deactivated", self.now
                        )
                    self.write_workload_status(updated)

    def _finish_backoffs(self) -> None:
        for key in sorted(self._backing_off):
            wl: Workload = self.objects[key].obj
            if has_quota_reservation(wl) or not is_active(wl):
                continue
            updated = transitions.copy_for_status(wl)
            if transitions.finish_backoff(updated, self.now):
                self.write_workload_status(updated)

    def advance(self, seconds: float = 1.0) -> None:
        """Move time forward and let the controllers catch up before the next cycle.

        The clock advances, failed checks evict, evictions complete (quota released, Requeued
        set), backoffs finish, then every retry due at the new time is processed. A change made
        between cycles happened, on a live cluster, right after the previous cycle (the job
        integration completes an eviction at once), so the 1 s batched retry of parked workloads
        it requests (upstream's requeuer, ``QueueAssociatedInadmissibleWorkloadsAfter``) runs from
        the previous cycle's time and, with cycles 1 s apart, is due when the next cycle starts.
        """
        previous = self.now
        self.now = previous + timedelta(seconds=seconds)
        self._retry_from = previous
        try:
            for key in sorted(self._failed_checks):
                self._reconcile_checks(key)
            self._deliver_updates()
            self._complete_evictions()
            self._deliver_updates()
            self._sync_touched()
            self._finish_backoffs()
            self._deliver_updates()
        finally:
            self._retry_from = None
        self.queues.process_due_requeues(self._ts())

    # --- running --------------------------------------------------------------------------------

    def run_cycle(self) -> CycleResult:
        result = self.scheduler.schedule(self.now)
        self._deliver_updates()
        self._sync_touched()
        self._deliver_updates()
        return result

    def _sync_touched(self) -> None:
        """Queue-state, check-list and Admitted sync for workloads that changed."""
        keys = self._touched
        self._touched = set()
        for key in sorted(keys):
            self._reconcile_queue_state(key)
            self._sync_checks(key, admitted_sync=True)

    def run(self, cycles: int = 1, until_quiet: bool = False, cap: int = 60) -> RunResult:
        """Run ``cycles`` cycles (or until quiet, at most ``cap``), advancing 1s between cycles."""
        out = RunResult()
        n = cap if until_quiet else cycles
        for i in range(n):
            writes = self._writes
            if i > 0:
                self.advance(1.0)
            result = self.run_cycle()
            out.cycles.append(result)
            for e in result.entries:
                out.last_entry[e.info.key] = e
            if until_quiet and result.heads == 0 and self._writes == writes and not self._waiting():
                break
        return out

    def _waiting(self) -> bool:
        """Something is still due later: a batched requeue or a workload backing off."""
        if self.queues.has_pending_requests():
            return True
        return any(
            (at := transitions.requeue_at(self.objects[k].obj)) is not None and at > self.now for k in self._backing_off
        )

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
