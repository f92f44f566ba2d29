"""``pykueue controller``: Kueue's controllers against any Kubernetes API server (cluster mode)."""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path
from typing import Any

from pykueue.cli.components import add_component_arguments, runner_argument_error


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

    from pykueue.cli.components import build_components, start_all
    from pykueue.client.http import HTTPClient

    problem = runner_argument_error(args)
    if problem is not None:
        print(f"error: {problem}", flush=True)
        return 2
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    client = HTTPClient.from_kubeconfig(args.kubeconfig, args.context)
    components = build_components(client, args, args.work_dir.resolve(), run_jobs=args.run_jobs)
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
        client.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("pykueue controller: stopped", flush=True)
    return 0
