"""uvicorn's httptools protocol with one socket send per response instead of two.

uvicorn writes a response's status line and headers as soon as the application sends
``http.response.start``, then the body in a second ``transport.write``. On loopback each send
also runs the receiving side's TCP processing, so the two sends were a visible share of a small
request's cost. :class:`CoalescingTransport` gathers the writes made in one event-loop step and
sends them together at the end of it, at once when a response is complete or the connection is
closed.

:class:`LimitedHttpToolsProtocol` adds what uvicorn lacks: header and body read timeouts and a cap
on open connections (see :class:`ConnectionLimits`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol, RequestResponseCycle

from pykueue.apiserver import flowcontrol

log = logging.getLogger("pykueue.apiserver")

SEND_NOW = "pykueue.send_now"
"""ASGI scope key of a request's synchronous send (see :func:`send_now`); absent under other servers."""

COALESCE_LIMIT = 64 * 1024
"""Queued bytes that are sent at once: large responses skip the extra copy, and the real
transport sees the data (and can pause the writer) without waiting for the end of the step."""


class CoalescingTransport:
    """Wraps a transport: writes made in the same loop step go out as one ``write``."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []
        self._size = 0

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Queue ``data``; the first write of a step schedules the send, a large one sends now."""
        if len(data) >= COALESCE_LIMIT:
            self.flush()
            self._transport.write(data)
            return
        if not self._pending:
            self._loop.call_soon(self.flush)
        self._pending.append(bytes(data))
        self._size += len(data)
        if self._size >= COALESCE_LIMIT:
            self.flush()

    def writelines(self, chunks: Iterable[bytes | bytearray | memoryview]) -> None:
        """Queue each chunk."""
        for chunk in chunks:
            self.write(chunk)

    def flush(self) -> None:
        """Send what is queued."""
        if not self._pending:
            return
        data = b"".join(self._pending)
        self._pending.clear()
        self._size = 0
        if not self._transport.is_closing():
            self._transport.write(data)

    def get_write_buffer_size(self) -> int:
        """Queued bytes included (flow control reads this)."""
        return self._transport.get_write_buffer_size() + self._size

    def write_eof(self) -> None:
        """Send what is queued, then half-close."""
        self.flush()
        self._transport.write_eof()

    def close(self) -> None:
        """Send what is queued, then close."""
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


Respond = Callable[[int, list[tuple[bytes, bytes]], bytes], None]
DirectServe = Callable[[bytes], None]


class CoalescingHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol over a :class:`CoalescingTransport`, with a direct path.

    The direct path: an application with a ``direct(scope, respond)`` method is asked at the end of
    each request's headers whether it serves the request without ASGI. If it returns a function,
    no task is started: the body is gathered here, the function is called with it from the parser's
    callback, and it answers through ``respond`` (status, headers, body: one write). For the API
    server's plain resource requests this skips the per-request task, the coroutines and futures of
    ``receive`` and ``send``, and uvicorn's header building; everything about the connection
    (keep-alive, pipelining, ``Connection: close``, the Date header, timeouts, flow control,
    shutdown) stays uvicorn's, through the same :class:`RequestResponseCycle` state.
    """

    _direct: tuple[RequestResponseCycle, DirectServe] | None = None
    _in_headers = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Wrap the connection's transport, then let uvicorn set the connection up."""
        wrapped: Any = CoalescingTransport(transport, self.loop)
        super().connection_made(wrapped)

    def on_headers_complete(self) -> None:
        """Give the application a synchronous send for this request (``scope[SEND_NOW]``)."""
        self._in_headers = True
        try:
            super().on_headers_complete()
        finally:
            self._in_headers = False
        cycle = self.cycle
        direct = self._direct
        # not an upgrade (a cycle of its own), not served on the direct path
        if cycle is not None and cycle.scope is self.scope and (direct is None or direct[0] is not cycle):
            self.scope[SEND_NOW] = partial(send_now, cycle)  # type: ignore[literal-required]

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: Any) -> None:
        """Serve the request on the direct path when the application takes it there, else start
        uvicorn's task. Only a request that starts at once (not a pipelined one, queued behind an
        unfinished response), not waiting for ``100 Continue`` (sent by the ASGI ``receive``),
        and without uvicorn's access log (written by its ``send``)."""
        prepare = getattr(app, "direct", None)
        if prepare is not None and self._in_headers and not cycle.waiting_for_100_continue and not cycle.access_log:
            try:
                serve = prepare(cycle.scope, partial(self._respond, cycle))
            except Exception:  # a bug: the ASGI path serves it (and answers a Status)
                log.exception("choosing the direct path for %s %s failed", cycle.scope["method"], cycle.scope["path"])
                serve = None
            if serve is not None:
                self._direct = (cycle, serve)
                return
        super()._start_asgi_task(cycle, app)

    def on_body(self, body: bytes) -> None:
        """A direct request's body is gathered whole: its declared ``Content-Length`` is within the
        application's limit (it refuses the direct path otherwise), and no ``receive`` would resume
        reading once uvicorn paused it."""
        direct = self._direct
        cycle = self.cycle
        if direct is not None and direct[0] is cycle:
            cycle.body += body
            return
        super().on_body(body)

    def on_message_complete(self) -> None:
        """A direct request is in: serve it."""
        super().on_message_complete()
        direct = self._direct
        if direct is None or direct[0] is not self.cycle:
            return
        self._direct = None
        cycle, serve = direct
        body = bytes(cycle.body)
        cycle.body = bytearray()
        # At once while the loop is not busy, else in the request's flow's turn (a burst of one
        # client's no longer holds every other client's requests, answers and watch events).
        flowcontrol.dispatcher(self.loop).submit(
            flowcontrol.flow_of(cycle.scope), partial(self._serve_direct, cycle, serve, body)
        )

    def _serve_direct(self, cycle: RequestResponseCycle, serve: DirectServe, body: bytes) -> None:
        if cycle.disconnected or self.transport.is_closing():
            # The client left while the request waited for its turn (uvicorn marks only the
            # connection's latest cycle disconnected): kube-apiserver's fair queuing drops a request
            # whose context ended in its queue without running it (queueset.go ``request.wait``).
            return
        try:
            serve(body)
        except Exception:  # a bug: still an answer (exceptions here would make the parser answer 400)
            log.exception("serving %s %s failed", cycle.scope["method"], cycle.scope["path"])
            self._respond(cycle, 500, [(b"content-type", b"text/plain; charset=utf-8")], b"Internal Server Error")

    def _respond(self, cycle: RequestResponseCycle, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        """Send a direct request's whole response in one write, as uvicorn's ``send`` would (its
        Date header, ``Connection: close`` when the connection is not kept, the close), then
        complete the cycle (which starts a pipelined request or arms the keep-alive timer).
        A content length is added when ``headers`` lack one; while writes
        are paused the response waits for the transport in a task, as uvicorn's ``send`` waits."""
        if cycle.disconnected or cycle.response_started:
            return
        if not any(name == b"content-length" for name, _ in headers):
            headers = [*headers, (b"content-length", str(len(body)).encode())]
        if cycle.flow.write_paused:
            task = self.loop.create_task(self._send_when_drained(cycle, status, headers, body))
            task.add_done_callback(self.tasks.discard)
            self.tasks.add(task)
            return
        cycle.response_started = True
        cycle.waiting_for_100_continue = False
        content = [STATUS_LINE[status]]
        for name, value in cycle.default_headers:
            content += (name, b": ", value, b"\r\n")
        for name, value in headers:
            content += (name, b": ", value, b"\r\n")
        if not cycle.keep_alive:
            content.append(b"connection: close\r\n")
        content += (b"\r\n", body)
        cycle.transport.write(b"".join(content))
        cycle.response_complete = True
        cycle.message_event.set()
        if not cycle.keep_alive:
            cycle.transport.close()
        cycle.on_response()

    def _after_response(self) -> None:
        """uvicorn's bookkeeping once a response is complete (the next pipelined request, keep-alive)."""
        super().on_response_complete()

    async def _send_when_drained(
        self, cycle: RequestResponseCycle, status: int, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> None:
        try:
            await cycle.send({"type": "http.response.start", "status": status, "headers": headers})
            await cycle.send({"type": "http.response.body", "body": body})
        except Exception:
            log.exception("sending the answer to %s %s failed", cycle.scope["method"], cycle.scope["path"])
            cycle.transport.close()

    def on_response_complete(self) -> None:
        """The response is whole: send it now. Flushed at the loop's next turn instead, each answer
        waited behind every callback queued before it (tens of milliseconds under load)."""
        self._after_response()
        transport: Any = self.transport
        if isinstance(transport, CoalescingTransport):
            transport.flush()


def send_now(cycle: RequestResponseCycle, messages: Sequence[Any]) -> bool:
    """Send a whole response (its ASGI messages) from a plain callback, without a coroutine hop.

    The API server answers a write from the callback that made it durable: awaiting there instead
    would resume only at the loop's next turn, after every other request of the turn. uvicorn's
    ``send`` suspends only while the transport's buffer is full (flow control): then nothing is
    sent and False says to ``await send`` instead.
    """
    if cycle.flow.write_paused:
        return False
    for message in messages:
        step = cycle.send(message)
        try:
            step.send(None)
        except StopIteration:
            continue
        step.close()  # writes were not paused when this began: nothing in a response pauses them
        raise RuntimeError("uvicorn's send waited for the transport in the middle of a response")
    return True


@dataclass(frozen=True)
class ConnectionLimits:
    """Per-connection timeouts and the cap on open connections (``pykueue serve`` flags).

    ``idle`` is the keep-alive timeout between requests; it must exceed client-go's 90 s idle
    connection reuse, or Go clients would send on sockets the server is closing (``connection
    reset``). ``header`` bounds reading a request's headers from its first byte (or from the
    connection's start: an unauthenticated TLS client is not held after the handshake) — Go's
    ``ReadHeaderTimeout``, 32 s in kube-apiserver. ``body`` bounds reading the body once the
    headers are in. Watches are responses, not bodies: none of these ends a watch.
    """

    idle: float = 120.0
    header: float = 32.0
    body: float = 60.0
    max_connections: int = 10_000


REFUSED_RESPONSE = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n"
    b"connection: close\r\ncontent-length: %d\r\n\r\n%s"
)
CAP_LOG_INTERVAL = 10.0


class LimitedHttpToolsProtocol(CoalescingHttpToolsProtocol):
    """The coalescing protocol with header/body timeouts and a connection cap.

    Subclassed per server by :func:`limited_protocol` with the limits as class attributes (uvicorn
    builds protocols from a class and its own config only).
    """

    limits: ClassVar[ConnectionLimits] = ConnectionLimits()
    _last_cap_log: ClassVar[float] = 0.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Refuse over the cap (503, logged); otherwise start the header timer."""
        self._deadline: float | None = None
        self._idle = False
        self._timer: asyncio.TimerHandle | None = None
        self._refused = len(self.connections) >= self.limits.max_connections
        if self._refused:
            self._refuse(transport)
            return
        super().connection_made(transport)
        self._arm(self.limits.header)

    def _refuse(self, transport: asyncio.Transport) -> None:
        now = time.monotonic()
        cls = type(self)
        if now - cls._last_cap_log >= CAP_LOG_INTERVAL:  # one line per interval, not per client
            cls._last_cap_log = now
            log.warning(
                "connection limit reached: %d connections open (--max-connections); "
                "refusing new connections with 503 until some close",
                len(self.connections),
            )
        body = (
            b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":'
            b'"the server has too many open connections, please try again later",'
            b'"reason":"ServiceUnavailable","code":503}'
        )
        transport.write(REFUSED_RESPONSE % (len(body), body))
        transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the timers (nothing to do for a refused connection)."""
        self._deadline = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._refused:
            return
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        """Bytes after a finished response start the next request's header timer (which ends the
        idle one)."""
        if self._refused:
            return
        if (self._deadline is None or self._idle) and (self.cycle is None or self.cycle.response_complete):
            self._arm(self.limits.header)
        super().data_received(data)

    def on_headers_complete(self) -> None:
        """Headers in time: the body timer takes over. Not for a request queued behind an
        unfinished response: uvicorn stops reading until that response is done, so its body could
        not arrive (the timer would cut the earlier answer off); its timer starts when it is taken
        from the pipeline (:meth:`_after_response`)."""
        current = self.cycle
        if current is None or current.response_complete:
            self._arm(self.limits.body)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        """The whole request is in: no read timer while the response is produced (or streamed).
        When it was answered before its body arrived (a refusal: 403, 413), the idle deadline is
        armed again: the connection is kept (as Go's net/http keeps one whose unread body is small
        enough to discard, server.go ``chunkWriter.writeHeader``), the late body being read and
        dropped under the header deadline :meth:`data_received` set, but never without a deadline."""
        cycle = self.cycle
        if cycle is not None and cycle.response_complete and not self.pipeline:
            self._arm(self.timeout_keep_alive, idle=True)
        else:
            self._deadline = None
        super().on_message_complete()

    def _after_response(self) -> None:
        """uvicorn's ``on_response_complete``, its keep-alive timer being the idle deadline here."""
        self.server_state.total_requests += 1
        if self.transport.is_closing():
            return
        self._unset_keepalive_if_required()
        self.flow.resume_reading()
        if self.pipeline:  # the next pipelined request: its body timer starts now, if it is not all in
            cycle, app = self.pipeline.pop()
            if cycle.more_body:
                self._arm(self.limits.body)
            self._start_asgi_task(cycle, app)
        else:
            self._arm(self.timeout_keep_alive, idle=True)  # (uvicorn's, from --idle-timeout)

    # The timeouts are one deadline per connection, moved by each step of a request, and one timer
    # that is re-armed only when it fires: a request moves the deadline three times (header, body,
    # idle), and creating and cancelling a timer for each was a visible part of a small request's
    # cost. The timer never fires later than the deadline: it is armed at most the shortest
    # timeout ahead, and every deadline is at least that far ahead when it is set.

    def _arm(self, seconds: float, idle: bool = False) -> None:
        now = self.loop.time()
        self._deadline = now + seconds
        self._idle = idle
        if self._timer is None:
            self._timer = self.loop.call_at(now + min(seconds, self._shortest()), self._check_deadline)

    def _shortest(self) -> float:
        limits = self.limits
        return min(limits.header, limits.body, self.timeout_keep_alive)

    def _check_deadline(self) -> None:
        self._timer = None
        deadline = self._deadline
        if deadline is None:
            return  # armed again by the next step that sets a deadline
        now = self.loop.time()
        if now < deadline:
            self._timer = self.loop.call_at(min(deadline, now + self._shortest()), self._check_deadline)
            return
        self._deadline = None
        if self._idle:
            self.timeout_keep_alive_handler()  # uvicorn's: close, nothing logged
        else:
            self._read_timed_out()

    def _read_timed_out(self) -> None:
        """A client too slow to send its request (or silent after connecting): drop it."""
        log.info("closing a connection from %s: request not received within the timeout", self.client)
        if not self.transport.is_closing():
            self.transport.close()


def limited_protocol(limits: ConnectionLimits) -> type[LimitedHttpToolsProtocol]:
    """A :class:`LimitedHttpToolsProtocol` class with ``limits``."""
    return type("LimitedHttpToolsProtocol", (LimitedHttpToolsProtocol,), {"limits": limits})
