"""Writes in flight concurrently, off the owner's thread: at most one per object, a bounded number in all.

Upstream's scheduler assumes an admission in its cache and sends the Workload's status in a
goroutine (``pkg/scheduler/scheduler.go`` ``admit`` through ``admissionRoutineWrapper``), so the
next cycle does not wait for the API server; the client's QPS limiter is what bounds how many are
in flight. :class:`WritePipeline` is that for a single-threaded owner (the controller manager): a
write runs on a worker thread, and its completion is handed back to the owner through ``deliver``
(the manager's inbox), so every piece of controller state is still touched by one thread only.

* Per-object ordering: an object with a write in flight is :meth:`~WritePipeline.busy` until the
  owner has run that write's completion; the owner sends nothing else for it meanwhile (a second
  write computed from the same cached version would only conflict).
* Bounded: :meth:`~WritePipeline.submit` blocks the owner while ``max_in_flight`` requests are
  being sent (backpressure, as a goroutine blocks on client-go's rate limiter). A slot frees when
  the request ends, before its completion runs, so a waiting owner never needs to run completions
  in the middle of what it is doing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

DEFAULT_MAX_IN_FLIGHT = 64
"""Writes in flight at once by default (each holds one keep-alive connection while it is sent).
Upstream's goroutines are bounded by the client's QPS only; against kube-apiserver on a loaded
2-core machine 64 admitted 119/s where 16 admitted 87/s (bench/RESULTS.md, issue 14 item 5)."""

_T = TypeVar("_T")

Completion = Callable[[_T | None, Exception | None], None]
"""Run by the owner with the write's result, or the exception it raised."""


class WritePipeline(Generic[_T]):
    """See the module docstring. All methods but the workers' are for the owner's thread."""

    def __init__(self, deliver: Callable[[Callable[[], None]], None], max_in_flight: int = DEFAULT_MAX_IN_FLIGHT) -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight: must be at least 1, got {max_in_flight}")
        self.max_in_flight = max_in_flight
        self._deliver = deliver
        self._slots = threading.BoundedSemaphore(max_in_flight)
        # The share :meth:`try_submit` may use: the rest stays for the writes the owner waits for.
        self._background = threading.BoundedSemaphore(max(1, max_in_flight // 2))
        self._pool = ThreadPoolExecutor(max_workers=max_in_flight, thread_name_prefix="kueue-write")
        self._busy: set[Hashable] = set()
        self.submitted = 0
        """Writes submitted so far (for tests and the benchmark)."""

    def busy(self, key: Hashable) -> bool:
        """Whether ``key`` has a write in flight (or one whose completion the owner has not run)."""
        return key in self._busy

    def pending(self) -> int:
        """Writes whose completion the owner has not run yet."""
        return len(self._busy)

    def submit(self, key: Hashable, write: Callable[[], _T], done: Completion[_T]) -> None:
        """Send ``write()`` on a worker; the owner runs ``done`` once it ended. ``key`` must not be busy."""
        if key in self._busy:
            raise RuntimeError(f"a write of {key!r} is already in flight")
        self._slots.acquire()
        self._send(key, write, done, (self._slots,))

    def try_submit(self, key: Hashable, write: Callable[[], _T], done: Completion[_T]) -> bool:
        """:meth:`submit` a write nothing waits for (a queue's status), only if a slot is free and
        such writes hold fewer than half of them; else send nothing and return False (``key`` is
        not made busy). Such writes never block the owner, and never take the slots its
        admissions need (with 1,000 ClusterQueues and 1,000 LocalQueues refreshing their status
        every second they otherwise filled every slot and held the scheduler up)."""
        if key in self._busy:
            raise RuntimeError(f"a write of {key!r} is already in flight")
        if not self._background.acquire(blocking=False):
            return False
        if not self._slots.acquire(blocking=False):
            self._background.release()
            return False
        self._send(key, write, done, (self._slots, self._background))
        return True

    def _send(
        self, key: Hashable, write: Callable[[], _T], done: Completion[_T], held: tuple[threading.Semaphore, ...]
    ) -> None:
        self._busy.add(key)
        self.submitted += 1

        def release() -> None:
            for sem in held:
                sem.release()

        def run() -> None:
            result: _T | None = None
            error: Exception | None = None
            try:
                result = write()
            except Exception as err:  # handed to the owner's completion
                error = err
            finally:
                release()
            self._deliver(lambda: self._finish(key, done, result, error))

        try:
            self._pool.submit(run)
        except RuntimeError:  # shut down: nothing will be sent
            release()
            self._busy.discard(key)
            raise

    def _finish(self, key: Hashable, done: Completion[_T], result: _T | None, error: Exception | None) -> None:
        self._busy.discard(key)
        done(result, error)

    def close(self, timeout: float = 10.0) -> bool:
        """Send nothing more; wait up to ``timeout`` for the writes in flight to end. Returns
        whether they all did (their completions are delivered as usual)."""
        self._pool.shutdown(wait=False)
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
