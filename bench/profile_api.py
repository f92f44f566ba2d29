"""The API server's write path in-process: per-request cost of creates and updates, and profiles.

Usage: python bench/profile_api.py [--kind workloads] [--objects 5000] [--repeat 3] [--cprofile OUT.prof]
                                   [--memory]

Runs the same requests as ``bench/api.py`` (POST of the same manifests, then one merge PATCH of
a label per object) straight through ``Handlers.handle`` on a real store (a fresh SQLite file in
WAL mode, or ``--memory``), without HTTP and without watchers. Prints requests/s and CPU µs per
request; the CPU figures are stable on a busy machine, unlike the HTTP ones.

Sampling profile of the HTTP server (what the figures in RESULTS.md were profiled with)::

    py-spy record -o api.svg --subprocesses -- python bench/api.py --kind workloads --objects 10000

or of this in-process loop: ``py-spy record -o inproc.svg -- python bench/profile_api.py``;
``--cprofile OUT.prof`` writes a cProfile of the timed loop (``python -m pstats OUT.prof``).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from api import PATHS, manifest  # noqa: E402
from pykueue.apiserver.app import APIServerApp, parse_resource_path  # noqa: E402
from pykueue.apiserver.handlers import APIRequest  # noqa: E402
from pykueue.store import Store  # noqa: E402


def request_factory(kind: str) -> Callable[[str, str, bytes, str], APIRequest]:
    """Builds the APIRequest the HTTP layer would for a path under the kind's collection."""
    path = PATHS[kind]
    if path.startswith("/apis/"):
        group, version, rest = path[6:].split("/", 2)
    else:
        group, (version, rest) = "", path[5:].split("/", 1)

    def make(method: str, suffix: str, body: bytes, content_type: str) -> APIRequest:
        req = parse_resource_path(method, group, version, rest + suffix)
        req.body = body
        req.content_type = content_type
        req.user_agent = "profile-api/1.0"
        return req

    return make


def run_once(args: argparse.Namespace, profiler: cProfile.Profile | None) -> dict[str, tuple[float, float]]:
    """One fresh store: (requests/s, CPU µs per request) of the creates and of the updates."""
    results: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(None if args.memory else str(Path(tmp) / "pykueue.db"))
        app = APIServerApp(store)
        app.bootstrap()
        make = request_factory(args.kind)
        bodies = [json.dumps(manifest(args.kind, i)).encode() for i in range(args.objects)]
        patch = json.dumps({"metadata": {"labels": {"bench": "updated"}}}).encode()

        def timed(label: str, reqs: list[APIRequest], expect: int) -> None:
            wall, cpu = time.perf_counter(), time.process_time()
            if profiler is not None:
                profiler.enable()
            for req in reqs:
                resp = app.handlers.handle(req)
                if resp.status != expect:
                    raise SystemExit(f"{label}: {resp.status} {resp.body[:300]!r}")
            if profiler is not None:
                profiler.disable()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            results[label] = (len(reqs) / wall, 1e6 * cpu / len(reqs))

        timed("creates", [make("POST", "", b, "application/json") for b in bodies], 201)
        updates = [
            make("PATCH", f"/bench-{i:06d}", patch, "application/merge-patch+json")
            for i in range(args.objects)
        ]
        timed("updates", updates, 200)
        app.hub.close()
        store.close()
    return results


def run(args: argparse.Namespace) -> None:
    profiler = cProfile.Profile() if args.cprofile else None
    runs = [run_once(args, profiler) for _ in range(args.repeat)]
    for label in ("creates", "updates"):
        # The fastest run: other processes on the machine only ever slow a run down.
        rate = max(r[label][0] for r in runs)
        print(
            f"{label}: {args.objects} {args.kind}: {rate:,.0f}/s in-process "
            f"({min(r[label][1] for r in runs):,.0f} µs CPU each; best of {args.repeat})"
        )
    if profiler is not None:
        profiler.dump_stats(args.cprofile)
        print(f"profile written to {args.cprofile}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=5_000)
    parser.add_argument("--kind", choices=sorted(PATHS), default="workloads")
    parser.add_argument("--memory", action="store_true", help="in-memory store (no disk I/O)")
    parser.add_argument("--repeat", type=int, default=3, help="fresh runs; the best is reported")
    parser.add_argument("--cprofile", help="write a cProfile of the timed requests here")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
