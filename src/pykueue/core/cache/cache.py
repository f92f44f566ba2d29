"""The scheduler cache: ClusterQueues, Cohorts, flavors, checks and the workloads holding quota.

Upstream ``pkg/cache/scheduler/cache.go`` (trees, activity, generations) and ``snapshot.go``. The cache is the
single live model; a scheduling cycle works on it directly through ``Snapshot`` whose simulated
changes are exact inverses of each other and are all undone before the cycle ends, so no per-cycle
copy of every object is made.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pykueue.api.kueue import (
    BEST_EFFORT_FIFO,
    BORROWING_OVER_PREEMPTION,
    MAY_STOP_SEARCH,
    PREEMPT_NEVER,
    PREEMPTION_OVER_BORROWING,
    STOP_NONE,
    TRY_NEXT_FLAVOR,
    AdmissionCheck,
    ClusterQueue,
    Cohort,
    ResourceFlavor,
    ResourceGroup,
)
from pykueue.api.meta import LabelSelector, is_condition_true
from pykueue.api.quantity import PODS, Quantity, quota_amount
from pykueue.core.quota.drs import WeightOf, node_weight
from pykueue.core.quota.tree import (
    ClusterQueueNode,
    CohortNode,
    FlavorResource,
    Quota,
    QuotaNode,
    add_usage_map,
    recompute_tree,
    remove_usage_map,
    saturated_on_path,
)
from pykueue.core.workload.info import WorkloadInfo
from pykueue.core.workload.reconcile import QueueFacts

MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"

ACTIVE = "active"
PENDING = "pending"
TERMINATING = "terminating"


@dataclass(frozen=True, slots=True)
class ResourceGroupInfo:
    covered: tuple[str, ...]
    flavors: tuple[str, ...]


def quotas_from_groups(groups: list[ResourceGroup]) -> dict[FlavorResource, Quota]:
    """Integer quotas per (flavor, resource) of a ClusterQueue's or Cohort's resource groups."""
    out: dict[FlavorResource, Quota] = {}
    for rg in groups:
        for fq in rg.flavors:
            for rq in fq.resources:
                out[(fq.name, rq.name)] = Quota(
                    nominal=quota_amount(rq.name, rq.nominal_quota),
                    borrowing_limit=None
                    if rq.borrowing_limit is None
                    else quota_amount(rq.name, rq.borrowing_limit),
                    lending_limit=None if rq.lending_limit is None else quota_amount(rq.name, rq.lending_limit),
                )
    return out


def fair_weight(weight: str | int | float | None) -> float:
    if weight is None:
        return 1.0
    return float(Quantity.parse(weight).value)


class ClusterQueueState:
    """A ClusterQueue as the scheduler sees it, with its quota node and quota-holding workloads."""

    def __init__(self, cq: ClusterQueue) -> None:
        self.name = cq.metadata.name
        self.node = ClusterQueueNode(self.name)
        self.workloads: dict[str, WorkloadInfo] = {}
        self.generation = 0
        """Upstream ``AllocatableResourceGeneration``: 0 until the first recompute of the tree
        holding this ClusterQueue, then advanced by every recompute of that tree (its quotas or
        shape changed) and every workload that stops holding quota here."""
        self.status = PENDING
        self.inactive_reason = "Unknown"
        self.inactive_message = "Can't admit new workloads."
        self.has_cycle = False
        # The flavor assigner's quota checks for this ClusterQueue (``FlavorAssigner.__init__``):
        # (flavor, resource), assumed, request -> outcome, valid while ``quota_checks_at`` holds.
        self.quota_checks: dict[tuple[FlavorResource, int, int], Any] = {}
        self.quota_checks_at: tuple[object, ...] = ()
        self.update_spec(cq)

    def update_spec(self, cq: ClusterQueue) -> None:
        spec = cq.spec
        self.obj = cq
        self.cohort_name = spec.cohort_name
        self.resource_groups = [
            ResourceGroupInfo(tuple(rg.covered_resources), tuple(f.name for f in rg.flavors))
            for rg in spec.resource_groups
        ]
        self.group_of_resource: dict[str, int] = {}
        for i, rg in enumerate(self.resource_groups):
            for r in rg.covered:
                self.group_of_resource.setdefault(r, i)
        self.covers_pods = PODS in self.group_of_resource
        # ``findRGIndicesByFlavor`` per flavor, read for every flavor the assigner examines.
        self.groups_of_flavor: dict[str, tuple[int, ...]] = {}
        for i, rg in enumerate(self.resource_groups):
            for f in rg.flavors:
                if i not in self.groups_of_flavor.get(f, ()):
                    self.groups_of_flavor[f] = (*self.groups_of_flavor.get(f, ()), i)
        self.all_flavors = frozenset(f for rg in self.resource_groups for f in rg.flavors)
        self.node.quotas = quotas_from_groups(spec.resource_groups)
        self.node.version += 1  # what is derived from the quotas (``quota_checks``) is outdated
        self.queueing_strategy = spec.queueing_strategy or BEST_EFFORT_FIFO
        ff = spec.flavor_fungibility
        self.when_can_borrow = (ff.when_can_borrow if ff else "") or MAY_STOP_SEARCH
        self.when_can_preempt = (ff.when_can_preempt if ff else "") or TRY_NEXT_FLAVOR
        if self.when_can_borrow == "Borrow":
            self.when_can_borrow = MAY_STOP_SEARCH
        if self.when_can_preempt == "Preempt":
            self.when_can_preempt = MAY_STOP_SEARCH
        self.preference = (ff.preference if ff else "") or BORROWING_OVER_PREEMPTION
        p = spec.preemption
        self.within_cluster_queue = (p.within_cluster_queue if p else "") or PREEMPT_NEVER
        self.reclaim_within_cohort = (p.reclaim_within_cohort if p else "") or PREEMPT_NEVER
        bwc = p.borrow_within_cohort if p else None
        self.borrow_within_cohort = (bwc.policy if bwc else "") or PREEMPT_NEVER
        self.max_priority_threshold = bwc.max_priority_threshold if bwc else None
        # What ``FlavorAssigner.__init__`` derives from this spec for every head it assigns here,
        # compared once per spec: preference PreemptionOverBorrowing, whenCanPreempt and
        # whenCanBorrow TryNextFlavor, borrowWithinCohort and reclaimWithinCohort not Never.
        self.assigner_flags = (
            self.preference == PREEMPTION_OVER_BORROWING,
            self.when_can_preempt == TRY_NEXT_FLAVOR,
            self.when_can_borrow == TRY_NEXT_FLAVOR,
            self.borrow_within_cohort != PREEMPT_NEVER,
            self.reclaim_within_cohort != PREEMPT_NEVER,
        )
        self.namespace_selector: LabelSelector | None = spec.namespace_selector
        self.stop_policy = spec.stop_policy or STOP_NONE
        self.fair_weight = fair_weight(spec.fair_sharing.weight if spec.fair_sharing else None)
        self.check_flavors: dict[str, frozenset[str]] = {}
        if spec.admission_checks_strategy is not None:
            for rule in spec.admission_checks_strategy.admission_checks:
                self.check_flavors[rule.name] = frozenset(rule.on_flavors) or self.all_flavors
        self.afs = bool(spec.admission_scope and spec.admission_scope.admission_mode == "UsageBasedAdmissionFairSharing")
        self.terminating = cq.metadata.deletion_timestamp is not None

    @property
    def parent(self) -> CohortNode | None:
        return self.node.parent

    def is_active(self) -> bool:
        return self.status == ACTIVE

    def checks_for_flavors(self, flavors: Iterable[str]) -> list[str]:
        """Admission checks that apply to a workload assigned ``flavors``
        (``workload.AdmissionChecksForWorkload``), sorted."""
        used = set(flavors)
        return sorted(name for name, fl in self.check_flavors.items() if fl & used)

    def checks_for_all_flavors(self) -> list[str]:
        return sorted(name for name, fl in self.check_flavors.items() if fl >= self.all_flavors)

    def queue_facts(self) -> QueueFacts:
        """What the workload controller's decisions need to know about this ClusterQueue."""
        return QueueFacts(
            exists=not self.terminating,
            active=self.is_active(),
            stop_policy=self.stop_policy,
            namespace_selector=self.namespace_selector,
        )


