"""The machinery under every admission-check controller: informers, a keyed work queue, one worker.

A :class:`ControllerRuntime` owns informers (list + watch through the
:class:`~pykueue.client.interface.Client`, see :mod:`pykueue.runtime.informer`) whose changes
are mapped to *keys* ``(kind, namespace, name)`` by handlers, and a single worker thread that
hands each key to the reconciler registered for its kind. Given ``shared`` informers (the
controller manager's), it watches those collections through them instead of opening watches of
its own (:class:`~pykueue.runtime.informer.InformerView`). As in controller-runtime:

* a key queued several times before it is processed is processed once;
* a key re-queued while it is being processed is processed again afterwards, never concurrently;
* a reconciler returns the seconds after which it wants to see the key again (or None);
* a reconciler that raises is retried alone with a per-key exponential backoff (0.5 s doubling
  up to 30 s; client-go's ``ItemExponentialFailureRateLimiter`` behind ``AddRateLimited``/``Forget``);
  nothing else queued with it is lost.

Delays are measured on the injected :data:`~pykueue.runtime.clock.Clock`, never on wall time,
so a test (or ``--time-offset-file``) that moves the clock makes due work run at once; the worker
re-reads the clock every ``poll_interval`` real seconds while it waits.

:func:`update_status` is the status write every controller here uses: a read-modify-write of the
full object with its resourceVersion as precondition, recomputed on a fresh read after a Conflict.
"""

from __future__ import annotations

import copy
import heapq
import itertools
import logging
import threading
from collections import deque
from collections.abc import Callable, Hashable, Mapping
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from pykueue.client.interface import Client, Conflict, NotFound, Resource
from pykueue.runtime.clock import Clock, system_clock
from pykueue.runtime.informer import Change, Informer, InformerView, Transform

log = logging.getLogger(__name__)

Key = tuple[str, str, str]
"""(kind, namespace, name); namespace is "" for cluster-scoped objects."""

K = TypeVar("K", bound=Hashable)

Reconciler = Callable[[str, str], float | None]
"""``reconcile(namespace, name) -> seconds until the key should be reconciled again, or None``."""

Handler = Callable[[Change], None]

_ERROR_BACKOFF_BASE = 0.5
_ERROR_BACKOFF_MAX = 30.0
STATUS_WRITE_ATTEMPTS = 8


