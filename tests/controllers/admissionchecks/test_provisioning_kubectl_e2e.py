"""The ProvisioningRequest admission check end to end, driven only with the real kubectl.

``pykueue serve --provisioner FILE`` (embedded) or ``pykueue serve --no-controllers`` plus
``pykueue controller --provisioner FILE`` (cluster) runs Kueue's controllers, the built-in
``kueue.x-k8s.io/provisioning-request`` check and the local provisioner. The seed documents'
AdmissionCheck and both of their ClusterQueue forms are applied as written (the ``<...>``
placeholders filled with a resourceGroups section), Jobs are submitted with ``kubectl apply`` and
every observation is a ``kubectl get``/``describe``. The controllers' clock is moved through the
offset file, so provisioning delays and the 60 s / 120 s retry backoffs pass without sleeping.

No Job runs pods (no job runner): admitted Jobs keep their quota and their ProvisioningRequests,
which keeps every observation free of races with Job completion.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

_E2E = str(Path(__file__).resolve().parents[1] / "e2e")
if _E2E not in sys.path:
    sys.path.insert(0, _E2E)

from support import SEEDS, Kueue, condition, is_true, local_queue, start_kueue, wait_for  # noqa: E402
from support import job as job_manifest  # noqa: E402

MODES = ["embedded", "cluster"]
NS = "default"

PROVISIONING = "kueue.x-k8s.io/provisioning-request"
CONSUMES = "autoscaling.x-k8s.io/consume-provisioning-request"
CLASS_ANNOTATION = "autoscaling.x-k8s.io/provisioning-class-name"

DELAYED = "delayed.local.pykueue.io"  # answers Provisioned after DELAY seconds
FLAKY = "flaky.local.pykueue.io"  # attempt 1 of every workload fails
BROKEN = "broken.local.pykueue.io"  # attempts 1..5 fail: more than backoffLimitCount + 1
DELAY = 300

CAPACITY = {
    "classes": {
        DELAYED: {"delaySeconds": DELAY, "capacity": {"cpu": "64"}, "details": {"zone": "local-a"}},
        FLAKY: {"failAttempts": 1, "failMessage": "simulated stockout"},
        BROKEN: {"failAttempts": 5, "failMessage": "no capacity ever"},
    }
}

RETRY_STRATEGY = """
  retryStrategy:
    backoffLimitCount: 2
    backoffBaseSeconds: 60
    backoffMaxSeconds: 1800
"""

PRC = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ProvisioningRequestConfig
metadata:
  name: {name}
spec:
  provisioningClassName: {cls}
{extra}
"""

CHECK = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata:
  name: {name}
spec:
  controllerName: kueue.x-k8s.io/provisioning-request
  parameters:
    apiGroup: kueue.x-k8s.io
    kind: ProvisioningRequestConfig
    name: {config}
"""

FLAVORS = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: default-flavor
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: spot-flavor
"""

# What replaces the seeds' "<...>" under the ClusterQueue spec: default-flavor is tried first.
RESOURCE_GROUPS = """  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: default-flavor
      resources:
      - name: cpu
        nominalQuota: 4
      - name: memory
        nominalQuota: 8Gi
    - name: spot-flavor
      resources:
      - name: cpu
        nominalQuota: 10
      - name: memory
        nominalQuota: 8Gi"""

CQ = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: {name}
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: default-flavor
      resources:
      - name: cpu
        nominalQuota: 10
      - name: memory
        nominalQuota: 8Gi
  admissionChecksStrategy:
    admissionChecks:
    - name: {check}
"""

# --- the seeds ---------------------------------------------------------------------------------------


def _seed_yaml_blocks() -> list[str]:
    """Every fenced YAML block of the seed pages (line-number prefixes of the English page removed)."""
    blocks: list[str] = []
    for path in sorted(SEEDS.glob("*")):
        text = path.read_text()
        if "site/content" in text.splitlines()[0]:
            text = re.sub(r"^ *\d+  ", "", text, flags=re.M)
        blocks += re.findall(r"```yaml\n(.*?)```", text, re.S)
    return blocks


def seed_admission_checks() -> list[str]:
    """The seeds' ``prov-test`` AdmissionCheck blocks, verbatim (English first, then Chinese)."""
    found = [b for b in _seed_yaml_blocks() if "kind: AdmissionCheck\n" in b and "name: prov-test\n" in b]
    assert len(found) >= 2, found
    return found


