"""Requests on ONE event-loop thread over keep-alive HTTP/1.1 connections (the pipelined writes).

The controllers' blocking client (:mod:`pykueue.client.http`, httpx2) needs one thread per request
in flight: the pipelined status writes had 64 writer threads, which on a shared 2-core machine spent
longer waiting for a CPU than running, and httpx/httpcore cost ~0.4 ms of CPU per request
(bench/RESULTS.md, issue 14 item 5). Go's client sends from goroutines on a few OS threads; this is
the same shape for Python: one thread runs an asyncio loop (uvloop when installed, as uvicorn
uses it) and every write in flight is a coroutine on it, each holding one connection; responses
are parsed by httptools (llhttp, the parser of Node.js, a uvicorn dependency).

Only what the writes need: one request at a time per connection (no HTTP pipelining), JSON bodies
of known length, responses with ``Content-Length`` or chunked bodies (kube-apiserver and uvicorn
send one or the other). A request on a reused idle connection that the server closed before
answering anything is retried once on a new connection, as Go's ``http.Transport`` does for a
connection the server closed while idle.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import ssl
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit

import httptools
import httpx2 as httpx

log = logging.getLogger(__name__)

_T = TypeVar("_T")

CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 60.0
"""Seconds a request may wait for its whole response (REQUEST_TIMEOUT's read in http.py)."""


class TransportFailure(Exception):
    """The connection failed or broke before a whole response arrived."""


class _Dropped(TransportFailure):
    def __init__(self, message: str, answered: bool) -> None:
        super().__init__(message)
        self.answered = answered
        """Whether any byte of a response had arrived (then the request is not retried)."""


class EventLoopThread:
    """An asyncio loop on a daemon thread of its own, started on first use."""

    def __init__(self, name: str = "kueue-io") -> None:
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stopped = False

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The running loop (started now if needed); RuntimeError once :meth:`stop` ran."""
        loop = self._loop
        if loop is not None:
            return loop
        with self._lock:
            return self._started_loop()

    def _started_loop(self) -> asyncio.AbstractEventLoop:
        """Under ``_lock``: the loop, started now if needed; RuntimeError once :meth:`stop` ran."""
        if self._stopped:
            raise RuntimeError(f"event loop {self.name}: stopped")
        if self._loop is None:
            self._loop = _new_loop()
            started = threading.Event()
            self._thread = threading.Thread(
                target=self._run, args=(self._loop, started), name=self.name, daemon=True
            )
            self._thread.start()
            started.wait()
        return self._loop

    @staticmethod
    def _run(loop: asyncio.AbstractEventLoop, started: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(started.set)
        try:
            loop.run_forever()
        finally:
            _end_tasks(loop)
            loop.close()

    def in_loop_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def run(self, coro: Coroutine[Any, Any, _T]) -> concurrent.futures.Future[_T]:
        """Schedule ``coro`` on the loop from any thread. Once :meth:`stop` ran, ``coro`` is closed
        (never left unawaited) and RuntimeError is raised; a coroutine scheduled before the stop
        either runs or is cancelled (its future then raises ``CancelledError``)."""
        # Under the lock, so that nothing is queued on the loop after the stop's own callback: the
        # loop thread's last turns see every coroutine scheduled before it (_end_tasks).
        with self._lock:
            try:
                loop = self._started_loop()
            except RuntimeError:
                coro.close()
                raise
            return asyncio.run_coroutine_threadsafe(coro, loop)

    def call_soon(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the loop's thread soon (from any thread); RuntimeError once :meth:`stop` ran."""
        with self._lock:
            self._started_loop().call_soon_threadsafe(fn)

    def stop(self) -> None:
        """Stop the loop and wait for its thread: what is still in flight, or scheduled and not
        started, is cancelled there (its futures are told), then the loop is closed."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
            self._stopped = True
            if loop is None or thread is None:
                return
            with contextlib.suppress(RuntimeError):  # closed already (its thread ended)
                loop.call_soon_threadsafe(loop.stop)
        if thread is not threading.current_thread():
            thread.join(timeout=5.0)


_END_ROUND_SECONDS = 0.2


def _end_tasks(loop: asyncio.AbstractEventLoop) -> None:
    """On a loop whose ``run_forever`` returned: start what was scheduled before the stop, then
    cancel every task and let it end (``asyncio.run``'s ``_cancel_all_tasks``). Closing the loop
    with a task scheduled but not started dropped its coroutine unawaited (a RuntimeWarning) and
    left whoever waited on its future (the event recorder's sender) waiting for its timeout."""
    # One more turn for callbacks that the callbacks queued before the stop queued in their turn
    # (those queued before the stop already ran, in order, before the stop's own callback).
    loop.run_until_complete(asyncio.sleep(0))
    for _ in range(10):  # a task that ignores its cancellation gets a few more turns, not forever
        tasks = [task for task in asyncio.all_tasks(loop) if not task.done()]
        if not tasks:
            return
        for task in tasks:
            task.cancel()
        # Bounded: a task that catches its cancellation and awaits again would hold a plain
        # gather (and so the loop thread, and stop()'s join) for good.
        loop.run_until_complete(asyncio.wait(tasks, timeout=_END_ROUND_SECONDS))
    log.warning("event loop: tasks still running after their cancellation; closing the loop anyway")


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:  # uvicorn[standard] brings it on Linux; plain asyncio elsewhere
        return asyncio.new_event_loop()
    loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    return loop


class _Connection(asyncio.Protocol):
    """One keep-alive connection: one request at a time, the response parsed as it arrives."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.closed = False
        self.keep_alive = True
        self._waiter: asyncio.Future[tuple[int, bytes]] | None = None
        self._body: list[bytes] = []
        self._status = 0
        self._answered = False

    # -- asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's TLS transport is not an asyncio.Transport subclass, but has its methods.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self._answered = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as err:
            self._fail(TransportFailure(f"invalid HTTP response: {err}"))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._fail(_Dropped(f"connection closed: {exc or 'by the server'}", self._answered))

    # -- httptools callbacks
    def on_headers_complete(self) -> None:
        self._status = self.parser.get_status_code()
        self.keep_alive = self.parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        waiter = self._waiter
        self._waiter = None
        body = b"".join(self._body)
        self._body = []
        if waiter is not None and not waiter.done():
            waiter.set_result((self._status, body))

    # -- ours
    def _fail(self, err: Exception) -> None:
        waiter = self._waiter
        self._waiter = None
        if waiter is not None and not waiter.done():
            waiter.set_exception(err)

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    async def exchange(self, request: bytes, timeout: float) -> tuple[int, bytes]:
        assert self.transport is not None and self._waiter is None
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[tuple[int, bytes]] = loop.create_future()
        self._waiter = waiter
        self._answered = False
        self._body = []
        self.transport.write(request)
        timer = loop.call_later(timeout, self._timed_out, waiter, timeout)
        try:
            return await waiter
        finally:
            timer.cancel()

    def _timed_out(self, waiter: asyncio.Future[tuple[int, bytes]], timeout: float) -> None:
        if waiter is self._waiter:
            self._fail(TransportFailure(f"no complete response within {timeout:.0f}s"))
            self.close()


class AsyncHTTP:
    """Keep-alive connections to one server, used from its :class:`EventLoopThread` only."""

    def __init__(
        self,
        server: str,
        ssl_context: ssl.SSLContext | None,
        auth: httpx.Auth | None,
        *,
        server_hostname: str | None = None,
        headers: dict[str, str] | None = None,
        max_idle: int = 128,
        io: EventLoopThread | None = None,
    ) -> None:
        url = urlsplit(server)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"server: expected an http(s) URL, got {server!r}")
        self.server = server.rstrip("/")
        self.prefix = url.path.rstrip("/")
        """A path prefix of the server URL (a proxy's), put before every request's path."""
        self._host = url.hostname
        self._port = url.port or (443 if url.scheme == "https" else 80)
        self._ssl = ssl_context if url.scheme == "https" else None
        self._server_hostname = (server_hostname or url.hostname) if self._ssl is not None else None
        host_header = url.netloc.rpartition("@")[2]
        fixed = {"Host": host_header, **(headers or {})}
        self._fixed = "".join(f"{k}: {v}\r\n" for k, v in fixed.items())
        self._auth = auth
        self._static_auth = _static_authorization(auth)
        self._idle: list[_Connection] = []
        self._max_idle = max_idle
        self.io = io or EventLoopThread()
        self.requests = 0
        self.connections = 0
        """Connections opened so far (tests: keep-alive reuse)."""

    async def request(
        self, method: str, target: str, body: bytes | None = None, content_type: str | None = None
    ) -> tuple[int, bytes]:
        """Send one request (``target``: path and query, without the server's prefix) on a keep-alive
        connection; its status and body. Raises :class:`TransportFailure`."""
        authorization, flow = await self._authorize(method, target)
        status, data = await self._send(method, target, body, content_type, authorization)
        if status == 401 and flow is not None:
            # The credentials may have expired (rotated token file, exec plugin): the auth flow
            # refreshes them from the 401, as httpx's does; the request is retried once.
            try:
                retried = await flow.asend(httpx.Response(401, request=httpx.Request(method, self.server + target)))
            except StopAsyncIteration:
                return status, data
            status, data = await self._send(method, target, body, content_type, retried.headers.get("Authorization"))
        return status, data

    async def _authorize(self, method: str, target: str) -> tuple[str | None, Any]:
        if self._auth is None:
            return None, None
        if self._static_auth is not None:
            return self._static_auth, None
        flow = self._auth.async_auth_flow(httpx.Request(method, self.server + target))
        first = await flow.__anext__()
        return first.headers.get("Authorization"), flow

    async def _send(
        self, method: str, target: str, body: bytes | None, content_type: str | None, authorization: str | None
    ) -> tuple[int, bytes]:
        head = f"{method} {self.prefix}{target} HTTP/1.1\r\n{self._fixed}"
        if authorization:
            head += f"Authorization: {authorization}\r\n"
        if body is not None:
            head += f"Content-Type: {content_type or 'application/json'}\r\nContent-Length: {len(body)}\r\n"
        elif method in ("POST", "PUT", "PATCH"):
            head += "Content-Length: 0\r\n"
        raw = (head + "\r\n").encode("latin-1") + (body or b"")
        self.requests += 1
        for attempt in (0, 1):
            conn, reused = await self._connection()
            try:
                status, data = await conn.exchange(raw, READ_TIMEOUT)
            except _Dropped as err:
                conn.close()
                if reused and not err.answered and attempt == 0:
                    continue  # the server closed this idle connection meanwhile
                raise
            except BaseException:
                conn.close()
                raise
            if conn.keep_alive and not conn.closed and len(self._idle) < self._max_idle:
                self._idle.append(conn)
            else:
                conn.close()
            return status, data
        raise AssertionError("unreachable")

    async def _connection(self) -> tuple[_Connection, bool]:
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed:
                return conn, True
        loop = asyncio.get_running_loop()
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(
                    _Connection, self._host, self._port, ssl=self._ssl, server_hostname=self._server_hostname
                ),
                CONNECT_TIMEOUT,
            )
        except (OSError, TimeoutError, ssl.SSLError) as err:
            raise TransportFailure(f"cannot connect to {self._host}:{self._port}: {type(err).__name__}: {err}") from err
        self.connections += 1
        return conn, False

    def close_idle(self) -> None:
        """Close the idle connections (on the loop's thread)."""
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def close(self) -> None:
        """Close the connections and stop the loop (from any thread but the loop's)."""
        # Through io.run: after a racing close stopped the loop it closes the coroutine (never
        # left unawaited) and raises, which is suppressed here.
        if self.io._loop is not None:  # a client that never sent has no loop to start now
            with contextlib.suppress(RuntimeError, concurrent.futures.TimeoutError):
                self.io.run(_call(self.close_idle)).result(timeout=2.0)
        self.io.stop()


async def _call(fn: Callable[[], None]) -> None:
    fn()


def _static_authorization(auth: httpx.Auth | None) -> str | None:
    """The Authorization header of credentials that never change (a token, basic auth); None for
    those refreshed per request (token file, exec plugin), which run their auth flow each time."""
    if auth is None:
        return None
    from lightkube.config.client_adapter import BearerAuth

    if isinstance(auth, (BearerAuth, httpx.BasicAuth)):
        flow = auth.sync_auth_flow(httpx.Request("GET", "http://localhost/"))
        return next(flow).headers.get("Authorization")
    return None

