"""A keyed min-heap with O(log n) push and pop and O(1) delete-by-key.

Each item is stored with its sort key (computed once by the ``order`` function when the item is
pushed, updated or explicitly re-fixed), so comparisons are plain tuple comparisons done by
:mod:`heapq` in C. Deletion is lazy: a key maps to its live heap entry, and an entry the map no
longer points at (removed, updated or re-fixed since) is dropped when it reaches the top, or when
dead entries exceed a quarter of the live ones (an in-place filter and ``heapify``). A bulk move
of a ClusterQueue's equal-hash workloads to the inadmissible map (``_bulk_move``, several keys per
NoFit head) thus costs one map deletion per key instead of a sift over ``O(log n)`` levels in Python.

When something the order depends on changes outside the heap (e.g. the sticky preemptor of a
ClusterQueue, upstream ``preemptorWorkload``), call :meth:`KeyedHeap.fix` for the affected keys, or
:meth:`KeyedHeap.rebuild` when every order may have moved (e.g. Admission Fair Sharing usage).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterator
from itertools import count
from typing import Any, Generic, Protocol, TypeVar


class SupportsLessThan(Protocol):
    """What an order value must support."""

    def __lt__(self, other: Any, /) -> bool: ...


K = TypeVar("K", bound=Hashable)
T = TypeVar("T")

# A heap entry: (order, sequence number, key, item), or with ``flat`` (*order, sequence number, key,
# item). The sequence number breaks ties between equal orders (oldest first) so that keys and items
# are never compared; the key and the item are always the last two fields.
_Entry = tuple[Any, ...]

# Dead entries beyond a quarter of the live ones (and this many) trigger a compaction, in O(n) for
# n/4 removals. Sooner rather than later: a dead entry still holds its item, and until it is freed
# the cyclic GC counts it as a live allocation (bench/core.py: 7 young collections in 60 cycles
# with compaction at "more dead than live", 6 at a quarter, 5 with eager deletion).
_COMPACT_SLACK = 8


class KeyedHeap(Generic[K, T]):
    """Min-heap of ``(key, item)`` pairs ordered by ``order(item)``; keys are unique.

    With ``flat``, ``order`` returns tuples all of one length, and their fields are stored in the
    entry itself: a comparison in ``heapq`` then walks one tuple instead of two nested ones (the
    same lexicographic order: equal-length orders, then the sequence number)."""

    __slots__ = ("_entries", "_flat", "_live", "_order", "_seq")

    def __init__(self, order: Callable[[T], SupportsLessThan], *, flat: bool = False) -> None:
        self._order = order
        self._flat = flat
        self._entries: list[_Entry] = []
        self._live: dict[K, _Entry] = {}
        """The live entry of every key, in insertion order; every other entry of the list is dead."""
        self._seq = count()

    # --- queries ----------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._live)

    def __bool__(self) -> bool:
        return bool(self._live)

    def __contains__(self, key: object) -> bool:
        return key in self._live

    def get(self, key: K) -> T | None:
        """The item stored under ``key``, or None."""
        entry = self._live.get(key)
        return None if entry is None else entry[-1]

    def peek(self) -> T | None:
        """The smallest item without removing it."""
        self._drop_dead_top()
        return self._entries[0][-1] if self._entries else None

    def keys(self) -> Iterator[K]:
        """Keys in no particular order."""
        return iter(list(self._live))

    def items(self) -> Iterator[T]:
        """Items in no particular order."""
        return (entry[-1] for entry in list(self._live.values()))

    def sorted_items(self) -> list[T]:
        """Items in pop order (``O(n log n)``; for dumps and visibility, not the hot path)."""
        return [entry[-1] for entry in sorted(self._live.values(), key=lambda e: e[:-2])]

    # --- mutations --------------------------------------------------------------------------------

    def push_if_absent(self, key: K, item: T) -> bool:
        """Insert unless ``key`` is present; returns whether it was inserted."""
        if key in self._live:
            return False
        self._push(key, item)
        return True

    def push_or_update(self, key: K, item: T) -> None:
        """Insert, or replace the item stored under ``key`` (its old entry dies)."""
        self._push(key, item)
        self._maybe_compact()

    def remove(self, key: K) -> T | None:
        """Delete ``key``; returns its item or None if absent."""
        entry = self._live.pop(key, None)
        if entry is None:
            return None
        self._maybe_compact()
        item: T = entry[-1]
        return item

    def remove_many(self, keys: list[K]) -> list[tuple[K, T]]:
        """Delete every present key of ``keys``; returns the removed ``(key, item)`` pairs in ``keys``'
        order."""
        live = self._live
        out: list[tuple[K, T]] = []
        for k in keys:
            entry = live.pop(k, None)
            if entry is not None:
                out.append((k, entry[-1]))
        if out:
            self._maybe_compact()
        return out

    def pop(self) -> tuple[K, T] | None:
        """Remove and return the smallest ``(key, item)``."""
        entries = self._entries
        live = self._live
        while entries:
            entry = heapq.heappop(entries)
            key = entry[-2]
            if live.get(key) is entry:
                del live[key]
                return key, entry[-1]
        return None

    def fix(self, key: K) -> None:
        """Recompute the order of ``key`` (if present) and move it to its place."""
        entry = self._live.get(key)
        if entry is None:
            return
        self._push(key, entry[-1])
        self._maybe_compact()

    def rebuild(self) -> None:
        """Recompute every order and re-heapify in ``O(n)``."""
        push = self._entry
        self._live = {k: push(k, e[-1]) for k, e in self._live.items()}
        self._entries = list(self._live.values())
        heapq.heapify(self._entries)

    # --- internals --------------------------------------------------------------------------------

    def _entry(self, key: K, item: T) -> _Entry:
        if self._flat:
            return (*self._order(item), next(self._seq), key, item)  # type: ignore[misc]
        return (self._order(item), next(self._seq), key, item)

    def _push(self, key: K, item: T) -> None:
        if self._flat:
            entry: _Entry = (*self._order(item), next(self._seq), key, item)  # type: ignore[misc]
        else:
            entry = (self._order(item), next(self._seq), key, item)
        self._live[key] = entry
        heapq.heappush(self._entries, entry)

    def _drop_dead_top(self) -> None:
        entries = self._entries
        live = self._live
        while entries and live.get(entries[0][-2]) is not entries[0]:
            heapq.heappop(entries)

    def _maybe_compact(self) -> None:
        entries = self._entries
        if len(entries) - len(self._live) <= (len(self._live) >> 2) + _COMPACT_SLACK:
            return
        live = self._live
        # In place: the list stays the (long-lived, possibly gc-frozen) object it was, instead of a
        # new container the cyclic GC would scan from then on.
        entries[:] = [e for e in entries if live.get(e[-2]) is e]
        heapq.heapify(entries)
