"""Upstream's ``TestReconciler`` (``pkg/controller/jobs/job/job_controller_test.go``), ported case by case.

Each case seeds the embedded API server with the case's Job and Workloads, runs ONE reconcile of
pykueue's Job reconciler (:mod:`reconcile_harness`), and compares the Job, the Workloads and the
Events with upstream's ``wantJob`` / ``wantWorkloads`` / ``wantEvents``. Test ids are upstream's
case names verbatim. Times are the harness clock's (upstream's ``now``).

Cases already covered elsewhere under the same name (tests/controllers/jobs/test_batch_job.py for
the pure decisions, tests/controllers/test_job_integration.py end to end, and
test_job_prebuilt_upstream.py for the "when the prebuilt workload ..." cases,
test_job_deactivation_retention_upstream.py for the ``afterDeactivatedByKueue`` ones,
test_job_child_upstream.py for the "non-standalone job ..." ones) are kept there; a case
here checks the reconcile itself.

Not ported (features pykueue does not implement, checked with grep in src/pykueue):
- "the workload slice ..." (five cases), "the admitted slice follows the label when a scale-up
  replaces it", "a workload slice that reserved quota with no priority class is left alone" —
  elastic jobs / workload slices.
- "the workload without uid label is created when job's uid is longer than 63 characters" — the
  API server assigns uids (36 characters); the rule is checked on ``construct_workload`` in
  test_batch_job.py under the same name.
"""

from __future__ import annotations

from typing import Any

import pytest
from reconcile_harness import (
    FINALIZER,
    NOW_TEXT,
    JobReconcile,
    base_job,
    base_workload,
    condition,
    conditions,
    controller_ref,
)

from pykueue.api.meta import LabelSelector
from pykueue.client import resources as R
from pykueue.client.interface import APIError
from pykueue.controllers.jobs import batch_job as bj

GVK_OWNER = {"apiVersion": "batch/v1", "kind": "Job"}


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
    with JobReconcile({"FinishOrphanedWorkloads": gate}) as world:
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


# --- PodsReady (WaitForPodsReady on) ----------------------------------------------------------------

_WAIT_START = condition("PodsReady", "False", "WaitForStart", "Not all pods are ready or succeeded")
_WAIT_RECOVERY = condition(
    "PodsReady", "False", "WaitForRecovery", "At least one pod has failed, waiting for recovery"
)
_STARTED = condition("PodsReady", "True", "Started", "All pods reached readiness and the workload is running")
_RECOVERED = condition(
    "PodsReady", "True", "Recovered", "All pods reached readiness and the workload is running"
)


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
    with JobReconcile(
        {"TopologyAwareScheduling": False, "AssignQueueLabelsForPods": True}, wait_for_pods_ready=True
    ) as world:
        job = world.add_job(base_job(suspend=suspend), status)
        wl = base_workload(admitted=admitted)
        if before is not None:
            wl["status"]["conditions"].append(before)
        world.add_workload(wl, owner=job)
        world.reconcile()
        (got,) = world.workloads()
        want_conditions = conditions(base_workload(admitted=admitted)) + conditions(
            {"status": {"conditions": [want]}}
        )
        assert conditions(got) == want_conditions
        got_job = world.job()
        assert got_job is not None and got_job["spec"]["suspend"] is suspend  # the Job is left alone
        assert world.events() == []


# --- starting an admitted Job -------------------------------------------------------------------------

_TAS_OFF = {"TopologyAwareScheduling": False, "AssignQueueLabelsForPods": True}
_READY_CHECK = {"name": "check", "state": "Ready", "message": "", "lastTransitionTime": NOW_TEXT}


def _with_check(wl: dict[str, Any], **update: Any) -> dict[str, Any]:
    wl["status"]["admissionChecks"] = [{**_READY_CHECK, "podSetUpdates": [{"name": "main", **update}]}]
    return wl


def _template_labels(job: dict[str, Any] | None) -> dict[str, str]:
    assert job is not None
    return dict(job["spec"]["template"]["metadata"].get("labels") or {})


_JOB_MANAGED = (
    "job-name",
    "controller-uid",
    "batch.kubernetes.io/job-name",
    "batch.kubernetes.io/controller-uid",
)


def _kueue_labels(job: dict[str, Any] | None) -> dict[str, str]:
    """The pod-template labels beyond those the API server's Job defaulting writes."""
    return {k: v for k, v in _template_labels(job).items() if k not in _JOB_MANAGED}


