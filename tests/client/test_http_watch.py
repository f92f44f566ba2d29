"""HTTPClient watches against a real ``pykueue serve --no-controllers``."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from httpclient_support import (
    Starter,
    flavor,
    local_queue,
    namespace,
    pod_template,
    rv,
    wait_for,
)

from pykueue.client.http import HTTPClient, HTTPWatch
from pykueue.client.interface import APIError, Gone, WatchEvent
from pykueue.client.resources import LOCAL_QUEUES, NAMESPACES, POD_TEMPLATES, RESOURCE_FLAVORS


class Collector:
    """Iterates a watch in a thread of its own, recording events and how the iteration ended."""

    def __init__(self, w: HTTPWatch) -> None:
        self.watch = w
        self.events: list[WatchEvent] = []
        self.error: BaseException | None = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            for ev in self.watch:
                self.events.append(ev)
        except BaseException as err:
            self.error = err
        finally:
            self.done.set()

    def seen(self) -> list[tuple[str, str]]:
        return [(e.type, e.object["metadata"]["name"]) for e in self.events]


def test_watch_added_modified_deleted(client: HTTPClient) -> None:
    # PodTemplates: deletable at once (ResourceFlavors keep a finalizer without the controllers)
    _, start_rv = client.list(POD_TEMPLATES, "default")
    w = client.watch(POD_TEMPLATES, start_rv, "default")
    col = Collector(w)
    try:
        client.create(POD_TEMPLATES, pod_template("w-basic"))
        client.patch(POD_TEMPLATES, "w-basic", {"metadata": {"labels": {"a": "1"}}}, "default")
        client.delete(POD_TEMPLATES, "w-basic", "default")
        wait_for(lambda: ("DELETED", "w-basic") in col.seen())
    finally:
        w.close()
    assert col.done.wait(5)
    assert col.error is None
    assert col.seen() == [("ADDED", "w-basic"), ("MODIFIED", "w-basic"), ("DELETED", "w-basic")]
    for ev in col.events:  # watch objects carry kind/apiVersion
        assert ev.object["kind"] == "PodTemplate"
        assert ev.object["apiVersion"] == "v1"
    assert col.events[1].object["metadata"]["labels"] == {"a": "1"}
    # resourceVersions only grow along the stream
    rvs = [int(rv(e.object)) for e in col.events]
    assert rvs == sorted(rvs)


def test_watch_resumes_from_a_resource_version(client: HTTPClient) -> None:
    first = client.create(RESOURCE_FLAVORS, flavor("w-resume-1"))
    client.create(RESOURCE_FLAVORS, flavor("w-resume-2"))
    client.patch(RESOURCE_FLAVORS, "w-resume-1", {"metadata": {"labels": {"b": "2"}}})
    w = client.watch(RESOURCE_FLAVORS, rv(first))
    col = Collector(w)
    try:
        client.create(RESOURCE_FLAVORS, flavor("w-resume-3"))
        wait_for(lambda: ("ADDED", "w-resume-3") in col.seen())
    finally:
        w.close()
    assert col.done.wait(5)
    seen = [s for s in col.seen() if s[1].startswith("w-resume-")]
    # replayed history after rv(first) (not the create of w-resume-1 itself), then the live event
    assert seen == [("ADDED", "w-resume-2"), ("MODIFIED", "w-resume-1"), ("ADDED", "w-resume-3")]


def test_namespaced_watch_sees_only_its_namespace(client: HTTPClient) -> None:
    client.create(NAMESPACES, namespace("w-ns-a"))
    client.create(NAMESPACES, namespace("w-ns-b"))
    _, start_rv = client.list(LOCAL_QUEUES)
    w = client.watch(LOCAL_QUEUES, start_rv, "w-ns-a")
    col = Collector(w)
    try:
        client.create(LOCAL_QUEUES, local_queue("other", "w-ns-b"))
        client.create(LOCAL_QUEUES, local_queue("mine", "w-ns-a"))
        wait_for(lambda: ("ADDED", "mine") in col.seen())
    finally:
        w.close()
    assert col.done.wait(5)
    assert col.seen() == [("ADDED", "mine")]
    assert col.events[0].object["kind"] == "LocalQueue"


def test_close_from_another_thread_ends_a_blocked_iteration(client: HTTPClient) -> None:
    _, start_rv = client.list(RESOURCE_FLAVORS)
    w = client.watch(RESOURCE_FLAVORS, start_rv)
    col = Collector(w)
    time.sleep(0.3)  # the iterating thread is now blocked reading a quiet stream
    assert not col.done.is_set()
    w.close()
    # A read blocked on the quiet stream would stay blocked until the watch's own timeout.
    assert col.done.wait(5), "close() did not end the iteration"
    assert col.error is None
    w.close()  # idempotent
    # the client is still usable after a watch was cut
    client.create(RESOURCE_FLAVORS, flavor("w-after-close"))


def test_close_before_iterating(client: HTTPClient) -> None:
    _, start_rv = client.list(RESOURCE_FLAVORS)
    w = client.watch(RESOURCE_FLAVORS, start_rv)
    w.close()
    assert list(w) == []


def test_client_close_ends_its_watches(server: Any) -> None:
    c = HTTPClient.from_kubeconfig(server.kubeconfig)
    _, start_rv = c.list(RESOURCE_FLAVORS)
    cols = [Collector(c.watch(RESOURCE_FLAVORS, start_rv)) for _ in range(3)]
    time.sleep(0.2)
    c.close()
    for col in cols:
        assert col.done.wait(2)
        assert col.error is None


def test_client_close_returns_once_its_watch_readers_let_go_of_their_sockets(server: Any) -> None:
    # The pool closes the connections' file descriptors: a reader still inside its TLS read would
    # then read from a number the next socket of the process gets (seen as a later test's handshake
    # failing with WRONG_VERSION_NUMBER), so close() waits for the readers first.
    for _ in range(5):
        c = HTTPClient.from_kubeconfig(server.kubeconfig)
        _, start_rv = c.list(RESOURCE_FLAVORS)
        watches = [c.watch(RESOURCE_FLAVORS, start_rv) for _ in range(3)]
        cols = [Collector(w) for w in watches]
        time.sleep(0.1)
        c.close()
        assert [w.wait_ended(0) for w in watches] == [True, True, True]
        for col in cols:
            assert col.done.wait(2)
            assert col.error is None


def test_gone_when_watching_from_a_compacted_revision(start: Starter) -> None:
    srv = start("--watch-history", "5")
    c = HTTPClient.from_kubeconfig(srv.kubeconfig)
    try:
        old = c.create(RESOURCE_FLAVORS, flavor("g"))
        for i in range(10):
            c.patch(RESOURCE_FLAVORS, "g", {"metadata": {"labels": {"i": str(i)}}})
        with pytest.raises(Gone) as err:
            for _ in c.watch(RESOURCE_FLAVORS, rv(old)):
                pass
        assert err.value.code == 410
        # a recent revision still works
        _, recent = c.list(RESOURCE_FLAVORS)
        w = c.watch(RESOURCE_FLAVORS, recent)
        col = Collector(w)
        c.patch(RESOURCE_FLAVORS, "g", {"metadata": {"labels": {"i": "last"}}})
        wait_for(lambda: col.seen() == [("MODIFIED", "g")])
        w.close()
    finally:
        c.close()


def test_watch_reopens_after_server_timeout_from_its_newest_bookmark(server: Any) -> None:
    """With a short server-side timeout the stream ends every 2-3 s; the watch re-opens it.

    The server sends a BOOKMARK just before each timeout; the client consumes it (no event) but
    moves its resume point to the bookmark's revision, which here is past every ResourceFlavor
    change because the only writes are Namespaces.
    """
    c = HTTPClient.from_kubeconfig(server.kubeconfig, watch_seconds=2)
    try:
        _, start_rv = c.list(RESOURCE_FLAVORS)
        w = c.watch(RESOURCE_FLAVORS, start_rv)
        col = Collector(w)
        c.create(NAMESPACES, namespace("w-bookmark"))
        ns_rv = int(rv(c.get(NAMESPACES, "w-bookmark")))
        wait_for(lambda: int(w.resource_version) >= ns_rv, timeout=10)
        assert col.events == []
        began = time.monotonic()
        wait_for(lambda: time.monotonic() - began > 3.5, timeout=10)  # past at least one re-open
        c.create(RESOURCE_FLAVORS, flavor("w-after-reopen"))
        wait_for(lambda: ("ADDED", "w-after-reopen") in col.seen(), timeout=10)
        assert not col.done.is_set() and col.error is None
        w.close()
        assert col.done.wait(2)
        assert col.seen() == [("ADDED", "w-after-reopen")]
    finally:
        c.close()


def test_watch_of_unknown_resource_raises(client: HTTPClient) -> None:
    from pykueue.client.interface import NotFound, Resource

    bogus = Resource("example.com", "v1", "widgets", "Widget", False)
    with pytest.raises(NotFound):
        client.watch(bogus, "1")
    with pytest.raises(APIError):
        client.list(bogus)
