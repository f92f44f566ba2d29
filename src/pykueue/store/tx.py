"""SQLite schema and the write transaction: object index, change log, owner index.

Layout (one database file, WAL, ``synchronous=NORMAL``):

* ``changes(rev, grp, resource, k, type, data, prev)`` — the change log *and* the object data:
  one row per revision; ``data`` is the object after the change (for DELETED: the last state
  carrying the deletion revision), ``prev`` the revision of the key's previous state (NULL for
  ADDED). ``k`` is ``namespace/name`` for namespaced resources and ``name`` for cluster-scoped
  ones, so ordering by ``k`` is the etcd key order and a namespace is the range
  ``(ns + "/", ns + "0")``.
* ``objects(grp, resource, k, rv)`` — the live objects: which change row holds each one's data.
  Each object's JSON is written once per write (2 B-tree pages per create), which is what makes
  a durable create cheap.
* ``owner_refs(owner_uid, grp, resource, k)`` — reverse index of ``metadata.ownerReferences``.
* ``kinds(grp, kind, resource, namespaced)`` — which resource serves a kind (learnt from stored
  objects), to resolve ownerReferences (apiVersion/kind/name) like the GC's REST mapper.
* ``meta`` — ``floor``: the oldest revision of the retained (contiguous) history.

The global revision is the newest change row (the log is never pruned above ``floor``), so the
counter, the object and its change-log row are one insert in one transaction: a killed process
leaves all of a write or none of it.

History pruning keeps every row >= ``floor``, plus below it the rows still needed: live objects'
data, and the previous states of retained changes (so a list can be rolled back to any revision
>= ``floor - 1``). Raising the floor from F to F' deletes exactly the previous states of rows in
[F, F') and the DELETED rows in [F, F').
"""

from __future__ import annotations

import sqlite3
from collections import deque
from dataclasses import dataclass
from typing import Any

