"""``list clusterqueue|localqueue|workload|resourceflavor`` (upstream ``cmd/kueuectl/app/list``)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pykueue.apiserver.tables import human_duration, parse_timestamp, since
from pykueue.cli.kueuectl.client import DEFAULT_LIST_LIMIT, LIST_LIMIT_ENV, Cluster, CommandError
from pykueue.cli.kueuectl.printing import progress, render, table
from pykueue.client import resources as R
from pykueue.client.interface import APIError, Resource

Obj = dict[str, Any]

CQ_COLUMNS = ("Name", "Cohort", "Pending Workloads", "Admitted Workloads", "Active", "Age")
LQ_COLUMNS = ("Name", "ClusterQueue", "Pending Workloads", "Admitted Workloads", "Age")
RF_COLUMNS = ("Name", "Node Labels", "Age")
WL_COLUMNS = (
    "Name", "Job Type", "Job Name", "LocalQueue", "ClusterQueue", "Status", "Position in Queue", "Exec Time", "Age",
)  # fmt: skip
CRD_TYPE_MAX_LENGTH = 20
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
STATUSES = ("all", "pending", "quotareserved", "admitted", "finished")
STATUS_MESSAGE = 'Must be "all", "pending", "admitted" or "finished"'


def list_request_limit() -> int:
    """``listRequestLimit``: ``KUEUECTL_LIST_REQUEST_LIMIT`` or 100."""
    text = os.environ.get(LIST_LIMIT_ENV, "")
    if not text:
        return DEFAULT_LIST_LIMIT
    try:
        return int(text, 10)
    except ValueError:
        raise CommandError("invalid list request limit") from None


def _conditions(obj: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {c.get("type", ""): c for c in (obj.get("status") or {}).get("conditions") or []}


def _true(obj: Mapping[str, Any], ctype: str) -> bool:
    cond = _conditions(obj).get(ctype)
    return cond is not None and cond.get("status") == "True"


def workload_status(wl: Mapping[str, Any]) -> str:
    """``workload.Status``: finished, admitted, quotaReserved or pending."""
    if _true(wl, "Finished"):
        return "finished"
    if _true(wl, "Admitted"):
        return "admitted"
    if _true(wl, "QuotaReserved"):
        return "quotaReserved"
    return "pending"


def _admission_cq(wl: Mapping[str, Any]) -> str:
    return str(((wl.get("status") or {}).get("admission") or {}).get("clusterQueue") or "")


def _lq_key(wl: Mapping[str, Any]) -> str:
    return f"{wl['metadata'].get('namespace', '')}/{(wl.get('spec') or {}).get('queueName', '')}"


def _wl_key(wl: Mapping[str, Any]) -> str:
    return f"{wl['metadata'].get('namespace', '')}/{wl['metadata']['name']}"


# --- rows (pure: the golden tests feed them fixed objects and a fixed clock) --------------------------


def cluster_queue_row(cq: Obj, now: datetime) -> list[Any]:
    status = cq.get("status") or {}
    return [
        cq["metadata"]["name"],
        (cq.get("spec") or {}).get("cohortName", ""),
        status.get("pendingWorkloads", 0),
        status.get("admittedWorkloads", 0),
        _true(cq, "Active"),
        since(cq["metadata"].get("creationTimestamp"), now),
    ]


def local_queue_row(lq: Obj, now: datetime) -> list[Any]:
    status = lq.get("status") or {}
    return [
        lq["metadata"]["name"],
        (lq.get("spec") or {}).get("clusterQueue", ""),
        status.get("pendingWorkloads", 0),
        status.get("admittedWorkloads", 0),
        since(lq["metadata"].get("creationTimestamp"), now),
    ]


def resource_flavor_row(rf: Obj, now: datetime) -> list[Any]:
    labels = sorted(f"{k}={v}" for k, v in ((rf.get("spec") or {}).get("nodeLabels") or {}).items())
    return [rf["metadata"]["name"], ", ".join(labels), since(rf["metadata"].get("creationTimestamp"), now)]


class WorkloadResources:
    """``listWorkloadResources``: what the workload table looks up besides the Workloads."""

    def __init__(self) -> None:
        self.local_queues: dict[str, Obj | None] = {}
        self.pending: dict[str, Obj] = {}
        self.api_resources: dict[str, list[Obj] | None] = {}


def _crd_type(resource: Mapping[str, Any]) -> str:
    """``apiResourceType``: ``singular[.group]`` cut to 20 characters plus ``...``."""
    parts = [p for p in (resource.get("singularName"), resource.get("group")) if p]
    text = ".".join(str(p) for p in parts)
    return text[:CRD_TYPE_MAX_LENGTH] + "..." if len(text) > CRD_TYPE_MAX_LENGTH else text


def workload_row(wl: Obj, r: WorkloadResources, now: datetime) -> list[Any]:
    cq = _admission_cq(wl)
    if not cq:
        lq = r.local_queues.get(_lq_key(wl))
        cq = str((lq.get("spec") or {}).get("clusterQueue", "")) if lq else ""
    pending = r.pending.get(_wl_key(wl))
    position = str(pending["positionInLocalQueue"]) if pending is not None else ""
    exec_time = ""
    admitted = _conditions(wl).get("Admitted")
    if admitted is not None and admitted.get("status") == "True":
        end = now
        finished = _conditions(wl).get("Finished")
        if finished is not None and finished.get("status") == "True":
            end = parse_timestamp(finished.get("lastTransitionTime")) or now
        start = parse_timestamp(admitted.get("lastTransitionTime")) or now
        exec_time = human_duration((end - start).total_seconds())
    types: list[str] = []
    names: list[str] = []
    for ref in wl["metadata"].get("ownerReferences") or []:
        for res in r.api_resources.get(ref.get("apiVersion", "")) or []:
            if res.get("kind") == ref.get("kind") and res.get("singularName"):
                if (t := _crd_type(res)) not in types:
                    types.append(t)
                break
        if ref.get("name") not in names:
            names.append(ref.get("name"))
    return [
        wl["metadata"]["name"],
        ", ".join(types),
        ", ".join(str(n) for n in names),
        (wl.get("spec") or {}).get("queueName", ""),
        cq,
        workload_status(wl).upper(),
        position,
        exec_time,
        since(wl["metadata"].get("creationTimestamp"), now),
    ]


# --- commands ---------------------------------------------------------------------------------------


def _selector_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--field-selector",
        default="",
        help="Selector (field query) to filter on, supports '=', '==', and '!='.(e.g. --field-selector "
        "key1=value1,key2=value2). The server only supports a limited number of field queries per type.",
    )
    p.add_argument(
        "-l",
        "--selector",
        default="",
        help="Selector (label query) to filter on, supports '=', '==', and '!='.(e.g. -l key1=value1,key2=value2). "
        "Matching objects must satisfy all of the specified label constraints.",
    )


def _output_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", help="Output format. One of: (json, yaml, name).")


def _all_namespaces_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-A",
        "--all-namespaces",
        action="store_true",
        help="If present, list the requested object(s) across all namespaces. Namespace in current context is "
        "ignored even if specified with --namespace.",
    )


def parse_bool(text: str, flag: str) -> bool:
    """``strconv.ParseBool`` as pflag's bool slice parses each value."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise CommandError(f'invalid argument "{text}" for "{flag}" flag: strconv.ParseBool: parsing "{text}": invalid syntax')


