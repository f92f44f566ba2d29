"""``pykueue controller``: Kueue's controllers against any Kubernetes API server (cluster mode)."""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path
from typing import Any

from pykueue.cli.components import add_component_arguments

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
