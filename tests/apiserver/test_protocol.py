"""The coalescing transport: one send per loop step, nothing lost or reordered, flushed on close."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from pykueue.apiserver.protocol import CoalescingTransport


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
        await loop.sock_sendall(theirs, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = b""
        while not answer.endswith(b"ok"):
            answer += await loop.sock_recv(theirs, 4096)
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
        protocol.transport.close()
        theirs.close()

    asyncio.run(scenario())
    assert len(seen_by_app) == 1
    assert len(seen_by_app[0]) == 1, f"the complete response was not sent at once: {seen_by_app[0]}"
    assert seen_by_app[0][0].endswith(b"\r\n\r\nok")
