"""Partial admission: searching reduced pod counts (upstream ``podset_reducer.go`` ``PodSetReducer``).

Every pod set ``i`` may shrink from ``count_i`` down to ``min_i`` (``minCount``, default ``count``).
With ``d_i = count_i - min_i`` and ``D = sum(d_i)``, search index ``k`` in ``[0, D]`` gives the counts
``c_i(k) = count_i - floor(d_i * k / D)``: ``k = 0`` is the full workload, ``k = D`` every pod set at
its minimum. A binary search finds the smallest accepted ``k`` (acceptability is assumed monotone).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from pykueue.core.workload.info import PodSetInfo

T = TypeVar("T")


class PodSetReducer:
    """Reduced count vectors of a workload's pod sets."""

    __slots__ = ("deltas", "full", "total")

    def __init__(self, pod_sets: Sequence[PodSetInfo]) -> None:
        self.full = [ps.count for ps in pod_sets]
        # The effective count may already be below minCount (reclaimable pods): nothing to give up then.
        self.deltas = [
            max(0, ps.count - (ps.count if ps.min_count is None else ps.min_count)) for ps in pod_sets
        ]
        self.total = sum(self.deltas)

    def counts(self, k: int) -> list[int]:
        """Counts at search index ``k`` (``0 <= k <= total``)."""
        total = self.total
        if total == 0:
            return list(self.full)
        return [c - d * k // total for c, d in zip(self.full, self.deltas, strict=True)]

    def search(self, accept: Callable[[list[int]], tuple[T, bool]]) -> tuple[T | None, bool]:
        """Result of ``accept`` at the smallest accepted index, and whether one was accepted.

        Probes in the order of Go's ``sort.Search`` over ``[0, total]``; ``accept`` gets a fresh list.
        """
        if self.total == 0:
            return None, False
        best: T | None = None
        lo, hi = 0, self.total + 1
        while lo < hi:
            mid = (lo + hi) // 2
            result, ok = accept(self.counts(mid))
            if ok:
                best, hi = result, mid
            else:
                lo = mid + 1
        if lo > self.total:
            return None, False
        return best, True


def search_partial(
    pod_sets: Sequence[PodSetInfo], accept: Callable[[list[int]], tuple[T, bool]]
) -> tuple[T | None, bool]:
    """Largest acceptable reduced counts of ``pod_sets`` (``PodSetReducer.Search``):
    ``(accepted result, found)``.

    ``accept(counts)`` returns ``(result, acceptable)``; the result of the accepted probe at the
    smallest accepted search index is returned. ``(None, False)`` when nothing can be reduced or
    not even the minimum counts are accepted.
    """
    return PodSetReducer(pod_sets).search(accept)


__all__ = ["PodSetReducer", "search_partial"]
