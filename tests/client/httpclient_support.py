"""Servers, a cuttable TCP proxy, object builders and polling for the HTTP client tests.

There is deliberately no conftest.py in tests/client: pytest imports every conftest of a directory
without ``__init__.py`` as the one module ``conftest``, and the e2e tests do ``from conftest import
...``; a second such conftest could shadow theirs when both directories are passed on the command
line. The test modules declare their few fixtures themselves, on the helpers here.

Servers are started by the e2e suite's ``start_server`` (tests/apiserver/e2e/conftest.py), loaded
from its file under a module name of its own for the same reason.
"""

from __future__ import annotations

import contextlib
import importlib.util
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from pykueue.client.http import HTTPClient
from pykueue.client.resources import KUEUE, KUEUE_VERSION

T = TypeVar("T")
KUEUE_API = f"{KUEUE}/{KUEUE_VERSION}"
API_ONLY = ("--no-controllers",)


# -- servers ----------------------------------------------------------------------------------------


def _load_e2e() -> ModuleType:
    name = "pykueue_e2e_conftest"
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).resolve().parents[1] / "apiserver" / "e2e" / "conftest.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the file executes
    spec.loader.exec_module(module)
    return module


def start_server(base: Path, *extra: str) -> Any:
    """A running API-only ``pykueue serve`` (the e2e suite's ``ServerProcess``)."""
    return _load_e2e().start_server(base, (*API_ONLY, *extra))


def serving(base: Path, *extra: str) -> Iterator[Any]:
    """For fixtures: a server for the fixture's lifetime."""
    srv = start_server(base, *extra)
    try:
        yield srv
    finally:
        if srv.alive():
            srv.stop()


def tls_serving(base: Path) -> Iterator[Any]:
    """For fixtures: a non-loopback bind, so HTTPS with the server's own CA and a bearer token."""
    for srv in serving(base, "--host", "0.0.0.0"):
        assert srv.url.startswith("https://") and srv.token and srv.ca_file
        yield srv


def client_of(server: Any) -> Iterator[HTTPClient]:
    """For fixtures: an :class:`HTTPClient` from the server's kubeconfig, closed afterwards."""
    c = HTTPClient.from_kubeconfig(server.kubeconfig)
    try:
        yield c
    finally:
        c.close()


class Starter:
    """Starts servers of a test's own (extra ``serve`` flags as arguments); stops them all."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.started: list[Any] = []

    def __call__(self, *extra: str) -> Any:
        base = self.base / f"srv{len(self.started)}"
        base.mkdir()
        srv = start_server(base, *extra)
        self.started.append(srv)
        return srv

    def stop_all(self) -> None:
        for srv in self.started:
            if srv.alive():
                srv.stop()


def starting(base: Path) -> Iterator[Starter]:
    """For fixtures: a :class:`Starter`."""
    starter = Starter(base)
    try:
        yield starter
    finally:
        starter.stop_all()


# -- a network that can fail --------------------------------------------------------------------------


class TCPProxy:
    """A loopback TCP forwarder the tests can cut: a network failure between client and server.

    While cut, open connections are closed and new ones are accepted and closed at once, so the
    client sees broken and refused requests as on a flaky network.
    """

    def __init__(self, target: tuple[str, int], scheme: str = "http") -> None:
        self.target = target
        self.scheme = scheme
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._up = threading.Event()
        self._up.set()
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @classmethod
    def to(cls, url: str) -> TCPProxy:
        """A proxy in front of the server at ``url`` (``http[s]://host:port``; TLS passes through)."""
        scheme, rest = url.split("://", 1)
        host, port = rest.rstrip("/").rsplit(":", 1)
        return cls((host, int(port)), scheme)

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def cut(self) -> None:
        """Break every connection and refuse new ones until :meth:`restore`."""
        self._up.clear()
        with self._lock:
            conns, self._open = self._open, []
        for conn in conns:
            _close(conn)

    def restore(self) -> None:
        self._up.set()

    def close(self) -> None:
        self._closed = True
        self.cut()
        _close(self._listener)

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            if not self._up.is_set():
                _close(conn)
                continue
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                _close(conn)
                continue
            with self._lock:
                self._open += [conn, upstream]
            threading.Thread(target=self._pipe, args=(conn, upstream), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, conn), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            _close(src)
            _close(dst)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


# -- objects and polling ------------------------------------------------------------------------------


def flavor(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A ResourceFlavor (cluster-scoped, no required spec)."""
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": meta}


def local_queue(name: str, namespace: str = "default", cluster_queue: str = "cq") -> dict[str, Any]:
    """A LocalQueue (namespaced, with a status subresource)."""
    return {
        "apiVersion": KUEUE_API,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cluster_queue},
    }


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def pod_template(name: str, namespace: str = "default", image: str = "busybox") -> dict[str, Any]:
    """A core-group PodTemplate: deletable at once, and strategic merge patch applies to it."""
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "template": {"spec": {"containers": [{"name": "main", "image": image}]}},
    }


def rv(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["resourceVersion"])


def wait_for(predicate: Callable[[], T], timeout: float = 10.0, interval: float = 0.02) -> T:
    """Poll until ``predicate()`` is truthy; return its value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(interval)
