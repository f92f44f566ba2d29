"""Cohort trees: quotas, subtree quotas and incremental usage accounting (upstream ``resource_node.go``).

Nodes are ClusterQueues (always leaves) and Cohorts. Every node carries, per (flavor, resource):
its own quota, its subtree quota and its usage. Usage changes are propagated upward incrementally
(``addUsage``/``removeUsage``); ``add_usage``/``remove_usage`` are exact inverses and commute,
so any set of simulated changes can be undone in any order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pykueue.api.quantity import MIN_INT64, UNLIMITED, sat_add, sat_sub

FlavorResource = tuple[str, str]
"""A (flavor, resource) pair; the unit of quota accounting."""


@dataclass(frozen=True, slots=True)
class Quota:
    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


class QuotaNode:
    """Quota and usage of one node of a cohort tree."""

    __slots__ = ("name", "parent", "quotas", "subtree_quota", "usage", "version")

    def __init__(self, name: str) -> None:
        self.name = name
        self.parent: CohortNode | None = None
        self.quotas: dict[FlavorResource, Quota] = {}
        self.subtree_quota: dict[FlavorResource, int] = {}
        self.usage: dict[FlavorResource, int] = {}
        self.version = 0
        """Incremented on every usage or quota change, so derived values can be cached."""

    # --- upstream ``resourceNode`` --------------------------------------------------------------

    def local_quota(self, fr: FlavorResource) -> int:
        """Part of the subtree quota never lent to the parent (0 without a lending limit)."""
        q = self.quotas.get(fr)
        if q is None or q.lending_limit is None:
            return 0
        return max(0, sat_sub(self.subtree_quota.get(fr, 0), q.lending_limit))

    def local_available(self, fr: FlavorResource) -> int:
        q = self.quotas.get(fr)
        used = self.usage.get(fr, 0)
        if (q is None or q.lending_limit is None) and used >= 0:
            return 0  # no local quota (the common case): max(0, 0 - used)
        return max(0, sat_sub(self.local_quota(fr), used))

    def borrowing_with(self, fr: FlavorResource, value: int) -> bool:
        """Whether holding ``value`` more of ``fr`` would exceed this node's subtree quota."""
        return self.subtree_quota.get(fr, 0) < sat_add(self.usage.get(fr, 0), value)

    def is_borrowing(self, fr: FlavorResource) -> bool:
        return self.subtree_quota.get(fr, 0) < self.usage.get(fr, 0)

    def is_within_nominal(self, frs: Iterable[FlavorResource]) -> bool:
        """``IsWithinNominalInResources``: not borrowing in any of ``frs``."""
        sq, us = self.subtree_quota, self.usage
        return all(sq.get(fr, 0) >= us.get(fr, 0) for fr in frs)

    def root(self) -> QuotaNode:
        node: QuotaNode = self
        while node.parent is not None:
            node = node.parent
        return node

    def path_from_root(self) -> list[QuotaNode]:
        path: list[QuotaNode] = []
        node: QuotaNode | None = self
        while node is not None:
            path.append(node)
            node = node.parent
        path.reverse()
        return path


class ClusterQueueNode(QuotaNode):
    """A ClusterQueue in the tree; its subtree quota is its nominal quota."""

    __slots__ = ()


class CohortNode(QuotaNode):
    __slots__ = ("child_cohorts", "child_cqs", "fair_weight", "implicit")

    def __init__(self, name: str, implicit: bool = True) -> None:
        super().__init__(name)
        self.child_cqs: dict[str, ClusterQueueNode] = {}
        self.child_cohorts: dict[str, CohortNode] = {}
        self.implicit = implicit
        self.fair_weight = 0.0 if implicit else 1.0

    def has_children(self) -> bool:
        return bool(self.child_cqs or self.child_cohorts)

    def height(self) -> int:
        """``nodeHeight``: 1 for a cohort of CQs only, 0 when empty."""
        h = min(len(self.child_cqs) + len(self.child_cohorts), 1)
        for child in self.child_cohorts.values():
            h = max(h, child.height() + 1)
        return h

    def iter_cluster_queues(self) -> list[ClusterQueueNode]:
        """Every ClusterQueue in this subtree, children sorted by name for determinism."""
        out: list[ClusterQueueNode] = []
        stack: list[CohortNode] = [self]
        while stack:
            c = stack.pop()
            out.extend(c.child_cqs[n] for n in sorted(c.child_cqs))
            stack.extend(c.child_cohorts[n] for n in sorted(c.child_cohorts, reverse=True))
        return out


# --- incremental usage (upstream ``addUsage``, ``removeUsage``) ----------------------------------


