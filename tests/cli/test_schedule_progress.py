"""``pykueue schedule`` on a big state shows progress on a terminal, and only there: stderr on a
pseudo-terminal gets a spinner naming the phase; pipes get nothing and stdout is the same bytes."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = 6000

HEAD = """apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: f}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: f
      resources: [{name: cpu, nominalQuota: 100}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: default, name: lq}
spec: {clusterQueue: cq}
"""

WORKLOAD = """apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {{namespace: default, name: w{i}, creationTimestamp: "2026-01-01T00:00:00Z"}}
spec:
  queueName: lq
  podSets:
  - name: main
    count: 1
    template:
      spec:
        containers:
        - {{name: c, image: busybox, resources: {{requests: {{cpu: "1"}}}}}}
"""


def _cmd(state: Path) -> list[str]:
    return [sys.executable, "-m", "pykueue", "schedule", "-f", str(state), "--now", "2026-01-01T00:00:10Z"]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}


def test_big_schedule_shows_progress_on_a_terminal_only(tmp_path: Path) -> None:
    state = tmp_path / "big.yaml"
    state.write_text("---\n".join([HEAD, *(WORKLOAD.format(i=i) for i in range(WORKLOADS))]))

    piped = subprocess.run(_cmd(state), capture_output=True, env=_env(), timeout=300)
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr == b""

    master, slave = pty.openpty()
    with open(tmp_path / "out.yaml", "wb") as out:
        proc = subprocess.Popen(_cmd(state), stdout=out, stderr=slave, env=_env())
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert proc.wait(timeout=300) == 0
    text = seen.decode()
    assert re.search(r"[|/\\-] (reading \S*big\.yaml|validating 6003 objects|loading 6003 objects|scheduling 6003 objects, 1 cycle\(s\)|writing the result) \(\d+s\)", text), text
    assert text.endswith("\r\x1b[K"), "the spinner line is cleared at the end"
    assert (tmp_path / "out.yaml").read_bytes() == piped.stdout
