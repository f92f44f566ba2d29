"""The pure logic of Kueue's ``batch/v1`` Job integration (framework ``batch/job``).

Upstream ``pkg/controller/jobs/job/job_controller.go`` and ``pkg/controller/jobframework/``: how
admission data is injected into a Job (``RunWithPodSetsInfo``), the labels and annotations read on a
Job, Workload construction (``ConstructWorkload``), the reconcile order (``ReconcileGenericJob``) and
partial admission.

Nothing here does I/O or reads a clock: Jobs are plain ``batch/v1`` JSON dicts as the API serves
them, Workloads and ResourceFlavors are the typed models of :mod:`pykueue.api.kueue`, and every
lookup (priority classes, flavors) is passed in. Functions never mutate their arguments; those that
change a Job return a new dict. The reconciler glue decides when to call what (``ReconcileGenericJob``) and does the
writes and events; the event reasons and message texts it needs are exported here so they exist
once.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

from pykueue.api import strconv
from pykueue.api.jobs import PODSET_PREFERRED_TOPOLOGY_ANNOTATION as PODSET_PREFERRED_TOPOLOGY_ANNOTATION
from pykueue.api.jobs import PODSET_REQUIRED_TOPOLOGY_ANNOTATION as PODSET_REQUIRED_TOPOLOGY_ANNOTATION
from pykueue.api.jobs import (
    PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION as PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION,
)
from pykueue.api.jobs import (
    PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION as PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION,
)
from pykueue.api.jobs import (  # the Job readers shared with the API server's Job webhook
    PRIORITY_CLASS_LABEL as PRIORITY_CLASS_LABEL,
)
from pykueue.api.jobs import QUEUE_NAME_LABEL as QUEUE_NAME_LABEL
from pykueue.api.jobs import STOPPING_ANNOTATION as STOPPING_ANNOTATION
from pykueue.api.jobs import completions as completions
from pykueue.api.jobs import is_suspended as is_suspended
from pykueue.api.jobs import parallelism as parallelism
from pykueue.api.jobs import pods_count as pods_count
from pykueue.api.jobs import queue_name as queue_name
from pykueue.api.jobs import workload_priority_class_name as workload_priority_class_name
from pykueue.api.kueue import (
    CHECK_PENDING,
    PodSet,
    PodSetAssignment,
    PodTemplateSpec,
    PriorityClass,
    PriorityClassRef,
    ResourceFlavor,
    Toleration,
    Workload,
    WorkloadPriorityClass,
    WorkloadSpec,
)
from pykueue.api.meta import CONDITION_FALSE, CONDITION_TRUE, ObjectMeta, OwnerReference, find_condition
from pykueue.api.quantity import Quantity, QuantityError
from pykueue.core.workload.info import PODS_READY, has_quota_reservation, is_admitted, workload_key
from pykueue.kube.validation import is_dns1123_label, is_valid_label_value

# --- labels, annotations and other well-known names -------------------------------------------------

MAX_EXEC_TIME_SECONDS_LABEL: Final = "kueue.x-k8s.io/max-exec-time-seconds"
JOB_MIN_PARALLELISM_ANNOTATION: Final = "kueue.x-k8s.io/job-min-parallelism"
JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION: Final = "kueue.x-k8s.io/job-completions-equal-parallelism"
ADMISSION_GATED_BY_ANNOTATION: Final = "kueue.x-k8s.io/admission-gated-by"
JOB_UID_LABEL: Final = "kueue.x-k8s.io/job-uid"
PREBUILT_WORKLOAD_NAME_ANNOTATION: Final = "kueue.x-k8s.io/prebuilt-workload-name"
PREBUILT_WORKLOAD_NAME_LABEL: Final = "kueue.x-k8s.io/prebuilt-workload-name"
ELASTIC_JOB_ANNOTATION: Final = "kueue.x-k8s.io/elastic-job"
PROVREQ_ANNOTATION_PREFIX: Final = "provreq.kueue.x-k8s.io/"
RESOURCE_IN_USE_FINALIZER: Final = "kueue.x-k8s.io/resource-in-use"

# Written on the pods of an admitted Job (``RunWithPodSetsInfo``).
WORKLOAD_ANNOTATION: Final = "kueue.x-k8s.io/workload"
PODSET_LABEL: Final = "kueue.x-k8s.io/podset"
LOCAL_QUEUE_NAME_LABEL: Final = "kueue.x-k8s.io/local-queue-name"
CLUSTER_QUEUE_NAME_LABEL: Final = "kueue.x-k8s.io/cluster-queue-name"
MULTIKUEUE_ORIGIN_LABEL: Final = "kueue.x-k8s.io/multikueue-origin"
MULTIKUEUE_WORKER_POD_LABEL: Final = "kueue.x-k8s.io/multikueue-worker-workload-pod"
TOPOLOGY_SCHEDULING_GATE: Final = "kueue.x-k8s.io/topology"

PODSET_SLICE_SIZE_ANNOTATION: Final = "kueue.x-k8s.io/podset-slice-size"
PODSET_GROUP_NAME_ANNOTATION: Final = "kueue.x-k8s.io/podset-group-name"
JOB_COMPLETION_INDEX_ANNOTATION: Final = "batch.kubernetes.io/job-completion-index"

JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"
CONTROLLER_UID_LABEL: Final = "batch.kubernetes.io/controller-uid"
LEGACY_JOB_NAME_LABEL: Final = "job-name"
LEGACY_CONTROLLER_UID_LABEL: Final = "controller-uid"
MANAGED_LABELS: Final = (
    LEGACY_JOB_NAME_LABEL,
    LEGACY_CONTROLLER_UID_LABEL,
    JOB_NAME_LABEL,
    CONTROLLER_UID_LABEL,
)
"""Pod-template labels the Kubernetes Job controller owns; a stop keeps the Job's current values."""
LABELS_DROPPED_FROM_WORKLOAD: Final = (
    LEGACY_JOB_NAME_LABEL,
    LEGACY_CONTROLLER_UID_LABEL,
    CONTROLLER_UID_LABEL,
)
"""Removed from the Workload's template (``ConstructWorkload``: ``batch.kubernetes.io/job-name`` is kept)."""

