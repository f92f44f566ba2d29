"""The controllers' Informer over HTTPClient against a real ``pykueue serve --no-controllers``."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import yaml
from httpclient_support import (
    Starter,
    TCPProxy,
    pod_template,
    wait_for,
)

from pykueue.client.http import HTTPClient
from pykueue.client.resources import POD_TEMPLATES
from pykueue.runtime.informer import ADDED, DELETED, MODIFIED, SYNCED, Change, Informer


class Sink:
    """Collects the informer's changes (called from the informer thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.changes: list[Change] = []

    def __call__(self, change: Change) -> None:
        with self._lock:
            self.changes.append(change)

    def seen(self, start: int = 0) -> list[tuple[str, str]]:
        with self._lock:
            return [
                (c.type, "" if c.type == SYNCED else c.object["metadata"]["name"])
                for c in self.changes[start:]
            ]

    def __len__(self) -> int:
        with self._lock:
            return len(self.changes)


def test_informer_lists_then_watches(client: HTTPClient) -> None:
    client.create(POD_TEMPLATES, pod_template("i-a"))
    client.create(POD_TEMPLATES, pod_template("i-b"))
    sink = Sink()
    inf = Informer(client, POD_TEMPLATES, sink, namespace="default")
    inf.start()
    try:
        assert inf.wait_synced(10)
        initial = sink.seen()
        assert initial[-1] == (SYNCED, "")
        assert {("ADDED", "i-a"), ("ADDED", "i-b")} <= set(initial[:-1])
        mark = len(sink)

        client.create(POD_TEMPLATES, pod_template("i-c"))
        client.patch(POD_TEMPLATES, "i-a", {"metadata": {"labels": {"x": "1"}}}, "default")
        client.delete(POD_TEMPLATES, "i-b", "default")
        wait_for(lambda: (DELETED, "i-b") in sink.seen(mark))
        assert sink.seen(mark) == [(ADDED, "i-c"), (MODIFIED, "i-a"), (DELETED, "i-b")]

        modified = sink.changes[mark + 1]
        assert modified.old is not None and modified.new is not None
        assert "x" not in (modified.old["metadata"].get("labels") or {})
        assert modified.new["metadata"]["labels"]["x"] == "1"
        deleted = sink.changes[mark + 2]
        assert deleted.old is not None and deleted.new is None

        cached = {o["metadata"]["name"] for o in inf.items()}
        assert {"i-a", "i-c"} <= cached and "i-b" not in cached
        assert inf.get(("default", "i-a")) is not None
    finally:
        began = time.monotonic()
        inf.stop()
        assert time.monotonic() - began < 3, "stop() waited for a blocked watch"


def _kubeconfig_via(src: Path, dst: Path, server: str) -> Path:
    doc = yaml.safe_load(src.read_text())
    doc["clusters"][0]["cluster"]["server"] = server
    dst.write_text(yaml.safe_dump(doc))
    return dst


def test_informer_relists_after_gone(start: Starter, tmp_path: Path) -> None:
    """The connection breaks; meanwhile history moves past the informer's resourceVersion.

    The informer's retries fail while the network is cut; once it is back, its watch gets 410,
    it relists and reports the difference: one MODIFIED for an object patched several times (a
    resumed watch would have reported every patch), ADDED and DELETED for the rest.
    """
    srv = start("--watch-history", "5")
    direct = HTTPClient.from_kubeconfig(srv.kubeconfig)
    proxy = TCPProxy.to(srv.url)
    via = HTTPClient.from_kubeconfig(_kubeconfig_via(srv.kubeconfig, tmp_path / "via-proxy", proxy.url))
    sink = Sink()
    inf = Informer(via, POD_TEMPLATES, sink, namespace="default")
    try:
        direct.create(POD_TEMPLATES, pod_template("keep"))
        direct.create(POD_TEMPLATES, pod_template("drop"))
        direct.create(POD_TEMPLATES, pod_template("churn"))
        inf.start()
        assert inf.wait_synced(10)
        mark = len(sink)

        proxy.cut()
        time.sleep(0.3)
        direct.delete(POD_TEMPLATES, "drop", "default")
        direct.create(POD_TEMPLATES, pod_template("new"))
        for i in range(3):
            direct.patch(POD_TEMPLATES, "keep", {"metadata": {"labels": {"v": str(i)}}}, "default")
        for i in range(8):  # push the informer's resourceVersion out of the 5-change history
            direct.patch(POD_TEMPLATES, "churn", {"metadata": {"labels": {"n": str(i)}}}, "default")
        time.sleep(1.5)  # the informer retries against the cut network meanwhile
        assert len(sink) == mark
        proxy.restore()

        wait_for(lambda: {(ADDED, "new"), (DELETED, "drop")} <= set(sink.seen(mark)), timeout=15)
        wait_for(lambda: sum(1 for s in sink.seen(mark) if s == (MODIFIED, "keep")) == 1, timeout=5)
        after = sink.seen(mark)
        assert after.count((MODIFIED, "keep")) == 1, after
        assert after.count((MODIFIED, "churn")) == 1, after
        keep = next(
            c for c in sink.changes[mark:] if c.type == MODIFIED and c.object["metadata"]["name"] == "keep"
        )
        assert keep.new is not None and keep.new["metadata"]["labels"] == {"v": "2"}
        assert SYNCED not in {t for t, _ in after}, "SYNCED is reported once, for the first list"

        # and the informer keeps watching after the relist
        mark2 = len(sink)
        direct.create(POD_TEMPLATES, pod_template("later"))
        wait_for(lambda: (ADDED, "later") in sink.seen(mark2))
        assert {o["metadata"]["name"] for o in inf.items()} == {"keep", "churn", "new", "later"}
    finally:
        inf.stop()
        via.close()
        direct.close()
        proxy.close()
