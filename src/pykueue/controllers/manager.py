"""The Kueue controller manager: informers → one manager thread → core → writes through the client.

One thread owns every piece of controller state (design: docs/design/controllers.md). Informer
threads list/watch the API and push :class:`~pykueue.controllers.informer.Change` objects onto an
inbox; the manager thread applies them to its caches, routes Workload changes into the scheduling
core (API reference §3.14a), runs the reconcilers that are due (workload, queues, flavors, checks,
Jobs) and a scheduling cycle, and records events. Writes go through the API with the cached
resourceVersion; a successful write is applied to the caches at once (write-through) and its own
watch event is then recognised by resourceVersion and ignored.
"""

from __future__ import annotations

import heapq
import logging
import queue
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

from pykueue.api.config import KueueConfig, load_config
from pykueue.api.conversion import to_external, to_internal
from pykueue.api.kueue import (
    AdmissionCheck,
    ClusterQueue,
    Cohort,
    LocalQueue,
    ResourceFlavor,
    Workload,
)
from pykueue.api.meta import LabelSelector, format_time, is_condition_true, to_time
from pykueue.api.unmodelled import EVENT_REASON as UNMODELLED_EVENT_REASON
from pykueue.api.unmodelled import unmodelled_features
from pykueue.client import resources as R
from pykueue.client.interface import APIError, Client, Conflict, NotFound, Resource
from pykueue.controllers.clock import Clock, system_clock
from pykueue.controllers.informer import (
    DELETED,
    SYNCED,
    Change,
    Informer,
    ObjectKey,
    object_key,
    resource_version,
)
from pykueue.core.decision import Decision
from pykueue.core.events import WARNING, Event
from pykueue.core.options import SchedulerOptions, options_from_config
from pykueue.core.state import KueueCore, queueable
from pykueue.core.workload.info import (
    WorkloadInfo,
    has_active_quota_reservation,
    new_workload_info,
    workload_key,
)
from pykueue.metrics import KueueMetrics
from pykueue.metrics import for_manager as metrics_for_manager

log = logging.getLogger(__name__)

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
STATUS_BATCH_SECONDS = 1.0
"""``UpdatesBatchPeriod``: queue status is refreshed at most this long after a workload change."""
_IDLE_WAIT = 0.2
_EVENT_CACHE_SIZE = 4096

