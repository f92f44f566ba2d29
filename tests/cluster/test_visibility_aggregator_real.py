"""The visibility API behind a real kube-apiserver's aggregator (``config/visibility``).

kube-apiserver runs with the front-proxy flags (``--requestheader-*``, ``--proxy-client-*``), so
it proxies ``/apis/visibility.kueue.x-k8s.io/...`` to ``pykueue controller``'s visibility port
with the front-proxy client certificate and ``X-Remote-User``/``X-Remote-Group``. The shipped
APIServices, viewer roles and Service are applied, adapted only where a test machine differs from a
cluster: there is no kube-proxy or kubelet, so the Service is an ``ExternalName`` for ``localhost``
(the aggregator resolves such a Service to ``https://<externalName>:<APIService port>``) and the
APIServices carry the port and the ``caBundle`` of the serving certificate made here.
"""

from __future__ import annotations

import datetime
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import support
import yaml
from realcluster import ROOT, start_real_kueue

VISIBILITY = ROOT / "config" / "visibility"
GROUP = "visibility.kueue.x-k8s.io"
SERVICE_DNS = "kueue-visibility-server.kueue-system.svc"

QUEUES = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: vis-flavor
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: vis-cq
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: vis-flavor
      resources:
      - name: cpu
        nominalQuota: 1
      - name: memory
        nominalQuota: 1Gi
"""

VIEWER_BINDING = """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: vis-viewer
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kueue-pending-workloads-cq-viewer-role}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: viewer}
"""


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _ca(pki: Path, name: str) -> None:
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.crt",
             "-days", "2", "-subj", f"/CN={name}", cwd=pki)  # fmt: skip


def _signed(pki: Path, ca: str, name: str, subject: str, ext: str) -> None:
    (pki / f"{name}.ext").write_text(ext)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=pki)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key", "-CAcreateserial",
             "-out", f"{name}.crt", "-days", "2", "-extfile", f"{name}.ext", cwd=pki)  # fmt: skip


def make_pki(pki: Path) -> None:
    """The front proxy's CA and client certificate; the visibility server's CA and certificate."""
    pki.mkdir()
    _ca(pki, "front-proxy-ca")
    _signed(pki, "front-proxy-ca", "front-proxy-client", "/CN=front-proxy-client",
            "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n")  # fmt: skip
    _ca(pki, "visibility-ca")
    serving = pki / "serving"
    serving.mkdir()
    _signed(pki, "visibility-ca", "serving/tls", "/CN=kueue-visibility-server",
            "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
            f"subjectAltName=DNS:{SERVICE_DNS},DNS:localhost,IP:127.0.0.1\n")  # fmt: skip


def front_proxy_flags(pki: Path) -> str:
    """kube-apiserver's aggregator flags (as kubeadm sets them)."""
    return " ".join(
        [
            f"--requestheader-client-ca-file={pki / 'front-proxy-ca.crt'}",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={pki / 'front-proxy-client.crt'}",
            f"--proxy-client-key-file={pki / 'front-proxy-client.key'}",
        ]
    )


def adapted_manifests(port: int, ca_bundle: bytes) -> str:
    """config/visibility's APIServices and Service for a cluster without kube-proxy (see above)."""
    import base64

    docs: list[dict[str, Any]] = []
    for name in ("apiservice_v1beta1.yaml", "apiservice_v1beta2.yaml"):
        doc = yaml.safe_load((VISIBILITY / name).read_text())
        spec = doc["spec"]
        spec.pop("insecureSkipTLSVerify", None)
        spec["caBundle"] = base64.b64encode(ca_bundle).decode()
        spec["service"]["port"] = port
        docs.append(doc)
    service = yaml.safe_load((VISIBILITY / "service.yaml").read_text())
    assert service["metadata"]["name"] == "kueue-visibility-server"
    service["spec"] = {"type": "ExternalName", "externalName": "localhost", "ports": [{"name": "https", "port": port}]}
    docs.append(service)
    return "---\n".join(yaml.safe_dump(d) for d in docs)


