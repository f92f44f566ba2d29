"""``pykueue schedule`` end to end: the real command in a subprocess on the example states.

Golden files pin the whole output (objects, statuses, events, explanations); the table below
states, independently of the goldens, what each seed example must show. Regenerate goldens
after an intended behaviour change with ``PYKUEUE_UPDATE_GOLDEN=1 pytest tests/cli``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
GOLDEN = EXAMPLES / "golden"
NOW = "2026-01-01T00:01:00Z"


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pykueue", "schedule", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def workloads(out: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in yaml.safe_load_all(out) if d and d["kind"] == "Workload"}


def cond(wl: dict[str, Any], ctype: str) -> tuple[str, str] | None:
    for c in wl.get("status", {}).get("conditions", []):
        if c["type"] == ctype:
            return c["status"], c["reason"]
    return None


EXAMPLE_ARGS = {
    "borrowing": [],
    "borrowing-limit": [],
    "lending-limit": [],
    "preemption": [],
    "fungibility": [],
    "strict-fifo": [],
    "best-effort-fifo": [],
    "admission-checks": [],
    "fair-sharing": ["--config", "examples/fair-sharing-config.yaml"],
}

# example -> {workload: (QuotaReserved, Admitted) as (status, reason)}
EXPECTED = {
    "borrowing": {  # 7+7+7 = 21 CPUs = 9 nominal + 12 borrowed from team-b-cq
        "job-1": (("True", "QuotaReserved"), ("True", "Admitted")),
        "job-2": (("True", "QuotaReserved"), ("True", "Admitted")),
        "job-3": (("True", "QuotaReserved"), ("True", "Admitted")),
        "job-4": (("False", "WaitingForQuota"), ("False", "NoReservation")),
    },
    "borrowing-limit": {  # 5+5 = 10 = 9 + borrowingLimit 1
        "job-1": (("True", "QuotaReserved"), ("True", "Admitted")),
        "job-2": (("True", "QuotaReserved"), ("True", "Admitted")),
        "job-3": (("False", "WaitingForQuota"), ("False", "NoReservation")),
    },
    "lending-limit": {  # 5+5 = 10 = 9 + lendingLimit 1
        "job-1": (("True", "QuotaReserved"), ("True", "Admitted")),
        "job-2": (("True", "QuotaReserved"), ("True", "Admitted")),
        "job-3": (("False", "WaitingForQuota"), ("False", "NoReservation")),
    },
    "preemption": {
        "high-1": (("True", "QuotaReserved"), ("True", "Admitted")),
        "low-1": (("False", "WaitingForQuota"), ("False", "NoReservation")),
    },
    "fungibility": {"new": (("True", "QuotaReserved"), ("True", "Admitted"))},
    "strict-fifo": {"w1": (("False", "WaitingForQuota"), ("False", "NoReservation")), "w2": (None, None)},
    "best-effort-fifo": {
        "w1": (("False", "WaitingForQuota"), ("False", "NoReservation")),
        "w2": (("True", "QuotaReserved"), ("True", "Admitted")),
    },
    "admission-checks": {"job-1": (("True", "QuotaReserved"), ("False", "UnsatisfiedAdmissionChecks"))},
    "fair-sharing": {
        "b1": (("True", "QuotaReserved"), ("True", "Admitted")),
        "a1": (("False", "WaitingForQuota"), ("False", "NoReservation")),
    },
}


@pytest.mark.parametrize("name", sorted(EXAMPLE_ARGS))
def test_example_decisions(name: str) -> None:
    proc = run("-f", f"examples/{name}.yaml", "--until-quiet", "--now", NOW, *EXAMPLE_ARGS[name])
    assert proc.returncode == 0, proc.stderr
    wls = workloads(proc.stdout)
    for wl_name, (qr, admitted) in EXPECTED[name].items():
        assert cond(wls[wl_name], "QuotaReserved") == qr, wl_name
        assert cond(wls[wl_name], "Admitted") == admitted, wl_name


@pytest.mark.parametrize("name", sorted(EXAMPLE_ARGS))
def test_example_golden(name: str) -> None:
    args = ["-f", f"examples/{name}.yaml", "--until-quiet", "--now", NOW, "--explain", "--show-events"]
    proc = run(*args, *EXAMPLE_ARGS[name])
    assert proc.returncode == 0, proc.stderr
    golden = GOLDEN / f"{name}.yaml"
    if os.environ.get("PYKUEUE_UPDATE_GOLDEN"):
        golden.write_text(proc.stdout)
    assert proc.stdout == golden.read_text()


def test_borrowing_flavors_reservation_shows_borrowed_cpu() -> None:
    proc = run("-f", "examples/borrowing.yaml", "--until-quiet", "--now", NOW)
    cqs = {d["metadata"]["name"]: d for d in yaml.safe_load_all(proc.stdout) if d and d["kind"] == "ClusterQueue"}
    team_a = cqs["team-a-cq"]
    assert team_a["apiVersion"] == "kueue.x-k8s.io/v1beta1"
    assert team_a["spec"]["cohort"] == "team-ab"
    cpu = next(r for r in team_a["status"]["flavorsReservation"][0]["resources"] if r["name"] == "cpu")
    assert cpu == {"name": "cpu", "total": "21", "borrowed": "12"}
    assert team_a["status"]["reservingWorkloads"] == 3
    assert team_a["status"]["pendingWorkloads"] == 1


def test_preemption_writes_upstream_conditions_and_events() -> None:
    proc = run("-f", "examples/preemption.yaml", "--cycles", "1", "--now", NOW, "--show-events")
    assert proc.returncode == 0, proc.stderr
    docs = [d for d in yaml.safe_load_all(proc.stdout) if d]
    low = next(d for d in docs if d["kind"] == "Workload" and d["metadata"]["name"] == "low-1")
    evicted = next(c for c in low["status"]["conditions"] if c["type"] == "Evicted")
    assert (evicted["status"], evicted["reason"]) == ("True", "Preempted")
    assert evicted["message"].startswith("Preempted to accommodate a workload (UID: ")
    assert evicted["message"].endswith(
        "due to prioritization in the ClusterQueue; preemptor path: /team-a-cq; preemptee path: /team-a-cq"
    )
    # The job integration completes the eviction at the cycle's time, not one cycle later: upstream
    # ``JobReconciler.ReconcileGenericJob`` ("6. handle eviction") stops the job and, the job no
    # longer active, clears the reservation in the same reconcile, at ``r.clock.Now()``.
    assert "admission" not in low["status"]
    reserved = next(c for c in low["status"]["conditions"] if c["type"] == "QuotaReserved")
    assert (reserved["status"], reserved["lastTransitionTime"]) == ("False", evicted["lastTransitionTime"])
    requeued = next(c for c in low["status"]["conditions"] if c["type"] == "Requeued")
    assert (requeued["status"], requeued["reason"], requeued["lastTransitionTime"]) == (
        "True",
        "Preempted",
        evicted["lastTransitionTime"],
    )
    reasons = [(d["reason"], d["regarding"]["name"]) for d in docs if d["kind"] == "Event"]
    assert ("EvictedDueToPreempted", "low-1") in reasons
    assert ("Preempted", "low-1") in reasons
    assert ("PreemptedWorkload", "high-1") in reasons
    high = next(d for d in docs if d["kind"] == "Workload" and d["metadata"]["name"] == "high-1")
    qr = next(c for c in high["status"]["conditions"] if c["type"] == "QuotaReserved")
    assert qr["reason"] == "WaitingForPreemptedWorkloads"
    assert qr["message"].endswith(". Pending the preemption of 1 workload(s)")


def test_strict_fifo_blocks_every_cycle() -> None:
    proc = run("-f", "examples/strict-fifo.yaml", "--cycles", "5", "--now", NOW)
    wls = workloads(proc.stdout)
    assert cond(wls["w1"], "QuotaReserved") == ("False", "WaitingForQuota")
    assert "status" not in wls["w2"] or not wls["w2"]["status"].get("conditions")


def test_invalid_seed_borrowing_limit_is_rejected_with_exit_code_2() -> None:
    proc = run("-f", "examples/invalid-borrowing-limit.yaml")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert 'ClusterQueue.kueue.x-k8s.io "team-a-cq" is invalid' in proc.stderr
    assert "spec.resourceGroups[0]" in proc.stderr
    assert "flavors must have the same number of resources as the coveredResources" in proc.stderr


def test_json_output_and_stdin() -> None:
    text = (EXAMPLES / "borrowing.yaml").read_text()
    proc = run("-f", "-", "-o", "json", "--now", NOW, stdin=text)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["kind"] == "List"
    names = [i["metadata"]["name"] for i in doc["items"]]
    assert names[:3] == ["default-flavor", "team-a-cq", "team-b-cq"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--cycles", "0"], "--cycles must be at least 1"),
        (["--feature-gates", "NoSuchGate=true"], "NoSuchGate"),
        (["--now", "yesterday"], "--now"),
        (["--config", "examples/borrowing.yaml"], "error:"),
    ],
    ids=["cycles-zero", "unknown-gate", "bad-now", "config-wrong-kind"],
)
def test_bad_flags_exit_2(args: list[str], needle: str) -> None:
    proc = run("-f", "examples/borrowing.yaml", *args)
    assert proc.returncode == 2
    assert needle in proc.stderr


def test_feature_gate_changes_decision() -> None:
    """PartialAdmission off: a workload that only fits partially stays pending."""
    state = """
