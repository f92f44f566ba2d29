"""Admission order under fair sharing: the DRS tournament (upstream ``runTournament``).

Before each pop, every pending entry of the chosen tree needs, for each cohort on its path, the
dominant resource share of its child on that path with the entry's usage added. A share depends
only on the usage of the node it is computed for (lendable capacity depends on quotas alone), so
an entry's shares are recomputed only when a node on its path changed since they were computed
(``QuotaNode.version``) — the same values upstream recomputes at every pop, at a fraction of the
cost. Trees and children are visited in name order, which makes upstream's arbitrary choices
deterministic.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from pykueue.core.cache.cache import cache_weight_of
from pykueue.core.cache.snapshot import Snapshot
from pykueue.core.options import SchedulerOptions
from pykueue.core.quota.drs import DRS, WeightOf, dominant_resource_share, lendable_by_resource
from pykueue.core.quota.tree import CohortNode, FlavorResource, QuotaNode
from pykueue.core.scheduler.entry import Entry

# An entry's sort key at one cohort of its path (``_less`` as a key; see ``_level_key``).
_LevelKey = tuple[bool, bool, tuple[int, float], int, float]


class _Shares:
    """An entry's per-level sort keys, the nodes below the root on its path, and the sum of their
    versions when the keys were computed."""

    __slots__ = ("keys", "path", "signature")

    def __init__(self, keys: dict[str, _LevelKey], path: tuple[QuotaNode, ...], signature: int) -> None:
        self.keys = keys
        self.path = path
        self.signature = signature


@dataclass(frozen=True, slots=True)
class _Gates:
    preemptor_first: bool
    non_borrowing_first: bool
    priority_sort: bool


# Per cohort, ``(key at that cohort, CQ name)`` of its child CQs with a pending entry, sorted: the
# first one is the child the tournament picks among them (lowest key, then first in name order).
_Ranked = dict[int, list[tuple[_LevelKey, str]]]


def fair_sharing_order(entries: list[Entry], snapshot: Snapshot, options: SchedulerOptions) -> Iterator[Entry]:
    """Yield entries in fair-sharing order; the snapshot may change between pops."""
    pending: dict[str, Entry] = {}
    for e in entries:
        if e.cq is not None:
            pending.setdefault(e.cq.name, e)
    trees: dict[int, dict[str, Entry]] = {}
    for name in sorted(pending):
        e = pending[name]
        assert e.cq is not None
        trees.setdefault(id(e.cq.node.root()), {})[name] = e
    weight_of = cache_weight_of(snapshot.cache)
    gates = _Gates(
        options.gate("PrioritizePreemptorWorkloads"),
        options.gate("FairSharingPrioritizeNonBorrowing"),
        options.gate("PrioritySortingWithinCohort"),
    )
    # ``lendable`` depends on quotas only, which a cycle does not change.
    lendable: dict[int, dict[str, int]] = {}
    shares: dict[str, _Shares] = {}
    ranked: _Ranked = {}
    # ``min(pending)`` without a scan per pop: names in order, skipping those already yielded.
    names = sorted(pending)
    first = 0
    # Which entries to re-check after the snapshot changed (``_to_check``): each CQ node maps to its
    # pending entry's name; per flat tree, how much of ``snapshot.changes`` was looked at.
    watchers: dict[int, list[str]] = {}
    flat: dict[int, bool] = {}
    for cq_name, e in pending.items():
        assert e.cq is not None
        cq_node = e.cq.node
        watchers.setdefault(id(cq_node), []).append(cq_name)
        root_id = id(cq_node.root())
        flat[root_id] = flat.get(root_id, True) and cq_node.parent is not None and cq_node.parent.parent is None
    seen: dict[int, int] = {}
    while pending:
        while names[first] not in pending:
            first += 1
        name = names[first]
        entry = pending[name]
        assert entry.cq is not None
        root = entry.cq.node.root()
        tree_entries = trees[id(root)]
        if isinstance(root, CohortNode):
            first_visit = id(root) not in seen
            for cq_name, e in _to_check(tree_entries, snapshot, seen, id(root), watchers):
                cached = shares.get(cq_name)
                if cached is not None:
                    signature = 0
                    for node in cached.path:
                        signature += node.version
                    if signature == cached.signature:
                        continue
                _refresh(cq_name, e, shares, ranked, snapshot, weight_of, lendable, gates)
            if first_visit and flat[id(root)]:
                seen[id(root)] = len(snapshot.changes)
            winner = _tournament(root, pending, shares, ranked)
        else:
            winner = entry
        assert winner is not None and winner.cq is not None
        del pending[winner.cq.name]
        del tree_entries[winner.cq.name]
        parent = winner.cq.node.parent
        if parent is not None:
            _unrank(ranked, parent, winner.cq.name, shares)
        yield winner


def _to_check(
    tree_entries: dict[str, Entry], snapshot: Snapshot, seen: dict[int, int], root: int, watchers: dict[int, list[str]]
) -> Iterable[tuple[str, Entry]]:
    """The tree's entries whose shares may be out of date.

    In a flat tree (every pending CQ right below the root; ``seen`` holds only such trees) an
    entry's shares depend on its own CQ node's usage, which in a cycle changes only through the
    snapshot's simulations of that very CQ (``snapshot.changes``), so after the first visit only
    the entries of CQs logged since are re-checked. Other trees: every entry, every time (the
    signature check then skips those whose nodes did not move).
    """
    mark = seen.get(root)
    if mark is None:
        return tree_entries.items()
    log = snapshot.changes
    seen[root] = len(log)
    out: list[tuple[str, Entry]] = []
    for cq_name in sorted({name for cq in log[mark:] for name in watchers.get(id(cq.node), ())}):
        e = tree_entries.get(cq_name)
        if e is not None:
            out.append((cq_name, e))
    return out


def _path(node: QuotaNode) -> tuple[QuotaNode, ...]:
    """Nodes below the root on the way up from ``node`` (those whose shares are compared)."""
    out: list[QuotaNode] = []
    while node.parent is not None:
        out.append(node)
        node = node.parent
    return tuple(out)


def _unrank(ranked: _Ranked, parent: QuotaNode, cq_name: str, shares: dict[str, _Shares]) -> None:
    """Drop ``cq_name``'s current key from its cohort's ranking."""
    cached = shares.get(cq_name)
    if cached is None:
        return
    lst = ranked[id(parent)]
    item = (cached.keys[parent.name], cq_name)
    i = bisect.bisect_left(lst, item)
    assert lst[i] == item
    del lst[i]


def _refresh(
    cq_name: str,
    e: Entry,
    shares: dict[str, _Shares],
    ranked: _Ranked,
    snapshot: Snapshot,
    weight_of: WeightOf,
    lendable: dict[int, dict[str, int]],
    gates: _Gates,
) -> None:
    """(Re)compute ``e``'s keys (its nodes changed since, or never computed) and re-rank it."""
    assert e.cq is not None and e.assignment is not None
    node = e.cq.node
    parent = node.parent
    assert parent is not None
    _unrank(ranked, parent, cq_name, shares)
    path = _path(node)
    usage = e.assignment.usage
    # The borrowing flag is upstream's ``DRS.IsBorrowingOn(requestedFRs)`` (``fair_sharing.go``): the
    # DRS's borrowed FRs the entry requests a positive amount of.
    keys: dict[str, _LevelKey] = {}
    if len(path) == 1 and _small(node, usage):
        # A CQ right below its root: adding ``usage`` (as ``add_usage`` would, far from the int64
        # bounds where it saturates) changes only the CQ's own usage among the nodes whose shares
        # are compared, so its share is computed with ``usage`` as extra instead of adding and
        # removing it in the tree.
        lend = lendable.get(id(parent))
        if lend is None:
            lend = lendable[id(parent)] = lendable_by_resource(parent)
        drs = dominant_resource_share(node, usage, weight_of=weight_of, lendable=lend)
        keys[parent.name] = _level_key(e, drs, drs.is_borrowing_on(usage), gates)
        shares[cq_name] = _Shares(keys, path, node.version)
        bisect.insort(ranked.setdefault(id(parent), []), (keys[parent.name], cq_name))
        return
    snapshot.add_usage(e.cq, usage)
    try:
        for n in path:
            above = n.parent
            assert above is not None
            lend = lendable.get(id(above))
            if lend is None:
                lend = lendable[id(above)] = lendable_by_resource(above)
            drs = dominant_resource_share(n, weight_of=weight_of, lendable=lend)
            keys[above.name] = _level_key(e, drs, drs.is_borrowing_on(usage), gates)
    finally:
        snapshot.remove_usage(e.cq, usage)
    shares[cq_name] = _Shares(keys, path, sum(n.version for n in path))
    bisect.insort(ranked.setdefault(id(parent), []), (keys[parent.name], cq_name))


