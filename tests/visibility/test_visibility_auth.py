"""Pieces of the visibility server's delegated auth that need no cluster (tests/cluster covers the
whole against a real kube-apiserver): RequestInfo parsing, the Forbidden Status, the ConfigMap."""

from __future__ import annotations

import json

from pykueue.visibility.auth import ANONYMOUS, UserInfo, config_from_configmap, forbidden_status, request_info

G = "visibility.kueue.x-k8s.io"


def test_request_info_as_request_info_factory() -> None:
    cq = request_info("GET", f"/apis/{G}/v1beta1/clusterqueues/cq/pendingworkloads", {})
    assert (cq.resource_request, cq.verb, cq.api_group, cq.resource, cq.name, cq.subresource, cq.namespace) == (
        True, "get", G, "clusterqueues", "cq", "pendingworkloads", "",
    )  # fmt: skip
    lq = request_info("GET", f"/apis/{G}/v1beta2/namespaces/ns/localqueues/lq/pendingworkloads", {})
    assert (lq.namespace, lq.resource, lq.name, lq.subresource, lq.api_version) == ("ns", "localqueues", "lq", "pendingworkloads", "v1beta2")
    assert request_info("GET", f"/apis/{G}/v1beta1/clusterqueues", {}).verb == "list"
    assert request_info("GET", f"/apis/{G}/v1beta1/clusterqueues", {"watch": ["true"]}).verb == "watch"
    assert request_info("DELETE", f"/apis/{G}/v1beta1/clusterqueues", {}).verb == "deletecollection"
    assert request_info("POST", f"/apis/{G}/v1beta1/clusterqueues/x", {}).verb == "create"
    for path in ("/apis", f"/apis/{G}", f"/apis/{G}/v1beta1", "/readyz"):
        info = request_info("GET", path, {})
        assert not info.resource_request and info.verb == "get" and info.path == path


def test_forbidden_status_messages() -> None:
    info = request_info("GET", f"/apis/{G}/v1beta1/namespaces/ns/localqueues/lq/pendingworkloads", {})
    err = forbidden_status(UserInfo("bob"), info, "")
    assert err.code == 403 and err.reason == "Forbidden"
    assert err.message == (
        f'localqueues.{G} "lq" is forbidden: User "bob" cannot get resource "localqueues/pendingworkloads" '
        f'in API group "{G}" in the namespace "ns"'
    )
    assert err.status()["details"] == {"name": "lq", "group": G, "kind": "localqueues"}
    path = forbidden_status(ANONYMOUS, request_info("GET", "/apis", {}), "no RBAC policy matched")
    assert path.message == 'forbidden: User "system:anonymous" cannot get path "/apis": no RBAC policy matched'
    assert "name" not in path.status()["details"]


def test_configmap_without_request_header_keys_means_no_front_proxy() -> None:
    assert config_from_configmap({}).request_header is None
    cfg = config_from_configmap(
        {
            "requestheader-client-ca-file": "",
            "requestheader-allowed-names": json.dumps(["front-proxy-client"]),
        }
    )
    assert cfg.request_header is None and cfg.ca_pem == ""
