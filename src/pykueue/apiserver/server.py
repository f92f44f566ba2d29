"""Running the API server: uvicorn lifecycle, data directory, bearer token, TLS and kubeconfig.

:func:`serve` opens the store in the data directory, starts uvicorn (httptools + uvloop) with the
Starlette application, writes the kubeconfig once the socket is listening (so a client that sees
the file can connect), prints how to use it, and shuts down cleanly on Ctrl-C / SIGTERM: open
watches are ended, in-flight requests finish, the store is closed.

The server always serves HTTPS with its own CA (kept in the data directory) and requires a bearer
token, on loopback too, as k3s and kind do: without it any web page the user visits, or any other
local user, could drive the API (and through the job runner, run commands). Two credentials are
kept there: the admin token (``DATA_DIR/kubeconfig``, or ``--kubeconfig``) and a read-only one
(``DATA_DIR/kubeconfig-readonly``: get, list and watch only). ``--insecure-loopback`` keeps plain
HTTP without authentication, for loopback binds only.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import ipaddress
import logging
import os
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

import uvicorn
import yaml

from pykueue.api.feature_gates import FeatureGates
from pykueue.apiserver.app import APIServerApp, create_app
from pykueue.apiserver.protocol import ConnectionLimits, limited_protocol
from pykueue.apiserver.security import READONLY_USER, served_names
from pykueue.apiserver.watch import DEFAULT_BOOKMARK_INTERVAL

log = logging.getLogger("pykueue.apiserver")

DB_FILE = "pykueue.db"
TOKEN_FILE = "token"
READONLY_TOKEN_FILE = "token-readonly"
READONLY_KUBECONFIG_FILE = "kubeconfig-readonly"
READONLY_CONTEXT = "pykueue-readonly"
ACCEPT_BACKLOG = 8192
"""listen() backlog: thousands of clients may connect at once (the kernel caps it at somaxconn)."""
FD_RESERVE = 64
"""File descriptors kept free of client connections (database, WAL, logs, pod processes), at
least; a tenth of the open-file limit when that is more."""
CA_CERT = "ca.crt"
SERVING_CERT = "serving.crt"
SERVING_KEY = "serving.key"
CERT_DAYS = 3650
KUBECONFIG_FILE = "kubeconfig"
CONTEXT = "pykueue"
GRACEFUL_SHUTDOWN_SECONDS = 5
PRIVATE_FILES = (
    TOKEN_FILE, READONLY_TOKEN_FILE, CA_CERT, SERVING_CERT, SERVING_KEY, "serving.hosts", KUBECONFIG_FILE,
    READONLY_KUBECONFIG_FILE,
)  # fmt: skip
"""Files the server keeps in the data directory (besides the store's, which the store guards)."""


@dataclass
class ServeOptions:
    """``pykueue serve`` options."""

    host: str = "127.0.0.1"
    port: int = 6443
    data_dir: Path | None = None
    kubeconfig: Path | None = None
    controllers: bool = True
    log_level: str = "warning"
    bookmark_interval: float = DEFAULT_BOOKMARK_INTERVAL
    watch_history: int = 100_000
    insecure_loopback: bool = False
    """Plain HTTP without authentication (refused unless ``host`` is a loopback address)."""
    limits: ConnectionLimits = field(default_factory=ConnectionLimits)
    gates: FeatureGates = field(default_factory=FeatureGates)
    """The feature gates of the Kueue webhooks the server runs (``--config``'s ``featureGates``)."""
    start_components: Callable[[APIServerApp, Serving], Callable[[], None]] | None = None
    """Called once the server is ready with its parts and where it serves; returns a stop function,
    called before the API shuts down. ``pykueue serve`` passes the controllers here (the API server
    itself imports none of them)."""


@dataclass(frozen=True)
class Serving:
    """What a component started by :func:`serve` needs to know of the running server."""

    data_dir: Path
    url: str
    """The URL the components dial: the server's own listener for them when it has one (see
    :class:`APIServer`), else the kubeconfig's."""
    token: str | None
    """The admin bearer token (None with ``--insecure-loopback``)."""
    ca_data: str | None
    """The CA's ``certificate-authority-data`` (None with ``--insecure-loopback``)."""
    out: TextIO
    fail: Callable[[str], None]
    """Stop serving with this error (a component that cannot run: no half-started control plane)."""


def default_data_dir() -> Path:
    """``$XDG_STATE_HOME/pykueue`` (default ``~/.local/state/pykueue``)."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "pykueue"


def is_loopback(host: str) -> bool:
    """Whether binding to ``host`` only accepts local connections."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def client_host(host: str) -> str:
    """The address a local client should dial for a bind address (wildcards → loopback)."""
    bare = host.strip("[]")
    if bare in ("0.0.0.0", ""):
        return "127.0.0.1"
    if bare == "::":
        return "[::1]"
    try:
        if ipaddress.ip_address(bare).version == 6:
            return f"[{bare}]"
    except ValueError:
        pass
    return bare


def private_data_dir(data_dir: Path) -> None:
    """Create the data directory as 0700; make it and the files the server keeps there private.

    Directories and files from older versions (0755 and 0644) are fixed at start. The store makes
    its database, WAL and SHM files 0600 itself.
    """
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    if data_dir.stat().st_mode & 0o777 != 0o700:
        data_dir.chmod(0o700)
    for name in PRIVATE_FILES:
        path = data_dir / name
        if path.is_file() and not path.is_symlink() and path.stat().st_mode & 0o777 != 0o600:
            path.chmod(0o600)


def load_or_create_token(data_dir: Path, name: str = TOKEN_FILE) -> str:
    """A bearer token kept in the data directory (created on first start, mode 0600)."""
    path = data_dir / name
    if path.exists():
        token = path.read_text().strip()
        if token:
            return token
    token = secrets.token_urlsafe(32)
    _write_private(path, token + "\n")
    return token


@dataclass(frozen=True)
class TLSFiles:
    """The self-signed CA and the serving certificate/key (PEM files in the data directory)."""

    ca: Path
    cert: Path
    key: Path

    def ca_data(self) -> str:
        """``certificate-authority-data`` for the kubeconfig."""
        return base64.b64encode(self.ca.read_bytes()).decode()


def subject_alt_names(host: str) -> tuple[list[str], list[str]]:
    """(DNS names, IP addresses) the serving certificate must cover for ``host``."""
    dns = ["localhost", socket.gethostname()]
    ips = ["127.0.0.1", "::1"]
    bare = host.strip("[]")
    try:
        ipaddress.ip_address(bare)
        ips.append(bare)
    except ValueError:
        dns.append(bare)
    return list(dict.fromkeys(d for d in dns if d)), list(dict.fromkeys(ips))


def ensure_tls(data_dir: Path, host: str) -> TLSFiles:
    """The CA and serving certificate in ``data_dir`` (created on first use; re-issued for a new host)."""
    files = TLSFiles(data_dir / CA_CERT, data_dir / SERVING_CERT, data_dir / SERVING_KEY)
    marker = data_dir / "serving.hosts"
    wanted = repr(subject_alt_names(host))
    if (
        files.ca.exists()
        and files.cert.exists()
        and files.key.exists()
        and marker.exists()
        and marker.read_text() == wanted
    ):
        return files
    dns, ips = subject_alt_names(host)
    try:
        ca_pem, cert_pem, key_pem = _issue_with_cryptography(dns, ips)
    except ImportError:
        ca_pem, cert_pem, key_pem = _issue_with_openssl(dns, ips)
    _write_private(files.ca, ca_pem.decode())
    _write_private(files.cert, cert_pem.decode())
    _write_private(files.key, key_pem.decode())
    _write_private(marker, wanted)
    return files


def _issue_with_cryptography(dns: list[str], ips: list[str]) -> tuple[bytes, bytes, bytes]:
    """A CA (its key discarded) and a serving certificate it signs, via ``cryptography``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pykueue-ca")])
    ca = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=CERT_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
    sans += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    cert = (
        x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pykueue-apiserver")]))
        .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=CERT_DAYS))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    pem = serialization.Encoding.PEM
    return ca.public_bytes(pem), cert.public_bytes(pem), key_pem


def _issue_with_openssl(dns: list[str], ips: list[str]) -> tuple[bytes, bytes, bytes]:
    """The same with the ``openssl`` command (when ``cryptography`` is not installed)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise SystemExit(
            "error: serving on a non-loopback address needs TLS: install 'cryptography' or openssl"
        )
    san = ",".join([f"DNS:{d}" for d in dns] + [f"IP:{i}" for i in ips])
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)

        def run(*args: str) -> None:
            subprocess.run([openssl, *args], check=True, capture_output=True)

        run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", str(CERT_DAYS),
            "-subj", "/CN=pykueue-ca", "-keyout", str(t / "ca.key"), "-out", str(t / "ca.crt"),
            "-addext", "basicConstraints=critical,CA:TRUE,pathlen:0", "-addext", "keyUsage=critical,keyCertSign,cRLSign")  # fmt: skip
        run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=pykueue-apiserver",
            "-keyout", str(t / "key.pem"), "-out", str(t / "req.csr"))  # fmt: skip
        (t / "ext.cnf").write_text(f"subjectAltName={san}\nextendedKeyUsage=serverAuth\n")
        run("x509", "-req", "-in", str(t / "req.csr"), "-CA", str(t / "ca.crt"), "-CAkey", str(t / "ca.key"),
            "-CAcreateserial", "-days", str(CERT_DAYS), "-extfile", str(t / "ext.cnf"), "-out", str(t / "cert.pem"))  # fmt: skip
        return (t / "ca.crt").read_bytes(), (t / "cert.pem").read_bytes(), (t / "key.pem").read_bytes()


