"""A cProfile of one kind of write of ``bench/status_put_instructions.py`` (the same requests, the
same in-process loop), the profiler on only while the requests of that phase run.

Usage: python bench/profile_writes.py --phase put [--objects 300] [--src DIR] [--out OUT.prof] [--top 40]

``--phase``: ``create`` (Workload POSTs), ``put`` (admission status PUTs), ``finished`` (Finished
status PUTs), ``apply`` (the Finished condition as upstream's scheduler-perf runner writes it: a
forced server-side apply of the status), ``event`` (core/v1 Event POSTs as the harness sends them) or ``event2``
(events.k8s.io/v1 Event POSTs as the controller's recorder sends them). Prints the functions by own
time and by cumulative time (cProfile's overhead inflates small calls: read it for where the time
goes, judge changes by ``status_put_instructions.py``'s instruction counts).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import tempfile
from pathlib import Path
from typing import Any

# bench/ is the script's directory
from status_put_instructions import (
    APPLY_PATCH,
    FINISHED_MANAGER,
    admitted,
    event,
    event_v1,
    finished,
    finished_apply,
    workload,
)

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phase", choices=("create", "put", "finished", "apply", "event", "event2"), default="put")
    parser.add_argument("--objects", type=int, default=300)
    parser.add_argument("--src", default=str(ROOT / "src"))
    parser.add_argument("--out", help="also write the profile here (python -m pstats OUT)")
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    sys.path.insert(0, args.src)
    from pykueue.apiserver.app import APIServerApp
    from pykueue.apiserver.handlers import APIRequest
    from pykueue.store import Store

    profiler = cProfile.Profile()
    with tempfile.TemporaryDirectory() as tmp, Store(str(Path(tmp) / "store.db")) as store:
        app = APIServerApp(store)
        app.bootstrap()

        def handle(method: str, group: str, version: str, resource: str, body: dict[str, Any], **kw: Any) -> bytes:
            data = json.dumps(body, separators=(",", ":")).encode() if method == "PATCH" else json.dumps(body).encode()
            req = APIRequest(method, group, version, resource, namespace="default", body=data, **kw)
            with store.deferred_acks():
                resp = app.handlers.handle(req)
            if resp.status >= 300:
                raise SystemExit(f"{method} {resource}: {resp.status} {resp.body[:300]!r}")
            return resp.body

        def phase(name: str) -> None:
            if args.phase == name:
                profiler.enable()

        n = args.objects
        manifests = [workload(i) for i in range(n)]
        phase("create")
        stored = [json.loads(handle("POST", "kueue.x-k8s.io", "v1beta2", "workloads", m)) for m in manifests]
        profiler.disable()
        if args.phase in ("put", "finished", "apply"):
            puts = [admitted(obj) for obj in stored]  # the bodies are built outside the profile
            phase("put")
            answers = [handle("PUT", "kueue.x-k8s.io", "v1beta2", "workloads", body,
                              name=body["metadata"]["name"], subresource="status") for body in puts]  # fmt: skip
            profiler.disable()
            if args.phase == "apply":
                applies = [finished_apply(json.loads(answer)) for answer in answers]
                phase("apply")
                for body in applies:
                    handle("PATCH", "kueue.x-k8s.io", "v1beta2", "workloads", body, name=body["metadata"]["name"],
                           subresource="status", content_type=APPLY_PATCH,
                           query={"fieldManager": [FINISHED_MANAGER], "force": ["true"]})  # fmt: skip
                profiler.disable()
            else:
                bodies = [finished(json.loads(answer)) for answer in answers]
                phase("finished")
                for body in bodies:
                    handle("PUT", "kueue.x-k8s.io", "v1beta2", "workloads", body, name=body["metadata"]["name"],
                           subresource="status")  # fmt: skip
                profiler.disable()
        elif args.phase in ("event", "event2"):  # core/v1 (the job runner's) or events.k8s.io/v1 (the recorder's)
            build, group = (event, "") if args.phase == "event" else (event_v1, "events.k8s.io")
            events = [build(i) for i in range(n)]
            phase(args.phase)
            for body in events:
                handle("POST", group, "v1", "events", body)
            profiler.disable()
    if args.out:
        profiler.dump_stats(args.out)
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(args.top)
    stats.sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()
