"""The check controller reads the manager's Workload informer through a view whose handler runs on
the manager's informer thread: that handler must stay cheap with many cached ProvisioningRequests
(an owner index, as upstream's pkg/controller/admissionchecks/provisioning/indexer.go), so the
manager's own intake of Workload changes does not wait for it, at startup or afterwards."""

from __future__ import annotations

import threading
import time

from pykueue.apiserver.app import create_app
from pykueue.checks import testing as t
from pykueue.client import resources as r
from pykueue.client.inprocess import InProcessClient
from pykueue.controllers.admissionchecks.provisioning import ProvisioningRequestController
from pykueue.controllers.cluster_cache import compact
from pykueue.runtime.informer import ADDED, DELETED, MODIFIED, SYNCED, Change, Informer
from pykueue.store import Store

N_REQUESTS = 5000
N_EVENTS = 60


def _client(n_workloads: int) -> tuple[Store, InProcessClient]:
    store = Store(None)
    _, parts = create_app(store)
    parts.bootstrap()
    client = InProcessClient(parts.handlers)
    for i in range(n_workloads):
        client.create(r.WORKLOADS, t.workload(f"w{i}", "default", [t.pod_set(count=1, requests={"cpu": "1"})]))
    return store, client


def _check_controller_with_requests(client: InProcessClient, workloads: Informer) -> ProvisioningRequestController:
    """The check controller on the manager's Workload informer, its requests informer holding
    5,000 ProvisioningRequests of other Workloads (delivered as its watch would deliver them)."""
    ctl = ProvisioningRequestController(client, informers={r.WORKLOADS: workloads})
    requests = ctl.requests
    assert isinstance(requests, Informer)
    for i in range(N_REQUESTS):
        owner = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "name": f"x{i}", "controller": True, "uid": "u"}
        pr = {"metadata": {"name": f"x{i}-prov-1", "namespace": "default", "ownerReferences": [owner]}}
        requests._deliver(ADDED, ("default", f"x{i}-prov-1"), pr)
    return ctl


def _intake_time(with_check_controller: bool) -> float:
    store, client = _client(N_EVENTS)
    got: list[float] = []
    lock = threading.Lock()

    def manager_sink(change: Change) -> None:  # the manager's _observed: an inbox put
        if change.type != SYNCED:
            with lock:
                got.append(time.monotonic())

    inf = Informer(client, r.WORKLOADS, manager_sink, transform=compact, cache_objects=False)
    ctl = _check_controller_with_requests(client, inf) if with_check_controller else None
    inf.start()
    try:
        assert inf.wait_synced(10)
        if ctl is not None:
            assert ctl.workloads.wait_synced(10)
        t0 = time.monotonic()
        with lock:
            got.clear()
        for i in range(N_EVENTS):
            client.patch(r.WORKLOADS, f"w{i}", {"metadata": {"labels": {"x": "y"}}}, "default")
        deadline = time.monotonic() + 30
        while len(got) < N_EVENTS and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(got) == N_EVENTS
        return got[-1] - t0
    finally:
        inf.stop()
        store.close()


def test_the_managers_workload_intake_does_not_wait_for_the_check_controllers_request_lookup() -> None:
    alone = _intake_time(False)
    shared = _intake_time(True)
    print(f"manager got {N_EVENTS} Workload events in {alone:.3f}s alone, {shared:.3f}s with the check controller's view")
    assert shared < alone + 0.25, f"{shared:.3f}s vs {alone:.3f}s"


def _sync_time(with_check_controller: bool, n_workloads: int = 300) -> float:
    store, client = _client(n_workloads)
    synced = threading.Event()

    def manager_sink(change: Change) -> None:
        if change.type == SYNCED:
            synced.set()

    inf = Informer(client, r.WORKLOADS, manager_sink, transform=compact, cache_objects=False)
    if with_check_controller:
        _check_controller_with_requests(client, inf)
    t0 = time.monotonic()
    inf.start()
    try:
        assert synced.wait(60)
        return time.monotonic() - t0
    finally:
        inf.stop()
        store.close()


def test_the_managers_initial_sync_does_not_wait_for_the_check_controllers_view() -> None:
    alone = _sync_time(False)
    shared = _sync_time(True)
    print(f"manager's Workload SYNCED after {alone:.3f}s alone, {shared:.3f}s with the check controller's view")
    assert shared < alone + 0.5, f"{shared:.3f}s vs {alone:.3f}s"


def test_owned_requests_follow_the_requests_informers_changes() -> None:
    # The owner index answers as the scan of the cache it replaces: ADDED, a MODIFIED that moves a
    # request to another owner, DELETED, and only Workload owners of the kueue group count.
    store, client = _client(0)
    try:
        ctl = ProvisioningRequestController(client)
        requests = ctl.requests
        assert isinstance(requests, Informer)

        def pr(name: str, owner: str, kind: str = "Workload", ns: str = "default") -> dict[str, object]:
            ref = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind, "name": owner, "controller": True, "uid": "u"}
            return {"metadata": {"name": name, "namespace": ns, "ownerReferences": [ref]}}

        def owned(wl: str, ns: str = "default") -> list[str]:
            return sorted(p["metadata"]["name"] for p in ctl.owned_requests({"metadata": {"name": wl, "namespace": ns}}))

        requests._deliver(ADDED, ("default", "a-1"), pr("a-1", "a"))
        requests._deliver(ADDED, ("default", "a-2"), pr("a-2", "a"))
        requests._deliver(ADDED, ("other", "a-3"), pr("a-3", "a", ns="other"))
        requests._deliver(ADDED, ("default", "j-1"), pr("j-1", "a", kind="Job"))
        assert owned("a") == ["a-1", "a-2"] and owned("a", "other") == ["a-3"]
        requests._deliver(MODIFIED, ("default", "a-2"), pr("a-2", "b"))
        assert owned("a") == ["a-1"] and owned("b") == ["a-2"]
        requests._deliver(DELETED, ("default", "a-1"), pr("a-1", "a"))
        assert owned("a") == [] and ctl._owned.get(("default", "a")) is None
        requests._deliver(MODIFIED, ("default", "a-2"), pr("a-2", "b", kind="Job"))
        assert owned("b") == [] and not ctl._owned.get(("default", "b"))
    finally:
        store.close()
