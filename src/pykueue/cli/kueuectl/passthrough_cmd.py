"""kubectl pass-throughs and ``delete workload`` (upstream ``cmd/kueuectl/app/passthrough`` and
``cmd/kueuectl/app/delete``)."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from typing import Any

from pykueue.cli.kueuectl.client import Cluster, CommandError
from pykueue.cli.kueuectl.mutate_cmd import dry_run_strategy
from pykueue.cli.kueuectl.printing import name_line
from pykueue.client import resources as R
from pykueue.client.interface import APIError, Resource

Obj = dict[str, Any]
PASSTHROUGH_VERBS = ("get", "delete", "edit", "describe", "patch")
PASSTHROUGH_TYPES = {
    "workload": ("kwl", "kueueworkload", "kueueworkloads"),
    "clusterqueue": ("cq",),
    "localqueue": ("lq",),
    "resourceflavor": ("rf",),
}
WORKLOAD_NAMES = frozenset({"workload", *PASSTHROUGH_TYPES["workload"]})


def _type_names() -> set[str]:
    return {name for kind, aliases in PASSTHROUGH_TYPES.items() for name in (kind, *aliases)}


def passthrough(argv: Sequence[str], force: bool = False) -> None:
    """Replace this process by ``kubectl <argv>`` for ``get|delete|edit|describe|patch <type>``,
    as kueuectl does with its own arguments (``delete workload`` excepted: it is kueuectl's own);
    return otherwise. ``force``: the command line was already parsed as a pass-through."""
    if not force:
        if len(argv) < 2 or argv[0] not in PASSTHROUGH_VERBS or argv[1] not in _type_names():
            return
        if argv[0] == "delete" and argv[1] in WORKLOAD_NAMES:
            return
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        print(
            'Error: pass-through command are not available: exec: "kubectl": executable file not found in $PATH, '
            f'PATH="{os.environ.get("PATH", "")}"',
            file=sys.stderr,
        )
        sys.exit(1)
    sys.stdout.flush()
    os.execv(kubectl, [kubectl, *argv])


# --- delete workload --------------------------------------------------------------------------------


def _owner_resources(cluster: Cluster, wl: Obj) -> list[tuple[Resource, str]]:
    """The owner objects of a Workload as (resource, name), via discovery (the RESTMapper)."""
    out: list[tuple[Resource, str]] = []
    for ref in wl["metadata"].get("ownerReferences") or []:
        api_version, kind = str(ref.get("apiVersion", "")), str(ref.get("kind", ""))
        group, _, version = api_version.rpartition("/")
        for res in cluster.resources_for(api_version) or []:
            if res.get("kind") == kind and "/" not in res["name"]:
                out.append((Resource(group, version, res["name"], kind, bool(res["namespaced"])), str(ref["name"])))
                break
        else:
            raise CommandError(f'no matches for kind "{kind}" in version "{api_version}"')
    return out


def _qualified(res: Resource, name: str) -> str:
    """``GroupVersionResourceName.String``: ``jobs.batch/name``."""
    return f"{res.plural}.{res.group}/{name}" if res.group else f"{res.plural}/{name}"


def run_delete_workload(args: argparse.Namespace) -> int:
    if not args.all and not args.names:
        raise CommandError("requires at least 1 arg(s), only received 0")
    if args.all and args.names:
        raise CommandError("name cannot be provided when a selector is specified")
    if args.all_namespaces and args.names:
        raise CommandError("a resource cannot be retrieved by name across all namespaces")
    strategy = dry_run_strategy(args.dry_run)
    suffix = "" if strategy == "none" else f" ({strategy} dry run)"
    cluster = Cluster.connect(args)
    try:
        workloads: list[Obj] = []
        if args.all:
            namespace = None if args.all_namespaces else cluster.namespace
            for page in cluster.pages(R.WORKLOADS, namespace, "", "", 0):
                workloads.extend(page.get("items") or [])
        else:
            for name in args.names:
                try:
                    workloads.append(cluster.get(R.WORKLOADS, name, cluster.namespace))
                except APIError as err:
                    if err.code != 404:
                        raise
                    print(err.message, file=sys.stderr)
        if not workloads:
            return 0
        owners = [(wl, _owner_resources(cluster, wl)) for wl in workloads]
        if strategy == "none" and not args.yes and any(refs for _, refs in owners):
            if args.all:
                message = "This operation will also delete the jobs associated with these workloads.\n"
            else:
                lines = [
                    f"  - {', '.join(_qualified(r, n) for r, n in refs)} associated with the "
                    f"{wl['metadata']['namespace']}/{wl['metadata']['name']} workload\n"
                    for wl, refs in owners
                    if refs
                ]
                message = "This operation will also delete:\n" + "\n".join(lines)
            sys.stdout.write(message + "Do you want to proceed (y/n)? ")
            sys.stdout.flush()
            answer = sys.stdin.readline().split()
            if not answer or answer[0].lower() != "y":
                sys.stdout.write("Deletion is canceled\n")
                return 0
        params = {"dryRun": "All"} if strategy == "server" else None
        for wl, refs in owners:
            namespace = wl["metadata"]["namespace"]
            for res, name in refs:
                if strategy != "client":
                    _delete(cluster, res.path(namespace, name), params)
                sys.stdout.write(f"{_qualified(res, name)} deleted{suffix}\n")
            if not refs:  # only a Workload without Jobs is deleted directly
                if strategy != "client":
                    _delete(cluster, R.WORKLOADS.path(namespace, wl["metadata"]["name"]), params)
                wl.setdefault("kind", "Workload")
                wl.setdefault("apiVersion", R.WORKLOADS.api_version)
                sys.stdout.write(name_line(wl, "deleted" + suffix))
    finally:
        cluster.close()
    return 0


def _delete(cluster: Cluster, path: str, params: dict[str, str] | None) -> None:
    try:
        cluster.http.request("DELETE", path, params=params)
    except APIError as err:
        if err.code != 404:
            raise


def add_delete_parser(sub: Any, add_connection: Callable[[argparse.ArgumentParser], None]) -> None:
    """``delete workload`` (the other ``delete <type>`` forms pass through to kubectl)."""
    dp = sub.add_parser("delete", help="Delete a resource (other types: pass-through to kubectl)")
    ds = dp.add_subparsers(dest="kind", required=True, metavar="{workload}")
    wp = ds.add_parser(
        "workload",
        aliases=sorted(PASSTHROUGH_TYPES["workload"]),
        help="Delete the given Workload and its corresponding Job",
        description="If the Workload has associated Jobs, the command will prompt for deletion approval of the "
        "affected Jobs, and delete them. The Workload will then be asynchronously deleted by the garbage "
        "collector. If there are no associated Jobs, the command will directly delete the Workload.",
    )
    wp.add_argument("names", nargs="*", metavar="NAME")
    wp.add_argument("-y", "--yes", action="store_true", help="Automatic yes to the prompt for deleting the Workload.")
    wp.add_argument("--all", action="store_true", help="Delete all Workloads, in the specified namespace.")
    wp.add_argument(
        "-A",
        "--all-namespaces",
        action="store_true",
        help="If present, list the requested object(s) across all namespaces. Namespace in current context is "
        "ignored even if specified with --namespace.",
    )
    wp.add_argument("--dry-run", default="none", help='Must be "none", "server", or "client".')
    add_connection(wp)
    wp.set_defaults(func=run_delete_workload)
    for verb in ("get", "edit", "describe", "patch"):
        vp = sub.add_parser(verb, help=f'Pass-through "{verb} <type>" to kubectl')
        vp.add_argument("type", choices=sorted(_type_names()))
        vp.add_argument("rest", nargs=argparse.REMAINDER)
