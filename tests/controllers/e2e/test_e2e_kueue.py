"""Kueue end to end: real ``pykueue serve``, real kubectl, Jobs run by the local job runner.

Every test runs twice: with ``pykueue serve``'s own controllers (``embedded``: its child process) and as a separate
``pykueue controller`` process that reaches a ``pykueue serve --no-controllers`` API server only
over HTTP through a kubeconfig (``cluster``), proving cluster mode needs nothing but the API.
"""

from __future__ import annotations

import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import (
    ROOT,
    SEEDS,
    Kueue,
    condition,
    is_true,
    job,
    local_queue,
    start_kueue,
    start_server,
    wait_for,
)

from pykueue.apiserver.podlogs import CRI_LOG, stream_output

MODES = ["embedded", "cluster"]

FLAVOR = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: {name}
"""

CQ = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: {name}
spec:
  namespaceSelector: {{}}
  {cohort}
  preemption:
    reclaimWithinCohort: Any
    withinClusterQueue: LowerPriority
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: {flavor}
      resources:
      - name: cpu
        nominalQuota: {cpu}
      - name: memory
        nominalQuota: 4Gi
"""

@pytest.fixture(scope="module", params=MODES)
def kueue(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kueue]:
    k = start_kueue(tmp_path_factory.mktemp(f"kueue-{request.param}"), request.param)
    yield k
    k.stop()


def _events(k: Kueue, kind: str, name: str, *texts: str) -> str:
    """``kubectl describe`` of the object once it shows every one of ``texts``: the controllers
    record events through a queue written after the changes the API already shows."""

    def described() -> str | None:
        out = str(k.kubectl("describe", kind, name, "-n", "default").stdout)
        return out if all(text in out for text in texts) else None

    return str(wait_for(described, timeout=30, what=f"events of {kind}/{name}: {texts}"))


def wait_condition(k: Kueue, kind: str, name: str, ctype: str, timeout: float = 30) -> dict[str, Any]:
    """Wait until condition ``ctype`` of ``kind/name`` is True; return the object."""

    def check() -> dict[str, Any] | None:
        obj = k.get(kind, name)
        return obj if is_true(obj, ctype) else None

    found: dict[str, Any] = wait_for(check, timeout=timeout, what=f"{kind}/{name} {ctype}")
    return found


def _workload_name(k: Kueue, job_name: str) -> str:
    wl = wait_for(lambda: k.workload_of(job_name), what=f"workload of {job_name}")
    return str(wl["metadata"]["name"])


# --- a Job's life: queued, admitted, run locally, finished, quota freed -----------------------------------


def test_job_is_admitted_runs_completes_and_frees_quota(kueue: Kueue) -> None:
    kueue.apply(FLAVOR.format(name="life-flavor"))
    kueue.apply(CQ.format(name="life-cq", cohort="", flavor="life-flavor", cpu=2))
    kueue.apply(local_queue("life-lq", "life-cq"))
    kueue.apply(job("life-job", "life-lq", command="sleep 1"))
    created = kueue.get("job", "life-job")
    assert created["spec"]["suspend"] is False or created["spec"]["suspend"] is True  # admitted already or not
    name = _workload_name(kueue, "life-job")
    wl = wait_condition(kueue, "workload", name, "Admitted")
    assert wl["status"]["admission"]["clusterQueue"] == "life-cq"
    table = kueue.kubectl("get", "workloads", "-n", "default").stdout
    row = next(line.split() for line in table.splitlines() if line.startswith(name))
    assert row[1:4] == ["life-lq", "life-cq", "True"], table
    wait_for(lambda: is_true(kueue.get("job", "life-job"), "Complete"), timeout=30, what="job complete")
    done = wait_condition(kueue, "workload", name, "Finished")
    finished = condition(done, "Finished")
    assert finished is not None and finished["reason"] == "Succeeded"
    ready = condition(done, "PodsReady")  # waitForPodsReady is on by default (v1beta2 configuration)
    assert ready is not None and (ready["status"], ready["reason"]) == ("True", "Started")
    assert "kueue.x-k8s.io/resource-in-use" not in (done["metadata"].get("finalizers") or [])

    def cq_free() -> bool:
        st = kueue.get("clusterqueue", "life-cq", None).get("status") or {}
        return st.get("reservingWorkloads") == 0 and st.get("admittedWorkloads") == 0

    wait_for(cq_free, what="quota released")
    _events(kueue, "workload", name, "QuotaReserved", "Quota reserved in ClusterQueue life-cq", "Admitted by ClusterQueue life-cq")
    _events(
        kueue, "job", "life-job", "CreatedWorkload", f"Created Workload: default/{name}", "Started", "Admitted by clusterQueue life-cq"
    )