def seed_cluster_queue(form: str) -> str:
    """A seed ClusterQueue (``admissionChecks`` or ``admissionChecksStrategy``), ``<...>`` filled."""
    found = [b for b in _seed_yaml_blocks() if "kind: ClusterQueue" in b and f"\n  {form}:" in b]
    assert found, f"no seed ClusterQueue using {form}"
    block = found[0]
    assert block.count("<...>") == 1, block
    filled = re.sub(r"^<\.\.\.>$", lambda _m: RESOURCE_GROUPS, block, count=1, flags=re.M)
    assert filled.replace(RESOURCE_GROUPS, "<...>") == block  # the rest is verbatim
    return filled


# --- fixture and helpers ------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=MODES)
def kueue(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kueue]:
    base = tmp_path_factory.mktemp(f"provisioning-{request.param}")
    capacity = base / "capacity.yaml"
    capacity.write_text(yaml.safe_dump(CAPACITY))
    extra = ["--provisioner", str(capacity)]
    if request.param == "embedded":
        extra.append("--no-job-runner")
    k = start_kueue(base, request.param, extra, run_jobs=False)
    yield k
    k.stop()


def _ensure_objects(k: Kueue) -> None:
    """Flavors, configs and checks every test relies on (idempotent ``kubectl apply``)."""
    k.apply(FLAVORS)
    k.apply(PRC.format(name="prov-test-config", cls=DELAYED, extra=RETRY_STRATEGY))
    # sample-prov-2 only provisions GPUs: workloads without GPUs need no request (Ready at once).
    k.apply(PRC.format(name="gpu-only-config", cls=DELAYED, extra="  managedResources: [nvidia.com/gpu]"))
    k.apply(PRC.format(name="flaky-config", cls=FLAKY, extra=RETRY_STRATEGY))
    k.apply(PRC.format(name="broken-config", cls=BROKEN, extra=RETRY_STRATEGY))
    for name, config in (
        ("sample-prov", "prov-test-config"),
        ("sample-prov-2", "gpu-only-config"),
        ("flaky-prov", "flaky-config"),
        ("broken-prov", "broken-config"),
    ):
        k.apply(CHECK.format(name=name, config=config))
    for name in ("sample-prov", "sample-prov-2", "flaky-prov", "broken-prov"):
        _check_active(k, name)


def _check_active(k: Kueue, name: str) -> None:
    wait_for(lambda: is_true(k.get("admissioncheck", name, None), "Active"), what=f"{name} active")


def _cq_active(k: Kueue, name: str) -> None:
    wait_for(lambda: is_true(k.get("clusterqueue", name, None), "Active"), timeout=30, what=f"{name} active")


def _workload(k: Kueue, job: str) -> str:
    wl = wait_for(lambda: k.workload_of(job), timeout=30, what=f"workload of {job}")
    return str(wl["metadata"]["name"])


def _wait_wl(k: Kueue, name: str, pred: Any, what: str, timeout: float = 30) -> dict[str, Any]:
    last: list[Any] = [None]

    def check() -> dict[str, Any] | None:
        wl = k.get("workload", name)
        last[0] = wl
        return wl if pred(wl) else None

    try:
        found: dict[str, Any] = wait_for(check, timeout=timeout, interval=0.2, what=what)
    except AssertionError:
        status = json.dumps((last[0] or {}).get("status"), indent=1)
        raise AssertionError(
            f"{what}: last status of {name}:\n{status}\n{k.controller_log()[-3000:]}"
        ) from None
    return found


def _entry(wl: dict[str, Any], check: str) -> dict[str, Any] | None:
    for e in (wl.get("status") or {}).get("admissionChecks") or []:
        if e["name"] == check:
            return dict(e)
    return None


def _requests(k: Kueue) -> set[str]:
    """``kubectl get provisioningrequests`` names."""
    out = k.kubectl("get", "provisioningrequests", "-n", NS, "-o", "name").stdout
    return {line.split("/", 1)[1] for line in out.split()}


def _describe(k: Kueue, name: str) -> str:
    return str(k.kubectl("describe", "workload", name, "-n", NS).stdout)


def _reserved(wl: dict[str, Any]) -> bool:
    return bool(is_true(wl, "QuotaReserved"))


