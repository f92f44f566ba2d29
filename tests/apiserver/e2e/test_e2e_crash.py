"""SIGKILL ``pykueue serve`` in the middle of a stream of creates; nothing acknowledged is lost.

Writers create objects over HTTP (and one through the real kubectl) until the server is killed.
After a restart on the same data directory every acknowledged object is present with the uid and
resourceVersion it was acknowledged with, a watch replaying the change log from before the first
write rebuilds exactly the listed state, a ``resourceVersion=0`` watch starts from that state,
and new writes continue above every revision seen.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path
from typing import Any

import requests
from conftest import ServerProcess, start_server, wait_for

G, V = "kueue.x-k8s.io", "v1beta2"
RF_PATH = f"/apis/{G}/{V}/resourceflavors"


def flavor(name: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{G}/{V}",
        "kind": "ResourceFlavor",
        "metadata": {"name": name, "labels": {"crash": "yes"}},
    }


def http_writer(
    srv: ServerProcess, prefix: str, acked: dict[str, tuple[str, str]], stop: threading.Event
) -> None:
    session, url = srv.session(), srv.url
    i = 0
    while not stop.is_set():
        name = f"{prefix}-{i}"
        try:
            r = session.post(url + RF_PATH, json=flavor(name), timeout=5)
        except requests.RequestException:
            return
        if r.status_code != 201:
            return
        meta = r.json()["metadata"]
        acked[name] = (meta["uid"], meta["resourceVersion"])
        i += 1


def kubectl_writer(srv: ServerProcess, acked: dict[str, tuple[str, str]], stop: threading.Event) -> None:
    i = 0
    while not stop.is_set():
        name = f"kubectl-{i}"
        try:
            out = srv.kubectl(
                "create", "-o", "json", "-f", "-", stdin=json.dumps(flavor(name)), check=False, timeout=10
            )
        except Exception:
            return
        if out.returncode != 0:
            return
        meta = json.loads(out.stdout)["metadata"]
        acked[name] = (meta["uid"], meta["resourceVersion"])
        i += 1


def watch_events(srv: ServerProcess, rv: str) -> list[dict[str, Any]]:
    r = srv.http.get(f"{srv.url}{RF_PATH}?watch=true&resourceVersion={rv}&timeoutSeconds=2", timeout=30)
    assert r.status_code == 200
    return [json.loads(line) for line in r.text.splitlines() if line.strip()]


def test_sigkill_during_writes_loses_no_acknowledged_object(tmp_path: Path) -> None:
    srv = start_server(tmp_path)
    start_rv = srv.http.get(srv.url + RF_PATH).json()["metadata"]["resourceVersion"]
    acked: dict[str, tuple[str, str]] = {}
    stop = threading.Event()
    threads = [threading.Thread(target=http_writer, args=(srv, f"w{n}", acked, stop)) for n in range(4)]
    threads.append(threading.Thread(target=kubectl_writer, args=(srv, acked, stop)))
    for t in threads:
        t.start()
    wait_for(lambda: len(acked) >= 400 and any(k.startswith("kubectl-") for k in acked), timeout=60)
    srv.proc.send_signal(signal.SIGKILL)
    srv.proc.wait(10)
    stop.set()
    for t in threads:
        t.join(30)
    snapshot = dict(acked)

    srv2 = start_server(tmp_path, data_dir=srv.data_dir)
    try:
        listed = srv2.http.get(srv2.url + RF_PATH).json()
        items = {i["metadata"]["name"]: i for i in listed["items"]}
        missing = [n for n in snapshot if n not in items]
        assert not missing, f"{len(missing)} acknowledged objects lost, e.g. {missing[:5]}"
        for name, (uid, rv) in snapshot.items():
            assert items[name]["metadata"]["uid"] == uid
            assert items[name]["metadata"]["resourceVersion"] == rv
        list_rv = int(listed["metadata"]["resourceVersion"])
        assert list_rv >= max(int(rv) for _, rv in snapshot.values())

        # replaying the change log from before the first write rebuilds the listed state
        state: dict[str, str] = {}
        for ev in watch_events(srv2, start_rv):
            name = ev["object"]["metadata"]["name"]
            if ev["type"] in ("ADDED", "MODIFIED"):
                state[name] = ev["object"]["metadata"]["resourceVersion"]
            elif ev["type"] == "DELETED":
                state.pop(name, None)
        assert state == {n: i["metadata"]["resourceVersion"] for n, i in items.items()}

        # resourceVersion=0: the current state as ADDED events
        initial = watch_events(srv2, "0")
        assert {e["object"]["metadata"]["name"] for e in initial if e["type"] == "ADDED"} == set(items)

        created = srv2.http.post(srv2.url + RF_PATH, json=flavor("after-crash"), timeout=5)
        assert created.status_code == 201
        assert int(created.json()["metadata"]["resourceVersion"]) > list_rv
    finally:
        srv2.stop()
    time.sleep(0)
