"""Pods as on a cluster, end to end: real ``pykueue serve`` (job runner on), real kubectl.

``kubectl get pods`` / ``-w`` / ``describe pod`` / ``logs`` (``-f job/NAME``, ``--tail``,
``--timestamps``, ``--since``, ``--since-time``) / ``delete pod``, the local Node, and Pods going
with their Job.
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from support import Kueue, is_true, local_queue, pid_alive, start_kueue, wait_for

SETUP = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: pods-flavor
spec:
  nodeLabels:
    pykueue.test/pool: local
  tolerations:
  - key: pykueue.test/dedicated
    operator: Exists
    effect: NoSchedule
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: pods-cq
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: pods-flavor
      resources:
      - name: cpu
        nominalQuota: 4
      - name: memory
        nominalQuota: 4Gi
"""

JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: default
  labels:
    kueue.x-k8s.io/queue-name: pods-lq
spec:
  backoffLimit: {backoff}
  template:
    metadata:
      labels:
        app: {name}
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", {command}]
        resources:
          requests:
            cpu: "1"
            memory: 100Mi
"""


def _job(name: str, command: str, backoff: int = 6) -> str:
    return JOB.format(name=name, command=json.dumps(command), backoff=backoff)


@pytest.fixture(scope="module")
def kueue(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kueue]:
    k = start_kueue(tmp_path_factory.mktemp("pods"), "embedded")
    k.apply(SETUP)
    k.apply(local_queue("pods-lq", "pods-cq"))
    yield k
    k.stop()


def _pods(k: Kueue, job: str) -> list[dict[str, object]]:
    return [p for p in k.items("pods") if p["metadata"]["labels"].get("batch.kubernetes.io/job-name") == job]


def _phase(k: Kueue, name: str) -> str:
    return str(k.kubectl("get", "pod", name, "-o", "jsonpath={.status.phase}").stdout)


def _failed_job(k: Kueue, name: str) -> dict[str, Any]:
    def failed() -> dict[str, Any] | None:
        job = k.get("job", name)
        return job if is_true(job, "Failed") else None

    result: dict[str, Any] = wait_for(failed, what=f"Job {name} failed")
    return result


def test_node_for_the_local_machine(kueue: Kueue) -> None:
    out = kueue.kubectl("get", "nodes").stdout.splitlines()
    assert out[0].split()[:2] == ["NAME", "STATUS"] and out[1].split()[1] == "Ready"
    node = kueue.items("nodes", None)[0]
    assert node["status"]["capacity"]["cpu"] == str(os.cpu_count())
    assert node["status"]["allocatable"]["memory"].endswith("Ki")
    assert is_true(node, "Ready")


STAMPED = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z) (.*)")


def _stamped(out: str) -> list[tuple[datetime, str]]:
    """``kubectl logs --timestamps`` lines: the kubelet's RFC3339NanoFixed time, then the line."""
    lines = []
    for line in out.splitlines():
        match = STAMPED.fullmatch(line)
        assert match is not None, line
        lines.append((datetime.fromisoformat(match[1][:26] + "+00:00"), match[2]))
    return lines