from .types import ResourceKey, decode, encode

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS changes (
    rev INTEGER PRIMARY KEY,
    grp TEXT NOT NULL,
    resource TEXT NOT NULL,
    k TEXT NOT NULL,
    type TEXT NOT NULL,
    data BLOB NOT NULL,
    prev INTEGER
);
CREATE TABLE IF NOT EXISTS objects (
    grp TEXT NOT NULL,
    resource TEXT NOT NULL,
    k TEXT NOT NULL,
    rv INTEGER NOT NULL,
    PRIMARY KEY (grp, resource, k)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS owner_refs (
    owner_uid TEXT NOT NULL,
    grp TEXT NOT NULL,
    resource TEXT NOT NULL,
    k TEXT NOT NULL,
    PRIMARY KEY (owner_uid, grp, resource, k)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kinds (
    grp TEXT NOT NULL,
    kind TEXT NOT NULL,
    resource TEXT NOT NULL,
    namespaced INTEGER NOT NULL,
    PRIMARY KEY (grp, kind, resource)
) WITHOUT ROWID;
INSERT OR IGNORE INTO meta (key, value) VALUES ('floor', 1);
INSERT OR IGNORE INTO meta (key, value) VALUES ('schema', 2);
"""

SQL_GET = "SELECT c.data FROM objects o JOIN changes c ON c.rev = o.rv WHERE o.grp = ? AND o.resource = ? AND o.k = ?"
SQL_INSERT = "INSERT INTO objects (grp, resource, k, rv) VALUES (?, ?, ?, ?)"
SQL_UPDATE = "UPDATE objects SET rv = ? WHERE grp = ? AND resource = ? AND k = ?"
SQL_DELETE = "DELETE FROM objects WHERE grp = ? AND resource = ? AND k = ?"
SQL_LOG = "INSERT INTO changes (rev, grp, resource, k, type, data, prev) VALUES (?, ?, ?, ?, ?, ?, ?)"
SQL_REF_ADD = "INSERT OR IGNORE INTO owner_refs (owner_uid, grp, resource, k) VALUES (?, ?, ?, ?)"
SQL_REF_DEL = "DELETE FROM owner_refs WHERE owner_uid = ? AND grp = ? AND resource = ? AND k = ?"
SQL_DEPENDENTS = "SELECT grp, resource, k FROM owner_refs WHERE owner_uid = ?"
SQL_HAS_DEPENDENTS = "SELECT 1 FROM owner_refs WHERE owner_uid = ? LIMIT 1"
SQL_KIND_ADD = "INSERT OR IGNORE INTO kinds (grp, kind, resource, namespaced) VALUES (?, ?, ?, ?)"

ORPHAN = "orphan"
FOREGROUND = "foregroundDeletion"

Loc = tuple[str, str, str]
"""Internal address of an object: (group, resource, k)."""

KindMap = dict[tuple[str, str], set[tuple[str, bool]]]
"""(group, kind) -> {(resource, namespaced)}."""


def make_k(namespace: str, name: str, namespaced: bool) -> str:
    """The ``k`` column for an object."""
    return f"{namespace}/{name}" if namespaced else name


def loc_namespace(k: str) -> str:
    """The namespace part of ``k`` (``""`` for cluster-scoped objects)."""
    slash = k.find("/")
    return k[:slash] if slash >= 0 else ""


def loc_name(k: str) -> str:
    """The name part of ``k``."""
    return k[k.find("/") + 1 :]


_KEYS: dict[tuple[str, str, bool], ResourceKey] = {}


def resource_key(group: str, resource: str, k: str) -> ResourceKey:
    """The (interned) :class:`ResourceKey` of a stored object."""
    ident = (group, resource, "/" in k)
    key = _KEYS.get(ident)
    if key is None:
        key = _KEYS.setdefault(ident, ResourceKey(*ident))
    return key


@dataclass(slots=True)
class RawEvent:
    """A committed change as stored: JSON bytes, decoded only by whoever consumes it."""

    rev: int
    type: str
    group: str
    resource: str
    k: str
    data: bytes
    prev: bytes | None


class KeyExists(Exception):
    """Raised by :meth:`Tx.insert` when the key is taken."""


def owner_refs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """``metadata.ownerReferences`` (never None)."""
    refs = obj["metadata"].get("ownerReferences")
    return [r for r in refs if isinstance(r, dict)] if isinstance(refs, list) else []


def finalizers(obj: dict[str, Any]) -> list[str]:
    """``metadata.finalizers`` (never None)."""
    fins = obj["metadata"].get("finalizers")
    return fins if isinstance(fins, list) else []


NAMESPACES = ("", "namespaces")
"""The collection whose objects ``spec.finalizers`` also hold (the namespace registry's rule)."""


def namespace_finalizers(loc: Loc, obj: dict[str, Any]) -> list[str]:
    """A Namespace's ``spec.finalizers`` (``kubernetes`` until its content is gone); [] otherwise."""
    if loc[:2] != NAMESPACES:
        return []
    spec = obj.get("spec")
    fins = spec.get("finalizers") if isinstance(spec, dict) else None
    return fins if isinstance(fins, list) else []


def is_deleting(obj: dict[str, Any]) -> bool:
    """Whether ``metadata.deletionTimestamp`` is set."""
    return bool(obj["metadata"].get("deletionTimestamp"))


def deleting_dependents(obj: dict[str, Any]) -> bool:
    """Being deleted in the foreground (waiting for blocking dependents)."""
    return is_deleting(obj) and FOREGROUND in finalizers(obj)


def ref_uids(refs: list[dict[str, Any]]) -> set[str]:
    """The owner uids of a reference list."""
    return {str(r["uid"]) for r in refs if r.get("uid")}


def _blocking_uids(refs: list[dict[str, Any]]) -> set[str]:
    return {str(r["uid"]) for r in refs if r.get("uid") and r.get("blockOwnerDeletion") is True}


def _revision_of(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


class Tx:
    """One write transaction. Not thread-safe: the store's write lock is held while it lives."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        rev: int,
        now: str,
        kinds: KindMap,
        *,
        gc_enabled: bool,
        dry_run: bool,
    ) -> None:
        self.conn = conn
        self.rev = rev
        self.now = now
        self.kinds = kinds
        self.gc_enabled = gc_enabled
        self.dry_run = dry_run
        self.events: list[RawEvent] = []
        self.deltas: dict[tuple[str, str], int] = {}
        self.gc_queue: deque[tuple[str, Loc]] = deque()
        self.new_kinds: KindMap = {}
        self.known: tuple[Loc, bytes] | None = None
        """An object's stored JSON as this thread read it at the revision the transaction
        starts from (``Store.get``), so that the first read of it here needs no query: the
        handlers read the live object before they write it. Dropped at the first write."""

    # --- reads ----------------------------------------------------------------------------------

    def load_raw(self, loc: Loc) -> bytes | None:
        """The stored JSON of an object, or None."""
        known = self.known
        if known is not None and known[0] == loc:
            self.known = None
            return known[1]
        row = self.conn.execute(SQL_GET, loc).fetchone()
        return None if row is None else bytes(row[0])

    def load(self, loc: Loc) -> tuple[dict[str, Any], bytes] | None:
        """The stored object (decoded and raw), or None."""
        raw = self.load_raw(loc)
        return None if raw is None else (decode(raw), raw)

    def dependents(self, owner_uid: str) -> list[Loc]:
        """The live objects whose ownerReferences name ``owner_uid``."""
        return [(g, r, k) for g, r, k in self.conn.execute(SQL_DEPENDENTS, (owner_uid,))]

    def has_dependents(self, owner_uid: str) -> bool:
        """Whether any live object names ``owner_uid`` as an owner."""
        return self.conn.execute(SQL_HAS_DEPENDENTS, (owner_uid,)).fetchone() is not None

    def resolve_owner(
        self, ref: dict[str, Any], dependent_k: str
    ) -> tuple[Loc, dict[str, Any], bytes] | None:
        """The live object an ownerReference points at (kind + name + uid), or None if it dangles.

        Owners are looked up as the garbage collector does: the kind's resource, the name in the
        dependent's namespace (or cluster-scoped), then the uid must match.
        """
        api_version = str(ref.get("apiVersion", ""))
        group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
        name = ref.get("name")
        if not isinstance(name, str) or not name:
            return None
        namespace = loc_namespace(dependent_k)
        kind = (group, str(ref.get("kind", "")))
        for resource, namespaced in sorted(self.kinds.get(kind, set()) | self.new_kinds.get(kind, set())):
            if namespaced and not namespace:
                continue
            loc = (group, resource, make_k(namespace, name, namespaced))
            found = self.load(loc)
            if found is not None and found[0]["metadata"].get("uid") == ref.get("uid"):
                return loc, found[0], found[1]
        return None

    # --- writes ---------------------------------------------------------------------------------

    def insert(self, loc: Loc, obj: dict[str, Any]) -> bytes:
        """Create an object (ADDED); sets ``metadata.resourceVersion``. Raises KeyExists."""
        self.known = None
        rev = self.rev + 1
        meta = obj["metadata"]
        meta["resourceVersion"] = str(rev)
        try:
            self.conn.execute(SQL_INSERT, (*loc, rev))
        except sqlite3.IntegrityError:
            raise KeyExists(loc) from None
        self.rev = rev
        data = encode(obj)
        self.conn.execute(SQL_LOG, (rev, *loc, "ADDED", data, None))
        self._learn_kind(loc, obj)
        refs = owner_refs(obj)
        for owner in ref_uids(refs):
            self.conn.execute(SQL_REF_ADD, (owner, *loc))
        self._record(RawEvent(rev, "ADDED", *loc, data, None), 1)
        if refs and self.gc_enabled:
            self.gc_queue.append(("check", loc))
        return data

    def replace(self, loc: Loc, old: dict[str, Any], old_raw: bytes, new: dict[str, Any]) -> bytes:
        """Overwrite an object (MODIFIED); sets ``metadata.resourceVersion``."""
        self.known = None
        self.rev += 1
        rev = self.rev
        new["metadata"]["resourceVersion"] = str(rev)
        data = encode(new)
        self.conn.execute(SQL_UPDATE, (rev, *loc))
        self.conn.execute(SQL_LOG, (rev, *loc, "MODIFIED", data, _revision_of(old)))
        self._record(RawEvent(rev, "MODIFIED", *loc, data, old_raw), 0)
        self._reindex_owners(loc, old, new)
        if self.gc_enabled:
            self._gc_after_replace(loc, old, new)
        return data

    def remove(self, loc: Loc, old: dict[str, Any], old_raw: bytes) -> bytes:
        """Delete an object (DELETED); returns its last state with the deletion revision."""
        self.known = None
        self.rev += 1
        rev = self.rev
        final = dict(old)
        final["metadata"] = dict(old["metadata"], resourceVersion=str(rev))
        data = encode(final)
        self.conn.execute(SQL_DELETE, loc)
        self.conn.execute(SQL_LOG, (rev, *loc, "DELETED", data, _revision_of(old)))
        refs = owner_refs(old)
        for owner in ref_uids(refs):
            self.conn.execute(SQL_REF_DEL, (owner, *loc))
        self._record(RawEvent(rev, "DELETED", *loc, data, old_raw), -1)
        if self.gc_enabled:
            uid = str(old["metadata"].get("uid", ""))
            self.gc_queue.extend(("check", dep) for dep in self.dependents(uid))
            self._queue_owners(loc, refs)
        return data

    # --- bookkeeping ----------------------------------------------------------------------------

    def _record(self, event: RawEvent, delta: int) -> None:
        self.events.append(event)
        if delta:
            ident = (event.group, event.resource)
            self.deltas[ident] = self.deltas.get(ident, 0) + delta

    def _learn_kind(self, loc: Loc, obj: dict[str, Any]) -> None:
        kind = obj.get("kind")
        if not isinstance(kind, str) or not kind:
            return
        entry = (loc[1], "/" in loc[2])
        if entry in self.kinds.get((loc[0], kind), ()):
            return
        pending = self.new_kinds.setdefault((loc[0], kind), set())
        if entry not in pending:  # merged into the store's map only once committed
            pending.add(entry)
            self.conn.execute(SQL_KIND_ADD, (loc[0], kind, loc[1], int(entry[1])))

    def _reindex_owners(self, loc: Loc, old: dict[str, Any], new: dict[str, Any]) -> None:
        before, after = ref_uids(owner_refs(old)), ref_uids(owner_refs(new))
        for owner in before - after:
            self.conn.execute(SQL_REF_DEL, (owner, *loc))
        for owner in after - before:
            self.conn.execute(SQL_REF_ADD, (owner, *loc))

    def _queue_owners(self, loc: Loc, refs: list[dict[str, Any]]) -> None:
        """Re-examine owners that may have been waiting for this dependent."""
        for ref in refs:
            found = self.resolve_owner(ref, loc[2])
            if found is not None and deleting_dependents(found[1]):
                self.gc_queue.append(("owner", found[0]))

    def _gc_after_replace(self, loc: Loc, old: dict[str, Any], new: dict[str, Any]) -> None:
        """Queue the garbage-collector work a modification calls for (see gc.py)."""
        old_refs, new_refs = owner_refs(old), owner_refs(new)
        if old_refs != new_refs:
            if new_refs:
                self.gc_queue.append(("check", loc))
            released = (ref_uids(old_refs) - ref_uids(new_refs)) | (
                _blocking_uids(old_refs) - _blocking_uids(new_refs)
            )
            self._queue_owners(loc, [r for r in old_refs if str(r.get("uid")) in released])
        if not is_deleting(new):
            return
        fins = finalizers(new)
        if ORPHAN in fins:
            self.gc_queue.append(("orphan", loc))
        if FOREGROUND in fins and not deleting_dependents(old):
            uid = str(new["metadata"].get("uid", ""))
            self.gc_queue.extend(("check", dep) for dep in self.dependents(uid))
            self.gc_queue.append(("owner", loc))
