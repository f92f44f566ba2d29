"""Serving a metrics registry: the controller's metrics port and ``/metrics`` on ``pykueue serve``.

Upstream's manager serves ``/metrics`` on ``metrics.bindAddress`` (controller-runtime's metrics
server; ``0`` disables it). pykueue's controller does the same over plain HTTP on a loopback
address by default; expose it wider only behind something that authenticates.
"""

from __future__ import annotations

import logging
from http.server import ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest

from pykueue.kube.httpserve import PLAIN_TEXT, BackgroundServer, ReplyHandler

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
    def __init__(self, address: tuple[str, int], registry: CollectorRegistry) -> None:
        self.registry = registry
        if ":" in address[0]:
            import socket

            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)


class _Handler(ReplyHandler):
    server: _Server

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path != METRICS_PATH:
            self.reply(404, b"404 page not found\n", PLAIN_TEXT)
            return
        body, content_type = exposition(self.server.registry)
        self.reply(200, body, content_type)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("metrics: " + format, *args)


class MetricsServer:
    """``/metrics`` on its own port, served from a background thread."""

    def __init__(self, registry: CollectorRegistry, host: str, port: int) -> None:
        self._serving = BackgroundServer(_Server((host, port), registry), "kueue-metrics")

    @property
    def url(self) -> str:
        name = self._serving.host
        shown = f"[{name}]" if ":" in name else name
        return f"http://{shown}:{self._serving.port}{METRICS_PATH}"

    def start(self) -> None:
        self._serving.start()

    def stop(self) -> None:
        self._serving.stop()
