"""Flavor assignment (upstream ``flavorassigner.go``), mirroring upstream ``flavorassigner_test.go``.

Case names are the upstream ones. The preemption oracle is a fake returning fixed outcomes per
(flavor, resource) and ``(Preempt, 0)`` otherwise, like upstream's ``testOracle``. Every field of
upstream's results for these inputs is compared in ``test_flavorassigner_upstream.py`` (which also
lists the upstream cases not ported).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from builders import (
    Q,
    admitted,
    build,
    cluster_queue,
    cohort,
    flavor,
    flavor_quotas,
    info,
    options,
    pod_set,
    resource_group,
    taint,
    toleration,
    usage,
    workload,
)

from pykueue.api.kueue import ClusterQueue, Cohort, PodSet, ReclaimablePod, ResourceFlavor
from pykueue.core.cache.cache import ClusterQueueState
from pykueue.core.quota.tree import FlavorResource
from pykueue.core.scheduler.flavorassigner.assigner import (
    FlavorAssigner,
    assign_flavors,
    fnv1a_64,
    is_preferred,
    last_assignment_outdated,
    resource_order,
)
from pykueue.core.scheduler.flavorassigner.assignment import (
    Assignment,
    GranularMode,
    Mode,
    PreemptionMode,
)
from pykueue.core.workload.info import LastAssignment, WorkloadInfo

NO_FIT, NO_CAND, PREEMPT, RECLAIM, FIT = (
    PreemptionMode.NO_FIT,
    PreemptionMode.NO_CANDIDATES,
    PreemptionMode.PREEMPT,
    PreemptionMode.RECLAIM,
    PreemptionMode.FIT,
)
Mi = 1024**2
Gi = 1024**3
GPU = "example.com/gpu"
EXCEEDS, WAITING, NMF = "ExceedsMaxQuota", "WaitingForQuota", "NoMatchingFlavor"
TRY_NEXT, MAY_STOP = "TryNextFlavor", "MayStopSearch"
LOWER = "LowerPriority"

FLAVORS = [
    flavor("default"),
    flavor("one", {"type": "one"}),
    flavor("two", {"type": "two"}),
    flavor("b_one", {"b_type": "one"}),
    flavor("b_two", {"b_type": "two"}),
    flavor("tainted", taints=[taint("instance", "spot")]),
    flavor(
        "taint_and_toleration",
        taints=[taint("instance", "spot")],
        tolerations=[toleration("instance", "spot", "NoSchedule")],
    ),
    flavor("label-x-a", {"x": "a"}),
    flavor("label-xy-b", {"x": "b", "y": "k"}),
]
SPOT_TOLERATION = toleration("instance", "spot", "NoSchedule")


class FakeOracle:
    """Fixed preemption outcomes per (flavor, resource); ``(Preempt, 0)`` otherwise."""

    def __init__(self, results: Mapping[FlavorResource, tuple[PreemptionMode, int]] | None = None) -> None:
        self.results = dict(results or {})
        self.calls: list[tuple[FlavorResource, int]] = []

    def __call__(
        self, cq: ClusterQueueState, wl: WorkloadInfo, fr: FlavorResource, quantity: int
    ) -> tuple[PreemptionMode, int]:
        self.calls.append((fr, quantity))
        return self.results.get(fr, (PREEMPT, 0))


Attempt = tuple[str, PreemptionMode, int, tuple[str, ...], str]
"""(flavor, granular preemption mode, borrow, reasons, NoFit reason)."""


@dataclass
class Case:
    cq: ClusterQueue
    pod_sets: list[PodSet]
    want_mode: Mode
    want_flavors: list[dict[str, tuple[str, Mode, int]]]
    want_reasons: list[list[str]] = field(default_factory=list)
    want_usage: dict[FlavorResource, int] | None = None
    want_borrowing: int = 0
    want_attempts: list[list[Attempt]] | None = None
    want_no_fit_reason: str | None = None
    others: list[ClusterQueue | Cohort] = field(default_factory=list)
    cq_usage: dict[FlavorResource, Any] = field(default_factory=dict)
    other_usage: dict[str, dict[FlavorResource, Any]] = field(default_factory=dict)
    oracle: dict[FlavorResource, tuple[PreemptionMode, int]] = field(default_factory=dict)
    flavors: list[ResourceFlavor] = field(default_factory=lambda: FLAVORS)
    fair_sharing: bool = False
    gates: dict[str, bool] = field(default_factory=dict)
    reclaimable: dict[str, int] = field(default_factory=dict)
    counts: list[int] | None = None
    deleted: list[str] = field(default_factory=list)
    """Flavors deleted from the cache once the snapshot is taken (upstream ``TestDeletedFlavors``)."""
    annotations: dict[str, str] = field(default_factory=dict)


def run(case: Case) -> Assignment:
    opts = options(gates=case.gates, fair_sharing=case.fair_sharing)
    cache, snap = build([*case.flavors, *case.others, case.cq], opts)
    for name in case.deleted:
        cache.delete_flavor(name)
    cq = cache.cluster_queues[case.cq.metadata.name]
    usage(cq, case.cq_usage)
    for name, amounts in case.other_usage.items():
        usage(cache.cluster_queues[name], amounts)
    wl = workload("wl", pod_sets=case.pod_sets)
    wl.metadata.annotations = dict(case.annotations)
    wl.status.reclaimable_pods = [ReclaimablePod(name=n, count=c) for n, c in case.reclaimable.items()]
    return assign_flavors(info(wl, opts), cq, snap, opts, FakeOracle(case.oracle), counts=case.counts)


def flavors_of(a: Assignment) -> list[dict[str, tuple[str, Mode, int]]]:
    return [
        {res: (fa.name, fa.mode, fa.tried_flavor_idx) for res, fa in ps.flavors.items()} for ps in a.pod_sets
    ]


def attempts_of(a: Assignment) -> list[list[Attempt]]:
    return [
        [
            (at.flavor, at.mode.preemption_mode, at.mode.borrowing_level, tuple(at.reasons), at.no_fit_reason)
            for at in ps.attempts
        ]
        for ps in a.pod_sets
    ]


def check(case: Case, a: Assignment) -> None:
    assert a.representative_mode() is case.want_mode
    assert flavors_of(a) == case.want_flavors
    want_reasons = case.want_reasons or [[] for _ in case.want_flavors]
    assert [sorted(ps.reasons) for ps in a.pod_sets] == [sorted(r) for r in want_reasons]
    if case.want_usage is not None:
        assert a.usage == case.want_usage
    assert a.borrowing == case.want_borrowing
    if case.want_attempts is not None:
        assert attempts_of(a) == case.want_attempts
    if case.want_no_fit_reason is not None:
        assert a.no_fit_reason() == case.want_no_fit_reason


def cq1(*groups: Any, **kw: Any) -> ClusterQueue:
    return cluster_queue("test-clusterqueue", *groups, **kw)


def cq2(*groups: Any, **kw: Any) -> ClusterQueue:
    return cluster_queue("test-secondary-clusterqueue", *groups, **kw)


SECONDARY = "test-secondary-clusterqueue"


def ps(name: str = "main", count: int = 1, **requests: Any) -> PodSet:
    return pod_set(name, count, requests)


def exceeds(res: str, flv: str, assumed: str, req: str, cap: str) -> str:
    return (
        f"insufficient quota for {res} in flavor {flv}, previously considered podsets requests ({assumed}) "
        f"+ current podset request ({req}) > maximum capacity ({cap})"
    )


def unused(res: str, flv: str, more: str) -> str:
    return f"insufficient unused quota for {res} in flavor {flv}, {more} more needed"


CASES: dict[str, Case] = {
    "single flavor, fits": Case(
        cq=cq1(flavor_quotas("default", cpu=1, memory="2Mi")),
        pod_sets=[ps(cpu="1", memory="1Mi")],
        want_mode=Mode.FIT,
        want_flavors=[{"cpu": ("default", Mode.FIT, -1), "memory": ("default", Mode.FIT, -1)}],
        want_usage={("default", "cpu"): 1000, ("default", "memory"): Mi},
        want_attempts=[[("default", FIT, 0, (), "")]],
    ),
    "single flavor, fits tainted flavor": Case(
        cq=cq1(flavor_quotas("tainted", cpu=4)),
        pod_sets=[pod_set("main", 1, {"cpu": "1"}, tolerations=[SPOT_TOLERATION])],
        want_mode=Mode.FIT,
        want_flavors=[{"cpu": ("tainted", Mode.FIT, -1)}],
        want_usage={("tainted", "cpu"): 1000},
    ),
    "single flavor, fits tainted flavor with toleration": Case(
        cq=cq1(flavor_quotas("taint_and_toleration", cpu=4)),
        pod_sets=[ps(cpu="1")],
        want_mode=Mode.FIT,
        want_flavors=[{"cpu": ("taint_and_toleration", Mode.FIT, -1)}],
        want_usage={("taint_and_toleration", "cpu"): 1000},
    ),
    "single flavor, used resources, doesn't fit": Case(
        cq=cq1(flavor_quotas("default", cpu=4)),
        cq_usage={("default", "cpu"): 3},
        pod_sets=[ps(cpu="2")],
        want_mode=Mode.PREEMPT,
        want_flavors=[{"cpu": ("default", Mode.PREEMPT, -1)}],
        want_reasons=[[unused("cpu", "default", "1")]],
        want_usage={("default", "cpu"): 2000},
        want_attempts=[[("default", PREEMPT, 0, (unused("cpu", "default", "1"),), "")]],
    ),
    "multiple resource groups, fits": Case(
        cq=cq1(
            resource_group(flavor_quotas("one", cpu=2), flavor_quotas("two", cpu=4)),
            resource_group(flavor_quotas("b_one", memory="1Gi"), flavor_quotas("b_two", memory="5Gi")),
        ),
        pod_sets=[ps(cpu="3", memory="10Mi")],
        want_mode=Mode.FIT,
        want_flavors=[{"cpu": ("two", Mode.FIT, -1), "memory": ("b_one", Mode.FIT, 0)}],
        want_usage={("two", "cpu"): 3000, ("b_one", "memory"): 10 * Mi},
        want_attempts=[
            [
                ("b_one", FIT, 0, (), ""),
                ("one", NO_FIT, 0, (exceeds("cpu", "one", "0", "3", "2"),), EXCEEDS),
                ("two", FIT, 0, (), ""),
            ]
        ],
    ),
    "multiple flavors, leader worker set, leader and workers request the same resources fits": Case(
        cq=cq1(flavor_quotas("one", cpu=4), flavor_quotas("two", cpu=9)),
        pod_sets=[
            pod_set("worker", 4, {"cpu": "2"}, group="group1"),
            pod_set("leader", 1, {"cpu": "1"}, group="group1"),
        ],
        want_mode=Mode.FIT,
        want_flavors=[{"cpu": ("two", Mode.FIT, -1)}, {"cpu": ("two", Mode.FIT, -1)}],
        want_usage={("two", "cpu"): 9000},
    ),
    "multiple flavors, leader worker set, workers request GPU, leader does not request GPU, fits": Case(
        cq=cq1(
            resource_group(flavor_quotas("one", cpu=10, memory=10)),
            resource_group(flavor_quotas("two", {"cpu": 5, "memory": 5, GPU: 4})),
        ),
        pod_sets=[
            pod_set("worker", 4, {"cpu": "1", "memory": "1", GPU: "1"}, group="group1"),
            pod_set("leader", 1, {"cpu": "1", "memory": "1"}, group="group1"),
        ],
        want_mode=Mode.FIT,
        want_flavors=[
            {"cpu": ("two", Mode.FIT, -1), "memory": ("two", Mode.FIT, -1), GPU: ("two", Mode.FIT, -1)},
            {"cpu": ("two", Mode.FIT, -1), "memory": ("two", Mode.FIT, -1)},
        ],
        want_usage={("two", "cpu"): 5000, ("two", "memory"): 5, ("two", GPU): 4},
    ),
    "multiple flavors, leader worker set, workers request GPU, leader does not request GPU, does not fit, without group it would fit": Case(
        cq=cq1(flavor_quotas("one", {"cpu": 4, GPU: 4}), flavor_quotas("two", {"cpu": 5, GPU: 0})),
        pod_sets=[
            pod_set("worker", 4, {"cpu": "1", GPU: "1"}, group="group1"),
            pod_set("leader", 1, {"cpu": "1"}, group="group1"),
        ],
        want_mode=Mode.NO_FIT,
        want_flavors=[{}, {}],
        want_reasons=[
            [exceeds("cpu", "one", "0", "5", "4"), exceeds(GPU, "two", "0", "4", "0")],
            [exceeds("cpu", "one", "0", "5", "4"), exceeds(GPU, "two", "0", "4", "0")],
        ],
        want_usage={},
        want_no_fit_reason=EXCEEDS,
    ),
    "multiple resource groups, one could fit with preemption, other doesn't fit": Case(
        cq=cq1(
            resource_group(flavor_quotas("one", cpu=3)),
            resource_group(flavor_quotas("b_one", memory="1Mi")),
        ),
        cq_usage={("one", "cpu"): 1},
        pod_sets=[ps(cpu="3", memory="10Mi")],
        want_mode=Mode.NO_FIT,
        want_flavors=[{}],
        want_reasons=[[exceeds("memory", "b_one", "0", "10Mi", "1Mi")]],
        want_usage={},
        want_attempts=[[("b_one", NO_FIT, 0, (exceeds("memory", "b_one", "0", "10Mi", "1Mi"),), EXCEEDS)]],
        want_no_fit_reason=EXCEEDS,
    ),
    "multiple resource groups with multiple resources, fits": Case(
        cq=cq1(
            resource_group(
                flavor_quotas("one", cpu=2, memory="1Gi"), flavor_quotas("two", cpu=4, memory="15Mi")
            ),
            resource_group(flavor_quotas("b_one", {GPU: 4}), flavor_quotas("b_two", {GPU: 2})),
        ),
        pod_sets=[pod_set("main", 1, {"cpu": "3", "memory": "10Mi", GPU: "3"})],
        want_mode=Mode.FIT,
        want_flavors=[
            {"cpu": ("two", Mode.FIT, -1), "memory": ("two", Mode.FIT, -1), GPU: ("b_one", Mode.FIT, 0)}
        ],
        want_usage={("two", "cpu"): 3000, ("two", "memory"): 10 * Mi, ("b_one", GPU): 3},
    ),
    "multiple resource groups with multiple resources, fits with different modes": Case(
        cq=cq1(
            resource_group(
                flavor_quotas("one", cpu=2, memory="1Gi"), flavor_quotas("two", cpu=4, memory="15Mi")
            ),
            resource_group(flavor_quotas("b_one", {GPU: 4})),
            cohort="test-cohort",
        ),
        others=[cq2(flavor_quotas("b_one", {GPU: 0}), cohort="test-cohort")],
        cq_usage={("two", "memory"): "10Mi"},
        other_usage={SECONDARY: {("b_one", GPU): 2}},
        oracle={("two", "memory"): (PREEMPT, 1)},
        pod_sets=[pod_set("main", 1, {"cpu": "3", "memory": "10Mi", GPU: "3"})],
        want_mode=Mode.PREEMPT,
        want_flavors=[
            {
                "cpu": ("two", Mode.FIT, -1),
                "memory": ("two", Mode.PREEMPT, -1),
                GPU: ("b_one", Mode.PREEMPT, -1),
            }
        ],
        want_reasons=[
            [
                exceeds("cpu", "one", "0", "3", "2"),
                unused("memory", "two", "5Mi"),
                unused(GPU, "b_one", "1"),
            ]
        ],
        want_borrowing=1,
        want_usage={("two", "cpu"): 3000, ("two", "memory"): 10 * Mi, ("b_one", GPU): 3},
        want_attempts=[
            [
                ("b_one", PREEMPT, 0, (unused(GPU, "b_one", "1"),), ""),
                ("one", NO_FIT, 0, (exceeds("cpu", "one", "0", "3", "2"),), EXCEEDS),
                ("two", PREEMPT, 1, (unused("memory", "two", "5Mi"),), ""),
            ]
        ],
    ),
    "multiple resources in a group, doesn't fit": Case(
        cq=cq1(flavor_quotas("one", cpu=2, memory="1Gi"), flavor_quotas("two", cpu=4, memory="5Mi")),
        pod_sets=[ps(cpu="3", memory="10Mi")],
        want_mode=Mode.NO_FIT,
        want_flavors=[{}],
        want_reasons=[[exceeds("cpu", "one", "0", "3", "2"), exceeds("memory", "two", "0", "10Mi", "5Mi")]],
        want_usage={},
        want_no_fit_reason=EXCEEDS,
    ),
    "multiple flavors, fits while skipping tainted flavor": Case(
        cq=cq1(flavor_quotas("tainted", cpu=4), flavor_quotas("two", cpu=4)),
        pod_sets=[ps(cpu="3")],
        want_mode=Mode.FIT,
        want_flavors=[{"cpu": ("two", Mode.FIT, -1)}],
        want_attempts=[
            [
                (
                    "tainted",
                    NO_FIT,
                    0,
                    ("untolerated taint {instance spot NoSchedule <nil>} in flavor tainted",),
                    NMF,
                ),
                ("two", FIT, 0, (), ""),
            ]
        ],
    ),
    "multiple flavors, fits a node selector": Case(
        cq=cq1(flavor_quotas("one", cpu=4), flavor_quotas("two", cpu=4)),
        pod_sets=[
            pod_set(
                "main",
                1,
                {"cpu": "1"},
                node_selector={"type": "two", "ignored1": "foo"},
                affinity_terms=[[{"key": "ignored2", "operator": "In", "values": ["bar"]}]],
            )
        ],
        want_mode=Mode.FIT,
        want_flavors=[{"cpu": ("two", Mode.FIT, -1)}],
        want_attempts=[
            [("one", NO_FIT, 0, ("flavor one doesn't match node affinity",), NMF), ("two", FIT, 0, (), "")]
        ],
    ),
    "multiple flavors, fits with node affinity": Case(
        cq=cq1(flavor_quotas("one", cpu=4, memory="1Gi"), flavor_quotas("two", cpu=4, memory="1Gi")),
        pod_sets=[
            pod_set(
                "main",
                1,
                {"cpu": "1", "memory": "1Mi"},
                node_selector={"ignored1": "foo"},
                affinity_terms=[[{"key": "type", "operator": "In", "values": ["two"]}]],
            )
        ],
        want_mode=Mode.FIT,
        want_flavors=[{"cpu": ("two", Mode.FIT, -1), "memory": ("two", Mode.FIT, -1)}],
    ),
    "multiple flavors, node affinity fits any flavor": Case(
        cq=cq1(flavor_quotas("one", cpu=4), flavor_quotas("two", cpu=4)),
        pod_sets=[
            pod_set(
                "main",
                1,
                {"cpu": "1"},
                affinity_terms=[
                    [{"key": "ignored2", "operator": "In", "values": ["bar"]}],
                    [{"key": "cpuType", "operator": "In", "values": ["two"]}],
                ],
            )
        ],
        want_mode=Mode.FIT,
        want_flavors=[{"cpu": ("one", Mode.FIT, 0)}],
    ),
    "multiple flavors with different label keys, selector only uses flavor's own keys": Case(
        cq=cq1(flavor_quotas("label-x-a", cpu=4), flavor_quotas("label-xy-b", cpu=4)),
        pod_sets=[pod_set("main", 1, {"cpu": "1"}, node_selector={"x": "a", "y": "g"})],
        want_mode=Mode.FIT,
        want_flavors=[{"cpu": ("label-x-a", Mode.FIT, 0)}],
    ),
    "labelless flavor in group with labeled flavor, workload uses labeled selector": Case(
        cq=cq1(flavor_quotas("default", cpu=4), flavor_quotas("two", cpu=4)),
        pod_sets=[pod_set("main", 1, {"cpu": "1"}, node_selector={"type": "two"})],
        want_mode=Mode.FIT,
        want_flavors=[{"cpu": ("default", Mode.FIT, 0)}],
    ),
    "multiple flavors, doesn't fit node affinity": Case(
        cq=cq1(flavor_quotas("one", cpu=4), flavor_quotas("two", cpu=4)),
        pod_sets=[
            pod_set(
                "main",
                1,
                {"cpu": "1"},
                affinity_terms=[[{"key": "type", "operator": "In", "values": ["three"]}]],
            )
        ],
        want_mode=Mode.NO_FIT,
        want_flavors=[{}],
        want_reasons=[["flavor one doesn't match node affinity", "flavor two doesn't match node affinity"]],
        want_no_fit_reason=NMF,
    ),
    "multiple specs, fit different flavors": Case(
        cq=cq1(flavor_quotas("one", cpu=4), flavor_quotas("two", cpu=10)),
        pod_sets=[ps("driver", cpu="5"), ps("worker", cpu="3")],
        want_mode=Mode.FIT,
        want_flavors=[{"cpu": ("two", Mode.FIT, -1)}, {"cpu": ("one", Mode.FIT, 0)}],
        want_usage={("one", "cpu"): 3000, ("two", "cpu"): 5000},
    ),
    "multiple specs, fits borrowing": Case(
        cq=cq1(flavor_quotas("default", cpu=Q(2, borrowing_limit=98), memory="2Gi"), cohort="test-cohort"),
        others=[cq2(flavor_quotas("default", cpu=198, memory="198Gi"), cohort="test-cohort")],
        pod_sets=[ps("driver", cpu="4", memory="1Gi"), ps("worker", cpu="6", memory="4Gi")],
        want_mode=Mode.FIT,
        want_flavors=[
            {"cpu": ("default", Mode.FIT, -1), "memory": ("default", Mode.FIT, -1)},
            {"cpu": ("default", Mode.FIT, -1), "memory": ("default", Mode.FIT, -1)},
        ],
        want_borrowing=1,
        want_usage={("default", "cpu"): 10_000, ("default", "memory"): 5 * Gi},
        want_attempts=[[("default", FIT, 1, (), "")], [("default", FIT, 1, (), "")]],
    ),
    "not enough space to borrow": Case(
        cq=cq1(flavor_quotas("one", cpu=1), cohort="test-cohort"),
        others=[cq2(flavor_quotas("one", cpu=Q(10, lending_limit=0)), cohort="test-cohort")],
        other_usage={SECONDARY: {("one", "cpu"): 9}},
        pod_sets=[ps(cpu="2")],
        want_mode=Mode.NO_FIT,
        want_flavors=[{}],
        want_reasons=[[exceeds("cpu", "one", "0", "2", "1")]],
        want_no_fit_reason=EXCEEDS,
    ),
    "past max, but can preempt in ClusterQueue": Case(
        cq=cq1(flavor_quotas("one", cpu=Q(2, borrowing_limit=8)), cohort="test-cohort"),
        cq_usage={("one", "cpu"): 9},
        others=[cq2(flavor_quotas("one", cpu=98), cohort="test-cohort")],
        other_usage={SECONDARY: {("one", "cpu"): 9}},
        oracle={("one", "cpu"): (PREEMPT, 1)},
        pod_sets=[ps(cpu="2")],
        want_mode=Mode.PREEMPT,
        want_flavors=[{"cpu": ("one", Mode.PREEMPT, -1)}],
        want_reasons=[[unused("cpu", "one", "1")]],
        want_borrowing=1,
        want_attempts=[[("one", PREEMPT, 1, (unused("cpu", "one", "1"),), "")]],
    ),
    "past min, but can preempt in ClusterQueue": Case(
        cq=cq1(flavor_quotas("one", cpu=2)),
        cq_usage={("one", "cpu"): 1},
        pod_sets=[ps(cpu="2")],
        want_mode=Mode.PREEMPT,
        want_flavors=[{"cpu": ("one", Mode.PREEMPT, -1)}],
        want_reasons=[[unused("cpu", "one", "1")]],
    ),
    "past min, but can preempt in cohort and ClusterQueue": Case(
        cq=cq1(flavor_quotas("one", cpu=3), cohort="test-cohort"),
        cq_usage={("one", "cpu"): 2},
        others=[cq2(flavor_quotas("one", cpu=7), cohort="test-cohort")],
        other_usage={SECONDARY: {("one", "cpu"): 8}},
        oracle={("one", "cpu"): (PREEMPT, 1)},
        pod_sets=[ps(cpu="2")],
        want_mode=Mode.PREEMPT,
        want_flavors=[{"cpu": ("one", Mode.PREEMPT, -1)}],
        want_reasons=[[unused("cpu", "one", "2")]],
        want_borrowing=1,
    ),
    "can only preempt flavors that match affinity": Case(
        cq=cq1(flavor_quotas("one", cpu=4), flavor_quotas("two", cpu=4)),
        cq_usage={("one", "cpu"): 3, ("two", "cpu"): 3},
        pod_sets=[pod_set("main", 1, {"cpu": "2"}, node_selector={"type": "two"})],
        want_mode=Mode.PREEMPT,
        want_flavors=[{"cpu": ("two", Mode.PREEMPT, -1)}],
        want_reasons=[["flavor one doesn't match node affinity", unused("cpu", "two", "1")]],
    ),
    "each podset requires preemption on a different flavor": Case(
        cq=cq1(flavor_quotas("one", cpu=4), flavor_quotas("tainted", cpu=10)),
        cq_usage={("one", "cpu"): 3, ("tainted", "cpu"): 3},
        pod_sets=[
            ps("launcher", cpu="2"),
            pod_set("workers", 10, {"cpu": "1"}, tolerations=[SPOT_TOLERATION]),
        ],
        want_mode=Mode.PREEMPT,
        want_flavors=[{"cpu": ("one", Mode.PREEMPT, -1)}, {"cpu": ("tainted", Mode.PREEMPT, -1)}],
        want_reasons=[
            [
                unused("cpu", "one", "1"),
                "untolerated taint {instance spot NoSchedule <nil>} in flavor tainted",
            ],
            [exceeds("cpu", "one", "2", "10", "4"), unused("cpu", "tainted", "3")],
        ],
        want_usage={("one", "cpu"): 2000, ("tainted", "cpu"): 10_000},
    ),
    "resource not listed in clusterQueue": Case(
        cq=cq1(flavor_quotas("one", cpu=4)),
        pod_sets=[pod_set("main", 1, {GPU: "2"})],
        want_mode=Mode.NO_FIT,
        want_flavors=[{}],
        want_reasons=[[f"resource {GPU} unavailable in ClusterQueue"]],
        want_attempts=[[]],
        want_no_fit_reason=NMF,
    ),
    "zero resource request not in clusterQueue should succeed": Case(
        cq=cq1(flavor_quotas("default", cpu=4)),
        pod_sets=[pod_set("main", 1, {"cpu": "1", GPU: "0"})],
        want_mode=Mode.FIT,
        want_flavors=[{"cpu": ("default", Mode.FIT, -1)}],
        want_usage={("default", "cpu"): 1000},
    ),
    "zero resource request defined in clusterQueue should get flavor assigned": Case(
        cq=cq1(flavor_quotas("default", {"cpu": 4, GPU: 4})),
        pod_sets=[pod_set("main", 1, {"cpu": "1", GPU: "0"})],
        want_mode=Mode.FIT,
        want_flavors=[{"cpu": ("default", Mode.FIT, -1), GPU: ("default", Mode.FIT, -1)}],
        want_usage={("default", "cpu"): 1000, ("default", GPU): 0},
    ),
    "num pods fit": Case(
        cq=cq1(flavor_quotas("default", pods=3, cpu=10)),
        pod_sets=[ps(count=3, cpu="1")],
        want_mode=Mode.FIT,
        want_flavors=[{"cpu": ("default", Mode.FIT, -1), "pods": ("default", Mode.FIT, -1)}],
        want_usage={("default", "pods"): 3, ("default", "cpu"): 3000},
    ),
    "num pods don't fit": Case(
        cq=cq1(flavor_quotas("default", pods=2, cpu=10)),
        pod_sets=[ps(count=3, cpu="1")],
        want_mode=Mode.NO_FIT,
        want_flavors=[{}],
        want_reasons=[[exceeds("pods", "default", "0", "3", "2")]],
        want_no_fit_reason=EXCEEDS,
    ),
    "with reclaimable pods; reclaimablePods on": Case(
        cq=cq1(flavor_quotas("default", pods=3, cpu=10)),
        pod_sets=[ps(count=5, cpu="1")],
        reclaimable={"main": 2},
        want_mode=Mode.FIT,
        want_flavors=[{"cpu": ("default", Mode.FIT, -1), "pods": ("default", Mode.FIT, -1)}],
        want_usage={("default", "pods"): 3, ("default", "cpu"): 3000},
    ),
    "with reclaimable pods; reclaimablePods off": Case(
        cq=cq1(flavor_quotas("default", pods=5, cpu=10)),
        pod_sets=[ps(count=5, cpu="1")],
        reclaimable={"main": 2},
        gates={"ReclaimablePods": False},
        want_mode=Mode.FIT,
        want_flavors=[{"cpu": ("default", Mode.FIT, -1), "pods": ("default", Mode.FIT, -1)}],
        want_usage={("default", "pods"): 5, ("default", "cpu"): 5000},
    ),
    "preempt before try next flavor": Case(
        cq=cq1(
            flavor_quotas("one", pods=10, cpu=10),
            flavor_quotas("two", pods=10, cpu=10),
            fungibility={"when_can_borrow": MAY_STOP, "when_can_preempt": MAY_STOP},
        ),
        cq_usage={("one", "cpu"): 2},
        pod_sets=[ps(cpu="9")],
        want_mode=Mode.PREEMPT,
        want_flavors=[{"cpu": ("one", Mode.PREEMPT, 0), "pods": ("one", Mode.FIT, 0)}],
        want_reasons=[[unused("cpu", "one", "1")]],
        want_usage={("one", "cpu"): 9000, ("one", "pods"): 1},
        want_attempts=[[("one", PREEMPT, 0, (unused("cpu", "one", "1"),), "")]],
    ),
    "preempt try next flavor": Case(
        cq=cq1(flavor_quotas("one", pods=10, cpu=10), flavor_quotas("two", pods=10, cpu=10)),
        cq_usage={("one", "cpu"): 2},
        pod_sets=[ps(cpu="9")],
        want_mode=Mode.FIT,
        want_flavors=[{"cpu": ("two", Mode.FIT, -1), "pods": ("two", Mode.FIT, -1)}],
        want_usage={("two", "cpu"): 9000, ("two", "pods"): 1},
        want_attempts=[[("one", PREEMPT, 0, (unused("cpu", "one", "1"),), ""), ("two", FIT, 0, (), "")]],
    ),
    "borrow try next flavor, found the first flavor": Case(
        cq=cq1(
            flavor_quotas("one", pods=10, cpu=Q(10, borrowing_limit=1)),
            flavor_quotas("two", pods=10, cpu=1),
            cohort="test-cohort",
            fungibility={"when_can_borrow": TRY_NEXT, "when_can_preempt": TRY_NEXT},
        ),
        cq_usage={("one", "cpu"): 2},
        others=[cq2(flavor_quotas("one", cpu=1), cohort="test-cohort")],
        pod_sets=[ps(cpu="9")],
        want_mode=Mode.FIT,
        want_flavors=[{"cpu": ("one", Mode.FIT, -1), "pods": ("one", Mode.FIT, -1)}],
        want_borrowing=1,
        want_attempts=[
            [("one", FIT, 1, (), ""), ("two", NO_FIT, 0, (exceeds("cpu", "two", "0", "9", "1"),), EXCEEDS)]
        ],
    ),
    "borrow try next flavor, found the second flavor": Case(
        cq=cq1(
            flavor_quotas("one", pods=10, cpu=Q(10, borrowing_limit=1)),
            flavor_quotas("two", pods=10, cpu=10),
            cohort="test-cohort",
            fungibility={"when_can_borrow": TRY_NEXT, "when_can_preempt": TRY_NEXT},
        ),
        cq_usage={("one", "cpu"): 2},
        others=[cq2(flavor_quotas("one", cpu=1), cohort="test-cohort")],
        pod_sets=[ps(cpu="9")],
        want_mode=Mode.FIT,
        want_flavors=[{"cpu": ("two", Mode.FIT, -1), "pods": ("two", Mode.FIT, -1)}],
        want_attempts=[[("one", FIT, 1, (), ""), ("two", FIT, 0, (), "")]],
    ),
    "borrow before try next flavor": Case(
        cq=cq1(
            flavor_quotas("one", pods=10, cpu=Q(10, borrowing_limit=1)),
            flavor_quotas("two", pods=10, cpu=10),
            cohort="test-cohort",
        ),
        cq_usage={("one", "cpu"): 2},
        others=[cq2(flavor_quotas("one", cpu=1), cohort="test-cohort")],
        pod_sets=[ps(cpu="9")],
        want_mode=Mode.FIT,
        want_flavors=[{"cpu": ("one", Mode.FIT, 0), "pods": ("one", Mode.FIT, 0)}],
        want_borrowing=1,
    ),
    "when borrowing while preemption is needed for flavor one; WhenCanBorrow=MayStopSearch": Case(
        cq=cq1(
            flavor_quotas("one", cpu=Q(0, borrowing_limit=12)),
            flavor_quotas("two", cpu=12),
            cohort="test-cohort",
            preemption={"reclaim_within_cohort": LOWER, "borrow_within_cohort": LOWER},
            fungibility={"when_can_borrow": MAY_STOP, "when_can_preempt": MAY_STOP},
        ),
        others=[cq2(flavor_quotas("one", cpu=12), cohort="test-cohort")],
        other_usage={SECONDARY: {("one", "cpu"): 10}},
        oracle={("one", "cpu"): (PREEMPT, 1)},
        pod_sets=[ps(cpu="12")],
        want_mode=Mode.PREEMPT,
        want_flavors=[{"cpu": ("one", Mode.PREEMPT, 0)}],
        want_reasons=[[unused("cpu", "one", "10")]],
        want_borrowing=1,
        want_usage={("one", "cpu"): 12_000},
    ),
    "when borrowing while preemption is needed for flavor one, no borrowingLimit; WhenCanBorrow=MayStopSearch": Case(
        cq=cq1(
            flavor_quotas("one", cpu=0),
            flavor_quotas("two", cpu=12),
            cohort="test-cohort",
            preemption={"reclaim_within_cohort": LOWER, "borrow_within_cohort": LOWER},
            fungibility={"when_can_borrow": MAY_STOP, "when_can_preempt": MAY_STOP},
        ),
        others=[cq2(flavor_quotas("one", cpu=12), cohort="test-cohort")],
        other_usage={SECONDARY: {("one", "cpu"): 10}},
        oracle={("one", "cpu"): (PREEMPT, 1)},
        pod_sets=[ps(cpu="12")],
        want_mode=Mode.PREEMPT,
        want_flavors=[{"cpu": ("one", Mode.PREEMPT, 0)}],
        want_reasons=[[unused("cpu", "one", "10")]],
        want_borrowing=1,
    ),
    "when borrowing while preemption is needed for flavor one; WhenCanBorrow=TryNextFlavor": Case(
        cq=cq1(
            flavor_quotas("one", cpu=Q(0, borrowing_limit=12)),
            flavor_quotas("two", cpu=12),
            cohort="test-cohort",
            preemption={"reclaim_within_cohort": LOWER, "borrow_within_cohort": LOWER},
            fungibility={"when_can_borrow": TRY_NEXT, "when_can_preempt": MAY_STOP},
        ),
        others=[cq2(flavor_quotas("one", cpu=12), cohort="test-cohort")],
        pod_sets=[ps(cpu="12")],
        want_mode=Mode.FIT,
        want_flavors=[{"cpu": ("two", Mode.FIT, -1)}],
        want_attempts=[[("one", FIT, 1, (), ""), ("two", FIT, 0, (), "")]],
    ),
    "when borrowing while preemption is needed, but borrowingLimit exceeds the quota available in the cohort": Case(
        cq=cq1(
            flavor_quotas("one", cpu=Q(0, borrowing_limit=12)),
            cohort="test-cohort",
            preemption={"reclaim_within_cohort": LOWER, "borrow_within_cohort": LOWER},
        ),
        others=[cq2(flavor_quotas("one", cpu=11), cohort="test-cohort")],
        other_usage={SECONDARY: {("one", "cpu"): 10}},
        pod_sets=[ps(cpu="12")],
        want_mode=Mode.NO_FIT,
        want_flavors=[{}],
        want_reasons=[[exceeds("cpu", "one", "0", "12", "11")]],
        want_no_fit_reason=EXCEEDS,
    ),
    "lend try next flavor, found the second flavor": Case(
        cq=cq1(
            flavor_quotas("one", pods=10, cpu=Q(10, lending_limit=1)),
            flavor_quotas("two", pods=10, cpu=Q(10, lending_limit=0)),
            cohort="test-cohort",
            fungibility={"when_can_borrow": TRY_NEXT, "when_can_preempt": TRY_NEXT},
        ),
        cq_usage={("one", "cpu"): 2},
        others=[cq2(flavor_quotas("one", cpu=1), cohort="test-cohort")],
        pod_sets=[ps(cpu="9")],
        want_mode=Mode.FIT,
        want_flavors=[{"cpu": ("two", Mode.FIT, -1), "pods": ("two", Mode.FIT, -1)}],
        want_attempts=[[("one", FIT, 1, (), ""), ("two", FIT, 0, (), "")]],
    ),
    "lend try next flavor, found the first flavor": Case(
        cq=cq1(
            flavor_quotas("one", pods=10, cpu=Q(10, lending_limit=1)),
            flavor_quotas("two", pods=10, cpu=Q(1, lending_limit=0)),
            cohort="test-cohort",
            fungibility={"when_can_borrow": TRY_NEXT, "when_can_preempt": TRY_NEXT},
        ),
        cq_usage={("one", "cpu"): 2},
        others=[cq2(flavor_quotas("one", cpu=1), cohort="test-cohort")],
        pod_sets=[ps(cpu="9")],
        want_mode=Mode.FIT,
        want_flavors=[{"cpu": ("one", Mode.FIT, -1), "pods": ("one", Mode.FIT, -1)}],
        want_borrowing=1,
    ),
    "cannot preempt in cohort (oracle returns None) for the first flavor, tries the second flavor (which fits)": Case(
        cq=cq1(
            flavor_quotas("one", cpu=Q(0, borrowing_limit=2)),
            flavor_quotas("two", cpu=Q(0, borrowing_limit=2)),
            cohort="test-cohort",
            preemption={"reclaim_within_cohort": LOWER, "borrow_within_cohort": LOWER},
            fungibility={"when_can_borrow": MAY_STOP, "when_can_preempt": MAY_STOP},
        ),
        others=[cq2(flavor_quotas("one", cpu=2), flavor_quotas("two", cpu=2), cohort="test-cohort")],
        other_usage={SECONDARY: {("one", "cpu"): 2}},
        oracle={("one", "cpu"): (NO_CAND, 0)},
        pod_sets=[ps(cpu="2")],
        want_mode=Mode.FIT,
        want_flavors=[{"cpu": ("two", Mode.FIT, -1)}],
        want_borrowing=1,
        want_attempts=[[("one", NO_CAND, 0, (unused("cpu", "one", "2"),), ""), ("two", FIT, 1, (), "")]],
    ),
    "quota exhausted, but can preempt in cohort and ClusterQueue": Case(
        cq=cq1(flavor_quotas("one", pods=10, cpu=Q(10, lending_limit=0)), cohort="test-cohort"),
        cq_usage={("one", "cpu"): 2},
        others=[cq2(flavor_quotas("one", pods=0, cpu=0), cohort="test-cohort")],
        oracle={("one", "cpu"): (PREEMPT, 1)},
        pod_sets=[ps(cpu="9")],
        want_mode=Mode.PREEMPT,
        want_flavors=[{"cpu": ("one", Mode.PREEMPT, -1), "pods": ("one", Mode.FIT, -1)}],
        want_reasons=[[unused("cpu", "one", "1")]],
        want_borrowing=1,
    ),
    "when borrowing while preemption is needed for flavor one, fair sharing enabled, reclaimWithinCohort=Any": Case(
        fair_sharing=True,
        cq=cq1(
            flavor_quotas("one", cpu=0),
            flavor_quotas("two", cpu=12),
            cohort="test-cohort",
            preemption={"reclaim_within_cohort": "Any"},
            fungibility={"when_can_borrow": MAY_STOP, "when_can_preempt": MAY_STOP},
        ),
        others=[cq2(flavor_quotas("one", cpu=12), cohort="test-cohort")],
        other_usage={SECONDARY: {("one", "cpu"): 10}},
        oracle={("one", "cpu"): (PREEMPT, 1)},
        pod_sets=[ps(cpu="12")],
        want_mode=Mode.PREEMPT,
        want_flavors=[{"cpu": ("one", Mode.PREEMPT, 0)}],
        want_reasons=[[unused("cpu", "one", "10")]],
        want_borrowing=1,
    ),
    "when borrowing while preemption is needed for flavor one, fair sharing enabled, reclaimWithinCohort=Never": Case(
        fair_sharing=True,
        cq=cq1(
            flavor_quotas("one", cpu=0),
            flavor_quotas("two", cpu=12),
            cohort="test-cohort",
            preemption={"reclaim_within_cohort": "Never"},
            fungibility={"when_can_borrow": MAY_STOP, "when_can_preempt": MAY_STOP},
        ),
        others=[cq2(flavor_quotas("one", cpu=12), cohort="test-cohort")],
        other_usage={SECONDARY: {("one", "cpu"): 10}},
        oracle={("one", "cpu"): (NO_CAND, 0)},
        pod_sets=[ps(cpu="12")],
        want_mode=Mode.FIT,
        want_flavors=[{"cpu": ("two", Mode.FIT, -1)}],
        want_attempts=[[("one", NO_FIT, 1, (unused("cpu", "one", "10"),), WAITING), ("two", FIT, 0, (), "")]],
    ),
    "multi-podset, one fits and another fails, fitting podset attempts skipped in resolveNoFitReason": Case(
        cq=cq1(flavor_quotas("one", cpu=2), flavor_quotas("two", cpu=2)),
        pod_sets=[
            pod_set("fitting-podset", 1, {"cpu": "1"}, node_selector={"type": "one"}),
            ps("blocking-podset", cpu="5"),
        ],
        want_mode=Mode.NO_FIT,
        want_flavors=[{"cpu": ("one", Mode.FIT, 0)}, {}],
        want_reasons=[[], [exceeds("cpu", "one", "1", "5", "2"), exceeds("cpu", "two", "0", "5", "2")]],
        want_usage={("one", "cpu"): 1000},
        want_attempts=[
            [("one", FIT, 0, (), "")],
            [
                ("one", NO_FIT, 0, (exceeds("cpu", "one", "1", "5", "2"),), EXCEEDS),
                ("two", NO_FIT, 0, (exceeds("cpu", "two", "0", "5", "2"),), EXCEEDS),
            ],
        ],
        want_no_fit_reason=EXCEEDS,
    ),
}


@pytest.mark.parametrize("name", list(CASES), ids=list(CASES))
def test_assign_flavors(name: str) -> None:
    check(CASES[name], run(CASES[name]))


@pytest.mark.parametrize(
    "name", ["resource not listed in clusterQueue", "multiple flavors, fits a node selector"]
)
def test_assign_flavors_observability_gate_off(name: str) -> None:
    """Upstream runs every case with the gate both ways; off, attempts carry no NoFit reason."""
    case = CASES[name]
    a = run(Case(**{**case.__dict__, "gates": {"UnadmittedWorkloadsObservability": False}}))
    assert flavors_of(a) == case.want_flavors
    assert all(at.no_fit_reason == "" for p in a.pod_sets for at in p.attempts)


# --- TestReclaimBeforePriorityPreemption -----------------------------------------------------------

TRIO = [flavor("uno"), flavor("due"), flavor("tre")]

_FUNGIBILITY_DISABLED = (
    {"gpu": "10"},
    {("uno", "gpu"): 1},
    {("due", "gpu"): 1, ("tre", "gpu"): 1},
    {"when_can_preempt": MAY_STOP},
    {},
    Mode.PREEMPT,
    {"gpu": "uno"},
)

RECLAIM_TABLE: list[Any] = [
    (
        "Select first flavor which fits",
        {"gpu": "10"},
        {("uno", "gpu"): 1},
        {("due", "gpu"): 1},
        None,
        {},
        Mode.FIT,
        {"gpu": "tre"},
    ),
    (
        "Select first flavor where gpu reclamation is possible",
        {"gpu": "10"},
        {("uno", "gpu"): 1},
        {("due", "gpu"): 1, ("tre", "gpu"): 1},
        None,
        {("uno", "gpu"): (PREEMPT, 0), ("due", "gpu"): (RECLAIM, 0)},
        Mode.PREEMPT,
        {"gpu": "due"},
    ),
    ("Select first flavor when flavor fungibility is disabled", *_FUNGIBILITY_DISABLED),
    # Upstream keeps this twin of the case above (same inputs) under the deprecated policy's name.
    (
        "Select first flavor when flavor fungibility is disabled; using deprecated WhenCanPreempt=MayStopSearch",
        *_FUNGIBILITY_DISABLED,
    ),
    (
        "Select first flavor where priority based preemption is possible",
        {"gpu": "10"},
        {("uno", "gpu"): 1, ("due", "gpu"): 1, ("tre", "gpu"): 1},
        {},
        None,
        {},
        Mode.PREEMPT,
        {"gpu": "uno"},
    ),
    (
        "Select second flavor where gpu reclamation is possible, as compute Fits",
        {"gpu": "10", "compute": "10"},
        {("uno", "gpu"): 1, ("uno", "compute"): 1, ("due", "compute"): 1},
        {("due", "gpu"): 1, ("tre", "gpu"): 1},
        None,
        {("uno", "gpu"): (PREEMPT, 0), ("due", "gpu"): (RECLAIM, 0), ("tre", "gpu"): (RECLAIM, 0)},
        Mode.PREEMPT,
        {"gpu": "tre", "compute": "tre"},
    ),
]
"""Upstream ``TestReclaimBeforePriorityPreemption``: (name, requests, test-clusterqueue usage,
other-clusterqueue usage, flavor fungibility, oracle, want mode, want flavors)."""


def reclaim_case(
    requests: dict[str, str],
    test_usage: dict[FlavorResource, int],
    other_usage: dict[FlavorResource, int],
    fungibility: dict[str, str] | None,
    oracle: dict[FlavorResource, tuple[PreemptionMode, int]],
) -> Case:
    """The inputs of a ``TestReclaimBeforePriorityPreemption`` case."""
    test_cq = cluster_queue(
        "test-clusterqueue",
        *(flavor_quotas(f, compute=10, gpu=10) for f in ("uno", "due", "tre")),
        cohort="cohort",
        preemption={"within_cluster_queue": LOWER, "reclaim_within_cohort": LOWER},
        fungibility=fungibility or {"when_can_preempt": TRY_NEXT},
    )
    other_cq = cluster_queue(
        "other-clusterqueue",
        *(flavor_quotas(f, compute=0, gpu=0) for f in ("uno", "due", "tre")),
        cohort="cohort",
    )
    return Case(
        cq=test_cq,
        others=[other_cq],
        flavors=TRIO,
        cq_usage=test_usage,
        other_usage={"other-clusterqueue": other_usage},
        oracle=oracle,
        pod_sets=[pod_set("main", 1, requests)],
        want_mode=Mode.FIT,
        want_flavors=[],
    )


@pytest.mark.parametrize(
    ("name", "requests", "test_usage", "other_usage", "fungibility", "oracle", "want_mode", "want"),
    RECLAIM_TABLE,
)
def test_reclaim_before_priority_preemption(
    name: str,
    requests: dict[str, str],
    test_usage: dict[FlavorResource, int],
    other_usage: dict[FlavorResource, int],
    fungibility: dict[str, str] | None,
    oracle: dict[FlavorResource, tuple[PreemptionMode, int]],
    want_mode: Mode,
    want: dict[str, str],
) -> None:
    a = run(reclaim_case(requests, test_usage, other_usage, fungibility, oracle))
    assert a.representative_mode() is want_mode
    assert {res: fa.name for res, fa in a.pod_sets[0].flavors.items()} == want


# --- TestHierarchical (three nested cohorts, each lending 4 cpu of its own flavor) ----------------


HIERARCHICAL_TABLE: list[Any] = [
    (
        "Select the top flavor",
        None,
        {("one", "cpu"): 4},
        {("two", "cpu"): 4},
        None,
        {},
        "three",
    ),
    ("Select the first flavor which fits", None, {("one", "cpu"): 4}, {}, None, {}, "two"),
    (
        "Select deeper-borrowing flavor that fits when shallower-borrowing flavor has no preemption candidates",
        [
            flavor_quotas("one", cpu=Q(4, borrowing_limit=0)),
            flavor_quotas("two", cpu=0),
            flavor_quotas("three", cpu=0),
        ],
        {("one", "cpu"): 4},
        {},
        {
            "when_can_borrow": TRY_NEXT,
            "when_can_preempt": TRY_NEXT,
            "preference": "PreemptionOverBorrowing",
        },
        {("one", "cpu"): (NO_CAND, 1)},
        "two",
    ),
]
"""Upstream ``TestHierarchical``: (name, test-clusterqueue flavors, its usage, other-clusterqueue
usage, flavor fungibility, oracle, want cpu flavor)."""


def hierarchical_case(
    cq_flavors: list[Any] | None,
    test_usage: dict[FlavorResource, int],
    other_usage: dict[FlavorResource, int],
    fungibility: dict[str, str] | None,
    oracle: dict[FlavorResource, tuple[PreemptionMode, int]],
) -> Case:
    """The inputs of a ``TestHierarchical`` case."""
    zero = [flavor_quotas(f, cpu=0) for f in ("one", "two", "three")]
    cohorts = [
        cohort("three", flavor_quotas("three", cpu=4)),
        cohort("two", flavor_quotas("two", cpu=4), parent="three"),
        cohort("one", flavor_quotas("one", cpu=4), parent="two"),
    ]
    test_cq = cluster_queue(
        "test-clusterqueue",
        *(cq_flavors or zero),
        cohort="one",
        preemption={"within_cluster_queue": LOWER, "reclaim_within_cohort": LOWER},
        fungibility=fungibility or {"when_can_preempt": TRY_NEXT},
    )
    other_cq = cluster_queue("other-clusterqueue", *zero, cohort="two")
    return Case(
        cq=test_cq,
        others=[*cohorts, other_cq],
        flavors=[flavor("one"), flavor("two"), flavor("three")],
        cq_usage=test_usage,
        other_usage={"other-clusterqueue": other_usage},
        oracle=oracle,
        pod_sets=[ps(cpu="4")],
        want_mode=Mode.FIT,
        want_flavors=[],
    )


@pytest.mark.parametrize(
    ("name", "cq_flavors", "test_usage", "other_usage", "fungibility", "oracle", "want"), HIERARCHICAL_TABLE
)
def test_hierarchical(
    name: str,
    cq_flavors: list[Any] | None,
    test_usage: dict[FlavorResource, int],
    other_usage: dict[FlavorResource, int],
    fungibility: dict[str, str] | None,
    oracle: dict[FlavorResource, tuple[PreemptionMode, int]],
    want: str,
) -> None:
    a = run(hierarchical_case(cq_flavors, test_usage, other_usage, fungibility, oracle))
    assert a.representative_mode() is Mode.FIT
    assert a.pod_sets[0].flavors["cpu"].name == want


# --- TestDeletedFlavors ----------------------------------------------------------------------------


DELETED_TABLE: list[Any] = [
    (
        "multiple flavors, skip missing ResourceFlavor",
        ["deleted-flavor", "flavor"],
        Mode.FIT,
        "flavor",
        "",
    ),
    (
        "flavor not found",
        ["deleted-flavor"],
        Mode.NO_FIT,
        None,
        "couldn't assign flavors to pod set main: flavor deleted-flavor not found",
    ),
]
"""Upstream ``TestDeletedFlavors``: (name, the ClusterQueue's flavors, want mode, want cpu flavor,
want message)."""


def deleted_case(cq_flavors: list[str], want_flavor: str | None) -> Case:
    """The inputs of a ``TestDeletedFlavors`` case: "deleted-flavor" goes after the snapshot."""
    return Case(
        cq=cluster_queue("test-clusterqueue", *(flavor_quotas(f, cpu=4) for f in cq_flavors)),
        flavors=[flavor("flavor"), flavor("deleted-flavor")],
        deleted=["deleted-flavor"],
        pod_sets=[ps(cpu="3" if want_flavor else "1")],
        want_mode=Mode.FIT,
        want_flavors=[],
    )


@pytest.mark.parametrize(("name", "cq_flavors", "want_mode", "want_flavor", "want_message"), DELETED_TABLE)
def test_deleted_flavors(
    name: str, cq_flavors: list[str], want_mode: Mode, want_flavor: str | None, want_message: str
) -> None:
    a = run(deleted_case(cq_flavors, want_flavor))
    assert a.representative_mode() is want_mode
    assert a.message() == want_message
    deleted = next(at for at in a.pod_sets[0].attempts if at.flavor == "deleted-flavor")
    assert (deleted.mode.preemption_mode, deleted.reasons, deleted.no_fit_reason) == (
        NO_FIT,
        ["flavor deleted-flavor not found"],
        NMF,
    )
    if want_flavor:
        assert a.pod_sets[0].flavors["cpu"].name == want_flavor
    else:
        assert a.no_fit_reason() == NMF


# --- TestIsPreferred -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "a", "b", "preference", "want"),
    [
        ("feature gate disabled prioritises preemption", (FIT, 0), (PREEMPT, 0), "", True),
        (
            "explicit BorrowingOverPreemption prioritises borrowing distance",
            (PREEMPT, 1),
            (FIT, 2),
            "BorrowingOverPreemption",
            False,
        ),
        (
            "explicit PreemptionOverBorrowing prioritises lower preemption",
            (PREEMPT, 1),
            (FIT, 2),
            "PreemptionOverBorrowing",
            True,
        ),
        (
            "explicit PreemptionOverBorrowing breaks borrowing ties with preemption",
            (PREEMPT, 1),
            (FIT, 1),
            "PreemptionOverBorrowing",
            False,
        ),
        (
            "explicit PreemptionOverBorrowing rejects no-candidate flavor before borrowing comparison",
            (NO_CAND, 1),
            (FIT, 2),
            "PreemptionOverBorrowing",
            False,
        ),
        (
            "explicit PreemptionOverBorrowing prefers fit over shallower-borrowing no-candidate flavor",
            (FIT, 2),
            (NO_CAND, 1),
            "PreemptionOverBorrowing",
            True,
        ),
        ("no-candidate flavor remains preferable to no-fit flavor", (NO_CAND, 1), (NO_FIT, 0), "", True),
        ("no-fit flavor remains worse than no-candidate flavor", (NO_FIT, 0), (NO_CAND, 1), "", False),
        (
            "no-candidate flavors retain borrowing preference",
            (NO_CAND, 1),
            (NO_CAND, 2),
            "PreemptionOverBorrowing",
            True,
        ),
        (
            "no-candidate flavors retain borrowing preference in reverse",
            (NO_CAND, 2),
            (NO_CAND, 1),
            "PreemptionOverBorrowing",
            False,
        ),
        ("fully equal is not preferred", (PREEMPT, 1), (PREEMPT, 1), "", False),
        ("reclaim beats priority preemption", (RECLAIM, 0), (PREEMPT, 0), "", True),
    ],
)
def test_is_preferred(
    name: str, a: tuple[PreemptionMode, int], b: tuple[PreemptionMode, int], preference: str, want: bool
) -> None:
    assert is_preferred(GranularMode(*a), GranularMode(*b), preference) is want


# --- TestIsNoFitDueToCapacityAndLimits --------------------------------------------------------------

NOFIT_FLAVORS = [flavor("flavor-a", {"type": "a"}), flavor("flavor-b", taints=[taint("key", "val")])]


def _nofit_cq(cohort_name: str = "", bl: int = 4) -> ClusterQueue:
    return cluster_queue(
        "cq",
        flavor_quotas("flavor-a", cpu=Q(2, borrowing_limit=bl)),
        flavor_quotas("flavor-b", cpu=Q(2, borrowing_limit=bl)),
        cohort=cohort_name,
    )


def _sibling(nominal: int, bl: int) -> ClusterQueue:
    return cluster_queue(
        "sibling",
        flavor_quotas("flavor-a", cpu=Q(nominal, borrowing_limit=bl)),
        flavor_quotas("flavor-b", cpu=Q(nominal, borrowing_limit=bl)),
        cohort="cohort",
    )


SHARED_CQ = cluster_queue(
    "cq",
    resource_group(
        flavor_quotas("flavor-shared", cpu=Q(2, borrowing_limit=4)),
        flavor_quotas("flavor-a", cpu=Q(2, borrowing_limit=4)),
    ),
    resource_group(flavor_quotas("flavor-shared", memory=Q("2Gi", borrowing_limit="4Gi"))),
    cohort="cohort",
)
SHARED_SIBLING = cluster_queue(
    "sibling",
    resource_group(
        flavor_quotas("flavor-shared", cpu=Q(2, borrowing_limit=2)),
        flavor_quotas("flavor-a", cpu=Q(2, borrowing_limit=2)),
    ),
    resource_group(flavor_quotas("flavor-shared", memory=Q("2Gi", borrowing_limit="2Gi"))),
    cohort="cohort",
)


NOFIT_TABLE: list[Any] = [
    (
        "succeeds to schedule on flavor-a",
        pod_set("main", 1, {"cpu": "1"}),
        None,
        [],
        None,
        {},
        "",
        {"flavor-a": ""},
    ),
    (
        "insufficient quota",
        pod_set("main", 1, {"cpu": "3"}),
        None,
        [],
        None,
        {},
        EXCEEDS,
        {"flavor-a": EXCEEDS, "flavor-b": NMF},
    ),
    (
        "exceeds max capacity limits",
        pod_set("main", 1, {"cpu": "5"}),
        None,
        [],
        None,
        {},
        EXCEEDS,
        {"flavor-a": EXCEEDS, "flavor-b": NMF},
    ),
    (
        "taints mismatch",
        pod_set("main", 1, {"cpu": "1"}, node_selector={"type": "wrong"}),
        None,
        [],
        None,
        {},
        NMF,
        {"flavor-a": NMF, "flavor-b": NMF},
    ),
    (
        "succeeds to schedule on flavor-b with a tolerated taint",
        pod_set(
            "main",
            1,
            {"cpu": "1"},
            node_selector={"type": "non-existent"},
            tolerations=[toleration("key", "val", "NoSchedule")],
        ),
        None,
        [],
        None,
        {},
        "",
        {"flavor-a": NMF, "flavor-b": ""},
    ),
    (
        "node affinity mismatch when both flavors declare same key",
        pod_set("main", 1, {"cpu": "1"}, node_selector={"type": "non-existent"}),
        None,
        [],
        [flavor("flavor-a", {"type": "a"}), flavor("flavor-b", {"type": "b"})],
        {},
        NMF,
        {"flavor-a": NMF, "flavor-b": NMF},
    ),
    (
        "prioritization of structural mismatch over capacity mismatch",
        pod_set("main", 1, {"cpu": "3", "memory": "20Gi"}, node_selector={"type": "wrong"}),
        None,
        [],
        None,
        {},
        NMF,
        {},
    ),
    (
        "insufficient capacity, cohort has available capacity (waiting for quota)",
        pod_set("main", 1, {"cpu": "3"}),
        _nofit_cq("cohort", bl=2),
        [_sibling(2, 2)],
        None,
        {("flavor-a", "cpu"): 2, ("flavor-b", "cpu"): 2},
        WAITING,
        {"flavor-a": WAITING, "flavor-b": NMF},
    ),
    (
        "exceeds cohort max capacity limits",
        pod_set("main", 1, {"cpu": "5"}),
        _nofit_cq("cohort", bl=2),
        [_sibling(2, 2)],
        None,
        {},
        EXCEEDS,
        {"flavor-a": EXCEEDS, "flavor-b": NMF},
    ),
    (
        "exceeds borrowing limit but cohort has capacity",
        pod_set("main", 1, {"cpu": "4"}),
        _nofit_cq("cohort", bl=1),
        [_sibling(5, 5)],
        None,
        {},
        EXCEEDS,
        {"flavor-a": EXCEEDS, "flavor-b": NMF},
    ),
    (
        "flavor spanning multiple resource groups",
        pod_set("main", 1, {"cpu": "3", "memory": "3Gi"}, node_selector={"type": "a"}),
        SHARED_CQ,
        [SHARED_SIBLING],
        [flavor("flavor-shared", {"type": "shared"}), flavor("flavor-a", {"type": "a"})],
        {("flavor-shared", "cpu"): 2, ("flavor-shared", "memory"): "2Gi", ("flavor-a", "cpu"): 2},
        NMF,
        {"flavor-shared": NMF},
    ),
]
"""Upstream ``TestIsNoFitDueToCapacityAndLimits``: (name, pod set, ClusterQueue (None: "cq"),
sibling ClusterQueues, flavors (None: ``NOFIT_FLAVORS``), sibling usage, want NoFit reason, want
NoFit reason per attempted flavor)."""


def nofit_case(
    pod: PodSet,
    cq: ClusterQueue | None,
    others: list[ClusterQueue],
    flavors: list[ResourceFlavor] | None,
    sibling_usage: dict[FlavorResource, Any],
) -> Case:
    """The inputs of a ``TestIsNoFitDueToCapacityAndLimits`` case."""
    return Case(
        cq=cq or _nofit_cq(),
        others=list(others),
        flavors=flavors or NOFIT_FLAVORS,
        other_usage={"sibling": sibling_usage} if sibling_usage else {},
        oracle={fr: (NO_CAND, 0) for fr in sibling_usage},
        pod_sets=[pod],
        want_mode=Mode.FIT,
        want_flavors=[],
    )


@pytest.mark.parametrize(
    ("name", "pod", "cq", "others", "flavors", "sibling_usage", "want_reason", "want_attempts"), NOFIT_TABLE
)
def test_is_no_fit_due_to_capacity_and_limits(
    name: str,
    pod: PodSet,
    cq: ClusterQueue | None,
    others: list[ClusterQueue],
    flavors: list[ResourceFlavor] | None,
    sibling_usage: dict[FlavorResource, Any],
    want_reason: str,
    want_attempts: dict[str, str],
) -> None:
    a = run(nofit_case(pod, cq, others, flavors, sibling_usage))
    assert a.no_fit_reason() == want_reason
    assert {at.flavor: at.no_fit_reason for at in a.pod_sets[0].attempts} == want_attempts


# --- TestFlavorScanRecordsLastTriedFlavorIdx (quota part; TAS is out of scope) ---------------------


@pytest.mark.parametrize(
    ("name", "nominal", "spare", "req", "cq_usage", "oracle", "fungibility", "want_mode", "want_idx"),
    [
        (
            "quota and topology both fit on the first flavor: bookmark names it",
            10,
            0,
            "2",
            {},
            {},
            (TRY_NEXT, TRY_NEXT),
            Mode.FIT,
            0,
        ),
        (
            "fits only by borrowing: bookmark says start over",
            1,
            20,
            "2",
            {},
            {},
            (TRY_NEXT, TRY_NEXT),
            Mode.FIT,
            -1,
        ),
        (
            "fits only by borrowing, but WhenCanBorrow is MayStopSearch: bookmark names the first flavor",
            1,
            20,
            "2",
            {},
            {},
            (MAY_STOP, TRY_NEXT),
            Mode.FIT,
            0,
        ),
        (
            "needs preemption and candidates exist: bookmark names the first flavor",
            2,
            0,
            "2",
            {("flavor-1", "cpu"): 2, ("flavor-2", "cpu"): 2},
            {("flavor-1", "cpu"): (PREEMPT, 0), ("flavor-2", "cpu"): (PREEMPT, 0)},
            (MAY_STOP, MAY_STOP),
            Mode.PREEMPT,
            0,
        ),
        (
            "needs preemption but no candidates: bookmark says start over whatever the policy",
            2,
            0,
            "2",
            {("flavor-1", "cpu"): 2, ("flavor-2", "cpu"): 2},
            {("flavor-1", "cpu"): (NO_CAND, 0), ("flavor-2", "cpu"): (NO_CAND, 0)},
            (MAY_STOP, MAY_STOP),
            Mode.PREEMPT,
            -1,
        ),
    ],
)
def test_flavor_scan_records_last_tried_flavor_idx(
    name: str,
    nominal: int,
    spare: int,
    req: str,
    cq_usage: dict[FlavorResource, int],
    oracle: dict[FlavorResource, tuple[PreemptionMode, int]],
    fungibility: tuple[str, str],
    want_mode: Mode,
    want_idx: int,
) -> None:
    fung = {"when_can_borrow": fungibility[0], "when_can_preempt": fungibility[1]}
    if fungibility == (TRY_NEXT, TRY_NEXT):
        fung["preference"] = "PreemptionOverBorrowing"
    cq = cluster_queue(
        "cq",
        flavor_quotas("flavor-1", cpu=nominal),
        flavor_quotas("flavor-2", cpu=nominal),
        cohort="cohort",
        fungibility=fung,
    )
    sibling = cluster_queue(
        "sibling", flavor_quotas("flavor-1", cpu=spare), flavor_quotas("flavor-2", cpu=spare), cohort="cohort"
    )
    opts = options()
    cache, snap = build(
        [flavor("flavor-1", {"flavor": "one"}), flavor("flavor-2", {"flavor": "two"}), cq, sibling], opts
    )
    state = cache.cluster_queues["cq"]
    usage(state, cq_usage)
    wl = info(workload("wl", requests={"cpu": req}), opts)
    a = FlavorAssigner(wl, state, snap, opts, FakeOracle(oracle), cycle=7).assign()
    assert a.representative_mode() is want_mode
    assert a.last_state == LastAssignment([{"cpu": want_idx}], state.generation, 7, wl.scheduling_hash)


# --- worked examples and remaining flavor-assignment rules -------------------------------------------


def _example_g(
    fungibility: Mapping[str, str] | None,
    team_usage: Mapping[FlavorResource, int],
    other_usage: Mapping[FlavorResource, int],
    oracle: Mapping[FlavorResource, tuple[PreemptionMode, int]],
) -> Assignment:
    team = cluster_queue(
        "team",
        flavor_quotas("on-demand", cpu=10),
        flavor_quotas("spot", cpu=20),
        cohort="org",
        fungibility=fungibility,
    )
    other = cluster_queue(
        "other", flavor_quotas("on-demand", cpu=10), flavor_quotas("spot", cpu=0), cohort="org"
    )
    return run(
        Case(
            cq=team,
            others=[other],
            flavors=[flavor("on-demand"), flavor("spot")],
            cq_usage=dict(team_usage),
            other_usage={"other": dict(other_usage)},
            oracle=dict(oracle),
            pod_sets=[ps(cpu="4")],
            want_mode=Mode.FIT,
            want_flavors=[],
        )
    )


def test_worked_example_g_default_stops_at_borrowing_flavor() -> None:
    a = _example_g(None, {("on-demand", "cpu"): 8}, {}, {})
    assert flavors_of(a) == [{"cpu": ("on-demand", Mode.FIT, 0)}]
    assert a.borrowing == 1
    assert a.flavors_considered() == "main: on-demand(Fit;borrow=1)"


def test_worked_example_g_try_next_flavor_on_borrow() -> None:
    a = _example_g({"when_can_borrow": TRY_NEXT}, {("on-demand", "cpu"): 8}, {}, {})
    assert flavors_of(a) == [{"cpu": ("spot", Mode.FIT, -1)}]
    assert a.borrowing == 0


def test_worked_example_g_preempt_beats_no_candidates() -> None:
    a = _example_g(
        None,
        {("on-demand", "cpu"): 10, ("spot", "cpu"): 20},
        {("on-demand", "cpu"): 10},
        {("on-demand", "cpu"): (PREEMPT, 0), ("spot", "cpu"): (NO_CAND, 0)},
    )
    assert flavors_of(a) == [{"cpu": ("on-demand", Mode.PREEMPT, -1)}]
    assert a.flavors_considered() == (
        "main: on-demand(preemptionMode=Preempt;insufficient unused quota for cpu in flavor on-demand, 4 more needed), "
        "spot(preemptionMode=NoCandidates;insufficient unused quota for cpu in flavor spot, 4 more needed)"
    )


@pytest.mark.parametrize(
    ("name", "req", "want_level"),
    [
        ("fits in own quota", "2", 0),
        ("fits in child cohort", "4", 1),
        ("borrows at level 2", "8", 2),
    ],
)
def test_borrowing_levels_worked_example_b(name: str, req: str, want_level: int) -> None:
    x = cluster_queue("X", flavor_quotas("f", cpu=4), cohort="C")
    y = cluster_queue("Y", flavor_quotas("f", cpu=4), cohort="C")
    z = cluster_queue("Z", flavor_quotas("f", cpu=8), cohort="R")
    a = run(
        Case(
            cq=x,
            others=[cohort("R"), cohort("C", parent="R"), y, z],
            flavors=[flavor("f")],
            cq_usage={("f", "cpu"): 2},
            other_usage={"Y": {("f", "cpu"): 2}},
            pod_sets=[ps(cpu=req)],
            want_mode=Mode.FIT,
            want_flavors=[],
        )
    )
    assert a.representative_mode() is Mode.FIT
    assert a.borrowing == want_level


def test_no_fit_reason_example_waiting_for_quota_over_untolerated_taint() -> None:
    """``resolveNoFitReason`` example: alternatives in one group take the least severe reason."""
    main = cluster_queue(
        "main", flavor_quotas("on-demand", cpu=5), flavor_quotas("spot-tainted", cpu=5), cohort="c"
    )
    sibling = cluster_queue(
        "sibling", flavor_quotas("on-demand", cpu=10), flavor_quotas("spot-tainted", cpu=0), cohort="c"
    )
    oracle = FakeOracle()
    opts = options()
    cache, snap = build(
        [flavor("on-demand"), flavor("spot-tainted", taints=[taint("key", "val")]), main, sibling], opts
    )
    usage(cache.cluster_queues["sibling"], {("on-demand", "cpu"): 10})
    a = assign_flavors(
        info(workload("w", requests={"cpu": "10"}), opts), cache.cluster_queues["main"], snap, opts, oracle
    )
    assert a.representative_mode() is Mode.NO_FIT
    assert a.no_fit_reason() == WAITING
    assert a.message() == (
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor on-demand, "
        "5 more needed, untolerated taint {key val NoSchedule <nil>} in flavor spot-tainted"
    )
    assert oracle.calls == []


def test_flavors_considered_text() -> None:
    case = CASES[
        "cannot preempt in cohort (oracle returns None) for the first flavor, tries the second flavor (which fits)"
    ]
    assert run(case).flavors_considered() == (
        "main: one(preemptionMode=NoCandidates;insufficient unused quota for cpu in flavor one, 2 more needed), "
        "two(Fit;borrow=1)"
    )
    assert run(CASES["single flavor, fits"]).flavors_considered() == ""
    assert run(CASES["multiple resources in a group, doesn't fit"]).flavors_considered() == (
        "main: one(NoFit;"
        + exceeds("cpu", "one", "0", "3", "2")
        + "), two(NoFit;"
        + exceeds("memory", "two", "0", "10Mi", "5Mi")
        + ")"
    )


def _preference_case(preference: str) -> Case:
    return Case(
        cq=cq1(
            flavor_quotas("one", cpu=4),
            flavor_quotas("two", cpu=0),
            cohort="test-cohort",
            fungibility={"when_can_borrow": TRY_NEXT, "when_can_preempt": TRY_NEXT, "preference": preference},
        ),
        others=[cq2(flavor_quotas("one", cpu=0), flavor_quotas("two", cpu=10), cohort="test-cohort")],
        cq_usage={("one", "cpu"): 4},
        pod_sets=[ps(cpu="2")],
        want_mode=Mode.FIT,
        want_flavors=[],
    )


def test_preemption_over_borrowing_preference_preempts_in_first_flavor() -> None:
    """TestSchedule: PreemptionOverBorrowing preference: preempt in first flavor instead of borrowing in second."""
    a = run(_preference_case("PreemptionOverBorrowing"))
    assert flavors_of(a) == [{"cpu": ("one", Mode.PREEMPT, -1)}]
    assert a.borrowing == 0


def test_borrowing_over_preemption_preference_borrows_in_second_flavor() -> None:
    """TestSchedule: BorrowingOverPreemption preference: borrow in second flavor instead of preempting in first."""
    a = run(_preference_case("BorrowingOverPreemption"))
    assert flavors_of(a) == [{"cpu": ("two", Mode.FIT, -1)}]
    assert a.borrowing == 1


def _two_flavor_setup(
    usage_one: int = 0, usage_two: int = 0, gates: Mapping[str, bool] | None = None, **cq_kw: Any
) -> tuple[WorkloadInfo, ClusterQueueState, Any, Any]:
    opts = options(gates=dict(gates or {}))
    cq = cq1(flavor_quotas("one", cpu=4), flavor_quotas("two", cpu=4), **cq_kw)
    cache, snap = build([flavor("one"), flavor("two"), cq], opts)
    state = cache.cluster_queues["test-clusterqueue"]
    usage(state, {("one", "cpu"): usage_one, ("two", "cpu"): usage_two})
    return info(workload("wl", requests={"cpu": "2"}), opts), state, snap, opts


def test_nomination_pin_skips_other_flavors() -> None:
    wl, cq, snap, opts = _two_flavor_setup(usage_two=3)
    a = assign_flavors(wl, cq, snap, opts, FakeOracle(), pin={"main": {"cpu": "two"}})
    assert flavors_of(a) == [{"cpu": ("two", Mode.PREEMPT, -1)}]
    assert sorted(a.pod_sets[0].reasons) == [
        "insufficient unused quota for cpu in flavor two, 1 more needed",
        "skipping flavor one as it is not found in the nomination mapping for resource cpu",
    ]
    assert [at.flavor for at in a.pod_sets[0].attempts] == ["two"]


def test_nomination_pin_ignored_with_recompute_gate_off() -> None:
    wl, cq, snap, opts = _two_flavor_setup(gates={"RecomputeAssignmentUponPreemptionTargetsOverlap": False})
    a = assign_flavors(wl, cq, snap, opts, FakeOracle(), pin={"main": {"cpu": "two"}})
    assert flavors_of(a) == [{"cpu": ("one", Mode.FIT, 0)}]


def test_scan_starts_after_remembered_flavor() -> None:
    wl, cq, snap, opts = _two_flavor_setup()
    wl.last_assignment = LastAssignment([{"cpu": 0}], cq.generation, 0, wl.scheduling_hash)
    a = assign_flavors(wl, cq, snap, opts, FakeOracle(), cycle=3)
    assert flavors_of(a) == [{"cpu": ("two", Mode.FIT, -1)}]
    assert [at.flavor for at in a.pod_sets[0].attempts] == ["two"]


def test_flavor_fungibility_gate_off_takes_first_fit_and_ignores_progress() -> None:
    wl, cq, snap, opts = _two_flavor_setup(usage_one=3, gates={"FlavorFungibility": False})
    wl.last_assignment = LastAssignment([{"cpu": 1}], cq.generation, 0, wl.scheduling_hash)
    a = assign_flavors(wl, cq, snap, opts, FakeOracle())
    # "one" needs preemption, "two" fits: the better mode wins, indexes stay at their zero value.
    assert flavors_of(a) == [{"cpu": ("two", Mode.FIT, 0)}]
    assert a.pod_sets[0].reasons == []


def test_flavor_fungibility_gate_off_keeps_first_preempting_flavor() -> None:
    wl, cq, snap, opts = _two_flavor_setup(usage_one=3, usage_two=3, gates={"FlavorFungibility": False})
    a = assign_flavors(wl, cq, snap, opts, FakeOracle({("one", "cpu"): (NO_CAND, 0)}))
    assert flavors_of(a) == [{"cpu": ("two", Mode.PREEMPT, 0)}]
    a = assign_flavors(wl, cq, snap, opts, FakeOracle())
    assert flavors_of(a) == [{"cpu": ("one", Mode.PREEMPT, 0)}]
    assert len(a.pod_sets[0].reasons) == 2


def test_partial_admission_counts_rescale_requests_and_pods() -> None:
    opts = options()
    cq = cq1(flavor_quotas("default", pods=10, cpu=10))
    cache, snap = build([flavor("default"), cq], opts)
    wl = info(workload("wl", pod_sets=[pod_set("main", 5, {"cpu": "1500m"}, min_count=2)]), opts)
    a = assign_flavors(wl, cache.cluster_queues["test-clusterqueue"], snap, opts, FakeOracle(), counts=[3])
    assert a.pod_sets[0].count == 3
    assert a.pod_sets[0].requests == {"cpu": 4500, "pods": 3}
    assert a.usage == {("default", "cpu"): 4500, ("default", "pods"): 3}


def test_ignore_undeclared_resources() -> None:
    opts = options(ignore_undeclared_resources=True)
    cq = cq1(flavor_quotas("default", cpu=4))
    cache, snap = build([flavor("default"), cq], opts)
    wl = info(workload("wl", requests={"cpu": "1", GPU: "2"}), opts)
    a = assign_flavors(wl, cache.cluster_queues["test-clusterqueue"], snap, opts, FakeOracle())
    assert flavors_of(a) == [{"cpu": ("default", Mode.FIT, -1)}]
    gated = options(ignore_undeclared_resources=True, gates={"QuotaCheckStrategy": False})
    a = assign_flavors(
        info(workload("wl", requests={"cpu": "1", GPU: "2"}), gated),
        cache.cluster_queues["test-clusterqueue"],
        snap,
        gated,
        FakeOracle(),
    )
    assert (
        a.message() == f"couldn't assign flavors to pod set main: resource {GPU} unavailable in ClusterQueue"
    )


def test_malformed_selector_is_a_pod_set_error() -> None:
    opts = options()
    cq = cq1(flavor_quotas("one", cpu=4), flavor_quotas("two", cpu=4))
    cache, snap = build([*FLAVORS, cq], opts)
    pod = pod_set("main", 1, {"cpu": "1"}, affinity_terms=[[{"key": "type", "operator": "In", "values": []}]])
    a = assign_flavors(
        info(workload("wl", pod_sets=[pod]), opts),
        cache.cluster_queues["test-clusterqueue"],
        snap,
        opts,
        FakeOracle(),
    )
    assert a.representative_mode() is Mode.NO_FIT
    assert a.message().startswith("failed to assign flavors to pod set main: ")
    assert "values set can't be empty" in a.message()
    assert attempts_of(a) == [[("one", NO_FIT, 0, (), NMF)]]


def test_resource_unavailable_after_earlier_group_resolves_from_attempts() -> None:
    """An uncovered resource met after an earlier group recorded attempts: only the attempts count.

    Corrected (issue 11): upstream's resolveNoFitReason never reads the pod set status' reason, so
    "one" (ExceedsMaxQuota) decides, not NoMatchingFlavor."""
    opts = options()
    cq = cq1(flavor_quotas("one", cpu=2), flavor_quotas("two", cpu=4))
    cache, snap = build([*FLAVORS, cq], opts)
    # Most names hash before "cpu"; this one hashes after it, so cpu's group is scanned first.
    wl = info(workload("wl", requests={"cpu": "3", "example.com/r650": "1"}), opts)
    assert resource_order(("cpu", "example.com/r650")) == ("cpu", "example.com/r650")
    a = assign_flavors(wl, cache.cluster_queues["test-clusterqueue"], snap, opts, FakeOracle())
    assert [at.flavor for at in a.pod_sets[0].attempts] == ["one", "two"]
    assert a.pod_sets[0].reasons == ["resource example.com/r650 unavailable in ClusterQueue"]
    assert a.no_fit_reason() == EXCEEDS


def test_later_pod_sets_not_evaluated_after_failure() -> None:
    opts = options()
    cq = cq1(flavor_quotas("one", cpu=2))
    cache, snap = build([*FLAVORS, cq], opts)
    wl = info(workload("wl", pod_sets=[ps("a", cpu="3"), ps("b", cpu="1")]), opts)
    a = assign_flavors(wl, cache.cluster_queues["test-clusterqueue"], snap, opts, FakeOracle(), cycle=9)
    assert [p.name for p in a.pod_sets] == ["a"]
    assert a.last_state is not None and a.last_state.last_tried_flavor_idx == [{}]
    assert a.last_state.scheduling_cycle == 9


def test_resource_iteration_order_is_fnv1a() -> None:
    assert fnv1a_64("") == 0xCBF29CE484222325
    assert fnv1a_64("a") == 0xAF63DC4C8601EC8C
    names = ("cpu", "example.com/gpu", "pods", "nvidia.com/gpu", "memory", "ephemeral-storage")
    assert resource_order(names) == (
        "ephemeral-storage",
        "memory",
        "nvidia.com/gpu",
        "pods",
        "example.com/gpu",
        "cpu",
    )


# --- upstream ``lastAssignmentOutdated`` -------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "preserve", "recorded_gen", "recorded_cycle", "recorded_hash", "want"),
    [
        ("Cluster queue allocatableResourceIncreasedGen increased", False, 0, 5, "h", True),
        ("AllocatableResourceGeneration not increased", False, 5, 0, "h", False),
        ("scheduling hash changed", True, 5, 10, "other", True),
        ("unknown hash counts as same", True, 5, 10, "unknown", False),
        ("recorded this cycle survives a generation bump", True, 0, 10, "h", False),
        ("recorded previous cycle survives a generation bump", True, 0, 9, "h", False),
        ("older progress dropped when the generation moved", True, 0, 8, "h", True),
        ("older progress kept when the generation did not move", True, 5, 8, "h", False),
    ],
)
def test_last_assignment_outdated(
    name: str, preserve: bool, recorded_gen: int, recorded_cycle: int, recorded_hash: str, want: bool
) -> None:
    wl, cq, _, _ = _two_flavor_setup()
    cq.generation = 5
    wl.scheduling_hash = "h"
    opts = options(gates={"FlavorFungibilityPreserveScanProgress": preserve})
    wl.last_assignment = LastAssignment([{"cpu": 0}], recorded_gen, recorded_cycle, recorded_hash)
    assert last_assignment_outdated(wl, cq, 10, opts) is want
    wl.last_assignment = None
    assert last_assignment_outdated(wl, cq, 10, opts) is False


def test_usage_of_admitted_workloads_counts() -> None:
    """Same as "single flavor, used resources, doesn't fit" with the usage held by real workloads."""
    opts = options()
    cq = cq1(flavor_quotas("default", cpu=4, pods=10))
    running = admitted(
        workload("running", pod_sets=[ps(count=3, cpu="1")]),
        "test-clusterqueue",
        {"cpu": "default", "pods": "default"},
    )
    cache, snap = build([flavor("default"), cq, running], opts)
    state = cache.cluster_queues["test-clusterqueue"]
    assert state.node.usage == {("default", "cpu"): 3000, ("default", "pods"): 3}
    oracle = FakeOracle()
    a = assign_flavors(info(workload("wl", requests={"cpu": "2"}), opts), state, snap, opts, oracle)
    assert flavors_of(a) == [{"cpu": ("default", Mode.PREEMPT, -1), "pods": ("default", Mode.FIT, -1)}]
    assert oracle.calls == [(("default", "cpu"), 2000)]


# --- PodSet groups (upstream ``assignFlavors``' ``groupedRequests``) beyond upstream's table ----------


def _group_run(members: list[PodSet], pin: Mapping[str, Mapping[str, str]] | None = None) -> Assignment:
    opts = options()
    cq = cq1(flavor_quotas("one", cpu=10), flavor_quotas("tainted", cpu=10), flavor_quotas("two", cpu=10))
    cache, snap = build([*FLAVORS, cq], opts)
    wl = info(workload("wl", pod_sets=members), opts)
    return assign_flavors(wl, cache.cluster_queues["test-clusterqueue"], snap, opts, FakeOracle(), pin=pin)


def test_group_flavor_must_suit_every_member() -> None:
    """``checkFlavorForPodSets`` checks each pod set of the group: "one" does not match the leader's
    selector and "tainted" is not tolerated by the workers, so both go to "two"."""
    a = _group_run(
        [
            pod_set("worker", 2, {"cpu": "1"}, group="g"),
            pod_set("leader", 1, {"cpu": "1"}, group="g", node_selector={"type": "two"}),
        ]
    )
    assert flavors_of(a) == [{"cpu": ("two", Mode.FIT, -1)}, {"cpu": ("two", Mode.FIT, -1)}]
    assert a.usage == {("two", "cpu"): 3000}
    reasons = [
        "flavor one doesn't match node affinity",
        "untolerated taint {instance spot NoSchedule <nil>} in flavor tainted",
    ]
    assert [[at.flavor for at in ps.attempts] for ps in a.pod_sets] == [["one", "tainted", "two"]] * 2
    assert [sorted(r for at in ps.attempts for r in at.reasons) for ps in a.pod_sets] == [reasons] * 2


def test_group_nomination_pin_keeps_a_flavor_any_member_was_nominated() -> None:
    """``shouldSkipBasedOnNominationMapping``: a flavor is kept when any pod set of the group was
    nominated it for the resource."""
    members = [pod_set("worker", 2, {"cpu": "1"}, group="g"), pod_set("leader", 1, {"cpu": "1"}, group="g")]
    a = _group_run(members, pin={"worker": {"cpu": "two"}, "leader": {"cpu": "tainted"}})
    assert flavors_of(a) == [{"cpu": ("two", Mode.FIT, -1)}, {"cpu": ("two", Mode.FIT, -1)}]
    # "one" (nobody's) is skipped without an attempt; "tainted" (the leader's) is tried.
    assert [at.flavor for at in a.pod_sets[0].attempts] == ["tainted", "two"]


def test_groups_are_assigned_in_order_of_their_first_pod_set() -> None:
    """A group's pod sets need not be adjacent: upstream assigns the group at its first pod set, so
    the assignment lists ``a`` and ``c`` (3 cpu together, more than "one" holds) before ``b``."""
    opts = options()
    cq = cq1(flavor_quotas("one", cpu=2), flavor_quotas("two", cpu=10))
    cache, snap = build([*FLAVORS, cq], opts)
    members = [pod_set("a", 1, {"cpu": "1"}, group="g"), pod_set("b", 1, {"cpu": "1"}), pod_set("c", 2, {"cpu": "1"}, group="g")]
    a = assign_flavors(info(workload("wl", pod_sets=members), opts), cache.cluster_queues["test-clusterqueue"], snap, opts, FakeOracle())
    assert [ps.name for ps in a.pod_sets] == ["a", "c", "b"]
    assert flavors_of(a) == [{"cpu": ("two", Mode.FIT, -1)}, {"cpu": ("two", Mode.FIT, -1)}, {"cpu": ("one", Mode.FIT, 0)}]
    assert a.usage == {("two", "cpu"): 3000, ("one", "cpu"): 1000}


def test_a_groups_scan_resumes_from_its_first_pod_sets_memory() -> None:
    """Flavor fungibility resumes a group's search from the remembered index of its first pod set
    (upstream ``findFlavorForPodSets`` reads ``psIDs[0]``): gpu was last tried on "b_one" for the
    worker, so the group goes on to "b_two"."""
    gpu = "example.com/gpu"
    opts = options()
    cq = cluster_queue(
        "test-clusterqueue",
        resource_group(flavor_quotas("one", cpu=10)),
        resource_group(flavor_quotas("b_one", {gpu: 10}), flavor_quotas("b_two", {gpu: 10})),
    )
    cache, snap = build([*FLAVORS, cq], opts)
    state = cache.cluster_queues["test-clusterqueue"]
    members = [pod_set("w", 1, {"cpu": "1", gpu: "1"}, group="g"), pod_set("l", 1, {"cpu": "1"}, group="g")]
    wl = info(workload("wl", pod_sets=members), opts)
    wl.last_assignment = LastAssignment([{"cpu": -1, gpu: 0}, {"cpu": -1}], state.generation, 0, wl.scheduling_hash)
    a = assign_flavors(wl, state, snap, opts, FakeOracle())
    assert flavors_of(a)[0][gpu][0] == "b_two"


def test_a_group_whose_requests_are_all_ignored_does_not_end_the_assignment() -> None:
    """With ``IgnoreUndeclared``, pod sets requesting only undeclared resources get no flavor and
    no failure, grouped or not, and the pod sets after them are still assigned (upstream stops
    there and leaves them without an assignment, which the API refuses)."""
    opts = options(gates={"QuotaCheckStrategy": True}, ignore_undeclared_resources=True)
    cq = cq1(flavor_quotas("one", cpu=10))
    cache, snap = build([*FLAVORS, cq], opts)
    for first in (
        [pod_set("p0", 1, {"foo": "1"})],
        [pod_set("p0", 1, {"foo": "1"}, group="g")],
        [pod_set("p0", 1, {"foo": "1"}, group="g"), pod_set("q", 1, {"foo": "1"}, group="g")],
    ):
        wl = info(workload("wl", pod_sets=[*first, pod_set("p1", 1, {"cpu": "100"})]), opts)
        a = assign_flavors(wl, cache.cluster_queues["test-clusterqueue"], snap, opts, FakeOracle())
        assert [ps.name for ps in a.pod_sets] == [*(ps.name for ps in first), "p1"]
        assert a.representative_mode() == Mode.NO_FIT
        assert a.message().startswith("couldn't assign flavors to pod set p1: insufficient quota for cpu in flavor one")
