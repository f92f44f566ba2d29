"""Classical (priority and hierarchy based) preemption (upstream ``Preemptor.classicalPreemptions``).

Candidates come from the preemptor's CQ (``withinClusterQueue``) and from CQs that borrow in a
needed FR in the subtrees met while walking from the preemptor's CQ to the root
(``reclaimWithinCohort``). Only borrowing subtrees are entered, so the search never scans the
whole cluster.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum

from pykueue.api.kueue import PREEMPT_NEVER
from pykueue.core.cache.cache import ClusterQueueState
from pykueue.core.quota.tree import CohortNode, FlavorResource, quantities_fit_in_quota
from pykueue.core.scheduler.preemption.common import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_RECLAIM_WHILE_BORROWING,
    IN_COHORT_RECLAMATION,
    PreemptionContext,
    Target,
    candidates_ordering_key,
    fill_back,
    restore,
    satisfies_preemption_policy,
    sort_candidates,
    under_nominal,
    workload_fits,
)
from pykueue.core.workload.info import WorkloadInfo


class Variant(Enum):
    """How a candidate may be preempted (upstream ``preemptionVariant``)."""

    WITHIN_CQ = "WithinCQ"
    HIERARCHICAL_RECLAIM = "HierarchicalReclaim"
    RECLAIM_WITHOUT_BORROWING = "ReclaimWithoutBorrowing"
    RECLAIM_WHILE_BORROWING = "ReclaimWhileBorrowing"

    @property
    def reason(self) -> str:
        """The Preempted-condition reason of a target of this variant."""
        return _REASONS[self]


_REASONS = {
    Variant.WITHIN_CQ: IN_CLUSTER_QUEUE,
    Variant.HIERARCHICAL_RECLAIM: IN_COHORT_RECLAMATION,
    Variant.RECLAIM_WITHOUT_BORROWING: IN_COHORT_RECLAMATION,
    Variant.RECLAIM_WHILE_BORROWING: IN_COHORT_RECLAIM_WHILE_BORROWING,
}


@dataclass(slots=True)
class Candidate:
    """A preemption candidate with the cohort where its quota meets the preemptor's (its LCA)."""

    workload: WorkloadInfo
    lca: CohortNode | None
    variant: Variant


@dataclass(slots=True)
class CandidateList:
    """The ordered candidate sequence and the facts the attempt plan needs (``NewCandidateIterator``)."""

    candidates: list[Candidate]
    no_other_queues: bool
    no_hierarchical: bool

    def valid(self, ctx: PreemptionContext, allow_borrowing: bool) -> Iterator[Candidate]:
        """Candidates in order, each checked against the snapshot as it is when reached
        (``candidateIterator``)."""
        for c in self.candidates:
            if _is_valid(ctx, c, allow_borrowing):
                yield c


def borrowing_within_cohort_forbidden(cq: ClusterQueueState) -> bool:
    """``borrowWithinCohort`` is unset or ``Never``."""
    return cq.borrow_within_cohort == PREEMPT_NEVER


def collect_candidates(ctx: PreemptionContext) -> CandidateList:
    """Build the three candidate lists and concatenate them evicted-first (``NewCandidateIterator``)."""
    same = _same_queue_candidates(ctx)
    hierarchy, priority = _other_queue_candidates(ctx)
    evicted: list[Candidate] = []
    rest: list[Candidate] = []
    for lst in (hierarchy, priority, same):
        if not lst:
            continue
        for is_evicted, c in _sorted(ctx, lst):
            (evicted if is_evicted else rest).append(c)
    return CandidateList(evicted + rest, not hierarchy and not priority, not hierarchy)


def no_classical_candidate_source(cq: ClusterQueueState) -> bool:
    """Neither ``withinClusterQueue`` nor ``reclaimWithinCohort`` can yield a candidate for ``cq``."""
    return cq.within_cluster_queue == PREEMPT_NEVER and (
        cq.parent is None or cq.reclaim_within_cohort == PREEMPT_NEVER
    )


def classical_targets(ctx: PreemptionContext) -> list[Target]:
    """Targets whose eviction makes the preemptor fit, or [] (``classicalPreemptions``)."""
    if no_classical_candidate_source(ctx.cq):
        return []  # no candidate source at all (both lists below would be empty)
    cands = collect_candidates(ctx)
    if not cands.candidates:
        return []
    for allow_borrowing in _attempt_plan(ctx, cands):
        targets = _attempt(ctx, cands, allow_borrowing)
        if targets:
            return targets
    return []


def _attempt_plan(ctx: PreemptionContext, cands: CandidateList) -> list[bool]:
    forbidden = borrowing_within_cohort_forbidden(ctx.cq)
    if cands.no_other_queues or (forbidden and not under_nominal(ctx.cq, ctx.frs)):
        return [True]
    if forbidden and cands.no_hierarchical:
        return [False, True]
    return [True, False]


def _attempt(ctx: PreemptionContext, cands: CandidateList, allow_borrowing: bool) -> list[Target]:
    snapshot = ctx.snapshot
    targets: list[Target] = []
    fits = False
    try:
        for c in cands.valid(ctx, allow_borrowing):
            snapshot.remove_workload(c.workload)
            targets.append(Target(c.workload, c.variant.reason))
            if workload_fits(ctx, allow_borrowing):
                fits = True
                fill_back(ctx, targets, allow_borrowing)
                break
    finally:
        restore(snapshot, targets)
    return targets if fits else []