def _retrying(check: str, attempt: int) -> Any:
    """The check is in Retry after attempt ``attempt`` failed (``retryCount`` counts the evictions
    that reset it) and the Workload still holds its quota: the workload controller waits for
    ``requeueAt`` before evicting (upstream ``Reconcile``, "Waiting for backoff to finish")."""

    def pred(wl: dict[str, Any]) -> bool:
        entry = _entry(wl, check) or {}
        return bool(
            entry.get("state") == "Retry"
            and entry.get("retryCount", 0) == attempt - 1
            and _reserved(wl)
            and not is_true(wl, "Evicted")
            and (wl["status"].get("requeueState") or {}).get("requeueAt")
        )

    return pred


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


# --- 1. the seed AdmissionCheck becomes Active once its ProvisioningRequestConfig exists -------------


def test_seed_admission_check_active_once_config_exists(kueue: Kueue) -> None:
    english, chinese = seed_admission_checks()[:2]
    kueue.kubectl("apply", "-f", "-", stdin=english)  # v1beta1, retryDelayMinutes: 15, verbatim

    def active() -> dict[str, Any] | None:
        found: dict[str, Any] | None = condition(kueue.get("admissioncheck", "prov-test", None), "Active")
        return found

    bad = wait_for(active, what="prov-test Active condition")
    assert (bad["status"], bad["reason"]) == ("False", "BadParametersRef"), bad
    assert bad["message"] == 'provisioningrequestconfigs.kueue.x-k8s.io "prov-test-config" not found', bad
    kueue.kubectl("apply", "-f", "-", stdin=chinese)  # the same object, also verbatim
    ac = kueue.get("admissioncheck", "prov-test", None)
    assert ac["spec"]["controllerName"] == PROVISIONING
    assert ac["spec"]["parameters"] == {
        "apiGroup": "kueue.x-k8s.io",
        "kind": "ProvisioningRequestConfig",
        "name": "prov-test-config",
    }
    _ensure_objects(kueue)  # creates prov-test-config (and the other checks' configs)
    prc = kueue.get("provisioningrequestconfig", "prov-test-config", None)
    assert prc["spec"]["retryStrategy"] == {
        "backoffLimitCount": 2,
        "backoffBaseSeconds": 60,
        "backoffMaxSeconds": 1800,
    }
    assert prc["spec"]["provisioningClassName"] == DELAYED
    good = wait_for(lambda: (c := active()) and c["status"] == "True" and c, what="prov-test active")
    assert (good["reason"], good["message"]) == ("Active", "The admission check is active")
    table = kueue.kubectl("get", "admissionchecks").stdout
    assert re.search(r"^prov-test\s", table, re.M), table


# --- 2 + 3. seed CQ (admissionChecks list), a Job admitted only once Provisioned --------------------


