"""The real ``pykueue serve`` on a populated data directory: private files, the API answering while
the controllers' initial sync runs, and a large LIST not stopping other clients (issue 10,
findings 7 and 9)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ServerProcess, start_server, wait_for

from pykueue.apiserver.app import APIServerApp
from pykueue.apiserver.handlers import APIRequest
from pykueue.store import Store

G = "kueue.x-k8s.io"
WORKLOADS = 6000
WORKLOADS_PATH = f"/apis/{G}/v1beta2/namespaces/default/workloads"


def workload(i: int) -> dict[str, Any]:
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    return {
        "apiVersion": f"{G}/v1beta2",
        "kind": "Workload",
        "metadata": {"name": f"wl-{i:05d}", "labels": {"team": f"t{i % 7}"}},
        "spec": {
            "queueName": "user-queue",
            "podSets": [
                {"name": "main", "count": 1 + i % 4, "template": {"spec": {"restartPolicy": "Never", "containers": [container]}}}
            ],
        },
    }  # fmt: skip


@pytest.fixture(scope="module")
def populated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory holding WORKLOADS Workloads, written through the API server's handlers."""
    data = tmp_path_factory.mktemp("populated") / "data"
    data.mkdir()
    store = Store(str(data / "pykueue.db"))
    try:
        app = APIServerApp(store)
        app.bootstrap()
        for i in range(WORKLOADS):
            req = APIRequest(
                "POST", G, "v1beta2", "workloads", namespace="default", body=json.dumps(workload(i)).encode()
            )
            assert app.handlers.handle(req).status == 201
    finally:
        store.close()
    return data


@pytest.fixture
def copy_of(populated: Path, tmp_path: Path) -> Path:
    data = tmp_path / "data"
    shutil.copytree(populated, data)
    return data


@pytest.fixture
def served(copy_of: Path, tmp_path: Path) -> Iterator[ServerProcess]:
    srv = start_server(tmp_path, data_dir=copy_of)
    yield srv
    if srv.alive():
        srv.stop()


def request(srv: ServerProcess, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
    """One request on a connection of its own (HTTPS with the server's CA and token)."""
    with srv.session() as session:
        resp = session.request(method, srv.url + path, json=body, timeout=60)
        return resp.status_code, resp.content


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_data_directory_and_every_file_in_it_are_private(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    data.chmod(0o755)  # as an older version left it
    (data / "token").write_text("old\n")
    (data / "token").chmod(0o644)
    srv = start_server(tmp_path, data_dir=data, controllers=True)
    try:
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}}
        status, body = request(srv, "POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases", lease)
        assert status == 201, body
        assert _mode(data) == 0o700
        assert (data / "pykueue.db-wal").exists()
        for root, dirs, files in os.walk(data):
            for d in dirs:
                assert _mode(Path(root) / d) == 0o700, f"{root}/{d}: {oct(_mode(Path(root) / d))}"
            for f in files:
                assert _mode(Path(root) / f) == 0o600, f"{root}/{f}: {oct(_mode(Path(root) / f))}"
        assert _mode(srv.kubeconfig) == 0o600
    finally:
        srv.stop()


def test_api_answers_while_the_controllers_sync_after_a_restart(copy_of: Path, tmp_path: Path) -> None:
    srv = start_server(tmp_path, data_dir=copy_of, controllers=True)
    try:
        status, body = request(srv, "GET", f"{WORKLOADS_PATH}/wl-00001")
        answered_with = list(srv.output)
        assert status == 200, body
        synced = wait_for(lambda: any("initial sync done" in line for line in srv.output), timeout=120)
        assert synced
        lines = list(srv.output)
        listening = next(i for i, line in enumerate(lines) if "export KUBECONFIG" in line)
        done = next(i for i, line in enumerate(lines) if "initial sync done" in line)
        assert listening < done, "the API was announced only after the controllers' initial sync"
        assert not any("initial sync done" in line for line in answered_with), (
            "the GET was answered only after the controllers' initial sync"
        )
    finally:
        srv.stop()


def test_large_list_does_not_stop_other_clients(served: ServerProcess) -> None:
    """A small GET sent while an unpaginated LIST is computed is answered before the LIST is."""
    finished: dict[str, float] = {}
    results: dict[str, Any] = {}

    def big_list() -> None:
        with served.session() as session:
            resp = session.get(served.url + WORKLOADS_PATH, timeout=60, stream=True)
            finished["list"] = time.monotonic()  # headers received: the server has computed the LIST
            results["list"] = (resp.status_code, resp.content)

    with served.session() as prober:
        assert prober.get(served.url + "/api/v1/namespaces/default", timeout=60).status_code == 200  # connected
        lister = threading.Thread(target=big_list)
        lister.start()
        time.sleep(0.05)  # the LIST is being computed
        small = prober.get(served.url + "/api/v1/namespaces/default", timeout=60)
        finished["small"] = time.monotonic()
    lister.join(60)
    assert small.status_code == 200
    status, body = results["list"]
    assert status == 200
    assert len(json.loads(body)["items"]) == WORKLOADS
    assert finished["small"] < finished["list"], "a small GET waited for the whole LIST"
