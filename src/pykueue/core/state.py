"""The core's one door, :class:`KueueCore` (dask's ``SchedulerState``, in Kueue's words).

Both drivers of the core — the in-memory simulator behind ``pykueue schedule`` and the controller
manager of ``pykueue serve`` — construct one and go through it: they *observe* every Workload
change (:func:`route_workload_change` keeps the queues and the quota cache in sync with the
Workloads the API holds, upstream ``WorkloadReconciler.Update``), run *cycles*, *requeue due*
work, and *apply* the decisions the core hands them (:class:`~pykueue.core.decision.Decision`). A bounded
:class:`TransitionLog` keeps, per Workload, the recent decisions with their stimulus, time,
outcome and reason; :meth:`KueueCore.story` reads it back (the decision trail).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Protocol

import msgspec

from pykueue.api.kueue import LocalQueue, Workload
from pykueue.api.limitrange import Summary, adjust_pod_spec, has_defaults, summarize
from pykueue.api.meta import to_time
from pykueue.core.cache.cache import Cache
from pykueue.core.decision import Decision
from pykueue.core.options import SchedulerOptions
from pykueue.core.queue import (
    REQUEUE_REASON_FAILED_AFTER_NOMINATION,
    QueueManager,
    is_stopped,
    local_queue_key,
    seconds,
)
from pykueue.core.queue.afs.fair_sharing import admission_fair_sharing_status, fair_sharing_status
from pykueue.core.scheduler.cycle import Scheduler
from pykueue.core.scheduler.entry import CycleResult
from pykueue.core.workload import transitions
from pykueue.core.workload.info import (
    has_active_quota_reservation,
    has_quota_reservation,
    is_active,
    is_admitted,
    is_evicted,
    is_finished,
    is_on_hold,
    new_workload_info,
    priority_parts,
    workload_key,
)
from pykueue.core.workload.reconcile import Outcome


def queueable(wl: Workload) -> bool:
    """Whether a Workload may sit in its LocalQueue (``workload.IsAdmissible``, admission gates aside)."""
    return not is_finished(wl) and is_active(wl) and not has_quota_reservation(wl) and not is_on_hold(wl)


def route_workload_change(
    old: Workload | None,
    new: Workload | None,
    *,
    cache: Cache,
    queues: QueueManager,
    issued_evictions: set[str],
    options: SchedulerOptions,
    now: datetime,
    retry_from: datetime | None = None,
) -> None:
    """Apply one observed Workload change (``old`` None: created; ``new`` None: deleted).

    ``retry_from`` (default ``now``) is when the change happened, from which the batched retry
    of parked workloads it requests runs (``RETRY_BATCH_PERIOD``): the simulator observes some
    changes a tick after they happened. That time is not truncated to whole seconds: upstream's
    requeuer (``workqueueRequeuer``) waits on a precise clock, while ``now`` is also compared
    with the API's whole-second timestamps.
    """
    wl = new if new is not None else old
    assert wl is not None
    key = workload_key(wl)
    if new is None:
        queues.delete_workload(key, forget=True)
        _release(key, cache, queues, now, retry_from)
        return
    if old is None:
        if is_finished(new):
            return
        if has_active_quota_reservation(new):
            _cache_info(new, key, cache, options)
        elif queueable(new):
            queues.add_or_update_workload(new, to_time(now).timestamp())
        return
    if not has_quota_reservation(old) and queues.holds_observed(new) and is_evicted(new) == is_evicted(old):
        # The queues already hold ``new`` as observed (``QueueManager.observe_own_write``): it was
        # admissible to them (so not finished, active, not reserved, not on hold), ``old`` held no
        # quota, the eviction did not change, so the steps below would only call
        # ``add_or_update_workload(new)``, which would change nothing.
        return
    if is_evicted(new) and not is_evicted(old):
        issued_evictions.discard(new.metadata.uid)  # the expected eviction landed
    was_reserved = has_quota_reservation(old)
    now_reserved = has_quota_reservation(new)
    if is_finished(new) or not is_active(new):
        # Finishing or deactivating frees the usage at once, although status.admission stays
        # (``WorkloadReconciler.Update``).
        queues.delete_workload(key)
        _release(key, cache, queues, now, retry_from)
        return
    if not was_reserved and not now_reserved:
        if is_on_hold(new):
            queues.delete_workload(key)
        else:
            queues.add_or_update_workload(new, to_time(now).timestamp())
        return
    if not was_reserved and now_reserved:
        queues.delete_workload(key)
        _cache_info(new, key, cache, options)
        return
    retry_ts = seconds(now if retry_from is None else retry_from)
    if was_reserved and not now_reserved:
        cq = cache.workload_cq.get(key)
        cache.delete_workload(key)
        at = transitions.requeue_at(new)
        if at is None or at <= to_time(now):
            queues.add_or_update_workload(new, to_time(now).timestamp())
        if cq:
            queues.queue_inadmissible_workloads({cq}, retry_ts)
        return
    _cache_info(new, key, cache, options)
    # Reserved -> reserved: fewer pods or another priority can let parked workloads in
    # (``QueueAssociatedInadmissibleWorkloadsAfter``). Upstream's Update handler retries on reclaimable pods
    # only between two Admitted states; a reservation waiting for checks just updates the cache.
    if (
        (is_admitted(old) and is_admitted(new) and old.status.reclaimable_pods != new.status.reclaimable_pods)
        or priority_parts(old, options) != priority_parts(new, options)
        or old.spec.priority_class_ref != new.spec.priority_class_ref
    ):
        cq = cache.workload_cq.get(key)
        if cq:
            queues.queue_inadmissible_workloads({cq}, retry_ts)


def _status(wl: Workload) -> str:
    """Upstream ``workload.Status`` as far as AFS reads it."""
    if is_finished(wl):
        return "finished"
    if is_admitted(wl):
        return "admitted"
    return "reserved" if has_quota_reservation(wl) else "pending"


def _reconcile_afs_penalties(old: Workload | None, new: Workload | None, cache: Cache, queues: QueueManager, now: float) -> None:
    """The workload controller's AFS steps: a deleted Workload's penalty is dropped
    (``WorkloadReconciler.Delete``); an update runs ``reconcileAfsPenaltiesOnUpdate``."""
    afs = queues.afs
    if new is None:
        assert old is not None
        afs.sub_penalty(local_queue_key(old.metadata.namespace, old.spec.queue_name), workload_key(old))
        return
    if old is None:
        return
    key = workload_key(new)
    lq_key = local_queue_key(new.metadata.namespace, new.spec.queue_name)
    active, status, prev_status = is_active(new), _status(new), _status(old)
    if active and status == "admitted" and prev_status != "admitted" and new.status.admission is not None:
        cq = cache.cluster_queues.get(new.status.admission.cluster_queue)
        if cq is not None and cq.afs and afs.in_cluster_queue(lq_key, cq.name):
            # ``updateAfsConsumedUsage``, after the cache accounts for the workload's usage; it
            # settles nothing when the cache has no such LocalQueue in that ClusterQueue
            # (``GetCacheLocalQueue`` fails: the LocalQueue is gone or names another one).
            afs.settle(lq_key, key, cache.local_queue_admitted_usage(cq.name, lq_key), now)
            # The assume notified the LocalQueue's watchers, whose reconcile ends in
            # ``RebuildClusterQueue``: the settled usage orders the heap from here on.
            queues.rebuild_heap(cq.name)
    if old.spec.queue_name != new.spec.queue_name:
        afs.sub_penalty(local_queue_key(old.metadata.namespace, old.spec.queue_name), key)
    inactive_unreserved = not active and not has_quota_reservation(new)
    was_active_or_reserved = is_active(old) or has_quota_reservation(old)
    if (inactive_unreserved and was_active_or_reserved) or (status == "finished" and prev_status != "finished"):
        afs.sub_penalty(lq_key, key)


def _cache_info(wl: Workload, key: str, cache: Cache, options: SchedulerOptions) -> None:
    cache.add_workload(new_workload_info(wl, options, cache.workload(key)))


def _release(key: str, cache: Cache, queues: QueueManager, now: datetime, retry_from: datetime | None) -> None:
    """Free the workload's usage and retry what was parked behind it."""
    cq = cache.workload_cq.get(key)
    cache.delete_workload(key)
    if cq:
        queues.queue_inadmissible_workloads({cq}, seconds(now if retry_from is None else retry_from))


