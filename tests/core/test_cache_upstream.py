"""Upstream ``pkg/cache/scheduler/cache_test.go`` (``TestCacheClusterQueueOperations``,
``TestClusterQueueReadiness``, ``TestCohortCycles``, ``TestDeleteCohortUpdatesAncestorSubtreeQuota``,
``TestClusterQueuesUsingFlavor``, ``TestClusterQueuesUsingAdmissionChecks``,
``TestMatchingClusterQueues``) and ``clusterqueue_test.go`` (``TestClusterQueueUpdateWithFlavors``,
``TestClusterQueueUpdateWithAdmissionCheck``), ported case by case (ids are upstream's case names)
on :class:`pykueue.core.cache.cache.Cache`.

Upstream compares its internal ``clusterQueue`` structs; each case here asserts the same
observable fields of pykueue's ``ClusterQueueState``: ``AllocatableResourceGeneration``
(``generation``), the status (active / pending / terminating), the Active condition's reason and
message, the cohort membership, subtree quotas and usage. Upstream sets ``clusterQueue.Status``
directly to start a case from a pending, active or terminating queue; here the queue is brought to
that status the way the cache gets there (missing flavors or checks, a deletion timestamp).
Upstream's ``AddOrUpdateCohort`` returns ``ErrCohortHasCycle``; pykueue records the cycle instead
(``Cache.cycle_cohorts``, ``ClusterQueueState.has_cycle``, which keeps the ClusterQueue out of the
cycle's snapshot as upstream's error does), so the cycle cases assert those.

not ported:
- TestClusterQueueReadiness "queue not found" — upstream's ``ClusterQueueReadiness`` lookup of a
  ClusterQueue the cache does not hold; pykueue's ClusterQueue reconciler never asks about one
  (it only writes the status of ClusterQueues it holds).
- TestCohortCycles "ResyncGaugeMetrics does not infinitely recurse with cyclic cohorts" — metrics.
- TestClusterQueueAncestors, TestWorkloadAncestors, TestAncestors — lookups that route Cohort
  status reconciles and cohort metrics; pykueue's controllers mark the Cohorts a change touches in
  ``controllers/cluster_cache.py`` and have no such lookup.
- TestClusterQueuesForResources — DRA (``ClusterQueuesForResources`` serves the DRA
  ResourceSlice handler), not implemented.
- TestClusterQueueUsage, TestLocalQueueUsage — see tests/core/test_cache_usage_upstream.py.
- TestCacheWorkloadOperations — see tests/core/test_cache_usage_upstream.py.
- TestGetCacheLQ, TestCacheQueueOperations, TestWaitForPodsReadyCancelled,
  TestCachePodsReadyForAllAdmittedWorkloads, TestIsAddedCheckWorkload,
  TestLocalQueueCustomMetricLabelsRace — LocalQueue bookkeeping of the cache for metrics, the
  PodsReady wait (Go concurrency), custom metric labels.
- TestClusterQueueReadinessWithTAS — Topology Aware Scheduling is not implemented.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from builders import (
    T0,
    Q,
    admission_check,
    admitted,
    cluster_queue,
    cohort,
    flavor,
    flavor_quotas,
    info,
    local_queue,
    namespace,
    resource_group,
    simulate,
    workload,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from pykueue.api.kueue import ClusterQueue
from pykueue.api.meta import Condition, LabelSelector, LabelSelectorRequirement
from pykueue.core.cache.cache import (
    ACTIVE,
    MULTIKUEUE_CONTROLLER,
    PENDING,
    PROVISIONING_CONTROLLER,
    TERMINATING,
    Cache,
)
from pykueue.core.cache.snapshot import Snapshot
from pykueue.core.queue.manager import QueueManager
from pykueue.core.status import active_condition

Op = Callable[[Cache], None]


def _cq_state(cache: Cache) -> dict[str, tuple[int, str]]:
    """ClusterQueue -> (AllocatableResourceGeneration, status)."""
    return {n: (cq.generation, cq.status) for n, cq in sorted(cache.cluster_queues.items())}


def _cohort_members(cache: Cache) -> dict[str, set[str]]:
    return {n: set(c.child_cqs) for n, c in sorted(cache.cohorts.items())}


# --- TestCacheClusterQueueOperations ----------------------------------------------------------


def _initial_cqs() -> list[ClusterQueue]:
    return [
        cluster_queue("a", flavor_quotas("default", cpu=Q(10, borrowing_limit=10)), cohort="one"),
        cluster_queue("b", flavor_quotas("default", cpu=15), cohort="one"),
        cluster_queue("c", cohort="two"),
        cluster_queue("d"),
        cluster_queue("e", flavor_quotas("nonexistent-flavor", cpu=15), cohort="two"),
        cluster_queue("f", cohort="two", fungibility={"when_can_borrow": "TryNextFlavor"}),
    ]


def _setup(cache: Cache) -> None:
    cache.add_or_update_flavor(flavor("default", {"cpuType": "default"}))
    for cq in _initial_cqs():
        cache.add_or_update_cluster_queue(cq)


def _op_add_with_preemption(cache: Cache) -> None:
    cache.add_or_update_cluster_queue(
        cluster_queue("foo", preemption={"reclaim_within_cohort": "LowerPriority", "within_cluster_queue": "LowerPriority"})
    )


def _op_add_flavors_after(cache: Cache) -> None:
    for cq in _initial_cqs():
        cache.add_or_update_cluster_queue(cq)
    cache.add_or_update_flavor(flavor("default", {"cpuType": "default"}))


def _op_update(cache: Cache) -> None:
    _setup(cache)
    for cq in (
        cluster_queue("a", flavor_quotas("default", cpu=Q(5, borrowing_limit=5)), cohort="two"),
        cluster_queue("b", cohort="one"),  # remove the only resource group and set a namespace selector.
        cluster_queue("e", flavor_quotas("default", cpu=Q(5, borrowing_limit=5, lending_limit=4)), cohort="two"),
    ):
        cache.add_or_update_cluster_queue(cq)
    cache.add_or_update_flavor(flavor("default", {"cpuType": "default", "region": "central"}))


def _op_keep_usage(cache: Cache) -> None:
    cache.add_or_update_flavor(flavor("default", {"cpuType": "default"}))
    cache.add_or_update_cluster_queue(
        cluster_queue("a", flavor_quotas("default", cpu=Q(10, borrowing_limit=10)), cohort="one")
    )
    wl = admitted(workload("one", ns="", requests={"cpu": "5"}), "a", {"cpu": "default"}, admitted_condition=True)
    cache.add_workload(info(wl))
    cache.add_or_update_cluster_queue(cluster_queue("a", resource_group(flavor_quotas("default"), covered=[]), cohort="one"))


def _op_implicit_cohorts(cache: Cache) -> None:
    _setup(cache)
    for cq in (cluster_queue("a", cohort="three"), cluster_queue("b"), cluster_queue("c", cohort="three")):
        cache.add_or_update_cluster_queue(cq)
    for name in ("d", "e", "f"):
        cache.delete_cluster_queue(name)


def _op_delete(cache: Cache) -> None:
    _setup(cache)
    for name in ("a", "d"):
        cache.delete_cluster_queue(name)


def _op_add_resource_flavors(cache: Cache) -> None:
    _setup(cache)
    cache.add_or_update_flavor(flavor("nonexistent-flavor"))


def _op_multiple_groups(cache: Cache) -> None:
    cache.add_or_update_cluster_queue(
        cluster_queue(
            "foo",
            resource_group(flavor_quotas("foo", cpu=0, memory=0), flavor_quotas("bar", cpu=0, memory=0)),
            resource_group(
                flavor_quotas("theta", {"example.com/gpu": 0}), flavor_quotas("gamma", {"example.com/gpu": 0})
            ),
        )
    )


def _checks_cq() -> ClusterQueue:
    return cluster_queue("foo", admission_checks={"check1": [], "check2": []})


def _op_missing_check(cache: Cache) -> None:
    cache.add_or_update_cluster_queue(_checks_cq())


def _op_check_after(cache: Cache) -> None:
    cache.add_or_update_cluster_queue(_checks_cq())
    cache.add_or_update_admission_check(admission_check("check1"))
    cache.add_or_update_admission_check(admission_check("check2"))


def _op_remove_check(cache: Cache) -> None:
    cache.add_or_update_admission_check(admission_check("check1"))
    cache.add_or_update_admission_check(admission_check("check2"))
    cache.add_or_update_cluster_queue(_checks_cq())
    cache.delete_admission_check("check2")


def _op_inactivate_check(cache: Cache) -> None:
    cache.add_or_update_admission_check(admission_check("check1"))
    cache.add_or_update_admission_check(admission_check("check2"))
    cache.add_or_update_cluster_queue(_checks_cq())
    cache.add_or_update_admission_check(admission_check("check2", active=False))


def _op_groups_and_flavors(cache: Cache) -> None:
    cache.add_or_update_cluster_queue(
        cluster_queue(
            "foo",
            resource_group(
                flavor_quotas("on-demand", cpu=Q(10, lending_limit=8), memory=Q("10Gi", lending_limit="8Gi")),
                flavor_quotas("spot", cpu=Q(20, lending_limit=20), memory=Q("20Gi", lending_limit="20Gi")),
            ),
            resource_group(flavor_quotas("license", license=Q(8, lending_limit=4))),
        )
    )


def _op_create_cohort(cache: Cache) -> None:
    cache.add_or_update_cohort(cohort("cohort"))


def _op_create_delete_cohort(cache: Cache) -> None:
    cache.add_or_update_cohort(cohort("cohort"))
    cache.delete_cohort("cohort")


def _op_cohort_remains(cache: Cache) -> None:
    cache.add_or_update_cohort(cohort("cohort"))
    cache.add_or_update_cluster_queue(cluster_queue("cq", cohort="cohort"))
    cache.delete_cohort("cohort")


SETUP_CQS = {"a": (2, ACTIVE), "b": (1, ACTIVE), "c": (3, ACTIVE), "d": (1, ACTIVE), "e": (2, PENDING), "f": (1, ACTIVE)}
SETUP_COHORTS = {"one": {"a", "b"}, "two": {"c", "e", "f"}}

# name, operation, ClusterQueue -> (generation, status), Cohort -> member ClusterQueues
CQ_OPERATION_CASES: list[tuple[str, Op, dict[str, tuple[int, str]], dict[str, set[str]]]] = [
    ("add", _setup, SETUP_CQS, SETUP_COHORTS),
    ("add ClusterQueue with preemption policies", _op_add_with_preemption, {"foo": (1, ACTIVE)}, {}),
    (
        "add ClusterQueue with fair sharing weight",
        lambda c: c.add_or_update_cluster_queue(cluster_queue("foo", fair_weight="2")),
        {"foo": (1, ACTIVE)},
        {},
    ),
    ("add flavors after queue capacities", _op_add_flavors_after, SETUP_CQS, SETUP_COHORTS),
    (
        "update",
        _op_update,
        {"a": (4, ACTIVE), "b": (3, ACTIVE), "c": (5, ACTIVE), "d": (1, ACTIVE), "e": (4, ACTIVE), "f": (3, ACTIVE)},
        {"one": {"b"}, "two": {"a", "c", "e", "f"}},
    ),
    ("shouldn't delete usage resources on update ClusterQueue", _op_keep_usage, {"a": (2, ACTIVE)}, {"one": {"a"}}),
    (
        "implicit Cohorts created and deleted",
        _op_implicit_cohorts,
        {"a": (4, ACTIVE), "b": (3, ACTIVE), "c": (4, ACTIVE)},
        {"three": {"a", "c"}},
    ),
    (
        "delete",
        _op_delete,
        {"b": (2, ACTIVE), "c": (3, ACTIVE), "e": (2, PENDING), "f": (1, ACTIVE)},
        {"one": {"b"}, "two": {"c", "e", "f"}},
    ),
    ("add resource flavors", _op_add_resource_flavors, {**SETUP_CQS, "e": (2, ACTIVE)}, SETUP_COHORTS),
    ("Add ClusterQueue with multiple resource groups", _op_multiple_groups, {"foo": (1, PENDING)}, {}),
    ("add cluster queue with missing check", _op_missing_check, {"foo": (1, PENDING)}, {}),
    ("add check after queue creation", _op_check_after, {"foo": (1, ACTIVE)}, {}),
    ("remove check after queue creation", _op_remove_check, {"foo": (1, PENDING)}, {}),
    ("inactivate check after queue creation", _op_inactivate_check, {"foo": (1, PENDING)}, {}),
    ("add CQ with multiple resource groups and flavors", _op_groups_and_flavors, {"foo": (1, PENDING)}, {}),
    ("create cohort", _op_create_cohort, {}, {"cohort": set()}),
    ("create and delete cohort", _op_create_delete_cohort, {}, {}),
    ("cohort remains after deletion when child exists", _op_cohort_remains, {"cq": (2, ACTIVE)}, {"cohort": {"cq"}}),
]


@pytest.mark.parametrize(
    ("name", "op", "want_cqs", "want_cohorts"), CQ_OPERATION_CASES, ids=[c[0] for c in CQ_OPERATION_CASES]
)
def test_cache_cluster_queue_operations(
    name: str, op: Op, want_cqs: dict[str, tuple[int, str]], want_cohorts: dict[str, set[str]]
) -> None:
    cache = Cache()
    op(cache)
    assert _cq_state(cache) == want_cqs
    assert _cohort_members(cache) == want_cohorts
    if name == "add":
        f = cache.cluster_queues["f"]
        assert (f.when_can_borrow, f.when_can_preempt) == ("TryNextFlavor", "TryNextFlavor")
    if name == "add ClusterQueue with preemption policies":
        foo = cache.cluster_queues["foo"]
        assert (foo.reclaim_within_cohort, foo.within_cluster_queue) == ("LowerPriority", "LowerPriority")
    if name == "add ClusterQueue with fair sharing weight":
        assert cache.cluster_queues["foo"].fair_weight == 2.0
    if name == "shouldn't delete usage resources on update ClusterQueue":
        a = cache.cluster_queues["a"]
        assert a.node.usage == {("default", "cpu"): 5000} and list(a.workloads) == ["/one"]
    if name in ("add cluster queue with missing check", "add check after queue creation"):
        foo = cache.cluster_queues["foo"]
        assert foo.check_flavors == {"check1": frozenset(), "check2": frozenset()}


def test_add_cluster_queue_after_finished_workloads() -> None:
    # upstream "add cluster queue after finished workloads": the reserving and the admitted
    # workloads hold quota in the new ClusterQueue, the finished one does not.
    def reserving(name: str) -> Any:
        return admitted(workload(name, ns="ns", queue="lq1"), "cq1", {"cpu": "f1"})

    finished = admitted(workload("finished", ns="ns", queue="lq1"), "cq1", {"cpu": "f1"}, admitted_condition=True)
    finished.status.conditions.append(
        Condition(type="Finished", status="True", reason="Succeeded", message="", last_transition_time=T0)
    )
    cluster = simulate(
        [
            namespace("ns"),
            local_queue("lq1", "ns", "cq1"),
            workload("pending", ns="ns", queue="lq1"),
            reserving("reserving"),
            admitted(workload("admitted", ns="ns", queue="lq1"), "cq1", {"cpu": "f1"}, admitted_condition=True),
            finished,
            flavor("f1"),
            cluster_queue("cq1", flavor_quotas("f1", cpu=10)),
        ]
    )
    cq = cluster.cache.cluster_queues["cq1"]
    assert (cq.generation, cq.status) == (1, ACTIVE)
    assert sorted(cq.workloads) == ["ns/admitted", "ns/reserving"]
    assert cq.node.usage == {("f1", "cpu"): 2000}
    assert cluster.cache.local_queue_admitted_usage("cq1", "ns/lq1") == {"cpu": 1000}


# --- TestClusterQueueReadiness ------------------------------------------------------------------------


def _base_queue(*, terminating: bool = False) -> ClusterQueue:
    cq = cluster_queue(
        "queue1", flavor_quotas("flavor1", cpu=Q(10, borrowing_limit=10)), admission_checks={"check1": []}
    )
    if terminating:
        cq.metadata.deletion_timestamp = T0
    return cq


# name, ClusterQueues, flavors, checks, (status, reason, message), active, terminating
READINESS_CASES: list[tuple[str, list[ClusterQueue], list[str], list[Any], tuple[str, str, str], bool, bool]] = [
    (
        "flavor not found",
        [_base_queue()],
        [],
        [admission_check("check1")],
        ("False", "FlavorNotFound", "Can't admit new workloads: references missing ResourceFlavor(s): flavor1."),
        False,
        False,
    ),
    (
        "check not found",
        [_base_queue()],
        ["flavor1"],
        [],
        ("False", "AdmissionCheckNotFound", "Can't admit new workloads: references missing AdmissionCheck(s): check1."),
        False,
        False,
    ),
    (
        "check inactive",
        [_base_queue()],
        ["flavor1"],
        [admission_check("check1", active=False)],
        ("False", "AdmissionCheckInactive", "Can't admit new workloads: references inactive AdmissionCheck(s): check1."),
        False,
        False,
    ),
    (
        "flavor and check not found",
        [_base_queue()],
        [],
        [],
        (
            "False",
            "FlavorNotFound",
            "Can't admit new workloads: references missing ResourceFlavor(s): flavor1, "
            "references missing AdmissionCheck(s): check1.",
        ),
        False,
        False,
    ),
    (
        "terminating",
        [_base_queue(terminating=True)],
        ["flavor1"],
        [admission_check("check1")],
        ("False", "Terminating", "Can't admit new workloads; clusterQueue is terminating"),
        False,
        True,
    ),
    (
        "ready",
        [_base_queue()],
        ["flavor1"],
        [admission_check("check1")],
        ("True", "Ready", "Can admit new workloads"),
        True,
        False,
    ),
    (
        "stopped",
        [cluster_queue("queue1", stop_policy="HoldAndDrain")],
        [],
        [],
        ("False", "Stopped", "Can't admit new workloads: is stopped."),
        False,
        False,
    ),
]


@pytest.mark.parametrize(
    ("name", "cqs", "flavors", "checks", "want", "want_active", "want_terminating"),
    READINESS_CASES,
    ids=[c[0] for c in READINESS_CASES],
)
def test_cluster_queue_readiness(
    name: str,
    cqs: list[ClusterQueue],
    flavors: list[str],
    checks: list[Any],
    want: tuple[str, str, str],
    want_active: bool,
    want_terminating: bool,
) -> None:
    cache = Cache()
    for f in flavors:
        cache.add_or_update_flavor(flavor(f))
    for ac in checks:
        cache.add_or_update_admission_check(ac)
    for cq in cqs:
        cache.add_or_update_cluster_queue(cq)
    state = cache.cluster_queues["queue1"]
    cond = active_condition(state, 1)
    assert (cond.status, cond.reason, cond.message) == want
    assert state.is_active() == want_active
    assert (state.status == TERMINATING) == want_terminating


def test_missing_flavors_are_listed_in_resource_group_order() -> None:
    # upstream clusterQueue.updateFlavorMetadata appends missing flavors in resource-group order
    # (test/integration/singlecluster/controller/core/clusterqueue_controller_test.go expects
    # "references missing ResourceFlavor(s): on-demand,spot,model-a,model-b.").
    cache = Cache()
    cache.add_or_update_cluster_queue(
        cluster_queue(
            "cq",
            resource_group(flavor_quotas("on-demand", cpu=5), flavor_quotas("spot", cpu=5)),
            resource_group(flavor_quotas("model-a", {"example.com/gpu": 5}), flavor_quotas("model-b", {"example.com/gpu": 5})),
        )
    )
    cond = active_condition(cache.cluster_queues["cq"], 1)
    assert (cond.reason, cond.message) == (
        "FlavorNotFound",
        "Can't admit new workloads: references missing ResourceFlavor(s): on-demand,spot,model-a,model-b.",
    )


# --- TestClusterQueueUpdateWithFlavors -------------------------------------------------------------


def _x86_cq(*, terminating: bool = False) -> ClusterQueue:
    cq = cluster_queue("cq", flavor_quotas("x86", cpu=5))
    if terminating:
        cq.metadata.deletion_timestamp = T0
    return cq


# name, terminating, flavor present before, flavor present after, want status
UPDATE_WITH_FLAVORS_CASES = [
    ("Pending clusterQueue updated existent flavors", False, False, True, ACTIVE),
    ("Active clusterQueue updated with not found flavors", False, True, False, PENDING),
    ("Terminating clusterQueue updated with existent flavors", True, False, True, TERMINATING),
    ("Terminating clusterQueue updated with not found flavors", True, True, False, TERMINATING),
]


@pytest.mark.parametrize(
    ("name", "terminating", "before", "after", "want"),
    UPDATE_WITH_FLAVORS_CASES,
    ids=[c[0] for c in UPDATE_WITH_FLAVORS_CASES],
)
def test_cluster_queue_update_with_flavors(name: str, terminating: bool, before: bool, after: bool, want: str) -> None:
    cache = Cache()
    if before:
        cache.add_or_update_flavor(flavor("x86"))
    cache.add_or_update_cluster_queue(_x86_cq(terminating=terminating))
    if after:
        cache.add_or_update_flavor(flavor("x86"))
    else:
        cache.delete_flavor("x86")
    assert cache.cluster_queues["cq"].status == want


# --- TestClusterQueueUpdateWithAdmissionCheck ---------------------------------------------------------


def _ac_cq(name: str, *, terminating: bool = False) -> ClusterQueue:
    # "cq" uses ``AdmissionChecks(...)`` and "cq2" ``AdmissionCheckStrategy(...)``: both are an
    # admission checks strategy without ``onFlavors`` in v1beta2.
    cq = cluster_queue(name, admission_checks={"check1": [], "check2": [], "check3": []})
    if terminating:
        cq.metadata.deletion_timestamp = T0
    return cq


ACTIVE3 = {"check1": (True, "controller1"), "check2": (True, "controller2"), "check3": (True, "controller3")}
MISSING3 = {"check1": (True, "controller1"), "check2": (True, "controller2")}
INACTIVE3 = {**ACTIVE3, "check3": (False, "controller3")}
READY = ("Ready", "Can admit new workloads")
TERMINATING_REASON = ("Terminating", "Can't admit new workloads; clusterQueue is terminating")
NOT_FOUND = ("AdmissionCheckNotFound", "Can't admit new workloads: references missing AdmissionCheck(s): check3.")
INACTIVE = ("AdmissionCheckInactive", "Can't admit new workloads: references inactive AdmissionCheck(s): check3.")

# name, ClusterQueue name, start status, checks (active, controller), want status, (reason, message)
AC_CASES: list[tuple[str, str, str, Mapping[str, tuple[bool, str]], str, tuple[str, str]]] = [
    ("Pending clusterQueue updated valid AC list", "cq", PENDING, ACTIVE3, ACTIVE, READY),
    ("Pending clusterQueue with an AC strategy updated valid AC list", "cq2", PENDING, ACTIVE3, ACTIVE, READY),
    ("Active clusterQueue updated with not found AC", "cq", ACTIVE, MISSING3, PENDING, NOT_FOUND),
    ("Active clusterQueue with an AC strategy updated with not found AC", "cq2", ACTIVE, MISSING3, PENDING, NOT_FOUND),
    ("Active clusterQueue updated with inactive AC", "cq", ACTIVE, INACTIVE3, PENDING, INACTIVE),
    ("Active clusterQueue with an AC strategy updated with inactive AC", "cq2", ACTIVE, INACTIVE3, PENDING, INACTIVE),
    (
        "Active clusterQueue with an MultiKueue AC strategy updated with duplicate single instance AC Controller",
        "cq2",
        ACTIVE,
        {
            "check1": (True, MULTIKUEUE_CONTROLLER),
            "check2": (True, "controller2"),
            "check3": (True, MULTIKUEUE_CONTROLLER),
        },
        PENDING,
        (
            "MultipleMultiKueueAdmissionChecks",
            "Can't admit new workloads: Cannot use multiple MultiKueue AdmissionChecks on the same ClusterQueue, "
            "found: check1,check3.",
        ),
    ),
    (
        "Active clusterQueue with both MultiKueue and ProvisioningRequest ACs",
        "cq",
        ACTIVE,
        {
            "check1": (True, MULTIKUEUE_CONTROLLER),
            "check2": (True, "controller2"),
            "check3": (True, PROVISIONING_CONTROLLER),
        },
        PENDING,
        (
            "MultiKueueWithProvisioningRequest",
            "Can't admit new workloads: Cannot use both MultiKueue and ProvisioningRequest AdmissionChecks "
            "together, found: check1, check3.",
        ),
    ),
    ("Terminating clusterQueue updated with valid AC list", "cq", TERMINATING, ACTIVE3, TERMINATING, TERMINATING_REASON),
    (
        "Terminating clusterQueue with an AC strategy updated with valid AC list",
        "cq2",
        TERMINATING,
        ACTIVE3,
        TERMINATING,
        TERMINATING_REASON,
    ),
    ("Terminating clusterQueue updated with not found AC", "cq", TERMINATING, MISSING3, TERMINATING, TERMINATING_REASON),
    (
        "Terminating clusterQueue with an AC strategy updated with not found AC",
        "cq2",
        TERMINATING,
        MISSING3,
        TERMINATING,
        TERMINATING_REASON,
    ),
    (
        "Active clusterQueue with an AC strategy updated",
        "cq2",
        ACTIVE,
        {"check1": (True, "controller1"), "check2": (True, "controller2"), "check3": (True, "controller2")},
        ACTIVE,
        READY,
    ),
]


@pytest.mark.parametrize(
    ("name", "cq_name", "start", "checks", "want_status", "want_reason"), AC_CASES, ids=[c[0] for c in AC_CASES]
)
def test_cluster_queue_update_with_admission_check(
    name: str,
    cq_name: str,
    start: str,
    checks: Mapping[str, tuple[bool, str]],
    want_status: str,
    want_reason: tuple[str, str],
) -> None:
    cache = Cache()
    if start == ACTIVE:  # every check known and active
        for n in ("check1", "check2", "check3"):
            cache.add_or_update_admission_check(admission_check(n))
    cache.add_or_update_cluster_queue(_ac_cq(cq_name, terminating=start == TERMINATING))
    assert cache.cluster_queues[cq_name].status == start
    for n in ("check1", "check2", "check3"):
        if n in checks:
            active, controller = checks[n]
            cache.add_or_update_admission_check(admission_check(n, controller, active=active))
        else:
            cache.delete_admission_check(n)
    state = cache.cluster_queues[cq_name]
    assert state.status == want_status
    cond = active_condition(state, 1)
    assert (cond.reason, cond.message) == want_reason


# --- TestCohortCycles ---------------------------------------------------------------------------------


def _subtree(cache: Cache, name: str) -> dict[tuple[str, str], int]:
    return {fr: v for fr, v in cache.cohorts[name].subtree_quota.items() if v}


def _excluded(cache: Cache, cq: str) -> bool:
    """Whether the cycle keeps ``cq`` out of a scheduling cycle (upstream: the error)."""
    return Snapshot(cache).cluster_queue(cq) is None


def test_cohort_cycles_self_cycle() -> None:
    cache = Cache()
    cache.add_or_update_cohort(cohort("cohort", parent="cohort"))
    assert cache.cycle_cohorts == {"cohort"}


def test_cohort_cycles_simple_cycle() -> None:
    cache = Cache()
    cache.add_or_update_cohort(cohort("cohort-a", parent="cohort-b"))
    assert cache.cycle_cohorts == set()
    cache.add_or_update_cohort(cohort("cohort-b", parent="cohort-c"))
    assert cache.cycle_cohorts == set()
    cache.add_or_update_cohort(cohort("cohort-c", parent="cohort-a"))
    assert cache.cycle_cohorts == {"cohort-a", "cohort-b", "cohort-c"}


def test_cohort_cycles_clusterqueue_add_and_update_return_error_when_cohort_has_cycle() -> None:
    cache = Cache()
    cache.add_or_update_cohort(cohort("cohort-a", parent="cohort-b"))
    cache.add_or_update_cohort(cohort("cohort-b", parent="cohort-c"))
    cache.add_or_update_cohort(cohort("cohort-c", parent="cohort-a"))
    cache.add_or_update_cluster_queue(cluster_queue("cq", cohort="cohort-a"))
    assert cache.cluster_queues["cq"].has_cycle and _excluded(cache, "cq")
    cache.add_or_update_cluster_queue(cluster_queue("cq", cohort="cohort-b"))
    assert cache.cluster_queues["cq"].has_cycle and _excluded(cache, "cq")
    cache.delete_cohort("cohort-c")
    cache.add_or_update_cluster_queue(cluster_queue("cq", cohort="cohort-b"))
    assert not cache.cluster_queues["cq"].has_cycle and not _excluded(cache, "cq")


def test_cohort_cycles_clusterqueue_leaving_cohort_with_cycle_successfully_updates_new_cohort() -> None:
    cache = Cache()
    cache.add_or_update_cohort(cohort("cycle", parent="cycle"))
    cache.add_or_update_cohort(cohort("cohort", flavor_quotas("arm", cpu=10)))
    cache.add_or_update_cluster_queue(cluster_queue("cq", flavor_quotas("arm", cpu=5), cohort="cycle"))
    assert cache.cluster_queues["cq"].has_cycle
    cache.add_or_update_cluster_queue(cluster_queue("cq", flavor_quotas("arm", cpu=5), cohort="cohort"))
    assert not cache.cluster_queues["cq"].has_cycle
    assert _subtree(cache, "cohort") == {("arm", "cpu"): 15000}
    assert cache.cohorts["cohort"].quotas[("arm", "cpu")].nominal == 10000
    assert {fr: v for fr, v in cache.cohorts["cohort"].usage.items() if v} == {}


def test_cohort_cycles_clusterqueue_joining_cohort_with_cycle_successfully_updates_old_cohort() -> None:
    cache = Cache()
    cache.add_or_update_cohort(cohort("cycle", parent="cycle"))
    cache.add_or_update_cohort(cohort("cohort", flavor_quotas("arm", cpu=10)))
    cache.add_or_update_cluster_queue(cluster_queue("cq", flavor_quotas("arm", cpu=5), cohort="cohort"))
    assert _subtree(cache, "cohort") == {("arm", "cpu"): 15000}
    cache.add_or_update_cluster_queue(cluster_queue("cq", flavor_quotas("arm", cpu=5), cohort="cycle"))
    assert cache.cluster_queues["cq"].has_cycle
    assert _subtree(cache, "cohort") == {("arm", "cpu"): 10000}


def test_cohort_cycles_cohort_switching_cohorts_updates_both_cohort_trees() -> None:
    cache = Cache()
    cache.add_or_update_cohort(cohort("root1"))
    cache.add_or_update_cohort(cohort("root2"))
    cache.add_or_update_cohort(cohort("cohort", flavor_quotas("arm", cpu=10), parent="root1"))
    assert (_subtree(cache, "root1"), _subtree(cache, "root2")) == ({("arm", "cpu"): 10000}, {})
    cache.add_or_update_cohort(cohort("cohort", flavor_quotas("arm", cpu=10), parent="root2"))
    assert (_subtree(cache, "root1"), _subtree(cache, "root2")) == ({}, {("arm", "cpu"): 10000})


def test_cohort_cycles_cohort_leaving_cohort_with_cycle_successfully_updates_new_cohort() -> None:
    cache = Cache()
    cache.add_or_update_cohort(cohort("cycle-root", parent="cycle-root"))
    cache.add_or_update_cohort(cohort("root"))
    cache.add_or_update_cohort(cohort("cohort", flavor_quotas("arm", cpu=10), parent="cycle-root"))
    cache.add_or_update_cohort(cohort("cohort", flavor_quotas("arm", cpu=10), parent="root"))
    assert _subtree(cache, "root") == {("arm", "cpu"): 10000}


def test_cohort_cycles_cohort_joining_cohort_with_cycle_successfully_updates_old_cohort() -> None:
    cache = Cache()
    cache.add_or_update_cohort(cohort("cycle-root", parent="cycle-root"))
    cache.add_or_update_cohort(cohort("root"))
    cache.add_or_update_cohort(cohort("cohort", flavor_quotas("arm", cpu=10), parent="root"))
    assert _subtree(cache, "root") == {("arm", "cpu"): 10000}
    cache.add_or_update_cohort(cohort("cohort", flavor_quotas("arm", cpu=10), parent="cycle-root"))
    assert _subtree(cache, "root") == {}


def test_cohort_reattached_inside_a_cycle_is_counted_once_the_cycle_breaks() -> None:
    """Upstream keeps a tree with a cycle as it was (``updateCohortTreeResources`` returns
    ``ErrCohortHasCycle`` before ``updateCohortResourceNode``) and recomputes it from the root once
    an edit leaves no cycle. A cohort attached to a member of the cycle meanwhile then counts in
    every ancestor's subtree quota."""
    cache = Cache()
    cache.add_or_update_cohort(cohort("c", _default_cpu(1)))
    cache.add_or_update_cohort(cohort("b", _default_cpu(9), parent="c"))
    cache.add_or_update_cohort(cohort("a", _default_cpu(2), parent="b"))
    cache.add_or_update_cohort(cohort("c", _default_cpu(1), parent="a"))
    assert cache.cycle_cohorts == {"a", "b", "c"}
    cache.add_or_update_cohort(cohort("d", _default_cpu(4), parent="b"))
    cache.add_or_update_cohort(cohort("c", _default_cpu(1)))
    assert cache.cycle_cohorts == set()
    assert [_subtree(cache, n) for n in ("c", "b", "a", "d")] == [
        {("default", "cpu"): 16000},
        {("default", "cpu"): 15000},
        {("default", "cpu"): 2000},
        {("default", "cpu"): 4000},
    ]