DEFAULT_POD_SET_NAME: Final = "main"
JOB_API_VERSION: Final = "batch/v1"
JOB_KIND: Final = "Job"
JOB_GROUP: Final = "batch"

# --- event reasons and texts (jobframework/reconciler.go) -----------------------------------------------------

JOB_CONTROLLER: Final = "batch/job-kueue-controller"
"""The reporting controller of the batch/v1 Job integration's Events: upstream's job reconcilers
record through ``mgr.GetEventRecorder("<framework>-<manager>-controller")``
(``jobframework.setupControllerAndWebhook``; framework ``batch/job``, manager ``kueue``)."""

EVENT_CREATED_WORKLOAD: Final = "CreatedWorkload"
EVENT_DELETED_WORKLOAD: Final = "DeletedWorkload"
EVENT_UPDATED_WORKLOAD: Final = "UpdatedWorkload"
EVENT_FINISHED_WORKLOAD: Final = "FinishedWorkload"
EVENT_STARTED: Final = "Started"
EVENT_STOPPED: Final = "Stopped"
EVENT_SUSPENDED: Final = "Suspended"
EVENT_UPDATED_ADMISSION_CHECK: Final = "UpdatedAdmissionCheck"
EVENT_WORKLOAD_PRIORITY_CLASS_NOT_FOUND: Final = "WorkloadPriorityClassNotFound"
EVENT_JOB_NESTING_TOO_DEEP: Final = "JobNestingTooDeep"
EVENT_DELETED: Final = "Deleted"

FINISHED_SUCCEEDED: Final = "Succeeded"
FINISHED_FAILED: Final = "Failed"
FINISHED_FAILED_TO_START: Final = "FailedToStart"
FINISHED_OUT_OF_SYNC: Final = "OutOfSync"
FINISHED_OWNER_NOT_FOUND: Final = "OwnerNotFound"

STOP_NO_MATCHING_WORKLOAD: Final = (
    "No matching Workload; restoring pod templates according to existent Workload"
)
STOP_MISSING_WORKLOAD: Final = "Missing Workload; unable to restore pod templates"
STOP_WORKLOAD_DELETED: Final = "Workload is deleted"
STOP_NOT_ADMITTED: Final = "Not admitted by cluster queue"
STOP_PREBUILT_MISSING: Final = "missing workload"
"""``handleJobWithNoWorkload``'s stop of a Job whose prebuilt Workload is missing (lower case, as upstream)."""
PREBUILT_NOT_FOUND: Final = "prebuilt workload not found"
"""``jobframework.ErrPrebuiltWorkloadNotFound``."""
CHILD_JOB_SUSPENDED: Final = "Kueue managed child job suspended"
PREBUILT_OUT_OF_SYNC: Final = "The prebuilt workload is out of sync with its user job"
DELETED_AFTER_RETENTION: Final = "Deleted job: deactivation retention period expired"

PODS_READY_WAIT_FOR_START: Final = "WaitForStart"
PODS_READY_WAIT_FOR_RECOVERY: Final = "WaitForRecovery"
PODS_READY_STARTED: Final = "Started"
PODS_READY_RECOVERED: Final = "Recovered"
PODS_NOT_READY_MESSAGE: Final = "Not all pods are ready or succeeded"
PODS_WAITING_FOR_RECOVERY_MESSAGE: Final = "At least one pod has failed, waiting for recovery"
PODS_READY_MESSAGE: Final = "All pods reached readiness and the workload is running"


def created_workload_message(wl: Workload) -> str:
    """Note of the ``CreatedWorkload`` event on the Job."""
    return f"Created Workload: {workload_key(wl)}"


def deleted_workload_message(wl: Workload) -> str:
    """Note of the ``DeletedWorkload`` event for a non-matching Workload."""
    return f"Deleted not matching Workload: {workload_key(wl)}"


def updated_workload_message(wl: Workload) -> str:
    """Note of the ``UpdatedWorkload`` event when a suspended Job's leftover Workload is rewritten."""
    return f"Updated not matching Workload for suspended job: {workload_key(wl)}"


def updated_priority_message(wl: Workload) -> str:
    """Note of the ``UpdatedWorkload`` event when the Job's priority-class label changed."""
    return f"Updated workload priority class: {workload_key(wl)}"


def finished_workload_message(wl: Workload) -> str:
    """Note of the ``FinishedWorkload`` event."""
    return f"Workload '{workload_key(wl)}' is declared finished"


def started_message(wl: Workload) -> str:
    """Note of the ``Started`` event (the Workload must hold an admission)."""
    cq = wl.status.admission.cluster_queue if wl.status.admission is not None else ""
    return f"Admitted by clusterQueue {cq}"


# --- errors -----------------------------------------------------------------------------------------


class StartJobError(Exception):
    """A permanent failure to start the Job: finish the Workload ``FailedToStart`` with ``str(err)``."""


class PodSetUpdateConflict(StartJobError):
    """Injected labels, annotations or nodeSelector disagree with what is already there (``podset.Merge``)."""


class InvalidPodSetsInfo(StartJobError):
    """The admission does not describe exactly the Job's one pod set."""


class FlavorNotFound(LookupError):
    """An assigned ResourceFlavor does not exist; retry later (not a reason to fail the Workload)."""


# --- small readers over the Job dict ----------------------------------------------------------------



def _sub(obj: Mapping[str, Any] | None, key: str) -> Mapping[str, Any]:
    value = obj.get(key) if obj is not None else None
    return value if isinstance(value, Mapping) else {}


def _labels(job: Mapping[str, Any]) -> Mapping[str, str]:
    return _sub(_sub(job, "metadata"), "labels")


def _annotations(job: Mapping[str, Any]) -> Mapping[str, str]:
    return _sub(_sub(job, "metadata"), "annotations")


def _int_field(obj: Mapping[str, Any], key: str) -> int | None:
    value = obj.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def prebuilt_workload_name(job: Mapping[str, Any], identifier_annotations: bool = True) -> str | None:
    """``PrebuiltWorkloadNameFor`` (jobframework/utils.go): the prebuilt Workload to use instead of
    creating one. Under ``WorkloadIdentifierAnnotations`` the annotation wins over the older label;
    without it the label, then an annotation too long to be a label value."""
    annotation = str(_annotations(job).get(PREBUILT_WORKLOAD_NAME_ANNOTATION) or "")
    label = str(_labels(job).get(PREBUILT_WORKLOAD_NAME_LABEL) or "")
    if identifier_annotations:
        name = annotation or label
    else:
        name = label or (annotation if len(annotation) > 63 else "")
    return name or None


