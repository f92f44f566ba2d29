"""``pykueue schedule``: what would Kueue do next with this cluster state? (a dry run)."""

from __future__ import annotations

import argparse
import gc
import sys
from datetime import UTC, datetime
from typing import Any

from pykueue.api import manifests
from pykueue.api.conversion import to_external
from pykueue.api.meta import parse_time
from pykueue.api.validation import ValidationFailed
from pykueue.cli.explain import explain
from pykueue.cli.options import load_options
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
    group.add_argument("--until-quiet", action="store_true", help="run until nothing changes (at most 60 cycles)")
    p.add_argument("--now", help="RFC3339 time of the first cycle (default: now)")
    p.add_argument("--feature-gates", default="", help="NAME=BOOL,... overrides of feature-gate defaults")
    p.add_argument("--config", help="Kueue Configuration manifest (config.kueue.x-k8s.io v1beta1 or v1beta2)")
    p.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml")
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
        options = load_options(_read(args.config) if args.config else None, args.config or "", args.feature_gates)
    except ValueError as err:
        raise UsageError(f"error: {err}") from err
    try:
        now = parse_time(args.now) if args.now else datetime.now(UTC)
    except Exception as err:
        raise UsageError(f"error: --now {args.now!r} is not an RFC3339 time") from err
    objects: list[tuple[Any, str]] = []
    for path in args.filename:
        text = _read(path)
        try:
            for doc in manifests.load_manifests(text, source=path):
                objects.append(manifests.parse_object(doc))
        except (ValueError, ValidationFailed) as err:
            raise UsageError(f"error: {err}") from err
    cluster = SimulatedCluster(options, now)
    try:
        cluster.load(objects)
    except ValueError as err:
        raise UsageError(f"error: {err}") from err
    # The loaded state lives until exit: keep it out of cyclic-GC scans (large states pay
    # otherwise for repeated full collections; see bench/RESULTS.md).
    gc.collect()
    gc.freeze()
    run_result = cluster.run(cycles=args.cycles, until_quiet=args.until_quiet)
    cluster.finalize_status()
    docs = [to_external(obj, version) for obj, version in cluster.output()]
    if args.show_events:
        docs.extend(_event_docs(cluster))
    if args.output == "json":
        sys.stdout.write(manifests.dump_json(docs))
        if args.explain:
            sys.stderr.write(explain(cluster, run_result))
    else:
        sys.stdout.write(manifests.dump_yaml(docs))
        if args.explain:
            text = explain(cluster, run_result)
            sys.stdout.write("".join(f"# {line}\n" if line else "#\n" for line in text.splitlines()))
    return 0


def _event_docs(cluster: SimulatedCluster) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for i, ev in enumerate(cluster.events):
        docs.append(
            {
                "apiVersion": "events.k8s.io/v1",
                "kind": "Event",
                "metadata": {"name": f"{ev.name}.{i:05d}", "namespace": ev.namespace},
                "regarding": {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": ev.kind, "name": ev.name,
                              "namespace": ev.namespace},
                "type": ev.type,
                "reason": ev.reason,
                "action": ev.reason,
                "note": ev.note,
                "reportingController": "kueue-admission",
            }
        )
    return docs