# --- the transition log -----------------------------------------------------------------------------


class Transition(msgspec.Struct, frozen=True, gc=False):
    """One entry of a Workload's trail: which stimulus led to which decision, when, and whether its
    write landed (``outcome``: ``applied``, ``failed`` or ``noted`` for a decision without writes).

    Untracked by the cyclic GC (``gc=False``: strings, a time and a tuple of strings cannot form
    a cycle): the log keeps one per decision, which would otherwise make the young collections of
    a busy scheduler come sooner and scan more (bench/RESULTS.md, core2)."""

    stimulus: str
    at: datetime
    reason: str
    message: str
    outcome: str
    related: tuple[str, ...] = ()


class TransitionLog:
    """The recent transitions of the most recently touched Workloads, bounded both ways."""

    def __init__(self, per_workload: int = 32, workloads: int = 10_000) -> None:
        self.per_workload = per_workload
        self.workloads = workloads
        # A list per workload (trimmed from the front when over the bound), not a ``deque``: most
        # workloads of a busy scheduler get one or two transitions, and a deque allocates a block
        # of 64 slots for the first.
        self._trails: OrderedDict[str, list[Transition]] = OrderedDict()

    def record(self, decision: Decision, outcome: str) -> None:
        transition = Transition(
            decision.stimulus, decision.at, decision.reason, decision.message, outcome, decision.related
        )
        trail = self._trails.get(decision.workload)
        if trail is None:
            self._trails[decision.workload] = [transition] if self.per_workload > 0 else []
            if len(self._trails) > self.workloads:
                self._trails.popitem(last=False)
            return
        self._trails.move_to_end(decision.workload)
        trail.append(transition)
        if len(trail) > self.per_workload:
            del trail[0]

    def story(self, workload_key: str) -> list[Transition]:
        return list(self._trails.get(workload_key, ()))


