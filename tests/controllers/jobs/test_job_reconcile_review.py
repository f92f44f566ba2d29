"""Reconciler decisions checked against upstream's ``jobframework/reconciler.go`` that the ported
``TestReconciler`` tables do not reach (one reconcile each, :mod:`reconcile_harness`)."""

from __future__ import annotations

from reconcile_harness import JobReconcile, base_job, base_workload, conditions, controller_ref

from pykueue.controllers.cluster_cache import JOB


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


def test_a_workload_whose_owner_reference_was_removed_is_not_the_jobs() -> None:
    """The owner index follows the Workload's current owner references: once the reference to the
    Job is removed, the Job's reconcile no longer lists the Workload (it creates its own)."""
    from pykueue.client import resources as R

    with JobReconcile({"TopologyAwareScheduling": False}) as world:
        job = world.add_job(base_job())
        world.add_workload(base_workload("detached", reserve=False), owner=job)
        world.reconcile()  # the manager's caches hold the Workload owned by the Job
        wl = world.client.get(R.WORKLOADS, "detached", "ns")
        wl["metadata"]["ownerReferences"] = []
        world.client.replace(R.WORKLOADS, wl)
        world.reconcile()
        names = [w["metadata"]["name"] for w in world.workloads()]
        assert "detached" in names and len(names) == 2
        (event,) = [e for e in world.events() if e[2] != "UpdatedWorkload"]
        assert event[2] == "CreatedWorkload"


def test_a_deleted_job_finalizes_every_workload_listed_under_its_name() -> None:
    """``finalizeWorkloads`` lists by owner kind and name: a Workload left by an earlier Job of the
    same name is finished and loses its finalizer too when the Job being deleted is reconciled."""
    with JobReconcile({"TopologyAwareScheduling": False}) as world:
        world.add_job(base_job(), finalizers=["test/hold"], deleted=True)
        earlier = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "job", "uid": "earlier-uid"}}
        world.add_workload(base_workload("old", admitted=True), owner=earlier)
        world.reconcile()
        (after,) = world.workloads()
        assert after["metadata"].get("finalizers", []) == []
        assert ("Finished", "True", "OwnerNotFound", "The workload's owner no longer exists") in conditions(after)


def test_a_rewritten_workload_being_deleted_loses_its_finalizer_in_the_same_reconcile() -> None:
    """``ensureOneWorkload`` returns the Workload ``updateWorkloadToMatchJob`` wrote and
    ``ReconcileGenericJob`` goes on with it: one being deleted loses its finalizer there. A Workload
    left by an earlier Job of the same name never matches (its controller uid differs), so waiting
    for a later reconcile to find it matching would keep its finalizer, and the Job without one."""
    from pykueue.client import resources as R

    with JobReconcile({"TopologyAwareScheduling": False}) as world:
        world.add_job(base_job())
        earlier = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "job", "uid": "earlier-uid"}}
        world.add_workload(base_workload("old", reserve=False, count=5), owner=earlier)
        world.client.delete(R.WORKLOADS, "old", "ns")  # the garbage collector's delete; the finalizer holds it
        world.reconcile()
        assert world.workloads() == []
        assert world.events() == [
            ("job", "Normal", "UpdatedWorkload", "Updated not matching Workload for suspended job: ns/old")
        ]
        world.reconcile()
        (created,) = world.workloads()
        assert created["metadata"]["ownerReferences"][0]["uid"] == world.job()["metadata"]["uid"]  # type: ignore[index]


def test_a_workload_with_only_a_job_uid_label_is_an_orphan_only_under_its_gate() -> None:
    """``isOrphanedWorkload`` (core/workload_controller.go): without owner references, a Workload not
    being deleted is an orphan by its ``job-uid`` label only with FinishOrphanedWorkloads on (as the
    Job reconciler's ``FinalizeOrphanedWorkload`` finishes only under that gate)."""
    for gate, want_finished in ((False, False), (True, True)):
        with JobReconcile({"TopologyAwareScheduling": False, "FinishOrphanedWorkloads": gate}) as world:
            wl = base_workload("labelled", reserve=False)
            wl["metadata"]["labels"] = {"kueue.x-k8s.io/job-uid": "gone"}
            world.add_workload(wl)
            world.reconcile("absent")  # syncs the caches; no Job of that name
            world.mgr.call_in_manager_thread(lambda w=world: w.mgr.workload_controller.reconcile("ns/labelled"))
            (after,) = world.workloads()
            finished = any(c[0] == "Finished" for c in conditions(after))
            assert finished is want_finished, gate


def test_the_owner_uid_is_compared_only_under_finish_orphaned_workloads() -> None:
    """``EquivalentToWorkload`` rejects a Workload whose controller uid is not the Job's only with
    FinishOrphanedWorkloads on; with it off the Workload of an earlier Job of the same name matches."""
    for gate, want in ((True, []), (False, ["old"])):
        with JobReconcile({"TopologyAwareScheduling": False, "FinishOrphanedWorkloads": gate}) as world:
            job = world.add_job(base_job())
            wl = base_workload("old", admitted=True)
            earlier = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "job", "uid": "earlier-uid"}}
            wl["metadata"]["ownerReferences"] = [controller_ref(earlier)]
            world.add_workload(wl, owner=job)  # the Job's containers, the earlier Job's reference
            world.reconcile()
            assert [w["metadata"]["name"] for w in world.workloads()] == want, gate


