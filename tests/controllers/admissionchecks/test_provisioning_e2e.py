"""End to end: ``pykueue serve`` with Kueue's controllers, the ProvisioningRequest check and the
local provisioner (``--provisioner``), driven over HTTP with batch/v1 Jobs.

Time is moved with ``--time-offset-file`` so the 60 s retry backoff passes without sleeping.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from pykueue.checks import states as st
from pykueue.checks import testing as t
from pykueue.client import resources as r
from pykueue.client.http import HTTPClient
from pykueue.controllers.admissionchecks.provisioning import CONTROLLER_NAME

ROOT = Path(__file__).resolve().parents[3]
NS = "default"
KUEUE = t.KUEUE_API_VERSION
CLASS = "local.pykueue.example.com"
EXAMPLE = ROOT / "examples" / "checks" / "business_hours.py"


def _load_e2e() -> ModuleType:
    name = "pykueue_e2e_conftest"  # shared with tests/client and tests/checks
    if name in sys.modules:
        return sys.modules[name]
    path = ROOT / "tests" / "apiserver" / "e2e" / "conftest.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


start_server: Callable[..., Any] = _load_e2e().start_server

CAPACITY = {
    "classes": {
        CLASS: {"capacity": {"cpu": "8"}, "details": {"zone": "local-a"}},
        "flaky." + CLASS: {"failAttempts": 1, "failMessage": "no nodes yet"},
        "broken." + CLASS: {"failAttempts": 1000, "failMessage": "never"},
    }
}


@pytest.fixture(scope="module")
def kueue(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, HTTPClient, Path]]:
    base = tmp_path_factory.mktemp("kueue")
    capacity = base / "capacity.yaml"
    capacity.write_text(yaml.safe_dump(CAPACITY))
    offset = base / "offset"
    offset.write_text("0")
    srv = start_server(
        base,
        ("--provisioner", str(capacity), "--time-offset-file", str(offset), "--no-job-runner"),
        controllers=True,
    )
    client = HTTPClient.from_kubeconfig(srv.kubeconfig)
    client.create(
        r.RESOURCE_FLAVORS, {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "default"}}
    )
    yield srv, client, offset
    client.close()
    srv.stop()


def _queue(client: HTTPClient, name: str, checks: list[str]) -> None:
    client.create(
        r.CLUSTER_QUEUES,
        {
            "apiVersion": KUEUE,
            "kind": "ClusterQueue",
            "metadata": {"name": name},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "10"}]}
                        ],
                    }
                ],
                "admissionChecksStrategy": {"admissionChecks": [{"name": c} for c in checks]},
            },
        },
    )
    client.create(
        r.LOCAL_QUEUES,
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"clusterQueue": name},
        },
    )


def _provisioning_check(client: HTTPClient, name: str, cls: str, **spec: Any) -> None:
    client.create(
        r.PROVISIONING_REQUEST_CONFIGS,
        {
            "apiVersion": KUEUE,
            "kind": "ProvisioningRequestConfig",
            "metadata": {"name": name},
            "spec": {"provisioningClassName": cls, **spec},
        },
    )
    client.create(
        r.ADMISSION_CHECKS,
        t.admission_check(
            name,
            CONTROLLER_NAME,
            {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": name},
        ),
    )
    t.wait_for(lambda: st.condition_true(client.get(r.ADMISSION_CHECKS, name), st.ACTIVE), timeout=20)


def _job(client: HTTPClient, name: str, queue: str, pods: int = 2) -> None:
    client.create(
        r.JOBS,
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": NS, "labels": {"kueue.x-k8s.io/queue-name": queue}},
            "spec": {
                "parallelism": pods,
                "completions": pods,
                "suspend": True,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "c",
                                "image": "busybox",
                                "command": ["true"],
                                "resources": {"requests": {"cpu": "1"}},
                            }
                        ],
                    }
                },
            },
        },
    )


def _workload_of(client: HTTPClient, job: str) -> dict[str, Any] | None:
    for wl in client.list(r.WORKLOADS, NS)[0]:
        owners = wl["metadata"].get("ownerReferences") or []
        if any(o.get("kind") == "Job" and o.get("name") == job for o in owners):
            return dict(wl)
    return None


def _wait_workload(
    client: HTTPClient, job: str, pred: Callable[[dict[str, Any]], bool], timeout: float = 30
) -> dict[str, Any]:
    last: list[Any] = [None]

    def ok() -> dict[str, Any] | None:
        wl = _workload_of(client, job)
        last[0] = wl
        return wl if wl is not None and pred(wl) else None

    try:
        return t.wait_for(ok, timeout=timeout)
    except AssertionError:
        raise AssertionError(
            f"workload of {job} never matched; last: {(last[0] or {}).get('status')}"
        ) from None


def _check(wl: dict[str, Any], name: str) -> dict[str, Any]:
    entry = st.find_check(wl, name)
    assert entry is not None
    return entry


def _evictions(client: HTTPClient, wl: dict[str, Any]) -> list[str]:
    """Messages of the workload's ``EvictedDueToAdmissionCheck`` events."""
    name = wl["metadata"]["name"]
    return [
        str(e.get("message"))
        for e in client.list(r.EVENTS, NS)[0]
        if e.get("reason") == "EvictedDueToAdmissionCheck" and (e.get("involvedObject") or {}).get("name") == name
    ]


