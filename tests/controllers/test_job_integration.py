"""batch/v1 Job integration through the controller manager (in-process API, no job runner).

Nothing runs pods here: the tests play kube's job controller by writing Job status themselves.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from test_workload_lifecycle import Env, cond, setup_queues, wait

from pykueue.client import resources as R


@pytest.fixture
def env() -> Iterator[Env]:
    e = Env()
    yield e
    e.close()


def job(name: str, cpu: str = "1", parallelism: int = 1, labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None) -> dict[str, Any]:  # fmt: skip
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {"kueue.x-k8s.io/queue-name": "lq", **(labels or {})},
            "annotations": annotations or {},
        },
        "spec": {
            "parallelism": parallelism,
            "completions": parallelism,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "x", "command": ["true"], "resources": {"requests": {"cpu": cpu}}}],
                }
            },
        },
    }


def workload_of(env: Env, job_name: str) -> dict[str, Any] | None:
    items, _ = env.client.list(R.WORKLOADS, "default")
    for wl in items:
        if any(r["name"] == job_name for r in wl["metadata"].get("ownerReferences") or []):
            return wl
    return None


def test_the_workload_is_created_when_queue_name_is_set_with_workload_priority_class(env: Env) -> None:
    setup_queues(env)
    env.create(
        R.WORKLOAD_PRIORITY_CLASSES,
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass", "metadata": {"name": "high"}, "value": 1000},
    )
    created = env.create(R.JOBS, job("prio", labels={"kueue.x-k8s.io/priority-class": "high"}))
    assert created["spec"]["suspend"] is True  # the Job webhook suspends queued Jobs

    def created_later() -> dict[str, Any] | None:
        # The Job's watch event may reach the manager before the class's: its reconcile then fails
        # (upstream's ExtractPriority NotFound) and is retried after its backoff, on the
        # controllers' (manual) clock.
        env.clock.advance(0.5)
        return workload_of(env, "prio")

    wl = wait(created_later)
    assert wl["spec"]["priorityClassRef"] == {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"}
    assert wl["spec"]["priority"] == 1000
    assert wl["metadata"]["labels"]["kueue.x-k8s.io/job-uid"] == created["metadata"]["uid"]
    owner = wl["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Job", "prio", True)


def test_missing_workload_priority_class_creates_no_workload(env: Env) -> None:
    setup_queues(env)
    env.create(R.JOBS, job("noprio", labels={"kueue.x-k8s.io/priority-class": "missing"}))

    def warned() -> bool:
        events, _ = env.client.list(R.EVENTS, "default")
        return any(e["reason"] == "WorkloadPriorityClassNotFound" for e in events)

    wait(warned)
    assert workload_of(env, "noprio") is None


def test_suspended_job_with_partial_admission_and_admitted_workload_is_unsuspended(env: Env) -> None:
    setup_queues(env, cpu=2)
    env.create(R.JOBS, job("partial", parallelism=4, annotations={"kueue.x-k8s.io/job-min-parallelism": "2"}))

    def started() -> dict[str, Any] | None:
        j = env.get(R.JOBS, "partial")
        return j if j["spec"].get("suspend") is False else None

    j = wait(started)
    assert j["spec"]["parallelism"] == 2
    wl = workload_of(env, "partial")
    assert wl is not None
    assert wl["status"]["admission"]["podSetAssignments"][0]["count"] == 2
    assert j["spec"]["template"]["spec"].get("nodeSelector") in (None, {})


def test_when_job_completes_workload_is_marked_as_finished(env: Env) -> None:
    setup_queues(env)
    env.create(R.JOBS, job("done"))
    wait(lambda: env.get(R.JOBS, "done")["spec"].get("suspend") is False)
    j = env.get(R.JOBS, "done")
    j["status"] = {
        "succeeded": 1,
        "conditions": [
            {"type": "Complete", "status": "True", "reason": "CompletionsReached", "message": "Reached expected number of succeeded pods"}
        ],
    }
    env.client.replace(R.JOBS, j, subresource="status")

    def finished() -> dict[str, Any] | None:
        wl = workload_of(env, "done")
        c = cond(wl or {}, "Finished")
        return wl if c is not None and c["status"] == "True" else None

    wl = wait(finished)
    c = cond(wl, "Finished")
    assert c is not None and (c["reason"], c["message"]) == ("Succeeded", "Reached expected number of succeeded pods")
    wait(lambda: "kueue.x-k8s.io/resource-in-use" not in ((workload_of(env, "done") or {})["metadata"].get("finalizers") or []))


def test_pods_ready_follows_the_job(env: Env) -> None:
    setup_queues(env)
    env.create(R.JOBS, job("ready"))
    wait(lambda: env.get(R.JOBS, "ready")["spec"].get("suspend") is False)

    def pods_ready(status: str, reason: str) -> Any:
        def check() -> bool:
            c = cond(workload_of(env, "ready") or {}, "PodsReady")
            return c is not None and (c["status"], c["reason"]) == (status, reason)

        return check

    wait(pods_ready("False", "WaitForStart"))
    j = env.get(R.JOBS, "ready")
    j["status"] = {"active": 1, "ready": 1}
    env.client.replace(R.JOBS, j, subresource="status")
    wait(pods_ready("True", "Started"))


def test_deleting_a_running_job_leaves_no_usage_behind(env: Env) -> None:
    setup_queues(env)
    env.create(R.JOBS, job("gone"))
    wait(lambda: env.get(R.JOBS, "gone")["spec"].get("suspend") is False)
    env.client.delete(R.JOBS, "gone", "default", propagation="Background")
    wait(lambda: workload_of(env, "gone") is None)

    def released() -> bool:
        env.clock.advance(1)
        st = env.get(R.CLUSTER_QUEUES, "cq", None).get("status") or {}
        return st.get("reservingWorkloads") == 0

    wait(released)


def test_job_owned_by_a_non_kueue_kind_is_top_level(env: Env) -> None:
    setup_queues(env)
    # Any owner kind Kueue does not integrate (a CronJob on a cluster; a PodTemplate here, as the
    # garbage collector needs the owner to exist).
    owner = env.create(
        R.POD_TEMPLATES,
        {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "owner", "namespace": "default"},
         "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}},
    )
    owned = job("cron-child")
    owned["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "PodTemplate", "name": "owner", "uid": owner["metadata"]["uid"], "controller": True}
    ]
    env.create(R.JOBS, owned)
    wait(lambda: workload_of(env, "cron-child"))


def test_job_with_queue_name_is_not_reconciled_in_an_excluded_namespace(env: Env) -> None:
    setup_queues(env)
    skipped = job("system-job")
    skipped["metadata"]["namespace"] = "kube-system"
    env.create(R.JOBS, skipped)
    marker = job("marker")
    env.create(R.JOBS, marker)
    wait(lambda: workload_of(env, "marker"))  # the manager has processed the Jobs
    items, _ = env.client.list(R.WORKLOADS, "kube-system")
    assert items == []


def test_workload_with_admission_gated_by_annotation_removed_clears_the_gate(env: Env) -> None:
    setup_queues(env)
    gated = job("gated", annotations={"kueue.x-k8s.io/admission-gated-by": "example.com/gate"})
    env.create(R.JOBS, gated)

    def reason(expected: str) -> Any:
        def check() -> dict[str, Any] | None:
            wl = workload_of(env, "gated")
            c = cond(wl or {}, "QuotaReserved")
            return c if c is not None and c["reason"] == expected else None

        return check

    c = wait(reason("AdmissionGated"))
    assert c["message"] == "Admission is gated by: example.com/gate"
    env.client.patch(
        R.JOBS, "gated", {"metadata": {"annotations": {"kueue.x-k8s.io/admission-gated-by": None}}}, "default"
    )
    wait(lambda: (wl := workload_of(env, "gated")) and cond(wl, "Admitted") and cond(wl, "Admitted")["status"] == "True")  # type: ignore[index]


def test_admitted_job_gets_the_flavor_node_labels(env: Env) -> None:
    env.create(
        R.RESOURCE_FLAVORS,
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "f"},
         "spec": {"nodeLabels": {"cloud.example.com/pool": "spot"},
                  "tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}]}},
    )  # fmt: skip
    env.create(
        R.CLUSTER_QUEUES,
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"],
                  "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 2}]}]}]}},
    )  # fmt: skip
    env.create(
        R.LOCAL_QUEUES,
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "default"},
         "spec": {"clusterQueue": "cq"}},
    )  # fmt: skip
    env.create(R.JOBS, job("labelled"))

    def started() -> dict[str, Any] | None:
        j = env.get(R.JOBS, "labelled")
        return j if j["spec"].get("suspend") is False else None

    pod = wait(started)["spec"]["template"]
    assert pod["spec"]["nodeSelector"] == {"cloud.example.com/pool": "spot"}
    assert {"key": "spot", "operator": "Exists", "effect": "NoSchedule"} in pod["spec"]["tolerations"]
    assert pod["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "main"
    assert pod["metadata"]["labels"]["kueue.x-k8s.io/cluster-queue-name"] == "cq"


def test_kueue_records_its_events_through_events_k8s_io_v1(env: Env) -> None:
    """Upstream's controllers record through ``mgr.GetEventRecorder`` (client-go ``tools/events``):
    an events.k8s.io/v1 Event whose action is its reason, reported by ``kueue-admission`` from the
    instance ``kueue-admission-<hostname>`` (the Job's by its reconciler); read as core/v1 it has
    no ``source`` (``tools/record``'s)."""
    import socket

    from pykueue.client.interface import Resource

    events_v1 = Resource("events.k8s.io", "v1", "events", "Event", True)
    setup_queues(env)
    env.create(R.JOBS, job("evented"))

    def reserved() -> list[dict[str, Any]]:
        items, _ = env.client.list(events_v1, "default")
        return [e for e in items if e["reason"] == "QuotaReserved"]

    (event,) = wait(reserved)
    assert (event["type"], event["action"], event["regarding"]["kind"]) == ("Normal", "QuotaReserved", "Workload")
    assert event["reportingController"] == "kueue-admission"
    assert event["reportingInstance"] == f"kueue-admission-{socket.gethostname()}"[:128]
    assert event["eventTime"]
    core, _ = env.client.list(R.EVENTS, "default")
    (as_core,) = [e for e in core if e["metadata"]["name"] == event["metadata"]["name"]]
    assert as_core["reportingComponent"] == "kueue-admission"
    assert not (as_core.get("source") or {}).get("component")
    # The Job integration reports as upstream's job reconciler, "<framework>-<manager>-controller".
    items, _ = env.client.list(events_v1, "default")
    (created,) = [e for e in items if e["reason"] == "CreatedWorkload"]
    assert (created["regarding"]["kind"], created["reportingController"]) == ("Job", "batch/job-kueue-controller")
    assert created["reportingInstance"] == f"batch/job-kueue-controller-{socket.gethostname()}"[:128]
