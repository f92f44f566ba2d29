"""The HTTP layer: a Starlette application serving the Kubernetes API on the store.

Routing follows kube-apiserver: ``/version``, health, discovery (``/api``, ``/apis``, legacy and
aggregated), OpenAPI v3, and the resource paths
``/api/v1/[namespaces/{ns}/]{plural}[/{name}[/status]]`` and
``/apis/{g}/{v}/[namespaces/{ns}/]{plural}[/{name}[/status]]`` (plus the ``/watch/`` prefix), and
``pods/{name}/log`` (text, streamed with ``follow``) from the local job runner's files.
Every response is JSON (protobuf requests get JSON with the right Content-Type) and every failure
is a ``Status``. Every request first passes :class:`~pykueue.apiserver.security.RequestGuard`
(Host, Origin, bearer token, read-only user); a refusal is answered before any routing.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import msgspec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pykueue.api.feature_gates import DEFAULT_GATES, FeatureGates
from pykueue.apiserver import errors as E
from pykueue.apiserver import watch
from pykueue.apiserver.discovery import Discovery, Document, version_info, wants_aggregated
from pykueue.apiserver.flowcontrol import FLOW_SCOPE_KEY, loop_busy
from pykueue.apiserver.handlers import APIRequest, APIResponse, Handlers, Resolver, ResourceInfo
from pykueue.apiserver.protocol import SEND_NOW
from pykueue.apiserver.security import ADMIN, READONLY, RequestGuard, User
from pykueue.dashboard.assets import is_ui_path, serve_ui
from pykueue.dashboard.mux import WATCH_PATH, embedded_opener, serve_watches
from pykueue.kube.status import StatusError
from pykueue.store.errors import not_found

log = logging.getLogger("pykueue.apiserver")

MAX_BODY_BYTES = 3 * 1024 * 1024
ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
BOOTSTRAP_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
"""Methods whose request body the handlers read."""
USER_SCOPE_KEY = "pykueue.user"
"""ASGI scope key of the authenticated :class:`User` (None: authentication off or a public path)."""

Endpoint = Callable[[Request], Awaitable[Response]]
Respond = Callable[[int, list[tuple[bytes, bytes]], bytes], None]
"""Sends a whole response (status, headers, body) on the request's connection (the protocol's)."""
PodLogLocator = Callable[[Mapping[str, Any]], "Path | None"]
"""The stored Pod -> its log directory (see :mod:`pykueue.apiserver.podlogs`)."""


class GroupResponse(Protocol):
    """What a mounted group returns: status, body and content type."""

    status: int
    body: bytes
    content_type: str


class MountedGroup(Protocol):
    """An API group served outside the registry (``mount_group``), e.g. the visibility API."""

    def handle(
        self, method: str, rest: str, query: Mapping[str, Sequence[str]], accept: str
    ) -> GroupResponse: ...


class RegistryBackend:
    """The handlers' view of the registry, the tables, OpenAPI and the patch engine (docs/design/control-plane.md §2–§3)."""

    def __init__(self) -> None:
        # Imported here, not at module level, so that importing the HTTP layer stays cheap; kept
        # on the instance because an import statement in a per-request method costs microseconds.
        from pykueue.apiserver import patch, tables
        from pykueue.apiserver.resources import REGISTRY

        self.registry = REGISTRY
        self._patch = patch
        self._tables = tables
        self._schemas: dict[tuple[str, str, str], Any] = {}
        self._openapi_paths: list[str] | None = None

    # -- registry -------------------------------------------------------------------------------

    def lookup(self, group: str, version: str, plural: str) -> ResourceInfo | None:
        """The resource served at group/version/plural."""
        info: ResourceInfo | None = self.registry.get(group, version, plural)
        return info

    def resources(self) -> Sequence[ResourceInfo]:
        """Every served resource (registration order)."""
        infos: Sequence[ResourceInfo] = self.registry.all()
        return infos

    def schema_resolver(self, info: ResourceInfo, version: str) -> Resolver:
        """``$ref`` resolution (the registry's schemas are inlined, so nothing to resolve)."""
        return _no_refs

    # -- tables ---------------------------------------------------------------------------------

    def to_table(
        self, info: ResourceInfo, objs: list[dict[str, Any]], version: str, include_object: str
    ) -> dict[str, Any]:
        """A ``Table`` of objects already in ``version``."""
        table: dict[str, Any] = self._tables.to_table(info, objs, version, include_object)  # type: ignore[arg-type]
        return table

    # -- patches --------------------------------------------------------------------------------

    def _schema_node(self, info: ResourceInfo, version: str) -> Any:
        key = (info.group, info.plural, version)
        node = self._schemas.get(key)
        if node is None:
            node = self._patch.schema_node_from_openapi(info.openapi_schema(version))
            self._schemas[key] = node
        return node

    def json_patch(self, obj: dict[str, Any], ops: list[Any]) -> dict[str, Any]:
        """RFC 6902."""
        patch = self._patch
        result: dict[str, Any] = patch.json_patch(obj, ops)
        return result

    def merge_patch(self, obj: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
        """RFC 7386."""
        patch = self._patch
        result: dict[str, Any] = patch.merge_patch(obj, doc)
        return result

    def strategic_merge_patch(
        self, info: ResourceInfo, version: str, obj: dict[str, Any], doc: dict[str, Any]
    ) -> dict[str, Any]:
        """Strategic merge patch with the kind's patch metadata."""
        patch = self._patch
        result: dict[str, Any] = patch.strategic_merge_patch(obj, doc, self._schema_node(info, version))
        return result

    def server_side_apply(
        self,
        info: ResourceInfo,
        version: str,
        live: dict[str, Any] | None,
        applied: dict[str, Any],
        manager: str,
        force: bool,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """Server-side apply of ``applied`` onto ``live`` (both in ``version``)."""
        patch = self._patch
        result: dict[str, Any] = patch.server_side_apply(
            live,
            applied,
            manager,
            force=force,
            schema=self._schema_node(info, version),
            subresource=subresource or "",
            reset_fields=self._reset_fields(info, subresource),
        )
        return result

    def update_managed_fields(
        self,
        info: ResourceInfo,
        version: str,
        old: dict[str, Any] | None,
        new: dict[str, Any],
        manager: str,
        subresource: str | None,
    ) -> None:
        """Record an Update by ``manager`` in ``new.metadata.managedFields``."""
        patch = self._patch
        patch.update_managed_fields(
            old,
            new,
            manager,
            patch.UPDATE,
            subresource or "",
            schema=self._schema_node(info, version),
            reset_fields=self._reset_fields(info, subresource),
        )

    @staticmethod
    def _reset_fields(info: ResourceInfo, subresource: str | None) -> tuple[str, ...]:
        return ("status",) if info.status_subresource and not subresource else ()

    def patch_error(self, err: Exception) -> StatusError | None:
        """The Status of a patch-engine failure (None: not one of its errors)."""
        if not isinstance(err, self._patch.PatchError):
            return None
        if err.code < 500:
            return err
        # A plain Go error inside the patch engine: the malformed patch is the client's fault.
        return StatusError(422, err.reason or "Invalid", err.message, err.details)

    # -- OpenAPI --------------------------------------------------------------------------------

    def openapi_paths(self) -> list[str]:
        """``api/v1`` and ``apis/{group}/{version}`` of every served group version."""
        if self._openapi_paths is None:
            from pykueue.apiserver import openapi

            index = openapi.openapi_v3_index()
            self._openapi_paths = [p.strip("/") for p in index.get("paths", {})]
        return self._openapi_paths

    def openapi_document(self, path: str) -> dict[str, Any]:
        """The OpenAPI v3 document of ``api/v1`` or ``apis/{group}/{version}``."""
        from pykueue.apiserver import openapi

        parts = path.split("/")
        group, version = ("", parts[1]) if parts[0] == "api" else (parts[1], parts[2])
        doc: dict[str, Any] = openapi.openapi_v3_document(group, version)
        return doc


def _no_refs(ref: str) -> dict[str, Any] | None:
    return None


OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"  # kube-openapi handler.go


class APIServerApp:
    """Holds the store, the registry backend, discovery, the watch hub and the handlers."""

    def __init__(
        self,
        store: Any,
        *,
        token: str | None = None,
        readonly_token: str | None = None,
        served_names: Sequence[str] = (),
        backend: RegistryBackend | None = None,
        bookmark_interval: float = watch.DEFAULT_BOOKMARK_INTERVAL,
        gates: FeatureGates = DEFAULT_GATES,
    ) -> None:
        self.store = store
        if hasattr(store, "loop_busy"):
            # The store's loop does not wait for an fsync while requests wait for their turn.
            store.loop_busy = loop_busy
        self.token = token
        tokens: dict[str, User] = {}
        if token:
            tokens[token] = ADMIN
        if readonly_token:
            tokens[readonly_token] = READONLY
        self.guard = RequestGuard(tokens, served_names)
        self.backend = backend or RegistryBackend()
        self.discovery = Discovery(self.backend.resources())
        self.hub = watch.WatchHub(store)
        self.handlers = Handlers(
            store, self.backend, self.hub, bookmark_interval=bookmark_interval, gates=gates
        )
        self._openapi: dict[str, Document] = {}
        self._openapi_index: Document | None = None
        self._starlette: Starlette | None = None
        self.mounted: dict[str, MountedGroup] = {}
        self.metrics_registry: Any = None
        """The controllers' Prometheus registry, served at ``/metrics`` once they run (else 404)."""
        self.metrics_source: Callable[[], tuple[bytes, str] | None] | None = None
        """Or where to fetch the exposition (controllers in another process): (body, content type),
        None while they cannot answer (503)."""
        self.pod_logs: PodLogLocator | None = None
        """Where a pod's log files are (the local job runner registers it; None: no logs here)."""
        self.dashboard_watches = embedded_opener(self)

    def mount_group(
        self, group: str, api: MountedGroup, api_group: dict[str, Any], aggregated: dict[str, Any]
    ) -> None:
        """Serve ``/apis/{group}/...`` with ``api`` (after authentication) and list the group in
        discovery, as kube-apiserver proxies an APIService's group to its backend."""
        self.mounted[group] = api
        self.discovery.add_external_group(group, api_group, aggregated)

    # -- lifecycle --------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: Starlette) -> AsyncIterator[None]:
        """Bind the watch hub to the loop, create the built-in namespaces; close watches on exit."""
        self.hub.start(asyncio.get_running_loop())
        self.bootstrap()
        try:
            yield
        finally:
            self.hub.close()

    def bootstrap(self) -> None:
        """Create ``default``, ``kube-system``, ``kube-public`` and ``kube-node-lease`` if missing;
        finish Namespaces left Terminating with nothing in them."""
        for name in BOOTSTRAP_NAMESPACES:
            req = APIRequest(
                method="POST",
                group="",
                version="v1",
                resource="namespaces",
                body=msgspec.json.encode(
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
                ),
                user_agent="pykueue-apiserver",
            )
            try:
                self.handlers.handle(req)
            except StatusError as err:
                if err.code != 409:
                    raise
        if self.handlers.namespaces is not None:
            self.handlers.namespaces.recover()

    # -- application ------------------------------------------------------------------------------

    # -- ASGI entry point: resource requests skip Starlette's routing and middleware ---------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the request (:class:`RequestGuard`), then serve plain resource requests directly;
        everything else (watches too) through Starlette."""
        if scope["type"] == "http" and is_ui_path(scope["path"]):
            await serve_ui(scope, send, self.guard)  # static, data-free: no token (see dashboard/)
            return
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            try:
                user = self.guard.check(
                    scope["method"], scope["path"], scope.get("scheme", "http"), headers,
                    scope.get("query_string", b""),
                )  # fmt: skip
            except StatusError as err:
                await _refuse(err, send)
                return
            scope[USER_SCOPE_KEY] = user
            if scope["path"] == WATCH_PATH:  # the dashboard's watches, one connection (dashboard/mux.py)
                await serve_watches(scope, receive, send, self.dashboard_watches)
                return
            if self.mounted and await self._serve_mounted(scope, headers, send):
                return
            if scope["path"].endswith("/log") and await self._serve_pod_log(scope, receive, send):
                return
            try:
                req = fast_request(scope, headers)
            except StatusError:
                req = None
            if req is not None:
                await self._serve_fast(req, scope, receive, send)
                return
        if self._starlette is None:
            self._starlette = self.build()
        await self._starlette(scope, receive, send)

    async def _serve_mounted(self, scope: Scope, headers: dict[str, str], send: Send) -> bool:
        """Serve a request for a mounted group (the guard has authenticated it); False when the path
        belongs to none."""
        path: str = scope["path"]
        if not path.startswith("/apis/"):
            return False
        group, _, rest = path[6:].partition("/")
        api = self.mounted.get(group)
        if api is None:
            return False
        try:
            query = parse_query(scope.get("query_string", b""))
            # Off the event loop: the answer may wait for another thread (the controller manager).
            result = await asyncio.to_thread(
                api.handle, scope["method"], rest, query, headers.get("accept", "application/json")
            )
            status, body, content_type = result.status, result.body, result.content_type
        except StatusError as err:
            status, body, content_type = err.code, msgspec.json.encode(err.status()), "application/json"
        except Exception as err:  # a bug: still a Status
            log.exception("internal error serving %s %s", scope["method"], path)
            api_err = E.internal(f"{type(err).__name__}: {err}")
            status, body, content_type = api_err.code, msgspec.json.encode(api_err.status()), "application/json"
        head = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": head})
        await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})
        return True

    async def _serve_pod_log(self, scope: Scope, receive: Receive, send: Send) -> bool:
        """``GET /api/v1/namespaces/{ns}/pods/{name}/log`` (see :mod:`pykueue.apiserver.podlogs`);
        False when the path is not a pod's log."""
        from pykueue.apiserver import podlogs

        parts = scope["path"].split("/")
        # ['', 'api', 'v1', 'namespaces', ns, 'pods', name, 'log']
        if len(parts) != 8 or parts[1:4] != ["api", "v1", "namespaces"] or parts[5] != "pods":
            return False
        namespace, name = urllib.parse.unquote(parts[4]), urllib.parse.unquote(parts[6])
        try:
            if scope["method"] != "GET":
                raise E.method_not_supported("", "pods/log", scope["method"].lower())
            options = podlogs.LogOptions(parse_query(scope.get("query_string", b"")), name)
            pod = self._get_pod(namespace, name)
            if pod is None:
                raise not_found("", "pods", name)
            container = podlogs.container_name(pod, options.container)
            podlogs.check_started(pod, container, options.previous)
            directory = self.pod_logs(pod) if self.pod_logs is not None else None
            if directory is None:
                raise E.bad_request(
                    f'pod "{name}": no log on this server (its pods run on a node whose kubelet serves logs)'
                )
            if not options.follow:
                body = await asyncio.to_thread(podlogs.read_all, directory, options)
                head = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
                await send({"type": "http.response.start", "status": 200, "headers": head})
                await send({"type": "http.response.body", "body": body})
                return True
        except StatusError as err:
            await _refuse(err, send)
            return True
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        disconnected = asyncio.Event()

        async def watch_disconnect() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            disconnected.set()

        async def chunk(data: bytes) -> None:
            await send({"type": "http.response.body", "body": data, "more_body": True})

        watcher = asyncio.create_task(watch_disconnect())
        try:
            await podlogs.follow(
                directory, options, lambda: podlogs.pod_has_ended(self._get_pod(namespace, name)), chunk, disconnected
            )
            if not disconnected.is_set():
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:  # the client went away mid-send
            pass
        finally:
            watcher.cancel()
        return True

    def _get_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        req = APIRequest(method="GET", group="", version="v1", resource="pods", namespace=namespace, name=name)
        try:
            resp = self.handlers.handle(req)
        except StatusError as err:
            if err.code == 404:
                return None
            raise
        pod: dict[str, Any] = msgspec.json.decode(resp.body)
        return pod

    async def _serve_fast(self, req: APIRequest, scope: Scope, receive: Receive, send: Send) -> None:
        send_now: Callable[[list[Message]], bool] | None = scope.get(SEND_NOW)
        try:
            if not self.discovery.has_group_version(req.group, req.version):
                raise E.path_not_found()
            if req.method in BODY_METHODS:
                req.body = await receive_body(receive, req.headers.get("content-length"))
            if send_now is not None and not self.handlers.runs_on_thread(req):
                await self._answer_when_durable(req, scope, send_now, send)
                return
            resp = await self.handlers.handle_async(req)
        except StatusError as err:
            resp = _error_response(err)
        except Exception as err:  # a bug: still a Status
            resp = _internal_error(req, scope, err)
        for message in _response_messages(resp):
            await send(message)

    async def _answer_when_durable(
        self, req: APIRequest, scope: Scope, send_now: Callable[[list[Message]], bool], send: Send
    ) -> None:
        """Handle ``req`` on the loop and answer it from the store's callback once everything it may
        have seen or written is durable (an error too: a 409 reveals what exists), without waiting
        for the loop's next turn; the task only waits here for the answer to have left."""
        left: asyncio.Future[list[Message]] = asyncio.get_running_loop().create_future()

        def deliver(resp: APIResponse) -> None:
            messages: list[Message] = []
            try:
                messages = _response_messages(resp)
                sent = send_now(messages)
            except Exception as err:  # a bug: the task still answers (a 500 when there is nothing to send)
                log.exception("answering %s %s from the durability callback failed", req.method, scope.get("path"))
                if not messages:
                    messages = _response_messages(_internal_error(req, scope, err))
                sent = False
            if not left.done():  # (cancelled: the server is shutting down)
                left.set_result([] if sent else messages)

        self._handle_durably(req, scope, deliver)
        for message in await left:  # what send_now could not send (the transport's buffer full)
            await send(message)

    def _handle_durably(self, req: APIRequest, scope: Scope, deliver: Callable[[APIResponse], None]) -> None:
        """Handle ``req`` on the loop; ``deliver`` its answer once everything it may have seen or
        written is durable: from the store's callback, or now when that is already so."""
        try:
            resp = self.handlers.handle_deferred(req)
        except StatusError as err:
            resp = _error_response(err)
        except Exception as err:  # a bug: still a Status
            resp = _internal_error(req, scope, err)

        def answer(error: BaseException | None) -> None:
            if error is None:
                deliver(resp)
            else:  # the store could not make it durable
                failed = error if isinstance(error, StatusError) else E.internal(str(error))
                deliver(APIResponse(failed.code, msgspec.json.encode(failed.status())))

        try:
            visible = self.store.when_visible(answer)
        except StatusError as err:
            visible = True
            resp = _error_response(err)
        if visible:
            answer(None)

    def direct(self, scope: Scope, respond: Respond) -> Callable[[bytes], None] | None:
        """The protocol's path without an ASGI task (:class:`~pykueue.apiserver.protocol.
        CoalescingHttpToolsProtocol`), taken at the end of the request's headers: a function that
        serves the request once its whole body is in, answering through ``respond``; None when the
        ASGI path must serve it (refusals, watches, HEAD, large LISTs, the UI, mounted groups, pod
        logs, a body of undeclared or too large size, everything outside the resource paths), so
        every answer but a plain resource request's still comes from :meth:`__call__`.

        The checks are :meth:`__call__`'s, in its order: Host, Origin, authentication and
        authorization run for every request, here or there."""
        path: str = scope["path"]
        if is_ui_path(path) or path == WATCH_PATH or path.endswith("/log"):
            return None
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        declared = headers.get("content-length")
        if "transfer-encoding" in headers or (
            declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY_BYTES)
        ):
            return None  # receive_body reads and limits it (413)
        try:
            user = self.guard.check(
                scope["method"], path, scope.get("scheme", "http"), headers, scope.get("query_string", b"")
            )
            scope[USER_SCOPE_KEY] = user
            scope[FLOW_SCOPE_KEY] = (user.name if user is not None else "", scope.get("server"))
            req = fast_request(scope, headers)
        except StatusError:
            return None
        if req is None or (self.mounted and path.startswith("/apis/") and path[6:].partition("/")[0] in self.mounted):
            return None
        if not self.discovery.has_group_version(req.group, req.version) or self.handlers.runs_on_thread(req):
            return None

        def deliver(resp: APIResponse) -> None:
            try:
                head = _response_headers(resp)
            except Exception as err:  # a bug: still an answer
                log.exception("answering %s %s from the durability callback failed", req.method, path)
                resp = _internal_error(req, scope, err)
                head = [(b"content-type", b"application/json"), (b"content-length", str(len(resp.body)).encode())]
            respond(resp.status, head, resp.body)

        def serve(body: bytes) -> None:
            if req.method in BODY_METHODS:
                req.body = body
            try:
                self._handle_durably(req, scope, deliver)
            except Exception as err:  # a bug (the store's when_visible): a Status, as _serve_fast answers
                deliver(_internal_error(req, scope, err))

        return serve

    def build(self) -> Starlette:
        """The Starlette application."""
        routes = [
            Route("/version", self._guard(self.version), methods=ALL_METHODS),
            Route("/healthz", self._guard(self.health), methods=ALL_METHODS),
            Route("/livez", self._guard(self.health), methods=ALL_METHODS),
            Route("/readyz", self._guard(self.health), methods=ALL_METHODS),
            Route("/api", self._guard(self.api), methods=ALL_METHODS),
            Route("/api/", self._guard(self.api), methods=ALL_METHODS),
            Route("/apis", self._guard(self.apis), methods=ALL_METHODS),
            Route("/apis/", self._guard(self.apis), methods=ALL_METHODS),
            Route("/openapi/v2", self._guard(self.openapi_v2), methods=ALL_METHODS),
            Route("/openapi/v3", self._guard(self.openapi_v3_index), methods=ALL_METHODS),
            Route("/openapi/v3/{path:path}", self._guard(self.openapi_v3), methods=ALL_METHODS),
            Route("/api/{version}", self._guard(self.core_resources), methods=ALL_METHODS),
            Route("/api/{version}/{rest:path}", self._guard(self.core_resource), methods=ALL_METHODS),
            Route("/apis/{group}", self._guard(self.group), methods=ALL_METHODS),
            Route("/apis/{group}/{version}", self._guard(self.group_resources), methods=ALL_METHODS),
            Route(
                "/apis/{group}/{version}/{rest:path}", self._guard(self.group_resource), methods=ALL_METHODS
            ),
            Route("/metrics", self._guard(self.metrics), methods=["GET"]),
            Route("/{path:path}", self._guard(self.not_found), methods=ALL_METHODS),
        ]
        return Starlette(routes=routes, lifespan=self.lifespan)

    def _guard(self, endpoint: Endpoint) -> Endpoint:
        """Turn :class:`StatusError` (and anything unexpected) into ``Status`` responses."""

        async def guarded(request: Request) -> Response:
            try:
                return await endpoint(request)
            except StatusError as err:
                return status_response(err)
            except Exception as err:  # a bug: still a Status, never an empty body
                log.exception("internal error serving %s %s", request.method, request.url.path)
                return status_response(E.internal(f"{type(err).__name__}: {err}"))

        return guarded

    # -- simple endpoints -------------------------------------------------------------------------

    async def version(self, request: Request) -> Response:
        """``/version``."""
        return Response(msgspec.json.encode(version_info()), media_type="application/json")

    async def health(self, request: Request) -> Response:
        """``/healthz``, ``/livez``, ``/readyz``."""
        return Response(b"ok", media_type="text/plain; charset=utf-8")

    async def metrics(self, request: Request) -> Response:
        """``/metrics``: Kueue's Prometheus metrics (authenticated like the API)."""
        source = self.metrics_source
        if source is not None:
            # Off the loop: the controller process answers over a socket.
            got = await asyncio.to_thread(source)
            if got is None:
                raise StatusError(
                    503, "ServiceUnavailable", "the controllers' metrics are not available now (their process is starting)", {}
                )
            return Response(got[0], media_type=got[1])
        if self.metrics_registry is None:
            raise E.path_not_found()
        from pykueue.metrics.server import exposition

        body, content_type = exposition(self.metrics_registry)
        return Response(body, media_type=content_type)

    async def not_found(self, request: Request) -> Response:
        """Anything the server does not serve."""
        raise E.path_not_found()

    # -- discovery --------------------------------------------------------------------------------

    async def api(self, request: Request) -> Response:
        """``/api``: ``APIVersions`` or the aggregated core group."""
        aggregated = wants_aggregated(request.headers.get("accept", ""))
        if aggregated:
            return document_response(request, self.discovery.aggregated(True, aggregated))
        host = request.headers.get("host") or f"{request.url.hostname}:{request.url.port}"
        return document_response(request, self.discovery.api_versions(host))

    async def apis(self, request: Request) -> Response:
        """``/apis``: ``APIGroupList`` or aggregated discovery."""
        aggregated = wants_aggregated(request.headers.get("accept", ""))
        if aggregated:
            return document_response(request, self.discovery.aggregated(False, aggregated))
        return document_response(request, self.discovery.api_group_list())

    async def group(self, request: Request) -> Response:
        """``/apis/{group}``."""
        doc = self.discovery.api_group(request.path_params["group"])
        if doc is None:
            raise E.path_not_found()
        return document_response(request, doc)

    async def core_resources(self, request: Request) -> Response:
        """``/api/v1``."""
        return self._resource_list(request, "", request.path_params["version"])

    async def group_resources(self, request: Request) -> Response:
        """``/apis/{group}/{version}``."""
        return self._resource_list(request, request.path_params["group"], request.path_params["version"])

    def _resource_list(self, request: Request, group: str, version: str) -> Response:
        doc = self.discovery.api_resource_list(group, version)
        if doc is None:
            raise E.path_not_found()
        return document_response(request, doc)

    # -- OpenAPI ----------------------------------------------------------------------------------

    async def openapi_v2(self, request: Request) -> Response:
        """``/openapi/v2``: an empty document (protobuf, as client-go asks for it).

        kubectl validates with OpenAPI v3 and falls back to v2 for a kind that v3 does not
        describe; a 404 there made it report "failed to download openapi" for a kind pykueue
        does not serve (CronJob, JobSet). An empty v2 document lets it go on to its own clear
        answer, ``no matches for kind "CronJob" in version "batch/v1"``.
        """
        return Response(b"", media_type=OPENAPI_V2_PROTOBUF)

    async def openapi_v3_index(self, request: Request) -> Response:
        """``/openapi/v3``: the index of group-version documents, with content hashes."""
        if self._openapi_index is None:
            paths: dict[str, Any] = {}
            for path in self.backend.openapi_paths():
                doc = self._openapi_document(path)
                digest = doc.etag.strip('"')
                paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
            body = msgspec.json.encode({"paths": paths})
            self._openapi_index = Document(body, '"' + hashlib.sha256(body).hexdigest()[:32].upper() + '"')
        return document_response(request, self._openapi_index)

    async def openapi_v3(self, request: Request) -> Response:
        """``/openapi/v3/api/v1`` and ``/openapi/v3/apis/{g}/{v}``."""
        path = request.path_params["path"].strip("/")
        if path not in self.backend.openapi_paths():
            raise E.path_not_found()
        doc = self._openapi_document(path)
        response = document_response(request, doc)
        if request.query_params.get("hash") == doc.etag.strip('"'):
            response.headers["Cache-Control"] = "public, immutable, max-age=31536000"
        return response

    def _openapi_document(self, path: str) -> Document:
        doc = self._openapi.get(path)
        if doc is None:
            body = msgspec.json.encode(self.backend.openapi_document(path))
            doc = Document(body, '"' + hashlib.sha512(body).hexdigest()[:128].upper() + '"')
            self._openapi[path] = doc
        return doc

    # -- resources --------------------------------------------------------------------------------

    async def core_resource(self, request: Request) -> Response:
        """``/api/v1/...``."""
        return await self._resource(request, "", request.path_params["version"], request.path_params["rest"])

    async def group_resource(self, request: Request) -> Response:
        """``/apis/{group}/{version}/...``."""
        params = request.path_params
        return await self._resource(request, params["group"], params["version"], params["rest"])

    async def _resource(self, request: Request, group: str, version: str, rest: str) -> Response:
        if not self.discovery.has_group_version(group, version):
            raise E.path_not_found()
        req = parse_resource_path(request.method, group, version, rest)
        if req.method == "HEAD":
            req.method = "GET"
        req.query = parse_query(request.scope.get("query_string", b""))
        req.content_type = body_media_type(request.headers, request.scope.get(USER_SCOPE_KEY))
        req.accept = request.headers.get("accept", "application/json")
        req.user_agent = request.headers.get("user-agent", "")
        if req.method in ("POST", "PUT", "PATCH", "DELETE"):
            req.body = await read_body(request)
        return to_response(await self.handlers.handle_async(req))


# --- request parsing ------------------------------------------------------------------------------------


def parse_query(raw: bytes) -> dict[str, list[str]]:
    """Query parameters as lists of values."""
    if not raw:
        return {}
    return urllib.parse.parse_qs(raw.decode("latin-1"), keep_blank_values=True)


def parse_resource_path(method: str, group: str, version: str, rest: str) -> APIRequest:
    """Split ``[watch/][namespaces/{ns}/]{plural}[/{name}[/{subresource}]]`` (as ``RequestInfoFactory``)."""
    stripped = rest.strip("/")
    parts = [urllib.parse.unquote(p) if "%" in p else p for p in stripped.split("/")] if stripped else []
    watch_prefix = bool(parts) and parts[0] == "watch"
    if watch_prefix:
        parts = parts[1:]
    namespace: str | None = None
    if len(parts) >= 3 and parts[0] == "namespaces" and parts[2] not in NAMESPACE_SUBRESOURCES:
        namespace = parts[1]
        parts = parts[2:]
    if not parts or len(parts) > 3 or any(p == "" for p in parts):
        raise E.path_not_found()
    return APIRequest(
        method=method,
        group=group,
        version=version,
        resource=parts[0],
        namespace=namespace,
        name=parts[1] if len(parts) > 1 else None,
        subresource=parts[2] if len(parts) > 2 else None,
        watch_prefix=watch_prefix,
    )


def fast_request(scope: Scope, headers: Mapping[str, str]) -> APIRequest | None:
    """The resource request of a non-watch, non-HEAD ``/api/v1/...`` or ``/apis/g/v/...`` path (else None)."""
    method = scope["method"]
    path: str = scope["path"]
    if method in ("HEAD", "OPTIONS"):
        return None
    if path.startswith("/apis/"):
        parts = path[6:].split("/", 2)
        if len(parts) < 3 or not parts[2]:
            return None
        group, version, rest = parts
    elif path.startswith("/api/"):
        parts = path[5:].split("/", 1)
        if len(parts) < 2 or not parts[1]:
            return None
        group, (version, rest) = "", parts
    else:
        return None
    query = parse_query(scope.get("query_string", b""))
    watch_values = query.get("watch")
    if rest.startswith("watch/") or (watch_values and watch_values[-1].lower() in ("true", "1")):
        return None
    req = parse_resource_path(method, group, version, rest)
    req.query = query
    req.headers = headers
    req.content_type = body_media_type(headers, scope.get(USER_SCOPE_KEY))
    req.accept = headers.get("accept", "application/json")
    req.user_agent = headers.get("user-agent", "")
    return req


def body_media_type(headers: Mapping[str, str], user: User | None) -> str:
    """The request's ``Content-Type``; when there is none, JSON for a token-authenticated client.

    kube-apiserver reads a body without a Content-Type as JSON, and some clients rely on it (the
    official Python client's ``CustomObjectsApi`` sends none). A browser's no-cors request also
    sends none (a Blob body) but can never carry a bearer token, so without one such a body is
    refused with 415.
    """
    content_type = headers.get("content-type")
    if content_type is None and user is not None:
        return "application/json"
    return content_type or ""


async def receive_body(receive: Receive, declared: str | None) -> bytes:
    """Read an ASGI request body, refusing more than :data:`MAX_BODY_BYTES`."""
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise E.entity_too_large(MAX_BODY_BYTES)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise E.bad_request("client disconnected")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise E.entity_too_large(MAX_BODY_BYTES)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def read_body(request: Request) -> bytes:
    """The request body, refusing more than :data:`MAX_BODY_BYTES`."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise E.entity_too_large(MAX_BODY_BYTES)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise E.entity_too_large(MAX_BODY_BYTES)
        chunks.append(chunk)
    return b"".join(chunks)


# --- responses ------------------------------------------------------------------------------------------


async def _refuse(err: StatusError, send: Send) -> None:
    """Answer a request the guard refused; 401s also close the connection, so a client without
    credentials is not kept connected."""
    body = msgspec.json.encode(err.status())
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if err.code == 401:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": err.code, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def status_response(err: StatusError) -> Response:
    """A ``Status`` failure response (with the request's warnings)."""
    response = Response(msgspec.json.encode(err.status()), status_code=err.code, media_type="application/json")
    if err.warnings:
        response.raw_headers.extend(_warning_headers(err.warnings))
    return response


def document_response(request: Request, doc: Document) -> Response:
    """A cached document, answering 304 to a matching ``If-None-Match``."""
    headers = {"ETag": doc.etag, "Vary": "Accept"}
    if request.headers.get("if-none-match") == doc.etag:
        return Response(status_code=304, headers=headers)
    return Response(doc.body, media_type=doc.content_type, headers=headers)


def _warning_headers(warnings: Sequence[str]) -> list[tuple[bytes, bytes]]:
    out: list[tuple[bytes, bytes]] = []
    for text in dict.fromkeys(warnings):
        escaped = text.replace("\\", "\\\\").replace('"', '\\"')
        escaped = "".join(f"\\x{ord(c):02x}" if ord(c) < 0x20 or ord(c) == 0x7F else c for c in escaped)
        out.append((b"warning", f'299 - "{escaped}"'.encode("utf-8", "replace")))
    return out


def _response_headers(resp: APIResponse) -> list[tuple[bytes, bytes]]:
    """The headers of a plain (non-streamed) handler result."""
    headers = [
        (b"content-type", resp.content_type.encode()),
        (b"content-length", str(len(resp.body)).encode()),
    ]
    if resp.warnings:
        headers += _warning_headers(resp.warnings)
    return headers


def _response_messages(resp: APIResponse) -> list[Message]:
    """The ASGI messages of a plain (non-streamed) handler result."""
    return [
        {"type": "http.response.start", "status": resp.status, "headers": _response_headers(resp)},
        {"type": "http.response.body", "body": resp.body},
    ]


def _error_response(err: StatusError) -> APIResponse:
    """A failure's answer: its ``Status``, and the request's warnings."""
    return APIResponse(err.code, msgspec.json.encode(err.status()), warnings=list(err.warnings))


def _internal_error(req: APIRequest, scope: Scope, err: Exception) -> APIResponse:
    """A bug's answer: still a Status, and logged."""
    log.exception("internal error serving %s %s", req.method, scope.get("path"), exc_info=err)
    api_err = E.internal(f"{type(err).__name__}: {err}")
    return APIResponse(api_err.code, msgspec.json.encode(api_err.status()))


def to_response(resp: APIResponse) -> Response:
    """The Starlette response for a handler result (streams for watches)."""
    response: Response
    if resp.stream is not None:
        response = StreamingResponse(
            resp.stream,
            status_code=resp.status,
            media_type=resp.content_type,
            headers={"Cache-Control": "no-cache, private"},
        )
    else:
        response = Response(resp.body, status_code=resp.status, media_type=resp.content_type)
    if resp.warnings:
        response.raw_headers.extend(_warning_headers(resp.warnings))
    return response


def create_app(
    store: Any,
    *,
    token: str | None = None,
    readonly_token: str | None = None,
    served_names: Sequence[str] = (),
    bookmark_interval: float = watch.DEFAULT_BOOKMARK_INTERVAL,
    gates: FeatureGates = DEFAULT_GATES,
) -> tuple[ASGIApp, APIServerApp]:
    """The ASGI application for ``store`` (Starlette behind a fast path) and the object holding its parts."""
    server = APIServerApp(
        store,
        token=token,
        readonly_token=readonly_token,
        served_names=served_names,
        bookmark_interval=bookmark_interval,
        gates=gates,
    )
    return server, server
