"""Upstream's Job webhook tables (``pkg/controller/jobs/job/job_webhook_test.go``): ``TestValidateCreate``
and ``TestValidateUpdate``, ported under upstream's case names on pykueue's webhook
(:func:`pykueue.apiserver.builtin.job_webhook.validate_job`, the function the API server runs as
``vjob.kb.io``), comparing the whole field-error list as upstream compares ``field.ErrorList``.
A few cases also go through the embedded API server to show the denial a client sees.

Upstream's unit tests call ``validateCreate``/``validateUpdate`` directly, so an invalid label value
reaches the webhook; through an API server the built-in label validation refuses it first (kube-
apiserver validates the object before the validating webhooks run).

Not ported:
- TestValidateCreate "invalid topology request - ..." / "valid topology request ..." / "valid slice
  topology request" / "invalid slice topology request - ..." (13 cases) and TestValidateUpdate
  "set valid TAS request", "attempt to set invalid TAS request", "valid slice topology request",
  "attempt to set invalid slice topology request" — the Job webhook's TAS pod-template annotation
  checks (``validateTopologyRequest``) are not emulated (documented in job_webhook.py).
- TestValidateCreate "elastic job with ... topology ..." (3), "partial admission and elastic job
  cannot be used together" — elastic jobs / workload slices.
- TestDefault — the defaulting cases are MultiKueue ``spec.managedBy`` defaulting and the
  elastic-job scheduling gate, except the two suspend cases, which
  tests/apiserver/test_job_webhook.py covers (``test_job_with_queue_name_is_suspended_and_others_are_not``,
  ``test_manage_jobs_without_queue_name_suspends_in_managed_namespaces``).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from test_job_webhook import DENIED, Server, denial

from pykueue.api.validation import FIELD_IMMUTABLE_MSG, FieldError, forbidden, invalid, too_long
from pykueue.apiserver.builtin import job_webhook as jw

Obj = dict[str, Any]

QUEUE = "metadata.labels[kueue.x-k8s.io/queue-name]"
MIN_PODS = "metadata.annotations[kueue.x-k8s.io/job-min-parallelism]"
SYNC = "metadata.annotations[kueue.x-k8s.io/job-completions-equal-parallelism]"
PREBUILT_LABEL = "metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]"
PREBUILT_ANNOTATION = "metadata.annotations[kueue.x-k8s.io/prebuilt-workload-name]"
MAX_EXEC = "metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]"
WPC = "metadata.labels[kueue.x-k8s.io/priority-class]"
GATED_BY = "metadata.annotations[kueue.x-k8s.io/admission-gated-by]"
GATED_BY_KEY = "kueue.x-k8s.io/admission-gated-by"

# test/util/constants.go
INVALID_RFC1123 = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
INVALID_PATH = r"Invalid path (regex used for validation is '[A-Za-z0-9/\-._~%!$&'()*+,;=:]+')"


class J:
    """Upstream's ``testingjobs.MakeJob("job", "default")``: suspended, parallelism 1."""

    def __init__(self) -> None:
        self.obj: Obj = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "job", "namespace": "default", "annotations": {}, "labels": {}},
            "spec": {
                "parallelism": 1,
                "suspend": True,
                "template": {
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "pause"}]}
                },
            },
        }

    def queue(self, name: str) -> J:
        return self.label("kueue.x-k8s.io/queue-name", name)

    def label(self, key: str, value: str) -> J:
        self.obj["metadata"]["labels"][key] = value
        return self

    def annotate(self, key: str, value: str) -> J:
        self.obj["metadata"]["annotations"][key] = value
        return self

    def spec(self, **fields: Any) -> J:
        self.obj["spec"].update(fields)
        return self

    def suspend(self, value: bool) -> J:
        return self.spec(suspend=value)

    def indexed(self, value: bool) -> J:
        return self.spec(completionMode="Indexed" if value else "NonIndexed")

    def wpc(self, name: str) -> J:
        return self.label("kueue.x-k8s.io/priority-class", name)

    def min_parallelism(self, value: str) -> J:
        return self.annotate("kueue.x-k8s.io/job-min-parallelism", value)

    def sync(self, value: str) -> J:
        return self.annotate("kueue.x-k8s.io/job-completions-equal-parallelism", value)

    def gated_by(self, value: str) -> J:
        return self.annotate(GATED_BY_KEY, value)

    def prebuilt_label(self, name: str) -> J:
        return self.label("kueue.x-k8s.io/prebuilt-workload-name", name)

    def prebuilt_annotation(self, name: str) -> J:
        return self.annotate("kueue.x-k8s.io/prebuilt-workload-name", name)

    def __call__(self) -> Obj:
        return copy.deepcopy(self.obj)