apiVersion: kueue.x-k8s.io/v1beta2
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
    flavors: [{name: f, resources: [{name: cpu, nominalQuota: 3}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: ns, name: lq}
spec: {clusterQueue: cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {namespace: ns, name: wl}
spec:
  queueName: lq
  podSets:
  - name: main
    count: 5
    minCount: 2
    template: {spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}}
"""
    on = workloads(run("-f", "-", "--now", NOW, stdin=state).stdout)["wl"]
    assert on["status"]["admission"]["podSetAssignments"][0]["count"] == 3
    off = workloads(run("-f", "-", "--now", NOW, "--feature-gates", "PartialAdmission=false", stdin=state).stdout)["wl"]
    assert cond(off, "QuotaReserved") == ("False", "ExceedsMaxQuota")


def test_explain_lists_flavors_and_reasons() -> None:
    proc = run("-f", "examples/borrowing.yaml", "--until-quiet", "--now", NOW, "--explain")
    comments = [line for line in proc.stdout.splitlines() if line.startswith("#")]
    assert comments[0] == "# Workload team-a/job-4 (LocalQueue team-a-queue, ClusterQueue team-a-cq) is not admitted."
    assert any("flavor default-flavor:" in c and "1 more needed" in c for c in comments)
    yaml.safe_load_all(proc.stdout)  # still valid YAML


# --- issue 11: the shared fidelity scenarios, run as their headers say (skipped without the folder) ----

FIDELITY = ROOT.parent / "shared" / "fidelity"
UNAVAILABLE_TPU = "couldn't assign flavors to pod set main: resource acme.io/tpu unavailable in ClusterQueue"
NEEDED = "couldn't assign flavors to pod set {}: insufficient unused quota for {} in flavor {}, {} more needed"

# file -> workload -> (QuotaReserved (status, reason, message), admitted ClusterQueue or None), as upstream decides.
FIDELITY_EXPECTED: dict[str, dict[str, tuple[tuple[str, str, str], str | None]]] = {
    "byte-quantity-message-format": {
        "big-mem": (
            (
                "False",
                "ExceedsMaxQuota",
                "couldn't assign flavors to pod set main: insufficient quota for memory in flavor slab, previously "
                "considered podsets requests (0) + current podset request (1500M) > maximum capacity (1G)",
            ),
            None,
        ),
        "some-mem": (("False", "WaitingForQuota", NEEDED.format("main", "memory", "slab", "500M")), None),
    },
    "nofit-reason-uncovered-resource": {
        "tpu-a": (("False", "PendingEvaluation", "Bypassed scheduling evaluation because an equivalent workload recently failed"), None),
        "tpu-b": (("False", "PendingEvaluation", "Workload is pending evaluation in the scheduling queue"), None),
        "tpu-c": (("False", "ExceedsMaxQuota", UNAVAILABLE_TPU), None),
        "tpu-d": (("False", "NoMatchingFlavor", UNAVAILABLE_TPU), None),
    },
    "requeue-after-eviction-timing": {
        "reclaimer": (("True", "QuotaReserved", "Quota reserved in ClusterQueue cq-east"), "cq-east"),
        "priority-job": (("True", "QuotaReserved", "Quota reserved in ClusterQueue cq-west"), "cq-west"),
        "filler": (("False", "WaitingForQuota", NEEDED.format("main", "cpu", "general", "1")), None),
        "squatter": (("False", "WaitingForQuota", NEEDED.format("main", "cpu", "general", "4")), None),
    },
    "startup-eviction-before-first-cycle": {
        "drained": (("False", "Suspended", "ClusterQueue cq-frozen is inactive"), None),
        "needy": (("True", "QuotaReserved", "Quota reserved in ClusterQueue cq-live"), "cq-live"),
    },
}

# Other conditions the headers state: (file, workload) -> type -> (status, reason).
FIDELITY_CONDITIONS = {
    ("requeue-after-eviction-timing", "squatter"): {
        "Evicted": ("True", "Preempted"),
        "Preempted": ("True", "InCohortReclamation"),
        "Requeued": ("True", "Preempted"),
    },
    ("startup-eviction-before-first-cycle", "drained"): {
        "Evicted": ("True", "ClusterQueueStopped"),
        "Requeued": ("False", "ClusterQueueStopped"),
    },
}


def _header_args(path: Path) -> list[str]:
    """The flags of the file's ``# Run: pykueue schedule -f FILE ...`` header line."""
    for line in path.read_text().splitlines():
        if line.startswith("# Run: pykueue schedule "):
            args = line.removeprefix("# Run: pykueue schedule ").split()
            return [str(path) if a == path.name else a for a in args]
    raise AssertionError(f"{path.name}: no '# Run:' line")


@pytest.mark.skipif(not FIDELITY.is_dir(), reason="shared fidelity scenarios not present")
@pytest.mark.parametrize("name", sorted(FIDELITY_EXPECTED))
def test_shared_fidelity_scenario(name: str) -> None:
    path = FIDELITY / f"{name}.yaml"
    proc = run(*_header_args(path))
    assert proc.returncode == 0, proc.stderr
    wls = workloads(proc.stdout)
    for wl_name, (qr, cq) in FIDELITY_EXPECTED[name].items():
        got = next(c for c in wls[wl_name]["status"]["conditions"] if c["type"] == "QuotaReserved")
        assert (got["status"], got["reason"], got["message"]) == qr, wl_name
        admission = wls[wl_name]["status"].get("admission")
        assert (admission["clusterQueue"] if admission else None) == cq, wl_name
        for ctype, want in FIDELITY_CONDITIONS.get((name, wl_name), {}).items():
            assert cond(wls[wl_name], ctype) == want, (wl_name, ctype)


@pytest.mark.parametrize("namespace_first", [True, False])
def test_an_explicit_namespace_with_labels_is_taken_with_the_objects_in_it(namespace_first: bool) -> None:
    """A Namespace the state gives is created as given, before the implicit one its LocalQueue and
    Workload would get: it is not refused as already existing, and its labels select it."""
    ns = "apiVersion: v1\nkind: Namespace\nmetadata: {name: team, labels: {dep: eng}}\n"
    rest = """apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: f}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {matchLabels: {dep: eng}}
  resourceGroups: [{coveredResources: [cpu], flavors: [{name: f, resources: [{name: cpu, nominalQuota: 1}]}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: team, name: lq}
spec: {clusterQueue: cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {namespace: team, name: w}
spec:
  queueName: lq
  podSets: [{name: main, count: 1, template: {spec: {containers: [{name: c, image: b, resources: {requests: {cpu: "1"}}}]}}}]
"""
    state = ns + "---\n" + rest if namespace_first else rest + "---\n" + ns
    proc = run("-f", "-", "--now", NOW, stdin=state)
    assert proc.returncode == 0, proc.stderr
    assert cond(workloads(proc.stdout)["w"], "QuotaReserved") == ("True", "QuotaReserved")


JOB_QUEUES = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: rf}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: rf
      resources:
      - {name: cpu, nominalQuota: 4}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: lq, namespace: default}
