"""A small asyncio HTTP client for the benchmark's generator, runner and recorder (aiohttp).

The controllers' :class:`pykueue.client.http.HTTPClient` is synchronous (one thread per call);
the benchmark keeps thousands of generator loops and timers in one event loop, as upstream's
runner keeps them in goroutines. Credentials come from the same kubeconfig loader.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import httpx2 as httpx
import msgspec

from pykueue.client.interface import APIError, error_from_status
from pykueue.client.kubeconfig import load_connection

RETRIES = 5
"""Attempts of a request whose connection failed (reset, refused): a benchmark run survives a
blip, and every retry is counted and reported."""


def _auth_headers(auth: httpx.Auth | None) -> dict[str, str]:
    """The headers the kubeconfig's authentication adds (bearer token, exec plugin's token)."""
    if auth is None:
        return {}
    request = httpx.Request("GET", "https://kubernetes.invalid/")
    flow = auth.sync_auth_flow(request)
    prepared = next(flow)
    return {k: v for k, v in prepared.headers.items() if k.lower() == "authorization"}


class AsyncAPI:
    """JSON verbs and watches against one API server."""

    def __init__(self, server: str, ssl_context: ssl.SSLContext | None, headers: dict[str, str], pool: int) -> None:
        self.server = server.rstrip("/")
        self.headers = {**headers, "Content-Type": "application/json", "Accept": "application/json"}
        connector = aiohttp.TCPConnector(limit=pool, ssl=ssl_context if ssl_context is not None else False)
        self.session = aiohttp.ClientSession(
            connector=connector, read_bufsize=1 << 20, timeout=aiohttp.ClientTimeout(total=None, sock_connect=30)
        )
        self.connection_retries = 0

    @classmethod
    def from_kubeconfig(cls, path: str | None, pool: int = 64) -> AsyncAPI:
        conn = load_connection(path)
        tls = conn.ssl_context if conn.server.startswith("https") else None
        return cls(conn.server, tls, _auth_headers(conn.auth), pool)

    async def close(self) -> None:
        await self.session.close()

    async def request(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        data = msgspec.json.encode(body) if body is not None else None
        for attempt in range(RETRIES):
            try:
                async with self.session.request(
                    method, self.server + path, data=data, headers=self.headers,
                    timeout=aiohttp.ClientTimeout(total=120),
                ) as resp:  # fmt: skip
                    raw = await resp.read()
                    decoded: Any = msgspec.json.decode(raw) if raw else {}
                    if resp.status >= 400:
                        raise error_from_status(resp.status, decoded)
                    return dict(decoded)
            except (TimeoutError, aiohttp.ClientConnectionError) as err:
                self.connection_retries += 1
                if attempt == RETRIES - 1:
                    raise APIError(0, "ConnectionError", f"{method} {path}: {err!r}") from None
                await asyncio.sleep(0.1 * 2**attempt)
        raise AssertionError("unreachable")

    async def watch(self, path: str, resource_version: str) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """Every event after ``resource_version``, re-opening the watch when the server ends it."""
        rv = resource_version
        decoder = msgspec.json.Decoder()
        while True:
            url = f"{self.server}{path}?watch=true&allowWatchBookmarks=true&resourceVersion={rv}"
            try:
                async with self.session.get(url, headers=self.headers) as resp:
                    if resp.status >= 400:
                        raise error_from_status(resp.status, msgspec.json.decode(await resp.read()))
                    async for line in resp.content:
                        if not line.strip():
                            continue
                        event = decoder.decode(line)
                        obj = event.get("object") or {}
                        if event.get("type") == "ERROR":
                            raise error_from_status(int(obj.get("code") or 500), obj)
                        rv = obj.get("metadata", {}).get("resourceVersion", rv)
                        if event.get("type") != "BOOKMARK":
                            yield event["type"], obj
            except aiohttp.ClientConnectionError:
                self.connection_retries += 1
                await asyncio.sleep(0.2)
