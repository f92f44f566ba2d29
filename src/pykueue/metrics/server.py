"""Serving a metrics registry: the controller's metrics port and ``/metrics`` on ``pykueue serve``.

Upstream's manager serves ``/metrics`` on ``metrics.bindAddress`` (controller-runtime's metrics
server; ``0`` disables it). pykueue's controller does the same over plain HTTP on a loopback
address by default; expose it wider only behind something that authenticates.
"""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest

log = logging.getLogger(__name__)

DEFAULT_BIND_ADDRESS = "127.0.0.1:8080"
METRICS_PATH = "/metrics"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The text format version Go's client (and so upstream Kueue) serves."""


class BindAddressError(ValueError):
    """A malformed ``--metrics-bind-address``."""


def parse_bind_address(text: str) -> tuple[str, int] | None:
    """``host:port`` (``:port`` = every interface, ``[v6]:port``), or None for ``0`` (disabled)."""
    value = text.strip()
    if value == "0":
        return None
    host, sep, port_text = value.rpartition(":")
    if not sep:
        raise BindAddressError(f'--metrics-bind-address "{text}": missing port (want HOST:PORT, :PORT or 0)')
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        port = int(port_text)
    except ValueError:
        raise BindAddressError(f'--metrics-bind-address "{text}": port "{port_text}" is not a number') from None
    if not 0 <= port <= 65535:
        raise BindAddressError(f'--metrics-bind-address "{text}": port {port} is out of range 0-65535')
    return host or "0.0.0.0", port


def exposition(registry: CollectorRegistry) -> tuple[bytes, str]:
    """The text exposition of ``registry`` and its content type."""
    return generate_latest(registry), CONTENT_TYPE


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], registry: CollectorRegistry) -> None:
        self.registry = registry
        if ":" in address[0]:
            import socket

            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path != METRICS_PATH:
            self._reply(404, b"404 page not found\n", "text/plain; charset=utf-8")
            return
        body, content_type = exposition(self.server.registry)
        self._reply(200, body, content_type)

    def _reply(self, code: int, body: bytes, content_type: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("metrics: " + format, *args)


class MetricsServer:
    """``/metrics`` on its own port, served from a background thread."""

    def __init__(self, registry: CollectorRegistry, host: str, port: int) -> None:
        self._server = _Server((host, port), registry)
        self._thread = threading.Thread(target=self._server.serve_forever, name="kueue-metrics", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else str(host)
        shown = f"[{name}]" if ":" in name else name
        return f"http://{shown}:{port}{METRICS_PATH}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
