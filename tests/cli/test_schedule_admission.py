"""``pykueue schedule`` admits its state as ``kubectl apply`` to ``pykueue serve`` would.

The state goes through the API server's own request pipeline (strict field validation, defaulting,
Kueue's webhooks, ``/status`` validation); ``batch/v1`` Jobs become the Workloads the Job
integration creates. The last test applies the same Jobs to a real ``pykueue serve`` with the real
kubectl and compares the decisions.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
NOW = "2026-01-01T00:01:00Z"

QUEUES = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: on-demand}
spec:
  nodeLabels: {instance-type: on-demand}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - name: on-demand
      resources:
      - {name: cpu, nominalQuota: 3}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: default, name: lq}
spec: {clusterQueue: cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: high}
value: 1000
"""


def job(name: str, cpu: str, *, queue: str | None = "lq", parallelism: int = 1, priority: str = "") -> str:
    labels = {}
    if queue:
        labels["kueue.x-k8s.io/queue-name"] = queue
    if priority:
        labels["kueue.x-k8s.io/priority-class"] = priority
    return yaml.safe_dump(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": {
                "parallelism": parallelism,
                "completions": parallelism,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "main",
                                "image": "busybox",
                                "command": ["sh", "-c", "sleep 60"],
                                "resources": {"requests": {"cpu": cpu}},
                            }
                        ],
                    }
                },
            },
        }
    )


# Fits regardless of order: 2 + 1 CPUs fit in 3, 4 CPUs never do; "unmanaged" has no queue label.
JOBS = "---\n".join(
    [
        job("big", "4"),
        job("medium", "1", parallelism=2, priority="high"),
        job("small", "1"),
        job("unmanaged", "1", queue=None),
    ]
)


