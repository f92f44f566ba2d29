"""Upstream's ``TestReconciler`` (``pkg/controller/jobs/job/job_controller_test.go``), ported case by case.

Each case seeds the embedded API server with the case's Job and Workloads, runs ONE reconcile of
pykueue's Job reconciler (:mod:`reconcile_harness`), and compares the Job, the Workloads and the
Events with upstream's ``wantJob`` / ``wantWorkloads`` / ``wantEvents``. Test ids are upstream's
case names verbatim. Times are the harness clock's (upstream's ``now``).

Cases already covered elsewhere under the same name (tests/controllers/jobs/test_batch_job.py for
the pure decisions, tests/controllers/test_job_integration.py end to end) are kept there; a case
here checks the reconcile itself.

Not ported (features pykueue does not implement, checked with grep in src/pykueue):
- "when workload is deactivated by kueue; objectRetentionPolicies.workloads.afterDeactivatedByKueue=*"
  and "when workload is active after deactivation; ...", "when workload is manually deactivated; ..."
  — ``objectRetentionPolicies.workloads.afterDeactivatedByKueue`` (deleting the Job) is parsed but
  not acted on by the Job reconciler.
- "the workload slice ..." (five cases), "the admitted slice follows the label when a scale-up
  replaces it", "a workload slice that reserved quota with no priority class is left alone" —
  elastic jobs / workload slices.
- "when the prebuilt workload ..." (four cases) — prebuilt Workloads are read on Jobs
  (``prebuilt_workload_name``) but the Job reconciler does not adopt them.
- "non-standalone job ..." (four cases) — the reconciler skips child Jobs of Kueue-managed owners
  (``owner_managed_by_kueue``) and does not suspend them through their parent's Workload.
- "PodSet label and Workload annotation are set when Job is starting; TopologyAwareScheduling
  enabled" and the other TAS-specific cases — Topology Aware Scheduling assignments.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from reconcile_harness import FINALIZER, JobReconcile, base_job, base_workload, condition, conditions

GVK_OWNER = {"apiVersion": "batch/v1", "kind": "Job"}


@pytest.fixture
def world(request: pytest.FixtureRequest) -> Iterator[JobReconcile]:
    params: dict[str, Any] = getattr(request, "param", {}) or {}
    w = JobReconcile(**params)
    yield w
    w.close()


def _orphan_owner(name: str) -> dict[str, Any]:
    return {**GVK_OWNER, "metadata": {"name": name, "uid": name}}


# --- the Job is gone ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gate", "deleted_job", "want_finished"),
    [
        pytest.param(False, False, False, id="job is not found with FinishOrphanedWorkloads disabled"),
        pytest.param(True, False, True, id="job is not found with FinishOrphanedWorkloads enabled"),
        pytest.param(False, True, False, id="job is deleted with FinishOrphanedWorkloads disabled"),
        pytest.param(True, True, True, id="job is deleted with FinishOrphanedWorkloads enabled"),
    ],
)
def test_orphaned_workload(gate: bool, deleted_job: bool, want_finished: bool) -> None:
    world = JobReconcile({"FinishOrphanedWorkloads": gate})
    try:
        if deleted_job:
            job = world.add_job(base_job(), finalizers=[FINALIZER], deleted=True)
            name = "job"
            world.add_workload(base_workload(reserve=False), owner=job)
        else:
            name = "deleted_job"
            world.add_workload(base_workload(reserve=False), owner=_orphan_owner(name))
        world.reconcile(name)
        (wl,) = world.workloads()
        assert wl["metadata"].get("finalizers") in (None, [])
        want = (
            [("Finished", "True", "OwnerNotFound", "The workload's owner no longer exists")]
            if want_finished
            else []
        )
        assert conditions(wl) == want
        if deleted_job:
            got = world.job()
            assert got is not None  # the Job's own finalizer is not Kueue's to remove
            assert got["metadata"]["finalizers"] == [FINALIZER]
            assert got["metadata"].get("deletionTimestamp")
        assert world.events() == []
    finally:
        world.close()


# --- PodsReady (WaitForPodsReady on) ----------------------------------------------------------------

_WAIT_START = condition("PodsReady", "False", "WaitForStart", "Not all pods are ready or succeeded")
_WAIT_RECOVERY = condition("PodsReady", "False", "WaitForRecovery", "At least one pod has failed, waiting for recovery")
_STARTED = condition("PodsReady", "True", "Started", "All pods reached readiness and the workload is running")
_RECOVERED = condition("PodsReady", "True", "Recovered", "All pods reached readiness and the workload is running")


def _pr(c: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
    return {**c, "reason": reason} if reason else c


@pytest.mark.parametrize(
    ("suspend", "status", "admitted", "before", "want"),
    [
        pytest.param(True, None, False, None, _WAIT_START, id="PodsReady is set to False before Workload is Admitted"),
        pytest.param(
            True, None, True, None, _WAIT_START,
            id="PodsReady is set to False after Workload is Admitted but not all Pods reached readiness",
        ),
        pytest.param(
            False, {"ready": 9, "active": 10}, True, _WAIT_START, _WAIT_START,
            id="PodsReady is set to False after Workload is Admitted, some Pods became ready but not all Pods reached readiness",
        ),
        pytest.param(
            True, {"ready": 10}, True, _WAIT_START, _STARTED,
            id="PodsReady is set to True after Workload is Admitted and all Pods reached readiness",
        ),
        pytest.param(
            True, {"ready": 10}, True, None, _STARTED,
            id="PodsReady is set to True after Workload is Admitted and all Pods reached readiness without previous PodsReady condition",
        ),
        pytest.param(
            True, {"ready": 9, "failed": 1}, True, _STARTED, _WAIT_RECOVERY,
            id="PodsReady is set to False after Workload is running and one pod failed",
        ),
        pytest.param(
            False, {"ready": 9, "failed": 1}, True, _WAIT_RECOVERY, _WAIT_RECOVERY,
            id="PodsReady continues to be False after a pod failed and workload is still recovering",
        ),
        pytest.param(
            True, {"ready": 10}, True, _WAIT_RECOVERY, _RECOVERED,
            id="PodsReady is set to True after failing pod recovered",
        ),
        pytest.param(
            True, None, True, _pr(_WAIT_START, "PodsReady"), _WAIT_START,
            id="PodsReady=False has the new Reason if there was the old one before (pre v0.11.0)",
        ),
        pytest.param(
            True, {"ready": 10}, True, _pr(_STARTED, "PodsReady"), _STARTED,
            id="PodsReady=True has the new Reason if there was the old one before (pre v0.11.0)",
        ),
        pytest.param(
            True, None, True, _pr(_WAIT_START, "InvalidReason"), _WAIT_START,
            id="PodsReady is set to False if there's an invalid Reason (pre v0.11.0)",
        ),
    ],
)  # fmt: skip
def test_pods_ready(
    suspend: bool,
    status: dict[str, Any] | None,
    admitted: bool,
    before: dict[str, Any] | None,
    want: dict[str, Any],
) -> None:
    world = JobReconcile(
        {"TopologyAwareScheduling": False, "AssignQueueLabelsForPods": True}, wait_for_pods_ready=True
    )
    try:
        job = world.add_job(base_job(suspend=suspend), status)
        wl = base_workload(admitted=admitted)
        if before is not None:
            wl["status"]["conditions"].append(before)
        world.add_workload(wl, owner=job)
        world.reconcile()
        (got,) = world.workloads()
        want_conditions = conditions(base_workload(admitted=admitted)) + conditions({"status": {"conditions": [want]}})
        assert conditions(got) == want_conditions
        got_job = world.job()
        assert got_job is not None and got_job["spec"]["suspend"] is suspend  # the Job is left alone
        assert world.events() == []
    finally:
        world.close()
