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

from collections.abc import Iterator
from dataclasses import dataclass

from pykueue.core.cache.cache import cache_weight_of
from pykueue.core.cache.snapshot import Snapshot
from pykueue.core.options import SchedulerOptions
from pykueue.core.quota.drs import DRS, WeightOf, dominant_resource_share, lendable_by_resource
from pykueue.core.quota.tree import CohortNode, QuotaNode
from pykueue.core.scheduler.entry import Entry

# An entry's sort key at one cohort of its path (``_less`` as a key; see ``_level_key``).
_LevelKey = tuple[bool, bool, tuple[int, float], int, float]


class _Shares:
    """An entry's per-level sort keys and the signature of the node versions they were computed at."""

    __slots__ = ("keys", "signature")

    def __init__(self, keys: dict[str, _LevelKey], signature: int) -> None:
        self.keys = keys
        self.signature = signature


@dataclass(frozen=True, slots=True)
class _Gates:
    preemptor_first: bool
    non_borrowing_first: bool
    priority_sort: bool


def fair_sharing_order(entries: list[Entry], snapshot: Snapshot, options: SchedulerOptions) -> Iterator[Entry]:
    """Yield entries in fair-sharing order; the snapshot may change between pops."""
    pending: dict[str, Entry] = {}
    for e in entries:
        if e.cq is not None:
            pending.setdefault(e.cq.name, e)
    trees: dict[int, dict[str, Entry]] = {}
    # Per cohort, the names of its child CQs with a pending entry, sorted: the tournament's
    # candidate order without sorting every cohort's children at every pop.
    by_cohort: dict[int, list[str]] = {}
    for name in sorted(pending):
        e = pending[name]
        assert e.cq is not None
        node = e.cq.node
        trees.setdefault(id(node.root()), {})[name] = e
        if node.parent is not None:
            by_cohort.setdefault(id(node.parent), []).append(name)
    weight_of = cache_weight_of(snapshot.cache)
    gates = _Gates(
        options.gate("PrioritizePreemptorWorkloads"),
        options.gate("FairSharingPrioritizeNonBorrowing"),
        options.gate("PrioritySortingWithinCohort"),
    )
    # ``lendable`` depends on quotas only, which a cycle does not change.
    lendable: dict[int, dict[str, int]] = {}
    shares: dict[str, _Shares] = {}
    while pending:
        name = min(pending)
        entry = pending[name]
        assert entry.cq is not None
        root = entry.cq.node.root()
        tree_entries = trees[id(root)]
        if isinstance(root, CohortNode):
            for cq_name, e in tree_entries.items():
                _refresh(cq_name, e, shares, snapshot, weight_of, lendable, gates)
            winner = _tournament(root, tree_entries, by_cohort, shares)
        else:
            winner = entry
        assert winner is not None and winner.cq is not None
        del pending[winner.cq.name]
        del tree_entries[winner.cq.name]
        parent = winner.cq.node.parent
        if parent is not None:
            by_cohort[id(parent)].remove(winner.cq.name)
        yield winner


def _path(node: QuotaNode) -> list[QuotaNode]:
    """Nodes below the root on the way up from ``node`` (those whose shares are compared)."""
    out: list[QuotaNode] = []
    while node.parent is not None:
        out.append(node)
        node = node.parent
    return out


def _signature(node: QuotaNode) -> int:
    """Sum of the versions of the nodes below the root on ``node``'s path. Versions only grow, so an
    unchanged sum means every node on the path is unchanged."""
    total = 0
    while node.parent is not None:
        total += node.version
        node = node.parent
    return total


def _refresh(
    cq_name: str,
    e: Entry,
    shares: dict[str, _Shares],
    snapshot: Snapshot,
    weight_of: WeightOf,
    lendable: dict[int, dict[str, int]],
    gates: _Gates,
) -> None:
    assert e.cq is not None and e.assignment is not None
    node = e.cq.node
    cached = shares.get(cq_name)
    if cached is not None and cached.signature == _signature(node):
        return
    usage = e.assignment.usage
    keys: dict[str, _LevelKey] = {}
    snapshot.add_usage(e.cq, usage)
    try:
        for n in _path(node):
            parent = n.parent
            assert parent is not None
            borrows = any(n.is_borrowing(fr) for fr in usage)
            lend = lendable.get(id(parent))
            if lend is None:
                lend = lendable[id(parent)] = lendable_by_resource(parent)
            drs = dominant_resource_share(n, weight_of=weight_of, lendable=lend)
            keys[parent.name] = _level_key(e, drs, borrows, gates)
    finally:
        snapshot.remove_usage(e.cq, usage)
    shares[cq_name] = _Shares(keys, _signature(node))


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
    cohort: CohortNode,
    tree_entries: dict[str, Entry],
    by_cohort: dict[int, list[str]],
    shares: dict[str, _Shares],
) -> Entry | None:
    """The first candidate with the lowest key: winners of the child cohorts in name order, then the
    child CQs in name order (a later candidate replaces the best only when strictly less)."""
    level = cohort.name
    best: Entry | None = None
    best_key: _LevelKey | None = None
    for child_name in sorted(cohort.child_cohorts):
        w = _tournament(cohort.child_cohorts[child_name], tree_entries, by_cohort, shares)
        if w is None:
            continue
        assert w.cq is not None
        k = shares[w.cq.name].keys[level]
        if best_key is None or k < best_key:
            best, best_key = w, k
    names = by_cohort.get(id(cohort))
    if names:
        name = min(names, key=lambda n: shares[n].keys[level])
        k = shares[name].keys[level]
        if best_key is None or k < best_key:
            best = tree_entries[name]
    return best
