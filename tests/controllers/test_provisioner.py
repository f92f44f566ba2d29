"""The local provisioner: its capacity file, placement, and answering real ProvisioningRequests.

The component runs against a real embedded API server with an injected clock; the requests and
their PodTemplates are created through the client as Kueue's ProvisioningRequest controller
would create them (the last tests run both controllers together).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.checks import states as st
from pykueue.checks import testing as t
from pykueue.client import resources as r
from pykueue.client.interface import Client, NotFound
from pykueue.controllers.admissionchecks.provisioning import CONTROLLER_NAME, ProvisioningRequestController
from pykueue.controllers.provisioner import (
    CapacityFileError,
    CapacitySpec,
    LocalProvisioner,
    PodGroup,
    attempt_number,
    place,
)

NS = "default"
CLASS = "local.example.com"
KUEUE = "kueue.x-k8s.io/v1beta2"


# --- the capacity file ------------------------------------------------------------------------------


def test_capacity_file_parses_map_and_list_forms() -> None:
    spec = CapacitySpec.parse(
        {
            "classes": {
                CLASS: {
                    "delaySeconds": 5,
                    "whenFull": "Wait",
                    "capacity": {"cpu": "4", "memory": "8Gi"},
                    "pools": [
                        {
                            "name": "gpu",
                            "flavor": "a100",
                            "labels": {"pool": "gpu"},
                            "nodes": 2,
                            "resources": {"cpu": 8, "example.com/gpu": 4},
                            "details": {"accelerator": "a100"},
                        }
                    ],
                    "details": {"zone": "z"},
                    "failAttempts": 2,
                    "failMessage": "stockout",
                    "revokeAfterSeconds": 60,
                    "bookingExpiresAfterSeconds": 120,
                }
            }
        }
    )
    cls = spec.classes[CLASS]
    assert cls.delay_seconds == 5
    assert cls.when_full == "Wait"
    assert cls.capacity == {"cpu": 4000, "memory": 8 * 1024**3}
    (pool,) = cls.pools
    assert (pool.name, pool.flavor, pool.nodes, pool.labels) == ("gpu", "a100", 2, {"pool": "gpu"})
    assert pool.resources == {"cpu": 8000, "example.com/gpu": 4}
    assert (cls.fail_attempts, cls.fail_message) == (2, "stockout")
    assert (cls.revoke_after_seconds, cls.booking_expires_after_seconds) == (60, 120)

    listed = CapacitySpec.parse({"classes": [{"provisioningClassName": "a"}, {"provisioningClassName": "b"}]})
    assert sorted(listed.classes) == ["a", "b"]
    assert listed.classes["a"].capacity is None and listed.classes["a"].pools == ()
    assert CapacitySpec.parse(None).classes == {}


@pytest.mark.parametrize(
    "doc",
    [
        {"other": {}},
        {"classes": {"a": {"bogus": 1}}},
        {"classes": {"a": {"whenFull": "Sometimes"}}},
        {"classes": {"a": {"capacity": {"cpu": "lots"}}}},
        {"classes": {"a": {"delaySeconds": -1}}},
        {"classes": [{"delaySeconds": 1}]},
        {"classes": {"a": {"pools": [{"name": "p", "extra": 1}]}}},
    ],
)
def test_capacity_file_errors(doc: Any) -> None:
    with pytest.raises(CapacityFileError):
        CapacitySpec.parse(doc)


def test_attempt_number() -> None:
    assert attempt_number("wl-prov-3") == 3
    assert attempt_number("standalone") == 1


# --- placement ------------------------------------------------------------------------------------


def _group(count: int, cpu: int, gpu: int = 0, selector: dict[str, str] | None = None) -> PodGroup:
    req = {"cpu": cpu}
    if gpu:
        req["example.com/gpu"] = gpu
    return PodGroup("tpl", count, req, selector or {})


def test_place_respects_total_capacity() -> None:
    cls = CapacitySpec.parse({"classes": {CLASS: {"capacity": {"cpu": "4"}}}}).classes[CLASS]
    alloc, _ = place(cls, [_group(3, 1000)], {}, [])
    assert alloc is not None and alloc.resources == {"cpu": 3000}
    alloc2, reason = place(cls, [_group(2, 1000)], {}, [alloc])
    assert alloc2 is None
    assert reason == "insufficient cpu: requested 2, available 1"


def test_place_packs_pods_onto_pool_nodes() -> None:
    cls = CapacitySpec.parse(
        {
            "classes": {
                CLASS: {
                    "pools": [
                        {"name": "small", "nodes": 1, "resources": {"cpu": "2"}, "labels": {"size": "s"}},
                        {"name": "gpu", "nodes": 2, "resources": {"cpu": "4", "example.com/gpu": 2}},
                    ]
                }
            }
        }
    ).classes[CLASS]
    labels = {"small": {"size": "s"}, "gpu": {}}
    # Two 1-cpu pods share the one small node.
    alloc, _ = place(cls, [_group(2, 1000)], labels, [])
    assert alloc is not None and alloc.nodes == {"small": 1}
    # Three 1-gpu pods need two gpu nodes; the small pool has no gpus.
    alloc_gpu, _ = place(cls, [_group(3, 1000, gpu=1)], labels, [])
    assert alloc_gpu is not None and alloc_gpu.nodes == {"gpu": 2}
    # With both gpu nodes held, nothing is left for another gpu pod.
    none, reason = place(cls, [_group(1, 1000, gpu=1)], labels, [alloc_gpu])
    assert none is None
    assert reason == "no free node fits a pod of tpl (cpu: 1, example.com/gpu: 1)"
    # A node selector picks the matching pool only.
    sel, _ = place(cls, [_group(1, 500, selector={"size": "s"})], labels, [])
    assert sel is not None and sel.nodes == {"small": 1}
    nomatch, _ = place(cls, [_group(1, 500, selector={"size": "xl"})], labels, [])
    assert nomatch is None


# --- the component ----------------------------------------------------------------------------------


class Env:
    def __init__(self, client: Client, clock: t.FakeClock, path: Path) -> None:
        self.client = client
        self.clock = clock
        self.path = path
        self.provisioner: LocalProvisioner | None = None

    def start(self, capacity: dict[str, Any]) -> LocalProvisioner:
        self.path.write_text(yaml.safe_dump(capacity))
        prov = LocalProvisioner(self.client, self.path, self.clock, poll_interval=0.02)
        prov.start()
        assert prov.wait_synced(10)
        self.provisioner = prov
        return prov

    def request(self, name: str, cpu: str = "1", count: int = 1, cls: str = CLASS, **selector: str) -> None:
        tpl = f"ppt-{name}-main"
        spec: dict[str, Any] = {
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]
        }
        if selector:
            spec["nodeSelector"] = selector
        self.client.create(
            r.POD_TEMPLATES,
            {
                "apiVersion": "v1",
                "kind": "PodTemplate",
                "metadata": {"name": tpl, "namespace": NS},
                "template": {"spec": spec},
            },
        )
        self.client.create(
            r.PROVISIONING_REQUESTS,
            {
                "apiVersion": "autoscaling.x-k8s.io/v1",
                "kind": "ProvisioningRequest",
                "metadata": {"name": name, "namespace": NS},
                "spec": {
                    "provisioningClassName": cls,
                    "podSets": [{"podTemplateRef": {"name": tpl}, "count": count}],
                },
            },
        )

    def get(self, name: str) -> dict[str, Any]:
        return self.client.get(r.PROVISIONING_REQUESTS, name, NS)

    def cond(self, name: str, ctype: str) -> dict[str, Any] | None:
        return st.find_condition(self.get(name), ctype)

    def wait_cond(self, name: str, ctype: str, status: str = "True") -> dict[str, Any]:
        def ok() -> dict[str, Any] | None:
            c = self.cond(name, ctype)
            return c if c and c["status"] == status else None

        try:
            return t.wait_for(ok)
        except AssertionError:
            raise AssertionError(
                f"{name}: want {ctype}={status}; have {self.get(name).get('status')}"
            ) from None


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    e = Env(t.embedded_client(), t.FakeClock(), tmp_path / "capacity.yaml")
    yield e
    if e.provisioner is not None:
        e.provisioner.stop()


def test_provisions_and_sets_accepted(env: Env) -> None:
    env.start({"classes": {CLASS: {"capacity": {"cpu": "4"}, "details": {"zone": "z1"}}}})
    env.request("r1", cpu="1", count=2)
    prov = env.wait_cond("r1", "Provisioned")
    assert prov["reason"] == "Provisioned"
    assert env.cond("r1", "Accepted")["status"] == "True"  # type: ignore[index]
    assert env.get("r1")["status"]["provisioningClassDetails"] == {"zone": "z1"}
    assert env.provisioner is not None
    assert env.provisioner.allocations()[(NS, "r1")].resources == {"cpu": 2000}


def test_requests_of_other_classes_are_ignored(env: Env) -> None:
    env.start({"classes": {CLASS: {}}})
    env.request("other", cls="someone-else.example.com")
    env.request("mine")
    env.wait_cond("mine", "Provisioned")
    assert env.get("other").get("status") is None


def test_delay_then_provision(env: Env) -> None:
    env.start({"classes": {CLASS: {"delaySeconds": 30}}})
    env.request("r1")
    env.wait_cond("r1", "Accepted")
    pending = env.wait_cond("r1", "Provisioned", "False")
    assert pending["message"].startswith("Provisioning; ETA ")
    env.clock.advance(29)
    time.sleep(0.2)
    assert env.cond("r1", "Provisioned")["status"] == "False"  # type: ignore[index]
    env.clock.advance(2)
    env.wait_cond("r1", "Provisioned")


def test_injected_failures_fail_the_first_attempts(env: Env) -> None:
    env.start({"classes": {CLASS: {"failAttempts": 2, "failMessage": "stockout"}}})
    env.request("wl-prov-1")
    env.request("wl-prov-2")
    env.request("wl-prov-3")
    failed = env.wait_cond("wl-prov-1", "Failed")
    assert failed["message"] == "stockout"
    env.wait_cond("wl-prov-2", "Failed")
    env.wait_cond("wl-prov-3", "Provisioned")
    assert env.cond("wl-prov-3", "Failed") is None


def test_insufficient_capacity_fails(env: Env) -> None:
    env.start({"classes": {CLASS: {"capacity": {"cpu": "2"}}}})
    env.request("big", cpu="3")
    failed = env.wait_cond("big", "Failed")
    assert failed["reason"] == "CapacityIsNotFound"
    assert failed["message"] == "Capacity is not available: insufficient cpu: requested 3, available 2"


def test_when_full_wait_provisions_once_capacity_is_freed(env: Env) -> None:
    env.start({"classes": {CLASS: {"whenFull": "Wait", "capacity": {"cpu": "2"}}}})
    env.request("first", cpu="2")
    env.wait_cond("first", "Provisioned")
    env.request("second", cpu="1")
    waiting = env.wait_cond("second", "Provisioned", "False")
    assert waiting["reason"] == "CapacityIsNotFound"
    assert env.cond("second", "Failed") is None
    env.client.delete(r.PROVISIONING_REQUESTS, "first", NS)
    env.wait_cond("second", "Provisioned")


def test_pools_limit_nodes_and_match_flavor_labels(env: Env) -> None:
    env.client.create(
        r.RESOURCE_FLAVORS,
        {
            "apiVersion": KUEUE,
            "kind": "ResourceFlavor",
            "metadata": {"name": "big"},
            "spec": {"nodeLabels": {"pool": "big"}},
        },
    )
    env.start(
        {
            "classes": {
                CLASS: {
                    "pools": [
                        {
                            "name": "big",
                            "flavor": "big",
                            "nodes": 1,
                            "resources": {"cpu": "4"},
                            "details": {"pool": "big"},
                        }
                    ]
                }
            }
        }
    )
    env.request("a", cpu="3", pool="big")
    env.wait_cond("a", "Provisioned")
    assert env.get("a")["status"]["provisioningClassDetails"] == {"pool": "big"}
    env.request("b", cpu="3", pool="big")  # the only node is taken
    failed = env.wait_cond("b", "Failed")
    assert "no free node fits a pod of ppt-b-main (cpu: 3)" in failed["message"]
    env.request("c", cpu="1", pool="small")  # no pool carries that label
    env.wait_cond("c", "Failed")


def test_capacity_revoked_after_delay_frees_capacity(env: Env) -> None:
    env.start({"classes": {CLASS: {"revokeAfterSeconds": 600, "capacity": {"cpu": "1"}, "whenFull": "Wait"}}})
    env.request("r1")
    env.wait_cond("r1", "Provisioned")
    env.request("r2")
    env.wait_cond("r2", "Provisioned", "False")
    env.clock.advance(599)
    time.sleep(0.2)
    assert env.cond("r1", "CapacityRevoked") is None
    env.clock.advance(2)
    revoked = env.wait_cond("r1", "CapacityRevoked")
    assert revoked["reason"] == "CapacityRevoked"
    env.wait_cond("r2", "Provisioned")


def test_booking_expires(env: Env) -> None:
    env.start({"classes": {CLASS: {"bookingExpiresAfterSeconds": 60}}})
    env.request("r1")
    env.wait_cond("r1", "Provisioned")
    env.clock.advance(61)
    env.wait_cond("r1", "BookingExpired")


def test_capacity_file_is_reloaded(env: Env) -> None:
    env.start({"classes": {CLASS: {"whenFull": "Wait", "capacity": {"cpu": "1"}}}})
    env.request("r1", cpu="2")
    env.wait_cond("r1", "Provisioned", "False")
    time.sleep(0.05)  # a distinct modification time
    env.path.write_text(yaml.safe_dump({"classes": {CLASS: {"whenFull": "Wait", "capacity": {"cpu": "2"}}}}))
    import os

    os.utime(env.path, (time.time() + 5, time.time() + 5))
    env.request("poke", cls="other.example.com")  # any event makes the provisioner re-read the file
    env.wait_cond("r1", "Provisioned")


def test_restart_counts_capacity_already_held(env: Env) -> None:
    capacity = {"classes": {CLASS: {"capacity": {"cpu": "2"}}}}
    first = env.start(capacity)
    env.request("r1", cpu="2")
    env.wait_cond("r1", "Provisioned")
    first.stop()
    env.start(capacity)
    env.request("r2", cpu="1")
    env.wait_cond("r2", "Failed")


# --- with Kueue's ProvisioningRequest controller ----------------------------------------------------


def test_provisioning_check_with_local_provisioner(env: Env) -> None:
    """A failed first attempt is retried by Kueue (played here) and the second one provisions."""
    client, clock = env.client, env.clock
    client.create(
        r.RESOURCE_FLAVORS,
        {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "default"}, "spec": {}},
    )
    client.create(
        r.PROVISIONING_REQUEST_CONFIGS,
        {
            "apiVersion": KUEUE,
            "kind": "ProvisioningRequestConfig",
            "metadata": {"name": "cfg"},
            "spec": {"provisioningClassName": CLASS},
        },
    )
    client.create(
        r.ADMISSION_CHECKS,
        t.admission_check(
            "prov",
            CONTROLLER_NAME,
            {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": "cfg"},
        ),
    )
    env.start(
        {"classes": {CLASS: {"failAttempts": 1, "failMessage": "no nodes yet", "capacity": {"cpu": "8"}}}}
    )
    ctl = ProvisioningRequestController(client, clock, poll_interval=0.02)
    ctl.start()
    try:
        client.create(r.WORKLOADS, t.workload("wl", NS, [t.pod_set(count=4, requests={"cpu": "1"})]))
        t.reserve_quota(client, NS, "wl", ["prov"], clock())

        def state(want: str) -> dict[str, Any] | None:
            entry = st.find_check(client.get(r.WORKLOADS, "wl", NS), "prov")
            return entry if entry and entry["state"] == want else None

        retry = t.wait_for(lambda: state("Retry"))
        assert retry["message"] == "Retrying after failure: no nodes yet"
        assert retry["requeueAfterSeconds"] == 60
        clock.advance(60)
        t.evict(client, NS, "wl", clock())
        t.release_quota(client, NS, "wl", clock())
        t.reserve_quota(client, NS, "wl", ["prov"], clock())
        ready = t.wait_for(lambda: state("Ready"))
        assert ready["message"] == "Capacity is provisioned"
        assert (
            ready["podSetUpdates"][0]["annotations"]["autoscaling.x-k8s.io/consume-provisioning-request"]
            == "wl-prov-2"
        )
        assert env.provisioner is not None
        assert env.provisioner.allocations()[(NS, "wl-prov-2")].resources == {"cpu": 4000}
        # The workload finishing deletes the request and frees the capacity.
        t.set_conditions(client, NS, "wl", clock(), Finished="True")

        def gone() -> bool:
            try:
                client.get(r.PROVISIONING_REQUESTS, "wl-prov-2", NS)
                return False
            except NotFound:
                return True

        t.wait_for(gone)
        t.wait_for(lambda: env.provisioner is not None and not env.provisioner.allocations())
    finally:
        ctl.stop()


def test_sample_capacity_file_parses() -> None:
    sample = Path(__file__).resolve().parents[2] / "examples" / "checks" / "provisioner-capacity.yaml"
    spec = CapacitySpec.load(sample)
    assert spec.classes["queued-provisioning.gke.io"].when_full == "Wait"
    assert spec.classes["flaky.example.com"].fail_attempts == 2
