"""Who gets in and how long anyone is held: the real ``pykueue serve`` against real clients.

The browser attack of issue 10 (a web page's no-cors ``fetch`` creating a Job), DNS rebinding,
missing or read-only credentials, bad generateNames through kubectl, and clients that connect and
send nothing, or send a request a byte at a time.
"""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from conftest import ServerProcess, start_server, wait_for
from kubernetes import client, config, watch

G, V = "kueue.x-k8s.io", "v1beta2"
RF = f"/apis/{G}/{V}/resourceflavors"
JOBS = "/apis/batch/v1/namespaces/default/jobs"
JOB = json.dumps({
    "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "from-a-web-page"},
    "spec": {"template": {"spec": {"restartPolicy": "Never",
                                   "containers": [{"name": "c", "image": "x", "command": ["touch", "/tmp/pwned"]}]}}},
})  # fmt: skip


def _names(srv: ServerProcess, path: str) -> set[str]:
    r = srv.http.get(srv.url + path, timeout=10)
    assert r.status_code == 200, r.text
    return {i["metadata"]["name"] for i in r.json()["items"]}


# -- the browser: no-cors requests, foreign Origin, DNS rebinding ------------------------------------


@pytest.mark.parametrize(
    "content_type", ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data"]
)
def test_browser_no_cors_post_is_415_even_with_credentials(server: ServerProcess, content_type: str) -> None:
    # The Content-Types a no-cors fetch may send (besides none: see the insecure-loopback test).
    r = server.http.post(server.url + JOBS, data=JOB.encode(), headers={"Content-Type": content_type}, timeout=10)
    assert r.status_code == 415, r.text
    assert r.json() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "the body of the request was in an unknown format - accepted media types include: "
                   "application/json, application/yaml, application/vnd.kubernetes.protobuf",
        "reason": "UnsupportedMediaType", "code": 415,
    }  # fmt: skip
    assert "from-a-web-page" not in _names(server, JOBS)


def test_foreign_origin_is_refused_and_same_origin_served(server: ServerProcess) -> None:
    for origin in ("http://evil.example", "null", "https://127.0.0.1:1", server.url.replace("https", "http")):
        r = server.http.get(server.url + "/api/v1/namespaces", headers={"Origin": origin}, timeout=10)
        assert r.status_code == 403, (origin, r.text)
        assert r.json()["reason"] == "Forbidden"
        assert r.json()["message"] == f'forbidden: cross-origin request from "{origin}" refused'
        r = server.http.post(server.url + RF, json={"apiVersion": f"{G}/{V}", "kind": "ResourceFlavor",
                             "metadata": {"name": "cross-origin"}}, headers={"Origin": origin}, timeout=10)  # fmt: skip
        assert r.status_code == 403
    assert "cross-origin" not in _names(server, RF)
    same = server.http.get(server.url + "/api/v1/namespaces", headers={"Origin": server.url}, timeout=10)
    assert same.status_code == 200


def test_foreign_host_is_refused(server: ServerProcess) -> None:
    port = server.url.rsplit(":", 1)[1]
    for host in (f"evil.example:{port}", "attacker.test", f"localhost.evil.example:{port}"):
        r = server.http.get(server.url + "/api/v1/namespaces", headers={"Host": host}, timeout=10)
        assert r.status_code == 403, (host, r.text)
        status = r.json()
        assert status["reason"] == "Forbidden" and status["code"] == 403
        assert status["message"].startswith(f'forbidden: Host "{host}" is not an address this server is served on')
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", f"{socket.gethostname()}:{port}"):
        r = server.http.get(server.url + "/api/v1/namespaces", headers={"Host": host}, timeout=10)
        assert r.status_code == 200, (host, r.text)


