"""CPU instructions per create through the API server's request path (deterministic, unlike time).

Usage: python bench/instructions.py [--kind workloads] [--small 300] [--large 1300] [--src DIR]

Runs an in-process create loop like ``bench/profile_api.py``'s (the manifests of ``bench/api.py``
through ``Handlers.handle`` on a real SQLite store, no HTTP) under ``valgrind --tool=callgrind`` twice,
with ``--small`` and ``--large`` creates, and prints the difference of the instruction counts
divided by the difference of the creates: the instructions one create costs, start-up excluded.
On a shared machine wall-clock figures move by ±20 % between identical runs; this count moves by
well under 1 %, so it is what a change to the write path is judged by. ``--src`` measures another
checkout (e.g. a ``git worktree`` of an older commit). Needs valgrind (``apt-get install
valgrind``); about a minute per kind.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def inner(kind: str, count: int, src: str) -> None:
    """The measured program: ``count`` creates of ``kind`` through ``Handlers.handle``."""
    sys.path.insert(0, src)
    sys.path.insert(0, str(ROOT / "bench"))
    from api import PATHS, manifest  # no pykueue imports: those come from ``src``
    from pykueue.apiserver.app import APIServerApp, parse_resource_path
    from pykueue.store import Store

    path = PATHS[kind]
    if path.startswith("/apis/"):
        group, version, rest = path[6:].split("/", 2)
    else:
        group, (version, rest) = "", path[5:].split("/", 1)
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(str(Path(tmp) / "pykueue.db"))
        app = APIServerApp(store)
        app.bootstrap()
        for i in range(count):
            req = parse_resource_path("POST", group, version, rest)
            req.body = json.dumps(manifest(kind, i)).encode()
            resp = app.handlers.handle(req)
            if resp.status != 201:
                raise SystemExit(f"create {i}: {resp.status} {resp.body[:300]!r}")
        store.close()


def instructions(kind: str, count: int, src: str) -> int:
    """Instructions of a whole run of :func:`inner` (callgrind's ``Collected`` count)."""
    return callgrind_collected([__file__, "--inner", str(count), "--kind", kind, "--src", src])


def callgrind_collected(script_args: list[str]) -> int:
    """Instructions callgrind counts for ``python SCRIPT ARGS...`` (its ``Collected`` total)."""
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, *script_args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stderr
    found = re.search(r"Collected : (\d+)", out)
    if found is None:
        raise SystemExit(f"no instruction count in valgrind's output:\n{out[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", default="workloads")
    parser.add_argument("--small", type=int, default=300)
    parser.add_argument("--large", type=int, default=1300)
    parser.add_argument("--src", default=str(ROOT / "src"), help="the src/ directory to measure")
    parser.add_argument("--inner", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner is not None:
        inner(args.kind, args.inner, args.src)
        return
    small = instructions(args.kind, args.small, args.src)
    large = instructions(args.kind, args.large, args.src)
    per_create = (large - small) // (args.large - args.small)
    print(f"{args.kind}: {per_create:,} instructions per create ({args.src})")


if __name__ == "__main__":
    main()
