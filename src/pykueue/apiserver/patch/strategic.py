"""Kubernetes strategic merge patch (``application/strategic-merge-patch+json``).

A port of ``k8s.io/apimachinery/pkg/util/strategicpatch`` as the API server runs it
(``MergeParallelList`` and ``IgnoreUnmatchedNulls`` on), driven by the ``patch_strategy`` and
``patch_merge_key`` of :class:`SchemaNode`:

* maps merge recursively, ``null`` deletes a member; a map field with patch strategy ``replace``
  is replaced;
* lists whose strategy contains ``merge`` are merged: maps by ``patch_merge_key`` (items merged
  recursively, new ones appended), primitives as a de-duplicated union; other lists are
  replaced;
* directives: ``$patch: replace`` (map: replace it; list element: replace the list),
  ``$patch: delete`` (map: empty it; list element: delete the item with that key),
  ``$deleteFromPrimitiveList/<field>``, ``$setElementOrder/<field>`` and ``$retainKeys``;
* the resulting list order is the one ``normalizeElementOrder`` produces: patch items in patch
  (or ``$setElementOrder``) order, interleaved with server-only items in live order.

Deviations: values for members absent from the live object are merged into an empty value so
that nested directives and nulls never end up stored (the Go code stores them verbatim and
relies on the typed conversion to drop them); a ``{"$patch": "delete"}`` value for an absent
member is ignored.
"""

from __future__ import annotations

from typing import Any, Final

from pykueue.apiserver.patch._values import JSON, JSONDict, deep_copy, json_equal
from pykueue.apiserver.patch.errors import PatchError, bad_request, internal
from pykueue.apiserver.patch.schema_node import SchemaNode

DIRECTIVE: Final = "$patch"
REPLACE: Final = "replace"
DELETE: Final = "delete"
MERGE: Final = "merge"
RETAIN_KEYS: Final = "$retainKeys"
DELETE_FROM_PRIMITIVE_LIST: Final = "$deleteFromPrimitiveList/"
SET_ELEMENT_ORDER: Final = "$setElementOrder/"


def strategic_merge_patch(obj: JSONDict, patch: JSONDict, schema: SchemaNode) -> JSONDict:
    """Apply a strategic merge ``patch`` to ``obj`` (neither is modified); return the result.

    Raises :class:`PatchError` (400 for malformed directives, 422 for lists of lists, 500 for
    other failures such as a list item without its merge key) as the real server does.
    """
    if not isinstance(patch, dict):
        raise bad_request("json: cannot unmarshal non-object into Go value of type map[string]interface {}")
    return _merge_map(deep_copy(obj), deep_copy(patch), schema)


# --- maps ----------------------------------------------------------------------------------------


def _merge_map(original: JSONDict | None, patch: JSONDict, schema: SchemaNode) -> JSONDict:
    """``mergeMap``: merge ``patch`` into ``original`` (both owned by the caller)."""
    if DIRECTIVE in patch:
        return _map_directive(patch[DIRECTIVE], patch)
    result: JSONDict = original if original is not None else {}
    _apply_retain_keys(result, patch)
    _merge_ordered_lists(result, patch, schema)
    for key in list(patch):
        _merge_member(result, key, patch[key], schema)
    return result


def _map_directive(directive: Any, patch: JSONDict) -> JSONDict:
    """``handleDirectiveInMergeMap``."""
    if directive == REPLACE:
        del patch[DIRECTIVE]
        replaced: JSONDict = _discard_nulls(patch)
        return replaced
    if directive == DELETE:
        return {}
    raise internal(f"unknown patch type: {directive} in map: {_go_map(patch)}")


