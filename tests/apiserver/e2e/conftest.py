"""Fixtures that run the real ``pykueue serve`` in a subprocess and drive it with real clients.

``start_server`` launches ``python -m pykueue serve --port 0 --no-controllers`` on a temporary
data directory, waits for the ``export KUBECONFIG=...`` line (printed only once the socket listens and the
kubeconfig is written) and returns a :class:`ServerProcess` with helpers for the real kubectl
(``/usr/bin/kubectl``, an isolated discovery cache) and the official Python client.

The server serves HTTPS with its own CA and requires its bearer token (the secure default): kubectl
and the Kubernetes clients read both from the kubeconfig, and raw HTTP in tests goes through
:meth:`ServerProcess.session` (CA and token set) or, for the read-only user,
``session(readonly=True)``.
"""

from __future__ import annotations

import base64
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

ROOT = Path(__file__).resolve().parents[3]
SEEDS = Path("/work/shared/seeds")
KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
START_TIMEOUT = 90.0
"""Seconds a started serve has to print its endpoint: a bound for a serve that never starts, not a
speed check. On a loaded two-core machine (a niced test run beside other work) 30 s was missed by
13 e2e tests whose serve started fine once the load was gone."""


@dataclass
class ServerProcess:
    """A running ``pykueue serve`` and the files it uses."""

    proc: subprocess.Popen[str]
    data_dir: Path
    kubeconfig: Path
    cache_dir: Path
    url: str
    output: list[str] = field(default_factory=list)
    token: str | None = None
    ca_file: Path | None = None
    readonly_kubeconfig: Path | None = None
    readonly_token: str | None = None
    _http: requests.Session | None = None

    def kubectl(
        self,
        *args: str,
        stdin: str | None = None,
        check: bool = True,
        timeout: float = 60,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run the real kubectl against this server."""
        cmd = [KUBECTL, "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.cache_dir), *args]
        full_env = {**os.environ, **env} if env else None
        result = subprocess.run(
            cmd, input=stdin, capture_output=True, text=True, timeout=timeout, env=full_env
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({result.returncode}):\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
            )
        return result

    def kubectl_popen(self, *args: str) -> subprocess.Popen[str]:
        """Start kubectl in the background (e.g. ``get -w``)."""
        cmd = [KUBECTL, "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.cache_dir), *args]
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def api_client(self) -> Any:
        """An official ``kubernetes`` Python client configured from the written kubeconfig."""
        from kubernetes import config

        return config.new_client_from_config(config_file=str(self.kubeconfig))

    def verify(self) -> str | bool:
        """``requests``' ``verify=``: the server's CA when it serves HTTPS."""
        return str(self.ca_file) if self.ca_file else True

    def headers(self, readonly: bool = False) -> dict[str, str]:
        """Authorization header when the server requires a token."""
        token = self.readonly_token if readonly else self.token
        return {"Authorization": f"Bearer {token}"} if token else {}

    def session(self, readonly: bool = False) -> requests.Session:
        """A new ``requests`` session that trusts the server's CA and sends the (admin) token."""
        session = requests.Session()
        session.trust_env = False  # else REQUESTS_CA_BUNDLE would replace the CA set here
        session.verify = self.verify()
        session.headers.update(self.headers(readonly))
        return session

    @property
    def http(self) -> requests.Session:
        """One shared admin :meth:`session` (for tests on one thread)."""
        if self._http is None:
            self._http = self.session()
        return self._http

    def alive(self) -> bool:
        """Whether the process is still running."""
        return self.proc.poll() is None

    def stop(self, sig: int = signal.SIGINT, timeout: float = 20) -> int:
        """Send ``sig`` and wait for the exit code."""
        if self._http is not None:
            self._http.close()
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"pykueue serve did not exit within {timeout}s after signal {sig}") from None

    def log(self) -> str:
        """What the server printed (stdout) and logged (stderr file)."""
        err = (
            (self.data_dir.parent / "serve.stderr").read_text()
            if (self.data_dir.parent / "serve.stderr").exists()
            else ""
        )
        return "".join(self.output) + "\n--- stderr ---\n" + err


def _pump(stream: Any, sink: list[str], ready: threading.Event) -> None:
    for line in stream:
        sink.append(line)
        if line.strip().startswith("export KUBECONFIG="):
            ready.set()
    ready.set()


def start_server(
    base: Path, extra: Sequence[str] = (), *, data_dir: Path | None = None, controllers: bool = False
) -> ServerProcess:
    """Start ``pykueue serve`` on a free loopback port; return once it is ready to serve.

    The API server's tests pin API behaviour (e.g. a finalizer stays until a client removes it),
    so Kueue's controllers are off (``--no-controllers``) unless ``controllers`` is set.
    """
    if not controllers and "--no-controllers" not in extra:
        extra = (*extra, "--no-controllers")
    data_dir = data_dir or base / "data"
    kubeconfig = base / "kubeconfig"
    cache_dir = base / "kube-cache"
    kubeconfig.unlink(missing_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    stderr = open(base / "serve.stderr", "a")  # noqa: SIM115 - owned by the child process
    cmd = [
        sys.executable, "-m", "pykueue", "serve", "--port", "0",
        "--data-dir", str(data_dir), "--kubeconfig", str(kubeconfig), *extra,
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env, cwd=base)
    stderr.close()
    output: list[str] = []
    ready = threading.Event()
    threading.Thread(target=_pump, args=(proc.stdout, output, ready), daemon=True).start()
    if not ready.wait(START_TIMEOUT) or proc.poll() is not None or not kubeconfig.exists():
        proc.kill()
        raise AssertionError(
            "pykueue serve did not become ready:\n" + "".join(output) + (base / "serve.stderr").read_text()
        )
    config = yaml.safe_load(kubeconfig.read_text())
    url = config["clusters"][0]["cluster"]["server"]
    token = config["users"][0]["user"].get("token")
    ca_data = config["clusters"][0]["cluster"].get("certificate-authority-data")
    ca_file = None
    if ca_data:
        ca_file = base / "ca.crt"
        ca_file.write_bytes(base64.b64decode(ca_data))
    readonly_kubeconfig: Path | None = data_dir / "kubeconfig-readonly"
    readonly_token = None
    if readonly_kubeconfig is not None and readonly_kubeconfig.exists():
        readonly_token = yaml.safe_load(readonly_kubeconfig.read_text())["users"][0]["user"]["token"]
    else:
        readonly_kubeconfig = None
    return ServerProcess(
        proc, data_dir, kubeconfig, cache_dir, url, output, token, ca_file, readonly_kubeconfig, readonly_token
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One server per test module (tests in a module use distinct object names)."""
    srv = start_server(tmp_path_factory.mktemp("serve"))
    yield srv
    srv.stop()


@pytest.fixture
def fresh_server(tmp_path: Path) -> Iterator[ServerProcess]:
    """A server of its own for one test."""
    srv = start_server(tmp_path)
    yield srv
    if srv.alive():
        srv.stop()


def wait_for(predicate: Any, timeout: float = 10.0, interval: float = 0.05, what: str = "") -> Any:
    """Poll until ``predicate()`` is truthy; return its value (an AssertionError naming ``what``)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met in time: {what}" if what else "condition not met in time")
        time.sleep(interval)
