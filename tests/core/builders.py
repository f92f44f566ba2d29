"""Compact builders for scheduler test fixtures.

Typed API objects (ResourceFlavor, ClusterQueue, Cohort, Workload) from short Python arguments,
plus a ``Cache``/``Snapshot`` built from them. Quantities are written as in manifests
(``"500m"``, ``"1Gi"``, ``4``). Example::

    cq = cluster_queue("team", flavor_quotas("on-demand", cpu=10), flavor_quotas("spot", cpu=20),
                       cohort="org", fungibility={"when_can_borrow": "TryNextFlavor"})
    wl = workload("a", requests={"cpu": "4"})
    cache, snap = build([flavor("on-demand"), flavor("spot"), cq, wl])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from pykueue.api.feature_gates import DEFAULT_GATES
from pykueue.api.kueue import (
    V1BETA2,
    Admission,
    AdmissionCheck,
    AdmissionCheckSpec,
    AdmissionChecksStrategy,
    AdmissionCheckStatus,
    AdmissionCheckStrategyRule,
    BorrowWithinCohort,
    ClusterQueue,
    ClusterQueuePreemption,
    ClusterQueueSpec,
    Cohort,
    CohortSpec,
    FairSharing,
    FlavorFungibility,
    FlavorQuotas,
    LocalQueue,
    LocalQueueSpec,
    Namespace,
    PodSet,
    PodSetAssignment,
    PodTemplateSpec,
    QuantityValue,
    ResourceFlavor,
    ResourceFlavorSpec,
    ResourceGroup,
    ResourceQuota,
    Taint,
    Toleration,
    Workload,
    WorkloadSpec,
)
from pykueue.api.meta import Condition, LabelSelector, ObjectMeta
from pykueue.api.quantity import resource_quantity_string, resource_value
from pykueue.core.cache.cache import Cache, ClusterQueueState
from pykueue.core.cache.snapshot import Snapshot
from pykueue.core.options import SchedulerOptions
from pykueue.core.quota.tree import FlavorResource, add_usage_map
from pykueue.core.workload.info import QUOTA_RESERVED, WorkloadInfo, new_workload_info
from pykueue.sim.cluster import SimulatedCluster

T0 = datetime(2024, 1, 1, tzinfo=UTC)
"""Default creation time; ``created=T0 + timedelta(seconds=n)`` orders workloads."""


def at(seconds: float) -> datetime:
    """``T0`` plus ``seconds``."""
    return T0 + timedelta(seconds=seconds)


def options(*, gates: Mapping[str, bool] | None = None, **kw: Any) -> SchedulerOptions:
    """``SchedulerOptions`` with gate overrides, e.g. ``options(gates={"FlavorFungibility": False})``."""
    return SchedulerOptions(gates=DEFAULT_GATES.with_overrides(gates or {}), **kw)


# --- ResourceFlavor -----------------------------------------------------------------------------


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> Taint:
    return Taint(key=key, value=value, effect=effect)


def toleration(key: str = "", value: str = "", effect: str = "", operator: str = "Equal") -> Toleration:
    return Toleration(key=key, operator=operator, value=value, effect=effect)


def flavor(
    name: str,
    labels: Mapping[str, str] | None = None,
    *,
    taints: Sequence[Taint] = (),
    tolerations: Sequence[Toleration] = (),
    topology: str = "",
) -> ResourceFlavor:
    """A ResourceFlavor with node labels, node taints and flavor tolerations."""
    return ResourceFlavor(
        metadata=ObjectMeta(name=name),
        spec=ResourceFlavorSpec(
            node_labels=dict(labels or {}),
            node_taints=list(taints),
            tolerations=list(tolerations),
            topology_name=topology,
        ),
    )


# --- quotas ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Q:
    """A resource quota with limits: ``flavor_quotas("f", cpu=Q(4, borrowing_limit=2))``."""

    nominal: QuantityValue
    borrowing_limit: QuantityValue | None = None
    lending_limit: QuantityValue | None = None


QuotaArg = QuantityValue | Q


def flavor_quotas(
    name: str,
    resources: Mapping[str, QuotaArg] | None = None,
    *,
    borrowing_limit: QuantityValue | None = None,
    lending_limit: QuantityValue | None = None,
    **kw: QuotaArg,
) -> FlavorQuotas:
    """Quotas of one flavor, resources in argument order.

    ``borrowing_limit``/``lending_limit`` apply to every resource given as a plain value; use
    ``Q(...)`` per resource otherwise. Names that are not identifiers go in ``resources``
    (``flavor_quotas("a", {"nvidia.com/gpu": 8}, cpu=4)``).
    """
    quotas: list[ResourceQuota] = []
    for res, q in {**(resources or {}), **kw}.items():
        if isinstance(q, Q):
            quotas.append(ResourceQuota(res, q.nominal, q.borrowing_limit, q.lending_limit))
        else:
            quotas.append(ResourceQuota(res, q, borrowing_limit, lending_limit))
    return FlavorQuotas(name=name, resources=quotas)


def resource_group(*flavors: FlavorQuotas, covered: Sequence[str] | None = None) -> ResourceGroup:
    """A resource group; covered resources default to the flavors' resources in first-seen order."""
    if covered is None:
        seen: dict[str, None] = {}
        for fq in flavors:
            for rq in fq.resources:
                seen.setdefault(rq.name, None)
        covered = list(seen)
    return ResourceGroup(covered_resources=list(covered), flavors=list(flavors))


