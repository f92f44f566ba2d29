"""Kueue's batch/v1 Job webhook driven by the real kubectl against ``pykueue serve --no-controllers``.

Each test uses its own namespace, so one server serves the whole module.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from conftest import ServerProcess, start_server

QN = "kueue.x-k8s.io/queue-name"
PC = "kueue.x-k8s.io/priority-class"

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: {ns}
  labels: {labels}
  annotations: {annotations}
spec:
  parallelism: {parallelism}
  completions: {parallelism}
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["sleep", "1"]
        resources:
          requests:
            cpu: "1"
"""

LOCAL_QUEUE = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: {name}
  namespace: {ns}
spec:
  clusterQueue: cluster-queue
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = start_server(tmp_path_factory.mktemp("serve-jobs"))  # --no-controllers
    yield srv
    srv.stop()


def job(
    name: str,
    ns: str,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    parallelism: int = 1,
) -> str:
    return JOB.format(
        name=name,
        ns=ns,
        labels=json.dumps(labels or {}),
        annotations=json.dumps(annotations or {}),
        parallelism=parallelism,
    )


def namespace(server: ServerProcess, name: str, *, default_queue: bool = False) -> None:
    server.kubectl("create", "namespace", name)
    if default_queue:
        server.kubectl("apply", "-f", "-", stdin=LOCAL_QUEUE.format(name="default", ns=name))


def get_job(server: ServerProcess, ns: str, name: str) -> Any:
    return json.loads(server.kubectl("get", "job", name, "-n", ns, "-o", "json").stdout)


def test_queued_job_is_created_suspended(server: ServerProcess) -> None:
    namespace(server, "jw-queued")
    server.kubectl("apply", "-f", "-", stdin=job("sample", "jw-queued", {QN: "user-queue"}))
    created = get_job(server, "jw-queued", "sample")
    assert created["spec"]["suspend"] is True
    assert created["metadata"]["labels"][QN] == "user-queue"
    server.kubectl("apply", "-f", "-", stdin=job("free", "jw-queued"))
    assert get_job(server, "jw-queued", "free")["spec"]["suspend"] is False


def test_default_local_queue_defaulting_with_kubectl_create_job(server: ServerProcess) -> None:
    # `kubectl create job` sends a protobuf body: the webhook runs on the decoded object too.
    namespace(server, "jw-default", default_queue=True)
    out = server.kubectl("create", "job", "pi", "-n", "jw-default", "--image=busybox", "--", "true")
    assert out.stdout.strip() == "job.batch/pi created"
    created = get_job(server, "jw-default", "pi")
    assert created["metadata"]["labels"][QN] == "default"
    assert created["spec"]["suspend"] is True
    # Not in another namespace without a `default` LocalQueue.
    namespace(server, "jw-nodefault")
    server.kubectl("create", "job", "pi", "-n", "jw-nodefault", "--image=busybox")
    other = get_job(server, "jw-nodefault", "pi")
    assert QN not in (other["metadata"].get("labels") or {})
    assert other["spec"]["suspend"] is False


def test_default_priority_class_defaulting(server: ServerProcess) -> None:
    namespace(server, "jw-priority")
    wpc = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata:\n  name: default\nvalue: 1000\n"
    server.kubectl("apply", "-f", "-", stdin=wpc)
    try:
        server.kubectl("apply", "-f", "-", stdin=job("prio", "jw-priority", {QN: "q"}))
        assert get_job(server, "jw-priority", "prio")["metadata"]["labels"][PC] == "default"
    finally:
        server.kubectl("delete", "workloadpriorityclass", "default")


def test_invalid_labels_and_annotations_are_rejected(server: ServerProcess) -> None:
    namespace(server, "jw-invalid")
    bad = job(
        "bad",
        "jw-invalid",
        {QN: "User_Queue", "kueue.x-k8s.io/max-exec-time-seconds": "0"},
        {"kueue.x-k8s.io/job-min-parallelism": "3"},
        parallelism=3,
    )
    failed = server.kubectl("apply", "-f", "-", stdin=bad, check=False)
    assert failed.returncode != 0
    # a webhook's denial is a 403 Forbidden (controller-runtime's admission.Denied): kubectl
    # prints its message, the aggregated errors
    assert "Error from server (Forbidden)" in failed.stderr
    assert 'admission webhook "vjob.kb.io" denied the request: [' in failed.stderr
    assert (
        f'metadata.labels[{QN}]: Invalid value: "User_Queue": a lowercase RFC 1123 subdomain' in failed.stderr
    )
    assert (
        "metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: Invalid value: 0: should be greater than 0"
        in failed.stderr
    )
    assert (
        "metadata.annotations[kueue.x-k8s.io/job-min-parallelism]: Invalid value: 3: should be between 0 and 2"
        in failed.stderr
    )
    gone = server.kubectl("get", "job", "bad", "-n", "jw-invalid", check=False)
    assert "NotFound" in gone.stderr  # nothing was stored


