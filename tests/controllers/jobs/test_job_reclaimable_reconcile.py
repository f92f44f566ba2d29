"""``ReconcileGenericJob``'s step 4 (jobframework/reconciler.go): the reclaimable pods of a Job are
written to its Workload's status whenever they differ, whether or not the Workload reserves quota
(``JobWithReclaimablePods``, ``workload.LimitReclaimablePodsToPodSetSizes``,
``workload.UpdateReclaimablePods``), and the reconcile ends there."""

from __future__ import annotations

import pytest
from reconcile_harness import JobReconcile, base_job, base_workload

_TAS_OFF = {"TopologyAwareScheduling": False, "AssignQueueLabelsForPods": True}


@pytest.mark.parametrize(
    ("reserve", "succeeded", "want"),
    [
        pytest.param(False, 2, [{"name": "main", "count": 1}], id="workload without quota reservation"),
        pytest.param(True, 2, [{"name": "main", "count": 1}], id="workload with quota reservation"),
        pytest.param(False, 0, None, id="no terminal pods, nothing to reclaim"),
    ],
)
def test_reclaimable_pods_are_written(reserve: bool, succeeded: int, want: list[dict[str, object]] | None) -> None:
    with JobReconcile(_TAS_OFF) as world:
        body = base_job(parallelism=3)
        body["spec"]["completions"] = 4
        job = world.add_job(body, status={"succeeded": succeeded} if succeeded else None)
        world.add_workload(base_workload(count=3, reserve=reserve), owner=job)
        world.reconcile()
        (wl,) = world.workloads()
        assert (wl.get("status") or {}).get("reclaimablePods") == want
        assert world.events() == []
