"""``batch/v1`` Job: schema, defaults, create-time selector generation and essential validation.

Defaults (``SetDefaults_Job``): ``completions`` and ``parallelism`` 1 when both are unset,
``parallelism`` 1 when only ``completions`` is set, ``backoffLimit`` 6, ``completionMode: NonIndexed``, ``suspend: false``, ``podReplacementPolicy:
TerminatingOrFailed`` (``Failed`` with a ``podFailurePolicy``), plus pod-template defaults.
On create the registry generates the selector ``batch.kubernetes.io/controller-uid=<uid>`` and the
template labels ``batch.kubernetes.io/controller-uid``, ``batch.kubernetes.io/job-name``,
``controller-uid`` and ``job-name`` unless ``manualSelector: true``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pykueue.api.validation import (
    FIELD_IMMUTABLE_MSG,
    FieldError,
    Raw,
    invalid,
    not_supported,
    required,
)
from pykueue.apiserver.builtin import core, meta
from pykueue.apiserver.builtin.pods import (
    default_pod_template,
    mapping,
    validate_object_meta,
    validate_pod_template,
)
from pykueue.apiserver.builtin.schema import (
    arr,
    boolean,
    define,
    integer,
    obj,
    ref,
    str_list,
    string,
)

JOB = "io.k8s.api.batch.v1.Job"
JOB_SPEC = "io.k8s.api.batch.v1.JobSpec"
JOB_STATUS = "io.k8s.api.batch.v1.JobStatus"
JOB_CONDITION = "io.k8s.api.batch.v1.JobCondition"

CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
LEGACY_JOB_NAME_LABEL = "job-name"
DEFAULT_BACKOFF_LIMIT = 6
COMPLETION_MODES = ("Indexed", "NonIndexed")
JOB_RESTART_POLICIES = ("OnFailure", "Never")
POD_REPLACEMENT_POLICIES = ("Failed", "TerminatingOrFailed")
_NON_NEGATIVE_FIELDS = (
    "parallelism",
    "completions",
    "backoffLimit",
    "activeDeadlineSeconds",
    "ttlSecondsAfterFinished",
)
_SCHEDULING_DIRECTIVES = ("nodeSelector", "affinity", "tolerations", "schedulingGates")


def _define() -> None:
    define(
        JOB_CONDITION,
        obj(
            {
                "type": string("Type of job condition, Complete or Failed."),
                "status": string("Status of the condition, one of True, False, Unknown."),
                "lastProbeTime": ref(meta.TIME, "Last time the condition was checked."),
                "lastTransitionTime": ref(
                    meta.TIME, "Last time the condition transit from one status to another."
                ),
                "reason": string("(brief) reason for the condition's last transition."),
                "message": string("Human readable message indicating details about last transition."),
            },
            "JobCondition describes current state of a job.",
            required_fields=("type", "status"),
        ),
    )
    define(
        JOB_SPEC,
        obj(
            _spec_properties(),
            "JobSpec describes how the job execution will look like.",
            required_fields=("template",),
        ),
    )
    define(JOB_STATUS, obj(_status_properties(), "JobStatus represents the current state of a Job."))
    define(
        JOB,
        obj(
            {
                "apiVersion": meta.api_version_field(),
                "kind": meta.kind_field(),
                "metadata": meta.metadata_field(),
                "spec": ref(JOB_SPEC, "Specification of the desired behavior of a job."),
                "status": ref(JOB_STATUS, "Current status of a job."),
            },
            "Job represents the configuration of a single job.",
        ),
        gvk=("batch", "v1", "Job"),
    )


def _spec_properties() -> dict[str, Any]:
    return {
        "parallelism": integer(
            "Specifies the maximum desired number of pods the job should run at any given time."
        ),
        "completions": integer(
            "Specifies the desired number of successfully finished pods the job should be run with."
        ),
        "activeDeadlineSeconds": integer(
            "Duration in seconds relative to the startTime that the job may be continuously active.",
            fmt="int64",
        ),
        "podFailurePolicy": obj(
            {
                "rules": arr(
                    obj(
                        {
                            "action": string(
                                "Specifies the action taken on a pod failure when the requirements are satisfied.",
                                enum=("Count", "FailIndex", "FailJob", "Ignore"),
                            ),
                            "onExitCodes": obj(
                                {
                                    "containerName": string(
                                        "Restricts the check for exit codes to the container with the specified name."
                                    ),
                                    "operator": string(
                                        "Represents the relationship between the container exit code(s) and the specified values.",
                                        enum=("In", "NotIn"),
                                    ),
                                    "values": arr(integer(), "Specifies the set of values.", list_type="set"),
                                },
                                "Represents the requirement on the container exit codes.",
                                required_fields=("operator", "values"),
                            ),
                            "onPodConditions": arr(
                                obj(
                                    {
                                        "type": string("Specifies the required Pod condition type."),
                                        "status": string("Specifies the required Pod condition status."),
                                    }
                                ),
                                "Represents the requirement on the pod conditions.",
                                list_type="atomic",
                            ),
                        },
                        required_fields=("action",),
                    ),
                    "A list of pod failure policy rules. The rules are evaluated in order.",
                    list_type="atomic",
                )
            },
            "Specifies the policy of handling failed pods.",
            required_fields=("rules",),
        ),
        "successPolicy": obj(
            {
                "rules": arr(
                    obj(
                        {
                            "succeededIndexes": string(
                                "Specifies the set of indexes which need to be contained in the actual set of the succeeded indexes."
                            ),
                            "succeededCount": integer(
                                "Specifies the minimal required size of the actual set of the succeeded indexes."
                            ),
                        }
                    ),
                    "A list of pod success policy rules.",
                    list_type="atomic",
                )
            },
            "successPolicy specifies the policy when the Job can be declared as succeeded.",
            required_fields=("rules",),
        ),
        "backoffLimit": integer(
            "Specifies the number of retries before marking this job failed. Defaults to 6"
        ),
        "backoffLimitPerIndex": integer(
            "Specifies the limit for the number of retries within an index before marking this index as failed."
        ),
        "maxFailedIndexes": integer(
            "Specifies the maximal number of failed indexes before marking the Job as failed."
        ),
        "selector": ref(meta.LABEL_SELECTOR, "A label query over pods that should match the pod count."),
        "manualSelector": boolean("manualSelector controls generation of pod labels and pod selectors."),
        "template": ref(
            core.POD_TEMPLATE_SPEC, "Describes the pod that will be created when executing a job.", default={}
        ),
        "ttlSecondsAfterFinished": integer(
            "ttlSecondsAfterFinished limits the lifetime of a Job that has finished execution."
        ),
        "completionMode": string(
            "completionMode specifies how Pod completions are tracked: NonIndexed (default) or Indexed.",
            enum=COMPLETION_MODES,
        ),
        "suspend": boolean("suspend specifies whether the Job controller should create Pods or not."),
        "podReplacementPolicy": string(
            "podReplacementPolicy specifies when to create replacement Pods.", enum=POD_REPLACEMENT_POLICIES
        ),
        "managedBy": string("ManagedBy field indicates the controller that manages a Job."),
    }


def _status_properties() -> dict[str, Any]:
    return {
        "conditions": arr(
            ref(JOB_CONDITION),
            "The latest available observations of an object's current state.",
            list_type="atomic",
            patch_strategy="merge",
            patch_key="type",
        ),
        "startTime": ref(meta.TIME, "Represents time when the job controller started processing a job."),
        "completionTime": ref(meta.TIME, "Represents time when the job was completed."),
        "active": integer("The number of pending and running pods which are not terminating."),
        "succeeded": integer("The number of pods which reached phase Succeeded."),
        "failed": integer("The number of pods which reached phase Failed."),
        "terminating": integer("The number of pods which are terminating."),
        "ready": integer("The number of active pods which have a Ready condition and are not terminating."),
        "completedIndexes": string(
            "completedIndexes holds the completed indexes when .spec.completionMode = Indexed."
        ),
        "failedIndexes": string(
            "FailedIndexes holds the failed indexes when spec.backoffLimitPerIndex is set."
        ),
        "uncountedTerminatedPods": obj(
            {
                "succeeded": str_list("UIDs of succeeded pods.", list_type="set"),
                "failed": str_list("UIDs of failed pods.", list_type="set"),
            },
            "UncountedTerminatedPods holds the UIDs of Pods that have terminated but the job controller hasn't yet accounted for.",
        ),
    }


# --- defaults and create-time preparation -----------------------------------------------------------


def default_job(job: dict[str, Any]) -> None:
    """``SetDefaults_Job`` plus the pod-template defaults."""
    spec = job.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    if spec.get("parallelism") is None:
        spec["parallelism"] = 1
    spec.setdefault("backoffLimit", DEFAULT_BACKOFF_LIMIT)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    if spec.get("podReplacementPolicy") is None:
        spec["podReplacementPolicy"] = "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed"
    template = spec.setdefault("template", {})
    if isinstance(template, dict):
        default_pod_template(template)


def prepare_job_for_create(job: dict[str, Any]) -> None:
    """Clear status and generate the selector/labels (``generateSelector``) unless manual."""
    job.pop("status", None)
    spec = mapping(job.get("spec"))
    if spec.get("manualSelector") is True:
        return
    meta_ = mapping(job.get("metadata"))
    uid, name = str(meta_.get("uid") or ""), str(meta_.get("name") or "")
    template = spec.setdefault("template", {})
    tmeta = template.setdefault("metadata", {})
    labels = tmeta.setdefault("labels", {})
    for label in (LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL):
        labels.setdefault(label, name)
    for label in (LEGACY_CONTROLLER_UID_LABEL, CONTROLLER_UID_LABEL):
        labels.setdefault(label, uid)
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        selector = spec["selector"] = {}
    selector.setdefault("matchLabels", {}).setdefault(CONTROLLER_UID_LABEL, uid)


# --- validation ---------------------------------------------------------------------------------------


def validate_job(job: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """Essential ``ValidateJob`` / ``ValidateJobUpdate`` rules."""
    errs = validate_object_meta(job, namespaced=True)
    spec = mapping(job.get("spec"))
    for field in _NON_NEGATIVE_FIELDS:
        value = spec.get(field)
        if isinstance(value, int) and value < 0:
            errs.append(invalid(f"spec.{field}", value, "must be greater than or equal to 0"))
    mode = spec.get("completionMode")
    if mode is not None and mode not in COMPLETION_MODES:
        errs.append(not_supported("spec.completionMode", mode, COMPLETION_MODES))
    if mode == "Indexed" and spec.get("completions") is None:
        errs.append(required("spec.completions", "when completion mode is Indexed"))
    errs += _validate_selector(job, spec)
    template = mapping(spec.get("template"))
    errs += validate_pod_template(template, "spec.template")
    policy = mapping(template.get("spec")).get("restartPolicy")
    if policy not in JOB_RESTART_POLICIES:
        errs.append(not_supported("spec.template.spec.restartPolicy", policy, JOB_RESTART_POLICIES))
    if old is not None:
        errs += _validate_update(spec, mapping(old.get("spec")), mapping(old.get("status")))
    return errs


def _validate_selector(job: Mapping[str, Any], spec: Mapping[str, Any]) -> list[FieldError]:
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        return [required("spec.selector")]
    labels = mapping(mapping(mapping(spec.get("template")).get("metadata")).get("labels"))
    errs: list[FieldError] = []
    if spec.get("manualSelector") is not True:
        uid = mapping(job.get("metadata")).get("uid") or ""
        if mapping(selector.get("matchLabels")).get(CONTROLLER_UID_LABEL) != uid:
            errs.append(invalid("spec.selector", _go_value(selector), "`selector` not auto-generated"))
    if not _selector_matches(selector, labels):
        errs.append(
            invalid(
                "spec.template.metadata.labels",
                _go_value(labels),
                "`selector` does not match template `labels`",
            )
        )
    return errs


def _selector_matches(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        return False
    if any(labels.get(k) != v for k, v in mapping(selector.get("matchLabels")).items()):
        return False
    for req in selector.get("matchExpressions") or []:
        present, values = req.get("key") in labels, req.get("values") or []
        op = req.get("operator")
        ok = {
            "In": present and labels.get(req.get("key")) in values,
            "NotIn": not present or labels.get(req.get("key")) not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }.get(op, False)
        if not ok:
            return False
    return True


def _validate_update(
    spec: Mapping[str, Any], old_spec: Mapping[str, Any], old_status: Mapping[str, Any]
) -> list[FieldError]:
    errs: list[FieldError] = []
    for field in ("selector", "completionMode", "podFailurePolicy", "backoffLimitPerIndex"):
        if spec.get(field) != old_spec.get(field):
            errs.append(invalid(f"spec.{field}", _go_value(spec.get(field)), FIELD_IMMUTABLE_MSG))
    if spec.get("completions") != old_spec.get("completions") and not _elastic_indexed(spec, old_spec):
        errs.append(invalid("spec.completions", _go_value(spec.get("completions")), FIELD_IMMUTABLE_MSG))
    template, old_template = mapping(spec.get("template")), mapping(old_spec.get("template"))
    if template != old_template:
        mutable = old_spec.get("suspend") is True and old_status.get("startTime") is None
        if not mutable or _strip_mutable(template) != _strip_mutable(old_template):
            errs.append(invalid("spec.template", _go_value(template), FIELD_IMMUTABLE_MSG))
    return errs


def _elastic_indexed(spec: Mapping[str, Any], old_spec: Mapping[str, Any]) -> bool:
    """Elastic Indexed Jobs may scale completions together with parallelism."""
    return (
        spec.get("completionMode") == "Indexed"
        and old_spec.get("completionMode") == "Indexed"
        and spec.get("completions") == spec.get("parallelism")
        and old_spec.get("completions") == old_spec.get("parallelism")
    )


def _strip_mutable(template: Mapping[str, Any]) -> dict[str, Any]:
    """The template without what may change while a never-started Job is suspended."""
    stripped = json.loads(json.dumps(template))
    tmeta = stripped.get("metadata") or {}
    for field in ("labels", "annotations"):
        tmeta.pop(field, None)
    pod_spec = stripped.get("spec") or {}
    for field in _SCHEDULING_DIRECTIVES:
        pod_spec.pop(field, None)
    return dict(stripped)


def _go_value(value: Any) -> Raw:
    return Raw(json.dumps(value, separators=(",", ":"), sort_keys=True))


_define()