_SMALL = 2**61


def _small(node: QuotaNode, usage: dict[FlavorResource, int]) -> bool:
    """``usage`` and ``node``'s usage of the same FRs are far from the int64 bounds, so adding them
    plainly equals ``add_usage``'s saturating sum."""
    used = node.usage
    return all(-_SMALL < v < _SMALL and -_SMALL < used.get(fr, 0) < _SMALL for fr, v in usage.items())


def _level_key(e: Entry, drs: DRS, borrows: bool, gates: _Gates) -> _LevelKey:
    """Upstream's ``less`` of the tournament as a sort key (lower wins): a preemptor first, then a
    non-borrowing node, the lower DRS (``CompareDRS``: an infinite share — weight 0 while
    borrowing — above every finite one, two infinite ones by ratio), the higher priority, the
    older workload."""
    info = e.info
    if drs.zero_weight_borrows():
        drs_key = (1, drs.ratio)
    else:
        drs_key = (0, drs.weighted())
    return (
        gates.preemptor_first and not info.is_preemptor,
        gates.non_borrowing_first and borrows,
        drs_key,
        -info.priority if gates.priority_sort else 0,
        info.order_ts,
    )


def _tournament(
    cohort: CohortNode, pending: dict[str, Entry], shares: dict[str, _Shares], ranked: _Ranked
) -> Entry | None:
    """The first candidate with the lowest key: winners of the child cohorts in name order, then the
    child CQs in name order (a later candidate replaces the best only when strictly less)."""
    level = cohort.name
    best: Entry | None = None
    best_key: _LevelKey | None = None
    for child_name in sorted(cohort.child_cohorts):
        w = _tournament(cohort.child_cohorts[child_name], pending, shares, ranked)
        if w is None:
            continue
        assert w.cq is not None
        k = shares[w.cq.name].keys[level]
        if best_key is None or k < best_key:
            best, best_key = w, k
    lst = ranked.get(id(cohort))
    if lst:
        k, name = lst[0]
        if best_key is None or k < best_key:
            best = pending[name]
    return best
