"""Write semantics of the generic apiserver registry, applied inside a :class:`~.tx.Tx`.

Ported from ``k8s.io/apiserver/pkg/registry/generic/registry/store.go`` and ``pkg/registry/rest``
(``BeforeCreate``, ``BeforeUpdate``, ``BeforeDelete``, ``markAsDeleting``,
``deletionFinalizersForGarbageCollection``) and the custom-resource strategies (generation and
status-subresource rules).
"""

from __future__ import annotations

import os
import random
import threading
from typing import Any

from . import errors as e
from .tx import FOREGROUND, ORPHAN, KeyExists, Loc, Tx, finalizers, is_deleting, make_k, namespace_finalizers
from .types import ResourceKey, decode, encode

GENERATED_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
MAX_GENERATED_NAME_LENGTH = 58  # 63 - 5 random characters
GENERATE_NAME_ATTEMPTS = 8
PROPAGATION_POLICIES = ("Foreground", "Background", "Orphan")

_random = random.Random()


_UID_BATCH = 256
COPY_STATUS_ONLY = True
"""A status update copies only the caller's metadata and status (what the status strategy takes);
False copies the whole object as before (tests compare the two)."""
_uid_pool = bytearray()
_uid_lock = threading.Lock()  # several stores (tests) may create at once


def _forget_uids() -> None:
    global _uid_pool
    _uid_pool = bytearray()


os.register_at_fork(after_in_child=_forget_uids)  # a forked child must not reuse the parent's bytes


def new_uid() -> str:
    """A random (version 4) UUID string, as ``str(uuid.uuid4())``.

    The random bytes are read from ``os.urandom`` 256 uids at a time: one system call per uid
    was a visible part of a create.
    """
    global _uid_pool
    with _uid_lock:
        if len(_uid_pool) < 16:
            _uid_pool = bytearray(os.urandom(16 * _UID_BATCH))
        raw = _uid_pool[-16:]
        del _uid_pool[-16:]
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def kind_of(key: ResourceKey, obj: dict[str, Any] | None) -> str:
    """The object's kind for messages that name it (falls back to the resource)."""
    kind = obj.get("kind") if obj else None
    return kind if isinstance(kind, str) and kind else key.resource


def _copy(obj: dict[str, Any]) -> dict[str, Any]:
    """A private deep copy, normalised to JSON values."""
    result: dict[str, Any] = decode(encode(obj))
    return result


def _metadata(obj: Any) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise e.BadRequest("the object provided is not a JSON object")
    meta = obj.get("metadata")
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        raise e.BadRequest("metadata must be a JSON object")
    return meta


def _string_field(key: ResourceKey, obj: dict[str, Any], meta: dict[str, Any], field: str) -> str:
    value = meta.get(field) or ""
    if not isinstance(value, str):
        err = e.invalid_value(f"metadata.{field}", value, "must be a string")
        raise e.invalid(key.group, kind_of(key, obj), "", [err])
    return value


def _check_path_segment(kind: str, value: str) -> None:
    """``path.IsValidPathSegmentName`` as the key functions enforce it (400)."""
    if value in (".", ".."):
        raise e.BadRequest(f"{kind} parameter invalid: \"{value}\": may not be '{value}'")
    problems = [f"may not contain '{c}'" for c in ("/", "%") if c in value]
    if problems:
        raise e.BadRequest(f'{kind} parameter invalid: "{value}": {";".join(problems)}')


def locate(key: ResourceKey, namespace: str | None, name: str) -> Loc:
    """The internal address of ``namespace/name`` in ``key``'s collection."""
    return (key.group, key.resource, make_k(namespace or "", name, key.namespaced))


def _namespace_of(key: ResourceKey, obj: dict[str, Any], meta: dict[str, Any], name: str) -> str:
    if not key.namespaced:
        meta.pop("namespace", None)
        return ""
    namespace = meta.get("namespace") or ""
    if not isinstance(namespace, str) or not namespace:
        raise e.invalid(key.group, kind_of(key, obj), name, [e.required("metadata.namespace")])
    _check_path_segment("Namespace", namespace)
    return namespace


# --- create ------------------------------------------------------------------------------------