def test_insecure_loopback_keeps_the_browser_checks(tmp_path: Path) -> None:
    srv = start_server(tmp_path, ["--insecure-loopback"])
    try:
        assert srv.url.startswith("http://127.0.0.1:") and srv.token is None
        assert srv.readonly_kubeconfig is None
        assert "WARNING: --insecure-loopback" in "".join(srv.output)
        assert srv.kubectl("get", "ns", "default", "-o", "name").stdout.strip() == "namespace/default"
        s = requests.Session()
        r = s.post(srv.url + JOBS, data=JOB.encode(), timeout=10)  # the Blob body: no Content-Type
        assert r.status_code == 415
        assert r.json()["message"].startswith("the body of the request was in an unknown format")
        r = s.post(srv.url + JOBS, data=JOB.encode(), timeout=10,
                   headers={"Content-Type": "application/json", "Origin": "http://evil.example"})  # fmt: skip
        assert r.status_code == 403
        port = srv.url.rsplit(":", 1)[1]
        r = s.get(srv.url + "/api/v1/namespaces", headers={"Host": f"rebound.evil.example:{port}"}, timeout=10)
        assert r.status_code == 403
        assert "from-a-web-page" not in {i["metadata"]["name"] for i in s.get(srv.url + JOBS).json()["items"]}
    finally:
        srv.stop()


def test_insecure_loopback_is_refused_on_other_addresses(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "pykueue", "serve", "--insecure-loopback", "--host", "0.0.0.0",
           "--port", "0", "--data-dir", str(tmp_path / "data")]  # fmt: skip
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "--insecure-loopback serves without authentication and is refused for --host 0.0.0.0" in result.stdout


# -- credentials --------------------------------------------------------------------------------------


def test_body_without_content_type_is_json_only_with_a_token(server: ServerProcess) -> None:
    # kube-apiserver reads it as JSON (the official Python client relies on that); a browser
    # cannot send a token, and without one the request is 401 before its body is looked at.
    flavor = {"apiVersion": f"{G}/{V}", "kind": "ResourceFlavor", "metadata": {"name": "no-content-type"}}
    anonymous = requests.post(server.url + RF, data=json.dumps(flavor), verify=server.verify(), timeout=10)
    assert anonymous.status_code == 401
    r = server.http.post(server.url + RF, data=json.dumps(flavor), timeout=10)
    assert r.status_code == 201, r.text
    assert "no-content-type" in _names(server, RF)


def test_loopback_requires_credentials(server: ServerProcess) -> None:
    assert server.url.startswith("https://127.0.0.1:") and server.token and server.ca_file
    anonymous = requests.Session()
    anonymous.trust_env = False
    anonymous.verify = str(server.ca_file)
    unauthorized = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "Unauthorized", "reason": "Unauthorized", "code": 401}  # fmt: skip
    for method, path in (("GET", "/api/v1/namespaces"), ("POST", JOBS), ("GET", "/apis"), ("GET", "/openapi/v3"),
                         ("GET", f"{RF}?watch=true")):  # fmt: skip
        r = anonymous.request(method, server.url + path, data=JOB, headers={"Content-Type": "application/json"})
        assert r.status_code == 401 and r.json() == unauthorized, (method, path)
        assert r.headers.get("connection") == "close"
    r = anonymous.get(server.url + "/api/v1/namespaces", headers={"Authorization": "Bearer " + "x" * 43})
    assert r.status_code == 401
    assert anonymous.get(server.url + "/healthz").text == "ok"  # public, as system:public-info-viewer
    with pytest.raises(requests.exceptions.SSLError):  # the CA is the server's own
        s = requests.Session()
        s.trust_env = False
        s.get(server.url + "/healthz", timeout=10)
    assert (server.data_dir / "token").stat().st_mode & 0o777 == 0o600
    assert (server.data_dir / "token-readonly").stat().st_mode & 0o777 == 0o600
    assert (server.data_dir / "kubeconfig-readonly").stat().st_mode & 0o777 == 0o600
    assert server.kubeconfig.stat().st_mode & 0o777 == 0o600