class WorkQueue(Generic[K]):
    """A de-duplicating queue of keys with delayed adds and per-key failure backoff on a :data:`Clock`.

    client-go's ``workqueue`` semantics: a key added several times before it is taken is taken
    once; a key added while it is being processed is queued again when :meth:`done`; a key that
    failed is re-added with :meth:`add_rate_limited` after ``base * 2**(failures-1)`` seconds
    (capped at ``max_backoff``) until :meth:`forget` clears its failures.
    """

    def __init__(
        self,
        clock: Clock = system_clock,
        poll_interval: float = 0.2,
        *,
        base_backoff: float = _ERROR_BACKOFF_BASE,
        max_backoff: float = _ERROR_BACKOFF_MAX,
    ) -> None:
        self.clock = clock
        self.poll_interval = poll_interval
        self.base_backoff = base_backoff
        self.max_backoff = max_backoff
        self._cond = threading.Condition()
        self._ready: deque[K] = deque()
        self._queued: set[K] = set()
        self._processing: set[K] = set()
        self._dirty: set[K] = set()
        self._delayed: dict[K, datetime] = {}
        # Due times in order (lazily pruned: an entry counts only while it matches ``_delayed``), so
        # finding the due keys does not scan every delayed key on every call.
        self._due: list[tuple[datetime, int, K]] = []
        self._seq = itertools.count()
        # Keys whose latest add was a delayed add coming due (not a direct add): the reconcile was
        # caused by a timer (``fired_by_timer``), which the decision trail names as its stimulus.
        self._timer_fired: set[K] = set()
        self._failures: dict[K, int] = {}
        self._shutdown = False

    def add(self, key: K) -> None:
        """Queue ``key`` now (a pending delayed add of the same key is superseded)."""
        with self._cond:
            self._delayed.pop(key, None)
            self._timer_fired.discard(key)
            self._add_locked(key)

    def add_after(self, key: K, seconds: float) -> None:
        """Queue ``key`` once ``seconds`` have passed on the clock (the earliest due time wins)."""
        if seconds <= 0:
            self.add(key)
            return
        due = self.clock() + timedelta(seconds=seconds)
        with self._cond:
            if key in self._queued:
                return
            current = self._delayed.get(key)
            if current is None or due < current:
                self._delayed[key] = due
                heapq.heappush(self._due, (due, next(self._seq), key))
                # Only a new or earlier due time is news to a waiter: the manager asks for the
                # same queue status refresh for nearly every Workload change it applies.
                self._cond.notify()

    def add_rate_limited(self, key: K) -> float:
        """Re-queue a key whose processing failed, after its backoff; returns the delay."""
        with self._cond:
            failures = self._failures.get(key, 0) + 1
            self._failures[key] = failures
        delay: float = min(self.base_backoff * 2.0 ** (failures - 1), self.max_backoff)
        self.add_after(key, delay)
        return delay

    def cancel_delayed(self, key: K) -> None:
        """Drop a pending delayed add of ``key`` (its reconcile is about to decide anew)."""
        with self._cond:
            self._delayed.pop(key, None)

    def wait(self, timeout: float) -> None:
        """Block until a key is ready, the queue shuts down, or ``timeout`` real seconds pass."""
        with self._cond:
            self._promote_due_locked()
            if not self._ready and not self._shutdown:
                self._cond.wait(timeout)

    def forget(self, key: K) -> None:
        """The key was processed successfully: its next failure starts the backoff afresh."""
        with self._cond:
            self._failures.pop(key, None)

    def _add_locked(self, key: K) -> None:
        if key in self._processing:
            self._dirty.add(key)
            return
        if key not in self._queued:
            self._queued.add(key)
            self._ready.append(key)
            self._cond.notify()

    def _promote_due_locked(self) -> None:
        if not self._delayed:
            self._due.clear()
            return
        now = self.clock()
        heap = self._due
        while heap and heap[0][0] <= now:
            due, _, key = heapq.heappop(heap)
            if self._delayed.get(key) == due:
                del self._delayed[key]
                self._timer_fired.add(key)
                self._add_locked(key)

    def get(self) -> K | None:
        """The next ready key (blocking); None once the queue is shut down."""
        with self._cond:
            while True:
                if self._shutdown:
                    return None
                self._promote_due_locked()
                if self._ready:
                    key = self._ready.popleft()
                    self._queued.discard(key)
                    self._processing.add(key)
                    return key
                self._cond.wait(self.poll_interval if self._delayed else None)

    def take_ready(self) -> list[K]:
        """Every key ready now, without blocking (each must be :meth:`done`); for a loop that
        processes batches on its own thread."""
        with self._cond:
            self._promote_due_locked()
            keys = list(self._ready)
            self._ready.clear()
            self._queued.difference_update(keys)
            self._processing.update(keys)
            return keys

    def done(self, key: K) -> None:
        """Mark ``key`` processed; re-queue it when it was added meanwhile."""
        with self._cond:
            self._processing.discard(key)
            if key not in self._dirty:
                self._timer_fired.discard(key)
            if key in self._dirty:
                self._dirty.discard(key)
                self._add_locked(key)

    def fired_by_timer(self, key: K) -> bool:
        """Whether ``key`` (being processed) was queued by a delayed add coming due rather than by a
        direct add (a watch event, a write)."""
        with self._cond:
            return key in self._timer_fired

    def pending(self, key: K) -> bool:
        """Whether ``key`` is queued, delayed or was added again while being processed."""
        with self._cond:
            return key in self._queued or key in self._dirty or key in self._delayed

    def has_ready(self) -> bool:
        """Whether a key is ready or was added during processing (due delayed keys count)."""
        with self._cond:
            self._promote_due_locked()
            return bool(self._ready or self._dirty)

    def next_due_seconds(self) -> float | None:
        """Clock seconds until the earliest delayed key is due (None when nothing is delayed)."""
        with self._cond:
            heap = self._due
            while heap and self._delayed.get(heap[0][2]) != heap[0][0]:
                heapq.heappop(heap)  # superseded or cancelled
            if not heap:
                return None
            return (heap[0][0] - self.clock()).total_seconds()

    def shut_down(self) -> None:
        """Wake every waiter; ``get`` returns None from now on."""
        with self._cond:
            self._shutdown = True
            self._cond.notify_all()

    def shutting_down(self) -> bool:
        """Whether :meth:`shut_down` was called."""
        with self._cond:
            return self._shutdown

    def idle(self) -> bool:
        """Nothing ready or in progress (delayed keys may remain)."""
        with self._cond:
            return not self._ready and not self._processing and not self._dirty

    def delayed(self) -> dict[K, datetime]:
        """A snapshot of the delayed keys and their due times (for diagnostics and tests)."""
        with self._cond:
            return dict(self._delayed)


