"""``pykueue serve``'s controllers in a process of their own (the default).

The controllers of an in-process ``serve`` share the API server's interpreter lock: every
reconcile, scheduling cycle and status write stops the API's event loop meanwhile (the API's create
p99 was 3.8–5× the controllers-off figure, bench/RESULTS.md). As in a cluster, where the Kueue
manager is a Deployment of its own talking to kube-apiserver, ``serve`` now starts
``pykueue controller`` as a child process on the second core, talking to the API over HTTPS with
serve's admin credential exactly as it does against any cluster.

Two sides live here:

* serve's side: :class:`ControllerProcess` spawns the child, relays its output, restarts it with a
  backoff when it crashes and stops it (SIGTERM, then SIGKILL) when serve stops;
  :class:`RemoteVisibility` and :meth:`ControllerProcess.metrics` make serve answer the visibility
  API (as kube-apiserver proxies an ``APIService`` to its backend) and ``/metrics`` from the child.
* the child's side: :func:`exit_with_parent` (the child never outlives serve, kill -9 included) and
  :class:`LocalEndpoint`, the child's visibility API and metrics over plain HTTP on loopback,
  for serve only: every request must carry the bearer token serve put in the child's environment
  (``PYKUEUE_ENDPOINT_TOKEN``; a process's environment is readable only by its user).
"""

from __future__ import annotations

import ctypes
import hmac
import http.client
import http.server
import logging
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

from pykueue.kube.httpserve import PLAIN_TEXT, BackgroundServer, ReplyHandler

if TYPE_CHECKING:  # imported where used: `pykueue controller` imports this module at start-up
    from pykueue.visibility.api import VisibilityAPI, VisibilityResponse

log = logging.getLogger("pykueue.serve")

TOKEN_ENV = "PYKUEUE_ENDPOINT_TOKEN"
"""The child's environment variable holding the token its :class:`LocalEndpoint` requires."""
ENDPOINT_LINE = "pykueue controller: local endpoint on "
"""What the child prints once its endpoint listens (followed by ``http://HOST:PORT``)."""
RUNNING_LINE = "pykueue controller: running"
"""What the child prints once its initial sync is done and every controller runs."""
PR_SET_PDEATHSIG = 1
PARENT_POLL_SECONDS = 1.0
STOP_SECONDS = 20.0
"""How long a stopping child may take (its controllers and job runner stop) before SIGKILL."""
MIN_BACKOFF, MAX_BACKOFF = 1.0, 30.0
STABLE_SECONDS = 60.0
"""A child that ran this long before crashing is restarted after the shortest backoff again."""
PROXY_TIMEOUT = 30.0
VISIBILITY_PREFIX = "/apis/visibility.kueue.x-k8s.io"


# -- the child's side --------------------------------------------------------------------------------


def parse_endpoint(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT``) of ``--local-endpoint``; ValueError naming the rule."""
    host, sep, port_text = text.strip().rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f'--local-endpoint "{text}": want HOST:PORT with a port in 0-65535')
    return host, int(port_text)


def exit_with_parent(parent: int) -> None:
    """Die with ``parent``: SIGKILL on its death (Linux ``PR_SET_PDEATHSIG``), else a thread polling
    ``getppid``. SIGKILL, not SIGTERM: serve kill -9'd must leave things as an in-process serve
    kill -9'd did (pods survive and are adopted by the next start), not half-stopped."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no prctl: the poll below still works
            pass
    # The parent may have died before prctl ran (then getppid is already another process).
    if os.getppid() != parent:
        os._exit(1)

    def poll() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=poll, name="exit-with-parent", daemon=True).start()


class _EndpointServer(http.server.ThreadingHTTPServer):
    def __init__(self, address: tuple[str, int], token: str, visibility: VisibilityAPI, registry: Any) -> None:
        self.token = token
        self.visibility = visibility
        self.registry = registry
        super().__init__(address, _EndpointHandler)