def create(tx: Tx, key: ResourceKey, obj: dict[str, Any]) -> dict[str, Any]:
    """``BeforeCreate`` + storage create: identity, timestamps, generation, generateName."""
    meta = _metadata(obj)
    # Only metadata is modified: shallow copies keep the caller's dicts intact.
    obj = dict(obj)
    meta = obj["metadata"] = dict(meta)
    name = _string_field(key, obj, meta, "name")
    generate = _string_field(key, obj, meta, "generateName")
    if not name and not generate:
        raise e.invalid(
            key.group,
            kind_of(key, obj),
            "",
            [e.required("metadata.name", "name or generateName is required")],
        )
    namespace = _namespace_of(key, obj, meta, name)
    if meta.get("resourceVersion"):
        raise e.InternalError("resourceVersion should not be set on objects to be created", reason="")
    # The apiserver's create handler assigns the uid before admission and PrepareForCreate (the
    # Job selector embeds it), so a uid the caller already set is kept.
    if not meta.get("uid") or not isinstance(meta["uid"], str):
        meta["uid"] = new_uid()
    meta["creationTimestamp"] = tx.now
    meta["generation"] = 1
    meta.pop("deletionTimestamp", None)
    meta.pop("deletionGracePeriodSeconds", None)
    if name:
        _check_path_segment("Name", name)
        data = _insert(tx, key, obj, namespace, name)
    else:
        data = _insert_generated(tx, key, obj, namespace, str(generate))
    result: dict[str, Any] = decode(data)
    if tx.dry_run:
        result["metadata"].pop("resourceVersion", None)
    return result


def _insert(tx: Tx, key: ResourceKey, obj: dict[str, Any], namespace: str, name: str) -> bytes:
    try:
        return tx.insert(locate(key, namespace, name), obj)
    except KeyExists:
        raise e.already_exists(key.group, key.resource, name) from None


def _insert_generated(tx: Tx, key: ResourceKey, obj: dict[str, Any], namespace: str, base: str) -> bytes:
    base = base[:MAX_GENERATED_NAME_LENGTH]
    name = base
    for _ in range(GENERATE_NAME_ATTEMPTS):
        name = base + "".join(_random.choices(GENERATED_SUFFIX_ALPHABET, k=5))
        _check_path_segment("Name", name)
        obj["metadata"]["name"] = name
        try:
            return tx.insert(locate(key, namespace, name), obj)
        except KeyExists:
            continue
    raise e.generate_name_conflict(key.group, key.resource, name)


# --- update ------------------------------------------------------------------------------------


def load(tx: Tx, key: ResourceKey, loc: Loc, name: str) -> tuple[dict[str, Any], bytes]:
    """The stored object (decoded, raw) or NotFound."""
    raw = tx.load_raw(loc)
    if raw is None:
        raise e.not_found(key.group, key.resource, name)
    old: dict[str, Any] = decode(raw)
    return old, raw


def update(
    tx: Tx, key: ResourceKey, obj: dict[str, Any], *, subresource: str | None, status_subresource: bool
) -> dict[str, Any]:
    """``Store.Update`` for an existing object (no create-on-update)."""
    _metadata(obj)  # validates the shape before copying
    if subresource == "status" and status_subresource and COPY_STATUS_ONLY:
        # The status strategy takes only the metadata (identity, resourceVersion, managedFields)
        # and the status from ``obj`` (_status_update): copying its spec too was a third of the copy.
        obj = _copy({name: obj[name] for name in ("metadata", "status") if name in obj})
    else:
        obj = _copy(obj)
    meta = obj["metadata"] = _metadata(obj)
    name = _string_field(key, obj, meta, "name")
    if not name:
        raise e.invalid(key.group, kind_of(key, obj), "", [e.required("metadata.name", "name is required")])
    namespace = _namespace_of(key, obj, meta, name)
    loc = locate(key, namespace, name)
    old, old_raw = load(tx, key, loc, name)
    old_rv = old["metadata"].get("resourceVersion", "")
    wanted = str(meta.get("resourceVersion") or "")
    if wanted and wanted != old_rv:
        raise e.conflict(key.group, key.resource, name, e.OBJECT_MODIFIED)
    if subresource == "status" and status_subresource:
        new = _status_update(old, obj)
    elif subresource:
        raise e.NotFound("the server could not find the requested resource", {})
    else:
        new = _main_update(key, old, obj, status_subresource)
    new["metadata"]["resourceVersion"] = old_rv
    if new == old:
        return old
    if is_deleting(old) and not finalizers(new) and not namespace_finalizers(loc, new):
        result: dict[str, Any] = decode(tx.remove(loc, old, old_raw))
    else:
        # ``new`` is private (built from the freshly decoded ``old`` and the caller's object,
        # which ``_copy`` normalised to JSON values), so it equals what decoding the bytes just
        # written would give: return it instead of decoding them again (8 % of the embedded
        # controllers' time in the scheduler benchmark).
        tx.replace(loc, old, old_raw, new)
        result = new
    if tx.dry_run:
        result["metadata"]["resourceVersion"] = old_rv
    return result


