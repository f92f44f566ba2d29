"""The batch/v1 Job reconciler (upstream ``jobframework/reconciler.go`` ``ReconcileGenericJob``): Jobs become Workloads and follow them.

It is the glue around the pure rules of :mod:`pykueue.controllers.jobs.batch_job`: it reads the
manager's caches, decides one step, and writes through the client. Like upstream's
``ReconcileGenericJob``, every reconcile makes at most one kind of change and relies on the
resulting watch events to take the next step.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NoReturn

import msgspec

from pykueue.api.conversion import to_external, to_internal
from pykueue.api.jobs import (
    CHAIN_LIMIT_REACHED,
    MANAGED_OWNERS_CHAIN_LIMIT,
    WORKLOAD_OWNER_NOT_FOUND,
    AncestorSearchError,
    find_managed_ancestor,
    is_managed,
)
from pykueue.api.kueue import PriorityClass, ReclaimablePod, Workload, WorkloadPriorityClass
from pykueue.api.meta import Condition, ObjectMeta, find_condition
from pykueue.client import resources as R
from pykueue.client.interface import AlreadyExists, APIError, NotFound
from pykueue.controllers.cluster_cache import JOB
from pykueue.controllers.jobs import batch_job as bj
from pykueue.core.events import NORMAL, WARNING, Event
from pykueue.core.workload import transitions
from pykueue.core.workload.info import (
    has_quota_reservation,
    is_admitted,
    is_evicted,
    is_finished,
    workload_key,
)
from pykueue.runtime.informer import ObjectKey
from pykueue.runtime.recorder import object_reference

if TYPE_CHECKING:
    from pykueue.controllers.context import ReconcileContext
    from pykueue.controllers.workload_controller import WorkloadController

JOB_CONTROLLER = bj.JOB_CONTROLLER


class PriorityUnresolved(APIError):
    """``ExtractPriority``'s error: the WorkloadPriorityClass or PriorityClass the Job names is not
    found. ``ReconcileGenericJob`` returns it and controller-runtime retries the Job with backoff,
    which creates (or updates) its Workload once the class exists: no watch of the classes
    reconciles Jobs. An :class:`APIError`, not a :class:`NotFound`, which the manager forgets as
    the reconciled object being gone."""

    def __init__(self, message: str) -> None:
        super().__init__(404, "NotFound", message)


class PrebuiltWorkloadNotFound(APIError):
    """``jobframework.ErrPrebuiltWorkloadNotFound``: the Job names a prebuilt Workload that does not
    exist (or is controlled by another object). ``handleJobWithNoWorkload`` returns it and
    controller-runtime retries the Job with backoff until the Workload shows up. An
    :class:`APIError`, not a :class:`NotFound`, which the manager forgets as the reconciled object
    being gone."""

    def __init__(self) -> None:
        super().__init__(404, "NotFound", bj.PREBUILT_NOT_FOUND)


class OwnerChainError(APIError):
    """``FindAncestorJobManagedByKueue``'s errors (``ErrWorkloadOwnerNotFound``, ``ErrCyclicOwnership``,
    ``ErrManagedOwnersChainLimitReached``): ``ReconcileGenericJob`` returns them and controller-runtime
    retries the Job with backoff."""

    def __init__(self, message: str) -> None:
        super().__init__(500, "InternalError", message)


class JobController:
    """Reconciles batch/v1 Jobs; see the module docstring."""

    def __init__(self, ctx: ReconcileContext, workload_controller: WorkloadController) -> None:
        self.ctx = ctx
        self.options = ctx.sched_options
        self.workload_controller = workload_controller

    # --- helpers ----------------------------------------------------------------------------------

    def _event(self, job: dict[str, Any], type_: str, reason: str, note: str) -> None:
        """An Event about ``job`` as this version of it (the reference names its resourceVersion,
        as client-go's ``ref.GetReference`` does: events about two versions are not isomorphic)."""
        meta = job["metadata"]
        self.ctx.record_event(
            Event(meta["namespace"], meta["name"], type_, reason, note, kind="Job", controller=JOB_CONTROLLER),
            object_reference(job, "batch/v1", "Job"),
        )

    def _owned(self, key: ObjectKey) -> list[Workload]:
        """The Workloads with an owner reference to a batch/v1 Job of this namespace and name, whatever
        its uid (``FindMatchingWorkloads`` and ``getWorkloads`` list with
        ``OwnerReferenceIndexFieldMatcher(gvk, name)``): a Workload left by an earlier Job of the same
        name is found, and ``EquivalentToWorkload`` then rejects it by the controller's uid."""
        ns, name = key
        keys = sorted(self.ctx.workloads_of_owner.get((ns, "batch/v1", "Job", name), ()))
        return [wl for k in keys if (wl := self.ctx.workloads.get(k)) is not None]

    def _in_managed_namespace(self, job: dict[str, Any]) -> bool:
        """``ReconcileGenericJob``: the Job's namespace exists and matches ``managedJobsNamespaceSelector``
        (None: every namespace); whether the Job itself is managed is decided after its ancestors."""
        return is_managed(
            job,
            self.ctx.namespace_label_map.get(job["metadata"].get("namespace", "")),
            self.ctx.options.managed_jobs_namespace_selector,
            True,
        )

    def _managed_ancestor(self, job: dict[str, Any]) -> dict[str, Any] | None:
        """``IntegrationManager.FindAncestorJobManagedByKueue``
        (:func:`~pykueue.api.jobs.find_managed_ancestor`) over the cached Jobs; a missing owner, a
        cycle or a chain longer than the limit fails the reconcile (the last with a
        ``JobNestingTooDeep`` Warning)."""
        ns = job["metadata"]["namespace"]
        try:
            found = find_managed_ancestor(
                job, lambda name: self.ctx.raw["jobs"].get((ns, name)), self.ctx.options.manage_jobs_without_queue_name
            )
        except AncestorSearchError as err:
            if err.reason == CHAIN_LIMIT_REACHED:
                message = (
                    "Terminated search for Kueue-managed Job because ancestor depth exceeded limit of "
                    f"{MANAGED_OWNERS_CHAIN_LIMIT}"
                )
                self._event(job, WARNING, bj.EVENT_JOB_NESTING_TOO_DEEP, message)
            elif err.reason == WORKLOAD_OWNER_NOT_FOUND:
                raise OwnerChainError(f'{err.reason}: jobs.batch "{err.owner}" not found') from None
            raise OwnerChainError(err.reason) from None
        return dict(found) if found is not None else None

    def _suspend_child(self, job: dict[str, Any], ancestor: dict[str, Any]) -> None:
        """``shouldSuspendChildJob``: a running, unfinished child Job is suspended (``Suspended`` event)
        unless the latest not finished Workload of its ancestor (``FindNotFinishedWorkloads``: oldest
        first by creation time, then uid) is admitted."""
        if bj.job_finished(job) is not None or bj.is_suspended(job):
            return
        meta = ancestor["metadata"]
        live = [wl for wl in self._owned((meta["namespace"], meta["name"])) if not is_finished(wl)]
        live.sort(key=lambda wl: (wl.metadata.creation_timestamp or datetime.min.replace(tzinfo=UTC), wl.metadata.uid))
        if live and is_admitted(live[-1]):
            return
        suspended = copy.deepcopy(job)
        suspended["spec"]["suspend"] = True
        self._event(self._write_job(suspended), NORMAL, bj.EVENT_SUSPENDED, bj.CHILD_JOB_SUSPENDED)

    def _write_job(self, job: dict[str, Any], status: bool = False) -> dict[str, Any]:
        return self.ctx.write(R.JOBS, job, subresource="status" if status else None)

    # --- reconcile ----------------------------------------------------------------------------------

    def reconcile(self, key: ObjectKey) -> None:
        """One reconcile of Job ``(namespace, name)``."""
        job = self.ctx.raw["jobs"].get(key)
        if job is None or job["metadata"].get("deletionTimestamp"):
            self._job_gone(key)
            return
        if not self._in_managed_namespace(job):
            return
        ancestor = self._managed_ancestor(job)
        if ancestor is None and not bj.queue_name(job) and not self.ctx.options.manage_jobs_without_queue_name:
            return
        if ancestor is not None:
            # A child of a Kueue-managed Job: its ancestor's Workload stands for it.
            self._suspend_child(job, ancestor)
            return
        job, wl, done = self._ensure_one_workload(job, self._owned(key))
        if done:
            return  # a leftover was deleted or rewritten; the resulting events continue
        if wl is not None:
            if is_finished(wl):
                # ``ReconcileGenericJob`` records FinishedWorkload on every reconcile that finds the
                # Workload finished, then removes its finalizer (a no-op once it is gone).
                self._event(job, NORMAL, "FinishedWorkload", bj.finished_workload_message(wl))
                self._remove_finalizer(wl)
                return
            if wl.metadata.deletion_timestamp is not None:
                self._stop(job, wl, "Workload is deleted")
                self._remove_finalizer(wl)
                return
        finished = bj.job_finished(job)
        if finished is not None:
            if wl is not None:
                self._finish(job, wl, finished[0], finished[1])
            return
        if wl is None:
            self._create_workload(job)
            return
        if self._reclaimable(job, wl) or self._pods_ready(job, wl):
            return
        if is_evicted(wl):
            self._evicted(job, wl)
            return
        if bj.is_suspended(job):
            self._suspended(job, wl)
            return
        if not is_admitted(wl):
            self._stop(job, wl, "Not admitted by cluster queue")

    # --- step 1: the Job is gone ----------------------------------------------------------------------

    def _job_gone(self, key: ObjectKey) -> None:
        # ``JobReconciler.finalize`` → ``finalizeWorkloads``: every Workload listed by the owner
        # index (kind and name, any uid), as ``getWorkloads`` does.
        ns = key[0]
        for wl in self._owned(key):
            # ``workload.FinalizeOrphanedWorkload`` (pkg/workload/workload.go): Finished only under the
            # FinishOrphanedWorkloads gate, for a Workload not being deleted that has a controller
            # reference; the finalizer goes in every case.
            can_finish = any(r.controller for r in wl.metadata.owner_references)
            if (
                self.options.gate("FinishOrphanedWorkloads")
                and can_finish
                and not is_finished(wl)
                and wl.metadata.deletion_timestamp is None
            ):
                updated = transitions.copy_for_status(wl)
                transitions.set_condition(
                    updated,
                    "Finished",
                    "True",
                    "OwnerNotFound",
                    "The workload's owner no longer exists",
                    self.ctx.now(),
                )
                if not self.ctx.write_workload(updated):
                    continue
                wl = self.ctx.workloads.get(f"{ns}/{wl.metadata.name}", wl)
            self._remove_finalizer(wl)

    # --- step 2: find the Workload ------------------------------------------------------------------------

    def _ensure_one_workload(
        self, job: dict[str, Any], owned: list[Workload]
    ) -> tuple[dict[str, Any], Workload | None, bool]:
        """``JobReconciler.ensureOneWorkload``: the Job's matching Workload, the others deleted.

        Returns ``(job, workload, done)``: the Job as it stands after a stop, the matching Workload
        as this reconcile left it (or the rewritten leftover of a suspended Job; None when there is
        none), and whether this reconcile ends here (upstream returns ``ErrNoMatchingWorkloads`` /
        ``ErrExtraWorkloads`` after deleting Workloads, or the error of a failed write)."""
        prebuilt = self._prebuilt_name(job)
        if prebuilt is not None:
            wl, done = self._ensure_prebuilt(job, prebuilt)
            return job, wl, done
        match: Workload | None = None
        for wl in owned:
            if self._is_equivalent(job, wl):
                match = wl
                break
        to_delete = [wl for wl in owned if wl is not match]
        suspended = bj.is_suspended(job)
        to_update: Workload | None = None
        if match is None and to_delete and suspended and not has_quota_reservation(to_delete[0]):
            to_update = to_delete.pop(0)
        if match is None and not suspended and bj.job_finished(job) is None:
            # A running Job without its Workload is stopped; with exactly one leftover its pod
            # templates are restored from it ("all bets are off" with more).
            if len(to_delete) == 1:
                self._stop(job, to_delete[0], bj.STOP_NO_MATCHING_WORKLOAD)
            else:
                self._stop(job, None, bj.STOP_MISSING_WORKLOAD)
            meta = job["metadata"]
            job = self.ctx.raw["jobs"].get((meta["namespace"], meta["name"]), job)
        deleted = 0
        for wl in to_delete:
            # ``workload.Delete``: the finalizer goes first; a Workload already being deleted is not
            # deleted again (and gets no event).
            self._remove_finalizer(wl)
            if wl.metadata.deletion_timestamp is None:
                self.ctx.client.delete(R.WORKLOADS, wl.metadata.name, wl.metadata.namespace)
                deleted += 1
                self._event(job, NORMAL, "DeletedWorkload", bj.deleted_workload_message(wl))
        if deleted:
            return job, None, True
        if to_update is not None:
            # ``updateWorkloadToMatchJob`` returns the updated Workload and the reconcile goes on with
            # it (a rewritten Workload being deleted loses its finalizer in the same pass: it may
            # never match, e.g. one left by an earlier Job of the same name).
            rewritten = self._rewrite(job, to_update)
            return job, rewritten, rewritten is None
        if match is not None:
            # ``UpdateAdmissionGatedBy`` then ``UpdateWorkloadPriority``, for the matching Workload only:
            # each updates ``match`` in place and the reconcile goes on with it; an error ends it.
            if self.options.gate("AdmissionGatedBy"):
                match = self._propagate_gate(job, match)
                if match is None:
                    return job, None, True
            if bj.needs_priority_update(job, match):
                match = self._update_priority(job, match)
                if match is None:
                    return job, None, True
        return job, match, False

    def _prebuilt_name(self, job: dict[str, Any]) -> str | None:
        return bj.prebuilt_workload_name(job, self.options.gate("WorkloadIdentifierAnnotations"))

    def _is_equivalent(self, job: dict[str, Any], wl: Workload) -> bool:
        return bj.is_equivalent(
            job,
            wl,
            self.ctx.flavors,
            assign_queue_labels=self.options.gate("AssignQueueLabelsForPods"),
            tas_enabled=self.options.gate("TopologyAwareScheduling"),
            partial_admission=self.options.gate("PartialAdmission"),
            finish_orphaned_workloads=self.options.gate("FinishOrphanedWorkloads"),
        )

    def _ensure_prebuilt(self, job: dict[str, Any], name: str) -> tuple[Workload | None, bool]:
        """``ensureOneWorkload``'s prebuilt path: the Job's prebuilt Workload, made controlled by the
        Job (``EnsurePrebuiltWorkloadOwnership``), or None when it is missing, controlled by another
        object, or out of sync with the Job (then finished ``OutOfSync``:
        ``ensurePrebuiltWorkloadInSync``); the reconcile goes on without a Workload then
        (``handleJobWithNoWorkload`` stops the Job and fails with ``ErrPrebuiltWorkloadNotFound``).
        Returns ``(workload, done)``, ``done`` when the ownership update failed (upstream returns the
        error; the resulting watch event continues)."""
        meta = job["metadata"]
        wl = self.ctx.workloads.get(f"{meta['namespace']}/{name}")
        if wl is None:
            return None, False
        owner = next((r for r in wl.metadata.owner_references if r.controller), None)
        if owner is not None and owner.uid != meta.get("uid"):
            return None, False
        adopted = bj.adopt_prebuilt(job, wl)
        if adopted is not None:
            if not self.ctx.write_workload(adopted, status=False):
                return None, True
            wl = self.ctx.workloads.get(workload_key(wl), adopted)
        if not self._is_equivalent(job, wl):
            self._finish(job, wl, bj.FINISHED_OUT_OF_SYNC, bj.PREBUILT_OUT_OF_SYNC, event=False)
            return None, False
        return wl, False

    def _rewrite(self, job: dict[str, Any], wl: Workload) -> Workload | None:
        """``updateWorkloadToMatchJob``: the Workload with the spec the Job builds now, as written
        (None when it could not be: upstream returns the error)."""
        priority = self._priority(job)
        if isinstance(priority, bj.PriorityError):
            self._unresolved(job, priority)
        fresh = self._construct(job, priority)
        # ``prepareWorkload`` is given the old ``wl.Spec.Active``: a deactivated Workload stays
        # deactivated when its spec is rewritten.
        updated = msgspec.structs.replace(wl, spec=msgspec.structs.replace(fresh.spec, active=wl.spec.active))
        if not self.ctx.write_workload(updated, status=False):
            return None
        self._event(job, NORMAL, "UpdatedWorkload", bj.updated_workload_message(wl))
        return self.ctx.workloads.get(workload_key(wl), updated)

    def _propagate_gate(self, job: dict[str, Any], wl: Workload) -> Workload | None:
        """``UpdateAdmissionGatedBy``: copy the Job's ``admission-gated-by`` annotation to its
        Workload. Returns the Workload as written (``wl`` when in sync), or None when the write
        failed (upstream returns the error)."""
        key = bj.ADMISSION_GATED_BY_ANNOTATION
        # ``PropagateAdmissionGatedByAnnotation``: a missing annotation reads as "" on both sides.
        want = str((job["metadata"].get("annotations") or {}).get(key) or "")
        have = wl.metadata.annotations.get(key) or ""
        if want == have:
            return wl
        annotations = {k: v for k, v in wl.metadata.annotations.items() if k != key}
        if want:
            annotations[key] = want
        meta = msgspec.structs.replace(wl.metadata, annotations=annotations)
        return self._update_workload(
            msgspec.structs.replace(wl, metadata=meta),
            # ``RecordAdmissionGatedByUpdateEvent``
            lambda: self._event(
                job, NORMAL, "UpdatedWorkload", f"Updated workload AdmissionGatedBy to {json.dumps(want, ensure_ascii=False)}"
            ),
        )

    def _update_priority(self, job: dict[str, Any], wl: Workload) -> Workload | None:
        """``UpdateWorkloadPriority`` for the matching Workload: the Workload as written, or None
        when the write failed (upstream returns the error); a class that cannot be resolved fails
        the reconcile (:meth:`_unresolved`)."""
        priority = self._priority(job)
        if isinstance(priority, bj.PriorityError):
            self._unresolved(job, priority)
        spec = msgspec.structs.replace(
            wl.spec, priority_class_ref=priority.priority_class_ref, priority=priority.priority
        )
        return self._update_workload(
            msgspec.structs.replace(wl, spec=spec),
            lambda: self._event(job, NORMAL, "UpdatedWorkload", bj.updated_priority_message(wl)),
        )

    def _update_workload(self, updated: Workload, on_written: Callable[[], None]) -> Workload | None:
        """Update the whole Workload; once written, ``on_written`` (its event) and the Workload as
        cached from the write's answer; None when it was not written."""
        if not self.ctx.write_workload(updated, status=False):
            return None
        on_written()
        return self.ctx.workloads.get(workload_key(updated), updated)

    # --- steps 3-5: finished, deleted ---------------------------------------------------------------------

    def _remove_finalizer(self, wl: Workload) -> None:
        self.workload_controller.remove_finalizer(wl)

    def _finish(self, job: dict[str, Any], wl: Workload, reason: str, message: str, *, event: bool = True) -> None:
        """Finish the Workload (``workloadfinish.Finish``); ``ReconcileGenericJob``'s "job is finished"
        step records ``FinishedWorkload`` on the Job as it does so (a failed start does not)."""
        if is_finished(wl):
            return
        updated = transitions.copy_for_status(wl)
        transitions.set_condition(updated, "Finished", "True", reason, message, self.ctx.now())
        if self.ctx.write_workload(updated) and event:
            self._event(job, NORMAL, "FinishedWorkload", bj.finished_workload_message(wl))

    # --- step 6: create the Workload ----------------------------------------------------------------------

    def _priority(self, job: dict[str, Any]) -> bj.PriorityInfo | bj.PriorityError:
        raw = self.ctx.raw
        wpcs = {k[1]: v for k, v in raw["workloadpriorityclasses"].items()}
        pcs = {k[1]: v for k, v in raw["priorityclasses"].items()}

        def wpc(name: str) -> WorkloadPriorityClass | None:
            obj = wpcs.get(name)
            if obj is None:
                return None
            typed, _ = to_internal(obj)
            assert isinstance(typed, WorkloadPriorityClass)
            return typed

        def pc(name: str) -> PriorityClass | None:
            obj = pcs.get(name)
            return _priority_class(obj) if obj is not None else None

        return bj.resolve_priority(job, wpc, pc, [_priority_class(o) for o in pcs.values()])

    def _unresolved(self, job: dict[str, Any], error: bj.PriorityError) -> NoReturn:
        """``ExtractPriority`` failed: its Warning Event (a missing WorkloadPriorityClass), then the
        reconcile fails with the error, to be retried with backoff (:class:`PriorityUnresolved`)."""
        if error.event_reason:
            self._event(job, WARNING, error.event_reason, error.message)
        raise PriorityUnresolved(error.message)

    def _construct(self, job: dict[str, Any], priority: bj.PriorityInfo) -> Workload:
        return bj.construct_workload(
            job,
            priority,
            self.ctx.options.label_keys_to_copy,
            partial_admission=self.options.gate("PartialAdmission"),
            short_workload_names=self.options.gate("ShortWorkloadNames"),
            tas_enabled=self.options.gate("TopologyAwareScheduling"),
            admission_gated_by=self.options.gate("AdmissionGatedBy"),
        )

    def _create_workload(self, job: dict[str, Any]) -> None:
        """``handleJobWithNoWorkload``: wait while the Job has active pods, else create its Workload
        (a running Job was stopped by :meth:`_ensure_one_workload` already)."""
        prebuilt = self._prebuilt_name(job) is not None
        if prebuilt:
            # The Job waits, stopped, for its prebuilt Workload: none is created for it.
            self._stop(job, None, bj.STOP_PREBUILT_MISSING)
        if bj.active_pods(job) > 0:
            return
        if prebuilt:
            raise PrebuiltWorkloadNotFound()
        priority = self._priority(job)
        if isinstance(priority, bj.PriorityError):
            self._unresolved(job, priority)
        wl = self._construct(job, priority)
        try:
            out = self.ctx.client.create(R.WORKLOADS, to_external(wl))
        except AlreadyExists:
            return
        self.ctx.cluster.observe_write(R.WORKLOADS, out)
        if self.ctx.metrics is not None:
            self.ctx.metrics.workload_created(job, out, "Job")
        self._event(job, NORMAL, "CreatedWorkload", bj.created_workload_message(wl))

    # --- steps 7-8: reclaimable pods, PodsReady -----------------------------------------------------------

    def _reclaimable(self, job: dict[str, Any], wl: Workload) -> bool:
        # ``ReconcileGenericJob`` step 4: whether or not the Workload reserves quota, the counts capped
        # at its pod sets' (``workload.LimitReclaimablePodsToPodSetSizes``).
        if not self.options.gate("ReclaimablePods"):
            return False
        sizes = {ps.name: ps.count for ps in wl.spec.pod_sets}
        wanted = [
            {"name": r["name"], "count": min(r["count"], sizes.get(r["name"], r["count"]))}
            for r in bj.reclaimable_pods(job)
        ]
        current = [{"name": r.name, "count": r.count} for r in wl.status.reclaimable_pods]
        if wanted == current:
            return False
        updated = transitions.copy_for_status(wl)
        updated.status.reclaimable_pods = [
            ReclaimablePod(name=r["name"], count=r["count"]) for r in wanted
        ]
        self.ctx.write_workload(updated)
        return True

    def _pods_ready(self, job: dict[str, Any], wl: Workload) -> bool:
        if not self.options.wait_for_pods_ready or is_finished(wl):
            return False
        target = bj.pods_ready_condition(wl, is_admitted(wl), bj.pods_ready(job))
        if target is None:
            return False
        updated = transitions.copy_for_status(wl)
        transitions.set_condition(updated, "PodsReady", target[0], target[1], target[2], self.ctx.now())
        self.ctx.write_workload(updated)
        return True

    # --- step 9: evicted ----------------------------------------------------------------------------------

    def _evicted(self, job: dict[str, Any], wl: Workload) -> None:
        ev = find_condition(wl.status.conditions, "Evicted")
        note = ev.message if ev is not None else "Evicted"
        # ``ReconcileGenericJob`` step 6: stop the Job (``stopJob`` on a Job already suspended still
        # clears its startTime and restores its pod template, without the Stopped event), then, in the
        # same reconcile, release the quota once the Job has no active pods (``job.IsActive`` reads
        # the status, which a stop leaves alone).
        self._stop(job, wl, note)
        wl = self.ctx.workloads.get(workload_key(wl), wl)
        if has_quota_reservation(wl) and bj.active_pods(job) == 0:
            updated = transitions.copy_for_status(wl)
            if transitions.complete_eviction(updated, self.ctx.now(), self.options):
                self.ctx.write_workload(updated)
        self._after_deactivated(job, wl, ev)

    def _after_deactivated(self, job: dict[str, Any], wl: Workload, ev: Condition | None) -> None:
        """``handleWorkloadAfterDeactivatedPolicy``: with ``objectRetentionPolicies.workloads.
        afterDeactivatedByKueue`` set, a Job whose inactive Workload Kueue evicted as
        ``DeactivatedDueTo...`` (``IsEvictedDueToDeactivationByKueue``) is deleted (background
        propagation, event ``Deleted``) once that long has passed since the eviction, else the
        reconcile is requeued for then."""
        retention = self.ctx.options.deactivated_retention_seconds
        if (
            retention is None
            or wl.spec.active is not False
            or ev is None
            or not ev.reason.startswith("DeactivatedDueTo")
        ):
            return
        meta = job["metadata"]
        key = (meta["namespace"], meta["name"])
        remaining = (ev.last_transition_time - self.ctx.now()).total_seconds() + retention
        if remaining > 0:
            self.ctx.requeue_after(JOB, key, remaining)
            return
        try:
            self.ctx.client.delete(R.JOBS, meta["name"], meta["namespace"], propagation="Background")
        except NotFound:
            return
        self._event(job, NORMAL, bj.EVENT_DELETED, bj.DELETED_AFTER_RETENTION)

    # --- step 10: suspended -------------------------------------------------------------------------------

    def _suspended(self, job: dict[str, Any], wl: Workload) -> None:
        if is_admitted(wl):
            self._start(job, wl)
            return
        if has_quota_reservation(wl):
            # ``recordAdmissionCheckUpdate``: on every such reconcile (the recorder counts repeats).
            note = bj.pending_checks_note(wl)
            if note is not None:
                self._event(job, NORMAL, "UpdatedAdmissionCheck", note)
        # ``handleQueueNameChange`` follows ``recordAdmissionCheckUpdate`` in upstream's step 7,
        # for a Workload reserving quota too.
        queue = bj.queue_name(job)
        if queue != wl.spec.queue_name:
            spec = msgspec.structs.replace(wl.spec, queue_name=queue)
            self.ctx.write_workload(msgspec.structs.replace(wl, spec=spec), status=False)

    def _start(self, job: dict[str, Any], wl: Workload) -> None:
        try:
            # ``getPodSetsInfoFromStatus``: the workload annotation and topology gate only under
            # the TopologyAwareScheduling gate, the queue labels under AssignQueueLabelsForPods.
            injections = bj.pod_set_injection(
                wl,
                self.ctx.flavors,
                self.options.gate("AssignQueueLabelsForPods"),
                tas_enabled=self.options.gate("TopologyAwareScheduling"),
            )
            started = bj.start_job(job, wl, injections)
        except bj.FlavorNotFound:
            self.ctx.requeue_after(JOB, (job["metadata"]["namespace"], job["metadata"]["name"]), 1.0)
            return
        except bj.StartJobError as err:
            self._finish(job, wl, "FailedToStart", str(err), event=False)
            return
        # Upstream records Started about the Job its update returned (reconciler.go startJob).
        self._event(self._write_job(started), NORMAL, "Started", bj.started_message(wl))

    # --- stopping -----------------------------------------------------------------------------------------

    def _stop(self, job: dict[str, Any], wl: Workload | None, note: str) -> None:
        result = bj.stop_job(job, wl)
        current = job
        if result.suspend_step is not None:
            current = self._write_job(result.suspend_step)
        if result.start_time_reset:
            status_only = copy.deepcopy(current)
            (status_only.get("status") or {}).pop("startTime", None)
            current = self._write_job(status_only, status=True)
        final = copy.deepcopy(result.job)
        final["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        final["status"] = current.get("status", {})
        if final.get("spec") != current.get("spec") or any(
            final["metadata"].get(k) != current["metadata"].get(k) for k in ("labels", "annotations")
        ):
            current = self._write_job(final)
        if result.stopped_now:
            # About the Job as stopped (upstream records after stopJob's update).
            self._event(current, NORMAL, "Stopped", note)


def _priority_class(obj: dict[str, Any]) -> PriorityClass:
    meta = obj.get("metadata") or {}
    return PriorityClass(
        metadata=ObjectMeta(name=str(meta.get("name", "")), uid=str(meta.get("uid", ""))),
        value=int(obj.get("value") or 0),
        global_default=bool(obj.get("globalDefault")),
    )
