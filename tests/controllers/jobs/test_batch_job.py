"""Tests for ``pykueue.controllers.jobs.batch_job`` (upstream ``pkg/controller/jobs/job/`` and
``pkg/controller/jobframework/reconciler.go``).

Case names follow upstream's ``pkg/controller/jobs/job/job_controller_test.go`` (``TestReconciler``
cases, ``TestPodsReady``, ``TestReclaimablePods``, ``TestPodSets``) and
``pkg/controller/jobframework/workload_names_test.go`` where one applies; each case checks the pure
decision that reconcile case depends on.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from pykueue.api.kueue import (
    Admission,
    AdmissionCheckState,
    PodSetAssignment,
    PodSetUpdate,
    PriorityClass,
    PriorityClassRef,
    ResourceFlavor,
    ResourceFlavorSpec,
    Toleration,
    Workload,
    WorkloadPriorityClass,
)
from pykueue.api.meta import Condition, ObjectMeta
from pykueue.controllers.jobs import batch_job as bj
from pykueue.core.workload.info import has_quota_reservation

T0 = datetime(2024, 1, 1, tzinfo=UTC)
JOB_UID = "job-uid"

# --- builders ---------------------------------------------------------------------------------------


def make_job(
    *,
    suspend: bool = True,
    queue: str | None = "foo",
    parallelism: int | None = 10,
    completions: int | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    uid: str = JOB_UID,
) -> dict[str, Any]:
    """Upstream's ``baseJobWrapper``: suspended, queue ``foo``, parallelism 10, 1 CPU per pod."""
    job_labels = dict(labels or {})
    if queue is not None:
        job_labels[bj.QUEUE_NAME_LABEL] = queue
    spec: dict[str, Any] = {
        "suspend": suspend,
        "template": {
            "metadata": {},
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "1"}}}],
            },
        },
    }
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    meta: dict[str, Any] = {"name": "job", "namespace": "ns", "uid": uid}
    if job_labels:
        meta["labels"] = job_labels
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec}


def pod_template(job: dict[str, Any]) -> dict[str, Any]:
    template: dict[str, Any] = job["spec"]["template"]
    return template


def make_wl(job: dict[str, Any] | None = None, *, name: str = "a", **job_kwargs: Any) -> Workload:
    """The Workload the integration builds for ``job`` (default: :func:`make_job`), no priority class."""
    wl = bj.construct_workload(job if job is not None else make_job(**job_kwargs), bj.PriorityInfo(None, 0))
    wl.metadata.name = name
    return wl


def reserve(
    wl: Workload,
    *,
    cq: str = "cq",
    count: int | None = None,
    flavors: Mapping[str, str] | None = None,
    admitted: bool = True,
    topology: dict[str, Any] | None = None,
) -> Workload:
    """Give ``wl`` quota (``QuotaReserved=True``) and, unless told otherwise, ``Admitted=True``."""
    wl.status.admission = Admission(
        cluster_queue=cq,
        pod_set_assignments=[
            PodSetAssignment(
                name=ps.name,
                flavors=dict(flavors if flavors is not None else {"cpu": "default"}),
                resource_usage={"cpu": str(count if count is not None else ps.count)},
                count=count if count is not None else ps.count,
                topology_assignment=topology,
            )
            for ps in wl.spec.pod_sets
        ],
    )
    wl.status.conditions.append(
        Condition(
            type="QuotaReserved", status="True", reason="QuotaReserved", message="", last_transition_time=T0
        )
    )
    if admitted:
        wl.status.conditions.append(
            Condition(type="Admitted", status="True", reason="Admitted", message="", last_transition_time=T0)
        )
    return wl


def flavor(
    name: str, node_labels: Mapping[str, str] | None = None, *tolerations: Toleration
) -> ResourceFlavor:
    return ResourceFlavor(
        metadata=ObjectMeta(name=name),
        spec=ResourceFlavorSpec(node_labels=dict(node_labels or {}), tolerations=list(tolerations)),
    )


FLAVORS = {"default": flavor("default")}


def check(name: str, state: str = "Ready", message: str = "", **update: Any) -> AdmissionCheckState:
    updates = [PodSetUpdate(name="main", **update)] if update else []
    return AdmissionCheckState(
        name=name, state=state, last_transition_time=T0, message=message, pod_set_updates=updates
    )


def pc(name: str, value: int, *, global_default: bool = False) -> PriorityClass:
    return PriorityClass(metadata=ObjectMeta(name=name), value=value, global_default=global_default)


def wpc(name: str, value: int) -> WorkloadPriorityClass:
    return WorkloadPriorityClass(metadata=ObjectMeta(name=name), value=value)


def no_lookup(_: str) -> None:
    return None


# --- workload names (workload_names_test.go) --------------------------------------------------------


def legacy_hash(*parts: str) -> str:
    return hashlib.sha1("\n".join(parts).encode()).hexdigest()[:5]


