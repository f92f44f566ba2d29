"""uvicorn's httptools protocol with one socket send per response instead of two.

uvicorn writes a response's status line and headers as soon as the application sends
``http.response.start``, then the body in a second ``transport.write``. On loopback each send
also runs the receiving side's TCP processing, so the two sends were a visible share of a small
request's cost. :class:`CoalescingTransport` gathers the writes made in one event-loop step and
sends them together at the end of it (or at once when the connection is closed).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

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
