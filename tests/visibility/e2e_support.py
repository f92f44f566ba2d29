"""The Kueue end-to-end helpers (``tests/controllers/e2e/support.py``) and a scenario the
visibility and kueuectl tests share: a cohort with borrowing, a preemption, and pending workloads
of two LocalQueues with distinct priorities and creation times."""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

_SUPPORT = Path(__file__).resolve().parents[1] / "controllers" / "e2e" / "support.py"
if "kueue_e2e_support" not in sys.modules:
    _spec = importlib.util.spec_from_file_location("kueue_e2e_support", _SUPPORT)
    assert _spec is not None and _spec.loader is not None
    _mod = importlib.util.module_from_spec(_spec)
    sys.modules["kueue_e2e_support"] = _mod
    _spec.loader.exec_module(_mod)
support: Any = sys.modules["kueue_e2e_support"]

Kueue = support.Kueue
start_kueue = support.start_kueue
wait_for = support.wait_for
is_true = support.is_true
condition = support.condition

SETUP = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: vis-flavor
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: low
value: 10
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: mid
value: 50
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: high
value: 100
""" + "".join(
    f"""---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: {cq}
spec:
  namespaceSelector: {{}}
  cohortName: vis
  preemption:
    reclaimWithinCohort: Any
    withinClusterQueue: LowerPriority
  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - name: vis-flavor
      resources:
      - name: cpu
        nominalQuota: 2
"""
    for cq in ("cq-a", "cq-b")
) + "".join(
    f"""---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  namespace: default
  name: {lq}
spec:
  clusterQueue: {cq}
"""
    for lq, cq in (("lq-a1", "cq-a"), ("lq-a2", "cq-a"), ("lq-b", "cq-b"))
)

JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: default
  labels:
    kueue.x-k8s.io/queue-name: {queue}
{priority}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["sleep", "600"]
        resources:
          requests:
            cpu: "{cpu}"
"""


def job(name: str, queue: str, cpu: int, priority: str | None = None) -> str:
    label = f"    kueue.x-k8s.io/priority-class: {priority}" if priority else ""
    return JOB.format(name=name, queue=queue, cpu=cpu, priority=label)


def workload_of(k: Any, job_name: str) -> dict[str, Any]:
    found: dict[str, Any] = wait_for(lambda: k.workload_of(job_name), what=f"workload of {job_name}")
    return found


def admitted(k: Any, job_name: str, timeout: float = 30) -> dict[str, Any]:
    name = workload_of(k, job_name)["metadata"]["name"]
    found: dict[str, Any] = wait_for(
        lambda: (lambda wl: wl if is_true(wl, "Admitted") else None)(k.get("workload", name)),
        timeout=timeout,
        what=f"{job_name} admitted",
    )
    return found


def pending_names(k: Any, path: str) -> list[str]:
    doc = json.loads(k.kubectl("get", "--raw", path).stdout)
    return [item["metadata"]["name"] for item in doc["items"]]


def run_scenario(k: Any, pending: Callable[[str], list[str]] | None = None) -> dict[str, str]:
    """Borrowing, a reclaim preemption, then pending work; returns job name → Workload name.

    1. ``b1`` (3 cpu) in cq-b borrows 1 cpu of cq-a; 2. ``a-hi`` (2 cpu, priority high) in cq-a
    reclaims it: ``b1`` is preempted (InCohortReclamation) and pending again; ``b2`` (3 cpu)
    queues behind it in cq-b; 3. four 3-cpu jobs that cannot fit queue in cq-a over two
    LocalQueues: ``p-low-1`` (lq-a1, low), ``p-mid`` (lq-a2, mid), ``p-low-2`` (lq-a2, low),
    ``p-low-3`` (lq-a1, low), each low one created in a later second than the one before.
    ``pending``: the names a visibility API path lists (default: through the API server)."""
    if pending is None:
        pending = lambda path: pending_names(k, path)  # noqa: E731
    k.apply(SETUP)
    k.apply(job("b1", "lq-b", 3))
    b1 = admitted(k, "b1")
    assert b1["status"]["admission"]["clusterQueue"] == "cq-b"

    def borrowing() -> bool:
        st = k.get("clusterqueue", "cq-b", None).get("status") or {}
        res = {r["name"]: r for f in st.get("flavorsReservation") or [] for r in f["resources"]}
        return res.get("cpu", {}).get("borrowed") == "1"

    wait_for(borrowing, what="cq-b borrows 1 cpu")
    k.apply(job("a-hi", "lq-a1", 2, "high"))
    admitted(k, "a-hi")
    victim = k.get("workload", b1["metadata"]["name"])
    preempted = condition(victim, "Preempted")
    assert preempted is not None and preempted["reason"] == "InCohortReclamation", victim
    time.sleep(1.1)  # b1 queues by its eviction time; b2 must come a second later
    k.apply(job("b2", "lq-b", 3))
    k.apply(job("p-low-1", "lq-a1", 3, "low"))
    k.apply(job("p-mid", "lq-a2", 3, "mid"))
    names = {j: workload_of(k, j)["metadata"]["name"] for j in ("b1", "a-hi", "b2", "p-low-1", "p-mid")}
    # Queue order ties on the creation second are broken by UID: space the equal-priority ones.
    for j in ("p-low-2", "p-low-3"):
        time.sleep(1.1)
        k.apply(job(j, "lq-a2" if j == "p-low-2" else "lq-a1", 3, "low"))
        names[j] = workload_of(k, j)["metadata"]["name"]
    # The API shows a Workload before the controllers have queued it, and the visibility API lists
    # only what they hold: wait until it lists every pending one.
    queued = {"cq-a": ("p-mid", "p-low-1", "p-low-2", "p-low-3"), "cq-b": ("b1", "b2")}
    for cq, jobs in queued.items():
        path = f"/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{cq}/pendingworkloads"
        expected = sorted(names[j] for j in jobs)
        wait_for(lambda path=path, expected=expected: sorted(pending(path)) == expected, what=f"{cq}'s pending workloads")
    return names
