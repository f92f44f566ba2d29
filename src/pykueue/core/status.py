"""ClusterQueue, LocalQueue and Cohort status as the controllers compute them (``pkg/controller/core``)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from pykueue.api.kueue import (
    STOP_NONE,
    ClusterQueueStatus,
    CohortStatus,
    FairSharingStatus,
    FlavorUsage,
    LocalQueue,
    LocalQueueFlavorUsage,
    LocalQueueResourceUsage,
    LocalQueueStatus,
    ResourceUsage,
)
from pykueue.api.meta import Condition, set_status_condition
from pykueue.api.quantity import resource_quantity_string, sat_add
from pykueue.core.cache.cache import Cache, ClusterQueueState
from pykueue.core.quota.drs import WeightOf, dominant_resource_share, node_weight, weighted_share_status
from pykueue.core.quota.tree import CohortNode, FlavorResource, QuotaNode
from pykueue.core.workload.info import WorkloadInfo, is_admitted


def _sum_usage(workloads: Iterable[WorkloadInfo]) -> dict[FlavorResource, int]:
    out: dict[FlavorResource, int] = {}
    for wl in workloads:
        for fr, v in wl.usage.items():
            out[fr] = sat_add(out.get(fr, 0), v)
    return out


def _flavor_usage(
    cq: ClusterQueueState, usage: dict[FlavorResource, int], with_borrowed: bool
) -> list[FlavorUsage]:
    out: list[FlavorUsage] = []
    for rg in cq.resource_groups:
        for flavor in rg.flavors:
            resources: list[ResourceUsage] = []
            for res in sorted(rg.covered):
                total = usage.get((flavor, res), 0)
                # Upstream's ``Cache.getUsage`` leaves ``Borrowed`` a zero Quantity unless the
                # ClusterQueue borrows, and Go's encoding/json writes a struct field despite
                # ``omitempty``: the status always shows ``borrowed: "0"`` then, cohort or not.
                borrowed: str | None = "0" if with_borrowed else None
                if with_borrowed and cq.cohort_name:
                    q = cq.node.quotas.get((flavor, res))
                    over = total - (q.nominal if q else 0)
                    if over > 0:
                        borrowed = resource_quantity_string(res, over)
                resources.append(
                    ResourceUsage(name=res, total=resource_quantity_string(res, total), borrowed=borrowed)
                )
            out.append(FlavorUsage(name=flavor, resources=resources))
    return out


def active_condition(cq: ClusterQueueState, generation: int) -> Condition:
    """The ClusterQueue ``Active`` condition (``clusterQueue.inactiveReason``)."""
    active = cq.is_active()
    return Condition(
        type="Active",
        status="True" if active else "False",
        reason=cq.inactive_reason,
        message=cq.inactive_message,
        observed_generation=generation,
    )


def cluster_queue_status(
    cq: ClusterQueueState,
    old: ClusterQueueStatus | None,
    pending: int,
    now: datetime,
    fair_sharing: bool,
    weight_of: WeightOf = node_weight,
) -> ClusterQueueStatus:
    """Status of ``cq`` from the cache and the number of pending workloads."""
    reserving = list(cq.workloads.values())
    admitted = [w for w in reserving if is_admitted(w.obj)]
    conditions = list(old.conditions) if old else []
    set_status_condition(conditions, active_condition(cq, cq.obj.metadata.generation), now)
    fs: FairSharingStatus | None = None
    if fair_sharing:
        fs = FairSharingStatus(
            weighted_share=weighted_share_status(dominant_resource_share(cq.node, weight_of=weight_of))
        )
    return ClusterQueueStatus(
        conditions=conditions,
        flavors_reservation=_flavor_usage(cq, _sum_usage(reserving), True),
        flavors_usage=_flavor_usage(cq, _sum_usage(admitted), True),
        pending_workloads=pending,
        reserving_workloads=len(reserving),
        admitted_workloads=len(admitted),
        fair_sharing=fs,
    )


def local_queue_status(
    lq: LocalQueue, cache: Cache, pending: int, now: datetime
) -> LocalQueueStatus:
    """Status of a LocalQueue (``LocalQueueReconciler.UpdateStatusIfChanged``)."""
    key = f"{lq.metadata.namespace}/{lq.metadata.name}"
    cq = cache.cluster_queues.get(lq.spec.cluster_queue)
    conditions = list(lq.status.conditions) if lq.status else []
    gen = lq.metadata.generation
    stopped = (lq.spec.stop_policy or STOP_NONE) != STOP_NONE
    if stopped:
        cond = Condition(type="Active", status="False", reason="Stopped", message="LocalQueue is stopped", observed_generation=gen)
    elif cq is None:
        cond = Condition(
            type="Active",
            status="False",
            reason="ClusterQueueDoesNotExist",
            message="Can't submit new workloads to clusterQueue",
            observed_generation=gen,
        )
    elif cq.is_active():
        cond = Condition(
            type="Active",
            status="True",
            reason="Ready",
            message="Can submit new workloads to localQueue",
            observed_generation=gen,
        )
    else:
        cond = Condition(
            type="Active",
            status="False",
            reason="ClusterQueueIsInactive",
            message="Can't submit new workloads to clusterQueue",
            observed_generation=gen,
        )
    set_status_condition(conditions, cond, now)
    # ``status.fairSharing`` (Admission Fair Sharing's consumed usage) is written by the AFS
    # branch of the reconcile (``KueueCore.reconcile_local_queue_usage``) and kept here.
    fair_sharing = lq.status.fair_sharing if lq.status else None
    if cq is None:
        return LocalQueueStatus(conditions=conditions, fair_sharing=fair_sharing)
    mine = [w for w in cq.workloads.values() if w.local_queue == key]
    admitted = [w for w in mine if is_admitted(w.obj)]

    def lq_usage(usage: dict[FlavorResource, int]) -> list[LocalQueueFlavorUsage]:
        return [
            LocalQueueFlavorUsage(
                name=fu.name, resources=[LocalQueueResourceUsage(name=r.name, total=r.total) for r in fu.resources]
            )
            for fu in _flavor_usage(cq, usage, False)
        ]

    return LocalQueueStatus(
        conditions=conditions,
        pending_workloads=0 if stopped else pending,
        reserving_workloads=len(mine),
        admitted_workloads=len(admitted),
        flavors_reservation=lq_usage(_sum_usage(mine)),
        flavors_usage=lq_usage(_sum_usage(admitted)),
        fair_sharing=fair_sharing,
    )


def cohort_status(node: CohortNode | QuotaNode, fair_sharing: bool) -> CohortStatus | None:
    """Cohort status: only the fair-sharing share, and only when fair sharing is on
    (``CohortReconciler.Reconcile``)."""
    if not fair_sharing:
        return None
    return CohortStatus(fair_sharing=FairSharingStatus(weighted_share=weighted_share_status(dominant_resource_share(node))))
