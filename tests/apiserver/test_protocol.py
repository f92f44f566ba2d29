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