def adopt_prebuilt(job: Mapping[str, Any], wl: Workload) -> Workload | None:
    """``EnsurePrebuiltWorkloadOwnership`` (jobframework/reconciler.go): the prebuilt Workload with the
    Job as its controller (``ctrl.SetControllerReference``: an owner reference to the same object is
    replaced, else one is appended) and the ``kueue.x-k8s.io/job-uid`` label when the uid is a valid
    label value; None when the Job already controls it (``metav1.IsControlledBy``: by uid)."""
    meta = _sub(job, "metadata")
    uid = str(meta.get("uid", ""))
    if any(r.controller and r.uid == uid for r in wl.metadata.owner_references):
        return None
    ref = OwnerReference(
        api_version=JOB_API_VERSION,
        kind=JOB_KIND,
        name=str(meta.get("name", "")),
        uid=uid,
        controller=True,
        block_owner_deletion=True,
    )

    def same_object(r: OwnerReference) -> bool:
        # controller-runtime's ``referSameObject``: group (not version), kind and name.
        return (r.api_version.rpartition("/")[0], r.kind, r.name) == (JOB_GROUP, JOB_KIND, ref.name)

    refs = list(wl.metadata.owner_references)
    i = next((i for i, r in enumerate(refs) if same_object(r)), None)
    if i is None:
        refs.append(ref)
    else:
        refs[i] = ref
    labels = dict(wl.metadata.labels)
    if not is_valid_label_value(uid):
        labels[JOB_UID_LABEL] = uid
    return msgspec.structs.replace(
        wl, metadata=msgspec.structs.replace(wl.metadata, owner_references=refs, labels=labels)
    )


def max_execution_time_seconds(job: Mapping[str, Any]) -> int | None:
    """``kueue.x-k8s.io/max-exec-time-seconds`` as a positive int32; anything else is ignored."""
    raw = _labels(job).get(MAX_EXEC_TIME_SECONDS_LABEL)
    if raw is None:
        return None
    value = strconv.parse_int(str(raw), strconv.INT32, "ParseInt")[0]
    return value if value is not None and value > 0 else None


def min_pods_count(job: Mapping[str, Any]) -> int | None:
    """``kueue.x-k8s.io/job-min-parallelism`` when it parses as an integer (partial admission)."""
    raw = _annotations(job).get(JOB_MIN_PARALLELISM_ANNOTATION)
    if raw is None:
        return None
    return strconv.parse_int(str(raw), strconv.INT64, "ParseInt")[0]


def sync_completions_with_parallelism(job: Mapping[str, Any]) -> bool:
    """Whether ``kueue.x-k8s.io/job-completions-equal-parallelism`` parses as true."""
    raw = _annotations(job).get(JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION)
    return raw is not None and strconv.parse_bool(str(raw))[0] is True


def is_elastic(job: Mapping[str, Any]) -> bool:
    """Whether the Job opted into elastic scaling via workload slices (``"true"`` only)."""
    return _annotations(job).get(ELASTIC_JOB_ANNOTATION) == "true"










def active_pods(job: Mapping[str, Any]) -> int:
    """``status.active``: pending and running pods."""
    return _int_field(_sub(job, "status"), "active") or 0


def is_active(job: Mapping[str, Any]) -> bool:
    """Whether the Job still has active pods (quota is released only once it has none: ``jobframework`` ``ReconcileGenericJob``)."""
    return active_pods(job) != 0


