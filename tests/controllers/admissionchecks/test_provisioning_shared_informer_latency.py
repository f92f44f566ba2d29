"""The check controller reads the manager's Workload informer through a view whose handler runs on
the manager's informer thread: that handler must stay cheap with many cached ProvisioningRequests
(an owner index, as upstream's pkg/controller/admissionchecks/provisioning/indexer.go), so the
manager's own intake of Workload changes does not wait for it, at startup or afterwards."""

from __future__ import annotations

from typing import Any

from pykueue.apiserver.app import create_app
from pykueue.checks import testing as t
from pykueue.client import resources as r
from pykueue.client.inprocess import InProcessClient
from pykueue.controllers.admissionchecks.provisioning import ProvisioningRequestController
from pykueue.controllers.cluster_cache import compact
from pykueue.runtime.informer import ADDED, DELETED, MODIFIED, SYNCED, Change, Informer, ObjectKey
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


class _CountedReads:
    """Counts the cached ProvisioningRequests the check controller reads from its requests
    informer (``get`` and ``items``), so a test can count the work a Workload event costs on the
    manager's informer thread instead of timing it (a timing margin fails on a busy machine)."""

    def __init__(self, requests: Informer) -> None:
        self.read = 0
        get, items = requests.get, requests.items

        def counted_get(key: ObjectKey) -> dict[str, Any] | None:
            self.read += 1
            return get(key)

        def counted_items() -> list[dict[str, Any]]:
            out = items()
            self.read += len(out)
            return out

        requests.get = counted_get  # type: ignore[method-assign]
        requests.items = counted_items  # type: ignore[method-assign]


def _after_the_views(inf: Informer) -> list[Change]:
    """The changes ``inf`` hands its added handlers, recorded by one added last: when it holds a
    change, every handler added before it (the check controller's view) has handled that change."""
    seen: list[Change] = []
    inf.add_handler(seen.append)
    return seen


def test_the_managers_workload_intake_does_not_wait_for_the_check_controllers_request_lookup() -> None:
    # Each Workload change reaches the check controller's view on the manager's informer thread,
    # before the manager's next change: what the view's handler does per change is what the
    # manager's intake waits for. With 5,000 cached requests of other Workloads, the handler must
    # look up the Workload's own requests (the owner index), not read every cached one per change
    # (the scan of 205c4ab's parent: 60 × 5,000 reads).
    store, client = _client(N_EVENTS)
    got: list[Change] = []

    inf = Informer(client, r.WORKLOADS, got.append, transform=compact, cache_objects=False)
    ctl = _check_controller_with_requests(client, inf)
    handled = _after_the_views(inf)
    requests = ctl.requests
    assert isinstance(requests, Informer)
    reads = _CountedReads(requests)
    inf.start()
    try:
        assert inf.wait_synced(10) and ctl.workloads.wait_synced(10)
        t.wait_for(lambda: any(c.type == SYNCED for c in handled), what="the view's initial list handled")
        got.clear()
        handled.clear()
        reads.read = 0
        for i in range(N_EVENTS):
            client.patch(r.WORKLOADS, f"w{i}", {"metadata": {"labels": {"x": "y"}}}, "default")

        def done() -> bool:
            return len(got) == N_EVENTS and len(handled) == N_EVENTS

        t.wait_for(done, what=f"{N_EVENTS} Workload changes at the manager and through the check controller's view")
        assert [c.type for c in got] == [MODIFIED] * N_EVENTS
        assert reads.read < N_EVENTS, f"{reads.read} cached requests read for {N_EVENTS} Workload changes"
    finally:
        inf.stop()
        store.close()


def test_the_managers_initial_sync_does_not_wait_for_the_check_controllers_view() -> None:
    # The manager's SYNCED comes before the check controller's view handles any change of the
    # initial list (436bd62: the owner gets its changes and SYNCED first; before it, the manager
    # waited for the view's handler to work through all 300 Workloads).
    store, client = _client(300)
    handled_at_sync: list[int] = []

    def manager_sink(change: Change) -> None:
        if change.type == SYNCED:
            handled_at_sync.append(len(handled))

    inf = Informer(client, r.WORKLOADS, manager_sink, transform=compact, cache_objects=False)
    ctl = _check_controller_with_requests(client, inf)
    handled = _after_the_views(inf)
    inf.start()
    try:
        assert inf.wait_synced(60) and ctl.workloads.wait_synced(60)
        t.wait_for(lambda: len(handled) == 301, what="the view handled the 300 Workloads and SYNCED")
        assert handled_at_sync == [0], f"the view had handled {handled_at_sync} changes when the manager synced"
    finally:
        inf.stop()
        store.close()


def test_owned_requests_follow_the_requests_informers_changes() -> None:
    # The owner index answers as the scan of the cache it replaces: ADDED, a MODIFIED that moves a
    # request to another owner, DELETED; as upstream's indexRequestsOwner, every owner reference's
    # name counts, whatever its kind.
    store, client = _client(0)
    try:
        ctl = ProvisioningRequestController(client)
        requests = ctl.requests
        assert isinstance(requests, Informer)

        def pr(name: str, *owners: str, kind: str = "Workload", ns: str = "default") -> dict[str, object]:
            refs = [
                {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind, "name": o, "controller": i == 0, "uid": "u"}
                for i, o in enumerate(owners)
            ]
            return {"metadata": {"name": name, "namespace": ns, "ownerReferences": refs}}

        def owned(wl: str, ns: str = "default") -> list[str]:
            return sorted(p["metadata"]["name"] for p in ctl.owned_requests({"metadata": {"name": wl, "namespace": ns}}))

        requests._deliver(ADDED, ("default", "a-1"), pr("a-1", "a"))
        requests._deliver(ADDED, ("default", "a-2"), pr("a-2", "a"))
        requests._deliver(ADDED, ("other", "a-3"), pr("a-3", "a", ns="other"))
        requests._deliver(ADDED, ("default", "j-1"), pr("j-1", "a", kind="Job"))
        requests._deliver(ADDED, ("default", "c-1"), pr("c-1", "c", "a"))
        assert owned("a") == ["a-1", "a-2", "c-1", "j-1"] and owned("a", "other") == ["a-3"]
        assert owned("c") == ["c-1"]
        requests._deliver(MODIFIED, ("default", "a-2"), pr("a-2", "b"))
        assert owned("a") == ["a-1", "c-1", "j-1"] and owned("b") == ["a-2"]
        requests._deliver(DELETED, ("default", "a-1"), pr("a-1", "a"))
        requests._deliver(DELETED, ("default", "j-1"), pr("j-1", "a", kind="Job"))
        requests._deliver(MODIFIED, ("default", "c-1"), pr("c-1", "c"))
        assert owned("a") == [] and ctl._owned.get(("default", "a")) is None
        requests._deliver(MODIFIED, ("default", "a-2"), pr("a-2", kind="Job"))
        assert owned("b") == [] and not ctl._owned.get(("default", "b"))
    finally:
        store.close()
