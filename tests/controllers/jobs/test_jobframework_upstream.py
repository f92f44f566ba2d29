"""Upstream's ``pkg/controller/jobframework`` tables that concern the batch/v1 Job integration:
``workload_names_test.go`` (``TestGenerateWorkloadNameWithExtra``,
``TestGenerateWorkloadNameWithGeneration``) on :func:`batch_job.workload_name`, and
``validation_test.go`` (``TestValidateJobOnUpdate``, ``TestValidateJobOnCreate``) on the Job
webhook's :func:`job_webhook.validate_job_on_update` / ``validate_job_on_create``, compared as
upstream compares them (error type and field; bad value and detail ignored).

Cases already ported in test_batch_job.py (``test_workload_names``: "RegularInput",
"InputThatResultsInTrimmedPrefix", ...) are not repeated.

Not ported:
- TestGetWorkloadNameForVariant (all cases) — flavor variants of concurrent admission
  (pkg/controller/concurrentadmission) are not implemented.
- TestValidateImmutablePodSpec (all cases) — ``ValidateImmutablePodGroupPodSpec`` serves pod
  groups (the Pod integration), which pykueue does not implement.
- TestValidateJobOnUpdate "elastic job enabled annotation cannot be removed/added on update" and
  TestValidateJobOnCreate (its three cases are all "elastic annotation ...") — elastic jobs /
  workload slices.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pykueue.api.validation import INVALID
from pykueue.apiserver.builtin import job_webhook as jw
from pykueue.controllers.jobs import batch_job as bj

Obj = dict[str, Any]

LONG_OWNER = (
    "marketing-campaign-autumn-2024-region-north-america-department-digital-strategy-sub-department-social-"
    "media-engagement-tracker-and-analytics-dashboard-v2-final-revision-by-engineering-team-lead-senior-"
    "architect-validation-checked-approved-by-legal-and-ops-dept"
)


# --- TestGenerateWorkloadNameWithExtra ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("owner", "uid", "extra", "short", "want_prefix", "want"),
    [
        pytest.param("my-job", "uid-123", "", False, "job-my-job-", None, id="empty extra"),
        pytest.param("my-job", "uid-123", "1", False, "job-my-job-", None, id="generation as extra"),
        pytest.param("my-job", "uid-123", "100", False, "job-my-job-", None, id="resourceVersion as extra"),
        pytest.param("my-job", "uid-123", "custom-part", False, "job-my-job-", None, id="custom extra string"),
        pytest.param("name", "uid", "", False, None, "job-name-ef3a1", id="short name, no extra (ShortWorkloadNames=false)"),
        pytest.param("name", "uid", "1", False, None, "job-name-2514c", id="short name, with extra (ShortWorkloadNames=false)"),
        pytest.param(
            LONG_OWNER, "uid", "", False, None,
            "job-marketing-campaign-autumn-2024-region-north-america-department-digital-strategy-sub-department-"
            "social-media-engagement-tracker-and-analytics-dashboard-v2-final-revision-by-engineering-team-lead-"
            "senior-architect-validation-checked-approved-by-l-218b8",
            id="long owner name truncated (ShortWorkloadNames=false)",
        ),
        pytest.param(
            LONG_OWNER, "uid", "", True, None, "job-marketing-campaign-autumn-2024-region-north-america-d-218b8",
            id="long owner name truncated (ShortWorkloadNames=true)",
        ),
    ],
)  # fmt: skip
def test_generate_workload_name_with_extra(
    owner: str, uid: str, extra: str, short: bool, want_prefix: str | None, want: str | None
) -> None:
    got = bj.workload_name(owner, uid, extra=extra, short_names=short)
    if want is not None:
        assert got == want
    if want_prefix is not None:
        assert got.startswith(want_prefix)
    prefix = f"job-{owner}"[: (63 if short else 253) - 6]  # GenerateWorkloadNamePrefix
    assert len(got) == len(prefix) + 1 + 5


@pytest.mark.parametrize(
    ("extra1", "extra2", "want_equal"),
    [
        pytest.param("1", "2", False, id="different extra values produce different names"),
        pytest.param("100", "200", False, id="different resourceVersion values produce different names"),
        pytest.param("100", "100", True, id="same extra produces same name"),
    ],
)
def test_generate_workload_name_with_extra_equality(extra1: str, extra2: str, want_equal: bool) -> None:
    name1 = bj.workload_name("my-job", "uid-123", extra=extra1)
    name2 = bj.workload_name("my-job", "uid-123", extra=extra2)
    assert (name1 == name2) is want_equal


def test_same_prefix_as_get_workload_name_for_owner_with_gvk() -> None:
    elastic = bj.workload_name("my-job", "uid-123", extra="1")
    static = bj.workload_name("my-job", "uid-123")
    assert elastic.startswith("job-my-job-") and static.startswith("job-my-job-")
    assert elastic != static


# --- TestGenerateWorkloadNameWithGeneration ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("generation1", "generation2", "want_equal"),
    [
        pytest.param(1, 2, False, id="different generations produce different names"),
        pytest.param(1, 1, True, id="same generation produces same name"),
    ],
)
def test_generate_workload_name_with_generation(generation1: int, generation2: int, want_equal: bool) -> None:
    name1 = bj.workload_name("my-job", "uid-123", generation=generation1)
    name2 = bj.workload_name("my-job", "uid-123", generation=generation2)
    assert (name1 == name2) is want_equal


def test_consistent_with_generate_workload_name_with_extra_using_string_generation() -> None:
    assert bj.workload_name("my-job", "uid-123", generation=42) == bj.workload_name(
        "my-job", "uid-123", extra="42"
    )


# --- TestValidateJobOnUpdate ------------------------------------------------------------------------------------

QUEUE = "metadata.labels[kueue.x-k8s.io/queue-name]"
PREBUILT_LABEL = "metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]"
PREBUILT_ANNOTATION = "metadata.annotations[kueue.x-k8s.io/prebuilt-workload-name]"
LONG_PREBUILT = "workload-name-that-is-very-long-and-exceeds-the-63-character-label-limit-value"


def job(
    *,
    suspend: bool = True,
    queue: str | None = None,
    prebuilt_label: str | None = None,
    prebuilt_annotation: str | None = None,
) -> Obj:
    """Upstream's ``MakeJob("test-job", "ns1")`` with the given settings."""
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    if queue is not None:
        labels["kueue.x-k8s.io/queue-name"] = queue
    if prebuilt_label is not None:
        labels["kueue.x-k8s.io/prebuilt-workload-name"] = prebuilt_label
    if prebuilt_annotation is not None:
        annotations["kueue.x-k8s.io/prebuilt-workload-name"] = prebuilt_annotation
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "test-job", "namespace": "ns1", "labels": labels, "annotations": annotations},
        "spec": {
            "parallelism": 1,
            "suspend": suspend,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "pause"}]}},
        },
    }


