"""Serving metrics: the controller's metrics port and ``/metrics`` on the API server's application."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from conftest import labels, parse

from pykueue.apiserver.app import create_app
from pykueue.metrics import KueueMetrics
from pykueue.metrics.server import BindAddressError, MetricsServer, parse_bind_address
from pykueue.store import Store


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", None),
        (":8080", ("0.0.0.0", 8080)),
        ("127.0.0.1:8443", ("127.0.0.1", 8443)),
        ("[::1]:9090", ("::1", 9090)),
        ("localhost:0", ("localhost", 0)),
    ],
)
def test_parse_bind_address(text: str, expected: tuple[str, int] | None) -> None:
    assert parse_bind_address(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("8080", 'missing port'),
        ("127.0.0.1:http", 'port "http" is not a number'),
        (":70000", "port 70000 is out of range 0-65535"),
    ],
)
def test_parse_bind_address_rejects(text: str, message: str) -> None:
    with pytest.raises(BindAddressError) as err:
        parse_bind_address(text)
    assert f'--metrics-bind-address "{text}"' in str(err.value) and message in str(err.value)


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str, str]:
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.headers.get("Content-Type", ""), resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("Content-Type", ""), err.read().decode()


def test_metrics_server_serves_metrics_path_only() -> None:
    m = KueueMetrics()
    m.preempted("cq", "InClusterQueue")
    server = MetricsServer(m.registry, "127.0.0.1", 0)
    server.start()
    try:
        assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/metrics")
        code, ctype, body = _get(server.url)
        assert code == 200 and ctype.startswith("text/plain; version=0.0.4")
        assert parse(body)["kueue_preempted_workloads_total"] == {
            labels(preempting_cluster_queue="cq", reason="InClusterQueue"): 1.0
        }
        code, _, _ = _get(server.url.replace("/metrics", "/other"))
        assert code == 404
    finally:
        server.stop()


def _asgi_get(app: Any, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """One GET through the ASGI application (with its lifespan), without a network."""

    async def run() -> tuple[int, bytes]:
        out: dict[str, Any] = {"body": b""}
        scope = {
            "type": "http",
            "method": "GET",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()],
            "scheme": "http",
            "server": ("127.0.0.1", 80),
            "client": ("127.0.0.1", 1),
            "http_version": "1.1",
            "root_path": "",
        }

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                out["status"] = message["status"]
            elif message["type"] == "http.response.body":
                out["body"] += message.get("body", b"")

        await app(scope, receive, send)
        return out["status"], out["body"]

    return asyncio.run(run())


def test_api_server_metrics_route_requires_the_api_token() -> None:
    store = Store(None)
    try:
        app, parts = create_app(store, token="s3cret")
        code, body = _asgi_get(app, "/metrics", {"Authorization": "Bearer s3cret"})
        assert code == 404  # no controllers: nothing to expose
        assert json.loads(body)["reason"] == "NotFound"
        m = KueueMetrics()
        m.admission_attempt(True, 0.01)
        parts.metrics_registry = m.registry
        code, body = _asgi_get(app, "/metrics")
        assert code == 401 and json.loads(body)["reason"] == "Unauthorized"
        code, body = _asgi_get(app, "/metrics", {"Authorization": "Bearer wrong"})
        assert code == 401
        code, body = _asgi_get(app, "/metrics", {"Authorization": "Bearer s3cret"})
        assert code == 200
        assert parse(body.decode())["kueue_admission_attempts_total"] == {labels(result="success"): 1.0}
    finally:
        store.close()


def test_api_server_metrics_route_without_token() -> None:
    store = Store(None)
    try:
        app, parts = create_app(store)
        parts.metrics_registry = KueueMetrics().registry
        code, body = _asgi_get(app, "/metrics")
        assert code == 200 and b"# TYPE kueue_admission_attempts_total counter" in body
    finally:
        store.close()
