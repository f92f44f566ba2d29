"""The HTTP client's async verbs (client/aio.py): the pipelined writes and Event batches run as
coroutines on one event-loop thread over keep-alive connections, with the same answers, errors,
rate limit and credentials as the blocking verbs, against a real ``pykueue serve``."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import gc
import logging
import socket
import sys
import threading
import time
import warnings
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from httpclient_support import TCPProxy, flavor, rv, tls_serving, wait_for

from pykueue.client.aio import AsyncHTTP, EventLoopThread, TransportFailure
from pykueue.client.http import ConnectionFailed, HTTPClient
from pykueue.client.interface import AlreadyExists, Conflict, Invalid, NotFound
from pykueue.client.resources import RESOURCE_FLAVORS
from pykueue.runtime.recorder import CORE_V1, EventRecorder

T = TypeVar("T")


def run(client: HTTPClient, coro: Coroutine[Any, Any, T]) -> T:
    assert client.io is not None
    return client.io.run(coro).result(timeout=30)


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from tls_serving(tmp_path_factory.mktemp("tls-async"))


def _kubeconfig(srv: Any, path: Path, server: str | None = None, user: dict[str, Any] | None = None) -> Path:
    doc = yaml.safe_load(Path(srv.kubeconfig).read_text())
    if server is not None:
        doc["clusters"][0]["cluster"]["server"] = server
    if user is not None:
        doc["users"][0]["user"] = user
    path.write_text(yaml.safe_dump(doc))
    return path


def test_async_verbs_answer_and_fail_as_the_blocking_ones(client: HTTPClient) -> None:
    created = run(client, client.create_async(RESOURCE_FLAVORS, flavor("a-verbs")))
    assert created["metadata"]["name"] == "a-verbs" and created["kind"] == "ResourceFlavor"
    fresh = copy.deepcopy(created)
    fresh["metadata"]["labels"] = {"writer": "async"}
    updated = run(client, client.replace_async(RESOURCE_FLAVORS, fresh))
    assert updated["metadata"]["labels"] == {"writer": "async"} and int(rv(updated)) > int(rv(created))
    # The stale version: the server's 409 Conflict, exactly what the blocking verb raises.
    with pytest.raises(Conflict) as err:
        run(client, client.replace_async(RESOURCE_FLAVORS, created))
    with pytest.raises(Conflict) as sync_err:
        client.replace(RESOURCE_FLAVORS, created)
    assert (err.value.code, err.value.reason, err.value.message) == (
        sync_err.value.code, sync_err.value.reason, sync_err.value.message,
    )
    with pytest.raises(AlreadyExists):
        run(client, client.create_async(RESOURCE_FLAVORS, flavor("a-verbs")))
    with pytest.raises(Invalid) as invalid:
        run(client, client.create_async(RESOURCE_FLAVORS, flavor("Not_Valid")))
    assert "metadata.name" in invalid.value.message
    patched = run(client, client.patch_async(RESOURCE_FLAVORS, "a-verbs", {"metadata": {"labels": {"p": "1"}}}))
    assert patched["metadata"]["labels"] == {"writer": "async", "p": "1"}
    with pytest.raises(NotFound):
        run(client, client.patch_async(RESOURCE_FLAVORS, "a-missing", {"metadata": {"labels": {"p": "1"}}}))
    assert client.get(RESOURCE_FLAVORS, "a-verbs")["metadata"]["labels"] == {"writer": "async", "p": "1"}


def test_many_requests_in_flight_on_one_thread_reuse_their_connections(client: HTTPClient) -> None:
    assert client.io is not None and client._aio is not None
    threads_before = threading.active_count()

    async def burst(n: int) -> list[dict[str, Any]]:
        return await asyncio.gather(*(client.create_async(RESOURCE_FLAVORS, flavor(f"a-many-{i}")) for i in range(n)))

    first = run(client, burst(40))
    opened = client._aio.connections
    assert len({o["metadata"]["name"] for o in first}) == 40
    assert 1 < opened <= 40, "concurrent requests each held a connection of their own"
    # Sequential requests afterwards reuse the idle connections: no new ones.
    for i in range(20):
        run(client, client.patch_async(RESOURCE_FLAVORS, f"a-many-{i}", {"metadata": {"labels": {"n": str(i)}}}))
    assert client._aio.connections == opened
    # One loop thread at most was added, not one per request in flight.
    assert threading.active_count() <= threads_before + 1


def test_a_dropped_idle_connection_is_retried_and_a_dead_server_fails(server: Any, tmp_path: Path) -> None:
    proxy = TCPProxy.to(server.url)
    via = HTTPClient.from_kubeconfig(_kubeconfig(server, tmp_path / "via", proxy.url))
    try:
        run(via, via.create_async(RESOURCE_FLAVORS, flavor("a-drop-1")))
        assert via._aio is not None and via._aio.connections == 1
        # The server side closes the idle keep-alive connection (as a server's idle timeout does):
        # the next request finds it dead and is sent again on a new connection, transparently.
        proxy.cut()
        proxy.restore()
        run(via, via.create_async(RESOURCE_FLAVORS, flavor("a-drop-2")))
        assert via._aio.connections == 2
        proxy.cut()  # now refusing: a connection error (code 0), as the blocking verbs raise
        with pytest.raises(ConnectionFailed) as err:
            run(via, via.create_async(RESOURCE_FLAVORS, flavor("a-drop-3")))
        assert err.value.code == 0
    finally:
        via.close()
        proxy.close()
    assert {"a-drop-1", "a-drop-2"} <= {f["metadata"]["name"] for f in HTTPClient.from_kubeconfig(server.kubeconfig).list(RESOURCE_FLAVORS)[0]}


def test_tls_with_a_token_and_with_a_rotated_token_file(tls_server: Any, tmp_path: Path) -> None:
    c = HTTPClient.from_kubeconfig(tls_server.kubeconfig)
    try:
        assert run(c, c.create_async(RESOURCE_FLAVORS, flavor("a-tls")))["metadata"]["name"] == "a-tls"
    finally:
        c.close()
    # A token file whose token is stale when first read: the 401 makes the auth flow read it
    # again (rotated meanwhile) and the request is sent once more with the new token.
    token = tmp_path / "token"
    token.write_text("stale-token\n")
    c = HTTPClient.from_kubeconfig(_kubeconfig(tls_server, tmp_path / "kc", user={"tokenFile": str(token)}))
    try:
        assert c._aio is not None
        with pytest.raises(Exception) as unauthorized:
            run(c, c.create_async(RESOURCE_FLAVORS, flavor("a-token-file")))
        assert getattr(unauthorized.value, "code", None) == 401
        token.write_text(tls_server.token + "\n")
        assert run(c, c.create_async(RESOURCE_FLAVORS, flavor("a-token-file")))["metadata"]["name"] == "a-token-file"
    finally:
        c.close()


def test_the_rate_limit_applies_to_the_async_verbs(client: HTTPClient) -> None:
    limited = client.with_rate_limit(20, 1)
    loop_time: list[float] = []

    async def five() -> None:
        loop = asyncio.get_running_loop()
        start = loop.time()
        await asyncio.gather(*(limited.create_async(RESOURCE_FLAVORS, flavor(f"a-rate-{i}")) for i in range(5)))
        loop_time.append(loop.time() - start)

    run(client, five())
    assert loop_time[0] >= 4 / 20 * 0.9, "5 requests at 20/s with a burst of 1 take at least 0.2 s"


def _raw_server(connections: list[list[bytes | None]]) -> tuple[socket.socket, int]:
    """A server answering the requests of its n-th connection with ``connections[n]`` in turn
    (None: close the connection on that request without answering)."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        for responses in connections:
            conn, _ = listener.accept()
            with conn:
                for response in responses:
                    data = b""
                    while b"\r\n\r\n" not in data:
                        data += conn.recv(65536)
                    head, _, body = data.partition(b"\r\n\r\n")
                    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")), 0)
                    while len(body) < length:
                        body += conn.recv(65536)
                    if response is None:
                        break
                    conn.sendall(response)

    threading.Thread(target=serve, daemon=True).start()
    return listener, listener.getsockname()[1]


