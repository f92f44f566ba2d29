"""Garbage collection of dependents, as kube-controller-manager's garbage collector does it.

The real collector runs asynchronously against a graph of ownerReferences; here its three work
items run to a fixed point inside the write transaction that triggered them, each object change
taking its own revision (so watchers see the same event sequence a cluster produces):

* ``attemptToDeleteItem`` (``check``): an object whose owners are all gone (dangling references)
  is deleted with the policy its finalizers ask for (Background by default); when some owner is
  alive, dangling references and references to owners deleting in the foreground are removed;
  when an owner waits for it (foreground) and it has dependents of its own, it is deleted in the
  foreground too.
* ``processDeletingDependentsItem`` (``owner``): an owner with ``foregroundDeletion`` whose
  blocking dependents (``blockOwnerDeletion: true``) are all gone loses that finalizer (and is
  deleted when none remain).
* ``attemptToOrphan`` (``orphan``): dependents lose their reference to the owner, then the owner
  loses the ``orphan`` finalizer.

Owners are resolved as the collector does: apiVersion/kind -> resource, the name in the
dependent's namespace (or cluster-scoped), then the uid must match; anything else dangles.
"""

from __future__ import annotations

import logging
from typing import Any

from . import ops
from .tx import (
    FOREGROUND,
    ORPHAN,
    Loc,
    Tx,
    deleting_dependents,
    finalizers,
    is_deleting,
    owner_refs,
)

log = logging.getLogger(__name__)

MAX_STEPS = 1_000_000


def run(tx: Tx) -> None:
    """Process the transaction's GC queue until it is empty."""
    steps = 0
    while tx.gc_queue:
        action, loc = tx.gc_queue.popleft()
        steps += 1
        if steps > MAX_STEPS:  # pragma: no cover - a bug guard, never expected
            log.error("garbage collection did not converge; %d items left", len(tx.gc_queue))
            tx.gc_queue.clear()
            return
        if action == "check":
            attempt_to_delete(tx, loc)
        elif action == "owner":
            process_deleting_dependents(tx, loc)
        elif action == "orphan":
            attempt_to_orphan(tx, loc)


def _uid(obj: dict[str, Any]) -> str:
    return str(obj["metadata"].get("uid", ""))


def _classify(tx: Tx, loc: Loc, refs: list[dict[str, Any]]) -> tuple[bool, set[str], set[str]]:
    """(has a solid owner, dangling owner uids, uids of owners waiting for their dependents)."""
    solid = False
    dangling: set[str] = set()
    waiting: set[str] = set()
    for ref in refs:
        found = tx.resolve_owner(ref, loc[2])
        if found is None:
            dangling.add(str(ref.get("uid", "")))
        elif deleting_dependents(found[1]):
            waiting.add(str(ref.get("uid", "")))
        else:
            solid = True
    return solid, dangling, waiting


def attempt_to_delete(tx: Tx, loc: Loc) -> None:
    """``attemptToDeleteItem``."""
    found = tx.load(loc)
    if found is None:
        return
    obj, raw = found
    if deleting_dependents(obj):
        process_deleting_dependents(tx, loc)
        return
    refs = owner_refs(obj)
    if is_deleting(obj) or not refs:
        return
    solid, dangling, waiting = _classify(tx, loc, refs)
    if solid:
        if dangling or waiting:
            gone = dangling | waiting
            kept = [r for r in refs if str(r.get("uid", "")) not in gone]
            ops.set_owner_refs(tx, loc, obj, raw, kept)
        return
    uid = _uid(obj)
    if waiting and tx.has_dependents(uid):
        if _any_dependent_deleting_dependents(tx, uid):
            obj, raw = _unblock_owner_references(tx, loc, obj, raw)
        ops.delete_loaded(tx, loc, obj, raw, "Foreground")
        return
    fins = finalizers(obj)
    policy = "Orphan" if ORPHAN in fins else "Foreground" if FOREGROUND in fins else "Background"
    ops.delete_loaded(tx, loc, obj, raw, policy)


def _any_dependent_deleting_dependents(tx: Tx, uid: str) -> bool:
    for dep in tx.dependents(uid):
        found = tx.load(dep)
        if found is not None and deleting_dependents(found[0]):
            return True
    return False


def _unblock_owner_references(
    tx: Tx, loc: Loc, obj: dict[str, Any], raw: bytes
) -> tuple[dict[str, Any], bytes]:
    """Cycle breaker: make every blocking reference of ``obj`` non-blocking."""
    refs = [
        dict(r, blockOwnerDeletion=False) if r.get("blockOwnerDeletion") is True else r
        for r in owner_refs(obj)
    ]
    ops.set_owner_refs(tx, loc, obj, raw, refs)
    found = tx.load(loc)
    assert found is not None
    return found


def process_deleting_dependents(tx: Tx, loc: Loc) -> None:
    """``processDeletingDependentsItem``: finish a foreground deletion when nothing blocks it."""
    found = tx.load(loc)
    if found is None:
        return
    owner, raw = found
    if not deleting_dependents(owner):
        return
    blocking = _blocking_dependents(tx, _uid(owner))
    if not blocking:
        ops.set_finalizers(tx, loc, owner, raw, [f for f in finalizers(owner) if f != FOREGROUND])
        return
    for dep_loc, dep in blocking:
        if not deleting_dependents(dep):
            tx.gc_queue.append(("check", dep_loc))


def _blocking_dependents(tx: Tx, owner_uid: str) -> list[tuple[Loc, dict[str, Any]]]:
    result: list[tuple[Loc, dict[str, Any]]] = []
    for dep_loc in tx.dependents(owner_uid):
        found = tx.load(dep_loc)
        if found is None:
            continue
        dep = found[0]
        if any(r.get("uid") == owner_uid and r.get("blockOwnerDeletion") is True for r in owner_refs(dep)):
            result.append((dep_loc, dep))
    return result


def attempt_to_orphan(tx: Tx, loc: Loc) -> None:
    """``attemptToOrphanWorker``: drop the owner from its dependents, then the orphan finalizer."""
    found = tx.load(loc)
    if found is None:
        return
    owner = found[0]
    if not is_deleting(owner) or ORPHAN not in finalizers(owner):
        return
    uid = _uid(owner)
    for dep_loc in tx.dependents(uid):
        dep = tx.load(dep_loc)
        if dep is None:
            continue
        kept = [r for r in owner_refs(dep[0]) if r.get("uid") != uid]
        ops.set_owner_refs(tx, dep_loc, dep[0], dep[1], kept)
    reloaded = tx.load(loc)
    if reloaded is None:
        return
    owner, raw = reloaded
    ops.set_finalizers(tx, loc, owner, raw, [f for f in finalizers(owner) if f != ORPHAN])
