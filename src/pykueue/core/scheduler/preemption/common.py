"""Pieces shared by classical and fair-sharing preemption (upstream ``pkg/scheduler/preemption/``).

A search runs on the live snapshot: every candidate it removes is put back before it returns, and
``fill_back``/``restore`` keep the removals and re-additions exactly paired.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pykueue.api.kueue import (
    JOB_UID_LABEL,
    PREEMPT_ANY,
    PREEMPT_LOWER_OR_NEWER_EQUAL_PRIORITY,
    PREEMPT_LOWER_PRIORITY,
)
from pykueue.api.meta import find_condition
from pykueue.core.cache.cache import ClusterQueueState
from pykueue.core.cache.snapshot import Snapshot
from pykueue.core.options import SchedulerOptions
from pykueue.core.quota.tree import FlavorResource, QuotaNode, available
from pykueue.core.workload.info import QUOTA_RESERVED, WorkloadInfo, timestamp

# Preempted-condition reasons (upstream ``apis/kueue/v1beta2/workload_types.go``).
IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"


HUMAN_READABLE_REASONS: dict[str, str] = {
    IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    IN_COHORT_RECLAMATION: "reclamation within the cohort",
    IN_COHORT_FAIR_SHARING: "Fair Sharing within the cohort",
    IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
    "": "UNKNOWN",
}

UNKNOWN = "UNKNOWN"

LocalQueueUsage = Callable[[WorkloadInfo], float | None]
"""Admission-fair-sharing hook: the LocalQueue usage of a candidate's queue, None if unknown."""


@dataclass(slots=True)
class Target:
    """A workload to evict so that the preemptor fits, with its Preempted-condition reason.

    The paths are filled by the preemptor for the preemption message (``preemptionMessage``).
    """

    workload: WorkloadInfo
    reason: str
    preemptor_path: str = ""
    preemptee_path: str = ""


@dataclass(slots=True)
class PreemptionContext:
    """Inputs of one target search (``Preemptor.GetTargets``)."""

    preemptor: WorkloadInfo
    cq: ClusterQueueState
    snapshot: Snapshot
    frs: frozenset[FlavorResource]
    request: dict[FlavorResource, int]
    now: float
    options: SchedulerOptions
    lq_usage: LocalQueueUsage | None = None


# --- policies (upstream ``common.SatisfiesPreemptionPolicy``) -----------------------------------


def satisfies_preemption_policy(preemptor: WorkloadInfo, candidate: WorkloadInfo, policy: str) -> bool:
    """Whether ``policy`` lets ``preemptor`` preempt ``candidate`` (effective priorities)."""
    p, c = preemptor.priority, candidate.priority
    if policy == PREEMPT_LOWER_PRIORITY:
        return c < p
    if policy == PREEMPT_LOWER_OR_NEWER_EQUAL_PRIORITY:
        return c < p or (c == p and preemptor.order_ts < candidate.order_ts)
    return policy == PREEMPT_ANY


# --- ordering (upstream ``common.CandidatesOrdering``) ------------------------------------------


def reservation_time(wl: WorkloadInfo, now: float) -> float:
    """``QuotaReserved`` transition time, or ``now`` when the workload has no reservation."""
    if wl.quota_reserved_ts:
        # Set from a true QuotaReserved condition when the info was built; saves a condition scan.
        return wl.quota_reserved_ts
    cond = find_condition(wl.obj.status.conditions, QUOTA_RESERVED)
    if cond is None or cond.status != "True":
        return now
    return timestamp(cond.last_transition_time)


def candidates_ordering_key(
    wl: WorkloadInfo, preemptor_cq: str, now: float
) -> tuple[bool, bool, int, float, str, str]:
    """Sort key of ``CandidatesOrdering`` without the AFS rule.

    The workload key after the UID only breaks ties upstream leaves to chance (equal UIDs).
    """
    return (
        not wl.is_evicted(),
        wl.cluster_queue == preemptor_cq,
        wl.priority,
        -reservation_time(wl, now),
        wl.uid,
        wl.key,
    )


def compare_candidates(
    a: WorkloadInfo,
    b: WorkloadInfo,
    preemptor_cq: str,
    now: float,
    lq_usage: LocalQueueUsage | None = None,
) -> int:
    """``CandidatesOrdering`` as a comparator: negative when ``a`` is preempted first."""
    ka = candidates_ordering_key(a, preemptor_cq, now)
    kb = candidates_ordering_key(b, preemptor_cq, now)
    if ka[:2] != kb[:2]:
        return -1 if ka[:2] < kb[:2] else 1
    # ``resourceUsagePreemptionEnabled`` compares the queue names only (not the namespaces).
    if lq_usage is not None and a.cluster_queue == b.cluster_queue and a.obj.spec.queue_name != b.obj.spec.queue_name:
        ua, ub = lq_usage(a), lq_usage(b)
        if ua is not None and ub is not None and ua != ub:
            return -1 if ua > ub else 1
    if ka == kb:
        return 0
    return -1 if ka < kb else 1


