"""The local job runner's confinement, end to end: a real ``pykueue serve`` (or ``serve
--no-controllers`` + ``pykueue controller --run-jobs``) driven by the real kubectl.

* a Job of parallelism 40 admitted for 3 pods (partial admission) never runs more than 3;
* a Job outside Kueue's management is left alone with a ``NotManagedByKueue`` Event, unless the
  runner was started with ``--run-unmanaged-jobs``;
* ``kubectl delete job`` kills a grandchild that left the pod's session with ``setsid``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import Kueue, is_true, local_queue, pid_alive, start_kueue, wait_for

SETUP = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: box-flavor
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: box-cq
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: box-flavor
      resources:
      - name: cpu
        nominalQuota: 3
      - name: memory
        nominalQuota: 4Gi
"""


def job_manifest(
    name: str,
    command: str,
    *,
    queue: str | None,
    parallelism: int = 1,
    completions: int = 1,
    annotations: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
) -> str:
    labels = f"\n  labels:\n    kueue.x-k8s.io/queue-name: {queue}" if queue else ""
    notes = "".join(f'\n    {k}: "{v}"' for k, v in (annotations or {}).items())
    notes = f"\n  annotations:{notes}" if notes else ""
    env_items = "".join(f'\n        - name: {k}\n          value: "{v}"' for k, v in (env or {}).items())
    env_block = f"\n        env:{env_items}" if env_items else ""
    return f"""
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: default{labels}{notes}
spec:
  parallelism: {parallelism}
  completions: {completions}
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", {json.dumps(command)}]{env_block}
        resources:
          requests:
            cpu: "1"
            memory: 100Mi
"""


@pytest.fixture(scope="module")
def kueue(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kueue]:
    k = start_kueue(tmp_path_factory.mktemp("sandbox"), "embedded")
    k.apply(SETUP)
    k.apply(local_queue("box-lq", "box-cq"))
    yield k
    k.stop()


def test_partial_admission_bounds_the_running_pods(kueue: Kueue, tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    kueue.apply(
        job_manifest(
            "wide",
            'echo + >> "$TRACE"; sleep 1; echo - >> "$TRACE"',
            queue="box-lq",
            parallelism=40,
            completions=6,
            annotations={"kueue.x-k8s.io/job-min-parallelism": "1"},
            env={"TRACE": str(trace)},
        )
    )
    job = wait_for(
        lambda: (j := kueue.get("job", "wide")) and is_true(j, "Complete") and j, timeout=90, what="done"
    )
    assert job["status"]["succeeded"] == 6
    running = peak = 0
    for line in trace.read_text().split():
        running += 1 if line == "+" else -1
        peak = max(peak, running)
    assert peak == 3  # the admitted count, not the Job's 40


def test_a_job_outside_kueue_is_left_alone_with_an_event(kueue: Kueue, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    kueue.apply(job_manifest("stray", f"touch {marker}", queue=None))

    def event() -> list[dict[str, Any]]:
        return [e for e in kueue.items("events") if e["involvedObject"]["name"] == "stray"]

    (ev,) = wait_for(event, timeout=30, what="NotManagedByKueue event")
    assert (ev["type"], ev["reason"]) == ("Warning", "NotManagedByKueue")
    assert "--run-unmanaged-jobs" in kueue.kubectl("describe", "job", "stray").stdout
    time.sleep(1)
    assert not marker.exists() and not kueue.get("job", "stray").get("status", {}).get("startTime")


def test_deleting_the_job_kills_a_setsid_grandchild(kueue: Kueue, tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild"
    command = f"(setsid sh -c 'echo $$$$ > {pidfile}; exec sleep 300' &); sleep 300"
    kueue.apply(job_manifest("daemon", command, queue="box-lq"))
    pid = int(
        wait_for(lambda: pidfile.exists() and pidfile.read_text().strip(), timeout=60, what="grandchild")
    )
    assert pid_alive(pid) and os.getsid(pid) == pid  # a session of its own
    kueue.kubectl("delete", "job", "daemon")
    wait_for(lambda: not pid_alive(pid), timeout=30, what="grandchild killed")


def test_controller_runs_unmanaged_jobs_only_when_asked(tmp_path: Path) -> None:
    k = start_kueue(tmp_path, "cluster", ["--run-unmanaged-jobs"])
    try:
        marker = tmp_path / "ran"
        k.apply(job_manifest("stray", f"touch {marker}", queue=None))
        wait_for(lambda: is_true(k.get("job", "stray"), "Complete"), timeout=60, what="unmanaged Job ran")
        assert marker.exists()
    finally:
        k.stop()
