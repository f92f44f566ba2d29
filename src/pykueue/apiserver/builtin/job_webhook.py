"""Kueue's batch/v1 Job webhooks (``mjob.kb.io``, ``vjob.kb.io``) in the API server's request path.

Upstream ``pkg/controller/jobs/job/job_webhook.go`` and
``pkg/controller/jobframework/{defaults,validation}.go``, with Kueue's default Configuration:
``manageJobsWithoutQueueName: false``, ``integrations.frameworks: [batch/job]`` (so the only
Kueue-managed owner kind is a batch/v1 Job) and ``managedJobsNamespaceSelector`` excluding
``kube-system`` and the Kueue namespace (``kueue-system``); the webhook configurations exclude the
same two namespaces, so Jobs there are neither defaulted nor validated.

Defaulting (create only), in order:

1. queue-name label ``default`` when the Job has none, its controller owner is not a
   Kueue-managed kind, the namespace has a LocalQueue named ``default`` and matches the managed
   namespace selector;
2. priority-class label ``default`` when the Job has none, its owner is not Kueue-managed and a
   WorkloadPriorityClass named ``default`` exists (gate ``WorkloadPriorityClassDefaulting``, on);
3. ``spec.suspend: true`` when the Job has a queue-name (or ``manageJobsWithoutQueueName`` and
   the namespace matches the selector), unless an ancestor Job is managed by Kueue; Jobs already
   being deleted are left alone.

Not emulated (documented gaps): ``spec.managedBy`` defaulting for MultiKueue (needs the queue
manager's LocalQueue → ClusterQueue → AdmissionCheck view), the elastic-job scheduling gate and
the elastic-job update rule, and the TAS pod-template annotation checks.

Ancestors: Kueue walks controller owner references through the kinds of its enabled integrations
(here batch/v1 Job only) and stops at any other kind. An owner Job that does not exist denies the
request with the NotFound status of the lookup, a cycle with ``cyclic ownership`` and a chain of
more than 10 owners with ``managed owner chain limit reached`` (403), as controller-runtime
reports a defaulter's error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pykueue.api import kueue as k
from pykueue.api import strconv
from pykueue.api.feature_gates import FeatureGates
from pykueue.api.jobs import (
    WORKLOAD_OWNER_NOT_FOUND,
    AncestorSearchError,
    completions,
    find_managed_ancestor,
    is_suspended,
    owner_managed_by_kueue,
    parallelism,
    pods_count,
    queue_name,
    workload_priority_class_name,
)
from pykueue.api.validation import (
    FIELD_IMMUTABLE_MSG,
    FieldError,
    ValidationFailed,
    admission_gated_by_format_errors,
    admission_gated_by_update_errors,
    forbidden,
    invalid,
)
from pykueue.apiserver.admission import Admission, Lookup
from pykueue.apiserver.builtin.pods import mapping
from pykueue.kube.status import StatusError
from pykueue.kube.validation import is_dns1123_subdomain

QUEUE_NAME_LABEL = k.QUEUE_NAME_LABEL
PRIORITY_CLASS_LABEL = k.PRIORITY_CLASS_LABEL
MAX_EXEC_TIME_LABEL = "kueue.x-k8s.io/max-exec-time-seconds"
PREBUILT_WORKLOAD_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
PREBUILT_WORKLOAD_ANNOTATION = "kueue.x-k8s.io/prebuilt-workload-name"
MIN_PARALLELISM_ANNOTATION = "kueue.x-k8s.io/job-min-parallelism"
COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION = "kueue.x-k8s.io/job-completions-equal-parallelism"
STOPPING_ANNOTATION = "kueue.x-k8s.io/stopping"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
DEFAULT_LOCAL_QUEUE = "default"
DEFAULT_PRIORITY_CLASS = "default"
MUTATING_WEBHOOK = "mjob.kb.io"
VALIDATING_WEBHOOK = "vjob.kb.io"

_LABELS = "metadata.labels"
_ANNOTATIONS = "metadata.annotations"
_QUEUE_NAME_PATH = f"{_LABELS}[{QUEUE_NAME_LABEL}]"
_PRIORITY_CLASS_PATH = f"{_LABELS}[{PRIORITY_CLASS_LABEL}]"
_MAX_EXEC_TIME_PATH = f"{_LABELS}[{MAX_EXEC_TIME_LABEL}]"
_PREBUILT_PATH = f"{_LABELS}[{PREBUILT_WORKLOAD_LABEL}]"
_PREBUILT_ANNOTATION_PATH = f"{_ANNOTATIONS}[{PREBUILT_WORKLOAD_ANNOTATION}]"
_LABEL_VALUE_MAX_LENGTH = 63
_MIN_PARALLELISM_PATH = f"{_ANNOTATIONS}[{MIN_PARALLELISM_ANNOTATION}]"
_SYNC_COMPLETIONS_PATH = f"{_ANNOTATIONS}[{COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION}]"

Obj = dict[str, Any]


@dataclass(frozen=True)
class JobWebhookConfig:
    """The parts of Kueue's Configuration the Job webhook reads (defaults as Kueue's)."""

    manage_jobs_without_queue_name: bool = False
    kueue_namespace: str = "kueue-system"
    workload_priority_class_defaulting: bool = True
    """Feature gate ``WorkloadPriorityClassDefaulting`` (on by default)."""
    admission_gated_by: bool = True
    """Feature gate ``AdmissionGatedBy`` (on by default): the ``admission-gated-by`` annotation's rules."""
    workload_identifier_annotations: bool = True
    """Feature gate ``WorkloadIdentifierAnnotations`` (on by default): the prebuilt-workload annotation
    is read and validated before the label."""
    excluded_namespaces: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        # Both the webhook configurations' namespaceSelector and the default
        # managedJobsNamespaceSelector are `kubernetes.io/metadata.name NotIn [kube-system, <ns>]`.
        object.__setattr__(self, "excluded_namespaces", frozenset({"kube-system", self.kueue_namespace}))


