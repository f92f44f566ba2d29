"""Informers: list + watch one collection into a local cache and report every change.

An informer runs in its own thread. It lists the collection, then watches from the list's
resourceVersion; when the watch ends it resumes from the last resourceVersion seen, and when that
is too old (410) it relists and reports the difference (objects gone meanwhile as DELETED), as
client-go's reflector does. Consumers get ``(type, old, new)`` changes through a sink callable that
is called from the informer thread: controllers push them onto their own work queue.

Two options cut what an informer keeps, for consumers that hold their own cache (the controller
manager's :class:`~pykueue.controllers.cluster_cache.ClusterCache`): ``transform`` is applied to
every listed and watched object before it is cached and delivered (client-go's
``SharedInformer.SetTransform``, e.g. :func:`strip_managed_fields` as controller-runtime's
``cache.TransformStripManagedFields``), and ``cache_objects=False`` keeps only each object's
resourceVersion (enough to report a relist's differences); then ``get``/``items`` are not
available, MODIFIED changes carry no ``old`` and DELETED ones the deleted object as last seen in the
watch (or, after a relist, a tombstone with its namespace, name and resourceVersion, as client-go's
``DeletedFinalStateUnknown`` stands for an object whose final state was missed).

One informer per collection serves every controller of a process, as controller-runtime's manager
shares one informer per kind among its controllers (one watch, one decode per event): further
consumers register with :meth:`Informer.add_handler`, usually through an :class:`InformerView`,
which keeps its own transformed cache and reports changes as a caching informer of its own would.
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


class OwnWrites:
    """Versions a consumer wrote and has already applied from the write's answer (write-through),
    so that the watch event of that same version need not be decoded and delivered again.

    The consumer (the controller manager's thread) calls :meth:`expect` after applying its
    write's result; the informer's thread asks :meth:`echo` before transforming an event. An event
    of an expected key is skipped when its resourceVersion is the expected one (the echo of the
    write) or older (the consumer ignores versions older than the one it holds); a later version
    is someone else's change and is delivered. Thread-safe."""

    def __init__(self) -> None:
        self._versions: dict[tuple[str, ObjectKey], str] = {}
        self._lock = threading.Lock()
        self.skipped = 0
        """Events skipped so far (tests and benchmarks)."""

    def expect(self, plural: str, key: ObjectKey, version: str) -> None:
        """The consumer applied ``version`` of ``key`` itself (from its own write's answer)."""
        if not version:
            return
        with self._lock:
            self._versions[(plural, key)] = version

    def echo(self, plural: str, key: ObjectKey, version: str) -> bool:
        """Whether the watch event of ``version`` of ``key`` is one the consumer already has."""
        with self._lock:
            mine = self._versions.get((plural, key))
            if mine is None:
                return False
            if version == mine:
                del self._versions[(plural, key)]
                self.skipped += 1
                return True
            if _later(version, mine):
                del self._versions[(plural, key)]
                return False
            self.skipped += 1
            return True

    def forget(self, plural: str, key: ObjectKey | None = None) -> None:
        """Expect nothing more of ``key`` (its deletion), or of every ``plural`` object (a relist)."""
        with self._lock:
            if key is not None:
                self._versions.pop((plural, key), None)
            else:
                for k in [k for k in self._versions if k[0] == plural]:
                    del self._versions[k]

    def __len__(self) -> int:
        return len(self._versions)


def _later(a: str, b: str) -> bool:
    """Whether resourceVersion ``a`` is after ``b`` (an unparsable one counts as later: delivered)."""
    try:
        return int(a) > int(b)
    except ValueError:
        return True


Sink = Callable[[Change], None]
Transform = Callable[[dict[str, Any]], dict[str, Any]]


def strip_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` without ``metadata.managedFields`` (controller-runtime's ``TransformStripManagedFields``).

    Controllers never read them and they are most of a small object's size. Writing such an
    object back is safe: an update whose body has no managedFields keeps the live ones
    (the field manager's ``decodeLiveOrNew``). The metadata dict is copied, not changed in place."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}


def _tombstone(resource: Resource, key: ObjectKey, rv: str) -> dict[str, Any]:
    meta = {"name": key[1], "resourceVersion": rv}
    if key[0]:
        meta["namespace"] = key[0]
    return {"apiVersion": resource.api_version, "kind": resource.kind, "metadata": meta}


class Informer:
    """List + watch of one :class:`Resource` into a cache; see the module docstring."""

    def __init__(
        self,
        client: Client,
        resource: Resource,
        sink: Sink,
        namespace: str | None = None,
        *,
        transform: Transform | None = None,
        cache_objects: bool = True,
        own_writes: OwnWrites | None = None,
    ) -> None:
        if own_writes is not None and cache_objects:
            raise ValueError("own_writes: only for an informer that keeps no objects (cache_objects=False)")
        self.client = client
        self.resource = resource
        self.sink = sink
        self.namespace = namespace
        self.transform = transform
        self.cache_objects = cache_objects
        self.own_writes = own_writes
        """Versions the consumer applied from its own writes: their watch events are not delivered."""
        self._cache: dict[ObjectKey, dict[str, Any]] = {}
        self._versions: dict[ObjectKey, str] = {}  # what is kept when objects are not
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._synced = threading.Event()
        self._watch: Watch | None = None
        self._thread: threading.Thread | None = None
        self._handlers: list[Sink] = []

    def add_handler(self, sink: Sink) -> None:
        """Also deliver every change to ``sink`` (client-go ``SharedInformer.AddEventHandler``).

        Before :meth:`start` only, and only on an informer that keeps no objects. ``sink`` gets
        each change as the informer decoded it: untransformed, including the echoes of the
        primary consumer's own writes that :class:`OwnWrites` keeps from the primary sink,
        MODIFIED changes without ``old``, DELETED ones with the final state (or a relist's
        tombstone), and SYNCED after the initial list. It runs on the informer's thread."""
        if self.cache_objects:
            raise ValueError(f"informer {self.resource.plural}: handlers only on an informer that keeps no objects")
        if self._thread is not None:
            raise RuntimeError(f"informer {self.resource.plural} already started: add handlers before start()")
        self._handlers.append(sink)

    # -- reading the cache (any thread) ---------------------------------------------------------

    def get(self, key: ObjectKey) -> dict[str, Any] | None:
        """The cached object (not a copy: do not mutate)."""
        self._require_objects()
        with self._lock:
            return self._cache.get(key)

    def items(self) -> list[dict[str, Any]]:
        """Every cached object."""
        self._require_objects()
        with self._lock:
            return list(self._cache.values())

    def _require_objects(self) -> None:
        if not self.cache_objects:
            raise RuntimeError(f"informer {self.resource.plural} keeps no objects (cache_objects=False)")

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
        if not self.cache_objects:
            return self._relist_versions()
        items, rv = self.client.list(self.resource, self.namespace)
        if self.transform is not None:
            items = [self.transform(o) for o in items]
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

    def _relist_versions(self) -> str:
        """:meth:`_relist` keeping only resourceVersions."""
        items, rv = self.client.list(self.resource, self.namespace)
        if self.own_writes is not None:  # the list delivers every object's current version anyway
            self.own_writes.forget(self.resource.plural)
        fresh: dict[ObjectKey, str] = {}
        changes: list[Change] = []
        decoded: list[Change] = []  # the same changes untransformed, for the added handlers
        old = self._versions
        for raw in items:
            obj = raw if self.transform is None else self.transform(raw)
            key = object_key(obj)
            version = fresh[key] = resource_version(obj)
            prev = old.get(key)
            if prev is None or prev != version:
                type_ = ADDED if prev is None else MODIFIED
                changes.append(Change(self.resource, type_, None, obj))
                if self._handlers:
                    decoded.append(Change(self.resource, type_, None, raw))
        del items  # the changes hold the objects now; the list itself need not outlive them
        with self._lock:
            self._versions = fresh
        gone = [
            Change(self.resource, DELETED, _tombstone(self.resource, key, version), None)
            for key, version in old.items()
            if key not in fresh
        ]
        # The owner first, SYNCED included: its intake (the manager's inbox) must not wait for the
        # added handlers to work through a whole list (client-go's listeners do not hold each
        # other up either). Each handler then gets the same changes, its SYNCED last.
        for change in gone:
            self.sink(change)
        for change in changes:
            self.sink(change)
        first_sync = not self._synced.is_set()
        if first_sync:
            self._synced.set()
            self.sink(Change(self.resource, SYNCED, None, None))
        if self._handlers:
            del changes  # the owner has them; the handlers get the untransformed ones
            for change in gone:
                self._fan_out(change)
            for change in decoded:
                self._fan_out(change)
            if first_sync:
                self._fan_out(Change(self.resource, SYNCED, None, None))
        return rv

    def _fan_out(self, change: Change) -> None:
        """Hand ``change`` to the added handlers (a failing one must not starve the others)."""
        for handler in self._handlers:
            try:
                handler(change)
            except Exception:
                log.exception("informer %s: a handler failed", self.resource.plural)

    def _watch_from(self, rv: str) -> str:
        w = self.client.watch(self.resource, rv, self.namespace)
        self._watch = w
        try:
            if self._stop.is_set():
                return rv
            own = self.own_writes
            plural = self.resource.plural
            for ev in w:
                if own is not None:
                    if ev.type == DELETED:
                        own.forget(plural, object_key(ev.object))
                    else:
                        key = object_key(ev.object)
                        version = resource_version(ev.object)
                        if own.echo(plural, key, version):
                            # The consumer applied this version from its write's answer: no
                            # transform, no hand-off to its thread (client-go would deliver it and
                            # the manager drop it as not newer than its cache). The other handlers
                            # have not seen it.
                            with self._lock:
                                known = key in self._versions
                                self._versions[key] = version
                            if self._handlers:
                                self._fan_out(Change(self.resource, MODIFIED if known else ADDED, None, ev.object))
                            rv = version or rv
                            if self._stop.is_set():
                                break
                            continue
                obj = ev.object if self.transform is None else self.transform(ev.object)
                key = object_key(obj)
                rv = resource_version(obj) or rv
                if self.cache_objects:
                    self._deliver(ev.type, key, obj)
                else:
                    type_ = self._deliver_version(ev.type, key, obj)
                    if self._handlers:
                        self._fan_out(Change(self.resource, type_, ev.object if type_ == DELETED else None,
                                             None if type_ == DELETED else ev.object))  # fmt: skip
                if self._stop.is_set():
                    break
        finally:
            w.close()
            self._watch = None
        return rv

    def _deliver(self, type_: str, key: ObjectKey, obj: dict[str, Any]) -> None:
        with self._lock:
            prev = self._cache.get(key)
            if type_ == DELETED:
                self._cache.pop(key, None)
            else:
                self._cache[key] = obj
        if type_ == DELETED:
            self.sink(Change(self.resource, DELETED, prev, None))
        else:
            self.sink(Change(self.resource, ADDED if prev is None else MODIFIED, prev, obj))

    def _deliver_version(self, type_: str, key: ObjectKey, obj: dict[str, Any]) -> str:
        """Deliver a watched change; returns its type as delivered."""
        with self._lock:
            if type_ == DELETED:
                self._versions.pop(key, None)
                known = True
            else:
                known = key in self._versions
                self._versions[key] = resource_version(obj)
        if type_ == DELETED:
            self.sink(Change(self.resource, DELETED, obj, None))  # the final state, as the watch saw it
            return DELETED
        delivered = MODIFIED if known else ADDED
        self.sink(Change(self.resource, delivered, None, obj))
        return delivered


class InformerView:
    """One consumer's share of another owner's :class:`Informer` (controller-runtime's shared cache).

    It registers with :meth:`Informer.add_handler`, applies its own ``transform`` to each decoded
    object, keeps the results by key and hands ``sink`` the changes a caching :class:`Informer` of
    its own would: ADDED for a key it does not hold, MODIFIED with the previous cached object,
    DELETED with the last cached object (the final state when it held none), SYNCED once. The
    owner starts and stops the informer; :meth:`start` and :meth:`stop` here do nothing, so a
    component treats a view and an informer alike."""

    def __init__(self, informer: Informer, sink: Sink, *, transform: Transform | None = None) -> None:
        self.informer = informer
        self.resource = informer.resource
        self.sink = sink
        self.transform = transform
        self._cache: dict[ObjectKey, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._synced = threading.Event()
        informer.add_handler(self._on_change)

    def get(self, key: ObjectKey) -> dict[str, Any] | None:
        """The cached object (not a copy: do not mutate)."""
        with self._lock:
            return self._cache.get(key)

    def items(self) -> list[dict[str, Any]]:
        """Every cached object."""
        with self._lock:
            return list(self._cache.values())

    def wait_synced(self, timeout: float | None = None) -> bool:
        """Block until the informer's initial list has been delivered here."""
        return self._synced.wait(timeout)

    def start(self) -> None:
        """Nothing: the informer's owner runs it."""

    def stop(self) -> None:
        """Nothing: the informer's owner stops it."""

    def _on_change(self, change: Change) -> None:
        if change.type == SYNCED:
            if not self._synced.is_set():
                self._synced.set()
                self.sink(change)
            return
        obj = change.object if self.transform is None else self.transform(change.object)
        key = object_key(obj)
        with self._lock:
            prev = self._cache.get(key)
            if change.type == DELETED:
                self._cache.pop(key, None)
            else:
                self._cache[key] = obj
        if change.type == DELETED:
            self.sink(Change(self.resource, DELETED, prev if prev is not None else obj, None))
        else:
            self.sink(Change(self.resource, ADDED if prev is None else MODIFIED, prev, obj))