def schedule(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pykueue", "schedule", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def docs(out: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(out) if d]


def owned_by(items: list[dict[str, Any]], job_name: str) -> dict[str, Any] | None:
    for d in items:
        if d["kind"] == "Workload" and any(
            r["kind"] == "Job" and r["name"] == job_name for r in d["metadata"].get("ownerReferences") or []
        ):
            return d
    return None


def decision(wl: dict[str, Any] | None) -> Any:
    """What a Workload's status says Kueue decided: conditions (type, status, reason, message) and flavors."""
    if wl is None:
        return None
    status = wl.get("status") or {}
    conditions = sorted(
        (c["type"], c["status"], c["reason"], c["message"])
        for c in status.get("conditions") or []
        if c["type"] in ("QuotaReserved", "Admitted")
    )
    admission = status.get("admission")
    flavors = [a["flavors"] for a in admission["podSetAssignments"]] if admission else None
    return conditions, flavors, wl["spec"].get("priority")


# -- strict decoding ---------------------------------------------------------------------------------

V1BETA2_CQ_WITH_COHORT = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  cohort: research
  resourceGroups: []
"""


def test_unknown_field_is_an_error_naming_it() -> None:
    """v1beta1's ``cohort`` in a v1beta2 ClusterQueue: refused as ``kubectl apply`` refuses it."""
    proc = schedule("-f", "-", "--now", NOW, stdin=V1BETA2_CQ_WITH_COHORT)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert 'unknown field "spec.cohort"' in proc.stderr
    assert "<stdin>: document 1" in proc.stderr
    assert 'ClusterQueue "team-a"' in proc.stderr


def test_validate_false_drops_unknown_fields() -> None:
    proc = schedule("-f", "-", "--now", NOW, "--validate=false", stdin=V1BETA2_CQ_WITH_COHORT)
    assert proc.returncode == 0, proc.stderr
    (cq,) = [d for d in docs(proc.stdout) if d["kind"] == "ClusterQueue"]
    assert "cohort" not in cq["spec"] and "cohortName" not in cq["spec"]


def test_v1beta1_cohort_is_kept() -> None:
    text = V1BETA2_CQ_WITH_COHORT.replace("v1beta2", "v1beta1")
    proc = schedule("-f", "-", "--now", NOW, stdin=text)
    assert proc.returncode == 0, proc.stderr
    (cq,) = [d for d in docs(proc.stdout) if d["kind"] == "ClusterQueue"]
    assert cq["spec"]["cohort"] == "research"


def test_mutating_webhooks_apply() -> None:
    """Kueue's webhooks run: the resource-in-use finalizer, quantities as the webhook writes them."""
    proc = schedule("-f", "-", "--now", NOW, stdin=QUEUES)
    assert proc.returncode == 0, proc.stderr
    by_kind = {d["kind"]: d for d in docs(proc.stdout)}
    assert by_kind["ClusterQueue"]["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]
    assert by_kind["ResourceFlavor"]["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]
    quota = by_kind["ClusterQueue"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    assert quota["nominalQuota"] == "3"


def test_exported_metadata_is_accepted_and_kept() -> None:
    """A state exported with ``kubectl get -o yaml`` carries server-owned metadata; uid and creation time stay."""
    exported = QUEUES.replace(
        "metadata: {name: cq}",
        "metadata: {name: cq, uid: 11111111-2222-3333-4444-555555555555, resourceVersion: '42', "
        "creationTimestamp: '2025-12-31T23:00:00Z', generation: 3, managedFields: []}",
    )
    proc = schedule("-f", "-", "--now", NOW, stdin=exported)
    assert proc.returncode == 0, proc.stderr
    (cq,) = [d for d in docs(proc.stdout) if d["kind"] == "ClusterQueue"]
    assert cq["metadata"]["uid"] == "11111111-2222-3333-4444-555555555555"
    assert cq["metadata"]["creationTimestamp"] == "2025-12-31T23:00:00Z"
    assert cq["metadata"]["generation"] == 3
    assert "resourceVersion" not in cq["metadata"] and "managedFields" not in cq["metadata"]


@pytest.mark.parametrize(
    ("manifest", "needle"),
    [
        (
            "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: l, namespace: default}\n",
            "Lease is not part of a scheduling state",
        ),
        ("apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\n", 'no matches for kind "CronJob"'),
        (
            "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: default}\nspec:\n  template:\n"
            "    spec: {restartPolicy: Never, containers: []}\n",
            "spec.template.spec.containers: Required value",
        ),
        (
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: w, namespace: default}\n"
            "spec: {podSets: [], queueName: lq}\nstatus: {conditions: [{type: Bogus}]}\n",
            'Workload.kueue.x-k8s.io "w" is invalid',
        ),
    ],
    ids=["unserved-in-state", "not-served", "bad-job", "bad-status"],
)
def test_refused_objects_exit_2(manifest: str, needle: str) -> None:
    proc = schedule("-f", "-", "--now", NOW, stdin=manifest)
    assert proc.returncode == 2, proc.stdout
    assert needle in proc.stderr


# -- Jobs ------------------------------------------------------------------------------------------------


def test_jobs_become_workloads_as_the_job_integration_makes_them() -> None:
    proc = schedule("-f", "-", "--now", NOW, "--until-quiet", stdin=QUEUES + "---\n" + JOBS)
    assert proc.returncode == 0, proc.stderr
    items = docs(proc.stdout)
    medium = owned_by(items, "medium")
    assert medium is not None
    assert medium["metadata"]["name"].startswith("job-medium-")
    assert medium["spec"]["queueName"] == "lq"
    assert medium["spec"]["priority"] == 1000
    assert medium["spec"]["priorityClassRef"] == {
        "group": "kueue.x-k8s.io",
        "kind": "WorkloadPriorityClass",
        "name": "high",
    }
    assert medium["spec"]["podSets"][0]["count"] == 2
    assert owned_by(items, "unmanaged") is None
    jobs = {d["metadata"]["name"]: d for d in items if d["kind"] == "Job"}
    # Admitted Jobs are started with the flavor's node labels; the others stay suspended.
    assert jobs["medium"]["spec"]["suspend"] is False
    assert jobs["medium"]["spec"]["template"]["spec"]["nodeSelector"] == {"instance-type": "on-demand"}
    assert jobs["big"]["spec"]["suspend"] is True
    assert jobs["unmanaged"]["spec"].get("suspend") is False
    # The same output on every run (uids are stable, not the throw-away store's).
    again = schedule("-f", "-", "--now", NOW, "--until-quiet", stdin=QUEUES + "---\n" + JOBS)
    assert again.stdout == proc.stdout


def child_of(child: str, parent: str) -> str:
    """``child`` (a Job document of :func:`job`) owned by the Job ``parent`` (uid ``uid-<parent>``)."""
    doc = yaml.safe_load(child)
    doc["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": parent, "uid": f"uid-{parent}", "controller": True}
    ]
    return yaml.safe_dump(doc)


def with_uid(document: str) -> str:
    doc = yaml.safe_load(document)
    doc["metadata"]["uid"] = f"uid-{doc['metadata']['name']}"
    return yaml.safe_dump(doc)


def test_child_jobs_get_a_workload_only_without_a_managed_ancestor() -> None:
    # Upstream ReconcileGenericJob: FindAncestorJobManagedByKueue finds a Kueue-managed ancestor for
    # "managed-child" (its parent has a queue name), whose Workload stands for it; "free-child"'s
    # parent has none, so the queued child is a top-level Job with a Workload of its own.
    jobs = "---\n".join(
        [
            with_uid(job("managed-parent", "1")),
            child_of(job("managed-child", "1"), "managed-parent"),
            with_uid(job("free-parent", "1", queue=None)),
            child_of(job("free-child", "1"), "free-parent"),
        ]
    )
    proc = schedule("-f", "-", "--now", NOW, "--until-quiet", stdin=QUEUES + "---\n" + jobs)
    assert proc.returncode == 0, proc.stderr
    items = docs(proc.stdout)
    assert owned_by(items, "managed-parent") is not None
    assert owned_by(items, "managed-child") is None
    assert owned_by(items, "free-parent") is None
    free_child = owned_by(items, "free-child")
    assert free_child is not None and free_child["spec"]["queueName"] == "lq"


def test_jobs_decide_as_serve_decides(tmp_path: Path) -> None:
    """The same Jobs applied to a real ``pykueue serve`` with kubectl get the same decisions."""
    if "kueue_e2e_support" not in sys.modules:  # the key tests/visibility/e2e_support.py uses too
        spec = importlib.util.spec_from_file_location("kueue_e2e_support", ROOT / "tests/controllers/e2e/support.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["kueue_e2e_support"] = module
        spec.loader.exec_module(module)
    support = sys.modules["kueue_e2e_support"]
    start_kueue, wait_for = support.start_kueue, support.wait_for

    proc = schedule("-f", "-", "--until-quiet", stdin=QUEUES + "---\n" + JOBS)
    assert proc.returncode == 0, proc.stderr
    expected = {name: decision(owned_by(docs(proc.stdout), name)) for name in ("big", "medium", "small", "unmanaged")}
    assert expected["medium"][0][0][1:3] == ("True", "Admitted")  # the scenario admits something

    kueue = start_kueue(tmp_path, "embedded", ["--no-job-runner"])
    try:
        kueue.apply(QUEUES)
        kueue.apply(JOBS)

        def settled() -> dict[str, Any] | None:
            got = {name: decision(kueue.workload_of(name)) for name in expected}
            ok = all(
                (got[n] is None) == (expected[n] is None) and (got[n] is None or len(got[n][0]) == 2)
                for n in expected
            )
            return got if ok and got == expected else None

        wait_for(settled, timeout=30, what=f"serve decides as schedule: {expected}")
    finally:
        kueue.stop()


# -- explain ------------------------------------------------------------------------------------------


def misconfigured_workload(name: str, queue: str) -> str:
    return f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {{namespace: default, name: {name}}}
spec:
  queueName: {queue}
  podSets:
  - name: main
    count: 1
    template:
      spec:
        restartPolicy: Never
        containers: [{{name: c, image: i, resources: {{requests: {{cpu: "1"}}}}}}]
"""


@pytest.mark.parametrize(
    ("queue", "extra", "reason"),
    [
        ("nosuch", "", "Misconfigured"),
        ("held", "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
         "metadata: {namespace: default, name: held}\nspec: {clusterQueue: cq, stopPolicy: Hold}\n", "Suspended"),
    ],
    ids=["local-queue-missing", "local-queue-held"],
)
def test_explain_does_not_contradict_itself(queue: str, extra: str, reason: str) -> None:
    """A workload held out of the queues is not also said to wait behind other workloads."""
    state = QUEUES + extra + "---\n" + misconfigured_workload("w", queue)
    proc = schedule("-f", "-", "--now", NOW, "--explain", "-o", "json", stdin=state)
    assert proc.returncode == 0, proc.stderr
    paragraph = proc.stderr
    assert f"Reason: {reason}:" in paragraph
    assert f"It is not queued for scheduling until that changes ({reason})" in paragraph
    assert "waits behind" not in paragraph


def test_unmodelled_features_are_warned_about() -> None:
    state = QUEUES.replace("nodeLabels: {instance-type: on-demand}", "nodeLabels: {instance-type: on-demand}\n  topologyName: t")
    proc = schedule("-f", "-", "--now", NOW, stdin=state)
    assert proc.returncode == 0, proc.stderr
    assert (
        'warning: <stdin>: document 1: ResourceFlavor "on-demand": pykueue does not implement '
        "Topology Aware Scheduling: spec.topologyName is ignored" in proc.stderr
    )


def test_a_priority_class_value_reaches_the_queue_order() -> None:
    """A Workload whose ``spec.priority`` disagrees with its WorkloadPriorityClass gets the class's
    value (``WorkloadPriorityClassReconciler``) and is ordered by it: the later, higher-priority
    Workload takes the one CPU. The value was once written into the stored object in place, and
    the queues, which recognise an object they hold by identity, kept ordering it at 0."""

    def workload(name: str, created: str, extra: str) -> str:
        return f"""apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {{namespace: default, name: {name}, creationTimestamp: "{created}"}}
spec:
  queueName: lq
{extra}  podSets:
  - name: main
    count: 1
    template:
      spec:
        containers:
        - {{name: c, image: busybox, resources: {{requests: {{cpu: "3"}}}}}}
"""

    high = "  priority: 0\n  priorityClassRef: {group: kueue.x-k8s.io, kind: WorkloadPriorityClass, name: high}\n"
    manifests = "---\n".join(
        [QUEUES, workload("a-low", "2026-01-01T00:00:00Z", ""), workload("b-high", "2026-01-01T00:00:10Z", high)]
    )
    proc = schedule("-f", "-", "--now", NOW, "--cycles", "1", "-o", "yaml", stdin=manifests)
    assert proc.returncode == 0, proc.stderr
    wls = {d["metadata"]["name"]: d for d in docs(proc.stdout) if d["kind"] == "Workload"}
    assert wls["b-high"]["spec"]["priority"] == 1000

    def reserved(wl: dict[str, Any]) -> bool:
        conditions = (wl.get("status") or {}).get("conditions") or []
        return any(c["type"] == "QuotaReserved" and c["status"] == "True" for c in conditions)

    assert (reserved(wls["a-low"]), reserved(wls["b-high"])) == (False, True)


AFS_CONFIG = """apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
admissionFairSharing:
  usageHalfLifeTime: 10m
  usageSamplingInterval: 1m
"""

AFS_STATE = """apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  admissionScope: {admissionMode: UsageBasedAdmissionFairSharing}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: "4"}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq-a, namespace: default}
spec: {clusterQueue: cq}
status:
  fairSharing:
    weightedShare: 0
    admissionFairSharingStatus:
      consumedResources: {cpu: "8"}
      lastUpdate: "2026-01-01T00:00:00Z"
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq-b, namespace: default}
spec: {clusterQueue: cq}
"""


def afs_workload(name: str, queue: str, created: str) -> str:
    return f"""---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {{name: {name}, namespace: default, creationTimestamp: "{created}"}}