@pytest.mark.parametrize(
    ("name", "args", "kwargs", "want"),
    [
        ("spec example", ("name", "uid"), {}, "job-name-ef3a1"),
        (
            "RegularInput",
            ("owner", "uid", "kind", "group"),
            {},
            "kind-owner-" + legacy_hash("kind", "group", "owner", "uid"),
        ),
        (
            "InputThatResultsInTrimmedPrefix",
            ("a" * 247, "uid", "kind", "group"),
            {},
            "kind-" + "a" * 242 + "-" + legacy_hash("kind", "group", "a" * 247, "uid"),
        ),
        ("elastic job includes generation", ("name", "uid"), {"generation": 3}, None),
        ("ShortWorkloadNames trims to 57", ("x" * 100, "uid"), {"short_names": True}, None),
    ],
)
def test_workload_names(name: str, args: tuple[str, ...], kwargs: dict[str, Any], want: str | None) -> None:
    got = bj.workload_name(*args, **kwargs)
    if name == "elastic job includes generation":
        assert got == "job-name-" + legacy_hash("Job", "batch", "name", "uid", "3")
        assert got != bj.workload_name("name", "uid")
    elif name == "ShortWorkloadNames trims to 57":
        assert len(got) == 63
        assert got.startswith("job-" + "x" * 53 + "-")
    else:
        assert got == want
        assert len(got) <= 253


# --- labels read on a Job (upstream ``jobframework.QueueNameForObject``) ----------------------------


@pytest.mark.parametrize(
    ("labels", "want"),
    [
        ({}, None),
        ({bj.MAX_EXEC_TIME_SECONDS_LABEL: "30"}, 30),
        ({bj.MAX_EXEC_TIME_SECONDS_LABEL: "+30"}, 30),
        ({bj.MAX_EXEC_TIME_SECONDS_LABEL: "0"}, None),
        ({bj.MAX_EXEC_TIME_SECONDS_LABEL: "-5"}, None),
        ({bj.MAX_EXEC_TIME_SECONDS_LABEL: "abc"}, None),
        ({bj.MAX_EXEC_TIME_SECONDS_LABEL: " 30"}, None),
        ({bj.MAX_EXEC_TIME_SECONDS_LABEL: str(2**31)}, None),
    ],
)
def test_max_execution_time_seconds(labels: dict[str, str], want: int | None) -> None:
    assert bj.max_execution_time_seconds(make_job(labels=labels)) == want


def test_queue_name_and_prebuilt_workload() -> None:
    assert bj.queue_name(make_job()) == "foo"
    assert bj.queue_name(make_job(queue=None)) == ""
    assert bj.prebuilt_workload_name(make_job()) is None
    by_label = make_job(labels={bj.PREBUILT_WORKLOAD_NAME_LABEL: "from-label"})
    assert bj.prebuilt_workload_name(by_label) == "from-label"
    both = make_job(
        labels={bj.PREBUILT_WORKLOAD_NAME_LABEL: "from-label"},
        annotations={bj.PREBUILT_WORKLOAD_NAME_ANNOTATION: "from-annotation"},
    )
    assert bj.prebuilt_workload_name(both) == "from-annotation"


@pytest.mark.parametrize(
    ("suspend", "annotations", "want"),
    [
        (True, {}, True),
        (False, {}, False),
        (True, {bj.STOPPING_ANNOTATION: "true"}, False),
        (True, {bj.STOPPING_ANNOTATION: "false"}, True),
    ],
)
def test_is_suspended(suspend: bool, annotations: dict[str, str], want: bool) -> None:
    assert bj.is_suspended(make_job(suspend=suspend, annotations=annotations)) is want


# --- Workload construction (upstream ``JobReconciler.constructWorkload``) ---------------------------


def test_the_workload_is_created_when_queue_name_is_set() -> None:
    job = make_job(labels={"team": "a", "other": "b"})
    pod_template(job)["metadata"]["labels"] = {
        "app": "x",
        "job-name": "job",
        "controller-uid": "u",
        "batch.kubernetes.io/controller-uid": "u",
        "batch.kubernetes.io/job-name": "job",
    }
    wl = bj.construct_workload(job, bj.PriorityInfo(None, 0), label_keys_to_copy=["team", "missing"])

    assert wl.metadata.name == bj.workload_name("job", JOB_UID)
    assert wl.metadata.namespace == "ns"
    assert wl.metadata.finalizers == ["kueue.x-k8s.io/resource-in-use"]
    assert wl.metadata.labels == {"team": "a", bj.JOB_UID_LABEL: JOB_UID}
    assert wl.metadata.annotations == {}
    [owner] = wl.metadata.owner_references
    assert (owner.api_version, owner.kind, owner.name, owner.uid) == ("batch/v1", "Job", "job", JOB_UID)
    assert owner.controller is True and owner.block_owner_deletion is True
    assert wl.spec.queue_name == "foo"
    assert wl.spec.priority_class_ref is None and wl.spec.priority == 0
    assert wl.spec.active is None
    assert wl.spec.maximum_execution_time_seconds is None
    [ps] = wl.spec.pod_sets
    assert (ps.name, ps.count, ps.min_count, ps.topology_request) == ("main", 10, None, None)
    # Job-controller labels are dropped, except batch.kubernetes.io/job-name (``cleanLabels``).
    assert ps.template.metadata["labels"] == {"app": "x", "batch.kubernetes.io/job-name": "job"}
    assert ps.template.spec == pod_template(job)["spec"]
    # The input Job is untouched.
    assert "job-name" in pod_template(job)["metadata"]["labels"]


def test_the_workload_without_uid_label_is_created_when_jobs_uid_is_longer_than_63_characters() -> None:
    long_uid = "a" * 64
    wl = bj.construct_workload(make_job(uid=long_uid), bj.PriorityInfo(None, 0))
    assert bj.JOB_UID_LABEL not in wl.metadata.labels
    assert wl.metadata.owner_references[0].uid == long_uid