@pytest.mark.parametrize(
    ("gates", "cq", "update", "want_labels"),
    [
        pytest.param(
            {"TopologyAwareScheduling": True, "AssignQueueLabelsForPods": True}, "cq", None,
            {
                "kueue.x-k8s.io/podset": "main",
                "kueue.x-k8s.io/local-queue-name": "foo",
                "kueue.x-k8s.io/cluster-queue-name": "cq",
            },
            id="PodSet label and Workload annotation are set when Job is starting; TopologyAwareScheduling enabled",
        ),
        pytest.param(
            {"TopologyAwareScheduling": False, "AssignQueueLabelsForPods": False}, "cq", None,
            {"kueue.x-k8s.io/podset": "main"},
            id="Pod queue labels are not set when AssignQueueLabelsForPods is disabled",
        ),
        pytest.param(
            _TAS_OFF, "cq" * 50, None,
            {"kueue.x-k8s.io/podset": "main", "kueue.x-k8s.io/local-queue-name": "foo"},
            id="Pod cluster queue label is not set when cluster queue name is too long",
        ),
        pytest.param(
            _TAS_OFF, "cq", {"labels": {"ac-key": "ac-value"}},
            {
                "ac-key": "ac-value",
                "kueue.x-k8s.io/podset": "main",
                "kueue.x-k8s.io/local-queue-name": "foo",
                "kueue.x-k8s.io/cluster-queue-name": "cq",
            },
            id="when workload is admitted the PodSetUpdates are propagated to job",
        ),
    ],
)  # fmt: skip
def test_admitted_workload_starts_the_job(
    gates: dict[str, bool], cq: str, update: dict[str, Any] | None, want_labels: dict[str, str]
) -> None:
    with JobReconcile(gates) as world:
        job = world.add_job(base_job())
        wl = base_workload(admitted=True, cq=cq)
        if update is not None:
            _with_check(wl, **update)
        before = world.add_workload(wl, owner=job)
        world.reconcile()
        got = world.job()
        assert got is not None and got["spec"]["suspend"] is False
        assert _kueue_labels(got) == want_labels
        want_annotations = {"kueue.x-k8s.io/workload": "wl"} if gates["TopologyAwareScheduling"] else {}
        assert (got["spec"]["template"]["metadata"].get("annotations") or {}) == want_annotations
        (after,) = world.workloads()
        assert after["status"] == before["status"]  # the Workload is left as it was
        assert world.events() == [("job", "Normal", "Started", f"Admitted by clusterQueue {cq}")]


# --- creating the Workload ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "annotations", "keys_to_copy", "want_labels", "want_annotations"),
    [
        pytest.param(
            {}, {"provreq.kueue.x-k8s.io/test-annotation": "test-val", "invalid-provreq-prefix/test-annotation-2": "test-val-2"},
            (), {}, {"provreq.kueue.x-k8s.io/test-annotation": "test-val"},
            id="when workload is created, it has its owner ProvReq annotations",
        ),
        pytest.param(
            {"toCopyKey": "toCopyValue", "dontCopyKey": "dontCopyValue"}, {},
            ("toCopyKey", "redundantToCopyKey"), {"toCopyKey": "toCopyValue"}, {},
            id="when workload is created, it has correct labels set",
        ),
    ],
)  # fmt: skip
def test_the_workload_is_created(
    labels: dict[str, str],
    annotations: dict[str, str],
    keys_to_copy: tuple[str, ...],
    want_labels: dict[str, str],
    want_annotations: dict[str, str],
) -> None:
    with JobReconcile(_TAS_OFF, label_keys_to_copy=keys_to_copy) as world:
        body = base_job()
        body["metadata"]["labels"].update(labels)
        body["metadata"]["annotations"] = annotations
        job = world.add_job(body)
        world.reconcile()
        uid = job["metadata"]["uid"]
        name = bj.workload_name("job", uid)
        (wl,) = world.workloads()
        assert wl["metadata"]["name"] == name
        assert wl["metadata"]["labels"] == {"kueue.x-k8s.io/job-uid": uid, **want_labels}
        assert (wl["metadata"].get("annotations") or {}) == want_annotations
        assert wl["metadata"]["finalizers"] == [FINALIZER]
        assert wl["metadata"]["ownerReferences"] == [controller_ref(job)]
        assert wl["spec"]["queueName"] == "foo"
        assert wl["spec"].get("priority", 0) == 0
        assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("main", 10)]
        assert conditions(wl) == []
        got = world.job()
        assert got is not None and got["spec"]["suspend"] is True
        assert world.events() == [("job", "Normal", "CreatedWorkload", f"Created Workload: ns/{name}")]


# --- eviction: stop the Job, release the quota ------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "message", "active", "with_check", "requeued"),
    [
        pytest.param(
            "Deactivated", "The workload is deactivated", False, True, "False",
            id="when workload is evicted due to spec.active field being false, job gets suspended and quota is unset",
        ),
        pytest.param(
            "PodsReadyTimeout", "Exceeded the PodsReady timeout", True, False, "False",
            id="when workload is evicted due to pods ready timeout, job gets suspended and quota is unset",
        ),
        pytest.param(
            "AdmissionCheck", "At least one admission check is false", True, True, "False",
            id="when workload is evicted due to admission check, job gets suspended",
        ),
        pytest.param(
            "ClusterQueueStopped", "The ClusterQueue is stopped", True, True, "False",
            id="when workload is evicted due to cluster queue stopped, job gets suspended",
        ),
        pytest.param(
            "LocalQueueStopped", "The LocalQueue is stopped", True, True, "False",
            id="when workload is evicted due to local queue stopped, job gets suspended",
        ),
        pytest.param(
            "Preempted", "Preempted", True, True, "True",
            id="when workload is evicted due to preemption, job gets suspended",
        ),
    ],
)  # fmt: skip
def test_evicted_workload_stops_the_job_and_releases_quota(
    reason: str, message: str, active: bool, with_check: bool, requeued: str
) -> None:
    with JobReconcile(_TAS_OFF) as world:
        job = world.add_job(base_job(suspend=False))
        wl = base_workload(admitted=True)
        wl["status"]["conditions"][-1]["lastTransitionTime"] = "2026-11-22T11:59:59Z"  # now - 1s
        wl["status"]["conditions"].append(condition("Evicted", "True", reason, message))
        if not active:
            wl["spec"]["active"] = False
        if with_check:
            _with_check(wl, labels={"ac-key": "ac-value"})
        world.add_workload(wl, owner=job)
        world.reconcile()
        got = world.job()
        assert got is not None and got["spec"]["suspend"] is True
        assert _kueue_labels(got) == {}
        (after,) = world.workloads()
        assert sorted(conditions(after)) == sorted(
            [
                ("Admitted", "False", "NoReservation", "The workload has no reservation"),
                ("QuotaReserved", "False", "PendingEvaluation", message),
                ("Requeued", requeued, reason, message),
                ("Evicted", "True", reason, message),
            ]
        )
        assert after["status"].get("admission") is None
        assert after["status"].get("accumulatedPastExecutionTimeSeconds") == 1
        assert [c["name"] for c in after["status"].get("admissionChecks") or ()] == (
            ["check"] if with_check else []
        )
        assert world.events() == [("job", "Normal", "Stopped", message)]