DEFAULT_CONFIG = JobWebhookConfig()


# --- small accessors (the object passed built-in validation: labels/annotations are str maps) ------


def _meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    return mapping(obj.get("metadata"))


def _labels(obj: Mapping[str, Any]) -> dict[str, Any]:
    return mapping(_meta(obj).get("labels"))


def _annotations(obj: Mapping[str, Any]) -> dict[str, Any]:
    return mapping(_meta(obj).get("annotations"))


def _spec(obj: Mapping[str, Any]) -> dict[str, Any]:
    return mapping(obj.get("spec"))






def prebuilt_workload_name(obj: Mapping[str, Any], identifier_annotations: bool = True) -> str:
    """``PrebuiltWorkloadNameFor`` (jobframework/utils.go): with ``WorkloadIdentifierAnnotations`` the
    annotation first, then the label; without it the label, then an annotation too long for a label."""
    annotation = str(_annotations(obj).get(PREBUILT_WORKLOAD_ANNOTATION) or "")
    label = str(_labels(obj).get(PREBUILT_WORKLOAD_LABEL) or "")
    if identifier_annotations:
        return annotation or label
    return label or (annotation if len(annotation) > _LABEL_VALUE_MAX_LENGTH else "")


def _prebuilt_by_annotation(obj: Mapping[str, Any], config: JobWebhookConfig) -> bool:
    """Whether the prebuilt-workload annotation is the one read (``ValidatePrebuiltWorkloadName``,
    ``GetPrebuiltWorkloadPath``)."""
    annotation = str(_annotations(obj).get(PREBUILT_WORKLOAD_ANNOTATION) or "")
    return bool(annotation) and (config.workload_identifier_annotations or len(annotation) > _LABEL_VALUE_MAX_LENGTH)


def _validate_prebuilt_name(obj: Mapping[str, Any], config: JobWebhookConfig) -> list[FieldError]:
    """``ValidatePrebuiltWorkloadName``: the annotation or the label read as a CRD name."""
    if _prebuilt_by_annotation(obj, config):
        value = str(_annotations(obj)[PREBUILT_WORKLOAD_ANNOTATION])
        problems = is_dns1123_subdomain(value)
        return [invalid(_PREBUILT_ANNOTATION_PATH, value, ",".join(problems))] if problems else []
    return _label_as_crd_name(obj, PREBUILT_WORKLOAD_LABEL)








def _int32(value: int) -> int:
    """Go's ``int32(v)`` conversion (wraps around)."""
    return (value + 2**31) % 2**32 - 2**31


# --- cluster reads ------------------------------------------------------------------------------------


def _default_local_queue_exists(namespace: str, lookup: Lookup) -> bool:
    return lookup(k.GROUP, "localqueues", namespace, DEFAULT_LOCAL_QUEUE) is not None