def no_objects(group: str, resource: str, namespace: str, name: str) -> Obj | None:
    """The webhook's cluster reads: no LocalQueue named ``default`` anywhere."""
    del group, resource, namespace, name
    return None


def _errors(errs: list[FieldError]) -> list[str]:
    return [str(e) for e in errs]


# --- TestValidateCreate -----------------------------------------------------------------------------------

CREATE_CASES: list[Any] = [
    pytest.param(J().queue("queue")(), [], id="simple"),
    pytest.param(
        J().queue("queue name")(), [invalid(QUEUE, "queue name", INVALID_RFC1123)], id="invalid queue-name label"
    ),
    pytest.param(
        J().spec(parallelism=4, completions=6).min_parallelism("NaN")(),
        [invalid(MIN_PODS, "NaN", 'strconv.Atoi: parsing "NaN": invalid syntax')],
        id="invalid partial admission annotation (format)",
    ),
    pytest.param(
        J().spec(parallelism=4, completions=6).min_parallelism("5")(),
        [invalid(MIN_PODS, 5, "should be between 0 and 3")],
        id="invalid partial admission annotation (badValue)",
    ),
    pytest.param(
        J().spec(parallelism=4, completions=6).min_parallelism("3")(), [], id="valid partial admission annotation"
    ),
    pytest.param(
        J().spec(parallelism=4, completions=6).sync("-").indexed(True)(),
        [invalid(SYNC, "-", 'strconv.ParseBool: parsing "-": invalid syntax')],
        id="invalid sync completions annotation (format)",
    ),
    pytest.param(
        J().spec(parallelism=4, completions=6).sync("true").indexed(True)(),
        [
            invalid(
                "spec.completions",
                6,
                "should be equal to parallelism when kueue.x-k8s.io/job-completions-equal-parallelism annotation is true",
            )
        ],
        id="valid sync completions annotation, wrong completions count",
    ),
    pytest.param(
        J().spec(parallelism=4, completions=4).sync("true")(),
        [invalid(SYNC, "true", "should not be enabled for NonIndexed jobs")],
        id="valid sync completions annotation, wrong job completions type (default)",
    ),
    pytest.param(
        J().spec(parallelism=4, completions=4).sync("true").indexed(False)(),
        [invalid(SYNC, "true", "should not be enabled for NonIndexed jobs")],
        id="valid sync completions annotation, wrong job completions type",
    ),
    pytest.param(
        J().spec(parallelism=4, completions=4).sync("true").indexed(True)(), [], id="valid sync completions annotation"
    ),
    pytest.param(
        J().spec(parallelism=4, completions=4).prebuilt_label("workload name").indexed(True)(),
        [invalid(PREBUILT_LABEL, "workload name", INVALID_RFC1123)],
        id="invalid prebuilt workload",
    ),
    pytest.param(
        J().spec(parallelism=4, completions=4).prebuilt_label("workload-name").indexed(True)(),
        [],
        id="valid prebuilt workload",
    ),
    pytest.param(
        J().spec(parallelism=4, completions=4).prebuilt_annotation("workload name").indexed(True)(),
        [invalid(PREBUILT_ANNOTATION, "workload name", INVALID_RFC1123)],
        id="invalid prebuilt workload annotation, WorkloadIdentifierAnnotations enabled",
    ),
    pytest.param(
        J().spec(parallelism=4, completions=4).prebuilt_annotation("workload-name").indexed(True)(),
        [],
        id="valid prebuilt workload annotation, WorkloadIdentifierAnnotations enabled",
    ),
    pytest.param(
        J().prebuilt_label("workload-label").prebuilt_annotation("workload-annotation")(),
        [],
        id="different prebuilt workload label and annotation, label ignored, WorkloadIdentifierAnnotations enabled",
    ),
    pytest.param(
        J().spec(parallelism=4, completions=4).label("kueue.x-k8s.io/max-exec-time-seconds", "NaN").indexed(True)(),
        [invalid(MAX_EXEC, "NaN", 'strconv.Atoi: parsing "NaN": invalid syntax')],
        id="invalid maximum execution time",
    ),
    pytest.param(
        J().spec(parallelism=4, completions=4).label("kueue.x-k8s.io/max-exec-time-seconds", "0").indexed(True)(),
        [invalid(MAX_EXEC, 0, "should be greater than 0")],
        id="zero maximum execution time",
    ),
    pytest.param(
        J().spec(parallelism=4, completions=4).label("kueue.x-k8s.io/max-exec-time-seconds", "-10").indexed(True)(),
        [invalid(MAX_EXEC, -10, "should be greater than 0")],
        id="negative maximum execution time",
    ),
    pytest.param(
        J().spec(parallelism=4, completions=4).label("kueue.x-k8s.io/max-exec-time-seconds", "10").indexed(True)(),
        [],
        id="valid maximum execution time",
    ),
    pytest.param(J().queue("queue").gated_by("example.com/controller")(), [], id="valid AdmissionGatedBy annotation with single gate"),
    pytest.param(J().queue("queue").gated_by("example.com/gate ")(), [], id="AdmissionGatedBy annotation - trailing space"),
    pytest.param(
        J().queue("queue").gated_by("example.com/gate ,example.com/gate2")(), [], id="AdmissionGatedBy annotation - space before comma"
    ),
    pytest.param(
        J().queue("queue").gated_by("example.com/gate, example.com/gate2")(), [], id="AdmissionGatedBy annotation - space after comma"
    ),
    pytest.param(J().queue("queue").gated_by(" example.com/gate")(), [], id="AdmissionGatedBy annotation - leading space"),
    pytest.param(
        J().queue("queue").gated_by("example.com/a,not.example.com/b")(), [], id="valid AdmissionGatedBy annotation with multiple gates"
    ),
    pytest.param(
        J().queue("queue").gated_by("this is an invalid value")(),
        [invalid(GATED_BY, "this is an invalid value", 'must be a domain-prefixed path (such as "acme.io/foo")')],
        id="invalid AdmissionGatedBy annotation - not in subdomain/path format",
    ),
    pytest.param(
        J().queue("queue").gated_by("duplicates.are/invalid,duplicates.are/invalid")(),
        [
            invalid(
                GATED_BY,
                "duplicates.are/invalid,duplicates.are/invalid",
                "duplicate gate name: duplicates.are/invalid",
            )
        ],
        id="invalid AdmissionGatedBy annotation - duplicate gates",
    ),
    pytest.param(
        J().queue("queue").gated_by("cannot.be.too.long/" + "but-this-is-too-long" * 20)(),
        [too_long(GATED_BY, 63)],
        id="invalid AdmissionGatedBy annotation - gate name too long",
    ),
    pytest.param(
        J().queue("queue").gated_by("example.com/gate name")(),
        [invalid(GATED_BY, "gate name", INVALID_PATH)],
        id="invalid AdmissionGatedBy annotation - space in path component",
    ),
    pytest.param(
        J().queue("queue").gated_by("example .com/gate")(),
        [invalid(GATED_BY, "example .com", INVALID_RFC1123)],
        id="invalid AdmissionGatedBy annotation - space in domain component",
    ),
    pytest.param(
        J().queue("queue").gated_by("valid.com/gate,invalid gate.com/controller")(),
        [invalid(GATED_BY, "invalid gate.com", INVALID_RFC1123)],
        id="invalid AdmissionGatedBy annotation - multiple gates with one containing space",
    ),
    pytest.param(
        J().queue("queue").gated_by("")(), [], id="AdmissionGatedBy annotation with feature gate enabled - empty string"
    ),
]  # fmt: skip


