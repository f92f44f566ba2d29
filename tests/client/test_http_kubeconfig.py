"""HTTPClient.from_kubeconfig: file selection, merging, TLS and credentials, against real servers.

Every server serves HTTPS with its own CA and requires the bearer token it writes into its
kubeconfig; the TLS cases bind ``--host 0.0.0.0`` (the certificate then also names the wildcard's
loopback address).
"""

from __future__ import annotations

import base64
import datetime
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from httpclient_support import Starter, tls_serving

from pykueue.client.http import ConnectionFailed, HTTPClient
from pykueue.client.interface import APIError
from pykueue.client.kubeconfig import KubeconfigError, load_connection
from pykueue.client.resources import NAMESPACES


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from tls_serving(tmp_path_factory.mktemp("tls"))


def kubeconfig(
    server: str,
    user: dict[str, Any] | None = None,
    cluster: dict[str, Any] | None = None,
    name: str = "test",
    current: str | None = "test",
    namespace: str | None = None,
) -> dict[str, Any]:
    ctx: dict[str, Any] = {"cluster": name, "user": name}
    if namespace:
        ctx["namespace"] = namespace
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server, **(cluster or {})}}],
        "users": [{"name": name, "user": user or {}}],
        "contexts": [{"name": name, "context": ctx}],
    }
    if current:
        doc["current-context"] = current
    return doc


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return path


def works(path: Path | None, context: str | None = None) -> bool:
    c = HTTPClient.from_kubeconfig(path, context)
    try:
        items, _ = c.list(NAMESPACES)
        return any(o["metadata"]["name"] == "default" for o in items)
    finally:
        c.close()


def _ca_data(srv: Any) -> str:
    return base64.b64encode(Path(srv.ca_file).read_bytes()).decode()