spec: {clusterQueue: cq}
---
"""
"""A flavor, a ClusterQueue of 4 cpu and the LocalQueue ``default/lq``: the Jobs' queues below."""

JOB_WORKLOAD_SPEC = """spec:
  queueName: lq
  podSets:
  - name: main
    count: 1
    template:
      spec:
        restartPolicy: Never
        containers:
        - name: c
          image: busybox
          resources: {requests: {cpu: "3"}}
          terminationMessagePath: /dev/termination-log
          terminationMessagePolicy: File
          imagePullPolicy: Always
        dnsPolicy: ClusterFirst
        schedulerName: default-scheduler
        terminationGracePeriodSeconds: 30
        securityContext: {}
"""
"""The spec of job ``j1``'s Workload (a 3-cpu pod, its template as the API server defaults the Job's)."""

MISSING_PRIORITY_CLASS_STATE = JOB_QUEUES + """
apiVersion: batch/v1
kind: Job
metadata:
  name: nowpc
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: lq, kueue.x-k8s.io/priority-class: nosuch}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
---
apiVersion: batch/v1
kind: Job
metadata:
  name: nopc
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: lq}
spec:
  template:
    spec:
      priorityClassName: nosuchpc
      restartPolicy: Never
      containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
---
apiVersion: batch/v1
kind: Job
metadata:
  name: fine
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: lq}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
"""