def outcome_decision(workload_key: str, outcome: Outcome, stimulus: str, now: datetime) -> Decision:
    """An outcome of :mod:`pykueue.core.workload.reconcile` as a decision caused by ``stimulus``."""
    return Decision(
        stimulus,
        to_time(now),
        workload_key,
        outcome.reason,
        status=outcome.status,
        spec=outcome.spec,
        events=outcome.events,
    )


# --- the door -----------------------------------------------------------------------------------------


class Driver(Protocol):
    """What the core needs from whoever drives it (the simulator, the controller manager)."""

    def get_workload(self, key: str) -> Workload | None: ...

    def namespace_labels(self, namespace: str) -> dict[str, str] | None: ...

    def apply(self, decision: Decision) -> bool:
        """Write the decision's status or spec (if any); record its events once that succeeded.
        Returns whether the write landed (True when there is none)."""
        ...


class KueueCore:
    """The scheduling core behind one door; see the module docstring."""

    def __init__(self, options: SchedulerOptions, driver: Driver, *, log: TransitionLog | None = None) -> None:
        self.options = options
        self.driver = driver
        self.cache = Cache()
        self.queues = QueueManager(options, self.cache)
        # Preemption expectations (upstream's ``expectations.Store``): the cycle adds the uid of
        # each victim whose eviction it wrote; observing that eviction forgets it.
        self.issued_evictions: set[str] = set()
        self.scheduler = Scheduler(self.cache, self.queues, self, options, self.issued_evictions)
        # A driver that observes every write it applies as the very object written, in order, after
        # the cycle and at the cycle's time, before anything else reads the queues, says so with
        # ``observes_writes_as_written`` (the simulator; not the controller manager, whose watch
        # delivers new objects later).
        self.scheduler.observe_own_writes = bool(getattr(driver, "observes_writes_as_written", False))
        self.log = log if log is not None else TransitionLog()
        # What ``workload.AdjustResources`` and ``ValidateLimitRange`` read, as observed: LimitRange
        # specs by namespace and name, their summaries (namespaces with a LimitRange only), and
        # RuntimeClass ``overhead.podFixed`` by name (None: no overhead).
        self._limit_ranges: dict[str, dict[str, Mapping[str, Any]]] = {}
        self.limit_range_summaries: dict[str, Summary] = {}
        """The summary of each namespace's LimitRanges (namespaces with one only; read only)."""
        self._limit_range_defaults: dict[str, Summary] = {}
        self._runtime_classes: dict[str, Mapping[str, Any] | None] = {}

    # --- CyclePort (the scheduler's view of the world) ---------------------------------------------------

    def get_workload(self, key: str) -> Workload | None:
        return self.driver.get_workload(key)

    def namespace_labels(self, namespace: str) -> dict[str, str] | None:
        return self.driver.namespace_labels(namespace)

    # --- LimitRanges and RuntimeClasses (``workload.AdjustResources``, ``ValidateLimitRange``) ----------

    def observe_limit_range(
        self, namespace: str, name: str, spec: Mapping[str, Any] | None, now: datetime | None = None
    ) -> None:
        """A LimitRange was created or changed (``spec``) or deleted (None). With ``now`` (a change
        after the initial state), the namespace's pending Workloads are adjusted again and re-added
        to their queues (upstream ``resourceUpdatesHandler``)."""
        ranges = self._limit_ranges.setdefault(namespace, {})
        if spec is None:
            ranges.pop(name, None)
        else:
            ranges[name] = spec
        if ranges:
            ordered = [ranges[n] for n in sorted(ranges)]  # a LIST's order: by name
            self.limit_range_summaries[namespace] = summarize(ordered)
            if has_defaults(ordered):
                self._limit_range_defaults[namespace] = self.limit_range_summaries[namespace]
            else:
                self._limit_range_defaults.pop(namespace, None)
        else:
            del self._limit_ranges[namespace]
            self.limit_range_summaries.pop(namespace, None)
            self._limit_range_defaults.pop(namespace, None)
        self._hook_adjustments()
        if now is not None:
            self.queues.readjust_pending(to_time(now).timestamp(), namespace=namespace)

    def observe_runtime_class(self, name: str, overhead: Mapping[str, Any] | None, *, deleted: bool = False, now: datetime | None = None) -> None:
        """A RuntimeClass was created or changed (its ``overhead.podFixed``, None without one) or
        deleted; with ``now``, the pending Workloads naming it are adjusted again and re-added."""
        if deleted:
            self._runtime_classes.pop(name, None)
        else:
            self._runtime_classes[name] = overhead
        self._hook_adjustments()
        if now is not None:
            self.queues.readjust_pending(to_time(now).timestamp(), runtime_class=name)

    def _hook_adjustments(self) -> None:
        # Without LimitRange defaults or RuntimeClasses nothing can be adjusted: the queue manager
        # then skips the call for every queued change.
        adjusting = bool(self._limit_range_defaults or self._runtime_classes)
        self.queues.adjust_pod_specs = self.adjusted_pod_specs if adjusting else None

    def limit_range_summary(self, namespace: str) -> Summary | None:
        """The summary of the namespace's LimitRanges (``limitrange.Summarize``), None without any."""
        return self.limit_range_summaries.get(namespace)

    def adjusted_pod_specs(self, wl: Workload) -> list[dict[str, Any]] | None:
        """``workload.AdjustResources``' RuntimeClass and LimitRange steps on ``wl``'s pod templates;
        None when they leave every template as it is (no LimitRange with a ``Container`` or ``Pod``
        item in the namespace, no RuntimeClass overhead to add)."""
        summary = self._limit_range_defaults.get(wl.metadata.namespace)
        pod_sets = wl.spec.pod_sets
        overheads: list[Mapping[str, Any] | None] = []
        for ps in pod_sets:
            spec = ps.template.spec
            rc = spec.get("runtimeClassName")
            # A RuntimeClass that does not exist: upstream logs the lookup error and moves on.
            overheads.append(self._runtime_classes.get(rc) if rc is not None and not spec.get("overhead") else None)
        if summary is None and all(o is None for o in overheads):
            return None
        adjusted = [
            adjust_pod_spec(ps.template.spec, runtime_class_overhead=overhead, summary=summary)
            for ps, overhead in zip(pod_sets, overheads, strict=True)
        ]
        if all(a == ps.template.spec for a, ps in zip(adjusted, pod_sets, strict=True)):
            return None
        return adjusted

    def decide(self, decision: Decision) -> bool:
        """Apply ``decision`` through the driver and keep it in the transition log."""
        ok = self.driver.apply(decision)
        self.record(decision, ok)
        return ok

    @property
    def sends_ahead(self) -> bool:
        """Whether the driver sends decisions ahead of their answers (see :meth:`send_all`)."""
        return hasattr(self.driver, "send_all")

    def send_all(self, decisions: list[Decision]) -> Callable[[], list[bool | None]]:
        """Apply independent decisions about different workloads (a preemptor's victims; upstream
        ``IssuePreemptions`` writes them in parallel and counts the successes) and keep them in the
        transition log; the returned call gives whether each landed, or None for one the driver
        never sent (an earlier one failed: upstream's cancelled ``ParallelizeUntil``), which is not
        logged. A driver that sends them ahead (``send_all``: the controllers, whose round trips to
        the API server take tens of milliseconds) has them on their way, and the call waits for
        the answers; any other driver applies them one after another at once."""
        send_all = getattr(self.driver, "send_all", None)
        if send_all is None:
            oks: list[bool | None] = [self.decide(d) for d in decisions]
            return lambda: oks
        wait: Callable[[], list[bool | None]] = send_all(decisions)

        def answers() -> list[bool | None]:
            got = wait()
            for decision, ok in zip(decisions, got, strict=True):
                if ok is not None:
                    self.record(decision, ok)
            return got

        return answers

    def record(self, decision: Decision, applied: bool) -> None:
        """Keep a decision a driver applied itself in the transition log."""
        self.log.record(decision, ("applied" if applied else "failed") if decision.writes else "noted")

    # --- the door ----------------------------------------------------------------------------------------

    def observe(
        self, old: Workload | None, new: Workload | None, now: datetime, *, retry_from: datetime | None = None
    ) -> None:
        """One observed Workload change (``old`` None: created; ``new`` None: deleted)."""
        route_workload_change(
            old,
            new,
            cache=self.cache,
            queues=self.queues,
            issued_evictions=self.issued_evictions,
            options=self.options,
            now=now,
            retry_from=retry_from,
        )
        if self.queues.afs.enabled:
            _reconcile_afs_penalties(old, new, self.cache, self.queues, seconds(now))

    def cycle(self, now: datetime) -> CycleResult:
        """One scheduling cycle; its decisions are applied as they are taken and returned in order."""
        return self.scheduler.schedule(now)

    def requeue_due(self, now: datetime) -> None:
        """Move every workload whose batched retry or backoff is due back into its queue.

        ``now`` is the driver's precise time: a retry is due 1 s after its change, not on a whole
        second (backoffs end on whole seconds, which a precise ``now`` reaches as a truncated one would)."""
        self.queues.process_due_requeues(seconds(now))

    def next_due(self) -> float | None:
        """When :meth:`requeue_due` next has work (epoch seconds), if ever."""
        return self.queues.next_due_time()

    def has_heads(self) -> bool:
        """Whether a :meth:`cycle` now would pop a head (upstream ``Manager.Heads`` would not block)."""
        return self.scheduler.has_heads()

    def apply_outcome(self, workload_key: str, outcome: Outcome, stimulus: str, now: datetime) -> bool:
        """Apply an outcome of :mod:`pykueue.core.workload.reconcile` (the workload controller's
        rules) as a decision caused by ``stimulus``."""
        if not outcome.writes:
            return False
        return self.decide(outcome_decision(workload_key, outcome, stimulus, now))

    def forget_admission(self, decision: Decision, now: datetime, *, deleted: bool) -> None:
        """An assumed admission (``decision.assumed``) whose write the driver applied later and saw
        fail: upstream ``Scheduler.admit``'s routine on ``applyAdmission`` failing.

        ``cache.ForgetWorkload`` (unless the reservation landed after all, e.g. a write whose answer
        was lost, which the watch then reports); then, unless the Workload is gone (``deleted``:
        "Workload not admitted because it was deleted", the delete event cleans the queues),
        ``requeueAndUpdate`` of an assumed entry: requeued with ``FailedAfterNomination``, no status
        patch (its status was never changed)."""
        self.record(decision, False)
        key = decision.workload
        latest = self.driver.get_workload(key)
        cq = self.cache.workload_cq.get(key)
        if cq is not None and (latest is None or not has_active_quota_reservation(latest)):
            self.cache.delete_workload(key)
            # The change that failed the write (a deletion, a deactivation) may already have been
            # routed while the cache still held the assumed usage; whatever it parked behind that
            # usage is retried now, as the release of that change would have (upstream's handlers
            # requeue the ClusterQueue's inadmissible workloads on such changes).
            self.queues.queue_inadmissible_workloads({cq}, seconds(now))
        if latest is not None:
            # ``Scheduler.admit``'s failure path rolls back the entry penalty pushed at assume (a
            # deleted Workload's is dropped by the delete event).
            self.queues.afs.sub_penalty(local_queue_key(latest.metadata.namespace, latest.spec.queue_name), key)
        if deleted:
            return
        info = self.queues.inflight(key)
        if info is None:  # no longer the popped head (its LocalQueue changed or it was deleted)
            return
        self.queues.requeue_workload(info, REQUEUE_REASON_FAILED_AFTER_NOMINATION, "", now, latest)

    def reconcile_local_queue_usage(self, lq: LocalQueue, now: datetime) -> tuple[dict[str, Any] | None, float | None]:
        """The Admission Fair Sharing branch of upstream ``LocalQueueReconciler.Reconcile``:
        (the ``status.fairSharing`` to write, or None to leave it; seconds until the next
        reconcile, or None). It runs only with AFS configured, for a LocalQueue that is not stopped
        and whose ClusterQueue exists and is active (the earlier returns of ``Reconcile``); a
        sample re-sorts the ClusterQueue's heap (``RebuildClusterQueue``)."""
        afs = self.queues.afs
        if not afs.enabled or is_stopped(lq):
            return None, None
        cq = self.cache.cluster_queues.get(lq.spec.cluster_queue)
        if cq is None or not cq.is_active():
            return None, None
        key = local_queue_key(lq.metadata.namespace, lq.metadata.name)
        admitted = self.cache.local_queue_admitted_usage(cq.name, key)
        sample = afs.sample(key, admission_fair_sharing_status(lq), admitted, seconds(now))
        if sample.consumed_resources is None:
            return None, sample.requeue_after
        self.queues.rebuild_heap(cq.name)
        return fair_sharing_status(lq, sample), sample.requeue_after

    def story(self, workload_key: str) -> list[Transition]:
        """The recent decisions about ``workload_key`` (``namespace/name``), oldest first."""
        return self.log.story(workload_key)
