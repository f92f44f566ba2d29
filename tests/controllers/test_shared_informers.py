"""One watch per collection for the whole controller process (upstream: controller-runtime's manager
shares one informer per kind among all its controllers, ``mgr.GetCache()``).

The controllers are built as ``pykueue serve`` and ``pykueue controller`` build them
(:func:`pykueue.cli.components.build_components`) on a client that records the watches it opens;
the ProvisioningRequest admission check controller reads Workloads and AdmissionChecks through the
manager's informers and still acts on every Workload change, the manager's own writes included.
"""

from __future__ import annotations

import argparse
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pykueue.apiserver.app import create_app
from pykueue.checks import states as st
from pykueue.checks import testing as t
from pykueue.cli.components import build_components, start_all
from pykueue.client import resources as r
from pykueue.client.inprocess import InProcessClient, InProcessWatch
from pykueue.client.interface import Resource, WatchEvent
from pykueue.controllers.admissionchecks.provisioning import CONTROLLER_NAME, ProvisioningRequestController
from pykueue.controllers.cluster_cache import WATCHED
from pykueue.controllers.manager import ControllerManager
from pykueue.store import Store

NS = "default"
KUEUE = "kueue.x-k8s.io/v1beta2"


class _CountedWatch:
    def __init__(self, inner: InProcessWatch, done: Any) -> None:
        self.inner = inner
        self.done = done

    def __iter__(self) -> Iterator[WatchEvent]:
        return iter(self.inner)

    def close(self) -> None:
        self.inner.close()
        self.done()


class WatchRecordingClient(InProcessClient):
    """The in-process client, recording how many watches of each collection are open at once."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lock = threading.Lock()
        self.open: Counter[str] = Counter()
        self.most: Counter[str] = Counter()
        self.lists: Counter[str] = Counter()

    def list(self, res: Resource, namespace: str | None = None) -> tuple[list[dict[str, Any]], str]:
        with self.lock:
            self.lists[res.plural] += 1
        return super().list(res, namespace)

    def watch(self, res: Resource, resource_version: str, namespace: str | None = None) -> Any:
        inner = super().watch(res, resource_version, namespace)
        with self.lock:
            self.open[res.plural] += 1
            self.most[res.plural] = max(self.most[res.plural], self.open[res.plural])
        closed = threading.Event()

        def done() -> None:
            with self.lock:
                if not closed.is_set():
                    closed.set()
                    self.open[res.plural] -= 1

        return _CountedWatch(inner, done)


@pytest.fixture
def client() -> Iterator[WatchRecordingClient]:
    store = Store(None)
    _, parts = create_app(store)
    parts.bootstrap()
    yield WatchRecordingClient(parts.handlers)
    store.close()


def _setup(client: WatchRecordingClient) -> None:
    client.create(r.RESOURCE_FLAVORS, {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "default"}})
    client.create(
        r.PROVISIONING_REQUEST_CONFIGS,
        {
            "apiVersion": KUEUE,
            "kind": "ProvisioningRequestConfig",
            "metadata": {"name": "cfg"},
            "spec": {"provisioningClassName": "shared.example.com"},
        },
    )
    client.create(
        r.ADMISSION_CHECKS,
        t.admission_check("prov", CONTROLLER_NAME, {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": "cfg"}),
    )
    client.create(
        r.CLUSTER_QUEUES,
        {
            "apiVersion": KUEUE,
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {
                "namespaceSelector": {},
                "admissionChecksStrategy": {"admissionChecks": [{"name": "prov"}]},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": 4}]}],
                    }
                ],
            },
        },
    )
    client.create(
        r.LOCAL_QUEUES,
        {"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": NS}, "spec": {"clusterQueue": "cq"}},
    )


def _requests(client: WatchRecordingClient) -> list[str]:
    items, _ = InProcessClient(client.handlers).list(r.PROVISIONING_REQUESTS, NS)  # not counted
    return sorted(str(pr["metadata"]["name"]) for pr in items)


def test_the_controller_process_watches_each_collection_once_and_the_provisioning_check_still_acts(
    client: WatchRecordingClient, tmp_path: Path
) -> None:
    _setup(client)
    args = argparse.Namespace(config=None, time_offset_file=None, provisioner=None, max_writes_in_flight=None)
    (manager,) = build_components(client, args, tmp_path, run_jobs=False)
    assert isinstance(manager, ControllerManager)
    (provisioning,) = manager.components
    assert isinstance(provisioning, ProvisioningRequestController)
    stop = start_all([manager])
    try:
        assert provisioning.wait_ready(10)
        # One Workload list and watch, one AdmissionCheck list and watch: the check controller's
        # views share the manager's informers (it used to list and watch both itself and decode
        # every Workload event a second time).
        watched = {res.plural for res in WATCHED} | {
            r.PROVISIONING_REQUEST_CONFIGS.plural,
            r.PROVISIONING_REQUESTS.plural,
        }
        assert client.lists == dict.fromkeys(watched, 1)
        t.wait_for(lambda: set(client.most) == watched)  # each informer watches after its list
        # The AdmissionCheck, seen through the manager's informer: Active (the config exists).
        t.wait_for(lambda: (st.find_condition(client.get(r.ADMISSION_CHECKS, "prov"), st.ACTIVE) or {}).get("status") == "True")

        # The manager reserves quota (its own write, whose watch event the manager skips): the
        # check controller sees that Workload change and asks for capacity.
        client.create(r.WORKLOADS, t.workload("wl", NS, [t.pod_set(count=2, requests={"cpu": "1"})]))
        t.wait_for(lambda: _requests(client) == ["wl-prov-1"])
        wl = client.get(r.WORKLOADS, "wl", NS)
        assert st.has_quota_reservation(wl)
        assert (st.find_check(wl, "prov") or {}).get("state") == st.PENDING

        # Someone else's change of the Workload (it finished): the request is cleaned up.
        t.set_conditions(client, NS, "wl", datetime.now(UTC), Finished="True")
        t.wait_for(lambda: _requests(client) == [])
        assert client.most == dict.fromkeys(watched, 1), "never more than one watch of a collection"
        assert client.lists == dict.fromkeys(watched, 1)
    finally:
        stop()
