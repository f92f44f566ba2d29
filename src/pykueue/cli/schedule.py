"""``pykueue schedule``: what would Kueue do next with this cluster state? (a dry run)."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import Any

from pykueue.api import manifests
from pykueue.api.config import load_config
from pykueue.api.conversion import to_external
from pykueue.api.kueue import ResourceFlavor
from pykueue.api.meta import parse_time
from pykueue.cli.explain import explain
from pykueue.cli.kueuectl.printing import progress
from pykueue.cli.serve import freeze_gc
from pykueue.cli.state import AdmittedJob, Document, StateError, admit_state
from pykueue.controllers.jobs import batch_job as bj
from pykueue.controllers.options import ControllerOptions
from pykueue.core.events import NORMAL, Event
from pykueue.core.workload.info import is_admitted
from pykueue.sim.cluster import SimulatedCluster

EXIT_INVALID = 2


class UsageError(Exception):
    """Invalid input; the message names the object, the field and the rule."""


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "schedule",
        help="dry run: run scheduling cycles on a cluster state and print the result",
        description="Load a cluster state (multi-document YAML or a List), run scheduling cycles exactly as "
        "Kueue would, and print every object with the statuses Kueue would write.",
    )
    p.add_argument("-f", "--filename", action="append", required=True, help="state file (YAML/JSON); '-' for stdin")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--cycles", type=int, default=1, help="number of scheduling cycles (default 1)")
    group.add_argument(
        "--until-quiet",
        action="store_true",
        help="run until nothing changes and nothing is due any more; idle time before the next "
        "backoff or retry delay is skipped (at most 60 cycles)",
    )
    p.add_argument("--now", help="RFC3339 time of the first cycle (default: now)")
    p.add_argument("--feature-gates", default="", help="NAME=BOOL,... overrides of feature-gate defaults")
    p.add_argument("--config", help="Kueue Configuration manifest (config.kueue.x-k8s.io v1beta1 or v1beta2)")
    p.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml")
    p.add_argument(
        "--validate",
        choices=("strict", "true", "false"),
        default="strict",
        help="as kubectl: unknown fields are errors (strict, true, the default) or dropped (false)",
    )
    p.add_argument(
        "--explain",
        action="store_true",
        help="also explain why each pending workload is not admitted (YAML comments; stderr with -o json)",
    )
    p.add_argument("--show-events", action="store_true", help="also print the events Kueue would record")
    p.set_defaults(func=run)


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError as err:
        raise UsageError(f"error: cannot read {path}: {err.strerror}") from err


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except UsageError as err:
        print(str(err), file=sys.stderr)
        return EXIT_INVALID


def _run(args: argparse.Namespace) -> int:
    if args.cycles < 1:
        raise UsageError("error: --cycles must be at least 1")
    try:
        config = load_config(
            _read(args.config) if args.config else None,
            source=args.config or "<config>",
            feature_gates_flag=args.feature_gates or None,
        )
    except ValueError as err:
        raise UsageError(f"error: {err}") from err
    controller_options = ControllerOptions.from_config(config)
    options = controller_options.scheduler
    try:
        now = parse_time(args.now) if args.now else datetime.now(UTC)
    except Exception as err:
        raise UsageError(f"error: --now {args.now!r} is not an RFC3339 time") from err
    # Big states take seconds per phase: each phase shows a spinner on a terminal (stderr) once it
    # has run for a second; pipes and files get nothing, so the output stays the same.
    documents: list[Document] = []
    for path in args.filename:
        try:
            source = "<stdin>" if path == "-" else path
            with progress(f"reading {source}"):
                loaded = manifests.load_yaml_documents(_read(path), source=source)
                documents.extend(
                    Document(obj, source, index)
                    for index, doc in loaded
                    for obj in manifests.flatten(doc, source, index)
                )
        except ValueError as err:
            raise UsageError(f"error: {err}") from err
    try:
        with progress(f"validating {len(documents)} objects"):
            state = admit_state(documents, controller_options, validate=args.validate != "false", now=now)
    except StateError as err:
        raise UsageError(f"error: {err}") from err
    for warning in state.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    cluster = SimulatedCluster(options, now)
    try:
        with progress(f"loading {len(state.objects)} objects"):
            cluster.load(state.objects)
    except ValueError as err:
        raise UsageError(f"error: {err}") from err
    freeze_gc()  # the loaded state lives until exit
    cycles = "until quiet (at most 60 cycles)" if args.until_quiet else f"{args.cycles} cycle(s)"
    with progress(f"scheduling {len(cluster.objects)} objects, {cycles}"):
        run_result = cluster.run(cycles=args.cycles, until_quiet=args.until_quiet)
        cluster.settle()
        cluster.finalize_status()
    with progress("writing the result"):
        docs = [to_external(obj, version) for obj, version in cluster.output()]
        jobs, started = _job_docs(cluster, state.jobs, controller_options)
        docs.extend(jobs)
        if args.show_events:
            docs.extend(_event_docs([*state.events, *_with_started(cluster.events, started)]))
        text = manifests.dump_json(docs) if args.output == "json" else manifests.dump_yaml(docs)
        explained = explain(cluster, run_result) if args.explain else ""
    sys.stdout.write(text)
    if args.explain and args.output == "json":
        sys.stderr.write(explained)
    elif args.explain:
        sys.stdout.write("".join(f"# {line}\n" if line else "#\n" for line in explained.splitlines()))
    return 0


def _job_docs(
    cluster: SimulatedCluster, jobs: list[AdmittedJob], options: ControllerOptions
) -> tuple[list[dict[str, Any]], dict[str, Event]]:
    """Each Job as the Job integration leaves it: suspended, or started once its Workload is admitted
    (the flavors' node labels and tolerations, Kueue's pod labels; ``jobframework``'s ``startJob``),
    and the ``Started`` Events of the Jobs it started, by Workload key."""
    flavors = {
        lo.obj.metadata.name: lo.obj for lo in cluster.objects.values() if isinstance(lo.obj, ResourceFlavor)
    }
    docs = []
    started: dict[str, Event] = {}
    for admitted in jobs:
        job = admitted.job
        wl = cluster.get_workload(admitted.workload_key) if admitted.workload_key else None
        if wl is not None and is_admitted(wl) and bj.is_suspended(job):
            try:
                injections = bj.pod_set_injection(wl, flavors, options.scheduler.gate("AssignQueueLabelsForPods"))
                job = bj.start_job(job, wl, injections)
                meta = job["metadata"]
                started[admitted.workload_key or ""] = Event(
                    str(meta.get("namespace") or ""), str(meta["name"]), NORMAL, bj.EVENT_STARTED,
                    bj.started_message(wl), kind="Job", controller=bj.JOB_CONTROLLER,
                )  # fmt: skip
            except (bj.StartJobError, bj.FlavorNotFound):
                pass  # the Job stays suspended, as a failed start leaves it
        docs.append(job)
    return docs, started


def _with_started(events: list[Event], started: dict[str, Event]) -> list[Event]:
    """The cycles' Events with each Job's ``Started`` right after the last ``Admitted`` of its
    Workload (``started`` by Workload key), where the Job integration reacts to it."""
    last = {f"{ev.namespace}/{ev.name}": i for i, ev in enumerate(events) if ev.kind == "Workload" and ev.reason == "Admitted"}
    after = {i: started[key] for key, i in last.items() if key in started}
    out: list[Event] = []
    for i, ev in enumerate(events):
        out.append(ev)
        if i in after:
            out.append(after[i])
    out.extend(ev for key, ev in started.items() if key not in last)  # admitted in the loaded state
    return out


_REGARDING_API_VERSION = {"Job": "batch/v1"}


def _event_docs(events: list[Event]) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for i, ev in enumerate(events):
        docs.append(
            {
                "apiVersion": "events.k8s.io/v1",
                "kind": "Event",
                "metadata": {"name": f"{ev.name}.{i:05d}", "namespace": ev.namespace},
                "regarding": {"apiVersion": _REGARDING_API_VERSION.get(ev.kind, "kueue.x-k8s.io/v1beta2"),
                              "kind": ev.kind, "name": ev.name, "namespace": ev.namespace},
                "type": ev.type,
                "reason": ev.reason,
                "action": ev.reason,
                "note": ev.note,
                "reportingController": ev.controller,
            }
        )
    return docs