def test_a_job_naming_a_missing_priority_class_gets_no_workload() -> None:
    """Upstream's ``ExtractPriority`` fails for such a Job: the Job integration creates no Workload,
    the Job stays suspended (a missing WorkloadPriorityClass is also a Warning Event on it), and the
    rest of the state is scheduled. The Job integration's Events come with the Workloads' ones."""
    proc = run("-f", "-", "--until-quiet", "--now", NOW, "--show-events", stdin=MISSING_PRIORITY_CLASS_STATE)
    assert proc.returncode == 0, proc.stderr
    assert 'Job "default/nowpc": WorkloadPriorityClass "nosuch" not found' in proc.stderr
    assert 'Job "default/nopc": priorityclasses.scheduling.k8s.io "nosuchpc" not found' in proc.stderr
    docs = [d for d in yaml.safe_load_all(proc.stdout) if d]
    jobs = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Job"}
    assert jobs["nowpc"]["spec"]["suspend"] is True and jobs["nopc"]["spec"]["suspend"] is True
    assert jobs["fine"]["spec"]["suspend"] is False
    owners = [r["name"] for d in docs if d["kind"] == "Workload" for r in d["metadata"].get("ownerReferences", [])]
    assert owners == ["fine"]
    job_events = [
        (e["regarding"]["name"], e["type"], e["reason"], e["note"])
        for e in docs
        if e["kind"] == "Event" and e["regarding"]["kind"] == "Job"
    ]
    fine_wl = next(d["metadata"]["name"] for d in docs if d["kind"] == "Workload")
    assert job_events == [
        ("nowpc", "Warning", "WorkloadPriorityClassNotFound", 'WorkloadPriorityClass "nosuch" not found'),
        ("fine", "Normal", "CreatedWorkload", f"Created Workload: default/{fine_wl}"),
        ("fine", "Normal", "Started", "Admitted by clusterQueue cq"),
    ]