def test_an_empty_admission_gated_by_annotation_is_no_gate_to_propagate() -> None:
    """``PropagateAdmissionGatedByAnnotation`` reads a missing annotation as "": a Job whose
    annotation is empty and a Workload without one are in sync, so the admitted Workload starts the
    Job in this reconcile (no update, no UpdatedWorkload event)."""
    with JobReconcile({"TopologyAwareScheduling": False}) as world:
        body = base_job()
        body["metadata"]["annotations"] = {"kueue.x-k8s.io/admission-gated-by": ""}
        job = world.add_job(body)
        world.add_workload(base_workload(admitted=True), owner=job)
        world.reconcile()
        got = world.job()
        assert got is not None and got["spec"]["suspend"] is False
        assert world.events() == [("job", "Normal", "Started", "Admitted by clusterQueue cq")]


def test_the_created_workload_gets_the_admission_gate_only_under_its_gate() -> None:
    """``prepareWorkload`` propagates a non-empty ``admission-gated-by`` only under AdmissionGatedBy."""
    for gate, value, want in ((True, "example.com/x", "example.com/x"), (True, "", None), (False, "example.com/x", None)):
        with JobReconcile({"TopologyAwareScheduling": False, "AdmissionGatedBy": gate}) as world:
            body = base_job()
            body["metadata"]["annotations"] = {"kueue.x-k8s.io/admission-gated-by": value}
            world.add_job(body)
            world.reconcile()
            (created,) = world.workloads()
            got = (created["metadata"].get("annotations") or {}).get("kueue.x-k8s.io/admission-gated-by")
            assert got == want, (gate, value)


# --- events recorded on every reconcile; updates of the matching Workload the reconcile goes on from ------


def _event_counts(world: JobReconcile) -> list[tuple[str, int]]:
    """``(reason, count)`` of each Event of namespace ``ns`` (the recorder counts an isomorphic
    repeat: Kueue records through events.k8s.io/v1, whose count is ``series.count``)."""
    from pykueue.client import resources as R

    items, _ = world.client.list(R.EVENTS, "ns")
    return [
        (e["reason"], int((e.get("series") or {}).get("count") or e.get("count") or 1))
        for e in sorted(items, key=lambda e: str(e["reason"]))
    ]


def test_finished_workload_is_recorded_on_every_reconcile_that_finds_it_finished() -> None:
    """``ReconcileGenericJob`` records FinishedWorkload whenever the matching Workload is finished,
    before ``RemoveFinalizer`` (a no-op once the finalizer is gone): a second reconcile records it
    again (the recorder makes it a count of 2)."""
    with JobReconcile({"TopologyAwareScheduling": False}) as world:
        job = world.add_job(base_job())
        wl = base_workload("a", reserve=False)
        wl["status"] = {
            "conditions": [
                {"type": "QuotaReserved", "status": "False", "reason": "ByTest", "message": "",
                 "lastTransitionTime": "2026-11-22T12:00:00Z"},
                {"type": "Finished", "status": "True", "reason": "ByTest", "message": "",
                 "lastTransitionTime": "2026-11-22T12:00:00Z"},
            ]
        }  # fmt: skip
        world.add_workload(wl, owner=job)
        world.reconcile()
        assert world.workloads()[0]["metadata"].get("finalizers") in (None, [])
        world.reconcile()
        assert world.events() == [("job", "Normal", "FinishedWorkload", "Workload 'ns/a' is declared finished")]
        assert _event_counts(world) == [("FinishedWorkload", 2)]


def test_pending_admission_check_messages_are_recorded_on_every_reconcile() -> None:
    """``recordAdmissionCheckUpdate`` records UpdatedAdmissionCheck on every reconcile of a suspended
    Job whose Workload reserves quota with Pending checks that have a message, not once per message."""
    with JobReconcile({"TopologyAwareScheduling": False}) as world:
        job = world.add_job(base_job())
        wl = base_workload(admitted=False)
        wl["status"]["admissionChecks"] = [
            {"name": "ac", "state": "Pending", "message": "Not yet", "lastTransitionTime": "2026-11-22T12:00:00Z"}
        ]
        world.add_workload(wl, owner=job)
        world.reconcile()
        world.reconcile()
        assert world.events() == [("job", "Normal", "UpdatedAdmissionCheck", "ac: Not yet")]
        assert _event_counts(world) == [("UpdatedAdmissionCheck", 2)]