def kubeconfig_document(
    server_url: str, token: str | None, ca_data: str | None = None, *, user_name: str = CONTEXT
) -> dict[str, Any]:
    """A kubeconfig with one cluster named ``pykueue`` and one user and context named ``user_name``."""
    user: dict[str, Any] = {"token": token} if token else {}
    cluster: dict[str, Any] = {"server": server_url}
    if ca_data:
        cluster["certificate-authority-data"] = ca_data
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": cluster}],
        "users": [{"name": user_name, "user": user}],
        "contexts": [
            {"name": user_name, "context": {"cluster": CONTEXT, "user": user_name, "namespace": "default"}}
        ],
        "current-context": user_name,
        "preferences": {},
    }


def write_kubeconfig(
    path: Path, server_url: str, token: str | None, ca_data: str | None = None, *, user_name: str = CONTEXT
) -> None:
    """Write the kubeconfig atomically (mode 0600: it holds the token)."""
    doc = kubeconfig_document(server_url, token, ca_data, user_name=user_name)
    _write_private(path, yaml.safe_dump(doc, sort_keys=False))


def raise_open_file_limit() -> int:
    """Raise ``RLIMIT_NOFILE``'s soft limit to the hard limit (logged); returns the soft limit.

    The default soft limit (often 1024) would refuse clients long before the connection cap.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft == resource.RLIM_INFINITY:
        return 1 << 20 if soft == resource.RLIM_INFINITY else soft
    if soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            log.info("raised the open-file limit (RLIMIT_NOFILE) from %d to %d", soft, hard)
            soft = hard
        except (ValueError, OSError) as err:
            log.warning("could not raise the open-file limit (RLIMIT_NOFILE) from %d: %s", soft, err)
    return soft


def connection_limits(limits: ConnectionLimits, open_files: int) -> ConnectionLimits:
    """``limits`` with the connection cap lowered to what the open-file limit allows (logged)."""
    allowed = max(1, open_files - max(FD_RESERVE, open_files // 10))
    if limits.max_connections <= allowed:
        return limits
    log.warning(
        "--max-connections %d exceeds what the open-file limit %d allows; capping connections at %d",
        limits.max_connections, open_files, allowed,
    )  # fmt: skip
    return ConnectionLimits(limits.idle, limits.header, limits.body, allowed)


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def uvicorn_config(
    app: Any, host: str, port: int, limits: ConnectionLimits, log_level: str, tls: TLSFiles | None
) -> uvicorn.Config:
    """uvicorn's configuration for ``pykueue serve`` (tests serve with the same)."""
    return uvicorn.Config(
        app,
        host=host.strip("[]"),
        port=port,
        loop="uvloop",
        http=limited_protocol(limits),
        backlog=ACCEPT_BACKLOG,
        timeout_keep_alive=max(1, round(limits.idle)),
        lifespan="on",
        log_level=log_level,
        access_log=False,  # also what lets the protocol serve resource requests without a task
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
        server_header=False,
        proxy_headers=False,  # client addresses are not used; saves a middleware per request
        date_header=True,
        ssl_certfile=str(tls.cert) if tls else None,
        ssl_keyfile=str(tls.key) if tls else None,
    )


