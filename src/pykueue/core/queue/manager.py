"""The queue manager: LocalQueues, per-ClusterQueue pending queues and retry batching
(upstream ``pkg/cache/queue/manager.go``).

Design (pure and deterministic):

* **Time** is injected: every method that needs "now" takes ``now`` as epoch seconds (``float``) or
  a timezone-aware ``datetime``; nothing reads a clock, sleeps or starts threads.
* **Retry batching** (``pkg/cache/queue/inadmissible_workloads.go``):
  ``queue_inadmissible_workloads`` (``NotifyRetryInadmissible``) records a request for the
  ClusterQueue (no cohort) or for its *root* cohort, due ``now + 1s``. Identical pending requests
  are de-duplicated (the earliest due time wins, like ``workqueue.AddAfter``).
  The driver calls ``process_due_requeues(now)``; ``next_due_time()`` tells it when to.
* **Cohort trees** are read through a :class:`CohortTree` (use :class:`CacheCohortTree` over the
  scheduler ``Cache``, or pass the ``Cache`` itself). Keep the cache updated before the manager.
* **Determinism**: ``heads`` walks ClusterQueues sorted by name; heap ties end on the workload key.
* ClusterQueues are added from the typed API object (``ClusterQueue``); the scheduler cache decides
  whether a ClusterQueue is active (``heads(cache_is_active)``).
* Namespaces must be announced with ``set_namespace_labels``: an inadmissible workload is only moved
  back to the heap when its namespace is known and matches the ClusterQueue ``namespaceSelector``
  (a missing selector matches nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import msgspec

from pykueue.api.kueue import BEST_EFFORT_FIFO, ClusterQueue, LocalQueue, Workload
from pykueue.api.meta import LabelSelector, label_selector_matches
from pykueue.core.cache.cache import Cache, ClusterQueueState
from pykueue.core.options import SchedulerOptions
from pykueue.core.queue.afs.admission_fair_sharing import lq_weight_as_float
from pykueue.core.queue.afs.fair_sharing import AdmissionFairSharing
from pykueue.core.queue.cluster_queue import (
    SCHEDULING_HASH_UNKNOWN,
    AfsUsage,
    PendingClusterQueue,
    PendingEntry,
)
from pykueue.core.queue.local_queue import (
    LocalQueueState,
    is_stopped,
    key_of_local_queue,
    local_queue_key,
)
from pykueue.core.workload.info import (
    ADMITTED,
    QUOTA_RESERVED,
    LastAssignment,
    WorkloadInfo,
    is_admissible_to_queues,
    new_workload_info,
    workload_key,
)

Now = float | datetime
"""Epoch seconds or an aware ``datetime``."""

RETRY_BATCH_PERIOD = 1.0
"""Seconds a retry-inadmissible request waits before it is processed (``WithBatchPeriod``)."""

REQUEST_CLUSTER_QUEUE = "ClusterQueue"
REQUEST_COHORT = "Cohort"

# Scheduler-owned fields of an info that survive a refresh from the newest object (``RequeueWorkload``).
_KEPT_ON_REFRESH = frozenset(
    {"last_assignment", "cluster_queue", "is_preemptor", "last_evaluated_generation"}
)
# The conditions the scheduler's pending status write changes (``transitions.set_pending``).
_PENDING_WRITE_CONDITIONS = frozenset((QUOTA_RESERVED, ADMITTED))
# The fields ``_refresh`` copies, listed once.
_REFRESHED_FIELDS = tuple(f for f in WorkloadInfo.__struct_fields__ if f not in _KEPT_ON_REFRESH)


def seconds(now: Now) -> float:
    """``now`` as epoch seconds."""
    return now.timestamp() if isinstance(now, datetime) else float(now)


@runtime_checkable
class CohortTree(Protocol):
    """The cohort-tree questions the manager asks (upstream ``pkg/cache/hierarchy/manager.go``)."""

    def parent_cohort(self, cluster_queue: str) -> str:
        """The cohort a ClusterQueue belongs to, "" if none (or unknown)."""
        ...

    def root_cohort(self, cohort: str) -> str | None:
        """The root of ``cohort``'s tree; None if unknown or the chain contains a cycle."""
        ...

    def cluster_queues_under(self, cohort: str) -> list[str]:
        """Every ClusterQueue in the subtree rooted at ``cohort``."""
        ...


class CacheCohortTree:
    """:class:`CohortTree` over the scheduler :class:`Cache`."""

    def __init__(self, cache: Cache) -> None:
        self.cache = cache

    def parent_cohort(self, cluster_queue: str) -> str:
        state = self.cache.cluster_queues.get(cluster_queue)
        return state.cohort_name if state is not None else ""

    def root_cohort(self, cohort: str) -> str | None:
        node = self.cache.cohorts.get(cohort)
        if node is None:
            return None
        cycle: set[str] = getattr(self.cache, "cycle_cohorts", set())
        root = node.root()
        if cohort in cycle or root.name in cycle:
            return None
        return root.name

    def cluster_queues_under(self, cohort: str) -> list[str]:
        node = self.cache.cohorts.get(cohort)
        if node is None:
            return []
        return sorted(cq.name for cq in node.iter_cluster_queues())