def test_workload_annotations_and_spec_fields_from_job() -> None:
    job = make_job(
        labels={bj.MAX_EXEC_TIME_SECONDS_LABEL: "60"},
        annotations={
            "provreq.kueue.x-k8s.io/ValidUntilSeconds": "0",
            bj.ADMISSION_GATED_BY_ANNOTATION: "example.com/gate",
            bj.JOB_MIN_PARALLELISM_ANNOTATION: "5",
            "unrelated": "x",
        },
    )
    wl = bj.construct_workload(job, bj.PriorityInfo(None, 0))
    assert wl.metadata.annotations == {
        "provreq.kueue.x-k8s.io/ValidUntilSeconds": "0",
        bj.ADMISSION_GATED_BY_ANNOTATION: "example.com/gate",
    }
    assert wl.spec.maximum_execution_time_seconds == 60
    assert wl.spec.pod_sets[0].min_count == 5
    off = bj.construct_workload(job, bj.PriorityInfo(None, 0), partial_admission=False)
    assert off.spec.pod_sets[0].min_count is None


def test_elastic_job_workload_name_includes_generation() -> None:
    job = make_job(annotations={bj.ELASTIC_JOB_ANNOTATION: "true"})
    job["metadata"]["generation"] = 2
    wl = bj.construct_workload(job, bj.PriorityInfo(None, 0))
    assert wl.metadata.name == bj.workload_name("job", JOB_UID, generation=2)


@pytest.mark.parametrize(
    ("parallelism", "completions", "want"),
    [(3, None, 3), (None, None, 1), (3, 2, 2), (2, 3, 2), (None, 5, 1)],
)
def test_pod_set_count(parallelism: int | None, completions: int | None, want: int) -> None:
    [ps] = bj.job_pod_sets(make_job(parallelism=parallelism, completions=completions))
    assert ps.count == want


def test_duplicate_env_vars_are_collapsed() -> None:
    job = make_job()
    container = pod_template(job)["spec"]["containers"][0]
    container["env"] = [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "2"},
        {"name": "A", "value": "3"},
    ]
    pod_template(job)["spec"]["initContainers"] = [
        {"name": "i", "env": [{"name": "X", "value": "1"}, {"name": "X", "value": "2"}]}
    ]
    [ps] = bj.job_pod_sets(job)
    assert ps.template.spec["containers"][0]["env"] == [
        {"name": "A", "value": "3"},
        {"name": "B", "value": "2"},
    ]
    assert ps.template.spec["initContainers"][0]["env"] == [{"name": "X", "value": "2"}]
    assert len(container["env"]) == 3  # the Job is not modified


@pytest.mark.parametrize(
    ("name", "annotations", "tas", "want"),
    [
        ("no partial admission", {}, False, None),
        (
            "with required topology annotation",
            {bj.PODSET_REQUIRED_TOPOLOGY_ANNOTATION: "cloud.com/block"},
            True,
            {"required": "cloud.com/block", "podIndexLabel": bj.JOB_COMPLETION_INDEX_ANNOTATION},
        ),
        (
            "with preferred topology annotation",
            {bj.PODSET_PREFERRED_TOPOLOGY_ANNOTATION: "cloud.com/block"},
            True,
            {"preferred": "cloud.com/block", "podIndexLabel": bj.JOB_COMPLETION_INDEX_ANNOTATION},
        ),
        (
            "with slice-only topology",
            {
                bj.PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION: "cloud.com/block",
                bj.PODSET_SLICE_SIZE_ANNOTATION: "1",
            },
            True,
            {
                "podIndexLabel": bj.JOB_COMPLETION_INDEX_ANNOTATION,
                "podSetSliceRequiredTopology": "cloud.com/block",
                "podSetSliceSize": 1,
            },
        ),
        (
            "with slice-only topology – only podset slice size annotation",
            {bj.PODSET_SLICE_SIZE_ANNOTATION: "1"},
            True,
            {"podIndexLabel": bj.JOB_COMPLETION_INDEX_ANNOTATION},
        ),
        (
            "without required topology annotation if TAS is disabled",
            {bj.PODSET_REQUIRED_TOPOLOGY_ANNOTATION: "cloud.com/block"},
            False,
            None,
        ),
        ("no topology annotations", {}, True, None),
    ],
)
def test_pod_sets(name: str, annotations: dict[str, str], tas: bool, want: dict[str, Any] | None) -> None:
    job = make_job(parallelism=3)
    if annotations:
        pod_template(job)["metadata"]["annotations"] = annotations
    [ps] = bj.job_pod_sets(job, tas_enabled=tas)
    assert ps.count == 3
    assert ps.topology_request == want
    assert ps.template.metadata.get("annotations", {}) == annotations


# --- priority (upstream ``PrepareWorkloadPriority``) ------------------------------------------------


def test_the_workload_is_created_when_queue_name_is_set_with_workload_priority_class_and_priority_class() -> (
    None
):
    job = make_job(labels={bj.PRIORITY_CLASS_LABEL: "test-wpc"})
    pod_template(job)["spec"]["priorityClassName"] = "test-pc"
    wpcs = {"test-wpc": wpc("test-wpc", 100)}
    pcs = {"test-pc": pc("test-pc", 200)}
    info = bj.resolve_priority(job, wpcs.get, pcs.get, pcs.values())
    assert info == bj.PriorityInfo(
        PriorityClassRef("kueue.x-k8s.io", "WorkloadPriorityClass", "test-wpc"), 100
    )
    wl = bj.construct_workload(job, info)
    assert wl.spec.priority_class_ref == info.priority_class_ref
    assert wl.spec.priority == 100


