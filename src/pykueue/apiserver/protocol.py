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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

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


class CoalescingHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol over a :class:`CoalescingTransport`."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Wrap the connection's transport, then let uvicorn set the connection up."""
        wrapped: Any = CoalescingTransport(transport, self.loop)
        super().connection_made(wrapped)

    def on_headers_complete(self) -> None:
        """Give the application a synchronous send for this request (``scope[SEND_NOW]``)."""
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None and cycle.scope is self.scope:  # not an upgrade: a cycle of its own
            self.scope[SEND_NOW] = partial(send_now, cycle)  # type: ignore[literal-required]

    def on_response_complete(self) -> None:
        """The response is whole: send it now. Flushed at the loop's next turn instead, each answer
        waited behind every callback queued before it (tens of milliseconds under load)."""
        super().on_response_complete()
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
        self._read_timer: asyncio.TimerHandle | None = None
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
        self._disarm()
        if self._refused:
            return
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        """Bytes after a finished response start the next request's header timer."""
        if self._refused:
            return
        if self._read_timer is None and (self.cycle is None or self.cycle.response_complete):
            self._arm(self.limits.header)
        super().data_received(data)

    def on_headers_complete(self) -> None:
        """Headers in time: the body timer takes over."""
        self._arm(self.limits.body)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        """The whole request is in: no read timer while the response is produced (or streamed)."""
        self._disarm()
        super().on_message_complete()

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._read_timer = self.loop.call_later(seconds, self._read_timed_out)

    def _disarm(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None

    def _read_timed_out(self) -> None:
        """A client too slow to send its request (or silent after connecting): drop it."""
        self._read_timer = None
        log.info("closing a connection from %s: request not received within the timeout", self.client)
        if not self.transport.is_closing():
            self.transport.close()


def limited_protocol(limits: ConnectionLimits) -> type[LimitedHttpToolsProtocol]:
    """A :class:`LimitedHttpToolsProtocol` class with ``limits``."""
    return type("LimitedHttpToolsProtocol", (LimitedHttpToolsProtocol,), {"limits": limits})
