"""Health probes of ``pykueue controller`` (``health.healthProbeBindAddress``, default ``:8081``).

``/healthz`` (liveness) answers ``ok`` while the process serves; ``/readyz`` (readiness) once the
webhooks serve (every replica, leader or not, answers webhooks, as upstream's); ``/replica-role``
reports ``leader`` or ``follower`` for leader election.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


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

        class Handler(BaseHTTPRequestHandler):
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
                body = text.encode()
                self.send_response(code)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # probes every few seconds would drown the log

        self.httpd = ThreadingHTTPServer(parse_bind_address(address), Handler)
        self.httpd.daemon_threads = True
        self.port: int = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="health", daemon=True)

    def start(self) -> None:
        """Serve in a background thread."""
        self._thread.start()

    def stop(self) -> None:
        """Stop serving."""
        self.httpd.shutdown()
        self.httpd.server_close()