class APIServer(uvicorn.Server):
    """uvicorn server that reports readiness and ends open watches before shutting down."""

    def __init__(
        self,
        config: uvicorn.Config,
        parts: APIServerApp,
        on_ready: Callable[[int], None],
        handshake_timeout: float = 60.0,
        before_shutdown: Callable[[], None] | None = None,
        components_host: str | None = None,
    ) -> None:
        super().__init__(config)
        self.parts = parts
        self.on_ready = on_ready
        self.handshake_timeout = handshake_timeout
        self.before_shutdown = before_shutdown
        self.components_host = components_host
        """An IP address to open a second listener on (port chosen by the kernel), same app, TLS
        and authentication, for serve's own components (the controller process): their new
        connections get their own accept queue instead of waiting behind thousands of client
        connects (a benchmark runner's), which left the controllers' status writes failing with
        connect and TLS handshake timeouts in Kueue's large-scale benchmark."""
        self.components_port: int | None = None

    async def startup(self, sockets: list[Any] | None = None) -> None:
        """Start listening (TLS handshakes bounded by ``handshake_timeout``), then call ``on_ready``
        with the bound port."""
        loop = asyncio.get_running_loop()
        create_server = loop.create_server

        def bounded_handshakes(*args: Any, **kwargs: Any) -> Any:
            # uvicorn passes no ssl_handshake_timeout (asyncio's default is 60 s): a client that
            # connects and never completes the handshake is held no longer than one that sends
            # no request.
            if kwargs.get("ssl") is not None:
                kwargs.setdefault("ssl_handshake_timeout", self.handshake_timeout)
            return create_server(*args, **kwargs)

        setattr(loop, "create_server", bounded_handshakes)  # noqa: B010 - an instance override
        try:
            await super().startup(sockets)
        finally:
            delattr(loop, "create_server")  # the loop's own method again
        if self.should_exit or not self.servers:
            return
        port = int(self.servers[0].sockets[0].getsockname()[1])
        if self.components_host is not None:
            await self._listen_for_components(loop)
        self.on_ready(port)

    async def _listen_for_components(self, loop: asyncio.AbstractEventLoop) -> None:
        config = self.config

        def create_protocol(_loop: asyncio.AbstractEventLoop | None = None) -> asyncio.Protocol:
            # As uvicorn's own listener builds its protocol (Server.startup).
            return config.http_protocol_class(  # type: ignore[call-arg]
                config=config, server_state=self.server_state, app_state=self.lifespan.state, _loop=_loop
            )

        server = await loop.create_server(
            create_protocol,
            host=self.components_host,
            port=0,
            ssl=config.ssl,
            backlog=config.backlog,
            ssl_handshake_timeout=self.handshake_timeout if config.ssl is not None else None,
        )
        self.servers.append(server)  # closed with uvicorn's own at shutdown
        self.components_port = int(server.sockets[0].getsockname()[1])

    async def shutdown(self, sockets: list[Any] | None = None) -> None:
        """Stop the components first (off the loop, which keeps serving them meanwhile: a controller
        process writes its last statuses), end watch streams so connections can close, shut down."""
        if self.before_shutdown is not None:
            await asyncio.to_thread(self.before_shutdown)
        self.parts.hub.close()
        await super().shutdown(sockets)