def _is_valid(ctx: PreemptionContext, c: Candidate, allow_borrowing: bool) -> bool:
    wl = c.workload
    if wl.cluster_queue == ctx.cq.name:
        return True
    if allow_borrowing and c.variant is Variant.RECLAIM_WITHOUT_BORROWING:
        return False
    node = ctx.snapshot.cache.cluster_queues[wl.cluster_queue].node
    if node.is_within_nominal(ctx.frs):
        return False
    ancestor = node.parent
    while ancestor is not None and ancestor is not c.lca:
        if ancestor.is_within_nominal(ctx.frs):
            return False
        ancestor = ancestor.parent
    return True


def _sorted(ctx: PreemptionContext, candidates: list[Candidate]) -> list[tuple[bool, Candidate]]:
    """Candidates in ``CandidatesOrdering`` order, each with whether it is already evicted."""
    if ctx.lq_usage is None:
        keyed = [
            (candidates_ordering_key(c.workload, ctx.cq.name, ctx.now), i) for i, c in enumerate(candidates)
        ]
        keyed.sort()
        return [(not key[0], candidates[i]) for key, i in keyed]
    workloads = [c.workload for c in candidates]
    by_key = {c.workload.key: c for c in candidates}
    sort_candidates(workloads, ctx.cq.name, ctx.now, ctx.lq_usage)
    return [(wl.is_evicted(), by_key[wl.key]) for wl in workloads]


def _same_queue_candidates(ctx: PreemptionContext) -> list[Candidate]:
    policy = ctx.cq.within_cluster_queue
    if policy == PREEMPT_NEVER:
        return []
    return [
        Candidate(wl, None, Variant.WITHIN_CQ)
        for wl in ctx.cq.workloads.values()
        if wl.uses(ctx.frs) and satisfies_preemption_policy(ctx.preemptor, wl, policy)
    ]


def _other_queue_candidates(ctx: PreemptionContext) -> tuple[list[Candidate], list[Candidate]]:
    """Hierarchy and priority candidates from the borrowing subtrees along the path to the root."""
    hierarchy: list[Candidate] = []
    priority: list[Candidate] = []
    cq = ctx.cq
    if cq.parent is None or cq.reclaim_within_cohort == PREEMPT_NEVER:
        return hierarchy, priority
    advantage, remaining = quantities_fit_in_quota(cq.node, ctx.request)
    previous: CohortNode | None = None
    ancestor: CohortNode | None = cq.parent
    while ancestor is not None:
        out = hierarchy if advantage else priority
        _collect_in_subtree(ctx, ancestor, ancestor, previous, advantage, out)
        fits, remaining = quantities_fit_in_quota(ancestor, remaining)
        advantage = advantage or fits
        previous = ancestor
        ancestor = ancestor.parent
    return hierarchy, priority


def _collect_in_subtree(
    ctx: PreemptionContext,
    cohort: CohortNode,
    lca: CohortNode,
    skip: CohortNode | None,
    advantage: bool,
    out: list[Candidate],
) -> None:
    frs = ctx.frs
    for name in sorted(cohort.child_cohorts):
        child = cohort.child_cohorts[name]
        if child is skip or child.is_within_nominal(frs):
            continue
        _collect_in_subtree(ctx, child, lca, skip, advantage, out)
    for name in sorted(cohort.child_cqs):
        node = cohort.child_cqs[name]
        if node is ctx.cq.node or node.is_within_nominal(frs):
            continue
        state = ctx.snapshot.cluster_queue(name)
        if state is not None:
            _collect_from_cq(ctx, state, lca, advantage, out)


def _collect_from_cq(
    ctx: PreemptionContext, state: ClusterQueueState, lca: CohortNode, advantage: bool, out: list[Candidate]
) -> None:
    policy = ctx.cq.reclaim_within_cohort
    frs: frozenset[FlavorResource] = ctx.frs
    for wl in state.workloads.values():
        if wl.uses(frs) and satisfies_preemption_policy(ctx.preemptor, wl, policy):
            out.append(Candidate(wl, lca, _classify(ctx, wl, advantage)))


def _classify(ctx: PreemptionContext, wl: WorkloadInfo, advantage: bool) -> Variant:
    """Variant of an other-queue candidate (``classifyPreemptionVariant``)."""
    if advantage:
        return Variant.HIERARCHICAL_RECLAIM
    cq = ctx.cq
    if borrowing_within_cohort_forbidden(cq):
        return Variant.RECLAIM_WITHOUT_BORROWING
    threshold = cq.max_priority_threshold
    if wl.priority >= ctx.preemptor.priority or (threshold is not None and wl.priority > threshold):
        return Variant.RECLAIM_WITHOUT_BORROWING
    return Variant.RECLAIM_WHILE_BORROWING


__all__ = [
    "Candidate",
    "CandidateList",
    "Variant",
    "borrowing_within_cohort_forbidden",
    "classical_targets",
    "collect_candidates",
    "no_classical_candidate_source",
]