def test_strconv_error_text(server: ServerProcess) -> None:
    namespace(server, "jw-strconv")
    bad = job("atoi", "jw-strconv", {"kueue.x-k8s.io/max-exec-time-seconds": "ten"})
    failed = server.kubectl("create", "-f", "-", stdin=bad, check=False)
    assert 'Invalid value: "ten": strconv.Atoi: parsing "ten": invalid syntax' in failed.stderr


def test_update_rules(server: ServerProcess) -> None:
    namespace(server, "jw-update")
    server.kubectl("apply", "-f", "-", stdin=job("upd", "jw-update", {QN: "q1", PC: "low"}))
    # Suspended: the queue can change.
    server.kubectl("label", "job", "upd", "-n", "jw-update", f"{QN}=q2", "--overwrite")
    # The priority class can never be removed.
    removed = server.kubectl("label", "job", "upd", "-n", "jw-update", f"{PC}-", check=False)
    assert removed.returncode != 0
    assert "WorkloadPriorityClass cannot be removed from a workload" in removed.stderr
    # Running: the queue name is immutable.
    server.kubectl("patch", "job", "upd", "-n", "jw-update", "-p", '{"spec":{"suspend":false}}')
    changed = server.kubectl("label", "job", "upd", "-n", "jw-update", f"{QN}=q3", "--overwrite", check=False)
    assert changed.returncode != 0
    assert f'metadata.labels[{QN}]: Invalid value: "q3": field is immutable' in changed.stderr
    assert get_job(server, "jw-update", "upd")["metadata"]["labels"][QN] == "q2"


def test_queue_name_cannot_be_dropped_in_namespace_with_default_queue(server: ServerProcess) -> None:
    namespace(server, "jw-drop", default_queue=True)
    server.kubectl("apply", "-f", "-", stdin=job("keep", "jw-drop", {QN: "other"}))
    dropped = server.kubectl("label", "job", "keep", "-n", "jw-drop", f"{QN}-", check=False)
    assert dropped.returncode != 0
    assert "queue-name must not be empty in namespace with default queue" in dropped.stderr


def test_partial_admission_parallelism_is_fixed_while_running(server: ServerProcess) -> None:
    namespace(server, "jw-partial")
    manifest = job(
        "partial", "jw-partial", {QN: "q"}, {"kueue.x-k8s.io/job-min-parallelism": "2"}, parallelism=4
    )
    server.kubectl("apply", "-f", "-", stdin=manifest)
    server.kubectl("patch", "job", "partial", "-n", "jw-partial", "-p", '{"spec":{"suspend":false}}')
    scaled = server.kubectl(
        "patch", "job", "partial", "-n", "jw-partial", "-p", '{"spec":{"parallelism":3}}', check=False
    )
    assert scaled.returncode != 0
    assert (
        "spec.parallelism: Forbidden: cannot change when partial admission is enabled and the job is not suspended"
        in scaled.stderr
    )


def test_kube_system_is_excluded(server: ServerProcess) -> None:
    server.kubectl("apply", "-f", "-", stdin=LOCAL_QUEUE.format(name="default", ns="kube-system"))
    server.kubectl("apply", "-f", "-", stdin=job("system-job", "kube-system", {QN: "Not_Valid"}))
    created = get_job(server, "kube-system", "system-job")
    assert created["spec"]["suspend"] is False


def test_denial_status_over_http(server: ServerProcess) -> None:
    namespace(server, "jw-status")
    body = yaml.safe_load(job("status", "jw-status", {QN: "Bad"}))
    resp = server.http.post(
        f"{server.url}/apis/batch/v1/namespaces/jw-status/jobs",
        json=body,
        timeout=10,
    )
    assert resp.status_code == 403
    status = resp.json()
    assert status["reason"] == "Forbidden" and status["code"] == 403
    assert status["message"].startswith(
        f'admission webhook "vjob.kb.io" denied the request: metadata.labels[{QN}]: Invalid value: "Bad"'
    )
    assert not status.get("details")
