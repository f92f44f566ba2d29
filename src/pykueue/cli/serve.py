"""``pykueue serve``: run the embedded Kubernetes-compatible API server."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pykueue.cli.components import add_component_arguments

EXIT_USAGE = 2


def add_parser(sub: Any) -> None:
    """Register the ``serve`` subcommand."""
    p = sub.add_parser(
        "serve",
        help="run the embedded control plane (a Kubernetes-compatible API server on SQLite)",
        description="Serve the Kubernetes API for Kueue's kinds (and the built-in kinds Kueue uses) on a "
        "SQLite store, write a kubeconfig for kubectl and the Kubernetes clients, and run until Ctrl-C.",
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1; "
        "a non-loopback address requires the bearer token written into the kubeconfig)",
    )
    p.add_argument("--port", type=int, default=6443, help="port to bind (default 6443; 0 picks a free port)")
    p.add_argument(
        "--data-dir",
        type=Path,
        help="state directory (default $XDG_STATE_HOME/pykueue, i.e. ~/.local/state/pykueue)",
    )
    p.add_argument(
        "--kubeconfig", type=Path, help="where to write the kubeconfig (default DATA_DIR/kubeconfig)"
    )
    p.add_argument(
        "--no-controllers", action="store_true", help="serve the API only, without Kueue's controllers"
    )
    p.add_argument(
        "--watch-history",
        type=int,
        default=100_000,
        metavar="N",
        help="changes kept for resuming watches (older resourceVersions get 410 Expired; default 100000)",
    )
    p.add_argument(
        "--log-level",
        default="warning",
        choices=("critical", "error", "warning", "info", "debug"),
        help="server log level (default warning)",
    )
    add_component_arguments(p, embedded=True)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the server with the parsed options."""
    from pykueue.apiserver.server import ServeOptions, serve

    if not 0 <= args.port <= 65535:
        print(f"error: --port {args.port} is not a valid port", flush=True)
        return EXIT_USAGE
    if args.watch_history < 1:
        print("error: --watch-history must be at least 1", flush=True)
        return EXIT_USAGE
    options = ServeOptions(
        host=args.host,
        port=args.port,
        data_dir=args.data_dir,
        kubeconfig=args.kubeconfig,
        controllers=not args.no_controllers,
        log_level=args.log_level,
        watch_history=args.watch_history,
        start_components=_starter(args),
    )
    return serve(options)


def _starter(args: argparse.Namespace) -> Any:
    """Starts the in-process components once the API server is ready (None: nothing to start)."""
    run_jobs = not args.no_controllers and not args.no_job_runner
    if args.no_controllers and args.provisioner is None:
        return None

    def start(parts: Any, data_dir: Path) -> Any:
        from pykueue.cli.components import build_components, metrics_registry, start_all
        from pykueue.client.inprocess import InProcessClient

        client = InProcessClient(parts.handlers)
        components = build_components(
            client, args, data_dir, run_jobs=run_jobs, controllers=not args.no_controllers
        )
        parts.metrics_registry = metrics_registry(components)
        return start_all(components)

    return start