# --- borrowing and preemption ------------------------------------------------------------------------------


def test_borrowing_then_reclaim_preempts_and_readmits(kueue: Kueue) -> None:
    kueue.apply(FLAVOR.format(name="bp-flavor"))
    kueue.apply(CQ.format(name="bp-a", cohort="cohortName: bp", flavor="bp-flavor", cpu=1))
    kueue.apply(CQ.format(name="bp-b", cohort="cohortName: bp", flavor="bp-flavor", cpu=1))
    kueue.apply(local_queue("bp-a", "bp-a"))
    kueue.apply(local_queue("bp-b", "bp-b"))
    kueue.apply(job("bp-borrower", "bp-a", command="sleep 300", cpu="2"))
    borrower = _workload_name(kueue, "bp-borrower")
    wait_for(lambda: is_true(kueue.get("workload", borrower), "Admitted"), what="borrower admitted")

    def borrowed() -> bool:
        st = kueue.get("clusterqueue", "bp-a", None).get("status") or {}
        res = {r["name"]: r for f in st.get("flavorsReservation") or [] for r in f["resources"]}
        return res.get("cpu", {}).get("borrowed") == "1"

    wait_for(borrowed, what="borrowed cpu in CQ status")
    kueue.apply(job("bp-owner", "bp-b", command="sleep 300", cpu="1"))
    owner = _workload_name(kueue, "bp-owner")
    wait_for(lambda: is_true(kueue.get("workload", owner), "Admitted"), timeout=30, what="owner admitted")
    victim = kueue.get("workload", borrower)
    preempted = condition(victim, "Preempted")
    assert preempted is not None and preempted["status"] == "True"
    assert preempted["reason"] == "InCohortReclamation"
    evicted = condition(victim, "Evicted")
    assert evicted is not None and evicted["reason"] == "Preempted"
    assert not is_true(victim, "QuotaReserved")
    requeued = condition(victim, "Requeued")
    assert requeued is not None and requeued["status"] == "True" and requeued["reason"] == "Preempted"
    assert kueue.get("job", "bp-borrower")["spec"]["suspend"] is True
    _events(kueue, "workload", borrower, "EvictedDueToPreempted", "Preempted to accommodate a workload")
    table = kueue.kubectl("get", "workloads", "-n", "default").stdout
    rows = {line.split()[0]: line.split() for line in table.splitlines()[1:]}
    assert rows[owner][2:4] == ["bp-b", "True"]
    kueue.kubectl("delete", "job", "bp-owner", "bp-borrower", "-n", "default", "--cascade=background")

    def released() -> bool:
        for cq in ("bp-a", "bp-b"):
            st = kueue.get("clusterqueue", cq, None).get("status") or {}
            if st.get("reservingWorkloads") != 0 or st.get("pendingWorkloads") != 0:
                return False
        return True

    wait_for(released, what="deleted jobs leave no usage behind")


# --- an external admission-check controller written with the official Python client --------------------

CHECK = "external-check"
CONTROLLER = "example.com/external"