spec:
  queueName: {queue}
  podSets: [{{name: main, count: 1, template: {{spec: {{containers: [{{name: c, resources: {{requests: {{cpu: "4"}}}}}}]}}}}}}]
"""


AFS_STATE += afs_workload("a1", "lq-a", "2026-01-01T00:00:00Z") + afs_workload("b1", "lq-b", "2026-01-01T00:00:01Z")


def test_admission_fair_sharing_orders_by_local_queue_usage(tmp_path: Path) -> None:
    """A ClusterQueue with ``admissionMode: UsageBasedAdmissionFairSharing`` and the
    Configuration's ``admissionFairSharing`` admits from the LocalQueue with the lower decayed
    usage (lq-b, none) before the older workload of lq-a (8 CPU persisted in its status), and
    writes each LocalQueue's ``status.fairSharing.admissionFairSharingStatus``; without the
    configuration the older workload goes first."""
    config = tmp_path / "config.yaml"
    config.write_text(AFS_CONFIG)
    now = "2026-01-01T00:00:05Z"
    proc = schedule("-f", "-", "--now", now, "--config", str(config), stdin=AFS_STATE)
    assert proc.returncode == 0, proc.stderr
    out = {(d["kind"], d["metadata"]["name"]): d for d in docs(proc.stdout)}
    assert out[("Workload", "b1")]["status"]["admission"]["clusterQueue"] == "cq"
    assert "admission" not in out[("Workload", "a1")].get("status", {})
    assert out[("LocalQueue", "lq-a")]["status"]["fairSharing"] == {
        "weightedShare": 0,
        "admissionFairSharingStatus": {"consumedResources": {"cpu": "8"}, "lastUpdate": now},
    }
    assert out[("LocalQueue", "lq-b")]["status"]["fairSharing"]["admissionFairSharingStatus"] == {
        "consumedResources": {},
        "lastUpdate": now,
    }
    plain = schedule("-f", "-", "--now", now, stdin=AFS_STATE)
    assert plain.returncode == 0, plain.stderr
    out = {(d["kind"], d["metadata"]["name"]): d for d in docs(plain.stdout)}
    assert out[("Workload", "a1")]["status"]["admission"]["clusterQueue"] == "cq"
    assert "admission" not in out[("Workload", "b1")].get("status", {})


def test_admission_fair_sharing_samples_while_the_clock_skips_a_backoff(tmp_path: Path) -> None:
    """``--until-quiet`` skips the clock over a backoff (b1's requeueAt, +150 s), but not over a
    LocalQueue's Admission Fair Sharing sample: upstream's ``LocalQueueReconciler`` is woken every
    ``usageSamplingInterval`` (1 m), so lq-a's usage decays at +60 s and +120 s and its last
    sample is at +120 s (a skip straight to +150 s would sample once, there)."""
    config = tmp_path / "config.yaml"
    config.write_text(AFS_CONFIG)
    now = "2026-01-01T00:00:05Z"
    msg = "Exceeded the PodsReady timeout default/b1"
    state = AFS_STATE.replace(afs_workload("a1", "lq-a", "2026-01-01T00:00:00Z"), "") + f"""status:
  conditions:
  - {{type: QuotaReserved, status: "False", reason: PendingEvaluation, message: "{msg}", lastTransitionTime: "{now}"}}
  - {{type: Evicted, status: "True", reason: PodsReadyTimeout, message: "{msg}", lastTransitionTime: "{now}"}}
  - {{type: Requeued, status: "False", reason: PodsReadyTimeout, message: "{msg}", lastTransitionTime: "{now}"}}
  requeueState: {{count: 1, requeueAt: "2026-01-01T00:02:35Z"}}
"""
    proc = schedule("-f", "-", "--now", now, "--config", str(config), "--until-quiet", stdin=state)
    assert proc.returncode == 0, proc.stderr
    out = {(d["kind"], d["metadata"]["name"]): d for d in docs(proc.stdout)}
    reserved = [c for c in out[("Workload", "b1")]["status"]["conditions"] if c["type"] == "QuotaReserved"]
    assert (reserved[0]["status"], reserved[0]["lastTransitionTime"]) == ("True", "2026-01-01T00:02:35Z")
    status = out[("LocalQueue", "lq-a")]["status"]["fairSharing"]["admissionFairSharingStatus"]
    assert status["lastUpdate"] == "2026-01-01T00:02:05Z"
