"""The dashboard's HTTP side without a browser: ``/ui`` on ``pykueue serve`` (public, data-free,
locked down by headers, the API's guard untouched) and ``pykueue dashboard`` (a read-only,
token-guarded, streaming proxy to a cluster reached through a kubeconfig)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from dashboard_support import ROOT, Dashboard, start_dashboard, support

CQ = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: {name}}}
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - name: default-flavor
      resources: [{{name: cpu, nominalQuota: 2}}]
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    srv = support.start_server(tmp_path_factory.mktemp("serve"))
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def dashboard(server: Any) -> Iterator[Dashboard]:
    assert server.readonly_kubeconfig is not None
    dash = start_dashboard(server.readonly_kubeconfig)
    yield dash
    dash.stop()


def anonymous(server: Any) -> requests.Session:
    """A session that trusts the server's CA and sends no token."""
    http = requests.Session()
    http.trust_env = False  # else REQUESTS_CA_BUNDLE would replace the CA
    http.verify = server.verify()
    return http


def test_ui_is_served_without_a_token_with_a_strict_policy(server: Any) -> None:
    http = anonymous(server)
    page = http.get(server.url + "/ui/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert '<script src="app.js"' in page.text
    csp = page.headers["content-security-policy"]
    assert "connect-src 'self'" in csp and "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert page.headers["referrer-policy"] == "no-referrer"
    assert page.headers["x-content-type-options"] == "nosniff"
    assert http.get(server.url + "/ui").status_code == 200
    script = http.get(server.url + "/ui/app.js")
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
    assert http.get(server.url + "/ui/app.css").headers["content-type"].startswith("text/css")
    assert http.get(server.url + "/ui/secrets").status_code == 404
    assert http.post(server.url + "/ui/").status_code == 405
    assert http.head(server.url + "/ui/").content == b""


def test_ui_keeps_the_host_check_and_the_api_keeps_its_guard(server: Any) -> None:
    http = anonymous(server)
    assert http.get(server.url + "/ui/", headers={"Host": "attacker.example"}).status_code == 403
    # What the page reads still needs the token; same-origin reads with it pass the Origin check.
    lists = server.url + "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"
    assert http.get(lists).status_code == 401
    reader = server.session(readonly=True)
    assert reader.get(lists, headers={"Origin": server.url}).status_code == 200
    assert reader.get(lists, headers={"Origin": "https://attacker.example"}).status_code == 403


def test_serve_announces_the_dashboard(server: Any) -> None:
    assert any(line.startswith(f"dashboard: {server.url}/ui/") for line in server.output)


def test_dashboard_proxy_reads_with_its_own_token(server: Any, dashboard: Dashboard) -> None:
    base = dashboard.url.removesuffix("/ui/")
    lists = base + "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"
    server.kubectl("apply", "-f", "-", stdin=CQ.format(name="proxied-cq"))
    auth = {"Authorization": f"Bearer {dashboard.token}"}
    got = requests.get(lists, headers=auth)
    assert got.status_code == 200
    assert "proxied-cq" in [i["metadata"]["name"] for i in got.json()["items"]]
    assert requests.get(lists).status_code == 401
    assert requests.get(lists, headers={"Authorization": f"Bearer {server.readonly_token}"}).status_code == 401
    refused = requests.post(lists, headers=auth, json={})
    assert refused.status_code == 403 and refused.json()["reason"] == "Forbidden"
    assert requests.delete(lists + "/proxied-cq", headers=auth).status_code == 403
    assert requests.get(lists, headers={**auth, "Host": "attacker.example"}).status_code == 403
    assert requests.get(lists, headers={**auth, "Origin": "http://attacker.example"}).status_code == 403
    assert requests.get(base + "/metrics", headers=auth).status_code == 404  # only the API is forwarded
    assert requests.get(base + "/ui/").status_code == 200
    missing = requests.get(base + "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/nope", headers=auth)
    assert missing.status_code == 404 and missing.json()["reason"] == "NotFound"
    server.kubectl("get", "clusterqueue", "proxied-cq")  # the proxy did not delete it


def test_dashboard_proxy_streams_watches(server: Any, dashboard: Dashboard) -> None:
    base = dashboard.url.removesuffix("/ui/")
    path = base + "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"
    auth = {"Authorization": f"Bearer {dashboard.token}"}
    rv = requests.get(path, headers=auth).json()["metadata"]["resourceVersion"]
    events: list[dict[str, Any]] = []
    seen = threading.Event()

    def read() -> None:
        with requests.get(path, params={"watch": "1", "resourceVersion": rv}, headers=auth, stream=True, timeout=30) as r:
            for line in r.iter_lines():
                if line:
                    events.append(json.loads(line))
                    if events[-1]["object"]["metadata"]["name"] == "watched-cq":
                        seen.set()
                        return

    threading.Thread(target=read, daemon=True).start()
    server.kubectl("apply", "-f", "-", stdin=CQ.format(name="watched-cq"))
    assert seen.wait(20), f"no ADDED event through the proxy: {events}"
    assert events[-1]["type"] == "ADDED"


def _run_dashboard(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run(
        [sys.executable, "-m", "pykueue", "dashboard", *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_dashboard_refuses_non_loopback_and_unreachable_clusters(server: Any, tmp_path: Path) -> None:
    refused = _run_dashboard("--kubeconfig", str(server.readonly_kubeconfig), "--address", "0.0.0.0")
    assert refused.returncode == 2
    assert "--address 0.0.0.0 is not a loopback address" in refused.stderr
    gone = tmp_path / "kubeconfig"
    gone.write_text(server.readonly_kubeconfig.read_text().replace(server.url, "https://127.0.0.1:1"))
    unreachable = _run_dashboard("--kubeconfig", str(gone), "--port", "0")
    assert unreachable.returncode == 1
    assert "error: cannot reach https://127.0.0.1:1" in unreachable.stderr
    assert "Traceback" not in unreachable.stderr
    missing = _run_dashboard("--kubeconfig", str(tmp_path / "nope"), "--port", "0")
    assert missing.returncode == 2 and missing.stderr.startswith("error: ") and "Traceback" not in missing.stderr


def _mux_lines(session: requests.Session, url: str, watches: list[str], until: Callable[[list[dict[str, Any]]], bool]) -> list[dict[str, Any]]:
    """Read ``/dashboard/watch`` lines until ``until`` holds (or 20 s pass)."""
    lines: list[dict[str, Any]] = []
    done = threading.Event()

    def read() -> None:
        with session.get(url + "/dashboard/watch", params={"w": watches}, stream=True, timeout=30) as r:
            assert r.status_code == 200, r.text
            for raw in r.iter_lines():
                if raw:
                    lines.append(json.loads(raw))
                    if until(lines):
                        done.set()
                        return

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(20), f"the multiplexed watch did not deliver: {lines}"
    return lines


def test_one_request_carries_several_watches(server: Any) -> None:
    reader = server.session(readonly=True)
    cqs = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"
    rv = reader.get(server.url + cqs).json()["metadata"]["resourceVersion"]
    ns_rv = reader.get(server.url + "/api/v1/namespaces").json()["metadata"]["resourceVersion"]
    watches = [f"cq:{rv}:{cqs}", f"ns:{ns_rv}:/api/v1/namespaces", "nope:0:/apis/kueue.x-k8s.io/v1beta2/nothings"]

    def both(lines: list[dict[str, Any]]) -> bool:
        names = {(m["s"], m.get("e", {}).get("object", {}).get("metadata", {}).get("name")) for m in lines}
        return ("cq", "mux-cq") in names and ("ns", "mux-ns") in names and any(m["s"] == "nope" for m in lines)

    threading.Timer(1.0, lambda: (
        server.kubectl("apply", "-f", "-", stdin=CQ.format(name="mux-cq")),
        server.kubectl("create", "namespace", "mux-ns"),
    )).start()  # fmt: skip
    lines = _mux_lines(reader, server.url, watches, both)
    added = [m["e"]["type"] for m in lines if m["s"] == "cq" and m["e"]["object"]["metadata"]["name"] == "mux-cq"]
    assert added[0] == "ADDED"
    refused = next(m["status"] for m in lines if m["s"] == "nope")
    assert refused["code"] == 404 and refused["reason"] == "NotFound"
    # The guard applies: no token, no watches; and malformed requests name the parameter.
    assert anonymous(server).get(server.url + "/dashboard/watch", params={"w": watches[0]}).status_code == 401
    bad = reader.get(server.url + "/dashboard/watch", params={"w": "CQ:x:/etc/passwd"})
    assert bad.status_code == 400 and bad.json()["message"].startswith("w: 'CQ:x:/etc/passwd' is not ID:RESOURCEVERSION:PATH")
    assert reader.get(server.url + "/dashboard/watch").status_code == 400
    assert reader.get(server.url + "/dashboard/watch", params={"w": [watches[0], watches[0]]}).status_code == 400


def test_dashboard_proxy_multiplexes_upstream_watches(server: Any, dashboard: Dashboard) -> None:
    base = dashboard.url.removesuffix("/ui/")
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {dashboard.token}"
    cqs = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"
    rv = session.get(base + cqs).json()["metadata"]["resourceVersion"]
    threading.Timer(1.0, lambda: server.kubectl("apply", "-f", "-", stdin=CQ.format(name="mux-proxied-cq"))).start()
    lines = _mux_lines(
        session, base, [f"cq:{rv}:{cqs}", "gone:1:/apis/kueue.x-k8s.io/v1beta2/nothings"],
        lambda ls: any(m.get("e", {}).get("object", {}).get("metadata", {}).get("name") == "mux-proxied-cq" for m in ls)
        and any(m["s"] == "gone" for m in ls),
    )  # fmt: skip
    assert next(m["status"]["code"] for m in lines if m["s"] == "gone") == 404