class RootOfCohortTree:
    """:class:`CohortTree` from a ``root_of(cluster_queue) -> root cohort | None`` function.

    ``None`` means the ClusterQueue has no cohort. This form cannot express cohort cycles; use
    :class:`CacheCohortTree` (or pass the ``Cache``) to get ``hierarchy.HasCycle``'s
    "ignore trees with a cycle"."""

    def __init__(self, root_of: Callable[[str], str | None], names: Callable[[], Iterable[str]]) -> None:
        self.root_of = root_of
        self.names = names

    def parent_cohort(self, cluster_queue: str) -> str:
        return self.root_of(cluster_queue) or ""

    def root_cohort(self, cohort: str) -> str | None:
        return cohort

    def cluster_queues_under(self, cohort: str) -> list[str]:
        return sorted(name for name in self.names() if self.root_of(name) == cohort)


class _NoCohorts:
    """Every ClusterQueue is its own tree."""

    def parent_cohort(self, cluster_queue: str) -> str:
        return ""

    def root_cohort(self, cohort: str) -> str | None:
        return None

    def cluster_queues_under(self, cohort: str) -> list[str]:
        return []


@dataclass(frozen=True, order=True, slots=True)
class RetryRequest:
    """A pending "retry inadmissible" request for a cohort-less ClusterQueue or a root cohort."""

    kind: str
    name: str


def _lq_key_of(wl: Workload) -> str:
    return local_queue_key(wl.metadata.namespace, wl.spec.queue_name)


def _key_of(key_or_wl: str | Workload) -> str:
    return key_or_wl if isinstance(key_or_wl, str) else workload_key(key_or_wl)