def _namespace_managed(namespace: str, lookup: Lookup, config: JobWebhookConfig) -> bool:
    """The namespace matches ``managedJobsNamespaceSelector`` (a missing namespace does not)."""
    ns = lookup("", "namespaces", "", namespace)
    if ns is None:
        return False
    return str(_labels(ns).get(NAMESPACE_NAME_LABEL, "")) not in config.excluded_namespaces


def _deny(message: str) -> StatusError:
    """controller-runtime's ``Denied`` of a defaulter error, as kube-apiserver reports it."""
    return StatusError(
        403, "Forbidden", f'admission webhook "{MUTATING_WEBHOOK}" denied the request: {message}'
    )


def has_managed_ancestor(
    job: Mapping[str, Any], lookup: Lookup, config: JobWebhookConfig = DEFAULT_CONFIG
) -> bool:
    """``FindAncestorJobManagedByKueue`` != nil (:func:`~pykueue.api.jobs.find_managed_ancestor`):
    an ancestor Job Kueue manages (queue-name, unless ``manageJobsWithoutQueueName``). Raises the
    denial Kueue's webhook answers for a missing owner, a cycle or a chain longer than
    :data:`~pykueue.api.jobs.MANAGED_OWNERS_CHAIN_LIMIT`."""
    namespace = str(_meta(job).get("namespace") or "")
    try:
        found = find_managed_ancestor(
            job, lambda name: lookup("batch", "jobs", namespace, name), config.manage_jobs_without_queue_name
        )
    except AncestorSearchError as err:
        if err.reason != WORKLOAD_OWNER_NOT_FOUND:
            raise _deny(err.reason) from None
        # errors.Join(ErrWorkloadOwnerNotFound, NotFound): the webhook answers the NotFound status
        raise StatusError(
            404,
            "NotFound",
            f'admission webhook "{MUTATING_WEBHOOK}" denied the request: jobs.batch "{err.owner}" not found',
            {"name": err.owner, "group": "batch", "kind": "jobs"},
        ) from None
    return found is not None


# --- defaulting (mjob.kb.io) --------------------------------------------------------------------------


def default_job(job: Obj, lookup: Lookup, config: JobWebhookConfig = DEFAULT_CONFIG) -> None:
    """The mutating webhook on create (changes ``job`` in place)."""
    meta = job.setdefault("metadata", {})
    namespace = str(meta.get("namespace") or "")
    if namespace in config.excluded_namespaces:
        return
    owner_managed = owner_managed_by_kueue(job)
    if (
        not queue_name(job)
        and not owner_managed
        and _default_local_queue_exists(namespace, lookup)
        and _namespace_managed(namespace, lookup, config)
    ):
        meta.setdefault("labels", {})[QUEUE_NAME_LABEL] = DEFAULT_LOCAL_QUEUE
    if (
        config.workload_priority_class_defaulting
        and not workload_priority_class_name(job)
        and not owner_managed
        and lookup(k.GROUP, "workloadpriorityclasses", "", DEFAULT_PRIORITY_CLASS) is not None
    ):
        meta.setdefault("labels", {})[PRIORITY_CLASS_LABEL] = DEFAULT_PRIORITY_CLASS
    if _should_be_suspended(job, namespace, lookup, config) and not is_suspended(job):
        job.setdefault("spec", {})["suspend"] = True


def _should_be_suspended(job: Obj, namespace: str, lookup: Lookup, config: JobWebhookConfig) -> bool:
    """``WorkloadShouldBeSuspended`` (with the webhook's tolerance for objects being deleted)."""
    if _meta(job).get("deletionTimestamp"):
        return False
    if has_managed_ancestor(job, lookup, config):
        return False
    if queue_name(job):
        return True
    return config.manage_jobs_without_queue_name and _namespace_managed(namespace, lookup, config)


# --- validation (vjob.kb.io) --------------------------------------------------------------------------


def validate_job(
    job: Obj, old: Obj | None, lookup: Lookup, config: JobWebhookConfig = DEFAULT_CONFIG
) -> list[FieldError]:
    """The validating webhook on create (``old`` None) and update, in Kueue's order."""
    if str(_meta(job).get("namespace") or "") in config.excluded_namespaces:
        return []
    errs = validate_job_on_create(job, config)
    if old is None:
        return errs + _partial_admission_create(job) + _sync_completion_create(job)
    if _annotations(job).get(MIN_PARALLELISM_ANNOTATION, "") != _annotations(old).get(
        MIN_PARALLELISM_ANNOTATION, ""
    ):
        errs += _partial_admission_create(job)
    errs += _sync_completion_create(job)
    errs += validate_job_on_update(old, job, lookup, config)
    errs += _partial_admission_update(old, job)
    return errs