def add_usage(node: QuotaNode, fr: FlavorResource, value: int) -> None:
    """Add ``value`` of ``fr`` to ``node`` and the part that does not fit locally to its parent."""
    while True:
        used = node.usage.get(fr, 0)
        q = node.quotas.get(fr)
        # ``local_available`` inlined for its common case (no lending limit, usage not negative).
        la = 0 if (q is None or q.lending_limit is None) and used >= 0 else node.local_available(fr)
        # ``sat_add`` inlined (a Python call per node of every usage change otherwise).
        if used == UNLIMITED or value == UNLIMITED:
            node.usage[fr] = UNLIMITED
        else:
            total = used + value
            node.usage[fr] = UNLIMITED if total > UNLIMITED else MIN_INT64 if total < MIN_INT64 else total
        node.version += 1
        parent = node.parent
        if parent is None or value <= la:
            return
        value -= la
        node = parent


def remove_usage(node: QuotaNode, fr: FlavorResource, value: int) -> None:
    """Exact inverse of ``add_usage``.

    A negative ``value`` (undoing a negative reservation, see ``Scheduler._resources_to_reserve``)
    stays in ``node``, as ``add_usage`` kept it there."""
    while True:
        current = node.usage.get(fr, 0)
        q = node.quotas.get(fr)
        # ``local_quota`` inlined for its common case (no lending limit: 0).
        stored = current if q is None or q.lending_limit is None else current - node.local_quota(fr)
        # ``sat_sub`` inlined for amounts other than the sentinel.
        if current == UNLIMITED or value == UNLIMITED:
            node.usage[fr] = sat_sub(current, value)
        else:
            rest = current - value
            node.usage[fr] = UNLIMITED if rest > UNLIMITED else MIN_INT64 if rest < MIN_INT64 else rest
        node.version += 1
        parent = node.parent
        if parent is None or stored <= 0 or value <= 0:
            return
        if stored < value:
            value = stored
        node = parent


def saturated_on_path(node: QuotaNode, frs: Iterable[FlavorResource]) -> bool:
    """Whether ``node`` or an ancestor holds a saturated amount (the int64 bounds) of one of ``frs``:
    there ``remove_usage`` and ``add_usage`` of the same amount no longer cancel out."""
    frs = tuple(frs)
    n: QuotaNode | None = node
    while n is not None:
        usage = n.usage
        for fr in frs:
            v = usage.get(fr, 0)
            if v in (UNLIMITED, MIN_INT64):
                return True
        n = n.parent
    return False


def add_usage_map(node: QuotaNode, usage: dict[FlavorResource, int]) -> None:
    for fr, v in usage.items():
        add_usage(node, fr, v)


def remove_usage_map(node: QuotaNode, usage: dict[FlavorResource, int]) -> None:
    for fr, v in usage.items():
        remove_usage(node, fr, v)


# --- capacity (upstream ``available``, ``potentialAvailable``) ----------------------------------


def _available(node: QuotaNode, fr: FlavorResource) -> int:
    # Upstream recurses to the root and folds the result back down; the same fold from the root
    # down over the path, without the recursion. Nodes without a borrowing or lending limit for
    # ``fr`` (the common case) only add their local availability, which is then 0 unless their
    # usage is negative: that case is inlined.
    path: list[QuotaNode] = []
    while node.parent is not None:
        path.append(node)
        node = node.parent
    p = sat_sub(node.subtree_quota.get(fr, 0), node.usage.get(fr, 0))
    for node in reversed(path):
        q = node.quotas.get(fr)
        if q is None or (q.borrowing_limit is None and q.lending_limit is None):
            if node.usage.get(fr, 0) < 0:
                p = sat_add(node.local_available(fr), p)
            continue
        if q.borrowing_limit is not None:
            lq = node.local_quota(fr)
            stored_in_parent = sat_sub(node.subtree_quota.get(fr, 0), lq)
            used_in_parent = max(0, sat_sub(node.usage.get(fr, 0), lq))
            p = min(p, sat_add(sat_sub(stored_in_parent, used_in_parent), q.borrowing_limit))
        p = sat_add(node.local_available(fr), p)
    return p


def available(node: QuotaNode, fr: FlavorResource) -> int:
    """Free capacity of ``fr`` usable by ``node`` now without preemption (never negative)."""
    return max(0, _available(node, fr))


def potential_available(node: QuotaNode, fr: FlavorResource) -> int:
    """The most ``node`` could hold of ``fr`` if the whole tree were empty."""
    # Upstream's recursion to the root, folded back down the path iteratively. ``sat_add(0, r)``
    # is ``r`` (r is already within int64), and so is adding the local quota of a node without
    # a lending limit (0): such nodes are skipped unless they have a borrowing limit.
    path: list[QuotaNode] = []
    while node.parent is not None:
        path.append(node)
        node = node.parent
    result = node.subtree_quota.get(fr, 0)
    for node in reversed(path):
        q = node.quotas.get(fr)
        if q is None:
            continue
        if q.lending_limit is not None:
            result = sat_add(node.local_quota(fr), result)
        if q.borrowing_limit is not None:
            result = min(result, sat_add(node.subtree_quota.get(fr, 0), q.borrowing_limit))
    return result