@pytest.mark.parametrize(
    ("name", "wpc_label", "pod_pc", "classes", "want"),
    [
        (
            "pod template priorityClassName",
            None,
            "test-pc",
            [pc("test-pc", 200)],
            bj.PriorityInfo(PriorityClassRef("scheduling.k8s.io", "PriorityClass", "test-pc"), 200),
        ),
        (
            "global default with the lowest value",
            None,
            None,
            [pc("high", 50, global_default=True), pc("low", 10, global_default=True), pc("plain", 1)],
            bj.PriorityInfo(PriorityClassRef("scheduling.k8s.io", "PriorityClass", "low"), 10),
        ),
        ("no class at all", None, None, [pc("plain", 1)], bj.PriorityInfo(None, 0)),
        (
            "missing WorkloadPriorityClass",
            "missing",
            "test-pc",
            [pc("test-pc", 200)],
            bj.PriorityError('WorkloadPriorityClass "missing" not found', "WorkloadPriorityClassNotFound"),
        ),
        (
            "missing PriorityClass",
            None,
            "missing-pc",
            [pc("default", 5, global_default=True)],
            bj.PriorityError('priorityclasses.scheduling.k8s.io "missing-pc" not found'),
        ),
    ],
)
def test_resolve_priority(
    name: str,
    wpc_label: str | None,
    pod_pc: str | None,
    classes: list[PriorityClass],
    want: bj.PriorityInfo | bj.PriorityError,
) -> None:
    job = make_job(labels={bj.PRIORITY_CLASS_LABEL: wpc_label} if wpc_label else None)
    if pod_pc:
        pod_template(job)["spec"]["priorityClassName"] = pod_pc
    by_name = {c.metadata.name: c for c in classes}
    assert bj.resolve_priority(job, no_lookup, by_name.get, classes) == want


@pytest.mark.parametrize(
    ("label", "ref", "reserving", "want"),
    [
        ("high", PriorityClassRef("kueue.x-k8s.io", "WorkloadPriorityClass", "low"), True, True),
        ("low", PriorityClassRef("kueue.x-k8s.io", "WorkloadPriorityClass", "low"), False, False),
        ("high", None, False, True),
        ("high", None, True, False),
        ("high", PriorityClassRef("scheduling.k8s.io", "PriorityClass", "pc"), False, False),
        (None, None, False, False),
    ],
)
def test_needs_priority_update(
    label: str | None, ref: PriorityClassRef | None, reserving: bool, want: bool
) -> None:
    job = make_job(labels={bj.PRIORITY_CLASS_LABEL: label} if label else None)
    wl = make_wl()
    wl.spec.priority_class_ref = ref
    if reserving:
        reserve(wl, admitted=False)
    assert bj.needs_priority_update(job, wl) is want


# --- equivalence (upstream ``EquivalentToWorkload``) ------------------------------------------------


def test_matching_workload_is_equivalent() -> None:
    job = make_job()
    assert bj.is_equivalent(job, make_wl(job))


def test_non_matching_admitted_workload_is_deleted() -> None:
    # The Workload has 5 pods, the Job 10: the Workload does not match and is deleted.
    wl = reserve(make_wl(parallelism=5))
    assert not bj.is_equivalent(make_job(), wl, FLAVORS)


def test_non_matching_non_admitted_workload_is_updated() -> None:
    # The reconciler rewrites a non-reserving leftover of a suspended Job (event UpdatedWorkload).
    wl = make_wl(parallelism=5)
    job = make_job()
    assert not bj.is_equivalent(job, wl)
    assert bj.is_suspended(job) and not has_quota_reservation(wl)
    assert bj.updated_workload_message(wl) == "Updated not matching Workload for suspended job: ns/a"


@pytest.mark.parametrize(
    ("name", "mutate", "want"),
    [
        ("different owner name", lambda wl: setattr(wl.metadata.owner_references[0], "name", "other"), False),
        ("different owner uid", lambda wl: setattr(wl.metadata.owner_references[0], "uid", "other"), False),
        ("no controller owner", lambda wl: wl.metadata.owner_references.clear(), False),
        ("different max exec time", lambda wl: setattr(wl.spec, "maximum_execution_time_seconds", 10), False),
        ("different minCount", lambda wl: setattr(wl.spec.pod_sets[0], "min_count", 2), False),
        (
            "different container",
            lambda wl: wl.spec.pod_sets[0].template.spec["containers"][0].update(image="other"),
            False,
        ),
        (
            "same quantity written differently",
            lambda wl: (
                wl.spec.pod_sets[0]
                .template.spec["containers"][0]["resources"]
                .update(requests={"cpu": "1000m"})
            ),
            True,
        ),
        (
            "empty list equals absent field",
            lambda wl: wl.spec.pod_sets[0].template.spec["containers"][0].update(env=[]),
            True,
        ),
        (
            "labels are not compared",
            lambda wl: wl.spec.pod_sets[0].template.metadata.update(labels={"x": "y"}),
            True,
        ),
    ],
)
def test_equivalence_rules(name: str, mutate: Any, want: bool) -> None:
    job = make_job()
    wl = make_wl(job)
    mutate(wl)
    assert bj.is_equivalent(job, wl) is want


def test_tolerations_compared_unless_admitted() -> None:
    job = make_job()
    wl = make_wl(job)
    wl.spec.pod_sets[0].template.spec["tolerations"] = [{"key": "k", "operator": "Exists"}]
    assert not bj.is_equivalent(job, wl)
    reserve(wl)
    assert bj.is_equivalent(job, wl, FLAVORS)


