"""Schema-aware walks over objects, ported from structured-merge-diff's ``typed`` package.

* :func:`to_field_set` – ``TypedValue.ToFieldSet``: the fields an (applied) object sets.
* :func:`compare` – ``TypedValue.Compare``: added / modified / removed paths between versions.
* :func:`merge` – ``TypedValue.Merge``: an applied configuration merged into a live object.
* :func:`remove_items` – ``TypedValue.RemoveItems``: drop the members of a field set.
* :func:`ensure_named_fields_are_members` – ``Set.EnsureNamedFieldsAreMembers``.

Values are JSON-like; absent values are :data:`MISSING` (distinct from ``None``/null).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from pykueue.apiserver.patch._values import JSON, MISSING, JSONDict, deep_copy, drop_nulls, json_equal
from pykueue.apiserver.patch.fieldpath import (
    FieldSet,
    Path,
    PathElement,
    element_sort_key,
    element_to_string,
    field_element,
    key_element,
    path_to_string,
    single_key_element,
    trie_of,
    value_element,
)
from pykueue.apiserver.patch.schema_node import SchemaNode


class TypedError(ValueError):
    """A value does not fit its schema (missing list-map key, duplicate key, ...)."""


@dataclass
class Comparison:
    """Result of :func:`compare`."""

    added: set[Path] = field(default_factory=set)
    modified: set[Path] = field(default_factory=set)
    removed: set[Path] = field(default_factory=set)

    def changed(self) -> FieldSet:
        """Added or modified paths (what an updater takes ownership of)."""
        return frozenset(self.added | self.modified)

    def filtered(self, keep: Callable[[Path], bool]) -> Comparison:
        """A comparison restricted to the paths for which ``keep(path)`` is true."""
        return Comparison(
            {p for p in self.added if keep(p)},
            {p for p in self.modified if keep(p)},
            {p for p in self.removed if keep(p)},
        )


_json_encode = msgspec.json.encode

# --- shapes and list items ------------------------------------------------------------------------


def _shape(node: SchemaNode, value: JSON) -> str:
    """How ``value`` is walked under ``node``: missing, map, list (associative) or leaf."""
    if value is MISSING:
        return "missing"
    if node.kind == "map":
        if value is None or isinstance(value, dict):
            return "map" if node.map_type != "atomic" else "leaf"
        return "leaf"
    if node.kind == "list":
        if value is None or isinstance(value, list):
            return "list" if node.list_type != "atomic" else "leaf"
        return "leaf"
    if node.kind == "any" and isinstance(value, dict):
        return "map"
    return "leaf"


def _as_map(value: JSON) -> JSONDict:
    return value if isinstance(value, dict) else {}


def _as_list(value: JSON) -> list[Any]:
    return value if isinstance(value, list) else []


def item_element(node: SchemaNode, item: JSON, path: Path = (), index: int = 0) -> PathElement:
    """The path element of one item of an associative list ``node``."""
    if node.list_type != "map" or not node.list_map_keys:
        return value_element(item)
    if not isinstance(item, dict):
        raise TypedError(f"{path_to_string(path)}: element {index}: expected map, got {type(item).__name__}")
    if len(node.list_map_keys) == 1:  # conditions by type, pod sets by name: one string key
        value = item.get(node.list_map_keys[0])
        if type(value) is str:
            return single_key_element(node.list_map_keys[0], value)
    keys: JSONDict = {}
    for name in node.list_map_keys:
        if name in item:
            keys[name] = item[name]
            continue
        default = node.items.field(name).default
        if default is MISSING:
            raise TypedError(
                f"{path_to_string(path)}: element {index}: associative list with keys has an element "
                f'that omits key field "{name}" (and doesn\'t have default value)'
            )
        keys[name] = default
    return key_element(keys)


def _index_items(
    node: SchemaNode, items: list[Any], path: Path, *, unique: bool
) -> tuple[list[PathElement], dict[PathElement, list[Any]]]:
    """Item elements in order and the items of each element (several when duplicated)."""
    order: list[PathElement] = []
    by_element: dict[PathElement, list[Any]] = {}
    for index, item in enumerate(items):
        element = item_element(node, item, path, index)
        if element in by_element:
            if unique:
                raise TypedError(
                    f"{path_to_string(path)}: duplicate entries for key {element_to_string(element)}"
                )
            by_element[element].append(item)
        else:
            by_element[element] = [item]
        order.append(element)
    return order, by_element


# --- ToFieldSet ----------------------------------------------------------------------------------


def to_field_set(value: JSON, node: SchemaNode, *, unique: bool = False) -> FieldSet:
    """The field set of ``value`` (``ToFieldSet``); ``unique`` rejects duplicate list keys."""
    out: set[Path] = set()
    _to_field_set(value, node, (), out, unique)
    out.discard(())
    return frozenset(out)


def _to_field_set(value: JSON, node: SchemaNode, path: Path, out: set[Path], unique: bool) -> None:
    shape = _shape(node, value)
    if shape == "leaf":
        out.add(path)
    elif shape == "list":
        order, by_element = _index_items(node, _as_list(value), path, unique=unique)
        for element in dict.fromkeys(order):
            child = (*path, element)
            for item in by_element[element]:
                _to_field_set(item, node.items, child, out, unique)
            out.add(child)
    elif shape == "map":
        for name, member in _as_map(value).items():
            child = (*path, field_element(name))
            _to_field_set(member, node.field(name), child, out, unique)
            if member is None or member == {} or not node.has_field(name):
                out.add(child)


# --- Compare -------------------------------------------------------------------------------------

ONE_SIDED_WALK = True
"""Whether :func:`compare` walks a member present on one side only with :func:`_add_all`."""


def compare(lhs: JSON, rhs: JSON, node: SchemaNode) -> Comparison:
    """Paths added, modified and removed going from ``lhs`` to ``rhs`` (``Compare``)."""
    out = Comparison()
    _compare(lhs, rhs, node, (), out)
    for paths in (out.added, out.modified, out.removed):
        paths.discard(())
    return out


def _compare_leaf(lhs: JSON, rhs: JSON, path: Path, out: Comparison) -> None:
    if lhs is MISSING:
        out.added.add(path)
    elif rhs is MISSING:
        out.removed.add(path)
    elif not json_equal(lhs, rhs):
        out.modified.add(path)


def _compare(lhs: JSON, rhs: JSON, node: SchemaNode, path: Path, out: Comparison) -> None:
    if lhs is rhs and lhs is not MISSING:
        # The same object on both sides (e.g. the live spec under a status update): unchanged.
        return
    # One side absent (e.g. the first status of a workload): everything on the other side is
    # added (or removed); the one-sided walk finds the same paths without pairing each member
    # with an absent one (the pairwise walk below stays for the tests to compare with).
    if ONE_SIDED_WALK:
        if lhs is MISSING and rhs is not MISSING:
            _add_all(rhs, node, path, out.added)
            return
        if rhs is MISSING and lhs is not MISSING:
            _add_all(lhs, node, path, out.removed)
            return
    left, right = _shape(node, lhs), _shape(node, rhs)
    if "missing" not in (left, right) and left != right:
        _compare_reshaped(lhs, rhs, node, path, out)
        return
    shape = right if left == "missing" else left
    if shape == "leaf" or (shape in ("map", "list") and _empty(lhs) and _empty(rhs)):
        _compare_leaf(lhs, rhs, path, out)
        return
    if shape == "map":
        _compare_map(_as_map(lhs), _as_map(rhs), node, path, out)
    else:
        _compare_list(_as_list(lhs), _as_list(rhs), node, path, out)
    if lhs is MISSING:
        out.added.add(path)
    elif rhs is MISSING:
        out.removed.add(path)


def compare_created(value: JSON, node: SchemaNode) -> Comparison:
    """``compare({}, value, node)`` (a create: every field is added), without the pairwise walk."""
    if _empty(value) or _shape(node, {}) != "map" or _shape(node, value) != "map":
        return compare({}, value, node)
    out: set[Path] = set()
    for name, member in _as_map(value).items():
        _add_all(member, node.field(name), (field_element(name),), out)
    return Comparison(added=out)


def created_fields_v1(
    value: JSONDict, node: SchemaNode, *, exclude: Collection[str], strip: Sequence[Path]
) -> dict[str, Any] | None:
    """The FieldsV1 of what a create sets, directly (no path sets, no second walk).

    Equal to ``to_fields_v1(p for p in compare({}, value, node).added if p[0] not in
    exclude and p not in strip)`` for a non-empty object ``value``: top-level members named in
    ``exclude`` are left out with everything below them; the exact paths in ``strip`` are not
    members (their children stay). None when ``value`` is not a non-empty object of an object
    schema (the caller then takes the general path).
    """
    if _empty(value) or _shape(node, {}) != "map" or _shape(node, value) != "map":
        return None
    out: dict[str, Any] = {}
    for name in sorted(value):
        if name not in exclude:
            element = field_element(name)
            member = value[name]
            out[element] = (
                _created_member(member, node.field(name), (element,))
                if isinstance(member, dict | list)
                else {}
            )
    for path in strip:
        _strip_member(out, path)
    return out


def _created_member(value: JSON, node: SchemaNode, path: Path) -> dict[str, Any]:
    """The FieldsV1 body of a member that a create sets (``"."`` when it has children).

    :func:`_shape` and :func:`_empty` are inlined (a create walks every member of its object)."""
    kind = node.kind
    if isinstance(value, dict):
        if not value or not ((kind == "map" and node.map_type != "atomic") or kind == "any"):
            return {}
        out: dict[str, Any] = {".": {}}
        field = node.field
        for name in sorted(value):
            element = "f:" + name
            member = value[name]
            # a scalar's body is empty whatever its node (what the call would give)
            out[element] = (
                _created_member(member, field(name), (*path, element))
                if isinstance(member, dict | list)
                else {}
            )
        return out
    if not (isinstance(value, list) and value and kind == "list" and node.list_type != "atomic"):
        return {}
    out = {".": {}}
    _, by_element = _index_items(node, value, path, unique=False)
    for element in sorted(by_element, key=element_sort_key):
        items = by_element[element]
        out[element] = {} if len(items) >= 2 else _created_member(items[0], node.items, (*path, element))
    return out


def _strip_member(fields_v1: dict[str, Any], path: Path) -> None:
    """Make ``path`` a non-member: drop its ``"."``, or the whole entry when nothing is below it."""
    parent = fields_v1
    for element in path[:-1]:
        child = parent.get(element)
        if child is None:
            return
        parent = child
    entry = parent.get(path[-1])
    if entry is None:
        return
    if len(entry) > 1 or (entry and "." not in entry):
        entry.pop(".", None)
    else:
        del parent[path[-1]]
        if len(parent) == 1 and "." in parent:
            parent.clear()  # a member whose only child went: a leaf member again


def _add_all(value: JSON, node: SchemaNode, path: Path, out: set[Path]) -> None:
    """The paths ``_compare(MISSING, value, node, path)`` adds (and ``_compare(value, MISSING,
    ...)`` removes): every one of ``value`` (present), duplicated list items as one path.

    :func:`_shape` and :func:`_empty` are inlined (a status update walks all of a new status)."""
    kind = node.kind
    if isinstance(value, dict):
        if value and ((kind == "map" and node.map_type != "atomic") or kind == "any"):
            field = node.field
            for name, member in value.items():
                if isinstance(member, dict | list):
                    _add_all(member, field(name), (*path, "f:" + name), out)
                else:  # a scalar adds its own path only (what the call would do, without its node)
                    out.add((*path, "f:" + name))
    elif isinstance(value, list) and value and kind == "list" and node.list_type != "atomic":
        order, by_element = _index_items(node, value, path, unique=False)
        items_node = node.items
        for element in dict.fromkeys(order):
            items = by_element[element]
            if len(items) >= 2:
                out.add((*path, element))
            else:
                _add_all(items[0], items_node, (*path, element), out)
    out.add(path)


def _empty(value: JSON) -> bool:
    # ``value == {}`` built an empty dict (and a list) per call; same answer for JSON values.
    return value is MISSING or value is None or (isinstance(value, dict | list) and not value)


def _compare_reshaped(lhs: JSON, rhs: JSON, node: SchemaNode, path: Path, out: Comparison) -> None:
    """A value whose kind changed (e.g. null -> object in untyped content): modified."""
    sub = Comparison()
    _compare(lhs, MISSING, node, path, sub)
    _compare(MISSING, rhs, node, path, sub)
    out.removed |= sub.removed - {path}
    out.added |= sub.added - {path}
    out.modified.add(path)


def _compare_map(lhs: JSONDict, rhs: JSONDict, node: SchemaNode, path: Path, out: Comparison) -> None:
    for name in dict.fromkeys([*lhs, *rhs]):
        _compare(
            lhs.get(name, MISSING),
            rhs.get(name, MISSING),
            node.field(name),
            (*path, field_element(name)),
            out,
        )


def _compare_list(lhs: list[Any], rhs: list[Any], node: SchemaNode, path: Path, out: Comparison) -> None:
    left_order, left = _index_items(node, lhs, path, unique=False)
    right_order, right = _index_items(node, rhs, path, unique=False)
    for element in dict.fromkeys([*left_order, *right_order]):
        child = (*path, element)
        lvals, rvals = left.get(element, []), right.get(element, [])
        if len(lvals) >= 2 or len(rvals) >= 2:
            _compare_duplicates(lvals, rvals, child, out)
            continue
        if lvals and rvals and _unchanged_item(lvals[0], rvals[0]):
            continue
        _compare(lvals[0] if lvals else MISSING, rvals[0] if rvals else MISSING, node.items, child, out)


SKIP_UNCHANGED_ITEMS = True
"""Whether :func:`compare` passes over list items that are the same JSON on both sides (the walk
stays for the tests to compare with)."""


def _unchanged_item(lhs: JSON, rhs: JSON) -> bool:
    """Whether a list item is the same on both sides, where the walk could find nothing: the same
    JSON (C-speed encodings, byte for byte) holding no list (the walk raises only over lists) and
    no null (NaN encodes as null too). The unchanged conditions of a status update, mostly."""
    if not SKIP_UNCHANGED_ITEMS or type(lhs) is not dict or type(rhs) is not dict:
        return False
    try:
        encoded = _json_encode(lhs)
        return b"[" not in encoded and b"null" not in encoded and encoded == _json_encode(rhs)
    except TypeError:  # not plain JSON data: the walk decides
        return False


def _compare_duplicates(lvals: list[Any], rvals: list[Any], path: Path, out: Comparison) -> None:
    if not rvals:
        out.removed.add(path)
    elif not lvals:
        out.added.add(path)
    elif not json_equal(lvals, rvals):
        out.modified.add(path)


# --- Merge ---------------------------------------------------------------------------------------


def merge(lhs: JSON, rhs: JSON, node: SchemaNode) -> JSON:
    """``rhs`` (an applied configuration) merged into ``lhs`` (the live object); inputs unchanged."""
    return _merge(lhs, rhs, node, ())


def check_merge(lhs: JSON, rhs: JSON, node: SchemaNode, path: Path = ()) -> None:
    """Raise what ``merge`` of ``rhs`` into ``lhs`` at ``path`` raises, building nothing.

    The same walk in the same order (so the same first error), without copying: for the members
    of a status apply's configuration that the write throws away (only the status is kept)."""
    _merge(lhs, rhs, node, path, build=False)