def job_finished(job: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(Succeeded|Failed, message)`` from the first true ``Complete``/``Failed`` condition."""
    for cond in _sub(job, "status").get("conditions") or ():
        if not isinstance(cond, Mapping) or cond.get("status") != CONDITION_TRUE:
            continue
        if cond.get("type") == "Complete":
            return FINISHED_SUCCEEDED, str(cond.get("message", ""))
        if cond.get("type") == "Failed":
            return FINISHED_FAILED, str(cond.get("message", ""))
    return None


def pods_ready(job: Mapping[str, Any]) -> bool:
    """``(*Job).PodsReady`` (``pkg/controller/jobs/job/job_controller.go``): ``succeeded + ready + uncounted succeeded >= min(parallelism, completions)``."""
    status = _sub(job, "status")
    uncounted = _sub(status, "uncountedTerminatedPods").get("succeeded") or ()
    done = (_int_field(status, "succeeded") or 0) + (_int_field(status, "ready") or 0) + len(uncounted)
    return done >= pods_count(job)


def _parse_indexes(text: Any) -> set[int]:
    """Indexes in the Job status text form (``"1,3-5,7"``); malformed parts are skipped."""
    out: set[int] = set()
    if not isinstance(text, str):
        return out
    for part in text.split(","):
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            continue
        out.update(range(int(lo), int(hi if sep else lo) + 1))
    return out


def _terminal_pods(job: Mapping[str, Any]) -> int:
    status = _sub(job, "status")
    if _sub(job, "spec").get("completionMode") != "Indexed":
        return _int_field(status, "succeeded") or 0
    # Indexed: distinct indexes that will never run again, i.e. completed or failed for good.
    limit = completions(job)
    done = _parse_indexes(status.get("completedIndexes")) | _parse_indexes(status.get("failedIndexes"))
    return sum(1 for i in done if limit is None or i < limit)


def reclaimable_pods(job: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``(*Job).ReclaimablePods``: pods of the running Job that will never be needed again.

    For parallelism ``p > 1`` and ``t > 0`` terminal pods (``status.succeeded``, or for an Indexed
    Job the distinct completed or permanently failed indexes below ``completions``), the Job still
    needs ``max(completions - t, 0)`` pods; when that is below ``p`` the rest are reclaimable,
    capped at the pod set's count. Returns ``[{"name": "main", "count": n}]`` or ``[]``.
    """
    p = parallelism(job)
    terminal = _terminal_pods(job)
    if p <= 1 or terminal == 0:
        return []
    total = completions(job)
    remaining = max((p if total is None else total) - terminal, 0)
    if remaining >= p:
        return []
    return [{"name": DEFAULT_POD_SET_NAME, "count": min(p - remaining, pods_count(job))}]


# --- workload names (jobframework/workload_names.go) --------------------------------------------------------------------------

_HASH_LENGTH = 5


def workload_name(
    job_name: str,
    job_uid: str,
    kind: str = JOB_KIND,
    group: str = JOB_GROUP,
    *,
    generation: int | None = None,
    short_names: bool = False,
    extra: str = "",
) -> str:
    """``lower(kind)-<name>`` truncated, plus ``-`` and 5 hex digits of a SHA-1 of the identity.

    The prefix is cut to 247 characters (253 minus the separator and hash; 57 for the 63-character
    names of ``ShortWorkloadNames``); the hash covers the full name, so truncated names stay
    distinct. Elastic jobs pass ``generation`` so each scale gets its own Workload
    (``GetWorkloadNameForOwnerWithGVKAndGeneration``: the generation in decimal is the ``extra``
    of ``GenerateWorkloadNameWithExtra``, hashed after the uid when not empty).
    """
    max_prefix = (63 if short_names else 253) - 1 - _HASH_LENGTH
    prefix = f"{kind.lower()}-{job_name}"[:max_prefix]
    identity = f"{kind}\n{group}\n{job_name}\n{job_uid}"
    if generation is not None:
        extra = str(generation)
    if extra:
        identity += f"\n{extra}"
    return f"{prefix}-{hashlib.sha1(identity.encode()).hexdigest()[:_HASH_LENGTH]}"


# --- priority (jobframework ``ExtractPriority``) --------------------------------------------------------------------------------


@dataclass(frozen=True)
class PriorityInfo:
    """The priority a new Workload gets: its class reference (if any) and value."""

    priority_class_ref: PriorityClassRef | None
    priority: int


@dataclass(frozen=True)
class PriorityError:
    """The priority cannot be resolved; no Workload is created.

    ``event_reason`` is set when upstream also emits a ``Warning`` event on the Job with
    ``message`` as note (a missing WorkloadPriorityClass).
    """

    message: str
    event_reason: str | None = None


def resolve_priority(
    job: Mapping[str, Any],
    wpc_lookup: Callable[[str], WorkloadPriorityClass | None],
    pc_lookup: Callable[[str], PriorityClass | None],
    global_default_pcs: Iterable[PriorityClass],
) -> PriorityInfo | PriorityError:
    """The Workload's priority as ``ConstructWorkload`` resolves it.

    The ``kueue.x-k8s.io/priority-class`` label names a WorkloadPriorityClass; otherwise the pod
    template's ``priorityClassName`` names a PriorityClass; otherwise the globalDefault
    PriorityClass with the lowest value (``global_default_pcs`` may hold every PriorityClass, only
    ``globalDefault`` ones count); otherwise no reference and priority 0.
    """
    wpc_name = workload_priority_class_name(job)
    if wpc_name:
        wpc = wpc_lookup(wpc_name)
        if wpc is None:
            return PriorityError(
                f'WorkloadPriorityClass "{wpc_name}" not found', EVENT_WORKLOAD_PRIORITY_CLASS_NOT_FOUND
            )
        return PriorityInfo(
            PriorityClassRef("kueue.x-k8s.io", "WorkloadPriorityClass", wpc.metadata.name), wpc.value
        )
    pc_name = _sub(_sub(_sub(job, "spec"), "template"), "spec").get("priorityClassName") or ""
    if pc_name:
        pc = pc_lookup(str(pc_name))
        if pc is None:
            # The API's NotFound text; upstream emits no dedicated event for this one.
            return PriorityError(f'priorityclasses.scheduling.k8s.io "{pc_name}" not found')
        return PriorityInfo(
            PriorityClassRef("scheduling.k8s.io", "PriorityClass", pc.metadata.name), pc.value
        )
    best: PriorityClass | None = None
    for pc in global_default_pcs:
        # Several defaults can exist after a race; the lowest value wins, the first on ties.
        if pc.global_default and (best is None or pc.value < best.value):
            best = pc
    if best is not None:
        return PriorityInfo(
            PriorityClassRef("scheduling.k8s.io", "PriorityClass", best.metadata.name), best.value
        )
    return PriorityInfo(None, 0)


def needs_priority_update(job: Mapping[str, Any], wl: Workload) -> bool:
    """``ReconcileGenericJob``: whether the Job's priority-class label no longer matches the Workload.

    Only Workloads using a WorkloadPriorityClass, or no class at all, follow the label; a Workload
    reserving quota without a class is left alone (a class cannot be added while reserving).
    """
    ref = wl.spec.priority_class_ref
    if ref is not None and ref.kind != "WorkloadPriorityClass":
        return False
    if ref is None and has_quota_reservation(wl):
        return False
    return workload_priority_class_name(job) != (ref.name if ref is not None else "")


# --- pod sets and Workload construction (``ConstructWorkload``) ------------------------------------------------------


def _dedup_env(container: dict[str, Any]) -> None:
    env = container.get("env")
    if not isinstance(env, list):
        return
    # Per name the last value wins, at the position of the first occurrence.
    by_name: dict[Any, Any] = {}
    for var in env:
        name = var.get("name") if isinstance(var, Mapping) else None
        by_name[name] = var
    container["env"] = list(by_name.values())


def _topology_request(template_meta: Mapping[str, Any]) -> dict[str, Any] | None:
    """The TAS request a Job's pod template asks for through its annotations."""
    ann = _sub(template_meta, "annotations")
    keys = (
        PODSET_REQUIRED_TOPOLOGY_ANNOTATION,
        PODSET_PREFERRED_TOPOLOGY_ANNOTATION,
        PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION,
        PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION,
        PODSET_SLICE_SIZE_ANNOTATION,
    )
    if not any(k in ann for k in keys):
        return None
    req: dict[str, Any] = {}
    if PODSET_REQUIRED_TOPOLOGY_ANNOTATION in ann:
        req["required"] = ann[PODSET_REQUIRED_TOPOLOGY_ANNOTATION]
    elif PODSET_PREFERRED_TOPOLOGY_ANNOTATION in ann:
        req["preferred"] = ann[PODSET_PREFERRED_TOPOLOGY_ANNOTATION]
    elif PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION in ann:
        # The webhook rejects a non-boolean value, so an unparsable one is simply not a request.
        unconstrained = strconv.parse_bool(str(ann[PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION]))[0]
        if unconstrained is not None:
            req["unconstrained"] = unconstrained
    req["podIndexLabel"] = JOB_COMPLETION_INDEX_ANNOTATION
    if PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION in ann and PODSET_SLICE_SIZE_ANNOTATION in ann:
        size = strconv.parse_int(str(ann[PODSET_SLICE_SIZE_ANNOTATION]), strconv.INT32, "ParseInt")[0]
        if size is not None:
            req["podSetSliceRequiredTopology"] = ann[PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION]
            req["podSetSliceSize"] = size
    if PODSET_GROUP_NAME_ANNOTATION in ann and ("required" in req or "preferred" in req):
        req["podSetGroupName"] = ann[PODSET_GROUP_NAME_ANNOTATION]
    return req


def job_pod_sets(
    job: Mapping[str, Any], *, tas_enabled: bool = True, partial_admission: bool = True
) -> list[PodSet]:
    """The Job's single pod set ``main`` as a Workload carries it (``ConstructWorkload``), env vars de-duplicated.

    The template is the Job's, minus the Job-controller labels of ``LABELS_DROPPED_FROM_WORKLOAD``;
    ``count = min(parallelism, completions)``; ``minCount`` comes from the min-parallelism
    annotation (dropped when ``PartialAdmission`` is off); with TAS the template annotations give
    a ``topologyRequest``.
    """
    template = copy.deepcopy(dict(_sub(_sub(job, "spec"), "template")))
    meta: dict[str, Any] = dict(template.get("metadata") or {})
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k not in LABELS_DROPPED_FROM_WORKLOAD}
    if labels:
        meta["labels"] = labels
    else:
        meta.pop("labels", None)
    spec: dict[str, Any] = dict(template.get("spec") or {})
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or ():
            if isinstance(container, dict):
                _dedup_env(container)
    return [
        PodSet(
            name=DEFAULT_POD_SET_NAME,
            template=PodTemplateSpec(metadata=meta, spec=spec),
            count=pods_count(job),
            min_count=min_pods_count(job) if partial_admission else None,
            topology_request=_topology_request(meta) if tas_enabled else None,
        )
    ]