_NAMES = ("a", "b", "c", "d")
_EDIT = st.one_of(
    st.tuples(st.just("cohort"), st.sampled_from(_NAMES), st.sampled_from(("", *_NAMES)), st.integers(0, 9)),
    st.tuples(st.just("cq"), st.sampled_from(("q1", "q2")), st.sampled_from(_NAMES), st.integers(0, 9)),
    st.tuples(st.just("delete"), st.sampled_from(_NAMES), st.just(""), st.just(0)),
)


def _outside_cycles(cache: Cache) -> dict[str, tuple[Any, ...]]:
    """Subtree quota, usage and parent of every node whose chain of parents meets no cycle."""

    def clean(name: str) -> bool:
        seen: set[str] = set()
        while name and name not in seen:
            if name in cache.cycle_cohorts:
                return False
            seen.add(name)
            obj = cache.cohort_objects.get(name)
            name = obj.spec.parent_name if obj is not None else ""
        return True

    out: dict[str, tuple[Any, ...]] = {}
    for name, node in cache.cohorts.items():
        if clean(name):
            out[name] = (_subtree(cache, name), {k: v for k, v in node.usage.items() if v}, node.parent and node.parent.name)
    for name, cq in cache.cluster_queues.items():
        if not cq.has_cycle:
            out[name] = (dict(cq.node.subtree_quota), cq.node.parent and cq.node.parent.name)
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(_EDIT, max_size=14))
def test_cohort_edits_through_cycles_leave_the_trees_outside_cycles_as_built_from_scratch(
    edits: list[tuple[str, str, str, int]],
) -> None:
    """After any edits (cycles made, cohorts re-attached inside them, cycles broken), every tree
    outside a cycle equals the one a cache built from the final objects holds: the trees an edit
    joins or leaves are recomputed from their roots (``updateCohortTreeResources`` and
    ``updateCohortTreeResourcesIfNoCycle`` of the old parent)."""
    cache = Cache()
    cohorts: dict[str, Any] = {}
    cqs: dict[str, Any] = {}
    for kind, name, parent, cpu in edits:
        if kind == "cohort":
            cohorts[name] = cohort(name, _default_cpu(cpu), parent="" if parent == name else parent)
            cache.add_or_update_cohort(cohorts[name])
        elif kind == "cq":
            cqs[name] = cluster_queue(name, _default_cpu(cpu), cohort=parent)
            cache.add_or_update_cluster_queue(cqs[name])
        else:
            cohorts.pop(name, None)
            cache.delete_cohort(name)
        fresh = Cache()
        for obj in cohorts.values():
            fresh.add_or_update_cohort(obj)
        for obj in cqs.values():
            fresh.add_or_update_cluster_queue(obj)
        assert fresh.cycle_cohorts == cache.cycle_cohorts
        assert _outside_cycles(cache) == _outside_cycles(fresh)


