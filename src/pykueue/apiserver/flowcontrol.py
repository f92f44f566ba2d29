"""Fair turns between the API server's clients: API Priority and Fairness reduced to one level.

kube-apiserver queues each request in a flow (its FlowSchema and distinguisher, by default the
user) and serves the flows of a priority level in fair turns (``k8s.io/apiserver/pkg/util/
flowcontrol``, fair queuing), so that one client's burst does not make every other client wait
behind all of it. serve has one event loop, and its protocol's direct path handled every request
read in a turn of the loop before reading again: a request that arrived during a burst of the
controller's (a cycle's admissions, its Events) waited for the whole burst, and so did the answers
and watch events of the requests before it.

:class:`FairDispatcher` serves a request at once while the loop's turn has spent less than
:data:`TURN_BUDGET` on requests and nothing is queued (so a quiet server answers exactly as
before). Past that, requests are queued per flow and served one per flow in turn, at most
:data:`TURN_BUDGET` per turn, the loop reading new requests, delivering durable answers and
fanning out watch events in between. Within a flow the order of arrival is kept.

A flow is the authenticated user and the listener the request came through (serve's components
have a listener of their own, :class:`~pykueue.apiserver.server.APIServer`), so the controllers'
requests and each client's are distinct flows. Only the direct path's requests (plain resource
requests) are dispatched; watches, pod logs, the UI and other ASGI requests are served as before.
Not modelled: priority levels, FlowSchema and PriorityLevelConfiguration objects, seats, queue
limits and their 429 answers.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Mapping
from typing import Any

log = logging.getLogger("pykueue.apiserver")

TURN_BUDGET = 0.002
"""Seconds of requests one turn of the event loop serves before it reads, answers and fans out
again. Measured on Kueue's baseline through upstream's runner (bench/RESULTS.md, issue 16): the
loop's longest turns (p99 lag) fell from 27-46 ms to 11-15 ms."""

FLOW_SCOPE_KEY = "pykueue.flow"
"""ASGI scope key of a request's flow (set by the application once it authenticated the request)."""


class FairDispatcher:
    """Serves requests at once while the loop is not busy, else in fair turns between flows."""

    def __init__(self, loop: asyncio.AbstractEventLoop, budget: float = TURN_BUDGET) -> None:
        self.loop = loop
        self.budget = budget
        self._queues: dict[Hashable, deque[Callable[[], None]]] = {}
        self._turns: deque[Hashable] = deque()  # flows with queued requests, in turn order
        self._spent = 0.0  # seconds of requests served at once in this turn of the loop
        self._turn_marked = False
        self._scheduled = False

    def submit(self, flow: Hashable, serve: Callable[[], None]) -> None:
        """Serve a request (``serve()`` answers it) now, or in its flow's turn."""
        if not self._turns and self._spent < self.budget:
            if not self._turn_marked:
                # Runs once this turn's reads are done: the next turn starts with a fresh budget.
                self._turn_marked = True
                self.loop.call_soon(self._end_turn)
            started = time.perf_counter()
            try:
                _serve(serve)
            finally:
                self._spent += time.perf_counter() - started
            return
        queue = self._queues.get(flow)
        if queue is None:
            queue = self._queues[flow] = deque()
            self._turns.append(flow)
        queue.append(serve)
        self._schedule()

    def busy(self) -> bool:
        """Whether requests wait for their turn."""
        return bool(self._turns)

    def queued(self) -> int:
        """Requests waiting for their turn."""
        return sum(len(q) for q in self._queues.values())

    def _end_turn(self) -> None:
        self._spent = 0.0
        self._turn_marked = False

    def _schedule(self) -> None:
        if not self._scheduled:
            self._scheduled = True
            self.loop.call_soon(self._run)

    def _run(self) -> None:
        """One turn: one request per flow in turn, until the budget is spent or nothing is queued."""
        self._scheduled = False
        deadline = time.perf_counter() + self.budget
        turns, queues = self._turns, self._queues
        while turns:
            flow = turns.popleft()
            queue = queues[flow]
            serve = queue.popleft()
            if queue:
                turns.append(flow)
            else:
                del queues[flow]
            _serve(serve)
            if time.perf_counter() >= deadline:
                break
        if turns:
            self._schedule()


def _serve(serve: Callable[[], None]) -> None:
    try:
        serve()
    except Exception:  # the request's own errors are its answer; this is a bug in serving it
        log.exception("serving a request failed")


_DISPATCHERS: dict[asyncio.AbstractEventLoop, FairDispatcher] = {}
_DISPATCHERS_LOCK = threading.Lock()  # loops of other threads (tests, embedded servers) add theirs


def dispatcher(loop: asyncio.AbstractEventLoop) -> FairDispatcher:
    """The event loop's dispatcher (one per loop: serve's listeners share it)."""
    found = _DISPATCHERS.get(loop)
    if found is None:
        with _DISPATCHERS_LOCK:
            found = _DISPATCHERS.get(loop)
            if found is None:
                found = _DISPATCHERS[loop] = FairDispatcher(loop)
                for other in [k for k in _DISPATCHERS if k.is_closed()]:
                    del _DISPATCHERS[other]
    return found


def loop_busy() -> bool:
    """Whether the running event loop's dispatcher has requests waiting for their turn (False off
    a loop, or on one that has no dispatcher)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return False
    found = _DISPATCHERS.get(loop)
    return found is not None and found.busy()


def flow_of(scope: Mapping[str, Any]) -> Hashable:
    """A request's flow: :data:`FLOW_SCOPE_KEY` when the application set it, else its listener."""
    flow = scope.get(FLOW_SCOPE_KEY)
    return flow if flow is not None else ("", scope.get("server"))