def _merge_member(result: JSONDict, key: str, value: JSON, schema: SchemaNode) -> None:
    """Merge one patch member into ``result``."""
    delete_list = key.startswith(DELETE_FROM_PRIMITIVE_LIST)
    if delete_list:
        key = key[len(DELETE_FROM_PRIMITIVE_LIST) :]
    elif key.startswith("$"):
        return  # leftover directive (e.g. $setElementOrder for an absent list): never stored
    if value is None:
        result.pop(key, None)
        return
    sub = schema.field(key)
    if key not in result:
        if not delete_list:
            _set_new(result, key, value, sub)
        return
    current = result[key]
    if _kind(current) != _kind(value):
        if not delete_list:
            _set_new(result, key, value, sub)
        return
    strategies = sub.patch_strategies - {"retainKeys"}
    if isinstance(current, dict):
        result[key] = _discard_nulls(value) if REPLACE in strategies else _merge_map(current, value, sub)
    elif isinstance(current, list):
        if MERGE in strategies or delete_list:
            result[key] = _merge_list(current, value, sub, delete_list=delete_list)
        else:
            result[key] = _discard_nulls(value)
    else:
        result[key] = value


def _set_new(result: JSONDict, key: str, value: JSON, schema: SchemaNode) -> None:
    """A member absent from the live object (or of another type) takes the patch value."""
    if isinstance(value, dict):
        if value.get(DIRECTIVE) == DELETE:
            return
        result[key] = _merge_map({}, value, schema)
    elif isinstance(value, list) and MERGE in schema.patch_strategies:
        result[key] = _merge_list([], value, schema, delete_list=False)
    else:
        result[key] = _discard_nulls(value)


def _apply_retain_keys(original: JSONDict, patch: JSONDict) -> None:
    """``applyRetainKeysDirective``: keep only the listed members of ``original``."""
    if RETAIN_KEYS not in patch:
        return
    keys = patch.pop(RETAIN_KEYS)
    original.pop(RETAIN_KEYS, None)
    if not isinstance(keys, list):
        raise bad_request("invalid patch format of retainKeys")
    allowed = set(k for k in keys if isinstance(k, str))
    for key, value in patch.items():
        if value is None or key.startswith((DELETE_FROM_PRIMITIVE_LIST, SET_ELEMENT_ORDER)):
            continue
        if key not in allowed:
            raise bad_request("invalid patch format of retainKeys")
    for key in list(original):
        if key not in allowed:
            del original[key]


# --- $setElementOrder ----------------------------------------------------------------------------


def _merge_ordered_lists(original: JSONDict, patch: JSONDict, schema: SchemaNode) -> None:
    """``mergePatchIntoOriginal``: merge lists that carry a ``$setElementOrder`` directive."""
    for directive in [k for k in patch if k.startswith(SET_ELEMENT_ORDER)]:
        order = patch[directive]
        key = directive[len(SET_ELEMENT_ORDER) :]
        if not isinstance(order, list):
            raise bad_request("invalid patch format of setElementOrder list")
        sub = schema.field(key)
        merge_key = sub.patch_merge_key
        live = original.get(key)
        patched = patch.get(key)
        if (live is not None and not isinstance(live, list)) or (
            patched is not None and not isinstance(patched, list)
        ):
            raise bad_request("invalid patch format of setElementOrder list")
        if live is None and patched is None:
            continue
        _validate_order(patched or [], order, merge_key)
        if patched is None:
            merged = list(live or [])
        elif live is None:
            merged = _remove_directives(patched)
        elif MERGE in sub.patch_strategies:
            merged = _merge_list(live, patched, sub, delete_list=False)
        else:
            merged = _discard_nulls(patched)
        is_map = _is_map_list([*(live or []), *(patched or []), *order])
        patch_items, server_only = _partition(merged, order, merge_key, is_map)
        original[key] = _normalize_order(patch_items, server_only, order, live or [], merge_key, is_map)
        patch.pop(key, None)
        del patch[directive]