@contextlib.contextmanager
def _raw_client(connections: list[list[bytes | None]]) -> Iterator[tuple[socket.socket, EventLoopThread, AsyncHTTP]]:
    """An :class:`AsyncHTTP` on a loop of its own, talking to :func:`_raw_server` (closed after)."""
    listener, port = _raw_server(connections)
    io = EventLoopThread("test-io")
    http = AsyncHTTP(f"http://127.0.0.1:{port}", None, None, io=io)
    try:
        yield listener, io, http
    finally:
        http.close()
        listener.close()


def test_chunked_answers_and_connection_close() -> None:
    chunked = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\n{\"a\":\r\n3\r\n 1}\r\n0\r\n\r\n"
    )
    closing = b"HTTP/1.1 201 Created\r\nContent-Length: 8\r\nConnection: close\r\n\r\n{\"b\": 2}"
    with _raw_client([[chunked, closing]]) as (listener, io, http):
        assert io.run(http.request("PUT", "/x", b"{}")).result(5) == (200, b'{"a": 1}')
        assert io.run(http.request("POST", "/y", b"{}")).result(5) == (201, b'{"b": 2}')
        assert http.connections == 1
        # The server closed after its "Connection: close" answer: nothing is kept, and with the
        # listener gone the next request fails as a transport failure.
        listener.close()
        with pytest.raises(TransportFailure):
            io.run(http.request("GET", "/z")).result(5)


