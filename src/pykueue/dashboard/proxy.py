"""``pykueue dashboard``: the dashboard for any cluster, reading its API with a kubeconfig.

The browser talks to this process exactly as it talks to ``pykueue serve``: same page, same
paths, a bearer token. The token is a fresh random one per run (printed in the URL's fragment)
and maps to the read-only user of :class:`~pykueue.apiserver.security.RequestGuard`, which also
does the Host and Origin checks; allowed requests (get, list, watch under ``/api`` and ``/apis``)
are forwarded with the kubeconfig's credentials, streamed so watches stay live. Only loopback
addresses are served: this is plain HTTP, like ``kubectl proxy``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx2 as httpx
import msgspec
from starlette.types import Receive, Scope, Send

from pykueue.apiserver import errors as E
from pykueue.apiserver.security import READONLY, RequestGuard
from pykueue.client.kubeconfig import ClusterConnection
from pykueue.dashboard.assets import is_ui_path, serve_ui
from pykueue.dashboard.mux import WATCH_PATH, serve_watches
from pykueue.kube.status import StatusError

log = logging.getLogger("pykueue.dashboard")

FORWARDED_PREFIXES = ("/api/", "/apis/")
FORWARDED_PATHS = frozenset({"/api", "/apis", "/version"})
UPSTREAM_TIMEOUT = httpx.Timeout(connect=10.0, read=None, write=30.0, pool=30.0)
"""No read timeout: watches are long; the browser's disconnect ends them."""


class DashboardProxy:
    """The ASGI application of ``pykueue dashboard``."""

    def __init__(self, conn: ClusterConnection, token: str, names: frozenset[str]) -> None:
        self.conn = conn
        self.guard = RequestGuard({token: READONLY}, names)
        self.client: httpx.AsyncClient | None = None

    def _client(self) -> httpx.AsyncClient:
        if self.client is None:
            self.client = httpx.AsyncClient(
                base_url=self.conn.server,
                verify=self.conn.ssl_context,
                auth=self.conn.auth,
                timeout=UPSTREAM_TIMEOUT,
                limits=httpx.Limits(max_connections=200, max_keepalive_connections=20),
            )
        return self.client

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        if is_ui_path(path):
            await serve_ui(scope, send, self.guard)
            return
        if path in ("/", ""):
            await _respond(send, 302, b"", "text/plain", [(b"location", b"/ui/")])
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            self.guard.check(
                scope["method"], path, scope.get("scheme", "http"), headers, scope.get("query_string", b"")
            )
            if scope["method"] not in ("GET", "HEAD"):  # the guard's read-only user already refuses
                raise StatusError(
                    405, "MethodNotAllowed", f"the dashboard only reads: {scope['method']} is not allowed", {}
                )
            if path == WATCH_PATH:
                await serve_watches(scope, receive, send, self._open_watch)
                return
            if not (path in FORWARDED_PATHS or path.startswith(FORWARDED_PREFIXES)):
                raise E.path_not_found()
        except StatusError as err:
            await _respond(send, err.code, msgspec.json.encode(err.status()), "application/json")
            return
        await self._forward(scope, headers, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self.client is not None:
                    await self.client.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _open_watch(self, path: str, query: dict[str, list[str]]) -> AsyncIterator[bytes]:
        """One upstream watch for :func:`serve_watches`; a refusal becomes the upstream's Status."""
        client = self._client()
        request = client.build_request("GET", path, params=query, headers={"Accept": "application/json"})
        try:
            response = await client.send(request, stream=True)
        except httpx.HTTPError as err:
            raise StatusError(
                503, "ServiceUnavailable", f"the dashboard cannot reach {self.conn.server}: {err}", {}
            ) from None
        if response.status_code != 200:
            refusal = await response.aread()
            await response.aclose()
            raise _upstream_error(response.status_code, refusal)

        async def chunks() -> AsyncIterator[bytes]:
            try:
                async for chunk in response.aiter_bytes():
                    yield chunk
            finally:
                await response.aclose()

        return chunks()

    async def _forward(self, scope: Scope, headers: dict[str, str], receive: Receive, send: Send) -> None:
        """Stream the upstream answer to the browser until either side ends."""
        query = scope.get("query_string", b"").decode("latin-1")
        url = scope["path"] + (f"?{query}" if query else "")
        client = self._client()
        request = client.build_request(
            scope["method"], url, headers={"Accept": headers.get("accept", "application/json")}
        )
        try:
            response = await client.send(request, stream=True)
        except httpx.HTTPError as err:
            api_err = StatusError(
                503, "ServiceUnavailable", f"the dashboard cannot reach {self.conn.server}: {err}", {}
            )
            await _respond(send, 503, msgspec.json.encode(api_err.status()), "application/json")
            return
        try:
            content_type = response.headers.get("content-type", "application/json")
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": [
                        (b"content-type", content_type.encode("latin-1")),
                        (b"cache-control", b"no-cache, private"),
                    ],
                }
            )

            async def pump() -> None:
                with contextlib.suppress(httpx.HTTPError):  # upstream ended mid-stream: end too
                    async for chunk in response.aiter_bytes():
                        await send({"type": "http.response.body", "body": chunk, "more_body": True})

            async def disconnected() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass

            tasks = [asyncio.ensure_future(pump()), asyncio.ensure_future(disconnected())]
            done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in pending:
                task.cancel()
            if tasks[0] in done:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await response.aclose()


def _upstream_error(code: int, body: bytes) -> StatusError:
    """The upstream's ``Status`` as an error (a plain message when it sent something else)."""
    try:
        status = msgspec.json.decode(body)
    except msgspec.DecodeError:
        status = None
    if isinstance(status, dict) and status.get("kind") == "Status":
        return StatusError(
            code, str(status.get("reason", "")), str(status.get("message", "")), status.get("details") or {}
        )
    return StatusError(code, "InternalError", f"the cluster answered {code}", {})


async def _respond(
    send: Send, status: int, body: bytes, content_type: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    head: list[Any] = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
    head += extra or []
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})