def _validate_order(patched: list[Any], order: list[Any], merge_key: str) -> None:
    """``validatePatchWithSetOrderList``: patch items must appear in ``order``, in the same order."""
    if not order or not patched:
        return
    items = [p for p in patched if not (isinstance(p, dict) and DIRECTIVE in p)] if merge_key else patched
    pi = si = 0
    while pi < len(items) and si < len(order):
        if _same_item(items[pi], order[si], merge_key):
            pi += 1
        si += 1
    if pi < len(items):
        raise internal(
            f"The order in patch list:\n{_go_value(patched)}\n doesn't match $setElementOrder list:\n{_go_value(order)}\n"
        )


def _remove_directives(value: JSON) -> Any:
    """``removeDirectives``: drop maps carrying ``$patch`` (recursively)."""
    if isinstance(value, dict):
        return {k: _remove_directives(v) for k, v in value.items() if not _has_directive(v)}
    if isinstance(value, list):
        return [_remove_directives(v) for v in value if not _has_directive(v)]
    return value


def _has_directive(value: JSON) -> bool:
    return isinstance(value, dict) and DIRECTIVE in value


# --- lists ---------------------------------------------------------------------------------------


def _merge_list(original: list[Any], patch: list[Any], schema: SchemaNode, *, delete_list: bool) -> list[Any]:
    """``mergeSlice``."""
    if not original and not patch:
        return original
    if any(isinstance(v, list) for v in [*original, *patch]):
        raise PatchError(422, "Invalid", "lists of lists are not supported")
    is_map = _is_map_list([*original, *patch])
    merge_key = schema.patch_merge_key
    if not is_map:
        if delete_list:
            return [v for v in original if not any(json_equal(v, d) for d in patch)]
        merged = _dedupe([*original, *patch])
    else:
        if not merge_key:
            raise internal(f"cannot merge lists without merge key for {schema!r}")
        original, patch = _special_elements(original, patch, merge_key)
        merged = _merge_maps_by_key(original, patch, merge_key, schema.items)
    patch_items, server_only = _partition(merged, patch, merge_key, is_map)
    return _normalize_order(patch_items, server_only, patch, original, merge_key, is_map)


