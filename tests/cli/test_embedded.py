"""The pieces of serve's controller process that need no process: the child's token-guarded
endpoint, serve's proxy of the visibility API and metrics to it, and the child's command line."""

from __future__ import annotations

import argparse
import http.client
import io
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import msgspec
import pytest

from pykueue.cli.embedded import ControllerProcess, LocalEndpoint, RemoteVisibility, parse_endpoint
from pykueue.cli.main import build_parser
from pykueue.cli.serve import controller_argv
from pykueue.metrics import KueueMetrics
from pykueue.visibility.api import PendingWorkloadInfo, VisibilityAPI

TOKEN = "s3cret"


class Source:
    """A queue manager's answers, fixed (the endpoint's transport is under test, not the queues)."""

    def pending_workloads(self, cluster_queue: str) -> Sequence[PendingWorkloadInfo] | None:
        if cluster_queue != "cq":
            return None
        return [PendingWorkloadInfo(name="wl", namespace="ns", local_queue="lq", priority=3)]

    def cluster_queue_of(self, namespace: str, local_queue: str) -> str | None:
        return "cq" if (namespace, local_queue) == ("ns", "lq") else None


@pytest.fixture
def endpoint() -> Iterator[LocalEndpoint]:
    metrics = KueueMetrics()
    ep = LocalEndpoint("127.0.0.1", 0, TOKEN, VisibilityAPI(Source()), metrics.registry)
    ep.start()
    yield ep
    ep.stop()


def get(ep: LocalEndpoint, path: str, token: str | None) -> tuple[int, bytes]:
    host, port = ep.url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token else {})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def process_for(ep: LocalEndpoint | None) -> ControllerProcess:
    proc = ControllerProcess([sys.executable, "-c", "pass"], io.StringIO())
    proc.token = TOKEN
    if ep is not None:
        host, port = ep.url.removeprefix("http://").rsplit(":", 1)
        proc.endpoint = (host, int(port))
    return proc


def test_endpoint_refuses_requests_without_the_token(endpoint: LocalEndpoint) -> None:
    path = "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq/pendingworkloads"
    assert get(endpoint, path, None)[0] == 401
    assert get(endpoint, path, "wrong")[0] == 401
    assert get(endpoint, "/metrics", None)[0] == 401
    status, body = get(endpoint, path, TOKEN)
    assert status == 200
    assert [i["metadata"]["name"] for i in msgspec.json.decode(body)["items"]] == ["wl"]


def test_serve_proxies_visibility_and_metrics(endpoint: LocalEndpoint) -> None:
    remote = RemoteVisibility(process_for(endpoint))
    got = remote.handle("GET", "v1beta2/namespaces/ns/localqueues/lq/pendingworkloads", {"limit": ["5"]})
    assert got.status == 200
    doc = msgspec.json.decode(got.body)
    assert doc["kind"] == "PendingWorkloadsSummary"
    assert [(i["metadata"]["name"], i["positionInLocalQueue"]) for i in doc["items"]] == [("wl", 0)]
    missing = remote.handle("GET", "v1beta2/clusterqueues/other/pendingworkloads", {})
    assert missing.status == 404
    assert msgspec.json.decode(missing.body)["message"] == 'clusterqueue.visibility.kueue.x-k8s.io "other" not found'
    metrics = process_for(endpoint).metrics()
    assert metrics is not None and b"# TYPE kueue_pending_workloads gauge" in metrics[0]


def test_without_a_running_child_visibility_is_unavailable_and_discovery_answers() -> None:
    remote = RemoteVisibility(process_for(None))
    got = remote.handle("GET", "v1beta2/clusterqueues/cq/pendingworkloads", {})
    assert got.status == 503
    assert msgspec.json.decode(got.body)["reason"] == "ServiceUnavailable"
    assert remote.handle("GET", "v1beta2", {}).status == 200
    assert process_for(None).metrics() is None


@pytest.mark.parametrize(
    ("text", "want"),
    [("127.0.0.1:0", ("127.0.0.1", 0)), ("[::1]:8080", ("::1", 8080)), ("localhost:65535", ("localhost", 65535))],
)
def test_parse_endpoint(text: str, want: tuple[str, int]) -> None:
    assert parse_endpoint(text) == want


@pytest.mark.parametrize("text", ["8080", ":8080", "127.0.0.1:x", "127.0.0.1:70000"])
def test_parse_endpoint_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="--local-endpoint"):
        parse_endpoint(text)


def serve_args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["serve", *argv])


def test_controller_command_line_carries_serves_component_flags(tmp_path: Path) -> None:
    args = serve_args(
        "--config", "kueue.yaml", "--provisioner", "cap.yaml", "--max-pod-processes", "3", "--run-unmanaged-jobs",
        "--log-level", "info",
    )  # fmt: skip
    argv = controller_argv(args, tmp_path / "kc", tmp_path)
    assert argv[:4] == [sys.executable, "-m", "pykueue", "controller"]
    flags = " ".join(argv[4:])
    assert f"--kubeconfig {tmp_path / 'kc'} --work-dir {tmp_path}" in flags
    for want in ("--no-webhooks", "--exit-with-parent", "--run-jobs", "--publish-pods", "--visibility-port -1",
                 "--metrics-bind-address 0", "--max-pod-processes 3", "--run-unmanaged-jobs", "--log-level info",
                 f"--config {Path('kueue.yaml').resolve()}", f"--provisioner {Path('cap.yaml').resolve()}"):  # fmt: skip
        assert want in flags
    # Every flag parses as `pykueue controller`'s.
    parsed = build_parser().parse_args(argv[3:])
    assert parsed.run_jobs and parsed.no_webhooks and parsed.exit_with_parent
    # serve's own API server over loopback: no 300 QPS default limit (unless --config sets one).
    assert parsed.no_default_rate_limit
    assert "--run-jobs" not in controller_argv(serve_args("--no-job-runner"), tmp_path / "kc", tmp_path)
