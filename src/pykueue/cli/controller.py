"""``pykueue controller``: Kueue's controllers against any Kubernetes API server (cluster mode)."""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path
from typing import Any

from pykueue.cli.components import add_component_arguments, runner_argument_error

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
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run until SIGINT/SIGTERM."""
    import logging

    from pykueue.cli.components import build_components, metrics_registry, start_all
    from pykueue.client.http import HTTPClient
    from pykueue.metrics.server import (
        DEFAULT_BIND_ADDRESS,
        BindAddressError,
        MetricsServer,
        parse_bind_address,
    )

    problem = runner_argument_error(args)
    if problem is not None:
        print(f"error: {problem}", flush=True)
        return 2
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
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
    done = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        done.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    stop = start_all(components)
    print("pykueue controller: running (Ctrl-C to stop)", flush=True)
    if visibility is not None:
        print(f"pykueue controller: visibility API on https://{args.visibility_bind_address}:{visibility.port}", flush=True)
    try:
        done.wait()
    finally:
        stop()
        if metrics_server is not None:
            metrics_server.stop()
        client.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("pykueue controller: stopped", flush=True)
    return 0


def _visibility_server(args: argparse.Namespace, components: list[Any]) -> Any:
    """The visibility API server over the controller manager's queue manager (None: disabled)."""
    if args.visibility_port < 0:
        return None
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
    try:
        return VisibilityServer(
            VisibilityAPI(ManagerSource(manager)),
            cert,
            key,
            host=args.visibility_bind_address,
            port=args.visibility_port,
            client_ca=args.visibility_client_ca,
        )
    except OSError as err:
        # The controllers do not depend on it: keep scheduling, say loudly what is missing.
        print(f"pykueue controller: visibility API disabled: cannot serve on port {args.visibility_port}: {err}", flush=True)
        return None
