"""The visibility API on its own HTTPS port (``pykueue controller``, cluster mode).

Upstream the controller manager runs an aggregated API server for ``visibility.kueue.x-k8s.io``
(``pkg/visibility/server.go``; default bind port 8082, a self-signed certificate unless one is
mounted) that kube-apiserver reaches through the ``APIService``/``Service`` in ``config/visibility``.
This server answers the same paths from the controller's queue manager: discovery (``/apis``,
legacy and aggregated, ``/apis/visibility.kueue.x-k8s.io[/{version}]``), the two
``pendingworkloads`` endpoints and the health paths.

Authentication and authorization: with ``auth`` (:class:`~pykueue.visibility.auth.DelegatedAuth`,
what ``pykueue controller`` uses by default) every request is authenticated and authorized by
kube-apiserver as upstream's ``genericapiserver`` does it (front-proxy certificate + ``X-Remote-*``
headers, client certificates, TokenReview; SubjectAccessReview); 401/403 are ``Status`` objects.
Without it (``--visibility-auth none``) any client that reaches the port is served. ``client_ca``
additionally requires every client to present a certificate signed by it.
"""

from __future__ import annotations

import http.server
import logging
import ssl
import urllib.parse
from pathlib import Path
from typing import Any

import msgspec

from pykueue.apiserver import errors as E
from pykueue.apiserver.discovery import AGGREGATED_V2BETA1, wants_aggregated
from pykueue.kube.httpserve import BackgroundServer, ReplyHandler
from pykueue.kube.status import StatusError
from pykueue.visibility.api import GROUP, VisibilityAPI, aggregated_group, api_group
from pykueue.visibility.auth import DelegatedAuth

log = logging.getLogger(__name__)

DEFAULT_PORT = 8082
"""``configapi.DefaultVisibilityBindPort``."""
HEALTH_PATHS = frozenset({"/healthz", "/livez", "/readyz"})


class _Handler(ReplyHandler):
    server: _HTTPServer
    protocol_version = "HTTP/1.1"
    timeout = 60  # seconds a connection may sit idle (or a client stall its TLS handshake)

    def setup(self) -> None:
        super().setup()
        # The TLS handshake runs here, on the connection's own thread, not in the accept loop.
        self.request.do_handshake()

    def _serve(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        path = url.path.rstrip("/") or "/"
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        accept = self.headers.get("Accept", "application/json")
        api = self.server.api
        if self.server.auth is not None and not self._authorized(path, query):
            return
        if path in HEALTH_PATHS:
            self.reply(200, b"ok", "text/plain; charset=utf-8")
        elif path == "/apis":
            aggregated = wants_aggregated(accept)
            if aggregated:
                version = "apidiscovery.k8s.io/v2beta1" if aggregated == AGGREGATED_V2BETA1 else "apidiscovery.k8s.io/v2"
                doc: dict[str, Any] = {
                    "kind": "APIGroupDiscoveryList",
                    "apiVersion": version,
                    "metadata": {},
                    "items": [aggregated_group()],
                }
                self.reply(200, msgspec.json.encode(doc), aggregated)
            else:
                doc = {"kind": "APIGroupList", "apiVersion": "v1", "groups": [api_group()]}
                self.reply(200, msgspec.json.encode(doc), "application/json")
        elif path == f"/apis/{GROUP}" or path.startswith(f"/apis/{GROUP}/"):
            result = api.handle(self.command, path[len(f"/apis/{GROUP}") :], query, accept)
            self.reply(result.status, result.body, result.content_type)
        else:
            err = E.path_not_found()
            self.reply(err.code, msgspec.json.encode(err.status()), "application/json")

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def _authorized(self, path: str, query: dict[str, list[str]]) -> bool:
        """``WithAuthentication`` + ``WithAuthorization``: False once a 401/403 Status was sent."""
        from pykueue.visibility.auth import Unauthorized, forbidden_status, request_info

        auth = self.server.auth
        assert auth is not None
        try:
            user = auth.authenticate(self.request.getpeercert(binary_form=True), self.headers)
        except Unauthorized as err:
            log.debug("visibility: unauthenticated request from %s: %s", self.address_string(), err)
            self._status(E.unauthorized())
            return False
        info = request_info(self.command, path, query)
        allowed, reason = auth.authorize(user, info)
        if not allowed:
            self._status(forbidden_status(user, info, reason))
            return False
        return True

    def _status(self, err: StatusError) -> None:
        self.reply(err.code, msgspec.json.encode(err.status()), "application/json")

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("visibility %s - " + format, self.address_string(), *args)


class _HTTPServer(http.server.ThreadingHTTPServer):

    def __init__(
        self, address: tuple[str, int], api: VisibilityAPI, context: ssl.SSLContext, auth: DelegatedAuth | None
    ) -> None:
        self.api = api
        self.auth = auth
        self.context = context
        super().__init__(address, _Handler)

    def get_request(self) -> tuple[Any, Any]:
        sock, addr = super().get_request()
        return self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Failed handshakes (plain HTTP, untrusted client certificates) are the client's problem.
        log.debug("visibility server: connection from %s failed", client_address, exc_info=True)


class VisibilityServer:
    """Serves :class:`VisibilityAPI` over HTTPS on ``host:port`` (port 0 picks a free one)."""

    def __init__(
        self,
        api: VisibilityAPI,
        cert: Path,
        key: Path,
        host: str = "0.0.0.0",
        port: int = DEFAULT_PORT,
        client_ca: Path | None = None,
        auth: DelegatedAuth | None = None,
    ) -> None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(str(cert), str(key))
        if auth is not None and auth.config.ca_pem:
            # Client certificates are optional (tokens, anonymous); one presented must chain to the
            # cluster's client CA or its front-proxy CA. Which one signed it decides how it counts.
            context.verify_mode = ssl.CERT_OPTIONAL
            context.load_verify_locations(cadata=auth.config.ca_pem)
        if client_ca is not None:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(str(client_ca))
        self._serving = BackgroundServer(_HTTPServer((host, port), api, context, auth), "visibility-server")

    @property
    def port(self) -> int:
        return self._serving.port

    def start(self) -> None:
        self._serving.start()

    def stop(self) -> None:
        self._serving.stop(timeout=10)
