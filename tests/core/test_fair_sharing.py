"""Dominant Resource Share (upstream ``fair_sharing.go`` ``dominantResourceShare``).

``DRS_CASES`` are upstream ``TestDominantResourceShare``'s cases under their names; its "multiple
flavors" case is ``test_worked_example_k``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pytest
from builders import Q, build, cluster_queue, cohort, flavor, flavor_quotas, usage

from pykueue.api.kueue import ClusterQueue, Cohort
from pykueue.api.quantity import MAX_INT64
from pykueue.core.cache.cache import Cache, cache_weight_of
from pykueue.core.quota.drs import (
    DRS,
    compare_drs,
    dominant_resource_share,
    lendable_by_resource,
    weighted_share_status,
)
from pykueue.core.quota.tree import QuotaNode

GPU = "example.com/gpu"
CPU_D = ("default", "cpu")
GPU_D = ("default", GPU)

Result = tuple[int, str, bool]
"""(status weighted share, dominant resource, borrowing)."""


def cq_quotas(
    name: str, cpu: object, gpu: object, weight: str | None = "1", cohort_name: str = "test-cohort"
) -> ClusterQueue:
    fq = flavor_quotas("default", {"cpu": cpu, GPU: gpu})  # type: ignore[dict-item]
    return cluster_queue(name, fq, cohort=cohort_name, fair_weight=weight)


def gpu_cq(
    name: str, gpu: object, weight: str | None = "1", cohort_name: str = "test-cohort"
) -> ClusterQueue:
    return cluster_queue(name, flavor_quotas("default", {GPU: gpu}), cohort=cohort_name, fair_weight=weight)  # type: ignore[dict-item]


@dataclass
class DrsCase:
    objs: list[ClusterQueue | Cohort]
    usage: dict[tuple[str, str], str | int]
    want: dict[str, Result]
    extra: dict[tuple[str, str], int] = field(default_factory=dict)


DRS_CASES: dict[str, DrsCase] = {
    "no cohort": DrsCase(
        [cluster_queue("cq", flavor_quotas("default", {"cpu": 2000, GPU: 5}))],
        {CPU_D: 1, GPU_D: 2},
        {"cq": (0, "", False)},
    ),
    "usage below nominal": DrsCase(
        [cq_quotas("cq", 2, 5), cq_quotas("lending-cq", 8, 5)],
        {CPU_D: 1, GPU_D: 2},
        {"cq": (0, "", False), "lending-cq": (0, "", False), "test-cohort": (0, "", False)},
    ),
    "usage above nominal": DrsCase(
        [cq_quotas("cq", 2, 5), cq_quotas("lending-cq", 8, 5)],
        {CPU_D: 3, GPU_D: 7},
        {"cq": (200, GPU, True), "lending-cq": (0, "", False), "test-cohort": (0, "", False)},
    ),
    "usage slightly above nominal in a cohort with large quotas": DrsCase(
        [gpu_cq("cq", 500), gpu_cq("lending-cq", 1000, "300")],
        {GPU_D: 501},
        {"cq": (1, GPU, True), "lending-cq": (0, "", False), "test-cohort": (0, "", False)},
    ),
    "one resource above nominal": DrsCase(
        [cq_quotas("cq", 2, 5), cq_quotas("lending-cq", 8, 5)],
        {CPU_D: 3, GPU_D: 3},
        {"cq": (100, "cpu", True), "lending-cq": (0, "", False), "test-cohort": (0, "", False)},
    ),
    "usage with workload above nominal": DrsCase(
        [cq_quotas("cq", 2, 5), cq_quotas("lending-cq", 8, 5)],
        {CPU_D: 1, GPU_D: 2},
        {"cq": (300, "cpu", True), "lending-cq": (0, "", False), "test-cohort": (0, "", False)},
        extra={CPU_D: 4000, GPU_D: 4},
    ),
    "A resource with zero lendable": DrsCase(
        [
            cq_quotas("cq", 2, Q(2, lending_limit=0)),
            cq_quotas("lending-cq", 8, Q(64, lending_limit=0)),
        ],
        {CPU_D: 1, GPU_D: 1},
        {"cq": (300, "cpu", True), "lending-cq": (0, "", False), "test-cohort": (0, "", False)},
        extra={CPU_D: 4000, GPU_D: 4},
    ),
    "above nominal with integer weight": DrsCase(
        [gpu_cq("cq", 5, "2"), gpu_cq("lending-cq", 5)],
        {GPU_D: 7},
        {"cq": (100, GPU, True), "lending-cq": (0, "", False), "test-cohort": (0, "", False)},
    ),
    "above nominal with decimal weight": DrsCase(
        [gpu_cq("cq", 5, "0.5"), gpu_cq("lending-cq", 5)],
        {GPU_D: 7},
        {"cq": (400, GPU, True), "lending-cq": (0, "", False), "test-cohort": (0, "", False)},
    ),
    "above nominal with zero weight": DrsCase(
        [gpu_cq("cq", 5, "0"), gpu_cq("lending-cq", 10)],
        {GPU_D: 7},
        {"cq": (MAX_INT64, GPU, True), "lending-cq": (0, "", False), "test-cohort": (0, "", False)},
    ),
    "cohort has resource share": DrsCase(
        [
            gpu_cq("cq", 5, cohort_name="child-cohort"),
            cohort("child-cohort", parent="root", fair_weight="2"),
            cohort("root", flavor_quotas("default", {GPU: 45})),
        ],
        {GPU_D: 10},
        {"cq": (100, GPU, True), "child-cohort": (50, GPU, True), "root": (0, "", False)},
    ),
    "usage way above nominal in a cohort with large quotas and weights": DrsCase(
        [gpu_cq("cq", 500, "300"), gpu_cq("lending-cq", 1000, "300")],
        {GPU_D: 800},
        {"cq": (1, GPU, True), "lending-cq": (0, "", False), "test-cohort": (0, "", False)},
    ),
    "resource share defined for resources only available at the root cohort": DrsCase(
        [
            gpu_cq("cq", 0, cohort_name="child-cohort"),
            cohort("child-cohort", parent="root", fair_weight="2"),
            cohort("root", flavor_quotas("default", {GPU: 50})),
        ],
        {GPU_D: 10},
        {"cq": (200, GPU, True), "child-cohort": (100, GPU, True), "root": (0, "", False)},
    ),
    # "1E" cpu does not fit int64 milli-cpu: the lendable amount saturates, the ratio is tiny but
    # positive and rounds up to 1.
    "borrowing against unlimited lendable capacity (exabyte-scale quota)": DrsCase(
        [
            cluster_queue("cq", flavor_quotas("default", cpu=0), cohort="test-cohort", fair_weight="1"),
            cluster_queue(
                "lending-cq", flavor_quotas("default", cpu="1E"), cohort="test-cohort", fair_weight="1"
            ),
        ],
        {CPU_D: 1},
        {"cq": (1, "cpu", True), "lending-cq": (0, "", False), "test-cohort": (0, "", False)},
    ),
    "resource share affected by borrowing limit": DrsCase(
        [
            gpu_cq("cq", 0, None, cohort_name="child-cohort"),
            cohort("child-cohort", flavor_quotas("default", {GPU: Q(0, borrowing_limit=10)}), parent="root"),
            cohort("root", flavor_quotas("default", {GPU: 50})),
        ],
        {GPU_D: 10},
        {"cq": (1000, GPU, True), "child-cohort": (200, GPU, True), "root": (0, "", False)},
    ),
}


def _nodes(cache: Cache) -> dict[str, QuotaNode]:
    nodes: dict[str, QuotaNode] = {name: cq.node for name, cq in cache.cluster_queues.items()}
    nodes.update(cache.cohorts)
    return nodes


@pytest.mark.parametrize("name", list(DRS_CASES))
def test_dominant_resource_share(name: str) -> None:
    case = DRS_CASES[name]
    cache, _ = build([flavor("default"), *case.objs])
    usage(cache.cluster_queues["cq"], case.usage)
    weight_of = cache_weight_of(cache)
    got: dict[str, Result] = {}
    for node_name, node in _nodes(cache).items():
        extra = case.extra if node_name == "cq" else None
        drs = dominant_resource_share(node, extra, weight_of=weight_of)
        got[node_name] = (weighted_share_status(drs), drs.dominant_resource, drs.borrowing)
    assert got == case.want


def test_worked_example_k() -> None:
    def objs(weight: str) -> list[ClusterQueue]:
        return [cq_quotas("A", 10, 4, weight, "root"), cq_quotas("B", 10, 4, "1", "root")]

    for weight, ratio, status in (("1", 200.0, 200), ("2", 200.0, 100), ("0", 200.0, MAX_INT64)):
        cache, _ = build([flavor("default"), *objs(weight)])
        usage(cache.cluster_queues["A"], {CPU_D: 14, GPU_D: 5})
        drs = dominant_resource_share(cache.cluster_queues["A"].node, weight_of=cache_weight_of(cache))
        assert drs.ratio == ratio
        assert drs.dominant_resource == "cpu"
        assert weighted_share_status(drs) == status
        assert drs.borrowed == frozenset({CPU_D, GPU_D})
    assert math.isinf(DRS(200.0, 0.0, True, "cpu").weighted())


def test_lendable_by_resource_sums_flavors_of_root() -> None:
    cache, _ = build(
        [
            flavor("on-demand"),
            flavor("spot"),
            cluster_queue(
                "cq",
                flavor_quotas("on-demand", cpu=20),
                flavor_quotas("spot", cpu=80),
                cohort="test-cohort",
            ),
            cluster_queue("lending-cq", flavor_quotas("on-demand", cpu=100), cohort="test-cohort"),
        ]
    )
    parent = cache.cohorts["test-cohort"]
    assert lendable_by_resource(parent) == {"cpu": 200_000}
    usage(cache.cluster_queues["cq"], {("on-demand", "cpu"): 15, ("spot", "cpu"): 5})
    drs = dominant_resource_share(
        cache.cluster_queues["cq"].node, {("on-demand", "cpu"): 10_000}, weight_of=cache_weight_of(cache)
    )
    # "multiple flavors": ((15+10-20)+0)*1000/200.
    assert weighted_share_status(drs) == 25


@pytest.mark.parametrize(
    ("usage_amounts", "requested", "want_on", "want_borrowing"),
    [
        pytest.param({CPU_D: 3}, {CPU_D: 1}, True, True, id="borrows on requested flavor"),
        pytest.param({CPU_D: 1, GPU_D: 7}, {CPU_D: 1}, False, True, id="borrows on unrequested flavor only"),
        pytest.param({CPU_D: 3, GPU_D: 7}, {GPU_D: 1}, True, True, id="borrows on both, requests one"),
        pytest.param({CPU_D: 1, GPU_D: 2}, {CPU_D: 1}, False, False, id="no borrowing"),
        pytest.param({CPU_D: 3}, {CPU_D: 0}, False, True, id="borrows on a flavor requested at zero"),
        pytest.param({CPU_D: 3}, None, False, True, id="nil requestedFRs"),
    ],
)
def test_is_borrowing_on(
    usage_amounts: dict[tuple[str, str], int],
    requested: dict[tuple[str, str], int] | None,
    want_on: bool,
    want_borrowing: bool,
) -> None:
    cache, _ = build(
        [
            flavor("default"),
            cq_quotas("cq", 2, 5, cohort_name="cohort"),
            cq_quotas("lending-cq", 8, 5, None, "cohort"),
        ]
    )
    usage(cache.cluster_queues["cq"], usage_amounts)
    drs = dominant_resource_share(cache.cluster_queues["cq"].node, weight_of=cache_weight_of(cache))
    assert drs.borrowing is want_borrowing
    assert drs.is_borrowing_on(requested) is want_on


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [
        pytest.param(DRS(100, 1, True, "cpu"), DRS(200, 1, True, "cpu"), -1, id="lower share first"),
        pytest.param(DRS(200, 2, True, "cpu"), DRS(100, 1, True, "cpu"), 0, id="weighted equal"),
        pytest.param(
            DRS(1, 0, True, "cpu"), DRS(10**6, 1, True, "cpu"), 1, id="zero weight borrowing is larger"
        ),
        pytest.param(DRS(5, 0, True, "cpu"), DRS(7, 0, True, "cpu"), -1, id="both zero weight: raw ratios"),
        pytest.param(DRS(0, 0, False, ""), DRS(0, 1, False, ""), 0, id="zero ratio with zero weight is zero"),
        pytest.param(
            DRS(0, 0, True, "cpu"), DRS(1, 1, True, "cpu"), -1, id="zero weight, ratio 0 is not infinite"
        ),
    ],
)
def test_compare_drs(a: DRS, b: DRS, want: int) -> None:
    assert compare_drs(a, b) == want
    assert compare_drs(b, a) == -want


@pytest.mark.parametrize(
    ("drs", "want"),
    [
        (DRS(0, 0, False, ""), 0),
        (DRS(400, 2, True, "cpu"), 200),
        (DRS(10, 4, True, "cpu"), 3),
        (DRS(100, 0, True, "cpu"), MAX_INT64),
    ],
)
def test_weighted_share_status(drs: DRS, want: int) -> None:
    assert weighted_share_status(drs) == want