PREBUILT_STATE = JOB_QUEUES + """
apiVersion: batch/v1
kind: Job
metadata:
  name: j1
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: lq, kueue.x-k8s.io/prebuilt-workload-name: pre}
spec:
  parallelism: 1
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox
        resources: {requests: {cpu: "3"}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata:
  name: pre
  namespace: default
""" + JOB_WORKLOAD_SPEC


def _prebuilt_run(state: str) -> tuple[dict[str, Any], dict[str, Any]]:
    proc = run("-f", "-", "--until-quiet", "--now", NOW, stdin=state)
    assert proc.returncode == 0, proc.stderr
    docs = [d for d in yaml.safe_load_all(proc.stdout) if d]
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "Workload"] == ["pre"]  # nothing created
    return next(d for d in docs if d["kind"] == "Workload"), next(d for d in docs if d["kind"] == "Job")


def test_a_job_uses_the_prebuilt_workload_it_names() -> None:
    """``ensureOneWorkload``: a Job labelled ``kueue.x-k8s.io/prebuilt-workload-name`` takes that
    Workload (``EnsurePrebuiltWorkloadOwnership``) instead of having one created; out of sync with
    the Job, the Workload is finished ``OutOfSync`` and the Job stays suspended."""
    wl, job = _prebuilt_run(PREBUILT_STATE)
    assert [(r["kind"], r["name"], r["controller"]) for r in wl["metadata"]["ownerReferences"]] == [("Job", "j1", True)]
    assert cond(wl, "Admitted") == ("True", "Admitted") and job["spec"]["suspend"] is False
    head, _, tail = PREBUILT_STATE.partition("kind: Workload")
    wl, job = _prebuilt_run(head + "kind: Workload" + tail.replace('cpu: "3"', 'cpu: "2"', 1))
    finished = next(c for c in wl["status"]["conditions"] if c["type"] == "Finished")
    assert (finished["status"], finished["reason"], finished["message"]) == (
        "True", "OutOfSync", "The prebuilt workload is out of sync with its user job"
    )
    assert cond(wl, "QuotaReserved") is None and job["spec"]["suspend"] is True