def sort_candidates(
    candidates: list[WorkloadInfo],
    preemptor_cq: str,
    now: float,
    lq_usage: LocalQueueUsage | None = None,
) -> None:
    """Sort ``candidates`` in place by ``CandidatesOrdering``."""
    if lq_usage is None:
        candidates.sort(key=lambda wl: candidates_ordering_key(wl, preemptor_cq, now))
        return
    candidates.sort(
        key=functools.cmp_to_key(lambda a, b: compare_candidates(a, b, preemptor_cq, now, lq_usage))
    )


# --- quota checks -------------------------------------------------------------------------------


def cq_is_borrowing(node: QuotaNode, frs: Iterable[FlavorResource]) -> bool:
    """A CQ with a cohort that uses more than its nominal quota in one of ``frs``."""
    if node.parent is None:
        return False
    return any(node.is_borrowing(fr) for fr in frs)


def under_nominal(cq: ClusterQueueState, frs: Iterable[FlavorResource]) -> bool:
    """Usage strictly below nominal for every FR in ``frs``
    (``queueUnderNominalInResourcesNeedingPreemption``)."""
    node = cq.node
    for fr in frs:
        q = node.quotas.get(fr)
        if (q.nominal if q else 0) <= node.usage.get(fr, 0):
            return False
    return True


def workload_fits(ctx: PreemptionContext, allow_borrowing: bool) -> bool:
    """Whether the request fits the preemptor's CQ now (``workloadFits``)."""
    node = ctx.cq.node
    for fr, v in ctx.request.items():
        if not allow_borrowing and node.borrowing_with(fr, v):
            return False
        if v > available(node, fr):
            return False
    return True


def fill_back(ctx: PreemptionContext, targets: list[Target], allow_borrowing: bool) -> list[Target]:
    """Minimise the removed set (``fillBackWorkloads``); the snapshot keeps the returned targets removed."""
    snapshot = ctx.snapshot
    for i in range(len(targets) - 2, -1, -1):
        snapshot.add_workload(targets[i].workload)
        if workload_fits(ctx, allow_borrowing):
            targets[i] = targets[-1]
            targets.pop()
        else:
            snapshot.remove_workload(targets[i].workload)
    return targets


def restore(snapshot: Snapshot, targets: Iterable[Target]) -> None:
    """Put back every removed target."""
    for t in targets:
        snapshot.add_workload(t.workload)


# --- messages (upstream ``preemptionMessage``) ----------------------------------------------------


def cq_path(node: QuotaNode) -> str:
    """``/root/.../cq``: names from the root cohort down to the CQ."""
    return "/" + "/".join(n.name for n in node.path_from_root())


def preemption_message(preemptor: WorkloadInfo, reason: str, preemptor_path: str, preemptee_path: str) -> str:
    """The Evicted/Preempted condition message (exact upstream text)."""
    uid = preemptor.uid or UNKNOWN
    job_uid = preemptor.obj.metadata.labels.get(JOB_UID_LABEL, "") or UNKNOWN
    human = HUMAN_READABLE_REASONS.get(reason, "")
    return (
        f"Preempted to accommodate a workload (UID: {uid}, JobUID: {job_uid}) due to {human}; "
        f"preemptor path: {preemptor_path or UNKNOWN}; preemptee path: {preemptee_path or UNKNOWN}"
    )


def priority_info(wl: WorkloadInfo) -> str:
    """``<effective> (base: <base>, boost: <boost>)`` as the preemption events print it."""
    return f"{wl.priority} (base: {wl.base_priority}, boost: {wl.priority - wl.base_priority})"


__all__ = [
    "HUMAN_READABLE_REASONS",
    "IN_CLUSTER_QUEUE",
    "IN_COHORT_FAIR_SHARING",
    "IN_COHORT_RECLAIM_WHILE_BORROWING",
    "IN_COHORT_RECLAMATION",
    "LocalQueueUsage",
    "PreemptionContext",
    "Target",
    "candidates_ordering_key",
    "compare_candidates",
    "cq_is_borrowing",
    "cq_path",
    "fill_back",
    "preemption_message",
    "priority_info",
    "reservation_time",
    "restore",
    "satisfies_preemption_policy",
    "sort_candidates",
    "under_nominal",
    "workload_fits",
]
