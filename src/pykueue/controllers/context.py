"""ReconcileContext: everything a reconciler may use, and nothing else (never the manager).

Upstream builds each reconciler from narrow dependencies (``NewWorkloadReconciler(client, queues,
cache, recorder, options...)`` in ``pkg/controller/core/workload_controller.go``); this is that set
for pykueue's reconcilers, built once by the manager:

* ``client``: the API; writes go through :meth:`ReconcileContext.write`, which applies the
  server's answer to the cluster cache at once (write-through);
* ``cluster``: the :class:`~pykueue.controllers.cluster_cache.ClusterCache` (objects as last seen);
* ``core``: the scheduling core's one door (its transition log keeps the reconcilers' decisions);
* ``cache`` and ``queues``: the core's cache and queue manager;
* ``recorder``, ``clock`` and ``work``: the runtime's event recorder, clock and work queue.

It also carries what the manager, as the core's driver, delegates to it (reads, decisions' writes, events).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pykueue.api.conversion import to_external
from pykueue.api.kueue import AdmissionCheck, ClusterQueue, Cohort, LocalQueue, ResourceFlavor, Workload
from pykueue.api.limitrange import Summary
from pykueue.api.meta import to_time
from pykueue.client import resources as R
from pykueue.client.interface import APIError, Client, Conflict, NotFound, Resource
from pykueue.controllers.cluster_cache import (
    CLUSTER_QUEUE,
    COHORT,
    LOCAL_QUEUE,
    WORKLOAD,
    ClusterCache,
    WorkKey,
)
from pykueue.core.cache.cache import Cache
from pykueue.core.decision import Decision, timer_stimulus, watch_stimulus
from pykueue.core.events import Event
from pykueue.core.options import SchedulerOptions
from pykueue.core.queue import QueueManager
from pykueue.core.state import KueueCore
from pykueue.core.workload.info import WorkloadInfo, has_quota_reservation, workload_key
from pykueue.metrics.recorder import ControllerMetrics
from pykueue.runtime.clock import Clock
from pykueue.runtime.controller import WorkQueue
from pykueue.runtime.informer import ObjectKey
from pykueue.runtime.recorder import EventRecorder, object_reference
from pykueue.runtime.writes import NotStarted, WritePipeline

if TYPE_CHECKING:
    from pykueue.controllers.options import ControllerOptions

log = logging.getLogger(__name__)

PARALLEL_PREEMPTIONS = 8
"""Victims' evictions written at once (upstream ``pkg/scheduler/preemption/preemption.go`` ``parallelPreemptions``)."""

HOLD_BACK_FOR_VICTIMS_SECONDS = 0.25
"""How long cycles are held back at most while only writes of Workloads holding quota (possible
victims) are in flight (see :meth:`ReconcileContext.writes_before_cycle_in_flight`)."""

QUEUE_STATUS_RETRY_SECONDS = 1.0
"""A queue status write that found no free write slot is retried after ``UpdatesBatchPeriod``."""

LOOSE_WRITE_RETRIES = 3
"""How many times a scheduler's status write is sent again after a Conflict that left the status
alone (see :meth:`ReconcileContext._status_sender`); upstream's ``WithRetryOnConflict`` retries
with client-go's ``retry.DefaultRetry`` (5 steps)."""