def test_initially_suspended_job_with_inactive_unreserved_workload() -> None:
    """Upstream: "when job is initially suspended, the Workload has active=false and it's not admitted,
    it should not get an evicted condition, but the job should remain suspended"."""
    with JobReconcile(_TAS_OFF) as world:
        job = world.add_job(base_job())
        wl = _with_check(base_workload(admitted=True), labels={"ac-key": "ac-value"})
        wl["spec"]["active"] = False
        wl["status"]["conditions"] = [
            condition("QuotaReserved", "False", "PendingEvaluation", "The workload is deactivated"),
            condition("Admitted", "False", "NoReservation", "The workload has no reservation"),
        ]
        before = world.add_workload(wl, owner=job)
        world.reconcile()
        got = world.job()
        assert got is not None and got["spec"]["suspend"] is True
        (after,) = world.workloads()
        assert after["status"] == before["status"]
        assert world.events() == []


# --- the Job finished ---------------------------------------------------------------------------------


def test_when_job_completes_workload_is_marked_as_finished() -> None:
    with JobReconcile(_TAS_OFF) as world:
        complete = {"type": "Complete", "status": "True", "message": "Job finished successfully"}
        job = world.add_job(base_job(), {"conditions": [complete]})
        world.add_workload(base_workload(admitted=True), owner=job)
        world.reconcile()
        (after,) = world.workloads()
        finished = next(c for c in after["status"]["conditions"] if c["type"] == "Finished")
        assert (finished["status"], finished["reason"], finished["message"]) == (
            "True", "Succeeded", "Job finished successfully",
        )  # fmt: skip
        assert finished.get("observedGeneration") == after["metadata"]["generation"] == 1
        assert after["metadata"]["finalizers"] == [FINALIZER]  # removed once it is Finished (next case)
        assert world.events() == [
            ("job", "Normal", "FinishedWorkload", "Workload 'ns/wl' is declared finished")
        ]


def test_when_the_workload_is_finished_its_finalizer_is_removed() -> None:
    with JobReconcile(_TAS_OFF) as world:
        job = world.add_job(base_job())
        wl = base_workload("a", reserve=False)
        wl["status"] = {
            "conditions": [
                condition("QuotaReserved", "False", "ByTest", ""),
                condition("Finished", "True", "ByTest", ""),
            ]
        }
        world.add_workload(wl, owner=job)
        world.reconcile()
        (after,) = world.workloads()
        assert after["metadata"].get("finalizers") in (None, [])
        assert [c[:2] for c in conditions(after)] == [("QuotaReserved", "False"), ("Finished", "True")]
        assert world.events() == [
            ("job", "Normal", "FinishedWorkload", "Workload 'ns/a' is declared finished")
        ]


# --- PodSetUpdates that cannot be applied: the Workload finishes FailedToStart --------------------------


def _check(name: str, **update: Any) -> dict[str, Any]:
    return {**_READY_CHECK, "name": name, "podSetUpdates": [{"name": "main", **update}]}


