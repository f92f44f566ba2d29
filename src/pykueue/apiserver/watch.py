"""Watch: store events fanned out to per-connection queues and streamed as JSON lines.

:class:`WatchHub` subscribes once to the store and pushes every event into the queues of the open
watches for that resource (and namespace). Each watch (:class:`WatchStream`) first sends its start
events (synthetic ``ADDED`` for the current state, or the replay of the change log after the
requested resourceVersion), then live events, filtered by label and field selectors, converted to
the requested version (or a ``Table``), with ``BOOKMARK`` events when asked for. Encoded events
are cached per (version, format) so N watchers of the same resource encode each event once.
"""

from __future__ import annotations

import asyncio
import collections
import random
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from pykueue.store.tx import loc_namespace

MAX_QUEUED = 200_000
"""A watcher this far behind is closed (the client re-lists), as the real server does."""
DEFAULT_BOOKMARK_INTERVAL = 30.0
BOOKMARK_BEFORE_TIMEOUT = 1.0
INITIAL_EVENTS_END = "k8s.io/initial-events-end"

_encode = msgspec.json.encode
_decode: Callable[[bytes], dict[str, Any]] = msgspec.json.Decoder(dict[str, Any]).decode
EventEncoder = Callable[[str, Mapping[str, Any]], bytes]


class HubEvent:
    """A store event on its way to watchers, with its encodings cached per format.

    Live events carry the stored JSON (``raw``) and decode it only when a watcher needs the
    object (another version, a Table, selectors): a watcher of the storage version in JSON is
    sent the stored bytes as they are.
    """

    __slots__ = ("_object", "encoded", "group", "namespace", "raw", "resource", "revision", "type")

    def __init__(
        self,
        type: str,
        object: dict[str, Any] | None,
        revision: int,
        group: str,
        resource: str,
        namespace: str,
        raw: bytes | None = None,
    ) -> None:
        if object is None and raw is None:
            raise ValueError("a HubEvent needs its object or its stored JSON")
        self.type = type
        self._object = object
        self.revision = revision
        self.group = group
        self.resource = resource
        self.namespace = namespace
        self.raw = raw
        self.encoded: dict[Any, bytes] = {}

    @property
    def object(self) -> dict[str, Any]:
        """The event's object (decoded once, shared by the watchers: treat it as read-only)."""
        if self._object is None:
            self._object = _decode(self.raw or b"{}")
        return self._object


class Subscription:
    """One watcher's queue of events (a deque plus a wake-up event, drained in batches)."""

    def __init__(self, hub: WatchHub, group: str, resource: str, namespace: str | None) -> None:
        self.hub = hub
        self.group = group
        self.resource = resource
        self.namespace = namespace
        self.events: collections.deque[HubEvent] = collections.deque()
        self.ready = asyncio.Event()
        self.closed = False
        self.overflowed = False

    def push(self, event: HubEvent) -> None:
        """Queue an event (called on the event-loop thread)."""
        if self.closed:
            return
        if len(self.events) >= MAX_QUEUED:
            self.overflowed = True
            self.close()
            return
        self.events.append(event)
        self.ready.set()

    def close(self) -> None:
        """Stop the watch: the stream ends after what is queued."""
        self.closed = True
        self.ready.set()

    def drain(self) -> list[HubEvent]:
        """Everything queued so far."""
        items = list(self.events)
        self.events.clear()
        if not self.closed:
            self.ready.clear()
        return items

    def cancel(self) -> None:
        """Unregister from the hub."""
        self.closed = True
        self.hub.unsubscribe(self)


