"""Server-side apply and managedFields bookkeeping (the API server's field manager).

:func:`server_side_apply` follows structured-merge-diff's ``Updater.Apply``:

1. the applied configuration's field set (``ToFieldSet``) becomes the applier's set;
2. the configuration is merged into the live object (granular maps, map-lists merged by key,
   set-lists unioned, atomic values replaced);
3. fields the applier owned last time and no longer applies are removed, unless some manager
   (the applier's new configuration included) still owns them (``prune``);
4. fields of other managers that the result adds or changes are conflicts; with ``force`` they
   change owner, otherwise :class:`ApplyConflict` (409) is raised; removed fields are dropped
   from every other manager.

:func:`update_managed_fields` is ``Updater.Update`` for every other write (create, update,
patch): the writer takes ownership of what it added or changed, other managers lose it.

Both strip ``apiVersion``, ``kind`` and the server-owned metadata (``name``, ``namespace``,
``uid``, ``resourceVersion``, ``generation``, ``creationTimestamp``, ``selfLink``,
``managedFields``) from the recorded sets, like ``stripMetaManager``. Writes through the
``status`` subresource only track ``f:status`` (and record ``subresource: status``); the main
resource can exclude reset fields (``reset_fields=("status",)`` for kinds with a status
subresource).

Like the real server, the ``kubectl`` manager may take over fields recorded in the client-side
``kubectl.kubernetes.io/last-applied-configuration`` annotation without conflicts (when they
still hold the last-applied value), and keeps that annotation in sync when it exists.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable
from datetime import datetime
from typing import Any, Final

from pykueue.apiserver.patch._values import MISSING, JSONDict, deep_copy, drop_nulls, json_equal
from pykueue.apiserver.patch.errors import ApplyConflict, bad_request, internal
from pykueue.apiserver.patch.fieldpath import (
    FieldSet,
    Path,
    field_element,
    field_path,
    iter_paths,
    path_to_string,
)
from pykueue.apiserver.patch.managed_fields import (
    APPLY,
    UPDATE,
    ManagedEntry,
    Managers,
    cap_update_managers,
    decode_managed_fields,
    encode_managed_fields,
    format_now,
    manager_identifier,
)
from pykueue.apiserver.patch.schema_node import DEDUCED, SchemaNode
from pykueue.apiserver.patch.typed import (
    Comparison,
    TypedError,
    check_merge,
    compare,
    compare_created,
    created_fields_v1,
    ensure_named_fields_are_members,
    merge,
    merge_member_without_nulls,
    remove_items,
    to_field_set,
)

STRIPPED_PATHS: Final[FieldSet] = frozenset(
    {
        field_path("apiVersion"),
        field_path("kind"),
        field_path("metadata"),
        *(
            field_path("metadata", name)
            for name in (
                "name",
                "namespace",
                "creationTimestamp",
                "selfLink",
                "uid",
                "clusterName",
                "generation",
                "managedFields",
                "resourceVersion",
            )
        ),
    }
)
"""Paths never recorded in managedFields (``stripMetaManager``; exact paths, not subtrees)."""
_STRIP_ORDER: Final = tuple(sorted(STRIPPED_PATHS, key=lambda p: (-len(p), p)))
""":data:`STRIPPED_PATHS`, children before parents (for :func:`created_fields_v1`)."""

STATUS: Final = "status"
KUBECTL: Final = "kubectl"
"""The field manager of ``kubectl apply --server-side`` (special-cased for upgrades)."""
LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"

Scope = Callable[[Path], bool]


def strip_meta(paths: Iterable[Path]) -> FieldSet:
    """``paths`` without :data:`STRIPPED_PATHS`."""
    return frozenset(paths) - STRIPPED_PATHS


def _scope(subresource: str, reset_fields: Collection[str]) -> Scope:
    """Which paths a write may own: ``f:status`` only for the status subresource."""
    if subresource == STATUS:
        status = field_element(STATUS)
        return lambda path: path[:1] == (status,)
    reset = {field_element(name) for name in reset_fields}
    return lambda path: not path or path[0] not in reset


def _restore_out_of_scope(
    base: JSONDict, result: JSONDict, subresource: str, reset_fields: Collection[str]
) -> JSONDict:
    """Undo changes a write may not make (everything but status via /status; reset fields)."""
    if subresource == STATUS:
        restored: JSONDict = deep_copy(base)
        if STATUS in result:
            restored[STATUS] = result[STATUS]
        else:
            restored.pop(STATUS, None)
        return restored
    for name in reset_fields:
        if name in base:
            result[name] = deep_copy(base[name])
        else:
            result.pop(name, None)
    return result


def _without_managed_fields(obj: JSONDict | None) -> JSONDict:
    """``obj`` ({} for None) without ``metadata.managedFields``, for read-only walks.

    Only the top level and ``metadata`` are copied: :func:`compare` never modifies its inputs,
    and copying whole objects twice per write was a large part of its cost.
    """
    if obj is None:
        return {}
    out: JSONDict = dict(obj)
    meta = out.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        meta = out["metadata"] = dict(meta)
        del meta["managedFields"]
    return out


def _managed_fields_of(obj: JSONDict | None) -> Any:
    if obj is None:
        return None
    meta = obj.get("metadata")
    return meta.get("managedFields", MISSING) if isinstance(meta, dict) else MISSING


def _decode_or_empty(entries: Any) -> Managers:
    try:
        return decode_managed_fields(entries if isinstance(entries, list) else None)
    except ValueError:
        return {}


def _set_managed_fields(obj: JSONDict, entries: list[dict[str, Any]]) -> None:
    if entries:
        meta = obj.setdefault("metadata", {})
        meta["managedFields"] = entries
        return
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)


def _gvk(obj: JSONDict) -> str:
    return f"{obj.get('apiVersion', '')}, Kind={obj.get('kind', '')}"


def _finish(obj: JSONDict, managers: Managers) -> None:
    """Strip metadata paths, drop empty managers, cap Update managers, encode into ``obj``."""
    cleaned = {ident: e.with_fields(strip_meta(e.fields)) for ident, e in managers.items()}
    kept = {ident: e for ident, e in cleaned.items() if e.fields}
    _set_managed_fields(obj, encode_managed_fields(cap_update_managers(kept)))


# --- server-side apply ---------------------------------------------------------------------------


def server_side_apply(
    live: JSONDict | None,
    applied: JSONDict,
    manager: str,
    *,
    force: bool,
    schema: SchemaNode,
    subresource: str = "",
    api_version: str | None = None,
    now: datetime | None = None,
    reset_fields: Collection[str] = (),
) -> JSONDict:
    """Apply ``applied`` (an apply configuration) for ``manager``; return the new object.

    ``live`` is the current object (None to create). The result carries the updated
    ``metadata.managedFields``; inputs are not modified. ``api_version`` names the version
    recorded in the entry (default: the configuration's ``apiVersion``).

    Raises :class:`ApplyConflict` (409) on conflicts without ``force``, :class:`PatchError`
    400 when the configuration sets ``metadata.managedFields`` and 500 when it does not fit the
    schema (duplicate list keys, missing key fields), like the real server.
    """
    if not manager:
        raise ValueError("server-side apply needs a field manager")
    if not isinstance(applied, dict):
        raise bad_request("apply configuration must be an object")
    meta = applied.get("metadata")
    if isinstance(meta, dict) and meta.get("managedFields") is not None:
        raise bad_request("metadata.managedFields must be nil")
    base = _without_managed_fields(live)
    managers = _decode_or_empty(_managed_fields_of(live))
    version = api_version or str(applied.get("apiVersion") or base.get("apiVersion") or "")
    in_scope = _scope(subresource, reset_fields)
    ident = manager_identifier(manager, APPLY, subresource=subresource)
    previous = managers.get(ident)
    scoped = _status_scoped(live, base, applied, subresource, schema, previous)
    try:
        config_set = frozenset(p for p in to_field_set(applied, schema, unique=True) if in_scope(p))
        if scoped:
            merged = _merge_status(base, applied, schema, manager)
        else:
            merged = drop_nulls(merge(base, applied, schema))
            merged = _restore_out_of_scope(base, merged, subresource, reset_fields)
        managers[ident] = ManagedEntry(
            manager, APPLY, version, config_set, previous.time if previous else None, subresource
        )
        if scoped:
            if previous is not None and previous.fields:
                _set_status(merged, _prune(_status_only(merged), managers, previous.fields, schema))
            comparison = compare(_status_only(base), _status_only(merged), schema)
        else:
            if previous is not None and previous.fields:
                merged = _prune(merged, managers, previous.fields, schema)
            comparison = compare(base, merged, schema).filtered(in_scope)
    except TypedError as exc:
        raise internal(f"failed to create typed patch object ({_gvk(applied)}): {exc}") from exc
    conflicts = _conflicts(managers, ident, comparison)
    if conflicts and not force:
        _raise_unless_last_applied(conflicts, manager, base, schema)
    managers = _take_ownership(managers, ident, comparison)
    entry = managers[ident]
    # (a status-scoped merge shares everything but the status with ``base``)
    unchanged = json_equal(base.get(STATUS, MISSING), merged.get(STATUS, MISSING)) if scoped else json_equal(base, merged)
    if entry.time is None or not unchanged:
        managers[ident] = ManagedEntry(manager, APPLY, version, entry.fields, format_now(now), subresource)
    _finish(merged, managers)
    if manager == KUBECTL and _last_applied(base) is not None:
        _set_last_applied(merged, applied)
    return merged


STATUS_SCOPED_APPLY = True
"""Whether an apply through the status subresource merges, prunes and compares only the status
(what its scope keeps; the rest of the object is the live one). The whole-object path stays for
the tests to compare with."""


def _status_scoped(
    live: JSONDict | None,
    base: JSONDict,
    applied: JSONDict,
    subresource: str,
    schema: SchemaNode,
    previous: ManagedEntry | None,
) -> bool:
    """Whether :func:`server_side_apply` may take the status-scoped path: an apply of the status
    of an existing object, both objects walked as maps at the top, and the applier's last
    configuration (what a prune may remove) all under ``f:status``.

    The whole-object path merges the configuration into a copy of the whole live object, throws
    away all but the status, and compares and prunes whole objects; only status paths survive
    its scope. For a stored (well-formed) object the results are the same: only the status
    member of the merge is built (the others are walked for the errors the merge would raise);
    pruning and comparing the status alone finds every status path (a member's paths depend on
    that member only); the rest of the object is the live one either way. Every Finished
    condition of upstream's scheduler-perf runner is such an apply (bench/RESULTS.md, issue 16).
    """
    if not STATUS_SCOPED_APPLY or subresource != STATUS or live is None:
        return False
    if _shape_of(schema, base) != "map" or _shape_of(schema, applied) != "map" or not base:
        return False
    status = field_element(STATUS)
    return previous is None or all(path[:1] == (status,) for path in previous.fields)


def _shape_of(schema: SchemaNode, value: JSONDict) -> str:
    """How the merge walks a top-level object under ``schema`` (``map`` for every kind's root)."""
    if schema.kind == "map":
        return "map" if schema.map_type != "atomic" else "leaf"
    return "map" if schema.kind == "any" else "leaf"


def _merge_status(base: JSONDict, applied: JSONDict, schema: SchemaNode, manager: str) -> JSONDict:
    """What ``_restore_out_of_scope(base, drop_nulls(merge(base, applied)), "status")`` returns,
    sharing all but ``status`` and ``metadata`` (copied one level down) with ``base``.

    Every member of ``applied`` is merged in its order, as :func:`merge` does (the same first
    error), the members other than the status without building them."""
    status = MISSING
    for name, member in applied.items():
        node = schema.field(name)
        if name == STATUS:
            status = merge_member_without_nulls(base.get(STATUS, MISSING), member, node, (field_element(STATUS),))
        else:
            check_merge(base.get(name, MISSING), member, node, (field_element(name),))
    merged: JSONDict = dict(base)
    meta = merged.get("metadata")
    if isinstance(meta, dict):  # managedFields are set in it (and the last-applied annotation)
        meta = merged["metadata"] = dict(meta)
        if manager == KUBECTL and isinstance(meta.get("annotations"), dict):
            meta["annotations"] = dict(meta["annotations"])
    if STATUS not in applied:
        status = base.get(STATUS, MISSING)
        status = status if status is MISSING else drop_nulls(status)
    _set_status(merged, {} if status is MISSING or status is None else {STATUS: status})
    return merged


def _set_status(obj: JSONDict, view: JSONDict) -> None:
    """Put the status of ``view`` (a ``{"status": ...}`` view, or ``{}``) into ``obj``."""
    if STATUS in view:
        obj[STATUS] = view[STATUS]
    else:
        obj.pop(STATUS, None)


def _prune(merged: JSONDict, managers: Managers, last: FieldSet, schema: SchemaNode) -> JSONDict:
    """Remove what the applier owned last time, no longer applies and nobody else owns."""
    owned: set[Path] = set()
    for entry in managers.values():
        owned |= entry.fields
    last_all = ensure_named_fields_are_members(last, schema)
    owned_all = ensure_named_fields_are_members(owned, schema)
    present = ensure_named_fields_are_members(to_field_set(merged, schema), schema)
    doomed = (last_all & present) - owned_all
    if not doomed:
        return merged
    result = remove_items(merged, doomed, schema)
    assert isinstance(result, dict)
    return result


Conflicts = list[tuple[ManagedEntry, FieldSet]]


def _conflicts(managers: Managers, ident: str, comparison: Comparison) -> Conflicts:
    """Fields of other managers the apply adds or changes, per manager (identifier order)."""
    changed = comparison.changed()
    return [
        (entry, entry.fields & changed)
        for other, entry in sorted(managers.items())
        if other != ident and entry.fields & changed
    ]


def _take_ownership(managers: Managers, ident: str, comparison: Comparison) -> Managers:
    """Move the fields the apply changed or removed away from every other manager."""
    changed = comparison.changed()
    removed = frozenset(comparison.removed)
    return {
        other: entry if other == ident else entry.with_fields(entry.fields - changed - removed)
        for other, entry in managers.items()
    }


def apply_conflict(conflicts: list[tuple[ManagedEntry, FieldSet]]) -> ApplyConflict:
    """The 409 error for conflicts per manager, worded like ``internal.NewConflictError``."""
    pairs = [(entry, path) for entry, owned in conflicts for path in iter_paths(owned)]
    if len(pairs) == 1:
        entry, path = pairs[0]
        message = f"Apply failed with 1 conflict: conflict with {entry.describe()}: {path_to_string(path)}"
    else:
        lines: list[str] = []
        for entry, owned in conflicts:
            lines.append(f"conflicts with {entry.describe()}:")
            lines.extend(f"- {path_to_string(path)}" for path in iter_paths(owned))
        message = f"Apply failed with {len(pairs)} conflicts: " + "\n".join(lines)
    causes = [
        {
            "reason": "FieldManagerConflict",
            "message": f"conflict with {entry.describe()}",
            "field": path_to_string(path),
        }
        for entry, path in pairs
    ]
    return ApplyConflict([(entry.manager, path_to_string(path)) for entry, path in pairs], message, causes)


# --- upgrading from client-side apply -----------------------------------------------------------


def _last_applied(obj: JSONDict) -> str | None:
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    value = annotations.get(LAST_APPLIED) if isinstance(annotations, dict) else None
    return value if isinstance(value, str) and value else None


def _raise_unless_last_applied(
    conflicts: Conflicts, manager: str, live: JSONDict, schema: SchemaNode
) -> None:
    """``lastAppliedManager``: ``kubectl`` may take over fields it set with client-side apply.

    Conflicting fields that the live ``last-applied-configuration`` sets to their live value
    are not conflicts for the ``kubectl`` manager; any other conflict is raised.
    """
    allowed: FieldSet = frozenset()
    text = _last_applied(live) if manager == KUBECTL else None
    if text is not None:
        try:
            last = json.loads(text)
            if isinstance(last, dict):
                diff = compare(last, live, schema)
                allowed = to_field_set(last, schema) - diff.changed() - diff.removed
        except (ValueError, TypedError):
            allowed = frozenset()
    remaining = [(entry, owned - allowed) for entry, owned in conflicts if owned - allowed]
    if remaining:
        raise apply_conflict(remaining)


def _set_last_applied(obj: JSONDict, applied: JSONDict) -> None:
    """``lastAppliedUpdater``: keep the client-side apply annotation in sync for ``kubectl``."""
    config: JSONDict = deep_copy(applied)
    annotations = (config.get("metadata") or {}).get("annotations")
    if isinstance(annotations, dict):
        annotations.pop(LAST_APPLIED, None)
    text = json.dumps(config, separators=(",", ":"), sort_keys=True, ensure_ascii=False) + "\n"
    obj.setdefault("metadata", {}).setdefault("annotations", {})[LAST_APPLIED] = text


# --- updates -------------------------------------------------------------------------------------


def _is_reset(entries: Any) -> bool:
    """``isResetManagedFields``: ``[]`` or ``[{}]`` in a request clears managedFields."""
    return isinstance(entries, list) and (entries == [] or entries == [{}])


def _managers_for_update(old: JSONDict | None, new: JSONDict, subresource: str) -> Managers:
    """``decodeLiveOrNew``: the request's managedFields when valid and non-empty, else the live ones."""
    live_entries = _managed_fields_of(old)
    if subresource:
        return _decode_or_empty(live_entries)
    requested = _managed_fields_of(new)
    if _is_reset(requested):
        return {}
    managers = _decode_or_empty(requested)
    return managers or _decode_or_empty(live_entries)


def _record_create(
    new: JSONDict,
    manager: str,
    schema: SchemaNode,
    api_version: str | None,
    now: datetime | None,
    reset_fields: Collection[str],
) -> bool:
    """:func:`update_managed_fields` of a create that carries no managedFields of its own.

    The general path compares ``{}`` with the object, builds path sets, strips them and encodes
    them; here the single entry's FieldsV1 is built in one walk (same result, a fraction of the
    cost: every create goes through this). False when the shortcut does not apply.
    """
    try:
        fields_v1 = created_fields_v1(
            _without_managed_fields(new), schema, exclude=reset_fields, strip=_STRIP_ORDER
        )
    except TypedError:
        _set_managed_fields(new, [])
        return True
    if fields_v1 is None:
        return False
    if fields_v1:
        version = api_version or str(new.get("apiVersion") or "")
        entry = ManagedEntry(manager, UPDATE, version, frozenset(), format_now(now))
        _set_managed_fields(new, [entry.encode_with(fields_v1)])
    else:
        _set_managed_fields(new, [])
    return True


STATUS_SCOPED_COMPARE = True
"""Whether an update of the status subresource compares only the status (what its scope keeps);
the comparison of the whole objects stays for the tests to compare with."""


def _status_only(obj: JSONDict) -> JSONDict:
    """The part of ``obj`` a status update may own fields of (its other members' paths are out of
    the scope; the metadata walk was half of a status update's comparison)."""
    return {STATUS: obj[STATUS]} if STATUS in obj else {}


def update_managed_fields(
    old: JSONDict | None,
    new: JSONDict,
    manager: str,
    operation: str = UPDATE,
    subresource: str = "",
    *,
    schema: SchemaNode = DEDUCED,
    api_version: str | None = None,
    now: datetime | None = None,
    reset_fields: Collection[str] = (),
) -> None:
    """Record a create/update/patch of ``new`` (from ``old``, None on create) by ``manager``.

    Sets ``new["metadata"]["managedFields"]`` in place: ``manager`` (operation ``Update``,
    ``api_version`` default ``new["apiVersion"]``) takes the added and modified fields (its
    entry's time becomes ``now``), every manager loses them and the removed ones. Like the
    real server's ``UpdateNoErrors``, an object that does not fit ``schema`` gets its
    managedFields cleared instead of failing the write.
    """
    if operation != UPDATE:
        raise ValueError(f"update_managed_fields records Update operations, not {operation!r}")
    managers = _managers_for_update(old, new, subresource)
    shortcut = old is None and not managers and not subresource
    if shortcut and _record_create(new, manager, schema, api_version, now, reset_fields):
        return
    try:
        scoped = subresource == STATUS and old is not None and STATUS_SCOPED_COMPARE
        if old is None:  # a create: everything is added (what compare({}, new) finds, faster)
            comparison = compare_created(_without_managed_fields(new), schema)
        elif scoped:
            comparison = compare(_status_only(old), _status_only(new), schema)
        else:
            comparison = compare(_without_managed_fields(old), _without_managed_fields(new), schema)
    except TypedError:
        _set_managed_fields(new, [])
        return
    if not scoped:  # every path of the status-only comparison is under f:status: in scope already
        comparison = comparison.filtered(_scope(subresource, reset_fields))
    changed = comparison.changed()
    lost = changed | comparison.removed
    updated = {ident: entry.with_fields(entry.fields - lost) for ident, entry in managers.items()}
    own = strip_meta(changed)
    if own:
        version = api_version or str(new.get("apiVersion") or "")
        ident = manager_identifier(manager, UPDATE, version, subresource)
        before = updated.get(ident)
        fields = own | before.fields if before is not None else own
        updated[ident] = ManagedEntry(manager, UPDATE, version, fields, format_now(now), subresource)
    _finish(new, updated)
