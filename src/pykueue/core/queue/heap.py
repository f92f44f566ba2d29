"""A keyed binary min-heap with O(log n) push, update, delete-by-key and pop.

Each item is stored with its sort key (computed once by the ``order`` function when the item is
pushed, updated or explicitly re-fixed), so comparisons are plain tuple comparisons. The heap never
re-sorts: every mutation is a single sift up/down over ``O(log n)`` levels, with a key → position
index kept in step with every swap.

When something the order depends on changes outside the heap (e.g. the sticky preemptor of a
ClusterQueue, upstream ``preemptorWorkload``), call :meth:`KeyedHeap.fix` for the affected keys, or
:meth:`KeyedHeap.rebuild` when every order may have moved (e.g. Admission Fair Sharing usage).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterator
from typing import Any, Generic, Protocol, TypeVar


class SupportsLessThan(Protocol):
    """What an order value must support."""

    def __lt__(self, other: Any, /) -> bool: ...


K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


class KeyedHeap(Generic[K, T]):
    """Min-heap of ``(key, item)`` pairs ordered by ``order(item)``; keys are unique."""

    __slots__ = ("_entries", "_index", "_order")

    def __init__(self, order: Callable[[T], SupportsLessThan]) -> None:
        self._order = order
        self._entries: list[tuple[SupportsLessThan, K, T]] = []
        self._index: dict[K, int] = {}

    # --- queries ----------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._entries)

    def __bool__(self) -> bool:
        return bool(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def get(self, key: K) -> T | None:
        """The item stored under ``key``, or None."""
        pos = self._index.get(key)
        return None if pos is None else self._entries[pos][2]

    def peek(self) -> T | None:
        """The smallest item without removing it."""
        return self._entries[0][2] if self._entries else None

    def keys(self) -> Iterator[K]:
        """Keys in heap (not sorted) order."""
        return (k for _, k, _ in self._entries)

    def items(self) -> Iterator[T]:
        """Items in heap (not sorted) order."""
        return (item for _, _, item in self._entries)

    def sorted_items(self) -> list[T]:
        """Items in pop order (``O(n log n)``; for dumps and visibility, not the hot path)."""
        return [item for _, _, item in sorted(self._entries, key=lambda e: e[0])]

    # --- mutations --------------------------------------------------------------------------------

    def push_if_absent(self, key: K, item: T) -> bool:
        """Insert unless ``key`` is present; returns whether it was inserted."""
        if key in self._index:
            return False
        self._append(key, item)
        return True

    def push_or_update(self, key: K, item: T) -> None:
        """Insert, or replace the item stored under ``key`` and restore the heap order."""
        pos = self._index.get(key)
        if pos is None:
            self._append(key, item)
            return
        self._entries[pos] = (self._order(item), key, item)
        self._restore(pos)

    def remove(self, key: K) -> T | None:
        """Delete ``key``; returns its item or None if absent."""
        pos = self._index.pop(key, None)
        if pos is None:
            return None
        item = self._entries[pos][2]
        last = self._entries.pop()
        if pos < len(self._entries):
            self._entries[pos] = last
            self._index[last[1]] = pos
            self._restore(pos)
        return item

    def remove_many(self, keys: list[K]) -> list[tuple[K, T]]:
        """Delete every present key of ``keys``; returns the removed ``(key, item)`` pairs in ``keys``'
        order. Removing a large share of the heap filters it and re-heapifies in ``O(n)`` instead of
        ``k`` sifts; which of several items with *equal* orders is then the smallest may differ from
        ``k`` single removals (with a total order, as the queues use, nothing observable changes)."""
        index = self._index
        present = [k for k in keys if k in index]
        size = len(self._entries)
        if len(present) * max(1, size.bit_length()) < size:
            out: list[tuple[K, T]] = []
            for k in present:
                item = self.remove(k)
                assert item is not None
                out.append((k, item))
            return out
        entries = self._entries
        out = [(k, entries[index[k]][2]) for k in present]
        gone = set(present)
        # In place: the list and the index stay the (long-lived, possibly gc-frozen) objects they
        # were, instead of new containers the cyclic GC would scan from then on.
        entries[:] = [e for e in entries if e[1] not in gone]
        heapq.heapify(entries)
        index.clear()
        for i, e in enumerate(entries):
            index[e[1]] = i
        return out

    def pop(self) -> tuple[K, T] | None:
        """Remove and return the smallest ``(key, item)``."""
        if not self._entries:
            return None
        entries = self._entries
        _, key, item = entries[0]
        # ``remove`` at the root without the (always failing) sift up.
        del self._index[key]
        last = entries.pop()
        if entries:
            entries[0] = last
            self._index[last[1]] = 0
            self._sift_down(0)
        return key, item

    def fix(self, key: K) -> None:
        """Recompute the order of ``key`` (if present) and move it to its place."""
        pos = self._index.get(key)
        if pos is None:
            return
        _, k, item = self._entries[pos]
        self._entries[pos] = (self._order(item), k, item)
        self._restore(pos)

    def rebuild(self) -> None:
        """Recompute every order and re-heapify in ``O(n)``."""
        self._entries = [(self._order(item), k, item) for _, k, item in self._entries]
        for pos in range(len(self._entries) // 2 - 1, -1, -1):
            self._sift_down(pos)
        self._index = {k: i for i, (_, k, _) in enumerate(self._entries)}

    # --- internals --------------------------------------------------------------------------------

    def _append(self, key: K, item: T) -> None:
        self._entries.append((self._order(item), key, item))
        pos = len(self._entries) - 1
        self._index[key] = pos
        self._sift_up(pos)

    def _restore(self, pos: int) -> None:
        if not self._sift_up(pos):
            self._sift_down(pos)

    def _sift_up(self, pos: int) -> bool:
        """Move ``pos`` towards the root; returns whether it moved."""
        entries = self._entries
        index = self._index
        entry = entries[pos]
        order = entry[0]
        start = pos
        while pos > 0:
            parent = (pos - 1) >> 1
            above = entries[parent]
            if not order < above[0]:
                break
            entries[pos] = above
            index[above[1]] = pos
            pos = parent
        if pos != start:
            entries[pos] = entry
            index[entry[1]] = pos
            return True
        return False

    def _sift_down(self, pos: int) -> None:
        entries = self._entries
        index = self._index
        size = len(entries)
        entry = entries[pos]
        order = entry[0]
        start = pos
        child = 2 * pos + 1
        while child < size:
            below = entries[child]
            right = child + 1
            if right < size and entries[right][0] < below[0]:
                child = right
                below = entries[right]
            if not below[0] < order:
                break
            entries[pos] = below
            index[below[1]] = pos
            pos = child
            child = 2 * pos + 1
        if pos != start:
            entries[pos] = entry
            index[entry[1]] = pos