class ControllerRuntime:
    """Informers + a :class:`WorkQueue` + one worker thread calling per-kind reconcilers."""

    def __init__(
        self,
        client: Client,
        *,
        name: str,
        clock: Clock = system_clock,
        poll_interval: float = 0.2,
        shared: Mapping[Resource, Informer] | None = None,
    ) -> None:
        self.client = client
        self.name = name
        self.clock = clock
        self.queue: WorkQueue[Key] = WorkQueue(clock, poll_interval)
        # Informers of another owner (the controller manager's), one per collection it watches in
        # the whole cluster: this runtime's watches of those collections go through them.
        self.shared: Mapping[Resource, Informer] = shared or {}
        self._informers: list[Informer | InformerView] = []
        self._reconcilers: dict[str, Reconciler] = {}
        self._thread: threading.Thread | None = None
        self._started = False

    # -- wiring (before start) --------------------------------------------------------------------

    def informer(
        self, resource: Resource, handler: Handler, namespace: str | None = None, transform: Transform | None = None
    ) -> Informer | InformerView:
        """Watch ``resource``; ``handler`` runs in the informer's thread for each change and
        should only read caches and :meth:`enqueue` keys. ``transform`` is applied to every object
        before it is cached (client-go's ``SetTransform``). A collection watched cluster-wide by
        a ``shared`` informer is read through it (a view with its own cache), not watched again."""

        def sink(change: Change) -> None:
            try:
                handler(change)
            except Exception:  # a bad handler must not kill the informer thread
                log.exception("%s: handler for %s failed", self.name, resource.plural)

        owner = self.shared.get(resource) if namespace is None else None
        inf: Informer | InformerView
        if owner is not None:
            inf = InformerView(owner, sink, transform=transform)
        else:
            inf = Informer(self.client, resource, sink, namespace, transform=transform)
        self._informers.append(inf)
        if self._started:
            inf.start()
        return inf

    def register(self, kind: str, reconciler: Reconciler) -> None:
        """Route keys of ``kind`` to ``reconciler``."""
        self._reconcilers[kind] = reconciler

    # -- queueing (any thread) --------------------------------------------------------------------

    def enqueue(self, kind: str, namespace: str, name: str, after: float | None = None) -> None:
        """Reconcile ``(kind, namespace, name)`` now, or after ``after`` clock seconds."""
        key = (kind, namespace, name)
        if after is None or after <= 0:
            self.queue.add(key)
        else:
            self.queue.add_after(key, after)

    # -- running --------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the informers and the worker (non-blocking)."""
        if self._started:
            return
        self._started = True
        for inf in self._informers:
            inf.start()
        self._thread = threading.Thread(target=self._work, name=f"{self.name}-worker", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the worker and the informers and wait for their threads."""
        self.queue.shut_down()
        for inf in self._informers:
            inf.stop()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._started = False

    def wait_synced(self, timeout: float | None = None) -> bool:
        """Block until every informer delivered its initial list."""
        return all(inf.wait_synced(timeout) for inf in self._informers)

    def _work(self) -> None:
        # Decisions made from half-filled caches are wrong (a config not listed yet looks
        # missing), so nothing is reconciled before every informer delivered its first list.
        for inf in self._informers:
            while not inf.wait_synced(self.queue.poll_interval):
                if self.queue.shutting_down():
                    return
        while True:
            key = self.queue.get()
            if key is None:
                return
            try:
                self._process(key)
            finally:
                self.queue.done(key)

    def _process(self, key: Key) -> None:
        kind, namespace, name = key
        reconciler = self._reconcilers.get(kind)
        if reconciler is None:
            log.error("%s: no reconciler for %s", self.name, kind)
            return
        try:
            after = reconciler(namespace, name)
        except Exception:
            delay = self.queue.add_rate_limited(key)
            log.exception(
                "%s: reconciling %s %s/%s failed; retrying in %.1fs", self.name, kind, namespace, name, delay
            )
            return
        self.queue.forget(key)
        if after is not None:
            self.queue.add_after(key, after)


def update_status(
    client: Client,
    resource: Resource,
    obj: dict[str, Any],
    mutate: Callable[[dict[str, Any]], bool],
    *,
    attempts: int = STATUS_WRITE_ATTEMPTS,
) -> dict[str, Any] | None:
    """Apply ``mutate`` to a copy of ``obj`` and PUT its status with ``obj``'s resourceVersion.

    ``mutate`` edits the object in place and returns whether anything changed; nothing is written
    when it returns False. On a Conflict the object is read again and ``mutate`` runs on the fresh
    copy, so decisions are always re-applied to the latest state. Returns the object the server
    stored (or the unchanged fresh copy when there was nothing to write), None when the object is
    gone. Raises the last :class:`Conflict` after ``attempts`` tries.
    """
    current = obj
    meta = current.get("metadata") or {}
    for attempt in range(attempts):
        work = copy.deepcopy(current)
        if not mutate(work):
            return current
        try:
            return client.replace(resource, work, subresource="status")
        except NotFound:
            return None
        except Conflict:
            if attempt == attempts - 1:
                raise
            try:
                current = client.get(resource, str(meta.get("name")), meta.get("namespace") or None)
            except NotFound:
                return None
    return None  # pragma: no cover - the loop always returns or raises


class RuntimeComponent:
    """A component driven by one :class:`ControllerRuntime` in ``self.runtime``.

    The lifecycle ``pykueue serve`` and ``pykueue controller`` expect of every component:
    ``start()`` (non-blocking), ``stop()``, and ``wait_ready()`` for the initial lists.
    """

    runtime: ControllerRuntime

    def start(self) -> None:
        """Start watching and reconciling (non-blocking)."""
        self.runtime.start()

    def stop(self) -> None:
        """Stop and wait for the threads."""
        self.runtime.stop()

    def wait_synced(self, timeout: float | None = None) -> bool:
        """Block until every informer delivered its initial list."""
        return self.runtime.wait_synced(timeout)

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Same as :meth:`wait_synced` (the name the CLI's component runner looks for)."""
        return self.wait_synced(timeout)
