"""Writes in flight concurrently, off the owner's thread: at most one per object, a bounded number in all.

Upstream's scheduler assumes an admission in its cache and sends the Workload's status in a
goroutine (``pkg/scheduler/scheduler.go`` ``admit`` through ``admissionRoutineWrapper``), so the
next cycle does not wait for the API server; the client's QPS limiter is what bounds how many are
in flight. :class:`WritePipeline` is that for a single-threaded owner (the controller manager): every
write in flight is a coroutine on ONE event-loop thread (:class:`pykueue.client.aio.EventLoopThread`,
the HTTP client's: :meth:`~WritePipeline.submit_async`), not a thread of its own (64 writer threads
waited for a CPU longer than they ran on a shared 2-core machine, bench/RESULTS.md issue 14 item
5); a client without async verbs (in-process) has its blocking writes run on a bounded thread pool
(:meth:`~WritePipeline.submit`). Completions are handed back to the owner through ``deliver`` (the
manager's inbox), in batches, so every piece of controller state is still touched by one thread only.

* Per-object ordering: an object with a write in flight is :meth:`~WritePipeline.busy` until the
  owner has run that write's completion; the owner sends nothing else for it meanwhile (a second
  write computed from the same cached version would only conflict).
* Bounded: submitting blocks the owner while ``max_in_flight`` requests are being sent
  (backpressure, as a goroutine blocks on client-go's rate limiter). A slot frees when the request
  ends, before its completion runs, so a waiting owner never needs to run completions in the
  middle of what it is doing.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, NamedTuple, TypeVar

from pykueue.client.aio import EventLoopThread

log = logging.getLogger(__name__)

DEFAULT_MAX_IN_FLIGHT = 64
"""Writes in flight at once by default (each holds one keep-alive connection while it is sent).
Upstream's goroutines are bounded by the client's QPS only; against kube-apiserver on a loaded
2-core machine 64 admitted 119/s where 16 admitted 87/s (bench/RESULTS.md, issue 14 item 5)."""

_T = TypeVar("_T")

Completion = Callable[[_T | None, Exception | None], None]
"""Run by the owner with the write's result, or the exception it raised."""


class NotStarted(Exception):
    """In :meth:`WritePipeline.start_all`'s results (``stop_on_error``): a write never started
    because one of the call's writes had failed before its turn."""


class _Write(NamedTuple, Generic[_T]):
    """A submitted write, from :meth:`WritePipeline._send` to its end on the loop."""

    key: Hashable
    write: Callable[[], Awaitable[_T]]
    done: Completion[_T]
    held: tuple[threading.BoundedSemaphore, ...]
    """The slots it holds, released once its completion is on its way to the owner."""


