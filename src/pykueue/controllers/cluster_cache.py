"""The manager thread's view of the cluster, and how each observed change reaches the core.

:class:`ClusterCache` holds the objects as last seen or written (raw JSON, and typed views of the
Kueue kinds; Workloads, by far the most numerous, only typed), applies every :class:`~pykueue.runtime.informer.Change` with the applier registered
for its collection, routes Workload changes into the scheduling core (queues and cache, as
upstream's ``pkg/controller/core/workload_controller.go`` event handlers do) and queues the
reconcilers' keys ``(kind, key)`` on the shared :class:`~pykueue.runtime.controller.WorkQueue`.
It is owned by the manager thread: nothing here is locked.

Memory: this is the manager's only copy of each object (its informers keep only resourceVersions).
Objects are cached without ``metadata.managedFields`` (controller-runtime's
``cache.TransformStripManagedFields``; controllers never read them and an update without them
keeps the live ones) and with their keys and repeated string values interned (namespaces, queue
names, images, condition types, reasons and messages recur across thousands of Workloads).
"""

from __future__ import annotations

import logging
import sys
from collections import deque
from collections.abc import Callable, Hashable
from datetime import datetime
from typing import Any

import msgspec

from pykueue.api.conversion import internal_version, to_internal
from pykueue.api.kueue import (
    AdmissionCheck,
    ClusterQueue,
    Cohort,
    LocalQueue,
    ResourceFlavor,
    Workload,
)
from pykueue.api.meta import controller_of, is_condition_true, to_time
from pykueue.api.unmodelled import EVENT_REASON as UNMODELLED_EVENT_REASON
from pykueue.api.unmodelled import unmodelled_features
from pykueue.client import resources as R
from pykueue.client.interface import Resource
from pykueue.controllers.workloadpriorityclass_controller import reconciles_on_change
from pykueue.core.cache.cache import ACTIVE, PENDING, Cache
from pykueue.core.events import WARNING
from pykueue.core.options import SchedulerOptions
from pykueue.core.queue import QueueManager
from pykueue.core.state import KueueCore, queueable
from pykueue.core.workload.info import (
    WorkloadInfo,
    has_active_quota_reservation,
    new_workload_info,
    workload_key,
)
from pykueue.metrics.recorder import ControllerMetrics
from pykueue.runtime.clock import Clock
from pykueue.runtime.controller import WorkQueue
from pykueue.runtime.informer import (
    DELETED,
    Change,
    ObjectKey,
    OwnWrites,
    object_key,
    resource_version,
)
from pykueue.runtime.recorder import EventRecorder, object_reference

log = logging.getLogger(__name__)

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
STATUS_BATCH_SECONDS = 1.0
"""``UpdatesBatchPeriod``: queue status is refreshed at most this long after a workload change."""

# Collections the manager watches, in the order their initial state is applied (dependencies first).
WATCHED: tuple[Resource, ...] = (
    R.NAMESPACES,
    R.LIMIT_RANGES,
    R.RUNTIME_CLASSES,
    R.PRIORITY_CLASSES,
    R.WORKLOAD_PRIORITY_CLASSES,
    R.RESOURCE_FLAVORS,
    R.ADMISSION_CHECKS,
    R.COHORTS,
    R.CLUSTER_QUEUES,
    R.LOCAL_QUEUES,
    R.WORKLOADS,
    R.JOBS,
)
WATCH_ORDER = {res.plural: i for i, res in enumerate(WATCHED)}

# The reconcilers' kinds: the work queue's keys are (kind, key).
JOB, WORKLOAD, FLAVOR, CHECK, CLUSTER_QUEUE, LOCAL_QUEUE, COHORT = "job", "workload", "rf", "ac", "cq", "lq", "cohort"
PRIORITY_CLASS = "wpc"
WorkKey = tuple[str, Hashable]

Applier = Callable[[dict[str, Any] | None, dict[str, Any] | None], None]


