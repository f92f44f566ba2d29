"""``pykueue schedule`` applies the workload controller's rules to the Workloads it loads, as
upstream ``WorkloadReconciler.Reconcile`` (``pkg/controller/core/workload_controller.go``) does on
its first reconcile: an inactive Workload, or one whose ``DeactivationTarget`` is True, is
deactivated and evicted; a Workload holding quota with a check in ``Retry`` is evicted and one with a
``Rejected`` check is deactivated, before the queue-state rules — also under ``--until-quiet``,
which used to stop after cycle 0 with nothing done.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
NOW = "2026-01-01T00:01:00Z"

QUEUES = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: default-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: AdmissionCheck
metadata: {name: chk}
spec: {controllerName: example.com/manual}
status:
  conditions:
  - {type: Active, status: "True", reason: Active, message: active, lastTransitionTime: "2026-01-01T00:00:00Z"}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  admissionChecks: [chk]
  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - name: default-flavor
      resources: [{name: cpu, nominalQuota: 9}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {namespace: default, name: lq}
spec: {clusterQueue: cq}
"""


def workload(*, active: bool = True, check: dict[str, Any] | None = None, conditions: tuple[Any, ...] = ()) -> str:
    """Workload ``res``: holding quota in ``cq`` when ``check`` is given, pending otherwise."""
    doc: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"namespace": "default", "name": "res", "creationTimestamp": "2026-01-01T00:00:01Z"},
        "spec": {
            "queueName": "lq",
            "active": active,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]
                        }
                    },
                }
            ],
        },
    }
    if check is not None:
        reserved = {
            "type": "QuotaReserved",
            "status": "True",
            "reason": "QuotaReserved",
            "message": "Quota reserved in ClusterQueue cq",
            "lastTransitionTime": "2026-01-01T00:00:10Z",
        }
        doc["status"] = {
            "conditions": [reserved, *conditions],
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [
                    {"name": "main", "flavors": {"cpu": "default-flavor"}, "resourceUsage": {"cpu": "1"}, "count": 1}
                ],
            },
            "admissionChecks": [{"name": "chk", "lastTransitionTime": "2026-01-01T00:00:20Z", **check}],
        }
    return yaml.safe_dump(doc)


def schedule(state: str, tmp_path: Path, *args: str) -> dict[str, Any]:
    (wl,) = [d for d in schedule_docs(QUEUES + "---\n" + state, tmp_path, *args) if d["kind"] == "Workload"]
    return wl