# Collections the manager watches, in the order their initial state is applied (dependencies first).
WATCHED: tuple[Resource, ...] = (
    R.NAMESPACES,
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
_ORDER = {res.plural: i for i, res in enumerate(WATCHED)}


@dataclass
class ControllerOptions:
    """Configuration the controllers (beyond the scheduling core) read."""

    scheduler: SchedulerOptions = field(default_factory=SchedulerOptions)
    pods_ready_timeout_seconds: float | None = 1800.0
    pods_ready_recovery_timeout_seconds: float | None = None
    finished_retention_seconds: float | None = None
    label_keys_to_copy: tuple[str, ...] = ()
    manage_jobs_without_queue_name: bool = False
    managed_jobs_namespace_selector: LabelSelector | None = None
    """``managedJobsNamespaceSelector`` (None: every namespace)."""

    @staticmethod
    def from_config(cfg: KueueConfig) -> ControllerOptions:
        """The options of a loaded Kueue Configuration."""
        conf = cfg.configuration
        wait = cfg.wait_for_pods_ready
        retention = conf.object_retention_policies
        after = retention.workloads.after_finished if retention and retention.workloads else None
        return ControllerOptions(
            scheduler=options_from_config(cfg),
            pods_ready_timeout_seconds=_seconds(wait.timeout) if wait is not None else None,
            pods_ready_recovery_timeout_seconds=_seconds(wait.recovery_timeout) if wait is not None else None,
            finished_retention_seconds=_seconds(after),
            label_keys_to_copy=tuple(conf.integrations.label_keys_to_copy) if conf.integrations else (),
            manage_jobs_without_queue_name=conf.manage_jobs_without_queue_name,
            managed_jobs_namespace_selector=conf.managed_jobs_namespace_selector,
        )


def _seconds(duration: Any) -> float | None:
    if duration is None:
        return None
    return float(duration.nanoseconds) / 1e9


def default_options() -> ControllerOptions:
    """The options of the default (empty) Kueue Configuration."""
    return ControllerOptions.from_config(load_config(None))


_T = TypeVar("_T")


class _Call(Generic[_T]):
    """A function another thread asked the manager thread to run (:meth:`call_in_manager_thread`)."""

    def __init__(self, fn: Callable[[], _T]) -> None:
        self.fn = fn
        self.done = threading.Event()
        self.result: _T | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.fn()
        except BaseException as err:  # handed to the caller's thread
            self.error = err
        finally:
            self.done.set()


class ControllerManager:
    """Runs Kueue's controllers and scheduler against one API client."""

    def __init__(
        self,
        client: Client,
        options: ControllerOptions | None = None,
        *,
        clock: Clock = system_clock,
        components: Iterable[Any] = (),
        metrics: KueueMetrics | None = None,
    ) -> None:
        # Imported here: the reconcilers import this module for its types.
        from pykueue.controllers.jobs.job_controller import JobController
        from pykueue.controllers.queue_controllers import QueueControllers
        from pykueue.controllers.workload_controller import WorkloadController

        self.client = client
        self.options = options or default_options()
        self.sched_options = self.options.scheduler
        self.clock = clock
        self.components = list(components)
        self.core = KueueCore(self.sched_options, self)
        self.cache = self.core.cache
        self.queues = self.core.queues
        self.scheduler = self.core.scheduler

        # Manager-thread state: the raw objects as last seen (or written) and typed views.
        self.raw: dict[str, dict[ObjectKey, dict[str, Any]]] = {res.plural: {} for res in WATCHED}
        self.workloads: dict[str, Workload] = {}
        self.local_queues: dict[str, LocalQueue] = {}
        self.cluster_queues: dict[str, ClusterQueue] = {}
        self.cohorts: dict[str, Cohort] = {}
        self.flavors: dict[str, ResourceFlavor] = {}
        self.admission_checks: dict[str, AdmissionCheck] = {}
        self.namespace_label_map: dict[str, dict[str, str]] = {}
        self.workloads_of_owner: dict[str, set[str]] = {}

        self.workload_controller = WorkloadController(self)
        self.queue_controllers = QueueControllers(self)
        self.job_controller = JobController(self)

        self._inbox: queue.Queue[Change | _Call[Any]] = queue.Queue()
        self._informers = [Informer(client, res, self._inbox.put) for res in WATCHED]
        self._unsynced = {res.plural for res in WATCHED}
        self._initial: list[Change] = []
        self._updates: deque[tuple[Workload | None, Workload | None]] = deque()
        self._events: list[tuple[Event, dict[str, Any] | None]] = []
        self._event_counts: dict[tuple[Any, ...], tuple[str, int]] = {}
        self._dirty: dict[str, set[Any]] = {k: set() for k in ("workload", "job", "cq", "lq", "cohort", "rf", "ac")}
        self._timers: list[tuple[float, int, str, Any]] = []
        self._timer_seq = 0
        self._scheduled: dict[tuple[str, Any], float] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self.cycles = 0
        self.busy_until_quiet = True
        # Prometheus metrics (pkg/metrics): counted from our writes, observed changes and cycles.
        self.metrics = metrics_for_manager(self, metrics)

    # --- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Start informers, the manager thread and the extra components."""
        for inf in self._informers:
            inf.start()
        self._thread = threading.Thread(target=self._run, name="kueue-manager", daemon=True)
        self._thread.start()
        for comp in self.components:
            comp.start()

    def stop(self) -> None:
        """Stop everything started by :meth:`start`."""
        for comp in reversed(self.components):
            comp.stop()
        self._stop.set()
        for inf in self._informers:
            inf.stop()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Block until the initial state of every watched collection has been applied."""
        return self._ready.wait(timeout)

    def running(self) -> bool:
        """Whether the manager thread is alive (it answers :meth:`call_in_manager_thread`)."""
        return self._thread is not None and self._thread.is_alive() and not self._stop.is_set()

    def call_in_manager_thread(self, fn: Callable[[], _T], timeout: float = 10.0) -> _T:
        """Run ``fn`` on the manager thread (between two changes or steps) and return its result.

        The accessor for other threads (the visibility API's queue snapshots): the manager's
        state has a single owner, so a reader borrows that thread instead of taking locks.
        Raises ``TimeoutError`` when the thread does not get to it within ``timeout``."""
        call = _Call(fn)
        self._inbox.put(call)
        if not call.done.wait(timeout):
            raise TimeoutError(f"the controller manager did not answer within {timeout}s")
        if call.error is not None:
            raise call.error
        return call.result  # type: ignore[return-value]

    def now(self) -> datetime:
        """The controllers' current time."""
        return to_time(self.clock())

    def _ts(self) -> float:
        return self.now().timestamp()

    # --- the manager thread -------------------------------------------------------------------------

    def _run(self) -> None:
        busy = False
        while not self._stop.is_set():
            try:
                self._drain(0.0 if busy else self._wait_seconds())
                if self._unsynced:
                    continue
                busy = self._step()
            except Exception:  # a bug must not stop the controllers; log and go on
                log.exception("controller manager step failed")
                busy = False
                self._stop.wait(0.5)

    def _wait_seconds(self) -> float:
        if not self._timers:
            return _IDLE_WAIT
        return max(0.0, min(_IDLE_WAIT, self._timers[0][0] - self._ts()))

    def _drain(self, timeout: float) -> None:
        try:
            change = self._inbox.get(timeout=timeout) if timeout > 0 else self._inbox.get_nowait()
        except queue.Empty:
            return
        while True:
            self._receive(change)
            try:
                change = self._inbox.get_nowait()
            except queue.Empty:
                return

    def _receive(self, change: Change | _Call[Any]) -> None:
        if isinstance(change, _Call):
            change.run()
            return
        if self._unsynced:
            if change.type == SYNCED:
                self._unsynced.discard(change.resource.plural)
            else:
                self._initial.append(change)
            if not self._unsynced:
                # Apply the initial state dependencies first (flavors before queues before workloads).
                for c in sorted(self._initial, key=lambda c: _ORDER[c.resource.plural]):
                    self._on_change(c)
                self._initial = []
                self._deliver_updates()
                self._ready.set()
            return
        if change.type != SYNCED:
            self._on_change(change)

    def _step(self) -> bool:
        """One pass: timers, reconcilers, a scheduling cycle, events. Returns whether work remains."""
        now = self.now()
        self._fire_timers(now.timestamp())
        self.core.requeue_due(now)
        self._reconcile_dirty()
        self._deliver_updates()
        started = time.perf_counter()
        result = self.core.cycle(self.now())
        self.metrics.cycle(result, time.perf_counter() - started)
        self.cycles += 1
        self._deliver_updates()
        self._flush_events()
        # A cycle that admitted or preempted nothing waits for the next change or timer instead of
        # spinning on heads that do not fit.
        return bool(result.admitted or result.preempted) or any(self._dirty.values())

    # --- applying observed changes --------------------------------------------------------------------

    def _on_change(self, change: Change) -> None:
        plural = change.resource.plural
        cached = self.raw[plural]
        obj = change.object
        key = object_key(obj)
        old = cached.get(key)
        if change.type == DELETED:
            if old is None:
                return
            del cached[key]
            self._apply(plural, old, None)
            return
        if old is not None and not _newer(obj, old):
            return  # our own write, already applied (or an older version)
        cached[key] = obj
        if old is None:
            self._report_unmodelled(change.resource, obj)
        self._apply(plural, old, obj)

    def _report_unmodelled(self, res: Resource, obj: dict[str, Any]) -> None:
        """A Warning Event on an object that asks for a Kueue feature pykueue does not implement."""
        meta = obj.get("metadata") or {}
        for found in unmodelled_features(res.group, res.kind, obj):
            involved = {
                "apiVersion": res.api_version,
                "kind": res.kind,
                "name": meta.get("name", ""),
                "namespace": meta.get("namespace", ""),
                "uid": meta.get("uid", ""),
                "resourceVersion": meta.get("resourceVersion", ""),
            }
            event = Event(str(meta.get("namespace") or ""), str(meta.get("name") or ""), WARNING,
                          UNMODELLED_EVENT_REASON, found.message, kind=res.kind)
            self.record_event(event, involved)

    def observe_write(self, res: Resource, obj: dict[str, Any]) -> None:
        """Apply the result of our own successful write at once (write-through)."""
        self._on_change(Change(res, "MODIFIED", None, obj))

    def _apply(self, plural: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        handler = getattr(self, f"_apply_{plural}")
        handler(old, new)

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
        self.queues.set_namespace_labels(name, labels)
        # Jobs seen before their namespace were skipped as unmanaged; look at them again.
        for ns, job in self.raw["jobs"]:
            if ns == name:
                self._dirty["job"].add((ns, job))
        self._retry_all_inadmissible()

    def _apply_priorityclasses(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        pass  # read from self.raw by the Job integration when it builds a Workload

    def _apply_workloadpriorityclasses(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        pass  # read from self.raw by the Job integration when it builds a Workload

    def _apply_resourceflavors(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if new is None:
            assert old is not None
            name = old["metadata"]["name"]
            self.flavors.pop(name, None)
            self.cache.delete_flavor(name)
        else:
            rf = _typed(new, ResourceFlavor)
            prev = self.flavors.get(rf.metadata.name)
            self.flavors[rf.metadata.name] = rf
            self.cache.add_or_update_flavor(rf)
            self._dirty["rf"].add(rf.metadata.name)
            if prev is not None and prev.spec == rf.spec and _same_deletion(prev, rf):
                return  # only metadata (e.g. our finalizer) changed
        self._cluster_queues_changed()

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
            self._dirty["ac"].add(ac.metadata.name)
            if prev is not None and prev.spec == ac.spec and _active(prev) == _active(ac) and _same_deletion(prev, ac):
                return
        self._cluster_queues_changed()

    def _apply_cohorts(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
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
            self._dirty["cohort"].add(cohort.metadata.name)
        self._cluster_queues_changed()

    def _apply_clusterqueues(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if new is None:
            assert old is not None
            name = old["metadata"]["name"]
            self.cluster_queues.pop(name, None)
            self.queues.delete_cluster_queue(name)
            self.cache.delete_cluster_queue(name)
            self.metrics.metrics.clear_cluster_queue(name)
            self._workloads_of_cq_changed(name)
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
            if previous is None:
                self.queues.add_cluster_queue(state, self._ts())
                # Reservations naming this ClusterQueue seen before it (e.g. after a re-creation).
                for wl in self.workloads.values():
                    if has_active_quota_reservation(wl) and self.cluster_queue_of(wl) == name:
                        self.cache.add_workload(self.info(wl))
            else:
                self.queues.update_cluster_queue(state, self._ts())
            self.cache.update_activity()
            self._dirty["cq"].add(name)
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
            self.metrics.metrics.clear_local_queue(ns, name)
            if gone is not None and gone.spec.cluster_queue:
                self.schedule_status("cq", gone.spec.cluster_queue)
            self._workloads_of_lq_changed(ns, name)
            return
        lq = _typed(new, LocalQueue)
        ns, name = lq.metadata.namespace, lq.metadata.name
        key = f"{ns}/{name}"
        previous = self.local_queues.get(key)
        self.local_queues[key] = lq
        if previous is not None and previous.spec == lq.spec and _same_deletion(previous, lq):
            return  # our own status write
        if previous is not None and previous.spec.cluster_queue != lq.spec.cluster_queue:
            self.schedule_status("cq", previous.spec.cluster_queue)
        pending = [
            wl
            for wl in self.workloads.values()
            if wl.metadata.namespace == ns and wl.spec.queue_name == name and queueable(wl)
        ]
        if previous is None:
            self.queues.add_local_queue(lq, pending)
        else:
            self.queues.update_local_queue(lq, pending)
        self._dirty["lq"].add(key)
        if lq.spec.cluster_queue:
            self.schedule_status("cq", lq.spec.cluster_queue)
        self._workloads_of_lq_changed(ns, name)

    def _apply_workloads(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        old_wl = self.workloads.get(_ns_name(old)) if old is not None else None
        if new is None:
            assert old is not None
            key = _ns_name(old)
            self.workloads.pop(key, None)
            if old_wl is not None:
                self._index_owner(old_wl, remove=True)
            self._updates.append((old_wl, None))
            return
        wl = _typed(new, Workload)
        key = workload_key(wl)
        self.workloads[key] = wl
        self._index_owner(wl)
        self._updates.append((old_wl, wl))

    def _apply_jobs(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        obj = new or old
        assert obj is not None
        self._dirty["job"].add(object_key(obj))

    # --- workload routing into the core (API reference §3.14a) ----------------------------------------

    def _index_owner(self, wl: Workload, remove: bool = False) -> None:
        key = workload_key(wl)
        for ref in wl.metadata.owner_references:
            keys = self.workloads_of_owner.setdefault(ref.uid, set())
            if remove:
                keys.discard(key)
            else:
                keys.add(key)

    def info(self, wl: Workload) -> WorkloadInfo:
        """The core's view of a workload (reusing the cached one when the spec is unchanged)."""
        return new_workload_info(wl, self.sched_options, self.cache.workload(workload_key(wl)))

    def _deliver_updates(self) -> None:
        while self._updates:
            old, new = self._updates.popleft()
            self._route(old, new)

    def _route(self, old: Workload | None, new: Workload | None) -> None:
        wl = new if new is not None else old
        assert wl is not None
        key = workload_key(wl)
        self._dirty["workload"].add(key)
        self._status_touched(old)
        self._status_touched(new)
        for ref in wl.metadata.owner_references:
            if ref.kind == "Job":
                self._dirty["job"].add((wl.metadata.namespace, ref.name))
        self.metrics.workload_changed(old, new)
        self.core.observe(old, new, self.now())

    def _status_touched(self, wl: Workload | None) -> None:
        """A workload change refreshes its queues' status within the batch period (§4.1, §4.2)."""
        if wl is None:
            return
        cq = self.cluster_queue_of(wl)
        if cq:
            self.schedule_status("cq", cq)
        if wl.spec.queue_name:
            self.schedule_status("lq", f"{wl.metadata.namespace}/{wl.spec.queue_name}")

    def _cluster_queues_changed(self) -> None:
        """Flavors, checks, cohorts or CQs changed: activity, status and parked workloads."""
        self.cache.update_activity()
        for name in self.cluster_queues:
            self._dirty["cq"].add(name)
        for key in self.local_queues:
            self._dirty["lq"].add(key)
        for name in self.cohorts:
            self._dirty["cohort"].add(name)
        # A flavor or check waiting for deletion may have lost its last ClusterQueue.
        for name, rf in self.flavors.items():
            if rf.metadata.deletion_timestamp is not None:
                self._dirty["rf"].add(name)
        for name, ac in self.admission_checks.items():
            if ac.metadata.deletion_timestamp is not None:
                self._dirty["ac"].add(name)
        self._retry_all_inadmissible()

    def _retry_all_inadmissible(self) -> None:
        if self.cluster_queues:
            self.queues.queue_inadmissible_workloads(set(self.cluster_queues), self._ts())

    def _workloads_of_cq_changed(self, cq: str) -> None:
        for key, wl in self.workloads.items():
            if self.cluster_queue_of(wl) == cq:
                self._dirty["workload"].add(key)

    def _workloads_of_lq_changed(self, ns: str, name: str) -> None:
        for key, wl in self.workloads.items():
            if wl.metadata.namespace == ns and wl.spec.queue_name == name:
                self._dirty["workload"].add(key)

    # --- lookups for the reconcilers -------------------------------------------------------------------

    def cluster_queue_of(self, wl: Workload) -> str | None:
        """The admission's ClusterQueue, else the LocalQueue's."""
        if wl.status.admission is not None:
            return wl.status.admission.cluster_queue
        lq = self.local_queues.get(f"{wl.metadata.namespace}/{wl.spec.queue_name}")
        return lq.spec.cluster_queue if lq is not None else None

    # --- timers and dirty keys ----------------------------------------------------------------------------

    def requeue_after(self, kind: str, key: Any, seconds: float) -> None:
        """Reconcile ``key`` of controller ``kind`` again after ``seconds`` (earliest request wins)."""
        due = self._ts() + max(0.0, seconds)
        current = self._scheduled.get((kind, key))
        if current is not None and current <= due:
            return
        self._scheduled[(kind, key)] = due
        self._timer_seq += 1
        heapq.heappush(self._timers, (due, self._timer_seq, kind, key))

    def schedule_status(self, kind: str, key: Any) -> None:
        """Queue status refresh, batched over :data:`STATUS_BATCH_SECONDS`."""
        self.requeue_after(kind, key, STATUS_BATCH_SECONDS)

    def _fire_timers(self, now: float) -> None:
        while self._timers and self._timers[0][0] <= now:
            due, _, kind, key = heapq.heappop(self._timers)
            if self._scheduled.get((kind, key)) == due:
                del self._scheduled[(kind, key)]
                self._dirty[kind].add(key)

    def _reconcile_dirty(self) -> None:
        for _ in range(10):  # writes mark more keys dirty; settle them, bounded
            if not any(self._dirty.values()):
                return
            batches = {kind: sorted(keys, key=str) for kind, keys in self._dirty.items() if keys}
            for keys in self._dirty.values():
                keys.clear()
            for key in batches.get("job", []):
                self._guard(self.job_controller.reconcile, key)
            self._deliver_updates()
            for key in batches.get("workload", []):
                self._guard(self.workload_controller.reconcile, key)
            self._deliver_updates()
            for kind in ("rf", "ac", "cq", "lq", "cohort"):
                for key in batches.get(kind, []):
                    self._guard(self.queue_controllers.reconcile, kind, key)
            self._deliver_updates()

    def _guard(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            fn(*args)
        except Conflict:
            pass  # a newer version is on its way through the watch; it marks the key dirty again
        except NotFound:
            pass
        except APIError as err:
            log.warning("reconcile %s%s: %s", getattr(fn, "__qualname__", fn), args, err)
            kind = args[0] if len(args) == 2 else _kind_of(fn)
            self.requeue_after(kind, args[-1], 1.0)

    # --- writes -------------------------------------------------------------------------------------------

    def write(self, res: Resource, obj: dict[str, Any], subresource: str | None = None) -> dict[str, Any]:
        """PUT with the cached resourceVersion; applies the result at once."""
        out = self.client.replace(res, obj, subresource=subresource)
        if res.plural != "workloads":
            self.observe_write(res, out)
            return out
        key = _ns_name(out)
        before = self.workloads.get(key)
        self.observe_write(res, out)
        after = self.workloads.get(key)
        if after is not None:
            self.metrics.workload_written(before, after)
        return out

    def write_workload(self, wl: Workload, status: bool = True) -> bool:
        """Write a typed Workload (its status, or the whole object); False on conflict/absence."""
        try:
            self.write(R.WORKLOADS, to_external(wl), subresource="status" if status else None)
        except (Conflict, NotFound):
            return False
        return True

    # --- WorkloadStore for the scheduler -------------------------------------------------------------------

    def get_workload(self, key: str) -> Workload | None:
        """The cached Workload ``namespace/name``."""
        return self.workloads.get(key)

    def write_workload_status(self, wl: Workload) -> bool:
        """The scheduler's status writes (reservation, admission, preemption)."""
        try:
            return self.write_workload(wl)
        except APIError as err:
            log.warning("writing workload %s status: %s", workload_key(wl), err)
            return False

    def apply(self, decision: Decision) -> bool:
        """Apply a core decision: write through (status, or spec with a plain update), then queue its
        events, which are written after the current pass."""
        if decision.spec is not None:
            written = self.write_workload(decision.spec, status=False)
        elif decision.status is not None:
            written = self.write_workload_status(decision.status)
        else:
            written = True
        if written:
            for event in decision.events:
                self.record_event(event)
        return written

    def record_event(self, event: Event, involved: dict[str, Any] | None = None) -> None:
        """Queue an event; written after the current pass."""
        self._events.append((event, involved))

    def namespace_labels(self, namespace: str) -> dict[str, str] | None:
        """Labels of a namespace (None if it does not exist)."""
        return self.namespace_label_map.get(namespace)

    # --- events --------------------------------------------------------------------------------------------

    def _flush_events(self) -> None:
        events, self._events = self._events, []
        for event, involved in events:
            try:
                self._emit(event, involved)
            except APIError as err:
                log.info("event %s %s not recorded: %s", event.reason, event.name, err)

    def _emit(self, event: Event, involved: dict[str, Any] | None) -> None:
        """Create the Event, or count a repeat on the one already written (client-go's correlator)."""
        obj = self._event_object(event, involved)
        ref = obj["involvedObject"]
        key = (obj["metadata"]["namespace"], ref.get("kind"), ref.get("name"), ref.get("uid"), event.type, event.reason, event.note)
        seen = self._event_counts.get(key)
        if seen is not None:
            name, count = seen
            try:
                self.client.patch(
                    R.EVENTS, name, {"count": count + 1, "lastTimestamp": obj["lastTimestamp"]}, obj["metadata"]["namespace"]
                )
                self._event_counts[key] = (name, count + 1)
                return
            except NotFound:
                pass
        self.client.create(R.EVENTS, obj)
        if len(self._event_counts) >= _EVENT_CACHE_SIZE:
            self._event_counts.pop(next(iter(self._event_counts)))
        self._event_counts[key] = (obj["metadata"]["name"], 1)

    def _event_object(self, event: Event, involved: dict[str, Any] | None) -> dict[str, Any]:
        ref = involved or self._involved(event)
        now = format_time(self.now())
        namespace = event.namespace or "default"
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{event.name}.{uuid.uuid4().hex[:16]}", "namespace": namespace},
            "involvedObject": ref,
            "reason": event.reason,
            "message": event.note,
            "type": event.type,
            "action": event.reason,
            "source": {"component": "kueue-admission"},
            "reportingComponent": "kueue-admission",
            "reportingInstance": "pykueue",
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }

    def _involved(self, event: Event) -> dict[str, Any]:
        kind = event.kind
        ref: dict[str, Any] = {"kind": kind, "name": event.name}
        if event.namespace:
            ref["namespace"] = event.namespace
        if kind == "Workload":
            wl = self.workloads.get(f"{event.namespace}/{event.name}")
            ref["apiVersion"] = f"{R.KUEUE}/{R.KUEUE_VERSION}"
            if wl is not None:
                ref["uid"] = wl.metadata.uid
                ref["resourceVersion"] = wl.metadata.resource_version
        elif kind == "Job":
            job = self.raw["jobs"].get((event.namespace, event.name))
            ref["apiVersion"] = "batch/v1"
            if job is not None:
                ref["uid"] = job["metadata"].get("uid", "")
        elif kind == "ClusterQueue":
            cq = self.cluster_queues.get(event.name)
            ref["apiVersion"] = f"{R.KUEUE}/{R.KUEUE_VERSION}"
            if cq is not None:
                ref["uid"] = cq.metadata.uid
        return ref


def _kind_of(fn: Callable[..., None]) -> str:
    owner = getattr(fn, "__self__", None)
    name = type(owner).__name__ if owner is not None else ""
    return {"JobController": "job", "WorkloadController": "workload"}.get(name, "cq")


def _same_deletion(a: Any, b: Any) -> bool:
    return bool(a.metadata.deletion_timestamp is None) == bool(b.metadata.deletion_timestamp is None)


def _active(ac: AdmissionCheck) -> bool:
    return ac.status is not None and is_condition_true(ac.status.conditions, "Active")


def _newer(obj: dict[str, Any], old: dict[str, Any]) -> bool:
    """Whether ``obj`` is a later version than ``old`` (resourceVersions are etcd revisions)."""
    a, b = resource_version(obj), resource_version(old)
    if a == b:
        return False
    try:
        return int(a) > int(b)
    except ValueError:
        return True


def _ns_name(obj: dict[str, Any] | None) -> str:
    meta = (obj or {}).get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _typed(obj: dict[str, Any], cls: type[Any]) -> Any:
    typed, _ = to_internal(obj)
    assert isinstance(typed, cls)
    return typed