class _EndpointHandler(ReplyHandler):
    server: _EndpointServer
    protocol_version = "HTTP/1.1"
    timeout = 60

    def _serve(self) -> None:
        given = self.headers.get("Authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {self.server.token}".encode()):
            self.reply(401, b"Unauthorized\n", PLAIN_TEXT)
            return
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/metrics" and self.command == "GET":
            from pykueue.metrics.server import exposition

            if self.server.registry is None:
                self.reply(404, b"404 page not found\n", PLAIN_TEXT)
                return
            body, content_type = exposition(self.server.registry)
            self.reply(200, body, content_type)
            return
        prefix = VISIBILITY_PREFIX
        if url.path == prefix or url.path.startswith(prefix + "/"):
            query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
            accept = self.headers.get("Accept", "application/json")
            result = self.server.visibility.handle(self.command, url.path[len(prefix) :], query, accept)
            self.reply(result.status, result.body, result.content_type)
            return
        self.reply(404, b"404 page not found\n", PLAIN_TEXT)

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("controller endpoint: " + format, *args)


class LocalEndpoint:
    """The child's visibility API and metrics, plain HTTP on ``host:port`` (0: a free port),
    served only to requests with ``Authorization: Bearer <token>``."""

    def __init__(self, host: str, port: int, token: str, visibility: VisibilityAPI, registry: Any) -> None:
        self._serving = BackgroundServer(_EndpointServer((host, port), token, visibility, registry), "controller-endpoint")

    @property
    def url(self) -> str:
        return f"http://{self._serving.host}:{self._serving.port}"

    def start(self) -> None:
        self._serving.start()

    def stop(self) -> None:
        self._serving.stop()


# -- serve's side ------------------------------------------------------------------------------------


