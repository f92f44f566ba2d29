"""The protocol's direct path (plain resource requests served without an ASGI task) answers
byte for byte as the ASGI path does, for every kind of answer, on keep-alive, pipelined and closing
connections, and authenticates and authorizes every request."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pykueue.apiserver import flowcontrol
from pykueue.apiserver.app import MAX_BODY_BYTES, APIServerApp
from pykueue.apiserver.protocol import ConnectionLimits
from pykueue.apiserver.server import APIServer, uvicorn_config
from pykueue.store import Store

ADMIN = "admin-token-for-tests"
READER = "readonly-token-for-tests"
WL = "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads"


class ASGIOnly(APIServerApp):
    """The same application without the direct path: every request through ``__call__``."""

    direct = None  # type: ignore[assignment]


class Counting(APIServerApp):
    """Counts the requests the ASGI path serves."""

    asgi_calls = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            type(self).asgi_calls += 1
        await super().__call__(scope, receive, send)


@contextlib.contextmanager
def served(app_class: type[APIServerApp], data: Path, limits: ConnectionLimits | None = None) -> Iterator[int]:
    """``pykueue serve``'s uvicorn configuration (plain HTTP) serving ``app_class`` on a thread."""
    store = Store(str(data / "store.db"))
    app = app_class(store, token=ADMIN, readonly_token=READER, served_names=["localhost"])
    config = uvicorn_config(app, "127.0.0.1", 0, limits or ConnectionLimits(), "error", None)
    server = APIServer(config, app, on_ready=lambda port: None)
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
        store.close()


def request(method: str, path: str, body: Any = None, token: str | None = ADMIN, extra: bytes = b"", **kw: Any) -> bytes:
    data = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    head = f"{method} {path} HTTP/{kw.get('version', '1.1')}\r\nHost: localhost\r\nAccept: application/json\r\n"
    if token:
        head += f"Authorization: Bearer {token}\r\n"
    if body is not None:
        head += f"Content-Type: {kw.get('content_type', 'application/json')}\r\nContent-Length: {len(data)}\r\n"
    return head.encode() + extra + b"\r\n" + data


def read_answers(sock: socket.socket, count: int) -> list[bytes]:
    """``count`` whole answers (by Content-Length), then whatever follows until EOF or a pause."""
    buf = b""
    answers: list[bytes] = []
    sock.settimeout(10)
    while len(answers) < count:
        while b"\r\n\r\n" not in buf:
            chunk = sock.recv(65536)
            if not chunk:
                return answers
            buf += chunk
        head, _, rest = buf.partition(b"\r\n\r\n")
        found = re.search(rb"(?im)^content-length: (\d+)", head)
        length = int(found.group(1)) if found else 0
        while len(rest) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        answers.append(head + b"\r\n\r\n" + rest[:length])
        buf = rest[length:]
    return answers


def closed(sock: socket.socket) -> bool:
    """Whether the server closes the connection (it does at once, or not at all: 10 s is ample)."""
    sock.settimeout(10)
    try:
        return sock.recv(1) == b""
    except (TimeoutError, ConnectionResetError):
        return False


def normalized(answer: bytes) -> bytes:
    """Without what differs between two servers: the date, uids, timestamps, content lengths, a
    Table row's age (its last cell: "0s" or "1s" when the conversation crosses a second)."""
    answer = re.sub(rb"(?im)^date: [^\r]*\r\n", b"", answer)
    answer = re.sub(rb"(?im)^content-length: \d+\r\n", b"", answer)
    answer = re.sub(rb'"(\d+[smhdy])+"(?=\],"object")', b'"AGE"', answer)
    return re.sub(rb'"(uid|creationTimestamp|time|lastTransitionTime)":"[^"]*"', rb'"\1":"X"', answer)


def workload(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]},
    }  # fmt: skip