@pytest.mark.parametrize(("job", "want"), CREATE_CASES)
def test_validate_create(job: Obj, want: list[FieldError]) -> None:
    assert _errors(jw.validate_job(job, None, no_objects)) == _errors(want)


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("example.com/gate", id="AdmissionGatedBy annotation with feature gate disabled - valid value"),
        pytest.param("this is an invalid value", id="AdmissionGatedBy annotation with feature gate disabled - invalid value"),
    ],
)  # fmt: skip
def test_validate_create_admission_gated_by_gate_disabled(value: str) -> None:
    config = jw.JobWebhookConfig(admission_gated_by=False)
    assert jw.validate_job(J().queue("queue").gated_by(value)(), None, no_objects, config) == []


def test_invalid_admission_gated_by_is_denied_by_the_api_server() -> None:
    """``invalid AdmissionGatedBy annotation - duplicate gates`` as a client sees it: the Job
    webhook's denial is 403 Forbidden (controller-runtime's ``admission.Denied`` through
    kube-apiserver's ``ToStatusErr``)."""
    server = Server()
    try:
        body = J().queue("queue").gated_by("a.io/x,a.io/x")()
        err = denial(server, server.create_job, body)
        assert (err.code, err.reason) == (403, "Forbidden")
        assert (
            err.message == f'{DENIED}{GATED_BY}: Invalid value: "a.io/x,a.io/x": duplicate gate name: a.io/x'
        )
    finally:
        server.store.close()


