"""The coalescing transport: one send per loop step, nothing lost or reordered, flushed on close;
answers to writes leave from the durability callback, as soon as (never before) their fsync."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from pykueue.apiserver.protocol import CoalescingTransport
from pykueue.store import ResourceKey

LEASES = ResourceKey("coordination.k8s.io", "leases", namespaced=True)


async def _pair() -> tuple[asyncio.Transport, socket.socket, list[bytes]]:
    loop = asyncio.get_running_loop()
    ours, theirs = socket.socketpair()
    transport, _ = await loop.create_connection(asyncio.Protocol, sock=ours)
    sends: list[bytes] = []
    real_write = transport.write

    def counting_write(data: Any) -> None:
        sends.append(bytes(data))
        real_write(data)

    transport.write = counting_write  # type: ignore[method-assign]
    theirs.setblocking(False)
    return transport, theirs, sends  # type: ignore[return-value]


async def _read(sock: socket.socket, size: int) -> bytes:
    loop = asyncio.get_running_loop()
    out = b""
    while len(out) < size:
        out += await loop.sock_recv(sock, size - len(out))
    return out


async def _get_ok(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> None:
    """Send ``GET /`` on ``sock`` and read the whole 200 answer (its body is ``ok``)."""
    await loop.sock_sendall(sock, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    answer = b""
    while not answer.endswith(b"ok"):
        chunk = await loop.sock_recv(sock, 4096)
        assert chunk, f"the server closed the connection: {answer!r}"
        answer += chunk
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n")


def test_writes_of_one_step_go_out_as_one_send_in_order() -> None:
    async def scenario() -> None:
        transport, peer, sends = await _pair()
        wrapped = CoalescingTransport(transport, asyncio.get_running_loop())
        wrapped.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
        wrapped.writelines([b"o", bytearray(b"k")])
        assert sends == [] and wrapped.get_write_buffer_size() == 40
        await asyncio.sleep(0)
        assert sends == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"]
        wrapped.write(b"next")
        await asyncio.sleep(0)
        assert len(sends) == 2
        assert await _read(peer, 44) == b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\noknext"
        wrapped.close()
        peer.close()

    asyncio.run(scenario())


def test_close_sends_what_is_queued_first() -> None:
    async def scenario() -> None:
        transport, peer, sends = await _pair()
        wrapped = CoalescingTransport(transport, asyncio.get_running_loop())
        wrapped.write(b"last words")
        wrapped.close()
        assert sends == [b"last words"] and wrapped.is_closing()
        assert await _read(peer, 10) == b"last words"
        await asyncio.sleep(0)  # the scheduled flush finds nothing left
        assert len(sends) == 1
        peer.close()

    asyncio.run(scenario())


def test_large_writes_go_out_at_once_after_what_is_queued() -> None:
    from pykueue.apiserver.protocol import COALESCE_LIMIT

    async def scenario() -> None:
        transport, peer, sends = await _pair()
        wrapped = CoalescingTransport(transport, asyncio.get_running_loop())
        big = b"x" * COALESCE_LIMIT
        wrapped.write(b"head")
        wrapped.write(big)
        assert sends == [b"head", big], "queued bytes first, then the large body, without waiting"
        for _ in range(COALESCE_LIMIT // 1024):
            wrapped.write(b"y" * 1024)
        assert len(sends) == 3 and wrapped.get_write_buffer_size() == transport.get_write_buffer_size()
        assert await _read(peer, 4 + 2 * COALESCE_LIMIT) == b"head" + big + b"y" * COALESCE_LIMIT
        wrapped.close()
        peer.close()

    asyncio.run(scenario())


def test_a_complete_response_is_sent_before_the_loop_turns() -> None:
    """uvicorn's protocol over the coalescing transport: the status line, headers and body go out
    in one send as soon as the application finishes the response, not at the loop's next turn
    (where it would wait behind every callback queued before it)."""
    from uvicorn.config import Config
    from uvicorn.server import ServerState

    from pykueue.apiserver.protocol import ConnectionLimits, limited_protocol

    seen_by_app: list[list[bytes]] = []

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        sends: list[bytes] = []

        async def app(scope: Any, receive: Any, send: Any) -> None:
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
            await send({"type": "http.response.body", "body": b"ok"})
            seen_by_app.append(list(sends))  # still in the step that completed the response

        config = Config(app, lifespan="off", log_level="error")
        config.load()
        protocol = limited_protocol(ConnectionLimits())(config, ServerState(), {}, _loop=loop)
        ours, theirs = socket.socketpair()
        transport, _ = await loop.create_connection(lambda: protocol, sock=ours)
        real_write = transport.write

        def counting_write(data: Any) -> None:
            sends.append(bytes(data))
            real_write(data)

        # the protocol wrapped the transport at connection_made: count what reaches the socket
        protocol.transport._transport.write = counting_write  # type: ignore[attr-defined]
        theirs.setblocking(False)
        await _get_ok(loop, theirs)
        protocol.transport.close()
        theirs.close()

    asyncio.run(scenario())
    assert len(seen_by_app) == 1
    assert len(seen_by_app[0]) == 1, f"the complete response was not sent at once: {seen_by_app[0]}"
    assert seen_by_app[0][0].endswith(b"\r\n\r\nok")


def _lease(name: str) -> bytes:
    import json

    body = json.dumps({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name}}).encode()
    return (
        b"POST /apis/coordination.k8s.io/v1/namespaces/default/leases HTTP/1.1\r\nHost: localhost\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    )


def _read_answer(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
    while len(body) < length:
        body += sock.recv(65536)
    return head


@contextlib.contextmanager
def _served(app: Any, protocol: type[Any], direct: bool = False) -> Iterator[int]:
    """uvicorn (uvloop, ``protocol``) serving ``app`` on a thread of its own; yields the port.
    ``direct``: without uvicorn's access log and proxy headers, as ``pykueue serve`` runs, which
    lets the protocol serve resource requests on its direct path (else the ASGI path serves all)."""
    import threading

    import uvicorn

    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, loop="uvloop", http=protocol, lifespan="on", log_level="error",
        access_log=not direct, proxy_headers=not direct,
    )  # fmt: skip
    server = uvicorn.Server(config)
    runner = threading.Thread(target=server.run, daemon=True)
    runner.start()
    try:
        for _ in range(1000):
            if server.started:
                break
            threading.Event().wait(0.01)
        assert server.started, "the server did not start"
        yield int(server.servers[0].sockets[0].getsockname()[1])
    finally:
        server.should_exit = True
        runner.join(10)


def _connect(port: int) -> socket.socket:
    """A keep-alive connection the server has accepted (one request answered on it)."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(b"GET /version HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert _read_answer(sock).startswith(b"HTTP/1.1 200")
    return sock