def _status_update(old: dict[str, Any], obj: dict[str, Any]) -> dict[str, Any]:
    """Status strategy: the stored object with the new status (and managedFields).

    A shallow copy of ``old`` (top level and metadata, the only levels written here and by the
    transaction) instead of decoding the stored bytes again: the second decode of every status
    write was the store's largest cost in a scheduler benchmark's controller thread.
    """
    new = dict(old)
    new["metadata"] = dict(old["metadata"])
    if "status" in obj:
        new["status"] = obj["status"]
    else:
        new.pop("status", None)
    managed = obj["metadata"].get("managedFields")
    if managed is not None:
        new["metadata"]["managedFields"] = managed
    return new


def _main_update(
    key: ResourceKey, old: dict[str, Any], new: dict[str, Any], status_subresource: bool
) -> dict[str, Any]:
    """``BeforeUpdate`` + ``PrepareForUpdate`` of the main resource."""
    meta, old_meta = new["metadata"], old["metadata"]
    errs: list[e.FieldError] = []
    uid = meta.get("uid")
    if uid and uid != old_meta.get("uid"):
        errs.append(e.invalid_value("metadata.uid", uid, "field is immutable"))
    meta["uid"] = old_meta.get("uid")
    _carry(meta, old_meta, "creationTimestamp")
    _carry(meta, old_meta, "deletionTimestamp")
    _carry(meta, old_meta, "deletionGracePeriodSeconds")
    meta["generation"] = old_meta.get("generation", 1)
    if is_deleting(old):
        added = sorted(set(finalizers(new)) - set(finalizers(old)))
        if added:
            errs.append(
                e.forbidden(
                    "metadata.finalizers",
                    "no new finalizers can be added if the object is being deleted, found new finalizers "
                    + e.go_string_slice(added),
                )
            )
    if errs:
        raise e.invalid(key.group, kind_of(key, old), str(old_meta.get("name", "")), errs)
    if status_subresource:
        _carry(new, old, "status")
    if _spec_of(new, status_subresource) != _spec_of(old, status_subresource):
        meta["generation"] = int(old_meta.get("generation", 1)) + 1
    return new


def _carry(target: dict[str, Any], source: dict[str, Any], field: str) -> None:
    if field in source:
        target[field] = source[field]
    else:
        target.pop(field, None)


def _spec_of(obj: dict[str, Any], status_subresource: bool) -> dict[str, Any]:
    skip = ("metadata", "status") if status_subresource else ("metadata",)
    return {k: v for k, v in obj.items() if k not in skip}


# --- delete ------------------------------------------------------------------------------------


def check_propagation(propagation: str | None) -> None:
    """``ValidateDeleteOptions`` for the propagation policy."""
    if propagation is None or propagation in PROPAGATION_POLICIES:
        return
    supported = ", ".join(f'"{p}"' for p in PROPAGATION_POLICIES)
    err = e.FieldError(
        "FieldValueNotSupported", "propagationPolicy", f"supported values: {supported}", propagation
    )
    raise e.invalid("meta.k8s.io", "DeleteOptions", "", [err])


def delete(
    tx: Tx,
    key: ResourceKey,
    loc: Loc,
    name: str,
    *,
    propagation: str | None,
    preconditions: dict[str, Any] | None,
) -> dict[str, Any]:
    """``Store.Delete``: mark (finalizers pending) or remove; returns the object as marked/deleted."""
    old, old_raw = load(tx, key, loc, name)
    _check_preconditions(key, old, preconditions)
    return delete_loaded(tx, loc, old, old_raw, propagation)