def _groups(args: Sequence[ResourceGroup | FlavorQuotas]) -> list[ResourceGroup]:
    if all(isinstance(a, ResourceGroup) for a in args):
        return [a for a in args if isinstance(a, ResourceGroup)]
    if all(isinstance(a, FlavorQuotas) for a in args):
        return [resource_group(*(a for a in args if isinstance(a, FlavorQuotas)))]
    raise TypeError("pass either ResourceGroups or FlavorQuotas (one group), not a mix")


# --- ClusterQueue / Cohort -----------------------------------------------------------------------


def _preemption(value: ClusterQueuePreemption | Mapping[str, Any] | None) -> ClusterQueuePreemption | None:
    if value is None or isinstance(value, ClusterQueuePreemption):
        return value
    kw = dict(value)
    bwc = kw.pop("borrow_within_cohort", None)
    threshold = kw.pop("max_priority_threshold", None)
    if isinstance(bwc, str):
        bwc = BorrowWithinCohort(policy=bwc, max_priority_threshold=threshold)
    return ClusterQueuePreemption(borrow_within_cohort=bwc, **kw)


def _fungibility(value: FlavorFungibility | Mapping[str, str] | None) -> FlavorFungibility | None:
    if value is None or isinstance(value, FlavorFungibility):
        return value
    return FlavorFungibility(**value)


def cluster_queue(
    name: str,
    *groups: ResourceGroup | FlavorQuotas,
    cohort: str = "",
    preemption: ClusterQueuePreemption | Mapping[str, Any] | None = None,
    fungibility: FlavorFungibility | Mapping[str, str] | None = None,
    namespace_selector: LabelSelector | None = None,
    queueing_strategy: str = "",
    stop_policy: str = "",
    fair_weight: QuantityValue | None = None,
    admission_checks: Mapping[str, Sequence[str]] | None = None,
) -> ClusterQueue:
    """A ClusterQueue (all namespaces by default).

    ``groups``: ResourceGroups, or FlavorQuotas forming a single group. ``preemption`` takes
    ``within_cluster_queue``, ``reclaim_within_cohort``, ``borrow_within_cohort`` (policy name) and
    ``max_priority_threshold``; ``fungibility`` takes ``when_can_borrow``, ``when_can_preempt``,
    ``preference``. ``admission_checks`` maps check name -> ``onFlavors`` (empty: all flavors).
    """
    checks = (
        None
        if admission_checks is None
        else AdmissionChecksStrategy(
            admission_checks=[
                AdmissionCheckStrategyRule(name=n, on_flavors=list(f)) for n, f in admission_checks.items()
            ]
        )
    )
    return ClusterQueue(
        metadata=ObjectMeta(name=name),
        spec=ClusterQueueSpec(
            resource_groups=_groups(groups),
            cohort_name=cohort,
            queueing_strategy=queueing_strategy,
            namespace_selector=namespace_selector if namespace_selector is not None else LabelSelector(),
            flavor_fungibility=_fungibility(fungibility),
            preemption=_preemption(preemption),
            stop_policy=stop_policy,
            fair_sharing=None if fair_weight is None else FairSharing(weight=fair_weight),
            admission_checks_strategy=checks,
        ),
    )


