"""What the scheduler knows about one Workload (upstream ``pkg/workload/workload.go`` ``Info``).

``WorkloadInfo`` is built once per workload version: per-pod-set integer requests, effective
priority, queue-order timestamp and scheduling hash are computed here so the hot paths (heaps,
entry ordering, preemption) only compare plain numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec

from pykueue.api import podspec
from pykueue.api.kueue import (
    ADMISSION_GATED_BY_ANNOTATION,
    CHECK_REJECTED,
    CHECK_RETRY,
    PRIORITY_BOOST_ANNOTATION,
    WORKLOAD_ALLOWED_RESOURCE_FLAVOR_ANNOTATION,
    Workload,
)
from pykueue.api.meta import EPOCH, Condition
from pykueue.api.quantity import sat_add, sat_mul
from pykueue.api.strconv import INT32, parse_int
from pykueue.core.options import SchedulerOptions
from pykueue.core.quota.tree import FlavorResource
from pykueue.core.workload.admissibility import spec_pod_requests

# Condition types (upstream ``apis/kueue/v1beta2/workload_types.go``).
QUOTA_RESERVED = "QuotaReserved"
ADMITTED = "Admitted"
EVICTED = "Evicted"
PREEMPTED = "Preempted"
REQUEUED = "Requeued"
PODS_READY = "PodsReady"
FINISHED = "Finished"
DEACTIVATION_TARGET = "DeactivationTarget"
BLOCKED_ON_PREEMPTION_GATES = "BlockedOnPreemptionGates"
WAITING_FOR_REPLACEMENT_PODS = "WaitingForReplacementPods"


def timestamp(value: datetime | None) -> float:
    """Seconds since the epoch (0 for an unset time)."""
    return (value or EPOCH).timestamp()


def workload_key(wl: Workload) -> str:
    return f"{wl.metadata.namespace}/{wl.metadata.name}"


def _cond(wl: Workload, ctype: str) -> Condition | None:
    # ``find_condition`` inlined: these predicates run about fifteen times per scheduling decision.
    for c in wl.status.conditions:
        if c.type == ctype:
            return c
    return None


def _is_true(wl: Workload, ctype: str) -> bool:
    for c in wl.status.conditions:  # the first condition of the type, as ``find_condition``
        if c.type == ctype:
            return c.status == "True"
    return False


def has_quota_reservation(wl: Workload) -> bool:
    return _is_true(wl, QUOTA_RESERVED)


def is_admitted(wl: Workload) -> bool:
    return _is_true(wl, ADMITTED)


def is_finished(wl: Workload) -> bool:
    return _is_true(wl, FINISHED)


def is_evicted(wl: Workload) -> bool:
    return _is_true(wl, EVICTED)


def is_active(wl: Workload) -> bool:
    return wl.spec.active is None or wl.spec.active


def is_on_hold(wl: Workload) -> bool:
    c = _cond(wl, QUOTA_RESERVED)
    return c is not None and c.status == "False" and c.reason == "OnHold"


def has_active_quota_reservation(wl: Workload) -> bool:
    """Counts toward ClusterQueue usage: reserved, not finished, active."""
    return has_quota_reservation(wl) and not is_finished(wl) and is_active(wl)


def is_admissible_to_queues(wl: Workload, options: SchedulerOptions) -> bool:
    """May sit in a queue (``workload.IsAdmissible``)."""
    if options.gate_admission_gated_by and wl.metadata.annotations.get(ADMISSION_GATED_BY_ANNOTATION):
        return False
    if not is_active(wl):
        return False
    # Not finished, not reserved, not on hold, not waiting for replacement pods, in one pass over the
    # conditions (asked for every observed change of a pending workload); as each predicate, only the
    # first condition of a type counts.
    seen: set[str] = set()
    for c in wl.status.conditions:
        ctype = c.type
        if ctype in _QUEUE_BLOCKING and ctype not in seen:
            seen.add(ctype)
            if c.status == "True" or (ctype == QUOTA_RESERVED and c.status == "False" and c.reason == "OnHold"):
                return False
    return True


_QUEUE_BLOCKING = frozenset((FINISHED, QUOTA_RESERVED, WAITING_FOR_REPLACEMENT_PODS))


def has_failed_checks(wl: Workload) -> bool:
    checks = wl.status.admission_checks
    return bool(checks) and any(c.state in (CHECK_RETRY, CHECK_REJECTED) for c in checks)


def priority_parts(wl: Workload, options: SchedulerOptions) -> tuple[int, int]:
    """(base priority, boost) — ``priority.EffectivePriority``."""
    base = wl.spec.priority or 0
    boost = 0
    if options.gate("PriorityBoost"):
        raw = wl.metadata.annotations.get(PRIORITY_BOOST_ANNOTATION)
        if raw:
            # ``priority.PriorityBoost``: ``strconv.ParseInt(value, 10, 32)``; on error
            # ``EffectivePriority`` falls back to the base priority (Python's ``int`` would accept
            # spaces, underscores and non-ASCII digits).
            boost = parse_int(raw, INT32, "ParseInt")[0] or 0
    return base, boost


def queue_order_timestamp(wl: Workload, options: SchedulerOptions) -> float:
    """``Ordering.GetQueueOrderTimestamp``: the time FIFO ordering uses."""
    ev = _cond(wl, EVICTED)
    if ev is not None and ev.status == "True":
        if options.requeue_timestamp_eviction and ev.reason == "PodsReadyTimeout":
            return timestamp(ev.last_transition_time)
        if ev.reason == "AdmissionCheck":
            return timestamp(ev.last_transition_time)
    if not options.gate("PrioritySortingWithinCohort"):
        pc = _cond(wl, PREEMPTED)
        if pc is not None and pc.status == "True" and pc.reason == "InCohortReclaimWhileBorrowing":
            return timestamp(pc.last_transition_time) + 0.001
    return timestamp(wl.metadata.creation_timestamp)


@dataclass(slots=True)
class PodSetInfo:
    """Requests of one pod set at its effective count."""

    name: str
    count: int
    min_count: int | None
    per_pod: dict[str, int]
    total: dict[str, int]
    spec: dict[str, object]


class LastAssignment(msgspec.Struct, gc=False):
    """Remembered flavor-scan progress between attempts (``AssignmentClusterQueueState``).

    A msgspec Struct built in C (one per head), untracked by the cyclic GC (numbers, a string, a
    list of dicts of them)."""

    last_tried_flavor_idx: list[dict[str, int]]
    cluster_queue_generation: int
    scheduling_cycle: int
    scheduling_hash: str

    def pending_flavors(self) -> bool:
        for per_ps in self.last_tried_flavor_idx:  # loops: no generator per requeue
            for idx in per_ps.values():
                if idx != -1:
                    return True
        return False


class WorkloadInfo(msgspec.Struct):
    """The scheduler's view of a Workload (a msgspec Struct, built in C: one per observed change of
    a pending or reserved Workload)."""

    obj: Workload
    key: str
    uid: str
    priority: int
    base_priority: int
    boost: int
    order_ts: float
    creation_ts: float
    pod_sets: list[PodSetInfo]
    scheduling_hash: str
    cluster_queue: str = ""
    local_queue: str = ""
    usage: dict[FlavorResource, int] = msgspec.field(default_factory=dict)
    quota_reserved_ts: float = 0.0
    last_assignment: LastAssignment | None = None
    is_preemptor: bool = False
    last_evaluated_generation: int = 0
    adjusted_specs: list[dict[str, Any]] | None = None
    """The pod templates after ``workload.AdjustResources``' RuntimeClass and LimitRange steps
    (upstream's queued ``Info.Obj`` is that adjusted copy), when they differ from the spec's."""

    @property
    def namespace(self) -> str:
        return self.obj.metadata.namespace

    @property
    def name(self) -> str:
        return self.obj.metadata.name

    def is_evicted(self) -> bool:
        return is_evicted(self.obj)

    def uses(self, frs: set[FlavorResource] | frozenset[FlavorResource] | dict[FlavorResource, int]) -> bool:
        return any(fr in frs for fr in self.usage)

    def is_partially_admissible(self) -> bool:
        return any(ps.min_count is not None and ps.count > ps.min_count for ps in self.pod_sets)


def _reclaimable(wl: Workload, options: SchedulerOptions) -> dict[str, int]:
    if not options.gate("ReclaimablePods"):
        return {}
    return {rp.name: rp.count for rp in wl.status.reclaimable_pods}


def build_pod_sets(
    wl: Workload, options: SchedulerOptions, adjusted_specs: list[dict[str, Any]] | None = None
) -> list[PodSetInfo]:
    """Per-pod-set requests of a pending workload (``totalRequestsFromPodSets``), from the
    ``adjusted_specs`` pod templates when given (``workload.AdjustResources``)."""
    reclaim = _reclaimable(wl, options)
    out: list[PodSetInfo] = []
    # Without exclusions, transformations and adjustments the requests are the spec's own, which
    # the workload controller's admissibility check reads too: computed once per spec (read only).
    own = (
        spec_pod_requests(wl.spec)
        if not options.exclude_resource_prefixes and not options.transformations and adjusted_specs is None
        else None
    )
    for i, ps in enumerate(wl.spec.pod_sets):
        spec = ps.template.spec if adjusted_specs is None else adjusted_specs[i]
        per_pod = (
            own[i][1]
            if own is not None
            else podspec.per_pod_integer_requests(
                spec,
                exclude_prefixes=options.exclude_resource_prefixes,
                transformations=options.transformations,
            )
        )
        count = ps.count - min(reclaim.get(ps.name, 0), ps.count)
        total = {r: sat_mul(v, count) for r, v in per_pod.items()}
        out.append(PodSetInfo(ps.name, count, ps.min_count, per_pod, total, spec))
    return out


def admitted_usage(wl: Workload, options: SchedulerOptions) -> dict[FlavorResource, int]:
    """Usage of a workload holding quota, rebuilt from ``status.admission``
    (``totalRequestsFromAdmission``)."""
    admission = wl.status.admission
    if admission is None:
        return {}
    reclaim = _reclaimable(wl, options)
    spec_counts = {ps.name: ps.count for ps in wl.spec.pod_sets}
    usage: dict[FlavorResource, int] = {}
    for psa in admission.pod_set_assignments:
        per_resource = podspec.admitted_usage(
            psa, spec_counts.get(psa.name, 1), reclaim.get(psa.name, 0)
        )
        for resource, value in per_resource.items():
            flavor = psa.flavors.get(resource)
            if flavor is None:
                continue
            fr = (flavor, resource)
            usage[fr] = sat_add(usage.get(fr, 0), value)
    return usage


def allowed_flavors_annotation(wl: Workload, options: SchedulerOptions) -> str | None:
    """The ``workload-allowed-resource-flavors`` annotation under ``ConcurrentAdmission`` (None:
    the gate is off or the annotation absent)."""
    if not options.gate_concurrent_admission:
        return None
    return wl.metadata.annotations.get(WORKLOAD_ALLOWED_RESOURCE_FLAVOR_ANNOTATION)


def _hash(wl: Workload, priority: int, pod_sets: list[PodSetInfo], options: SchedulerOptions) -> str:
    if not options.gate_equivalence_hashing:
        return "unknown"
    spec_by_name = {ps.name: ps for ps in wl.spec.pod_sets}
    # Upstream ``computeSchedulingHash`` (pkg/workload/workload.go): under ``ConcurrentAdmission``
    # the allowed-flavors annotation is part of the shape, as flavor assignment reads it.
    return podspec.scheduling_hash(
        priority,
        [
            (
                ps.name,
                podspec.scheduling_shape(ps.spec),
                ps.count,
                ps.total,
                ps.min_count,
                spec_by_name[ps.name].topology_request,
            )
            for ps in pod_sets
        ],
        allowed_flavors_annotation(wl, options) if options.gate_concurrent_admission else None,
    )


def new_workload_info(
    wl: Workload,
    options: SchedulerOptions,
    previous: WorkloadInfo | None = None,
    adjusted_specs: list[dict[str, Any]] | None = None,
) -> WorkloadInfo:
    """Build the scheduler's view of ``wl`` (pending or holding quota).

    ``previous`` is an earlier view of the same workload: when the spec object, the reclaimable
    pods and the adjusted pod templates are unchanged (a status-only update), its pod-set requests
    and hash are reused instead of recomputed from the pod templates. ``adjusted_specs``: the pod
    templates after ``workload.AdjustResources`` when they differ from the spec's (the queue
    manager's view of a pending Workload; the cache's views are not adjusted, as upstream's).
    """
    if previous is not None and previous.obj.metadata is wl.metadata and previous.obj.spec is wl.spec:
        # A status-only update (``copy_for_status`` shares both): what metadata and spec give is
        # unchanged, on the premise the spec reuse below already rests on (never mutated in place).
        base, boost = previous.base_priority, previous.boost
        key, creation_ts, local_queue = previous.key, previous.creation_ts, previous.local_queue
    else:
        base, boost = priority_parts(wl, options)
        key = workload_key(wl)
        creation_ts = timestamp(wl.metadata.creation_timestamp)
        local_queue = f"{wl.metadata.namespace}/{wl.spec.queue_name}" if wl.spec.queue_name else ""
    priority = base + boost
    if (
        previous is not None
        and previous.obj.spec is wl.spec
        and previous.obj.status.reclaimable_pods == wl.status.reclaimable_pods
        and previous.adjusted_specs == adjusted_specs
    ):
        pod_sets = previous.pod_sets
        scheduling_hash = (
            previous.scheduling_hash
            if previous.priority == priority
            and (
                not options.gate_concurrent_admission
                or allowed_flavors_annotation(previous.obj, options) == allowed_flavors_annotation(wl, options)
            )
            else _hash(wl, priority, pod_sets, options)
        )
    else:
        pod_sets = build_pod_sets(wl, options, adjusted_specs)
        scheduling_hash = _hash(wl, priority, pod_sets, options)
    info = WorkloadInfo(
        obj=wl,
        key=key,
        uid=wl.metadata.uid,
        priority=priority,
        base_priority=base,
        boost=boost,
        order_ts=queue_order_timestamp(wl, options),
        creation_ts=creation_ts,
        pod_sets=pod_sets,
        scheduling_hash=scheduling_hash,
        local_queue=local_queue,
        adjusted_specs=adjusted_specs,
    )
    if wl.status.admission is not None:
        info.cluster_queue = wl.status.admission.cluster_queue
        info.usage = admitted_usage(wl, options)
        qr = _cond(wl, QUOTA_RESERVED)
        if qr is not None and qr.status == "True":
            info.quota_reserved_ts = timestamp(qr.last_transition_time)
    return info