def _components_host(host: str) -> str | None:
    """Where serve's components get their own listener: the address they dial (an IP literal, so
    the server's certificate already names it), else None (they share the public listener)."""
    bare = client_host(host).strip("[]")
    try:
        ipaddress.ip_address(bare)
    except ValueError:
        return None
    return bare


def _configure_logging(level: str) -> None:
    """Send the server's own log lines (``pykueue.*``) to stderr at ``--log-level``."""
    logger = logging.getLogger("pykueue")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(level.upper())


def _ignore_signal(signum: int, frame: FrameType | None) -> None:
    """Placeholder handler: uvicorn re-raises the signal it caught after a clean shutdown."""


def serve(options: ServeOptions, out: TextIO = sys.stdout) -> int:
    """Run the API server until interrupted; returns the exit code."""
    from pykueue.store import Store

    data_dir = (options.data_dir or default_data_dir()).expanduser().resolve()
    os.umask(0o077)  # whatever the server and its components write (pod logs too) is private
    private_data_dir(data_dir)
    kubeconfig = (options.kubeconfig or data_dir / KUBECONFIG_FILE).expanduser().resolve()
    if options.insecure_loopback and not is_loopback(options.host):
        raise ValueError(
            f"--insecure-loopback serves without authentication: {options.host} is not a loopback address"
        )
    secure = not options.insecure_loopback
    token = load_or_create_token(data_dir) if secure else None
    readonly_token = load_or_create_token(data_dir, READONLY_TOKEN_FILE) if secure else None
    tls = ensure_tls(data_dir, options.host) if secure else None
    _configure_logging(options.log_level)
    open_files = raise_open_file_limit()
    limits = connection_limits(options.limits, open_files)
    store = Store(str(data_dir / DB_FILE), history=options.watch_history)
    try:
        app, parts = create_app(
            store,
            token=token,
            readonly_token=readonly_token,
            served_names=sorted(served_names(options.host)),
            bookmark_interval=options.bookmark_interval,
            gates=options.gates,
        )
        config = uvicorn_config(app, options.host, options.port, limits, options.log_level, tls)

        stops: list[Callable[[], None]] = []
        starters: list[threading.Thread] = []
        failed: list[str] = []

        def fail(problem: str) -> None:
            failed.append(problem)
            print(f"error: starting the controllers failed: {problem}", file=out, flush=True)
            server.should_exit = True

        def start_components(serving: Serving) -> None:
            assert options.start_components is not None
            try:
                stops.append(options.start_components(parts, serving))
            except Exception as err:  # no half-started control plane: stop serving
                fail(str(err))
                raise

        def stop_components() -> None:
            for starter in starters:
                starter.join(timeout=4 * GRACEFUL_SHUTDOWN_SECONDS)
            while stops:
                stops.pop()()

        def ready(port: int) -> None:
            url = f"{'https' if tls else 'http'}://{client_host(options.host)}:{port}"
            ca_data = tls.ca_data() if tls else None
            write_kubeconfig(kubeconfig, url, token, ca_data)
            readonly = data_dir / READONLY_KUBECONFIG_FILE
            if readonly_token:
                write_kubeconfig(readonly, url, readonly_token, ca_data, user_name=READONLY_CONTEXT)
            else:  # a read-only credential from a secure run would no longer work
                readonly.unlink(missing_ok=True)
            _announce(out, url, kubeconfig, readonly if readonly_token else None, data_dir, options.controllers)
            print(
                f"connections: at most {limits.max_connections} (open-file limit {open_files}); timeouts: "
                f"idle {limits.idle:g}s, headers {limits.header:g}s, body {limits.body:g}s\n",
                file=out, flush=True,
            )  # fmt: skip
            if options.start_components is not None:
                # The controllers' initial sync (a LIST of everything) runs beside the API, never
                # on the event loop: the API answers at once after a restart.
                components_url = url
                if server.components_port is not None:
                    components_url = f"{'https' if tls else 'http'}://{client_host(options.host)}:{server.components_port}"
                serving = Serving(data_dir, components_url, token, ca_data, out, fail)
                starter = threading.Thread(
                    target=start_components, args=(serving,), name="pykueue-components", daemon=True
                )
                starters.append(starter)
                starter.start()

        server = APIServer(
            config,
            parts,
            ready,
            handshake_timeout=limits.header,
            before_shutdown=stop_components,
            components_host=_components_host(options.host) if options.start_components is not None else None,
        )
        previous = {sig: signal.signal(sig, _ignore_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            server.run()
        except SystemExit as exc:  # uvicorn exits on a bind failure
            return int(exc.code) if isinstance(exc.code, int) else 1
        finally:
            stop_components()  # when uvicorn never got as far as its shutdown
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    finally:
        store.close()
    print("pykueue serve: stopped", file=out, flush=True)
    return 1 if failed else 0


def _announce(
    out: TextIO, url: str, kubeconfig: Path, readonly: Path | None, data_dir: Path, controllers: bool
) -> None:
    lines = [
        f"pykueue API server listening on {url}",
        f"data directory: {data_dir}",
    ]
    if readonly is not None:
        lines += [
            f"kubeconfig written to {kubeconfig} (admin: HTTPS, the server's CA and a bearer token)",
            f"read-only kubeconfig written to {readonly} (user {READONLY_USER}: get, list, watch)",
            f"dashboard: {url}/ui/ (sign in with the read-only token in {data_dir / READONLY_TOKEN_FILE})",
        ]
    else:
        lines += [
            f"kubeconfig written to {kubeconfig}",
            f"dashboard: {url}/ui/",
            "WARNING: --insecure-loopback: plain HTTP, no authentication; every local user and "
            "process can use this API (and run commands through its Jobs)",
        ]
    if not controllers:
        lines.append("controllers: disabled (--no-controllers); serving the API only")
    lines += [
        "",
        "To use it:",
        f"  export KUBECONFIG={kubeconfig}",
        "  kubectl api-resources --api-group=kueue.x-k8s.io",
        "",
    ]
    print("\n".join(lines), file=out, flush=True)