def test_a_job_naming_a_missing_prebuilt_workload_waits_suspended() -> None:
    head, _, _ = PREBUILT_STATE.partition("---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: Workload")
    proc = run("-f", "-", "--until-quiet", "--now", NOW, stdin=head)
    assert proc.returncode == 0, proc.stderr
    assert 'its prebuilt Workload "default/pre" does not exist' in proc.stderr
    docs = [d for d in yaml.safe_load_all(proc.stdout) if d]
    assert [d for d in docs if d["kind"] == "Workload"] == []
    assert next(d for d in docs if d["kind"] == "Job")["spec"]["suspend"] is True


OWNED_WORKLOAD_STATE = JOB_QUEUES + """
apiVersion: batch/v1
kind: Job
metadata:
  name: j1
  namespace: default
  uid: 11111111-1111-1111-1111-111111111111
  labels: {kueue.x-k8s.io/queue-name: lq}
spec:
  parallelism: 1
  suspend: false
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox
        resources: {requests: {cpu: "3"}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata:
  name: job-j1-abcde
  namespace: default
  ownerReferences:
  - {apiVersion: batch/v1, kind: Job, name: j1, uid: 11111111-1111-1111-1111-111111111111, controller: true, blockOwnerDeletion: true}
  labels: {kueue.x-k8s.io/job-uid: 11111111-1111-1111-1111-111111111111}
""" + JOB_WORKLOAD_SPEC + """status:
  admission:
    clusterQueue: cq
    podSetAssignments:
    - name: main
      count: 1
      flavors: {cpu: rf}
      resourceUsage: {cpu: "3"}
  conditions:
  - {type: QuotaReserved, status: 'True', reason: QuotaReserved, message: Quota reserved in ClusterQueue cq, lastTransitionTime: '2026-01-01T00:01:00Z'}
  - {type: Admitted, status: 'True', reason: Admitted, message: The workload is admitted, lastTransitionTime: '2026-01-01T00:01:00Z'}
"""


def test_a_job_keeps_the_matching_workload_it_controls() -> None:
    """``ensureOneWorkload``: a Workload the Job already controls (same uid) and that matches it is
    the Job's Workload: none is created beside it, and the Job runs on its admission."""
    proc = run("-f", "-", "--until-quiet", "--now", NOW, stdin=OWNED_WORKLOAD_STATE)
    assert proc.returncode == 0, proc.stderr
    docs = [d for d in yaml.safe_load_all(proc.stdout) if d]
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "Workload"] == ["job-j1-abcde"]
    assert next(d for d in docs if d["kind"] == "Job")["spec"]["suspend"] is False
    cq = next(d for d in docs if d["kind"] == "ClusterQueue")
    assert (cq["status"]["pendingWorkloads"], cq["status"]["reservingWorkloads"]) == (0, 1)
    # Not matching (another request): left as it is, the Job's own Workload created beside it.
    head, _, tail = OWNED_WORKLOAD_STATE.partition("kind: Workload")
    proc = run("-f", "-", "--until-quiet", "--now", NOW, stdin=head + "kind: Workload" + tail.replace('cpu: "3"}}', 'cpu: "2"}}', 1))
    assert proc.returncode == 0, proc.stderr
    assert 'the Workload "default/job-j1-abcde" it controls does not match it' in proc.stderr
    docs = [d for d in yaml.safe_load_all(proc.stdout) if d]
    assert len([d for d in docs if d["kind"] == "Workload"]) == 2