@pytest.mark.parametrize(
    ("node_selector", "checks", "message"),
    [
        *(
            pytest.param(
                None,
                [
                    _check("check1", **{field: {"ac-key": "ac-value1"}}),
                    _check("check2", **{field: {"ac-key": "ac-value2"}}),
                ],
                f'in admission check "check2": invalid admission check PodSetUpdate: conflict for {field}: '
                "conflict for key=ac-key, value1=ac-value1, value2=ac-value2",
                id=f"when workload is admitted and PodSetUpdates conflict between admission checks on {field}, "
                "the workload is finished with failure",
            )
            for field in ("labels", "annotations", "nodeSelector")
        ),
        pytest.param(
            {"provisioning": "spot"},
            [_check("check", nodeSelector={"provisioning": "on-demand"})],
            "invalid admission check PodSetUpdate: conflict for nodeSelector: "
            "conflict for key=provisioning, value1=spot, value2=on-demand",
            id="when workload is admitted and PodSetUpdates conflict between admission check nodeSelector and "
            "current node selector, the workload is finished with failure",
        ),
    ],
)
def test_conflicting_pod_set_updates_finish_the_workload(
    node_selector: dict[str, str] | None, checks: list[dict[str, Any]], message: str
) -> None:
    with JobReconcile(_TAS_OFF) as world:
        body = base_job()
        if node_selector is not None:
            body["spec"]["template"]["spec"]["nodeSelector"] = node_selector
        job = world.add_job(body)
        wl = base_workload(admitted=True)
        wl["status"]["admissionChecks"] = checks
        world.add_workload(wl, owner=job)
        world.reconcile()
        got = world.job()
        assert got is not None and got["spec"]["suspend"] is True
        assert got["spec"]["template"]["spec"].get("nodeSelector") == node_selector
        assert _kueue_labels(got) == {}
        (after,) = world.workloads()
        assert conditions(after)[-1] == ("Finished", "True", "FailedToStart", message)
        assert world.events() == []


def test_when_workload_is_admitted_the_pod_set_updates_values_matching_for_key() -> None:
    """Upstream: "when workload is admitted the PodSetUpdates values matching for key"."""
    with JobReconcile(_TAS_OFF) as world:
        job = world.add_job(base_job())
        wl = base_workload(admitted=True)
        wl["status"]["admissionChecks"] = [
            _check(
                "check1",
                labels={"label-key1": "common-value"},
                annotations={"annotation-key1": "common-value", "annotation-key2": "only-in-check1"},
                nodeSelector={"node-selector-key1": "common-value"},
            ),
            _check(
                "check2",
                labels={"label-key1": "common-value"},
                annotations={"annotation-key1": "common-value"},
                nodeSelector={"node-selector-key1": "common-value", "node-selector-key2": "only-in-check2"},
            ),
        ]
        world.add_workload(wl, owner=job)
        world.reconcile()
        got = world.job()
        assert got is not None and got["spec"]["suspend"] is False
        template = got["spec"]["template"]
        assert template["metadata"]["annotations"] == {
            "annotation-key1": "common-value",
            "annotation-key2": "only-in-check1",
        }
        assert _kueue_labels(got) == {
            "label-key1": "common-value",
            "kueue.x-k8s.io/local-queue-name": "foo",
            "kueue.x-k8s.io/cluster-queue-name": "cq",
            "kueue.x-k8s.io/podset": "main",
        }
        assert template["spec"]["nodeSelector"] == {
            "node-selector-key1": "common-value",
            "node-selector-key2": "only-in-check2",
        }
        assert world.events() == [("job", "Normal", "Started", "Admitted by clusterQueue cq")]


# --- matching the Job with its Workloads ----------------------------------------------------------------

_MANAGE_ALL: dict[str, Any] = {"manage_jobs_without_queue_name": True}


def test_suspended_job_with_matching_admitted_workload_is_unsuspended() -> None:
    with JobReconcile(_TAS_OFF, **_MANAGE_ALL) as world:
        job = world.add_job(base_job())
        before = world.add_workload(base_workload(admitted=True), owner=job)
        world.reconcile()
        got = world.job()
        assert got is not None and got["spec"]["suspend"] is False
        assert _kueue_labels(got) == {
            "kueue.x-k8s.io/podset": "main",
            "kueue.x-k8s.io/local-queue-name": "foo",
            "kueue.x-k8s.io/cluster-queue-name": "cq",
        }
        (after,) = world.workloads()
        assert after["status"] == before["status"]
        assert world.events() == [("job", "Normal", "Started", "Admitted by clusterQueue cq")]


def test_non_matching_admitted_workload_is_deleted() -> None:
    """Upstream: "non-matching admitted workload is deleted" (wantErr ErrNoMatchingWorkloads: the
    next reconcile creates the Workload)."""
    with JobReconcile(_TAS_OFF, **_MANAGE_ALL) as world:
        job = world.add_job(base_job())
        world.add_workload(base_workload(admitted=True, count=5), owner=job)
        world.reconcile()
        assert world.workloads() == []
        got = world.job()
        assert got is not None and got["spec"]["suspend"] is True
        assert world.events() == [
            ("job", "Normal", "DeletedWorkload", "Deleted not matching Workload: ns/wl")
        ]


def test_non_matching_non_admitted_workload_is_updated() -> None:
    with JobReconcile(_TAS_OFF, **_MANAGE_ALL) as world:
        job = world.add_job(base_job())
        wl = base_workload("a", reserve=False, count=5)
        del wl["spec"]["queueName"]
        wl["spec"]["priority"] = 0
        world.add_workload(wl, owner=job)
        world.reconcile()
        (after,) = world.workloads()
        assert after["metadata"]["name"] == "a"
        assert after["metadata"]["finalizers"] == [FINALIZER]
        assert [(ps["name"], ps["count"]) for ps in after["spec"]["podSets"]] == [("main", 10)]
        assert after["spec"]["queueName"] == "foo"
        assert after["spec"].get("priority", 0) == 0
        assert conditions(after) == []
        assert world.events() == [
            ("job", "Normal", "UpdatedWorkload", "Updated not matching Workload for suspended job: ns/a")
        ]