class Cache:
    """Live scheduler state; see module docstring."""

    def __init__(self) -> None:
        self.cluster_queues: dict[str, ClusterQueueState] = {}
        self.cohort_objects: dict[str, Cohort] = {}
        self.cohorts: dict[str, CohortNode] = {}
        self.flavors: dict[str, ResourceFlavor] = {}
        self.admission_checks: dict[str, AdmissionCheck] = {}
        self.workload_cq: dict[str, str] = {}
        self.cycle_cohorts: set[str] = set()
        """Cohorts on a parent cycle (``_relink``)."""

    # --- structure ----------------------------------------------------------------------------

    def add_or_update_cluster_queue(self, cq: ClusterQueue) -> ClusterQueueState:
        state = self.cluster_queues.get(cq.metadata.name)
        old_root = state.node.root() if state else None
        if state is None:
            state = ClusterQueueState(cq)
            self.cluster_queues[state.name] = state
        else:
            old_shape = _allocatable_shape(state)
            state.update_spec(cq)
            if old_shape == _allocatable_shape(state):
                # Upstream ``clusterQueue.updateClusterQueue``: the cohort tree (and with it the
                # ``AllocatableResourceGeneration``) is only updated when the resource groups,
                # the quotas or the parent changed.
                self.update_activity()
                return state
        self._relink()
        self._recompute_trees(old_root, state.node)
        return state

    def delete_cluster_queue(self, name: str) -> None:
        state = self.cluster_queues.pop(name, None)
        if state is None:
            return
        old_root = state.node.root()
        if state.node.parent is not None:
            state.node.parent.child_cqs.pop(name, None)
            state.node.parent = None
        for key in list(state.workloads):
            self.workload_cq.pop(key, None)
        self._relink()
        if old_root is not state.node:
            self._recompute_trees(old_root)

    def add_or_update_cohort(self, cohort: Cohort) -> None:
        """Upstream ``Cache.AddOrUpdateCohort``: the trees that held and now hold the cohort are
        recomputed (``updateCohort`` for the old parent's, ``updateCohortTreeAndInfoMetricsIfNoCycle``)."""
        name = cohort.metadata.name
        old = self.cohorts.get(name)
        old_root = old.root() if old is not None else None
        self.cohort_objects[name] = cohort
        self._relink()
        self._recompute_trees(old_root, self.cohorts[name].root())

    def delete_cohort(self, name: str) -> None:
        """Upstream ``Cache.DeleteCohort``: the cohort, if children keep it as an implicit one,
        and its old tree are recomputed."""
        old = self.cohorts.get(name)
        old_root = old.root() if old is not None else None
        self.cohort_objects.pop(name, None)
        self._relink()
        kept = self.cohorts.get(name)
        self._recompute_trees(old_root, kept.root() if kept is not None else None)

    def _recompute_trees(self, *nodes: QuotaNode | None) -> None:
        """Recompute the trees holding ``nodes`` (each once), then the ClusterQueues' activity."""
        seen: set[int] = set()
        for node in nodes:
            # A node that lost its place in the trees (an implicit cohort left without children)
            # has nothing to recompute.
            if node is None or not self._in_trees(node):
                continue
            root = node.root()
            if id(root) not in seen:
                seen.add(id(root))
                self._recompute(root)
        self.update_activity()

    def _in_trees(self, node: QuotaNode) -> bool:
        if isinstance(node, CohortNode):
            return self.cohorts.get(node.name) is node
        state = self.cluster_queues.get(node.name)
        return state is not None and state.node is node

    def add_or_update_flavor(self, rf: ResourceFlavor) -> None:
        self.flavors[rf.metadata.name] = rf
        self.update_activity()

    def delete_flavor(self, name: str) -> None:
        self.flavors.pop(name, None)
        self.update_activity()

    def add_or_update_admission_check(self, ac: AdmissionCheck) -> None:
        self.admission_checks[ac.metadata.name] = ac
        self.update_activity()

    def delete_admission_check(self, name: str) -> None:
        self.admission_checks.pop(name, None)
        self.update_activity()

    def cluster_queues_using_flavor(self, flavor: str) -> list[str]:
        """Upstream ``Cache.ClusterQueuesUsingFlavor`` (``clusterQueue.flavorInUse``): the
        ClusterQueues whose resource groups name ``flavor``, sorted."""
        return sorted(name for name, cq in self.cluster_queues.items() if flavor in cq.all_flavors)

    def cluster_queues_using_admission_check(self, check: str) -> list[str]:
        """Upstream ``Cache.ClusterQueuesUsingAdmissionCheck``: the ClusterQueues whose
        admission checks strategy names ``check``, sorted."""
        return sorted(name for name, cq in self.cluster_queues.items() if check in cq.check_flavors)

    def _cohort_node(self, name: str) -> CohortNode:
        node = self.cohorts.get(name)
        if node is None:
            node = CohortNode(name)
            self.cohorts[name] = node
        return node

    def _relink(self) -> None:
        """Rebuild cohort nodes and edges from names; detect cycles (R3.1.2, R3.1.3)."""
        wanted: dict[str, str] = {}  # cohort -> parent name
        referenced: set[str] = set()
        for name, obj in self.cohort_objects.items():
            wanted[name] = obj.spec.parent_name
            if obj.spec.parent_name:
                referenced.add(obj.spec.parent_name)
        for cq in self.cluster_queues.values():
            if cq.cohort_name:
                referenced.add(cq.cohort_name)
        names = set(self.cohort_objects) | referenced
        for name in list(self.cohorts):
            if name not in names:
                gone = self.cohorts.pop(name)
                gone.child_cqs.clear()
                gone.child_cohorts.clear()
                gone.parent = None
        in_cycle = _cycle_members(wanted)
        for name in names:
            node = self._cohort_node(name)
            node.child_cqs.clear()
            node.child_cohorts.clear()
            node.parent = None
            cohort = self.cohort_objects.get(name)
            node.implicit = cohort is None
            node.quotas = quotas_from_groups(cohort.spec.resource_groups) if cohort else {}
            node.fair_weight = (
                fair_weight(cohort.spec.fair_sharing.weight if cohort.spec.fair_sharing else None)
                if cohort
                else 0.0
            )
        for name, parent in wanted.items():
            if parent and name not in in_cycle:
                node = self.cohorts[name]
                pnode = self.cohorts[parent]
                node.parent = pnode
                pnode.child_cohorts[name] = node
        # Implicit cohorts with no children disappear (only possible for parents of removed cohorts).
        for cq in self.cluster_queues.values():
            cq.node.parent = None
            cq.has_cycle = False
            if cq.cohort_name:
                pnode = self.cohorts[cq.cohort_name]
                cq.node.parent = pnode
                pnode.child_cqs[cq.name] = cq.node
                cq.has_cycle = _chain_has_cycle(cq.cohort_name, wanted, in_cycle)
        self.cycle_cohorts = in_cycle

    def _recompute(self, root: QuotaNode) -> None:
        recompute_tree(root)
        if isinstance(root, CohortNode):
            for cq_node in root.iter_cluster_queues():
                self.cluster_queues[cq_node.name].generation += 1
        else:
            self.cluster_queues[root.name].generation += 1

    def roots(self) -> list[QuotaNode]:
        """Roots of every tree: parentless cohorts and cohort-less ClusterQueues."""
        out: list[QuotaNode] = [c for _, c in sorted(self.cohorts.items()) if c.parent is None]
        out.extend(cq.node for _, cq in sorted(self.cluster_queues.items()) if cq.node.parent is None)
        return out

    # --- activity (upstream ``clusterQueue.updateQueueStatus``, ``inactiveReason``) -----------

    def update_activity(self) -> None:
        for cq in self.cluster_queues.values():
            self._update_cq_activity(cq)

    def _update_cq_activity(self, cq: ClusterQueueState) -> None:
        if cq.terminating:
            cq.status = TERMINATING
            cq.inactive_reason = "Terminating"
            cq.inactive_message = "Can't admit new workloads; clusterQueue is terminating"
            return
        reasons: list[tuple[str, str]] = []
        if cq.stop_policy != STOP_NONE:
            reasons.append(("Stopped", "is stopped"))
        # Upstream ``clusterQueue.updateFlavorMetadata``: in resource-group order, not sorted.
        missing = [f for rg in cq.resource_groups for f in rg.flavors if f not in self.flavors]
        if missing:
            reasons.append(("FlavorNotFound", "references missing ResourceFlavor(s): " + ",".join(missing)))
        checks = sorted(cq.check_flavors)
        missing_checks = [c for c in checks if c not in self.admission_checks]
        if missing_checks:
            reasons.append(
                ("AdmissionCheckNotFound", "references missing AdmissionCheck(s): " + ",".join(missing_checks))
            )
        present = [self.admission_checks[c] for c in checks if c in self.admission_checks]
        inactive = [
            ac.metadata.name
            for ac in present
            if not (ac.status is not None and is_condition_true(ac.status.conditions, "Active"))
        ]
        if inactive:
            reasons.append(
                ("AdmissionCheckInactive", "references inactive AdmissionCheck(s): " + ",".join(inactive))
            )
        mk = [ac.metadata.name for ac in present if ac.spec.controller_name == MULTIKUEUE_CONTROLLER]
        if len(mk) > 1:
            reasons.append(
                (
                    "MultipleMultiKueueAdmissionChecks",
                    "Cannot use multiple MultiKueue AdmissionChecks on the same ClusterQueue, found: "
                    + ",".join(mk),
                )
            )
        per_flavor_mk = [n for n in mk if cq.check_flavors[n] != cq.all_flavors]
        if per_flavor_mk:
            reasons.append(
                (
                    "MultiKueueAdmissionCheckAppliedPerFlavor",
                    "Cannot specify MultiKueue AdmissionCheck per flavor, found: " + ",".join(per_flavor_mk),
                )
            )
        prov = [ac.metadata.name for ac in present if ac.spec.controller_name == PROVISIONING_CONTROLLER]
        if mk and prov:
            reasons.append(
                (
                    "MultiKueueWithProvisioningRequest",
                    "Cannot use both MultiKueue and ProvisioningRequest AdmissionChecks together, found: "
                    + ",".join(mk)
                    + ", "
                    + ",".join(prov),
                )
            )
        if not reasons:
            cq.status = ACTIVE
            cq.inactive_reason = "Ready"
            cq.inactive_message = "Can admit new workloads"
            return
        cq.status = PENDING
        cq.inactive_reason = reasons[0][0]
        cq.inactive_message = "Can't admit new workloads: " + ", ".join(m for _, m in reasons) + "."

    # --- workloads holding quota ----------------------------------------------------------------

    def add_workload(self, info: WorkloadInfo, *, usage_held: bool = False) -> bool:
        """Count a quota-holding workload (real, not simulated). False if its CQ is unknown.

        ``usage_held``: the tree already carries ``info.usage`` for it (a cycle's booking kept at
        ``Snapshot.close``), so only the workload is recorded."""
        cq = self.cluster_queues.get(info.cluster_queue)
        if cq is None:
            return False
        key = info.key
        previous = self.workload_cq.get(key)
        if previous is not None and previous != cq.name:
            # Upstream ``Cache.addOrUpdateWorkloadWithoutLock``: a workload now reserving in
            # another ClusterQueue leaves the one it was assigned to (``deleteFromQueueIfPresent``).
            self.delete_workload(key)
        held = cq.workloads.get(key)
        if (
            held is not None
            and not usage_held
            and held.usage == info.usage
            and self.workload_cq.get(key) == cq.name
            and not saturated_on_path(cq.node, held.usage)
        ):
            # A new view with the same usage in the same ClusterQueue (e.g. the observed write of an
            # admission the cycle assumed): ``delete_workload`` and adding it back would remove and
            # add the same usage, which leaves the tree as it was (exact inverses away from the
            # int64 bounds, hence the saturation check); only the records change, with the same
            # generation step and insertion order.
            del cq.workloads[key]
            cq.generation += 1
            cq.workloads[key] = info
            del self.workload_cq[key]
            self.workload_cq[key] = cq.name
            return True
        if key in cq.workloads:
            self.delete_workload(key)
        cq.workloads[info.key] = info
        if not usage_held:
            add_usage_map(cq.node, info.usage)
        self.workload_cq[info.key] = cq.name
        return True

    def delete_workload(self, key: str) -> WorkloadInfo | None:
        cq_name = self.workload_cq.pop(key, None)
        if cq_name is None:
            return None
        cq = self.cluster_queues.get(cq_name)
        if cq is None:
            return None
        info = cq.workloads.pop(key, None)
        if info is not None:
            remove_usage_map(cq.node, info.usage)
            cq.generation += 1
        return info

    def has_workload(self, key: str) -> bool:
        return key in self.workload_cq

    def workload(self, key: str) -> WorkloadInfo | None:
        cq_name = self.workload_cq.get(key)
        if cq_name is None:
            return None
        return self.cluster_queues[cq_name].workloads.get(key)

    def iter_workloads(self) -> Iterator[WorkloadInfo]:
        for cq in self.cluster_queues.values():
            yield from cq.workloads.values()

    def local_queue_admitted_usage(self, cq_name: str, lq_key: str) -> dict[str, int]:
        """Upstream ``LocalQueue.GetAdmittedUsage``: the usage of the LocalQueue's admitted
        workloads in ``cq_name``, summed over flavors per resource.

        Only Admission Fair Sharing reads it (on an admission and on a LocalQueue's sampling
        tick), so it is summed on demand rather than kept up to date."""
        out: dict[str, int] = {}
        cq = self.cluster_queues.get(cq_name)
        if cq is None:
            return out
        for info in cq.workloads.values():
            if info.local_queue != lq_key or not is_condition_true(info.obj.status.conditions, "Admitted"):
                continue
            for (_flavor, resource), v in info.usage.items():
                out[resource] = out.get(resource, 0) + v
        return out