def test_job_admitted_only_after_request_is_provisioned(kueue: Kueue) -> None:
    _ensure_objects(kueue)
    block = seed_cluster_queue("admissionChecks")
    assert "apiVersion: kueue.x-k8s.io/v1beta1" in block and "  - sample-prov\n" in block
    kueue.kubectl("apply", "-f", "-", stdin=block)
    cq = kueue.get("clusterqueue", "cluster-queue", None)  # read back as v1beta2 (conversion)
    assert cq["spec"]["admissionChecksStrategy"]["admissionChecks"] == [{"name": "sample-prov"}]
    assert "admissionChecks" not in cq["spec"]
    _cq_active(kueue, "cluster-queue")
    kueue.apply(local_queue("prov-lq", "cluster-queue"))

    kueue.apply(job_manifest("prov-job", "prov-lq", cpu="1"))
    wl_name = _workload(kueue, "prov-job")
    request = f"{wl_name}-sample-prov-1"

    def provisioning(wl: dict[str, Any]) -> bool:
        entry = _entry(wl, "sample-prov") or {}
        return _reserved(wl) and str(entry.get("message", "")).startswith("Provisioning; ETA")

    wl = _wait_wl(kueue, wl_name, provisioning, "quota reserved, request accepted")
    admitted = condition(wl, "Admitted")
    assert admitted is not None and (admitted["status"], admitted["reason"]) == (
        "False",
        "UnsatisfiedAdmissionChecks",
    )
    assert (_entry(wl, "sample-prov") or {})["state"] == "Pending"
    assignment = wl["status"]["admission"]["podSetAssignments"][0]
    assert assignment["flavors"]["cpu"] == "default-flavor"
    assert kueue.get("job", "prov-job")["spec"]["suspend"] is True

    # The request and its PodTemplate, as kubectl shows them.
    assert request in _requests(kueue)
    table = kueue.kubectl("get", "provisioningrequests", "-n", NS).stdout
    assert re.search(rf"^{re.escape(request)}\s", table, re.M), table
    pr = kueue.get("provisioningrequest", request)
    template = f"ppt-{request}-main"
    assert pr["spec"]["provisioningClassName"] == DELAYED
    assert pr["spec"]["podSets"] == [{"podTemplateRef": {"name": template}, "count": 1}]
    assert pr["metadata"]["labels"]["kueue.x-k8s.io/managed"] == "true"
    owner = pr["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Workload", wl_name, True)
    assert is_true(pr, "Accepted") and not is_true(pr, "Provisioned")
    assert re.search(
        rf"^{re.escape(template)}\s", kueue.kubectl("get", "podtemplates", "-n", NS).stdout, re.M
    )
    ppt = kueue.get("podtemplate", template)
    assert ppt["metadata"]["labels"]["kueue.x-k8s.io/managed"] == "true"
    container = ppt["template"]["spec"]["containers"][0]
    assert container["resources"]["requests"]["cpu"] == "1"
    assert f'Created ProvisioningRequest: "{request}"' in _describe(kueue, wl_name)
    # Seconds of wall time later: still waiting (the delay runs on the controllers' clock).
    wl = kueue.get("workload", wl_name)
    assert _reserved(wl) and not is_true(wl, "Admitted")
    assert (_entry(wl, "sample-prov") or {})["state"] == "Pending"
    assert kueue.get("job", "prov-job")["spec"]["suspend"] is True

    # The provisioner answers once its delay has passed on the controllers' clock.
    kueue.advance(DELAY + 1)
    wl = _wait_wl(kueue, wl_name, lambda w: is_true(w, "Admitted"), "admitted after Provisioned")
    entry = _entry(wl, "sample-prov") or {}
    assert (entry["state"], entry["message"]) == ("Ready", "Capacity is provisioned")
    assert is_true(kueue.get("provisioningrequest", request), "Provisioned")

    def started() -> dict[str, Any] | None:
        job = kueue.get("job", "prov-job")
        return job if job["spec"].get("suspend") is False else None

    job = wait_for(started, timeout=30, what="job unsuspended")
    annotations = job["spec"]["template"]["metadata"]["annotations"]
    assert annotations[CONSUMES] == request
    assert annotations[CLASS_ANNOTATION] == DELAYED
    events = _describe(kueue, wl_name)
    assert "AdmissionCheckUpdated" in events and "Admitted by ClusterQueue cluster-queue" in events

    # Deleting the Job removes its Workload and, through owner references, the request.
    kueue.kubectl("delete", "job", "prov-job", "-n", NS, "--cascade=background")
    wait_for(lambda: request not in _requests(kueue), timeout=30, what="request garbage-collected")


# --- 4. a Failed request with retries left: Retry, evicted, re-reserved after 60 s -------------------


