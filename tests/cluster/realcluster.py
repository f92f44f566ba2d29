"""Helpers of the real-cluster tier: Kueue's controllers against a real kube-apiserver (v1.35.3 with etcd).

These tests run only when ``KUBEBUILDER_ASSETS`` names a directory holding ``kube-apiserver`` and
``etcd`` (as controller-runtime's envtest does; ``.ci/run`` sets it from ``../shared/envtest`` when
that folder exists) and are skipped with the reason printed otherwise.

A :class:`RealCluster` is started with the shared ``start-cluster.sh`` into a temporary
``CLUSTER_DIR``; ``config/crd/`` and cluster-autoscaler's ProvisioningRequest CRD are applied, and it
is stopped (and its etcd data wiped) with ``stop-cluster.sh``. It offers the same interface as the
``pykueue serve`` process of the e2e suites (``kubectl``, ``kubeconfig``, ``api_client``, ``stop``), so
those suites' tests run against it unchanged: a ``kueue`` fixture here builds their ``Kueue`` with a
real server and a separate ``pykueue controller --kubeconfig`` process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
E2E = ROOT / "tests" / "controllers" / "e2e"
if str(E2E) not in sys.path:  # the e2e suites import their helpers as the top-level ``support``
    sys.path.insert(0, str(E2E))

import support  # noqa: E402

ASSETS_ENV = "KUBEBUILDER_ASSETS"


ENVTEST = ROOT.parent / "shared" / "envtest"  # the shared folder sits next to the clone (as in CI)
PROVISIONING_CRD = ENVTEST / "autoscaling.x-k8s.io_provisioningrequests.yaml"
CRD_DIR = ROOT / "config" / "crd"


def skip_reason() -> str | None:
    """Why the real-cluster tier cannot run here, or None when it can."""
    assets = os.environ.get(ASSETS_ENV)
    if not assets:
        return (
            f"{ASSETS_ENV} is not set: real-cluster tests need a kube-apiserver and etcd "
            f'(export {ASSETS_ENV}="$(bash ../shared/envtest/install.sh)")'
        )
    missing = [b for b in ("kube-apiserver", "etcd") if not (Path(assets) / b).is_file()]
    if missing:
        return f"{ASSETS_ENV}={assets} has no {', '.join(missing)}"
    if not (ENVTEST / "start-cluster.sh").exists():
        return f"no start-cluster.sh in {ENVTEST}"
    return None


@dataclass
class RealCluster:
    """etcd + kube-apiserver started by ``start-cluster.sh``, with the e2e suites' server interface."""

    base: Path
    cluster_dir: Path
    kubeconfig: Path
    cache_dir: Path
    url: str
    data_dir: Path
    extra_users: tuple[str, ...] = ()
    stopped: bool = False
    env: dict[str, str] = field(default_factory=dict)

    # the same kubectl/official-client helpers as ``pykueue serve``'s ServerProcess
    kubectl = support.ServerProcess.kubectl
    kubectl_popen = support.ServerProcess.kubectl_popen
    api_client = support.ServerProcess.api_client

    def alive(self) -> bool:
        """Whether the kube-apiserver process is still running."""
        pid = self.cluster_dir / "kube-apiserver.pid"
        if self.stopped or not pid.exists():
            return False
        try:
            os.kill(int(pid.read_text()), 0)
        except (OSError, ValueError):
            return False
        return True

    def stop(self, sig: int = 0, timeout: float = 20) -> int:
        """Stop both processes by their pid files and wipe etcd's data."""
        if self.stopped:
            return 0
        self.stopped = True
        result = subprocess.run(
            ["bash", str(ENVTEST / "stop-cluster.sh")],
            env={**os.environ, **self.env, "WIPE": "1"},
            capture_output=True,
            text=True,
            timeout=60,
        )
        return result.returncode

    def log(self) -> str:
        """The tail of kube-apiserver's log."""
        path = self.cluster_dir / "kube-apiserver.log"
        return path.read_text()[-5000:] if path.exists() else ""

    def audit_events(self) -> list[dict[str, Any]]:
        """The audit log's events (a cluster started with ``audit=True``)."""
        path = self.base / "audit.log"
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def context(self, name: str) -> Path:
        """A copy of the kubeconfig whose current context is ``name`` (e.g. ``user-kueue``)."""
        config = yaml.safe_load(self.kubeconfig.read_text())
        assert any(c["name"] == name for c in config["contexts"]), name
        config["current-context"] = name
        path = self.base / f"kubeconfig-{name}"
        path.write_text(yaml.safe_dump(config))
        path.chmod(0o600)
        return path


AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
"""


def start_real_cluster(
    base: Path, extra_users: tuple[str, ...] = (), *, audit: bool = False, apiserver_flags: str = ""
) -> RealCluster:
    """Start a real control plane into ``base/cluster`` and install Kueue's CRDs into it.

    ``audit``: kube-apiserver writes an audit log (one JSON line per request, ``audit.log``) so
    tests can count the requests a client made. ``apiserver_flags``: more kube-apiserver flags
    (start-cluster.sh's ``EXTRA_APISERVER_FLAGS``), e.g. the aggregator's front-proxy flags.
    """
    reason = skip_reason()
    if reason:
        pytest.skip(f"real-cluster tier: {reason}")
    base.mkdir(parents=True, exist_ok=True)
    cluster_dir = base / "cluster"
    kubeconfig = base / "kubeconfig"
    env = {"CLUSTER_DIR": str(cluster_dir), "EXTRA_USERS": " ".join(extra_users)}
    if audit:
        (base / "audit-policy.yaml").write_text(AUDIT_POLICY)
        env["EXTRA_APISERVER_FLAGS"] = (
            f"--audit-policy-file={base / 'audit-policy.yaml'} --audit-log-path={base / 'audit.log'} "
            "--audit-log-mode=blocking"
        )
    if apiserver_flags:
        env["EXTRA_APISERVER_FLAGS"] = f"{env.get('EXTRA_APISERVER_FLAGS', '')} {apiserver_flags}".strip()
    started = time.monotonic()
    result = subprocess.run(
        ["bash", str(ENVTEST / "start-cluster.sh"), str(kubeconfig)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=180,
    )
    if result.returncode != 0:
        raise AssertionError(f"start-cluster.sh failed:\n{result.stdout}\n{result.stderr}")
    config = yaml.safe_load(kubeconfig.read_text())
    cluster = RealCluster(
        base=base,
        cluster_dir=cluster_dir,
        kubeconfig=kubeconfig,
        cache_dir=base / "kube-cache",
        url=config["clusters"][0]["cluster"]["server"],
        data_dir=base / "data",
        extra_users=extra_users,
        env=env,
    )
    try:
        cluster.kubectl("apply", "--server-side", "-f", str(CRD_DIR))
        cluster.kubectl("apply", "--server-side", "-f", str(PROVISIONING_CRD))
        _wait_established(cluster)
    except BaseException:
        cluster.stop()
        raise
    print(f"real cluster {cluster.url} ready in {time.monotonic() - started:.1f}s ({cluster_dir})")
    return cluster


def _wait_established(cluster: RealCluster, timeout: float = 60.0) -> None:
    """``kubectl wait --for=condition=Established crd --all``, again while a CRD has no conditions yet.

    kube-apiserver's establishing controller writes a new CRD's status asynchronously; until then
    kubectl wait fails at once with ".status.conditions accessor error: <nil>" instead of waiting.
    """
    deadline = time.monotonic() + timeout
    while True:
        left = max(1, int(deadline - time.monotonic()))
        result = cluster.kubectl(
            "wait", "--for=condition=Established", f"--timeout={left}s", "crd", "--all", check=False
        )
        if result.returncode == 0:
            return
        if "accessor error" not in result.stderr or time.monotonic() >= deadline:
            raise AssertionError(f"kubectl wait for the CRDs failed:\n{result.stdout}\n{result.stderr}")
        time.sleep(0.2)


CONTROLLER_USER = "kueue-controller"
"""The user ``pykueue controller`` runs as in this tier: bound only to the shipped roles."""

RBAC = ROOT / "config" / "rbac"
NAMESPACE_MANIFEST = ROOT / "config" / "manager" / "namespace.yaml"
VISIBILITY_BINDINGS = ROOT / "config" / "visibility" / "role_binding.yaml"

TEST_BINDINGS = f"""
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: kueue-manager-test-user
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kueue-manager-role}}
subjects:
- {{apiGroup: rbac.authorization.k8s.io, kind: User, name: {CONTROLLER_USER}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: kueue-leader-election-test-user
  namespace: kueue-system
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: kueue-leader-election-role}}
subjects:
- {{apiGroup: rbac.authorization.k8s.io, kind: User, name: {CONTROLLER_USER}}}
"""


def install_controller_rbac(cluster: RealCluster) -> None:
    """The shipped Namespace and roles (config/), bound to :data:`CONTROLLER_USER`; the visibility
    server's delegated-auth bindings (config/visibility/role_binding.yaml) likewise."""
    cluster.kubectl("apply", "-f", str(NAMESPACE_MANIFEST))
    cluster.kubectl("apply", "-f", str(RBAC / "role.yaml"), "-f", str(RBAC / "leader_election_role.yaml"))
    cluster.kubectl("apply", "-f", "-", stdin=TEST_BINDINGS)
    docs = list(yaml.safe_load_all(VISIBILITY_BINDINGS.read_text()))
    for doc in docs:
        doc["subjects"] = [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": CONTROLLER_USER}]
    cluster.kubectl("apply", "-f", "-", stdin="---\n".join(yaml.safe_dump(d) for d in docs))


def start_real_kueue(
    base: Path,
    extra: list[str] | None = None,
    *,
    run_jobs: bool = True,
    extra_users: tuple[str, ...] = (),
    apiserver_flags: str = "",
) -> support.Kueue:
    """A real cluster and a ``pykueue controller --kubeconfig`` against it, as the e2e ``Kueue``.

    The controller runs as :data:`CONTROLLER_USER`, allowed only what config/rbac grants; the
    audit log is on, and stopping the Kueue fails if the API server refused it anything.
    """
    base.mkdir(parents=True, exist_ok=True)
    cluster = start_real_cluster(base, (CONTROLLER_USER, *extra_users), audit=True, apiserver_flags=apiserver_flags)
    install_controller_rbac(cluster)
    offset = base / "clock-offset"
    offset.write_text("0")
    flags = ["--context", f"user-{CONTROLLER_USER}", *(extra or [])]
    # A real cluster's scheduler and kubelets own Pods and Nodes: the runner does not publish them.
    k = RealKueue("cluster", cluster, base, offset, extra=flags, run_jobs=run_jobs, publish_pods=False)
    k.start_controller()
    return k


def forbidden_requests(cluster: RealCluster, user: str = CONTROLLER_USER) -> list[str]:
    """``verb resource/subresource name`` of every request of ``user`` the API server refused (403)."""
    out = []
    for event in cluster.audit_events():
        if (event.get("user") or {}).get("username") != user:
            continue
        if (event.get("responseStatus") or {}).get("code") != 403:
            continue
        ref = event.get("objectRef") or {}
        sub = f"/{ref['subresource']}" if ref.get("subresource") else ""
        out.append(f"{event.get('verb')} {ref.get('apiGroup', '')}/{ref.get('resource')}{sub} {ref.get('name', '')}")
    return out


class RealKueue(support.Kueue):
    """The e2e suites' ``Kueue`` whose controller start returns once its webhooks answer (on a
    real cluster, Job creates fail while the webhook server is down: failurePolicy Fail)."""

    def start_controller(self) -> None:
        super().start_controller()
        wait_for_webhooks(self)

    def stop_controller(self, kill: bool = False) -> None:
        """Stop the controller; one that does not exit within a minute is killed and the test fails."""
        if self.controller is None or self.controller.poll() is not None:
            return
        if kill:
            self.controller.kill()
        else:
            self.controller.terminate()
        try:
            self.controller.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.controller.kill()
            self.controller.wait()
            raise AssertionError("pykueue controller did not exit within 60s of SIGTERM") from None

    def stop(self) -> None:
        """Stop; fail if the controller's least-privilege user was refused anything."""
        try:
            self.stop_controller()
        finally:
            refused = forbidden_requests(self.server) if self.server.alive() else []
            self.server.stop()
        assert not refused, f"requests config/rbac does not allow: {sorted(set(refused))}"

    def kubectl(self, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        """kubectl; ``delete job`` also deletes the Jobs' Workloads, as kube-controller-manager's
        garbage collector would through their ownerReferences (envtest runs no GC)."""
        owned: list[str] = []
        if len(args) > 2 and args[0] == "delete" and args[1] in ("job", "jobs"):
            names = {a for i, a in enumerate(args) if i > 1 and not a.startswith("-") and args[i - 1] not in ("-n", "--namespace")}
            owned = [
                wl["metadata"]["name"]
                for wl in self.items("workloads")
                if any(r["kind"] == "Job" and r["name"] in names for r in wl["metadata"].get("ownerReferences") or [])
            ]
        result = super().kubectl(*args, **kw)
        if owned:
            super().kubectl("delete", "workload", *owned, "-n", "default", "--ignore-not-found", "--wait=false")
        return result


PROBE_FLAVOR = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: webhook-probe
"""

PROBE_COHORT = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: webhook-probe
spec:
  cohort: probe
"""


def wait_for_webhooks(k: support.Kueue, timeout: float = 60) -> None:
    """Wait until the API server calls the controller's webhooks (it picks up new webhook
    configurations and CRD conversion settings asynchronously): a server-side dry run of a
    ResourceFlavor gets the mutating webhook's finalizer and a v1beta1 ClusterQueue keeps its
    cohort through the conversion webhook."""
    if "--no-webhooks" in k.extra:
        return

    def effective() -> bool:
        if k.controller is not None and k.controller.poll() is not None:
            raise AssertionError("pykueue controller exited:\n" + k.controller_log())
        flavor = k.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", stdin=PROBE_FLAVOR, check=False)
        cq = k.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", stdin=PROBE_COHORT, check=False)
        if flavor.returncode != 0 or cq.returncode != 0:
            return False
        finalizers = json.loads(flavor.stdout)["metadata"].get("finalizers") or []
        return "kueue.x-k8s.io/resource-in-use" in finalizers and json.loads(cq.stdout)["spec"].get("cohort") == "probe"

    support.wait_for(effective, timeout=timeout, interval=0.3, what="webhooks effective")