def _allocatable_shape(
    cq: ClusterQueueState,
) -> tuple[list[tuple[frozenset[str], tuple[str, ...]]], dict[FlavorResource, Quota], str]:
    """What moves the ``AllocatableResourceGeneration`` on an update (upstream
    ``updateQuotasAndResourceGroups`` and the parent): the resource groups as
    ``createdResourceGroups`` keeps them (covered resources as a set, flavors in order), the
    quotas and the cohort."""
    groups = [(frozenset(rg.covered), rg.flavors) for rg in cq.resource_groups]
    return groups, cq.node.quotas, cq.cohort_name


def _cycle_members(parents: dict[str, str]) -> set[str]:
    """Cohorts that lie on a parent cycle."""
    members: set[str] = set()
    for start in parents:
        seen: list[str] = []
        node = start
        while node and node in parents and node not in seen:
            seen.append(node)
            node = parents[node]
        if node in seen:
            members.update(seen[seen.index(node) :])
    return members


def _chain_has_cycle(cohort: str, parents: dict[str, str], in_cycle: set[str]) -> bool:
    seen: set[str] = set()
    node = cohort
    while node:
        if node in in_cycle or node in seen:
            return True
        seen.add(node)
        node = parents.get(node, "")
    return False


def cache_weight_of(cache: Cache) -> WeightOf:
    """A ``WeightOf`` reading ClusterQueue weights from the cache and cohort weights from the nodes."""
    cluster_queues = cache.cluster_queues

    def weight_of(node: QuotaNode) -> float:
        if isinstance(node, ClusterQueueNode):
            state = cluster_queues.get(node.name)
            if state is not None:
                return state.fair_weight
        return node_weight(node)

    return weight_of