class ExternalCheck:
    """A tiny admission-check controller using the official ``kubernetes`` client.

    It marks its AdmissionCheck Active and sets the state of its entry in a Workload's
    ``status.admissionChecks`` when the test tells it to, as any third-party controller would.
    """

    def __init__(self, kueue: Kueue) -> None:
        from kubernetes import client

        self.api = client.CustomObjectsApi(kueue.server.api_client())

    def activate(self) -> None:
        ac = self.api.get_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "admissionchecks", CHECK)
        ac.setdefault("status", {})["conditions"] = [
            {
                "type": "Active",
                "status": "True",
                "reason": "Active",
                "message": "The admission check is active",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ]
        self.api.replace_cluster_custom_object_status("kueue.x-k8s.io", "v1beta2", "admissionchecks", CHECK, ac)

    def set_state(self, workload: str, state: str, message: str, requeue_after: int | None = None) -> None:
        from kubernetes.client.exceptions import ApiException

        for _ in range(20):
            wl = self.api.get_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", "default", "workloads", workload)
            for entry in wl["status"].get("admissionChecks") or []:
                if entry["name"] == CHECK:
                    if entry["state"] != state:
                        entry["lastTransitionTime"] = _now()
                    entry["state"] = state
                    entry["message"] = message
                    if requeue_after is not None:
                        entry["requeueAfterSeconds"] = requeue_after
            try:
                self.api.replace_namespaced_custom_object_status(
                    "kueue.x-k8s.io", "v1beta2", "default", "workloads", workload, wl
                )
                return
            except ApiException as err:
                if err.status != 409:
                    raise
        raise AssertionError("could not update the check state")


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _check_state(k: Kueue, workload: str) -> dict[str, Any] | None:
    wl = k.get("workload", workload)
    for entry in wl["status"].get("admissionChecks") or []:
        if entry["name"] == CHECK:
            return dict(entry)
    return None


def test_external_admission_check_pending_ready_retry_rejected(kueue: Kueue) -> None:
    seed = next(b for b in _seed_blocks() if "kind: AdmissionCheck" in b)
    kueue.kubectl("apply", "-f", "-", stdin=seed)  # the seed's AdmissionCheck, verbatim
    kueue.apply(
        f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata:
  name: {CHECK}
spec:
  controllerName: {CONTROLLER}
"""
    )
    kueue.apply(FLAVOR.format(name="ac-flavor"))
    cq = yaml.safe_load(CQ.format(name="ac-cq", cohort="", flavor="ac-flavor", cpu=4))
    cq["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": CHECK}]}
    kueue.apply(yaml.safe_dump(cq))
    kueue.apply(local_queue("ac-lq", "ac-cq"))

    def cq_active() -> dict[str, Any] | None:
        return condition(kueue.get("clusterqueue", "ac-cq", None), "Active")

    inactive = wait_for(lambda: (c := cq_active()) and c["status"] == "False" and c, what="inactive CQ")
    assert inactive["reason"] == "AdmissionCheckInactive", inactive
    assert inactive["message"] == f"Can't admit new workloads: references inactive AdmissionCheck(s): {CHECK}."
    external = ExternalCheck(kueue)
    external.activate()
    wait_for(lambda: (c := cq_active()) and c["status"] == "True", what="active CQ")

    # Pending -> Ready: quota is reserved first, Admitted only once the check is Ready.
    kueue.apply(job("ac-ready", "ac-lq", command="sleep 1"))
    ready_wl = _workload_name(kueue, "ac-ready")
    wait_for(lambda: is_true(kueue.get("workload", ready_wl), "QuotaReserved"), what="reserved")
    wl = kueue.get("workload", ready_wl)
    admitted = condition(wl, "Admitted")
    assert admitted is not None and admitted["reason"] == "UnsatisfiedAdmissionChecks"
    assert (_check_state(kueue, ready_wl) or {}).get("state") == "Pending"
    assert kueue.get("job", "ac-ready")["spec"]["suspend"] is True
    external.set_state(ready_wl, "Ready", "all good")
    wait_for(lambda: is_true(kueue.get("workload", ready_wl), "Admitted"), what="admitted after Ready")
    wait_for(lambda: is_true(kueue.get("job", "ac-ready"), "Complete"), timeout=30, what="job ran")

    # Pending -> Retry with a 60 s delay: requeueAt follows the check (``NeedsRequeueAtUpdate``) and
    # the workload keeps its quota until then (upstream ``Reconcile``: "Waiting for backoff to
    # finish"); at requeueAt it is evicted, requeued at once and reserved again.
    kueue.apply(job("ac-retry", "ac-lq", command="sleep 1"))
    retry_wl = _workload_name(kueue, "ac-retry")
    wait_for(lambda: is_true(kueue.get("workload", retry_wl), "QuotaReserved"), what="reserved for retry")
    external.set_state(retry_wl, "Retry", "capacity not there yet", requeue_after=60)

    def retrying() -> dict[str, Any] | None:
        w = kueue.get("workload", retry_wl)
        entry = _check_state(kueue, retry_wl) or {}
        if (
            entry.get("state") == "Retry"
            and (w["status"].get("requeueState") or {}).get("requeueAt")
            and is_true(w, "QuotaReserved")
            and not is_true(w, "Evicted")
        ):
            return w
        return None

    w = wait_for(retrying, what="Retry with the quota kept")
    requeue_at = w["status"]["requeueState"]["requeueAt"]
    time.sleep(1.5)  # wall time only (the controllers' clock stands still): a chance to (wrongly) evict
    w = kueue.get("workload", retry_wl)
    assert retrying() is not None, w["status"]
    assert w["status"]["requeueState"]["requeueAt"] == requeue_at
    described = str(kueue.kubectl("describe", "workload", retry_wl, "-n", "default").stdout)
    assert "EvictedDueToAdmissionCheck" not in described
    assert kueue.get("job", "ac-retry")["spec"]["suspend"] is True
    kueue.advance(61)

    def backoff_finished() -> dict[str, Any] | None:
        w = kueue.get("workload", retry_wl)
        rq = condition(w, "Requeued")
        if rq is not None and rq["reason"] == "BackoffFinished" and is_true(w, "QuotaReserved"):
            return w
        return None

    w = wait_for(backoff_finished, what="evicted and re-reserved at requeueAt")
    ev = condition(w, "Evicted")
    assert ev is not None and (ev["status"], ev["reason"]) == ("False", "QuotaReserved")
    assert ev["message"] == f'Previously: Evicted due to AdmissionCheck in Retry state: "{CHECK}" (capacity not there yet)'
    assert not (w["status"].get("requeueState") or {}).get("requeueAt")
    assert [(e["reason"], e["count"]) for e in w["status"]["schedulingStats"]["evictions"]] == [("AdmissionCheck", 1)]
    entry = _check_state(kueue, retry_wl) or {}
    assert entry.get("state") == "Pending" and entry.get("retryCount") == 1
    assert entry.get("message") == "Reset to Pending after eviction. Previously: Retry"
    _events(kueue, "workload", retry_wl, "EvictedDueToAdmissionCheck")
    external.set_state(retry_wl, "Ready", "now it fits")
    wait_for(lambda: is_true(kueue.get("workload", retry_wl), "Admitted"), what="re-admitted")

    # Pending -> Rejected: deactivated, evicted, event.
    kueue.apply(job("ac-reject", "ac-lq", command="sleep 1"))
    reject_wl = _workload_name(kueue, "ac-reject")
    wait_for(lambda: is_true(kueue.get("workload", reject_wl), "QuotaReserved"), what="reserved for reject")
    external.set_state(reject_wl, "Rejected", "never")

    def deactivated() -> dict[str, Any] | None:
        w = kueue.get("workload", reject_wl)
        if w["spec"].get("active") is False and not is_true(w, "QuotaReserved"):
            return w
        return None

    w = wait_for(deactivated, what="deactivated")
    ev = condition(w, "Evicted")
    assert ev is not None and ev["reason"] == "DeactivatedDueToAdmissionCheck"
    assert ev["message"] == f'The workload is deactivated due to AdmissionCheck in Rejected state: "{CHECK}" (never)'
    qr = condition(w, "QuotaReserved")
    assert qr is not None and qr["reason"] in ("PendingEvaluation", "Deactivated")
    _events(
        kueue,
        "workload",
        reject_wl,
        "AdmissionCheckRejected",
        f'Deactivated due to AdmissionCheck in Rejected state: "{CHECK}" (never)',
        "EvictedDueToDeactivatedDueToAdmissionCheck",
    )
    assert kueue.get("job", "ac-reject")["spec"]["suspend"] is True


# --- seeds -------------------------------------------------------------------------------------------------


def _seed_blocks() -> list[str]:
    blocks: list[str] = []
    for path in sorted(SEEDS.glob("*")):
        text = path.read_text()
        if "site/content" in text.splitlines()[0]:
            text = re.sub(r"^ *\d+  ", "", text, flags=re.M)
        for block in re.findall(r"```yaml\n(.*?)```", text, re.S):
            try:
                docs = [d for d in yaml.safe_load_all(block) if d]
            except yaml.YAMLError:
                continue
            if docs and all(isinstance(d, dict) and d.get("kind") and (d.get("metadata") or {}).get("name") for d in docs):
                blocks.append(block)
    return blocks


def test_seed_cluster_queues_get_status(kueue: Kueue) -> None:
    """Every complete seed ClusterQueue applies verbatim and its controller reports Active."""
    applied: set[str] = set()
    for block in _seed_blocks():
        doc = yaml.safe_load(block)
        if doc["kind"] != "ClusterQueue" or doc["metadata"]["name"] in applied:
            continue
        result = kueue.kubectl("apply", "-f", "-", stdin=block, check=False)
        if result.returncode != 0:
            assert "flavors must have the same number of resources" in result.stderr  # invalid upstream too
            continue
        applied.add(doc["metadata"]["name"])
    assert {"cluster-queue", "team-a-cq", "team-b-cq"} <= applied

    def reported() -> bool:
        return all(condition(kueue.get("clusterqueue", n, None), "Active") is not None for n in applied)

    wait_for(reported, what="Active condition on seed CQs")
    cq = kueue.get("clusterqueue", "cluster-queue", None)
    active = condition(cq, "Active")
    assert active is not None and active["status"] == "False" and active["reason"] == "FlavorNotFound"
    assert "kueue.x-k8s.io/resource-in-use" in cq["metadata"]["finalizers"]
    for name in applied:
        kueue.kubectl("delete", "clusterqueue", name)  # no reserving workloads: finalizer released


# --- restart in the middle of an admission storm ---------------------------------------------------------


def test_restart_during_admission_storm_keeps_quota_exact(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    for mode in MODES:
        _storm(tmp_path / mode, mode)


def _storm(base: Path, mode: str) -> None:
    base.mkdir()
    k = start_kueue(base, mode, ["--no-job-runner"] if mode == "embedded" else [], run_jobs=False)
    try:
        k.apply(FLAVOR.format(name="storm-flavor"))
        k.apply(CQ.format(name="storm-cq", cohort="", flavor="storm-flavor", cpu=10))
        k.apply(local_queue("storm-lq", "storm-cq"))
        manifests = "---".join(job(f"storm-{i}", "storm-lq", command="sleep 600", cpu="1") for i in range(30))
        done = threading.Event()

        def submit() -> None:
            k.kubectl("apply", "-f", "-", stdin=manifests, check=False)  # the server may die midway
            done.set()

        t = threading.Thread(target=submit)
        t.start()
        wait_for(lambda: len(k.items("workloads")) >= 3, what="storm started")
        if mode == "embedded":
            k.server.stop(signal.SIGKILL)
            t.join()
            server = start_server(
                base, ["--no-job-runner", "--time-offset-file", str(k.offset_file)], data_dir=k.server.data_dir,
                controllers=True,
            )
            k.server = server
            k.apply(manifests)  # whatever the killed server did not acknowledge
        else:
            k.stop_controller(kill=True)
            t.join()
            k.start_controller()
            # On a real cluster Job creates fail while the killed controller's webhooks are down.
            k.apply(manifests)

        def settled() -> list[dict[str, Any]] | None:
            wls = k.items("workloads")
            reserved = [w for w in wls if is_true(w, "QuotaReserved")]
            cq = k.get("clusterqueue", "storm-cq", None).get("status") or {}
            # Queue status trails the workloads by the 1s batch period (``UpdatesBatchPeriod``): wait for
            # it too.
            if len(wls) == 30 and len(reserved) == 10 and cq.get("reservingWorkloads") == 10 and cq.get("pendingWorkloads") == 20:
                return wls
            return None

        wls = wait_for(settled, timeout=60, what="storm settled")
        owners = [w["metadata"]["ownerReferences"][0]["name"] for w in wls]
        assert len(set(owners)) == 30, "one Workload per Job"
        reserved = [w for w in wls if is_true(w, "QuotaReserved")]
        cpu = sum(int(w["status"]["admission"]["podSetAssignments"][0]["resourceUsage"]["cpu"]) for w in reserved)
        assert cpu == 10, "quota exactly used, not overcommitted"
        cq = k.get("clusterqueue", "storm-cq", None)["status"]
        usage = {r["name"]: r["total"] for f in cq["flavorsReservation"] for r in f["resources"]}
        assert usage["cpu"] == "10"
        assert cq["pendingWorkloads"] == 20
        events = k.items("events")
        for w in wls:
            reservations = [
                e for e in events if e["involvedObject"]["name"] == w["metadata"]["name"] and e["reason"] == "QuotaReserved"
            ]
            assert len(reservations) <= 1, f"{w['metadata']['name']} reserved twice"
        running = [j for j in k.items("jobs") if not j["spec"].get("suspend")]
        assert len(running) == 10
    finally:
        k.stop()


def test_readme_quickstart_example_runs_to_completion(kueue: Kueue) -> None:
    kueue.kubectl("apply", "-f", str(ROOT / "examples" / "quickstart.yaml"))
    wait_condition(kueue, "job", "sample-job", "Complete", timeout=40)
    wl = _workload_name(kueue, "sample-job")
    assert is_true(kueue.get("workload", wl), "Finished")
    logs = sorted((kueue.base / "pods").rglob(CRI_LOG)) or sorted((kueue.server.data_dir / "pods").rglob(CRI_LOG))
    assert any(b"hello from sample-job" in stream_output(p.parent, "stdout") for p in logs)