def merge_member(lhs: JSON, rhs: JSON, node: SchemaNode, path: Path) -> JSON:
    """``merge`` of one member at ``path`` (what ``merge`` of its parent puts there)."""
    return _merge(lhs, rhs, node, path)


def merge_member_without_nulls(lhs: JSON, rhs: JSON, node: SchemaNode, path: Path) -> JSON:
    """``drop_nulls(merge_member(lhs, rhs, node, path))`` with one copy instead of two: the merge
    shares the parts it takes whole from ``lhs`` and ``rhs`` (decoded JSON: dicts, lists and
    immutable scalars), and ``drop_nulls`` rebuilds every dict and list of the result, so nothing
    of either input is in it. A status apply copied the live status twice this way."""
    return drop_nulls(_merge(lhs, rhs, node, path, share=True))


def _same(value: JSON) -> JSON:
    return value


def _merge(
    lhs: JSON, rhs: JSON, node: SchemaNode, path: Path, build: bool = True, *, share: bool = False
) -> JSON:
    copy = _same if share else deep_copy
    if rhs is MISSING:
        return copy(lhs) if build else None
    left, right = _shape(node, lhs), _shape(node, rhs)
    if left != right or right == "leaf" or (_empty(lhs) and _empty(rhs)):
        return copy(rhs) if build else None
    if right == "map":
        if not build:
            live = _as_map(lhs)
            for name, member in _as_map(rhs).items():
                _merge(live.get(name, MISSING), member, node.field(name), (*path, field_element(name)), False)
            return None
        result = dict(_as_map(lhs)) if share else deep_copy(_as_map(lhs))
        for name, member in _as_map(rhs).items():
            result[name] = _merge(
                result.get(name, MISSING), member, node.field(name), (*path, field_element(name)), share=share
            )
        return result
    return _merge_list(_as_list(lhs), _as_list(rhs), node, path, build, share=share)


