"""One response carrying several watches: ``GET /dashboard/watch?w=ID:RV:PATH&w=...``.

A browser opens at most six HTTP/1.1 connections to one host, and a watch holds one for as long
as it lasts: a page watching five kinds would leave one connection for everything else, and a
second tab would wait forever. So the page opens one request that carries all its watches; the
server opens each (``PATH?watch=1&allowWatchBookmarks=true&resourceVersion=RV``) and interleaves
their events as lines of JSON:

* ``{"s": ID, "e": EVENT}`` — one watch event, exactly as the watch sent it;
* ``{"s": ID, "status": STATUS}`` — that watch could not be opened (e.g. 404, 410);
* ``{"s": ID, "end": true}`` — that watch ended (its timeout); the page lists or watches again.

Every inner request is a watch, a read, so whoever passed the request guard for this path (the
read-only user included) may make it. The embedded server opens the watches on its handlers; the
``pykueue dashboard`` proxy opens them upstream with its kubeconfig.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import msgspec
from starlette.types import Receive, Scope, Send

from pykueue.apiserver import errors as E
from pykueue.kube.status import StatusError

log = logging.getLogger("pykueue.dashboard")

WATCH_PATH = "/dashboard/watch"
MAX_WATCHES = 16
QUEUE_LINES = 1024
_ID = re.compile(r"[a-z0-9-]{1,40}")
_RV = re.compile(r"[0-9]{0,20}")
_PATH = re.compile(r"/apis?/[A-Za-z0-9._~%/-]+")

Opener = Callable[[str, dict[str, list[str]]], Awaitable[AsyncIterator[bytes]]]
"""Opens one watch (path, query) and returns its body; raises :class:`StatusError` when refused."""


def parse_watches(query_string: bytes) -> list[tuple[str, str, str]]:
    """The ``(id, resourceVersion, path)`` of every ``w`` parameter; 400 naming the bad one."""
    values = urllib.parse.parse_qs(query_string.decode("latin-1"), keep_blank_values=True).get("w", [])
    if not values:
        raise E.bad_request("w: at least one watch is required (w=ID:RESOURCEVERSION:PATH)")
    if len(values) > MAX_WATCHES:
        raise E.bad_request(f"w: at most {MAX_WATCHES} watches per request, got {len(values)}")
    out: list[tuple[str, str, str]] = []
    for value in values:
        wid, _, rest = value.partition(":")
        rv, _, path = rest.partition(":")
        if not _ID.fullmatch(wid) or not _RV.fullmatch(rv) or not _PATH.fullmatch(path):
            raise E.bad_request(
                f"w: {value!r} is not ID:RESOURCEVERSION:PATH (ID of a-z, 0-9 and '-'; a numeric or "
                "empty resourceVersion; an /api/ or /apis/ path without a query)"
            )
        if any(wid == seen for seen, _, _ in out):
            raise E.bad_request(f"w: watch ID {wid!r} is given twice")
        out.append((wid, rv, path))
    return out


async def serve_watches(scope: Scope, receive: Receive, send: Send, opener: Opener) -> None:
    """Answer ``GET /dashboard/watch`` (the request guard has authenticated it)."""
    try:
        if scope["method"] not in ("GET",):
            raise StatusError(405, "MethodNotAllowed", f"{WATCH_PATH} only serves GET", {})
        watches = parse_watches(scope.get("query_string", b""))
    except StatusError as err:
        body = msgspec.json.encode(err.status())
        await send(
            {
                "type": "http.response.start",
                "status": err.code,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})
        return
    queue: asyncio.Queue[bytes | None] = asyncio.Queue(QUEUE_LINES)

    async def pump(wid: str, rv: str, path: str) -> None:
        prefix = b'{"s":"' + wid.encode() + b'"'
        query = {"watch": ["1"], "allowWatchBookmarks": ["true"], "resourceVersion": [rv]}
        stream: AsyncIterator[bytes] | None = None
        try:
            stream = await opener(path, query)
            pending = b""
            async for chunk in stream:
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        await queue.put(prefix + b',"e":' + line + b"}\n")
            await queue.put(prefix + b',"end":true}\n')
        except StatusError as err:
            await queue.put(prefix + b',"status":' + msgspec.json.encode(err.status()) + b"}\n")
        except Exception as err:  # a bug or a broken upstream: the page shows the message only
            log.exception("dashboard watch %s failed", path)
            status = E.internal(f"{type(err).__name__}: {err}").status()
            await queue.put(prefix + b',"status":' + msgspec.json.encode(status) + b"}\n")
        finally:
            close = getattr(stream, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    await close()

    async def disconnected() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        await queue.put(None)

    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json"), (b"cache-control", b"no-cache, private")],
        }
    )
    tasks = [asyncio.ensure_future(pump(*w)) for w in watches]
    tasks.append(asyncio.ensure_future(disconnected()))
    try:
        while True:
            line = await queue.get()
            if line is None:
                return
            await send({"type": "http.response.body", "body": line, "more_body": True})
    except OSError:  # the client went away while we wrote
        return
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def embedded_opener(app: Any) -> Opener:
    """Watches opened on ``pykueue serve``'s own handlers (an :class:`APIServerApp`)."""
    from pykueue.apiserver.app import parse_resource_path

    async def open_watch(path: str, query: dict[str, list[str]]) -> AsyncIterator[bytes]:
        if path.startswith("/apis/"):
            parts = path[6:].split("/", 2)
        else:
            parts = ["", *path[5:].split("/", 1)]
        if len(parts) != 3 or not parts[2]:
            raise E.path_not_found()
        group, version, rest = parts
        if not app.discovery.has_group_version(group, version):
            raise E.path_not_found()
        req = parse_resource_path("GET", group, version, rest)
        req.query = query
        req.accept = "application/json"
        req.user_agent = "pykueue-dashboard"
        resp = app.handlers.handle(req)
        if resp.stream is None:
            raise E.bad_request(f"{path} is not a watchable collection")
        stream: AsyncIterator[bytes] = resp.stream
        return stream

    return open_watch