def test_reserving_workload_compares_the_injected_template() -> None:
    spot = {"spot": flavor("spot", {"instance": "spot"}, Toleration(key="spot", operator="Exists"))}
    job = make_job()
    wl = reserve(make_wl(job), flavors={"cpu": "spot"}, admitted=False)
    # A suspended Job without the flavor's toleration: the injected template differs, but the raw
    # spec matches, so the Workload is kept.
    assert bj.is_equivalent(job, wl, spot)
    # The same Job running with the injection matches the injected template.
    running = bj.start_job(job, wl, bj.pod_set_injection(wl, spot))
    assert bj.is_equivalent(running, wl, spot)
    # Running without the toleration matches neither (not suspended: no fall back to the raw spec).
    bare = make_job(suspend=False)
    assert not bj.is_equivalent(bare, wl, spot)
    # A flavor that cannot be looked up means "compare the raw spec".
    assert bj.is_equivalent(bare, wl, {})


def test_partially_admitted_running_job_is_equivalent() -> None:
    job = make_job(annotations={bj.JOB_MIN_PARALLELISM_ANNOTATION: "5"})
    wl = reserve(make_wl(job), count=8)
    running = bj.start_job(job, wl, bj.pod_set_injection(wl, FLAVORS))
    assert running["spec"]["parallelism"] == 8
    assert bj.is_equivalent(running, wl, FLAVORS)
    assert bj.is_equivalent(job, wl, FLAVORS)


# --- Job state (upstream ``JobReconciler.ReconcileGenericJob``) -------------------------------------


@pytest.mark.parametrize(
    ("conditions", "want"),
    [
        ([], None),
        (
            [{"type": "Complete", "status": "True", "message": "Job completed"}],
            ("Succeeded", "Job completed"),
        ),
        (
            [{"type": "Failed", "status": "True", "message": "BackoffLimitExceeded"}],
            ("Failed", "BackoffLimitExceeded"),
        ),
        ([{"type": "Complete", "status": "False"}, {"type": "Suspended", "status": "True"}], None),
        (
            [
                {"type": "SuccessCriteriaMet", "status": "True"},
                {"type": "Complete", "status": "True", "message": "m"},
            ],
            ("Succeeded", "m"),
        ),
    ],
    ids=[
        "running",
        "when job completes, workload is marked as finished",
        "failed",
        "not finished",
        "first match",
    ],
)
def test_job_finished(conditions: list[dict[str, Any]], want: tuple[str, str] | None) -> None:
    job = make_job(suspend=False)
    job["status"] = {"conditions": conditions}
    assert bj.job_finished(job) == want


def test_active_pods() -> None:
    job = make_job()
    assert bj.active_pods(job) == 0 and not bj.is_active(job)
    job["status"] = {"active": 3}
    assert bj.active_pods(job) == 3 and bj.is_active(job)


@pytest.mark.parametrize(
    ("name", "parallelism", "completions", "status", "want"),
    [
        ("parallelism = completions; no progress", 3, 3, {}, False),
        ("parallelism = completions; not enough progress", 3, 3, {"ready": 1, "succeeded": 1}, False),
        ("parallelism = completions; all ready", 3, 3, {"ready": 3, "succeeded": 0}, True),
        ("parallelism = completions; some ready, some succeeded", 3, 3, {"ready": 2, "succeeded": 1}, True),
        ("parallelism = completions; all succeeded", 3, 3, {"succeeded": 3}, True),
        ("parallelism < completions; reaching parallelism is enough", 2, 3, {"ready": 2}, True),
        ("parallelism > completions; reaching completions is enough", 3, 2, {"ready": 2}, True),
        ("parallelism specified only; not enough progress", 3, None, {"ready": 2}, False),
        ("parallelism specified only; all ready", 3, None, {"ready": 3}, True),
        (
            "uncounted succeeded pods count",
            3,
            3,
            {"ready": 1, "succeeded": 1, "uncountedTerminatedPods": {"succeeded": ["p1"]}},
            True,
        ),
    ],
)
def test_pods_ready(
    name: str, parallelism: int, completions: int | None, status: dict[str, Any], want: bool
) -> None:
    job = make_job(parallelism=parallelism, completions=completions, suspend=False)
    job["status"] = status
    assert bj.pods_ready(job) is want


@pytest.mark.parametrize(
    ("name", "parallelism", "completions", "status", "indexed", "want"),
    [
        ("parallelism 1", 1, 10, {"succeeded": 5}, False, []),
        ("nothing succeeded", 4, 10, {}, False, []),
        ("p=4, completions=10, succeeded=7", 4, 10, {"succeeded": 7}, False, [{"name": "main", "count": 1}]),
        ("enough remaining", 4, 10, {"succeeded": 6}, False, []),
        ("all done", 4, 10, {"succeeded": 10}, False, [{"name": "main", "count": 4}]),
        ("work queue (no completions)", 4, None, {"succeeded": 1}, False, [{"name": "main", "count": 1}]),
        ("capped at the pod set count", 4, 2, {"succeeded": 1}, False, [{"name": "main", "count": 2}]),
        (
            "indexed: completed and failed indexes",
            4,
            10,
            {"completedIndexes": "0-4,6", "failedIndexes": "6-8", "succeeded": 1},
            True,
            [{"name": "main", "count": 2}],
        ),
        ("indexed: indexes past completions ignored", 2, 3, {"completedIndexes": "1,5-9"}, True, []),
    ],
)
def test_reclaimable_pods(
    name: str,
    parallelism: int,
    completions: int | None,
    status: dict[str, Any],
    indexed: bool,
    want: list[dict[str, Any]],
) -> None:
    job = make_job(parallelism=parallelism, completions=completions, suspend=False)
    if indexed:
        job["spec"]["completionMode"] = "Indexed"
    job["status"] = status
    assert bj.reclaimable_pods(job) == want


