"""Informers: list + watch one collection into a local cache and report every change.

An informer runs in its own thread. It lists the collection, then watches from the list's
resourceVersion; when the watch ends it resumes from the last resourceVersion seen, and when that
is too old (410) it relists and reports the difference (objects gone meanwhile as DELETED), as
client-go's reflector does. Consumers get ``(type, old, new)`` changes through a sink callable that
is called from the informer thread: controllers push them onto their own work queue.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pykueue.client.interface import APIError, Client, Gone, Resource, Watch

log = logging.getLogger(__name__)

ObjectKey = tuple[str, str]
"""(namespace, name); namespace is "" for cluster-scoped objects."""

ADDED, MODIFIED, DELETED, SYNCED = "ADDED", "MODIFIED", "DELETED", "SYNCED"
_RETRY_SECONDS = 1.0


def object_key(obj: dict[str, Any]) -> ObjectKey:
    """(namespace, name) of a JSON object."""
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def resource_version(obj: dict[str, Any] | None) -> str:
    """``metadata.resourceVersion`` ("" when absent)."""
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")


@dataclass(frozen=True)
class Change:
    """One observed change. ``SYNCED`` (no objects) marks the end of the initial list."""

    resource: Resource
    type: str
    old: dict[str, Any] | None
    new: dict[str, Any] | None

    @property
    def object(self) -> dict[str, Any]:
        """The object as it is now (the last state for DELETED)."""
        obj = self.new if self.new is not None else self.old
        assert obj is not None
        return obj


Sink = Callable[[Change], None]


class Informer:
    """List + watch of one :class:`Resource` into a cache; see the module docstring."""

    def __init__(self, client: Client, resource: Resource, sink: Sink, namespace: str | None = None) -> None:
        self.client = client
        self.resource = resource
        self.sink = sink
        self.namespace = namespace
        self._cache: dict[ObjectKey, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._synced = threading.Event()
        self._watch: Watch | None = None
        self._thread: threading.Thread | None = None

    # -- reading the cache (any thread) ---------------------------------------------------------

    def get(self, key: ObjectKey) -> dict[str, Any] | None:
        """The cached object (not a copy: do not mutate)."""
        with self._lock:
            return self._cache.get(key)

    def items(self) -> list[dict[str, Any]]:
        """Every cached object."""
        with self._lock:
            return list(self._cache.values())

    def wait_synced(self, timeout: float | None = None) -> bool:
        """Block until the initial list has been delivered."""
        return self._synced.wait(timeout)

    # -- running --------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the list/watch thread."""
        self._thread = threading.Thread(target=self._run, name=f"informer-{self.resource.plural}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop watching and wait for the thread."""
        self._stop.set()
        w = self._watch
        if w is not None:
            w.close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        rv = ""
        while not self._stop.is_set():
            try:
                if not rv:
                    rv = self._relist()
                rv = self._watch_from(rv)
            except Gone:
                rv = ""  # too old: relist and report the difference
            except APIError as err:
                log.warning("informer %s: %s; retrying", self.resource.plural, err)
                self._stop.wait(_RETRY_SECONDS)
            except Exception:  # a broken connection or a bug: keep the informer alive
                log.exception("informer %s failed; retrying", self.resource.plural)
                self._stop.wait(_RETRY_SECONDS)

    def _relist(self) -> str:
        items, rv = self.client.list(self.resource, self.namespace)
        fresh = {object_key(o): o for o in items}
        with self._lock:
            old = self._cache
            self._cache = dict(fresh)
        for key, obj in old.items():
            if key not in fresh:
                self.sink(Change(self.resource, DELETED, obj, None))
        for key, obj in fresh.items():
            prev = old.get(key)
            if prev is None:
                self.sink(Change(self.resource, ADDED, None, obj))
            elif resource_version(prev) != resource_version(obj):
                self.sink(Change(self.resource, MODIFIED, prev, obj))
        if not self._synced.is_set():
            self._synced.set()
            self.sink(Change(self.resource, SYNCED, None, None))
        return rv

    def _watch_from(self, rv: str) -> str:
        w = self.client.watch(self.resource, rv, self.namespace)
        self._watch = w
        try:
            if self._stop.is_set():
                return rv
            for ev in w:
                obj = ev.object
                key = object_key(obj)
                rv = resource_version(obj) or rv
                with self._lock:
                    prev = self._cache.get(key)
                    if ev.type == DELETED:
                        self._cache.pop(key, None)
                    else:
                        self._cache[key] = obj
                if ev.type == DELETED:
                    self.sink(Change(self.resource, DELETED, prev, None))
                else:
                    self.sink(Change(self.resource, ADDED if prev is None else MODIFIED, prev, obj))
                if self._stop.is_set():
                    break
        finally:
            w.close()
            self._watch = None
        return rv