@dataclass
class ReconcileContext:
    """The reconcilers' only dependency; see the module docstring."""

    client: Client
    cluster: ClusterCache
    core: KueueCore
    cache: Cache
    queues: QueueManager
    options: ControllerOptions
    recorder: EventRecorder
    clock: Clock
    work: WorkQueue[WorkKey]
    metrics: ControllerMetrics | None = None
    writes: WritePipeline[dict[str, Any]] | None = None
    """Where assumed decisions are sent off the manager thread (None: every write is synchronous)."""
    _deferred: dict[tuple[str, str, str], set[WorkKey]] = field(default_factory=dict)
    _cycle_statuses: list[Decision] | None = None
    """While a scheduling cycle runs (:meth:`cycle_status_writes`): its heads' status writes."""
    _held_for_holders_since: float | None = None
    """Since when (monotonic) cycles are held back only for writes of Workloads holding quota."""
    _sent_ahead: set[tuple[str, str, str]] = field(default_factory=set)
    """Workloads whose status write was sent without waiting for its answer (a reconciler's, or a
    cycle's pending head's); see :meth:`writes_before_cycle_in_flight`."""

    # --- time and requeues ---------------------------------------------------------------------------

    def now(self) -> datetime:
        """The controllers' current time."""
        return to_time(self.clock())

    def requeue_after(self, kind: str, key: Hashable, seconds: float) -> None:
        """Reconcile ``key`` of ``kind`` again after ``seconds`` (the earliest request wins)."""
        self.cluster.requeue_after(kind, key, seconds)

    # --- reads (the cluster cache) -------------------------------------------------------------------

    @property
    def sched_options(self) -> SchedulerOptions:
        """The scheduling core's options."""
        return self.options.scheduler

    @property
    def workloads(self) -> dict[str, Workload]:
        return self.cluster.workloads

    @property
    def local_queues(self) -> dict[str, LocalQueue]:
        return self.cluster.local_queues

    @property
    def cluster_queues(self) -> dict[str, ClusterQueue]:
        return self.cluster.cluster_queues

    @property
    def cohorts(self) -> dict[str, Cohort]:
        return self.cluster.cohorts

    @property
    def flavors(self) -> dict[str, ResourceFlavor]:
        return self.cluster.flavors

    @property
    def admission_checks(self) -> dict[str, AdmissionCheck]:
        return self.cluster.admission_checks

    @property
    def raw(self) -> dict[str, dict[ObjectKey, dict[str, Any]]]:
        return self.cluster.raw

    @property
    def workloads_of_owner(self) -> dict[tuple[str, str, str, str], set[str]]:
        return self.cluster.workloads_of_owner

    @property
    def namespace_label_map(self) -> dict[str, dict[str, str]]:
        return self.cluster.namespace_label_map

    def cluster_queue_of(self, wl: Workload) -> str | None:
        """The admission's ClusterQueue, else the LocalQueue's."""
        return self.cluster.cluster_queue_of(wl)

    def namespace_labels(self, namespace: str) -> dict[str, str] | None:
        """Labels of a namespace (None if it does not exist)."""
        return self.cluster.namespace_labels(namespace)

    def limit_range_summary(self, namespace: str) -> Summary | None:
        """The summary of the namespace's LimitRanges (None without any)."""
        return self.core.limit_range_summary(namespace)

    def info(self, wl: Workload) -> WorkloadInfo:
        """The core's view of a workload (reusing the cached one when the spec is unchanged)."""
        return self.cluster.info(wl)

    def get_workload(self, key: str) -> Workload | None:
        """The cached Workload ``namespace/name`` (the scheduler's port)."""
        return self.cluster.workloads.get(key)

    def stimulus(self, kind: str, key: str, resource_version: str | int) -> str:
        """What caused this reconcile of ``key``: its timer (``timer-<kind>/<key>``) when a delayed
        requeue came due, else the watch event of the object as observed (``watch-<rv>``)."""
        if self.work.fired_by_timer((kind, key)):
            return timer_stimulus(f"{kind}/{key}")
        return watch_stimulus(resource_version)

    # --- writes ----------------------------------------------------------------------------------------

    def write_in_flight(self, res: Resource, namespace: str, name: str) -> bool:
        """Whether a pipelined write of this object has not completed yet (see :meth:`apply`)."""
        return self.writes is not None and self.writes.busy((res.plural, namespace, name))

    def busy(self, item: WorkKey) -> bool:
        """Whether the object reconciled by ``item`` has a pipelined write in flight; the item is then
        reconciled again once that write completed (from the version it wrote)."""
        obj = _written_object(item)
        if obj is None or self.writes is None or not self.writes.busy(obj):
            return False
        self._deferred.setdefault(obj, set()).add(item)
        return True

    def sent_ahead(self, item: WorkKey) -> bool:
        """Whether a status write sent ahead (:meth:`write_workload_status_ahead`) is in flight for
        the object ``item`` reconciles: its completion, not the reconcile's return, tells whether
        the reconcile succeeded."""
        obj = _written_object(item)
        return obj is not None and obj in self._sent_ahead

    def write_status_pipelined(
        self, res: Resource, typed: Any, item: WorkKey, on_written: Callable[[], None] | None = None
    ) -> None:
        """A status write off the manager thread, for a status the reconciler ``item`` recomputes
        from the caches (queue and cohort status): nothing waits for it. Its completion writes the
        result through; a failure (a Conflict: the watch is bringing a newer version) retries
        ``item`` after its backoff, as a failed reconcile would be. ``typed`` (the object with its
        new status) is encoded only when the write is sent: most such writes found no free slot
        and were encoded for nothing (≈ 15,000 of 17,800 on bench/large-scale-20.yaml).
        ``on_written`` runs (on the manager thread) once the write succeeded, as the code after
        upstream's ``Status().Update`` does (``LocalQueueReconciler.updateAdmissionFsStatus``)."""
        if self.writes is None:
            self.write(res, to_external(typed), subresource="status")
            if on_written is not None:
                on_written()
            return
        meta = typed.metadata
        key = (res.plural, meta.namespace or "", meta.name or "")
        if self.writes.busy(key):  # the manager defers such reconciles: never two writes in flight
            raise Conflict(409, "Conflict", f"{res.plural} {key[2]}: a status write is still in flight")
        def done(out: dict[str, Any] | None, err: Exception | None) -> None:
            if err is None and out is not None:
                self._written(res, out)
                self.work.forget(item)
                if on_written is not None:
                    on_written()
            else:
                delay = self.work.add_rate_limited(item)
                if not isinstance(err, (Conflict, NotFound)):
                    log.warning("writing %s %s status: %s; retrying in %.1fs", res.plural, key[2], err, delay)
            self._resume(key)

        if not self.writes.background_slot_free(key) or not self._submit_status(
            key, res, to_external(typed), done, background=True
        ):
            # The write slots queue-status writes may use are taken: the status is recomputed
            # and written a batch period later instead of holding up the manager thread
            # (upstream's queue status reconcilers run on their own workers, never on the
            # scheduler's goroutine, and wait there for the client's rate limiter).
            self.work.add_after(item, QUEUE_STATUS_RETRY_SECONDS)

    def _submit_status(
        self,
        key: tuple[str, str, str],
        res: Resource,
        obj: dict[str, Any],
        done: Callable[[dict[str, Any] | None, Exception | None], None],
        background: bool = False,
        loose_base: Workload | None = None,
    ) -> bool:
        """Pipeline a status PUT: a coroutine on the HTTP client's event loop when it has one (the
        pipeline runs on that loop), else the blocking verb on the pipeline's worker threads.
        ``background``: a write nothing waits for, sent only if a background slot is free (see
        :meth:`WritePipeline.try_submit_async`); returns whether it was sent. ``loose_base``: the
        scheduler's write, loose against concurrent changes of anything but the status (see
        :meth:`_status_sender`)."""
        assert self.writes is not None
        send = self._status_sender(res, obj, loose_base)
        if background:
            return self.writes.try_submit_async(key, send, done)
        self.writes.submit_async(key, send, done)
        return True

    def _status_sender(
        self, res: Resource, obj: dict[str, Any], base: Workload | None = None
    ) -> Callable[[], Awaitable[dict[str, Any]]]:
        """A status PUT as a coroutine factory: on the HTTP client's event loop when it has one
        (the pipeline runs on that loop), else the blocking verb on the pipeline's worker threads.

        ``base``: the Workload the scheduler computed this status from. Its write is then *loose*,
        as upstream's scheduler writes (``admit``, ``requeueAndUpdate`` and the preemptions use
        ``WithLooseOnApply`` and ``WithRetryOnConflict``: a server-side apply without a
        resourceVersion, so a concurrent change of the labels or the spec does not stop an
        admission; ``TestSchedulerWhenWorkloadModifiedConcurrently``). On a Conflict the latest
        object is read; while its status is still the one the decision was computed from, the same
        status is sent again on that version (what the apply would have set). A status that moved
        meanwhile keeps the Conflict: the decision is forgotten and made again from the new one."""
        assert self.writes is not None
        client = self.client
        replace_async = getattr(client, "replace_async", None)
        if replace_async is not None and getattr(client, "io", None) is self.writes.io:
            if base is None:

                def send_async() -> Awaitable[dict[str, Any]]:
                    return replace_async(res, obj, subresource="status")  # type: ignore[no-any-return]

                return send_async
            request_async = client.request_async  # type: ignore[attr-defined]

            async def send_loose_async() -> dict[str, Any]:
                body = obj
                for attempt in range(LOOSE_WRITE_RETRIES + 1):
                    try:
                        return await replace_async(res, body, subresource="status")  # type: ignore[no-any-return]
                    except Conflict:
                        if attempt == LOOSE_WRITE_RETRIES:
                            raise
                        md = body.get("metadata") or {}
                        latest = await request_async("GET", res.path(md.get("namespace"), md.get("name")))
                        body = _loose_retry(body, latest, base)
                raise AssertionError("unreachable")

            return send_loose_async

        def send() -> dict[str, Any]:
            body = obj
            for attempt in range(LOOSE_WRITE_RETRIES + 1):
                try:
                    return client.replace(res, body, subresource="status")
                except Conflict:
                    if base is None or attempt == LOOSE_WRITE_RETRIES:
                        raise
                    md = body.get("metadata") or {}
                    latest = client.get(res, md.get("name") or "", md.get("namespace"))
                    body = _loose_retry(body, latest, base)
            raise AssertionError("unreachable")

        return self.writes.threaded(send)

    def _resume(self, obj: tuple[str, str, str]) -> None:
        for item in self._deferred.pop(obj, ()):
            self.work.add(item)

    def write(self, res: Resource, obj: dict[str, Any], subresource: str | None = None) -> dict[str, Any]:
        """PUT with the cached resourceVersion; applies the result at once.

        An object with a pipelined write in flight gets a Conflict without a request: this write was
        computed from the version that write replaces, so the server would refuse it too (or,
        were that write to fail, the change it raced with is on its way); its completion queues the
        object's reconcilers again."""
        meta = obj.get("metadata") or {}
        if self.write_in_flight(res, meta.get("namespace") or "", meta.get("name") or ""):
            raise Conflict(
                409,
                "Conflict",
                f"Operation cannot be fulfilled on {res.plural} \"{meta.get('name')}\": "
                "a write of this object is still in flight",
            )
        out = self.client.replace(res, obj, subresource=subresource)
        self._written(res, out)
        return out

    def _written(self, res: Resource, out: dict[str, Any], base: Workload | None = None) -> None:
        """Apply our successful write's result to the cluster cache (write-through) and the metrics
        (``base``: the Workload the write was computed from, when the cache may be past it)."""
        if res.plural != "workloads":
            self.cluster.observe_write(res, out)
            return
        meta = out.get("metadata") or {}
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        before = base if base is not None else self.cluster.workloads.get(key)
        self.cluster.observe_write(res, out)
        after = self.cluster.workloads.get(key)
        if after is not None and self.metrics is not None:
            self.metrics.workload_written(before, after)

    def write_workload(self, wl: Workload, status: bool = True) -> bool:
        """Write a typed Workload (its status, or the whole object); False on conflict/absence."""
        try:
            self.write(R.WORKLOADS, to_external(wl), subresource="status" if status else None)
        except (Conflict, NotFound):
            return False
        return True

    def write_workload_status_ahead(self, wl: Workload, done: Callable[[bool], None]) -> None:
        """A reconciler's status write of a Workload, sent without waiting for its answer: upstream's
        workload reconciler patches on its own worker, never holding up the scheduler's goroutine.
        ``done(written)`` runs on the manager thread once it landed (written through) or failed, as
        the synchronous :meth:`write_workload` would have returned. Until then the Workload's
        reconciles wait (:meth:`busy`) and the next scheduling cycle waits for it only if it may
        decide about this Workload again (:meth:`writes_before_cycle_in_flight`). A failure other
        than a Conflict or a NotFound retries the Workload's reconcile after its backoff, as a
        reconcile that raised it would be."""
        md = wl.metadata
        key = (R.WORKLOADS.plural, md.namespace or "", md.name or "")
        if self.writes is None:
            written = self.write_workload(wl)
            done(written)
            return
        if self.writes.busy(key):  # as :meth:`write`: a Conflict without a request
            done(False)
            return
        wl_key = f"{key[1]}/{key[2]}"
        item: WorkKey = (WORKLOAD, wl_key)
        # The version the status was computed from: the watch may bring the written version before
        # this answer, and the metrics count the transition from this one (as an admission's).
        base = self.cluster.workloads.get(wl_key)

        def landed(out: dict[str, Any] | None, err: Exception | None) -> None:
            self._sent_ahead.discard(key)
            backoff = False
            try:
                if err is None and out is not None:
                    self._written(R.WORKLOADS, out, base)
                    # The reconcile succeeded only now (its failures are kept while the write is
                    # in flight, see ``ControllerManager._reconcile``).
                    self.work.forget(item)
                    done(True)
                    return
                if not isinstance(err, (Conflict, NotFound)):
                    backoff = True
                    delay = self.work.add_rate_limited(item)
                    log.warning("writing workload %s status: %s; retrying in %.1fs", wl_key, err, delay)
                done(False)
            finally:
                # Reconciles of this Workload (and of its Job, whose writes of it found it busy)
                # waited for the write: run them now; after a server error the Workload's own
                # waits for its backoff (queued now, it would supersede the delayed retry).
                self.cluster.mark_workload(wl_key, itself=not backoff)
                self._resume(key)

        self._sent_ahead.add(key)
        self._submit_status(key, R.WORKLOADS, to_external(wl), landed)

    def writes_before_cycle_in_flight(self) -> bool:
        """Whether a status write sent ahead (:meth:`write_workload_status_ahead`, a previous cycle's
        pending head) is still in flight for a Workload the next cycle may decide about: the next
        head of a ClusterQueue, or one holding quota (a possible victim). The manager then holds
        the cycle back (not its thread) until the answers are written through. Upstream's
        scheduler decides from an informer cache its own and the reconcilers' patches have
        reached; a decision about a Workload whose write is in flight would be computed from the
        version that write replaces. For possible victims alone the hold-back is bounded
        (:data:`HOLD_BACK_FOR_VICTIMS_SECONDS`)."""
        if self.writes is None or not self._sent_ahead:
            self._held_for_holders_since = None
            return False
        holders = False
        for key in self._sent_ahead:
            if not self.writes.busy(key):
                continue
            wl_key = f"{key[1]}/{key[2]}"
            if self.queues.is_next_head(wl_key):
                return True
            wl = self.cluster.workloads.get(wl_key)
            # Holding quota by the QuotaReserved condition: a reservation released by another
            # manager's apply (upstream's scheduler-perf runner) leaves ``status.admission``, which
            # it does not own.
            holders = holders or (wl is not None and has_quota_reservation(wl))
        if not holders:
            self._held_for_holders_since = None
            return False
        # Only possible victims are in flight: hold back for a bounded time. Upstream's scheduler
        # never waits for the reconcilers' patches, so a steady stream of them (admission-check
        # states of reserved workloads) must not starve the cycles; past the bound an eviction
        # of a victim still in flight is refused (``_start_statuses``), as before these writes
        # were sent ahead, and the preemptor tries again.
        now = time.monotonic()
        if self._held_for_holders_since is None:
            self._held_for_holders_since = now
        return now - self._held_for_holders_since < HOLD_BACK_FOR_VICTIMS_SECONDS

    def write_workload_status(self, wl: Workload) -> bool:
        """The scheduler's status writes (reservation, admission, preemption)."""
        try:
            return self.write_workload(wl)
        except APIError as err:
            log.warning("writing workload %s status: %s", workload_key(wl), err)
            return False

    def apply(self, decision: Decision) -> bool:
        """Apply a core decision: write through (its status, or its spec with a plain update), then
        record its events once the write landed.

        An assumed decision (the scheduler's admission) is pipelined when :attr:`writes` is set:
        sent on a worker while the manager goes on, as upstream's ``admit`` does in a goroutine;
        its completion writes it through and records its events, or has the core forget it."""
        if decision.assumed and decision.status is not None and self.writes is not None:
            return self._apply_pipelined(decision, decision.status)
        batch = self._cycle_statuses
        if (
            batch is not None
            and decision.status is not None
            and decision.spec is None
            and decision.status.status.admission is None  # a head's; never a victim's eviction
        ):
            if any(d.workload == decision.workload for d in batch):
                # A second write of one object in a cycle waits for the first, as it would have.
                self._write_cycle_statuses(batch)
                batch.clear()
            batch.append(decision)
            return True
        if decision.spec is not None:
            written = self.write_workload(decision.spec, status=False)
        elif decision.status is not None:
            written = self.write_workload_status(decision.status)
        else:
            written = True
        if written or decision.events_if_unwritten:
            for event in decision.events:
                self.record_event(event)
        return written

    @contextmanager
    def cycle_status_writes(self) -> Iterator[None]:
        """Around a scheduling cycle: the status writes of its heads that stay pending (upstream
        ``requeueAndUpdate``: the QuotaReserved=False condition and the requests) are sent
        together when the cycle ends, and the manager goes on without waiting for their answers
        (:meth:`_send_cycle_statuses`); the next cycle waits for those of the Workloads it may
        decide about again (:meth:`writes_before_cycle_in_flight`), as upstream's next cycle starts
        after its synchronous patches.

        Upstream patches each on the scheduler's goroutine, one after another, in milliseconds;
        here a round trip took 65-300 ms, and a cycle of Kueue's large-scale benchmark pops one
        head from each of 1,000 ClusterQueues: hundreds of such writes made one cycle last tens of
        seconds with nothing admitted (bench/RESULTS.md, issue 14/16, branch lsthru). Nothing in
        the rest of the cycle reads them: each is about its own head, which the cycle visits once.
        Waiting for them at the cycle's end still held the manager thread 18 % of the baseline's
        first seconds, with the runner's Finished and cleared evictions queued behind
        (bench/RESULTS.md, issue 16, fifteenth session)."""
        if self.writes is None or self._cycle_statuses is not None:
            yield
            return
        self._cycle_statuses = []
        try:
            yield
        finally:
            batch, self._cycle_statuses = self._cycle_statuses, None
            if batch:
                self._send_cycle_statuses(batch)

    def _send_cycle_statuses(self, batch: list[Decision]) -> None:
        """The pending heads' status writes at the cycle's end, sent without waiting: nothing the
        manager does next reads their answers, and the next cycle waits for the one of a Workload
        it may decide about again (:meth:`writes_before_cycle_in_flight`). Each completion is what
        :meth:`_write_cycle_statuses` made of its answer."""
        assert self.writes is not None
        for decision in batch:
            assert decision.status is not None
            md = decision.status.metadata
            key = (R.WORKLOADS.plural, md.namespace, md.name)
            if self.writes.busy(key):  # a Conflict without a request, as :meth:`write` answers
                self.core.record(decision, False)
                self._record_unwritten_events(decision)
                continue
            base = self.cluster.workloads.get(decision.workload)

            def landed(
                out: dict[str, Any] | None,
                err: Exception | None,
                decision: Decision = decision,
                base: Workload | None = base,
            ) -> None:
                md = decision.status.metadata  # type: ignore[union-attr]
                key = (R.WORKLOADS.plural, md.namespace, md.name)
                self._sent_ahead.discard(key)
                try:
                    if err is None and out is not None:
                        self._written(R.WORKLOADS, out, base)
                        for event in decision.events:
                            self.record_event(event)
                        return
                    if not isinstance(err, (Conflict, NotFound)):
                        log.warning("writing workload %s status: %s", decision.workload, err)
                    # The trail said "applied" when it was sent; the write did not land.
                    self.core.record(decision, False)
                    self._record_unwritten_events(decision)
                finally:
                    self.cluster.mark_workload(decision.workload)
                    self._resume(key)

            self._sent_ahead.add(key)
            self._submit_status(key, R.WORKLOADS, to_external(decision.status), landed, loose_base=base)

    def _write_cycle_statuses(self, batch: list[Decision]) -> None:
        assert self.writes is not None  # as many at once as the pipeline's writes
        for decision, ok in zip(batch, self._write_statuses(batch, self.writes.max_in_flight), strict=True):
            if not ok:  # the trail said "applied" when it was sent; the write did not land
                self.core.record(decision, False)

    def send_all(self, decisions: list[Decision]) -> Callable[[], list[bool | None]]:
        """Apply independent status decisions about different workloads together; the returned
        call waits for all of them and says, in order, what :meth:`apply` would have made of each,
        or None for one never sent. A cycle sends each preemptor's evictions
        (``PARALLEL_PREEMPTIONS`` at a time, as upstream's ``IssuePreemptions``) and goes on to
        its next entries while they are on their way, and counts them before any entry's status
        is written (``KueueCore.send_all``). Waiting for each preemptor in turn made one cycle of
        the baseline's first large arrivals last 1.3 s, 15 preemptors × one or two round trips
        (bench/RESULTS.md, issue 16, fourteenth session).

        As upstream's ``workqueue.ParallelizeUntil`` with the context a failed eviction cancels
        (``errCh.SendErrorWithCancel``), an eviction whose turn comes after one has failed is not
        sent (None). Unlike upstream, the evictions already on their way are not aborted: a
        request cancelled in flight may or may not have reached the API server, and upstream then
        counts it failed with no event either way."""
        if self.writes is None or any(
            d.assumed or d.spec is not None or d.status is None for d in decisions
        ):
            oks: list[bool | None] = [self.apply(d) for d in decisions]
            return lambda: oks
        return self._start_statuses(decisions, PARALLEL_PREEMPTIONS, stop_on_error=True)

    def _write_statuses(self, decisions: list[Decision], limit: int) -> list[bool]:
        """Write the status decisions about different workloads, at most ``limit`` at a time, and
        wait for all; each is then what :meth:`apply` would have made of it (written through, its
        events recorded), in order."""
        return [ok is True for ok in self._start_statuses(decisions, limit)()]

    def _start_statuses(
        self, decisions: list[Decision], limit: int, *, stop_on_error: bool = False
    ) -> Callable[[], list[bool | None]]:
        """:meth:`_write_statuses` whose wait is the returned call (the owner's thread, once); with
        ``stop_on_error`` (:meth:`WritePipeline.start_all`) a decision not sent is None."""
        assert self.writes is not None
        sent: list[int] = []
        sends: list[tuple[Hashable, Callable[[], Awaitable[dict[str, Any]]]]] = []
        for i, decision in enumerate(decisions):
            assert decision.status is not None
            md = decision.status.metadata
            if self.write_in_flight(R.WORKLOADS, md.namespace, md.name):
                continue  # a Conflict without a request, as :meth:`write` answers
            sent.append(i)
            key = (R.WORKLOADS.plural, md.namespace, md.name)
            base = self.cluster.workloads.get(decision.workload)
            sends.append((key, self._status_sender(R.WORKLOADS, to_external(decision.status), base)))
        wait = self.writes.start_all(sends, limit, stop_on_error=stop_on_error)

        def answers() -> list[bool | None]:
            oks: list[bool | None] = [False] * len(decisions)
            for i, out in zip(sent, wait(), strict=True):
                decision = decisions[i]
                if isinstance(out, NotStarted):
                    oks[i] = None
                    continue
                if isinstance(out, Exception):
                    if isinstance(out, APIError) and not isinstance(out, (Conflict, NotFound)):
                        log.warning("writing workload %s status: %s", decision.workload, out)
                    elif not isinstance(out, APIError):
                        raise out
                    continue
                self._written(R.WORKLOADS, out)
                for event in decision.events:
                    self.record_event(event)
                oks[i] = True
            for decision, ok in zip(decisions, oks, strict=True):
                if ok is False:
                    self._record_unwritten_events(decision)
            return oks

        return answers

    def _apply_pipelined(self, decision: Decision, wl: Workload) -> bool:
        assert self.writes is not None
        key = (R.WORKLOADS.plural, wl.metadata.namespace, wl.metadata.name)
        if self.writes.busy(key):  # cannot happen for a popped head; refuse rather than reorder
            return False
        body = to_external(wl)
        base = self.cluster.workloads.get(decision.workload)
        self._submit_status(
            key,
            R.WORKLOADS,
            body,
            lambda out, err: self._admission_written(decision, base, out, err),
            loose_base=base,
        )
        return True

    def _admission_written(
        self, decision: Decision, base: Workload | None, out: dict[str, Any] | None, err: Exception | None
    ) -> None:
        """The completion of a pipelined admission (on the manager thread)."""
        key = decision.workload
        if err is None and out is not None:
            self._written(R.WORKLOADS, out, base)
            for event in decision.events:
                self.record_event(event)
        else:
            if not isinstance(err, (Conflict, NotFound)):
                log.warning("writing workload %s status: %s", key, err)
            if not isinstance(err, APIError):
                log.error("admitting workload %s failed", key, exc_info=err)
            # The precise clock: the retry of parked workloads it requests is due 1 s later.
            self.core.forget_admission(decision, self.clock(), deleted=isinstance(err, NotFound))
        # Reconciles of this Workload (and its Job) waited for the write: run them now.
        self.cluster.mark_workload(key)
        ns, _, name = key.partition("/")
        self._deferred.pop((R.WORKLOADS.plural, ns, name), None)

    # --- events ------------------------------------------------------------------------------------------

    def _record_unwritten_events(self, decision: Decision) -> None:
        """The events of a decision whose write did not land, if they are recorded all the same."""
        if decision.events_if_unwritten:
            for event in decision.events:
                self.record_event(event)

    def record_event(self, event: Event, involved: dict[str, Any] | None = None) -> None:
        """Record a core Event (off this thread: the recorder sends in batches)."""
        ref = involved or self._involved(event)
        self.recorder.record(
            ref, event.type, event.reason, event.note, action=event.reason, controller=event.controller
        )

    def _involved(self, event: Event) -> dict[str, Any]:
        kind = event.kind
        ref: dict[str, Any] = {"kind": kind, "name": event.name}
        if event.namespace:
            ref["namespace"] = event.namespace
        if kind == "Workload":
            wl = self.cluster.workloads.get(f"{event.namespace}/{event.name}")
            ref["apiVersion"] = f"{R.KUEUE}/{R.KUEUE_VERSION}"
            if wl is not None:
                ref["uid"] = wl.metadata.uid
                ref["resourceVersion"] = wl.metadata.resource_version
        elif kind == "Job":
            job = self.cluster.raw["jobs"].get((event.namespace, event.name))
            if job is not None:
                return object_reference(job, "batch/v1", "Job")
            ref["apiVersion"] = "batch/v1"
        elif kind == "ClusterQueue":
            cq = self.cluster.cluster_queues.get(event.name)
            ref["apiVersion"] = f"{R.KUEUE}/{R.KUEUE_VERSION}"
            if cq is not None:
                ref["uid"] = cq.metadata.uid
        return ref


