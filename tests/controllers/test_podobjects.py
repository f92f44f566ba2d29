"""The job runner's Pod and Node objects: their shape, their status, log lookup, and adoption."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pykueue.apiserver.app import create_app
from pykueue.client.inprocess import InProcessClient
from pykueue.client.interface import APIError, NotFound
from pykueue.client.resources import EVENTS, JOBS, NODES, PODS
from pykueue.controllers.jobrunner import JobRunner
from pykueue.controllers.podobjects import PodPublisher, node_name, pod_log_dir, pod_object, pod_status
from pykueue.store import Store

T = TypeVar("T")
NS = "default"
T0 = datetime(2025, 1, 10, 12, 0, 0, tzinfo=UTC)
T1 = datetime(2025, 1, 10, 12, 0, 5, tzinfo=UTC)


@dataclass
class FakePod:
    """The fields of the runner's pod record the publisher reads."""

    name: str = "job-abcde"
    uid: str = "u-1"
    index: int | None = None
    namespace: str = NS
    job_name: str = "job"
    job_uid: str = "job-uid"
    template: dict[str, Any] = field(default_factory=dict)
    exit_code: int | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None

    @property
    def has_process(self) -> bool:
        return self.started_at is not None and self.exit_code is None


TEMPLATE = {
    "metadata": {"labels": {"app": "x", "kueue.x-k8s.io/podset": "main"}, "annotations": {"a": "b"}},
    "spec": {
        "restartPolicy": "Never",
        "nodeSelector": {"pool": "p"},
        "tolerations": [{"key": "k", "operator": "Exists"}],
        "containers": [{"name": "main", "image": "busybox", "command": ["true"]}],
    },
}


def test_pod_object_is_the_job_controllers() -> None:
    pod = pod_object(FakePod(index=2, name="job-2-abcde", template=TEMPLATE), "node-1")
    meta, spec = pod["metadata"], pod["spec"]
    assert meta["labels"] == {
        "app": "x",
        "kueue.x-k8s.io/podset": "main",
        "batch.kubernetes.io/job-name": "job",
        "job-name": "job",
        "batch.kubernetes.io/controller-uid": "job-uid",
        "controller-uid": "job-uid",
        "batch.kubernetes.io/job-completion-index": "2",
    }
    assert meta["annotations"] == {"a": "b", "batch.kubernetes.io/job-completion-index": "2"}
    assert meta["ownerReferences"][0] == {"apiVersion": "batch/v1", "kind": "Job", "name": "job",
                                               "uid": "job-uid", "controller": True, "blockOwnerDeletion": True}  # fmt: skip
    assert spec["nodeName"] == "node-1" and spec["hostname"] == "job-2"
    assert spec["nodeSelector"] == {"pool": "p"} and spec["tolerations"] == TEMPLATE["spec"]["tolerations"]
    assert "nodeName" not in TEMPLATE["spec"]  # the template is not changed


def _types(status: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in status["conditions"]}


