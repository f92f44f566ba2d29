"""Reconciler decisions checked against upstream's ``jobframework/reconciler.go`` that the ported
``TestReconciler`` tables do not reach (one reconcile each, :mod:`reconcile_harness`)."""

from __future__ import annotations

from reconcile_harness import JobReconcile, base_job, base_workload


def test_rewriting_a_non_matching_workload_keeps_it_deactivated() -> None:
    """``updateWorkloadToMatchJob`` passes the old ``wl.Spec.Active`` to ``prepareWorkload``: the
    rewritten spec keeps a deactivated Workload deactivated."""
    with JobReconcile({"TopologyAwareScheduling": False}) as world:
        job = world.add_job(base_job())
        wl = base_workload("a", reserve=False, count=5)
        wl["spec"]["active"] = False
        world.add_workload(wl, owner=job)
        world.reconcile()
        (after,) = world.workloads()
        assert [ps["count"] for ps in after["spec"]["podSets"]] == [10]
        assert after["spec"].get("active") is False


def test_a_workload_of_an_earlier_job_of_the_same_name_is_deleted() -> None:
    """``FindMatchingWorkloads`` lists the Workloads by owner kind and NAME (the owner index), and
    ``EquivalentToWorkload`` rejects one whose controller uid is not the Job's: a Job deleted and
    created again under its name before its reconcile ran gets its predecessor's Workload deleted
    (finalizer first, so its quota is released), not left behind beside a new one."""
    from pykueue.client import resources as R

    with JobReconcile({"TopologyAwareScheduling": False}) as world:
        first = world.add_job(base_job())
        world.add_workload(base_workload("old", admitted=True), owner=first)
        world.client.delete(R.JOBS, "job", "ns")
        second = world.add_job(base_job())
        assert second["metadata"]["uid"] != first["metadata"]["uid"]
        world.reconcile()
        assert world.workloads() == []
        assert world.events() == [("job", "Normal", "DeletedWorkload", "Deleted not matching Workload: ns/old")]