@pytest.fixture(scope="module")
def aggregated(tmp_path_factory: pytest.TempPathFactory) -> Any:
    base = tmp_path_factory.mktemp("aggregator")
    pki = base / "pki"
    make_pki(pki)
    # Port 0: the controller binds a free port and names it (a port found free here and closed
    # again could be taken by another socket, an outgoing connection's, before the controller binds).
    k = start_real_kueue(
        base,
        [
            "--visibility-bind-address", "127.0.0.1", "--visibility-port", "0",
            "--visibility-cert-dir", str(pki / "serving"),
        ],
        run_jobs=False,
        extra_users=("viewer", "stranger"),
        apiserver_flags=front_proxy_flags(pki),
    )  # fmt: skip
    try:
        served = support.wait_for(
            lambda: re.search(r"visibility API on https://127\.0\.0\.1:(\d+)", k.controller_log()),
            timeout=60,
            what="the visibility API's port in the controller's log",
        )
        port = int(served.group(1))
        k.visibility = (port, pki)  # type: ignore[attr-defined]
        k.kubectl("apply", "-f", str(VISIBILITY / "pending_workloads_viewer_roles.yaml"))
        k.kubectl("apply", "-f", "-", stdin=VIEWER_BINDING)
        k.kubectl("apply", "-f", "-", stdin=adapted_manifests(port, (pki / "visibility-ca.crt").read_bytes()))
        for version in ("v1beta1", "v1beta2"):
            k.kubectl("wait", "--for=condition=Available", "--timeout=90s", f"apiservice/{version}.{GROUP}")
        yield k
    except BaseException:
        print(k.server.log()[-3000:])
        print(k.controller_log()[-3000:])
        raise
    finally:
        k.stop()


def raw(k: Any, path: str, context: str | None = None) -> subprocess.CompletedProcess[str]:
    args = ["get", "--raw", path]
    if context is not None:
        args = ["--context", context, *args]
    result: subprocess.CompletedProcess[str] = k.kubectl(*args, check=False)
    return result