def test_pod_status_through_its_life() -> None:
    pod = FakePod(template=TEMPLATE)
    pending = pod_status(pod, T0)
    assert pending["phase"] == "Pending" and "podIP" not in pending
    assert pending["containerStatuses"][0]["state"] == {"waiting": {"reason": "ContainerCreating"}}
    assert _types(pending) == {"PodReadyToStartContainers": "False", "Initialized": "True",
                               "ContainersReady": "False", "Ready": "False", "PodScheduled": "True"}  # fmt: skip
    pod.started_at = T1
    running = pod_status(pod, T0)
    assert running["phase"] == "Running" and running["startTime"] == "2025-01-10T12:00:05Z"
    assert running["podIP"] == running["hostIP"] == "127.0.0.1"
    assert running["containerStatuses"][0]["ready"] is True
    assert _types(running)["Ready"] == "True"
    pod.exit_code, pod.finished_at = 0, T1
    done = pod_status(pod, T0)
    assert done["phase"] == "Succeeded"
    assert done["containerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
    assert _types(done)["Ready"] == "False"
    pod.exit_code = 137
    failed = pod_status(pod, T0)
    assert failed["phase"] == "Failed"
    terminated = failed["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (137, "Error")
    never = pod_status(FakePod(template=TEMPLATE, exit_code=128, finished_at=T1), T0)
    assert never["containerStatuses"][0]["state"]["terminated"]["reason"] == "StartError"


def _record(work: Path, ns: str, job: str, pod: str, job_uid: str) -> Path:
    directory = work / ns / job / pod
    directory.mkdir(parents=True)
    (directory / "spec.json").write_text(json.dumps({"pod": pod, "namespace": ns, "jobUID": job_uid}))
    return directory


def _stored(ns: str, job: str, pod: str, job_uid: str, controller: bool = True) -> dict[str, Any]:
    ref = {"kind": "Job", "name": job, "uid": job_uid, "controller": controller}
    return {"metadata": {"name": pod, "namespace": ns, "ownerReferences": [ref]}}


def test_pod_log_dir_only_reaches_the_pods_own_record(tmp_path: Path) -> None:
    directory = _record(tmp_path, NS, "job", "job-abcde", "uid-1")
    assert pod_log_dir(tmp_path, _stored(NS, "job", "job-abcde", "uid-1")) == directory
    assert pod_log_dir(tmp_path, _stored(NS, "job", "job-abcde", "uid-2")) is None  # another Job's
    assert pod_log_dir(tmp_path, _stored(NS, "job", "job-abcde", "uid-1", controller=False)) is None
    assert pod_log_dir(tmp_path, _stored(NS, "..", "job-abcde", "uid-1")) is None
    assert pod_log_dir(tmp_path, _stored(NS, "job/x", "job-abcde", "uid-1")) is None
    assert pod_log_dir(tmp_path, _stored("other", "job", "job-abcde", "uid-1")) is None


# --- through the runner ------------------------------------------------------------------------------


def wait_for(fn: Callable[[], T | None], timeout: float = 15.0) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {fn}")
        time.sleep(0.02)


@pytest.fixture
def client() -> InProcessClient:
    _, parts = create_app(Store(None))
    parts.bootstrap()
    return InProcessClient(parts.handlers)


@pytest.fixture
def runners() -> Iterator[list[JobRunner]]:
    started: list[JobRunner] = []
    yield started
    for runner in started:
        runner.stop()


def _job(client: InProcessClient, name: str, command: list[str], **spec: Any) -> dict[str, Any]:
    container = {"name": "main", "image": "busybox", "command": command}
    body = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS},
        "spec": {**spec, "template": {"spec": {"restartPolicy": "Never", "containers": [container]}}},
    }
    return client.create(JOBS, body)


def _pods(client: InProcessClient) -> list[dict[str, Any]]:
    items, _ = client.list(PODS, NS)
    return items


def _phases(client: InProcessClient) -> list[str]:
    return sorted(p["status"]["phase"] for p in _pods(client))


def _runner(client: InProcessClient, work: Path, runners: list[JobRunner], **kw: Any) -> JobRunner:
    runner = JobRunner(
        client, work, run_unmanaged_jobs=True, pod_failure_backoff=0.0, scratch_dir=work.parent / "s", **kw
    )
    runner.start()
    runners.append(runner)
    return runner


def test_runner_registers_the_node_and_publishes_pods(
    client: InProcessClient, tmp_path: Path, runners: list[JobRunner]
) -> None:
    _runner(client, tmp_path / "w", runners)
    node = client.get(NODES, node_name())
    assert node["status"]["conditions"][0]["type"] == "Ready"
    _job(client, "two", ["true"], completions=2, parallelism=2)
    wait_for(lambda: _phases(client) == ["Succeeded", "Succeeded"])
    assert {p["spec"]["nodeName"] for p in _pods(client)} == {node_name()}


def test_runner_without_pod_objects(
    client: InProcessClient, tmp_path: Path, runners: list[JobRunner]
) -> None:
    _runner(client, tmp_path / "w", runners, publish_pods=False)
    _job(client, "none", ["true"])
    wait_for(
        lambda: any(
            c["type"] == "Complete"
            for c in client.get(JOBS, "none", NS).get("status", {}).get("conditions") or []
        )
    )
    assert _pods(client) == []
    with pytest.raises(NotFound):
        client.get(NODES, node_name())


def test_lowered_parallelism_deletes_the_removed_pods(
    client: InProcessClient, tmp_path: Path, runners: list[JobRunner]
) -> None:
    _runner(client, tmp_path / "w", runners)
    job = _job(client, "shrink", ["sleep", "60"], completions=4, parallelism=2)
    wait_for(lambda: _phases(client) == ["Running", "Running"])
    client.patch(JOBS, "shrink", {"spec": {"parallelism": 1}}, NS)
    wait_for(lambda: _phases(client) == ["Running"])
    assert job["metadata"]["uid"]