def conversation(port: int) -> list[bytes]:
    """Every kind of answer, on one keep-alive connection and on closing ones."""
    out: list[bytes] = []
    sock = socket.create_connection(("127.0.0.1", port))

    def say(*requests: bytes) -> None:
        sock.sendall(b"".join(requests))
        got = read_answers(sock, len(requests))
        assert len(got) == len(requests), got
        out.extend(got)

    say(request("POST", WL, workload("a")))  # 201
    created = json.loads(out[-1].partition(b"\r\n\r\n")[2])
    say(request("POST", WL, workload("a")))  # 409
    say(request("POST", WL, {**workload("b"), "spec": {"queueName": "lq"}}))  # 422
    say(request("POST", WL, b"{not json"))  # 400
    say(request("POST", WL, workload("c"), content_type="text/plain"))  # 415
    say(request("GET", f"{WL}/a"), request("GET", f"{WL}/missing"))  # pipelined: 200, 404
    say(request("GET", f"{WL}/a", extra=b"Accept: application/vnd.kubernetes.protobuf\r\n"))  # 406/200 as negotiated
    say(request("GET", f"{WL}/a", extra=b"Accept: application/json;as=Table;v=v1;g=meta.k8s.io\r\n"))  # a Table
    say(request("GET", "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/nothings"))  # 404
    say(request("GET", WL + "?labelSelector=a%3Db"))  # a LIST
    status = {**created, "status": {"conditions": [{"type": "Finished", "status": "True", "reason": "Succeeded",
              "message": "done", "lastTransitionTime": "2026-11-26T10:00:00Z"}]}}  # fmt: skip
    say(request("PUT", f"{WL}/a/status", status))  # 200
    say(request("PUT", f"{WL}/a/status", status))  # 409: stale resourceVersion
    apply = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": "a", "namespace": "default"},
             "status": {"conditions": [{"type": "Evicted", "status": "True", "reason": "ByTest", "message": "m",
                                        "lastTransitionTime": "2026-11-26T10:00:00Z"}]}}  # fmt: skip
    say(request("PATCH", f"{WL}/a/status?fieldManager=t&force=true", apply, content_type="application/apply-patch+yaml"))
    say(request("POST", "/api/v1/namespaces/default/events", {"apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "e1"}, "involvedObject": {"kind": "Workload", "name": "a", "namespace": "default"},
        "reason": "R", "message": "m", "type": "Normal"}))  # fmt: skip
    # every request is authenticated and authorized, also after good ones on the same connection
    say(request("GET", f"{WL}/a", token="wrong"))  # 401 (closes the connection)
    assert closed(sock)
    sock = socket.create_connection(("127.0.0.1", port))
    say(request("GET", f"{WL}/a"), request("POST", WL, workload("r"), token=READER))  # 200, 403
    say(request("GET", f"{WL}/a", token=READER))  # 200
    say(request("DELETE", f"{WL}/a", {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}))
    say(request("GET", "/version"), request("GET", "/apis/kueue.x-k8s.io/v1beta2"))  # the ASGI path's own
    say(request("GET", f"{WL}/b", extra=b"Connection: close\r\n"))  # 404, then closed
    out.append(b"closed" if closed(sock) else b"open")
    sock = socket.create_connection(("127.0.0.1", port))
    say(request("GET", f"{WL}/missing", version="1.0"))  # HTTP/1.0: closed after the answer
    out.append(b"closed" if closed(sock) else b"open")
    sock = socket.create_connection(("127.0.0.1", port))
    huge = (f"POST {WL} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {ADMIN}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {MAX_BODY_BYTES + 1}\r\n\r\n")  # fmt: skip
    say(huge.encode())  # 413 before the body is read
    sock.close()
    sock = socket.create_connection(("127.0.0.1", port))
    body = json.dumps(workload("chunked")).encode()
    say(request("POST", WL, None, extra=b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n")
        + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))  # fmt: skip
    sock.close()
    return out