def test_failed_request_is_retried_after_backoff(kueue: Kueue) -> None:
    _ensure_objects(kueue)
    kueue.apply(CQ.format(name="retry-cq", check="flaky-prov"))
    kueue.apply(local_queue("retry-lq", "retry-cq"))
    _cq_active(kueue, "retry-cq")
    kueue.apply(job_manifest("retry-job", "retry-lq", cpu="1"))
    wl_name = _workload(kueue, "retry-job")
    first, second = f"{wl_name}-flaky-prov-1", f"{wl_name}-flaky-prov-2"

    # Attempt 1 fails: the check goes to Retry for 60 s and requeueAt follows it
    # (``NeedsRequeueAtUpdate``); the Workload keeps its quota until then.
    wl = _wait_wl(kueue, wl_name, _retrying("flaky-prov", 1), "Retry with the quota kept")
    entry = _entry(wl, "flaky-prov") or {}
    assert entry["requeueAfterSeconds"] == 60
    assert entry["message"] == "Retrying after failure: simulated stockout"
    requeue_at = wl["status"]["requeueState"]["requeueAt"]
    assert _seconds(requeue_at) == _seconds(entry["lastTransitionTime"]) + 60
    assert not is_true(wl, "Admitted")
    events = _describe(kueue, wl_name)
    assert (
        "updated state from Pending to Retry with message: Retrying after failure: simulated stockout"
        in events
    )
    assert "EvictedDueToAdmissionCheck" not in events

    # Half the backoff: still reserved, still Retry, not evicted.
    kueue.advance(30)
    time.sleep(1.5)  # give the workload controller a chance to (wrongly) evict
    wl = kueue.get("workload", wl_name)
    assert _retrying("flaky-prov", 1)(wl), wl["status"]
    assert wl["status"]["requeueState"]["requeueAt"] == requeue_at
    assert "EvictedDueToAdmissionCheck" not in _describe(kueue, wl_name)
    assert second not in _requests(kueue)
    assert kueue.get("job", "retry-job")["spec"]["suspend"] is True

    # Past requeueAt: evicted ("Evicted due to ..."), the quota released, requeued at once (the
    # backoff is over: requeueAt cleared, Requeued=True BackoffFinished) and reserved again.
    kueue.advance(31)
    wl = _wait_wl(
        kueue,
        wl_name,
        # (the eviction itself is a write that still shows the quota: Evicted=True, check Pending)
        lambda w: _reserved(w) and condition(w, "Evicted") is not None and not is_true(w, "Evicted"),
        "re-reserved after the eviction",
    )
    requeued = condition(wl, "Requeued")
    assert requeued is not None and (requeued["status"], requeued["reason"]) == ("True", "BackoffFinished")
    assert not (wl["status"].get("requeueState") or {}).get("requeueAt")
    ev = condition(wl, "Evicted")
    assert ev is not None and ev["status"] == "False"
    assert ev["message"] == (
        'Previously: Evicted due to AdmissionCheck in Retry state: "flaky-prov" '
        "(Retrying after failure: simulated stockout)"
    )
    assert [(e["reason"], e["count"]) for e in wl["status"]["schedulingStats"]["evictions"]] == [("AdmissionCheck", 1)]
    events = _describe(kueue, wl_name)
    assert "EvictedDueToAdmissionCheck" in events
    # Eviction cleans the failed request up; the second attempt is provisioned.
    wait_for(lambda: first not in _requests(kueue), what="failed request deleted")
    wait_for(lambda: second in _requests(kueue), what="second request created")
    wl = _wait_wl(kueue, wl_name, lambda w: is_true(w, "Admitted"), "admitted with the second attempt")
    entry = _entry(wl, "flaky-prov") or {}
    assert entry["state"] == "Ready"
    assert entry["podSetUpdates"][0]["annotations"][CONSUMES] == second
    names = _requests(kueue)
    assert second in names and first not in names
    job = wait_for(
        lambda: (j := kueue.get("job", "retry-job"))["spec"].get("suspend") is False and j, what="job started"
    )
    assert job["spec"]["template"]["metadata"]["annotations"][CONSUMES] == second


# --- 5. retries exhausted: Rejected, the Workload is deactivated --------------------------------------


def test_exhausted_retries_reject_and_deactivate(kueue: Kueue) -> None:
    _ensure_objects(kueue)
    kueue.apply(CQ.format(name="reject-cq", check="broken-prov"))
    kueue.apply(local_queue("reject-lq", "reject-cq"))
    _cq_active(kueue, "reject-cq")
    kueue.apply(job_manifest("reject-job", "reject-lq", cpu="1"))
    wl_name = _workload(kueue, "reject-job")

    # Attempt 1 fails: Retry after 60 s; attempt 2 fails: Retry after 120 s (backoff base 60). Each
    # time the Workload keeps its quota until requeueAt and is evicted (then re-reserved) only then.
    for attempt, backoff in ((1, 60), (2, 120)):
        wl = _wait_wl(kueue, wl_name, _retrying("broken-prov", attempt), f"attempt {attempt} in Retry")
        entry = _entry(wl, "broken-prov") or {}
        assert entry["requeueAfterSeconds"] == backoff, entry
        evictions = (wl["status"].get("schedulingStats") or {}).get("evictions") or []
        assert [(e["reason"], e["count"]) for e in evictions] == ([("AdmissionCheck", attempt - 1)] if attempt > 1 else [])
        kueue.advance(backoff + 1)

    # Attempt 3 > backoffLimitCount 2: Rejected, deactivated.
    def deactivated(wl: dict[str, Any]) -> bool:
        ev = condition(wl, "Evicted")
        return (
            wl["spec"].get("active") is False
            and ev is not None
            and ev["status"] == "True"
            and not _reserved(wl)
        )

    wl = _wait_wl(kueue, wl_name, deactivated, "deactivated after the last attempt", timeout=40)
    ev = condition(wl, "Evicted")
    assert ev is not None and ev["reason"] == "DeactivatedDueToAdmissionCheck"
    assert ev["message"] == (
        'The workload is deactivated due to AdmissionCheck in Rejected state: "broken-prov" (no capacity ever)'
    )
    events = _describe(kueue, wl_name)
    assert "AdmissionCheckRejected" in events
    assert 'Deactivated due to AdmissionCheck in Rejected state: "broken-prov" (no capacity ever)' in events
    assert "updated state from Pending to Rejected with message: no capacity ever" in events
    assert "EvictedDueToDeactivatedDueToAdmissionCheck" in events
    assert f'Created ProvisioningRequest: "{wl_name}-broken-prov-3"' in events
    assert f"{wl_name}-broken-prov-4" not in events
    assert kueue.get("job", "reject-job")["spec"]["suspend"] is True
    wait_for(
        lambda: not any(n.startswith(f"{wl_name}-") for n in _requests(kueue)), what="requests cleaned up"
    )