class ClusterCache:
    """Cached objects, their appliers, and the routing of Workload changes into the core."""

    def __init__(
        self,
        cache: Cache,
        queues: QueueManager,
        options: SchedulerOptions,
        work: WorkQueue[WorkKey],
        recorder: EventRecorder,
        clock: Clock,
    ) -> None:
        self.cache = cache
        self.queues = queues
        self.sched_options = options
        self.work = work
        self.recorder = recorder
        self.clock = clock
        # Set by the manager once the core and the metrics exist (both read this cache).
        self.core: KueueCore | None = None
        self.metrics: ControllerMetrics | None = None
        self.own_writes: OwnWrites | None = None
        """Set by the manager: the versions applied here from our writes' answers, whose watch
        events its informers then skip (:class:`~pykueue.runtime.informer.OwnWrites`)."""
        # Raw JSON of every watched collection but Workloads (kept typed only, in ``workloads``).
        self.raw: dict[str, dict[ObjectKey, dict[str, Any]]] = {res.plural: {} for res in WATCHED}
        self.workloads: dict[str, Workload] = {}
        self.local_queues: dict[str, LocalQueue] = {}
        self.cluster_queues: dict[str, ClusterQueue] = {}
        self.cohorts: dict[str, Cohort] = {}
        self.flavors: dict[str, ResourceFlavor] = {}
        self.admission_checks: dict[str, AdmissionCheck] = {}
        self.namespace_label_map: dict[str, dict[str, str]] = {}
        self.workloads_of_owner: dict[tuple[str, str, str, str], set[str]] = {}
        """Workload keys by ``(namespace, owner apiVersion, owner kind, owner name)`` of each of their
        owner references: upstream's owner index (``indexer.SetupWorkloadOwnerIndex``, matched with
        ``OwnerReferenceIndexFieldMatcher``) keys on the owner's GVK and name, not its uid."""
        self.jobs_of_controller: dict[str, set[ObjectKey]] = {}
        """Job keys by their controller's uid (upstream's ``indexer.OwnerReferenceUID`` on Jobs): the
        child Jobs a Workload change of their parent reconciles (``parentWorkloadHandler``)."""
        # Workload keys by LocalQueue ("namespace/queueName") and by the ClusterQueue of their
        # admission, in arrival order: a queue's create or delete finds its workloads without a
        # walk over every cached Workload (1,000 queues x 50,000 workloads in Kueue's large-scale
        # benchmark), as upstream's informer indexes (indexer.WorkloadQueueKey, WorkloadClusterQueueKey) do.
        self._by_local_queue: dict[str, dict[str, None]] = {}
        self._by_admission_cq: dict[str, dict[str, None]] = {}
        # (old, new, when the change arrived: None for our own writes, routed at the clock's time).
        self._updates: deque[tuple[Workload | None, Workload | None, datetime | None]] = deque()
        self._appliers: dict[str, Applier] = {
            R.NAMESPACES.plural: self._apply_namespaces,
            R.LIMIT_RANGES.plural: self._apply_limitranges,
            R.RUNTIME_CLASSES.plural: self._apply_runtimeclasses,
            R.PRIORITY_CLASSES.plural: _read_when_needed,
            R.WORKLOAD_PRIORITY_CLASSES.plural: self._apply_workloadpriorityclasses,
            R.RESOURCE_FLAVORS.plural: self._apply_resourceflavors,
            R.ADMISSION_CHECKS.plural: self._apply_admissionchecks,
            R.COHORTS.plural: self._apply_cohorts,
            R.CLUSTER_QUEUES.plural: self._apply_clusterqueues,
            R.LOCAL_QUEUES.plural: self._apply_localqueues,
            R.JOBS.plural: self._apply_jobs,
        }

    def _ts(self) -> float:
        """When a change requests a retry of parked workloads: the precise clock, as upstream's
        requeuer's delaying queue (``AddAfter``) reads it, not the API's whole seconds."""
        return self.clock().timestamp()

    def mark(self, kind: str, key: Hashable) -> None:
        """Queue ``key`` for the reconciler of ``kind``."""
        self.work.add((kind, key))

    def requeue_after(self, kind: str, key: Hashable, seconds: float) -> None:
        """Reconcile ``key`` of ``kind`` again after ``seconds`` (the earliest request wins)."""
        self.work.add_after((kind, key), seconds)

    def schedule_status(self, kind: str, key: Hashable) -> None:
        """Queue status refresh, batched over :data:`STATUS_BATCH_SECONDS`."""
        self.requeue_after(kind, key, STATUS_BATCH_SECONDS)

    # --- applying observed changes --------------------------------------------------------------------

    def on_change(self, change: Change, seen: datetime | None = None) -> None:
        """Apply one observed change (an older version than the cached one is ignored).

        The manager's informers deliver objects already :func:`compact` (their transform).
        ``seen``: when the watch event arrived; a Workload change's batched retry of parked
        workloads runs 1 s from then (default: from when it is routed into the core)."""
        plural = change.resource.plural
        obj = change.object
        key = object_key(obj)
        if plural == R.WORKLOADS.plural:
            self._on_workload_change(change, key, seen)
            return
        cached = self.raw[plural]
        old = cached.get(key)
        if change.type == DELETED:
            if old is None or _deleted_before(obj, resource_version(old)):
                return
            del cached[key]
            self._apply(plural, old, None)
            return
        if old is not None and not _newer(resource_version(obj), resource_version(old)):
            return  # our own write, already applied (or an older version)
        cached[key] = obj
        if old is None:
            self._report_unmodelled(change.resource, obj)
        self._apply(plural, old, obj)

    def _on_workload_change(self, change: Change, key: ObjectKey, seen: datetime | None) -> None:
        """:meth:`on_change` for Workloads, which are cached typed only."""
        wl_key = f"{key[0]}/{key[1]}"
        old = self.workloads.get(wl_key)
        if change.type == DELETED:
            if old is None or _deleted_before(change.object, old.metadata.resource_version):
                return
            del self.workloads[wl_key]
            self._index_owner(old, remove=True)
            self._index_queues(wl_key, old, None)
            self._updates.append((old, None, seen))
            return
        obj = change.object
        if old is not None and not _newer(resource_version(obj), old.metadata.resource_version):
            return  # our own write, already applied (or an older version)
        if old is None:
            self._report_unmodelled(change.resource, obj)
        wl = _typed_workload(obj)
        if old is not None and wl.metadata.generation and wl.metadata.generation == old.metadata.generation:
            # The spec changes only with the generation: a status or metadata update keeps the
            # cached spec object, so the core reuses the pod sets it computed from it (and the
            # versions share their spec instead of holding equal copies).
            wl = msgspec.structs.replace(wl, spec=old.spec)
        self.workloads[wl_key] = wl
        if old is None or old.metadata.owner_references != wl.metadata.owner_references:
            if old is not None:
                self._index_owner(old, remove=True)  # an owner reference may have gone
            self._index_owner(wl)
        self._index_queues(wl_key, old, wl)
        self._updates.append((old, wl, seen))

    def _report_unmodelled(self, res: Resource, obj: dict[str, Any]) -> None:
        """A Warning Event on an object that asks for a Kueue feature pykueue does not implement."""
        for found in unmodelled_features(res.group, res.kind, obj):
            involved = object_reference(obj, res.api_version, res.kind)
            self.recorder.record(involved, WARNING, UNMODELLED_EVENT_REASON, found.message, action=UNMODELLED_EVENT_REASON)

    def observe_write(self, res: Resource, obj: dict[str, Any]) -> None:
        """Apply the result of our own successful write at once (write-through).

        Only a version newer than the cached one is decoded and applied (the watch may have
        brought it first); an applied one is expected by :attr:`own_writes`, so its watch event is
        not decoded a second time."""
        key = object_key(obj)
        version = resource_version(obj)
        if res.plural == R.WORKLOADS.plural:
            wl = self.workloads.get(f"{key[0]}/{key[1]}")
            cached = wl.metadata.resource_version if wl is not None else None
        else:
            raw = self.raw[res.plural].get(key)
            cached = resource_version(raw) if raw is not None else None
        if cached is not None and not _newer(version, cached):
            return  # the watch brought this version (or a later one) first
        self.on_change(Change(res, "MODIFIED", None, compact(obj)))
        meta = obj.get("metadata") or {}
        if self.own_writes is not None and not (meta.get("deletionTimestamp") and not meta.get("finalizers")):
            # (A write that removed the last finalizer of a deleting object deleted it: its watch
            # event is a DELETED, never skipped, which may already have passed the informer.)
            self.own_writes.expect(res.plural, key, version)

    def _apply(self, plural: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        self._appliers[plural](old, new)

    def _apply_namespaces(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        obj = new or old
        assert obj is not None
        name = obj["metadata"]["name"]
        if new is None:
            self.namespace_label_map.pop(name, None)
            self.queues.delete_namespace(name)
            return
        labels = dict(new["metadata"].get("labels") or {})
        labels.setdefault(NAMESPACE_NAME_LABEL, name)
        previous = self.namespace_label_map.get(name)
        self.namespace_label_map[name] = labels
        if previous == labels:
            return
        newly_matching = self.queues.set_namespace_labels(name, labels)
        # Jobs seen before their namespace were skipped as unmanaged; look at them again.
        for ns, job in self.raw["jobs"]:
            if ns == name:
                self.mark(JOB, (ns, job))
        # Upstream ``cqNamespaceHandler.Update``: only the ClusterQueues whose selector the namespace
        # newly matches are retried. (Upstream's Create does nothing, its informers being synced
        # before any workload is queued; a namespace first seen here after its workloads retries
        # the ClusterQueues it matches, the only ones where they can be parked for it.)
        if newly_matching:
            self.queues.queue_inadmissible_workloads(newly_matching, self._ts())

    def _apply_limitranges(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        """Into the core, which re-adds the namespace's pending Workloads adjusted again (upstream
        ``resourceUpdatesHandler``)."""
        obj = new or old
        assert obj is not None
        meta = obj["metadata"]
        spec = (new.get("spec") or {}) if new is not None else None
        self._core().observe_limit_range(meta.get("namespace") or "", meta["name"], spec, to_time(self.clock()))

    def _apply_runtimeclasses(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        """Into the core, which re-adds the pending Workloads naming it adjusted again (upstream
        ``resourceUpdatesHandler``)."""
        obj = new or old
        assert obj is not None
        overhead = (new.get("overhead") or {}).get("podFixed") if new is not None else None
        self._core().observe_runtime_class(obj["metadata"]["name"], overhead, deleted=new is None, now=to_time(self.clock()))

    def _apply_workloadpriorityclasses(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        """The Job integration reads the classes from ``raw`` when it builds a Workload; a new class,
        or a new value, reconciles the Workloads referencing it (``WorkloadPriorityClassReconciler``'s
        predicates)."""
        if reconciles_on_change(old, new):
            assert new is not None
            self.mark(PRIORITY_CLASS, new["metadata"]["name"])

    def _apply_resourceflavors(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        """``ResourceFlavorReconciler``'s event handlers (``Create``, ``Update``, ``Delete``): the
        flavor is reconciled (its finalizer) on a create and once it is being deleted; the parked
        workloads retried are those of the ClusterQueues the change activated and, when the fields
        the flavor assigner matches on changed, of the ClusterQueues using the flavor."""
        before = self._pending_cluster_queues()
        retry: set[str] = set()
        if new is None:
            assert old is not None
            name = old["metadata"]["name"]
            self.flavors.pop(name, None)
            self.cache.delete_flavor(name)
        else:
            rf = _typed(new, ResourceFlavor)
            name = rf.metadata.name
            prev = self.flavors.get(name)
            self.flavors[name] = rf
            if rf.metadata.deletion_timestamp is not None and prev is not None:
                # ``Update``: a flavor being deleted is reconciled, and not applied to the scheduler's cache.
                self.mark(FLAVOR, name)
                return
            self.cache.add_or_update_flavor(rf)
            if prev is None:
                self.mark(FLAVOR, name)  # ``Create``
            elif prev.spec == rf.spec:
                return  # only metadata (e.g. our finalizer) changed
            elif _flavor_scheduling_fields_changed(prev, rf):
                retry.update(self.cache.cluster_queues_using_flavor(name))
        retry.update(n for n in before if self._cluster_queue_active(n))
        self._cluster_queues_changed(retry)

    def _apply_admissionchecks(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if new is None:
            assert old is not None
            name = old["metadata"]["name"]
            self.admission_checks.pop(name, None)
            self.cache.delete_admission_check(name)
        else:
            ac = _typed(new, AdmissionCheck)
            prev = self.admission_checks.get(ac.metadata.name)
            self.admission_checks[ac.metadata.name] = ac
            self.cache.add_or_update_admission_check(ac)
            self.mark(CHECK, ac.metadata.name)
            if prev is not None and prev.spec == ac.spec and _active(prev) == _active(ac) and _same_deletion(prev, ac):
                return
        self._cluster_queues_changed()

    def _apply_cohorts(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if self.metrics is not None:
            self.metrics.metrics.state.forget_elected_cohort((new or old or {})["metadata"]["name"])
        if new is None:
            assert old is not None
            name = old["metadata"]["name"]
            self.cohorts.pop(name, None)
            self.cache.delete_cohort(name)
        else:
            cohort = _typed(new, Cohort)
            prev = self.cohorts.get(cohort.metadata.name)
            self.cohorts[cohort.metadata.name] = cohort
            if prev is not None and prev.spec == cohort.spec and prev.metadata.labels == cohort.metadata.labels:
                return  # our own status write
            self.cache.add_or_update_cohort(cohort)
            self.mark(COHORT, cohort.metadata.name)
        self._cluster_queues_changed()

    def _apply_clusterqueues(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if new is None:
            assert old is not None
            name = old["metadata"]["name"]
            gone = self.cluster_queues.pop(name, None)
            self.queues.delete_cluster_queue(name)
            self.cache.delete_cluster_queue(name)
            if self.metrics is not None:
                self.metrics.metrics.clear_cluster_queue(name)
            self._workloads_of_cq_changed(name)
            self._cluster_queue_updated(gone, None)
        else:
            cq = _typed(new, ClusterQueue)
            name = cq.metadata.name
            previous = self.cluster_queues.get(name)
            self.cluster_queues[name] = cq
            if previous is not None and previous.spec == cq.spec and _same_deletion(previous, cq):
                # A status or finalizer write (usually ours): nothing the core reads changed.
                state = self.cache.cluster_queues.get(name)
                if state is not None:
                    state.obj = cq
                return
            state = self.cache.add_or_update_cluster_queue(cq)
            self._cluster_queue_updated(previous, cq)
            if previous is None:
                self.queues.add_cluster_queue(state, self._ts())
                # Reservations naming this ClusterQueue seen before it (e.g. after a re-creation).
                for _, wl in self.workloads_of_cluster_queue(name):
                    if has_active_quota_reservation(wl):
                        self.cache.add_workload(self.info(wl))
            else:
                self.queues.update_cluster_queue(state, self._ts())
            self.cache.update_activity()
            self.mark(CLUSTER_QUEUE, name)
            if (
                previous is None
                or previous.spec.stop_policy != cq.spec.stop_policy
                or previous.spec.admission_checks_strategy != cq.spec.admission_checks_strategy
                or cq.metadata.deletion_timestamp is not None
            ):
                self._workloads_of_cq_changed(name)
        self._cluster_queues_changed()

    def _apply_localqueues(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if new is None:
            assert old is not None
            ns, name = old["metadata"]["namespace"], old["metadata"]["name"]
            key = f"{ns}/{name}"
            gone = self.local_queues.pop(key, None)
            self.queues.delete_local_queue(key)
            self.queues.forget_local_queue_usage(key)
            if self.metrics is not None:
                self.metrics.metrics.clear_local_queue(ns, name)
            if gone is not None and gone.spec.cluster_queue:
                self.schedule_status(CLUSTER_QUEUE, gone.spec.cluster_queue)
            self._workloads_of_lq_changed(ns, name)
            return
        lq = _typed(new, LocalQueue)
        ns, name = lq.metadata.namespace, lq.metadata.name
        key = f"{ns}/{name}"
        previous = self.local_queues.get(key)
        self.local_queues[key] = lq
        if previous is not None and self.metrics is not None and previous.metadata.labels != lq.metadata.labels:
            afs = self.queues.afs
            self.metrics.local_queue_updated(previous, lq, lambda: afs.reported_usage(key, lq) if afs.enabled else None)
        if previous is not None and previous.spec == lq.spec and _same_deletion(previous, lq):
            return  # our own status write
        if previous is not None and previous.spec.cluster_queue != lq.spec.cluster_queue:
            self.schedule_status(CLUSTER_QUEUE, previous.spec.cluster_queue)
        pending = [wl for _, wl in self.workloads_of_local_queue(ns, name) if queueable(wl)]
        if previous is None:
            self.queues.add_local_queue(lq, pending)
        else:
            self.queues.update_local_queue(lq, pending)
        self.mark(LOCAL_QUEUE, key)
        if lq.spec.cluster_queue:
            self.schedule_status(CLUSTER_QUEUE, lq.spec.cluster_queue)
        self._workloads_of_lq_changed(ns, name)

    def _apply_jobs(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        obj = new or old
        assert obj is not None
        key = object_key(obj)
        for version, index in ((old, False), (new, True)):
            owner = controller_of(version) if version is not None else None
            if owner is None:
                continue
            uid = str(owner.get("uid", ""))
            if index:
                self.jobs_of_controller.setdefault(uid, set()).add(key)
            elif (keys := self.jobs_of_controller.get(uid)) is not None:
                keys.discard(key)
                if not keys:
                    del self.jobs_of_controller[uid]
        self.mark(JOB, key)

    # --- workload routing into the core (workload_controller.go's event handlers) -----------------------

    def _index_queues(self, key: str, old: Workload | None, new: Workload | None) -> None:
        """Keep ``_by_local_queue`` and ``_by_admission_cq`` in step with ``workloads``."""
        old_lq = f"{old.metadata.namespace}/{old.spec.queue_name}" if old is not None else None
        new_lq = f"{new.metadata.namespace}/{new.spec.queue_name}" if new is not None else None
        if old_lq != new_lq:
            _index_move(self._by_local_queue, key, old_lq, new_lq)
        old_cq = old.status.admission.cluster_queue if old is not None and old.status.admission is not None else None
        new_cq = new.status.admission.cluster_queue if new is not None and new.status.admission is not None else None
        if old_cq != new_cq:
            _index_move(self._by_admission_cq, key, old_cq, new_cq)

    def workloads_of_local_queue(self, ns: str, name: str) -> list[tuple[str, Workload]]:
        """The cached Workloads whose ``spec.queueName`` is LocalQueue ``ns/name``."""
        keys = self._by_local_queue.get(f"{ns}/{name}", {})
        return [(key, self.workloads[key]) for key in keys]

    def workloads_of_cluster_queue(self, cq: str) -> list[tuple[str, Workload]]:
        """The cached Workloads :meth:`cluster_queue_of` puts in ClusterQueue ``cq``: admitted to it,
        or not admitted and in one of its LocalQueues."""
        candidates = dict(self._by_admission_cq.get(cq, {}))
        for lq_key, lq in self.local_queues.items():
            if lq.spec.cluster_queue == cq:
                candidates.update(self._by_local_queue.get(lq_key, {}))
        out = []
        for key in candidates:
            wl = self.workloads[key]
            if self.cluster_queue_of(wl) == cq:
                out.append((key, wl))
        return out

    def _index_owner(self, wl: Workload, remove: bool = False) -> None:
        key = workload_key(wl)
        ns = wl.metadata.namespace
        for ref in wl.metadata.owner_references:
            index = (ns, ref.api_version, ref.kind, ref.name)
            if remove:
                keys = self.workloads_of_owner.get(index)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del self.workloads_of_owner[index]
            else:
                self.workloads_of_owner.setdefault(index, set()).add(key)

    def info(self, wl: Workload) -> WorkloadInfo:
        """The core's view of a workload (reusing the cached one when the spec is unchanged)."""
        return new_workload_info(wl, self.sched_options, self.cache.workload(workload_key(wl)))

    def deliver_updates(self) -> None:
        """Route the Workload changes applied so far into the core."""
        while self._updates:
            old, new, seen = self._updates.popleft()
            self._route(old, new, seen)

    def _route(self, old: Workload | None, new: Workload | None, seen: datetime | None) -> None:
        wl = new if new is not None else old
        assert wl is not None
        key = workload_key(wl)
        self.mark(WORKLOAD, key)
        self._status_touched(old, new)
        for ref in wl.metadata.owner_references:
            if ref.kind == "Job":
                self.mark(JOB, (wl.metadata.namespace, ref.name))
        if new is not None:
            # ``parentWorkloadHandler`` (jobs/job/job_controller.go): a created or updated Workload
            # reconciles the child Jobs of its controller, which follow its admission.
            owner = next((r for r in new.metadata.owner_references if r.controller), None)
            for child in sorted(self.jobs_of_controller.get(owner.uid, ())) if owner is not None else ():
                if child[0] == new.metadata.namespace:
                    self.mark(JOB, child)
        if self.metrics is not None:
            self.metrics.workload_changed(old, new)
        now = self.clock()
        self._core().observe(old, new, to_time(now), retry_from=now if seen is None or seen > now else seen)

    def mark_workload(self, key: str, *, itself: bool = True) -> None:
        """Queue the reconcilers of Workload ``key`` (``namespace/name``) and of its owner Jobs
        (``itself`` False: of its owner Jobs only)."""
        if itself:
            self.mark(WORKLOAD, key)
        wl = self.workloads.get(key)
        if wl is not None:
            for ref in wl.metadata.owner_references:
                if ref.kind == "Job":
                    self.mark(JOB, (wl.metadata.namespace, ref.name))

    def _status_touched(self, old: Workload | None, new: Workload | None) -> None:
        """A workload change refreshes its queues' status within the batch period (``UpdatesBatchPeriod``).

        The queues of both versions, each once: the old and new version are nearly always in the
        same ones, and a second request of a key already due sooner changes nothing (it was half
        of the manager's 100,000 work-queue delays a run of bench/large-scale-20.yaml)."""
        touched: list[tuple[str, str]] = []
        for wl in (old, new):
            if wl is None:
                continue
            cq = self.cluster_queue_of(wl)
            if cq and (CLUSTER_QUEUE, cq) not in touched:
                touched.append((CLUSTER_QUEUE, cq))
            if wl.spec.queue_name:
                lq = (LOCAL_QUEUE, f"{wl.metadata.namespace}/{wl.spec.queue_name}")
                if lq not in touched:
                    touched.append(lq)
        for kind, key in touched:
            self.schedule_status(kind, key)

    def _cluster_queues_changed(self, retry: set[str] | None = None) -> None:
        """Flavors, checks, cohorts or CQs changed: activity, status and parked workloads (those of
        the ClusterQueues in ``retry``; default: all)."""
        self.cache.update_activity()
        for name in self.cluster_queues:
            self.mark(CLUSTER_QUEUE, name)
        for key in self.local_queues:
            self.mark(LOCAL_QUEUE, key)
        for name in self.cohorts:
            self.mark(COHORT, name)
        # A check waiting for deletion may have lost its last ClusterQueue (flavors: reconcile_unused_flavors).
        for name, ac in self.admission_checks.items():
            if ac.metadata.deletion_timestamp is not None:
                self.mark(CHECK, name)
        if retry is None:
            self._retry_all_inadmissible()
        elif retry:
            self.queues.queue_inadmissible_workloads(retry, self._ts())

    def _pending_cluster_queues(self) -> list[str]:
        return [name for name, cq in self.cache.cluster_queues.items() if cq.status == PENDING]

    def _cluster_queue_active(self, name: str) -> bool:
        cq = self.cache.cluster_queues.get(name)
        return cq is not None and cq.status == ACTIVE

    def reconcile_unused_flavors(self, cq: ClusterQueue) -> None:
        """``cqHandler.Generic``: reconcile each flavor of ``cq`` (a ClusterQueue's version before
        an update or a delete, see :func:`cluster_queue_update_event`) that no ClusterQueue uses any
        more (a flavor being deleted then loses its finalizer)."""
        if not cq.metadata.name:
            return
        for rg in cq.spec.resource_groups:
            for fq in rg.flavors:
                if not self.cache.cluster_queues_using_flavor(fq.name):
                    self.mark(FLAVOR, fq.name)

    def _cluster_queue_updated(self, old: ClusterQueue | None, new: ClusterQueue | None) -> None:
        event = cluster_queue_update_event(old, new)
        if event is not None:
            self.reconcile_unused_flavors(event)

    def _retry_all_inadmissible(self) -> None:
        if self.cluster_queues:
            self.queues.queue_inadmissible_workloads(set(self.cluster_queues), self._ts())

    def _workloads_of_cq_changed(self, cq: str) -> None:
        for key, _ in self.workloads_of_cluster_queue(cq):
            self.mark(WORKLOAD, key)

    def _workloads_of_lq_changed(self, ns: str, name: str) -> None:
        for key, _ in self.workloads_of_local_queue(ns, name):
            self.mark(WORKLOAD, key)

    # --- lookups for the reconcilers -------------------------------------------------------------------

    def namespace_labels(self, namespace: str) -> dict[str, str] | None:
        """Labels of a namespace (None if it does not exist)."""
        return self.namespace_label_map.get(namespace)

    def _core(self) -> KueueCore:
        assert self.core is not None, "ClusterCache.core is wired by the manager"
        return self.core

    def cluster_queue_of(self, wl: Workload) -> str | None:
        """The admission's ClusterQueue, else the LocalQueue's."""
        if wl.status.admission is not None:
            return wl.status.admission.cluster_queue
        lq = self.local_queues.get(f"{wl.metadata.namespace}/{wl.spec.queue_name}")
        return lq.spec.cluster_queue if lq is not None else None


def _index_move(index: dict[str, dict[str, None]], key: str, old: str | None, new: str | None) -> None:
    if old is not None:
        keys = index.get(old)
        if keys is not None:
            keys.pop(key, None)
            if not keys:
                del index[old]
    if new is not None:
        index.setdefault(new, {})[key] = None


def cluster_queue_update_event(old: ClusterQueue | None, new: ClusterQueue | None) -> ClusterQueue | None:
    """``ResourceFlavorReconciler.NotifyClusterQueueUpdate``: the ClusterQueue whose flavors may have
    lost their last user — its old version when it was deleted or its set of flavors changed —
    else None (a create, or an update keeping its flavors)."""
    if old is None:
        return None
    if new is None or _all_flavors(old) != _all_flavors(new):
        return old
    return None


def _all_flavors(cq: ClusterQueue) -> set[str]:
    """``utilqueue.AllFlavors``: the flavors named in a ClusterQueue's resource groups."""
    return {fq.name for rg in cq.spec.resource_groups for fq in rg.flavors}


def _flavor_scheduling_fields_changed(old: ResourceFlavor, new: ResourceFlavor) -> bool:
    """``flavorSchedulingFieldsChanged``: the spec fields the flavor assigner matches workloads on."""
    return (
        old.spec.node_taints != new.spec.node_taints
        or old.spec.tolerations != new.spec.tolerations
        or old.spec.node_labels != new.spec.node_labels
    )


def _same_deletion(a: Any, b: Any) -> bool:
    return bool(a.metadata.deletion_timestamp is None) == bool(b.metadata.deletion_timestamp is None)


def _active(ac: AdmissionCheck) -> bool:
    return ac.status is not None and is_condition_true(ac.status.conditions, "Active")


def _newer(a: str, b: str) -> bool:
    """Whether resourceVersion ``a`` is later than ``b`` (resourceVersions are etcd revisions)."""
    if a == b:
        return False
    try:
        return int(a) > int(b)
    except ValueError:
        return True


def _deleted_before(deleted: dict[str, Any], cached: str) -> bool:
    """Whether a DELETED event's version is older than the cached object's: a deletion of an
    earlier object of the same name, delivered after our own write created (and applied) the new
    one. Unparsable versions count as not older (the deletion is applied)."""
    try:
        return int(resource_version(deleted)) < int(cached)
    except ValueError:
        return False


def _typed(obj: dict[str, Any], cls: type[Any]) -> Any:
    typed, _ = to_internal(obj)
    assert isinstance(typed, cls)
    return typed


# The very string to_internal sets (msgspec's omit_defaults tells a default apart by identity).
_WORKLOAD_API_VERSION = internal_version("Workload")


def _typed_workload(obj: dict[str, Any]) -> Workload:
    """:func:`_typed` for a Workload the cache owns (:func:`compact`'s fresh copy, kept nowhere else).

    ``to_internal`` deep-copies its input before converting it, so that a conversion between
    versions cannot change the caller's dict; a v1beta2 object needs no conversion, and this one
    is not the caller's to protect: the copy was 85 % of decoding every Workload change and write
    answer. The same ``msgspec.convert`` of the same values makes the same object; an invalid
    object goes through ``to_internal`` for its error naming the field."""
    if obj.get("apiVersion") == _WORKLOAD_API_VERSION and obj.get("kind") == "Workload":
        try:
            return msgspec.convert({**obj, "apiVersion": _WORKLOAD_API_VERSION}, Workload)
        except msgspec.ValidationError:
            pass
    typed: Workload = _typed(obj, Workload)
    return typed


def _read_when_needed(old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
    """PriorityClasses are read from ``raw`` by the Job integration when it builds a Workload."""


# Unique per object: interning them would only add entries to the interned-string table.
_UNIQUE_META = frozenset({"name", "uid", "resourceVersion", "creationTimestamp", "deletionTimestamp"})


def compact(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as cached: without managedFields, keys and repeated string values interned (a copy).

    The manager's informers' transform (client-go ``SetTransform``), so an initial LIST's objects
    are compacted as they arrive, not after every collection has been listed."""
    out: dict[str, Any] = {}
    for key, value in obj.items():
        if key == "metadata" and isinstance(value, dict):
            out[key] = {
                sys.intern(k): _fresh(v) if k in _UNIQUE_META and isinstance(v, str) else _interned(v)
                for k, v in value.items()
                if k != "managedFields"
            }
        else:
            out[sys.intern(key)] = _interned(value)
    return out


def _fresh(text: str) -> str:
    """A new copy of ``text``: a kept string must not pin the memory of a whole decoded LIST.

    (A LIST's objects are decoded together; were the cache to keep their own name, uid and
    resourceVersion strings, every heap arena of the decoded response would stay partly used and
    could not be returned after the sync.)"""
    return text[:1] + text[1:]


def _interned(value: Any) -> Any:
    """A copy of a decoded JSON value with its strings and keys interned (dicts and lists rebuilt)."""
    kind = type(value)
    if kind is dict:
        return _interned_dict(value)
    if kind is list:
        return _interned_list(value)
    return _interned_other(value)


_intern = sys.intern
_JSON_SCALARS = frozenset({int, float, bool, type(None)})
"""Kept as they are; a str is interned, a dict or list rebuilt."""


def _interned_dict(value: dict[Any, Any]) -> dict[Any, Any]:
    # The walk of every Workload watch event and write answer: the common JSON types are told
    # apart by exact type in the loop (one call per container, not per leaf); anything else goes
    # through _interned_other, which treats subclasses as the isinstance checks always did.
    # _interned_list repeats this dispatch on purpose: one shared per-value helper, called for
    # every value that is not a str, cost 17 % more instructions per compact (bench/RESULTS.md,
    # branch ctlcpu2; bench/ctl_instructions.py --path compact).
    out = {}
    for k, v in value.items():
        kind = type(v)
        if kind is str:
            v = _intern(v)
        elif kind is dict:
            v = _interned_dict(v)
        elif kind is list:
            v = _interned_list(v)
        elif kind not in _JSON_SCALARS:
            v = _interned_other(v)
        out[_intern(k) if type(k) is str else _interned_key(k)] = v
    return out


def _interned_list(value: list[Any]) -> list[Any]:
    out = []
    for v in value:
        kind = type(v)
        if kind is str:
            v = _intern(v)
        elif kind is dict:
            v = _interned_dict(v)
        elif kind is list:
            v = _interned_list(v)
        elif kind not in _JSON_SCALARS:
            v = _interned_other(v)
        out.append(v)
    return out


def _interned_key(key: Any) -> Any:
    return _intern(key) if isinstance(key, str) else key


def _interned_other(value: Any) -> Any:
    """Values not of an exact JSON type: subclasses of str, dict or list as by isinstance."""
    if isinstance(value, str):
        return _intern(value)
    if isinstance(value, dict):
        return {_interned_key(k): _interned(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_interned(v) for v in value]
    return value
