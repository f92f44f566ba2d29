"""Dominant Resource Share of cohort-tree nodes (upstream ``pkg/cache/scheduler/fair_sharing.go``).

The DRS of a node is the largest, over resources it borrows from its parent, of
``borrowed × 1000 / lendable`` where ``lendable`` is what the parent could give it if the whole
tree were empty. It is divided by the node's fair weight for comparisons. Ratios are floats, as
upstream computes them in float64; everything else is integer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import msgspec

from pykueue.api.quantity import MAX_INT64
from pykueue.core.quota.tree import FlavorResource, QuotaNode, potential_available

DEFAULT_WEIGHT = 1.0

WeightOf = Callable[[QuotaNode], float]
"""Returns the fair-sharing weight of a node (CQ or cohort)."""


class DRS(msgspec.Struct, frozen=True, gc=False):
    """Dominant resource share of one node.

    ``ratio`` is the unweighted share (per mille of the lendable amount), ``borrowing`` whether the
    node uses more than its subtree quota in any FR (possibly with ratio 0 when nothing of that
    resource is lendable), ``borrowed`` the FRs it borrows in. A msgspec Struct, built in C (one
    or more per fair-sharing decision).
    """

    ratio: float
    weight: float
    borrowing: bool
    dominant_resource: str
    borrowed: frozenset[FlavorResource] = frozenset()

    def is_zero(self) -> bool:
        """Ratio 0 (upstream ``IsZero``); a node may still be borrowing with nothing lendable."""
        return self.ratio == 0

    def zero_weight_borrows(self) -> bool:
        """Weight 0 with a positive ratio: an infinite share."""
        return self.weight == 0 and self.ratio > 0

    def weighted(self) -> float:
        """``ratio / weight``; 0 for ratio 0 (even with weight 0), +inf for weight 0 otherwise."""
        if self.ratio == 0:
            return 0.0
        if self.weight == 0:
            return math.inf
        return self.ratio / self.weight

    def is_borrowing_on(self, requested: Mapping[FlavorResource, int] | None) -> bool:
        """Whether the node borrows in an FR ``requested`` asks a positive amount of (upstream
        ``DRS.IsBorrowingOn``: a zero request keeps its flavor in the usage but borrows nothing)."""
        if not requested or not self.borrowed:
            return False
        return any(v > 0 and fr in self.borrowed for fr, v in requested.items())


ZERO_DRS = DRS(0.0, DEFAULT_WEIGHT, False, "")


def node_weight(node: QuotaNode) -> float:
    """The weight a node carries itself (cohorts; a CQ node only if it has a ``fair_weight``)."""
    weight = getattr(node, "fair_weight", None)
    return DEFAULT_WEIGHT if weight is None else float(weight)


def lendable_by_resource(parent: QuotaNode) -> dict[str, int]:
    """Per resource name, Σ over the root's FRs of ``potentialAvailable(parent, fr)``
    (``calculateLendable``)."""
    lendable: dict[str, int] = {}
    for fr in parent.root().subtree_quota:
        lendable[fr[1]] = lendable.get(fr[1], 0) + potential_available(parent, fr)
    return lendable


def dominant_resource_share(
    node: QuotaNode,
    extra: Mapping[FlavorResource, int] | None = None,
    *,
    weight_of: WeightOf = node_weight,
    lendable: Mapping[str, int] | None = None,
) -> DRS:
    """DRS of ``node`` with ``extra`` usage added (``dominantResourceShare``).

    ``lendable`` may be passed when the caller already computed ``lendable_by_resource(node.parent)``
    (it depends on quotas only).
    """
    weight = weight_of(node)
    parent = node.parent
    if parent is None:
        return DRS(0.0, weight, False, "")
    borrowed: dict[str, int] = {}
    borrowed_frs: list[FlavorResource] = []
    usage = node.usage
    for fr, quota in node.subtree_quota.items():
        amount = usage.get(fr, 0) - quota
        if extra:
            amount += extra.get(fr, 0)
        if amount > 0:
            borrowed[fr[1]] = borrowed.get(fr[1], 0) + amount
            borrowed_frs.append(fr)
    if not borrowed:
        return DRS(0.0, weight, False, "")
    if lendable is None:
        lendable = lendable_by_resource(parent)
    ratio = 0.0
    dominant = ""
    for resource, amount in borrowed.items():
        lr = lendable.get(resource, 0)
        if lr <= 0:
            continue
        r = amount * 1000.0 / lr
        if r > ratio or (r == ratio and resource < dominant):
            ratio, dominant = r, resource
    return DRS(ratio, weight, True, dominant, frozenset(borrowed_frs))


def compare_drs(a: DRS, b: DRS) -> int:
    """-1/0/1; lower is preferred for admission, higher as a preemption target (``CompareDRS``)."""
    a_inf = a.zero_weight_borrows()
    b_inf = b.zero_weight_borrows()
    if a_inf and b_inf:
        x, y = a.ratio, b.ratio
    elif a_inf:
        return 1
    elif b_inf:
        return -1
    else:
        x, y = a.weighted(), b.weighted()
    return (x > y) - (x < y)


def weighted_share_status(drs: DRS) -> int:
    """``status.fairSharing.weightedShare``: ceil of the weighted share, int64 max for +inf."""
    if drs.zero_weight_borrows():
        return MAX_INT64
    return math.ceil(drs.weighted())


__all__ = [
    "DEFAULT_WEIGHT",
    "DRS",
    "ZERO_DRS",
    "WeightOf",
    "compare_drs",
    "dominant_resource_share",
    "lendable_by_resource",
    "node_weight",
    "weighted_share_status",
]