def cohort(
    name: str,
    *groups: ResourceGroup | FlavorQuotas,
    parent: str = "",
    fair_weight: QuantityValue | None = None,
) -> Cohort:
    """A Cohort object, optionally owning quota and with a parent."""
    return Cohort(
        metadata=ObjectMeta(name=name),
        spec=CohortSpec(
            parent_name=parent,
            resource_groups=_groups(groups) if groups else [],
            fair_sharing=None if fair_weight is None else FairSharing(weight=fair_weight),
        ),
    )


# --- Workload ------------------------------------------------------------------------------------


def pod_spec(
    requests: Mapping[str, QuantityValue] | None = None,
    *,
    node_selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Toleration] = (),
    affinity_terms: Sequence[Sequence[Mapping[str, Any]]] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A raw pod spec with one container requesting ``requests``.

    ``affinity_terms``: required node-affinity terms, each a list of match expressions
    (``{"key": "k", "operator": "In", "values": ["v"]}``).
    """
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": {k: v for k, v in (requests or {}).items()}}}]
    }
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if tolerations:
        spec["tolerations"] = [_toleration_dict(t) for t in tolerations]
    if affinity_terms is not None:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [dict(e) for e in term]} for term in affinity_terms
                    ]
                }
            }
        }
    if extra:
        spec.update(extra)
    return spec


def _toleration_dict(t: Toleration) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in (("key", t.key), ("operator", t.operator), ("value", t.value), ("effect", t.effect)):
        if value:
            out[key] = value
    if t.toleration_seconds is not None:
        out["tolerationSeconds"] = t.toleration_seconds
    return out


def pod_set(
    name: str = "main",
    count: int = 1,
    requests: Mapping[str, QuantityValue] | None = None,
    *,
    min_count: int | None = None,
    group: str | None = None,
    **spec_kw: Any,
) -> PodSet:
    """A PodSet of ``count`` pods each requesting ``requests`` (``spec_kw`` go to ``pod_spec``);
    ``group``: its ``topologyRequest.podSetGroupName``."""
    return PodSet(
        name=name,
        count=count,
        min_count=min_count,
        template=PodTemplateSpec(spec=pod_spec(requests, **spec_kw)),
        topology_request=None if group is None else {"podSetGroupName": group},
    )


def workload(
    name: str,
    ns: str = "default",
    queue: str = "lq",
    priority: int | None = 0,
    created: datetime = T0,
    pod_sets: Sequence[PodSet] | None = None,
    requests: Mapping[str, QuantityValue] | None = None,
    count: int = 1,
    *,
    uid: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> Workload:
    """A pending Workload; without ``pod_sets``, one pod set "main" of ``count`` pods of ``requests``."""
    sets = list(pod_sets) if pod_sets is not None else [pod_set("main", count, requests or {"cpu": "1"})]
    return Workload(
        metadata=ObjectMeta(
            name=name,
            namespace=ns,
            uid=uid or f"uid-{ns}-{name}",
            creation_timestamp=created,
            labels=dict(labels or {}),
            annotations=dict(annotations or {}),
        ),
        spec=WorkloadSpec(pod_sets=sets, queue_name=queue, priority=priority),
    )


def admitted(
    wl: Workload,
    cq: str,
    flavors: Mapping[str, str] | Sequence[Mapping[str, str]],
    *,
    counts: Sequence[int] | None = None,
    at_time: datetime = T0,
    admitted_condition: bool = False,
) -> Workload:
    """``wl`` holding quota in ``cq``: ``status.admission`` plus ``QuotaReserved=True`` (in place).

    ``flavors`` maps resource -> flavor for every pod set, or is one mapping per pod set;
    resources without a flavor are not charged. ``counts`` admits fewer pods (partial admission).
    """
    per_ps = [flavors] * len(wl.spec.pod_sets) if isinstance(flavors, Mapping) else list(flavors)
    info = new_workload_info(wl, SchedulerOptions())
    assignments: list[PodSetAssignment] = []
    for i, (ps, fl) in enumerate(zip(info.pod_sets, per_ps, strict=True)):
        count = ps.count if counts is None else counts[i]
        chosen = {res: f for res, f in fl.items() if res in ps.per_pod or res == "pods"}
        usage: dict[str, QuantityValue] = {}
        for res in chosen:
            value = count if res == "pods" else ps.per_pod[res] * count
            usage[res] = resource_quantity_string(res, value)
        assignments.append(PodSetAssignment(name=ps.name, flavors=chosen, resource_usage=usage, count=count))
    wl.status.admission = Admission(cluster_queue=cq, pod_set_assignments=assignments)
    conds = [c for c in wl.status.conditions if c.type != QUOTA_RESERVED]
    conds.append(
        Condition(
            type=QUOTA_RESERVED,
            status="True",
            reason="QuotaReserved",
            message=f"Quota reserved in ClusterQueue {cq}",
            last_transition_time=at_time,
        )
    )
    if admitted_condition:
        conds = [c for c in conds if c.type != "Admitted"]
        conds.append(Condition(type="Admitted", status="True", reason="Admitted", message="The workload is admitted", last_transition_time=at_time))
    wl.status.conditions = conds
    return wl


def info(wl: Workload, opts: SchedulerOptions | None = None) -> WorkloadInfo:
    """The scheduler's ``WorkloadInfo`` of ``wl`` (cluster queue taken from the admission if any)."""
    return new_workload_info(wl, opts or SchedulerOptions())