# --- 2 + 6. seed CQ (admissionChecksStrategy with onFlavors) ----------------------------------------


def test_on_flavors_check_runs_only_for_its_flavor(kueue: Kueue) -> None:
    _ensure_objects(kueue)
    # default-flavor must be free (the Job of the admissionChecks-form test is normally gone already).
    kueue.kubectl("delete", "job", "prov-job", "-n", NS, "--ignore-not-found", "--cascade=background")
    wait_for(lambda: kueue.workload_of("prov-job") is None, timeout=30, what="earlier workload gone")
    block = seed_cluster_queue("admissionChecksStrategy")
    assert 'onFlavors: ["default-flavor"]' in block
    kueue.kubectl("apply", "-f", "-", stdin=block)  # may replace the admissionChecks form
    cq = kueue.get("clusterqueue", "cluster-queue", None)
    assert cq["spec"]["admissionChecksStrategy"]["admissionChecks"] == [
        {"name": "sample-prov", "onFlavors": ["default-flavor"]},
        {"name": "sample-prov-2"},
    ]
    _cq_active(kueue, "cluster-queue")
    kueue.apply(local_queue("prov-lq", "cluster-queue"))

    # The first Job fills default-flavor: both checks apply, sample-prov waits for provisioning.
    kueue.apply(job_manifest("flavor-a", "prov-lq", cpu="4"))
    wl_a = _workload(kueue, "flavor-a")
    wl = _wait_wl(
        kueue,
        wl_a,
        lambda w: (
            _reserved(w) and (_entry(w, "sample-prov") or {}).get("message", "").startswith("Provisioning")
        ),
        "first job reserved on default-flavor",
    )
    assert wl["status"]["admission"]["podSetAssignments"][0]["flavors"]["cpu"] == "default-flavor"
    assert [e["name"] for e in wl["status"]["admissionChecks"]] == ["sample-prov", "sample-prov-2"]
    not_needed = _entry(wl, "sample-prov-2") or {}
    assert (not_needed["state"], not_needed["message"]) == ("Ready", "the provisioning request is not needed")
    assert not is_true(wl, "Admitted")
    assert f"{wl_a}-sample-prov-1" in _requests(kueue)

    # The second Job lands on spot-flavor: sample-prov does not apply, so it is admitted at once.
    kueue.apply(job_manifest("flavor-b", "prov-lq", cpu="1"))
    wl_b = _workload(kueue, "flavor-b")
    wl = _wait_wl(kueue, wl_b, lambda w: is_true(w, "Admitted"), "second job admitted on spot-flavor")
    assert wl["status"]["admission"]["podSetAssignments"][0]["flavors"]["cpu"] == "spot-flavor"
    assert [e["name"] for e in wl["status"]["admissionChecks"]] == ["sample-prov-2"]
    assert not any(n.startswith(f"{wl_b}-") for n in _requests(kueue))
    assert "sample-prov-1" not in _describe(kueue, wl_b)
    job = wait_for(
        lambda: (j := kueue.get("job", "flavor-b"))["spec"].get("suspend") is False and j, what="job started"
    )
    assert CONSUMES not in (job["spec"]["template"].get("metadata") or {}).get("annotations", {})
    # The first one is still waiting for its capacity.
    wl = kueue.get("workload", wl_a)
    assert _reserved(wl) and not is_true(wl, "Admitted")
    assert kueue.get("job", "flavor-a")["spec"]["suspend"] is True