# --- TestDeleteCohortUpdatesAncestorSubtreeQuota ---------------------------------------------------------


def _default_cpu(n: int) -> Any:
    return flavor_quotas("default", cpu=n)


def _child_of_root(cache: Cache) -> None:
    cache.add_or_update_cohort(cohort("root", _default_cpu(10)))
    cache.add_or_update_cohort(cohort("child", _default_cpu(5), parent="root"))


def _root_mid_leaf(cache: Cache) -> None:
    cache.add_or_update_cohort(cohort("root", _default_cpu(10)))
    cache.add_or_update_cohort(cohort("mid", _default_cpu(5), parent="root"))
    cache.add_or_update_cohort(cohort("leaf", _default_cpu(3), parent="mid"))


def _root_mid_cq(cache: Cache) -> None:
    cache.add_or_update_cohort(cohort("root", _default_cpu(10)))
    cache.add_or_update_cohort(cohort("mid", _default_cpu(5), parent="root"))
    cache.add_or_update_cluster_queue(cluster_queue("cq", _default_cpu(7), cohort="mid"))


DELETE_COHORT_CASES: list[tuple[str, Op, str, dict[str, int], dict[str, int]]] = [
    ("deleting child cohort updates parent SubtreeQuota", _child_of_root, "child", {"root": 15000}, {"root": 10000}),
    (
        "deleting grandchild cohort updates all ancestors SubtreeQuota",
        _root_mid_leaf,
        "leaf",
        {"mid": 8000, "root": 18000},
        {"mid": 5000, "root": 15000},
    ),
    (
        "deleting cohort with children updates parent SubtreeQuota",
        _root_mid_cq,
        "mid",
        {"root": 22000},
        {"root": 10000},
    ),
]


