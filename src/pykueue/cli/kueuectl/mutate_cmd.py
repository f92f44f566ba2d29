"""``create``, ``stop`` and ``resume`` (upstream ``cmd/kueuectl/app/{create,stop,resume}``)."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

from pykueue.api.quantity import is_valid_quantity
from pykueue.cli.kueuectl.client import Cluster, CommandError
from pykueue.cli.kueuectl.list_cmd import check_output
from pykueue.cli.kueuectl.printing import render
from pykueue.client import resources as R
from pykueue.client.interface import Resource
from pykueue.kube.validation import is_qualified_name, is_valid_label_value

Obj = dict[str, Any]
API_VERSION = f"{R.KUEUE}/{R.KUEUE_VERSION}"
_RESOURCES_SPEC = re.compile(
    r"^([a-z0-9][a-z0-9\-\.]{0,252}):((\w+[\.-]?)*\/?\w+=\w+;)*(\w+[\.-]?)*\/?\w+=\w+;?$", re.ASCII
)
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


# --- flags ------------------------------------------------------------------------------------------


def _dry_run(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--dry-run",
        default="none",
        help='Must be "none", "server", or "client". If client strategy, only print the object that would be sent, '
        "without sending it. If server strategy, submit server-side request without persisting the resource.",
    )
    p.add_argument("-o", "--output", help="Output format. One of: (json, yaml, name).")


def dry_run_strategy(value: str) -> str:
    if value not in ("none", "server", "client"):
        raise CommandError(f'invalid dry-run value ({value}). Must be "none", "server", or "client"')
    return value


def _operation(operation: str, strategy: str) -> str:
    """``PrintFlagsWithStrategy``: ``created (server dry run)``."""
    if strategy == "none":
        return operation
    return f"{operation} ({strategy} dry run)"


def _emit(obj: Obj, args: argparse.Namespace, operation: str) -> None:
    sys.stdout.write(render(obj, args.output or "name", _operation(operation, args.dry_run)))


def _split_csv(values: Sequence[str]) -> list[str]:
    """pflag ``StringSlice``: each use is comma-separated."""
    return [part for value in values for part in value.split(",") if value]


def _string_to_string(values: Sequence[str], flag: str) -> dict[str, str]:
    """pflag ``StringToString``: ``k=v,k2=v2``."""
    out: dict[str, str] = {}
    for part in _split_csv(values):
        key, sep, value = part.partition("=")
        if not sep:
            raise CommandError(f'invalid argument "{",".join(values)}" for "--{flag}" flag: {part} must be formatted as key=value')
        out[key] = value
    return out


# --- create clusterqueue ------------------------------------------------------------------------------


def _resource_groups(nominal: list[str], borrowing: list[str], lending: list[str]) -> list[Obj]:
    """``parseResourceGroups``: flavors merged by name, then by covered resources."""
    groups: list[Obj] = []
    for specs, kind in ((nominal, "nominalQuota"), (borrowing, "borrowingLimit"), (lending, "lendingLimit")):
        for spec in specs:
            if not _RESOURCES_SPEC.match(spec):
                raise CommandError("invalid resources specification")
            flavor, _, resources = (x.strip() for x in spec.partition(":"))
            quotas: list[Obj] = []
            covered: list[str] = []
            for item in resources.split(";"):
                name, _, quantity = (x.strip() for x in item.partition("="))
                covered.append(name)
                if not is_valid_quantity(quantity):
                    raise CommandError("invalid resource quota")
                quotas.append({"name": name, kind: quantity})
            groups.append({"coveredResources": covered, "flavors": [{"name": flavor, "resources": quotas}]})
    by_flavor: list[Obj] = []
    index: dict[str, int] = {}
    for rg in groups:
        flavor = rg["flavors"][0]
        if flavor["name"] not in index:
            index[flavor["name"]] = len(by_flavor)
            by_flavor.append(rg)
            continue
        merged = by_flavor[index[flavor["name"]]]["flavors"][0]
        others = {q["name"]: q for q in flavor["resources"]}
        merged_quotas: list[Obj] = []
        for q in merged["resources"]:
            other = others.get(q["name"])
            if other is None:
                raise CommandError("invalid flavor")
            merged_quotas.append({**other, **q, "nominalQuota": q.get("nominalQuota") or other.get("nominalQuota", "0")})
        merged["resources"] = merged_quotas
    out: list[Obj] = []
    by_covered: dict[str, int] = {}
    for rg in by_flavor:
        key = ".".join(sorted(rg["coveredResources"]))
        if key in by_covered:
            out[by_covered[key]]["flavors"].extend(rg["flavors"])
            continue
        if any(key in existing for existing in by_covered):
            raise CommandError("invalid resource group")
        by_covered[key] = len(out)
        out.append(rg)
    for rg in out:
        for flavor in rg["flavors"]:
            for q in flavor["resources"]:
                q.setdefault("nominalQuota", "0")
                # Field order as the typed ResourceQuota serialises.
                ordered = {"name": q["name"], "nominalQuota": q["nominalQuota"]}
                ordered.update({k: q[k] for k in ("borrowingLimit", "lendingLimit") if k in q})
                q.clear()
                q.update(ordered)
    return out


def run_create_cluster_queue(args: argparse.Namespace) -> int:
    strategy = dry_run_strategy(args.dry_run)
    check_output(args.output)
    spec: Obj = {}
    if args.cohort:
        spec["cohortName"] = args.cohort
    spec["queueingStrategy"] = args.queuing_strategy if args.queuing_strategy is not None else "BestEffortFIFO"
    selector = _string_to_string(args.namespace_selector, "namespace-selector")
    spec["namespaceSelector"] = {"matchLabels": selector} if selector else {}
    spec["preemption"] = {
        "reclaimWithinCohort": args.reclaim_within_cohort if args.reclaim_within_cohort is not None else "Never",
        "withinClusterQueue": args.preemption_within_cluster_queue
        if args.preemption_within_cluster_queue is not None
        else "Never",
    }
    groups = _resource_groups(_split_csv(args.nominal_quota), _split_csv(args.borrowing_limit), _split_csv(args.lending_limit))
    if groups:
        spec["resourceGroups"] = groups
    cq: Obj = {"kind": "ClusterQueue", "apiVersion": API_VERSION, "metadata": {"name": args.name}, "spec": spec}
    return _create(args, R.CLUSTER_QUEUES, cq, strategy)


def _create(args: argparse.Namespace, res: Resource, obj: Obj, strategy: str, check: Callable[[Cluster], None] | None = None) -> int:
    if strategy != "client" or check is not None:
        cluster = Cluster.connect(args)
        try:
            if check is not None:
                check(cluster)
            if strategy != "client":
                obj = cluster.create(res, obj, strategy == "server")
        finally:
            cluster.close()
    _emit(obj, args, "created")
    return 0


# --- create localqueue / resourceflavor ----------------------------------------------------------------


def run_create_local_queue(args: argparse.Namespace) -> int:
    strategy = dry_run_strategy(args.dry_run)
    check_output(args.output)
    if not args.clusterqueue:
        raise CommandError("clusterqueue must be specified")
    cluster = Cluster.connect(args)
    namespace = cluster.namespace
    cluster.close()
    lq: Obj = {
        "kind": "LocalQueue",
        "apiVersion": API_VERSION,
        "metadata": {"name": args.name, "namespace": namespace},
        "spec": {"clusterQueue": args.clusterqueue},
    }

    def check(c: Cluster) -> None:
        if not args.ignore_unknown_cq:
            c.get(R.CLUSTER_QUEUES, args.clusterqueue)

    return _create(args, R.LOCAL_QUEUES, lq, strategy, check)


def _split_spec_item(text: str) -> tuple[str, str, str]:
    parts = text.split(":")
    if len(parts) > 2:
        raise ValueError
    kv = parts[0].split("=")
    if len(kv) > 2:
        raise ValueError
    return kv[0], kv[1] if len(kv) > 1 else "", parts[1] if len(parts) > 1 else ""


def _check_key_value(kind: str, text: str, key: str, value: str) -> None:
    errs = is_qualified_name(key) if key or kind == "taint" else []
    if value:
        errs += is_valid_label_value(value)
    if errs:
        raise CommandError(f"invalid {kind} spec: {text}, {'; '.join(errs)}")


def _effect(effect: str) -> None:
    if effect not in TAINT_EFFECTS:
        raise CommandError(f"invalid taint effect: {effect}, unsupported taint effect")


def parse_taints(specs: Sequence[str]) -> list[Obj]:
    taints: list[Obj] = []
    seen: set[tuple[str, str]] = set()
    for text in specs:
        if not text:
            raise CommandError("invalid taint spec")
        try:
            key, value, effect = _split_spec_item(text)
        except ValueError:
            raise CommandError(f"invalid taint spec: {text}") from None
        if not effect:
            raise CommandError(f"invalid taint spec: {text}")
        _effect(effect)
        _check_key_value("taint", text, key, value)
        if (effect, key) in seen:
            raise CommandError(f"duplicated taints with the same key and effect: {{{key} {value} {effect} <nil>}}")
        seen.add((effect, key))
        taint: Obj = {"key": key, "effect": effect}
        if value:
            taint = {"key": key, "value": value, "effect": effect}
        taints.append(taint)
    return taints


def parse_tolerations(specs: Sequence[str]) -> list[Obj]:
    out: list[Obj] = []
    for text in specs:
        if not text:
            raise CommandError("invalid toleration spec")
        try:
            key, value, effect = _split_spec_item(text)
        except ValueError:
            raise CommandError(f"invalid toleration spec: {text}") from None
        if not key and value:
            raise CommandError(f"invalid toleration spec: {text}")
        if effect:
            _effect(effect)
        _check_key_value("toleration", text, key, value)
        tol: Obj = {}
        if key:
            tol["key"] = key
        tol["operator"] = "Exists" if not key or not value else "Equal"
        if value:
            tol["value"] = value
        if effect:
            tol["effect"] = effect
        out.append(tol)
    return out


def run_create_resource_flavor(args: argparse.Namespace) -> int:
    strategy = dry_run_strategy(args.dry_run)
    check_output(args.output)
    spec: Obj = {}
    labels = _string_to_string(args.node_labels, "node-labels")
    if labels:
        spec["nodeLabels"] = labels
    taints = parse_taints(_split_csv(args.node_taints))
    if taints:
        spec["nodeTaints"] = taints
    tolerations = parse_tolerations(_split_csv(args.tolerations))
    if tolerations:
        spec["tolerations"] = tolerations
    rf: Obj = {"kind": "ResourceFlavor", "apiVersion": API_VERSION, "metadata": {"name": args.name}, "spec": spec}
    return _create(args, R.RESOURCE_FLAVORS, rf, strategy)


# --- stop / resume ------------------------------------------------------------------------------------


def _patch(args: argparse.Namespace, res: Resource, patch: Obj, operation: str) -> int:
    strategy = dry_run_strategy(args.dry_run)
    check_output(args.output)
    cluster = Cluster.connect(args)
    try:
        namespace = cluster.namespace if res.namespaced else None
        obj = cluster.get(res, args.name, namespace)
        if strategy == "client":
            _merge(obj, patch)
        else:
            obj = cluster.merge_patch(res, args.name, namespace, patch, strategy == "server")
    finally:
        cluster.close()
    _emit(obj, args, operation)
    return 0


def _merge(obj: Obj, patch: Obj) -> None:
    for key, value in patch.items():
        if isinstance(value, dict):
            _merge(obj.setdefault(key, {}), value)
        else:
            obj[key] = value


def run_stop(args: argparse.Namespace) -> int:
    if args.kind == "workload":
        return _patch(args, R.WORKLOADS, {"spec": {"active": False}}, "stopped")
    policy = "Hold" if args.keep_already_running else "HoldAndDrain"
    res = R.CLUSTER_QUEUES if args.kind == "clusterqueue" else R.LOCAL_QUEUES
    return _patch(args, res, {"spec": {"stopPolicy": policy}}, "")


def run_resume(args: argparse.Namespace) -> int:
    if args.kind == "workload":
        return _patch(args, R.WORKLOADS, {"spec": {"active": True}}, "resumed")
    res = R.CLUSTER_QUEUES if args.kind == "clusterqueue" else R.LOCAL_QUEUES
    return _patch(args, res, {"spec": {"stopPolicy": "None"}}, "")


# --- parsers ------------------------------------------------------------------------------------------


def add_mutating_parsers(sub: Any, add_connection: Callable[[argparse.ArgumentParser], None]) -> None:
    cp = sub.add_parser("create", help="Create a resource", description="Create a resource")
    cs = cp.add_subparsers(dest="kind", required=True, metavar="{clusterqueue,localqueue,resourceflavor}")

    cq = cs.add_parser("clusterqueue", aliases=["cq"], help="Creates a clusterqueue",
                       description="Creates a ClusterQueue with the given name.")  # fmt: skip
    cq.add_argument("name", metavar="NAME")
    cq.add_argument("--cohort", default="", help="The cohort that this ClusterQueue belongs to.")
    cq.add_argument("--queuing-strategy", help="The queueing strategy of the workloads across the queues in this ClusterQueue.")
    cq.add_argument("--namespace-selector", action="append", default=[],
                    help="Defines which namespaces are allowed to submit workloads to this clusterQueue.")  # fmt: skip
    cq.add_argument("--reclaim-within-cohort", help="Determines whether a pending Workload can preempt Workloads from "
                    "other ClusterQueues in the cohort that are using more than their nominal quota.")  # fmt: skip
    cq.add_argument("--preemption-within-cluster-queue", help="Determines whether a pending Workload that doesn't fit "
                    "within the nominal quota for its ClusterQueue, can preempt active Workloads in the ClusterQueue.")  # fmt: skip
    cq.add_argument("--nominal-quota", action="append", default=[], metavar="RESOURCE_FLAVOR:RESOURCE=VALUE",
                    help="The quantity of this resource that is available for Workloads admitted by this ClusterQueue "
                    "at a point in time.")  # fmt: skip
    cq.add_argument("--borrowing-limit", action="append", default=[], metavar="RESOURCE_FLAVOR:RESOURCE=VALUE",
                    help="The maximum amount of quota for the [flavor, resource] combination that this ClusterQueue is "
                    "allowed to borrow from the unused quota of other ClusterQueues in the same cohort.")  # fmt: skip
    cq.add_argument("--lending-limit", action="append", default=[], metavar="RESOURCE_FLAVOR:RESOURCE=VALUE",
                    help="The maximum amount of unused quota for the [flavor, resource] combination that this "
                    "ClusterQueue can lend to other ClusterQueues in the same cohort.")  # fmt: skip
    _dry_run(cq)
    add_connection(cq)
    cq.set_defaults(func=run_create_cluster_queue)

    lq = cs.add_parser("localqueue", aliases=["lq"], help="Creates a localqueue",
                       description="Create a local queue with the given name in the specified namespace.")  # fmt: skip
    lq.add_argument("name", metavar="NAME")
    lq.add_argument("-c", "--clusterqueue", default="",
                    help="The cluster queue name which will be associated with the local queue (required).")  # fmt: skip
    lq.add_argument("-i", "--ignore-unknown-cq", action="store_true", help="Ignore unknown cluster queue.")
    _dry_run(lq)
    add_connection(lq)
    lq.set_defaults(func=run_create_local_queue)

    rf = cs.add_parser("resourceflavor", aliases=["rf"], help="Creates a resource flavor",
                       description="Create a resource flavor with the given name.")  # fmt: skip
    rf.add_argument("name", metavar="NAME")
    rf.add_argument("--node-labels", action="append", default=[],
                    help="Labels that associate the ResourceFlavor with Nodes that have the same labels.")  # fmt: skip
    rf.add_argument("--node-taints", action="append", default=[],
                    help="Taints that the nodes associated with this ResourceFlavor have.")  # fmt: skip
    rf.add_argument("--tolerations", action="append", default=[], help="Extra tolerations that will be added to the "
                    "pods admitted in the quota associated with this resource flavor.")  # fmt: skip
    _dry_run(rf)
    add_connection(rf)
    rf.set_defaults(func=run_create_resource_flavor)

    for verb, short, run in (("stop", "Stop the resource", run_stop), ("resume", "Resume the resource", run_resume)):
        vp = sub.add_parser(verb, help=short, description=short)
        vs = vp.add_subparsers(dest="kind", required=True, metavar="{workload,localqueue,clusterqueue}")
        for kind, aliases, what in (
            ("workload", ["kueueworkload", "kueueworkloads", "kwl"], "Workload"),
            ("localqueue", ["lq"], "LocalQueue"),
            ("clusterqueue", ["cq"], "ClusterQueue"),
        ):
            kp = vs.add_parser(kind, aliases=aliases, help=f"{verb.capitalize()} the {what}")
            kp.add_argument("name", metavar="NAME")
            if verb == "stop" and kind != "workload":
                kp.add_argument("--keep-already-running", action="store_true",
                                help="Indicates whether to keep already running workloads.")  # fmt: skip
            _dry_run(kp)
            add_connection(kp)
            kp.set_defaults(func=run, kind=kind)
