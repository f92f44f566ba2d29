"""Huge quantities (issue 10, finding 6): a Workload whose requests × count leave int64 is
inadmissible with a message naming the pod set, the resource and the bound, and never blocks the
Workloads behind it; quotas past int64 stay unlimited."""

from __future__ import annotations

from builders import (
    at,
    cache_assignments,
    cluster_queue,
    conditions,
    flavor,
    flavor_quotas,
    local_queue,
    namespace,
    options,
    queued,
    simulate,
    workload,
)

from pykueue.api.quantity import MAX_INT64, quota_amount, resource_value, sat_mul

OVERFLOW_MESSAGE = (
    'resources validation failed: spec.podSets[0].count: Invalid value: 2: the total request for "cpu" '
    "(per-pod request × count) exceeds the largest quantity Kueue can account for (9223372036854775806m)"
)


def huge_and_small(strategy: str) -> list[object]:
    return [
        namespace("default"),
        flavor("default"),
        cluster_queue("cq", flavor_quotas("default", cpu="8Ei"), queueing_strategy=strategy),
        local_queue("lq", "default", "cq"),
        workload("huge", requests={"cpu": "4Ei"}, count=2, created=at(0)),
        workload("small", requests={"cpu": "1"}, count=2, created=at(1)),
    ]


def test_the_arithmetic_saturates_onto_the_unlimited_sentinel() -> None:
    per_pod = resource_value("cpu", "4Ei")
    assert per_pod == MAX_INT64  # 4Ei cores in milli-cores leave int64: clamped (SafeMilliValue)
    assert sat_mul(per_pod, 2) == MAX_INT64  # the total is the sentinel ...
    assert quota_amount("cpu", "8Ei") == MAX_INT64  # ... and so is an 8Ei quota: it would "fit"


def test_huge_request_is_inadmissible_and_does_not_block_the_queue() -> None:
    for strategy in ("StrictFIFO", "BestEffortFIFO"):
        cluster = simulate(huge_and_small(strategy), options(), at(3600))
        cluster.run(cycles=3)
        assert set(cache_assignments(cluster)) == {"default/small"}, strategy
        huge = cluster.get_workload("default/huge")
        assert huge is not None and huge.status.admission is None
        assert conditions(huge)["QuotaReserved"] == ("False", "Misconfigured", OVERFLOW_MESSAGE)
        assert queued(cluster) == ({}, {"cq": ["default/huge"]})


def test_largest_accountable_total_is_admitted() -> None:
    # 4,611,686,018,427,387,903m × 2 = MAX_BOUNDED: the largest total that is still bounded.
    objs = [
        namespace("default"),
        flavor("default"),
        cluster_queue("cq", flavor_quotas("default", cpu="8Ei")),
        local_queue("lq", "default", "cq"),
        workload("edge", requests={"cpu": "4611686018427387903m"}, count=2, created=at(0)),
    ]
    cluster = simulate(objs, options(), at(3600))
    cluster.run(cycles=1)
    assert set(cache_assignments(cluster)) == {"default/edge"}
