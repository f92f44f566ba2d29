"""The HTTP client: :class:`pykueue.client.interface.Client` against any Kubernetes API server.

Library choice (details in docs/design/controllers.md, "HTTP client: library choice"): lightkube
provides the kubeconfig loading, TLS setup and authentication (token, rotated token file, client
certificates, exec plugins) and its HTTP stack, httpx2; the verbs are sent as raw JSON requests on
that httpx2 client rather than through ``lightkube.Client``, because lightkube's client decodes
every object into registered resource classes (a process-global registry of generated classes for
each CRD), its watch loop cannot be interrupted from another thread (read timeout disabled,
reconnects internally, no ``allowWatchBookmarks``), and it only maps error bodies whose content type
is exactly ``application/json``. The controllers want plain dicts, Status-mapped errors and a
watch that another thread can stop, which take a few lines each on httpx2 directly.

Thread safety: one ``httpx2.Client`` (its connection pool is thread-safe) is shared by every
thread; each watch holds its own streaming connection. The client keeps no other mutable state
than the set of open watches, guarded by a lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx2 as httpx
import msgspec
from lightkube.core.exceptions import ConfigError

from pykueue.client.aio import AsyncHTTP, EventLoopThread, TransportFailure
from pykueue.client.interface import (
    PATCH_CONTENT_TYPES,
    APIError,
    Resource,
    WatchEvent,
    error_from_status,
)
from pykueue.client.kubeconfig import ClusterConnection, load_connection
from pykueue.client.ratelimit import TokenBucket, limiter_for

USER_AGENT = "pykueue-controller/http"
PAGE_SIZE = 500
"""Objects per LIST page (``limit``); the whole collection is read through ``continue`` tokens."""

KEEPALIVE_CONNECTIONS = 96
"""Idle connections kept for reuse (above the default writes in flight plus the other threads')."""

POOL_SHARDS = 8
"""Connection pools a client's threads are spread over (see :class:`ShardedTransport`)."""


class ShardedTransport(httpx.BaseTransport):
    """Several connection pools, each thread pinned to one (round-robin in order of first use).

    httpcore's pool, under one lock, walks every connection on each request's start and end
    (``ConnectionPool._assign_requests_to_connections``, a socket poll per idle connection in
    ``has_expired``): with the pipelined writes' 64 threads on ~96 connections that walk took 16% of
    the controller's GIL time and its lock serialized the writers (py-spy, bench/RESULTS.md issue 14
    item 5). Pools of an eighth of the size cost an eighth per walk and lock apart. Go's
    ``http.Transport`` keeps its idle connections in per-host lists, with no such walk."""

    def __init__(self, shards: list[httpx.HTTPTransport]) -> None:
        if not shards:
            raise ValueError("ShardedTransport: at least one pool is needed")
        self.shards = shards
        self._next = itertools.count()
        self._local = threading.local()

    def _shard(self) -> httpx.HTTPTransport:
        shard: httpx.HTTPTransport | None = getattr(self._local, "shard", None)
        if shard is None:
            shard = self._local.shard = self.shards[next(self._next) % len(self.shards)]
        return shard

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._shard().handle_request(request)

    def close(self) -> None:
        for shard in self.shards:
            shard.close()

REQUEST_TIMEOUT = httpx.Timeout(connect=10.0, read=60.0, write=30.0, pool=30.0)

MIN_WATCH_SECONDS = 300
"""Watches ask the server to end after a random 5-10 minutes (as client-go's reflector does), so
the load of re-establishing them spreads out; the watch then resumes from the newest
resourceVersion it saw, bookmarks included."""

WATCH_READ_GRACE = 30.0
"""A watch read waits this long past the server-side timeout before the connection counts as dead."""

MIN_STREAM_SECONDS = 1.0
"""A watch stream that ends sooner than this is not re-opened by the watch itself (see __iter__)."""

WATCH_CLOSE_WAIT = 2.0
"""Seconds :meth:`HTTPClient.close` waits in all for its watches' reading threads to end (see
:meth:`HTTPWatch.wait_ended`); the shut-down socket wakes it at once."""


def _keepalive_options() -> list[tuple[int, int, int]]:
    """TCP keepalive, so a watch on a silently dropped connection fails in about a minute."""
    opts = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    for name, value in (("TCP_KEEPIDLE", 30), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 3)):
        if hasattr(socket, name):  # Linux names; other platforms keep their defaults
            opts.append((socket.IPPROTO_TCP, getattr(socket, name), value))
    return opts


