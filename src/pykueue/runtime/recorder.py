"""The one event recorder: ``core/v1`` or ``events.k8s.io/v1`` Events, correlated and sent in batches.

Every component records through an :class:`EventRecorder`; the caller chooses the API:

* :data:`EVENTS_V1` (``events.k8s.io/v1``, client-go ``tools/events``): Kueue's recorders (the
  controller manager's, as upstream's ``mgr.GetEventRecorder``) and the admission-check SDK. An
  event names its object in ``regarding``. An *isomorphic* event (same ``type``,
  ``action``, ``reason``, ``reportingController``, ``regarding``; ``getKey`` in
  ``tools/events/event_broadcaster.go``) is not created again: the first one grows an
  ``EventSeries`` (``count`` 2, then more) that is patched onto the Event already written.
* :data:`CORE_V1` (``v1``, client-go ``tools/record``): the job runner (as kube-controller-manager's
  Job controller). An event names its object in ``involvedObject``. ``EventCorrelator`` semantics
  (``tools/record/events_cache.go``): an identical event bumps ``count``/``lastTimestamp`` of the
  one already written (``EventLogger``); from the 10th distinct message about the same object and
  reason within 10 minutes, the messages are combined into one
  ``"(combined from similar events): <message>"`` Event (``EventAggregator``).

Recording never blocks or fails the caller: :meth:`EventRecorder.event` only queues, and one
sender thread writes the queue in batches (a batch's writes at once, as coroutines on the HTTP client's event-loop thread when the client has one). A failed write is logged and dropped, as client-go
does. What a full queue does follows each API's client-go recorder:

* events.k8s.io/v1: nothing is dropped. ``tools/events`` ``recorder.generateEvent`` hands each event
  to the broadcaster from a goroutine of its own, which waits while the broadcaster's queue is
  full, and ``recordToSink`` starts a goroutine per event that waits for the client's rate
  limiter; under overload the events arrive late, not never. The queue here is unbounded.
* core/v1: ``tools/record`` ``generateEvent`` calls ``ActionOrDrop`` and drops the event when the
  broadcaster's queue of 1000 (``maxQueuedEvents``) is full; so does this queue.

An events.k8s.io/v1 series is written as ``tools/events`` writes it: the second occurrence
writes ``series.count`` 2 (with the create, when both are in one batch), later ones only count in
memory until ``refreshExistingEventSeries`` (every 30 minutes) writes the count; ``finishSeries``
(every 6 minutes) writes the final count of a series last seen more than 6 minutes ago and forgets
it, and forgets an Event without a series created more than 6 minutes ago, so that a later repeat
is a new Event. Both sweeps run on the recorder's clock, from the sender thread. A core/v1 repeat
that arrives within one batch is written once, with its final count (client-go writes each).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import queue
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pykueue.api.meta import EVENT_NOTE_LIMIT, NORMAL, WARNING, format_time, truncate_message
from pykueue.client.interface import AlreadyExists, APIError, Client, NotFound, Resource
from pykueue.runtime.clock import Clock, system_clock

log = logging.getLogger(__name__)

__all__ = ["CORE_V1", "EVENTS_V1", "NORMAL", "WARNING", "EventRecorder", "object_reference", "reporting_instance"]

EVENTS_V1 = Resource("events.k8s.io", "v1", "events", "Event", True)
CORE_V1 = Resource("", "v1", "events", "Event", True)

_NAME_LIMIT = 253
_SUFFIX_LEN = 17  # "." + 16 hex digits of the nanosecond timestamp
_QUEUE_LENGTH = 1000  # client-go's maxQueuedEvents; core/v1 only (see the module docstring)
_CACHE_SIZE = 4096  # client-go's maxLruCacheEntries (core/v1; tools/events keeps a plain map)
_SERIES_FINISH = timedelta(minutes=6)  # tools/events finishTime
_SERIES_REFRESH = timedelta(minutes=30)  # tools/events refreshTime
_SWEEP_POLL_SECONDS = 5.0  # how often an idle sender looks whether a sweep is due
_AGGREGATE_MAX_EVENTS = 10  # defaultAggregateMaxEvents
_AGGREGATE_INTERVAL_SECONDS = 600  # defaultAggregateIntervalInSeconds
_COMBINED_PREFIX = "(combined from similar events): "
_CONCURRENT_SENDS = 16  # writes of one batch in flight at once on the event loop
_BATCH_TIMEOUT = 300.0  # seconds a batch may take (1,000 Events behind a 300 QPS bucket take ~3 s)
_DROP_LOG_INTERVAL = 10.0
"""Seconds between two "event queue full" warnings. client-go logs every dropped event; one line
per event cost the scheduler's thread 18 % of its time while a saturated API dropped thousands
(bench/RESULTS.md, issue 14/16, branch lsthru), so the drops between two lines are counted."""


def reporting_instance(controller: str) -> str:
    """``<controller>-<hostname>``, as client-go ``tools/events`` ``NewRecorder`` names an instance
    (cut to the API's 128 characters)."""
    return f"{controller}-{socket.gethostname()}"[:128]


def object_reference(
    obj: Mapping[str, Any], api_version: str | None = None, kind: str | None = None
) -> dict[str, Any]:
    """The ObjectReference of a JSON object (``apiVersion``, ``kind``, name, namespace, uid,
    resourceVersion), as client-go's ``ref.GetReference`` makes it; ``api_version`` and ``kind``
    for an object that does not carry them (a list's item)."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    ref: dict[str, Any] = {
        "apiVersion": api_version or obj.get("apiVersion", ""),
        "kind": kind or obj.get("kind", ""),
        "name": str(meta.get("name") or ""),
    }
    if meta.get("namespace"):
        ref["namespace"] = meta["namespace"]
    for key in ("uid", "resourceVersion"):
        if meta.get(key):
            ref[key] = meta[key]
    return ref


@dataclass
class _Pending:
    ref: dict[str, Any]
    type: str
    reason: str
    note: str
    action: str
    at: datetime
    controller: str


@dataclass
class _Written:
    namespace: str
    name: str
    count: int
    at: datetime | None = None
    """events.k8s.io/v1: the eventTime, then the series' lastObservedTime."""


class _LRU(OrderedDict[Any, Any]):
    def __init__(self, size: int | None = _CACHE_SIZE) -> None:
        super().__init__()
        self.size = size

    def remember(self, key: Any, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        while self.size is not None and len(self) > self.size:
            self.popitem(last=False)


class EventRecorder:
    """Records Events about objects as ``controller`` (the reporting controller / source component),
    or as another controller named per event (upstream's components each have a recorder of their
    own, ``mgr.GetEventRecorder(name)``; here they share this one's queue and sender)."""

    def __init__(
        self,
        client: Client,
        controller: str,
        clock: Clock = system_clock,
        *,
        api: Resource = EVENTS_V1,
        instance: str | None = None,
    ) -> None:
        if api not in (EVENTS_V1, CORE_V1):
            raise ValueError(f"EventRecorder: api must be events.k8s.io/v1 or v1 events, not {api.api_version}")
        self.client = client
        self.controller = controller
        self.clock = clock
        self.api = api
        self.instance = instance or f"{controller}-{socket.gethostname()}-{os.getpid()}"[:128]
        self._instances: dict[str, str] = {controller: self.instance}
        self._seq = itertools.count()
        self._queue: queue.Queue[_Pending | threading.Event] = queue.Queue(
            _QUEUE_LENGTH if api == CORE_V1 else 0
        )
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        # correlation key -> the Event written for it; events.k8s.io/v1 forgets by time (the sweeps)
        self._written: _LRU = _LRU(_CACHE_SIZE if api == CORE_V1 else None)
        self._next_finish: datetime | None = None  # events.k8s.io/v1 sweeps, on ``clock``
        self._next_refresh: datetime | None = None
        self._aggregates: _LRU = _LRU()  # aggregate key -> (distinct messages, last time)
        self._drop_lock = threading.Lock()
        self._dropped = 0  # events dropped since the last warning
        self._drop_logged_at: float | None = None

    # -- the caller's side: never blocks, never raises -------------------------------------------

    def event(
        self, obj: Mapping[str, Any], type_: str, reason: str, note: str, action: str | None = None
    ) -> None:
        """Record one event about the JSON object ``obj`` (``action`` defaults to ``reason``)."""
        self.record(object_reference(obj), type_, reason, note, action)

    def record(
        self,
        ref: Mapping[str, Any],
        type_: str,
        reason: str,
        note: str,
        action: str | None = None,
        controller: str | None = None,
    ) -> None:
        """Record one event about the object ``ref`` (an ObjectReference) off the caller's path.

        ``action`` defaults to ``reason`` for events.k8s.io/v1 (where it is required) and to none
        for core/v1 (client-go's ``tools/record`` sets none). ``controller``: the reporting
        controller, when not this recorder's own; its instance is ``<controller>-<hostname>``, as
        client-go ``tools/events`` ``NewRecorder`` names it."""
        if action is None:
            action = reason if self.api == EVENTS_V1 else ""
        pending = _Pending(dict(ref), type_, reason, truncate_message(note, EVENT_NOTE_LIMIT), action,
                           self.clock(), controller or self.controller)
        self._ensure_sender()
        try:
            self._queue.put_nowait(pending)
        except queue.Full:
            self._drop(type_, reason, ref)

    def _drop(self, type_: str, reason: str, ref: Mapping[str, Any]) -> None:
        """Count a dropped event; warn about the drops at most every ``_DROP_LOG_INTERVAL`` seconds."""
        now = time.monotonic()
        with self._drop_lock:
            self._dropped += 1
            if self._drop_logged_at is not None and now - self._drop_logged_at < _DROP_LOG_INTERVAL:
                return
            dropped, self._dropped, self._drop_logged_at = self._dropped, 0, now
        log.warning(
            "event queue full; dropping %s %s on %s (%d dropped since the last such warning)",
            type_, reason, ref.get("name"), dropped,
        )  # fmt: skip

    def flush(self, timeout: float | None = 10.0) -> bool:
        """Wait until every event recorded so far was written (or dropped); for shutdown and tests."""
        self._ensure_sender()
        marker = threading.Event()
        try:
            self._queue.put(marker, timeout=timeout)
        except queue.Full:
            return False
        return marker.wait(timeout)

    def _ensure_sender(self) -> None:
        if self._thread is not None:
            return
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._send_forever, name=f"events-{self.controller}", daemon=True
                )
                self._thread.start()

    # -- the sender thread ---------------------------------------------------------------------------

    def _send_forever(self) -> None:
        while True:
            try:
                batch = [self._queue.get(timeout=_SWEEP_POLL_SECONDS)]
            except queue.Empty:
                batch = []
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            self._send_batch(batch)

    def _send_batch(self, batch: list[_Pending | threading.Event]) -> None:
        # Correlate the whole batch first, so repeats within it become one write with the final count.
        creates: dict[Any, tuple[dict[str, Any], _Written]] = {}
        patches: dict[Any, tuple[_Written, dict[str, Any]]] = {}
        markers: list[threading.Event] = []
        if self.api == EVENTS_V1:
            self._sweep_series(patches)
        for item in batch:
            if isinstance(item, threading.Event):
                markers.append(item)
                continue
            try:
                self._correlate(item, creates, patches)
            except Exception:  # a malformed event must not stop the sender
                log.exception("event %s %s not recorded", item.type, item.reason)
        io = getattr(self.client, "io", None)
        if io is not None and (creates or patches):
            # The batch's writes go out together as coroutines on the HTTP client's event-loop
            # thread (client-go's broadcaster sends one at a time from its goroutine, but each is
            # cheap there; here a blocking request per Event kept the sender one round trip per
            # Event behind). The next batch waits for this one: its correlation needs the names.
            try:
                # Bounded (a server that never answers). A client closed meanwhile ends the batch at
                # once: its loop runs or cancels what was scheduled before it stopped
                # (EventLoopThread.stop), and refuses (and closes) the coroutine after.
                io.run(self._send_async(creates, patches)).result(timeout=_BATCH_TIMEOUT)
            except Exception:
                log.exception("sending %d events failed", len(creates) + len(patches))
        else:
            for key, (body, written) in creates.items():
                self._create(key, body, written)
            for key, (written, patch) in patches.items():
                self._patch(key, written, patch)
        for marker in markers:
            marker.set()

    async def _send_async(
        self,
        creates: dict[Any, tuple[dict[str, Any], _Written]],
        patches: dict[Any, tuple[_Written, dict[str, Any]]],
    ) -> None:
        slots = asyncio.Semaphore(_CONCURRENT_SENDS)
        client: Any = self.client

        async def create(key: Any, body: dict[str, Any], written: _Written) -> None:
            async with slots:
                try:
                    await client.create_async(self.api, body)
                except Exception as err:
                    self._created(key, body, written, err)
                else:
                    self._created(key, body, written, None)

        async def patch(key: Any, written: _Written, body: dict[str, Any]) -> None:
            async with slots:
                try:
                    await client.patch_async(self.api, written.name, body, written.namespace)
                except Exception as err:
                    self._patched(key, written, err)

        await asyncio.gather(
            *(create(key, body, written) for key, (body, written) in creates.items()),
            *(patch(key, written, body) for key, (written, body) in patches.items()),
        )

    def _correlate(
        self,
        ev: _Pending,
        creates: dict[Any, tuple[dict[str, Any], _Written]],
        patches: dict[Any, tuple[_Written, dict[str, Any]]],
    ) -> None:
        if self.api == EVENTS_V1:
            self._correlate_series(ev, creates, patches)
            return
        ev, key = self._aggregate(ev)
        pending = creates.get(key)
        if pending is not None:  # a repeat of an event created in this batch
            body, written = pending
            written.count += 1
            self._set_count(body, written.count, ev.at)
            return
        seen: _Written | None = self._written.get(key)
        if seen is None:
            body = self._body(ev)
            creates[key] = (body, _Written(body["metadata"]["namespace"], body["metadata"]["name"], 1))
            return
        seen.count += 1
        patches[key] = (seen, self._count_patch(seen.count, ev))

    def _correlate_series(
        self,
        ev: _Pending,
        creates: dict[Any, tuple[dict[str, Any], _Written]],
        patches: dict[Any, tuple[_Written, dict[str, Any]]],
    ) -> None:
        """``recordToSink``: a new Event is created; the first repeat writes ``series.count`` 2; later
        repeats only count, written by the sweeps (:meth:`_sweep_series`)."""
        # getKey: the type, action, reason, reporting controller (and its instance, one per
        # controller here) and the whole ``regarding`` reference (resourceVersion included), not
        # the note; no event here has a ``related`` object.
        key = (ev.type, ev.action, ev.reason, ev.controller, tuple(sorted(ev.ref.items())))
        pending = creates.get(key)
        if pending is not None:  # a repeat of an event created in this batch
            body, written = pending
            written.count += 1
            written.at = ev.at
            if written.count == 2:
                self._set_count(body, 2, ev.at)
            return
        seen: _Written | None = self._written.get(key)
        if seen is None:
            body = self._body(ev)
            creates[key] = (body, _Written(body["metadata"]["namespace"], body["metadata"]["name"], 1, ev.at))
            return
        seen.count += 1
        seen.at = ev.at
        if seen.count == 2:
            patches[key] = (seen, self._count_patch(2, ev))

    def _sweep_series(self, patches: dict[Any, tuple[_Written, dict[str, Any]]]) -> None:
        """tools/events' two tickers, when due on the recorder's clock: ``refreshExistingEventSeries``
        writes every series' count; ``finishSeries`` writes the final count of each series last
        seen more than :data:`_SERIES_FINISH` ago and forgets it, and forgets each Event without a
        series created more than that ago."""
        now = self.clock()
        if self._next_finish is None or self._next_refresh is None:
            self._next_finish, self._next_refresh = now + _SERIES_FINISH, now + _SERIES_REFRESH
            return
        refresh = now >= self._next_refresh
        finish = now >= self._next_finish
        if refresh:
            self._next_refresh = now + _SERIES_REFRESH
        if finish:
            self._next_finish = now + _SERIES_FINISH
        if not (refresh or finish):
            return
        for key, written in list(self._written.items()):
            old = written.at is not None and written.at < now - _SERIES_FINISH
            if written.count >= 2 and (refresh or (finish and old)):
                patches[key] = (written, self._series_patch(written))
            if finish and old:
                del self._written[key]

    def _aggregate(self, ev: _Pending) -> tuple[_Pending, Any]:
        """``EventAggregator.EventAggregate``: the event to write and its ``EventLogger`` key.

        From the 10th distinct message about one object and reason within 10 minutes, the event
        becomes one ``(combined from similar events)`` Event keyed without its message."""
        ref = _ref_key(ev.ref)
        aggregate_key = (ref, ev.type, ev.reason, ev.controller)
        record = self._aggregates.get(aggregate_key)
        now = ev.at.timestamp()
        if record is None or now - record[1] > _AGGREGATE_INTERVAL_SECONDS:
            record = (set(), now)
        messages: set[str] = record[0]
        messages.add(ev.note)
        self._aggregates.remember(aggregate_key, (messages, now))
        if len(messages) < _AGGREGATE_MAX_EVENTS:
            return ev, (ref, ev.type, ev.reason, ev.note, ev.controller)
        messages.pop()
        note = truncate_message(_COMBINED_PREFIX + ev.note, EVENT_NOTE_LIMIT)
        return _Pending(ev.ref, ev.type, ev.reason, note, "", ev.at, ev.controller), aggregate_key

    def _body(self, ev: _Pending) -> dict[str, Any]:
        name = str(ev.ref.get("name") or "")
        namespace = str(ev.ref.get("namespace") or "") or "default"
        # client-go names events "<object>.<unix nanos in hex>"; the sequence number keeps names
        # unique when an injected clock stands still.
        nanos = int(ev.at.timestamp() * 1_000_000_000) + next(self._seq)
        meta = {"name": f"{name[: _NAME_LIMIT - _SUFFIX_LEN]}.{nanos:x}", "namespace": namespace}
        if self.api == EVENTS_V1:
            return {
                "apiVersion": "events.k8s.io/v1",
                "kind": "Event",
                "metadata": meta,
                "eventTime": ev.at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                "reportingController": ev.controller,
                "reportingInstance": self._instance(ev.controller),
                "action": ev.action,
                "reason": ev.reason,
                "regarding": ev.ref,
                "note": ev.note,
                "type": ev.type,
            }
        now = format_time(ev.at)
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": meta,
            "involvedObject": ev.ref,
            "reason": ev.reason,
            "message": ev.note,
            "type": ev.type,
            "source": {"component": ev.controller},
            "reportingComponent": ev.controller,
            "reportingInstance": self._instance(ev.controller),
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        if ev.action:  # client-go's aggregate Event carries no action
            body["action"] = ev.action
        return body

    def _instance(self, controller: str) -> str:
        found = self._instances.get(controller)
        if found is None:
            found = self._instances[controller] = reporting_instance(controller)
        return found

    def _set_count(self, body: dict[str, Any], count: int, at: datetime) -> None:
        if self.api == EVENTS_V1:
            body["series"] = {"count": count, "lastObservedTime": at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}
        else:
            body["count"] = count
            body["lastTimestamp"] = format_time(at)

    def _series_patch(self, written: _Written) -> dict[str, Any]:
        assert written.at is not None
        return {"series": {"count": written.count, "lastObservedTime": written.at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}}

    def _count_patch(self, count: int, ev: _Pending) -> dict[str, Any]:
        if self.api == EVENTS_V1:
            return {"series": {"count": count, "lastObservedTime": ev.at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}}
        return {"count": count, "lastTimestamp": format_time(ev.at), "message": ev.note}

    def _create(self, key: Any, body: dict[str, Any], written: _Written) -> None:
        try:
            self.client.create(self.api, body)
        except Exception as err:
            self._created(key, body, written, err)
        else:
            self._created(key, body, written, None)

    def _created(self, key: Any, body: dict[str, Any], written: _Written, err: Exception | None) -> None:
        if isinstance(err, AlreadyExists):
            log.debug("event %s already recorded", body["metadata"]["name"])
        elif isinstance(err, APIError):
            log.warning("recording event %s %s on %s failed: %s", body.get("type"), body.get("reason"),
                        written.name, err)
            return
        elif err is not None:  # a transport failure must not stop the sender
            log.error("recording event %s failed", body.get("reason"), exc_info=err)
            return
        self._written.remember(key, written)

    def _patch(self, key: Any, written: _Written, patch: dict[str, Any]) -> None:
        try:
            self.client.patch(self.api, written.name, patch, written.namespace)
        except Exception as err:
            self._patched(key, written, err)

    def _patched(self, key: Any, written: _Written, err: Exception) -> None:
        if isinstance(err, NotFound):
            self._written.pop(key, None)  # deleted meanwhile (TTL): the next repeat creates it again
        elif isinstance(err, APIError):
            log.warning("updating event %s failed: %s", written.name, err)
        else:
            log.error("updating event %s failed", written.name, exc_info=err)


def _ref_key(ref: Mapping[str, Any]) -> tuple[Any, ...]:
    """getEventKey's involvedObject fields: the reference without its resourceVersion."""
    return tuple(sorted((k, str(v)) for k, v in ref.items() if k != "resourceVersion"))