def _merge_list(
    lhs: list[Any], rhs: list[Any], node: SchemaNode, path: Path, build: bool = True, *, share: bool = False
) -> list[Any]:
    """Associative list merge keeping the live order, ported from ``mergingWalker.visitListItems``
    (``build`` False: the same walk, nothing copied, an empty list returned; ``share``: the items
    taken whole are not copied, see :func:`merge_member_without_nulls`)."""
    rhs_order, rhs_items = _index_items(node, rhs, path, unique=True)
    lhs_order, lhs_items = _index_items(node, lhs, path, unique=False)

    def live(element: PathElement) -> JSON:
        found = lhs_items.get(element)
        return found[0] if found and len(found) == 1 else MISSING

    def merged(element: PathElement, current: JSON) -> JSON:
        return _merge(current, rhs_items[element][0], node.items, (*path, element), build, share=share)

    shared = [e for e in rhs_order if e in lhs_items]
    next_shared = shared.pop(0) if shared else None
    done: set[PathElement] = set()
    out: list[Any] = []
    li = ri = 0
    while li < len(lhs_order) or ri < len(rhs_order):
        if li < len(lhs_order) and ri < len(rhs_order):
            element = lhs_order[li]
            if element == rhs_order[ri]:
                done.add(element)
                out.append(merged(element, live(element)))
                li, ri = li + 1, ri + 1
                next_shared = shared.pop(0) if shared else None
                continue
            if element in rhs_items and next_shared is not None and next_shared != element:
                li += 1
                continue
        if li < len(lhs_order):
            element = lhs_order[li]
            if element not in rhs_items:
                if build:
                    out.append(lhs[li] if share else deep_copy(lhs[li]))
                li += 1
                continue
            if element in done:
                li += 1
                continue
        if ri < len(rhs_order):
            element = rhs_order[ri]
            done.add(element)
            out.append(merged(element, live(element)))
            ri += 1
            if next_shared is not None and next_shared == element:
                next_shared = shared.pop(0) if shared else None
    return out if build else []


