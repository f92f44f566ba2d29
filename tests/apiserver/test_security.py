"""RequestGuard: Host and Origin rules, tokens, and the read-only user's verbs and 403 texts."""

from __future__ import annotations

import urllib.parse

import pytest

from pykueue.apiserver.security import ADMIN, READONLY, RequestGuard, request_attributes
from pykueue.kube.status import StatusError

GUARD = RequestGuard({"admin-token": ADMIN, "ro-token": READONLY}, ["localhost", "builder"])


def _check(method: str, path: str, token: str | None = "admin-token", query: bytes = b"", **headers: str) -> object:
    hdrs = {"host": "127.0.0.1:6443", **{k.replace("_", "-"): v for k, v in headers.items()}}
    if token:
        hdrs["authorization"] = f"Bearer {token}"
    return GUARD.check(method, path, "https", hdrs, query)


@pytest.mark.parametrize("host", ["127.0.0.1:6443", "localhost", "LOCALHOST:1", "localhost.:6443", "[::1]:6443",
                                  "10.1.2.3", "[fe80::1]", "builder:6443"])  # fmt: skip
def test_hosts_served(host: str) -> None:
    assert GUARD.host_allowed(host)


@pytest.mark.parametrize("host", ["evil.example", "localhost.evil.example:6443", "127.0.0.1.nip.io", "builder.evil",
                                  "", "[::1"])  # fmt: skip
def test_hosts_refused(host: str) -> None:
    assert not GUARD.host_allowed(host)


def test_origin_must_be_the_servers_own() -> None:
    same = RequestGuard.same_origin
    assert same("https://127.0.0.1:6443", "https", "127.0.0.1:6443")
    assert same("https://localhost", "https", "localhost:443")
    assert not same("http://127.0.0.1:6443", "https", "127.0.0.1:6443")
    assert not same("https://127.0.0.1:6444", "https", "127.0.0.1:6443")
    assert not same("null", "https", "127.0.0.1:6443")
    assert not same("https://127.0.0.1:6443/x", "https", "127.0.0.1:6443")
    assert not same("https://127.0.0.1:6443", "https", None)
    with pytest.raises(StatusError) as err:
        _check("GET", "/api/v1/namespaces", origin="https://evil.example")
    assert err.value.code == 403


def test_tokens() -> None:
    assert _check("GET", "/api/v1/namespaces") is ADMIN
    assert _check("GET", "/api/v1/namespaces", token="ro-token") is READONLY
    for token in (None, "admin-toke", "admin-token2", "ro-token-"):
        with pytest.raises(StatusError) as err:
            _check("GET", "/api/v1/namespaces", token=token)
        assert err.value.code == 401 and err.value.status()["message"] == "Unauthorized"
    assert _check("GET", "/healthz", token=None) is None
    with pytest.raises(StatusError):
        _check("GET", "/healthz", token="wrong")
    with pytest.raises(StatusError):
        _check("POST", "/healthz", token=None)


@pytest.mark.parametrize(
    ("method", "path", "query", "verb"),
    [
        ("GET", "/api/v1/namespaces", b"", "list"),
        ("GET", "/api/v1/namespaces/default", b"", "get"),
        ("HEAD", "/api/v1/namespaces/default", b"", "get"),
        ("GET", "/api/v1/namespaces", b"watch=true", "watch"),
        ("GET", "/apis/kueue.x-k8s.io/v1beta2/watch/clusterqueues", b"", "watch"),
        ("GET", "/apis/kueue.x-k8s.io/v1beta2/namespaces/a/workloads/w", b"watch=1", "watch"),
        ("GET", "/apis", b"", "get"),
        ("GET", "/openapi/v3/apis/kueue.x-k8s.io/v1beta2", b"", "get"),
    ],
)
def test_read_only_user_reads(method: str, path: str, query: bytes, verb: str) -> None:
    assert _check(method, path, token="ro-token", query=query) is READONLY
    assert request_attributes(method, path, urllib.parse.parse_qs(query.decode())).verb == verb


@pytest.mark.parametrize(
    ("method", "path", "message"),
    [
        ("POST", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues",
         'clusterqueues.kueue.x-k8s.io is forbidden: User "pykueue-readonly" cannot create resource "clusterqueues" '
         'in API group "kueue.x-k8s.io" at the cluster scope'),
        ("DELETE", "/apis/kueue.x-k8s.io/v1beta2/namespaces/team/workloads/w1",
         'workloads.kueue.x-k8s.io "w1" is forbidden: User "pykueue-readonly" cannot delete resource "workloads" '
         'in API group "kueue.x-k8s.io" in the namespace "team"'),
        ("DELETE", "/apis/kueue.x-k8s.io/v1beta2/namespaces/team/workloads",
         'workloads.kueue.x-k8s.io is forbidden: User "pykueue-readonly" cannot deletecollection resource '
         '"workloads" in API group "kueue.x-k8s.io" in the namespace "team"'),
        ("PUT", "/api/v1/namespaces/team/finalize",
         'namespaces "team" is forbidden: User "pykueue-readonly" cannot update resource "namespaces/finalize" '
         'in API group "" in the namespace "team"'),
        ("PATCH", "/apis/batch/v1/namespaces/team/jobs/j/status",
         'jobs.batch "j" is forbidden: User "pykueue-readonly" cannot patch resource "jobs/status" '
         'in API group "batch" in the namespace "team"'),
        ("POST", "/apis", 'forbidden: User "pykueue-readonly" cannot post path "/apis"'),
    ],
)  # fmt: skip
def test_read_only_user_cannot_write(method: str, path: str, message: str) -> None:
    with pytest.raises(StatusError) as err:
        _check(method, path, token="ro-token")
    status = err.value.status()
    assert err.value.code == 403 and status["reason"] == "Forbidden"
    assert status["message"] == message