class ConnectionFailed(APIError):
    """Code 0: the server could not be reached, or the connection broke; retrying may succeed."""

    def __init__(self, message: str, reason: str = "ConnectionError") -> None:
        super().__init__(0, reason, message)


def _decode(body: bytes, what: str, code: int) -> Any:
    try:
        return msgspec.json.decode(body)
    except msgspec.DecodeError as err:
        raise APIError(code, "InvalidResponse", f"{what}: the server sent invalid JSON: {err}") from None


class HTTPClient:
    """:class:`pykueue.client.interface.Client` over HTTP; see the module docstring."""

    def __init__(
        self,
        http: httpx.Client,
        *,
        namespace: str = "default",
        page_size: int = PAGE_SIZE,
        watch_seconds: int = MIN_WATCH_SECONDS,
        extensions: Mapping[str, Any] | None = None,
        limiter: TokenBucket | None = None,
        owns_http: bool = True,
        aio: AsyncHTTP | None = None,
    ) -> None:
        self._http = http
        self._aio = aio
        """The pipelined writes' and Events' requests: coroutines on one event-loop thread."""
        self.limiter = limiter
        """Every request (watches included) waits for a token first, as client-go's ``tryThrottle``."""
        self._owns_http = owns_http
        self.namespace = namespace
        """The kubeconfig context's namespace (informational: every verb takes its namespace)."""
        self.page_size = page_size
        self.watch_seconds = watch_seconds
        """Server-side watch timeout: each stream lasts a random ``[watch_seconds, 2*watch_seconds)``."""
        self._extensions = dict(extensions or {})
        self._lock = threading.Lock()
        self._watches: set[HTTPWatch] = set()
        self._closed = False

    @classmethod
    def from_kubeconfig(
        cls,
        path: str | Path | None,
        context: str | None = None,
        *,
        page_size: int = PAGE_SIZE,
        watch_seconds: int = MIN_WATCH_SECONDS,
    ) -> HTTPClient:
        """A client for the kubeconfig's context (``path`` None: ``$KUBECONFIG`` or ``~/.kube/config``).

        Raises :class:`pykueue.client.kubeconfig.KubeconfigError` for a missing or unusable config.
        """
        conn = load_connection(path, context)
        return cls.from_connection(conn, page_size=page_size, watch_seconds=watch_seconds)

    @classmethod
    def from_connection(
        cls, conn: ClusterConnection, *, page_size: int = PAGE_SIZE, watch_seconds: int = MIN_WATCH_SECONDS
    ) -> HTTPClient:
        """A client for an already loaded cluster connection."""
        # The limits belong to the transport: httpx ignores ``Client(limits=...)`` when a transport is
        # given (which left the pool at its default 100 connections, 20 kept alive).
        # Each watch holds a connection for its lifetime; a cap would make requests queue behind them.
        # Keep-alive connections: enough for the pipelined writes, the event sender and the other
        # components' requests to overlap without reconnecting (``MaxIdleConnsPerHost``).
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=-(-KEEPALIVE_CONNECTIONS // POOL_SHARDS))
        transport = ShardedTransport(
            [
                httpx.HTTPTransport(verify=conn.ssl_context, socket_options=_keepalive_options(), limits=limits)
                for _ in range(POOL_SHARDS)
            ]
        )
        http = httpx.Client(
            base_url=conn.server,
            verify=conn.ssl_context,
            auth=conn.auth,
            timeout=REQUEST_TIMEOUT,
            transport=transport,
            headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
        )
        extensions = {"sni_hostname": conn.tls_server_name} if conn.tls_server_name else None
        aio = AsyncHTTP(
            conn.server,
            conn.ssl_context,
            conn.auth,
            server_hostname=conn.tls_server_name,
            headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
        )
        return cls(
            http,
            namespace=conn.namespace,
            page_size=page_size,
            watch_seconds=watch_seconds,
            extensions=extensions,
            aio=aio,
        )

    def set_rate_limit(self, qps: float | None, burst: int | None) -> None:
        """Apply ``clientConnection.qps``/``burst`` (None or a non-positive ``qps``: no limit)."""
        self.limiter = limiter_for(qps, burst)

    def with_rate_limit(self, qps: float | None, burst: int | None) -> HTTPClient:
        """A client on the same connections with a limiter of its own (closing it leaves them open).

        controller-runtime's event recorder has its own clientset built from the manager's rest
        config, hence its own token bucket: Events never take the tokens of the controllers' writes."""
        return HTTPClient(
            self._http,
            namespace=self.namespace,
            page_size=self.page_size,
            watch_seconds=self.watch_seconds,
            extensions=self._extensions,
            limiter=limiter_for(qps, burst),
            owns_http=False,
            aio=self._aio,
        )

    # -- the async verbs: on the event-loop thread of :attr:`io` ---------------------------------------

    @property
    def io(self) -> EventLoopThread | None:
        """The event-loop thread the ``*_async`` verbs run on (None: this client has none)."""
        return self._aio.io if self._aio is not None else None

    async def request_async(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        """One JSON request as a coroutine on :attr:`io`'s loop; the rate limit, errors and answers
        are those of the blocking verbs (a token is awaited, not slept for)."""
        aio = self._aio
        if aio is None:
            raise RuntimeError("this HTTPClient has no event loop (build it with from_connection)")
        if self._closed:
            raise ConnectionFailed(f"{method} {path}: the client is closed", reason="ClientClosed")
        if self.limiter is not None:
            delay = self.limiter.reserve()
            if delay > 0:
                await asyncio.sleep(delay)
        content = None if body is None else msgspec.json.encode(body)
        try:
            status, data = await aio.request(method, path, content, content_type)
        except TransportFailure as err:
            raise ConnectionFailed(f"{method} {path}: {err}") from err
        except ConfigError as err:
            raise ConnectionFailed(f"{method} {path}: {err}", reason="CredentialsUnavailable") from err
        if status >= 400:
            error: Any
            try:
                error = msgspec.json.decode(data)
            except msgspec.DecodeError:
                error = data.decode("utf-8", "replace").strip() or f"HTTP {status}"
            raise error_from_status(status, error)
        if not data:
            return {}
        decoded = _decode(data, f"{method} {path}", status)
        if not isinstance(decoded, dict):
            raise APIError(status, "InvalidResponse", f"{method} {path}: expected a JSON object")
        return decoded

    async def replace_async(
        self, res: Resource, obj: Mapping[str, Any], subresource: str | None = None
    ) -> dict[str, Any]:
        """:meth:`replace` as a coroutine."""
        return await self.request_async("PUT", self._replace_path(res, obj, subresource), body=obj)

    async def create_async(self, res: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        """:meth:`create` as a coroutine."""
        namespace = (obj.get("metadata") or {}).get("namespace")
        return await self.request_async("POST", res.path(self._namespace(res, namespace)), body=obj)

    async def patch_async(
        self, res: Resource, name: str, patch: Any, namespace: str | None = None, *, patch_type: str = "merge"
    ) -> dict[str, Any]:
        """:meth:`patch` as a coroutine."""
        content_type = PATCH_CONTENT_TYPES.get(patch_type)
        if content_type is None:
            raise ValueError(f"unknown patch type {patch_type!r} (one of {', '.join(PATCH_CONTENT_TYPES)})")
        path = res.path(self._namespace(res, namespace), name)
        return await self.request_async("PATCH", path, body=patch, content_type=content_type)

    # -- plumbing ---------------------------------------------------------------------------------

    def _send(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: httpx.Timeout = REQUEST_TIMEOUT,
        stream: bool = False,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """Send one request; transport failures become :class:`ConnectionFailed`."""
        if self._closed:
            raise ConnectionFailed(f"{method} {path}: the client is closed", reason="ClientClosed")
        if self.limiter is not None:
            self.limiter.wait()
        content = None if body is None else msgspec.json.encode(body)
        all_headers = dict(headers or {})
        if content is not None:
            all_headers["Content-Type"] = content_type
        request = self._http.build_request(
            method,
            path,
            params=params,
            content=content,
            headers=all_headers,
            timeout=timeout,
            extensions=self._extensions,
        )
        try:
            response = self._http.send(request, stream=stream)
        except httpx.TransportError as err:
            raise ConnectionFailed(f"{method} {path}: {type(err).__name__}: {err}") from err
        except ConfigError as err:  # credentials could not be obtained (token file, exec plugin)
            raise ConnectionFailed(f"{method} {path}: {err}", reason="CredentialsUnavailable") from err
        except RuntimeError as err:  # httpx2 refuses requests once close() ran in another thread
            raise ConnectionFailed(f"{method} {path}: {err}", reason="ClientClosed") from err
        if response.status_code >= 400:
            try:
                raise self._error(response, f"{method} {path}")
            finally:
                response.close()
        return response

    @staticmethod
    def _error(response: httpx.Response, what: str) -> APIError:
        """The error a failed response stands for (a ``Status`` body when the server sent one)."""
        try:
            body = response.read()
        except httpx.TransportError as err:
            return ConnectionFailed(f"{what}: {response.status_code}, then {type(err).__name__}: {err}")
        status: Any
        try:
            status = msgspec.json.decode(body)
        except msgspec.DecodeError:
            status = body.decode("utf-8", "replace").strip() or response.reason_phrase
        return error_from_status(response.status_code, status)

    def _json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        response = self._send(method, path, **kwargs)
        try:
            body = response.content
        finally:
            response.close()
        if not body:
            return {}
        decoded = _decode(body, f"{method} {path}", response.status_code)
        if not isinstance(decoded, dict):
            raise APIError(
                response.status_code, "InvalidResponse", f"{method} {path}: expected a JSON object"
            )
        return decoded

    @staticmethod
    def _namespace(res: Resource, namespace: str | None) -> str | None:
        return namespace if res.namespaced else None

    # -- verbs ------------------------------------------------------------------------------------

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        """GET one object."""
        return self._json("GET", res.path(self._namespace(res, namespace), name))

    def list(self, res: Resource, namespace: str | None = None) -> tuple[list[dict[str, Any]], str]:
        """LIST a collection page by page; the resourceVersion is the (consistent) snapshot's."""
        path = res.path(self._namespace(res, namespace))
        items: list[dict[str, Any]] = []
        rv = ""
        token = ""
        while True:
            params = {"limit": str(self.page_size)}
            if token:
                params["continue"] = token
            try:
                page = self._json("GET", path, params=params)
            except APIError as err:
                if err.code != 410 or not token:
                    raise
                # The continue token expired between pages (the snapshot was compacted away):
                # one unpaged list is consistent by itself, as client-go's pager falls back to.
                page = self._json("GET", path)
                items = []
                rv = ""
            meta = page.get("metadata") or {}
            rv = rv or str(meta.get("resourceVersion") or "")
            items.extend(page.get("items") or [])
            token = str(meta.get("continue") or "")
            if not token:
                break
        for item in items:  # list items carry no kind/apiVersion on the wire; informers want them
            item.setdefault("apiVersion", res.api_version)
            item.setdefault("kind", res.kind)
        return items, rv

    def create(self, res: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        """POST an object into ``obj.metadata.namespace``."""
        namespace = (obj.get("metadata") or {}).get("namespace")
        return self._json("POST", res.path(self._namespace(res, namespace)), body=obj)

    def replace(
        self, res: Resource, obj: Mapping[str, Any], subresource: str | None = None
    ) -> dict[str, Any]:
        """PUT an object (or its status); a set resourceVersion is a precondition."""
        return self._json("PUT", self._replace_path(res, obj, subresource), body=obj)

    def _replace_path(self, res: Resource, obj: Mapping[str, Any], subresource: str | None) -> str:
        meta = obj.get("metadata") or {}
        name = meta.get("name")
        if not name:
            raise ValueError("replace needs metadata.name")
        return res.path(self._namespace(res, meta.get("namespace")), str(name), subresource)

    def patch(
        self,
        res: Resource,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
        patch_type: str = "merge",
    ) -> dict[str, Any]:
        """PATCH with the content type of ``patch_type`` (merge, json or strategic)."""
        content_type = PATCH_CONTENT_TYPES.get(patch_type)
        if content_type is None:
            raise ValueError(f"unknown patch type {patch_type!r} (one of {', '.join(PATCH_CONTENT_TYPES)})")
        path = res.path(self._namespace(res, namespace), name, subresource)
        return self._json("PATCH", path, body=patch, content_type=content_type)

    def delete(
        self, res: Resource, name: str, namespace: str | None = None, *, propagation: str | None = None
    ) -> None:
        """DELETE an object (``propagation``: Background, Foreground or Orphan)."""
        params = {"propagationPolicy": propagation} if propagation else None
        self._json("DELETE", res.path(self._namespace(res, namespace), name), params=params)

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        """One JSON request for what the verbs above do not cover (selectors, paging, dry runs,
        aggregated groups such as the visibility API); failures raise as the verbs do."""
        return self._json(method, path, params=params, body=body, content_type=content_type)

    def watch(self, res: Resource, resource_version: str, namespace: str | None = None) -> HTTPWatch:
        """Changes after ``resource_version``; the first request is sent now, so errors raise here."""
        path = res.path(self._namespace(res, namespace))
        w = HTTPWatch(self, res, path, resource_version, self.watch_seconds)
        with self._lock:
            self._watches.add(w)
        try:
            w.open()
        except BaseException:
            self._forget(w)
            raise
        return w

    def close(self) -> None:
        """End every open watch and release the connections."""
        with self._lock:
            self._closed = True
            watches = list(self._watches)
        for w in watches:
            w.close()
        deadline = time.monotonic() + WATCH_CLOSE_WAIT
        for w in watches:  # their readers leave the sockets before the pool closes them
            w.wait_ended(max(0.0, deadline - time.monotonic()))
        if self._owns_http:
            self._http.close()
            if self._aio is not None:
                self._aio.close()

    def _forget(self, w: HTTPWatch) -> None:
        with self._lock:
            self._watches.discard(w)


class HTTPWatch:
    """A streaming watch: events until ``close()`` (any thread), an error, or ``Gone``.

    When the server ends the stream (its ``timeoutSeconds``) the watch re-opens it from the newest
    resourceVersion it has seen, BOOKMARK events included; so a quiet collection keeps a recent
    resume point and does not fall behind the server's history into a relist.
    """

    def __init__(
        self, client: HTTPClient, res: Resource, path: str, resource_version: str, watch_seconds: int
    ) -> None:
        self._client = client
        self._watch_seconds = watch_seconds
        self._res = res
        self._path = path
        self._rv = resource_version
        self._lock = threading.Lock()
        self._closed = False
        self._iterating = False
        self._reader: int | None = None  # the iterating thread's ident
        self._ended = threading.Event()  # the iteration has released its connection
        self._response: httpx.Response | None = None

    @property
    def resource_version(self) -> str:
        """The newest resourceVersion seen (where a new watch would resume)."""
        return self._rv

    def open(self) -> None:
        """Open the first stream (called by :meth:`HTTPClient.watch`)."""
        self._connect()

    def _connect(self) -> httpx.Response | None:
        """Open a stream from the current resourceVersion (None when closed meanwhile)."""
        seconds = random.randint(self._watch_seconds, max(self._watch_seconds, 2 * self._watch_seconds - 1))
        params = {"watch": "true", "allowWatchBookmarks": "true", "timeoutSeconds": str(seconds)}
        if self._rv:
            params["resourceVersion"] = self._rv
        # The read timeout only catches a dead connection: the server ends the stream by `seconds`.
        timeout = httpx.Timeout(connect=10.0, read=seconds + WATCH_READ_GRACE, write=30.0, pool=30.0)
        # "Connection: close": a finished watch connection is never handed back to the pool, so
        # close() in another thread can never shut down a socket some other request is using.
        response = self._client._send(
            "GET", self._path, params=params, timeout=timeout, stream=True, headers={"Connection": "close"}
        )
        with self._lock:
            if self._closed:
                response.close()
                return None
            self._response = response
        return response

    def __iter__(self) -> Iterator[WatchEvent]:
        with self._lock:
            if self._iterating:
                raise RuntimeError("a watch can be iterated only once")
            self._iterating = True
            self._reader = threading.get_ident()
            response = None if self._closed else self._response
        try:
            while response is not None:
                started = time.monotonic()
                try:
                    yield from self._events(response)
                except httpx.TransportError as err:
                    if self._closed:
                        return
                    if time.monotonic() - started < MIN_STREAM_SECONDS:
                        raise ConnectionFailed(f"watch {self._path}: {type(err).__name__}: {err}") from err
                finally:
                    with self._lock:
                        self._response = None
                    response.close()
                if self._closed:
                    return
                if time.monotonic() - started < MIN_STREAM_SECONDS or not self._rv:
                    # The server ends streams right away (e.g. shutting down): stop, and let the
                    # caller decide when to watch again, instead of spinning on reconnects here.
                    # Without any resourceVersion a re-open would replay the whole collection.
                    return
                try:
                    response = self._connect()
                except APIError:
                    if self._closed:  # closed meanwhile (e.g. the whole client): not an error
                        return
                    raise
        finally:
            self._client._forget(self)
            self._ended.set()

    def wait_ended(self, timeout: float) -> bool:
        """After :meth:`close`: wait until the iterating thread (if another one) let go of its
        connection. Closing the connection under a thread blocked in a TLS read frees its file
        descriptor while OpenSSL still reads from that number: the next socket the process opens
        gets it, and the stale read takes the new connection's bytes (its TLS handshake then
        fails with WRONG_VERSION_NUMBER)."""
        with self._lock:
            if not self._iterating or self._reader == threading.get_ident():
                return True
        return self._ended.wait(timeout)

    def _events(self, response: httpx.Response) -> Iterator[WatchEvent]:
        """The events of one stream: one JSON object per line."""
        pending = b""
        for chunk in response.iter_bytes():
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            for line in lines:
                event = self._event(line)
                if event is not None:
                    yield event
        event = self._event(pending)
        if event is not None:
            yield event

    def _event(self, line: bytes) -> WatchEvent | None:
        if not line.strip():
            return None
        raw = _decode(line, f"watch {self._path}", 200)
        etype = str(raw.get("type") or "") if isinstance(raw, dict) else ""
        obj = raw.get("object") if isinstance(raw, dict) else None
        if not etype or not isinstance(obj, dict):
            raise APIError(200, "InvalidResponse", f"watch {self._path}: not a watch event: {line[:200]!r}")
        if etype == "ERROR":
            # 410 Expired (resourceVersion too old) becomes Gone: the caller relists.
            raise error_from_status(500, obj)
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if rv:
            self._rv = str(rv)
        if etype == "BOOKMARK":
            return None
        obj.setdefault("apiVersion", self._res.api_version)
        obj.setdefault("kind", self._res.kind)
        return WatchEvent(etype, obj)

    def close(self) -> None:
        """End the watch from any thread; a blocked iteration returns promptly."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            response = self._response
            iterating = self._iterating
        if response is not None:
            if iterating:
                # Another thread may be blocked reading this response: shutting the socket down
                # wakes its read at once (closing the response from here would race with it).
                _shutdown(response)
            else:
                self._response = None
                response.close()
        self._client._forget(self)


def _shutdown(response: httpx.Response) -> None:
    """Shut down the socket under a streaming response (both directions)."""
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if isinstance(sock, socket.socket):
        # socket.socket.shutdown, not SSLSocket.shutdown: the latter also drops the TLS object
        # the reading thread is using; a plain TCP shutdown just makes that read see EOF.
        with contextlib.suppress(OSError):
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
