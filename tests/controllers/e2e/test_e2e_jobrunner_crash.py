"""Crash-safe pods, end to end: kill -9 the process that runs the pods, restart it on the same
state, and every pod's work is done exactly once, never with more pods at once than admitted.

Real processes throughout: ``pykueue serve`` with its controllers and job runner (``embedded``),
or ``pykueue serve --no-controllers`` plus ``pykueue controller --run-jobs`` (``cluster``), driven
by the real kubectl through the kubeconfig the server writes. Each pod appends ``+ <pod>`` to a
trace file, sleeps, and appends ``- <pod>``; the runner process is killed with SIGKILL while the
first two pods run.
"""

from __future__ import annotations

import signal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from support import Kueue, is_true, local_queue, start_kueue, start_server, wait_for

SETUP = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: crash-flavor
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: crash-cq
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: crash-flavor
      resources:
      - name: cpu
        nominalQuota: 2
      - name: memory
        nominalQuota: 4Gi
"""

JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: crash-job
  namespace: default
  labels:
    kueue.x-k8s.io/queue-name: crash-lq
spec:
  parallelism: 2
  completions: 4
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", 'echo "+ $HOSTNAME" >> "$TRACE"; sleep {sleep}; echo "- $HOSTNAME" >> "$TRACE"']
        env:
        - name: TRACE
          value: "{trace}"
        resources:
          requests:
            cpu: "1"
            memory: 100Mi
"""


def _lines(trace: Path) -> list[tuple[str, str]]:
    if not trace.exists():
        return []
    return [(line[0], line[2:]) for line in trace.read_text().splitlines() if line]


def _peak(lines: list[tuple[str, str]]) -> int:
    running = peak = 0
    for sign, _ in lines:
        running += 1 if sign == "+" else -1
        peak = max(peak, running)
    return peak


def _restart(k: Kueue, mode: str) -> None:
    """SIGKILL the process that runs the pods and start it again on the same state."""
    if mode == "embedded":
        k.server.stop(signal.SIGKILL)
        k.server = start_server(
            k.base, ["--time-offset-file", str(k.offset_file)], data_dir=k.server.data_dir, controllers=True
        )
    else:
        k.stop_controller(kill=True)
        k.start_controller()


@pytest.mark.parametrize("mode", ["embedded", "cluster"])
@pytest.mark.parametrize(
    "sleep",
    [6, 1],
    ids=["pods-outlive-the-restart", "pods-end-while-down"],  # adopted running, or accounted from their exit files
)
def test_kill_9_mid_job_runs_each_pod_exactly_once(tmp_path: Path, mode: str, sleep: int) -> None:
    k = start_kueue(tmp_path, mode)
    trace = tmp_path / "trace"
    try:
        k.apply(SETUP)
        k.apply(local_queue("crash-lq", "crash-cq"))
        k.apply(JOB.replace("{sleep}", str(sleep)).replace("{trace}", str(trace)))
        wait_for(lambda: len(_lines(trace)) >= 2, timeout=60, what="the first two pods run")
        _restart(k, mode)

        def finished() -> dict[str, Any] | None:
            j = k.get("job", "crash-job")
            return j if is_true(j, "Complete") or is_true(j, "Failed") else None

        job = wait_for(finished, timeout=90, what="the Job finished")
        assert is_true(job, "Complete"), job["status"]
        assert job["status"]["succeeded"] == 4 and "failed" not in job["status"]
        lines = _lines(trace)
        starts = Counter(pod for sign, pod in lines if sign == "+")
        ends = Counter(pod for sign, pod in lines if sign == "-")
        assert len(starts) == 4 and set(starts.values()) == {1}, lines  # no pod ran twice
        assert starts == ends, lines  # and none was cut short
        assert _peak(lines) == 2, lines  # never more than the admitted 2 at once
    finally:
        k.stop()