def schedule_docs(text: str, tmp_path: Path, *args: str) -> list[dict[str, Any]]:
    """Every document ``pykueue schedule`` prints for the state ``text``."""
    path = tmp_path / "state.yaml"
    path.write_text(text)
    proc = subprocess.run(
        [sys.executable, "-m", "pykueue", "schedule", "-f", str(path), "--now", NOW, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


def conds(wl: dict[str, Any]) -> dict[str, tuple[str, str, str, str]]:
    return {
        c["type"]: (c["status"], c["reason"], c["message"], c["lastTransitionTime"]) for c in wl["status"]["conditions"]
    }


def evictions(wl: dict[str, Any]) -> list[dict[str, Any]]:
    return list((wl["status"].get("schedulingStats") or {}).get("evictions") or [])


RETRY_MSG = 'Evicted due to AdmissionCheck in Retry state: "chk" (try later)'


@pytest.mark.parametrize("mode", [("--until-quiet",), ("--cycles", "1")])
def test_loaded_retry_check_evicts_before_the_first_cycle(tmp_path: Path, mode: tuple[str, ...]) -> None:
    """Evicted before cycle 0; with no retry delay (no requeueAt) upstream ``Reconcile`` turns the
    release's Requeued=False AdmissionCheck into BackoffFinished at once, so cycle 0 reserves it
    again (as after an eviction between cycles); it used to wait one cycle more."""
    wl = schedule(workload(check={"state": "Retry", "message": "try later"}), tmp_path, *mode)
    # Evicted on the controller's first reconcile; the check reset to Pending with its retry counted.
    assert evictions(wl) == [{"reason": "AdmissionCheck", "count": 1, "underlyingCause": ""}]
    c = conds(wl)
    assert c["Evicted"] == ("False", "QuotaReserved", f"Previously: {RETRY_MSG}", NOW)
    assert c["Requeued"] == ("True", "BackoffFinished", "The workload backoff was finished", NOW)
    assert c["QuotaReserved"] == ("True", "QuotaReserved", "Quota reserved in ClusterQueue cq", NOW)
    (chk,) = wl["status"]["admissionChecks"]
    assert (chk["state"], chk["retryCount"], chk["lastTransitionTime"]) == ("Pending", 1, "2026-01-01T00:01:00Z")


def test_loaded_retry_check_with_delay_is_evicted_and_waited_for(tmp_path: Path) -> None:
    # requeueAt = lastTransitionTime + requeueAfterSeconds = 00:01:05: --until-quiet waits for it.
    check = {"state": "Retry", "message": "try later", "requeueAfterSeconds": 45}
    wl = schedule(workload(check=check), tmp_path, "--until-quiet")
    assert evictions(wl) == [{"reason": "AdmissionCheck", "count": 1, "underlyingCause": ""}]
    assert conds(wl)["Requeued"] == ("True", "BackoffFinished", "The workload backoff was finished", "2026-01-01T00:01:05Z")
    assert conds(wl)["QuotaReserved"][:2] == ("True", "QuotaReserved")
    assert wl["status"].get("requeueState") is None


def test_a_reserved_workload_waiting_for_its_retry_delay_is_left_alone(tmp_path: Path) -> None:
    """Upstream ``Reconcile`` returns at "Waiting for backoff to finish" before the check sync and
    the Admitted sync: until requeueAt (00:01:05) only requeueAt is written; Admitted is first
    stamped when the eviction comes, at requeueAt."""
    check = {"state": "Retry", "message": "try later", "requeueAfterSeconds": 45}
    waiting = schedule(workload(check=check), tmp_path, "--cycles", "1")
    assert "Admitted" not in conds(waiting) and "Evicted" not in conds(waiting)
    assert waiting["status"]["requeueState"]["requeueAt"] == "2026-01-01T00:01:05Z"
    assert waiting["status"]["admission"]["clusterQueue"] == "cq"
    settled = schedule(workload(check=check), tmp_path, "--until-quiet")
    assert conds(settled)["Admitted"][3] == "2026-01-01T00:01:05Z"


def test_loaded_rejected_check_deactivates_before_the_first_cycle(tmp_path: Path) -> None:
    wl = schedule(workload(check={"state": "Rejected", "message": "no way"}), tmp_path, "--until-quiet")
    assert wl["spec"]["active"] is False
    c = conds(wl)
    msg = 'The workload is deactivated due to AdmissionCheck in Rejected state: "chk" (no way)'
    assert c["Evicted"] == ("True", "DeactivatedDueToAdmissionCheck", msg, "2026-01-01T00:01:00Z")
    assert c["QuotaReserved"][:2] == ("False", "Deactivated")
    assert "DeactivationTarget" not in c
    assert wl["status"].get("admission") is None
    assert evictions(wl) == [{"reason": "Deactivated", "count": 1, "underlyingCause": "AdmissionCheck"}]


DEACTIVATED = "The workload is deactivated"


def test_loaded_inactive_workload_holding_quota_is_evicted(tmp_path: Path) -> None:
    wl = schedule(workload(active=False, check={"state": "Pending", "message": ""}), tmp_path, "--until-quiet")
    at = "2026-01-01T00:01:00Z"
    assert conds(wl) == {
        "QuotaReserved": ("False", "Deactivated", DEACTIVATED, at),
        "Evicted": ("True", "Deactivated", DEACTIVATED, at),
        "Admitted": ("False", "NoReservation", "The workload has no reservation", at),
        "Requeued": ("False", "Deactivated", DEACTIVATED, at),
    }
    assert wl["status"].get("admission") is None
    assert evictions(wl) == [{"reason": "Deactivated", "count": 1, "underlyingCause": ""}]


def test_loaded_deactivation_target_deactivates_and_evicts(tmp_path: Path) -> None:
    target = {
        "type": "DeactivationTarget",
        "status": "True",
        "reason": "AdmissionCheck",
        "message": "x",
        "lastTransitionTime": "2026-01-01T00:00:10Z",
    }
    wl = schedule(workload(check={"state": "Pending", "message": ""}, conditions=(target,)), tmp_path, "--until-quiet")
    assert wl["spec"]["active"] is False
    c = conds(wl)
    assert c["Evicted"][:3] == ("True", "DeactivatedDueToAdmissionCheck", f"{DEACTIVATED} due to x")
    assert c["Requeued"][:2] == ("False", "DeactivatedDueToAdmissionCheck")
    assert "DeactivationTarget" not in c
    assert wl["status"].get("admission") is None
    assert evictions(wl) == [{"reason": "Deactivated", "count": 1, "underlyingCause": "AdmissionCheck"}]


def test_loaded_pending_inactive_workload_is_evicted(tmp_path: Path) -> None:
    # The embedded controllers' outcome for the same Workload (tests/controllers): Evicted=True
    # Deactivated, QuotaReserved=False Deactivated, Admitted=False NoReservation, one eviction counted.
    wl = schedule(workload(active=False), tmp_path, "--until-quiet")
    at = "2026-01-01T00:01:00Z"
    assert conds(wl) == {
        "Evicted": ("True", "Deactivated", DEACTIVATED, at),
        "QuotaReserved": ("False", "Deactivated", DEACTIVATED, at),
        "Admitted": ("False", "NoReservation", "The workload has no reservation", at),
    }
    assert list(conds(wl)) == ["Evicted", "QuotaReserved", "Admitted"]
    assert evictions(wl) == [{"reason": "Deactivated", "count": 1, "underlyingCause": ""}]


def test_a_long_retry_delay_is_waited_for_by_skipping_idle_time(tmp_path: Path) -> None:
    """``--until-quiet`` is discrete-event: with nothing else to do before requeueAt (00:00:20 +
    120 s = 00:02:20), the clock skips there instead of running idle cycles 1 s apart into the
    60-cycle cap (which stopped at 00:01:59 with the workload still waiting). The queues' Active
    condition keeps the time of the controllers' first reconcile, the load, whatever the run's length."""
    check = {"state": "Retry", "message": "try later", "requeueAfterSeconds": 120}
    docs = schedule_docs(QUEUES + "---\n" + workload(check=check), tmp_path, "--until-quiet")
    (wl,) = [d for d in docs if d["kind"] == "Workload"]
    assert evictions(wl) == [{"reason": "AdmissionCheck", "count": 1, "underlyingCause": ""}]
    assert conds(wl)["Requeued"] == ("True", "BackoffFinished", "The workload backoff was finished", "2026-01-01T00:02:20Z")
    assert conds(wl)["QuotaReserved"] == ("True", "QuotaReserved", "Quota reserved in ClusterQueue cq", "2026-01-01T00:02:20Z")
    assert "requeueState" not in wl["status"]
    for queue in (d for d in docs if d["kind"] in ("ClusterQueue", "LocalQueue")):
        (active,) = queue["status"]["conditions"]
        assert (active["type"], active["status"], active["lastTransitionTime"]) == ("Active", "True", NOW)


ADMITTED = {
    "type": "Admitted",
    "status": "True",
    "reason": "Admitted",
    "message": "The workload is admitted",
    "lastTransitionTime": "2026-01-01T00:00:20Z",
}


@pytest.mark.parametrize("admitted", [True, False], ids=["admitted", "all-checks-ready"])
@pytest.mark.parametrize(
    ("kind", "reason", "message"),
    [("ClusterQueue", "ClusterQueueStopped", "The ClusterQueue is stopped"),
     ("LocalQueue", "LocalQueueStopped", "The LocalQueue is stopped")],
)
def test_loaded_workload_of_a_hold_and_drain_queue_is_evicted(
    tmp_path: Path, kind: str, reason: str, message: str, admitted: bool
) -> None:
    """Upstream ``Reconcile`` syncs the checks and ``SyncAdmittedCondition`` (all checks Ready:
    Admitted, with its event) before ``reconcileOnLocalQueueActiveState`` /
    ``reconcileOnClusterQueueActiveState``, which evict an admitted Workload of a HoldAndDrain
    queue (``workloadevict.Evict``: Evicted, its event, schedulingStats); the job integration then
    clears the reservation. A Workload holding quota with its checks Ready but no Admitted condition
    lost its reservation silently ("ClusterQueue cq is stopped", no eviction)."""
    queues = (
        QUEUES.replace("  namespaceSelector: {}\n", "  namespaceSelector: {}\n  stopPolicy: HoldAndDrain\n")
        if kind == "ClusterQueue"
        else QUEUES.replace("spec: {clusterQueue: cq}", "spec: {clusterQueue: cq, stopPolicy: HoldAndDrain}")
    )
    state = workload(check={"state": "Ready", "message": "ok"}, conditions=(ADMITTED,) if admitted else ())
    docs = schedule_docs(queues + "---\n" + state, tmp_path, "--cycles", "1", "--show-events")
    (wl,) = [d for d in docs if d["kind"] == "Workload"]
    assert conds(wl)["Evicted"] == ("True", reason, message, NOW)
    assert conds(wl)["Requeued"] == ("False", reason, message, NOW)
    assert conds(wl)["QuotaReserved"][0] == "False"
    assert "admission" not in wl["status"]
    assert evictions(wl) == [{"reason": reason, "count": 1, "underlyingCause": ""}]
    events = [(d["reason"], d["note"]) for d in docs if d["kind"] == "Event"]
    admitted_event = ("Admitted", "Admitted by ClusterQueue cq, wait time since reservation was 50s")
    assert events == [*([] if admitted else [admitted_event]), (f"EvictedDueTo{reason}", message)]


def test_a_pending_workload_waiting_out_its_backoff_is_left_alone(tmp_path: Path) -> None:
    """Upstream ``Reconcile`` returns at "Waiting for backoff to finish" for an active Workload whose
    requeueAt is ahead, pending as well as reserved: no Admitted=False NoReservation, no check sync
    before 00:02:00 (it was written at once, at 00:01:00); the backoff then finishes."""
    retry = 'Evicted due to AdmissionCheck in Retry state: "chk" (try later)'
    doc = yaml.safe_load(workload())
    doc["status"] = {
        "conditions": [
            {"type": t, "status": st, "reason": r, "message": retry, "lastTransitionTime": "2026-01-01T00:00:30Z"}
            for t, st, r in (
                ("QuotaReserved", "False", "PendingEvaluation"),
                ("Evicted", "True", "AdmissionCheck"),
                ("Requeued", "False", "AdmissionCheck"),
            )
        ],
        "requeueState": {"requeueAt": "2026-01-01T00:02:00Z"},
        "admissionChecks": [
            {
                "name": "chk",
                "state": "Pending",
                "message": "Reset to Pending after eviction. Previously: Retry",
                "lastTransitionTime": "2026-01-01T00:00:30Z",
                "retryCount": 1,
            }
        ],
    }
    waiting = schedule(yaml.safe_dump(doc), tmp_path, "--cycles", "2")
    assert waiting["status"] == doc["status"]
    settled = schedule(yaml.safe_dump(doc), tmp_path, "--until-quiet")
    assert conds(settled)["Requeued"][1:] == ("BackoffFinished", "The workload backoff was finished", "2026-01-01T00:02:00Z")


def test_loaded_reserved_workload_without_checks_is_admitted(tmp_path: Path) -> None:
    """Upstream ``Reconcile``'s ``SyncAdmittedCondition``: a Workload holding quota in a ClusterQueue
    without admission checks has no check that is not Ready, so it is admitted (with upstream's
    event), however it was loaded; the simulator's check-sync fast path skipped it, and the
    Workload stayed reserved without Admitted, as no controller leaves it."""
    queues = QUEUES.replace("  admissionChecks: [chk]\n", "")
    doc = yaml.safe_load(workload(check={"state": "Ready", "message": "ok"}))
    del doc["status"]["admissionChecks"]
    docs = schedule_docs(queues + "---\n" + yaml.safe_dump(doc), tmp_path, "--cycles", "1", "--show-events")
    (wl,) = [d for d in docs if d["kind"] == "Workload"]
    assert conds(wl)["Admitted"] == ("True", "Admitted", "The workload is admitted", NOW)
    assert conds(wl)["QuotaReserved"][0] == "True"
    events = [(d["reason"], d["note"]) for d in docs if d["kind"] == "Event"]
    assert events == [("Admitted", "Admitted by ClusterQueue cq, wait time since reservation was 50s")]


def test_after_a_skip_the_batched_retry_counts_from_the_new_time(tmp_path: Path) -> None:
    """After the clock skips to requeueAt (00:02:20), the eviction there releases quota and the
    batched retry of parked Workloads it requests (upstream's requeuer,
    ``QueueInadmissibleWorkloads`` after 1 s) is due at 00:02:21, not at once: the retried
    Workload (``res``, alone in the queue at 00:02:20) gets the quota back before the parked
    higher-priority ``big`` is retried. Counting the retry from the last cycle, 80 s before, put
    ``big`` in the same cycle as ``res``, and it took the quota."""
    check = {"state": "Retry", "message": "try later", "requeueAfterSeconds": 120}
    big = yaml.safe_load(workload())
    big["metadata"]["name"] = "big"
    big["spec"]["priority"] = 100
    big["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "9"
    state = QUEUES + "---\n" + workload(check=check) + "---\n" + yaml.safe_dump(big)
    docs = schedule_docs(state, tmp_path, "--until-quiet")
    wls = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Workload"}
    assert conds(wls["res"])["QuotaReserved"][::3] == ("True", "2026-01-01T00:02:20Z")
    assert conds(wls["big"])["QuotaReserved"][0] == "False"


@pytest.mark.parametrize("state", ["Retry", "Rejected"])
def test_a_failed_check_the_cluster_queue_does_not_require_is_dropped_not_evicting(tmp_path: Path, state: str) -> None:
    """Upstream ``Reconcile`` runs ``reconcileSyncAdmissionChecks`` and ``SyncAdmittedCondition``
    before ``reconcileCheckBasedEviction``: a failed check the ClusterQueue does not require is
    removed first, so the Workload holding quota is admitted (no check left that is not Ready), not
    evicted or deactivated. The simulator evicted it, then admitted the evicted Workload."""
    queues = QUEUES.replace("  admissionChecks: [chk]\n", "")
    docs = schedule_docs(queues + "---\n" + workload(check={"state": state, "message": "no"}), tmp_path, "--show-events")
    (wl,) = [d for d in docs if d["kind"] == "Workload"]
    assert "admissionChecks" not in wl["status"]
    assert set(conds(wl)) == {"QuotaReserved", "Admitted"}
    assert conds(wl)["Admitted"] == ("True", "Admitted", "The workload is admitted", NOW)
    events = [(d["reason"], d["note"]) for d in docs if d["kind"] == "Event"]
    assert events == [("Admitted", "Admitted by ClusterQueue cq, wait time since reservation was 50s")]


# --- maximumExecutionTimeSeconds (upstream ``reconcileMaxExecutionTime``) ----------------------------------

MAX_EXEC_MSG = "The workload is deactivated due to exceeding the maximum execution time"


def _with_max_exec(state: str, seconds: int, *, no_checks: bool = False) -> str:
    docs = [d for d in yaml.safe_load_all(QUEUES + "---\n" + state) if d]
    for d in docs:
        if d["kind"] == "Workload":
            d["spec"]["maximumExecutionTimeSeconds"] = seconds
        if no_checks and d["kind"] == "ClusterQueue":
            del d["spec"]["admissionChecks"]
    return yaml.safe_dump_all(docs)


def _events(docs: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(d["type"], d["reason"], d["note"]) for d in docs if d["kind"] == "Event"]


MAX_EXEC_TARGET = ("True", "MaximumExecutionTimeExceeded", "exceeding the maximum execution time")
MAX_EXEC_EVENT = ("Warning", "MaximumExecutionTimeExceeded", "The maximum execution time (10s) exceeded")


def test_admitted_workload_with_max_execution_time_expired_is_deactivated(tmp_path: Path) -> None:
    """Upstream "admitted workload with max execution time - expired", then the deactivation: a
    loaded Workload admitted at 00:00:20 with a 10 s limit is past it at 00:01:00. The eviction
    removes the target; the workload controller, reacting to it before the job integration
    releases the quota, finds the Workload still Admitted and past its time and sets the target
    again (``reconcileMaxExecutionTime`` reads only Admitted), with a second event."""
    state = workload(check={"state": "Ready", "message": "ok"}, conditions=(ADMITTED,))
    path = tmp_path / "state.yaml"
    path.write_text(_with_max_exec(state, 10))
    docs = schedule_docs(path.read_text(), tmp_path, "--until-quiet", "--show-events")
    (wl,) = [d for d in docs if d["kind"] == "Workload"]
    assert wl["spec"]["active"] is False
    c = conds(wl)
    assert c["Evicted"] == ("True", "DeactivatedDueToMaximumExecutionTimeExceeded", MAX_EXEC_MSG, NOW)
    assert c["Requeued"][:3] == ("False", "DeactivatedDueToMaximumExecutionTimeExceeded", MAX_EXEC_MSG)
    assert c["QuotaReserved"][:2] == ("False", "Deactivated")
    assert c["DeactivationTarget"][:3] == MAX_EXEC_TARGET
    # Cleared with the target, then the release's ``SyncAdmittedCondition`` counts 00:00:20 -> 00:01:00.
    assert wl["status"]["accumulatedPastExecutionTimeSeconds"] == 40
    assert evictions(wl) == [{"reason": "Deactivated", "count": 1, "underlyingCause": "MaximumExecutionTimeExceeded"}]
    assert _events(docs) == [
        MAX_EXEC_EVENT,
        ("Normal", "EvictedDueToDeactivatedDueToMaximumExecutionTimeExceeded", MAX_EXEC_MSG),
        MAX_EXEC_EVENT,
    ]


EVICTED_BY_TEST = {
    "type": "Evicted",
    "status": "True",
    "reason": "ByTest",
    "message": "by test",
    "lastTransitionTime": "2026-01-01T00:00:30Z",
}
EVICTED_DEACTIVATED = {**EVICTED_BY_TEST, "reason": "Deactivated", "message": "The workload is deactivated"}


# name, spec.active, the Evicted condition loaded; want: the Evicted reason kept. A loaded Workload
# evicted but still holding quota, past its time: ``reconcileMaxExecutionTime`` reads only Admitted,
# so the workload controller sets the target (one event) before the job integration releases the
# quota; an evicted Workload without a requeue state is not evicted again.
LOADED_EVICTED_CASES = [
    ("evicted workload still holding quota", True, EVICTED_BY_TEST),
    ("deactivated workload still holding quota", False, EVICTED_DEACTIVATED),
]


@pytest.mark.parametrize(
    ("active", "evicted"), [c[1:] for c in LOADED_EVICTED_CASES], ids=[c[0] for c in LOADED_EVICTED_CASES]
)
def test_max_execution_time_of_evicted_workload_still_holding_quota(
    tmp_path: Path, active: bool, evicted: dict[str, Any]
) -> None:
    state = workload(active=active, check={"state": "Ready", "message": "ok"}, conditions=(ADMITTED, evicted))
    docs = schedule_docs(_with_max_exec(state, 10), tmp_path, "--until-quiet", "--show-events")
    (wl,) = [d for d in docs if d["kind"] == "Workload"]
    assert wl["spec"]["active"] is False
    c = conds(wl)
    assert c["DeactivationTarget"][:3] == MAX_EXEC_TARGET
    assert c["Evicted"][:3] == ("True", evicted["reason"], evicted["message"])
    assert c["QuotaReserved"][0] == "False"  # the job integration released it afterwards
    assert [e for e in _events(docs) if e[0] == "Warning"] == [MAX_EXEC_EVENT]



def test_admitted_workload_with_max_execution_time_is_deactivated_when_it_runs_out(tmp_path: Path) -> None:
    """Upstream "admitted workload with max execution time" (``RequeueAfter`` the time left):
    admitted at 00:01:00 with a 30 s limit, --until-quiet waits for 00:01:30 and deactivates it."""
    docs = schedule_docs(_with_max_exec(workload(), 30, no_checks=True), tmp_path, "--until-quiet", "--show-events")
    (wl,) = [d for d in docs if d["kind"] == "Workload"]
    assert wl["spec"]["active"] is False
    c = conds(wl)
    assert c["Evicted"] == ("True", "DeactivatedDueToMaximumExecutionTimeExceeded", MAX_EXEC_MSG, "2026-01-01T00:01:30Z")
    assert wl["status"]["accumulatedPastExecutionTimeSeconds"] == 30
    assert [e[1] for e in _events(docs)] == [
        "QuotaReserved",
        "Admitted",
        "MaximumExecutionTimeExceeded",
        "EvictedDueToDeactivatedDueToMaximumExecutionTimeExceeded",
        "MaximumExecutionTimeExceeded",  # set again on the evicted Workload still holding quota
    ]
    assert conds(wl)["DeactivationTarget"][:3] == ("True", "MaximumExecutionTimeExceeded", "exceeding the maximum execution time")
    # Before the limit the Workload stays admitted.
    early = schedule_docs(_with_max_exec(workload(), 30, no_checks=True), tmp_path, "--cycles", "5")
    (wl,) = [d for d in early if d["kind"] == "Workload"]
    assert wl["spec"]["active"] is True and conds(wl)["Admitted"][:2] == ("True", "Admitted")


# --- a rejected check's message and the DeactivationTarget (upstream ``workload.SetDeactivationTarget``) -----

# name, the rejected check's message; want: deactivated (else the Workload keeps its quota).
# ``reconcileCheckBasedEviction`` sets DeactivationTarget with ``AdmissionCheck in Rejected state:
# "chk" (<message>)``, untruncated (upstream ``workload.SetDeactivationTarget``): past the CRD's
# 32768 characters the API server refuses that write, upstream's reconcile fails (no event) and is
# retried, so the Workload is never deactivated. Below it, the Evicted message, which adds "The
# workload is deactivated due to ", is truncated as every other condition's.
LONG_REJECTION_CASES = [
    ("rejected message that fits the target: deactivated, the Evicted message truncated", 32700, True),
    ("rejected message longer than a condition's: the target is refused, the quota kept", 32768, False),
]


@pytest.mark.parametrize(
    ("length", "deactivated"), [c[1:] for c in LONG_REJECTION_CASES], ids=[c[0] for c in LONG_REJECTION_CASES]
)
def test_loaded_rejected_check_with_a_long_message(tmp_path: Path, length: int, deactivated: bool) -> None:
    state = workload(check={"state": "Rejected", "message": "x" * length}, conditions=(ADMITTED,))
    docs = schedule_docs(QUEUES + "---\n" + state, tmp_path, "--until-quiet", "--show-events")
    (wl,) = [d for d in docs if d["kind"] == "Workload"]
    c = conds(wl)
    assert "DeactivationTarget" not in c
    reasons = [e[1] for e in _events(docs)]
    if deactivated:
        assert wl["spec"]["active"] is False
        target = f'AdmissionCheck in Rejected state: "chk" ({"x" * length})'
        message = f"The workload is deactivated due to {target}"
        assert c["Evicted"][:3] == ("True", "DeactivatedDueToAdmissionCheck", message[:32764] + " ...")
        assert reasons[:2] == ["AdmissionCheckRejected", "EvictedDueToDeactivatedDueToAdmissionCheck"]
    else:
        assert wl["spec"]["active"] is True
        assert c["QuotaReserved"][:2] == ("True", "QuotaReserved") and c["Admitted"][0] == "True"
        assert "Evicted" not in c
        assert reasons == []