def _partial_workload() -> dict[str, Any]:
    wl = base_workload("a", admitted=True, count=10)
    wl["spec"]["podSets"][0]["minCount"] = 5
    wl["status"]["admission"]["podSetAssignments"][0]["count"] = 8
    return wl


def test_suspended_job_with_partial_admission_and_admitted_workload_is_unsuspended() -> None:
    with JobReconcile(_TAS_OFF, **_MANAGE_ALL) as world:
        body = base_job()
        body["metadata"]["annotations"] = {"kueue.x-k8s.io/job-min-parallelism": "5"}
        job = world.add_job(body)
        before = world.add_workload(_partial_workload(), owner=job)
        world.reconcile()
        got = world.job()
        assert got is not None and got["spec"]["suspend"] is False
        assert got["spec"]["parallelism"] == 8
        assert _kueue_labels(got) == {
            "kueue.x-k8s.io/podset": "main",
            "kueue.x-k8s.io/local-queue-name": "foo",
            "kueue.x-k8s.io/cluster-queue-name": "cq",
        }
        (after,) = world.workloads()
        assert after["status"] == before["status"] and after["spec"] == before["spec"]
        assert world.events() == [("job", "Normal", "Started", "Admitted by clusterQueue cq")]


def test_unsuspended_job_with_partial_admission_and_non_matching_admitted_workload_is_suspended() -> None:
    """Upstream: "unsuspended job with partial admission and non-matching admitted workload is
    suspended and workload is deleted"."""
    with JobReconcile(_TAS_OFF, **_MANAGE_ALL) as world:
        body = base_job(suspend=False)
        body["metadata"]["annotations"] = {"kueue.x-k8s.io/job-min-parallelism": "5"}
        job = world.add_job(body)
        wl = _partial_workload()
        del wl["spec"]["queueName"]
        wl["status"]["conditions"] = wl["status"]["conditions"]
        world.add_workload(wl, owner=job)
        world.reconcile()
        got = world.job()
        assert got is not None and got["spec"]["suspend"] is True
        assert got["spec"]["parallelism"] == 10
        assert _kueue_labels(got) == {}
        assert world.workloads() == []
        assert world.events() == [
            (
                "job",
                "Normal",
                "Stopped",
                "No matching Workload; restoring pod templates according to existent Workload",
            ),
            ("job", "Normal", "DeletedWorkload", "Deleted not matching Workload: ns/a"),
        ]


# --- the Job's queue name -----------------------------------------------------------------------------


def _created_workload(world: JobReconcile, job: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """The Workload upstream's ``MakeWorkload("job", ...)`` describes: the Job's own, by its name."""
    uid = job["metadata"]["uid"]
    wl = base_workload(bj.workload_name("job", uid), reserve=False)
    wl["metadata"]["labels"] = {"kueue.x-k8s.io/job-uid": uid}
    wl["spec"].update(spec)
    return world.add_workload(wl, owner=job)


def test_the_workload_is_created_when_queue_name_is_set() -> None:
    with JobReconcile(_TAS_OFF) as world:
        job = world.add_job(base_job(suspend=False, queue="test-queue"))
        world.reconcile()
        got = world.job()
        assert got is not None and got["spec"]["suspend"] is True
        name = bj.workload_name("job", job["metadata"]["uid"])
        (wl,) = world.workloads()
        assert (wl["metadata"]["name"], wl["spec"]["queueName"]) == (name, "test-queue")
        assert world.events() == [
            ("job", "Normal", "Stopped", "Missing Workload; unable to restore pod templates"),
            ("job", "Normal", "CreatedWorkload", f"Created Workload: ns/{name}"),
        ]


def test_the_workload_is_updated_when_queue_name_has_changed_for_suspended_job() -> None:
    with JobReconcile(_TAS_OFF) as world:
        job = world.add_job(base_job(queue="test-queue-new"))
        _created_workload(world, job, queueName="test-queue", priority=0)
        world.reconcile()
        (wl,) = world.workloads()
        assert wl["spec"]["queueName"] == "test-queue-new"
        assert world.events() == []


def test_the_workload_is_not_created_when_queue_name_is_not_set() -> None:
    with JobReconcile(_TAS_OFF) as world:
        world.add_job(base_job(queue=None, suspend=False))
        world.reconcile()
        assert world.workloads() == []
        got = world.job()
        assert got is not None and got["spec"]["suspend"] is False
        assert world.events() == []


def test_checking_a_second_non_matching_workload_is_deleted() -> None:
    with JobReconcile(_TAS_OFF, **_MANAGE_ALL) as world:
        job = world.add_job(base_job(suspend=False, parallelism=5))
        first = base_workload("first-workload", admitted=True, count=5)
        del first["spec"]["queueName"]
        world.add_workload(first, owner=job)
        second = base_workload("second-workload", reserve=False)
        del second["spec"]["queueName"]
        second["spec"]["podSets"][0]["minCount"] = 5
        world.add_workload(second, owner=job)
        world.reconcile()
        assert [w["metadata"]["name"] for w in world.workloads()] == ["first-workload"]
        got = world.job()
        assert got is not None and got["spec"]["suspend"] is False
        assert world.events() == [
            ("job", "Normal", "DeletedWorkload", "Deleted not matching Workload: ns/second-workload")
        ]


# --- eviction restores the pod template ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("suspend", "start_time", "want_events"),
    [
        pytest.param(
            False, True, [("job", "Normal", "Stopped", "")],
            id="when workload is evicted, suspend, reset startTime and restore node affinity",
        ),
        pytest.param(
            True, True, [], id="when workload is evicted but suspended, reset startTime and restore node affinity"
        ),
        pytest.param(
            True, False, [], id="when workload is evicted, suspended and startTime is reset, restore node affinity"
        ),
    ],
)  # fmt: skip
def test_evicted_workload_restores_node_affinity(
    suspend: bool, start_time: bool, want_events: list[tuple[str, str, str, str]]
) -> None:
    with JobReconcile(_TAS_OFF) as world:
        body = base_job(suspend=suspend)
        body["spec"]["template"]["spec"]["nodeSelector"] = {"provisioning": "spot"}
        status: dict[str, Any] = {"active": 10}
        if start_time:
            status["startTime"] = NOW_TEXT
        job = world.add_job(body, status)
        wl = base_workload(admitted=True)
        wl["status"]["conditions"].append(condition("Evicted", "True", "ByTest", ""))
        before = world.add_workload(wl, owner=job)
        world.reconcile()
        got = world.job()
        assert got is not None and got["spec"]["suspend"] is True
        assert got["spec"]["template"]["spec"].get("nodeSelector") in (None, {})
        assert got["status"].get("startTime") is None
        assert got["status"]["active"] == 10
        (after,) = world.workloads()
        assert after["status"] == before["status"]  # active pods: the quota stays until they are gone
        assert [e[:3] for e in world.events()] == [e[:3] for e in want_events]
        assert [e[3] for e in world.events()] == [e[3] for e in want_events]