# --- PodsReady condition (upstream ``generatePodsReadyCondition``) ----------------------------------


def with_pods_ready(status: str | None, reason: str = "") -> Workload:
    wl = make_wl()
    if status is not None:
        wl.status.conditions.append(
            Condition(type="PodsReady", status=status, reason=reason, message="m", last_transition_time=T0)
        )
    return wl


NOT_READY = ("False", "WaitForStart", "Not all pods are ready or succeeded")
RECOVERING = ("False", "WaitForRecovery", "At least one pod has failed, waiting for recovery")


@pytest.mark.parametrize(
    ("name", "current", "admitted", "ready", "want"),
    [
        ("PodsReady is set to False before Workload is Admitted", (None, ""), False, True, NOT_READY),
        (
            "PodsReady is set to False after Workload is Admitted but not all Pods reached readiness",
            (None, ""),
            True,
            False,
            NOT_READY,
        ),
        (
            "PodsReady is set to True after Workload is Admitted and all Pods reached readiness",
            ("False", "WaitForStart"),
            True,
            True,
            ("True", "Started", "All pods reached readiness and the workload is running"),
        ),
        ("ready pods lost", ("True", "Started"), True, False, RECOVERING),
        ("still recovering", ("False", "WaitForRecovery"), True, False, None),
        (
            "recovered",
            ("False", "WaitForRecovery"),
            True,
            True,
            ("True", "Recovered", "All pods reached readiness and the workload is running"),
        ),
        ("recovered stays recovered", ("True", "Recovered"), True, True, None),
        ("legacy PodsReady reason", ("False", "PodsReady"), True, False, NOT_READY),
        ("unchanged", ("False", "WaitForStart"), True, False, None),
        ("evicted after running", ("True", "Started"), False, True, NOT_READY),
    ],
)
def test_pods_ready_condition(
    name: str,
    current: tuple[str | None, str],
    admitted: bool,
    ready: bool,
    want: tuple[str, str, str] | None,
) -> None:
    assert bj.pods_ready_condition(with_pods_ready(*current), admitted, ready) == want


# --- injection of admission data (upstream ``Job.RunWithPodSetsInfo``) ------------------------------


def test_when_workload_is_admitted_the_pod_set_updates_are_propagated_to_job() -> None:
    job = make_job()
    wl = reserve(make_wl(job))
    wl.status.admission_checks = [
        check(
            "check",
            labels={"ac-key": "ac-value"},
            annotations={"ac-annotation": "v"},
            node_selector={"ac-node": "n"},
            tolerations=[Toleration(key="ac-t", operator="Exists", effect="NoSchedule")],
        )
    ]
    [info] = bj.pod_set_injection(wl, FLAVORS)
    assert info.labels == {
        "ac-key": "ac-value",
        bj.PODSET_LABEL: "main",
        bj.LOCAL_QUEUE_NAME_LABEL: "foo",
        bj.CLUSTER_QUEUE_NAME_LABEL: "cq",
    }
    started = bj.start_job(job, wl, [info])
    assert started["spec"]["suspend"] is False
    template = pod_template(started)
    assert template["metadata"]["labels"] == info.labels
    assert template["metadata"]["annotations"] == {"ac-annotation": "v", bj.WORKLOAD_ANNOTATION: "a"}
    assert template["spec"]["nodeSelector"] == {"ac-node": "n"}
    assert template["spec"]["tolerations"] == [{"key": "ac-t", "operator": "Exists", "effect": "NoSchedule"}]
    assert "schedulingGates" not in template["spec"]
    assert job["spec"]["suspend"] is True  # input untouched
    assert bj.started_message(wl) == "Admitted by clusterQueue cq"


def test_when_workload_is_admitted_and_pod_set_updates_conflict_between_admission_checks_on_labels() -> None:
    wl = reserve(make_wl())
    wl.status.admission_checks = [
        check("check1", labels={"ac-key": "ac-value1"}),
        check("check2", labels={"ac-key": "ac-value2"}),
    ]
    with pytest.raises(bj.PodSetUpdateConflict) as err:
        bj.pod_set_injection(wl, FLAVORS)
    assert str(err.value) == (
        'in admission check "check2": invalid admission check PodSetUpdate: conflict for labels: '
        "conflict for key=ac-key, value1=ac-value1, value2=ac-value2"
    )
    assert isinstance(err.value, bj.StartJobError)


