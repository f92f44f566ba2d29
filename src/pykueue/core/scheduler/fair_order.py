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
from dataclasses import dataclass, field

from pykueue.core.cache.cache import cache_weight_of
from pykueue.core.cache.snapshot import Snapshot
from pykueue.core.options import SchedulerOptions
from pykueue.core.quota.drs import DRS, WeightOf, compare_drs, dominant_resource_share
from pykueue.core.quota.tree import CohortNode, QuotaNode
from pykueue.core.scheduler.entry import Entry

# (DRS of the child node on the entry's path, whether that node borrows on an FR the entry requests)
_LevelValue = tuple[DRS, bool]


@dataclass
class _Shares:
    """An entry's per-level values and the node versions they were computed at."""

    levels: dict[str, _LevelValue] = field(default_factory=dict)
    versions: tuple[int, ...] = ()


def fair_sharing_order(entries: list[Entry], snapshot: Snapshot, options: SchedulerOptions) -> Iterator[Entry]:
    """Yield entries in fair-sharing order; the snapshot may change between pops."""
    pending: dict[str, Entry] = {}
    for e in entries:
        if e.cq is not None:
            pending.setdefault(e.cq.name, e)
    trees: dict[int, dict[str, Entry]] = {}
    for name, e in pending.items():
        assert e.cq is not None
        trees.setdefault(id(e.cq.node.root()), {})[name] = e
    weight_of = cache_weight_of(snapshot.cache)
    shares: dict[str, _Shares] = {}
    while pending:
        name = min(pending)
        entry = pending[name]
        assert entry.cq is not None
        root = entry.cq.node.root()
        tree_entries = trees[id(root)]
        if isinstance(root, CohortNode):
            for cq_name, e in tree_entries.items():
                _refresh(cq_name, e, shares, snapshot, weight_of)
            winner = _tournament(root, tree_entries, shares, options)
        else:
            winner = entry
        assert winner is not None and winner.cq is not None
        del pending[winner.cq.name]
        del tree_entries[winner.cq.name]
        yield winner


def _path(node: QuotaNode) -> list[QuotaNode]:
    """Nodes below the root on the way up from ``node`` (those whose shares are compared)."""
    out: list[QuotaNode] = []
    while node.parent is not None:
        out.append(node)
        node = node.parent
    return out


def _refresh(cq_name: str, e: Entry, shares: dict[str, _Shares], snapshot: Snapshot, weight_of: WeightOf) -> None:
    assert e.cq is not None and e.assignment is not None
    path = _path(e.cq.node)
    cached = shares.get(cq_name)
    if cached is not None and cached.versions == tuple(n.version for n in path):
        return
    usage = e.assignment.usage
    levels: dict[str, _LevelValue] = {}
    snapshot.add_usage(e.cq, usage)
    try:
        for node in path:
            assert node.parent is not None
            borrows = any(node.is_borrowing(fr) for fr in usage)
            levels[node.parent.name] = (dominant_resource_share(node, weight_of=weight_of), borrows)
    finally:
        snapshot.remove_usage(e.cq, usage)
    shares[cq_name] = _Shares(levels, tuple(n.version for n in path))


def _tournament(
    cohort: CohortNode, tree_entries: dict[str, Entry], shares: dict[str, _Shares], options: SchedulerOptions
) -> Entry | None:
    candidates: list[Entry] = []
    for child_name in sorted(cohort.child_cohorts):
        w = _tournament(cohort.child_cohorts[child_name], tree_entries, shares, options)
        if w is not None:
            candidates.append(w)
    for cq_name in sorted(cohort.child_cqs):
        if cq_name in tree_entries:
            candidates.append(tree_entries[cq_name])
    best: Entry | None = None
    for c in candidates:
        if best is None or _less(c, best, cohort.name, shares, options):
            best = c
    return best


def _less(a: Entry, b: Entry, level: str, shares: dict[str, _Shares], options: SchedulerOptions) -> bool:
    assert a.cq is not None and b.cq is not None
    if options.gate("PrioritizePreemptorWorkloads") and a.info.is_preemptor != b.info.is_preemptor:
        return a.info.is_preemptor
    a_drs, a_borrows = shares[a.cq.name].levels[level]
    b_drs, b_borrows = shares[b.cq.name].levels[level]
    if options.gate("FairSharingPrioritizeNonBorrowing") and a_borrows != b_borrows:
        return not a_borrows
    cmp = compare_drs(a_drs, b_drs)
    if cmp != 0:
        return cmp < 0
    if options.gate("PrioritySortingWithinCohort") and a.info.priority != b.info.priority:
        return a.info.priority > b.info.priority
    return a.info.order_ts < b.info.order_ts
