"""Upstream's ``TestReconciler`` cases for ``objectRetentionPolicies.workloads.afterDeactivatedByKueue``
(``pkg/controller/jobs/job/job_controller_test.go``; ``jobframework.JobReconciler.
handleWorkloadAfterDeactivatedPolicy``): after stopping the Job of an evicted Workload, a Job whose
Workload Kueue deactivated is deleted once the retention period has passed. Test ids are upstream's
case names verbatim."""

from __future__ import annotations

import pytest
from reconcile_harness import JobReconcile, base_job, base_workload, condition

_TAS_OFF = {"TopologyAwareScheduling": False, "AssignQueueLabelsForPods": True}
_BY_KUEUE = "DeactivatedDueToRequeuingLimitExceeded"
_MESSAGE = "The workload is deactivated"
_STOPPED = ("job", "Normal", "Stopped", _MESSAGE)
_DELETED = ("job", "Normal", "Deleted", "Deleted job: deactivation retention period expired")


@pytest.mark.parametrize(
    ("retention", "active", "reason", "evicted_at", "deleted"),
    [
        pytest.param(
            0.0, True, _BY_KUEUE, "2026-11-22T12:00:00Z", False,
            id="when workload is active after deactivation; objectRetentionPolicies.workloads.afterDeactivatedByKueue=0; should not delete the job",
        ),
        pytest.param(
            0.0, False, "Deactivated", "2026-11-22T12:00:00Z", False,
            id="when workload is manually deactivated; objectRetentionPolicies.workloads.afterDeactivatedByKueue=0; should not delete the job",
        ),
        pytest.param(
            0.0, False, _BY_KUEUE, "2026-11-22T12:00:00Z", True,
            id="when workload is deactivated by kueue; objectRetentionPolicies.workloads.afterDeactivatedByKueue=0; should delete the job",
        ),
        pytest.param(
            120.0, False, _BY_KUEUE, "2026-11-22T11:59:00Z", False,
            id="when workload is deactivated by kueue; objectRetentionPolicies.workloads.afterDeactivatedByKueue=60; retention period has not expired",
        ),
        pytest.param(
            60.0, False, _BY_KUEUE, "2026-11-22T11:59:00Z", True,
            id="when workload is deactivated by kueue; objectRetentionPolicies.workloads.afterDeactivatedByKueue=60; retention period has expired",
        ),
    ],
)  # fmt: skip
def test_deactivation_retention(retention: float, active: bool, reason: str, evicted_at: str, deleted: bool) -> None:
    with JobReconcile(_TAS_OFF, deactivated_retention_seconds=retention) as world:
        job = world.add_job(base_job(suspend=False))
        wl = base_workload(admitted=True)
        wl["spec"]["active"] = active
        evicted = condition("Evicted", "True", reason, _MESSAGE)
        evicted["lastTransitionTime"] = evicted_at
        wl["status"]["conditions"].append(evicted)
        world.add_workload(wl, owner=job)
        world.reconcile()
        got = world.job()
        if deleted:
            assert got is None
            assert world.events() == [_STOPPED, _DELETED]
        else:
            assert got is not None and got["spec"]["suspend"] is True
            assert world.events() == [_STOPPED]
        (after,) = world.workloads()
        assert after["status"].get("admission") is None