def add_list_parsers(sub: Any, add_connection: Callable[[argparse.ArgumentParser], None]) -> None:
    """``list`` and its subcommands."""
    lp = sub.add_parser("list", help="Display resources", description="Display resources")
    ls = lp.add_subparsers(dest="kind", required=True, metavar="{clusterqueue,localqueue,workload,resourceflavor}")

    cq = ls.add_parser(
        "clusterqueue",
        aliases=["cq", "clusterqueues"],
        help="List ClusterQueues",
        description="Lists all ClusterQueues, potentially limiting output to those that are active/inactive and "
        "matching the label selector.",
    )
    _output_flag(cq)
    _selector_flags(cq)
    cq.add_argument(
        "--active", action="append", default=[], help="Filter by active status. Valid values: 'true' and 'false'."
    )
    add_connection(cq)
    cq.set_defaults(func=run_list_cluster_queues)

    lq = ls.add_parser(
        "localqueue",
        aliases=["lq", "localqueues"],
        help="List LocalQueue",
        description="Lists LocalQueues that match the given criteria: point to a specific CQ, being active/inactive, "
        "belonging to the specified namespace, matching the label selector or the field selector.",
    )
    _output_flag(lq)
    _all_namespaces_flag(lq)
    _selector_flags(lq)
    lq.add_argument(
        "-c", "--clusterqueue", default="", help="Filter by cluster queue name which is associated with the resource."
    )
    add_connection(lq)
    lq.set_defaults(func=run_list_local_queues)

    wl = ls.add_parser(
        "workload",
        aliases=["kwl", "kueueworkload", "kueueworkloads", "workloads"],
        help="List Workload",
        description="Lists Workloads that match the provided criteria.",
    )
    _output_flag(wl)
    _all_namespaces_flag(wl)
    _selector_flags(wl)
    wl.add_argument(
        "-c", "--clusterqueue", default="", help="Filter by cluster queue name which is associated with the resource."
    )
    wl.add_argument(
        "-q", "--localqueue", default="", help="Filter by local queue name which is associated with the resource."
    )
    wl.add_argument("--for", dest="for_object", default="", help="Filter only those pertaining to the specified resource.")
    wl.add_argument(
        "--status",
        action="append",
        default=[],
        help='Filter workloads by status. Must be "all", "pending", "admitted" or "finished"',
    )
    add_connection(wl)
    wl.set_defaults(func=run_list_workloads)

    rf = ls.add_parser("resourceflavor", aliases=["rf", "resourceflavors"], help="List ResourceFlavor")
    _output_flag(rf)
    _selector_flags(rf)
    add_connection(rf)
    rf.set_defaults(func=run_list_resource_flavors)


