"""``pykueue`` command line entry point."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pykueue.cli import bench, controller, dashboard, schedule, serve
from pykueue.cli.kueuectl import commands as kueuectl
from pykueue.cli.kueuectl.passthrough_cmd import passthrough


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pykueue", description="A fast, faithful Python implementation of Kueue.")
    sub = parser.add_subparsers(dest="command", required=True)
    schedule.add_parser(sub)
    serve.add_parser(sub)
    controller.add_parser(sub)
    dashboard.add_parser(sub)
    bench.add_parser(sub)
    kueuectl.add_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    passthrough(argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command in kueuectl.VERBS:
        return kueuectl.run(args, argv)
    rc: int = args.func(args)
    return rc


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
