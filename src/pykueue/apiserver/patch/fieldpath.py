"""Field paths and field sets in the ``FieldsV1`` encoding of ``metadata.managedFields``.

A *path element* is kept in its FieldsV1 key form, canonically encoded so that equal elements
are equal strings:

* ``f:<name>`` – a member of a map/struct;
* ``k:{"containerPort":80,"protocol":"TCP"}`` – an item of a ``map`` list, keys sorted by name,
  values JSON-encoded as Go does;
* ``v:<json>`` – an item of a ``set`` list;
* ``i:<n>`` – an item by index (only in decoded foreign data; this engine never produces it).

A *path* is a tuple of elements and a *field set* a frozenset of paths: exactly the members of a
structured-merge-diff ``fieldpath.Set``. ``"."`` in FieldsV1 marks that a node with children is
itself a member.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pykueue.apiserver.patch._values import JSON, go_json, go_string, sort_key

PathElement = str
Path = tuple[PathElement, ...]
FieldSet = frozenset[Path]

EMPTY: FieldSet = frozenset()


def field_element(name: str) -> PathElement:
    """``f:<name>``."""
    return "f:" + name


def key_element(keys: Mapping[str, JSON]) -> PathElement:
    """``k:{...}`` for a map-list item with the given key fields."""
    if all(type(v) in _SCALAR_TYPES for v in keys.values()):
        # Memoised on the (name, type, value) triples: map-list keys repeat in every object.
        return _scalar_key_element(tuple((name, type(keys[name]), keys[name]) for name in sorted(keys)))
    return "k:" + go_json({name: keys[name] for name in sorted(keys)}, sort_keys=False)


_SCALAR_TYPES = frozenset({str, int, bool, type(None)})


@functools.lru_cache(maxsize=65536)
def single_key_element(name: str, value: str) -> PathElement:
    """``key_element({name: value})`` of a string key (memoised: the items of every object's
    conditions and pod sets are keyed by a handful of types and names)."""
    return "k:" + go_json({name: value}, sort_keys=False)


@functools.lru_cache(maxsize=65536)
def _scalar_key_element(items: tuple[tuple[str, type, JSON], ...]) -> PathElement:
    return "k:" + go_json({name: value for name, _, value in items}, sort_keys=False)


def value_element(value: JSON) -> PathElement:
    """``v:<json>`` for a set-list item."""
    return "v:" + go_json(value)


def index_element(index: int) -> PathElement:
    """``i:<n>``."""
    return f"i:{index}"


@functools.lru_cache(maxsize=65536)
def canonical_element(raw: str) -> PathElement:
    """Validate and canonically re-encode one FieldsV1 key (raises ValueError when invalid).

    Memoised: every write decodes the stored managedFields, whose keys repeat across objects.
    """
    prefix, sep, body = raw.partition(":")
    if prefix == "f" and sep:
        return raw
    try:
        if prefix == "k":
            keys = json.loads(body)
            if not isinstance(keys, dict):
                raise ValueError("key element must be a JSON object")
            return key_element(keys)
        if prefix == "v":
            return value_element(json.loads(body))
        if prefix == "i":
            return index_element(int(body))
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid path element {raw!r}: {exc}") from exc
    raise ValueError(f"unknown path element {raw!r}")


def element_value(element: PathElement) -> Any:
    """The decoded payload of an element (name, key dict, value or index)."""
    prefix, body = element[0], element[2:]
    if prefix == "f":
        return body
    if prefix == "i":
        return int(body)
    return json.loads(body)


@functools.lru_cache(maxsize=65536)
def element_sort_key(element: PathElement) -> tuple[Any, ...]:
    """``PathElement.Compare`` order: fields < keys < values < indexes.

    Memoised (a pure function of a string): encoding managedFields sorts every level.
    """
    prefix = element[0]
    value = element_value(element)
    if prefix == "f":
        return (0, value)
    if prefix == "k":
        return (1, tuple((name, sort_key(value[name])) for name in sorted(value)))
    if prefix == "v":
        return (2, sort_key(value))
    return (3, value)


def element_to_string(element: PathElement) -> str:
    """``PathElement.String()``: ``.name``, ``[name="a",port=80]``, ``[="x"]``, ``[3]``."""
    prefix = element[0]
    value = element_value(element)
    if prefix == "f":
        return "." + str(value)
    if prefix == "k":
        return "[" + ",".join(f"{name}={go_string(value[name])}" for name in sorted(value)) + "]"
    if prefix == "v":
        return f"[={go_string(value)}]"
    return f"[{value}]"


def path_to_string(path: Path) -> str:
    """``fieldpath.Path.String()``, e.g. ``.spec.containers[name="a"].image``."""
    return "".join(element_to_string(e) for e in path)


def field_path(*names: str) -> Path:
    """A path of plain member names: ``field_path("spec", "replicas")``."""
    return tuple(field_element(n) for n in names)


# --- trie ---------------------------------------------------------------------------------------


@dataclass
class _Trie:
    members: set[PathElement] = field(default_factory=set)
    children: dict[PathElement, _Trie] = field(default_factory=dict)


def _build_trie(paths: Iterable[Path]) -> _Trie:
    root = _Trie()
    for path in paths:
        if not path:
            continue
        node = root
        for element in path[:-1]:
            node = node.children.setdefault(element, _Trie())
        node.members.add(path[-1])
    return root


def _sorted(elements: Iterable[PathElement]) -> list[PathElement]:
    return sorted(elements, key=element_sort_key)


FieldTrie = dict[PathElement, list[Any]]
"""Encoding trie: element -> [is a member, child trie]."""
_Node = FieldTrie


def to_fields_v1(paths: Iterable[Path]) -> dict[str, Any]:
    """Encode a field set as a FieldsV1 object (keys in structured-merge-diff order)."""
    root: _Node = {}
    for path in paths:
        if not path:
            continue
        node = root
        for element in path[:-1]:
            entry = node.get(element)
            if entry is None:
                entry = node[element] = [False, {}]
            node = entry[1]
        entry = node.get(path[-1])
        if entry is None:
            node[path[-1]] = [True, {}]
        else:
            entry[0] = True
    return _emit(root, member=False)


def _emit(node: _Node, *, member: bool) -> dict[str, Any]:
    out: dict[str, Any] = {".": {}} if member else {}
    for element in sorted(node, key=element_sort_key):
        is_member, children = node[element]
        out[element] = _emit(children, member=is_member) if children else {}
    return out


def from_fields_v1(doc: Mapping[str, Any]) -> FieldSet:
    """Decode a FieldsV1 object into a field set (raises ValueError when malformed)."""
    if not isinstance(doc, Mapping):
        raise ValueError("fieldsV1 must be an object")
    out: set[Path] = set()
    _decode(doc, (), out)
    return frozenset(out)


def _decode(doc: Mapping[str, Any], prefix: Path, out: set[Path]) -> None:
    for raw, child in doc.items():
        if not isinstance(child, (dict, Mapping)):  # dicts are answered before the ABC check
            raise ValueError(f"fieldsV1 value of {raw!r} must be an object")
        if raw == ".":
            if prefix:
                out.add(prefix)
            continue
        path = (*prefix, canonical_element(raw))
        if child:
            _decode(child, path, out)
        else:
            out.add(path)


def iter_paths(paths: Iterable[Path]) -> Iterator[Path]:
    """Paths in ``fieldpath.Set.Iterate`` order (each level: members, then children, sorted)."""
    yield from _iterate(_build_trie(paths), ())


def _iterate(trie: _Trie, prefix: Path) -> Iterator[Path]:
    for element in _sorted(trie.members):
        yield (*prefix, element)
    for element in _sorted(trie.children):
        yield from _iterate(trie.children[element], (*prefix, element))


def with_prefix(paths: Iterable[Path], prefix: Path) -> FieldSet:
    """The paths strictly below (or equal to) ``prefix``."""
    n = len(prefix)
    return frozenset(p for p in paths if p[:n] == prefix)


def without_prefix(paths: Iterable[Path], prefix: Path) -> FieldSet:
    """The paths not below (nor equal to) ``prefix`` (``RecursiveDifference`` of one path)."""
    n = len(prefix)
    return frozenset(p for p in paths if p[:n] != prefix)


def trie_of(paths: Iterable[Path]) -> tuple[set[PathElement], dict[PathElement, list[Path]]]:
    """Split paths into first-level members and, per first element, the remaining sub-paths."""
    members: set[PathElement] = set()
    children: dict[PathElement, list[Path]] = {}
    for path in paths:
        if len(path) == 1:
            members.add(path[0])
        elif path:
            children.setdefault(path[0], []).append(path[1:])
    return members, children
