"""Watches: a replay of the change log followed by live events, per consumer.

A :class:`Watch` owns a thread-safe queue. The store offers every committed change to the
matching watches in revision order (cheap: raw JSON bytes, no decoding); the consumer decodes in
:meth:`Watch.next` (so every consumer gets its own dicts), applies label/field selectors and reads
replayed history lazily, page by page, from the change log.

Selector semantics follow the apiserver's watch cache: a MODIFIED object that starts matching is
sent as ADDED, one that stops matching as DELETED (its previous state, with the event's revision).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from pykueue.kube.selectors import LabelSelector

from .errors import Expired
from .tx import RawEvent, resource_key
from .types import WatchEvent, decode

FieldPredicate = Callable[[dict[str, Any]], bool]
ReplayFetch = Callable[["Watch", int, int, int], list[RawEvent]]

REPLAY_PAGE = 512


class Watch:
    """A stream of :class:`WatchEvent` in revision order.

    Use ``next(timeout)`` (None on timeout or once closed), iterate (blocks until closed), or
    ``await next_async(timeout)`` / ``async for`` from asyncio code. ``close()`` ends it (also from
    another thread). ``next`` raises :class:`~.errors.Expired` if the history still to be replayed
    was pruned meanwhile.
    """

    def __init__(
        self,
        *,
        scope: tuple[str, str] | None,
        namespace: str | None,
        label_selector: LabelSelector | None,
        field_selector: FieldPredicate | None,
        skip_upto: int,
        replay: tuple[int, int] | None,
        initial: list[RawEvent],
        fetch: ReplayFetch,
        unregister: Callable[[Watch], None],
        progress: Callable[[], int],
        queue_limit: int,
    ) -> None:
        self.scope = scope
        self.prefix = f"{namespace}/" if namespace else None
        self._selector = label_selector if label_selector and not label_selector.empty else None
        self._field = field_selector
        self.filtered = self._selector is not None or field_selector is not None
        self._skip_upto = skip_upto
        self._replay_cursor, self._replay_upto = replay or (skip_upto, skip_upto)
        self._replay_buf: deque[RawEvent] = deque()
        self._initial: deque[RawEvent] = deque(initial)
        self._fetch = fetch
        self._unregister = unregister
        self._progress = progress
        self._queue_limit = queue_limit
        self._queue: deque[RawEvent] = deque()
        self._cond = threading.Condition(threading.Lock())
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._closed = False
        self._last_rev = replay[0] if replay is not None else 0 if initial else skip_upto
        self.overflowed = False
        """True when the consumer fell too far behind and the watch was closed."""

    # --- producer side (called by the store, in revision order) ---------------------------------

    def offer(self, event: RawEvent) -> None:
        """Queue a committed change if this watch wants it."""
        if event.rev <= self._skip_upto:
            return
        if self.prefix is not None and not event.k.startswith(self.prefix):
            return
        with self._cond:
            if self._closed:
                return
            overflow = len(self._queue) >= self._queue_limit
            if overflow:
                self.overflowed = self._closed = True
            else:
                self._queue.append(event)
            self._cond.notify_all()
            waiters, self._waiters = self._waiters, []
        if overflow:
            self._unregister(self)
        _wake(waiters)

    # --- consumer side --------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether the watch has ended."""
        return self._closed

    def next(self, timeout: float | None = None) -> WatchEvent | None:
        """The next event; None when ``timeout`` seconds pass first or the watch is closed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            from_initial = bool(self._initial)
            raw = self._poll()
            if raw is not None:
                event = self._convert(raw)
                if not from_initial:
                    self._last_rev = max(self._last_rev, raw.rev)
                elif not self._initial:  # the initial state is complete: caught up to its revision
                    self._last_rev = max(self._last_rev, self._skip_upto)
                if event is not None:
                    return event
                continue
            with self._cond:
                if self._closed:
                    return None
                if self._queue:
                    continue
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._cond.wait(remaining)

    async def next_async(self, timeout: float | None = None) -> WatchEvent | None:
        """``next`` for asyncio: waits without blocking the event loop."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            event = self.next(timeout=0)
            if event is not None or self._closed:
                return event
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return None
            future: asyncio.Future[None] = loop.create_future()
            waiter = (loop, future)
            with self._cond:
                if self._queue or self._closed:
                    continue
                self._waiters.append(waiter)
            try:
                await asyncio.wait_for(future, remaining)
            except TimeoutError:
                with self._cond:
                    if waiter in self._waiters:
                        self._waiters.remove(waiter)
                return None

    def close(self) -> None:
        """End the watch; blocked ``next`` calls return None."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
            waiters, self._waiters = self._waiters, []
        self._unregister(self)
        _wake(waiters)

    def progress_revision(self) -> int:
        """A revision R such that every event of this watch up to R has been returned.

        Suitable for a BOOKMARK: when the watch is idle it is the store's latest delivered revision.
        """
        if self._initial or self._replay_buf or self._replay_cursor < self._replay_upto:
            return self._last_rev
        delivered = self._progress()  # read first: events up to it were offered before it was set
        with self._cond:
            if self._queue:  # everything before the first pending event was returned
                return max(self._last_rev, self._queue[0].rev - 1)
        return max(self._last_rev, self._skip_upto, delivered)

    def __iter__(self) -> Iterator[WatchEvent]:
        while True:
            event = self.next()
            if event is None:
                return
            yield event

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return self

    async def __anext__(self) -> WatchEvent:
        event = await self.next_async()
        if event is None:
            raise StopAsyncIteration
        return event

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # --- internals ------------------------------------------------------------------------------

    def _poll(self) -> RawEvent | None:
        if self._closed:
            return None
        if self._initial:
            return self._initial.popleft()
        if not self._replay_buf and self._replay_cursor < self._replay_upto:
            page = self._fetch(self, self._replay_cursor, self._replay_upto, REPLAY_PAGE)
            self._replay_cursor = page[-1].rev if len(page) == REPLAY_PAGE else self._replay_upto
            self._replay_buf.extend(page)
        if self._replay_buf:
            return self._replay_buf.popleft()
        with self._cond:
            return self._queue.popleft() if self._queue else None

    def _matches(self, obj: dict[str, Any]) -> bool:
        if self._selector is not None and not self._selector.matches_object(obj):
            return False
        return self._field is None or bool(self._field(obj))

    def _convert(self, raw: RawEvent) -> WatchEvent | None:
        key = resource_key(raw.group, raw.resource, raw.k)
        obj: dict[str, Any] = decode(raw.data)
        if self._selector is None and self._field is None:
            return WatchEvent(raw.type, obj, raw.rev, key)
        now = self._matches(obj)
        if raw.type != "MODIFIED":
            return WatchEvent(raw.type, obj, raw.rev, key) if now else None
        old: dict[str, Any] | None = decode(raw.prev) if raw.prev is not None else None
        before = old is not None and self._matches(old)
        if now:
            return WatchEvent("MODIFIED" if before else "ADDED", obj, raw.rev, key)
        if before and old is not None:
            old["metadata"]["resourceVersion"] = str(raw.rev)
            return WatchEvent("DELETED", old, raw.rev, key)
        return None


def _wake(waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]) -> None:
    for loop, future in waiters:
        with contextlib.suppress(RuntimeError):  # the loop is closed
            loop.call_soon_threadsafe(_resolve, future)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def expired_message(requested: int, oldest: int) -> str:
    """The watch cache's message for a revision older than the retained history."""
    return f"too old resource version: {requested} ({oldest - 1})"


def raise_expired(requested: int, oldest: int) -> None:
    """Raise the watch-cache ``Expired`` error."""
    raise Expired(expired_message(requested, oldest))