# --- RemoveItems ---------------------------------------------------------------------------------


def remove_items(value: JSON, paths: Iterable[Path], node: SchemaNode) -> JSON:
    """A copy of ``value`` without the members of ``paths`` (whole subtrees)."""
    return _remove(deep_copy(value), list(paths), node, ())


def _remove(value: JSON, paths: list[Path], node: SchemaNode, path: Path) -> JSON:
    members, children = trie_of(paths)
    shape = _shape(node, value)
    if shape == "map" and isinstance(value, dict):
        for name in list(value):
            element = field_element(name)
            if element in members:
                del value[name]
            elif element in children:
                value[name] = _remove(value[name], children[element], node.field(name), (*path, element))
    elif shape == "list" and isinstance(value, list):
        kept: list[Any] = []
        for index, item in enumerate(value):
            element = item_element(node, item, path, index)
            if element in members:
                continue
            if element in children:
                item = _remove(item, children[element], node.items, (*path, element))
            kept.append(item)
        value[:] = kept
    return value


# --- EnsureNamedFieldsAreMembers ------------------------------------------------------------------


def ensure_named_fields_are_members(paths: Iterable[Path], node: SchemaNode) -> FieldSet:
    """Add every prefix of a path that ends in a *declared* struct field as a member itself."""
    out = set(paths)
    for path in list(out):
        current = node
        for depth, element in enumerate(path[:-1], start=1):
            if element.startswith("f:") and current.has_field(element[2:]):
                out.add(path[:depth])
            current = current.child(element)
    return frozenset(out)