def test_the_workload_should_not_be_recreated_for_the_completed_job() -> None:
    with JobReconcile(_TAS_OFF) as world:
        world.add_job(base_job(), {"conditions": [{"type": "Complete", "status": "True"}]})
        world.reconcile()
        assert world.workloads() == []
        assert world.events() == []


# --- tolerations and node selectors changed on the Job --------------------------------------------------

_TOL1 = {"key": "tolerationkey1", "operator": "Exists", "effect": "NoSchedule"}
_TOL2 = {"key": "tolerationkey2", "operator": "Exists", "effect": "NoSchedule"}


def _job_with(
    suspend: bool, tolerations: list[dict[str, Any]], node_selector: dict[str, str] | None
) -> dict[str, Any]:
    body = base_job(suspend=suspend)
    spec = body["spec"]["template"]["spec"]
    spec["tolerations"] = tolerations
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    return body


def _job_workload(
    job: dict[str, Any], *, reserve: bool, admitted: bool, node_selector: dict[str, str] | None
) -> dict[str, Any]:
    wl = base_workload(
        bj.workload_name("job", job["metadata"]["uid"]),
        reserve=reserve,
        admitted=admitted if reserve else None,
        assignment={"flavors": {"cpu": "default"}},
    )
    wl["metadata"]["labels"] = {"kueue.x-k8s.io/job-uid": job["metadata"]["uid"]}
    wl["spec"]["priority"] = 0
    spec = wl["spec"]["podSets"][0]["template"]["spec"]
    spec["tolerations"] = [_TOL1]
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    return wl


def test_the_workload_is_not_admitted_tolerations_and_node_selector_change() -> None:
    with JobReconcile(_TAS_OFF) as world:
        job = world.add_job(_job_with(True, [_TOL2], {"node-label": "value"}))
        wl = _job_workload(
            job, reserve=False, admitted=False, node_selector={"different node-label": "different value"}
        )
        world.add_workload(wl, owner=job)
        world.reconcile()
        (after,) = world.workloads()
        spec = after["spec"]["podSets"][0]["template"]["spec"]
        assert spec["tolerations"] == [_TOL2]
        assert spec["nodeSelector"] == {"node-label": "value"}
        name = wl["metadata"]["name"]
        assert world.events() == [
            (
                "job",
                "Normal",
                "UpdatedWorkload",
                f"Updated not matching Workload for suspended job: ns/{name}",
            )
        ]


def test_the_workload_is_admitted_tolerations_and_node_selector_change() -> None:
    with JobReconcile(_TAS_OFF) as world:
        job = world.add_job(_job_with(False, [_TOL2], {"node-label": "value"}))
        wl = _job_workload(
            job, reserve=True, admitted=True, node_selector={"different node-label": "different value"}
        )
        before = world.add_workload(wl, owner=job)
        world.reconcile()
        (after,) = world.workloads()
        assert after["spec"] == before["spec"] and after["status"] == before["status"]
        got = world.job()
        assert got is not None and got["spec"]["suspend"] is False
        assert world.events() == []


def test_the_workload_is_admitted_job_still_suspended_and_tolerations_change() -> None:
    with JobReconcile(_TAS_OFF) as world:
        job = world.add_job(_job_with(True, [_TOL2], None))
        wl = _job_workload(job, reserve=True, admitted=False, node_selector=None)
        wl["status"]["conditions"] = wl["status"]["conditions"][:1]  # quota reserved, not admitted
        world.add_workload(wl, owner=job)
        world.reconcile()
        assert world.workloads() == []
        name = wl["metadata"]["name"]
        assert world.events() == [
            ("job", "Normal", "DeletedWorkload", f"Deleted not matching Workload: ns/{name}")
        ]