def construct_workload(
    job: Mapping[str, Any],
    priority: PriorityInfo,
    label_keys_to_copy: Iterable[str] = (),
    *,
    tas_enabled: bool = True,
    partial_admission: bool = True,
    short_workload_names: bool = False,
    admission_gated_by: bool = True,
) -> Workload:
    """The Workload the integration creates for ``job`` (``ConstructWorkload``), ready to be created.

    Name from :func:`workload_name` (with the generation for elastic Jobs); the Job's namespace;
    the ``resource-in-use`` finalizer; a controller reference to the Job; the Job labels named in
    ``label_keys_to_copy`` plus ``kueue.x-k8s.io/job-uid`` (omitted when the uid is not a valid
    label value); the ``provreq.kueue.x-k8s.io/*`` and admission-gated-by annotations; queue name,
    maximum execution time, priority and the ``main`` pod set. ``spec.active`` stays unset.
    """
    meta = _sub(job, "metadata")
    name = str(meta.get("name", ""))
    uid = str(meta.get("uid", ""))
    generation = _int_field(meta, "generation") if is_elastic(job) else None
    job_labels = _labels(job)
    labels = {k: str(job_labels[k]) for k in label_keys_to_copy if k in job_labels}
    uid_errors = is_valid_label_value(uid)
    if not uid_errors:
        labels[JOB_UID_LABEL] = uid
    annotations = {k: str(v) for k, v in _annotations(job).items() if k.startswith(PROVREQ_ANNOTATION_PREFIX)}
    # ``prepareWorkload`` → ``PropagateAdmissionGatedByAnnotation``: under the AdmissionGatedBy gate,
    # and only a non-empty value (an empty one is no gate, as a missing one).
    gated_by = str(_annotations(job).get(ADMISSION_GATED_BY_ANNOTATION) or "")
    if admission_gated_by and gated_by:
        annotations[ADMISSION_GATED_BY_ANNOTATION] = gated_by
    return Workload(
        metadata=ObjectMeta(
            name=workload_name(name, uid, generation=generation, short_names=short_workload_names),
            namespace=str(meta.get("namespace", "")),
            labels=labels,
            annotations=annotations,
            finalizers=[RESOURCE_IN_USE_FINALIZER],
            owner_references=[
                OwnerReference(
                    api_version=JOB_API_VERSION,
                    kind=JOB_KIND,
                    name=name,
                    uid=uid,
                    controller=True,
                    block_owner_deletion=True,
                )
            ],
        ),
        spec=WorkloadSpec(
            pod_sets=job_pod_sets(job, tas_enabled=tas_enabled, partial_admission=partial_admission),
            queue_name=queue_name(job),
            priority_class_ref=priority.priority_class_ref,
            priority=priority.priority,
            maximum_execution_time_seconds=max_execution_time_seconds(job),
        ),
    )


# --- injection of admission data (jobframework ``RunWithPodSetsInfo``) -------------------------------------------------------------


@dataclass
class PodSetInjection:
    """What admission adds to one pod set's template when the Job starts (upstream ``PodSetInfo``).

    Tolerations and scheduling gates are in their JSON form, as a pod template holds them.
    """

    name: str
    count: int
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    scheduling_gates: list[dict[str, Any]] = field(default_factory=list)


def _toleration_json(t: Toleration) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(t)
    return out


def _normalized(item: Mapping[str, Any]) -> dict[str, Any]:
    # Go compares the structs: an absent field and its zero value are the same toleration.
    return {k: v for k, v in item.items() if v not in (None, "")}


def _append_unique(target: list[dict[str, Any]], items: Iterable[Mapping[str, Any]]) -> None:
    for item in items:
        norm = _normalized(item)
        if all(_normalized(existing) != norm for existing in target):
            target.append(dict(item))


def _check_conflicts(pairs: Sequence[tuple[str, Mapping[str, str], Mapping[str, str]]]) -> None:
    """Raise on the first key present in both maps with different values (checked in this order)."""
    for what, have, add in pairs:
        for key, value in have.items():
            if key in add and add[key] != value:
                raise PodSetUpdateConflict(
                    f"invalid admission check PodSetUpdate: conflict for {what}: "
                    f"conflict for key={key}, value1={value}, value2={add[key]}"
                )


