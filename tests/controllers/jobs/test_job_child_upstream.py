"""Upstream's ``TestReconciler`` "non-standalone job ..." cases (``pkg/controller/jobs/job/job_controller_test.go``;
``jobframework.JobReconciler.ReconcileGenericJob``, ``FindAncestorJobManagedByKueue``,
``shouldSuspendChildJob``): a Job whose controller is a Kueue-managed Job gets no Workload of its own;
it is suspended while its ancestor has no admitted, not finished Workload. Test ids are upstream's
case names verbatim."""

from __future__ import annotations

from typing import Any

import pytest
from reconcile_harness import FINALIZER, JobReconcile, base_job, base_workload, controller_ref

from pykueue.api.meta import LabelSelector

_TAS_OFF = {"TopologyAwareScheduling": False, "AssignQueueLabelsForPods": True}
_SUSPENDED = ("job", "Normal", "Suspended", "Kueue managed child job suspended")
_MANAGE_ALL: dict[str, Any] = {
    "manage_jobs_without_queue_name": True,
    "managed_jobs_namespace_selector": LabelSelector(),
}


@pytest.mark.parametrize(
    ("manage_all", "child_queue", "parent_workload", "want_suspended"),
    [
        pytest.param(
            False, "foo", None, True,
            id="non-standalone job is suspended if its parent workload is not found",
        ),
        pytest.param(
            True, "foo", "admitted", False,
            id="non-standalone job is not suspended if its parent workload is admitted",
        ),
        pytest.param(
            True, "foo", "pending", True,
            id="non-standalone job is suspended if its parent workload is found and not admitted",
        ),
        pytest.param(
            False, "test-queue", "admitted", False,
            id="non-standalone job is not suspended if its parent workload is admitted and queue name is set",
        ),
    ],
)  # fmt: skip
def test_non_standalone_job(
    manage_all: bool, child_queue: str, parent_workload: str | None, want_suspended: bool
) -> None:
    with JobReconcile(_TAS_OFF, **(_MANAGE_ALL if manage_all else {})) as world:
        parent = world.add_job(base_job("parent", queue="queue"))
        body = base_job(suspend=False, queue=child_queue)
        body["metadata"]["ownerReferences"] = [controller_ref(parent)]
        world.add_job(body)
        if parent_workload is not None:
            wl = base_workload("parent-workload", reserve=parent_workload == "admitted", admitted=True)
            world.add_workload(wl, owner=parent)
        before = world.workloads()
        world.reconcile()
        got = world.job()
        assert got is not None and got["spec"]["suspend"] is want_suspended
        assert world.workloads() == before  # no Workload for the child
        assert world.events() == ([_SUSPENDED] if want_suspended else [])


def test_child_of_a_job_kueue_does_not_manage_is_a_top_level_job() -> None:
    """``FindAncestorJobManagedByKueue``: a parent Job without a queue name (manageJobsWithoutQueueName
    off) is no managed ancestor, so a child naming a queue is reconciled as a standalone Job."""
    with JobReconcile(_TAS_OFF) as world:
        parent = world.add_job(base_job("parent", queue=None, suspend=False))
        body = base_job()
        body["metadata"]["ownerReferences"] = [controller_ref(parent)]
        world.add_job(body)
        world.reconcile()
        (wl,) = world.workloads()
        assert wl["metadata"]["ownerReferences"][0]["name"] == "job"
        assert wl["metadata"]["finalizers"] == [FINALIZER]


def test_a_parent_workload_change_reconciles_the_child_jobs() -> None:
    """``parentWorkloadHandler`` (jobs/job/job_controller.go): a created or updated Workload queues the
    Jobs whose controller is the Workload's controller (by uid)."""
    with JobReconcile(_TAS_OFF) as world:
        parent = world.add_job(base_job("parent", queue="queue"))
        body = base_job(suspend=False)
        body["metadata"]["ownerReferences"] = [controller_ref(parent)]
        world.add_job(body)
        world.add_job(base_job("unrelated"))
        world.take_queued("job")
        world.add_workload(base_workload("parent-workload", reserve=False), owner=parent)
        assert world.take_queued("job") == [str(("ns", "job")), str(("ns", "parent"))]