def test_job_admitted_after_provisioning(kueue: tuple[Any, HTTPClient, Path]) -> None:
    _srv, client, _offset = kueue
    _provisioning_check(client, "prov", CLASS)
    _queue(client, "cq-prov", ["prov"])
    _job(client, "job-ok", "cq-prov")
    wl = _wait_workload(client, "job-ok", lambda w: st.is_admitted(w))
    name = wl["metadata"]["name"]
    entry = _check(wl, "prov")
    assert (entry["state"], entry["message"]) == ("Ready", "Capacity is provisioned")
    pr = client.get(r.PROVISIONING_REQUESTS, f"{name}-prov-1", NS)
    assert pr["status"]["provisioningClassDetails"] == {"zone": "local-a"}
    assert pr["spec"]["podSets"] == [{"podTemplateRef": {"name": f"ppt-{name}-prov-1-main"}, "count": 2}]
    # Kueue applies the podSetUpdates when it starts the Job.
    job = t.wait_for(
        lambda: (lambda j: j if j["spec"].get("suspend") is False else None)(client.get(r.JOBS, "job-ok", NS))
    )
    annotations = job["spec"]["template"]["metadata"]["annotations"]
    assert annotations["autoscaling.x-k8s.io/consume-provisioning-request"] == f"{name}-prov-1"
    assert annotations["autoscaling.x-k8s.io/provisioning-class-name"] == CLASS
    # Deleting the Job deletes its Workload and, through owner references, the request.
    client.delete(r.JOBS, "job-ok", NS, propagation="Background")
    t.wait_for(
        lambda: (
            not [
                p
                for p in client.list(r.PROVISIONING_REQUESTS, NS)[0]
                if p["metadata"]["name"].startswith(name)
            ]
        )
    )


