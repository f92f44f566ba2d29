"""The controller's HTTPS visibility server: TLS, discovery documents and the front-proxy
client-certificate requirement (``--visibility-client-ca``)."""

from __future__ import annotations

import datetime
import http.client
import json
import ssl
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))

from builders import at, cluster_queue, flavor_quotas, local_queue, workload

from pykueue.apiserver.server import ensure_tls
from pykueue.core.queue import QueueManager
from pykueue.visibility.api import PendingWorkloadInfo, VisibilityAPI
from pykueue.visibility.server import VisibilityServer
from pykueue.visibility.source import snapshot_pending


class Source:
    def __init__(self) -> None:
        self.queues = QueueManager()
        self.queues.add_cluster_queue(cluster_queue("cq", flavor_quotas("f", cpu=1)))
        self.queues.add_local_queue(local_queue("lq", "ns", "cq"))
        for i in range(3):
            self.queues.add_or_update_workload(workload(f"w{i}", "ns", "lq", created=at(i)), at(10))

    def pending_workloads(self, cluster_queue: str) -> Sequence[PendingWorkloadInfo] | None:
        return snapshot_pending(self.queues, cluster_queue)

    def cluster_queue_of(self, namespace: str, local_queue: str) -> str | None:
        return "cq" if self.queues.has_local_queue(f"{namespace}/{local_queue}") else None


def _client_pair(tmp: Path) -> tuple[Path, Path, Path]:
    """A CA (the "requestheader client CA") and a client certificate + key it signed."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "front-proxy-ca")])
    ca = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "front-proxy-client")]))
        .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1)).not_valid_after(now + datetime.timedelta(days=1))
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    pem = serialization.Encoding.PEM
    (tmp / "client-ca.crt").write_bytes(ca.public_bytes(pem))
    (tmp / "client.crt").write_bytes(cert.public_bytes(pem))
    (tmp / "client.key").write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return tmp / "client-ca.crt", tmp / "client.crt", tmp / "client.key"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[VisibilityServer, Path, tuple[Path, Path, Path]]]:
    tls = ensure_tls(tmp_path / "certs", "localhost")
    client = _client_pair(tmp_path)
    server = VisibilityServer(VisibilityAPI(Source()), tls.cert, tls.key, host="127.0.0.1", port=0, client_ca=client[0])
    server.start()
    try:
        yield server, tls.ca, client
    finally:
        server.stop()


def _get(port: int, path: str, ca: Path, cert: tuple[Path, Path] | None, accept: str = "application/json") -> tuple[int, dict[str, object]]:
    context = ssl.create_default_context(cafile=str(ca))
    if cert is not None:
        context.load_cert_chain(str(cert[0]), str(cert[1]))
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
    try:
        conn.request("GET", path, headers={"Accept": accept})
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        conn.close()


def test_serves_pending_workloads_and_discovery_to_the_front_proxy(
    served: tuple[VisibilityServer, Path, tuple[Path, Path, Path]],
) -> None:
    server, ca, (_, cert, key) = served
    status, doc = _get(server.port, "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq/pendingworkloads?limit=2", ca, (cert, key))
    assert status == 200
    assert [(i["metadata"]["name"], i["positionInClusterQueue"]) for i in doc["items"]] == [("w0", 0), ("w1", 1)]  # type: ignore[attr-defined]
    status, doc = _get(server.port, "/apis/visibility.kueue.x-k8s.io/v1beta1/namespaces/ns/localqueues/nope/pendingworkloads", ca, (cert, key))
    assert (status, doc["message"]) == (404, 'localqueue.visibility.kueue.x-k8s.io "nope" not found')
    status, groups = _get(server.port, "/apis", ca, (cert, key))
    assert groups["kind"] == "APIGroupList"
    status, aggregated = _get(
        server.port, "/apis", ca, (cert, key), "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    )
    assert aggregated["apiVersion"] == "apidiscovery.k8s.io/v2"
    item = aggregated["items"][0]  # type: ignore[index]
    assert [v["version"] for v in item["versions"]] == ["v1beta2", "v1beta1"]
    assert item["versions"][0]["resources"][0]["subresources"][0]["subresource"] == "pendingworkloads"
    assert _get(server.port, "/nothing", ca, (cert, key))[0] == 404


def test_rejects_clients_without_a_front_proxy_certificate(
    served: tuple[VisibilityServer, Path, tuple[Path, Path, Path]],
) -> None:
    server, ca, _ = served
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        _get(server.port, "/apis", ca, None)
    # The server survives a refused handshake.
    _, _, (_, cert, key) = served
    assert _get(server.port, "/apis", ca, (cert, key))[0] == 200