# --- cache and snapshot --------------------------------------------------------------------------

Obj = ResourceFlavor | ClusterQueue | Cohort | Workload


def build_cache(objs: Iterable[Obj], opts: SchedulerOptions | None = None) -> Cache:
    """A Cache with the flavors, cohorts and ClusterQueues of ``objs`` and the workloads holding quota.

    Pending workloads (no ``status.admission``) are ignored; they belong in a queue.
    """
    opts = opts or SchedulerOptions()
    cache = Cache()
    items = list(objs)
    for o in items:
        if isinstance(o, ResourceFlavor):
            cache.add_or_update_flavor(o)
    for o in items:
        if isinstance(o, Cohort):
            cache.add_or_update_cohort(o)
    for o in items:
        if isinstance(o, ClusterQueue):
            cache.add_or_update_cluster_queue(o)
    for o in items:
        if isinstance(o, Workload) and o.status.admission is not None:
            cache.add_workload(new_workload_info(o, opts))
    return cache


def build(objs: Iterable[Obj], opts: SchedulerOptions | None = None) -> tuple[Cache, Snapshot]:
    """``build_cache`` plus a Snapshot of it."""
    cache = build_cache(objs, opts)
    return cache, Snapshot(cache)


def usage(cq: ClusterQueueState, amounts: Mapping[FlavorResource, QuantityValue]) -> None:
    """Charge raw usage to ``cq`` without a workload (like upstream tests' ``AddUsage``)."""
    add_usage_map(cq.node, {fr: resource_value(fr[1], q) for fr, q in amounts.items()})


# --- simulated cluster --------------------------------------------------------------------------


def local_queue(name: str, ns: str = "default", cq: str = "", *, stop_policy: str = "") -> LocalQueue:
    """A LocalQueue ``ns/name`` pointing at ClusterQueue ``cq`` (default: same name as the LQ)."""
    return LocalQueue(
        metadata=ObjectMeta(name=name, namespace=ns),
        spec=LocalQueueSpec(cluster_queue=cq or name, stop_policy=stop_policy),
    )


def namespace(name: str, labels: Mapping[str, str] | None = None) -> Namespace:
    """A Namespace with ``labels`` (``kubernetes.io/metadata.name`` is added by the cluster)."""
    return Namespace(metadata=ObjectMeta(name=name, labels=dict(labels or {})))


