"""Fair-sharing preemption (upstream ``Preemptor.fairPreemptions``, ``fairsharing/``).

Candidates from the preemptor's CQ and from every borrowing CQ of its tree are visited CQ by CQ,
always picking the CQ whose branch has the highest dominant resource share; a cross-CQ candidate
is taken only if the configured strategy says the preemption makes the shares fairer.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from pykueue.api.kueue import PREEMPT_NEVER
from pykueue.core.cache.cache import ClusterQueueState, cache_weight_of
from pykueue.core.options import LESS_THAN_INITIAL_SHARE, LESS_THAN_OR_EQUAL_TO_FINAL_SHARE
from pykueue.core.quota.drs import (
    DRS,
    WeightOf,
    compare_drs,
    dominant_resource_share,
    lendable_by_resource,
)
from pykueue.core.quota.tree import CohortNode, QuotaNode
from pykueue.core.scheduler.preemption.common import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_FAIR_SHARING,
    IN_COHORT_RECLAMATION,
    PreemptionContext,
    Target,
    compare_candidates,
    cq_is_borrowing,
    fill_back,
    restore,
    satisfies_preemption_policy,
    sort_candidates,
    workload_fits,
)
from pykueue.core.workload.info import WorkloadInfo

Strategy = Callable[[DRS, DRS, DRS], bool]
"""``(preemptorNewShare, targetOldShare, targetNewShare) -> may preempt``."""


def less_than_or_equal_to_final_share(preemptor_new: DRS, _target_old: DRS, target_new: DRS) -> bool:
    """Rule S2-a."""
    return compare_drs(preemptor_new, target_new) <= 0


def less_than_initial_share(preemptor_new: DRS, target_old: DRS, _target_new: DRS) -> bool:
    """Rule S2-b."""
    return compare_drs(preemptor_new, target_old) < 0


STRATEGIES: dict[str, Strategy] = {
    LESS_THAN_OR_EQUAL_TO_FINAL_SHARE: less_than_or_equal_to_final_share,
    LESS_THAN_INITIAL_SHARE: less_than_initial_share,
}


def parse_strategies(names: tuple[str, ...] | list[str]) -> list[Strategy]:
    """Strategy functions for the configured names; an empty list means the two defaults."""
    if not names:
        return [less_than_or_equal_to_final_share, less_than_initial_share]
    try:
        return [STRATEGIES[n] for n in names]
    except KeyError as err:
        raise ValueError(f"unknown fair sharing preemption strategy {err.args[0]!r}") from None


# --- DRS with memoised lendable amounts -----------------------------------------------------------


@dataclass(slots=True)
class ShareCalculator:
    """DRS of nodes during one search; lendable amounts depend on quotas only, so they are cached."""

    weight_of: WeightOf
    _lendable: dict[int, dict[str, int]] = field(default_factory=dict)

    def drs(self, node: QuotaNode) -> DRS:
        """DRS of ``node`` with its current usage."""
        parent = node.parent
        lendable = None
        if parent is not None:
            lendable = self._lendable.get(id(parent))
            if lendable is None:
                lendable = self._lendable[id(parent)] = lendable_by_resource(parent)
        return dominant_resource_share(node, weight_of=self.weight_of, lendable=lendable)


# --- target-CQ ordering (upstream ``TargetClusterQueueOrdering``) ----------------------------------


class TargetOrdering:
    """``TargetClusterQueueOrdering``: yields the CQ to take the next candidate from.

    Each yielded CQ must be followed by ``pop`` or ``drop`` to make progress.
    """

    def __init__(
        self, ctx: PreemptionContext, candidates: list[WorkloadInfo], shares: ShareCalculator
    ) -> None:
        self._ctx = ctx
        self._shares = shares
        self._preemptor = ctx.cq.node
        self._ancestors: set[str] = set()
        node = self._preemptor.parent
        while node is not None:
            self._ancestors.add(node.name)
            node = node.parent
        self._by_cq: dict[str, deque[WorkloadInfo]] = {}
        for wl in candidates:
            self._by_cq.setdefault(wl.cluster_queue, deque()).append(wl)
        self._pruned_cqs: set[str] = set()
        self._pruned_cohorts: set[str] = set()
        self._children: dict[str, tuple[list[str], list[str]]] = {}

    def has(self, cq: str) -> bool:
        """Whether ``cq`` still has candidates."""
        return bool(self._by_cq.get(cq))

    def pop(self, cq: str) -> WorkloadInfo:
        """Take the next candidate of ``cq`` (in ``CandidatesOrdering`` order)."""
        return self._by_cq[cq].popleft()

    def drain(self, cq: str) -> list[WorkloadInfo]:
        """Take every remaining candidate of ``cq``."""
        q = self._by_cq.get(cq)
        out = list(q) if q else []
        if q:
            q.clear()
        return out

    def drop(self, cq: str) -> None:
        """Never yield ``cq`` again."""
        self._pruned_cqs.add(cq)

    def is_ancestor_of_preemptor(self, cohort: CohortNode) -> bool:
        """Whether ``cohort`` is on the path from the root to the preemptor's CQ."""
        return cohort.name in self._ancestors

    def __iter__(self) -> Iterator[str]:
        if self._preemptor.parent is None:
            # Upstream ``TargetClusterQueueOrdering.Iter``: respect ``DropQueue``, as a caller may drop
            # the queue without popping a workload.
            name = self._preemptor.name
            while name not in self._pruned_cqs and self.has(name):
                yield name
            return
        root = self._preemptor.root()
        assert isinstance(root, CohortNode)
        while root.name not in self._pruned_cohorts:
            target = self._next(root)
            if target is not None:
                yield target

    def _next(self, cohort: CohortNode) -> str | None:
        best_cq, best_cq_drs = self._best_child_cq(cohort)
        best_cohort, best_cohort_drs = self._best_child_cohort(cohort)
        if best_cq is None and best_cohort is None:
            self._pruned_cohorts.add(cohort.name)
            return None
        if best_cohort is not None and (
            best_cq_drs is None or best_cohort_drs is None or compare_drs(best_cohort_drs, best_cq_drs) >= 0
        ):
            return self._next(best_cohort)
        return best_cq

    def _sorted_children(self, cohort: CohortNode) -> tuple[list[str], list[str]]:
        """Child CQ and child cohort names in name order (upstream's map order made deterministic)."""
        children = self._children.get(cohort.name)
        if children is None:
            children = self._children[cohort.name] = (sorted(cohort.child_cqs), sorted(cohort.child_cohorts))
        return children

    def _best_child_cq(self, cohort: CohortNode) -> tuple[str | None, DRS | None]:
        best: str | None = None
        best_drs: DRS | None = None
        for name in self._sorted_children(cohort)[0]:
            if name in self._pruned_cqs:
                continue
            node = cohort.child_cqs[name]
            drs = self._shares.drs(node)
            if (not drs.borrowing and node is not self._preemptor) or not self.has(name):
                self._pruned_cqs.add(name)
                continue
            if best is None or best_drs is None:
                best, best_drs = name, drs
                continue
            c = compare_drs(drs, best_drs)
            if c > 0 or (c == 0 and self._first_candidate_before(name, best)):
                best, best_drs = name, drs
        return best, best_drs

    def _best_child_cohort(self, cohort: CohortNode) -> tuple[CohortNode | None, DRS | None]:
        best: CohortNode | None = None
        best_drs: DRS | None = None
        for name in self._sorted_children(cohort)[1]:
            if name in self._pruned_cohorts:
                continue
            child = cohort.child_cohorts[name]
            drs = self._shares.drs(child)
            if not drs.borrowing and not self.is_ancestor_of_preemptor(child):
                self._pruned_cohorts.add(name)
                continue
            # Ties go to the later child, as upstream's ">=".
            if best_drs is None or compare_drs(drs, best_drs) >= 0:
                best, best_drs = child, drs
        return best, best_drs

    def _first_candidate_before(self, a: str, b: str) -> bool:
        ctx = self._ctx
        return compare_candidates(self._by_cq[a][0], self._by_cq[b][0], ctx.cq.name, ctx.now) < 0