def test_pods_watch_logs_follow_tail_and_describe(kueue: Kueue, tmp_path: Path) -> None:
    lines = [f"line {i}" for i in range(1, 11)]
    gate = tmp_path / "gate"
    gate.mkdir()
    watch = kueue.server.kubectl_popen("get", "pods", "-w", "-l", "app=talker")
    try:
        # Odd lines to stdout, even lines to stderr: the log shows them in the order written. Two
        # pipes are logged in the order the pod's shim reads them: each line is written once the
        # one before has come out of `kubectl logs -f` (the test opens gate/N on reading line N),
        # then 0.3 s later (a fixed pause alone let a busy shim read two lines at once).
        talk = (
            "for i in 1 2 3 4 5 6 7 8 9 10; do if [ $((i % 2)) = 0 ]; then echo line $i >&2; else echo line $i; fi; "
            f"until [ -e {gate}/$i ]; do sleep 0.05; done; sleep 0.3; done"
        )
        kueue.apply(_job("talker", talk))
        pod = wait_for(lambda: next(iter(_pods(kueue, "talker")), None), what="the Pod")
        name = pod["metadata"]["name"]
        assert name.startswith("talker-") and len(name) == len("talker-") + 5

        follow = kueue.server.kubectl_popen("logs", "-f", "job/talker", "--pod-running-timeout=30s")
        assert follow.stdout is not None
        stuck = threading.Timer(60, follow.kill)  # a line that never comes ends the stream: no hang
        stuck.start()
        try:
            followed = []
            for i in range(1, 11):
                followed.append(follow.stdout.readline().rstrip("\n"))
                if i == 1:
                    # The first line arrived while the process still runs (it waits for gate/1):
                    # it was streamed, not read at the end.
                    assert followed == ["line 1"]
                    assert _phase(kueue, name) == "Running"
                (gate / str(i)).touch()
            rest, _ = follow.communicate(timeout=30)
        finally:
            stuck.cancel()
        assert follow.returncode == 0
        assert [*followed, *rest.splitlines()] == lines

        wait_for(lambda: _phase(kueue, name) == "Succeeded", what="the Pod succeeded")
        assert kueue.kubectl("logs", name, "--tail=2").stdout.splitlines() == lines[-2:]
        assert kueue.kubectl("logs", "job/talker").stdout.splitlines() == lines
        stamped = _stamped(kueue.kubectl("logs", "job/talker", "--timestamps").stdout)
        assert [line for _, line in stamped] == lines
        times = [t for t, _ in stamped]
        assert times == sorted(times) and (times[-1] - times[0]).total_seconds() >= 2  # when written

        table = kueue.kubectl("get", "pods", "-o", "wide").stdout.splitlines()
        header = table[0].split()
        assert header[:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"] and "NODE" in header
        row = next(r.split() for r in table if r.startswith(name))
        assert row[1:4] == ["0/1", "Completed", "0"] and row[5] == "127.0.0.1"

        described = kueue.kubectl("describe", "pod", name).stdout
        for text in ("Controlled By:  Job/talker", "Reason:       Completed", "Exit Code:    0", "Scheduled", "Started container main",
                     "pykueue.test/pool=local", "pykueue.test/dedicated:NoSchedule op=Exists"):  # fmt: skip
            assert text in described, described
    finally:
        watch.terminate()
        watched, _ = watch.communicate(timeout=10)
    statuses = [line.split()[2] for line in watched.splitlines()[1:] if line.strip()]
    assert "Running" in statuses and statuses[-1] == "Completed", watched


def test_pod_object_as_the_job_controller_writes_it(kueue: Kueue) -> None:
    kueue.apply(_job("shape", "exit 3", backoff=0))
    job = _failed_job(kueue, "shape")
    pod = _pods(kueue, "shape")[0]
    meta, spec, status = pod["metadata"], pod["spec"], pod["status"]
    uid = job["metadata"]["uid"]
    assert meta["ownerReferences"] == [{"apiVersion": "batch/v1", "kind": "Job", "name": "shape", "uid": uid,
                                        "controller": True, "blockOwnerDeletion": True}]  # fmt: skip
    labels = meta["labels"]
    assert labels["batch.kubernetes.io/job-name"] == labels["job-name"] == "shape"
    assert labels["batch.kubernetes.io/controller-uid"] == labels["controller-uid"] == uid
    assert labels["kueue.x-k8s.io/podset"] == "main" and labels["app"] == "shape"
    node = kueue.items("nodes", None)[0]["metadata"]["name"]
    assert spec["nodeName"] == node and spec["nodeSelector"] == {"pykueue.test/pool": "local"}
    assert status["phase"] == "Failed" and status["podIP"] == status["hostIP"] == "127.0.0.1"
    assert status["startTime"]
    assert [c["type"] for c in status["conditions"]] == [
        "PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready", "PodScheduled",
    ]  # fmt: skip
    terminated = status["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 3 and terminated["reason"] == "Error"
    assert kueue.kubectl("get", "pods").stdout.count("Error") >= 1


def test_delete_pod_kills_the_process_and_the_job_counts_the_failure(kueue: Kueue, tmp_path: Path) -> None:
    tmp_path.chmod(0o777)
    pid_file = tmp_path / "pid"
    kueue.apply(_job("victim", f"echo $$$$ > {pid_file}; exec sleep 120", backoff=0))
    pid = int(wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), what="the process runs"))
    name = _pods(kueue, "victim")[0]["metadata"]["name"]
    wait_for(lambda: _phase(kueue, name) == "Running", what="the Pod is Running")
    assert pid_alive(pid)
    kueue.kubectl("delete", "pod", name)
    wait_for(lambda: not pid_alive(pid), what="the process was killed")
    job = _failed_job(kueue, "victim")
    assert job["status"]["failed"] == 1
    failed = next(c for c in job["status"]["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "BackoffLimitExceeded"
    assert not any(p["metadata"]["name"] == name for p in _pods(kueue, "victim"))


def test_deleted_pod_is_replaced_while_the_backoff_limit_allows(kueue: Kueue, tmp_path: Path) -> None:
    """As the Job controller counts a deleted running pod: failed, replaced (after its backoff)
    while ``backoffLimit`` allows, then the Job fails."""
    tmp_path.chmod(0o777)
    kueue.apply(_job("phoenix", f"echo $$$$ > {tmp_path}/$HOSTNAME; exec sleep 120", backoff=1))

    def running_pod(exclude: set[str]) -> tuple[str, int] | None:
        for pod in _pods(kueue, "phoenix"):
            name = pod["metadata"]["name"]
            pid_file = tmp_path / name
            if name not in exclude and pod["status"].get("phase") == "Running" and pid_file.exists():
                text = pid_file.read_text().strip()
                if text:
                    return name, int(text)
        return None

    first, pid = wait_for(lambda: running_pod(set()), what="the first pod runs")
    kueue.kubectl("delete", "pod", first)
    wait_for(lambda: not pid_alive(pid), what="the first pod's process was killed")
    job = wait_for(lambda: (j := kueue.get("job", "phoenix"))["status"].get("failed") == 1 and j, what="failed 1")
    assert not is_true(job, "Failed")
    kueue.advance(10)  # the Job controller's first backoff
    second, pid = wait_for(lambda: running_pod({first}), what="a replacement pod runs")
    assert second != first and pid_alive(pid)
    assert [p["metadata"]["name"] for p in _pods(kueue, "phoenix")] == [second]
    kueue.kubectl("delete", "pod", second)
    wait_for(lambda: not pid_alive(pid), what="the replacement's process was killed")
    job = _failed_job(kueue, "phoenix")
    assert job["status"]["failed"] == 2
    failed = next(c for c in job["status"]["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "BackoffLimitExceeded"


def test_logs_timestamps_since_and_since_time(kueue: Kueue) -> None:
    kueue.apply(_job("clock", "echo early out; echo early err >&2; sleep 5; echo late out; echo late err >&2"))
    name = wait_for(lambda: next(iter(_pods(kueue, "clock")), {}).get("metadata", {}).get("name"), what="Pod")
    wait_for(lambda: _phase(kueue, name) == "Succeeded", timeout=60, what="the Pod succeeded")
    stamped = _stamped(kueue.kubectl("logs", name, "--timestamps").stdout)
    assert [line for _, line in stamped] == ["early out", "early err", "late out", "late err"]
    (early, _), (_, _), (late, _), (_, _) = stamped
    # Lines are stamped when the runtime reads them from the pipe (as the kubelet's CRI log
    # writer): an early line read a few milliseconds late under load narrows the 5 s gap a little.
    assert (late - early).total_seconds() >= 4.5
    # --since-time (sent as whole seconds): the first whole second after the early lines.
    since_time = datetime.fromtimestamp(math.floor(stamped[1][0].timestamp()) + 1, UTC)
    out = kueue.kubectl("logs", name, f"--since-time={since_time.strftime('%Y-%m-%dT%H:%M:%SZ')}").stdout
    assert out.splitlines() == ["late out", "late err"]
    # --since: a window reaching back past the late lines but not to the early ones, 5 s before.
    seconds = math.ceil(time.time() - stamped[2][0].timestamp()) + 3
    assert kueue.kubectl("logs", name, f"--since={seconds}s").stdout.splitlines() == ["late out", "late err"]
    assert len(kueue.kubectl("logs", name, "--since=1h").stdout.splitlines()) == 4
    last = _stamped(kueue.kubectl("logs", name, "--timestamps", "--tail=1").stdout)
    assert last == [stamped[-1]]
    # kube-apiserver's ValidatePodLogOptions, reached by a real client (kubectl rounds 400ms to 0).
    result = kueue.kubectl("logs", name, "--since=400ms", check=False)
    assert result.returncode == 1
    assert f'PodLogOptions "{name}" is invalid: sinceSeconds: Invalid value: 0: must be greater than 0' in result.stderr
    path = f"/api/v1/namespaces/default/pods/{name}/log?sinceSeconds=10&sinceTime=2025-01-10T12:00:00Z"
    result = kueue.kubectl("get", "--raw", path, check=False)
    assert "at most one of `sinceTime` or `sinceSeconds` may be specified" in result.stderr


def test_deleting_the_job_removes_its_pods(kueue: Kueue) -> None:
    kueue.apply(_job("gone", "sleep 120"))
    name = wait_for(lambda: next(iter(_pods(kueue, "gone")), {}).get("metadata", {}).get("name"), what="Pod")
    wait_for(lambda: _phase(kueue, name) == "Running", what="the Pod is Running")
    kueue.kubectl("delete", "job", "gone")
    wait_for(lambda: not _pods(kueue, "gone"), what="the Pods went with the Job")


def test_logs_errors_as_upstream(kueue: Kueue) -> None:
    kueue.apply(_job("quiet", "echo out; echo err >&2"))
    name = wait_for(lambda: next(iter(_pods(kueue, "quiet")), {}).get("metadata", {}).get("name"), what="Pod")
    wait_for(lambda: _phase(kueue, name) == "Succeeded", what="the Pod succeeded")
    assert kueue.kubectl("logs", name).stdout.splitlines() == ["out", "err"]
    result = kueue.kubectl("logs", name, "--previous", check=False)
    assert result.returncode == 1
    assert f'previous terminated container "main" in pod "{name}" not found' in result.stderr
    result = kueue.kubectl("logs", name, "-c", "other", check=False)
    assert f"container other is not valid for pod {name}" in result.stderr
    result = kueue.kubectl("logs", "no-such-pod", check=False)
    assert 'pods "no-such-pod" not found' in result.stderr


def test_deleting_the_namespace_removes_its_pods_and_processes(kueue: Kueue, tmp_path: Path) -> None:
    tmp_path.chmod(0o777)
    pid_file = tmp_path / "pid"
    kueue.kubectl("create", "namespace", "pods-ns")
    kueue.apply(local_queue("pods-lq", "pods-cq").replace("namespace: default", "namespace: pods-ns"))
    manifest = _job("inns", f"echo $$$$ > {pid_file}; exec sleep 120").replace("namespace: default", "namespace: pods-ns")
    kueue.apply(manifest)
    pid = int(wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), what="the process runs"))
    assert wait_for(lambda: kueue.items("pods", "pods-ns"), what="the Pod exists")
    kueue.kubectl("delete", "namespace", "pods-ns", "--timeout=60s")
    wait_for(lambda: not pid_alive(pid), what="the process was killed")
    result = kueue.kubectl("get", "pods", "-n", "pods-ns", "-o", "name", check=False)
    assert result.stdout.strip() == ""