def test_injection_from_flavors() -> None:
    flavors = {
        "on-demand": flavor("on-demand", {"instance": "on-demand", "zone": "a"}),
        "gpu": flavor(
            "gpu",
            {"instance": "gpu"},
            Toleration(key="gpu", operator="Exists", effect="NoSchedule"),
        ),
    }
    wl = reserve(
        make_wl(), flavors={"cpu": "on-demand", "memory": "on-demand", "nvidia.com/gpu": "gpu"}, count=7
    )
    [info] = bj.pod_set_injection(wl, flavors)
    assert info.name == "main" and info.count == 7
    # Later flavors override the same node label.
    assert info.node_selector == {"instance": "gpu", "zone": "a"}
    assert info.tolerations == [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    with pytest.raises(bj.FlavorNotFound, match=r'^resourceflavors\.kueue\.x-k8s\.io "gpu" not found$'):
        bj.pod_set_injection(wl, {"on-demand": flavors["on-demand"]})


def test_injection_queue_labels_and_gates() -> None:
    wl = reserve(make_wl(), cq="cq.example.com")
    [info] = bj.pod_set_injection(wl, FLAVORS)
    # Not a DNS-1123 label: no cluster-queue-name label.
    assert bj.CLUSTER_QUEUE_NAME_LABEL not in info.labels
    assert info.labels[bj.LOCAL_QUEUE_NAME_LABEL] == "foo"
    [off] = bj.pod_set_injection(wl, FLAVORS, assign_queue_labels=False)
    assert off.labels == {bj.PODSET_LABEL: "main"}
    [no_tas] = bj.pod_set_injection(wl, FLAVORS, tas_enabled=False)
    assert no_tas.annotations == {}
    wl.metadata.labels[bj.MULTIKUEUE_ORIGIN_LABEL] = "manager"
    [worker] = bj.pod_set_injection(wl, FLAVORS)
    assert worker.labels[bj.MULTIKUEUE_WORKER_POD_LABEL] == "true"


def test_injection_with_topology_assignment() -> None:
    topology = {"levels": ["kubernetes.io/hostname"], "domains": [{"values": ["n1"], "count": 10}]}
    wl = reserve(make_wl(), topology=topology)
    [info] = bj.pod_set_injection(wl, FLAVORS)
    assert info.scheduling_gates == [{"name": bj.TOPOLOGY_SCHEDULING_GATE}]
    assert info.annotations == {
        bj.WORKLOAD_ANNOTATION: "a",
        bj.PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION: "true",
    }
    job = make_job()
    pod_template(job)["metadata"]["annotations"] = {bj.PODSET_REQUIRED_TOPOLOGY_ANNOTATION: "rack"}
    explicit = reserve(make_wl(job), topology=topology)
    [info] = bj.pod_set_injection(explicit, FLAVORS)
    assert bj.PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION not in info.annotations
    started = bj.start_job(job, explicit, [info])
    assert pod_template(started)["spec"]["schedulingGates"] == [{"name": bj.TOPOLOGY_SCHEDULING_GATE}]


# --- starting a Job (upstream ``JobReconciler.startJob``) -------------------------------------------


def test_suspended_job_with_partial_admission_and_admitted_workload_is_unsuspended() -> None:
    job = make_job(annotations={bj.JOB_MIN_PARALLELISM_ANNOTATION: "5"})
    wl = reserve(make_wl(job), count=8)
    got = bj.start_job(job, wl, bj.pod_set_injection(wl, FLAVORS, tas_enabled=False))
    want = copy.deepcopy(job)
    want["spec"]["suspend"] = False
    want["spec"]["parallelism"] = 8
    pod_template(want)["metadata"]["labels"] = {
        bj.PODSET_LABEL: "main",
        bj.LOCAL_QUEUE_NAME_LABEL: "foo",
        bj.CLUSTER_QUEUE_NAME_LABEL: "cq",
    }
    assert got == want


@pytest.mark.parametrize(("sync", "want_completions"), [("true", 8), ("false", 10), ("bad", 10)])
def test_partial_admission_completions_equal_parallelism(sync: str, want_completions: int) -> None:
    annotations = {
        bj.JOB_MIN_PARALLELISM_ANNOTATION: "5",
        bj.JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION: sync,
    }
    job = make_job(completions=10, annotations=annotations)
    wl = reserve(make_wl(job), count=8)
    started = bj.start_job(job, wl, bj.pod_set_injection(wl, FLAVORS))
    assert started["spec"]["parallelism"] == 8
    assert started["spec"]["completions"] == want_completions
    stopped = bj.stop_job(started, wl)
    assert stopped.job["spec"]["parallelism"] == 10
    assert stopped.job["spec"]["completions"] == 10


def test_start_conflict_with_the_job_template() -> None:
    job = make_job()
    pod_template(job)["spec"]["nodeSelector"] = {"instance": "mine"}
    wl = reserve(make_wl(job), flavors={"cpu": "spot"})
    [info] = bj.pod_set_injection(wl, {"spot": flavor("spot", {"instance": "spot"})})
    with pytest.raises(bj.PodSetUpdateConflict) as err:
        bj.start_job(job, wl, [info])
    assert str(err.value) == (
        "invalid admission check PodSetUpdate: conflict for nodeSelector: conflict for key=instance, value1=mine, value2=spot"
    )


def test_start_deduplicates_tolerations_and_gates() -> None:
    job = make_job()
    spec = pod_template(job)["spec"]
    spec["tolerations"] = [{"key": "t", "operator": "Exists"}]
    spec["schedulingGates"] = [{"name": bj.TOPOLOGY_SCHEDULING_GATE}]
    wl = reserve(make_wl(job))
    info = bj.PodSetInjection(
        name="main",
        count=10,
        tolerations=[{"key": "t", "operator": "Exists", "value": ""}, {"key": "u", "operator": "Exists"}],
        scheduling_gates=[{"name": bj.TOPOLOGY_SCHEDULING_GATE}],
    )
    started = bj.start_job(job, wl, [info])
    assert pod_template(started)["spec"]["tolerations"] == [
        {"key": "t", "operator": "Exists"},
        {"key": "u", "operator": "Exists"},
    ]
    assert pod_template(started)["spec"]["schedulingGates"] == [{"name": bj.TOPOLOGY_SCHEDULING_GATE}]


def test_start_without_exactly_one_pod_set_fails_permanently() -> None:
    job = make_job()
    with pytest.raises(bj.InvalidPodSetsInfo, match=r"^invalid podset infos: expecting 1 podset, got 0$"):
        bj.start_job(job, make_wl(job), [])


# --- stopping a Job ---------------------------------------------------------------------------------


def test_when_workload_is_evicted_suspend_reset_start_time_and_restore_node_affinity() -> None:
    job = make_job(suspend=False)
    pod_template(job)["spec"]["nodeSelector"] = {"provisioning": "spot"}
    job["status"] = {"startTime": "2024-01-01T00:00:00Z", "active": 10}
    wl = reserve(make_wl(make_job()))
    wl.status.conditions.append(
        Condition(type="Evicted", status="True", reason="Preempted", message="m", last_transition_time=T0)
    )
    got = bj.stop_job(job, wl)
    assert got.stopped_now and got.start_time_reset
    want = make_job(suspend=True)
    want["status"] = {"active": 10}
    assert got.job == want
    # The first write: suspended and marked as stopping, template not yet restored.
    assert got.suspend_step is not None
    assert got.suspend_step["spec"]["suspend"] is True
    assert got.suspend_step["metadata"]["annotations"] == {bj.STOPPING_ANNOTATION: "true"}
    assert pod_template(got.suspend_step)["spec"]["nodeSelector"] == {"provisioning": "spot"}


def test_when_workload_is_evicted_but_suspended_reset_start_time_and_restore_node_affinity() -> None:
    job = make_job(suspend=True)
    pod_template(job)["spec"]["nodeSelector"] = {"provisioning": "spot"}
    job["status"] = {"startTime": "2024-01-01T00:00:00Z"}
    got = bj.stop_job(job, make_wl(make_job()))
    # Already suspended: no Stopped event.
    assert not got.stopped_now and got.start_time_reset and got.suspend_step is None
    assert "nodeSelector" not in pod_template(got.job)["spec"]
    assert got.job["spec"]["suspend"] is True


def test_stop_after_an_interrupted_stop() -> None:
    job = make_job(suspend=True, annotations={bj.STOPPING_ANNOTATION: "true"})
    got = bj.stop_job(job, make_wl(make_job()))
    assert got.stopped_now
    assert "annotations" not in got.job["metadata"]


def test_stop_restores_the_template_and_keeps_job_managed_labels() -> None:
    original = make_job()
    pod_template(original)["metadata"] = {"labels": {"app": "x"}, "annotations": {"a": "1"}}
    pod_template(original)["spec"]["tolerations"] = [{"key": "orig", "operator": "Exists"}]
    wl = reserve(make_wl(original), flavors={"cpu": "spot"})
    spot = {"spot": flavor("spot", {"instance": "spot"}, Toleration(key="spot", operator="Exists"))}
    running = bj.start_job(original, wl, bj.pod_set_injection(wl, spot))
    # The Kubernetes Job controller adds its labels to a running Job's template.
    pod_template(running)["metadata"]["labels"].update(
        {
            "batch.kubernetes.io/controller-uid": "u",
            "batch.kubernetes.io/job-name": "job",
            "controller-uid": "u",
        }
    )
    got = bj.stop_job(running, wl)
    template = pod_template(got.job)
    assert template["metadata"]["labels"] == {
        "app": "x",
        "batch.kubernetes.io/controller-uid": "u",
        "batch.kubernetes.io/job-name": "job",
        "controller-uid": "u",
    }
    assert template["metadata"]["annotations"] == {"a": "1"}
    assert template["spec"]["tolerations"] == [{"key": "orig", "operator": "Exists"}]
    assert "nodeSelector" not in template["spec"]
    assert got.job["spec"]["suspend"] is True


def test_stop_with_missing_workload_only_suspends() -> None:
    job = make_job(suspend=False)
    pod_template(job)["spec"]["nodeSelector"] = {"x": "y"}
    got = bj.stop_job(job, None)
    assert got.stopped_now and not got.start_time_reset
    assert got.job["spec"]["suspend"] is True
    assert pod_template(got.job)["spec"]["nodeSelector"] == {"x": "y"}
    assert "annotations" not in got.job["metadata"]


# --- UpdatedAdmissionCheck (upstream ``recordAdmissionCheckUpdate``) --------------------------------


@pytest.mark.parametrize(
    ("checks", "want"),
    [
        ([], None),
        ([check("a", "Pending")], None),
        ([check("a", "Pending", "waiting")], "a: waiting"),
        (
            [check("a", "Pending", "x"), check("b", "Ready", "done"), check("c", "Pending", "y")],
            "a: x; c: y",
        ),
    ],
)
def test_pending_checks_note(checks: list[AdmissionCheckState], want: str | None) -> None:
    wl = reserve(make_wl(), admitted=False)
    wl.status.admission_checks = checks
    assert bj.pending_checks_note(wl) == want


def test_event_messages() -> None:
    wl = make_wl()
    assert bj.created_workload_message(wl) == "Created Workload: ns/a"
    assert bj.deleted_workload_message(wl) == "Deleted not matching Workload: ns/a"
    assert bj.finished_workload_message(wl) == "Workload 'ns/a' is declared finished"
    assert bj.updated_priority_message(wl) == "Updated workload priority class: ns/a"