def test_direct_path_answers_as_the_asgi_path_does(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    Counting.asgi_calls = 0
    with served(Counting, tmp_path / "a") as port:
        direct = conversation(port)
    asgi_calls = Counting.asgi_calls
    with served(ASGIOnly, tmp_path / "b") as port:
        via_asgi = conversation(port)
    assert len(direct) == len(via_asgi)
    for ours, theirs in zip(direct, via_asgi, strict=True):
        assert normalized(ours) == normalized(theirs)
        if ours not in (b"closed", b"open"):  # the length is right for the body sent
            head, _, body = ours.partition(b"\r\n\r\n")
            assert int(re.search(rb"(?im)^content-length: (\d+)", head).group(1)) == len(body)  # type: ignore[union-attr]
            assert re.search(rb"(?im)^date: ", head)
    statuses = [a.split(b" ", 2)[1] for a in direct if a.startswith(b"HTTP/")]
    assert statuses == [b"201", b"409", b"422", b"400", b"415", b"200", b"404", b"200", b"200", b"404", b"200",
                        b"200", b"409", b"200", b"201", b"401", b"200", b"403", b"200", b"200", b"200", b"200",
                        b"404", b"404", b"413", b"201"]  # fmt: skip
    assert direct.count(b"closed") == 2, "Connection: close and HTTP/1.0 close after the answer"
    # only the refusals (401, 403), the two non-resource paths, the 413 and the chunked body took
    # the ASGI path: the 20 other requests were served directly
    assert asgi_calls == 6, asgi_calls


async def _one_exchange(app: Any, request: bytes, until: bytes, on_connected: Any = None) -> bytes:
    """``app`` behind serve's protocol on one end of a socketpair: ``request`` sent from the other
    end, the answer read until it ends with ``until``. ``on_connected(protocol, transport)`` runs
    once the connection is made."""
    from uvicorn.config import Config
    from uvicorn.server import ServerState

    from pykueue.apiserver.protocol import limited_protocol

    loop = asyncio.get_running_loop()
    config = Config(app, lifespan="off", log_level="error", access_log=False, proxy_headers=False)
    config.load()
    protocol = limited_protocol(ConnectionLimits())(config, ServerState(), {}, _loop=loop)
    ours, theirs = socket.socketpair()
    transport, _ = await loop.create_connection(lambda: protocol, sock=ours)
    if on_connected is not None:
        on_connected(protocol, transport)
    theirs.setblocking(False)
    await loop.sock_sendall(theirs, request)
    answer = b""
    while not answer.endswith(until):
        chunk = await asyncio.wait_for(loop.sock_recv(theirs, 4096), 10)
        assert chunk, answer
        answer += chunk
    protocol.transport.close()
    theirs.close()
    return answer


def test_direct_answer_waits_for_the_transport_while_writes_are_paused() -> None:
    """As uvicorn's ``send``: while the transport's buffer is over its high-water mark the answer is
    not written; it goes out, whole, once writing resumes."""
    written_while_paused: list[int] = []
    sends: list[bytes] = []
    protocol: Any = None

    class App:
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            raise AssertionError("the direct path serves this request")

        def direct(self, scope: Any, respond: Any) -> Any:
            def serve(body: bytes) -> None:
                protocol.pause_writing()  # as the transport does over its high-water mark
                respond(200, [(b"content-type", b"text/plain")], body.upper())
                written_while_paused.append(len(sends))
                asyncio.get_running_loop().call_later(0.05, protocol.resume_writing)

            return serve

    def count_sends(connected: Any, transport: Any) -> None:
        nonlocal protocol
        protocol = connected
        real_write = transport.write
        connected.transport._transport.write = lambda data: (sends.append(bytes(data)), real_write(data))

    answer = asyncio.run(
        _one_exchange(App(), b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok", b"OK", count_sends)
    )
    assert written_while_paused == [0]
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and b"content-length: 2\r\n" in answer
    assert len(sends) == 1, sends


def test_a_bug_in_the_direct_path_is_a_500_not_a_400(caplog: pytest.LogCaptureFixture) -> None:
    """An exception from the application's direct function would reach httptools' parser, which
    makes uvicorn answer 400 "Invalid HTTP request": the protocol answers 500 instead, and logs it."""

    class App:
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            raise AssertionError("the direct path serves this request")

        def direct(self, scope: Any, respond: Any) -> Any:
            def serve(body: bytes) -> None:
                raise RuntimeError("a bug")

            return serve

    answer = asyncio.run(_one_exchange(App(), b"GET /x HTTP/1.1\r\nHost: x\r\n\r\n", b"Internal Server Error"))
    assert answer.startswith(b"HTTP/1.1 500 Internal Server Error\r\n")
    assert "serving GET /x failed" in caplog.text


SHORT = ConnectionLimits(idle=1.0, header=1.0, body=1.0)


@pytest.fixture
def held_fsync(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """The WAL's fsyncs wait while the returned event is clear (on the store's sync thread: the
    event loop goes on, as with a slow disk)."""
    import os

    from pykueue.store import durability

    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc/self/fd")
    real_fsync = os.fsync
    gate = threading.Event()
    gate.set()

    def fsync(fd: int) -> None:
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/self/fd/{fd}").endswith("-wal"):
                gate.wait(10)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(durability, "INLINE_FSYNC_MAX", -1.0)  # never on the loop's thread
    try:
        yield gate
    finally:
        gate.set()


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def status_of(answer: bytes) -> bytes:
    return answer.split(b" ", 2)[1]


@pytest.mark.parametrize(
    "refused",
    [
        request("POST", WL, b"{}").replace(b"Host: localhost", b"Host: evil.example"),
        request("POST", WL, b"{}", token=READER),
    ],
    ids=["bad-host", "read-only-user"],
)
def test_a_request_answered_before_its_body_still_times_out(tmp_path: Path, refused: bytes) -> None:
    """A 403 sent before the body arrived, then the body: the connection is not held open without
    credentials for ever, the idle deadline ends it (it ended there before the body came, too)."""
    head, _, body = refused.partition(b"\r\n\r\n")
    with served(APIServerApp, tmp_path, SHORT) as port:
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(head + b"\r\n\r\n")
        [answer] = read_answers(sock, 1)
        assert status_of(answer) == b"403", answer
        sock.sendall(body)
        assert closed(sock), "the connection stayed open after the body of a refused request"
        sock.close()


def test_a_pipelined_body_timer_starts_when_its_request_does(tmp_path: Path, held_fsync: threading.Event) -> None:
    """A create waits for its fsync longer than the body timeout while a second create is pipelined
    behind it with part of its body: uvicorn reads nothing more until the first answer is out, so
    the second body's timer starts only then; the first answer is not cut off."""
    second = request("POST", "/api/v1/namespaces", namespace("second"))
    with served(APIServerApp, tmp_path, SHORT) as port:
        sock = socket.create_connection(("127.0.0.1", port))
        held_fsync.clear()
        sock.sendall(request("POST", "/api/v1/namespaces", namespace("first")) + second[:-5])
        sock.settimeout(2.5)  # > the body timeout: still open, the first answer held by its fsync
        with pytest.raises(TimeoutError):
            sock.recv(1)
        held_fsync.set()
        [first] = read_answers(sock, 1)
        assert status_of(first) == b"201", first
        sock.sendall(second[-5:])  # within the body timeout, counted from the first answer
        [answer] = read_answers(sock, 1)
        assert status_of(answer) == b"201", answer
        sock.close()


def test_requests_pipelined_behind_a_held_write_are_answered_in_order(
    tmp_path: Path, held_fsync: threading.Event
) -> None:
    """Requests pipelined behind a write waiting for its fsync start from the pipeline (on the ASGI
    path: the direct path serves only requests that start at their headers), in order."""
    with served(APIServerApp, tmp_path) as port:
        sock = socket.create_connection(("127.0.0.1", port))
        held_fsync.clear()
        sock.sendall(
            request("POST", "/api/v1/namespaces", namespace("p1"))
            + request("GET", "/api/v1/namespaces/p1")
            + request("POST", "/api/v1/namespaces", namespace("p2"))
            + request("GET", "/api/v1/namespaces/missing")
        )
        threading.Event().wait(0.3)
        held_fsync.set()
        answers = read_answers(sock, 4)
        sock.close()
    assert [status_of(a) for a in answers] == [b"201", b"200", b"201", b"404"], answers


def test_expect_100_continue_is_answered_before_the_body(tmp_path: Path) -> None:
    """A client that waits for ``100 Continue`` (curl does for larger bodies) gets it: uvicorn's
    ``receive`` sends it, so such a request takes the ASGI path."""
    body = json.dumps(namespace("continued")).encode()
    head, _, _ = request("POST", "/api/v1/namespaces", body, extra=b"Expect: 100-continue\r\n").partition(b"\r\n\r\n")
    with served(APIServerApp, tmp_path) as port:
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(head + b"\r\n\r\n")
        sock.settimeout(10)
        continued = b""
        while b"\r\n\r\n" not in continued:
            chunk = sock.recv(4096)
            assert chunk, continued
            continued += chunk
        assert continued == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        [answer] = read_answers(sock, 1)
        assert status_of(answer) == b"201", answer
        sock.close()


def test_a_bug_making_a_write_visible_is_a_status_on_both_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's ``when_visible`` raising (a bug) is answered with the ASGI path's InternalError
    Status on the direct path too, not a text/plain 500."""

    def broken(store: Store, callback: Any) -> bool:
        raise RuntimeError("bug in when_visible")

    monkeypatch.setattr(Store, "when_visible", broken)
    answers = []
    for app_class in (APIServerApp, ASGIOnly):
        (tmp_path / app_class.__name__).mkdir()
        with served(app_class, tmp_path / app_class.__name__) as port:
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(request("POST", "/api/v1/namespaces", namespace("broken")))
            answers += read_answers(sock, 1)
            sock.close()
    direct, via_asgi = answers
    assert normalized(direct) == normalized(via_asgi)
    assert status_of(direct) == b"500" and b"content-type: application/json" in direct, direct
    assert b'"reason":"InternalError"' in direct and b"RuntimeError: bug in when_visible" in direct, direct


def test_a_request_whose_client_left_while_it_waited_for_its_turn_is_not_served(tmp_path: Path) -> None:
    """kube-apiserver drops a request whose context ended while it waited in its fair queue (the
    client's connection closed: net/http cancels the context); it never runs its handler. A queued
    direct request (``flowcontrol.FairDispatcher``) whose client disconnected must not be executed
    either: here a POST whose client left would still create the Workload."""
    with served(APIServerApp, tmp_path) as port:
        probe = socket.create_connection(("127.0.0.1", port))
        probe.sendall(request("GET", f"{WL}/missing"))
        assert len(read_answers(probe, 1)) == 1  # the server loop's dispatcher exists now
        running = [(lp, d) for lp, d in flowcontrol._DISPATCHERS.items() if lp.is_running()]
        assert len(running) == 1
        loop, dispatcher = running[0]
        sleeping = threading.Event()

        def hold() -> None:
            sleeping.set()
            threading.Event().wait(0.3)  # the loop is busy: the POST below is read only afterwards

        def busy() -> None:
            dispatcher.budget = 0.0  # every request waits for its turn, one per loop turn
            dispatcher.submit(("hold", 0), hold)
            for flow in range(1, 8):  # other flows ahead: several loop turns before the POST's
                for _ in range(3):
                    dispatcher.submit(("hold", flow), lambda: None)

        loop.call_soon_threadsafe(busy)
        assert sleeping.wait(10)
        gone = socket.create_connection(("127.0.0.1", port))
        gone.sendall(request("POST", WL, workload("left")))
        gone.close()  # the client leaves before its request's turn
        for _ in range(500):
            if not dispatcher.queued():
                break
            threading.Event().wait(0.01)
        loop.call_soon_threadsafe(setattr, dispatcher, "budget", flowcontrol.TURN_BUDGET)
        threading.Event().wait(0.1)
        probe.sendall(request("GET", f"{WL}/left"))
        answer = read_answers(probe, 1)[0]
        probe.close()
        assert answer.startswith(b"HTTP/1.1 404"), answer