def test_read_only_credential_reads_and_watches_but_cannot_write(server: ServerProcess) -> None:
    assert server.readonly_kubeconfig is not None
    ro = ["--kubeconfig", str(server.readonly_kubeconfig)]
    server.kubectl("create", "namespace", "ro-team")
    assert "ro-team" in server.kubectl(*ro, "get", "namespaces", "-o", "name").stdout
    result = server.kubectl(*ro, "create", "namespace", "ro-other", check=False)
    assert result.returncode != 0
    assert result.stderr.strip() == (
        'Error from server (Forbidden): namespaces is forbidden: User "pykueue-readonly" cannot create '
        'resource "namespaces" in API group "" at the cluster scope'
    )
    result = server.kubectl(*ro, "delete", "namespace", "ro-team", check=False)
    assert 'namespaces "ro-team" is forbidden: User "pykueue-readonly" cannot delete resource "namespaces" ' \
           'in API group "" in the namespace "ro-team"' in result.stderr  # fmt: skip
    session = server.session(readonly=True)
    r = session.patch(server.url + f"/apis/{G}/{V}/namespaces/ro-team/localqueues/q/status", data="{}",
                      headers={"Content-Type": "application/merge-patch+json"})  # fmt: skip
    assert r.status_code == 403
    assert r.json() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'localqueues.kueue.x-k8s.io "q" is forbidden: User "pykueue-readonly" cannot patch resource '
                   '"localqueues/status" in API group "kueue.x-k8s.io" in the namespace "ro-team"',
        "reason": "Forbidden", "details": {"name": "q", "group": "kueue.x-k8s.io", "kind": "localqueues"},
        "code": 403,
    }  # fmt: skip
    r = session.delete(server.url + RF)
    assert r.status_code == 403 and "cannot deletecollection resource" in r.json()["message"]
    assert "ro-team" in server.kubectl("get", "namespaces", "-o", "name").stdout
    # watch: the official client with the read-only kubeconfig sees a change the admin makes
    api = client.CoreV1Api(config.new_client_from_config(config_file=str(server.readonly_kubeconfig)))
    rv = api.list_namespace().metadata.resource_version
    server.kubectl("label", "namespace", "ro-team", "seen=yes")
    events = [
        (e["type"], e["object"].metadata.name)
        for e in watch.Watch().stream(api.list_namespace, resource_version=rv, timeout_seconds=2)
    ]
    assert ("MODIFIED", "ro-team") in events


def test_bad_generate_name_is_422_through_kubectl(server: ServerProcess) -> None:
    for manifest, kind in (
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"generateName": "Bad Name.."}},
        "Namespace",
    ), (
        {"apiVersion": f"{G}/{V}", "kind": "ClusterQueue", "metadata": {"generateName": "a..b"}, "spec": {}},
        "ClusterQueue",
    ):
        before = server.kubectl("get", kind.lower(), "-o", "name").stdout
        result = server.kubectl("create", "-f", "-", stdin=json.dumps(manifest), check=False)
        assert result.returncode != 0
        shown = json.dumps(manifest["metadata"]["generateName"])  # type: ignore[index]
        assert f"metadata.generateName: Invalid value: {shown}: a lowercase RFC 1123" in result.stderr
        assert "is invalid" in result.stderr
        assert server.kubectl("get", kind.lower(), "-o", "name").stdout == before


def test_malformed_json_is_400_over_http(server: ServerProcess) -> None:
    for body in (b'{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"ResourceFlavor","metadata":{"name":"\xff"}}',
                 b'{"a":' * 1000 + b"1" + b"}" * 1000, b"[" * 1000 + b"]" * 1000):  # fmt: skip
        r = server.http.post(server.url + RF, data=body, headers={"Content-Type": "application/json"}, timeout=10)
        assert r.status_code == 400, r.text
        assert r.json()["reason"] == "BadRequest" and r.json()["message"].startswith("error decoding JSON: ")