def _merge_into(info: PodSetInjection, other: PodSetInjection) -> None:
    _check_conflicts(
        (
            ("annotations", info.annotations, other.annotations),
            ("labels", info.labels, other.labels),
            ("nodeSelector", info.node_selector, other.node_selector),
        )
    )
    info.annotations.update(other.annotations)
    info.labels.update(other.labels)
    info.node_selector.update(other.node_selector)
    _append_unique(info.tolerations, other.tolerations)
    _append_unique(info.scheduling_gates, other.scheduling_gates)


def _requested_topology_explicitly(ps: PodSet | None) -> bool:
    req = ps.topology_request if ps is not None else None
    return req is not None and any(req.get(k) is not None for k in ("required", "preferred", "unconstrained"))


def _flavor_injection(
    assignment: PodSetAssignment, spec_count: int, flavors: Mapping[str, ResourceFlavor]
) -> PodSetInjection:
    info = PodSetInjection(
        name=assignment.name, count=spec_count if assignment.count is None else assignment.count
    )
    seen: set[str] = set()
    for flavor_name in assignment.flavors.values():
        if flavor_name in seen:
            continue
        seen.add(flavor_name)
        flavor = flavors.get(flavor_name)
        if flavor is None:
            raise FlavorNotFound(f'resourceflavors.kueue.x-k8s.io "{flavor_name}" not found')
        # Later flavors override the same node label silently; tolerations are appended as is.
        info.node_selector.update(flavor.spec.node_labels)
        info.tolerations.extend(_toleration_json(t) for t in flavor.spec.tolerations)
    return info


def pod_set_injection(
    wl: Workload,
    flavors: Mapping[str, ResourceFlavor],
    assign_queue_labels: bool = True,
    *,
    tas_enabled: bool = True,
) -> list[PodSetInjection]:
    """``getPodSetsInfoFromStatus`` (jobframework/reconciler.go): per podSetAssignment (in admission order), what to inject into the Job.

    ``flavors`` maps names to ResourceFlavors (a missing one raises :class:`FlavorNotFound`, which
    is retried). A conflict between admission checks' podSetUpdates raises
    :class:`PodSetUpdateConflict` whose text is the ``FailedToStart`` message, e.g.
    ``in admission check "c": invalid admission check PodSetUpdate: conflict for labels: ...``.
    """
    admission = wl.status.admission
    if admission is None:
        raise ValueError(f"workload {workload_key(wl)} has no admission")
    spec_sets = wl.spec.pod_sets
    out: list[PodSetInjection] = []
    for i, assignment in enumerate(admission.pod_set_assignments):
        ps = spec_sets[i] if i < len(spec_sets) else None
        info = _flavor_injection(assignment, ps.count if ps is not None else 0, flavors)
        if tas_enabled:
            info.annotations[WORKLOAD_ANNOTATION] = wl.metadata.name
            if assignment.topology_assignment is not None:
                info.scheduling_gates.append({"name": TOPOLOGY_SCHEDULING_GATE})
                if not _requested_topology_explicitly(ps):
                    info.annotations[PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION] = "true"
        info.labels[PODSET_LABEL] = assignment.name
        if MULTIKUEUE_ORIGIN_LABEL in wl.metadata.labels:
            info.labels[MULTIKUEUE_WORKER_POD_LABEL] = "true"
        if assign_queue_labels:
            info.labels[LOCAL_QUEUE_NAME_LABEL] = wl.spec.queue_name
            # A ClusterQueue name may be a DNS subdomain, which is not always a label value.
            cq_name_errors = is_dns1123_label(admission.cluster_queue)
            if not cq_name_errors:
                info.labels[CLUSTER_QUEUE_NAME_LABEL] = admission.cluster_queue
        for check in wl.status.admission_checks:
            update = next((u for u in check.pod_set_updates if u.name == info.name), None)
            if update is None:
                continue
            try:
                _merge_into(
                    info,
                    PodSetInjection(
                        name=update.name,
                        count=0,
                        labels=dict(update.labels),
                        annotations=dict(update.annotations),
                        node_selector=dict(update.node_selector),
                        tolerations=[_toleration_json(t) for t in update.tolerations],
                    ),
                )
            except PodSetUpdateConflict as err:
                raise PodSetUpdateConflict(f"in admission check {json.dumps(check.name)}: {err}") from err
        out.append(info)
    return out


def _template_injection(template: Mapping[str, Any]) -> PodSetInjection:
    meta = _sub(template, "metadata")
    spec = _sub(template, "spec")
    return PodSetInjection(
        name="",
        count=0,
        labels=dict(_sub(meta, "labels")),
        annotations=dict(_sub(meta, "annotations")),
        node_selector=dict(_sub(spec, "nodeSelector")),
        tolerations=[dict(t) for t in spec.get("tolerations") or ()],
        scheduling_gates=[dict(g) for g in spec.get("schedulingGates") or ()],
    )


def _set_or_drop(obj: dict[str, Any], key: str, value: Any) -> None:
    # Go drops empty maps and lists from JSON; so do we, but never add an empty one.
    if value:
        obj[key] = value
    else:
        obj.pop(key, None)


def _merge_template(template: dict[str, Any], info: PodSetInjection) -> None:
    """``podset.Merge``: add ``info`` to a pod template dict in place (conflicts raise)."""
    merged = _template_injection(template)
    _merge_into(merged, info)
    meta = dict(template.get("metadata") or {})
    spec = dict(template.get("spec") or {})
    for obj, key, value in (
        (meta, "annotations", merged.annotations),
        (meta, "labels", merged.labels),
        (spec, "nodeSelector", merged.node_selector),
        (spec, "tolerations", merged.tolerations),
        (spec, "schedulingGates", merged.scheduling_gates),
    ):
        if value or key in obj:
            _set_or_drop(obj, key, value)
    template["metadata"] = meta
    template["spec"] = spec


