"""``pykueue controller``: Kueue's controllers against any Kubernetes API server (cluster mode)."""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path
from typing import Any

from pykueue.cli.components import add_component_arguments, runner_argument_error
from pykueue.cli.embedded import ENDPOINT_LINE, TOKEN_ENV

EXIT_USAGE = 2


def add_parser(sub: Any) -> None:
    """Register the ``controller`` subcommand."""
    p = sub.add_parser(
        "controller",
        help="run Kueue's controllers and scheduler against a Kubernetes API server (kubeconfig)",
        description="Run the scheduler and Kueue's controllers as a separate process that talks to a "
        "Kubernetes API server only through its HTTP API (a real cluster, or `pykueue serve --no-controllers`).",
    )
    p.add_argument("--kubeconfig", type=Path, help="kubeconfig to use (default $KUBECONFIG or ~/.kube/config)")
    p.add_argument("--context", help="kubeconfig context (default: the current context)")
    p.add_argument(
        "--work-dir",
        type=Path,
        default=Path("pykueue-controller"),
        help="scratch directory for locally run pods (with --run-jobs)",
    )
    p.add_argument(
        "--log-level", default="warning", choices=("critical", "error", "warning", "info", "debug"), help="log level"
    )
    add_component_arguments(p, embedded=False)
    v = p.add_argument_group("visibility API (visibility.kueue.x-k8s.io, behind config/visibility's APIService)")
    v.add_argument("--visibility-bind-address", default="0.0.0.0", help="address to bind (default 0.0.0.0)")
    v.add_argument(
        "--visibility-port", type=int, default=8082, help="HTTPS port (default 8082; 0 picks a free port; -1 disables)"
    )
    v.add_argument(
        "--visibility-cert-dir",
        type=Path,
        help="directory with tls.crt and tls.key (default: a self-signed certificate under --work-dir)",
    )
    v.add_argument(
        "--visibility-client-ca",
        type=Path,
        metavar="FILE",
        help="serve only clients with a certificate signed by this CA (the cluster's requestheader-client-ca-file)",
    )
    v.add_argument(
        "--visibility-auth",
        choices=("delegated", "none"),
        default="delegated",
        help="delegated (default, as upstream): authenticate with the front-proxy certificate and headers, client "
        "certificates and TokenReview, authorize with SubjectAccessReview (needs the RBAC of config/visibility); "
        "none: serve whoever reaches the port (e.g. against `pykueue serve`, which has no TokenReview)",
    )
    w = p.add_argument_group("webhooks", "Kueue's conversion, defaulting and validation webhooks (HTTPS)")
    w.add_argument(
        "--no-webhooks", action="store_true", help="do not serve or register the webhooks (the API server has its own)"
    )
    w.add_argument(
        "--webhook-host", default="127.0.0.1", help="address the webhook server listens on (default 127.0.0.1)"
    )
    w.add_argument(
        "--webhook-port",
        type=int,
        default=0,
        help="webhook server port (default: the port this --work-dir used last, else a free one; upstream uses 9443)",
    )
    w.add_argument(
        "--webhook-cert-dir",
        type=Path,
        help="tls.crt, tls.key (and ca.crt) to serve with; default: a self-signed CA made in --work-dir",
    )
    w.add_argument(
        "--webhook-service",
        metavar="NAMESPACE/NAME",
        help="register the webhooks through this Service (in-cluster) instead of by URL on --webhook-host",
    )
    ha = p.add_argument_group("high availability", "leader election and health probes")
    ha.add_argument(
        "--leader-elect",
        action="store_true",
        help="run the controllers only while holding the Lease (leaderElection in --config: "
        "resourceName, resourceNamespace, leaseDuration, renewDeadline, retryPeriod)",
    )
    ha.add_argument(
        "--leader-election-namespace",
        help="namespace of the Lease (default: leaderElection.resourceNamespace, else the configuration's "
        "namespace, kueue-system)",
    )
    ha.add_argument(
        "--health-probe-bind-address",
        default="",
        metavar="[HOST]:PORT",
        help="serve /healthz, /readyz and /replica-role here (default: off; the Deployment uses :8081)",
    )
    emb = p.add_argument_group("embedded", "how `pykueue serve` runs this command as its controller process")
    emb.add_argument(
        "--exit-with-parent",
        action="store_true",
        help="exit at once (as if killed) when the process that started this one exits, kill -9 included",
    )
    emb.add_argument(
        "--no-default-rate-limit",
        action="store_true",
        help="no client-side rate limit unless --config sets clientConnection (whose qps/burst then "
        "apply); otherwise upstream's defaults, 300 QPS / burst 500, apply. `pykueue serve` passes it "
        "to its own controller process, whose API server is serve's over loopback",
    )
    emb.add_argument(
        "--local-endpoint",
        metavar="HOST:PORT",
        help="also serve /metrics and the visibility API over plain HTTP here (port 0: a free one) to "
        f"requests bearing the token in ${TOKEN_ENV}, for the parent to proxy",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run until SIGINT/SIGTERM."""
    import logging
    import os

    from pykueue.cli.components import build_components, metrics_registry, start_all
    from pykueue.client.http import HTTPClient
    from pykueue.metrics.server import (
        DEFAULT_BIND_ADDRESS,
        BindAddressError,
        MetricsServer,
        parse_bind_address,
    )

    if args.exit_with_parent:
        from pykueue.cli.embedded import exit_with_parent

        exit_with_parent(os.getppid())
    problem = runner_argument_error(args)
    if problem is not None:
        print(f"error: {problem}", flush=True)
        return 2
    endpoint_address: tuple[str, int] | None = None
    if args.local_endpoint is not None:
        from pykueue.cli.embedded import parse_endpoint

        try:
            endpoint_address = parse_endpoint(args.local_endpoint)
        except ValueError as err:
            print(f"error: {err}", flush=True)
            return EXIT_USAGE
        if not os.environ.get(TOKEN_ENV):
            print(f"error: --local-endpoint serves only requests bearing a token: set ${TOKEN_ENV}", flush=True)
            return EXIT_USAGE
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from pykueue.cli.serve import freeze_gc, tune_gc

    tune_gc()  # the caches hold as many objects as serve's store: the same full-collection pauses
    explicit = args.metrics_bind_address is not None
    bind_address = args.metrics_bind_address if explicit else DEFAULT_BIND_ADDRESS
    try:
        metrics_address = parse_bind_address(bind_address)
    except BindAddressError as err:
        print(f"error: {err}", flush=True)
        return EXIT_USAGE
    client = HTTPClient.from_kubeconfig(args.kubeconfig, args.context)
    components = build_components(client, args, args.work_dir.resolve(), run_jobs=args.run_jobs)
    visibility = _visibility_server(args, components)
    if visibility is not None:
        components.append(visibility)
    metrics_server: MetricsServer | None = None
    registry = metrics_registry(components)
    endpoint = None
    if endpoint_address is not None:
        endpoint = _local_endpoint(endpoint_address, components, registry)
        endpoint.start()
        print(f"{ENDPOINT_LINE}{endpoint.url}", flush=True)
    if metrics_address is not None and registry is not None:
        try:
            metrics_server = MetricsServer(registry, *metrics_address)
        except OSError as err:
            if explicit:
                print(f"error: --metrics-bind-address {bind_address}: {err.strerror or err}", flush=True)
                client.close()
                return EXIT_USAGE
            # Only the default was asked for (e.g. a second controller on this machine): run without.
            print(f"pykueue controller: warning: not serving metrics on {bind_address}: {err.strerror or err}", flush=True)
            metrics_server = None
        if metrics_server is not None:
            metrics_server.start()
            print(f"pykueue controller: serving metrics at {metrics_server.url}", flush=True)
    server = None if args.no_webhooks else _start_webhooks(client, args)
    done = threading.Event()
    leading = threading.Event()
    # Its own token bucket (controller-runtime builds the lock's clientset apart): renewals never queue behind writes.
    elector = _elector(client.with_rate_limit(None, None), args, leading) if args.leader_elect else None
    # A standby keeps the manager's caches and queues (and the visibility API) warm, as upstream's
    # replicas do, and labels its metrics with its role (roletracker: follower, then leader).
    standby: list[Any] = []
    if elector is not None:
        from pykueue.controllers.manager import ControllerManager

        manager = next((c for c in components if isinstance(c, ControllerManager)), None)
        if manager is not None:
            manager.follow()
            role_of = elector
            manager.metrics.metrics.track_role(lambda: role_of.role)
            standby = [c for c in components if c is manager or c is visibility]
    health = None
    if args.health_probe_bind_address:
        from pykueue.controllers.health import HealthServer

        health = HealthServer(
            args.health_probe_bind_address,
            ready=lambda: True,  # webhooks (when on) already serve: they started first
            role=lambda: elector.role if elector is not None else "leader",
        )
        health.start()
        print(f"pykueue controller: health probes on port {health.port}", flush=True)

    def on_signal(signum: int, frame: Any) -> None:
        done.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    stop: Any = None
    stop_standby: Any = None
    try:
        if elector is not None:
            print(f"pykueue controller: waiting for lease as {elector.identity}", flush=True)
            elector.start()  # campaigning while the caches sync, as controller-runtime does
            if standby:
                stop_standby = start_all(standby)
            while not done.is_set() and not leading.wait(0.2):
                pass
        if not done.is_set():
            for comp in standby:
                lead = getattr(comp, "lead", None)
                if lead is not None:
                    lead()
            stop = start_all([c for c in components if c not in standby])
            freeze_gc()  # the caches are synced: keep them out of the collector's scans
            print("pykueue controller: running (Ctrl-C to stop)", flush=True)
            if visibility is not None:
                print(
                    f"pykueue controller: visibility API on https://{args.visibility_bind_address}:{visibility.port}",
                    flush=True,
                )
            done.wait()
    finally:
        if stop is not None:
            stop()
        if stop_standby is not None:
            stop_standby()
        if metrics_server is not None:
            metrics_server.stop()
        if endpoint is not None:
            endpoint.stop()
        if elector is not None:
            elector.stop(release=True)
        if server is not None:
            server.stop()
        if health is not None:
            health.stop()
        client.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("pykueue controller: stopped", flush=True)
    return 0


def _local_endpoint(address: tuple[str, int], components: list[Any], registry: Any) -> Any:
    """The endpoint `pykueue serve` proxies its visibility API and ``/metrics`` to."""
    import os

    from pykueue.cli.embedded import LocalEndpoint
    from pykueue.controllers.manager import ControllerManager
    from pykueue.visibility.api import VisibilityAPI
    from pykueue.visibility.source import ManagerSource

    manager = next((c for c in components if isinstance(c, ControllerManager)), None)
    api = VisibilityAPI(ManagerSource(manager) if manager is not None else None)
    return LocalEndpoint(address[0], address[1], os.environ[TOKEN_ENV], api, registry)


def _visibility_server(args: argparse.Namespace, components: list[Any]) -> Any:
    """The visibility API server over the controller manager's queue manager (None: disabled)."""
    if args.visibility_port < 0:
        return None
    from pykueue.client.interface import APIError
    from pykueue.controllers.manager import ControllerManager
    from pykueue.visibility.api import VisibilityAPI
    from pykueue.visibility.server import VisibilityServer
    from pykueue.visibility.source import ManagerSource

    manager = next((c for c in components if isinstance(c, ControllerManager)), None)
    if manager is None:
        return None
    if args.visibility_cert_dir is not None:
        cert, key = args.visibility_cert_dir / "tls.crt", args.visibility_cert_dir / "tls.key"
    else:
        from pykueue.apiserver.server import ensure_tls

        tls = ensure_tls(args.work_dir.resolve() / "visibility-certs", "localhost")
        cert, key = tls.cert, tls.key
    auth = None
    if args.visibility_auth == "delegated":
        from pykueue.visibility.auth import DelegatedAuth

        try:
            auth = DelegatedAuth.from_cluster(manager.client)
        except (RuntimeError, APIError) as err:
            # Upstream's server does not start without it either; the controllers still run.
            print(f"pykueue controller: visibility API disabled: {err}", flush=True)
            return None
    try:
        return VisibilityServer(
            VisibilityAPI(ManagerSource(manager)),
            cert,
            key,
            host=args.visibility_bind_address,
            port=args.visibility_port,
            client_ca=args.visibility_client_ca,
            auth=auth,
        )
    except OSError as err:
        # The controllers do not depend on it: keep scheduling, say loudly what is missing.
        print(f"pykueue controller: visibility API disabled: cannot serve on port {args.visibility_port}: {err}", flush=True)
        return None


def _elector(client: Any, args: argparse.Namespace, leading: threading.Event) -> Any:
    """The Lease campaign with the Configuration's ``leaderElection`` timings and names."""
    import os

    from pykueue.api.config import load_config, load_config_file
    from pykueue.controllers.leaderelection import ElectionConfig, LeaderElector

    cfg = (load_config_file(str(args.config)) if args.config else load_config(None)).configuration
    election = cfg.leader_election
    assert election is not None  # defaulted by load_config
    namespace = args.leader_election_namespace or election.resource_namespace or cfg.namespace or "kueue-system"

    def seconds(value: Any, default: float) -> float:
        return value.nanoseconds / 1e9 if value is not None else default

    config = ElectionConfig(
        namespace=namespace,
        name=election.resource_name,
        lease_duration=seconds(election.lease_duration, 15.0),
        renew_deadline=seconds(election.renew_deadline, 10.0),
        retry_period=seconds(election.retry_period, 2.0),
    )

    def lost() -> None:
        # controller-runtime exits when the lease is lost: nothing may write after the renew
        # deadline, which is shorter than the lease another replica waits out.
        print("pykueue controller: leader election lost, exiting", flush=True)
        os._exit(1)

    return LeaderElector(client, config, on_started=leading.set, on_lost=lost)


def _start_webhooks(client: Any, args: argparse.Namespace) -> Any:
    """Serve the webhooks and point the CRDs and webhook configurations at them.

    Outside the cluster they are registered by URL (``https://<host>:<port>``); the port is kept
    in the work directory so a restarted controller (e.g. after kill -9) answers at the address
    the API server already calls.
    """
    from pykueue.api.config import load_config, load_config_file
    from pykueue.client.interface import NotFound
    from pykueue.controllers import webhooks as wh

    try:
        client.get(wh.CRDS, f"clusterqueues.{wh.KUEUE_GROUP}")
    except NotFound:
        # `pykueue serve` serves Kueue's API itself, webhooks included: no CRDs to point at us.
        print("pykueue controller: no Kueue CRDs on this server (built-in Kueue API): webhooks not needed", flush=True)
        return None
    work_dir: Path = args.work_dir.resolve()
    work_dir.mkdir(parents=True, exist_ok=True)
    service = None
    host_name = args.webhook_host
    if args.webhook_service:
        namespace, _, name = str(args.webhook_service).partition("/")
        if not name:
            raise SystemExit(f"error: --webhook-service {args.webhook_service!r}: want NAMESPACE/NAME")
        service = {"namespace": namespace, "name": name}
        host_name = f"{name}.{namespace}.svc"
    if service is not None and args.webhook_cert_dir is None:
        certs = wh.shared_cert_files(client, service["namespace"], wh.DEFAULT_CERT_SECRET, work_dir, host_name)
    else:
        certs = wh.cert_files(args.webhook_cert_dir, work_dir, host_name)
    port_file = work_dir / "webhook-port"
    port = args.webhook_port
    if not port and port_file.exists():
        port = int(port_file.read_text() or 0)
    gates = (load_config_file(str(args.config)) if args.config else load_config(None)).feature_gates
    server = wh.WebhookServer(wh.Webhooks(client, gates), certs, args.webhook_host, port)
    port_file.write_text(str(server.port))
    server.start()
    url = None if service is not None else f"https://{args.webhook_host}:{server.port}"
    wh.register(client, url, service, certs.ca_bundle())
    print(f"pykueue controller: webhooks at {url or args.webhook_service}", flush=True)
    return server
