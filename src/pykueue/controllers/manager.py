"""The Kueue controller manager: wires the controllers to one work queue and runs one thread.

One thread owns every piece of controller state (design: docs/design/controllers.md). Informer
threads list/watch the API and push :class:`~pykueue.runtime.informer.Change` objects onto an
inbox; the manager thread applies them to the
:class:`~pykueue.controllers.cluster_cache.ClusterCache` (which routes Workload changes into the
scheduling core and queues the reconcilers' keys on the
:class:`~pykueue.runtime.controller.WorkQueue`), reconciles the keys that are ready (Jobs, then
Workloads, then flavors, checks and queues), runs a scheduling cycle, and hands events to the
:class:`~pykueue.runtime.recorder.EventRecorder`, which writes them off this thread. A key whose
reconcile fails is retried alone with a per-key backoff, as controller-runtime does. Reconcilers
get a :class:`~pykueue.controllers.context.ReconcileContext`, never the manager.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from datetime import datetime
from typing import Any, Generic, TypeVar

from pykueue.api.kueue import Workload
from pykueue.api.meta import to_time
from pykueue.client.interface import APIError, Client, Conflict, NotFound, Resource
from pykueue.controllers.cluster_cache import (
    CHECK,
    CLUSTER_QUEUE,
    COHORT,
    FLAVOR,
    JOB,
    LOCAL_QUEUE,
    PRIORITY_CLASS,
    WATCH_ORDER,
    WATCHED,
    WORKLOAD,
    ClusterCache,
    WorkKey,
    compact,
)
from pykueue.controllers.context import ReconcileContext
from pykueue.controllers.jobs.job_controller import JobController
from pykueue.controllers.options import ControllerOptions, default_options
from pykueue.controllers.queue_controllers import QueueControllers
from pykueue.controllers.workload_controller import WorkloadController
from pykueue.controllers.workloadpriorityclass_controller import WorkloadPriorityClassController
from pykueue.core.decision import Decision
from pykueue.core.state import KueueCore
from pykueue.metrics import KueueMetrics
from pykueue.metrics import for_manager as metrics_for_manager
from pykueue.runtime.clock import Clock, system_clock
from pykueue.runtime.controller import WorkQueue
from pykueue.runtime.informer import SYNCED, Change, Informer, OwnWrites
from pykueue.runtime.recorder import EVENTS_V1, EventRecorder, reporting_instance
from pykueue.runtime.writes import WritePipeline

log = logging.getLogger(__name__)

_IDLE_WAIT = 0.2
# A cycle that admitted and preempted nothing slows the loop down while heads remain, 1 ms doubling
# up to 10 ms (upstream pkg/util/wait/backoff.go UntilWithBackoff: SlowDown / KeepGoing).
_CYCLE_BACKOFF_INITIAL = 0.001
_CYCLE_BACKOFF_MAX = 0.010
_SETTLE_ROUNDS = 10
# After a step that made progress, the manager takes at most _BUSY_DRAIN_LIMIT inbox items per
# admission or preemption of that step (and the write pipeline runs at most _FINISH_BATCH
# completions per item) before its next step. Upstream's scheduler goroutine does not wait for the
# event handlers and reconcilers; here one thread does both, and serve answers admissions in
# bursts: running a whole burst of completions, watch changes and reconciles before the next cycle
# left the API server idle meanwhile and sent the next admissions in a run (bench/RESULTS.md,
# issue 14 item 5, branch ctlcpu). Bounded, cycles alternate with a few completions. Per
# admission, so that a cycle admitting many (1,000 ClusterQueues) takes as many; and never while
# more than _BUSY_BACKLOG_MAX items wait, so that a slow cycle admitting few cannot let new
# Workloads and completions pile up behind it.
_BUSY_DRAIN_LIMIT = 4
_BUSY_BACKLOG_MAX = 256
_FINISH_BATCH = 2
# Reconcile order within a batch: Jobs first (they create and finish Workloads), then Workloads,
# then the objects whose status summarises them.
_KIND_ORDER = (JOB, WORKLOAD, PRIORITY_CLASS, FLAVOR, CHECK, CLUSTER_QUEUE, LOCAL_QUEUE, COHORT)
EVENT_COMPONENT = "kueue-admission"
"""``reportingController`` of the manager's Events (upstream ``constants.AdmissionName``)."""
EVENT_INSTANCE = reporting_instance(EVENT_COMPONENT)
"""``reportingInstance``: client-go ``tools/events`` ``NewRecorder`` names it ``<controller>-<hostname>``."""
# A reconcile that raised is retried after 1 s, doubling up to 30 s (per key).
_RETRY_BASE_SECONDS = 1.0
_RETRY_MAX_SECONDS = 30.0

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
        event_client: Client | None = None,
    ) -> None:
        self.client = client
        self.options = options or default_options()
        self.sched_options = self.options.scheduler
        self.clock = clock
        self.components = list(components)
        # The core's one door; this manager is its driver (reads and decisions go through self.ctx).
        self.core = KueueCore(self.sched_options, self)
        self.cache = self.core.cache
        self.queues = self.core.queues
        self.scheduler = self.core.scheduler
        self.work: WorkQueue[WorkKey] = WorkQueue(
            clock, base_backoff=_RETRY_BASE_SECONDS, max_backoff=_RETRY_MAX_SECONDS
        )
        # ``event_client``: where Events are written (default ``client``), e.g. one with its own rate limit.
        self.recorder = EventRecorder(
            event_client or client, EVENT_COMPONENT, clock, api=EVENTS_V1, instance=EVENT_INSTANCE
        )
        self.cluster = ClusterCache(self.cache, self.queues, self.sched_options, self.work, self.recorder, clock)
        self.ctx = ReconcileContext(
            client, self.cluster, self.core, self.cache, self.queues, self.options, self.recorder, clock, self.work
        )
        # Admissions are sent off this thread, their completions come back through the inbox.
        # On the HTTP client's event-loop thread when it has one (its connections send them).
        self.writes: WritePipeline[dict[str, Any]] = WritePipeline(
            lambda fn: self._inbox.put(_Call(fn)),
            self.options.max_writes_in_flight,
            io=getattr(client, "io", None),
            finish_batch=_FINISH_BATCH,
        )
        self.ctx.writes = self.writes
        # Prometheus metrics (pkg/metrics): counted from our writes, observed changes and cycles.
        self.metrics = metrics_for_manager(self.ctx, metrics)
        self.ctx.metrics = self.metrics
        self.cluster.metrics = self.metrics
        self.cluster.core = self.core

        self.workload_controller = WorkloadController(self.ctx)
        self.queue_controllers = QueueControllers(self.ctx)
        self.job_controller = JobController(self.ctx, self.workload_controller)
        self.priority_class_controller = WorkloadPriorityClassController(self.ctx)
        self._inbox: queue.Queue[tuple[Change, datetime] | _Call[Any]] = queue.Queue()
        self._reconcilers: dict[str, Callable[[Any], None]] = {
            JOB: self.job_controller.reconcile,
            WORKLOAD: self.workload_controller.reconcile,
            PRIORITY_CLASS: self.priority_class_controller.reconcile,
            **self.queue_controllers.reconcilers(),
        }

        # ClusterCache is the only copy of the objects: the informers keep their resourceVersions only,
        # and skip the watch events of versions the cache applied from our own writes' answers.
        self.cluster.own_writes = OwnWrites()
        self.informers: dict[Resource, Informer] = {
            res: Informer(
                client, res, self._observed, transform=compact, cache_objects=False, own_writes=self.cluster.own_writes
            )
            for res in WATCHED
        }
        """The manager's informers, one per watched collection: components built on them
        (``ControllerRuntime(shared=...)``) share their watches, as controller-runtime's manager
        shares one informer per kind among all its controllers (``mgr.GetCache()``)."""
        self._unsynced = {res.plural for res in WATCHED}
        self._initial: list[Change] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        # Upstream's Kueue manager keeps its caches and queues on every replica (the event handlers
        # run everywhere; only the leader reconciles and schedules), so a follower serves the
        # visibility API and reports its gauges. ``follow()`` before ``start()`` makes this manager
        # such a follower until ``lead()``.
        self._leading = threading.Event()
        self._leading.set()
        self.cycles = 0
        self._cycle_backoff: float | None = None  # None: the last cycle made progress (KeepGoing)
        self._held_back = False
        """The last step held its cycle back for a write in flight (``ReconcileContext.writes_before_cycle_in_flight``)."""
        self._progress = 0  # admissions and preemptions of the last cycle

    # --- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Start informers, the manager thread and (when leading) the extra components."""
        for inf in self.informers.values():
            inf.start()
        self._thread = threading.Thread(target=self._run, name="kueue-manager", daemon=True)
        self._thread.start()
        if self._leading.is_set():
            for comp in self.components:
                comp.start()

    def add(self, component: Any) -> None:
        """Run ``component`` with the manager (controller-runtime's ``mgr.Add``): started when the
        manager leads, stopped with it. Before :meth:`start`; a component built on
        :attr:`informers` must be added to the manager that owns them."""
        if self._thread is not None:
            raise RuntimeError("add() must be called before start()")
        self.components.append(component)

    def follow(self) -> None:
        """Before :meth:`start`: watch and keep the caches and queues, but reconcile, schedule, write
        and run the extra components only once :meth:`lead` is called (a leader-election standby)."""
        if self._thread is not None:
            raise RuntimeError("follow() must be called before start()")
        self._leading.clear()

    def lead(self) -> None:
        """This replica won the Lease: reconcile what accumulated, then schedule as usual."""
        if self._leading.is_set():
            return
        self._leading.set()
        for comp in self.components:
            comp.start()
        # ``roleTracker.OnElected``'s ``Cache.ResyncGaugeMetrics`` (which also wakes the manager
        # thread now); the other gauges are computed at each scrape.
        self._inbox.put(_Call(lambda: self.metrics.metrics.state.resync_on_election(self.ctx)))

    @property
    def leading(self) -> bool:
        """Whether this manager reconciles and schedules (False for a standby)."""
        return self._leading.is_set()

    def stop(self, join_timeout: float = 10.0) -> None:
        """Stop everything started by :meth:`start` (and :meth:`lead`); wait up to ``join_timeout``
        seconds for the manager thread."""
        if self._leading.is_set():
            for comp in reversed(self.components):
                comp.stop()
        self._stop.set()
        for inf in self.informers.values():
            inf.stop()
        if self._thread is not None:
            self._thread.join(timeout=join_timeout)
        # The admissions in flight: wait for them and run their completions here (the manager
        # thread is gone), so the events of the writes that landed are still recorded.
        self.writes.close(timeout=5.0)
        if self._thread is not None and self._thread.is_alive():
            # Still stuck (e.g. in a write the API server does not answer): the completions touch
            # the manager thread's state (caches, queues, lock-free metrics) and must not run
            # beside it. They stay for that thread: it runs them if it gets back to its inbox
            # (a drain goes on with them) before it sees the stop; a step ends it without them.
            log.warning("the controller manager's thread did not stop; its pending completions are left to it")
            self.recorder.flush(timeout=2.0)
            return
        self._run_leftover_calls()
        while self.writes.ended():  # what the deliveries left (finish_batch)
            self.writes.finish_ended()
        self.recorder.flush(timeout=2.0)  # the events of the last pass, as Broadcaster.Shutdown does

    def _run_leftover_calls(self) -> None:
        while True:
            try:
                item = self._inbox.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, _Call):
                item.run()

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

    # --- the core's driver (pykueue.core.state.Driver): reads and writes through the context ----------

    def get_workload(self, key: str) -> Workload | None:
        """The cached Workload ``namespace/name``."""
        return self.ctx.get_workload(key)

    def namespace_labels(self, namespace: str) -> dict[str, str] | None:
        """Labels of a namespace (None if it does not exist)."""
        return self.ctx.namespace_labels(namespace)

    def apply(self, decision: Decision) -> bool:
        """Apply a core decision through the context (write-through, then its events)."""
        return self.ctx.apply(decision)

    def send_all(self, decisions: list[Decision]) -> Callable[[], list[bool | None]]:
        """Send independent decisions together and collect their answers later (a preemptor's
        victims, while the cycle goes on: ``ReconcileContext.send_all``; None: not sent)."""
        return self.ctx.send_all(decisions)

    # --- the manager thread -------------------------------------------------------------------------

    def _run(self) -> None:
        busy = False
        while not self._stop.is_set():
            try:
                if busy:
                    self._drain(0.0, limit=self._busy_drain_limit())
                else:
                    self._drain(self._wait_seconds())
                if self._unsynced:
                    continue
                if not self._leading.is_set():
                    # A standby only applies changes to its caches and queues (upstream's event
                    # handlers); its dirty keys and timers wait for the lease.
                    self.cluster.deliver_updates()
                    busy = False
                    continue
                busy = self._step()
            except Exception:  # a bug must not stop the controllers; log and go on
                log.exception("controller manager step failed")
                busy = False
                self._stop.wait(0.5)

    def _wait_seconds(self) -> float:
        """How long the manager thread may sleep when no change arrives: until the next delayed
        key, the next batched retry of parked workloads (upstream's requeuer fires on its
        delaying queue's timer, not on the next unrelated event) or, while heads wait in the
        queues after a cycle that made no progress, the scheduler's backoff."""
        if not self._leading.is_set():
            return _IDLE_WAIT
        wait = _IDLE_WAIT
        due = self.work.next_due_seconds()
        if due is not None:
            wait = min(wait, due)
        retry = self.core.next_due()
        if retry is not None:
            wait = min(wait, retry - self.clock().timestamp())
        if self._cycle_backoff is not None and not self._held_back and self.core.has_heads():
            # (A cycle held back waits for its write's answer, which wakes this thread.)
            wait = min(wait, self._cycle_backoff)
        return max(0.0, wait)

    def _busy_drain_limit(self) -> int | None:
        """How many inbox items the pass after a busy step takes (None: all); see _BUSY_DRAIN_LIMIT."""
        if self._inbox.qsize() > _BUSY_BACKLOG_MAX:
            return None
        return _BUSY_DRAIN_LIMIT * max(1, self._progress)

    def _observed(self, change: Change) -> None:
        """The informers' sink (their threads): the change with the time it arrived. Upstream's
        event handlers update the cache and request the batched retry of parked workloads on the
        informer's goroutine, so its 1 s runs from the watch event's arrival, not from when this
        thread gets to the change after a cycle."""
        self._inbox.put((change, self.clock()))

    def _drain(self, timeout: float, limit: int | None = None) -> None:
        """Apply what is in the inbox (waiting up to ``timeout`` for the first item); at most
        ``limit`` items when given, the rest stay for the next pass. Completions of ended writes
        that a delivery left (the pipeline's ``finish_batch``) come first, one batch per item:
        they ended before the inbox items behind them were handled (a preemptor's watch event must
        not find its victims' admissions still busy). They may run ahead of a watch event queued
        before the write ended; the cache's version checks make either order end the same."""
        taken = 0
        while limit is None or taken < limit:
            taken += 1
            if self.writes.ended():
                self.writes.finish_ended()
                continue
            try:
                item = self._inbox.get(timeout=timeout) if timeout > 0 and taken == 1 else self._inbox.get_nowait()
            except queue.Empty:
                return
            self._receive(item)

    def _receive(self, item: tuple[Change, datetime] | _Call[Any]) -> None:
        if isinstance(item, _Call):
            item.run()
            return
        change, seen = item
        if self._unsynced:
            if change.type == SYNCED:
                self._unsynced.discard(change.resource.plural)
            else:
                self._initial.append(change)
            if not self._unsynced:
                # Apply the initial state dependencies first (flavors before queues before workloads).
                for c in sorted(self._initial, key=lambda c: WATCH_ORDER[c.resource.plural]):
                    self.cluster.on_change(c)
                self._initial = []
                self.cluster.deliver_updates()
                self._ready.set()
            return
        if change.type != SYNCED:
            self.cluster.on_change(change, seen=seen)

    def _step(self) -> bool:
        """One pass: due requeues, ready keys, a scheduling cycle. Returns whether work remains."""
        self.core.requeue_due(self.clock())  # precise: a retry is due 1 s after its change
        self._reconcile_ready()
        if self._stop.is_set():
            return False
        self.cluster.deliver_updates()
        self._held_back = self.ctx.writes_before_cycle_in_flight()
        if self._held_back:
            # A status write sent ahead about a Workload this cycle may decide on is in flight: the
            # cycle waits for its answer (delivered through the inbox, which wakes this thread),
            # the thread does not; nor does it wake for the cycle's backoff meanwhile.
            return False
        started = time.perf_counter()
        with self.ctx.cycle_status_writes():
            result = self.core.cycle(self.now())
        self.metrics.cycle(result, time.perf_counter() - started)
        self.cycles += 1
        self._progress = len(result.admitted) + len(result.preempted)
        self.cluster.deliver_updates()
        if result.admitted or result.preempted:
            self._cycle_backoff = None
            return True
        # No progress: the next cycle comes after the backoff if heads remain (it pops the next
        # ones), or on the next change or timer.
        if result.heads:
            self._cycle_backoff = (
                _CYCLE_BACKOFF_INITIAL
                if self._cycle_backoff is None
                else min(_CYCLE_BACKOFF_MAX, 2 * self._cycle_backoff)
            )
        return self.work.has_ready()

    def _reconcile_ready(self) -> None:
        """Reconcile the ready keys, kind by kind; writes queue more keys, settled in bounded rounds."""
        for _ in range(_SETTLE_ROUNDS):
            ready = self.work.take_ready()
            if not ready:
                return
            batches: dict[str, list[Hashable]] = defaultdict(list)
            for kind, key in ready:
                batches[kind].append(key)
            for kind in _KIND_ORDER:
                for key in sorted(batches.get(kind, ()), key=str):
                    self._reconcile((kind, key))
                if kind in (JOB, WORKLOAD, PRIORITY_CLASS, COHORT):
                    self.cluster.deliver_updates()

    def _reconcile(self, item: WorkKey) -> None:
        """One key: on success its failures are forgotten; on failure it alone is retried later."""
        kind, key = item
        if self._stop.is_set():  # stopping: the rest of the batch is left (a restart lists it all again)
            self.work.done(item)
            return
        if self.ctx.busy(item):
            # Its object's write is in flight: reconcile the version it writes (its completion queues it).
            self.work.done(item)
            return
        try:
            self._reconcilers[kind](key)
        except (Conflict, NotFound):
            # A newer version is on its way through the watch (or the object is gone); the watch
            # event queues the key again.
            self.work.forget(item)
        except APIError as err:
            delay = self.work.add_rate_limited(item)
            log.warning("reconciling %s %s: %s; retrying in %.1fs", kind, key, err, delay)
        except Exception:
            delay = self.work.add_rate_limited(item)
            log.exception("reconciling %s %s failed; retrying in %.1fs", kind, key, delay)
        else:
            # A status write the reconcile sent ahead is still to answer: its completion forgets
            # the failures when it lands (``ReconcileContext.write_workload_status_ahead``); a
            # failing write's retries back off 1, 2, 4... s instead of restarting at 1 s.
            if not self.ctx.sent_ahead(item):
                self.work.forget(item)
        finally:
            self.work.done(item)