def start_job(job: Mapping[str, Any], wl: Workload, injections: Sequence[PodSetInjection]) -> dict[str, Any]:
    """``JobReconciler.startJob``: the Job unsuspended with the admission injected (``RunWithPodSetsInfo``).

    ``spec.suspend = false``; with partial admission ``parallelism`` becomes the admitted count
    (and ``completions`` follows when the completions-equal-parallelism annotation is true); the
    injection is merged into the pod template, where a key already set to another value raises
    :class:`PodSetUpdateConflict`. ``injections`` come from :func:`pod_set_injection` for ``wl``
    (the Workload is not read again; the parameter keeps one signature for every integration).
    Emit ``Started`` with :func:`started_message` after writing the result.
    """
    del wl  # everything the batch Job needs from the Workload is in the injections
    if len(injections) != 1:
        # ``podset.BadPodSetsInfoLenError(1, len(podSetsInfo))`` (pkg/podset/podset.go): want, then got.
        raise InvalidPodSetsInfo(f"invalid podset infos: expecting 1 podset, got {len(injections)}")
    out = copy.deepcopy(dict(job))
    spec: dict[str, Any] = dict(out.get("spec") or {})
    info = injections[0]
    if min_pods_count(job) is not None:
        spec["parallelism"] = info.count
        if sync_completions_with_parallelism(job):
            spec["completions"] = info.count
    template = dict(spec.get("template") or {})
    _merge_template(template, info)
    spec["template"] = template
    spec["suspend"] = False
    out["spec"] = spec
    return out


# --- stopping a Job (jobframework ``stopJob``) ---------------------------------------------------------


@dataclass(frozen=True)
class StopResult:
    """The outcome of :func:`stop_job`.

    ``job`` is the final Job (suspended, ``status.startTime`` cleared, template restored, stopping
    annotation gone). Upstream writes it in up to three steps so a crash in between is recovered:
    ``suspend_step`` (suspend plus the stopping annotation, only when ``stopped_now``), a status
    write clearing ``startTime`` (when ``start_time_reset``), then the restored template. Emit the
    ``Stopped`` event only when ``stopped_now``.
    """

    job: dict[str, Any]
    stopped_now: bool
    start_time_reset: bool
    suspend_step: dict[str, Any] | None


def _restore_template(template: dict[str, Any], ps: PodSet, keep_labels: Mapping[str, str]) -> None:
    """``podset.RestorePodSpec`` from the Workload's pod set, keeping the Job-managed labels."""
    wl_meta = ps.template.metadata
    wl_spec = ps.template.spec
    labels = dict(_sub(wl_meta, "labels"))
    labels.update(keep_labels)
    meta = dict(template.get("metadata") or {})
    spec = dict(template.get("spec") or {})
    for obj, key, value in (
        (meta, "annotations", dict(_sub(wl_meta, "annotations"))),
        (meta, "labels", labels),
        (spec, "nodeSelector", dict(_sub(wl_spec, "nodeSelector"))),
        (spec, "tolerations", copy.deepcopy(list(wl_spec.get("tolerations") or ()))),
        (spec, "schedulingGates", copy.deepcopy(list(wl_spec.get("schedulingGates") or ()))),
    ):
        # Only a difference is written (nil and empty are equal), so untouched fields stay as they are.
        if (obj.get(key) or type(value)()) != value:
            _set_or_drop(obj, key, value)
    template["metadata"] = meta
    template["spec"] = spec


def stop_job(job: Mapping[str, Any], wl: Workload | None) -> StopResult:
    """Suspend the Job and put its pod template back as the Workload describes it.

    With no Workload (``Missing Workload``) only the suspension happens. With partial admission
    ``parallelism`` (and ``completions`` when synced) returns to the pod set's count. The
    caller emits ``Stopped`` with the reason's note only when ``stopped_now``.
    """
    out = copy.deepcopy(dict(job))
    meta: dict[str, Any] = dict(out.get("metadata") or {})
    spec: dict[str, Any] = dict(out.get("spec") or {})
    annotations = dict(meta.get("annotations") or {})

    stopped_now = not is_suspended(job)
    suspend_step: dict[str, Any] | None = None
    if stopped_now:
        spec["suspend"] = True
        # The annotation marks a stop in progress, so a crash before the restore is retried.
        annotations[STOPPING_ANNOTATION] = "true"
        meta["annotations"] = annotations
        suspend_step = copy.deepcopy({**out, "metadata": meta, "spec": spec})

    status = dict(out.get("status") or {})
    start_time_reset = status.get("startTime") is not None
    if start_time_reset:
        del status["startTime"]
        out["status"] = status

    ps = wl.spec.pod_sets[0] if wl is not None and wl.spec.pod_sets else None
    if ps is not None:
        if min_pods_count(job) is not None and (_int_field(spec, "parallelism") or 0) != ps.count:
            spec["parallelism"] = ps.count
            if sync_completions_with_parallelism(job):
                spec["completions"] = ps.count
        template = dict(spec.get("template") or {})
        template_labels = _sub(_sub(template, "metadata"), "labels")
        keep = {k: str(template_labels[k]) for k in MANAGED_LABELS if k in template_labels}
        _restore_template(template, ps, keep)
        spec["template"] = template

    annotations.pop(STOPPING_ANNOTATION, None)
    _set_or_drop(meta, "annotations", annotations)
    out["metadata"] = meta
    out["spec"] = spec
    return StopResult(out, stopped_now, start_time_reset, suspend_step)


# --- equivalence of a Job and a Workload (jobframework ``EquivalentToWorkload``) ----------------------------------------------

_QUANTITY_MAPS = frozenset({"requests", "limits"})


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


def _quantity_equal(a: Any, b: Any) -> bool:
    if a == b:
        return True
    try:
        return Quantity.parse(a) == Quantity.parse(b)
    except (QuantityError, TypeError):
        return False