def _special_elements(original: list[Any], patch: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    """``mergeSliceWithSpecialElements``: honour ``$patch`` items (delete / replace)."""
    plain: list[Any] = []
    replace = False
    for item in patch:
        if not isinstance(item, dict) or DIRECTIVE not in item:
            plain.append(item)
            continue
        directive = item[DIRECTIVE]
        if directive == DELETE:
            if merge_key not in item:
                raise internal(f"map: {_go_map(item)} does not contain declared merge key: {merge_key}")
            original = _delete_matching(original, merge_key, item[merge_key])
        elif directive == REPLACE:
            replace = True
        elif directive == MERGE:
            raise internal("merging lists cannot yet be specified in the patch")
        else:
            raise internal(f"unknown patch type: {directive} in map: {_go_map(item)}")
    if replace:
        return [_discard_nulls(p) for p in plain], []
    return original, plain


def _delete_matching(items: list[Any], merge_key: str, value: JSON) -> list[Any]:
    for item in items:
        if not isinstance(item, dict):
            raise internal(f"value for key {merge_key!r} is not a map")
    return [item for item in items if not (merge_key in item and json_equal(item[merge_key], value))]


def _find(items: list[Any], merge_key: str, value: JSON) -> int:
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise internal(f"value for key {merge_key!r} is not a map")
        if merge_key in item and json_equal(item[merge_key], value):
            return index
    return -1


def _merge_maps_by_key(
    original: list[Any], patch: list[Any], merge_key: str, item_schema: SchemaNode
) -> list[Any]:
    """``mergeSliceWithoutSpecialElements``: merge items with equal keys, append the others."""
    result = list(original)
    for item in patch:
        if not isinstance(item, dict) or merge_key not in item:
            raise internal(f"map: {_go_map(item)} does not contain declared merge key: {merge_key}")
        index = _find(result, merge_key, item[merge_key])
        if index >= 0:
            result[index] = _merge_map(result[index], item, item_schema)
        else:
            result.append(_merge_map({}, item, item_schema))
    return result


def _dedupe(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for value in values:
        if not any(json_equal(value, seen) for seen in out):
            out.append(value)
    return out


# --- ordering (normalizeElementOrder) -------------------------------------------------------------


def _identity(item: JSON, merge_key: str, is_map: bool) -> JSON:
    return item.get(merge_key) if is_map and isinstance(item, dict) else item


def _same_item(a: JSON, b: JSON, merge_key: str) -> bool:
    if merge_key:
        if not isinstance(a, dict) or not isinstance(b, dict):
            raise internal("lists with a merge key must contain maps")
        return json_equal(a.get(merge_key), b.get(merge_key))
    return json_equal(a, b)


def _index(items: list[Any], item: JSON, merge_key: str, is_map: bool) -> int:
    wanted = _identity(item, merge_key, is_map)
    for position, candidate in enumerate(items):
        if json_equal(_identity(candidate, merge_key, is_map), wanted):
            return position
    return -1


def _partition(
    merged: list[Any], patch: list[Any], merge_key: str, is_map: bool
) -> tuple[list[Any], list[Any]]:
    """Split ``merged`` into items present in ``patch`` and server-only items."""
    in_patch: list[Any] = []
    server_only: list[Any] = []
    for item in merged:
        (in_patch if _index(patch, item, merge_key, is_map) >= 0 else server_only).append(item)
    return in_patch, server_only


def _sort_by(items: list[Any], order: list[Any], merge_key: str, is_map: bool) -> list[Any]:
    """``normalizeSliceOrder``: stable sort of ``items`` by their position in ``order``."""
    if is_map:
        for item in [*items, *order]:
            if not isinstance(item, dict) or merge_key not in item:
                raise internal(f"map: {_go_map(item)} does not contain declared merge key: {merge_key}")
    positions = [_index(order, item, merge_key, is_map) for item in items]
    ranked = sorted(range(len(items)), key=lambda i: (positions[i] if positions[i] >= 0 else len(order), i))
    return [items[i] for i in ranked]


def _normalize_order(
    patch_items: list[Any],
    server_only: list[Any],
    patch_order: list[Any],
    server_order: list[Any],
    merge_key: str,
    is_map: bool,
) -> list[Any]:
    """Patch items in patch order interleaved with server-only items in live order (``mergeSortedSlice``)."""
    right = _sort_by(patch_items, patch_order, merge_key, is_map)
    left = _sort_by(server_only, server_order, merge_key, is_map)
    out: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if i >= len(left):
            out.append(right[j])
            j += 1
        elif j >= len(right):
            out.append(left[i])
            i += 1
        else:
            li = _index(server_order, left[i], merge_key, is_map)
            ri = _index(server_order, right[j], merge_key, is_map)
            if li >= 0 and ri >= 0 and li < ri:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
    return out


# --- helpers -------------------------------------------------------------------------------------


def _kind(value: JSON) -> str:
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "list"
    return "scalar"


def _is_map_list(items: list[Any]) -> bool:
    return any(isinstance(v, dict) for v in items)


def _discard_nulls(value: JSON) -> Any:
    """``discardNullValuesFromPatch`` (on a copy): drop ``null`` map members recursively."""
    if isinstance(value, dict):
        return {k: _discard_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_discard_nulls(v) for v in value]
    return value


def _go_value(value: JSON) -> str:
    """Roughly ``fmt.Sprintf("%v", value)`` for error messages."""
    if isinstance(value, dict):
        return _go_map(value)
    if isinstance(value, list):
        return "[" + " ".join(_go_value(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _go_map(value: JSON) -> str:
    if not isinstance(value, dict):
        return _go_value(value)
    return "map[" + " ".join(f"{k}:{_go_value(value[k])}" for k in sorted(value)) + "]"
