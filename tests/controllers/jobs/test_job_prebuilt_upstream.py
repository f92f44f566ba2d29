"""Upstream's ``TestReconciler`` prebuilt-workload cases (``pkg/controller/jobs/job/job_controller_test.go``):
a Job naming a prebuilt Workload (``kueue.x-k8s.io/prebuilt-workload-name``) adopts it instead of
creating one (``jobframework.JobReconciler.ensureOneWorkload``, ``EnsurePrebuiltWorkloadOwnership``,
``ensurePrebuiltWorkloadInSync``, ``handleJobWithNoWorkload``). Test ids are upstream's case names."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from reconcile_harness import FINALIZER, JobReconcile, base_job, base_workload, conditions, controller_ref

from pykueue.client import resources as R
from pykueue.client.interface import APIError
from pykueue.controllers.jobs import batch_job as bj

_TAS_OFF = {"TopologyAwareScheduling": False, "AssignQueueLabelsForPods": True}
_PREBUILT = "kueue.x-k8s.io/prebuilt-workload-name"


def _prebuilt_job(name: str) -> dict[str, Any]:
    job = base_job(suspend=False)
    job["metadata"]["labels"][_PREBUILT] = name
    return job


def _prebuilt_workload(job: dict[str, Any], count: int = 10) -> dict[str, Any]:
    """Upstream's prebuilt Workload, with the containers the API server stored for ``job`` (its fake
    client applies no defaults, so its cases write the same containers on both sides)."""
    wl = base_workload("prebuilt-workload", count=count, reserve=False, queue="test-queue")
    wl["spec"]["podSets"][0]["template"]["spec"]["containers"] = copy.deepcopy(
        job["spec"]["template"]["spec"]["containers"]
    )
    wl["spec"]["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "test-wpc"}
    wl["spec"]["priority"] = 100
    return wl


def _add_wpc(world: JobReconcile) -> None:
    world.client.create(
        R.WORKLOAD_PRIORITY_CLASSES,
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": "test-wpc"},
            "value": 100,
        },
    )


def _suspended(world: JobReconcile) -> bool:
    got = world.job()
    assert got is not None
    return bool(got["spec"]["suspend"])


def test_when_the_prebuilt_workload_is_missing_no_new_one_is_created() -> None:
    """Upstream: "when the prebuilt workload is missing, no new one is created, the job is suspended
    and prebuilt workload not found error is returned"."""
    with JobReconcile(_TAS_OFF) as world:
        world.add_job(_prebuilt_job("missing-workload"))
        with pytest.raises(APIError, match="prebuilt workload not found"):
            world.reconcile()
        assert world.workloads() == []
        assert _suspended(world)
        assert world.events() == [("job", "Normal", "Stopped", "missing workload")]


def test_when_the_prebuilt_workload_exists_its_owner_info_is_updated() -> None:
    with JobReconcile(_TAS_OFF) as world:
        _add_wpc(world)
        job = world.add_job(_prebuilt_job("prebuilt-workload"))
        world.add_workload(_prebuilt_workload(job))
        world.reconcile()
        (wl,) = world.workloads()
        assert wl["metadata"]["name"] == "prebuilt-workload"
        assert wl["metadata"]["ownerReferences"] == [controller_ref(job)]
        assert wl["metadata"]["labels"] == {bj.JOB_UID_LABEL: job["metadata"]["uid"]}
        assert wl["metadata"]["finalizers"] == [FINALIZER]
        assert (wl["spec"]["queueName"], wl["spec"]["priority"]) == ("test-queue", 100)
        assert _suspended(world)
        assert world.events() == [("job", "Normal", "Stopped", "Not admitted by cluster queue")]


def test_when_the_prebuilt_workload_is_owned_by_another_object() -> None:
    with JobReconcile(_TAS_OFF) as world:
        other = world.add_job(base_job("other-job"))
        job = world.add_job(_prebuilt_job("prebuilt-workload"))
        world.add_workload(_prebuilt_workload(job), owner=other, owner_containers=False)
        with pytest.raises(APIError, match="prebuilt workload not found"):
            world.reconcile()
        (wl,) = world.workloads()
        assert wl["metadata"]["ownerReferences"] == [controller_ref(other)]
        assert "labels" not in wl["metadata"] or not wl["metadata"]["labels"]
        assert _suspended(world)
        assert world.events() == [("job", "Normal", "Stopped", "missing workload")]


def test_when_the_prebuilt_workload_is_not_equivalent_to_the_job() -> None:
    with JobReconcile(_TAS_OFF) as world:
        _add_wpc(world)
        job = world.add_job(_prebuilt_job("prebuilt-workload"))
        world.add_workload(_prebuilt_workload(job, count=1))
        with pytest.raises(APIError, match="prebuilt workload not found"):
            world.reconcile()
        (wl,) = world.workloads()
        assert wl["metadata"]["ownerReferences"] == [controller_ref(job)]
        assert wl["metadata"]["labels"] == {bj.JOB_UID_LABEL: job["metadata"]["uid"]}
        assert conditions(wl) == [
            ("Finished", "True", "OutOfSync", "The prebuilt workload is out of sync with its user job")
        ]
        assert _suspended(world)
        assert world.events() == [("job", "Normal", "Stopped", "missing workload")]