def _semantic_equal(a: Any, b: Any, key: str = "") -> bool:
    """apimachinery ``equality.Semantic.DeepEqual`` on JSON: absent equals empty, quantities by value."""
    if _empty(a) and _empty(b):
        return True
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        if key in _QUANTITY_MAPS:
            return a.keys() == b.keys() and all(_quantity_equal(a[k], b[k]) for k in a)
        return all(_semantic_equal(a.get(k), b.get(k), str(k)) for k in a.keys() | b.keys())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_semantic_equal(x, y, key) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _pod_sets_equal(a: Sequence[PodSet], b: Sequence[PodSet], ignore_tolerations: bool) -> bool:
    """``equality.ComparePodSetSlices``: count, minCount, containers, initContainers, tolerations."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x.count != y.count or x.min_count != y.min_count:
            return False
        xs, ys = x.template.spec, y.template.spec
        if not ignore_tolerations and not _semantic_equal(xs.get("tolerations"), ys.get("tolerations")):
            return False
        for key in ("initContainers", "containers"):
            if not _semantic_equal(xs.get(key), ys.get(key)):
                return False
    return True


def _can_be_partially_admitted(wl: Workload) -> bool:
    return any(ps.min_count is not None and ps.count > ps.min_count for ps in wl.spec.pod_sets)


def expected_running_pod_sets(
    wl: Workload,
    flavors: Mapping[str, ResourceFlavor],
    *,
    assign_queue_labels: bool = True,
    tas_enabled: bool = True,
) -> list[PodSet] | None:
    """The Workload's pod sets as a started Job would run them, or ``None``.

    ``None`` when the Workload reserves no quota or the injection cannot be computed (missing
    flavor, conflict, pod set without an assignment): the caller then compares the raw spec.
    """
    if not has_quota_reservation(wl) or wl.status.admission is None:
        return None
    try:
        infos = {
            i.name: i for i in pod_set_injection(wl, flavors, assign_queue_labels, tas_enabled=tas_enabled)
        }
    except (FlavorNotFound, PodSetUpdateConflict):
        return None
    partial = _can_be_partially_admitted(wl)
    running: list[PodSet] = []
    for ps in wl.spec.pod_sets:
        info = infos.get(ps.name)
        if info is None:
            return None
        template = {"metadata": copy.deepcopy(ps.template.metadata), "spec": copy.deepcopy(ps.template.spec)}
        try:
            _merge_template(template, info)
        except PodSetUpdateConflict:
            return None
        running.append(
            msgspec.structs.replace(
                ps,
                template=PodTemplateSpec(metadata=template["metadata"], spec=template["spec"]),
                count=info.count if partial and ps.min_count is not None else ps.count,
            )
        )
    return running


def is_equivalent(
    job: Mapping[str, Any],
    wl: Workload,
    flavors: Mapping[str, ResourceFlavor] | None = None,
    *,
    assign_queue_labels: bool = True,
    tas_enabled: bool = True,
    partial_admission: bool = True,
    finish_orphaned_workloads: bool = True,
) -> bool:
    """``EquivalentToWorkload``: whether ``wl`` is the Workload of ``job`` as the Job stands now.

    Same controller owner (name, and uid under the FinishOrphanedWorkloads gate), same ``maximumExecutionTimeSeconds``, and pod sets equal
    in count, minCount, containers, initContainers and (unless the Workload is admitted)
    tolerations. For a Workload reserving quota the Job is compared with the Workload's template
    after the admission data is injected (``flavors`` resolves its ResourceFlavors; a missing one
    means "cannot tell" and the raw spec is used, as upstream does on a lookup error); if that
    fails and the Job is suspended, the raw spec is compared instead.
    """
    meta = _sub(job, "metadata")
    owner = next((o for o in wl.metadata.owner_references if o.controller), None)
    if owner is None or owner.name != meta.get("name"):
        return False
    if finish_orphaned_workloads and meta.get("uid") and owner.uid and owner.uid != meta.get("uid"):
        return False
    if wl.spec.maximum_execution_time_seconds != max_execution_time_seconds(job):
        return False
    job_sets = job_pod_sets(job, tas_enabled=tas_enabled, partial_admission=partial_admission)
    admitted = is_admitted(wl)
    running = expected_running_pod_sets(
        wl, flavors or {}, assign_queue_labels=assign_queue_labels, tas_enabled=tas_enabled
    )
    if running is not None:
        if _pod_sets_equal(job_sets, running, admitted):
            return True
        # An admitted Workload of a still-suspended Job: compare with what the Job will get.
        return is_suspended(job) and _pod_sets_equal(job_sets, wl.spec.pod_sets, admitted)
    return _pod_sets_equal(job_sets, wl.spec.pod_sets, admitted)


# --- conditions and events derived from the Job -----------------------------------------------------


def pods_ready_condition(wl: Workload, admitted: bool, ready: bool) -> tuple[str, str, str] | None:
    """WaitForPodsReady (``jobframework`` ``ReconcileGenericJob``): the ``PodsReady`` condition to write as ``(status, reason, message)``, or ``None``.

    ``admitted`` is whether the Workload is Admitted, ``ready`` is :func:`pods_ready` of the Job.
    ``None`` when the current condition already has that status and reason (only a change of
    type, status or reason is written).
    """
    current = find_condition(wl.status.conditions, PODS_READY)
    target: tuple[str, str, str]
    if not admitted:
        target = (CONDITION_FALSE, PODS_READY_WAIT_FOR_START, PODS_NOT_READY_MESSAGE)
    elif ready:
        recovering = current is not None and current.reason in (
            PODS_READY_WAIT_FOR_RECOVERY,
            PODS_READY_RECOVERED,
        )
        target = (
            CONDITION_TRUE,
            PODS_READY_RECOVERED if recovering else PODS_READY_STARTED,
            PODS_READY_MESSAGE,
        )
    elif current is not None and (
        current.status == CONDITION_TRUE or current.reason == PODS_READY_WAIT_FOR_RECOVERY
    ):
        target = (CONDITION_FALSE, PODS_READY_WAIT_FOR_RECOVERY, PODS_WAITING_FOR_RECOVERY_MESSAGE)
    else:
        # No condition yet, WaitForStart, or the legacy PodsReady reason.
        target = (CONDITION_FALSE, PODS_READY_WAIT_FOR_START, PODS_NOT_READY_MESSAGE)
    if current is not None and (current.status, current.reason) == target[:2]:
        return None
    return target


def pending_checks_note(wl: Workload) -> str | None:
    """Note of the ``UpdatedAdmissionCheck`` event: ``<check>: <message>`` of Pending checks.

    Only checks with a message count, joined by ``; `` in status order; ``None`` when there are
    none (no event then).
    """
    parts = [
        f"{c.name}: {c.message}" for c in wl.status.admission_checks if c.state == CHECK_PENDING and c.message
    ]
    return "; ".join(parts) if parts else None
