"""When the ClusterQueue generation (upstream ``AllocatableResourceGeneration``) moves, and that a
spec update which leaves it alone still reaches every field the scheduler reads.

Upstream ``clusterQueue.updateClusterQueue`` (pkg/cache/scheduler/clusterqueue.go) advances the
generation only through ``updateQuotasAndResourceGroups`` (resource groups compared with
``equality.Semantic.DeepEqual`` — the covered resources are a ``sets.Set`` — and quotas with
``ResourceQuota.Equal``) or a parent change, and re-reads the namespace selector, stop policy,
admission checks, preemption and flavor fungibility on every update. ``Cache.DeleteCohort``
(pkg/cache/scheduler/cache.go) recomputes only the deleted cohort's old tree and the implicit
cohort its children keep.
"""

from __future__ import annotations

from builders import Q, cluster_queue, cohort, flavor, flavor_quotas, resource_group

from pykueue.api.kueue import ResourceGroup
from pykueue.api.meta import LabelSelector
from pykueue.core.cache.cache import ACTIVE, PENDING, Cache


def _two_resources(covered: list[str]) -> ResourceGroup:
    quotas = {"cpu": Q(10), "memory": Q("10Gi")}
    return resource_group(flavor_quotas("default", {r: quotas[r] for r in covered}), covered=covered)


def test_reordered_covered_resources_keep_the_generation() -> None:
    # ``createdResourceGroups`` keeps the covered resources as a set: listing the same resources
    # (and each flavor's quotas, which the webhook requires in the same order) in another order
    # changes neither the resource groups nor the quotas.
    cache = Cache()
    cache.add_or_update_flavor(flavor("default"))
    cache.add_or_update_cluster_queue(cluster_queue("cq", _two_resources(["cpu", "memory"])))
    assert cache.cluster_queues["cq"].generation == 1
    cache.add_or_update_cluster_queue(cluster_queue("cq", _two_resources(["memory", "cpu"])))
    assert cache.cluster_queues["cq"].generation == 1
    # A real change of the covered resources still moves it.
    cache.add_or_update_cluster_queue(cluster_queue("cq", _two_resources(["cpu"])))
    assert cache.cluster_queues["cq"].generation == 2


def test_reordered_flavors_move_the_generation() -> None:
    # The flavors stay a list in ``createdResourceGroups``: their order is the assigner's order.
    cache = Cache()
    for name in ("a", "b"):
        cache.add_or_update_flavor(flavor(name))
    cache.add_or_update_cluster_queue(cluster_queue("cq", flavor_quotas("a", cpu=1), flavor_quotas("b", cpu=1)))
    cache.add_or_update_cluster_queue(cluster_queue("cq", flavor_quotas("b", cpu=1), flavor_quotas("a", cpu=1)))
    assert cache.cluster_queues["cq"].generation == 2


def test_policy_update_keeps_the_generation_and_is_read() -> None:
    cache = Cache()
    cache.add_or_update_flavor(flavor("default"))
    cache.add_or_update_cluster_queue(cluster_queue("cq", flavor_quotas("default", cpu=10)))
    cache.add_or_update_cluster_queue(
        cluster_queue(
            "cq",
            flavor_quotas("default", cpu=10),
            preemption={"within_cluster_queue": "LowerPriority", "reclaim_within_cohort": "Any"},
            fungibility={"when_can_borrow": "TryNextFlavor", "when_can_preempt": "MayStopSearch"},
            namespace_selector=LabelSelector(match_labels={"team": "a"}),
            fair_weight="3",
            stop_policy="Hold",
            admission_checks={"check": []},
        )
    )
    cq = cache.cluster_queues["cq"]
    assert cq.generation == 1
    assert (cq.within_cluster_queue, cq.reclaim_within_cohort) == ("LowerPriority", "Any")
    assert (cq.when_can_borrow, cq.when_can_preempt) == ("TryNextFlavor", "MayStopSearch")
    assert cq.namespace_selector == LabelSelector(match_labels={"team": "a"})
    assert cq.fair_weight == 3.0
    assert list(cq.check_flavors) == ["check"]
    # ``updateQueueStatus`` runs on every update: stopped, and the check is missing.
    assert (cq.status, cq.inactive_reason) == (PENDING, "Stopped")
    assert cq.inactive_message == (
        "Can't admit new workloads: is stopped, references missing AdmissionCheck(s): check."
    )
    cache.add_or_update_cluster_queue(cluster_queue("cq", flavor_quotas("default", cpu=10)))
    assert (cq.generation, cq.status) == (1, ACTIVE)


def test_delete_cohort_leaves_other_trees_alone() -> None:
    cache = Cache()
    cache.add_or_update_flavor(flavor("default"))
    cache.add_or_update_cohort(cohort("root"))
    cache.add_or_update_cohort(cohort("one", flavor_quotas("default", cpu=5), parent="root"))
    cache.add_or_update_cohort(cohort("two"))
    cache.add_or_update_cluster_queue(cluster_queue("a", flavor_quotas("default", cpu=10), cohort="one"))
    cache.add_or_update_cluster_queue(cluster_queue("b", flavor_quotas("default", cpu=10), cohort="two"))
    cache.add_or_update_cluster_queue(cluster_queue("c", flavor_quotas("default", cpu=10)))
    before = {n: cq.generation for n, cq in cache.cluster_queues.items()}
    cache.delete_cohort("one")
    # "one" stays as an implicit cohort (``a`` names it), without quota and without a parent.
    assert cache.cohorts["one"].parent is None
    assert cache.cohorts["one"].subtree_quota == {("default", "cpu"): 10000}
    assert {n: cq.generation - before[n] for n, cq in cache.cluster_queues.items()} == {"a": 1, "b": 0, "c": 0}
    cache.delete_cohort("two")
    assert {n: cq.generation - before[n] for n, cq in cache.cluster_queues.items()} == {"a": 1, "b": 1, "c": 0}
