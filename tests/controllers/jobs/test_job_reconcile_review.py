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