def validation_failure(
    job: Obj, old: Obj | None, lookup: Lookup, config: JobWebhookConfig = DEFAULT_CONFIG
) -> ValidationFailed | None:
    """:func:`validate_job` as the API server's denial (``admission webhook "vjob.kb.io" ...``)."""
    errs = validate_job(job, old, lookup, config)
    if not errs:
        return None
    return ValidationFailed("Job", str(_meta(job).get("name") or ""), errs, webhook=VALIDATING_WEBHOOK)


def _label_as_crd_name(obj: Mapping[str, Any], key: str) -> list[FieldError]:
    """``ValidateLabelAsCRDName``: a present label must be a DNS-1123 subdomain."""
    labels = _labels(obj)
    if key not in labels:
        return []
    value = str(labels[key])
    problems = is_dns1123_subdomain(value)
    return [invalid(f"{_LABELS}[{key}]", value, ",".join(problems))] if problems else []


def validate_job_on_create(job: Obj, config: JobWebhookConfig) -> list[FieldError]:
    """``ValidateJobOnCreate``: queue name, prebuilt workload name, maximum execution time, and the
    ``admission-gated-by`` format under its gate."""
    errs = _label_as_crd_name(job, QUEUE_NAME_LABEL)
    errs += _validate_prebuilt_name(job, config)  # batch/v1 Job supports prebuilt workloads
    labels = _labels(job)
    if MAX_EXEC_TIME_LABEL in labels:
        raw = str(labels[MAX_EXEC_TIME_LABEL])
        value, problem = strconv.parse_int(raw)
        if value is None:
            errs.append(invalid(_MAX_EXEC_TIME_PATH, raw, problem))
        elif value <= 0:
            errs.append(invalid(_MAX_EXEC_TIME_PATH, value, "should be greater than 0"))
    if config.admission_gated_by:
        errs += admission_gated_by_format_errors(str(_annotations(job).get(k.ADMISSION_GATED_BY_ANNOTATION) or ""))
    return errs


def _partial_admission_create(job: Obj) -> list[FieldError]:
    annotations = _annotations(job)
    if MIN_PARALLELISM_ANNOTATION not in annotations:
        return []
    raw = str(annotations[MIN_PARALLELISM_ANNOTATION])
    value, problem = strconv.parse_int(raw)
    if value is None:
        return [invalid(_MIN_PARALLELISM_PATH, raw, problem)]
    count = pods_count(job)
    if _int32(value) >= count or value <= 0:
        return [invalid(_MIN_PARALLELISM_PATH, value, f"should be between 0 and {count - 1}")]
    return []


def _sync_completion_create(job: Obj) -> list[FieldError]:
    annotations = _annotations(job)
    if COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION not in annotations:
        return []
    raw = str(annotations[COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION])
    enabled, problem = strconv.parse_bool(raw)
    errs = [invalid(_SYNC_COMPLETIONS_PATH, raw, problem)] if problem else []
    if enabled:
        spec = _spec(job)
        if spec.get("completionMode") in (None, "NonIndexed"):
            errs.append(invalid(_SYNC_COMPLETIONS_PATH, raw, "should not be enabled for NonIndexed jobs"))
        done = completions(job)
        if parallelism(job) != (1 if done is None else done):
            errs.append(
                invalid(
                    "spec.completions",
                    spec.get("completions"),
                    f"should be equal to parallelism when {COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION} "
                    "annotation is true",
                )
            )
    return errs


def _sync_completion_enabled(job: Obj) -> bool:
    raw = _annotations(job).get(COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION)
    return raw is not None and strconv.parse_bool(str(raw))[0] is True


def _immutable(path: str, new: Any, old: Any) -> list[FieldError]:
    """``ValidateImmutableField``."""
    return [] if new == old else [invalid(path, new, FIELD_IMMUTABLE_MSG)]