def test_pending_workloads_through_the_real_aggregator(aggregated: Any) -> None:
    k = aggregated
    k.kubectl("apply", "-f", "-", stdin=QUEUES)
    k.kubectl("apply", "-f", "-", stdin=support.local_queue("vis-lq", "vis-cq"))
    k.kubectl("apply", "-f", "-", stdin=support.job("vis-0", "vis-lq", command="sleep 600"))
    support.wait_for(
        lambda: any(support.is_true(w, "QuotaReserved") for w in k.items("workloads")), timeout=60, what="vis-0 admitted"
    )
    # Pending order is by priority, then creation time; creationTimestamp has one-second
    # resolution, so vis-2 is created in a later second than vis-1's Workload.
    k.kubectl("apply", "-f", "-", stdin=support.job("vis-1", "vis-lq", command="sleep 600"))
    first = support.wait_for(
        lambda: next((w for w in k.items("workloads") if w["metadata"]["ownerReferences"][0]["name"] == "vis-1"), None),
        timeout=60,
        what="vis-1's Workload",
    )
    created = datetime.datetime.fromisoformat(first["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
    support.wait_for(
        lambda: datetime.datetime.now(datetime.UTC) >= created + datetime.timedelta(seconds=1.05),
        timeout=5,
        what="the next second",
    )
    k.kubectl("apply", "-f", "-", stdin=support.job("vis-2", "vis-lq", command="sleep 600"))
    # vis-2's Workload is created by the Job controller after the apply returns: read the owners
    # once both pending Workloads exist.
    def owners() -> dict[str, str] | None:
        found = {w["metadata"]["name"]: w["metadata"]["ownerReferences"][0]["name"] for w in k.items("workloads")}
        return found if len(found) == 3 else None

    owner = support.wait_for(owners, timeout=60, what="the three Jobs' Workloads")

    def pending(path: str) -> list[dict[str, Any]] | None:
        result = raw(k, path)
        if result.returncode != 0:
            return None
        items: list[dict[str, Any]] = json.loads(result.stdout)["items"]
        return items if len(items) == 2 else None

    for version in ("v1beta1", "v1beta2"):
        by_cq = support.wait_for(
            lambda v=version: pending(f"/apis/{GROUP}/{v}/clusterqueues/vis-cq/pendingworkloads"),  # type: ignore[misc]
            timeout=60,
            what=f"{version} clusterqueue pendingworkloads through the aggregator",
        )
        assert [(owner[w["metadata"]["name"]], w["positionInClusterQueue"], w["positionInLocalQueue"]) for w in by_cq] == [
            ("vis-1", 0, 0),
            ("vis-2", 1, 1),
        ]
        assert all(w["localQueueName"] == "vis-lq" and w["metadata"]["namespace"] == "default" for w in by_cq)
        by_lq = pending(f"/apis/{GROUP}/{version}/namespaces/default/localqueues/vis-lq/pendingworkloads")
        assert by_lq is not None
        assert [(owner[w["metadata"]["name"]], w["positionInLocalQueue"]) for w in by_lq] == [("vis-1", 0), ("vis-2", 1)]
        limited = json.loads(raw(k, f"/apis/{GROUP}/{version}/clusterqueues/vis-cq/pendingworkloads?offset=1").stdout)
        assert [owner[w["metadata"]["name"]] for w in limited["items"]] == ["vis-2"]

    # A ClusterQueue the server does not know: upstream's 404 Status, carried back by the aggregator.
    missing = raw(k, f"/apis/{GROUP}/v1beta1/clusterqueues/nope/pendingworkloads")
    assert missing.returncode != 0
    assert "NotFound" in missing.stderr or "not found" in missing.stderr, missing.stderr


def test_discovery_through_the_aggregator(aggregated: Any) -> None:
    k = aggregated
    versions = k.kubectl("api-versions").stdout.split()
    assert f"{GROUP}/v1beta1" in versions and f"{GROUP}/v1beta2" in versions
    listing = json.loads(raw(k, f"/apis/{GROUP}/v1beta2").stdout)
    assert [(r["name"], r["verbs"]) for r in listing["resources"]] == [
        ("clusterqueues", []),
        ("clusterqueues/pendingworkloads", ["get"]),
        ("localqueues", []),
        ("localqueues/pendingworkloads", ["get"]),
    ]
    groups = json.loads(k.kubectl("get", "--raw", "/apis").stdout)
    assert GROUP in [g["name"] for g in groups["groups"]]
    # kubectl api-resources reads kube-apiserver's aggregated discovery, which now merges the group
    # from the visibility server; kubectl skips the verb-less parents and the subresources, so, as
    # with upstream Kueue on a real cluster, it prints only its header for the group, without error.
    result = k.kubectl("api-resources", "--api-group", GROUP, "-o", "wide", check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND", "VERBS", "CATEGORIES"]
    assert result.stderr == ""


def test_rbac_decides_through_the_aggregator(aggregated: Any) -> None:
    k = aggregated
    k.kubectl("apply", "-f", "-", stdin=QUEUES)
    path = f"/apis/{GROUP}/v1beta1/clusterqueues/vis-cq/pendingworkloads"
    allowed = support.wait_for(lambda: (r := raw(k, path, "user-viewer")).returncode == 0 and r, timeout=60, what="viewer")
    assert json.loads(allowed.stdout)["kind"] == "PendingWorkloadsSummary"
    denied = raw(k, path, "user-stranger")
    assert denied.returncode != 0
    assert "forbidden" in denied.stderr.lower(), denied.stderr
    assert 'User "stranger" cannot get resource "clusterqueues/pendingworkloads"' in denied.stderr, denied.stderr


# --- delegated authentication and authorization on the visibility port itself ----------------------


def _direct(k: Any, path: str, headers: dict[str, str] | None = None, cert: tuple[Path, Path] | None = None) -> tuple[int, Any]:
    """GET straight from the controller's visibility port (not through the aggregator)."""
    import http.client
    import ssl

    port, pki = k.visibility
    context = ssl.create_default_context(cafile=str(pki / "visibility-ca.crt"))
    if cert is not None:
        context.load_cert_chain(str(cert[0]), str(cert[1]))
    conn = http.client.HTTPSConnection("localhost", port, context=context, timeout=30)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        body = response.read()
        try:
            return response.status, json.loads(body)
        except ValueError:
            return response.status, body.decode()
    finally:
        conn.close()


def _token(k: Any, user: str) -> str:
    config = yaml.safe_load(k.server.kubeconfig.read_text())
    return str(next(u["user"]["token"] for u in config["users"] if u["name"] == f"user-{user}"))


def _admin_cert(k: Any, tmp: Path) -> tuple[Path, Path]:
    import base64

    config = yaml.safe_load(k.server.kubeconfig.read_text())
    user = next(u["user"] for u in config["users"] if u["name"] == "admin-cert")
    crt, key = tmp / "admin.crt", tmp / "admin.key"
    crt.write_bytes(base64.b64decode(user["client-certificate-data"]))
    key.write_bytes(base64.b64decode(user["client-key-data"]))
    key.chmod(0o600)
    return crt, key


def test_visibility_port_delegates_authentication_and_authorization(aggregated: Any, tmp_path: Path) -> None:
    k = aggregated
    k.kubectl("apply", "-f", "-", stdin=QUEUES)
    _, pki = k.visibility
    path = f"/apis/{GROUP}/v1beta1/clusterqueues/vis-cq/pendingworkloads"
    front_proxy = (pki / "front-proxy-client.crt", pki / "front-proxy-client.key")

    def refused(user: str, verb: str = "get") -> dict[str, Any]:
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": f'clusterqueues.{GROUP} "vis-cq" is forbidden: User "{user}" cannot {verb} resource '
            f'"clusterqueues/pendingworkloads" in API group "{GROUP}" at the cluster scope',
            "reason": "Forbidden",
            "details": {"name": "vis-cq", "group": GROUP, "kind": "clusterqueues"},
            "code": 403,
        }

    # Anonymous: authenticated as system:anonymous, then refused by the SubjectAccessReview.
    assert _direct(k, path) == (403, refused("system:anonymous"))
    assert _direct(k, "/readyz") == (200, "ok")  # AlwaysAllowPaths
    status, doc = _direct(k, f"/apis/{GROUP}/v1beta1")
    assert status == 403 and doc["message"] == (
        f'forbidden: User "system:anonymous" cannot get path "/apis/{GROUP}/v1beta1"'
    ), doc
    # Bearer tokens: TokenReview, then SubjectAccessReview for that user.
    status, doc = _direct(k, path, {"Authorization": f"Bearer {_token(k, 'viewer')}"})
    assert status == 200 and doc["kind"] == "PendingWorkloadsSummary", doc
    assert _direct(k, path, {"Authorization": f"Bearer {_token(k, 'stranger')}"}) == (403, refused("stranger"))
    status, doc = _direct(k, path, {"Authorization": "Bearer not-a-token"})
    assert (status, doc["reason"], doc["message"]) == (401, "Unauthorized", "Unauthorized")
    # X-Remote-User is believed only from the front proxy's certificate ...
    forged = {"X-Remote-User": "viewer", "X-Remote-Group": "system:masters"}
    assert _direct(k, path, forged) == (403, refused("system:anonymous"))
    assert _direct(k, path, {**forged, "Authorization": f"Bearer {_token(k, 'stranger')}"}) == (403, refused("stranger"))
    # ... which is how the aggregator reaches it:
    status, doc = _direct(k, path, {"X-Remote-User": "viewer"}, cert=front_proxy)
    assert status == 200 and doc["kind"] == "PendingWorkloadsSummary", doc
    assert _direct(k, path, {"X-Remote-User": "stranger"}, cert=front_proxy) == (403, refused("stranger"))
    status, doc = _direct(k, path, {"X-Remote-User": "stranger", "X-Remote-Group": "system:masters"}, cert=front_proxy)
    assert status == 200, doc  # system:masters is always allowed, as upstream's AlwaysAllowGroups
    # A client certificate signed by the cluster's client CA: its CN and O.
    status, doc = _direct(k, path, cert=_admin_cert(k, tmp_path))
    assert status == 200 and doc["kind"] == "PendingWorkloadsSummary", doc