# --- almost-LCA shares ------------------------------------------------------------------------------


def _almost_lcas(
    preemptor: QuotaNode, target: QuotaNode, ordering: TargetOrdering
) -> tuple[QuotaNode, QuotaNode]:
    """The children of the lowest common ancestor on the preemptor's and the target's side."""
    lca: CohortNode | None = target.parent
    while lca is not None and not ordering.is_ancestor_of_preemptor(lca):
        lca = lca.parent
    if lca is None:
        raise AssertionError("no common ancestor between preemptor and target ClusterQueues")
    return _child_towards(preemptor, lca), _child_towards(target, lca)


def _child_towards(node: QuotaNode, lca: CohortNode) -> QuotaNode:
    current = node
    while current.parent is not lca:
        assert current.parent is not None
        current = current.parent
    return current


@dataclass(slots=True)
class _Search:
    """State of one fair-sharing search: the context, shares and targets taken so far."""

    ctx: PreemptionContext
    shares: ShareCalculator
    targets: list[Target] = field(default_factory=list)

    def take(self, wl: WorkloadInfo, reason: str) -> bool:
        """Remove ``wl`` and report whether the preemptor now fits."""
        self.ctx.snapshot.remove_workload(wl)
        self.targets.append(Target(wl, reason))
        return self.fits()

    def fits(self) -> bool:
        """``workloadFitsForFairSharing``: the check runs without the preemptor's own usage."""
        ctx = self.ctx
        ctx.snapshot.remove_usage(ctx.cq, ctx.request)
        try:
            return workload_fits(ctx, True)
        finally:
            ctx.snapshot.add_usage(ctx.cq, ctx.request)

    def state_of(self, cq: str) -> ClusterQueueState:
        return self.ctx.snapshot.cache.cluster_queues[cq]

    def compute_shares(self, ordering: TargetOrdering, cq: str) -> tuple[DRS, DRS]:
        """(preemptorNewShare, targetOldShare)."""
        p, t = _almost_lcas(self.ctx.cq.node, self.state_of(cq).node, ordering)
        return self.shares.drs(p), self.shares.drs(t)

    def target_share_after_removal(self, ordering: TargetOrdering, cq: str, wl: WorkloadInfo) -> DRS:
        state = self.state_of(cq)
        snapshot = self.ctx.snapshot
        snapshot.remove_usage(state, wl.usage)
        try:
            _, t = _almost_lcas(self.ctx.cq.node, state.node, ordering)
            return self.shares.drs(t)
        finally:
            snapshot.add_usage(state, wl.usage)