def validate_job_on_update(old: Obj, job: Obj, lookup: Lookup, config: JobWebhookConfig) -> list[FieldError]:
    """``ValidateJobOnUpdate``: queue name, prebuilt workload, max execution time, priority class,
    and the ``admission-gated-by`` rules under their gate."""
    new_suspended, old_suspended = is_suspended(job), is_suspended(old)
    errs: list[FieldError] = []
    if not new_suspended:
        errs += _immutable(_QUEUE_NAME_PATH, queue_name(job), queue_name(old))
    if not queue_name(job) and queue_name(old):
        namespace = str(_meta(old).get("namespace") or "")
        if _default_local_queue_exists(namespace, lookup):
            errs.append(
                invalid(_QUEUE_NAME_PATH, "", "queue-name must not be empty in namespace with default queue")
            )
    if new_suspended:
        errs += _validate_prebuilt_name(job, config)
    else:
        ids = config.workload_identifier_annotations
        path = _PREBUILT_ANNOTATION_PATH if _prebuilt_by_annotation(job, config) else _PREBUILT_PATH
        errs += _immutable(path, prebuilt_workload_name(job, ids), prebuilt_workload_name(old, ids))
    if not new_suspended or not old_suspended:
        errs += _immutable(
            _MAX_EXEC_TIME_PATH,
            str(_labels(job).get(MAX_EXEC_TIME_LABEL, "")),
            str(_labels(old).get(MAX_EXEC_TIME_LABEL, "")),
        )
    new_class, old_class = workload_priority_class_name(job), workload_priority_class_name(old)
    if not new_suspended and not old_class and new_class:
        errs.append(
            invalid(
                _PRIORITY_CLASS_PATH,
                new_class,
                "WorkloadPriorityClass cannot be added to a non-suspended workload",
            )
        )
    elif not new_class and old_class:
        errs.append(
            invalid(
                _PRIORITY_CLASS_PATH, new_class, "WorkloadPriorityClass cannot be removed from a workload"
            )
        )
    if config.admission_gated_by:
        gate_key = k.ADMISSION_GATED_BY_ANNOTATION
        new_gates = _annotations(job).get(gate_key)
        errs += admission_gated_by_update_errors(_annotations(old).get(gate_key), new_gates)
        errs += admission_gated_by_format_errors(str(new_gates or ""))
    return errs


def _partial_admission_update(old: Obj, job: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    if (
        MIN_PARALLELISM_ANNOTATION in _annotations(old)
        and _spec(old).get("suspend") is not True
        and parallelism(old) != parallelism(job)
    ):
        errs.append(
            forbidden("spec.parallelism", "cannot change when partial admission is enabled and the job is not suspended")
        )
    new_suspended = is_suspended(job)
    if (
        is_suspended(old) == new_suspended
        and not new_suspended
        and _sync_completion_enabled(old) != _sync_completion_enabled(job)
    ):
        errs.append(
            forbidden(_SYNC_COMPLETIONS_PATH, f"{FIELD_IMMUTABLE_MSG} while the job is not suspended")
        )
    return errs


def with_gates(config: JobWebhookConfig, gates: FeatureGates) -> JobWebhookConfig:
    """``config`` with the feature gates the Job webhook reads taken from ``gates`` (the server's:
    upstream's webhooks run in the controller manager and read its gates)."""
    defaulting = gates.enabled("WorkloadPriorityClassDefaulting")
    gated_by = gates.enabled("AdmissionGatedBy")
    identifiers = gates.enabled("WorkloadIdentifierAnnotations")
    if (config.workload_priority_class_defaulting, config.admission_gated_by, config.workload_identifier_annotations) == (
        defaulting,
        gated_by,
        identifiers,
    ):
        return config
    return dataclasses.replace(
        config,
        workload_priority_class_defaulting=defaulting,
        admission_gated_by=gated_by,
        workload_identifier_annotations=identifiers,
    )


def admission(config: JobWebhookConfig = DEFAULT_CONFIG) -> Admission:
    """The Job webhooks as the registry's admission hook."""

    def mutate(obj: Obj, lookup: Lookup, gates: FeatureGates) -> None:
        default_job(obj, lookup, with_gates(config, gates))

    def validate(obj: Obj, old: Obj | None, lookup: Lookup, gates: FeatureGates) -> ValidationFailed | None:
        return validation_failure(obj, old, lookup, with_gates(config, gates))

    return Admission("kueue batch/v1 Job webhook", mutate=mutate, validate=validate)
