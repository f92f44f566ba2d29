"""``metadata.managedFields`` entries: decoding, encoding, ordering and the update-manager cap.

Managers are keyed like the API server's ``BuildManagerIdentifier``: the JSON of the entry's
manager, operation, apiVersion (Update entries only) and subresource. Encoded entries are sorted
as ``sortEncodedManagedFields`` does: by operation (``Apply`` before ``Update``), then time
(seconds), manager, apiVersion and subresource; entries with an empty field set are dropped.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Final

import msgspec

from pykueue.api.meta import format_time, parse_time
from pykueue.apiserver.patch._values import go_quote
from pykueue.apiserver.patch.fieldpath import FieldSet, from_fields_v1, to_fields_v1

APPLY: Final = "Apply"
UPDATE: Final = "Update"
FIELDS_V1: Final = "FieldsV1"
MAX_UPDATE_MANAGERS: Final = 10
"""``DefaultMaxUpdateManagers``: older Update entries are merged into ``ancient-changes``."""
ANCIENT_CHANGES: Final = "ancient-changes"

_MEMO_LIMIT = 4096
_json_encode = msgspec.json.encode
_json_decode = msgspec.json.decode
# Field sets by their FieldsV1 JSON, and the reverse: the objects of a kind are written by the same
# managers with the same fields (every Workload's admission sets the same status paths), so each
# write decoded and re-encoded the same sets. Bounded; cleared whole when full.
_decoded: dict[bytes, FieldSet] = {}
_encoded: dict[FieldSet, bytes] = {}


def _fields_of(raw: Any) -> FieldSet:
    """``from_fields_v1(raw)``, remembered by the JSON of ``raw``."""
    try:
        key = _json_encode(raw)
    except TypeError:  # not plain JSON data (e.g. another Mapping): decode it as it is
        return from_fields_v1(raw)
    fields = _decoded.get(key)
    if fields is None:
        fields = from_fields_v1(raw)
        if len(_decoded) >= _MEMO_LIMIT:
            _decoded.clear()
        _decoded[key] = fields
    return fields


def _fields_v1(fields: FieldSet) -> dict[str, Any]:
    """``to_fields_v1(fields)``, a fresh object each time (callers may change it)."""
    data = _encoded.get(fields)
    if data is None:
        data = _json_encode(to_fields_v1(fields))
        if len(_encoded) >= _MEMO_LIMIT:
            _encoded.clear()
        _encoded[fields] = data
    result: dict[str, Any] = _json_decode(data)
    return result


@functools.lru_cache(maxsize=1024)
def manager_identifier(manager: str, operation: str, api_version: str = "", subresource: str = "") -> str:
    """``BuildManagerIdentifier``: Apply managers are version independent.

    Memoised (a pure function of a few managers' names): every write keys each of its object's
    entries, and the JSON encoding was a twentieth of a status update."""
    ident: dict[str, str] = {}
    if manager:
        ident["manager"] = manager
    ident["operation"] = operation
    if operation != APPLY and api_version:
        ident["apiVersion"] = api_version
    if subresource:
        ident["subresource"] = subresource
    return json.dumps(ident, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class ManagedEntry:
    """One manager's ownership: a decoded ``ManagedFieldsEntry``."""

    manager: str
    operation: str
    api_version: str
    fields: FieldSet
    time: str | None = None
    subresource: str = ""

    @property
    def identifier(self) -> str:
        """The key of this manager among the object's managers."""
        return manager_identifier(self.manager, self.operation, self.api_version, self.subresource)

    def describe(self) -> str:
        """How conflict messages name the manager (``printManager``)."""
        text = go_quote(self.manager)
        if self.subresource:
            text += f" with subresource {go_quote(self.subresource)}"
        if self.operation == UPDATE:
            text += f" using {self.api_version}"
        return text

    def with_fields(self, fields: FieldSet) -> ManagedEntry:
        """A copy owning ``fields`` (built directly: ``dataclasses.replace`` inspects the fields
        each time, and every write copies each of its object's entries a few times)."""
        return ManagedEntry(self.manager, self.operation, self.api_version, fields, self.time, self.subresource)

    def encode(self) -> dict[str, Any]:
        """The ``ManagedFieldsEntry`` JSON (field order of the Go struct)."""
        return self.encode_with(_fields_v1(self.fields))

    def encode_with(self, fields_v1: dict[str, Any]) -> dict[str, Any]:
        """:meth:`encode` with the FieldsV1 of :attr:`fields` already built."""
        out: dict[str, Any] = {"manager": self.manager, "operation": self.operation}
        if self.api_version:
            out["apiVersion"] = self.api_version
        if self.time:
            out["time"] = self.time
        out["fieldsType"] = FIELDS_V1
        out["fieldsV1"] = fields_v1
        if self.subresource:
            out["subresource"] = self.subresource
        return out


Managers = dict[str, ManagedEntry]
"""Managers by identifier."""


def decode_entry(entry: Mapping[str, Any]) -> ManagedEntry:
    """Decode one ``ManagedFieldsEntry`` (raises ValueError when malformed)."""
    if not isinstance(entry, Mapping):
        raise ValueError("managedFields entries must be objects")
    operation = entry.get("operation", "")
    if operation not in (APPLY, UPDATE):
        raise ValueError(f"invalid operation {operation!r} in managedFields entry")
    fields_type = entry.get("fieldsType", "")
    raw = entry.get("fieldsV1")
    if raw is not None and fields_type != FIELDS_V1:
        raise ValueError(f"invalid fieldsType {fields_type!r}")
    time = entry.get("time")
    if time is not None and not isinstance(time, str):
        raise ValueError("managedFields time must be a string")
    return ManagedEntry(
        manager=str(entry.get("manager", "")),
        operation=operation,
        api_version=str(entry.get("apiVersion", "")),
        fields=_fields_of(raw) if raw is not None else frozenset(),
        time=time,
        subresource=str(entry.get("subresource", "")),
    )


def decode_managed_fields(entries: Iterable[Mapping[str, Any]] | None) -> Managers:
    """Decode a ``managedFields`` list into managers by identifier (duplicates are unioned)."""
    managers: Managers = {}
    if entries is None:
        return managers
    if not isinstance(entries, list):
        raise ValueError("managedFields must be a list")
    for raw in entries:
        entry = decode_entry(raw)
        previous = managers.get(entry.identifier)
        if previous is not None:
            entry = entry.with_fields(previous.fields | entry.fields)
        managers[entry.identifier] = entry
    return managers


@functools.lru_cache(maxsize=4096)
def _seconds(time: str | None) -> int:
    """Seconds of an entry's time; memoised (a pure function of the string): every write sorts
    its object's entries, whose times repeat from write to write."""
    if not time:
        return 0
    try:
        return int(parse_time(time).timestamp())
    except Exception:
        return 0


def _order(entry: ManagedEntry) -> tuple[str, int, str, str, str]:
    return (entry.operation, _seconds(entry.time), entry.manager, entry.api_version, entry.subresource)


def encode_managed_fields(managers: Mapping[str, ManagedEntry]) -> list[dict[str, Any]]:
    """The ``managedFields`` list: non-empty entries in the server's order."""
    entries = [e for e in managers.values() if e.fields]
    return [e.encode() for e in sorted(entries, key=_order)]


def cap_update_managers(managers: Managers, limit: int = MAX_UPDATE_MANAGERS) -> Managers:
    """Merge the oldest Update entries into per-version ``ancient-changes`` buckets (``capManagersManager``)."""
    updaters = [ident for ident, e in managers.items() if e.operation == UPDATE]
    if len(updaters) <= limit:
        return managers
    out = dict(managers)
    updaters.sort(key=lambda ident: (_seconds(out[ident].time), ident))
    first_of_version: dict[str, str] = {}
    count = len(updaters)
    for ident in updaters:
        if count <= limit:
            break
        entry = out[ident]
        bucket = manager_identifier(ANCIENT_CHANGES, UPDATE, entry.api_version)
        first = first_of_version.get(entry.api_version)
        if first is None or ident == bucket:
            first_of_version.setdefault(entry.api_version, ident)
            continue
        if bucket not in out:
            seed = out.pop(first)
            out[bucket] = ManagedEntry(ANCIENT_CHANGES, UPDATE, entry.api_version, seed.fields, seed.time)
        out[bucket] = replace(out[bucket], fields=out[bucket].fields | entry.fields, time=entry.time)
        del out[ident]
        count -= 1
    return out


def format_now(now: datetime | None) -> str:
    """RFC 3339 UTC seconds of ``now`` (the current time when None)."""
    if now is not None:
        return format_time(now)
    second = int(time.time())
    cached = _NOW_CACHE[0]  # one tuple, replaced whole: safe across threads
    if cached[0] != second:
        cached = (second, format_time(datetime.fromtimestamp(second, UTC)))
        _NOW_CACHE[0] = cached
    return cached[1]


_NOW_CACHE: list[tuple[int, str]] = [(-1, "")]
"""The formatted current second (every write stamps its managedFields entry)."""