def test_failed_attempt_is_retried_after_backoff(kueue: tuple[Any, HTTPClient, Path]) -> None:
    _srv, client, offset = kueue
    _provisioning_check(client, "flaky", "flaky." + CLASS)
    _queue(client, "cq-flaky", ["flaky"])
    _job(client, "job-flaky", "cq-flaky")
    # Attempt 1 fails: Retry for 60 s; requeueAt follows the check (``NeedsRequeueAtUpdate``) and
    # the workload controller waits for it ("Waiting for backoff to finish"): the quota is kept.
    wl = _wait_workload(
        client,
        "job-flaky",
        lambda w: (
            (st.find_check(w, "flaky") or {}).get("state") == "Retry"
            and bool((w["status"].get("requeueState") or {}).get("requeueAt"))
        ),
    )
    assert _check(wl, "flaky")["requeueAfterSeconds"] == 60
    assert "retryCount" not in _check(wl, "flaky")  # counted when the eviction resets the check
    requeue_at = wl["status"]["requeueState"]["requeueAt"]
    time.sleep(1.5)  # wall time only (the controllers' clock stands still): a chance to (wrongly) evict
    wl = _workload_of(client, "job-flaky") or {}
    assert st.has_quota_reservation(wl) and not st.condition_true(wl, "Evicted"), wl.get("status")
    assert wl["status"]["requeueState"]["requeueAt"] == requeue_at
    assert not _evictions(client, wl)
    name = wl["metadata"]["name"]
    # After the backoff the workload is admitted with the second attempt.
    offset.write_text(str(float(offset.read_text()) + 120))
    wl = _wait_workload(client, "job-flaky", lambda w: st.is_admitted(w))
    entry = _check(wl, "flaky")
    assert entry["state"] == "Ready"
    # In between, evicted once for the check, then requeued at once (requeueAt had passed).
    assert [(e["reason"], e["count"]) for e in wl["status"]["schedulingStats"]["evictions"]] == [("AdmissionCheck", 1)]
    assert _evictions(client, wl) == [
        'Evicted due to AdmissionCheck in Retry state: "flaky" (Retrying after failure: no nodes yet)'
    ]
    assert not (wl["status"].get("requeueState") or {}).get("requeueAt")
    assert (
        entry["podSetUpdates"][0]["annotations"]["autoscaling.x-k8s.io/consume-provisioning-request"]
        == f"{name}-flaky-2"
    )
    names = [p["metadata"]["name"] for p in client.list(r.PROVISIONING_REQUESTS, NS)[0]]
    assert f"{name}-flaky-2" in names and f"{name}-flaky-1" not in names


def test_rejected_check_deactivates_the_workload(kueue: tuple[Any, HTTPClient, Path]) -> None:
    _srv, client, _offset = kueue
    _provisioning_check(client, "broken", "broken." + CLASS, retryStrategy={"backoffLimitCount": 0})
    _queue(client, "cq-broken", ["broken"])
    _job(client, "job-broken", "cq-broken")
    # Deactivation (spec.active=false) comes first; the eviction that resets the check (``evict.Evict``)
    # is the controller's next write.
    wl = _wait_workload(
        client,
        "job-broken",
        lambda w: w["spec"].get("active") is False
        and any(
            c["type"] == "Evicted" and c["status"] == "True" for c in (w.get("status") or {}).get("conditions") or []
        ),
    )
    entry = _check(wl, "broken")
    assert (entry["state"], entry["message"]) == (
        "Pending",
        "Reset to Pending after eviction. Previously: Rejected",
    )
    name = wl["metadata"]["name"]
    # Evicted: the request is cleaned up.
    t.wait_for(
        lambda: (
            not [
                p
                for p in client.list(r.PROVISIONING_REQUESTS, NS)[0]
                if p["metadata"]["name"].startswith(name)
            ]
        )
    )
    events = [e for e in client.list(r.EVENTS, NS)[0] if e.get("reason") == "AdmissionCheckUpdated"]
    assert any(
        "broken updated state from Pending to Rejected with message: never" in str(e.get("message"))
        for e in events
    )


def test_example_check_process_with_kueue(kueue: tuple[Any, HTTPClient, Path], tmp_path: Path) -> None:
    """The business-hours example, open all day, admits a Job through Kueue's full path."""
    srv, client, _offset = kueue
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    cmd = [
        sys.executable, str(EXAMPLE), "--kubeconfig", str(srv.kubeconfig), "--controller-name",
        "example.com/always-open", "--open", "00:00", "--close", "24:00", "--days", "all",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    out: list[str] = []
    started = threading.Event()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            out.append(line)
            started.set()
        started.set()

    threading.Thread(target=pump, daemon=True).start()
    try:
        assert started.wait(30) and proc.poll() is None, "".join(out)
        client.create(r.ADMISSION_CHECKS, t.admission_check("always-open", "example.com/always-open"))
        t.wait_for(
            lambda: st.condition_true(client.get(r.ADMISSION_CHECKS, "always-open"), st.ACTIVE), timeout=20
        )
        _queue(client, "cq-open", ["always-open"])
        _job(client, "job-open", "cq-open", pods=1)
        wl = _wait_workload(client, "job-open", lambda w: st.is_admitted(w))
        assert _check(wl, "always-open")["message"].startswith("Within business hours")
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(20)
    assert code == 0, "".join(out)