@pytest.mark.parametrize("direct", [False, True], ids=["asgi", "direct"])
def test_answers_to_a_burst_leave_while_the_rest_of_it_is_handled(tmp_path: Any, monkeypatch: Any, direct: bool) -> None:
    """``pykueue serve``'s stack (uvicorn, the protocol, the application, an on-disk store): a burst
    of writes that arrives in one turn of the loop. Their answers leave as their fsyncs are done,
    from the store's callback, while later requests of the burst are still to be handled; before,
    every answer waited for the loop's next turn, i.e. for the whole burst."""
    import json
    import threading

    from pykueue.apiserver.app import APIServerApp
    from pykueue.apiserver.protocol import ConnectionLimits, limited_protocol
    from pykueue.store import Store, durability
    from pykueue.store import store as store_module

    monkeypatch.setattr(durability, "INLINE_FSYNC_MAX", 10.0)  # the loop syncs, whatever the disk
    monkeypatch.setattr(store_module, "SYNC_AFTER", 0.0)  # sync once two requests wait
    log: list[tuple[str, str]] = []
    base = limited_protocol(ConnectionLimits())

    class Recording(base):  # type: ignore[valid-type, misc]
        def on_message_complete(self) -> None:
            self.lease = json.loads(self.cycle.body)["metadata"]["name"] if self.scope["method"] == "POST" else None
            super().on_message_complete()

        def on_response_complete(self) -> None:
            if self.lease is not None:
                log.append(("answered", self.lease))
            super().on_response_complete()

    store = Store(str(tmp_path / "store.db"))
    app = APIServerApp(store)
    real_handle = app.handlers.handle

    def handle(req: Any) -> Any:
        if req.method == "POST" and req.resource == "leases":
            log.append(("handled", json.loads(req.body)["metadata"]["name"]))
        return real_handle(req)

    app.handlers.handle = handle  # type: ignore[method-assign]
    burst = 6
    gate = threading.Event()
    try:
        with _served(app, Recording, direct) as port:
            socks = [_connect(port) for _ in range(burst)]  # accepted before the burst
            loop = app.hub.loop
            assert loop is not None
            held = threading.Event()
            loop.call_soon_threadsafe(lambda: (held.set(), gate.wait(10)))
            assert held.wait(10)
            for i, sock in enumerate(socks):  # all in the sockets while the loop is held: one turn reads them
                sock.sendall(_lease(f"burst-{i}"))
            gate.set()
            for sock in socks:
                assert _read_answer(sock).startswith(b"HTTP/1.1 201")
                sock.close()
    finally:
        gate.set()
        store.close()
    handled = [name for what, name in log if what == "handled"]
    assert len(handled) == burst and len([e for e in log if e[0] == "answered"]) == burst, log
    first_answer = log.index(("answered", handled[0]))
    last_handled = log.index(("handled", handled[-1]))
    assert first_answer < last_handled, f"the first request's answer waited for the whole burst: {log}"