def check_output(fmt: str | None) -> None:
    if fmt is not None and fmt not in ("json", "yaml", "name"):
        raise CommandError(
            f'unable to match a printer suitable for the output format "{fmt}", allowed formats are: json,name,yaml'
        )


def _print_pages(pages: Sequence[Obj], fmt: str, out: Any) -> None:
    for page in pages:
        if fmt == "name":
            for item in page.get("items") or []:
                out.write(render(item, "name"))
        else:
            out.write(render(page, fmt))


def _no_resources(namespace: str | None) -> None:
    if namespace:
        print(f"No resources found in {namespace} namespace.", file=sys.stderr)
    else:
        print("No resources found", file=sys.stderr)


def _run_simple(
    args: argparse.Namespace,
    res: Resource,
    columns: Sequence[str],
    row: Callable[[Obj, datetime], list[Any]],
    keep: Callable[[Obj], bool] = lambda _obj: True,
    limit: int = 0,
) -> int:
    check_output(args.output)
    cluster = Cluster.connect(args)
    try:
        namespace = None if getattr(args, "all_namespaces", True) or not res.namespaced else cluster.namespace
        with progress(f"listing {res.plural}"):
            pages = list(cluster.pages(res, namespace, args.selector, args.field_selector, limit))
    finally:
        cluster.close()
    for page in pages:
        page["items"] = [o for o in page.get("items") or [] if keep(o)]
    items = [o for page in pages for o in page["items"]]
    if args.output:
        _print_pages(pages, args.output, sys.stdout)
    elif items:
        now = datetime.now(UTC)
        namespaces = [o["metadata"].get("namespace", "") for o in items] if args_wide_ns(args, res) else None
        sys.stdout.write(table(columns, [row(o, now) for o in items], namespaces=namespaces))
    if not items:
        _no_resources(namespace if res.namespaced else None)
    return 0


def args_wide_ns(args: argparse.Namespace, res: Resource) -> bool:
    return res.namespaced and bool(getattr(args, "all_namespaces", False))


def run_list_cluster_queues(args: argparse.Namespace) -> int:
    active = [parse_bool(v, "--active") for text in args.active for v in text.split(",")]
    if len(active) > 1:
        raise CommandError("only one active flag can be provided")

    def keep(cq: Obj) -> bool:
        return not active or _true(cq, "Active") == active[0]

    return _run_simple(args, R.CLUSTER_QUEUES, CQ_COLUMNS, cluster_queue_row, keep)


def run_list_local_queues(args: argparse.Namespace) -> int:
    limit = list_request_limit()

    def keep(lq: Obj) -> bool:
        return not args.clusterqueue or (lq.get("spec") or {}).get("clusterQueue") == args.clusterqueue

    return _run_simple(args, R.LOCAL_QUEUES, LQ_COLUMNS, local_queue_row, keep, limit)


def run_list_resource_flavors(args: argparse.Namespace) -> int:
    return _run_simple(args, R.RESOURCE_FLAVORS, RF_COLUMNS, resource_flavor_row, limit=list_request_limit())


def _statuses(values: Sequence[str]) -> set[str]:
    out: set[str] = set()
    for value in values:
        if value.lower() not in STATUSES:
            raise CommandError(f"invalid status value ({value}). {STATUS_MESSAGE}")
        out.add(value.lower())
    return out


def run_list_workloads(args: argparse.Namespace) -> int:
    limit = list_request_limit()
    statuses = _statuses(args.status)
    check_output(args.output)
    cluster = Cluster.connect(args)
    try:
        namespace = None if args.all_namespaces else cluster.namespace
        owner_uid = ""
        if args.for_object:
            owner = _for_object(cluster, args.for_object, namespace)
            if owner is None:
                _no_resources(namespace)
                return 0
            owner_uid = str(owner["metadata"].get("uid", ""))
        with progress("listing workloads"):
            pages, resources = _workload_pages(cluster, args, namespace, limit, statuses, owner_uid)
    finally:
        cluster.close()
    items = [wl for page in pages for wl in page["items"]]
    if args.output:
        _print_pages(pages, args.output, sys.stdout)
    elif items:
        now = datetime.now(UTC)
        namespaces = [wl["metadata"].get("namespace", "") for wl in items] if args.all_namespaces else None
        sys.stdout.write(table(WL_COLUMNS, [workload_row(wl, resources, now) for wl in items], namespaces=namespaces))
    if not items:
        _no_resources(namespace)
    return 0