# --- admission checks' messages -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("checks", "want"),
    [
        pytest.param(
            [("acName", "Not admitted, ETA: 2024-02-22T10:36:40Z.")],
            "acName: Not admitted, ETA: 2024-02-22T10:36:40Z.",
            id="admission check message is emitted as event for job",
        ),
        pytest.param(
            [("acName1", "Some message."), ("acName2", "Another message.")],
            "acName1: Some message.; acName2: Another message.",
            id="multiple admission check messages are emitted as a single event for job",
        ),
    ],
)
def test_admission_check_messages(checks: list[tuple[str, str]], want: str) -> None:
    with JobReconcile(_TAS_OFF) as world:
        job = world.add_job(base_job())
        wl = base_workload(admitted=False)
        wl["spec"]["active"] = False
        wl["status"]["conditions"][0] = condition("QuotaReserved", "True", "Reason", "")
        wl["status"]["admissionChecks"] = [
            {"name": n, "state": "Pending", "message": m, "lastTransitionTime": NOW_TEXT} for n, m in checks
        ]
        before = world.add_workload(wl, owner=job)
        world.reconcile()
        (after,) = world.workloads()
        assert after["status"] == before["status"] and after["spec"] == before["spec"]
        assert world.events() == [("job", "Normal", "UpdatedAdmissionCheck", want)]


# --- maximum execution time -------------------------------------------------------------------------------


def test_the_maximum_execution_time_is_passed_to_the_created_workload() -> None:
    with JobReconcile(_TAS_OFF) as world:
        body = base_job()
        body["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"] = "10"
        job = world.add_job(body)
        world.reconcile()
        (wl,) = world.workloads()
        assert wl["spec"]["maximumExecutionTimeSeconds"] == 10
        name = bj.workload_name("job", job["metadata"]["uid"])
        assert world.events() == [("job", "Normal", "CreatedWorkload", f"Created Workload: ns/{name}")]


def test_the_maximum_execution_time_is_updated_in_the_workload() -> None:
    with JobReconcile(_TAS_OFF) as world:
        body = base_job()
        body["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"] = "10"
        job = world.add_job(body)
        wl = _created_workload(world, job, priority=0, maximumExecutionTimeSeconds=5)
        world.reconcile()
        (after,) = world.workloads()
        assert after["spec"]["maximumExecutionTimeSeconds"] == 10
        name = wl["metadata"]["name"]
        assert world.events() == [
            (
                "job",
                "Normal",
                "UpdatedWorkload",
                f"Updated not matching Workload for suspended job: ns/{name}",
            )
        ]


# --- managedJobsNamespaceSelector ---------------------------------------------------------------------------

_MANAGED_BY_KUEUE = LabelSelector(match_labels={"managed-by-kueue": "true"})


def test_job_with_queue_name_is_not_reconciled_in_unlabelled_namespace_when_always_respected_is_enabled() -> (
    None
):
    with JobReconcile(_TAS_OFF, managed_jobs_namespace_selector=_MANAGED_BY_KUEUE) as world:
        world.add_job(base_job(queue="test-queue", suspend=False))
        world.reconcile()
        got = world.job()
        assert got is not None and got["spec"]["suspend"] is False
        assert world.workloads() == []
        assert world.events() == []


def test_job_with_queue_name_is_reconciled_in_labelled_namespace_when_always_respected_is_enabled() -> None:
    with JobReconcile(
        _TAS_OFF, managed_jobs_namespace_selector=_MANAGED_BY_KUEUE, manage_jobs_without_queue_name=True
    ) as world:
        job = world.add_job(base_job(namespace="labelled-ns", queue="test-queue"))
        world.reconcile(namespace="labelled-ns")
        (wl,) = world.workloads("labelled-ns")
        name = bj.workload_name("job", job["metadata"]["uid"])
        assert (wl["metadata"]["name"], wl["spec"]["queueName"]) == (name, "test-queue")
        assert world.events("labelled-ns") == [
            ("job", "Normal", "CreatedWorkload", f"Created Workload: labelled-ns/{name}")
        ]


# --- priority ---------------------------------------------------------------------------------------------

_WPC = "kueue.x-k8s.io/priority-class"


def _add_classes(world: JobReconcile, wpcs: dict[str, int], pcs: dict[str, int]) -> None:
    for name, value in wpcs.items():
        world.add(
            R.WORKLOAD_PRIORITY_CLASSES,
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "WorkloadPriorityClass",
                "metadata": {"name": name},
                "value": value,
            },
        )
    for name, value in pcs.items():
        world.add(
            R.PRIORITY_CLASSES,
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            },
        )