def test_events_of_a_batch_are_sent_on_the_loop_and_correlated(client: HTTPClient) -> None:
    recorder = EventRecorder(client, "async-test", api=CORE_V1)
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a-ev", "namespace": "default", "uid": "u1"}}
    for i in range(30):
        recorder.event(obj, "Normal", f"Reason{i % 3}", f"message {i % 3}")
    assert recorder.flush(10)
    recorder.event(obj, "Normal", "Reason0", "message 0")  # a repeat in a later batch: a count patch
    assert recorder.flush(10)

    def mine() -> dict[str, int] | None:
        items, _ = client.list(CORE_V1, "default")
        counts = {e["reason"]: int(e.get("count") or 1) for e in items if e["involvedObject"].get("name") == "a-ev"}
        return counts if counts.get("Reason0") == 11 else None

    assert wait_for(mine) == {"Reason0": 11, "Reason1": 10, "Reason2": 10}


def _blocked_in(thread: threading.Thread | None, function: str) -> bool:
    """Whether ``thread`` is currently inside a call of a Python function named ``function``."""
    frame = sys._current_frames().get(thread.ident) if thread is not None and thread.ident else None
    while frame is not None:
        if frame.f_code.co_name == function:
            return True
        frame = frame.f_back
    return False


def test_a_client_closed_under_a_queued_event_batch_ends_the_batch_and_leaks_no_coroutine(
    server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The client closes while the recorder's batch is queued on its loop and not started yet.
    Before, the closed loop dropped the batch's coroutine unawaited (in the clean-clone CI: the
    RuntimeWarning "coroutine ... was never awaited", once the coroutine was collected) and the
    sender waited its whole batch timeout (300 s) for an answer that could not come. Now what
    was scheduled before the stop gets its turn and is then cancelled on the loop's thread before
    the loop closes: the batch ends at once and its failure is logged once."""
    client = HTTPClient.from_kubeconfig(server.kubeconfig)
    io = client.io
    assert io is not None
    recorder = EventRecorder(client, "closing-test", api=CORE_V1)
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a-closing", "namespace": "default"}}
    gate = threading.Event()
    io.call_soon(lambda: gate.wait(20) and None)  # the loop is busy: what is scheduled now waits
    recorder.event(obj, "Normal", "Closing", "queued while the client closes")
    sender = recorder._thread
    wait_for(lambda: _blocked_in(sender, "result"))  # the batch is scheduled, and waited for
    closer = threading.Thread(target=client.close)
    closer.start()
    wait_for(lambda: _blocked_in(closer, "join"))  # the loop's stop is queued behind the batch
    caplog.set_level(logging.WARNING, logger="pykueue.runtime.recorder")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gate.set()
        closer.join(10)
        assert not closer.is_alive()
        assert recorder.flush(10), "the sender still waits for a batch the closed loop will never run"
        del recorder, client, io
        gc.collect()
    leaked = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert leaked == []
    # Sent on the loop's last turn (the client refuses it: it is closed) or cancelled with the loop:
    # either way one line says the event was not recorded.
    failures = [r.getMessage() for r in caplog.records if r.name == "pykueue.runtime.recorder"]
    assert len(failures) == 1 and "failed" in failures[0], failures


def test_a_request_the_server_drops_on_a_reused_connection_is_sent_again() -> None:
    ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"
    # The first connection answers once, then is closed by the server as the second request
    # arrives on it (a keep-alive timeout racing with the request): that request goes out again
    # on a new connection. A request dropped on a NEW connection is not retried: it fails.
    with _raw_client([[ok, None], [ok], [None]]) as (_, io, http):
        assert io.run(http.request("PUT", "/a", b"{}")).result(5) == (200, b"{}")
        assert io.run(http.request("PUT", "/b", b"{}")).result(5) == (200, b"{}")
        assert http.connections == 2
        with pytest.raises(TransportFailure, match="connection closed"):
            io.run(http.request("PUT", "/c", b"{}")).result(5)


def test_a_task_that_swallows_its_cancellation_does_not_keep_the_loop_thread_at_stop() -> None:
    """``EventLoopThread.stop``'s cancellation rounds are bounded: a task that catches its
    CancelledError and awaits again is given a few bounded turns, then the loop closes (a plain
    gather of the cancelled tasks waited for it for good, and stop() always waited its 5 s join)."""
    io = EventLoopThread("swallow-test")
    started = threading.Event()

    async def stubborn() -> None:
        started.set()
        while True:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(100)

    io.run(stubborn())
    assert started.wait(5)
    thread = io._thread
    assert thread is not None
    t0 = time.monotonic()
    io.stop()
    assert not thread.is_alive(), "the loop thread still runs a task that ignored its cancellation"
    assert time.monotonic() - t0 < 4.5
