"""The kueuectl command tree, shared by ``pykueue <verb> ...`` and the kubectl plugin
``kubectl kueue <verb> ...`` (``kubectl-kueue``).

Upstream kueuectl (``cmd/kueuectl``) has the verbs ``create``, ``list``, ``stop``, ``resume`` (and
kubectl pass-throughs); pending workloads and their positions are shown by ``list workload``
(``POSITION IN QUEUE``, from the visibility API). ``pending`` is pykueue's own addition: the
visibility API's summary of one ClusterQueue or LocalQueue as a table.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from pykueue.apiserver.tables import since
from pykueue.cli.kueuectl.client import Cluster, CommandError, add_connection_flags
from pykueue.cli.kueuectl.list_cmd import add_list_parsers
from pykueue.cli.kueuectl.mutate_cmd import add_mutating_parsers
from pykueue.cli.kueuectl.passthrough_cmd import add_delete_parser, passthrough
from pykueue.cli.kueuectl.printing import progress, render, table
from pykueue.client.interface import APIError

VERBS = ("list", "create", "stop", "resume", "pending", "delete", "get", "edit", "describe", "patch")
PENDING_COLUMNS = (
    "Name", "LocalQueue", "Priority", "Position in ClusterQueue", "Position in LocalQueue", "Age",
)  # fmt: skip


def run_pending(args: argparse.Namespace) -> int:
    if args.output not in (None, "json", "yaml"):
        raise CommandError(
            f'unable to match a printer suitable for the output format "{args.output}", allowed formats are: json,yaml'
        )
    cluster = Cluster.connect(args)
    try:
        params = {k: str(v) for k, v in (("limit", args.limit), ("offset", args.offset)) if v is not None}
        if args.kind == "clusterqueue":
            path, what = f"/clusterqueues/{args.name}/pendingworkloads", None
        else:
            path, what = f"/namespaces/{cluster.namespace}/localqueues/{args.name}/pendingworkloads", cluster.namespace
        with progress("reading pending workloads"):
            summary = cluster.http.request("GET", "/apis/visibility.kueue.x-k8s.io/v1beta2" + path, params=params)
    finally:
        cluster.close()
    items = summary.get("items") or []
    if args.output:
        sys.stdout.write(render(summary, args.output))
        return 0
    if not items:
        print(f"No pending workloads in {args.kind} {args.name}" + (f" ({what})" if what else ""), file=sys.stderr)
        return 0
    now = datetime.now(UTC)
    rows = [
        [
            i["metadata"]["name"],
            i.get("localQueueName", ""),
            i.get("priority", 0),
            i.get("positionInClusterQueue", 0),
            i.get("positionInLocalQueue", 0),
            since(i["metadata"].get("creationTimestamp"), now),
        ]
        for i in items
    ]
    namespaces = [i["metadata"].get("namespace", "") for i in items] if args.kind == "clusterqueue" else None
    sys.stdout.write(table(PENDING_COLUMNS, rows, namespaces=namespaces))
    return 0


def _add_pending_parser(sub: Any, add_connection: Callable[[argparse.ArgumentParser], None]) -> None:
    pp = sub.add_parser(
        "pending",
        help="Pending workloads of a queue in queue order (the visibility API)",
        description="Show the pending workloads of a ClusterQueue or LocalQueue with their positions, as the "
        "visibility API (visibility.kueue.x-k8s.io) reports them. pykueue's own verb: upstream kueuectl shows "
        "the same positions in 'list workload' (POSITION IN QUEUE).",
    )
    ps = pp.add_subparsers(dest="kind", required=True, metavar="{clusterqueue,localqueue}")
    for kind, aliases in (("clusterqueue", ["cq"]), ("localqueue", ["lq"])):
        kp = ps.add_parser(kind, aliases=aliases, help=f"Pending workloads of a {kind}")
        kp.add_argument("name", metavar="NAME")
        kp.add_argument("--limit", type=int, help="at most this many workloads (server default 1000)")
        kp.add_argument("--offset", type=int, help="skip this many workloads first")
        kp.add_argument("-o", "--output", help="Output format. One of: (json, yaml).")
        add_connection(kp)
        kp.set_defaults(func=run_pending, kind=kind)


def add_commands(sub: Any) -> None:
    """Register ``list``, ``create``, ``stop``, ``resume``, ``delete``, the kubectl pass-throughs
    and ``pending`` on a subparsers object."""
    add_list_parsers(sub, add_connection_flags)
    add_mutating_parsers(sub, add_connection_flags)
    add_delete_parser(sub, add_connection_flags)
    _add_pending_parser(sub, add_connection_flags)


def run(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """Run a parsed command line (``argv``: the arguments after the program name)."""
    if getattr(args, "func", None) is None:  # get/edit/describe/patch <type>: kubectl's business
        passthrough(argv, force=True)
    return execute(args)


def execute(args: argparse.Namespace) -> int:
    """Run a parsed command; failures are reported as cobra does (``Error: ...``, exit 1)."""
    try:
        rc: int = args.func(args)
        return rc
    except (CommandError, APIError) as err:
        message = err.message if isinstance(err, APIError) else str(err)
        print(f"Error: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def plugin_main(argv: Sequence[str] | None = None) -> int:
    """``kubectl-kueue``: kubectl runs it for ``kubectl kueue ...``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    passthrough(argv)
    parser = argparse.ArgumentParser(prog="kubectl kueue", description="Controls Kueue queueing manager")
    # kueuectl's kubeconfig flags are persistent (cobra): also accepted before the verb.
    parser.add_argument("--kubeconfig", dest="root_kubeconfig", help="Path to the kubeconfig file to use for CLI requests.")
    parser.add_argument("--context", dest="root_context", help="The name of the kubeconfig context to use")
    parser.add_argument("-n", "--namespace", dest="root_namespace", help="If present, the namespace scope for this CLI request")
    sub = parser.add_subparsers(dest="command", required=True)
    add_commands(sub)
    args = parser.parse_args(argv)
    for name in ("kubeconfig", "context", "namespace"):
        if getattr(args, name, None) is None:
            setattr(args, name, getattr(args, f"root_{name}"))
    return run(args, argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(plugin_main())
