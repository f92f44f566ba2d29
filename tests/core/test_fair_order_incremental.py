"""The fair-sharing order's incremental bookkeeping equals the tournament computed from scratch.

``fair_order.fair_sharing_order`` keeps every entry's per-level sort keys between pops (recomputed
only when a node on its path changed) and a sorted ranking per cohort. Here every pop of random
scheduling runs with fair sharing (hierarchical cohorts, weights, preemption, bookings between
pops) is checked against upstream's tournament evaluated afresh on the snapshot as it is at that
pop: every DRS recomputed, every pair compared with upstream's ``less``.
"""

from __future__ import annotations

from collections.abc import Iterator
from unittest import mock

from hypothesis import given, note, settings
from hypothesis import strategies as st
from strategies import COHORTS, CohortGen, Scenario, scenario
from test_invariants import SETTINGS, examples, run_steps

from pykueue.core.cache.cache import cache_weight_of
from pykueue.core.cache.snapshot import Snapshot
from pykueue.core.options import SchedulerOptions
from pykueue.core.quota.drs import DRS, compare_drs, dominant_resource_share
from pykueue.core.quota.tree import CohortNode
from pykueue.core.scheduler import cycle, fair_order
from pykueue.core.scheduler.entry import Entry

Levels = dict[str, tuple[DRS, bool]]


def _levels(e: Entry, snapshot: Snapshot) -> Levels:
    """Per cohort on ``e``'s path: the DRS of its child on the path with ``e``'s usage added, and
    whether that child borrows in a requested FR (upstream ``runTournament``'s per-pop values)."""
    assert e.cq is not None and e.assignment is not None
    weight_of = cache_weight_of(snapshot.cache)
    usage = e.assignment.usage
    out: Levels = {}
    snapshot.add_usage(e.cq, usage)
    try:
        node = e.cq.node
        while node.parent is not None:
            borrows = any(v > 0 and node.is_borrowing(fr) for fr, v in usage.items())
            out[node.parent.name] = (dominant_resource_share(node, weight_of=weight_of), borrows)
            node = node.parent
    finally:
        snapshot.remove_usage(e.cq, usage)
    return out


def _less(a: Entry, b: Entry, level: str, levels: dict[str, Levels], options: SchedulerOptions) -> bool:
    """Upstream's comparison of two tournament candidates at ``level``."""
    assert a.cq is not None and b.cq is not None
    if options.gate("PrioritizePreemptorWorkloads") and a.info.is_preemptor != b.info.is_preemptor:
        return a.info.is_preemptor
    a_drs, a_borrows = levels[a.cq.name][level]
    b_drs, b_borrows = levels[b.cq.name][level]
    if options.gate("FairSharingPrioritizeNonBorrowing") and a_borrows != b_borrows:
        return not a_borrows
    cmp = compare_drs(a_drs, b_drs)
    if cmp != 0:
        return cmp < 0
    if options.gate("PrioritySortingWithinCohort") and a.info.priority != b.info.priority:
        return a.info.priority > b.info.priority
    return a.info.order_ts < b.info.order_ts


def _tournament(
    cohort: CohortNode, tree: dict[str, Entry], levels: dict[str, Levels], options: SchedulerOptions
) -> Entry | None:
    candidates: list[Entry] = []
    for name in sorted(cohort.child_cohorts):
        w = _tournament(cohort.child_cohorts[name], tree, levels, options)
        if w is not None:
            candidates.append(w)
    candidates.extend(tree[name] for name in sorted(cohort.child_cqs) if name in tree)
    best: Entry | None = None
    for c in candidates:
        if best is None or _less(c, best, cohort.name, levels, options):
            best = c
    return best


def _from_scratch(pending: dict[str, Entry], snapshot: Snapshot, options: SchedulerOptions) -> Entry:
    entry = pending[min(pending)]
    assert entry.cq is not None
    root = entry.cq.node.root()
    if not isinstance(root, CohortNode):
        return entry
    tree = {name: e for name, e in pending.items() if e.cq is not None and e.cq.node.root() is root}
    levels = {name: _levels(e, snapshot) for name, e in tree.items()}
    winner = _tournament(root, tree, levels, options)
    assert winner is not None
    return winner


def _checked(entries: list[Entry], snapshot: Snapshot, options: SchedulerOptions) -> Iterator[Entry]:
    pending: dict[str, Entry] = {}
    for e in entries:
        if e.cq is not None:
            pending.setdefault(e.cq.name, e)
    for winner in fair_order.fair_sharing_order(entries, snapshot, options):
        expected = _from_scratch(pending, snapshot, options)
        assert winner is expected, f"incremental order picked {winner.info.key}, from scratch {expected.info.key}"
        assert winner.cq is not None
        del pending[winner.cq.name]
        yield winner
    assert not pending


@st.composite
def nested_scenario(draw: st.DrawFn) -> Scenario:
    """A random scenario whose CQs all sit in a tree of three cohorts (c1 and c2 under c0, or a
    chain), so that sibling bookings move the shares of other entries between pops."""
    sc = draw(scenario(max_workloads=30, max_cqs=6, max_steps=5))
    chain = draw(st.booleans())
    old = {c.name: c for c in sc.cohorts}
    sc.cohorts = []
    for i, name in enumerate(COHORTS):
        parent = "" if i == 0 else ("c1" if chain and i == 2 else "c0")
        was = old.get(name)
        groups = was.groups if was is not None else []
        weight = was.weight if was is not None else None
        sc.cohorts.append(CohortGen(name, parent, True, groups, weight))
    for q in sc.cqs:
        q.cohort = draw(st.sampled_from(["c1", "c2", "c2", "c0"]))
    return sc


def _run(sc: Scenario) -> None:
    sc.fair_sharing = True
    note(sc.describe())
    with mock.patch.object(cycle, "fair_sharing_order", _checked):
        run_steps(sc, check=False)


@settings(max_examples=examples(150), **SETTINGS)
@given(scenario(max_workloads=24, max_cqs=6, max_steps=6))
def test_fair_order_equals_from_scratch_tournament(sc: Scenario) -> None:
    _run(sc)


@settings(max_examples=examples(100), **SETTINGS)
@given(scenario(max_workloads=20, max_cqs=5, max_steps=5))
def test_fair_order_equals_from_scratch_tournament_under_preemption(sc: Scenario) -> None:
    """Victims' quota removed and restored between pops changes node versions without changing
    usage; bookings change both."""
    for q in sc.cqs:
        if q.within == "Never":
            q.within = "LowerPriority"
        if q.reclaim == "Never" and q.cohort:
            q.reclaim = "Any"
    _run(sc)


@settings(max_examples=examples(150), **SETTINGS)
@given(nested_scenario())
def test_fair_order_equals_from_scratch_tournament_in_nested_cohorts(sc: Scenario) -> None:
    _run(sc)
