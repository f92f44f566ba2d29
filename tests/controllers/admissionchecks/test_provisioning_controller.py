"""The ProvisioningRequest admission check controller against a real embedded API server.

Kueue's scheduler and workload controller are played by the test: it writes QuotaReserved with
``status.admission``, the Pending check entries, evictions and Finished itself
(``pykueue.checks.testing``), and plays cluster-autoscaler by writing ProvisioningRequest
conditions. Test names follow upstream's ``TestReconcile`` cases (``provisioning/controller_test.go``).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from pykueue.api.feature_gates import FeatureGates
from pykueue.api.meta import format_time
from pykueue.checks import states as st
from pykueue.checks import testing as t
from pykueue.client import resources as r
from pykueue.client.interface import Client, NotFound
from pykueue.controllers.admissionchecks.provisioning import (
    CONTROLLER_NAME,
    ProvisioningRequestController,
    attempt_of,
    limit_object_name,
    parameters_ref_error,
    pod_template_name,
    provisioning_request_name,
)

NS = "default"
CLASS = "queued-provisioning.gke.io"
KUEUE = "kueue.x-k8s.io/v1beta2"


@dataclass
class Env:
    client: Client
    clock: t.FakeClock
    controller: ProvisioningRequestController

    # -- objects ---------------------------------------------------------------------------------

    def config(self, name: str = "cfg", **spec: Any) -> dict[str, Any]:
        body = {"provisioningClassName": CLASS, **spec}
        obj = {
            "apiVersion": KUEUE,
            "kind": "ProvisioningRequestConfig",
            "metadata": {"name": name},
            "spec": body,
        }
        return self.client.create(r.PROVISIONING_REQUEST_CONFIGS, obj)

    def check(self, name: str = "prov", config: str | None = "cfg", **ref: str) -> dict[str, Any]:
        params = None
        if config is not None or ref:
            params = {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": config or ""}
            params.update(ref)
        return self.client.create(r.ADMISSION_CHECKS, t.admission_check(name, CONTROLLER_NAME, params))

    def workload(self, name: str, **kw: Any) -> dict[str, Any]:
        return self.client.create(r.WORKLOADS, t.workload(name, NS, **kw))

    def reserve(self, name: str, checks: tuple[str, ...] = ("prov",), **kw: Any) -> dict[str, Any]:
        return t.reserve_quota(self.client, NS, name, list(checks), self.clock(), **kw)

    # -- reading ---------------------------------------------------------------------------------

    def wl(self, name: str) -> dict[str, Any]:
        return self.client.get(r.WORKLOADS, name, NS)

    def state(self, wl: str, check: str = "prov") -> dict[str, Any]:
        entry = st.find_check(self.wl(wl), check)
        assert entry is not None
        return entry

    def wait_state(self, wl: str, state: str, check: str = "prov", **expect: Any) -> dict[str, Any]:
        def ready() -> dict[str, Any] | None:
            entry = self.state(wl, check)
            if entry.get("state") != state:
                return None
            return entry if all(entry.get(k) == v for k, v in expect.items()) else None

        try:
            return t.wait_for(ready)
        except AssertionError:
            raise AssertionError(
                f"check {check} of {wl}: want {state} {expect}, have {self.state(wl, check)}"
            ) from None

    def request(self, name: str) -> dict[str, Any]:
        return self.client.get(r.PROVISIONING_REQUESTS, name, NS)

    def wait_request(self, name: str) -> dict[str, Any]:
        return t.wait_for(lambda: _get_or_none(self.client, r.PROVISIONING_REQUESTS, name))

    def requests(self) -> list[str]:
        return sorted(str(pr["metadata"]["name"]) for pr in self.client.list(r.PROVISIONING_REQUESTS, NS)[0])

    def wait_requests(self, names: list[str]) -> None:
        try:
            t.wait_for(lambda: self.requests() == sorted(names))
        except AssertionError:
            raise AssertionError(f"want requests {names}, have {self.requests()}") from None

    def set_request_conditions(
        self, name: str, *conds: tuple[str, str, str], details: dict[str, str] | None = None
    ) -> None:
        pr = self.request(name)
        status = st.status_of(pr)
        for ctype, status_value, message in conds:
            st.set_condition(pr, ctype, status_value, ctype, message, self.clock())
        if details:
            status["provisioningClassDetails"] = details
        self.client.replace(r.PROVISIONING_REQUESTS, pr, subresource="status")

    def events(self, reason: str) -> list[str]:
        items, _ = self.client.list(r.EVENTS, NS)
        return [str(e.get("message")) for e in items if e.get("reason") == reason]

    def wait_event(self, reason: str, note: str) -> None:
        try:
            t.wait_for(lambda: note in self.events(reason))
        except AssertionError:
            raise AssertionError(f"no {reason} event {note!r}; have {self.events(reason)}") from None


def _get_or_none(client: Client, res: Any, name: str, namespace: str | None = NS) -> dict[str, Any] | None:
    try:
        return client.get(res, name, namespace)
    except NotFound:
        return None


def _make_env(gates: FeatureGates | None = None) -> Iterator[Env]:
    client = t.embedded_client()
    clock = t.FakeClock()
    client.create(
        r.RESOURCE_FLAVORS,
        {
            "apiVersion": KUEUE,
            "kind": "ResourceFlavor",
            "metadata": {"name": "default"},
            "spec": {
                "nodeLabels": {"example.com/pool": "a"},
                "tolerations": [{"key": "example.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            },
        },
    )
    ctl = ProvisioningRequestController(client, clock, gates=gates, poll_interval=0.02)
    ctl.start()
    assert ctl.wait_synced(10)
    try:
        yield Env(client, clock, ctl)
    finally:
        ctl.stop()


@pytest.fixture
def env() -> Iterator[Env]:
    yield from _make_env()


@pytest.fixture
def env_no_cleanup() -> Iterator[Env]:
    yield from _make_env(FeatureGates({"CleanupProvisioningRequestsOnEviction": False}))


# --- naming ---------------------------------------------------------------------------------------


def test_request_and_template_names_follow_upstream() -> None:
    assert provisioning_request_name("job-sample-ab12c", "prov", 2) == "job-sample-ab12c-prov-2"
    assert pod_template_name("job-sample-ab12c-prov-2", "main") == "ppt-job-sample-ab12c-prov-2-main"
    long_wl = "w" * 250
    full = f"{long_wl}-prov-1"
    short = provisioning_request_name(long_wl, "prov", 1)
    assert short == full[:247] + "-" + hashlib.sha1(full.encode()).hexdigest()[:5]
    assert len(short) == 253
    assert limit_object_name("x" * 247) == "x" * 247


def test_attempt_suffix_parsing() -> None:
    assert attempt_of("wl-prov-3", "wl", "prov") == 3
    assert attempt_of("wl-prov-12", "wl", "prov") == 12
    assert attempt_of("wl-prov-x", "wl", "prov") is None
    assert attempt_of("wl-other-1", "wl", "prov") is None
    assert attempt_of("wl2-prov-1", "wl", "prov") is None


def test_parameters_reference_errors() -> None:
    assert parameters_ref_error(None) == "missing parameters reference"
    good = {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": "cfg"}
    assert parameters_ref_error(good) is None
    assert parameters_ref_error({**good, "name": ""}) == "empty name: bad parameters reference"
    assert (
        parameters_ref_error({**good, "apiGroup": "example.com"})
        == 'wrong group "example.com", expecting "kueue.x-k8s.io": bad parameters reference'
    )
    assert (
        parameters_ref_error({**good, "kind": "Other"})
        == 'wrong kind "Other", expecting "ProvisioningRequestConfig": bad parameters reference'
    )


# --- AdmissionCheck Active condition ------------------------------------------------------------


def _active(env: Env, name: str) -> dict[str, Any] | None:
    return st.find_condition(env.client.get(r.ADMISSION_CHECKS, name), st.ACTIVE)


def _wait_active(env: Env, name: str, status: str) -> dict[str, Any]:
    return t.wait_for(lambda: (lambda c: c if c and c["status"] == status else None)(_active(env, name)))


def test_admission_check_active_reasons(env: Env) -> None:
    env.config("cfg")
    env.check("ok", "cfg")
    active = _wait_active(env, "ok", "True")
    assert (active["reason"], active["message"]) == ("Active", "The admission check is active")

    env.check("noparams", None)
    cond = _wait_active(env, "noparams", "False")
    assert (cond["reason"], cond["message"]) == ("BadParametersRef", "missing parameters reference")

    env.check("badgroup", "cfg", apiGroup="example.com")
    cond = _wait_active(env, "badgroup", "False")
    assert (
        cond["message"] == 'wrong group "example.com", expecting "kueue.x-k8s.io": bad parameters reference'
    )

    env.check("badkind", "cfg", kind="Other")
    cond = _wait_active(env, "badkind", "False")
    assert (
        cond["message"]
        == 'wrong kind "Other", expecting "ProvisioningRequestConfig": bad parameters reference'
    )

    env.check("missing", "nope")
    cond = _wait_active(env, "missing", "False")
    assert cond["message"] == 'provisioningrequestconfigs.kueue.x-k8s.io "nope" not found'

    # Checks of other controllers are left alone.
    env.client.create(r.ADMISSION_CHECKS, t.admission_check("foreign", "example.com/other"))

    # The config appearing activates the check; its deletion deactivates it again.
    env.config("nope")
    _wait_active(env, "missing", "True")
    env.client.delete(r.PROVISIONING_REQUEST_CONFIGS, "nope")
    _wait_active(env, "missing", "False")
    assert _active(env, "foreign") is None


def test_active_condition_only_rewritten_when_status_changes(env: Env) -> None:
    env.check("c", "first")
    cond = _wait_active(env, "c", "False")
    assert cond["message"] == 'provisioningrequestconfigs.kueue.x-k8s.io "first" not found'
    ac = env.client.get(r.ADMISSION_CHECKS, "c")
    ac["spec"]["parameters"]["name"] = "second"
    env.client.replace(r.ADMISSION_CHECKS, ac)
    env.clock.advance(5)
    # Give the controller time to see the update; the message names the first config still.
    time.sleep(0.3)
    assert _active(env, "c") == cond


# --- requests and templates -------------------------------------------------------------------------


def test_request_created_with_pod_templates(env: Env) -> None:
    env.config(parameters={"p1": "config", "p2": "config"})
    env.check()
    env.workload(
        "wl",
        pod_sets=[
            t.pod_set("main", 3, requests={"cpu": "1"}, limits={"memory": "1Gi"}),
            t.pod_set("aux", 1, requests={"cpu": "500m"}),
        ],
        annotations={"provreq.kueue.x-k8s.io/p2": "workload", "other": "x"},
    )
    env.reserve("wl", counts={"main": 2})
    pr = env.wait_request("wl-prov-1")
    wl = env.wl("wl")
    assert pr["metadata"]["labels"] == {"kueue.x-k8s.io/managed": "true"}
    (owner,) = pr["metadata"]["ownerReferences"]
    assert owner == {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "name": "wl",
        "uid": wl["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert pr["spec"] == {
        "provisioningClassName": CLASS,
        "parameters": {"p1": "config", "p2": "workload"},
        "podSets": [
            {"podTemplateRef": {"name": "ppt-wl-prov-1-main"}, "count": 2},
            {"podTemplateRef": {"name": "ppt-wl-prov-1-aux"}, "count": 1},
        ],
    }

    def adopted() -> dict[str, Any] | None:
        pt = _get_or_none(env.client, r.POD_TEMPLATES, "ppt-wl-prov-1-main")
        refs = (pt or {}).get("metadata", {}).get("ownerReferences") or []
        return pt if [x["kind"] for x in refs] == ["ProvisioningRequest"] else None

    pt = t.wait_for(adopted)
    assert pt["metadata"]["labels"] == {"kueue.x-k8s.io/managed": "true"}
    assert pt["metadata"]["ownerReferences"][0]["uid"] == pr["metadata"]["uid"]
    assert pt["metadata"]["ownerReferences"][0]["controller"] is True
    spec = pt["template"]["spec"]
    assert spec["nodeSelector"] == {"example.com/pool": "a"}
    assert spec["tolerations"] == [{"key": "example.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    # Limits stand in for missing requests.
    assert spec["containers"][0]["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    assert env.client.get(r.POD_TEMPLATES, "ppt-wl-prov-1-aux", NS)
    # The annotation override does not make the request look out of sync with its config.
    time.sleep(0.3)
    assert env.request("wl-prov-1")["metadata"]["uid"] == pr["metadata"]["uid"]
    env.wait_event("ProvisioningRequestCreated", 'Created ProvisioningRequest: "wl-prov-1"')
    # Reported as upstream's recorder for the check, mgr.GetEventRecorder("kueue-provisioning-request-controller").
    (created,) = [e for e in env.client.list(r.EVENTS, NS)[0] if e.get("reason") == "ProvisioningRequestCreated"]
    assert created["reportingComponent"] == "kueue-provisioning-request-controller"
    # Nothing decided yet: the check stays Pending with an empty message.
    assert env.state("wl")["state"] == "Pending"


def test_no_request_before_quota_reservation(env: Env) -> None:
    env.config()
    env.check()
    env.workload("wl")
    t.add_pending_checks(env.client, NS, "wl", ["prov"], env.clock())
    time.sleep(0.3)
    assert env.requests() == []


def test_when_request_is_provisioned(env: Env) -> None:
    env.config()
    env.check()
    env.workload("wl")
    env.reserve("wl")
    env.wait_request("wl-prov-1")
    env.clock.advance(30)
    env.set_request_conditions("wl-prov-1", ("Accepted", "True", ""), ("Provisioned", "True", "Provisioned"))
    entry = env.wait_state("wl", "Ready")
    assert entry["message"] == "Provisioned"
    assert entry["lastTransitionTime"] == format_time(env.clock())
    assert entry["podSetUpdates"] == [
        {
            "name": "main",
            "annotations": {
                "autoscaling.x-k8s.io/consume-provisioning-request": "wl-prov-1",
                "autoscaling.x-k8s.io/provisioning-class-name": CLASS,
            },
        }
    ]
    env.wait_event(
        "AdmissionCheckUpdated",
        "Admission check prov updated state from Pending to Ready with message: Provisioned",
    )


def test_when_request_is_provisioned_and_has_node_selector_from_class_details(env: Env) -> None:
    env.config(
        podSetUpdates={
            "nodeSelector": [
                {"key": "example.com/zone", "valueFromProvisioningClassDetail": "zone"},
                {"key": "example.com/missing", "valueFromProvisioningClassDetail": "absent"},
            ]
        }
    )
    env.check()
    env.workload("wl")
    env.reserve("wl")
    env.wait_request("wl-prov-1")
    env.set_request_conditions("wl-prov-1", ("Provisioned", "True", "ok"), details={"zone": "z1"})
    entry = env.wait_state("wl", "Ready")
    assert entry["podSetUpdates"][0]["nodeSelector"] == {"example.com/zone": "z1"}


def test_accepted_request_carries_the_eta_message(env: Env) -> None:
    env.config()
    env.check()
    env.workload("wl")
    env.reserve("wl")
    env.wait_request("wl-prov-1")
    env.set_request_conditions(
        "wl-prov-1", ("Accepted", "True", ""), ("Provisioned", "False", "ETA in 5 minutes")
    )
    entry = env.wait_state("wl", "Pending", message="ETA in 5 minutes")
    assert "podSetUpdates" not in entry


def test_when_request_fails_and_is_retried(env: Env) -> None:
    """Attempts 1..3 fail and are retried after 60 s, 120 s, 240 s; attempt 4 failing rejects."""
    env.config()
    env.check()
    env.workload("wl")
    env.reserve("wl")
    for attempt, delay in ((1, 60), (2, 120), (3, 240)):
        name = f"wl-prov-{attempt}"
        env.wait_request(name)
        env.wait_requests([name])
        env.clock.advance(7)
        env.set_request_conditions(name, ("Failed", "True", f"out of stock #{attempt}"))
        entry = env.wait_state("wl", "Retry")
        assert entry["requeueAfterSeconds"] == delay
        assert entry["message"] == f"Retrying after failure: out of stock #{attempt}"
        assert entry["lastTransitionTime"] == format_time(env.clock())
        assert entry.get("retryCount", 0) == attempt - 1
        env.wait_event(
            "AdmissionCheckUpdated",
            f"Admission check prov updated state from Pending to Retry with message: Retrying after failure: out of stock #{attempt}",
        )
        # Kueue evicts after the delay: the requests are cleaned up, the quota released and
        # reserved again, and the next attempt is named after the retry count.
        env.clock.advance(delay)
        t.evict(env.client, NS, "wl", env.clock())
        env.wait_requests([])
        t.release_quota(env.client, NS, "wl", env.clock())
        env.reserve("wl")
        assert env.state("wl")["retryCount"] == attempt
    env.wait_request("wl-prov-4")
    env.set_request_conditions("wl-prov-4", ("Failed", "True", "still out of stock"))
    entry = env.wait_state("wl", "Rejected")
    assert entry["message"] == "still out of stock"


def test_when_request_fails_and_there_is_no_retry(env: Env) -> None:
    env.config(retryStrategy={"backoffLimitCount": 0})
    env.check()
    env.workload("wl")
    env.reserve("wl")
    env.wait_request("wl-prov-1")
    env.set_request_conditions("wl-prov-1", ("Failed", "True", "no capacity"))
    entry = env.wait_state("wl", "Rejected")
    assert entry["message"] == "no capacity"
    assert "requeueAfterSeconds" not in entry
    env.wait_event(
        "AdmissionCheckUpdated",
        "Admission check prov updated state from Pending to Rejected with message: no capacity",
    )


def test_retry_backoff_uses_config_base_and_cap(env: Env) -> None:
    env.config(retryStrategy={"backoffLimitCount": 5, "backoffBaseSeconds": 100, "backoffMaxSeconds": 150})
    env.check()
    env.workload("wl")
    env.reserve("wl")
    for attempt, delay in ((1, 100), (2, 150), (3, 150)):
        name = f"wl-prov-{attempt}"
        env.wait_request(name)
        env.set_request_conditions(name, ("Failed", "True", "x"))
        assert env.wait_state("wl", "Retry")["requeueAfterSeconds"] == delay
        t.evict(env.client, NS, "wl", env.clock())
        env.wait_requests([])
        t.release_quota(env.client, NS, "wl", env.clock())
        env.reserve("wl")


def test_failed_request_without_cleanup_creates_next_attempt(env_no_cleanup: Env) -> None:
    """CleanupProvisioningRequestsOnEviction off: the failed request survives the eviction and,
    once the check is Pending again, the next attempt is created from its suffix."""
    env = env_no_cleanup
    env.config()
    env.check()
    env.workload("wl")
    env.reserve("wl")
    env.wait_request("wl-prov-1")
    env.set_request_conditions("wl-prov-1", ("Failed", "True", "boom"))
    env.wait_state("wl", "Retry")
    t.evict(env.client, NS, "wl", env.clock())
    time.sleep(0.2)
    assert env.requests() == ["wl-prov-1"]  # evicted, cleanup disabled: kept
    t.release_quota(env.client, NS, "wl", env.clock())
    env.reserve("wl")
    env.wait_requests(["wl-prov-2"])  # the old attempt is deleted as unused
    entry = env.state("wl")
    assert entry["state"] == "Pending"
    assert entry["retryCount"] == 1


def test_when_no_request_is_needed(env: Env) -> None:
    env.config(managedResources=["example.com/gpu"])
    env.check()
    env.workload("wl", pod_sets=[t.pod_set(requests={"cpu": "1"})])
    env.reserve("wl")
    entry = env.wait_state("wl", "Ready")
    assert entry["message"] == "the provisioning request is not needed"
    assert "podSetUpdates" not in entry
    assert env.requests() == []


def test_only_pod_sets_using_managed_resources_are_requested(env: Env) -> None:
    env.config(managedResources=["example.com/gpu"])
    env.check()
    env.workload(
        "wl",
        pod_sets=[
            t.pod_set("driver", 1, requests={"cpu": "1"}),
            t.pod_set("workers", 4, requests={"cpu": "1"}, limits={"example.com/gpu": "1"}),
        ],
    )
    env.reserve("wl")
    pr = env.wait_request("wl-prov-1")
    assert pr["spec"]["podSets"] == [{"podTemplateRef": {"name": "ppt-wl-prov-1-workers"}, "count": 4}]


def test_check_is_pending_when_config_is_missing(env: Env) -> None:
    env.check("prov", "nope")
    env.workload("wl")
    env.reserve("wl")
    env.wait_state("wl", "Pending", message="the check is not active")
    assert env.requests() == []


def test_capacity_revoked_rejects_the_workload(env: Env) -> None:
    env.config()
    env.check()
    env.workload("wl")
    env.reserve("wl")
    env.wait_request("wl-prov-1")
    env.set_request_conditions("wl-prov-1", ("Provisioned", "True", "ok"))
    env.wait_state("wl", "Ready")
    t.set_conditions(env.client, NS, "wl", env.clock(), Admitted="True")
    env.set_request_conditions("wl-prov-1", ("CapacityRevoked", "True", "nodes were deleted"))
    entry = env.wait_state("wl", "Rejected")
    assert entry["message"] == "nodes were deleted"


def test_booking_expired_retries_when_not_admitted(env: Env) -> None:
    env.config()
    env.check()
    env.workload("wl")
    env.reserve("wl")
    env.wait_request("wl-prov-1")
    env.set_request_conditions("wl-prov-1", ("BookingExpired", "True", "pods did not come"))
    entry = env.wait_state("wl", "Retry")
    assert entry["message"] == "Retrying after booking expired: pods did not come"
    assert entry["requeueAfterSeconds"] == 60


def test_booking_expired_is_ignored_once_admitted(env: Env) -> None:
    env.config()
    env.check()
    env.workload("wl")
    env.reserve("wl")
    env.wait_request("wl-prov-1")
    env.set_request_conditions("wl-prov-1", ("Provisioned", "True", "ok"))
    env.wait_state("wl", "Ready")
    t.set_conditions(env.client, NS, "wl", env.clock(), Admitted="True")
    env.set_request_conditions("wl-prov-1", ("BookingExpired", "True", "expired"))
    time.sleep(0.3)
    assert env.state("wl")["state"] == "Ready"
    assert env.requests() == ["wl-prov-1"]


def test_with_pod_set_merge_policy_identical_pod_templates(env: Env) -> None:
    env.config(podSetMergePolicy="IdenticalPodTemplates")
    env.check()
    same = {"requests": {"cpu": "1"}}
    env.workload(
        "wl",
        pod_sets=[
            t.pod_set("ps1", 2, **same),
            t.pod_set("ps2", 3, **same),
            t.pod_set("ps3", 1, requests={"cpu": "2"}),
        ],
    )
    env.reserve("wl")
    pr = env.wait_request("wl-prov-1")
    assert pr["spec"]["podSets"] == [
        {"podTemplateRef": {"name": "ppt-wl-prov-1-ps1"}, "count": 5},
        {"podTemplateRef": {"name": "ppt-wl-prov-1-ps3"}, "count": 1},
    ]
    assert _get_or_none(env.client, r.POD_TEMPLATES, "ppt-wl-prov-1-ps2") is None
    env.set_request_conditions("wl-prov-1", ("Provisioned", "True", "ok"))
    entry = env.wait_state("wl", "Ready")
    assert [u["name"] for u in entry["podSetUpdates"]] == ["ps1", "ps3"]


def test_with_pod_set_merge_policy_identical_scheduling_requirements(env: Env) -> None:
    env.config(podSetMergePolicy="IdenticalWorkloadSchedulingRequirements")
    env.check()
    a = t.pod_set("a", 1, requests={"cpu": "1"})
    b = t.pod_set("b", 2, requests={"cpu": "1"})
    b["template"]["spec"]["containers"][0]["image"] = "other"  # not scheduling-relevant
    env.workload("wl", pod_sets=[a, b])
    env.reserve("wl")
    pr = env.wait_request("wl-prov-1")
    assert pr["spec"]["podSets"] == [{"podTemplateRef": {"name": "ppt-wl-prov-1-a"}, "count": 3}]


def test_failed_create_is_reported(env: Env) -> None:
    env.config()
    env.check()
    env.workload("wl")
    env.reserve("wl", flavors={"cpu": "no-such-flavor"})
    message = 'Error creating PodTemplate "ppt-wl-prov-1-main": resourceflavors.kueue.x-k8s.io "no-such-flavor" not found'
    env.wait_state("wl", "Pending", message=message)
    env.wait_event("FailedCreate", message)
    assert env.requests() == []


# --- cleanup --------------------------------------------------------------------------------------


def test_requests_deleted_when_workload_finishes(env: Env) -> None:
    env.config()
    env.check()
    env.workload("wl")
    env.reserve("wl")
    env.wait_request("wl-prov-1")
    t.set_conditions(env.client, NS, "wl", env.clock(), Finished="True")
    env.wait_requests([])
    t.wait_for(lambda: _get_or_none(env.client, r.POD_TEMPLATES, "ppt-wl-prov-1-main") is None)


def test_requests_deleted_when_workload_is_evicted(env: Env) -> None:
    env.config()
    env.check()
    env.workload("wl")
    env.reserve("wl")
    env.wait_request("wl-prov-1")
    t.evict(env.client, NS, "wl", env.clock(), reason="Preempted")
    env.wait_requests([])


def test_requests_kept_on_eviction_without_cleanup_gate(env_no_cleanup: Env) -> None:
    env = env_no_cleanup
    env.config()
    env.check()
    env.workload("wl")
    env.reserve("wl")
    env.wait_request("wl-prov-1")
    t.evict(env.client, NS, "wl", env.clock(), reason="Preempted")
    time.sleep(0.3)
    assert env.requests() == ["wl-prov-1"]


def test_requests_and_templates_garbage_collected_with_the_workload(env: Env) -> None:
    env.config()
    env.check()
    env.workload("wl")
    env.reserve("wl")
    env.wait_request("wl-prov-1")
    t.wait_for(lambda: _get_or_none(env.client, r.POD_TEMPLATES, "ppt-wl-prov-1-main"))
    env.client.delete(r.WORKLOADS, "wl", NS)
    env.wait_requests([])
    t.wait_for(lambda: _get_or_none(env.client, r.POD_TEMPLATES, "ppt-wl-prov-1-main") is None)


def test_requests_out_of_sync_with_config_are_replaced(env: Env) -> None:
    env.config()
    env.check()
    env.workload("wl")
    env.reserve("wl")
    env.wait_request("wl-prov-1")
    prc = env.client.get(r.PROVISIONING_REQUEST_CONFIGS, "cfg")
    prc["spec"]["parameters"] = {"new": "value"}
    env.client.replace(r.PROVISIONING_REQUEST_CONFIGS, prc)

    def recreated() -> dict[str, Any] | None:
        pr = _get_or_none(env.client, r.PROVISIONING_REQUESTS, "wl-prov-1")
        return pr if pr and pr["spec"].get("parameters") == {"new": "value"} else None

    t.wait_for(recreated)


def test_two_checks_get_their_own_requests(env: Env) -> None:
    env.config("cfg-a")
    env.config("cfg-b")
    env.check("a", "cfg-a")
    env.check("b", "cfg-b")
    env.workload("wl")
    env.reserve("wl", checks=("a", "b"))
    env.wait_requests(["wl-a-1", "wl-b-1"])
    env.set_request_conditions("wl-a-1", ("Provisioned", "True", "a ok"))
    env.wait_state("wl", "Ready", check="a")
    assert env.state("wl", "b")["state"] == "Pending"


def test_caches_hold_objects_without_managed_fields(env: Env) -> None:
    """Kueue's manager caches strip managedFields (pkg/config/config.go DefaultTransform): this
    controller's Workload informer holds every Workload of the cluster, so they are most of its
    bytes (fails on the informers that cached the objects as served)."""
    env.config()
    env.check()
    env.workload("wl")
    env.reserve("wl")
    env.wait_request("wl-prov-1")
    assert env.wl("wl")["metadata"]["managedFields"], "the server keeps them"
    c = env.controller

    def cached() -> list[dict[str, Any]]:
        return [*c.workloads.items(), *c.checks.items(), *c.configs.items(), *c.requests.items()]

    objs = t.wait_for(lambda: len(cached()) >= 4 and cached())
    assert {o["kind"] for o in objs} >= {"Workload", "AdmissionCheck", "ProvisioningRequestConfig", "ProvisioningRequest"}
    assert [o["metadata"]["name"] for o in objs if "managedFields" in o["metadata"]] == []
    # Its own writes from such cached objects keep the server's managedFields.
    assert env.wl("wl")["metadata"]["managedFields"]


def test_workload_cache_keeps_only_the_key_and_the_check_states(env: Env) -> None:
    """The controller reads a Workload fresh before it acts, so its cache of every Workload of the
    cluster keeps only what routes changes: the key and ``status.admissionChecks`` (fails on the
    cache of whole Workloads: spec, admission and conditions were most of the controller's RSS in
    Kueue's large-scale benchmark)."""
    env.config()
    env.check()
    env.workload("wl")
    env.workload("other")
    env.reserve("wl")
    env.wait_request("wl-prov-1")
    c = env.controller

    def cached(name: str) -> dict[str, Any] | None:
        wl = c.workloads.get((NS, name))
        return wl if wl is not None and "admissionChecks" in (wl.get("status") or {}) else None

    wl = t.wait_for(lambda: cached("wl"))
    assert set(wl) == {"apiVersion", "kind", "metadata", "status"}
    assert set(wl["metadata"]) <= {"name", "namespace", "uid", "resourceVersion"}
    assert list(wl["status"]) == ["admissionChecks"]
    assert [s["name"] for s in wl["status"]["admissionChecks"]] == ["prov"]
    other = c.workloads.get((NS, "other"))
    assert other is not None and set(other) == {"apiVersion", "kind", "metadata"}
    # Still acting on the check: the request's Provisioned condition makes the check Ready.
    env.set_request_conditions("wl-prov-1", ("Provisioned", "True", "ok"))
    env.wait_state("wl", "Ready")


def test_workloads_without_a_check_of_this_controller_are_not_queued(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Workload change the reconcile would drop at once (no provisioning check, no request to
    clean up) does not go through the work queue: most Workloads of most clusters (fails when
    every Workload change queues a reconcile); the check still acts once it names one."""
    reconciled: list[str] = []
    real = ProvisioningRequestController._reconcile_workload

    def counting(self: ProvisioningRequestController, namespace: str, name: str) -> float | None:
        reconciled.append(name)
        return real(self, namespace, name)

    monkeypatch.setattr(env.controller.runtime, "_reconcilers", {**env.controller.runtime._reconcilers})
    env.controller.runtime.register("workload", lambda ns, n: counting(env.controller, ns, n))
    env.config()
    env.check()
    env.client.create(r.ADMISSION_CHECKS, t.admission_check("foreign", "example.com/other"))
    env.workload("plain")
    env.workload("foreign-only")
    env.reserve("plain", checks=())
    env.reserve("foreign-only", checks=("foreign",))
    t.wait_for(lambda: (env.controller.workloads.get((NS, "foreign-only")) or {}).get("status"))
    t.wait_for(lambda: env.controller.runtime.queue.idle())
    time.sleep(0.1)
    assert reconciled == []
    # A Workload with the provisioning check is reconciled and gets its request.
    env.workload("wl")
    env.reserve("wl")
    env.wait_request("wl-prov-1")
    assert set(reconciled) == {"wl"}