class WritePipeline(Generic[_T]):
    """See the module docstring. All methods but the loop's are for the owner's thread."""

    def __init__(
        self,
        deliver: Callable[[Callable[[], None]], None],
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        io: EventLoopThread | None = None,
        finish_batch: int | None = None,
    ) -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight: must be at least 1, got {max_in_flight}")
        if finish_batch is not None and finish_batch < 1:
            raise ValueError(f"finish_batch: must be at least 1, got {finish_batch}")
        self.max_in_flight = max_in_flight
        self.finish_batch = finish_batch
        """Completions one delivery runs at most (None: all that ended); the owner runs the rest with
        :meth:`finish_ended` before its next inbox items, so that no later change overtakes them.
        An owner that takes a bounded number of items between two steps of its own then
        alternates completions with its other work instead of running a whole burst of answers
        at once (see :class:`~pykueue.controllers.manager.ControllerManager`)."""
        self._deliver = deliver
        self._slots = threading.BoundedSemaphore(max_in_flight)
        # The share :meth:`try_submit_async` may use: the rest stays for the writes the owner waits for.
        self._background = threading.BoundedSemaphore(max(1, max_in_flight // 2))
        self.io = io or EventLoopThread("kueue-writes")
        """The loop the writes run on (the HTTP client's, so that its connections serve them)."""
        self._owns_io = io is None
        self._pool: ThreadPoolExecutor | None = None
        self._closed = False
        self._busy: set[Hashable] = set()
        # Ended writes waiting for the owner, and whether a delivery to run them is on its way: one
        # inbox item runs every completion that arrived meanwhile.
        self._ended: deque[tuple[Hashable, Completion[_T], _T | None, Exception | None]] = deque()
        self._delivery_lock = threading.Lock()
        self._delivery_pending = False
        # Writes submitted but not started yet, and whether the loop was woken to start them.
        self._queued: deque[_Write[_T]] = deque()
        self._start_lock = threading.Lock()
        self._start_pending = False
        self._tasks: set[asyncio.Future[None]] = set()
        self.submitted = 0
        """Writes submitted so far (for tests and the benchmark)."""

    def busy(self, key: Hashable) -> bool:
        """Whether ``key`` has a write in flight (or one whose completion the owner has not run)."""
        return key in self._busy

    def pending(self) -> int:
        """Writes whose completion the owner has not run yet."""
        return len(self._busy)

    def submit_async(self, key: Hashable, write: Callable[[], Awaitable[_T]], done: Completion[_T]) -> None:
        """Run the coroutine ``write()`` on the loop; the owner runs ``done`` once it ended.
        ``key`` must not be busy."""
        self._check(key)
        self._slots.acquire()
        self._send(_Write(key, write, done, (self._slots,)))

    def try_submit_async(self, key: Hashable, write: Callable[[], Awaitable[_T]], done: Completion[_T]) -> bool:
        """:meth:`submit_async` a write nothing waits for (a queue's status), only if a slot is free
        and such writes hold fewer than half of them; else send nothing and return False (``key`` is
        not made busy). Such writes never block the owner, and never take the slots its
        admissions need (with 1,000 ClusterQueues and 1,000 LocalQueues refreshing their status
        every second they otherwise filled every slot and held the scheduler up)."""
        self._check(key)
        if not self._background.acquire(blocking=False):
            return False
        if not self._slots.acquire(blocking=False):
            self._background.release()
            return False
        self._send(_Write(key, write, done, (self._slots, self._background)))
        return True

    def background_slot_free(self, key: Hashable) -> bool:
        """Whether :meth:`try_submit_async` of ``key`` would send it now. Only the owner takes
        slots (the loop only frees them), so a True answer holds until the owner submits: a write
        that would be refused need not be built (a queue status encoded for nothing)."""
        self._check(key)
        if not self._background.acquire(blocking=False):
            return False
        try:
            if not self._slots.acquire(blocking=False):
                return False
            self._slots.release()
            return True
        finally:
            self._background.release()

    def submit(self, key: Hashable, write: Callable[[], _T], done: Completion[_T]) -> None:
        """Send the blocking ``write()`` on a worker thread (clients without async verbs); the owner
        runs ``done`` once it ended. ``key`` must not be busy."""
        self.submit_async(key, self.threaded(write), done)

    def try_submit(self, key: Hashable, write: Callable[[], _T], done: Completion[_T]) -> bool:
        """:meth:`try_submit_async` for a blocking ``write()``."""
        return self.try_submit_async(key, self.threaded(write), done)

    def run_all(
        self, writes: list[tuple[Hashable, Callable[[], Awaitable[_T]]]], limit: int
    ) -> list[_T | Exception]:
        """Run the coroutines ``write()`` of ``(key, write)`` on the loop, at most ``limit`` at a
        time, and wait on the owner's thread until every one has ended; returns each result, or the
        exception it raised, in order. For writes whose answers the owner needs before it goes on
        (upstream's ``ParallelizeUntil`` over a preemptor's victims). The per-object rule holds
        here too: a key that is busy (or given twice) refuses the whole call before anything is
        sent, and each key is busy while its write runs."""
        return self.start_all(writes, limit)()

    def start_all(
        self, writes: list[tuple[Hashable, Callable[[], Awaitable[_T]]]], limit: int, *, stop_on_error: bool = False
    ) -> Callable[[], list[_T | Exception]]:
        """:meth:`run_all` without the wait: the writes start now, and the returned call waits on
        the owner's thread until every one has ended and returns their results (call it exactly
        once). Each key stays busy until then, so the owner sends nothing else for it meanwhile.

        ``stop_on_error``: once a write has failed, a write whose turn comes afterwards is not
        started (its result is :class:`NotStarted`), as upstream's ``workqueue.ParallelizeUntil``
        over a cancelled context starts no further piece; the writes already on their way run to
        their end."""
        if self._closed:
            raise RuntimeError("the write pipeline is closed")
        keys = [key for key, _ in writes]
        seen: set[Hashable] = set()
        for key in keys:
            if key in self._busy or key in seen:
                raise RuntimeError(f"a write of {key!r} is already in flight")
            seen.add(key)
        if not writes:
            return lambda: []

        async def run() -> list[_T | Exception]:
            gate = asyncio.Semaphore(limit)
            failed = False

            async def one(write: Callable[[], Awaitable[_T]]) -> _T | Exception:
                nonlocal failed
                async with gate:
                    if failed:
                        return NotStarted("an earlier write of the same call failed")
                    try:
                        return await write()
                    except Exception as err:  # handed to the owner with the others
                        if stop_on_error:  # before the slot frees: the writes waiting see it
                            failed = True
                        return err

            return list(await asyncio.gather(*(one(w) for _, w in writes)))

        self._busy.update(keys)
        try:
            running = self.io.run(run())
        except BaseException:
            self._busy.difference_update(keys)
            raise

        def wait() -> list[_T | Exception]:
            try:
                return running.result()
            finally:
                self._busy.difference_update(keys)

        return wait

    def threaded(self, write: Callable[[], _T]) -> Callable[[], Awaitable[_T]]:
        """The blocking ``write()`` as a coroutine factory that runs it on the pipeline's worker threads."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.max_in_flight, thread_name_prefix="kueue-write")
        pool = self._pool

        def in_thread() -> Awaitable[_T]:
            return asyncio.get_running_loop().run_in_executor(pool, write)

        return in_thread

    def _check(self, key: Hashable) -> None:
        if self._closed:
            raise RuntimeError("the write pipeline is closed")
        if key in self._busy:
            raise RuntimeError(f"a write of {key!r} is already in flight")

    def _send(self, item: _Write[_T]) -> None:
        self._busy.add(item.key)
        self.submitted += 1
        self._queued.append(item)
        with self._start_lock:
            if self._start_pending:
                return
            self._start_pending = True
        try:
            self.io.call_soon(self._start_queued)
        except RuntimeError:  # the loop is closed: nothing will be sent
            self._queued.pop()
            for sem in item.held:
                sem.release()
            self._busy.discard(item.key)
            raise

    # -- the loop's thread ---------------------------------------------------------------------------

    def _start_queued(self) -> None:
        with self._start_lock:
            self._start_pending = False
        while self._queued:
            task = asyncio.ensure_future(self._run(self._queued.popleft()))
            self._tasks.add(task)  # the loop keeps only weak references to its tasks
            task.add_done_callback(self._tasks.discard)

    async def _run(self, item: _Write[_T]) -> None:
        result: _T | None = None
        error: Exception | None = None
        try:
            result = await item.write()
        except Exception as err:  # handed to the owner's completion
            error = err
        # The slot frees once the completion is on its way, so that close() returning means every
        # ended write's completion is in the owner's inbox.
        try:
            self._ended.append((item.key, item.done, result, error))
            with self._delivery_lock:
                if self._delivery_pending:
                    return
                self._delivery_pending = True
            self._deliver(self._finish)
        finally:
            for sem in item.held:
                sem.release()

    # -- the owner's thread --------------------------------------------------------------------------

    def _finish(self) -> None:
        with self._delivery_lock:
            self._delivery_pending = False
        self.finish_ended()

    def ended(self) -> bool:
        """Whether writes have ended whose completions the owner has not run yet."""
        return bool(self._ended)

    def finish_ended(self) -> None:
        """Run the completions of the writes that ended, oldest first: at most :attr:`finish_batch`
        (the owner runs the rest later with this method, before the inbox items that follow)."""
        ran = 0
        while self._ended and (self.finish_batch is None or ran < self.finish_batch):
            ran += 1
            key, done, result, error = self._ended.popleft()
            self._busy.discard(key)
            done(result, error)

    def close(self, timeout: float = 10.0) -> bool:
        """Send nothing more; wait up to ``timeout`` for the writes in flight to end. Returns
        whether they all did (their completions are delivered as usual)."""
        self._closed = True
        deadline = time.monotonic() + timeout
        taken = 0
        try:
            for _ in range(self.max_in_flight):
                if not self._slots.acquire(timeout=max(0.0, deadline - time.monotonic())):
                    return False
                taken += 1
            return True
        finally:
            for _ in range(taken):
                self._slots.release()
            if self._pool is not None:
                self._pool.shutdown(wait=False)
            if self._owns_io and taken == self.max_in_flight:
                self.io.stop()