@pytest.mark.parametrize("direct", [False, True], ids=["asgi", "direct"])
def test_answers_from_the_durability_callback_wait_for_the_fsync_errors_too(
    tmp_path: Any, monkeypatch: Any, direct: bool
) -> None:
    """The callback path keeps durability: with the WAL's fsync held, neither the 201 of a create
    nor the 409 of a second create of the same name (it saw the first) leaves; both do once the
    fsync is done."""
    import os
    import threading

    from pykueue.apiserver.app import APIServerApp
    from pykueue.apiserver.protocol import ConnectionLimits, limited_protocol
    from pykueue.store import Store

    real_fsync = os.fsync
    gate = threading.Event()
    gate.set()

    def fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").endswith("-wal"):
            gate.wait(10)
        real_fsync(fd)

    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc/self/fd")
    monkeypatch.setattr(os, "fsync", fsync)
    store = Store(str(tmp_path / "store.db"))
    app = APIServerApp(store)
    try:
        with _served(app, limited_protocol(ConnectionLimits()), direct) as port:
            first, second = _connect(port), _connect(port)
            first.settimeout(0.3)
            second.settimeout(0.3)
            gate.clear()
            first.sendall(_lease("held"))
            for _ in range(1000):  # committed ...
                try:
                    store.get(LEASES, "default", "held")
                    break
                except Exception:
                    threading.Event().wait(0.01)
            second.sendall(_lease("held"))
            for sock in (first, second):  # ... not answered
                with pytest.raises(TimeoutError):
                    sock.recv(1)
            gate.set()
            first.settimeout(10)
            second.settimeout(10)
            assert _read_answer(first).startswith(b"HTTP/1.1 201")
            assert _read_answer(second).startswith(b"HTTP/1.1 409")
            first.close()
            second.close()
    finally:
        gate.set()
        store.close()


@pytest.mark.parametrize("direct", [False, True], ids=["asgi", "direct"])
def test_a_failure_building_the_answer_in_the_durability_callback_still_answers(
    tmp_path: Any, monkeypatch: Any, direct: bool
) -> None:
    """A bug while the durability callback builds the answer's messages must not leave the request
    waiting for ever: the request's task (or the direct path) answers 500 (a Status), as the
    coroutine path did."""
    from pykueue.apiserver import app as app_module
    from pykueue.apiserver.app import APIServerApp
    from pykueue.apiserver.protocol import ConnectionLimits, limited_protocol
    from pykueue.store import Store

    target = "_response_headers" if direct else "_response_messages"
    real = getattr(app_module, target)
    calls = [0]

    def first_call_fails(resp: Any) -> Any:
        calls[0] += 1
        if calls[0] == 1:
            raise RuntimeError("building the answer failed")
        return real(resp)

    monkeypatch.setattr(app_module, target, first_call_fails)
    store = Store(str(tmp_path / "store.db"))
    try:
        with _served(APIServerApp(store), limited_protocol(ConnectionLimits()), direct) as port:
            sock = _connect(port)
            sock.settimeout(10)
            sock.sendall(_lease("answered"))
            answer = _read_answer(sock)
            sock.close()
    finally:
        store.close()
    assert answer.startswith(b"HTTP/1.1 500"), answer[:200]
    assert b"content-type: application/json" in answer  # a Status