def _loose_retry(body: dict[str, Any], latest: dict[str, Any], base: Workload | None) -> dict[str, Any]:
    """The body of a loose status write sent again on ``latest``'s version, or the Conflict again
    when ``latest``'s status is no longer the one ``base`` (what the status was computed from)
    had: the apply would have merged into a status we have not seen.

    Upstream's apply (``PatchAdmissionStatus``: ``prepareWorkloadPatch``, field manager
    ``kueue-admission`` with ``ForceOwnership``, pkg/workload/patching/patching.go) sets the
    admission, a non-empty requeueState, resourceRequests, the admissionManagedConditions and every
    admissionChecks entry of the object the scheduler read, and removes what that manager applied
    before and omits now. Re-sending our fields over a moved status would equal that merge only
    with the managedFields history (which fields the manager owns) and the server's list order;
    a PUT has neither, so a moved status is decided again instead."""
    md = latest.get("metadata") or {}
    if base is None or latest.get("status") != to_external(base).get("status"):
        raise Conflict(
            409, "Conflict", f"workloads \"{md.get('name')}\": the status changed since it was read"
        )
    return {**body, "metadata": {**(body.get("metadata") or {}), "resourceVersion": md.get("resourceVersion")}}


def _written_object(item: WorkKey) -> tuple[str, str, str] | None:
    """The object a reconciler key writes pipelined: (plural, namespace, name), or None."""
    kind, key = item
    if not isinstance(key, str):
        return None
    if kind in (WORKLOAD, LOCAL_QUEUE):
        ns, _, name = key.partition("/")
        return (R.WORKLOADS.plural if kind == WORKLOAD else R.LOCAL_QUEUES.plural, ns, name)
    if kind == CLUSTER_QUEUE:
        return (R.CLUSTER_QUEUES.plural, "", key)
    if kind == COHORT:
        return (R.COHORTS.plural, "", key)
    return None