def _workload_pages(
    cluster: Cluster,
    args: argparse.Namespace,
    namespace: str | None,
    limit: int,
    statuses: set[str],
    owner_uid: str,
) -> tuple[list[Obj], WorkloadResources]:
    selector = args.selector
    if owner_uid:
        selector = (selector + "," if selector else "") + f"{JOB_UID_LABEL}={owner_uid}"
    pages = list(cluster.pages(R.WORKLOADS, namespace, selector, args.field_selector, limit))
    by_owner = False
    if owner_uid and not any(p.get("items") for p in pages):
        # Workloads created before the job-uid label existed: match the owner reference instead.
        pages = list(cluster.pages(R.WORKLOADS, namespace, args.selector, args.field_selector, limit))
        by_owner = True

    def keep(wl: Obj) -> bool:
        if args.localqueue and (wl.get("spec") or {}).get("queueName") != args.localqueue:
            return False
        if args.clusterqueue and _admission_cq(wl) != args.clusterqueue:
            return False
        if statuses and "all" not in statuses and workload_status(wl).lower() not in statuses:
            return False
        refs = wl["metadata"].get("ownerReferences") or []
        return not by_owner or any(r.get("uid") == owner_uid for r in refs)

    r = WorkloadResources()
    summaries: dict[str, Obj | None] = {}
    for page in pages:
        page["items"] = [wl for wl in page.get("items") or [] if keep(wl)]
        for wl in page["items"]:
            _lookups(cluster, wl, r, summaries)
    return pages, r


def _lookups(cluster: Cluster, wl: Obj, r: WorkloadResources, summaries: dict[str, Obj | None]) -> None:
    """``localQueues``, ``pendingWorkloads`` and ``apiResources`` for one Workload."""
    cq = _admission_cq(wl)
    key = _lq_key(wl)
    if not cq and key not in r.local_queues:
        ns, _, name = key.partition("/")
        try:
            r.local_queues[key] = cluster.get(R.LOCAL_QUEUES, name, ns) if name else None
        except APIError as err:
            if err.code != 404:
                raise
            r.local_queues[key] = None
    if workload_status(wl) == "pending":
        if not cq:
            lq = r.local_queues.get(key)
            cq = str((lq.get("spec") or {}).get("clusterQueue", "")) if lq else ""
        if cq:
            if cq not in summaries:
                summaries[cq] = cluster.pending_workloads(f"/clusterqueues/{cq}/pendingworkloads")
            summary = summaries[cq]
            for item in (summary or {}).get("items") or []:
                meta = item.get("metadata") or {}
                if meta.get("name") == wl["metadata"]["name"] and meta.get("namespace") == wl["metadata"].get("namespace"):
                    r.pending[_wl_key(wl)] = item
    for ref in wl["metadata"].get("ownerReferences") or []:
        api_version = str(ref.get("apiVersion", ""))
        if api_version not in r.api_resources:
            r.api_resources[api_version] = cluster.resources_for(api_version)


def _for_object(cluster: Cluster, spec: str, namespace: str | None) -> Obj | None:
    """``--for TYPE[.GROUP]/NAME``: the object, found through discovery (None: not found)."""
    parts = spec.split("/")
    if len(parts) != 2:
        if len(parts) > 2:
            raise CommandError("arguments in resource/name form may not have more than one slash")
        raise CommandError("--for must be in resource/name form")
    type_text, name = parts[0].lower(), parts[1]
    wanted, _, group = type_text.partition(".")
    for gv in cluster.preferred_group_versions():
        gv_group = gv.rpartition("/")[0] if "/" in gv else ""
        if group and gv_group != group:
            continue
        for res in cluster.resources_for(gv) or []:
            if "/" in res["name"]:
                continue
            names = {res["name"], res.get("singularName", ""), res.get("kind", "").lower(), *res.get("shortNames", [])}
            if wanted in names:
                resource = Resource(gv_group, gv.rpartition("/")[2], res["name"], res["kind"], bool(res["namespaced"]))
                ns = namespace if resource.namespaced else None
                for page in cluster.pages(resource, ns, "", f"metadata.name={name}", 0):
                    for item in page.get("items") or []:
                        found: Obj = item
                        return found
                return None
    raise CommandError(f'the server doesn\'t have a resource type "{parts[0]}"')