def find_candidates(ctx: PreemptionContext) -> list[WorkloadInfo]:
    """Candidates of ``fairPreemptions``, sorted by ``CandidatesOrdering``."""
    cq = ctx.cq
    frs = ctx.frs
    out: list[WorkloadInfo] = []
    if cq.within_cluster_queue != PREEMPT_NEVER:
        out.extend(_matching(ctx, cq, cq.within_cluster_queue))
    parent = cq.parent
    if parent is not None and cq.reclaim_within_cohort != PREEMPT_NEVER:
        root = parent.root()
        assert isinstance(root, CohortNode)
        for node in root.iter_cluster_queues():
            if node is cq.node or not cq_is_borrowing(node, frs):
                continue
            state = ctx.snapshot.cluster_queue(node.name)
            if state is not None:
                out.extend(_matching(ctx, state, cq.reclaim_within_cohort))
    sort_candidates(out, cq.name, ctx.now, ctx.lq_usage)
    return out


def _matching(ctx: PreemptionContext, state: ClusterQueueState, policy: str) -> Iterator[WorkloadInfo]:
    for wl in state.workloads.values():
        if wl.uses(ctx.frs) and satisfies_preemption_policy(ctx.preemptor, wl, policy):
            yield wl


def fair_targets(
    ctx: PreemptionContext, strategies: list[Strategy], weight_of: WeightOf | None = None
) -> list[Target]:
    """Targets found by fair-sharing preemption, or [] (``fairPreemptions``)."""
    candidates = find_candidates(ctx)
    if not candidates:
        return []
    search = _Search(ctx, ShareCalculator(weight_of or cache_weight_of(ctx.snapshot.cache)))
    snapshot = ctx.snapshot
    fits = False
    try:
        snapshot.add_usage(ctx.cq, ctx.request)
        try:
            fits = _run_strategies(search, candidates, strategies)
        finally:
            snapshot.remove_usage(ctx.cq, ctx.request)
        if fits:
            fill_back(ctx, search.targets, True)
    finally:
        restore(snapshot, search.targets)
    return search.targets if fits else []


