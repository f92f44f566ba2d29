"""Health probes of ``pykueue controller`` (``health.healthProbeBindAddress``, default ``:8081``).

``/healthz`` (liveness) answers ``ok`` while the process serves; ``/readyz`` (readiness) once the
webhooks serve (every replica, leader or not, answers webhooks, as upstream's); ``/replica-role``
reports ``leader`` or ``follower`` for leader election.
"""

from __future__ import annotations

from collections.abc import Callable
from http.server import ThreadingHTTPServer
from typing import Any

from pykueue.kube.httpserve import PLAIN_TEXT, BackgroundServer, ReplyHandler


def parse_bind_address(address: str) -> tuple[str, int]:
    """``:8081`` / ``127.0.0.1:8081`` → (host, port); an empty host listens on every address."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"health probe bind address {address!r}: want [HOST]:PORT")
    return host.strip("[]") or "0.0.0.0", int(port)


class HealthServer:
    """Serves the probes from a background thread."""

    def __init__(self, address: str, ready: Callable[[], bool], role: Callable[[], str]) -> None:
        checks = {"/healthz": lambda: True, "/readyz": ready}

        class Handler(ReplyHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/replica-role":
                    self._send(200, role())
                elif path in checks:
                    ok = checks[path]()
                    self._send(200 if ok else 503, "ok" if ok else "not ready")
                else:
                    self._send(404, "not found")

            def _send(self, code: int, text: str) -> None:
                self.reply(code, text.encode(), PLAIN_TEXT)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # probes every few seconds would drown the log

        self.httpd = ThreadingHTTPServer(parse_bind_address(address), Handler)
        self._serving = BackgroundServer(self.httpd, "health")
        self.port: int = self._serving.port

    def start(self) -> None:
        """Serve in a background thread."""
        self._serving.start()

    def stop(self) -> None:
        """Stop serving."""
        self._serving.stop()
