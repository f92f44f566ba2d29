"""``pykueue dashboard``: serve the live dashboard for a cluster reached through a kubeconfig."""

from __future__ import annotations

import argparse
import secrets
import socket
import sys
from typing import Any

EXIT_USAGE = 2
EXIT_UNREACHABLE = 1


def add_parser(sub: Any) -> None:
    """Register the ``dashboard`` subcommand."""
    p = sub.add_parser(
        "dashboard",
        help="serve the live dashboard for a cluster (or a pykueue serve) reached through a kubeconfig",
        description="Serve the dashboard page on a loopback port and forward its read requests (get, "
        "list, watch) to the cluster with the kubeconfig's credentials. The page is opened with a "
        "token made for this run, printed in the URL. pykueue serve serves the same page itself at /ui.",
    )
    p.add_argument("--kubeconfig", help="kubeconfig file (default $KUBECONFIG, else ~/.kube/config)")
    p.add_argument("--context", help="kubeconfig context (default its current-context)")
    p.add_argument(
        "--address",
        default="127.0.0.1",
        help="loopback address to bind (default 127.0.0.1; plain HTTP, so only loopback addresses)",
    )
    p.add_argument("--port", type=int, default=8090, help="port to bind (default 8090; 0 picks a free port)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Check the cluster answers, then serve until Ctrl-C."""
    import httpx2 as httpx
    import uvicorn

    from pykueue.apiserver.security import served_names
    from pykueue.apiserver.server import client_host, is_loopback
    from pykueue.client.kubeconfig import KubeconfigError, load_connection
    from pykueue.dashboard.proxy import DashboardProxy

    if not 0 <= args.port <= 65535:
        print(f"error: --port {args.port} is not a valid port", file=sys.stderr, flush=True)
        return EXIT_USAGE
    if not is_loopback(args.address):
        print(
            f"error: --address {args.address} is not a loopback address; the dashboard serves plain HTTP "
            "and is only served on loopback (use an SSH tunnel to reach it from elsewhere)",
            file=sys.stderr, flush=True,
        )  # fmt: skip
        return EXIT_USAGE
    try:
        conn = load_connection(args.kubeconfig, args.context)
    except KubeconfigError as err:
        print(f"error: {err}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    try:
        with httpx.Client(base_url=conn.server, verify=conn.ssl_context, auth=conn.auth, timeout=10) as probe:
            answer = probe.get("/apis/kueue.x-k8s.io")
    except httpx.HTTPError as err:
        print(f"error: cannot reach {conn.server}: {err}", file=sys.stderr, flush=True)
        return EXIT_UNREACHABLE
    if answer.status_code != 200:
        print(
            f"error: {conn.server} answered {answer.status_code} for /apis/kueue.x-k8s.io "
            "(are Kueue's CRDs installed, and may this kubeconfig's user read them?)",
            file=sys.stderr, flush=True,
        )  # fmt: skip
        return EXIT_UNREACHABLE
    host = args.address.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, args.port))
    except OSError as err:
        print(f"error: cannot bind {args.address}:{args.port}: {err.strerror}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    sock.listen(128)
    port = sock.getsockname()[1]
    token = secrets.token_urlsafe(32)
    app = DashboardProxy(conn, token, served_names(args.address))
    url = f"http://{client_host(args.address)}:{port}/ui/"
    print(
        f"pykueue dashboard for {conn.server} (context {conn.context_name}), read-only\n"
        f"open: {url}#token={token}\n"
        "(the token is made for this run and only reads; Ctrl-C to stop)",
        flush=True,
    )
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", server_header=False)
    uvicorn.Server(config).run(sockets=[sock])
    return 0
