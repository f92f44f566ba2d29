"""``pykueue bench scheduler``: Kueue's scheduler benchmark against a fresh control plane or a cluster."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

EXIT_USAGE = 2


def add_parser(sub: Any) -> None:
    """Register ``bench`` and its ``scheduler`` subcommand."""
    p = sub.add_parser("bench", help="benchmarks", description="Benchmarks of pykueue (or of any Kueue).")
    bench_sub = p.add_subparsers(dest="bench", required=True)
    s = bench_sub.add_parser(
        "scheduler",
        help="Kueue's scheduler benchmark (upstream's test/performance/scheduler) over HTTP",
        description="Start a fresh embedded control plane (pykueue serve, controllers in their own process, no job "
        "runner) and play Kueue's scheduler benchmark against it from this process over HTTP: create the "
        "queues and the workloads of a generator.yaml, hold each admitted workload for its runtime and then "
        "finish it, and report the figures beside the physical limit computed from the config.",
    )
    s.add_argument(
        "--config",
        required=True,
        metavar="baseline|large-scale|FILE",
        help="a shipped configuration (upstream's baseline or large-scale) or a generator.yaml in upstream's schema",
    )
    s.add_argument(
        "--output", type=Path, default=Path("bench-scheduler"), metavar="DIR",
        help="where summary.json, timeline.png and serve.log go (default ./bench-scheduler)",
    )  # fmt: skip
    s.add_argument(
        "--kubeconfig",
        metavar="K",
        help="run against the cluster of this kubeconfig instead (its scheduler: pykueue controller or Kueue); "
        "the objects are deleted at the end by their cleanup label, as upstream's runner does",
    )
    s.add_argument(
        "--timeout", type=float, default=1800.0, metavar="SECONDS",
        help="give up when the run has not finished after this long (default 1800)",
    )  # fmt: skip
    s.add_argument(
        "--runner-workers", type=int, default=0, metavar="N",
        help="at most N status writes (Finished, eviction) in flight at once; 5 plays upstream's runner's 5 "
        "reconcile workers (default 0: each write is sent when it is due)",
    )  # fmt: skip
    s.add_argument(
        "--serve-arg", action="append", default=[], metavar="ARG",
        help="extra argument for the pykueue serve it starts (repeatable), e.g. --serve-arg=--config=FILE",
    )  # fmt: skip
    s.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pykueue.bench.config import ConfigError, load_config

    try:
        config = load_config(args.config)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    if not args.timeout > 0:
        print("error: --timeout must be greater than 0", file=sys.stderr, flush=True)
        return EXIT_USAGE
    if args.runner_workers < 0:
        print("error: --runner-workers must be 0 or more", file=sys.stderr, flush=True)
        return EXIT_USAGE
    try:
        from pykueue.bench.run import run_scheduler_bench
    except ImportError as err:
        print(f"error: {err}; install pykueue[bench]", file=sys.stderr, flush=True)
        return 1
    try:
        summary = run_scheduler_bench(
            config, args.output, args.kubeconfig, args.timeout, list(args.serve_arg),
            runner_workers=args.runner_workers,
        )  # fmt: skip
    except (RuntimeError, TimeoutError, OSError) as err:
        print(f"error: {err}", file=sys.stderr, flush=True)
        return 1
    return 0 if summary else 1
