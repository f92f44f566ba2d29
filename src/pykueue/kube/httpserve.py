"""The small side HTTP servers' shared machinery: a reply helper and a background serving thread.

The controller's health probes, metrics port, webhooks and visibility API, and serve's child
endpoint each answer a handful of paths from ``http.server``; what they share lives here once.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PLAIN_TEXT = "text/plain; charset=utf-8"


class ReplyHandler(BaseHTTPRequestHandler):
    """A request handler that answers with one complete body (no body for ``HEAD``)."""

    def reply(self, code: int, body: bytes, content_type: str) -> None:
        """Send status ``code`` with ``body`` of ``content_type`` and its length."""
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


class BackgroundServer:
    """Serves ``server`` from a daemon thread named ``name`` until :meth:`stop`."""

    def __init__(self, server: ThreadingHTTPServer, name: str) -> None:
        server.daemon_threads = True
        self.server = server
        self._thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)

    @property
    def host(self) -> str:
        """The address listened on, as text."""
        host = self.server.server_address[0]
        return host.decode() if isinstance(host, bytes) else str(host)

    @property
    def port(self) -> int:
        """The port listened on (the one picked when 0 was asked for)."""
        return int(self.server.server_address[1])

    def start(self) -> None:
        """Serve in the background thread."""
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving, close the socket and wait up to ``timeout`` seconds for the thread."""
        if self._thread.ident is not None:  # shutdown() waits forever on a loop that never ran
            self.server.shutdown()
            self._thread.join(timeout=timeout)
        self.server.server_close()