def _run_strategies(search: _Search, candidates: list[WorkloadInfo], strategies: list[Strategy]) -> bool:
    fits, retry = _first_strategy(search, candidates, strategies[0])
    if fits or len(strategies) < 2:
        return fits
    return _second_strategy(search, retry)


def _within_nominal(ctx: PreemptionContext) -> bool:
    if not ctx.options.gate("FairSharingPreemptWithinNominal"):
        return False
    node = ctx.cq.node
    return not any(node.is_borrowing(fr) for fr in ctx.frs)


def _first_strategy(
    search: _Search, candidates: list[WorkloadInfo], strategy: Strategy
) -> tuple[bool, list[WorkloadInfo]]:
    """``runFirstFsStrategy``: returns whether the preemptor fits and the candidates to retry."""
    ctx = search.ctx
    ordering = TargetOrdering(ctx, candidates, search.shares)
    within_nominal = _within_nominal(ctx)
    retry: list[WorkloadInfo] = []
    for cq in ordering:
        if cq == ctx.cq.name:
            if search.take(ordering.pop(cq), IN_CLUSTER_QUEUE):
                return True, retry
            continue
        if within_nominal:
            if search.take(ordering.pop(cq), IN_COHORT_RECLAMATION):
                return True, retry
            continue
        preemptor_new, target_old = search.compute_shares(ordering, cq)
        if preemptor_new.zero_weight_borrows() and not target_old.zero_weight_borrows():
            retry.extend(ordering.drain(cq))
            continue
        while ordering.has(cq):
            wl = ordering.pop(cq)
            target_new = search.target_share_after_removal(ordering, cq, wl)
            if not strategy(preemptor_new, target_old, target_new):
                retry.append(wl)
                continue
            if search.take(wl, IN_COHORT_FAIR_SHARING):
                return True, retry
            break
    return False, retry


def _second_strategy(search: _Search, retry: list[WorkloadInfo]) -> bool:
    """``runSecondFsStrategy``: at most one retry candidate per CQ, under ``LessThanInitialShare``."""
    ordering = TargetOrdering(search.ctx, retry, search.shares)
    for cq in ordering:
        preemptor_new, target_old = search.compute_shares(ordering, cq)
        wl = ordering.pop(cq)
        if less_than_initial_share(preemptor_new, target_old, target_old) and search.take(
            wl, IN_COHORT_FAIR_SHARING
        ):
            return True
        ordering.drop(cq)
    return False


__all__ = [
    "STRATEGIES",
    "ShareCalculator",
    "Strategy",
    "TargetOrdering",
    "fair_targets",
    "find_candidates",
    "less_than_initial_share",
    "less_than_or_equal_to_final_share",
    "parse_strategies",
]
