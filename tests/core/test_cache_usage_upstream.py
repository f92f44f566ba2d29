"""Upstream ``pkg/cache/scheduler/cache_test.go`` ``TestClusterQueueUsage``, ``TestLocalQueueUsage``
and ``TestCacheWorkloadOperations``, ported case by case (ids are upstream's case names).

Upstream's ``Cache.Usage`` and ``Cache.LocalQueueUsage`` feed the ClusterQueue and LocalQueue
status; pykueue computes that status in :mod:`pykueue.core.status` from the cache, so the usage
cases compare ``flavorsReservation``/``flavorsUsage`` and the workload counts written there
(quantities as their canonical strings; a ``borrowed`` of 0 is upstream's zero Quantity, which
compares equal to an unset one, so both read as None here).

``TestCacheWorkloadOperations``: upstream's ``AddOrUpdateWorkload`` both filters (a workload
without an active quota reservation is dropped) and records; in pykueue ``Cache.add_workload`` /
``delete_workload`` record, and :func:`pykueue.core.state.route_workload_change` applies the
filter, so the filtering cases go through it.

not ported:
- TestCacheWorkloadOperations "delete error clusterQueue doesn't exist" — upstream keeps the
  workload's assignment to the deleted ClusterQueue in ``workloadAssignedQueues`` and reports an
  error; pykueue forgets a deleted ClusterQueue's workloads with it (its re-creation adds them back
  from the workloads reserving in it, as upstream's ``AddClusterQueue`` does): no decision reads
  the difference.
- TestLocalQueueUsage "clusterQueue is missing" only checks that a workload whose ClusterQueue is
  missing is not added (covered by "add error clusterQueue doesn't exist") and that the
  LocalQueue reports no usage: ``local_queue_status`` without ClusterQueue, covered by
  tests/core/test_queue_status_upstream.py.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from builders import (
    T0,
    Q,
    admitted,
    cluster_queue,
    flavor_quotas,
    info,
    local_queue,
    pod_set,
    resource_group,
    workload,
)

from pykueue.api.kueue import Admission, ClusterQueue, PodSetAssignment, Workload
from pykueue.api.meta import Condition
from pykueue.core.cache.cache import Cache
from pykueue.core.options import SchedulerOptions
from pykueue.core.queue.manager import QueueManager
from pykueue.core.state import route_workload_change
from pykueue.core.status import cluster_queue_status, local_queue_status

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)

RU = tuple[str, str, str | None]
"""(resource, total, borrowed) of one resource usage."""
FU = list[tuple[str, list[RU]]]


def _usage_cq(cohort: str) -> ClusterQueue:
    return cluster_queue(
        "foo",
        resource_group(flavor_quotas("default", cpu=Q(10, borrowing_limit=10))),
        resource_group(
            flavor_quotas("model_a", {"example.com/gpu": Q(5, borrowing_limit=5)}),
            flavor_quotas("model_b", {"example.com/gpu": 5}),
        ),
        resource_group(
            flavor_quotas(
                "interconnect_a",
                {"example.com/vf-0": Q(5, borrowing_limit=5), "example.com/vf-1": Q(5, borrowing_limit=5),
                 "example.com/vf-2": Q(5, borrowing_limit=5)},
            )
        ),
        cohort=cohort,
    )


def _one() -> Workload:
    wl = workload("one", ns="", requests={"cpu": "8", "example.com/gpu": "5"})
    return admitted(wl, "foo", {"cpu": "default", "example.com/gpu": "model_a"}, admitted_condition=True)


def _two() -> Workload:
    wl = workload("two", ns="", requests={"cpu": "5", "example.com/gpu": "6"})
    return admitted(wl, "foo", {"cpu": "default", "example.com/gpu": "model_b"})


def _partial(name: str, *, admit: bool) -> Workload:
    wl = workload(name, ns="", pod_sets=[pod_set("main", 5, {"cpu": "2"})])
    return admitted(wl, "foo", {"cpu": "default"}, counts=[2], admitted_condition=admit)


VF: list[RU] = [("example.com/vf-0", "0", None), ("example.com/vf-1", "0", None), ("example.com/vf-2", "0", None)]


def _fu(cpu: RU, model_a: RU, model_b: RU) -> FU:
    return [("default", [cpu]), ("model_a", [model_a]), ("model_b", [model_b]), ("interconnect_a", VF)]


GPU0: RU = ("example.com/gpu", "0", None)
USED_8_5 = _fu(("cpu", "8", None), ("example.com/gpu", "5", None), GPU0)

# name, cohort, workloads, reserved, reserving count, used, admitted count
CQ_USAGE_CASES: list[tuple[str, str, Callable[[], list[Workload]], FU, int, FU, int]] = [
    (
        "clusterQueue without cohort; single, admitted no borrowing",
        "",
        lambda: [_one()],
        USED_8_5,
        1,
        USED_8_5,
        1,
    ),
    (
        "clusterQueue with cohort; multiple borrowing",
        "one",
        lambda: [_one(), _two()],
        _fu(("cpu", "13", "3"), ("example.com/gpu", "5", None), ("example.com/gpu", "6", "1")),
        2,
        USED_8_5,
        1,
    ),
    (
        "clusterQueue without cohort; multiple borrowing",
        "",
        lambda: [_one(), _two()],
        _fu(("cpu", "13", None), ("example.com/gpu", "5", None), ("example.com/gpu", "6", None)),
        2,
        USED_8_5,
        1,
    ),
    (
        "clusterQueue with cohort; partial admission",
        "one",
        lambda: [_partial("partial-one", admit=True), _partial("partial-two", admit=False)],
        _fu(("cpu", "8", None), GPU0, GPU0),
        2,
        _fu(("cpu", "4", None), GPU0, GPU0),
        1,
    ),
]


def _flavor_usages(usages: list[object]) -> FU:
    out: FU = []
    for fu in usages:
        out.append(
            (
                fu.name,  # type: ignore[attr-defined]
                [
                    (r.name, str(r.total), None if getattr(r, "borrowed", None) is None else str(r.borrowed))
                    for r in fu.resources  # type: ignore[attr-defined]
                ],
            )
        )
    return out


@pytest.mark.parametrize(
    ("name", "cohort", "wls", "reserved", "reserving", "used", "admitted_count"),
    CQ_USAGE_CASES,
    ids=[c[0] for c in CQ_USAGE_CASES],
)
def test_cluster_queue_usage(
    name: str,
    cohort: str,
    wls: Callable[[], list[Workload]],
    reserved: FU,
    reserving: int,
    used: FU,
    admitted_count: int,
) -> None:
    cache = Cache()
    state = cache.add_or_update_cluster_queue(_usage_cq(cohort))
    for wl in wls():
        assert cache.add_workload(info(wl))
    status = cluster_queue_status(state, None, 0, NOW, False)
    assert _flavor_usages(list(status.flavors_reservation)) == reserved
    assert status.reserving_workloads == reserving
    assert _flavor_usages(list(status.flavors_usage)) == used
    assert status.admitted_workloads == admitted_count


# --- TestLocalQueueUsage -------------------------------------------------------------------------


def _lq_cq() -> ClusterQueue:
    return cluster_queue(
        "foo",
        resource_group(flavor_quotas("default", cpu=Q(10, borrowing_limit=10))),
        resource_group(flavor_quotas("model-a", {"example.com/gpu": 5}), flavor_quotas("model-b", {"example.com/gpu": 5})),
        resource_group(
            flavor_quotas(
                "interconnect-a",
                {"example.com/vf-0": Q(5, borrowing_limit=5), "example.com/vf-1": Q(5, borrowing_limit=5),
                 "example.com/vf-2": Q(5, borrowing_limit=5)},
            )
        ),
    )


def _lq_wl(name: str, cpu: str, gpu: str, gpu_flavor: str | None) -> Workload:
    wl = workload(name, ns="ns1", queue="test", requests={"cpu": cpu, "example.com/gpu": gpu})
    if gpu_flavor is None:
        return wl
    return admitted(wl, "foo", {"cpu": "default", "example.com/gpu": gpu_flavor})


def _lq_fu(cpu: str, model_a: str, model_b: str) -> list[tuple[str, list[tuple[str, str]]]]:
    vf = [("example.com/vf-0", "0"), ("example.com/vf-1", "0"), ("example.com/vf-2", "0")]
    return [
        ("default", [("cpu", cpu)]),
        ("model-a", [("example.com/gpu", model_a)]),
        ("model-b", [("example.com/gpu", model_b)]),
        ("interconnect-a", vf),
    ]


LQ_USAGE_CASES = [
    ("workloads is nothing", lambda: [], _lq_fu("0", "0", "0")),
    (
        "all workloads are admitted",
        lambda: [_lq_wl("one", "5", "5", "model-a"), _lq_wl("two", "3", "3", "model-b")],
        _lq_fu("8", "5", "3"),
    ),
    (
        "some workloads are inadmissible",
        lambda: [_lq_wl("one", "5", "5", "model-a"), _lq_wl("two", "100000", "3", None)],
        _lq_fu("5", "5", "0"),
    ),
]


@pytest.mark.parametrize(("name", "wls", "want"), LQ_USAGE_CASES, ids=[c[0] for c in LQ_USAGE_CASES])
def test_local_queue_usage(
    name: str, wls: Callable[[], list[Workload]], want: list[tuple[str, list[tuple[str, str]]]]
) -> None:
    cache = Cache()
    cache.add_or_update_cluster_queue(_lq_cq())
    for wl in wls():
        # Upstream's AddOrUpdateWorkload adds only the workloads reserving quota.
        assert cache.add_workload(info(wl)) == (wl.status.admission is not None)
    status = local_queue_status(local_queue("test", "ns1", "foo"), cache, 0, NOW)
    got = [(fu.name, [(r.name, str(r.total)) for r in fu.resources]) for fu in status.flavors_reservation]
    assert got == want


# --- TestCacheWorkloadOperations ----------------------------------------------------------------------


def _ops_cqs() -> list[ClusterQueue]:
    def cq(name: str) -> ClusterQueue:
        return cluster_queue(name, flavor_quotas("on-demand", cpu=0), flavor_quotas("spot", cpu=0))

    return [cq("one"), cq("two")]


def _reserving(name: str, cq: str, *, assignments: bool = False, pod_sets: bool = False) -> Workload:
    """``name`` with ``Admission{ClusterQueue: cq}``: upstream's driver (cpu 10m on "on-demand") and
    workers (3 x 5m on "spot") assignments when ``assignments``, none otherwise."""
    sets = [pod_set("driver", 1, {"cpu": "10m", "memory": "512Ki"}), pod_set("workers", 3, {"cpu": "5m"})]
    wl = workload(name, ns="", pod_sets=sets if pod_sets or assignments else None)
    psas = (
        [
            PodSetAssignment(name="driver", flavors={"cpu": "on-demand"}, resource_usage={"cpu": "10m"}, count=1),
            PodSetAssignment(name="workers", flavors={"cpu": "spot"}, resource_usage={"cpu": "15m"}, count=3),
        ]
        if assignments
        else []
    )
    wl.status.admission = Admission(cluster_queue=cq, pod_set_assignments=psas)
    wl.status.conditions.append(
        Condition(type="QuotaReserved", status="True", reason="QuotaReserved", message="", last_transition_time=T0)
    )
    return wl


def _ops_cache() -> Cache:
    cache = Cache()
    for cq in _ops_cqs():
        cache.add_or_update_cluster_queue(cq)
    for wl in (_reserving("a", "one", assignments=True), _reserving("b", "one"), _reserving("c", "two", pod_sets=True)):
        assert cache.add_workload(info(wl))
    return cache


def _route(cache: Cache, old: Workload | None, new: Workload | None) -> None:
    route_workload_change(
        old, new, cache=cache, queues=QueueManager(tree=cache), issued_evictions=set(), options=SchedulerOptions(), now=NOW
    )


def _finished(wl: Workload) -> Workload:
    wl.status.conditions.append(
        Condition(type="Finished", status="True", reason="Succeeded", message="", last_transition_time=T0)
    )
    return wl


USAGE_10_15 = {("on-demand", "cpu"): 10, ("spot", "cpu"): 15}
Res = dict[str, tuple[list[str], dict[tuple[str, str], int]]]


def _add_d_three(c: Cache) -> bool:
    return c.add_workload(info(_reserving("d", "three")))


# name, operation (returns upstream's "updated"/error outcome as a bool or None), want per ClusterQueue
WL_OPS_CASES: list[tuple[str, Callable[[Cache], object], object, Res]] = [
    (
        "add",
        lambda c: [
            c.add_workload(info(_reserving("a", "one", assignments=True))),
            c.add_workload(info(_reserving("d", "two"))),
            c.add_workload(info(workload("pending", ns=""))),
        ],
        [True, True, False],
        {"one": (["/a", "/b"], USAGE_10_15), "two": (["/c", "/d"], {})},
    ),
    ("add error clusterQueue doesn't exist", _add_d_three, False, {"one": (["/a", "/b"], USAGE_10_15), "two": (["/c"], {})}),
    (
        "add already exists",
        lambda c: c.add_workload(info(_reserving("b", "one"))),
        True,
        {"one": (["/a", "/b"], USAGE_10_15), "two": (["/c"], {})},
    ),
    (
        "AddOrUpdateWorkload; finished workload removed",
        lambda c: _route(c, _reserving("b", "one"), _finished(_reserving("b", "one"))),
        None,
        {"one": (["/a"], USAGE_10_15), "two": (["/c"], {})},
    ),
    (
        "AddOrUpdateWorkload; quota assigned -> quota unassigned",
        lambda c: _route(c, _reserving("b", "one"), workload("b", ns="")),
        None,
        {"one": (["/a"], USAGE_10_15), "two": (["/c"], {})},
    ),
    (
        "AddOrUpdateWorkload; quota not assigned -> quota still not assigned",
        lambda c: _route(c, workload("d", ns=""), workload("d", ns="")),
        None,
        {"one": (["/a", "/b"], USAGE_10_15), "two": (["/c"], {})},
    ),
    (
        "update cluster queue for a workload",
        lambda c: c.add_workload(info(_reserving("a", "two", assignments=True))),
        True,
        {"one": (["/b"], {}), "two": (["/a", "/c"], USAGE_10_15)},
    ),
    ("update error new ClusterQueue not found", _add_d_three, False, {"one": (["/a", "/b"], USAGE_10_15), "two": (["/c"], {})}),
    (
        "update workload which doesn't exist.",
        lambda c: c.add_workload(info(_reserving("d", "two"))),
        True,
        {"one": (["/a", "/b"], USAGE_10_15), "two": (["/c", "/d"], {})},
    ),
    ("delete", lambda c: c.delete_workload("/a") is not None, True, {"one": (["/b"], {}), "two": (["/c"], {})}),
    (
        "delete workload with cancelled admission",
        lambda c: c.delete_workload("/a") is not None,
        True,
        {"one": (["/b"], {}), "two": (["/c"], {})},
    ),
    (
        "delete non-existing workload with cancelled admission",
        lambda c: c.delete_workload("/d"),
        None,
        {"one": (["/a", "/b"], USAGE_10_15), "two": (["/c"], {})},
    ),
    (
        "delete workload which doesn't exist",
        lambda c: c.delete_workload("/d"),
        None,
        {"one": (["/a", "/b"], USAGE_10_15), "two": (["/c"], {})},
    ),
]


@pytest.mark.parametrize(("name", "op", "outcome", "want"), WL_OPS_CASES, ids=[c[0] for c in WL_OPS_CASES])
def test_cache_workload_operations(name: str, op: Callable[[Cache], object], outcome: object, want: Res) -> None:
    cache = _ops_cache()
    assert op(cache) == outcome
    got = {
        n: (sorted(cq.workloads), {fr: v for fr, v in cq.node.usage.items() if v})
        for n, cq in sorted(cache.cluster_queues.items())
    }
    assert got == want
    # upstream's wantQueuesAssigned: every workload recorded is assigned to its ClusterQueue.
    assert cache.workload_cq == {k: n for n, (keys, _) in want.items() for k in keys}
