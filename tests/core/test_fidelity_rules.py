"""Four rules where pykueue used to decide differently from Kueue (issue 11), one table per rule.

1. A NoFit pod set's reason comes only from its recorded flavor attempts (upstream
   ``flavorassigner.go`` ``resolveNoFitReason``), resources visited in FNV-64a order; an empty
   reason leaves the condition to the workload controller (PendingEvaluation, one of two messages).
2. Between cycles of ``pykueue schedule``, the retry of parked workloads requested by a change
   made since the previous cycle (eviction completed, workload finished) is due when the next
   cycle starts, and happens before it.
3. Evictions the controllers issue while the state loads complete before cycle 1.
4. Amounts in flavor-assignment messages print as ``ResourceFormatter`` prints them
   (pkg/resources/resource_formatter.go): bytes via BinarySI, then re-parsed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from builders import (
    admitted,
    at,
    build,
    cluster_queue,
    conditions,
    events,
    flavor,
    flavor_quotas,
    info,
    local_queue,
    options,
    resource_group,
    simulate,
    taint,
    workload,
)

from pykueue.api.kueue import RequeueState
from pykueue.api.meta import Condition
from pykueue.api.quantity import UNLIMITED, format_amount
from pykueue.core.quota.tree import FlavorResource
from pykueue.core.scheduler.flavorassigner.assigner import assign_flavors, resource_order
from pykueue.core.scheduler.flavorassigner.assignment import PreemptionMode
from pykueue.core.workload import transitions
from pykueue.core.workload.info import WorkloadInfo
from pykueue.sim.cluster import SimulatedCluster

TPU = "example.com/tpu"  # FNV-64a order: memory < example.com/tpu < cpu
LATE = "example.com/r650"  # FNV-64a order: cpu < example.com/r650
FLAVORS = [flavor("small"), flavor("large"), flavor("spot", taints=[taint("spot", "true")])]
NMF, EXCEEDS = "NoMatchingFlavor", "ExceedsMaxQuota"
PENDING_MSG = "Workload is pending evaluation in the scheduling queue"
UNAVAILABLE = f"couldn't assign flavors to pod set main: resource {TPU} unavailable in ClusterQueue"


def preempt_oracle(cq: Any, wl: WorkloadInfo, fr: FlavorResource, quantity: int) -> tuple[PreemptionMode, int]:
    return PreemptionMode.PREEMPT, 0


def test_resource_names_used_below_sort_as_the_cases_need() -> None:
    assert resource_order(("cpu", "memory", TPU, LATE)) == ("memory", TPU, "cpu", LATE)


# --- rule 1: the NoFit reason of a pod set with a resource no group covers -------------------------


@dataclass
class NoFitCase:
    name: str
    groups: list[Any]
    requests: dict[str, str]
    want: str
    want_attempts: list[str] = field(default_factory=list)
    gates: dict[str, bool] = field(default_factory=dict)


NO_FIT_CASES = [
    NoFitCase(
        "uncovered resource after a group that fit: no reason",
        [flavor_quotas("small", cpu=8, memory="16Gi")],
        {"cpu": "2", "memory": "1Gi", TPU: "1"},
        "",
        ["small"],
    ),
    NoFitCase(
        "uncovered resource after a group with a NoFit alternative: that attempt's reason",
        [flavor_quotas("small", cpu=1, memory="16Gi"), flavor_quotas("large", cpu=8, memory="16Gi")],
        {"cpu": "2", "memory": "1Gi", TPU: "1"},
        EXCEEDS,
        ["large", "small"],
    ),
    NoFitCase(
        "uncovered resource visited before every covered resource: NoMatchingFlavor",
        [flavor_quotas("small", cpu=8, memory="16Gi")],
        {"cpu": "2", TPU: "1"},
        NMF,
    ),
    NoFitCase(
        "uncovered resource last, after two groups got flavors: the NoFit attempt of the first decides",
        [
            resource_group(flavor_quotas("small", memory="1Gi"), flavor_quotas("large", memory="16Gi")),
            resource_group(flavor_quotas("medium", cpu=8)),
        ],
        {"cpu": "2", "memory": "2Gi", LATE: "1"},
        EXCEEDS,
        ["large", "medium", "small"],
    ),
    NoFitCase(
        "uncovered resource last, two groups: most severe of the per-group minimums",
        [
            resource_group(flavor_quotas("small", memory="1Gi"), flavor_quotas("large", memory="16Gi")),
            resource_group(flavor_quotas("spot", cpu=8), flavor_quotas("medium", cpu=8)),
        ],
        {"cpu": "2", "memory": "2Gi", LATE: "1"},
        NMF,
        ["large", "medium", "small", "spot"],
    ),
    NoFitCase(
        "no flavor of a group fits: the least severe of its attempts",
        [flavor_quotas("spot", cpu=8), flavor_quotas("small", cpu=1)],
        {"cpu": "2"},
        EXCEEDS,
        ["small", "spot"],
    ),
    NoFitCase(
        "without UnadmittedWorkloadsObservability no reason is resolved",
        [flavor_quotas("small", cpu=8, memory="16Gi")],
        {"cpu": "2", TPU: "1"},
        "",
        gates={"UnadmittedWorkloadsObservability": False},
    ),
]


@pytest.mark.parametrize("case", NO_FIT_CASES, ids=[c.name for c in NO_FIT_CASES])
def test_no_fit_reason_of_uncovered_resource(case: NoFitCase) -> None:
    opts = options(gates=case.gates)
    cq = cluster_queue("cq", *case.groups)
    cache, snap = build([*FLAVORS, flavor("medium"), cq], opts)
    wl = info(workload("wl", requests=case.requests), opts)
    a = assign_flavors(wl, cache.cluster_queues["cq"], snap, opts, preempt_oracle)
    assert [at.flavor for at in a.pod_sets[0].attempts] == case.want_attempts
    assert a.pod_sets[0].flavors == {}
    assert a.no_fit_reason() == case.want


@dataclass
class PendingCase:
    name: str
    strategy: str
    groups: list[Any]
    requests: dict[str, str]
    want: tuple[str, str, str]
    want_event: str | None


PENDING_CASES = [
    PendingCase(
        "BestEffortFIFO, no reason: PendingEvaluation, bypassed (its hash was bulk-moved)",
        "BestEffortFIFO",
        [flavor_quotas("small", cpu=8, memory="16Gi")],
        {"cpu": "2", "memory": "1Gi", TPU: "1"},
        ("False", "PendingEvaluation", transitions.BYPASSED_MESSAGE),
        None,
    ),
    PendingCase(
        "StrictFIFO, no reason: PendingEvaluation, pending evaluation",
        "StrictFIFO",
        [flavor_quotas("small", cpu=8, memory="16Gi")],
        {"cpu": "2", "memory": "1Gi", TPU: "1"},
        ("False", "PendingEvaluation", PENDING_MSG),
        None,
    ),
    PendingCase(
        "reason from a NoFit alternative is the scheduler's",
        "BestEffortFIFO",
        [flavor_quotas("small", cpu=1, memory="16Gi"), flavor_quotas("large", cpu=8, memory="16Gi")],
        {"cpu": "2", "memory": "1Gi", TPU: "1"},
        ("False", EXCEEDS, UNAVAILABLE),
        EXCEEDS,
    ),
    PendingCase(
        "no attempt recorded: NoMatchingFlavor",
        "StrictFIFO",
        [flavor_quotas("small", cpu=8, memory="16Gi")],
        {"cpu": "2", TPU: "1"},
        ("False", NMF, UNAVAILABLE),
        NMF,
    ),
]


@pytest.mark.parametrize("case", PENDING_CASES, ids=[c.name for c in PENDING_CASES])
def test_pending_condition_after_no_fit(case: PendingCase) -> None:
    cluster = simulate(
        [
            *FLAVORS,
            cluster_queue("cq", *case.groups, queueing_strategy=case.strategy),
            local_queue("lq", "default", "cq"),
            workload("wl", requests=case.requests),
        ]
    )
    cluster.run(cycles=2)
    wl = cluster.get_workload("default/wl")
    assert wl is not None
    assert conditions(wl)["QuotaReserved"] == case.want
    # Upstream's Warning for an empty reason has an empty reason and action: events.k8s.io/v1 rejects it.
    want_events = set() if case.want_event is None else {case.want_event}
    assert {e[2] for e in events(cluster, "default/wl")} == want_events


# --- rule 2: retries requested between cycles are due when the next cycle starts -------------------


def _cohort_with_borrower() -> list[Any]:
    return [
        flavor("default"),
        cluster_queue("cq-own", flavor_quotas("default", cpu=4), cohort="pool", preemption={"reclaim_within_cohort": "Any"}),
        cluster_queue("cq-other", flavor_quotas("default", cpu=2), cohort="pool"),
        cluster_queue("cq-borrow", flavor_quotas("default", cpu=0), cohort="pool"),
        local_queue("own", "default", "cq-own"),
        local_queue("other", "default", "cq-other"),
        local_queue("borrow", "default", "cq-borrow"),
        admitted(
            workload("hog", queue="borrow", requests={"cpu": "5"}), "cq-borrow", {"cpu": "default"}, admitted_condition=True
        ),
        workload("claimer", queue="own", requests={"cpu": "4"}, created=at(10)),
        workload("waiter", queue="other", requests={"cpu": "2"}, created=at(20)),
        workload("later", queue="other", requests={"cpu": "1"}, created=at(30)),
    ]


def _finish(cluster: SimulatedCluster, key: str) -> None:
    wl = cluster.get_workload(key)
    assert wl is not None
    updated = transitions.copy_for_status(wl)
    transitions.set_condition(updated, "Finished", "True", "Succeeded", "Job finished successfully", cluster.now)
    cluster.write_workload_status(updated)


def _simple_queue() -> list[Any]:
    return [
        flavor("default"),
        cluster_queue("q", flavor_quotas("default", cpu=4)),
        local_queue("lq", "default", "q"),
        admitted(workload("w0", requests={"cpu": "4"}), "q", {"cpu": "default"}, admitted_condition=True),
        workload("w1", requests={"cpu": "2"}, created=at(10)),
    ]


def _backing_off() -> list[Any]:
    w1 = workload("w1", requests={"cpu": "2"}, created=at(10))
    w1.status.requeue_state = RequeueState(count=1, requeue_at=at(3601))
    w1.status.conditions = [
        Condition(
            type="Requeued",
            status="False",
            reason="PodsReadyTimeout",
            message="Exceeded the PodsReady timeout",
            last_transition_time=at(3500),
        )
    ]
    return [flavor("default"), cluster_queue("q", flavor_quotas("default", cpu=4)), local_queue("lq", "default", "q"), w1]


@dataclass
class BetweenCase:
    name: str
    objects: Any
    between: Any  # (cluster) -> None, run after cycle 1
    want_admitted: list[list[str]]


BETWEEN_CASES = [
    BetweenCase(
        "eviction completed between cycles: the cohort's parked workloads return for the next cycle",
        _cohort_with_borrower,
        lambda cluster: None,
        [[], ["default/claimer", "default/waiter"], []],
    ),
    BetweenCase(
        "workload finished between cycles: its ClusterQueue's parked workloads return for the next cycle",
        _simple_queue,
        lambda cluster: _finish(cluster, "default/w0"),
        [[], ["default/w1"], []],
    ),
    BetweenCase(
        "backoff ending at the new time: the workload is queued before the cycle",
        _backing_off,
        lambda cluster: None,
        [[], ["default/w1"], []],
    ),
]


@pytest.mark.parametrize("case", BETWEEN_CASES, ids=[c.name for c in BETWEEN_CASES])
def test_between_cycles(case: BetweenCase) -> None:
    cluster = simulate(case.objects())
    admitted_per_cycle = [cluster.run_cycle().admitted]
    case.between(cluster)
    for _ in range(len(case.want_admitted) - 1):
        cluster.advance(1.0)
        admitted_per_cycle.append(cluster.run_cycle().admitted)
    assert [sorted(a) for a in admitted_per_cycle] == case.want_admitted


def test_between_cycles_eviction_keeps_the_parked_head() -> None:
    """The parked head, not the next workload of its ClusterQueue, is tried once quota is released."""
    cluster = simulate(_cohort_with_borrower())
    cluster.run(cycles=3)
    later = cluster.get_workload("default/later")
    assert later is not None
    assert conditions(later)["QuotaReserved"][:2] == ("False", "WaitingForQuota")
    hog = cluster.get_workload("default/hog")
    assert hog is not None
    assert conditions(hog)["Requeued"] == ("True", "Preempted", conditions(hog)["Evicted"][2])
    # The eviction completed at the time of the cycle that issued it, as the job integration
    # completes it (upstream ``JobReconciler.ReconcileGenericJob``, "6. handle eviction").
    requeued = next(c for c in hog.status.conditions if c.type == "Requeued")
    assert requeued.last_transition_time == at(3600)


# --- rule 3: evictions issued at load complete before cycle 1 ---------------------------------------


def _stopped_cq() -> list[Any]:
    return [
        flavor("default"),
        cluster_queue("cq-stopped", flavor_quotas("default", cpu=2), cohort="pool", stop_policy="HoldAndDrain"),
        cluster_queue("cq-idle", flavor_quotas("default", cpu=4), cohort="pool"),
        cluster_queue("cq-live", flavor_quotas("default", cpu=0), cohort="pool"),
        local_queue("stopped", "default", "cq-stopped"),
        local_queue("live", "default", "cq-live"),
        admitted(workload("old", queue="stopped", requests={"cpu": "3"}), "cq-stopped", {"cpu": "default"}, admitted_condition=True),
        workload("new", queue="live", requests={"cpu": "5"}, created=at(10)),
    ]


def _stopped_lq() -> list[Any]:
    return [
        flavor("default"),
        cluster_queue("q", flavor_quotas("default", cpu=4)),
        local_queue("drained", "default", "q", stop_policy="HoldAndDrain"),
        local_queue("lq", "default", "q"),
        admitted(workload("old", queue="drained", requests={"cpu": "3"}), "q", {"cpu": "default"}, admitted_condition=True),
        workload("new", requests={"cpu": "3"}, created=at(10)),
    ]


def _already_evicted() -> list[Any]:
    old = admitted(workload("old", requests={"cpu": "3"}), "q", {"cpu": "default"}, admitted_condition=True)
    old.status.conditions.append(
        Condition(type="Evicted", status="True", reason="Preempted", message="Preempted", last_transition_time=at(3500))
    )
    return [
        flavor("default"),
        cluster_queue("q", flavor_quotas("default", cpu=4)),
        local_queue("lq", "default", "q"),
        old,
        workload("new", priority=5, requests={"cpu": "3"}, created=at(10)),
    ]


LOAD_CASES = [
    (
        "ClusterQueue HoldAndDrain: the drained quota is free in cycle 1",
        _stopped_cq,
        ("False", "ClusterQueueStopped", "The ClusterQueue is stopped"),
    ),
    (
        "LocalQueue HoldAndDrain: the drained quota is free in cycle 1",
        _stopped_lq,
        ("False", "LocalQueueStopped", "The LocalQueue is stopped"),
    ),
    (
        "eviction already in the state: released before cycle 1",
        _already_evicted,
        ("True", "Preempted", "Preempted"),
    ),
]


@pytest.mark.parametrize(("name", "objects", "requeued"), LOAD_CASES, ids=[c[0] for c in LOAD_CASES])
def test_load_time_eviction_completes_before_cycle_1(name: str, objects: Any, requeued: tuple[str, str, str]) -> None:
    cluster = simulate(objects())
    old = cluster.get_workload("default/old")
    assert old is not None and old.status.admission is None
    assert conditions(old)["Requeued"] == requeued
    assert not cluster.cache.has_workload("default/old")
    assert cluster.run_cycle().admitted == ["default/new"]


# --- rule 4: amounts in flavor-assignment messages -----------------------------------------------

FORMAT_CASES = [
    ("memory, not a multiple of 1024: BinarySI digits re-parsed as DecimalSI", "memory", 1_500_000_000, "1500M"),
    ("memory, a multiple of 1024", "memory", 3 * 1024**3, "3Gi"),
    ("memory, a multiple of 1024 but not of 1024**2", "memory", 1000 * 1024, "1000Ki"),
    ("memory below 1024", "memory", 1000, "1k"),
    ("memory re-parsed with a lower decimal suffix", "memory", 1_500_000, "1500k"),
    ("memory without a decimal suffix either", "memory", 1536, "1536"),
    ("memory, 10468982784 bytes", "memory", 9984 * 1024**2, "9984Mi"),
    ("ephemeral-storage like memory", "ephemeral-storage", 2_000_000, "2M"),
    ("hugepages like memory", "hugepages-2Mi", 3 * 2 * 1024**2, "6Mi"),
    ("cpu in milli-units", "cpu", 1500, "1500m"),
    ("whole cpus", "cpu", 3000, "3"),
    ("other resources DecimalSI", "example.com/gpu", 10468982784, "10468982784"),
    ("other resources, round thousands", "example.com/gpu", 2000, "2k"),
    ("unlimited", "memory", UNLIMITED, "<unlimited>"),
    ("zero", "memory", 0, "0"),
]


@pytest.mark.parametrize(("name", "resource", "value", "want"), FORMAT_CASES, ids=[c[0] for c in FORMAT_CASES])
def test_amount_format(name: str, resource: str, value: int, want: str) -> None:
    assert format_amount(resource, value) == want


@pytest.mark.parametrize(
    ("request_", "capacity", "want"),
    [
        (
            "1500M",
            "1G",
            "insufficient quota for memory in flavor small, previously considered podsets requests (0) "
            "+ current podset request (1500M) > maximum capacity (1G)",
        ),
        (
            "1536Mi",
            "1Gi",
            "insufficient quota for memory in flavor small, previously considered podsets requests (0) "
            "+ current podset request (1536Mi) > maximum capacity (1Gi)",
        ),
    ],
)
def test_exceeds_message_amounts(request_: str, capacity: str, want: str) -> None:
    opts = options()
    cq = cluster_queue("cq", flavor_quotas("small", memory=capacity))
    cache, snap = build([*FLAVORS, cq], opts)
    a = assign_flavors(info(workload("wl", requests={"memory": request_}), opts), cache.cluster_queues["cq"], snap, opts, preempt_oracle)
    assert a.pod_sets[0].reasons == [want]


def test_waiting_message_amount() -> None:
    cluster = simulate(
        [
            flavor("small"),
            cluster_queue("cq", flavor_quotas("small", memory="2G")),
            local_queue("lq", "default", "cq"),
            admitted(workload("resident", requests={"memory": "1G"}), "cq", {"memory": "small"}, admitted_condition=True),
            workload("wl", requests={"memory": "1500M"}, created=at(10)),
        ]
    )
    cluster.run_cycle()
    wl = cluster.get_workload("default/wl")
    assert wl is not None
    assert conditions(wl)["QuotaReserved"] == (
        "False",
        "WaitingForQuota",
        "couldn't assign flavors to pod set main: insufficient unused quota for memory in flavor small, 500M more needed",
    )