_NO_IDS = {"workload_identifier_annotations": False}
_IDS = {"workload_identifier_annotations": True}

UPDATE_CASES: list[Any] = [
    pytest.param(
        _NO_IDS, job(queue="lq1", suspend=False), job(queue="lq2", suspend=False), False, [(INVALID, QUEUE)],
        id="local queue cannot be changed if job is not suspended",
    ),
    pytest.param(_NO_IDS, job(queue="lq1"), job(queue="lq2"), True, [], id="local queue can be changed"),
    pytest.param(_NO_IDS, job(queue="default"), job(queue="lq2"), True, [], id="local queue can be changed from default"),
    pytest.param(
        _NO_IDS, job(queue="lq1"), job(queue=""), True, [(INVALID, QUEUE)],
        id="local queue cannot be removed if default queue exists and feature is enabled",
    ),
    pytest.param(
        _NO_IDS, job(queue="lq1"), job(queue=""), False, [],
        id="local queue can be removed if default queue does not exists and feature is enabled",
    ),
    pytest.param(
        _NO_IDS, job(prebuilt_label="workload-name"), job(prebuilt_label="workload-name"), False, [],
        id="prebuilt workload label valid on update",
    ),
    pytest.param(
        _IDS, job(prebuilt_annotation="workload-name"), job(prebuilt_annotation="workload-name"), False, [],
        id="prebuilt workload annotation valid on update, WorkloadIdentifierAnnotations enabled",
    ),
    pytest.param(
        _IDS, job(prebuilt_label="workload-name"), job(prebuilt_label="workload-name"), False, [],
        id="prebuilt workload label fallback valid on update, WorkloadIdentifierAnnotations enabled",
    ),
    pytest.param(
        _IDS,
        job(prebuilt_label="workload-name", prebuilt_annotation="workload-name"),
        job(prebuilt_label="workload-name", prebuilt_annotation="workload-name"),
        False, [],
        id="prebuilt workload same label and annotation on update, WorkloadIdentifierAnnotations enabled",
    ),
    pytest.param(
        _IDS, job(prebuilt_label="workload name"), job(prebuilt_label="workload name"), False, [(INVALID, PREBUILT_LABEL)],
        id="prebuilt workload invalid label format with fallback on update, WorkloadIdentifierAnnotations enabled",
    ),
    pytest.param(
        _IDS, job(prebuilt_annotation="workload name"), job(prebuilt_annotation="workload name"), False,
        [(INVALID, PREBUILT_ANNOTATION)],
        id="prebuilt workload invalid annotation format, WorkloadIdentifierAnnotations enabled",
    ),
    pytest.param(
        _IDS, job(prebuilt_annotation="workload-name"), job(prebuilt_annotation="workload-name-new"), False, [],
        id="prebuilt workload annotation update, WorkloadIdentifierAnnotations enabled",
    ),
    pytest.param(
        _NO_IDS, job(prebuilt_annotation=LONG_PREBUILT), job(prebuilt_annotation=LONG_PREBUILT), False, [],
        id="prebuilt workload annotation valid for long names > 63 chars when WorkloadIdentifierAnnotations disabled",
    ),
    pytest.param(
        _IDS, job(prebuilt_annotation="workload-name", suspend=False),
        job(prebuilt_annotation="workload-name-new", suspend=False), False, [(INVALID, PREBUILT_ANNOTATION)],
        id="prebuilt workload annotation update not suspended, WorkloadIdentifierAnnotations enabled",
    ),
    pytest.param(
        _IDS, job(prebuilt_label="workload-name"), job(prebuilt_annotation="workload-name-new"), False, [],
        id="prebuilt workload label to annotation update, WorkloadIdentifierAnnotations enabled",
    ),
    pytest.param(
        _IDS, job(prebuilt_annotation="workload-name"), job(prebuilt_label="workload-name-new"), False, [],
        id="prebuilt workload annotation to label update, WorkloadIdentifierAnnotations enabled",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("gates", "old", "new", "ns_has_default_queue", "want"), UPDATE_CASES)
def test_validate_job_on_update(
    gates: dict[str, bool], old: Obj, new: Obj, ns_has_default_queue: bool, want: list[tuple[str, str]]
) -> None:
    def lookup(group: str, resource: str, namespace: str, name: str) -> Obj | None:
        found = ns_has_default_queue and (resource, namespace, name) == ("localqueues", "ns1", "default")
        return {"metadata": {"name": name, "namespace": namespace}} if found else None

    config = jw.JobWebhookConfig(**gates)
    errs = jw.validate_job_on_update(copy.deepcopy(old), copy.deepcopy(new), lookup, config)
    assert [(e.type, e.field) for e in errs] == want
