"""Value types shared by the store modules: resource keys, watch events, JSON codec, clock."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

__all__ = ["ResourceKey", "WatchEvent", "decode", "encode", "format_timestamp"]

_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder()

encode: Callable[[Any], bytes] = _ENCODER.encode
"""Serialise a JSON-compatible value (msgspec: several times faster than ``json``)."""

decode: Callable[[bytes], Any] = _DECODER.decode
"""Parse JSON bytes into fresh dicts/lists."""


@dataclass(frozen=True)
class ResourceKey:
    """Which collection: API group (``""`` for core), plural resource name and scope."""

    group: str
    resource: str
    namespaced: bool

    def qualified(self) -> str:
        """``resource.group`` (``resource`` for core), as in apiserver messages."""
        return f"{self.resource}.{self.group}" if self.group else self.resource


@dataclass(frozen=True)
class WatchEvent:
    """One change: ``type`` is ADDED | MODIFIED | DELETED | BOOKMARK.

    ``object`` is the full object (for DELETED: its last state with ``resourceVersion`` set to the
    deletion revision); ``revision`` is the global revision of the change; ``key`` says which
    collection the object belongs to (useful for watches across all resources).
    """

    type: str
    object: dict[str, Any]
    revision: int
    key: ResourceKey | None = None


class _TimestampCache:
    """RFC3339 (seconds, UTC) formatting, memoised per second."""

    __slots__ = ("_cached",)

    def __init__(self) -> None:
        self._cached: tuple[int, str] = (-1, "")

    def format(self, now: float) -> str:
        second = int(now)
        cached = self._cached  # one tuple: safe to share between threads
        if cached[0] != second:
            cached = (second, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second)))
            self._cached = cached
        return cached[1]


_TIMESTAMPS = _TimestampCache()


def format_timestamp(now: float) -> str:
    """``2024-01-02T03:04:05Z`` for a POSIX time."""
    return _TIMESTAMPS.format(now)