def admission_check(
    name: str, controller: str = "example.com/check", *, active: bool = True
) -> AdmissionCheck:
    """An AdmissionCheck, ``Active=True`` unless ``active`` is False."""
    conds = [
        Condition(
            type="Active",
            status="True" if active else "False",
            reason="Active" if active else "Inactive",
            message="",
            last_transition_time=T0,
        )
    ]
    return AdmissionCheck(
        metadata=ObjectMeta(name=name),
        spec=AdmissionCheckSpec(controller_name=controller),
        status=AdmissionCheckStatus(conditions=conds),
    )


def simulate(
    objs: Iterable[Any], opts: SchedulerOptions | None = None, now: datetime | None = None
) -> SimulatedCluster:
    """A ``SimulatedCluster`` at ``now`` (default ``T0 + 1h``) with typed v1beta2 ``objs`` loaded.

    As upstream's scheduler tests, whose cases are ported here, a Workload holding quota without
    Admitted in a ClusterQueue without checks is not admitted by the workload controller
    (``sync_admitted_without_checks=False``; ``pykueue schedule`` admits it)."""
    cluster = SimulatedCluster(opts or SchedulerOptions(), now or at(3600), sync_admitted_without_checks=False)
    cluster.load((o, V1BETA2 if o.kind != "Namespace" else "v1") for o in objs)
    return cluster


Cond = tuple[str, str, str]
"""(status, reason, message) of one condition."""

PSA = tuple[str, dict[str, str], dict[str, str], int | None]
"""(pod set, resource -> flavor, resource -> usage string, count) of one pod set assignment."""


def conditions(wl: Workload) -> dict[str, Cond]:
    """Condition type -> (status, reason, message)."""
    return {c.type: (c.status, c.reason, c.message) for c in wl.status.conditions}


def admission_of(wl: Workload) -> tuple[str, list[PSA]] | None:
    """``status.admission`` as ``(cluster queue, [pod set assignments])``; None when absent."""
    adm = wl.status.admission
    if adm is None:
        return None
    return adm.cluster_queue, [
        (
            psa.name,
            dict(psa.flavors),
            {r: str(v) for r, v in psa.resource_usage.items()},
            psa.count,
        )
        for psa in adm.pod_set_assignments
    ]


def cache_assignments(cluster: SimulatedCluster) -> dict[str, tuple[str, list[PSA]] | None]:
    """Every workload holding quota in the scheduler cache and its admission (upstream ``wantAssignments``)."""
    return {wl.key: admission_of(wl.obj) for wl in cluster.cache.iter_workloads()}


def queued(cluster: SimulatedCluster) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(heap incl. inflight, inadmissible) workload keys per ClusterQueue, empty queues omitted."""
    heap: dict[str, list[str]] = {}
    inadmissible: dict[str, list[str]] = {}
    for name in cluster.queues.cluster_queue_names():
        cq = cluster.queues.cluster_queue(name)
        assert cq is not None
        active = sorted([e.info.key for e in cq.active.items()] + list(cq.inflight))
        if active:
            heap[name] = active
        if cq.inadmissible:
            inadmissible[name] = sorted(cq.inadmissible)
    return heap, inadmissible


Ev = tuple[str, str, str, str]
"""(namespace/name, type, reason, note) of one event."""


def events(cluster: SimulatedCluster, key: str | None = None) -> list[Ev]:
    """Recorded events (of workload ``key`` only, when given), in emission order."""
    out = [(f"{e.namespace}/{e.name}", e.type, e.reason, e.note) for e in cluster.events]
    return [e for e in out if key is None or e[0] == key]


__all__ = [
    "PSA",
    "T0",
    "Cond",
    "Ev",
    "Q",
    "admission_check",
    "admission_of",
    "admitted",
    "at",
    "build",
    "build_cache",
    "cache_assignments",
    "cluster_queue",
    "cohort",
    "conditions",
    "events",
    "flavor",
    "flavor_quotas",
    "info",
    "local_queue",
    "namespace",
    "options",
    "pod_set",
    "pod_spec",
    "queued",
    "resource_group",
    "simulate",
    "taint",
    "toleration",
    "usage",
    "workload",
]