def test_send_now_sends_a_whole_response_or_nothing_while_writes_are_paused() -> None:
    """scope[SEND_NOW] sends the response from a plain call; while the transport's buffer is full
    (uvicorn's send would wait) it sends nothing and says so, and the awaited send goes on later."""
    from uvicorn.config import Config
    from uvicorn.server import ServerState

    from pykueue.apiserver.protocol import SEND_NOW, ConnectionLimits, limited_protocol

    results: list[bool] = []
    messages = [
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]},
        {"type": "http.response.body", "body": b"ok"},
    ]

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        paused = [True]

        async def app(scope: Any, receive: Any, send: Any) -> None:
            if paused[0]:
                protocol.pause_writing()  # as the transport does over its high-water mark
                results.append(scope[SEND_NOW](messages))
                loop.call_later(0.05, protocol.resume_writing)
                paused[0] = False
                for message in messages:
                    await send(message)
            else:
                results.append(scope[SEND_NOW](messages))

        config = Config(app, lifespan="off", log_level="error")
        config.load()
        protocol = limited_protocol(ConnectionLimits())(config, ServerState(), {}, _loop=loop)
        ours, theirs = socket.socketpair()
        await loop.create_connection(lambda: protocol, sock=ours)
        theirs.setblocking(False)
        for _ in range(2):
            await _get_ok(loop, theirs)
        protocol.transport.close()
        theirs.close()

    asyncio.run(scenario())
    assert results == [False, True]


def test_timeouts_are_one_deadline_not_a_timer_per_request_step() -> None:
    """Each request moves the connection's deadline three times (header, body, idle); a burst of
    keep-alive requests creates no timer per step, and the deadlines still end the connection:
    the idle one after the last answer, the header one for a request never finished."""
    import time

    from uvicorn.config import Config
    from uvicorn.server import ServerState

    from pykueue.apiserver.protocol import ConnectionLimits, limited_protocol

    timers: list[float] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    async def scenario() -> tuple[float, float]:
        loop = asyncio.get_running_loop()
        real_call_at = loop.call_at

        def call_at(when: float, *args: Any, **kwargs: Any) -> Any:  # asyncio's call_later calls it too
            timers.append(when - loop.time())
            return real_call_at(when, *args, **kwargs)

        loop.call_at = call_at  # type: ignore[method-assign]
        config = Config(app, lifespan="off", log_level="error", timeout_keep_alive=1)
        config.load()
        limits = ConnectionLimits(idle=1, header=0.5, body=0.5)
        durations = []
        for request in (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"GET / HTTP/1.1\r\nHost: x\r\n"):
            protocol = limited_protocol(limits)(config, ServerState(), {}, _loop=loop)
            ours, theirs = socket.socketpair()
            # Timed from before the step that sets the deadline (the last answer, the connection):
            # timed from after it, a busy machine's pause in between came off the measured time.
            started = time.monotonic()
            await loop.create_connection(lambda: protocol, sock=ours)  # noqa: B023
            theirs.setblocking(False)
            if request.endswith(b"\r\n\r\n"):
                for _ in range(49):
                    await _get_ok(loop, theirs)
                started = time.monotonic()
                await _get_ok(loop, theirs)
            else:
                await loop.sock_sendall(theirs, request)  # headers never finished
            while await asyncio.wait_for(loop.sock_recv(theirs, 4096), 5):  # until the server closes
                pass
            durations.append(time.monotonic() - started)
            theirs.close()
        return durations[0], durations[1]

    idle, header = asyncio.run(scenario())
    assert 0.9 <= idle < 3, idle
    assert 0.4 <= header < 2.5, header
    assert len(timers) <= 8, timers  # not 3 per request: 150 for the 50 requests