class WatchHub:
    """Fans store events out to the open watches (one store subscription for the whole server)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.subs: dict[tuple[str, str], set[Subscription]] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        self.loop_thread: int | None = None
        self.last_revision = int(store.revision)
        # Events reach the hub in revision order, from whichever thread wrote them; they are
        # dispatched on the loop thread in that order (a write made on the loop thread must not
        # overtake an earlier one still on its way from another thread: watch streams drop events
        # older than the last one they sent).
        self._handover: collections.deque[tuple[Any, Any]] = collections.deque()
        self._handover_lock = threading.Lock()
        self._handover_scheduled = False
        self._unsubscribe: Callable[[], None] | None = store.subscribe_raw(self._on_event)

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Bind to the serving event loop (events from other threads are handed over to it)."""
        self.loop = loop
        self.loop_thread = threading.get_ident()

    def _on_event(self, event: Any, key: Any) -> None:
        if self.loop is None:
            self._dispatch(event, key)
            return
        with self._handover_lock:
            self._handover.append((event, key))
            schedule = not self._handover_scheduled
            self._handover_scheduled = True
        if threading.get_ident() == self.loop_thread:
            self._dispatch_handed_over()
        elif schedule:
            self.loop.call_soon_threadsafe(self._dispatch_handed_over)

    def _dispatch_handed_over(self) -> None:
        """Dispatch every queued event, oldest first (on the loop thread)."""
        with self._handover_lock:
            batch = list(self._handover)
            self._handover.clear()
            self._handover_scheduled = False
        for event, key in batch:
            self._dispatch(event, key)

    def _dispatch(self, event: Any, key: Any) -> None:
        revision = int(event.rev)
        if revision > self.last_revision:
            self.last_revision = revision
        subs = self.subs.get((key.group, key.resource))
        if not subs:
            return
        namespace = loc_namespace(event.k)
        hub_event = HubEvent(event.type, None, revision, key.group, key.resource, namespace, raw=event.data)
        for sub in tuple(subs):
            if sub.namespace is None or sub.namespace == namespace:
                sub.push(hub_event)

    def subscribe(self, group: str, resource: str, namespace: str | None) -> Subscription:
        """Open a queue for events of one resource (all namespaces when ``namespace`` is None)."""
        sub = Subscription(self, group, resource, namespace)
        self.subs.setdefault((group, resource), set()).add(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        """Forget a queue."""
        subs = self.subs.get((sub.group, sub.resource))
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self.subs[(sub.group, sub.resource)]

    @property
    def watcher_count(self) -> int:
        """Open watches."""
        return sum(len(s) for s in self.subs.values())

    def close(self) -> None:
        """End every open watch (server shutdown) and drop the store subscription."""
        for subs in list(self.subs.values()):
            for sub in list(subs):
                sub.close()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None


@dataclass
class WatchSpec:
    """Everything a watch stream needs once the request has been validated."""

    subscription: Subscription
    start_events: list[HubEvent]
    start_revision: int
    encode_object: Callable[[HubEvent], bytes]
    bookmark_object: Callable[[int, bool], bytes]
    matches: Callable[[Mapping[str, Any]], bool] | None = None
    bookmarks: bool = False
    initial_events_end: bool = False
    timeout: float | None = None
    bookmark_interval: float = DEFAULT_BOOKMARK_INTERVAL
    error: bytes | None = None
    visible: set[tuple[str, str]] = field(default_factory=set)


def default_timeout() -> float:
    """The server's watch timeout when the client sets none (min-request-timeout 1800s, x[1,2))."""
    return 1800.0 * (1.0 + random.random())


def event_line(event_type: str, object_bytes: bytes) -> bytes:
    """One newline-terminated watch event."""
    return b'{"type":"' + event_type.encode() + b'","object":' + object_bytes + b"}\n"


def _object_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def _filtered(spec: WatchSpec, event: HubEvent) -> str | None:
    """The event type to send after selector filtering (None: drop)."""
    if spec.matches is None:
        return event.type
    key = _object_key(event.object)
    if event.type == "DELETED":
        if key in spec.visible:
            spec.visible.discard(key)
            return "DELETED"
        return "DELETED" if spec.matches(event.object) else None
    if spec.matches(event.object):
        was_visible = key in spec.visible
        spec.visible.add(key)
        return (
            "MODIFIED"
            if was_visible and event.type == "MODIFIED"
            else ("ADDED" if not was_visible else event.type)
        )
    if key in spec.visible:
        spec.visible.discard(key)
        return "DELETED"
    return None


def _encode_batch(
    spec: WatchSpec, events: Iterable[HubEvent], last: int, *, dedupe: bool = True
) -> tuple[bytes, int]:
    """Encode events in order; live events at or below ``last`` were already sent (skipped)."""
    chunks: list[bytes] = []
    for ev in events:
        if dedupe and ev.revision <= last:
            continue
        last = max(last, ev.revision)
        etype = _filtered(spec, ev)
        if etype is None:
            continue
        chunks.append(event_line(etype, spec.encode_object(ev)))
    return b"".join(chunks), last


async def stream(spec: WatchSpec) -> AsyncIterator[bytes]:
    """The body of a watch response: start events, then live events until timeout or shutdown."""
    sub = spec.subscription
    try:
        if spec.error is not None:
            yield spec.error
            return
        if spec.matches is not None:
            spec.visible.update(_object_key(e.object) for e in spec.start_events if e.type != "DELETED")
        chunk, last = _encode_batch(spec, spec.start_events, -1, dedupe=False)
        last = max(last, spec.start_revision)
        if spec.initial_events_end:
            chunk += event_line("BOOKMARK", spec.bookmark_object(last, True))
        if chunk:
            yield chunk
        async for piece in _live(spec, last):
            yield piece
    finally:
        sub.cancel()


async def _live(spec: WatchSpec, last: int) -> AsyncIterator[bytes]:
    sub = spec.subscription
    deadline = time.monotonic() + (spec.timeout if spec.timeout is not None else default_timeout())
    final_bookmark = deadline - BOOKMARK_BEFORE_TIMEOUT
    next_bookmark = min(time.monotonic() + spec.bookmark_interval, final_bookmark)
    loop = asyncio.get_running_loop()
    # One timer per wake-up time (the next bookmark or the deadline), kept across the waits for
    # events: asyncio.wait_for made a task and a timer for every wait, i.e. for every batch.
    alarm: list[Any] = [None, 0.0]  # [the timer handle (None once fired), the time it wakes at]

    def ring() -> None:
        alarm[0] = None
        sub.ready.set()

    try:
        while True:
            now = time.monotonic()
            if now >= deadline:
                return
            wait_until = min(deadline, next_bookmark) if spec.bookmarks else deadline
            if not sub.events and not sub.closed and wait_until > now:
                if alarm[0] is None or alarm[1] != wait_until:
                    if alarm[0] is not None:
                        alarm[0].cancel()
                    alarm[0], alarm[1] = loop.call_later(wait_until - now, ring), wait_until
                await sub.ready.wait()
            events = sub.drain()
            if events:
                chunk, last = _encode_batch(spec, events, last)
                if chunk:
                    yield chunk
            if sub.closed and not sub.events:
                return
            now = time.monotonic()
            if spec.bookmarks and now >= next_bookmark and not sub.events:
                last = max(last, sub.hub.last_revision)
                yield event_line("BOOKMARK", spec.bookmark_object(last, False))
                upcoming = now + spec.bookmark_interval
                next_bookmark = final_bookmark if now < final_bookmark < upcoming else upcoming
    finally:
        if alarm[0] is not None:
            alarm[0].cancel()


def error_event(status: Mapping[str, Any]) -> bytes:
    """An ``ERROR`` watch event carrying a ``Status`` (e.g. 410 Expired)."""
    return event_line("ERROR", _encode(status))
