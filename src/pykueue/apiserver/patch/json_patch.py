"""RFC 6902 JSON Patch and RFC 6901 JSON Pointer.

Error texts follow ``gopkg.in/evanphx/json-patch.v4`` (the library kube-apiserver applies JSON
patches with); see :mod:`pykueue.apiserver.patch.errors` for the HTTP mapping. Array indexes
follow the RFC strictly (no negative indexes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pykueue.apiserver.patch._values import JSON, MISSING, JSONDict, deep_copy, json_equal
from pykueue.apiserver.patch.errors import PatchError, bad_request, invalid

MAX_JSON_PATCH_OPERATIONS = 10000
"""The server rejects JSON patches with more operations (413)."""

_Container = dict[str, Any] | list[Any]


def parse_pointer(pointer: str) -> list[str]:
    """Split an RFC 6901 pointer into unescaped reference tokens (``~1`` -> ``/``, ``~0`` -> ``~``)."""
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise ValueError(f"JSON pointer must be empty or start with '/': {pointer!r}")
    tokens = pointer[1:].split("/")
    for token in tokens:
        rest = token.replace("~0", "").replace("~1", "")
        if "~" in rest:
            raise ValueError(f"invalid escape in JSON pointer token {token!r}")
    return [t.replace("~1", "/").replace("~0", "~") for t in tokens]


def escape_token(token: str) -> str:
    """Escape one reference token for use in a JSON pointer."""
    return token.replace("~", "~0").replace("/", "~1")


def _array_index(token: str, length: int, *, allow_end: bool) -> int | None:
    """The index ``token`` denotes in an array of ``length``, or None when invalid."""
    if token == "-":
        return length if allow_end else None
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        return None
    index = int(token)
    limit = length if allow_end else length - 1
    return index if index <= limit else None


def resolve_pointer(doc: JSON, pointer: str) -> JSON:
    """The value ``pointer`` designates in ``doc``, or :data:`MISSING` when there is none."""
    try:
        tokens = parse_pointer(pointer)
    except ValueError:
        return MISSING
    node = doc
    for token in tokens:
        if isinstance(node, dict):
            if token not in node:
                return MISSING
            node = node[token]
        elif isinstance(node, list):
            index = _array_index(token, len(node), allow_end=False)
            if index is None:
                return MISSING
            node = node[index]
        else:
            return MISSING
    return node


def _parent(doc: JSON, pointer: str) -> tuple[_Container | None, str]:
    """The container holding the last token of ``pointer`` (None when absent) and that token."""
    try:
        tokens = parse_pointer(pointer)
    except ValueError:
        return None, ""
    if not tokens:
        return None, ""
    parent = resolve_pointer(doc, "".join("/" + escape_token(t) for t in tokens[:-1]))
    if isinstance(parent, dict | list):
        return parent, tokens[-1]
    return None, tokens[-1]


def _invalid_index(token: str) -> PatchError:
    return invalid(f"Unable to access invalid index: {token}: invalid index referenced")


def _require(op: Mapping[str, Any], field: str, kind: str) -> Any:
    if field not in op:
        raise invalid(f"{kind} operation does not apply: missing {field!r} member")
    value = op[field]
    if field in ("path", "from") and not isinstance(value, str):
        raise invalid(f"{kind} operation does not apply: {field!r} must be a string")
    return value


def _add(doc: JSON, path: str, value: JSON) -> JSON:
    if path == "":
        return value
    parent, token = _parent(doc, path)
    if parent is None:
        raise invalid(f'add operation does not apply: doc is missing path: "{path}": missing value')
    if isinstance(parent, dict):
        parent[token] = value
        return doc
    index = _array_index(token, len(parent), allow_end=True)
    if index is None:
        raise _invalid_index(token)
    parent.insert(index, value)
    return doc


def _remove(doc: JSON, path: str, kind: str = "remove") -> tuple[JSON, JSON]:
    """Remove ``path``; return the new document and the removed value."""
    parent, token = _parent(doc, path)
    if parent is None:
        raise invalid(f'{kind} operation does not apply: doc is missing path: "{path}": missing value')
    if isinstance(parent, dict):
        if token not in parent:
            raise invalid(f"Unable to remove nonexistent key: {token}: missing value")
        return doc, parent.pop(token)
    index = _array_index(token, len(parent), allow_end=False)
    if index is None:
        raise _invalid_index(token)
    return doc, parent.pop(index)


def _replace(doc: JSON, path: str, value: JSON) -> JSON:
    if path == "":
        return value
    parent, token = _parent(doc, path)
    if parent is None:
        raise invalid(f"replace operation does not apply: doc is missing path: {path}: missing value")
    if isinstance(parent, dict):
        if token not in parent:
            raise invalid(f"replace operation does not apply: doc is missing key: {path}: missing value")
        parent[token] = value
        return doc
    index = _array_index(token, len(parent), allow_end=False)
    if index is None:
        raise _invalid_index(token)
    parent[index] = value
    return doc


def _get_from(doc: JSON, source: str, kind: str) -> JSON:
    value = resolve_pointer(doc, source)
    if value is MISSING:
        raise invalid(f"{kind} operation does not apply: doc is missing from path: {source}: missing value")
    return value


def _op_add(doc: JSON, op: Mapping[str, Any]) -> JSON:
    return _add(doc, _require(op, "path", "add"), deep_copy(_require(op, "value", "add")))


def _op_remove(doc: JSON, op: Mapping[str, Any]) -> JSON:
    path = _require(op, "path", "remove")
    if path == "":
        raise invalid('remove operation does not apply: doc is missing path: "": missing value')
    return _remove(doc, path)[0]


def _op_replace(doc: JSON, op: Mapping[str, Any]) -> JSON:
    return _replace(doc, _require(op, "path", "replace"), deep_copy(_require(op, "value", "replace")))


def _op_move(doc: JSON, op: Mapping[str, Any]) -> JSON:
    source = _require(op, "from", "move")
    path = _require(op, "path", "move")
    value = _get_from(doc, source, "move")
    if source == path:
        return doc
    if path.startswith(source + "/"):
        raise invalid(f"move operation does not apply: from {source} is a prefix of path {path}")
    doc, value = _remove(doc, source, "move")
    return _add(doc, path, value)


def _op_copy(doc: JSON, op: Mapping[str, Any]) -> JSON:
    source = _require(op, "from", "copy")
    path = _require(op, "path", "copy")
    return _add(doc, path, deep_copy(_get_from(doc, source, "copy")))


def _op_test(doc: JSON, op: Mapping[str, Any]) -> JSON:
    path = _require(op, "path", "test")
    expected = _require(op, "value", "test")
    actual = resolve_pointer(doc, path)
    if actual is MISSING:
        parent, _ = _parent(doc, path)
        if path != "" and parent is None:
            raise invalid(f"test operation does not apply: is nil for {path}")
        if expected is None:
            return doc
    elif json_equal(actual, expected):
        return doc
    raise invalid(f"testing value {path} failed: test failed")


_OPERATIONS: Mapping[str, Callable[[JSON, Mapping[str, Any]], JSON]] = {
    "add": _op_add,
    "remove": _op_remove,
    "replace": _op_replace,
    "move": _op_move,
    "copy": _op_copy,
    "test": _op_test,
}


def apply_operations(doc: JSON, ops: list[Any]) -> JSON:
    """Apply RFC 6902 ``ops`` to a copy of any JSON document ``doc``; return the result."""
    result = deep_copy(doc)
    for op in ops:
        if not isinstance(op, dict):
            raise bad_request("json: cannot unmarshal into Go value of type jsonpatch.Operation")
        kind = op.get("op")
        handler = _OPERATIONS.get(kind) if isinstance(kind, str) else None
        if handler is None:
            raise invalid(f"Unexpected kind: {kind}")
        result = handler(result, op)
    return result


def json_patch(obj: JSONDict, ops: list[dict[str, Any]]) -> JSONDict:
    """Apply an RFC 6902 JSON patch to an object (which is not modified); return the patched copy.

    Raises :class:`PatchError`: 400 when ``ops`` is not a list, 413 above
    :data:`MAX_JSON_PATCH_OPERATIONS`, 422 when an operation does not apply (failed ``test``,
    missing path, bad index) or the result is not an object.
    """
    if not isinstance(ops, list):
        raise bad_request(f"json: cannot unmarshal {_json_kind(ops)} into Go value of type jsonpatch.Patch")
    if len(ops) > MAX_JSON_PATCH_OPERATIONS:
        raise PatchError(
            413,
            "RequestEntityTooLarge",
            f"Request entity too large: The allowed maximum operations in a JSON patch is "
            f"{MAX_JSON_PATCH_OPERATIONS}, got {len(ops)}",
        )
    result = apply_operations(obj, ops)
    if not isinstance(result, dict):
        raise invalid(f"the patched document is not an object but {_json_kind(result)}")
    return result


def _json_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if value is None:
        return "null"
    return "number"