# --- TestValidateUpdate -----------------------------------------------------------------------------------------

UPDATE_CASES: list[Any] = [
    pytest.param(J().queue("queue")(), J().queue("queue").suspend(False)(), [], id="normal update"),
    pytest.param(
        J()(), J().queue("queue").suspend(False)(), [invalid(QUEUE, "queue", FIELD_IMMUTABLE_MSG)],
        id="add queue name with suspend is false",
    ),
    pytest.param(J()(), J().queue("queue").suspend(True)(), [], id="add queue name with suspend is true"),
    pytest.param(
        J().queue("queue")(), J().queue("queue2").suspend(False)(), [invalid(QUEUE, "queue2", FIELD_IMMUTABLE_MSG)],
        id="change queue name with suspend is false",
    ),
    pytest.param(J()(), J().queue("queue").suspend(True)(), [], id="change queue name with suspend is true"),
    pytest.param(
        J()(), J().queue("queue name").suspend(True)(), [invalid(QUEUE, "queue name", INVALID_RFC1123)],
        id="change queue name with suspend is true, but invalid value",
    ),
    pytest.param(
        J().suspend(False).spec(parallelism=4, completions=6).min_parallelism("3")(),
        J().suspend(False).spec(parallelism=5, completions=6).min_parallelism("3")(),
        [forbidden("spec.parallelism", "cannot change when partial admission is enabled and the job is not suspended")],
        id="immutable parallelism while unsuspended with partial admission enabled",
    ),
    pytest.param(
        J().spec(parallelism=4, completions=6).min_parallelism("3").annotate("kueue.x-k8s.io/stopping", "true")(),
        J().spec(parallelism=5, completions=6).min_parallelism("3")(),
        [],
        id="mutable parallelism while suspended with partial admission enabled",
    ),
    pytest.param(
        J().suspend(False).spec(parallelism=4, completions=6).sync("true")(),
        J().suspend(False).spec(parallelism=5, completions=6).sync("false")(),
        [forbidden(SYNC, f"{FIELD_IMMUTABLE_MSG} while the job is not suspended")],
        id="immutable sync completion annotation while unsuspended",
    ),
    pytest.param(
        J().suspend(True).spec(parallelism=4, completions=6).sync("true")(),
        J().suspend(False).spec(parallelism=5, completions=6).sync("false")(),
        [],
        id="mutable sync completion annotation while suspended",
    ),
    pytest.param(
        J().suspend(False)(), J().suspend(False).wpc("test")(),
        [invalid(WPC, "test", "WorkloadPriorityClass cannot be added to a non-suspended workload")],
        id="set priority-class when job not suspend",
    ),
    pytest.param(
        J().suspend(False).wpc("test")(), J().suspend(False).wpc("new-test")(), [],
        id="update priority-class when job not suspend",
    ),
    pytest.param(
        J().suspend(False).wpc("test")(), J().suspend(False)(),
        [invalid(WPC, "", "WorkloadPriorityClass cannot be removed from a workload")],
        id="delete priority-class when job not suspend",
    ),
    pytest.param(J().suspend(True)(), J().suspend(True).wpc("test")(), [], id="set priority-class when job suspend"),
    pytest.param(
        J().suspend(True).wpc("test")(), J().suspend(True).wpc("new-test")(), [], id="update priority-class when job suspend"
    ),
    pytest.param(
        J().suspend(True).wpc("test")(), J().suspend(True)(),
        [invalid(WPC, "", "WorkloadPriorityClass cannot be removed from a workload")],
        id="delete priority-class when job suspend",
    ),
    pytest.param(
        J().suspend(True).prebuilt_label("old-workload")(), J().suspend(False).prebuilt_label("new-workload")(),
        [invalid(PREBUILT_LABEL, "new-workload", FIELD_IMMUTABLE_MSG)],
        id="immutable prebuilt workload ",
    ),
    pytest.param(
        J().suspend(True).prebuilt_annotation("old-workload")(), J().suspend(False).prebuilt_annotation("new-workload")(),
        [invalid(PREBUILT_ANNOTATION, "new-workload", FIELD_IMMUTABLE_MSG)],
        id="immutable prebuilt workload annotation, WorkloadIdentifierAnnotations enabled",
    ),
    pytest.param(
        J().suspend(True).prebuilt_label("workload-name")(), J().suspend(False).prebuilt_annotation("workload-name")(), [],
        id="migrate from label to annotation, WorkloadIdentifierAnnotations enabled",
    ),
    pytest.param(
        J().suspend(False).queue("old-queue")(), J().suspend(False).queue("new-queue")(),
        [invalid(QUEUE, "new-queue", FIELD_IMMUTABLE_MSG)],
        id="immutable queue name not suspend",
    ),
    pytest.param(
        J().suspend(True).queue("old-queue")(), J().suspend(True).queue("new-queue")(), [],
        id="queue name can changes when it is  suspend",
    ),
    pytest.param(
        J().spec(parallelism=4, completions=6).min_parallelism("3")(),
        J().spec(parallelism=4, completions=6).min_parallelism("2")(),
        [],
        id="can update the kueue.x-k8s.io/job-min-parallelism  annotation",
    ),
    pytest.param(
        J().spec(parallelism=4, completions=6).min_parallelism("3")(),
        J().spec(parallelism=4, completions=6).min_parallelism("NaN")(),
        [invalid(MIN_PODS, "NaN", 'strconv.Atoi: parsing "NaN": invalid syntax')],
        id="validates kueue.x-k8s.io/job-min-parallelism annotation value (bad format)",
    ),
    pytest.param(
        J().suspend(False).label("kueue.x-k8s.io/max-exec-time-seconds", "10")(),
        J().suspend(False).label("kueue.x-k8s.io/max-exec-time-seconds", "20")(),
        [invalid(MAX_EXEC, "20", FIELD_IMMUTABLE_MSG)],
        id="immutable max exec time while unsuspended",
    ),
    pytest.param(
        J().suspend(True).label("kueue.x-k8s.io/max-exec-time-seconds", "10")(),
        J().suspend(False).label("kueue.x-k8s.io/max-exec-time-seconds", "20")(),
        [invalid(MAX_EXEC, "20", FIELD_IMMUTABLE_MSG)],
        id="immutable max exec time while transitioning to unsuspended",
    ),
    pytest.param(
        J().suspend(True).label("kueue.x-k8s.io/max-exec-time-seconds", "10")(),
        J().suspend(True).label("kueue.x-k8s.io/max-exec-time-seconds", "20")(),
        [],
        id="mutable max exec time while suspended",
    ),
    pytest.param(
        J().queue("queue")(), J().queue("queue").gated_by("example.com/controller1")(),
        [forbidden(GATED_BY, "cannot add admission gate after creation")],
        id="reject adding AdmissionGatedBy annotation after Job creation",
    ),
    pytest.param(
        J().queue("queue").gated_by("example.com/controller1")(), J().queue("queue")(), [],
        id="allow removing AdmissionGatedBy annotation with single gate",
    ),
    pytest.param(
        J().queue("queue").gated_by("example.com/controller1,example.com/controller2")(), J().queue("queue")(), [],
        id="allow removing AdmissionGatedBy annotation with multiple gates",
    ),
    pytest.param(
        J().queue("queue").gated_by("example.com/controller1,example.com/controller2")(),
        J().queue("queue").gated_by("example.com/controller2")(),
        [],
        id="allow removing one gate from AdmissionGatedBy annotation",
    ),
    pytest.param(
        J().queue("queue").gated_by("example.com/controller1,example.com/controller2")(),
        J().queue("queue").gated_by("example.com/controller3")(),
        [forbidden(GATED_BY, "can only remove gates, not add new ones")],
        id="reject injecting new gate in AdmissionGatedBy annotation",
    ),
    pytest.param(
        J().queue("queue").gated_by("example.com/controller1,example.com/controller2")(),
        J().queue("queue").gated_by("example.com/controller2,example.com/controller1")(),
        [],
        id="allow reordering gates in AdmissionGatedBy annotation",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("old", "new", "want"), UPDATE_CASES)
def test_validate_update(old: Obj, new: Obj, want: list[FieldError]) -> None:
    assert _errors(jw.validate_job(new, old, no_objects)) == _errors(want)


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server()
    yield srv
    srv.store.close()


def test_adding_an_admission_gate_after_creation_is_denied_by_the_api_server(server: Server) -> None:
    """``reject adding AdmissionGatedBy annotation after Job creation`` as a client sees it."""
    server.create_job(J().queue("queue")())
    err = denial(
        server, server.patch_job, "job", {"metadata": {"annotations": {GATED_BY_KEY: "example.com/c1"}}}
    )
    assert err.message == f"{DENIED}{GATED_BY}: Forbidden: cannot add admission gate after creation"