# -- connections: timeouts and the cap -------------------------------------------------------------------


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server with short timeouts: headers 1.5 s, body 1.5 s, keep-alive idle 3 s."""
    srv = start_server(tmp_path_factory.mktemp("quick"),
                       ["--header-timeout", "1.5", "--body-timeout", "1.5", "--idle-timeout", "3"])  # fmt: skip
    yield srv
    srv.stop()


def _tls(srv: ServerProcess) -> ssl.SSLSocket:
    host, port = srv.url.split("://", 1)[1].rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=str(srv.ca_file))
    sock = socket.create_connection((host, int(port)), timeout=30)
    return ctx.wrap_socket(sock, server_hostname=host)


def _closed_after(sock: ssl.SSLSocket, limit: float, since: float | None = None) -> float:
    """Seconds until the server closes ``sock`` (reading and discarding anything it sends), from
    ``since`` (a clock read before the step that starts the server's timeout: read after it, a
    pause of the busy machine in between would come off the measured time)."""
    started = time.monotonic() if since is None else since
    sock.settimeout(limit)
    try:
        while sock.recv(4096):
            pass
    except (ConnectionResetError, ssl.SSLError):
        pass
    except TimeoutError:
        raise AssertionError(f"connection still open after {limit}s") from None
    return time.monotonic() - started


def _request(srv: ServerProcess, path: str = "/api/v1/namespaces/default") -> bytes:
    host = srv.url.split("://", 1)[1]
    return (f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {srv.token}\r\n\r\n").encode()


def test_silent_client_is_dropped_after_the_header_timeout(quick: ServerProcess) -> None:
    since = time.monotonic()
    sock = _tls(quick)  # handshake done, then nothing: an unauthenticated client held for nothing
    try:
        assert 1.0 < _closed_after(sock, 20, since) < 10
    finally:
        sock.close()


def test_client_that_never_completes_the_tls_handshake_is_dropped(quick: ServerProcess) -> None:
    host, port = quick.url.split("://", 1)[1].rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=30)
    try:
        sock.sendall(b"\x16\x03\x01")  # the start of a ClientHello, then nothing
        started = time.monotonic()
        sock.settimeout(20)
        try:
            while sock.recv(4096):
                pass
        except ConnectionResetError:
            pass
        assert time.monotonic() - started < 10
    finally:
        sock.close()


def test_idle_keep_alive_connection_is_closed_after_the_idle_timeout(quick: ServerProcess) -> None:
    sock = _tls(quick)
    try:
        sock.sendall(_request(quick))
        sock.settimeout(10)
        first = sock.recv(65536)
        assert first.startswith(b"HTTP/1.1 200 "), first[:100]
        # Kept alive past the header timeout (1.5 s): idle between requests is the longer timeout.
        time.sleep(2)
        since = time.monotonic()
        sock.sendall(_request(quick))
        assert sock.recv(65536).startswith(b"HTTP/1.1 200 ")
        waited = _closed_after(sock, 20, since)
        assert 2.0 < waited < 12, waited
    finally:
        sock.close()


def test_slowloris_header_sender_is_dropped(quick: ServerProcess) -> None:
    sock = _tls(quick)
    try:
        request = _request(quick)
        started = time.monotonic()
        sent = 0
        with pytest.raises((BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError)):
            for i in range(len(request) - 2):  # never the final CRLF
                sock.sendall(request[i : i + 1])
                sent += 1
                time.sleep(0.25)
                if time.monotonic() - started > 3:  # the server has had its chance to close
                    sock.settimeout(5)
                    if sock.recv(1) == b"":
                        raise ConnectionResetError("closed by the server")
        assert time.monotonic() - started < 10 and sent < len(request) - 2
    finally:
        sock.close()
    # the server still serves everyone else
    assert quick.http.get(quick.url + "/api/v1/namespaces/default", timeout=10).status_code == 200


def test_slow_body_sender_is_dropped(quick: ServerProcess) -> None:
    sock = _tls(quick)
    try:
        host = quick.url.split("://", 1)[1]
        sock.sendall(
            (f"POST {RF} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {quick.token}\r\n"
             "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{").encode()
        )  # fmt: skip
        assert _closed_after(sock, 20) < 10
    finally:
        sock.close()


def test_connection_cap_refuses_with_503_and_a_log_line(tmp_path: Path) -> None:
    srv = start_server(tmp_path, ["--max-connections", "4", "--header-timeout", "60"])
    held: list[Any] = []
    try:
        held = [_tls(srv) for _ in range(4)]
        extra = _tls(srv)
        extra.settimeout(10)
        answer = b""
        try:
            while chunk := extra.recv(4096):
                answer += chunk
        except (ConnectionResetError, ssl.SSLError):
            pass
        extra.close()
        assert answer.startswith(b"HTTP/1.1 503 Service Unavailable\r\n"), answer[:200]
        assert b"retry-after: 1" in answer
        status = json.loads(answer.split(b"\r\n\r\n", 1)[1])
        assert status["code"] == 503 and status["reason"] == "ServiceUnavailable"
        wait_for(lambda: "connection limit reached: 4 connections open" in srv.log(), timeout=10)
        for sock in held:
            sock.close()
        held = []
        wait_for(lambda: srv.http.get(srv.url + "/readyz", timeout=10).status_code == 200, timeout=10)
        assert "connections: at most 4" in "".join(srv.output)
    finally:
        for sock in held:
            sock.close()
        srv.stop()