class QueueManager:
    """Pending workloads of every LocalQueue and ClusterQueue; see the module docstring."""

    def __init__(
        self,
        options: SchedulerOptions | None = None,
        tree: CohortTree | Cache | Callable[[str], str | None] | None = None,
        afs_usage: AfsUsage | None = None,
    ) -> None:
        self.options = options or SchedulerOptions()
        self.tree: CohortTree = self._make_tree(tree)
        # Admission Fair Sharing (upstream ``Manager.AfsUsageLedger``); inert unless configured.
        self.afs = AdmissionFairSharing(self.options.admission_fair_sharing)
        if afs_usage is None and self.afs.enabled:
            afs_usage = self._lq_fs_usage
        self._afs_usage = afs_usage
        self._cqs: dict[str, PendingClusterQueue] = {}
        self._sorted_cq_names: list[str] | None = None
        self._nonempty: set[str] = set()
        self._lqs: dict[str, LocalQueueState] = {}
        self._assigned: dict[str, str] = {}
        # Heads whose LocalQueue moved to another ClusterQueue while they were popped (``_release``
        # forgets them from the old one's ``inflight``), or whose ClusterQueue was deleted: the
        # scheduler still holds them, and upstream's ``RequeueWorkload`` requeues such a head into
        # its LocalQueue (and the ClusterQueue that LocalQueue names now, if any).
        self._moved_heads: dict[str, WorkloadInfo] = {}
        self._namespaces: dict[str, dict[str, str]] = {}
        self._requests: dict[RetryRequest, float] = {}
        # ``workload.AdjustResources`` (RuntimeClass overhead, LimitRange defaults): the adjusted pod
        # templates of a Workload, or None when they are the spec's own. Set by the core's owner,
        # which knows the namespace's LimitRanges and the RuntimeClasses.
        self.adjust_pod_specs: Callable[[Workload], list[dict[str, Any]] | None] | None = None

    def _adjusted(self, wl: Workload) -> list[dict[str, Any]] | None:
        adjust = self.adjust_pod_specs
        return adjust(wl) if adjust is not None else None

    def _lq_fs_usage(self, info: WorkloadInfo) -> float:
        """Upstream ``Info.ComputeLocalQueueFSUsage`` with the cached LocalQueue weight."""
        return self.afs.usage(info.local_queue)

    def _make_tree(self, tree: CohortTree | Cache | Callable[[str], str | None] | None) -> CohortTree:
        if tree is None:
            return _NoCohorts()
        if isinstance(tree, Cache):
            return CacheCohortTree(tree)
        if isinstance(tree, CohortTree):
            return tree
        return RootOfCohortTree(tree, self._cq_names)

    # --- ClusterQueues ------------------------------------------------------------------------

    def add_cluster_queue(self, cq: ClusterQueue | ClusterQueueState, now: Now | None = None) -> None:
        """Track ``cq`` (or update it if known), adopt its LocalQueues' workloads and, when
        ``now`` is given, request a retry of its tree's inadmissible workloads (``NotifyRetryInadmissible``).

        Accepts the API object or the cache's ``ClusterQueueState`` (its ``obj`` is used)."""
        cq = _api_cluster_queue(cq)
        name = cq.metadata.name
        if name in self._cqs:
            self.update_cluster_queue(cq, now)
            return
        pending = PendingClusterQueue(name, self.options, self._nonempty, self._afs_usage)
        self._configure(pending, cq)
        self._cqs[name] = pending
        self._sorted_cq_names = None
        for lq in self._local_queues_of(name):
            for info in lq.items.values():
                pending.push_if_absent(info)
        if now is not None:
            self.queue_inadmissible_workloads({name}, now)

    def update_cluster_queue(
        self, cq: ClusterQueue | ClusterQueueState, now: Now | None = None, spec_changed: bool = True
    ) -> None:
        """Apply a ClusterQueue update; with ``now`` and a spec change, retry its tree
        (``NotifyRetryInadmissible``)."""
        cq = _api_cluster_queue(cq)
        pending = self._cqs.get(cq.metadata.name)
        if pending is None:
            self.add_cluster_queue(cq, now)
            return
        self._configure(pending, cq)
        if spec_changed and now is not None:
            self.queue_inadmissible_workloads({cq.metadata.name}, now)

    def delete_cluster_queue(self, cq: str | ClusterQueue | ClusterQueueState) -> None:
        """Forget a ClusterQueue; its LocalQueues keep their workloads for a later re-creation."""
        name = cq if isinstance(cq, str) else _api_cluster_queue(cq).metadata.name
        pending = self._cqs.pop(name, None)
        if pending is not None:
            self._sorted_cq_names = None
            self._nonempty.discard(name)
            # Upstream's scheduler still holds the popped heads; ``RequeueWorkload`` adds a head
            # whose admission failed back to its LocalQueue (``addWorkload``), which a re-created
            # ClusterQueue adopts (``AddFromLocalQueue``).
            for key, entry in pending.inflight.items():
                self._moved_heads[key] = entry.info

    @staticmethod
    def _configure(pending: PendingClusterQueue, cq: ClusterQueue) -> None:
        spec = cq.spec
        mode = spec.admission_scope.admission_mode if spec.admission_scope else ""
        pending.configure(spec.queueing_strategy or BEST_EFFORT_FIFO, spec.namespace_selector, mode)

    def _local_queues_of(self, cq_name: str) -> list[LocalQueueState]:
        return [lq for _, lq in sorted(self._lqs.items()) if lq.cluster_queue == cq_name]

    def _cq_names(self) -> list[str]:
        if self._sorted_cq_names is None:
            self._sorted_cq_names = sorted(self._cqs)
        return self._sorted_cq_names

    # --- LocalQueues --------------------------------------------------------------------------

    def add_local_queue(self, lq: LocalQueue, workloads: Iterable[Workload] = ()) -> None:
        """Track ``lq`` with its existing ``workloads`` (the informer's list; others are ignored).

        A stopped LocalQueue (``stopPolicy`` other than ``None``) is not tracked."""
        if self.afs.enabled:
            self.afs.observe_local_queue(key_of_local_queue(lq), lq)
        if is_stopped(lq):
            self.delete_local_queue(lq)
            return
        key = key_of_local_queue(lq)
        if key in self._lqs:
            self.update_local_queue(lq, workloads)
            return
        state = LocalQueueState.from_api(lq)
        self._lqs[key] = state
        self.afs.set_weight(key, lq_weight_as_float(lq))
        for wl in workloads:
            if _lq_key_of(wl) != key:
                continue
            self._assigned[workload_key(wl)] = key
            if is_admissible_to_queues(wl, self.options):
                info = new_workload_info(wl, self.options, adjusted_specs=self._adjusted(wl))
                state.items[info.key] = info
        self._adopt(state)

    def update_local_queue(self, lq: LocalQueue, workloads: Iterable[Workload] = ()) -> None:
        """Apply a LocalQueue update: stop/restart it or move its workloads to a new ClusterQueue."""
        key = key_of_local_queue(lq)
        if self.afs.enabled:
            self.afs.observe_local_queue(key, lq)
        state = self._lqs.get(key)
        if state is None:
            self.add_local_queue(lq, workloads)
            return
        if is_stopped(lq):
            self.delete_local_queue(lq)
            return
        if state.cluster_queue != lq.spec.cluster_queue:
            self._release(state)
            state.cluster_queue = lq.spec.cluster_queue
            self._adopt(state)
        if self.afs.set_weight(key, lq_weight_as_float(lq)):
            # ``ClusterQueue.UpdateLocalQueueWeight``: the LocalQueue's workloads all move at once.
            self.rebuild_heap(state.cluster_queue)

    def delete_local_queue(self, lq_or_key: LocalQueue | str) -> None:
        """Forget a LocalQueue and remove its workloads from its ClusterQueue."""
        key = lq_or_key if isinstance(lq_or_key, str) else key_of_local_queue(lq_or_key)
        state = self._lqs.pop(key, None)
        if state is not None:
            self._release(state)
        # ``ClusterQueue.deleteLocalQueue`` drops the weight; the usage history stays until the
        # LocalQueue object is deleted (:meth:`forget_local_queue_usage`), e.g. across a stop.
        self.afs.weights.pop(key, None)

    def forget_local_queue_usage(self, key: str) -> None:
        """``LocalQueueReconciler.Delete``: a deleted LocalQueue's AFS ledger entry goes."""
        self.afs.forget_local_queue(key)

    def _adopt(self, state: LocalQueueState) -> None:
        """``AddFromLocalQueue``: push the LocalQueue's workloads not yet tracked by its CQ."""
        cq = self._cqs.get(state.cluster_queue)
        if cq is not None:
            for info in state.items.values():
                cq.push_if_absent(info)

    def _release(self, state: LocalQueueState) -> None:
        """``DeleteFromLocalQueue``: drop the LocalQueue's workloads (incl. inflight) from its CQ."""
        cq = self._cqs.get(state.cluster_queue)
        if cq is None:
            return
        for key in state.items:
            cq.delete(key)
        for info in cq.forget_inflight_of_local_queue(state.key):
            self._moved_heads[info.key] = info

    # --- namespaces ---------------------------------------------------------------------------

    def set_namespace_labels(self, name: str, labels: Mapping[str, str]) -> set[str]:
        """Record a namespace's labels; returns the ClusterQueues whose selector newly matches it
        (the caller retries those, ``NotifyRetryInadmissible``)."""
        old = self._namespaces.get(name)
        new = dict(labels)
        self._namespaces[name] = new
        return {
            cq_name
            for cq_name in self._cq_names()
            if _selector_matches(self._cqs[cq_name].namespace_selector, new)
            and (old is None or not _selector_matches(self._cqs[cq_name].namespace_selector, old))
        }

    def delete_namespace(self, name: str) -> None:
        self._namespaces.pop(name, None)

    def _namespace_matcher(self, cq: PendingClusterQueue) -> Callable[[str], bool]:
        # One flush asks about every inadmissible workload, most of them in the same few
        # namespaces: match the selector once per namespace (labels cannot change meanwhile).
        seen: dict[str, bool] = {}

        def matches(namespace: str) -> bool:
            result = seen.get(namespace)
            if result is None:
                labels = self._namespaces.get(namespace)
                result = labels is not None and _selector_matches(cq.namespace_selector, labels)
                seen[namespace] = result
            return result

        return matches

    # --- workloads ----------------------------------------------------------------------------

    def add_or_update_workload(self, wl: Workload, now: Now) -> bool:
        """``Manager.AddOrUpdateWorkload``. Returns whether both its LocalQueue and ClusterQueue
        exist. A workload that is not admissible to the queues is rejected but *not* removed:
        the caller deletes it (e.g. when it went on hold)."""
        if not is_admissible_to_queues(wl, self.options):
            return False
        key = workload_key(wl)
        lq_key = _lq_key_of(wl)
        self._drop_if_reassigned(key, lq_key)
        lq = self._lqs.get(lq_key)
        if lq is None:
            return False
        cq = self._cqs.get(lq.cluster_queue)
        old = cq.tracked(key) if cq is not None else None
        adjust = self.adjust_pod_specs
        adjusted = adjust(wl) if adjust is not None else None
        if (
            cq is not None
            and old is not None
            and old.info.obj is wl
            and old.info.adjusted_specs == adjusted
            and self._observed(old, lq, cq)
        ):
            # This very object was observed already (``observe_own_write``): the steps below would
            # put an equal view in the same places (see ``_observed``).
            return True
        info = new_workload_info(wl, self.options, old.info if old is not None else None, adjusted)
        if old is not None and old.info.last_assignment is not None:
            info.last_assignment = self._carried_assignment(old.info, info.scheduling_hash)
        self._assign(info, lq)
        if cq is None:
            return False
        cq.push_or_update(info, seconds(now))
        return True

    def readjust_pending(self, now: Now, *, namespace: str | None = None, runtime_class: str | None = None) -> int:
        """A LimitRange of ``namespace`` or the RuntimeClass ``runtime_class`` changed (upstream
        ``resourceUpdatesHandler``): adjust the pending Workloads it applies to again and
        ``AddOrUpdateWorkload`` each (one whose adjusted templates changed leaves the inadmissible
        set). Returns how many were looked at."""
        chosen: list[Workload] = []
        for lq in self._lqs.values():
            for info in lq.items.values():
                wl = info.obj
                if namespace is not None and wl.metadata.namespace != namespace:
                    continue
                if runtime_class is not None and not any(
                    ps.template.spec.get("runtimeClassName") == runtime_class for ps in wl.spec.pod_sets
                ):
                    continue
                chosen.append(wl)
        for wl in chosen:
            self.add_or_update_workload(wl, now)
        return len(chosen)

    def _carried_assignment(self, tracked: WorkloadInfo, scheduling_hash: str) -> LastAssignment | None:
        """The flavor-scan progress a rebuilt view of ``tracked`` with ``scheduling_hash`` keeps
        (``AddOrUpdateWorkloadWithoutLock``: under ``FlavorFungibilityPreserveScanProgress``, when
        ``MatchesSchedulingShape`` of the hash the progress was recorded for)."""
        last = tracked.last_assignment
        if last is None or not self.options.gate_preserve_scan_progress:
            return None
        # ``MatchesSchedulingShape`` (inline: asked for every observed update of a requeued head).
        recorded = last.scheduling_hash
        if recorded == scheduling_hash or SCHEDULING_HASH_UNKNOWN in (recorded, scheduling_hash):
            return last
        return None

    def _observed(self, entry: PendingEntry, lq: LocalQueueState, cq: PendingClusterQueue) -> bool:
        """Whether ``add_or_update_workload`` of ``entry.info.obj`` (already known admissible, its
        LocalQueue ``lq`` assigned) would leave the queues as they are.

        It would build ``new_workload_info(obj, previous=entry.info)``: derived from the same object,
        its fields equal ``entry.info``'s when those are what a fresh view has (no ClusterQueue, no
        usage, not popped: nothing the scheduler stamps), its last assignment as ``_carried_assignment``
        keeps it (the same hash, so the same answer as for ``entry.info``). It would store
        that view in ``lq`` and ``PushOrUpdate`` it: outside ``inflight``, in ``inadmissible`` the
        unchanged object keeps it there as a new entry of generation 0, in the heap it replaces the
        entry at the same order. Both equal the entry held when its generation is 0 already."""
        info = entry.info
        key = info.key
        return (
            entry.last_evaluated_generation == 0
            and lq.items.get(key) is info
            and self._assigned.get(key) == lq.key
            and key not in cq.inflight
            and not info.cluster_queue
            and not info.usage
            and info.quota_reserved_ts == 0.0
            and not info.is_preemptor
            and info.last_evaluated_generation == 0
            and info.obj.status.admission is None
            and (
                info.last_assignment is None
                or info.last_assignment is self._carried_assignment(info, info.scheduling_hash)
            )
        )

    def holds_observed(self, wl: Workload) -> bool:
        """Whether ``add_or_update_workload(wl)`` would change nothing: the queues hold a view of this
        very object, in its LocalQueue and in its ClusterQueue's heap or inadmissible map, as that
        call leaves it (``_observed``). ``wl`` was admissible to the queues when its view was stored
        (every path that stores a view of an object checks it first), and that depends on nothing
        else, so the call would pass its first check too."""
        key = workload_key(wl)
        lq_key = _lq_key_of(wl)
        if self._assigned.get(key) != lq_key:
            return False
        lq = self._lqs.get(lq_key)
        cq = self._cqs.get(lq.cluster_queue) if lq is not None else None
        if cq is None:
            return False
        entry = cq.inadmissible.get(key) or cq.active.get(key)
        return entry is not None and entry.info.obj is wl and self._observed(entry, lq, cq)  # type: ignore[arg-type]

    def observe_own_write(self, info: WorkloadInfo, written: Workload) -> bool:
        """``add_or_update_workload(written)`` done now for the head ``info`` the scheduler has just
        requeued (``requeue_workload``) into ``inadmissible`` and whose pending status ``written``
        (``transitions.set_pending`` over a ``copy_for_status`` of ``info.obj``) has just landed, for a
        driver that routes each write back, unchanged and in order, before anything reads the queues
        again (``KueueCore`` decides). The observation then finds that view in place (``_observed``)
        and changes nothing. Returns False, leaving it all to the observation, outside that shape.

        ``written`` shares ``info.obj``'s metadata, spec and reclaimable pods, has no admission, and
        differs in no condition but QuotaReserved and Admitted: what a view derives from it (key,
        priorities, order timestamp, requests, hash) equals ``info``'s, and ``PushOrUpdate`` finds it
        unchanged for admission (generation, spec, Evicted, Requeued, gates), so the entry becomes a
        generation-0 entry of a fresh view: ``info`` with the written object and without what the
        scheduler stamped (ClusterQueue, preemptor, generation; the last assignment as
        ``_carried_assignment`` keeps it, as the observation would for the equal hash)."""
        old = info.obj
        key = info.key
        old_status, new_status = old.status, written.status
        if (
            written.metadata is not old.metadata
            or written.spec is not old.spec
            or old_status.admission is not None
            or new_status.admission is not None
            or new_status.reclaimable_pods is not old_status.reclaimable_pods
            or new_status.preemption_gates is not old_status.preemption_gates
        ):
            return False
        lq = self._lqs.get(self._assigned.get(key, ""))
        if lq is None or lq.items.get(key) is not info:
            return False
        cq = self._cqs.get(lq.cluster_queue)
        entry = cq.inadmissible.get(key) if cq is not None else None
        if entry is None or entry.info is not info or key in cq.inflight:  # type: ignore[union-attr]
            return False
        generation = entry.last_evaluated_generation
        if generation != 0 and generation != old.metadata.generation:
            return False
        if [c for c in old_status.conditions if c.type not in _PENDING_WRITE_CONDITIONS] != [
            c for c in new_status.conditions if c.type not in _PENDING_WRITE_CONDITIONS
        ] or not is_admissible_to_queues(written, self.options):
            return False
        fresh = msgspec.structs.replace(
            info,
            obj=written,
            cluster_queue="",
            usage={},
            quota_reserved_ts=0.0,
            last_assignment=(
                None
                if info.last_assignment is None
                else self._carried_assignment(info, info.scheduling_hash)
            ),
            is_preemptor=False,
            last_evaluated_generation=0,
        )
        lq.items[key] = fresh
        cq.inadmissible[key] = PendingEntry(fresh)  # type: ignore[union-attr]
        return True

    def delete_workload(self, key_or_wl: str | Workload, forget: bool = False) -> None:
        """Remove a workload from its queues (clears ``inflight`` and a matching preemptor
        record). With ``forget`` the workload → LocalQueue assignment is dropped too."""
        self._delete_from_queues(_key_of(key_or_wl), forget)

    def _assign(self, info: WorkloadInfo, lq: LocalQueueState) -> None:
        self._assigned[info.key] = lq.key
        lq.items[info.key] = info

    def _drop_if_reassigned(self, key: str, lq_key: str) -> None:
        assigned = self._assigned.get(key)
        if assigned is not None and assigned != lq_key:
            self._delete_from_queues(key, forget=True)

    def _delete_from_queues(self, key: str, forget: bool) -> None:
        if self._moved_heads:
            self._moved_heads.pop(key, None)
        lq_key = self._assigned.get(key)
        if lq_key is None:
            return
        if forget:
            del self._assigned[key]
        lq = self._lqs.get(lq_key)
        if lq is None:
            return
        lq.items.pop(key, None)
        cq = self._cqs.get(lq.cluster_queue)
        if cq is not None:
            cq.delete(key)

    # --- scheduling cycle ---------------------------------------------------------------------

    def heads(self, cache_is_active: Callable[[str], bool]) -> list[WorkloadInfo]:
        """``Manager.Heads``: pop one head per active ClusterQueue, in ClusterQueue-name order.

        Every pop (even of an empty heap) counts a pop cycle. A head is marked inflight, gets
        ``cluster_queue`` set, leaves its LocalQueue's pending set, and — if ``WorkloadInfo``
        declares them — ``last_evaluated_generation`` and ``is_preemptor`` stamped."""
        out: list[WorkloadInfo] = []
        nonempty = self._nonempty
        for name in self._cq_names():
            if not cache_is_active(name):
                continue
            cq = self._cqs[name]
            if name not in nonempty:
                # An empty heap (``_nonempty`` is exactly the ClusterQueues whose heap holds a live
                # entry): the pop only counts its pop cycle.
                cq.pop_cycle += 1
                continue
            if cq.afs_usage is not None and self._has_pending_penalty(name):
                # ``ClusterQueue.Pop``: a pending penalty moves all of a LocalQueue's workloads.
                cq.rebuild_heap()
            entry = cq.pop()
            if entry is None:
                continue
            info = entry.info
            info.cluster_queue = name
            if self._moved_heads:
                self._moved_heads.pop(info.key, None)
            lq = self._lqs.get(self._assigned.get(info.key, ""))
            if lq is not None:
                lq.items.pop(info.key, None)
            generation = entry.last_evaluated_generation
            info.last_evaluated_generation = generation
            info.is_preemptor = cq.is_preemptor(info.key, generation)
            out.append(info)
        return out

    def inflight(self, key: str) -> WorkloadInfo | None:
        """The head ``key`` as popped by :meth:`heads`, while it is neither requeued nor deleted
        (also when its LocalQueue moved to another ClusterQueue or its ClusterQueue was deleted
        meanwhile: upstream's scheduler still holds its entry and ``RequeueWorkload`` requeues it
        into its LocalQueue and the ClusterQueue that names now)."""
        lq = self._lqs.get(self._assigned.get(key, ""))
        cq = self._cqs.get(lq.cluster_queue) if lq is not None else None
        entry = cq.inflight.get(key) if cq is not None else None
        return entry.info if entry is not None else self._moved_heads.get(key)

    def is_preemptor(self, info: WorkloadInfo) -> bool:
        """``IsPreemptor``: ``info`` is its ClusterQueue's preemptor at its current generation."""
        cq = self._cqs.get(info.cluster_queue)
        return cq is not None and cq.is_preemptor(info.key, info.obj.metadata.generation)

    def requeue_workload(
        self,
        info: WorkloadInfo,
        reason: str,
        quota_reserved_reason: str,
        now: Now,
        latest: Workload | None,
    ) -> bool:
        """``Manager.RequeueWorkload`` for a head that was not admitted.

        ``latest`` is the newest object (None if gone). A dropped workload also releases its
        inflight claim (upstream leaves it to the next delete/update event). Returns whether the
        workload was inserted into its ClusterQueue."""
        key = info.key
        if self._moved_heads:
            self._moved_heads.pop(key, None)
        popped_from = self._cqs.get(info.cluster_queue)
        if latest is None or not is_admissible_to_queues(latest, self.options):
            if popped_from is not None:
                popped_from.forget_inflight(key)
            return False
        self._refresh(info, latest)
        lq_key = _lq_key_of(latest)
        self._drop_if_reassigned(key, lq_key)
        lq = self._lqs.get(lq_key)
        cq = self._cqs.get(lq.cluster_queue) if lq is not None else None
        if popped_from is not None and popped_from is not cq:
            popped_from.forget_inflight(key)
        if lq is None:
            return False
        self._assign(info, lq)
        if cq is None:
            return False
        return cq.requeue_if_not_present(info, reason, quota_reserved_reason, seconds(now))

    def _refresh(self, info: WorkloadInfo, latest: Workload) -> None:
        """``AdjustResources`` and ``info.Update``: recompute derived fields from ``latest``, keep
        the scheduler's own."""
        adjust = self.adjust_pod_specs
        adjusted = adjust(latest) if adjust is not None else None
        if latest is info.obj and adjusted == info.adjusted_specs:
            # The derived fields were computed from this very object (objects are replaced, not
            # mutated, on every change) and the same adjustments, so recomputing them gives the
            # same values.
            return
        fresh = new_workload_info(latest, self.options, info, adjusted)
        for name in _REFRESHED_FIELDS:
            setattr(info, name, getattr(fresh, name))

    # --- retrying inadmissible workloads (upstream ``queueInadmissibleWorkloads``) ------------

    def queue_inadmissible_workloads(self, cq_names: Iterable[str], now: Now) -> None:
        """``NotifyRetryInadmissible``: request a batched retry for each ClusterQueue's tree.

        Trees with a cohort cycle are ignored (until the cycle is removed and a cohort event
        notifies again)."""
        due = seconds(now) + RETRY_BATCH_PERIOD
        for name in sorted(set(cq_names)):
            if name not in self._cqs:
                continue
            parent = self.tree.parent_cohort(name)
            if not parent:
                self._enqueue(RetryRequest(REQUEST_CLUSTER_QUEUE, name), due)
                continue
            root = self.tree.root_cohort(parent)
            if root is not None:
                self._enqueue(RetryRequest(REQUEST_COHORT, root), due)

    def notify_cohort(self, cohort: str, now: Now) -> None:
        """A Cohort was created or updated: retry its root tree, unless it has a cycle."""
        root = self.tree.root_cohort(cohort)
        if root is not None:
            self._enqueue(RetryRequest(REQUEST_COHORT, root), seconds(now) + RETRY_BATCH_PERIOD)

    def queue_associated_inadmissible_workloads_after(
        self, key_or_wl: str | Workload, now: Now, action: Callable[[], None] | None = None
    ) -> None:
        """Run ``action`` (a cache mutation), then retry the workload's ClusterQueue tree."""
        if action is not None:
            action()
        cq_name = self.cluster_queue_for_workload(key_or_wl)
        if cq_name is not None:
            self.queue_inadmissible_workloads({cq_name}, now)

    def _enqueue(self, request: RetryRequest, due: float) -> None:
        current = self._requests.get(request)
        if current is None or due < current:
            self._requests[request] = due

    def next_due_time(self) -> float | None:
        """When the earliest pending retry request becomes due (epoch seconds)."""
        return min(self._requests.values(), default=None)

    def has_pending_requests(self) -> bool:
        """Whether any retry request waits to be processed."""
        return bool(self._requests)

    def pending_requests(self) -> dict[RetryRequest, float]:
        """The pending retry requests and their due times (a copy)."""
        return dict(self._requests)

    def process_due_requeues(self, now: Now) -> int:
        """Process every request due at ``now`` (earliest first); returns workloads moved."""
        t = seconds(now)
        due = sorted((when, req) for req, when in self._requests.items() if when <= t)
        moved = 0
        for _, request in due:
            del self._requests[request]
            moved += self._process(request, t)
        return moved

    def _process(self, request: RetryRequest, now: float) -> int:
        if request.kind == REQUEST_CLUSTER_QUEUE:
            cq = self._cqs.get(request.name)
            return self._flush(cq, now) if cq is not None else 0
        if self.tree.root_cohort(request.name) is None:
            return 0
        return sum(
            self._flush(self._cqs[name], now)
            for name in self.tree.cluster_queues_under(request.name)
            if name in self._cqs
        )

    def _flush(self, cq: PendingClusterQueue, now: float) -> int:
        return cq.flush_inadmissible(self._namespace_matcher(cq), now)

    # --- queries ------------------------------------------------------------------------------

    def cluster_queue(self, name: str) -> PendingClusterQueue | None:
        """The pending state of a ClusterQueue (read-only use)."""
        return self._cqs.get(name)

    def has_cluster_queue(self, name: str) -> bool:
        return name in self._cqs

    def has_local_queue(self, lq_key: str) -> bool:
        return lq_key in self._lqs

    def cluster_queue_names(self) -> list[str]:
        return list(self._cq_names())

    def assigned_local_queue(self, key: str) -> str | None:
        """The LocalQueue a workload was last assigned to (kept for its whole life)."""
        return self._assigned.get(key)

    def cluster_queue_for_workload(self, key_or_wl: str | Workload) -> str | None:
        """The ClusterQueue of the workload's LocalQueue (by its queue name for a ``Workload``,
        by its remembered assignment for a key); None if that LocalQueue is not tracked. Use
        :meth:`has_cluster_queue` to know whether the ClusterQueue exists."""
        lq_key = _lq_key_of(key_or_wl) if isinstance(key_or_wl, Workload) else self._assigned.get(key_or_wl)
        lq = self._lqs.get(lq_key) if lq_key is not None else None
        return lq.cluster_queue if lq is not None else None

    def is_next_head(self, key: str) -> bool:
        """Whether workload ``key`` is at the top of its ClusterQueue's heap: the head the next
        :meth:`heads` pops from that ClusterQueue (a driver finishes what it is writing about such a
        workload before the cycle that may decide on it again)."""
        lq = self._lqs.get(self._assigned.get(key, ""))
        cq = self._cqs.get(lq.cluster_queue) if lq is not None else None
        if cq is None or not cq.active:
            return False
        if cq.afs_usage is not None and self._has_pending_penalty(cq.name):
            # :meth:`heads` re-sorts this heap before its pop: the head is the re-sorted order's first.
            top = cq.resorted_top()
        else:
            top = cq.active.peek()
        return top is not None and top.info.key == key

    def _has_pending_penalty(self, cq_name: str) -> bool:
        """Upstream ``ClusterQueue.hasPendingPenalties``: a LocalQueue of ``cq_name`` has a pending
        AFS entry penalty (``ClusterQueue.Pop`` then re-sorts the heap first)."""
        return self.afs.has_pending_penalty(key for key, lq in self._lqs.items() if lq.cluster_queue == cq_name)

    def pending_count(self, cq_name: str) -> int:
        """Pending workloads of a ClusterQueue (heap + inadmissible + inflight)."""
        cq = self._cqs.get(cq_name)
        return cq.pending_total() if cq is not None else 0

    def pending_breakdown(self, cq_name: str) -> tuple[int, int]:
        """(active incl. inflight, inadmissible) counts of a ClusterQueue."""
        cq = self._cqs.get(cq_name)
        if cq is None:
            return 0, 0
        return len(cq.active) + len(cq.inflight), len(cq.inadmissible)

    def pending_count_local_queue(self, lq_key: str) -> int:
        """Pending workloads held by a LocalQueue (popped heads excluded)."""
        lq = self._lqs.get(lq_key)
        return len(lq.items) if lq is not None else 0

    def local_queue_workload_keys(self, lq_key: str) -> list[str]:
        """Keys of the pending workloads a LocalQueue holds, sorted."""
        lq = self._lqs.get(lq_key)
        return sorted(lq.items) if lq is not None else []

    def pending_workloads(self, cq_name: str) -> list[WorkloadInfo]:
        """Every pending workload of a ClusterQueue in queue order (visibility ``Snapshot``)."""
        cq = self._cqs.get(cq_name)
        return cq.sorted_pending() if cq is not None else []

    def is_inadmissible_with_bulk_reason(self, key: str) -> str | None:
        """The recorded bulk-move reason if the workload sits in ``inadmissible`` with a blocked
        scheduling hash (``ClusterQueue.handleInadmissibleHash``), else None."""
        cq_name = self.cluster_queue_for_workload(key)
        cq = self._cqs.get(cq_name) if cq_name is not None else None
        return cq.bulk_move_reason(key) if cq is not None else None

    def has_pending_heads(self, cache_is_active: Callable[[str], bool] | None = None) -> bool:
        """Whether some (active) ClusterQueue has a non-empty heap."""
        if cache_is_active is None:
            return bool(self._nonempty)
        return any(cache_is_active(name) for name in self._nonempty)

    def rebuild_heap(self, cq_name: str) -> None:
        """Re-sort a ClusterQueue's heap after Admission Fair Sharing usage changed."""
        cq = self._cqs.get(cq_name)
        if cq is not None:
            cq.rebuild_heap()


def _api_cluster_queue(cq: ClusterQueue | ClusterQueueState) -> ClusterQueue:
    return cq.obj if isinstance(cq, ClusterQueueState) else cq


def _selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """A nil selector matches no namespace; ``{}`` matches all."""
    return selector is not None and label_selector_matches(selector, dict(labels))
