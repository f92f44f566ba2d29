"""The persistent object store: a Kubernetes-compatible registry on SQLite.

Concurrency model:

* one SQLite connection, used under ``_db_lock`` (a plain lock) by writers and readers alike;
  every API write is one ``BEGIN IMMEDIATE`` .. ``COMMIT`` transaction;
* on a database file, a write is durable (on stable storage: it survives a power loss) before the
  call returns: commits go into the WAL and one fsync covers every commit made before it (group
  commit, see ``durability.py``). A caller that must not block (the API server's event loop) opts
  out with :meth:`Store.deferred_acks` and awaits :meth:`Store.wait_visible` before answering;
* committed changes go to an outbox (in revision order, under ``_db_lock``) and are delivered to
  watches and subscribers under ``_deliver_lock`` once durable, by whichever thread gets there
  first, so delivery is in revision order, never shows a change a power loss could undo, and
  completes before the write call returns;
* lock order is ``_deliver_lock`` then ``_db_lock`` (watch registration takes both, so a new watch
  neither misses nor duplicates an event).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, MutableSequence
from typing import Any, TypeVar

from pykueue.kube.selectors import LabelSelector, parse_label_selector

from . import errors as e
from . import gc, ops
from .durability import GroupCommit
from .listing import decode_continue, encode_continue
from .tx import SCHEMA, SQL_GET, KindMap, RawEvent, Tx, resource_key
from .types import ResourceKey, WatchEvent, decode, format_timestamp
from .watch import FieldPredicate, Watch, raise_expired

__all__ = ["Store"]

log = logging.getLogger(__name__)

T = TypeVar("T")
Subscriber = Callable[[WatchEvent, ResourceKey], None]
RawSubscriber = Callable[[RawEvent, ResourceKey], None]

Rows = list[tuple[str, bytes]]
Objects = list[dict[str, Any]]
Events = list[RawEvent]
Params = list[Any]

_Waiter = asyncio.Future[None] | Callable[[BaseException | None], None]
"""An event-loop waiter for a durable revision: a future, or a callback called with None (or the
error when the store cannot make it durable)."""

SYNC_AFTER = 0.004
"""Seconds of the event loop's time, from the first request that waits for a sync, after which the
loop syncs at once instead of at the end of its turn; each further sync in the same turn waits
twice as long as the one before. A turn handles every request that arrived in it (a burst of a
controller's writes: tens of milliseconds) and the answers could leave only after the whole burst;
the first sync lets the first answers go after a few milliseconds, and the doubling keeps a long
turn to a few more fsyncs (each blocks the loop, ~0.3 ms on this machine's disk and a wait for a
CPU after it on a loaded one) and its answers in a few large groups (each wakes the client)."""

def _never() -> bool:
    return False


_loop_clock = time.perf_counter  # the loop time SYNC_AFTER is measured in (tests step it)

_KEY_MAX = "\U0010ffff"
_WAL_AUTOCHECKPOINT_PAGES = 4000  # ~16 MB of WAL between checkpoints: fewer fsyncs per write
_LIST_CHUNK = 1000


class Store:
    """Kubernetes-style object store on SQLite (see ``docs/design/control-plane.md`` §1).

    ``path`` is the database file (``None``: in-memory, for tests). ``history`` is how many change
    log entries (= revisions) are kept for watch replay and consistent pagination.
    ``garbage_collection`` enables ownerReference GC and the ``orphan``/``foregroundDeletion``
    finalizers (as kube-controller-manager + apiserver do). ``clock`` returns POSIX seconds (for
    creation/deletion timestamps). A watch whose consumer falls ``watch_queue_limit`` events
    behind is closed (``Watch.overflowed``), as the apiserver drops slow watchers.
    """

    def __init__(
        self,
        path: str | None,
        *,
        history: int = 100_000,
        garbage_collection: bool = True,
        clock: Callable[[], float] = time.time,
        watch_queue_limit: int = 100_000,
    ) -> None:
        if history < 1:
            raise ValueError("history must be at least 1")
        self.path = path
        self._history = history
        self._prune_slack = min(history // 10, 1000)
        self._gc = garbage_collection
        self._clock = clock
        self._watch_queue_limit = watch_queue_limit
        self._db_lock = threading.Lock()
        self._deliver_lock = threading.RLock()
        self._local = threading.local()
        self._outbox: deque[RawEvent] = deque()
        self._watches: dict[tuple[str, str] | None, set[Watch]] = {}
        self._subscribers: list[Subscriber] = []
        self._raw_subscribers: list[RawSubscriber] = []
        self._closed = False
        self._closing = False
        if path:
            _private_files(path)
        self._conn = self._connect(path)
        self._rev, self._oldest, self._counts, self._kinds = self._load_state()
        # Names of the stored core/v1 Namespaces, so that "does the namespace exist" (asked by every
        # create of a namespaced object) needs no query; kept current in ``_publish``.
        self._namespaces: set[str] = {
            k for (k,) in self._conn.execute("SELECT k FROM objects WHERE grp = '' AND resource = 'namespaces'")
        }
        self._delivered = self._rev
        # Event-loop callers waiting for a revision to become visible: (revision, loop, future or
        # callback), in the order they came.
        self._async_waiters: list[tuple[int, asyncio.AbstractEventLoop, _Waiter]] = []
        self._waiters_lock = threading.Lock()
        self._group: GroupCommit | None = None
        self._sync_scheduled: asyncio.AbstractEventLoop | None = None  # the loop a request is queued on
        self._first_wait: float | None = None  # when the first waiter since the last sync came
        self._sync_after = SYNC_AFTER  # this turn's next mid-turn sync: doubled after each one
        self.loop_busy: Callable[[], bool] = _never
        """Whether the running event loop has requests waiting for their turn (set by the API
        server: its fair dispatcher's queue). The loop then does not wait for an fsync: the sync
        thread delivers, and the loop serves those requests meanwhile."""
        if path:
            self._group = GroupCommit(path, self._committed, self._after_sync, self._fail_waiters)
            _private_files(path)  # the WAL SQLite created takes the database's mode; the rest too

    # --- lifecycle ------------------------------------------------------------------------------

    @staticmethod
    def _connect(path: str | None) -> sqlite3.Connection:
        conn = sqlite3.connect(
            path or ":memory:",
            isolation_level=None,
            check_same_thread=False,
            cached_statements=256,
            timeout=1.0,
        )
        try:
            if path:
                # Exclusive locking: one process owns the file (a second opener fails instead of
                # forking the revision sequence); the WAL index lives in process memory.
                conn.execute("PRAGMA locking_mode=EXCLUSIVE")
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(f"PRAGMA wal_autocheckpoint={_WAL_AUTOCHECKPOINT_PAGES}")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=1000")
            conn.execute("PRAGMA temp_store=MEMORY")
            conn.execute("PRAGMA cache_size=-65536")
            conn.executescript(SCHEMA)
        except sqlite3.OperationalError as err:
            conn.close()
            raise e.InternalError(f"cannot open the store at {path}: {err}") from err
        return conn

    def _load_state(self) -> tuple[int, int, dict[tuple[str, str], int], KindMap]:
        conn = self._conn
        floor = int(conn.execute("SELECT value FROM meta WHERE key = 'floor'").fetchone()[0])
        revision = int(conn.execute("SELECT MAX(rev) FROM changes").fetchone()[0] or 0)
        counts = {
            (g, r): int(n)
            for g, r, n in conn.execute("SELECT grp, resource, COUNT(*) FROM objects GROUP BY grp, resource")
        }
        kinds: KindMap = {}
        for g, kind, resource, namespaced in conn.execute(
            "SELECT grp, kind, resource, namespaced FROM kinds"
        ):
            kinds.setdefault((g, kind), set()).add((resource, bool(namespaced)))
        return revision, min(floor, revision + 1), counts, kinds

    def close(self) -> None:
        """Close every watch and the database (after syncing what is committed). Idempotent."""
        with self._db_lock:
            # Writes are refused from here, before the sync thread's last round: that round then
            # covers every commit, and no waiter is left for a thread that has ended.
            self._closing = True
        if self._group is not None:
            self._group.stop()
        with self._deliver_lock:
            watches = [w for group in self._watches.values() for w in group]
        for watch in watches:
            watch.close()
        with self._db_lock:
            if not self._closed:
                self._closed = True
                self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise e.InternalError("the store is closed")

    # --- state ----------------------------------------------------------------------------------

    @property
    def revision(self) -> int:
        """The current global revision (that of the latest committed write)."""
        return self._rev

    @property
    def oldest_revision(self) -> int:
        """The oldest revision of the retained history: watches and lists can start at this - 1."""
        return self._oldest

    def count(self, key: ResourceKey, namespace: str | None = None) -> int:
        """Number of objects in a collection (O(1) without ``namespace``)."""
        if not namespace or not key.namespaced:
            return self._counts.get((key.group, key.resource), 0)
        with self._db_lock:
            self._check_open()
            row = self._conn.execute(
                "SELECT COUNT(*) FROM objects WHERE grp = ? AND resource = ? AND k > ? AND k < ?",
                (key.group, key.resource, f"{namespace}/", f"{namespace}0"),
            ).fetchone()
        return int(row[0])

    def counts(self) -> dict[tuple[str, str], int]:
        """Object counts per (group, resource)."""
        with self._db_lock:
            return {k: v for k, v in self._counts.items() if v}

    # --- reads ----------------------------------------------------------------------------------

    def namespace_exists(self, name: str) -> bool:
        """Whether the Namespace ``name`` is stored (answered from memory, no query)."""
        return name in self._namespaces

    def get(self, key: ResourceKey, namespace: str | None, name: str) -> dict[str, Any]:
        """The stored object, or NotFound (``<resource>.<group> "<name>" not found``)."""
        loc = ops.locate(key, namespace, name)
        with self._db_lock:
            self._check_open()
            row = self._conn.execute(SQL_GET, loc).fetchone()
            rev = self._rev
        if row is None:
            raise e.not_found(key.group, key.resource, name)
        raw = bytes(row[0])
        self._local.read = (rev, loc, raw)  # see Tx.known
        result: dict[str, Any] = decode(raw)
        return result

    def list(
        self,
        key: ResourceKey,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: FieldPredicate | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        at_revision: int | None = None,
    ) -> tuple[Objects, int, str | None]:
        """List a collection: (items in key order, list revision, next continue token or None).

        ``namespace=None`` lists every namespace. With ``limit``, at most that many items are
        returned, and a token when more keys remain; following pages are served consistently as
        of the first page's revision (Expired, with a token to continue inconsistently, once
        that revision has left the history). ``at_revision`` lists the state at an exact past
        revision (``resourceVersionMatch=Exact``).
        """
        selector = parse_label_selector(label_selector) if label_selector else None
        if selector is not None and selector.empty:
            selector = None
        after, high = self._range(key, namespace)
        list_rev, after = self._list_start(after, continue_token, at_revision)
        items: Objects = []
        last: str | None = None
        more = False
        for k, data in self._rows_at(key, after, high, list_rev, self._chunk_size(limit, selector)):
            if limit and len(items) >= limit:
                more = True
                break
            last = k
            obj: dict[str, Any] = decode(data)
            if selector is not None and not selector.matches_object(obj):
                continue
            if field_selector is not None and not field_selector(obj):
                continue
            items.append(obj)
        token = encode_continue(list_rev, last) if more and last is not None else None
        return items, list_rev, token

    @staticmethod
    def _chunk_size(limit: int | None, selector: LabelSelector | None) -> int:
        if not limit or limit <= 0:
            return _LIST_CHUNK
        return min(limit + 1 if selector is None else max(limit + 1, 256), _LIST_CHUNK)

    @staticmethod
    def _range(key: ResourceKey, namespace: str | None) -> tuple[str, str]:
        if key.namespaced and namespace:
            return f"{namespace}/", f"{namespace}0"
        return "", _KEY_MAX

    def _list_start(self, after: str, token: str | None, at_revision: int | None) -> tuple[int, str]:
        with self._db_lock:
            self._check_open()
            if token:
                token_rev, last = decode_continue(token)
                if token_rev == -1:
                    return self._rev, max(after, last)
                if token_rev < self._oldest - 1:
                    raise e.Expired(e.CONTINUE_EXPIRED, continue_token=encode_continue(-1, last))
                return token_rev, max(after, last)
            if at_revision is not None:
                if at_revision > self._rev:
                    raise e.TooLargeResourceVersion(at_revision, self._rev)
                if at_revision < self._oldest - 1:
                    raise e.Expired(e.LIST_EXPIRED)
                return at_revision, after
            return self._rev, after

    def _rows_at(
        self, key: ResourceKey, after: str, high: str, at_rev: int, chunk: int
    ) -> Iterator[tuple[str, bytes]]:
        """(k, data) of the collection as of ``at_rev``, in key order, fetched chunk by chunk."""
        while True:
            with self._db_lock:
                self._check_open()
                if at_rev < self._rev and at_rev < self._oldest - 1:
                    raise e.Expired(e.LIST_EXPIRED)
                rows, bound = self._chunk(key, after, high, at_rev, chunk)
            yield from rows
            if bound is None:
                return
            after = bound

    def _chunk(
        self, key: ResourceKey, after: str, high: str, at_rev: int, size: int
    ) -> tuple[Rows, str | None]:
        """Rows with key in (after, bound] as of ``at_rev``; bound None when the range is exhausted.

        Current rows are rolled back with the change log: the ``prev`` of the first change after
        ``at_rev`` of a key is its state at ``at_rev`` (NULL: it did not exist).
        """
        conn = self._conn
        rows: Rows = conn.execute(
            "SELECT o.k, c.data FROM objects o JOIN changes c ON c.rev = o.rv "
            "WHERE o.grp = ? AND o.resource = ? AND o.k > ? AND o.k < ? ORDER BY o.k LIMIT ?",
            (key.group, key.resource, after, high, size),
        ).fetchall()
        bound = rows[-1][0] if len(rows) == size else None
        if at_rev >= self._rev:
            return rows, bound
        upper, op = (bound, "<=") if bound is not None else (high, "<")
        first: dict[str, int | None] = {}
        for k, prev in conn.execute(
            f"SELECT k, prev FROM changes WHERE rev > ? AND grp = ? AND resource = ? AND k > ? AND k {op} ? "
            "ORDER BY rev",
            (at_rev, key.group, key.resource, after, upper),
        ):
            first.setdefault(k, prev)
        if not first:
            return rows, bound
        merged = dict(rows)
        for k, prev in first.items():
            if prev is None:
                merged.pop(k, None)
            else:
                merged[k] = conn.execute("SELECT data FROM changes WHERE rev = ?", (prev,)).fetchone()[0]
        return sorted(merged.items()), bound

    # --- writes ---------------------------------------------------------------------------------

    def create(self, key: ResourceKey, obj: dict[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        """Create an object (``metadata.name`` or ``generateName`` required); returns it as stored.

        Sets uid, creationTimestamp, generation 1 and resourceVersion; AlreadyExists when taken.
        ``dry_run`` validates and returns the would-be object (without resourceVersion).
        """
        return self._write(dry_run, lambda tx: ops.create(tx, key, obj))

    def update(
        self,
        key: ResourceKey,
        obj: dict[str, Any],
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        status_subresource: bool = True,
    ) -> dict[str, Any]:
        """Replace an object (optimistic concurrency on a non-empty ``metadata.resourceVersion``).

        With ``status_subresource`` the main resource keeps the stored status and
        ``subresource="status"`` changes only the status. ``generation`` increments on spec
        changes. Removing the last finalizer of an object being deleted deletes it (the deleted
        object is returned). A no-op update returns the stored object without a new revision.
        """
        return self._write(
            dry_run,
            lambda tx: ops.update(
                tx, key, obj, subresource=subresource, status_subresource=status_subresource
            ),
        )

    def delete(
        self,
        key: ResourceKey,
        namespace: str | None,
        name: str,
        *,
        propagation: str | None = "Background",
        preconditions: dict[str, Any] | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Delete an object; returns it as deleted, or as marked when finalizers are pending.

        ``propagation``: Background | Foreground | Orphan, or None to keep what the object's
        ``orphan``/``foregroundDeletion`` finalizers say (Background otherwise). ``preconditions``
        ``{"uid": ..., "resourceVersion": ...}`` must match or Conflict is raised.
        """
        ops.check_propagation(propagation)
        loc = ops.locate(key, namespace, name)
        return self._write(
            dry_run,
            lambda tx: ops.delete(tx, key, loc, name, propagation=propagation, preconditions=preconditions),
        )

    def delete_collection(
        self,
        key: ResourceKey,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: FieldPredicate | None = None,
        propagation: str | None = "Background",
        dry_run: bool = False,
    ) -> Objects:
        """Delete every matching object (as ``deletecollection``); returns them as deleted/marked."""
        ops.check_propagation(propagation)
        items, _, _ = self.list(key, namespace, label_selector=label_selector, field_selector=field_selector)
        deleted: Objects = []
        for item in items:
            meta = item["metadata"]
            try:
                deleted.append(
                    self.delete(
                        key,
                        meta.get("namespace"),
                        meta["name"],
                        propagation=propagation,
                        preconditions={"uid": meta.get("uid")},
                        dry_run=dry_run,
                    )
                )
            except (e.NotFound, e.Conflict):
                continue
        return deleted

    def _write(self, dry_run: bool, op: Callable[[Tx], T]) -> T:
        """Run ``op`` (and the GC it triggers) in one transaction; make it durable; deliver its events."""
        group = self._group
        with self._db_lock:
            self._check_open()
            if self._closing:
                raise e.InternalError("the store is closing")
            if group is not None and group.failure is not None:
                raise e.InternalError(f"the store cannot make writes durable: {group.failure}")
            conn = self._conn
            now = format_timestamp(self._clock())
            tx = Tx(conn, self._rev, now, self._kinds, gc_enabled=self._gc, dry_run=dry_run)
            read = getattr(self._local, "read", None)
            if read is not None:
                self._local.read = None
                if read[0] == self._rev:  # nothing was committed since this thread read it
                    tx.known = (read[1], read[2])
            try:
                conn.execute("BEGIN IMMEDIATE")
                result = op(tx)
                if tx.events and not dry_run:
                    gc.run(tx)
                    new_oldest = self._prune(tx)
                    conn.execute("COMMIT")
                else:
                    conn.execute("ROLLBACK")
                    return result
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            self._publish(tx, new_oldest)
        if group is None:
            self._drain()
        elif getattr(self._local, "deferred", False):
            pass  # the caller (the event loop) awaits wait_visible, which asks for the sync
        elif getattr(self._local, "background", False):
            group.request()  # see background_acks: the sync thread makes it durable, then delivers
        elif getattr(self._local, "draining", False):
            # A subscriber writing from a delivery must not wait for itself: the background
            # thread syncs and delivers.
            group.request()
        else:
            try:
                group.sync(tx.rev)
            except OSError as err:
                raise e.InternalError(str(err)) from err
            self._drain()
        return result

    def _committed(self) -> int:
        return self._rev

    def _after_sync(self) -> None:
        """After a background fsync: deliver on the event loops that wait (else on this thread).

        On the loop, the watch hub dispatches directly and waiters are resolved without a
        thread hand-over each: one wake-up of the loop per fsync.
        """
        with self._waiters_lock:
            loops = {waiter[1] for waiter in self._async_waiters}
        for loop in loops:
            try:
                loop.call_soon_threadsafe(self._drain)
            except RuntimeError:  # the loop is closed
                loops = set()
        if not loops:
            self._drain()

    @contextlib.contextmanager
    def deferred_acks(self) -> Iterator[None]:
        """Writes on this thread return once committed, before they are durable and delivered.

        For the API server's event loop, which must not block on an fsync: it answers only after
        ``await wait_visible()``, so nothing is acknowledged before it is durable.
        """
        self._local.deferred = True
        try:
            yield
        finally:
            self._local.deferred = False

    @contextlib.contextmanager
    def background_acks(self) -> Iterator[None]:
        """Writes on this thread return once committed; the sync thread makes them durable and
        then delivers them to watches (the order and the durability of what others see are kept).

        For the embedded controllers, a single sequential writer: waiting for an fsync on every
        write made one fsync (milliseconds) the floor of each of their writes, and their thread
        spent half of a scheduler benchmark blocked there. They apply their own writes from the
        answer, never act on them outside the store except through further writes (which are
        delivered after these), and a power loss ends them as it ends the server.
        """
        self._local.background = True
        try:
            yield
        finally:
            self._local.background = False

    async def wait_visible(self) -> None:
        """Wait until everything committed so far is durable and delivered to watches.

        After a write made under :meth:`deferred_acks`, or before answering a read that may have
        seen such a write: an answer never shows a change that a power loss could undo.
        """
        revision = self._rev
        if self._group is None or self._delivered >= revision:
            return
        if self._group.failure is not None:
            raise e.InternalError(f"the store cannot make writes durable: {self._group.failure}")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._wait_for(revision, loop, future)
        await future

    def when_visible(self, callback: Callable[[BaseException | None], None]) -> bool:
        """:meth:`wait_visible` without a coroutine: True when everything committed so far is
        already durable and delivered (answer now); else False, and ``callback(None)`` is called on
        this event loop, inside the callback that made it durable (this call itself when it syncs
        mid-turn), or ``callback(error)`` when the store cannot make it durable.

        An awaiting coroutine only resumes at the loop's next turn, after every other request of
        the turn: the API server answers from here instead, as soon as the fsync is done.
        """
        revision = self._rev
        group = self._group
        if group is None:
            return True
        if self._durable_undelivered(group):
            # The sync thread made writes durable since (see _wait_for): deliver them now,
            # mid-turn, rather than from its callback at the loop's next turn.
            self._drain()
        if self._delivered >= revision:
            return True
        if group.failure is not None:
            raise e.InternalError(f"the store cannot make writes durable: {group.failure}")
        self._wait_for(revision, asyncio.get_running_loop(), callback)
        return False

    def _wait_for(self, revision: int, loop: asyncio.AbstractEventLoop, waiter: _Waiter) -> None:
        """Queue ``waiter`` for ``revision`` and see that a sync comes: at the end of this turn of
        the loop, or now when the loop has already spent :data:`SYNC_AFTER` seconds (doubled after
        each such sync in a turn) on requests whose answers wait (a burst: the first answers leave
        while the rest is handled). The turn's first write also has the sync thread start an
        fsync at once, while the turn goes on; :meth:`when_visible` delivers what it covered at
        the turn's next request, else its callback does at the next turn.

        With the fsync started only at the end of the turn, an answer waited for the rest of the
        turn, the fsync and the loop's next turn: 6.0-8.2 ms at serve for the scheduler
        benchmark runner's status patches (issue 16 in bench/RESULTS.md)."""
        group = self._group
        with self._waiters_lock:
            # Checked under the lock _fail_waiters takes (the failure is recorded before it runs):
            # a waiter queued after its sweep would never be answered.
            failed = group is not None and group.failure is not None
            if not failed:
                self._async_waiters.append((revision, loop, waiter))
        if failed:
            assert group is not None
            _resolve_all([waiter], e.InternalError(f"the store cannot make writes durable: {group.failure}"))
            return
        if self._delivered >= revision:  # delivered meanwhile: resolve now
            self._release_waiters()
            return
        if self._sync_scheduled is not loop:
            # One sync per turn of the loop, after the requests it is handling: they all commit
            # first and share the fsync. (Per loop: one closed with the sync still queued must
            # not hold back another's.)
            self._sync_scheduled = loop
            loop.call_soon(self._sync_for_loop)
            if group is not None and group.synced < revision and not group.syncing():
                # And one for the turn's first write, started now. Not one for every write: each
                # fsync round takes the GIL from the loop twice, and at every write serve's API
                # process spent about 20 % more CPU under a heavy write load (bench/RESULTS.md).
                group.request()
        now = _loop_clock()
        first = self._first_wait
        if first is None:
            self._first_wait = now
        elif now - first >= self._sync_after:
            self._sync_after *= 2
            self._sync_on_loop(wait=not self.loop_busy())

    def _sync_for_loop(self) -> None:
        """The sync at the end of a turn (see :meth:`_sync_on_loop`)."""
        self._sync_scheduled = None
        self._sync_after = SYNC_AFTER
        # Waiting for the disk at the end of a turn costs the loop nothing else only when one
        # answer waits for it: with more, other requests are likely queued behind them, and
        # their writes share the next fsync if the loop goes on (issue 16 in bench/RESULTS.md).
        # Nor while requests wait for their turn in the dispatcher: under a saturating load the
        # loop spent 10.9 % of its time blocked in these waits (bench/RESULTS.md, issue 16, "the
        # loop no longer waits for an fsync while requests queue").
        self._sync_on_loop(wait=len(self._async_waiters) <= 1 and not self.loop_busy())

    def _sync_on_loop(self, wait: bool) -> None:
        """On the loop: have the sync thread fsync; if ``wait``, deliver here when it ends
        within a short wait (its waiters are resolved in this call), else the sync thread
        delivers (see GroupCommit.try_sync)."""
        self._first_wait = None
        group = self._group
        if group is None:
            return
        try:
            group.try_sync(self._rev, wait)
        except OSError:  # the waiters were failed by _fail_waiters
            return
        if self._durable_undelivered(group):  # all of it, or what an earlier fsync covered
            self._drain()

    def _durable_undelivered(self, group: GroupCommit) -> bool:
        """Whether the oldest change not delivered yet is durable (without the delivery lock:
        another thread may deliver, and empty the outbox, meanwhile)."""
        try:
            return self._outbox[0].rev <= group.synced
        except IndexError:
            return False

    def _release_waiters(self) -> None:
        """Resolve the event-loop waiters whose revision is delivered, in the order they came
        (one call per loop; on the running loop at once).

        Answers of concurrent requests may leave out of revision order: when another thread
        drains (a synchronous writer, the sync thread), the waiters it releases are resolved by a
        callback posted to the loop, and the loop may meanwhile commit, sync and answer a later
        write itself. No client can tell: when A (revision a) is answered after B (revision
        b > a), A was still unanswered when B committed, so the two requests overlapped (no
        client sent B after A's answer: a connection's next request is read only after its
        previous answer), and B's answer waited until every revision up to b, a too, was durable
        and delivered (a read after it sees A). kube-apiserver does not order the answers of
        overlapping requests either (each returns when its own etcd transaction does:
        ``k8s.io/apiserver`` ``pkg/storage/etcd3/store.go`` ``store.Create``/``GuaranteedUpdate``),
        nor an answer against the watch events of later revisions (the watch cache dispatches
        from etcd's watch on its own goroutine: ``pkg/storage/cacher/cacher.go``
        ``Cacher.dispatchEvents``). Watch events and subscribers stay in revision order
        (:meth:`_drain`). Measured: bench/RESULTS.md, "Loose ends (branch
        hygiene)"; the rules that do hold are tests/store/test_durability.py's
        ``test_answers_under_loop_and_thread_writers_keep_the_client_visible_order``."""
        if not self._async_waiters:
            return
        delivered = self._delivered
        by_loop: dict[asyncio.AbstractEventLoop, list[_Waiter]] = {}
        with self._waiters_lock:
            keep = []
            for waiter in self._async_waiters:
                if waiter[0] <= delivered:
                    by_loop.setdefault(waiter[1], []).append(waiter[2])
                else:
                    keep.append(waiter)
            self._async_waiters = keep
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        for loop, waiters in by_loop.items():
            if loop is running:
                _resolve_all(waiters, None)
                continue
            with contextlib.suppress(RuntimeError):  # the loop is closed
                loop.call_soon_threadsafe(_resolve_all, waiters, None)

    def _fail_waiters(self, err: OSError) -> None:
        with self._waiters_lock:
            waiters, self._async_waiters = self._async_waiters, []
        failure = e.InternalError(f"the store cannot make writes durable: {err}")
        for _, loop, waiter in waiters:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_resolve_all, [waiter], failure)

    def _prune(self, tx: Tx) -> int:
        """Raise the history floor to keep the newest ``history`` revisions (in slack-sized steps).

        Deletes the previous states of the changes leaving the history and its DELETED rows (see
        tx.py): what stays below the floor is live data or the state before a retained change.
        """
        floor = self._oldest
        if tx.rev - floor + 1 <= self._history + self._prune_slack:
            return floor
        new_floor = tx.rev - self._history + 1
        conn = tx.conn
        conn.execute(
            "DELETE FROM changes WHERE rev IN "
            "(SELECT prev FROM changes WHERE rev >= ? AND rev < ? AND prev IS NOT NULL)",
            (floor, new_floor),
        )
        conn.execute(
            "DELETE FROM changes WHERE rev >= ? AND rev < ? AND type = 'DELETED'", (floor, new_floor)
        )
        conn.execute("UPDATE meta SET value = ? WHERE key = 'floor'", (new_floor,))
        return new_floor

    def _publish(self, tx: Tx, new_oldest: int) -> None:
        """After COMMIT (still under ``_db_lock``): advance the in-memory state, queue the events."""
        self._rev = tx.rev
        self._oldest = new_oldest
        for ident, delta in tx.deltas.items():
            self._counts[ident] = self._counts.get(ident, 0) + delta
        for kind, entries in tx.new_kinds.items():
            self._kinds.setdefault(kind, set()).update(entries)
        for event in tx.events:
            if event.resource == "namespaces" and event.group == "":
                if event.type == "DELETED":
                    self._namespaces.discard(event.k)
                else:
                    self._namespaces.add(event.k)
        self._outbox.extend(tx.events)

    # --- delivery -------------------------------------------------------------------------------

    def _drain(self) -> None:
        """Deliver queued durable events in revision order (re-entrant calls from callbacks return)."""
        with self._deliver_lock:
            if getattr(self._local, "draining", False):
                return
            self._local.draining = True
            try:
                limit = self._group.synced if self._group is not None else None
                outbox = self._outbox
                while outbox and (limit is None or outbox[0].rev <= limit):
                    event = outbox.popleft()
                    self._dispatch(event)
                    self._delivered = event.rev
            finally:
                self._local.draining = False
        self._release_waiters()

    def _dispatch(self, event: RawEvent) -> None:
        targets = tuple(self._watches.get((event.group, event.resource), ())) + tuple(
            self._watches.get(None, ())
        )
        for watch in targets:
            watch.offer(event)
        if not self._subscribers and not self._raw_subscribers:
            return
        key = resource_key(event.group, event.resource, event.k)
        for raw_callback in tuple(self._raw_subscribers):
            try:
                raw_callback(event, key)
            except Exception:
                log.exception("store subscriber failed on %s %s", event.type, event.k)
        for callback in tuple(self._subscribers):
            try:
                callback(WatchEvent(event.type, decode(event.data), event.rev, key), key)
            except Exception:
                log.exception("store subscriber failed on %s %s", event.type, event.k)

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback(event, key)`` for every committed change, in revision order.

        Callbacks run on the writing thread after the commit, one at a time; each gets its own
        decoded object. A callback may write to the store (its events are delivered after the
        current one). Returns a function that unsubscribes.
        """
        return self._add_subscriber(self._subscribers, callback)

    def subscribe_raw(self, callback: RawSubscriber) -> Callable[[], None]:
        """:meth:`subscribe` with the change as stored (JSON bytes): the callback decodes if it must."""
        return self._add_subscriber(self._raw_subscribers, callback)

    def _add_subscriber(self, subscribers: MutableSequence[Any], callback: Any) -> Callable[[], None]:
        with self._deliver_lock:
            subscribers.append(callback)

        def unsubscribe() -> None:
            with self._deliver_lock:
                if callback in subscribers:
                    subscribers.remove(callback)

        return unsubscribe

    def watch(
        self,
        key: ResourceKey | None,
        namespace: str | None = None,
        *,
        since: int | None = None,
        label_selector: str | None = None,
        field_selector: FieldPredicate | None = None,
        initial_events: bool = False,
    ) -> Watch:
        """Watch a collection (``key=None``: every collection), optionally one namespace.

        ``since=None`` starts from now; ``since=R`` first replays the changes after revision R
        (Expired ``too old resource version: R (oldest-1)`` when they were pruned). With
        ``initial_events`` the current objects come first as ADDED events (the state at the
        watch's start revision), then the changes after it (``since`` is then ignored).
        """
        selector = parse_label_selector(label_selector) if label_selector else None
        scope = (key.group, key.resource) if key is not None else None
        if key is not None and not key.namespaced:
            namespace = None
        with self._deliver_lock:
            with self._db_lock:
                self._check_open()
                # Live events start after the last delivered one (later ones are not durable yet
                # and will be offered to this watch when they are); the initial state is current.
                now = self._rev if initial_events else self._delivered
                if initial_events:
                    since = None
                elif since is not None and since < self._oldest - 1:
                    raise_expired(since, self._oldest)
                initial = self._snapshot(scope, namespace) if initial_events else []
            replay = (since, now) if since is not None and since < now else None
            watch = Watch(
                scope=scope,
                namespace=namespace,
                label_selector=selector,
                field_selector=field_selector,
                skip_upto=max(now, since or 0),
                replay=replay,
                initial=initial,
                fetch=self._replay_page,
                unregister=self._unregister,
                progress=self._delivered_revision,
                queue_limit=self._watch_queue_limit,
            )
            self._watches.setdefault(scope, set()).add(watch)
        return watch

    def _delivered_revision(self) -> int:
        with self._deliver_lock:
            return self._delivered

    def _unregister(self, watch: Watch) -> None:
        with self._deliver_lock:
            group = self._watches.get(watch.scope)
            if group is not None:
                group.discard(watch)
                if not group:
                    del self._watches[watch.scope]

    @staticmethod
    def _filters(scope: tuple[str, str] | None, prefix: str | None, table: str) -> tuple[str, Params]:
        sql: str = ""
        params: Params = []
        if scope is not None:
            sql += f" AND {table}grp = ? AND {table}resource = ?"
            params += list(scope)
        if prefix is not None:
            sql += f" AND {table}k > ? AND {table}k < ?"
            params += [prefix, prefix[:-1] + "0"]
        return sql, params

    def _snapshot(self, scope: tuple[str, str] | None, namespace: str | None) -> Events:
        where, params = self._filters(scope, f"{namespace}/" if namespace else None, "o.")
        rows = self._conn.execute(
            "SELECT o.grp, o.resource, o.k, o.rv, c.data FROM objects o JOIN changes c ON c.rev = o.rv "
            f"WHERE 1 = 1{where} ORDER BY o.grp, o.resource, o.k",
            params,
        )
        return [RawEvent(int(rv), "ADDED", g, r, k, bytes(data), None) for g, r, k, rv, data in rows]

    def _replay_page(self, watch: Watch, after: int, upto: int, size: int) -> Events:
        """Change-log entries for ``watch`` with revision in (after, upto]."""
        where, params = self._filters(watch.scope, watch.prefix, "c.")
        prev = (
            "p.data FROM changes c LEFT JOIN changes p ON p.rev = c.prev"
            if watch.filtered
            else "NULL FROM changes c"
        )
        with self._db_lock:
            self._check_open()
            if after < self._oldest - 1:
                raise_expired(after, self._oldest)
            rows = self._conn.execute(
                f"SELECT c.rev, c.grp, c.resource, c.k, c.type, c.data, {prev} "
                f"WHERE c.rev > ? AND c.rev <= ?{where} ORDER BY c.rev LIMIT ?",
                [after, upto, *params, size],
            ).fetchall()
        return [
            RawEvent(int(rev), t, g, r, k, bytes(data), None if prev is None else bytes(prev))
            for rev, g, r, k, t, data, prev in rows
        ]


def _resolve_all(waiters: list[_Waiter], error: BaseException | None) -> None:
    for waiter in waiters:
        if isinstance(waiter, asyncio.Future):
            if not waiter.done():
                if error is None:
                    waiter.set_result(None)
                else:
                    waiter.set_exception(error)
            continue
        try:
            waiter(error)
        except Exception:  # the waiter's own failure; the others are still answered
            log.exception("a callback waiting for a durable write failed")


def _private_files(path: str) -> None:
    """The database, its WAL and shared-memory files: mode 0600 (created so if missing).

    SQLite creates the database as 0644 less the umask and gives the WAL and SHM files the
    database's mode; the store's content is nobody else's to read.
    """
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    for name in (path, path + "-wal", path + "-shm", path + "-journal"):
        with contextlib.suppress(FileNotFoundError):
            if os.stat(name).st_mode & 0o777 != 0o600:
                os.chmod(name, 0o600)