def _wpc_ref(name: str) -> dict[str, str]:
    return {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": name}


def _add_wpcs(world: JobReconcile, classes: dict[str, int]) -> None:
    from pykueue.client import resources as R

    for name, value in classes.items():
        world.add(
            R.WORKLOAD_PRIORITY_CLASSES,
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": value},
        )


def test_after_a_priority_update_the_reconcile_goes_on_and_starts_the_admitted_job() -> None:
    """``ensureOneWorkload`` returns the matching Workload ``UpdateWorkloadPriority`` updated in place,
    and ``ReconcileGenericJob`` goes on with it: an admitted Workload's suspended Job is started in
    the same reconcile."""
    with JobReconcile({"TopologyAwareScheduling": False}) as world:
        _add_wpcs(world, {"test-wpc": 100, "test-wpc-high": 200})
        body = base_job()
        body["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "test-wpc-high"
        job = world.add_job(body)
        wl = base_workload("job", admitted=True)
        wl["spec"]["priority"], wl["spec"]["priorityClassRef"] = 100, _wpc_ref("test-wpc")
        world.add_workload(wl, owner=job)
        world.reconcile()
        (after,) = world.workloads()
        assert (after["spec"]["priority"], after["spec"]["priorityClassRef"]) == (200, _wpc_ref("test-wpc-high"))
        got = world.job()
        assert got is not None and got["spec"]["suspend"] is False
        assert world.events() == [
            ("job", "Normal", "UpdatedWorkload", "Updated workload priority class: ns/job"),
            ("job", "Normal", "Started", "Admitted by clusterQueue cq"),
        ]


def test_after_an_admission_gate_update_the_reconcile_goes_on_to_the_priority() -> None:
    """``ensureOneWorkload`` runs ``UpdateAdmissionGatedBy`` and then ``UpdateWorkloadPriority`` on
    the same Workload in one reconcile: both are written, both events recorded. The second is
    isomorphic to the first (same regarding, reason, action and controller: client-go
    ``tools/events`` ``getKey``), so it is one Event with the first note and a series of 2."""
    with JobReconcile({"TopologyAwareScheduling": False, "AdmissionGatedBy": True}) as world:
        _add_wpcs(world, {"test-wpc": 100, "test-wpc-high": 200})
        body = base_job()
        body["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "test-wpc-high"
        job = world.add_job(body)  # its admission gate was removed (a gate can only be removed)
        wl = base_workload("job", reserve=False)
        wl["metadata"]["annotations"] = {"kueue.x-k8s.io/admission-gated-by": "example.com/controller1"}
        wl["spec"]["priority"], wl["spec"]["priorityClassRef"] = 100, _wpc_ref("test-wpc")
        world.add_workload(wl, owner=job)
        world.reconcile()
        (after,) = world.workloads()
        assert "kueue.x-k8s.io/admission-gated-by" not in (after["metadata"].get("annotations") or {})
        assert (after["spec"]["priority"], after["spec"]["priorityClassRef"]) == (200, _wpc_ref("test-wpc-high"))
        assert world.events() == [
            ("job", "Normal", "UpdatedWorkload", 'Updated workload AdmissionGatedBy to ""'),
        ]
        assert _event_counts(world) == [("UpdatedWorkload", 2)]


def test_a_job_naming_a_missing_class_is_retried_and_gets_its_workload_once_the_class_exists() -> None:
    """``ExtractPriority``'s NotFound is returned by ``ReconcileGenericJob`` (upstream's
    job_controller_test.go cases naming "missing-wpc" want an error), so controller-runtime
    retries the Job with backoff: nothing else reconciles it when the class is created later."""
    with JobReconcile() as world:
        body = base_job()
        body["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "later"
        world.add_job(body)
        key = (JOB, ("ns", "job"))
        world.take_queued(JOB)  # what the Job's creation queued
        world.run(lambda: world.mgr._reconcile(key))
        assert world.workloads() == []
        assert world.run(lambda: world.mgr.work.pending(key))  # retried with backoff
        _add_wpcs(world, {"later": 300})
        world.run(lambda: world.mgr._reconcile(key))
        (wl,) = world.workloads()
        assert (wl["spec"]["priority"], wl["spec"]["priorityClassRef"]) == (300, _wpc_ref("later"))


def test_events_about_two_versions_of_a_job_are_two_events() -> None:
    """client-go's ``ref.GetReference`` names the Job's resourceVersion, which ``getKey`` compares:
    a Job started, stopped and started again has two Started Events, not one with a series (upstream
    records Started and Stopped about the Job its update returned)."""
    with JobReconcile({"TopologyAwareScheduling": False}) as world:
        job = world.add_job(base_job())
        jc = world.mgr.job_controller
        world.run(lambda: jc._event(job, "Normal", "Started", "first start"))
        later = {**job, "metadata": {**job["metadata"], "resourceVersion": str(int(job["metadata"]["resourceVersion"]) + 5)}}
        world.run(lambda: jc._event(later, "Normal", "Started", "second start"))
        world.run(lambda: jc._event(later, "Normal", "Started", "same version again"))
        assert [e[3] for e in world.events() if e[2] == "Started"] == ["first start", "second start"]
        assert sorted(n for r, n in _event_counts(world) if r == "Started") == [1, 2]