class ControllerProcess:
    """Runs and supervises ``argv`` (a ``pykueue controller`` command line) for ``pykueue serve``.

    ``out`` gets serve's own lines and the child's stdout; the child's stderr (its log) is serve's.
    ``on_fatal`` is called when the first child exits with an error before its controllers run (a
    bad flag or file, an API it cannot use): restarting would not help, and serve must not run
    without its controllers. Later crashes, or a first child killed by a signal, are restarted.
    """

    def __init__(
        self,
        argv: Sequence[str],
        out: IO[str],
        *,
        env: Mapping[str, str] | None = None,
        on_fatal: Callable[[str], None] | None = None,
    ) -> None:
        self.argv = list(argv)
        self.out = out
        self.token = secrets.token_urlsafe(32)
        self.env = dict(env if env is not None else os.environ)
        self.env[TOKEN_ENV] = self.token
        self.env.setdefault("PYTHONUNBUFFERED", "1")
        self.on_fatal = on_fatal
        self.endpoint: tuple[str, int] | None = None
        """Where the running child's :class:`LocalEndpoint` listens (None: no child serving)."""
        self.pid: int | None = None
        self.starts = 0
        self._proc: subprocess.Popen[str] | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Spawn the child and supervise it from a thread of its own.

        That thread spawns every child and lives until :meth:`stop`: ``PR_SET_PDEATHSIG`` fires when
        the thread that forked the child ends, not only the process."""
        self._thread = threading.Thread(target=self._supervise, name="controller-process", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the child (SIGTERM; SIGKILL after :data:`STOP_SECONDS`) and the supervision."""
        self._stopping.set()
        with self._lock:
            proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                log.warning("controller process %d did not stop within %gs: killing it", proc.pid, STOP_SECONDS)
                proc.kill()
                proc.wait()
        if self._thread is not None:
            self._thread.join(timeout=STOP_SECONDS)

    def _print(self, line: str) -> None:
        print(line, file=self.out, flush=True)

    def _supervise(self) -> None:
        backoff = MIN_BACKOFF
        while not self._stopping.is_set():
            started = time.monotonic()
            with self._lock:
                if self._stopping.is_set():
                    return
                # Its own session: Ctrl-C in serve's terminal is serve's, which then stops the child
                # (else the child would stop by itself first and be restarted as if it crashed).
                proc = subprocess.Popen(
                    self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True, env=self.env,
                    start_new_session=True,
                )  # fmt: skip
                self._proc = proc
            self.pid = proc.pid
            self.starts += 1
            self._print(f"controllers: running in process {proc.pid} (pykueue controller)")
            running = self._relay(proc)
            code = proc.wait()
            self.endpoint = None
            if self._stopping.is_set():
                return
            if not running and code > 0 and self.starts == 1 and self.on_fatal is not None:
                # As an in-process start that raised: no half-started control plane (its error is
                # on serve's stderr, which the child shares).
                self.on_fatal(f"the controller process exited with code {code} before its controllers started")
                return
            if time.monotonic() - started >= STABLE_SECONDS:
                backoff = MIN_BACKOFF
            what = f"killed by signal {-code}" if code < 0 else f"exited with code {code}"
            message = f"controllers: process {proc.pid} {what}; restarting in {backoff:g}s"
            self._print(message)
            log.warning("%s", message)
            if self._stopping.wait(backoff):
                return
            backoff = min(backoff * 2, MAX_BACKOFF)

    def _relay(self, proc: subprocess.Popen[str]) -> bool:
        """Copy the child's stdout to ``out`` until it closes, noting its endpoint and its start;
        True when the child got as far as running its controllers."""
        assert proc.stdout is not None
        running = False
        for raw in proc.stdout:
            line = raw.rstrip("\n")
            if line.startswith(ENDPOINT_LINE):
                url = urllib.parse.urlsplit(line[len(ENDPOINT_LINE) :].strip())
                if url.hostname and url.port:
                    self.endpoint = (url.hostname, url.port)
                continue
            if line.startswith(RUNNING_LINE):
                running = True
                again = " again" if self.starts > 1 else ""
                self._print(f"controllers: started{again}, initial sync done")
                continue
            self._print(line)
        return running

    # -- proxying ----------------------------------------------------------------------------------

    def request(self, method: str, target: str, accept: str) -> tuple[int, bytes, str] | None:
        """``method target`` on the child's endpoint: (status, body, content type), or None when no
        child serves (starting, restarting, or gone)."""
        endpoint = self.endpoint
        if endpoint is None:
            return None
        conn = http.client.HTTPConnection(*endpoint, timeout=PROXY_TIMEOUT)
        try:
            conn.request(method, target, headers={"Authorization": f"Bearer {self.token}", "Accept": accept})
            resp = conn.getresponse()
            return resp.status, resp.read(), resp.getheader("Content-Type", "application/json")
        except OSError as err:
            log.debug("controller endpoint %s:%d: %s", *endpoint, err)
            return None
        finally:
            conn.close()

    def metrics(self) -> tuple[bytes, str] | None:
        """The child's ``/metrics`` exposition (None: not available now)."""
        got = self.request("GET", "/metrics", "text/plain")
        if got is None or got[0] != 200:
            return None
        return got[1], got[2]


class RemoteVisibility:
    """The visibility API mounted on serve, answered by the controller process (as kube-apiserver
    proxies the ``APIService`` ``v1beta2.visibility.kueue.x-k8s.io`` to the manager's server); a
    503 ``ServiceUnavailable`` while no child serves, as the aggregator answers for an unavailable
    backend."""

    def __init__(self, process: ControllerProcess) -> None:
        self.process = process

    def handle(
        self, method: str, rest: str, query: Mapping[str, Sequence[str]], accept: str = "application/json"
    ) -> VisibilityResponse:
        from pykueue.visibility.api import VisibilityAPI, VisibilityResponse

        target = f"{VISIBILITY_PREFIX}/{rest.lstrip('/')}".rstrip("/")
        if query:
            target += "?" + urllib.parse.urlencode(query, doseq=True)
        got = self.process.request(method, target, accept)
        if got is None:
            return VisibilityAPI(None).handle(method, rest, query, accept)  # discovery, else 503
        status, body, content_type = got
        return VisibilityResponse(status, body, content_type)