@pytest.mark.parametrize(
    ("name", "setup", "delete", "before", "after"), DELETE_COHORT_CASES, ids=[c[0] for c in DELETE_COHORT_CASES]
)
def test_delete_cohort_updates_ancestor_subtree_quota(
    name: str, setup: Op, delete: str, before: dict[str, int], after: dict[str, int]
) -> None:
    cache = Cache()
    setup(cache)
    assert {n: cache.cohorts[n].subtree_quota[("default", "cpu")] for n in before} == before
    cache.delete_cohort(delete)
    assert {n: cache.cohorts[n].subtree_quota.get(("default", "cpu"), 0) for n in after} == after


# --- TestClusterQueuesUsingFlavor, TestClusterQueuesUsingAdmissionChecks -----------------------------------


def _foo_cq() -> ClusterQueue:
    return cluster_queue("fooCq", flavor_quotas("x86", cpu=5))


def _fizz_cq() -> ClusterQueue:
    return cluster_queue("fizzCq", flavor_quotas("x86", cpu=5), flavor_quotas("aarch64", cpu=3))


USING_FLAVOR_CASES: list[tuple[str, list[ClusterQueue], list[str]]] = [
    ("single clusterQueue with flavor in use", [_foo_cq()], ["fooCq"]),
    ("single clusterQueue with no flavor", [cluster_queue("barCq")], []),
    ("multiple clusterQueues with flavor in use", [_foo_cq(), cluster_queue("barCq"), _fizz_cq()], ["fizzCq", "fooCq"]),
]