def _creds(srv: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(user, cluster) entries that reach ``srv``: its token and CA (every server requires them)."""
    return {"token": srv.token}, {"certificate-authority-data": _ca_data(srv)}


# -- TLS and credentials ------------------------------------------------------------------------


def test_written_kubeconfig_with_ca_data_and_token(tls_server: Any) -> None:
    assert works(tls_server.kubeconfig)


def test_relative_ca_file_and_token_file(tls_server: Any, tmp_path: Path) -> None:
    conf_dir = tmp_path / "conf"
    (conf_dir / "certs").mkdir(parents=True)
    (conf_dir / "certs" / "ca.crt").write_bytes(Path(tls_server.ca_file).read_bytes())
    (conf_dir / "token").write_text(tls_server.token + "\n")
    path = write(
        conf_dir / "config",
        kubeconfig(tls_server.url, {"tokenFile": "token"}, {"certificate-authority": "certs/ca.crt"}),
    )
    # relative references resolve against the kubeconfig's directory, not the working directory
    assert Path.cwd() != conf_dir
    assert works(path)


def test_insecure_skip_tls_verify(tls_server: Any, tmp_path: Path) -> None:
    path = write(
        tmp_path / "config",
        kubeconfig(tls_server.url, {"token": tls_server.token}, {"insecure-skip-tls-verify": True}),
    )
    assert works(path)


def test_unverifiable_server_is_a_connection_error(tls_server: Any, tmp_path: Path) -> None:
    path = write(tmp_path / "config", kubeconfig(tls_server.url, {"token": tls_server.token}))
    c = HTTPClient.from_kubeconfig(path)
    try:
        with pytest.raises(ConnectionFailed) as err:
            c.list(NAMESPACES)
        assert err.value.code == 0 and "CERTIFICATE_VERIFY_FAILED" in err.value.message
    finally:
        c.close()


def test_wrong_token_is_unauthorized(tls_server: Any, tmp_path: Path) -> None:
    path = write(
        tmp_path / "config",
        kubeconfig(
            tls_server.url, {"token": "not-the-token"}, {"certificate-authority-data": _ca_data(tls_server)}
        ),
    )
    c = HTTPClient.from_kubeconfig(path)
    try:
        with pytest.raises(APIError) as err:
            c.list(NAMESPACES)
        assert err.value.code == 401
    finally:
        c.close()


def test_exec_credential_plugin(tls_server: Any, tmp_path: Path) -> None:
    plugin = tmp_path / "credential-plugin"
    plugin.write_text(
        f"#!{sys.executable}\n"
        "import json, os\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1beta1', 'kind': 'ExecCredential',\n"
        "                  'status': {'token': os.environ['PLUGIN_TOKEN']}}))\n"
    )
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": str(plugin),
            "env": [{"name": "PLUGIN_TOKEN", "value": tls_server.token}],
        }
    }
    path = write(
        tmp_path / "config",
        kubeconfig(tls_server.url, user, {"certificate-authority-data": _ca_data(tls_server)}),
    )
    assert works(path)


def _self_signed() -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pykueue-test-client")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_client_certificate_data_and_files(tls_server: Any, tmp_path: Path) -> None:
    cert, key = _self_signed()
    ca = {"certificate-authority-data": _ca_data(tls_server)}
    inline = {"token": tls_server.token, "client-certificate-data": b64(cert), "client-key-data": b64(key)}
    assert works(write(tmp_path / "inline", kubeconfig(tls_server.url, inline, ca)))

    (tmp_path / "client.crt").write_bytes(cert)
    (tmp_path / "client.key").write_bytes(key)
    files = {"token": tls_server.token, "client-certificate": "client.crt", "client-key": "client.key"}
    assert works(write(tmp_path / "files", kubeconfig(tls_server.url, files, ca)))

    broken = {**inline, "client-key-data": b64(b"not a key")}
    with pytest.raises(KubeconfigError):
        HTTPClient.from_kubeconfig(write(tmp_path / "broken", kubeconfig(tls_server.url, broken, ca)))


def test_unsupported_or_contradictory_settings_are_clear_errors(tmp_path: Path) -> None:
    provider = kubeconfig("https://127.0.0.1:1", {"auth-provider": {"name": "gcp"}})
    with pytest.raises(KubeconfigError, match="auth-provider"):
        HTTPClient.from_kubeconfig(write(tmp_path / "provider", provider))
    both = kubeconfig(
        "https://127.0.0.1:1",
        cluster={
            "insecure-skip-tls-verify": True,
            "certificate-authority-data": base64.b64encode(b"x").decode(),
        },
    )
    with pytest.raises(KubeconfigError, match="insecure"):
        HTTPClient.from_kubeconfig(write(tmp_path / "both", both))


# -- choosing the file and the context ------------------------------------------------------------


@pytest.fixture
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME in a temporary directory and no KUBECONFIG: the default locations are ours."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    return home


def test_default_location_is_home_kube_config(server: Any, isolated_env: Path) -> None:
    with pytest.raises(KubeconfigError, match="no kubeconfig found"):
        HTTPClient.from_kubeconfig(None)
    write(isolated_env / ".kube" / "config", yaml.safe_load(Path(server.kubeconfig).read_text()))
    assert works(None)


def test_kubeconfig_env_list_merges_like_kubectl(
    server: Any, isolated_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead = "http://127.0.0.1:9"  # discard port: nothing listens there
    # file 1: current-context "real", and a "dead" cluster that shadows file 2's same-named entry
    first = kubeconfig(dead, _creds(server)[0], name="dead", current="real")
    first["contexts"].append({"name": "real", "context": {"cluster": "real", "user": "dead"}})
    # file 2: the real server under "real", and a "dead" cluster entry that must lose to file 1's
    second = kubeconfig(server.url, *_creds(server), name="real", current="dead")
    second["clusters"].append({"name": "dead", "cluster": {"server": server.url, **_creds(server)[1]}})
    files = [tmp_path / "missing", write(tmp_path / "one", first), write(tmp_path / "two", second)]
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(str(f) for f in files))

    conn = load_connection(None)
    assert conn.context_name == "real" and conn.server == server.url
    assert works(None)
    assert load_connection(None, "dead").server == dead
    c = HTTPClient.from_kubeconfig(None, "dead")
    try:
        with pytest.raises(ConnectionFailed):
            c.list(NAMESPACES)
    finally:
        c.close()


def test_context_namespace_and_selection_errors(server: Any, tmp_path: Path) -> None:
    path = write(tmp_path / "config", kubeconfig(server.url, *_creds(server), namespace="team-a"))
    c = HTTPClient.from_kubeconfig(path)
    assert c.namespace == "team-a"
    c.close()
    with pytest.raises(KubeconfigError, match="nope"):
        HTTPClient.from_kubeconfig(path, "nope")
    with pytest.raises(KubeconfigError, match="not found"):
        HTTPClient.from_kubeconfig(tmp_path / "does-not-exist")
    no_current = write(tmp_path / "no-current", kubeconfig(server.url, *_creds(server), current=None))
    with pytest.raises(KubeconfigError, match="context"):
        HTTPClient.from_kubeconfig(no_current)
    assert works(no_current, "test")


def test_refused_connection_is_api_error_code_zero(tmp_path: Path, start: Starter) -> None:
    srv = start()
    path = Path(srv.kubeconfig)
    assert works(path)
    srv.stop()
    c = HTTPClient.from_kubeconfig(path)
    try:
        with pytest.raises(ConnectionFailed) as err:
            c.get(NAMESPACES, "default")
        assert isinstance(err.value, APIError) and err.value.code == 0
        with pytest.raises(ConnectionFailed):
            c.watch(NAMESPACES, "1")
    finally:
        c.close()
