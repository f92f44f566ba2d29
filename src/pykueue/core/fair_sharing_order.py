"""Admission order under fair sharing: the DRS tournament (scheduling reference §8.3).

Each pop recomputes, for every pending entry of the chosen tree, the dominant resource share of
each node on its path with the entry's usage added, then runs a tournament from the root. Trees
and children are visited in name order, which makes upstream's arbitrary choices deterministic.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from pykueue.core.cohort_tree import CohortNode, QuotaNode
from pykueue.core.fair_sharing import DRS, WeightOf, cache_weight_of, compare_drs, dominant_resource_share
from pykueue.core.options import SchedulerOptions
from pykueue.core.snapshot import Snapshot

if TYPE_CHECKING:
    from pykueue.core.scheduler import Entry

# (DRS of the child node on the entry's path, whether that node borrows on an FR the entry requests)
_LevelValue = tuple[DRS, bool]


def fair_sharing_order(entries: list[Entry], snapshot: Snapshot, options: SchedulerOptions) -> Iterator[Entry]:
    """Yield entries in fair-sharing order; the snapshot may change between pops."""
    pending: dict[str, Entry] = {}
    for e in entries:
        if e.cq is not None:
            pending.setdefault(e.cq.name, e)
    while pending:
        name = min(pending)
        entry = pending[name]
        assert entry.cq is not None
        if entry.cq.node.parent is None:
            del pending[name]
            yield entry
            continue
        root = entry.cq.node.root()
        assert isinstance(root, CohortNode)
        tree_entries = {n: e for n, e in pending.items() if e.cq is not None and e.cq.node.root() is root}
        values = _level_values(tree_entries, snapshot, cache_weight_of(snapshot.cache))
        winner = _tournament(root, tree_entries, values, options)
        assert winner is not None and winner.cq is not None
        del pending[winner.cq.name]
        yield winner


def _level_values(
    tree_entries: dict[str, Entry], snapshot: Snapshot, weight_of: WeightOf
) -> dict[tuple[str, str], _LevelValue]:
    values: dict[tuple[str, str], _LevelValue] = {}
    for cq_name, e in tree_entries.items():
        assert e.cq is not None and e.assignment is not None
        usage = e.assignment.usage
        snapshot.add_usage(e.cq, usage)
        try:
            node: QuotaNode = e.cq.node
            while node.parent is not None:
                borrows = any(node.is_borrowing(fr) for fr in usage)
                values[(node.parent.name, cq_name)] = (dominant_resource_share(node, weight_of=weight_of), borrows)
                node = node.parent
        finally:
            snapshot.remove_usage(e.cq, usage)
    return values


def _tournament(
    cohort: CohortNode,
    tree_entries: dict[str, Entry],
    values: dict[tuple[str, str], _LevelValue],
    options: SchedulerOptions,
) -> Entry | None:
    candidates: list[Entry] = []
    for child_name in sorted(cohort.child_cohorts):
        w = _tournament(cohort.child_cohorts[child_name], tree_entries, values, options)
        if w is not None:
            candidates.append(w)
    for cq_name in sorted(cohort.child_cqs):
        if cq_name in tree_entries:
            candidates.append(tree_entries[cq_name])
    best: Entry | None = None
    for c in candidates:
        if best is None or _less(c, best, cohort.name, values, options):
            best = c
    return best


def _less(
    a: Entry, b: Entry, level: str, values: dict[tuple[str, str], _LevelValue], options: SchedulerOptions
) -> bool:
    assert a.cq is not None and b.cq is not None
    if options.gate("PrioritizePreemptorWorkloads"):
        ap, bp = a.info.is_preemptor, b.info.is_preemptor
        if ap != bp:
            return ap
    a_drs, a_borrows = values[(level, a.cq.name)]
    b_drs, b_borrows = values[(level, b.cq.name)]
    if options.gate("FairSharingPrioritizeNonBorrowing") and a_borrows != b_borrows:
        return not a_borrows
    cmp = compare_drs(a_drs, b_drs)
    if cmp != 0:
        return cmp < 0
    if options.gate("PrioritySortingWithinCohort") and a.info.priority != b.info.priority:
        return a.info.priority > b.info.priority
    return a.info.order_ts < b.info.order_ts