@pytest.mark.parametrize(("name", "cqs", "want"), USING_FLAVOR_CASES, ids=[c[0] for c in USING_FLAVOR_CASES])
def test_cluster_queues_using_flavor(name: str, cqs: list[ClusterQueue], want: list[str]) -> None:
    cache = Cache()
    cache.add_or_update_flavor(flavor("x86"))
    cache.add_or_update_flavor(flavor("aarch64"))
    for cq in cqs:
        cache.add_or_update_cluster_queue(cq)
    assert cache.cluster_queues_using_flavor("x86") == want


def _checks(name: str, *checks: str) -> ClusterQueue:
    return cluster_queue(name, admission_checks={c: [] for c in checks})


USING_CHECK_CASES: list[tuple[str, list[ClusterQueue], str, list[str]]] = [
    ("single clusterQueue with check in use", [_checks("fooCq", "ac1")], "ac1", ["fooCq"]),
    (
        "single clusterQueue with AdmissionCheckStrategy in use",
        [_checks("strategyCq", "ac1", "ac3")],
        "ac3",
        ["strategyCq"],
    ),
    ("single clusterQueue with no checks", [cluster_queue("barCq")], "ac1", []),
    (
        "multiple clusterQueues with checks in use",
        [_checks("fooCq", "ac1"), cluster_queue("barCq"), _checks("fizzCq", "ac1", "ac2"), _checks("strategyCq", "ac1", "ac3")],
        "ac1",
        ["fizzCq", "fooCq", "strategyCq"],
    ),
]


