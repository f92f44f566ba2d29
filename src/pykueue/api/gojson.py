"""A Go value's ``encoding/json`` text, from its JSON form and its Go type.

Kueue's webhooks print a bad value that is a Go struct as ``json.Marshal`` writes it
(apimachinery's ``field.Error.ErrorBody``, as vendored by Kueue): a ``PodSet`` that may not
change reads ``{"name":"main","template":{"metadata":{},"spec":{"containers":[{"name":"c",
"image":"busybox","resources":{}}],"restartPolicy":"Never"}},"count":1}``, whatever the order
or the omissions of what the client wrote. What ``json.Marshal`` does that a JSON dump of the
object does not:

* the fields come in the Go struct's order, and unknown ones are gone;
* a field without ``omitempty`` is written even when zero (``"count":1`` with its default, a
  nil slice as ``null``), and a struct-valued field always (``"metadata":{}``,
  ``"resources":{}``: ``omitempty`` never omits a struct), unless ``omitzero`` and zero
  (``creationTimestamp``);
* an ``omitempty`` field that is empty (``""``, ``0``, ``false``, an empty list or map, a nil
  pointer) is left out, even when the client wrote it;
* map keys are sorted, quantities canonical (``resource.Quantity.MarshalJSON``), a zero
  ``metav1.Time`` is ``null``, and ``<``, ``>``, ``&`` are escaped.

The layouts are upstream's (:mod:`pykueue.api.golayouts`, generated from the Go sources).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

import msgspec

from pykueue.api.golayouts import NAMED, STRUCTS
from pykueue.api.quantity import Quantity, QuantityError

_MISSING: Final = object()
_INTS = frozenset({"int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64"})
_STRINGS = frozenset({"string", "UID"})
_HTML_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def marshal(value: Any, go_type: str) -> str:
    """``json.Marshal`` of the Go value of type ``go_type`` (``PodSet``, ``[]PodSet``,
    ``*Admission``...) that decoding ``value``, a JSON value or a typed model struct, gives."""
    text = json.dumps(_encode(_json(value), go_type), separators=(",", ":"), ensure_ascii=False)
    for char, escaped in _HTML_ESCAPES.items():
        text = text.replace(char, escaped)
    return text


def _json(value: Any) -> Any:
    """The JSON form of a typed model value, every field written (defaults too: the model's
    default is not always Go's zero value, a pod set's name ``main``)."""
    if isinstance(value, msgspec.Struct):
        names = value.__struct_fields__
        encoded = value.__struct_encode_fields__
        return {enc: _json(getattr(value, name)) for name, enc in zip(names, encoded, strict=True)}
    if isinstance(value, Mapping):
        return {key: _json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json(item) for item in value]
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return value


def _resolve(go_type: str) -> str:
    while go_type in NAMED:
        go_type = NAMED[go_type]
    return go_type


def _encode(value: Any, go_type: str) -> Any:
    """The JSON value ``json.Marshal`` writes for a field of ``go_type`` decoded from ``value``
    (:data:`_MISSING`: the field was not written, so holds its zero value)."""
    go_type = _resolve(go_type)
    if go_type.startswith("*"):
        return None if value is _MISSING or value is None else _encode(value, go_type[1:])
    if go_type.startswith("[]"):
        if value is _MISSING or value is None:
            return None
        if go_type == "[]byte" or not isinstance(value, list):
            return value
        return [_encode(item, go_type[2:]) for item in value]
    if go_type.startswith("map["):
        if value is _MISSING or value is None:
            return None
        if not isinstance(value, Mapping):
            return value
        elem = go_type[go_type.index("]") + 1 :]
        return {key: _encode(value[key], elem) for key in sorted(value)}
    if go_type in STRUCTS:
        return _struct(value if isinstance(value, Mapping) else {}, go_type)
    if value is _MISSING or value is None:
        return _zero(go_type)
    if go_type == "Quantity":
        try:
            return str(Quantity.parse(value))
        except (QuantityError, TypeError, ValueError):
            return value
    if go_type in _INTS and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _zero(go_type: str) -> Any:
    if go_type in _STRINGS:
        return ""
    if go_type in _INTS or go_type in ("float32", "float64", "IntOrString"):
        return 0
    if go_type == "bool":
        return False
    if go_type == "Quantity":
        return "0"
    return None  # metav1.Time (MarshalJSON of the zero time), FieldsV1, interfaces


def _struct(obj: Mapping[str, Any], go_type: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, field_type, flags in STRUCTS[go_type]:
        if "i" in flags:  # an embedded struct: its fields at this level
            out.update(_struct(obj, _resolve(field_type)))
            continue
        value = obj.get(name, _MISSING)
        if value is None:
            value = _MISSING
        encoded = _encode(value, field_type)
        resolved = _resolve(field_type)
        if "z" in flags and encoded == _encode(_MISSING, field_type):  # omitzero: the zero value
            continue
        if "e" in flags and _empty(encoded, resolved):
            continue
        out[name] = encoded
    return out


def _empty(encoded: Any, go_type: str) -> bool:
    """``omitempty``: false, 0, "", a nil pointer, an empty slice or map; never a struct."""
    if go_type.startswith("*"):
        return encoded is None
    if go_type.startswith(("[]", "map[")):
        return not encoded
    if go_type in STRUCTS or go_type in ("Quantity", "Time", "IntOrString"):
        return False
    return encoded in (None, "", 0, False) and not (isinstance(encoded, float) and encoded != 0)