def quantities_fit_in_quota(
    node: QuotaNode, request: dict[FlavorResource, int]
) -> tuple[bool, dict[FlavorResource, int]]:
    """``QuantitiesFitInQuota``: whether ``request`` fits the subtree quota, and what remains."""
    fits = True
    remaining: dict[FlavorResource, int] = {}
    for fr, v in request.items():
        if node.subtree_quota.get(fr, 0) < sat_add(node.usage.get(fr, 0), v):
            fits = False
        remaining[fr] = max(0, sat_sub(v, node.local_available(fr)))
    return fits, remaining


def lowest_fitting_subtree(cq: ClusterQueueNode, fr: FlavorResource, value: int) -> tuple[int, bool]:
    """Borrowing level (``FindHeightOfLowestSubtreeThatFits``): height of the lowest subtree that fits, and
    whether it is not the root."""
    parent = cq.parent
    if parent is None or not cq.borrowing_with(fr, value):
        return 0, parent is not None
    remaining = sat_sub(value, cq.local_available(fr))
    node: CohortNode | None = parent
    root: CohortNode = parent
    while node is not None:
        # ``borrowing_with`` inlined.
        if node.subtree_quota.get(fr, 0) >= sat_add(node.usage.get(fr, 0), remaining):
            return node.height(), node.parent is not None
        remaining = sat_sub(remaining, node.local_available(fr))
        root = node
        node = node.parent
    return root.height(), False


def quota_views(cq: ClusterQueueNode, fr: FlavorResource, value: int) -> tuple[int, int, bool, int]:
    """``(potential_available, *lowest_fitting_subtree(value), available)`` of ``cq`` for ``fr``: the
    three reads of ``fitsResourceQuota`` (flavor assignment asks them for every flavor and resource
    of every head).

    A ClusterQueue right below a root cohort, without borrowing or lending limit for ``fr`` and not
    holding negative usage (the common shape), reads them off the two nodes at once: its limits
    then leave the root's folds unchanged, its local availability is 0, and any subtree that is
    not the ClusterQueue itself is the root. Other shapes take the three walks."""
    parent = cq.parent
    if parent is not None and parent.parent is None:
        q = cq.quotas.get(fr)
        used = cq.usage.get(fr, 0)
        if (q is None or (q.borrowing_limit is None and q.lending_limit is None)) and used >= 0:
            root_quota = parent.subtree_quota.get(fr, 0)
            root_used = parent.usage.get(fr, 0)
            # ``max(0, sat_sub(...))`` and ``sat_add`` inlined for amounts short of the sentinel
            # (``UNLIMITED`` is the int64 maximum; ``used`` is not negative here).
            if root_quota != UNLIMITED and root_used != UNLIMITED:
                free = root_quota - root_used
                if free < 0:
                    free = 0
                elif free > UNLIMITED:
                    free = UNLIMITED
            else:
                free = max(0, sat_sub(root_quota, root_used))
            held = used + value if used != UNLIMITED and value != UNLIMITED else UNLIMITED
            if held > UNLIMITED:
                held = UNLIMITED
            if cq.subtree_quota.get(fr, 0) < held:
                return root_quota, parent.height(), False, free
            return root_quota, 0, True, free
    borrow, may_reclaim = lowest_fitting_subtree(cq, fr, value)
    return potential_available(cq, fr), borrow, may_reclaim, available(cq, fr)


# --- recompute (upstream ``updateCohortTreeResources``) -------------------------------------------


def recompute_tree(root: QuotaNode) -> None:
    """Recompute subtree quotas and cohort usages of the tree under ``root`` (children first)."""
    root.version += 1
    if not isinstance(root, CohortNode):
        root.subtree_quota = {fr: q.nominal for fr, q in root.quotas.items()}
        return
    _recompute_cohort(root)


def _recompute_cohort(cohort: CohortNode) -> None:
    subtree: dict[FlavorResource, int] = {fr: q.nominal for fr, q in cohort.quotas.items()}
    usage: dict[FlavorResource, int] = {}
    children: list[QuotaNode] = [*cohort.child_cohorts.values(), *cohort.child_cqs.values()]
    for child in children:
        if isinstance(child, CohortNode):
            _recompute_cohort(child)
        else:
            child.subtree_quota = {fr: q.nominal for fr, q in child.quotas.items()}
        for fr, sq in child.subtree_quota.items():
            subtree[fr] = sat_add(subtree.get(fr, 0), sat_sub(sq, child.local_quota(fr)))
    cohort.subtree_quota = subtree
    cohort.version += 1
    for child in children:
        child.version += 1
        for fr in child.subtree_quota:
            usage.setdefault(fr, 0)
        for fr, u in child.usage.items():
            contribution = max(0, sat_sub(u, child.local_quota(fr)))
            usage[fr] = sat_add(usage.get(fr, 0), contribution)
    cohort.usage = usage


__all__ = [
    "MIN_INT64",
    "UNLIMITED",
    "ClusterQueueNode",
    "CohortNode",
    "FlavorResource",
    "Quota",
    "QuotaNode",
    "add_usage",
    "add_usage_map",
    "available",
    "lowest_fitting_subtree",
    "potential_available",
    "quantities_fit_in_quota",
    "quota_views",
    "recompute_tree",
    "remove_usage",
    "remove_usage_map",
]