@pytest.mark.parametrize(("name", "cqs", "check", "want"), USING_CHECK_CASES, ids=[c[0] for c in USING_CHECK_CASES])
def test_cluster_queues_using_admission_checks(name: str, cqs: list[ClusterQueue], check: str, want: list[str]) -> None:
    cache = Cache()
    for ac in ("ac1", "ac2", "ac3"):
        cache.add_or_update_admission_check(admission_check(ac, active=False))
    for cq in cqs:
        cache.add_or_update_cluster_queue(cq)
    assert cache.cluster_queues_using_admission_check(check) == want


# --- TestMatchingClusterQueues -----------------------------------------------------------------------------


def test_matching_cluster_queues() -> None:
    # Upstream's MatchingClusterQueues serves the namespace handler, which retries the
    # ClusterQueues whose selector newly matches the namespace: pykueue's
    # ``QueueManager.set_namespace_labels`` (a namespace seen for the first time matches anew).
    cqs: Sequence[ClusterQueue] = [
        cluster_queue("matching1", namespace_selector=LabelSelector()),
        cluster_queue("not-matching"),
        cluster_queue(
            "matching2",
            namespace_selector=LabelSelector(
                match_expressions=[LabelSelectorRequirement(key="dep", operator="In", values=["eng"])]
            ),
        ),
    ]
    cqs[1].spec.namespace_selector = None
    cache = Cache()
    manager = QueueManager(tree=cache)
    for cq in cqs:
        manager.add_cluster_queue(cache.add_or_update_cluster_queue(cq))
    assert manager.set_namespace_labels("ns", {"dep": "eng"}) == {"matching1", "matching2"}
