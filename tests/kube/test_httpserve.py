"""The side servers' shared machinery: replies with their length, no body for HEAD, a clean stop."""

from __future__ import annotations

import http.client
from http.server import ThreadingHTTPServer

from pykueue.kube.httpserve import PLAIN_TEXT, BackgroundServer, ReplyHandler


class _Echo(ReplyHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.reply(200 if self.path == "/ok" else 404, self.path.encode(), PLAIN_TEXT)

    do_HEAD = do_GET

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_reply_sends_body_and_length_and_head_has_no_body() -> None:
    serving = BackgroundServer(ThreadingHTTPServer(("127.0.0.1", 0), _Echo), "echo")
    serving.start()
    try:
        conn = http.client.HTTPConnection(serving.host, serving.port, timeout=5)
        conn.request("GET", "/ok")
        got = conn.getresponse()
        assert (got.status, got.getheader("Content-Length"), got.read()) == (200, "3", b"/ok")
        conn.request("HEAD", "/missing")
        got = conn.getresponse()
        assert (got.status, got.getheader("Content-Length"), got.read()) == (404, "8", b"")
        assert got.getheader("Content-Type") == PLAIN_TEXT
        conn.close()
    finally:
        serving.stop()
    try:
        http.client.HTTPConnection(serving.host, serving.port, timeout=2).request("GET", "/ok")
    except OSError:
        pass
    else:  # pragma: no cover - the socket must be closed
        raise AssertionError("still listening after stop()")


def test_stop_before_start_returns() -> None:
    serving = BackgroundServer(ThreadingHTTPServer(("127.0.0.1", 0), _Echo), "never-started")
    serving.stop(timeout=1)  # shutdown() on a loop that never ran would wait forever
    assert serving.server.socket.fileno() == -1