def delete_loaded(
    tx: Tx, loc: Loc, old: dict[str, Any], old_raw: bytes, propagation: str | None
) -> dict[str, Any]:
    """Delete an already loaded object (also used by the garbage collector)."""
    old_rv = old["metadata"].get("resourceVersion", "")
    fins = _finalizers_for_gc(finalizers(old), propagation) if tx.gc_enabled else finalizers(old)
    held_namespace = bool(namespace_finalizers(loc, old))
    if fins or held_namespace:
        new: dict[str, Any] = decode(old_raw)
        if fins:
            new["metadata"]["finalizers"] = fins
        else:
            new["metadata"].pop("finalizers", None)
        _mark_as_deleting(new["metadata"], tx.now)
        if held_namespace:  # the namespace controller deletes its content, then finalizes it
            status = new.get("status")
            new["status"] = dict(status if isinstance(status, dict) else {}, phase="Terminating")
        if new == old:
            return old
        result: dict[str, Any] = decode(tx.replace(loc, old, old_raw, new))
    else:
        result = decode(tx.remove(loc, old, old_raw))
    if tx.dry_run:
        result["metadata"]["resourceVersion"] = old_rv
    return result


def _check_preconditions(key: ResourceKey, obj: dict[str, Any], pre: dict[str, Any] | None) -> None:
    """``rest.BeforeDelete`` precondition checks (the resource named is the object's kind)."""
    if not pre:
        return
    meta = obj["metadata"]
    kind, name = kind_of(key, obj), str(meta.get("name", ""))
    uid, rv = pre.get("uid"), pre.get("resourceVersion")
    if uid is not None and uid != meta.get("uid"):
        raise e.conflict(
            key.group,
            kind,
            name,
            f"the UID in the precondition ({uid}) does not match the UID in record ({meta.get('uid')}). "
            "The object might have been deleted and then recreated",
        )
    if rv is not None and rv != meta.get("resourceVersion"):
        raise e.conflict(
            key.group,
            kind,
            name,
            f"the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record "
            f"({meta.get('resourceVersion')}). The object might have been modified",
        )


def _finalizers_for_gc(current: list[str], propagation: str | None) -> list[str]:
    """``deletionFinalizersForGarbageCollection``: add/remove ``orphan``/``foregroundDeletion``."""
    if propagation is not None:
        orphan, foreground = propagation == "Orphan", propagation == "Foreground"
    else:
        orphan = foreground = False
        for fin in current:
            if fin in (ORPHAN, FOREGROUND):
                orphan, foreground = fin == ORPHAN, fin == FOREGROUND
                break
    result = [f for f in current if f not in (ORPHAN, FOREGROUND)]
    if orphan:
        result.append(ORPHAN)
    if foreground:
        result.append(FOREGROUND)
    return current if set(result) == set(current) else result


def _mark_as_deleting(meta: dict[str, Any], now: str) -> None:
    """``markAsDeleting``: generation+1 on first mark, deletionTimestamp, grace period 0."""
    if not meta.get("deletionTimestamp"):
        if int(meta.get("generation") or 0) > 0:
            meta["generation"] = int(meta["generation"]) + 1
        meta["deletionTimestamp"] = now
    meta["deletionGracePeriodSeconds"] = 0


def set_finalizers(tx: Tx, loc: Loc, old: dict[str, Any], old_raw: bytes, fins: list[str]) -> None:
    """A metadata-only update of the finalizers (deletes the object when the last one goes)."""
    new: dict[str, Any] = decode(old_raw)
    if fins:
        new["metadata"]["finalizers"] = fins
    else:
        new["metadata"].pop("finalizers", None)
    if is_deleting(old) and not fins and not namespace_finalizers(loc, new):
        tx.remove(loc, old, old_raw)
    elif new != old:
        tx.replace(loc, old, old_raw, new)


def set_owner_refs(tx: Tx, loc: Loc, old: dict[str, Any], old_raw: bytes, refs: list[dict[str, Any]]) -> None:
    """A metadata-only update of the ownerReferences."""
    new: dict[str, Any] = decode(old_raw)
    if refs:
        new["metadata"]["ownerReferences"] = refs
    else:
        new["metadata"].pop("ownerReferences", None)
    if new != old:
        tx.replace(loc, old, old_raw, new)