def test_an_adopted_pod_keeps_its_status_written(
    client: InProcessClient, tmp_path: Path, runners: list[JobRunner]
) -> None:
    """A runner that died (here: stopped without touching its pods) leaves a running pod; the next
    runner adopts it and writes its Pod's end."""
    release = tmp_path / "release"
    first = _runner(client, tmp_path / "w", runners)
    _job(client, "kept", ["sh", "-c", f"while [ ! -e {release} ]; do sleep 0.05; done"])
    wait_for(lambda: _phases(client) == ["Running"])
    runners.remove(first)
    for informer in (first._informer, first._workloads, first._pods):
        assert informer is not None
        informer.stop()
    with first._cond:
        first._stopping = True
        first._cond.notify_all()
    assert first._thread is not None and first.publisher is not None
    first._thread.join(5)
    first.publisher.stop()
    _runner(client, tmp_path / "w", runners)
    release.touch()
    wait_for(lambda: _phases(client) == ["Succeeded"])
    (pod,) = _pods(client)
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0


def _reasons(client: InProcessClient, pod: str) -> list[str]:
    items, _ = client.list(EVENTS, NS)
    return sorted(e["reason"] for e in items if e["involvedObject"]["name"] == pod)


def test_an_adopted_pod_gets_the_started_event_its_runner_did_not_record(client: InProcessClient) -> None:
    """A runner that died after starting a pod but before writing its Running status (and the
    kubelet's Started Event, which follows that write) left a Pending Pod: the runner adopting the
    pod records Started, as for a pod it started; one whose status shows it started gets none."""
    node = node_name()
    owner = _job(client, "job", ["true"], suspend=True)["metadata"]["uid"]  # the Pods' owner must exist
    unrecorded = FakePod(name="job-aaaaa", uid="u-a", job_uid=owner, template=TEMPLATE)
    client.create(PODS, pod_object(unrecorded, node))  # Pending, as the runner that died left it
    recorded = FakePod(name="job-bbbbb", uid="u-b", job_uid=owner, template=TEMPLATE, started_at=T0)
    client.create(PODS, pod_object(recorded, node))
    client.patch(PODS, recorded.name, {"status": pod_status(recorded, T0)}, NS, subresource="status")
    publisher = PodPublisher(client, node, lambda: T1)
    publisher.start()
    try:
        for pod in (unrecorded, recorded):
            pod.template, pod.started_at = {}, T0  # what the runner knows of an adopted pod
            publisher.adopted(pod)
        assert publisher.wait_idle()
    finally:
        publisher.stop()
    assert _reasons(client, unrecorded.name) == ["Started"]
    assert _reasons(client, recorded.name) == []
    assert client.get(PODS, unrecorded.name, NS)["status"]["phase"] == "Running"


class _FailsFirstCreate:
    """The real in-process client, but the first create of one Pod answers 500 (an API hiccup)."""

    def __init__(self, client: InProcessClient, pod_name: str) -> None:
        self._client = client
        self._pod_name = pod_name
        self.failed = 0

    def create(self, res: Any, body: dict[str, Any], *args: Any, **kw: Any) -> dict[str, Any]:
        if res is PODS and body["metadata"]["name"] == self._pod_name and not self.failed:
            self.failed += 1
            raise APIError(500, "InternalError", "etcdserver: request timed out")
        return self._client.create(res, body, *args, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def test_a_failed_pod_write_is_retried_alone(client: InProcessClient) -> None:
    """The publisher runs on the runtime's WorkQueue: a write that fails is retried with backoff,
    and the other pods' writes go on (the publisher's own loop used to drop a failed write)."""
    owner = _job(client, "job", ["true"], suspend=True)["metadata"]["uid"]
    flaky = _FailsFirstCreate(client, "job-aaaaa")
    publisher = PodPublisher(flaky, node_name(), lambda: datetime.now(UTC))  # type: ignore[arg-type]
    publisher.start()
    try:
        for name, uid in (("job-aaaaa", "u-a"), ("job-bbbbb", "u-b")):
            publisher.added(FakePod(name=name, uid=uid, job_uid=owner, template=TEMPLATE))
        wait_for(lambda: sorted(p["metadata"]["name"] for p in _pods(client)) == ["job-aaaaa", "job-bbbbb"])
    finally:
        publisher.stop()
    assert flaky.failed == 1