def _wpc_ref(name: str) -> dict[str, str]:
    return {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": name}


def _pc_ref(name: str) -> dict[str, str]:
    return {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": name}


def test_a_warning_names_the_workload_priority_class_that_does_not_exist() -> None:
    with JobReconcile() as world:
        _add_classes(world, {"test-wpc": 100}, {})
        body = base_job()
        body["metadata"]["labels"][_WPC] = "missing-wpc"
        world.add_job(body)
        with pytest.raises(APIError, match="missing-wpc"):  # upstream's wantErr: cmpopts.AnyError
            world.reconcile()
        assert world.workloads() == []
        assert world.events() == [
            (
                "job",
                "Warning",
                "WorkloadPriorityClassNotFound",
                'WorkloadPriorityClass "missing-wpc" not found',
            )
        ]


@pytest.mark.parametrize(
    ("label", "wpcs", "pcs", "pod_pc", "before", "after", "want_events"),
    [
        pytest.param(
            "missing-wpc", {}, {}, None, (2000, _pc_ref("pod-high")), (2000, _pc_ref("pod-high")), [],
            id="a Pod PriorityClass-backed workload is left alone and reports nothing",
        ),
        pytest.param(
            "missing-wpc", {"test-wpc": 100}, {}, None, (100, _wpc_ref("test-wpc")), (100, _wpc_ref("test-wpc")),
            [("job", "Warning", "WorkloadPriorityClassNotFound", 'WorkloadPriorityClass "missing-wpc" not found')],
            id="a warning names the WorkloadPriorityClass the label was changed to",
        ),
        pytest.param(
            "test-wpc-high", {"test-wpc": 100, "test-wpc-high": 200}, {}, None,
            (100, _wpc_ref("test-wpc")), (200, _wpc_ref("test-wpc-high")),
            [("job", "Normal", "UpdatedWorkload", "Updated workload priority class: ns/job")],
            id="the workload is updated when priority class has changed for suspended job",
        ),
        pytest.param(
            None, {"test-wpc": 100}, {"test-pc": 200}, "test-pc", (200, _pc_ref("test-pc")), (200, _pc_ref("test-pc")), [],
            id="shouldn't update workload when priority class no changes",
        ),
    ],
)  # fmt: skip
def test_workload_priority_follows_the_job(
    label: str | None,
    wpcs: dict[str, int],
    pcs: dict[str, int],
    pod_pc: str | None,
    before: tuple[int, dict[str, str]],
    after: tuple[int, dict[str, str]],
    want_events: list[tuple[str, str, str, str]],
) -> None:
    with JobReconcile(_TAS_OFF) as world:
        _add_classes(world, wpcs, pcs)
        body = base_job()
        if label is not None:
            body["metadata"]["labels"][_WPC] = label
        if pod_pc is not None:
            body["spec"]["template"]["spec"]["priorityClassName"] = pod_pc
        job = world.add_job(body)
        wl = base_workload("job", reserve=False)
        wl["metadata"]["labels"] = {"kueue.x-k8s.io/job-uid": job["metadata"]["uid"]}
        wl["spec"]["priority"], wl["spec"]["priorityClassRef"] = before
        if pod_pc is not None:
            wl["spec"]["podSets"][0]["template"]["spec"]["priorityClassName"] = pod_pc
        world.add_workload(wl, owner=job)
        # upstream's wantErr (cmpopts.AnyError) where the class the label names is not found
        if any(event[2] == "WorkloadPriorityClassNotFound" for event in want_events):
            with pytest.raises(APIError, match="missing-wpc"):
                world.reconcile()
        else:
            world.reconcile()
        (got,) = world.workloads()
        assert (got["spec"]["priority"], got["spec"]["priorityClassRef"]) == after
        assert world.events() == want_events


@pytest.mark.parametrize(
    ("wpc", "pc", "want_priority", "want_ref"),
    [
        pytest.param(
            "test-wpc", None, 100, _wpc_ref("test-wpc"),
            id="the workload is created when queue name is set, with workloadPriorityClass",
        ),
        pytest.param(
            None, "test-pc", 200, _pc_ref("test-pc"),
            id="the workload is created when queue name is set, with PriorityClass",
        ),
        pytest.param(
            "test-wpc", "test-pc", 100, _wpc_ref("test-wpc"),
            id="the workload is created when queue name is set, with workloadPriorityClass and PriorityClass",
        ),
    ],
)  # fmt: skip
def test_the_workload_is_created_with_priority(
    wpc: str | None, pc: str | None, want_priority: int, want_ref: dict[str, str]
) -> None:
    with JobReconcile(_TAS_OFF) as world:
        _add_classes(world, {"test-wpc": 100}, {"test-pc": 200})
        body = base_job(suspend=False, queue="test-queue")
        if wpc is not None:
            body["metadata"]["labels"][_WPC] = wpc
        if pc is not None:
            body["spec"]["template"]["spec"]["priorityClassName"] = pc
        job = world.add_job(body)
        world.reconcile()
        got = world.job()
        assert got is not None and got["spec"]["suspend"] is True
        (wl,) = world.workloads()
        assert (wl["spec"]["priority"], wl["spec"]["priorityClassRef"]) == (want_priority, want_ref)
        assert wl["spec"]["podSets"][0]["template"]["spec"].get("priorityClassName") == pc
        name = bj.workload_name("job", job["metadata"]["uid"])
        assert world.events() == [
            ("job", "Normal", "Stopped", "Missing Workload; unable to restore pod templates"),
            ("job", "Normal", "CreatedWorkload", f"Created Workload: ns/{name}"),
        ]
