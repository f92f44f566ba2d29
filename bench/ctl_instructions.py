"""CPU instructions of the controller's per-Workload paths (callgrind, deterministic).

Usage: python bench/ctl_instructions.py [--path metrics|compact|requests] [--workloads 2000] [--queues 200]
       [--src DIR] [--no-valgrind]

``--path metrics`` (default): makes, on the embedded API server, ``--queues`` Workloads as the large-scale benchmark's run
through the controller: pending, then quota reserved and admitted in one write (no checks), then
Finished; then counts ``--workloads`` of those lives the way the manager thread does
(:class:`~pykueue.metrics.recorder.ControllerMetrics`: ``workload_written(pending, admitted)`` for
its admission write, ``workload_changed(admitted, finished)`` for the observed Finished), each
queue with its LocalQueue and one cohort, under ``valgrind --tool=callgrind --instr-atstart=no``
with instrumentation on only around that loop. Prints instructions per Workload and the SHA-256
of the exposition scraped afterwards (the controllers' clock is fixed, so two trees that count
the same values print the same digest).

``--path compact``: :func:`~pykueue.controllers.cluster_cache.compact` (the informers' transform,
and the write-through of every write answer) of those Workloads' admitted versions as the API
returns them (managedFields included), ``--workloads`` times; the digest is of the compacted
objects' JSON.

``--path requests``: a new Workload's two reads of its pod templates' requests: the scheduler's
``new_workload_info`` and the workload controller's ``admissibility_error``, for ``--workloads``
Workloads each with its own spec object (as every Workload the cache types); the digest is of the
pod sets' requests and the checks' outcomes.

``--src`` measures another tree (``git archive main src``).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any


def inner(args: argparse.Namespace) -> None:
    import msgspec

    from pykueue.api.kueue import LocalQueue
    from pykueue.checks import testing as t
    from pykueue.client import resources as r
    from pykueue.controllers.cluster_cache import _typed_workload, compact
    from pykueue.metrics import ControllerMetrics, KueueMetrics

    now = datetime(2026, 11, 27, 1, 0, tzinfo=UTC)
    client = t.embedded_client()
    lives: list[tuple[Any, Any, Any]] = []
    local_queues: dict[str, LocalQueue] = {}
    for q in range(args.queues):
        ns, name, cq = "default", f"w{q}", f"cq-{q}"
        client.create(r.WORKLOADS, t.workload(name, ns, [t.pod_set("main", 1, {"cpu": "1"})], queue=f"lq-{q}", priority=50))
        pending = _typed_workload(compact(client.get(r.WORKLOADS, name, ns)))
        t.reserve_quota(client, ns, name, [], now, cluster_queue=cq)
        admitted = _typed_workload(compact(t.set_conditions(client, ns, name, now, Admitted="True")))
        finished = _typed_workload(compact(t.set_conditions(client, ns, name, now + timedelta(seconds=1), Finished="True")))
        # A fixed creation time: the wait times (and so the exposition) do not depend on the hour.
        lives.append(tuple(  # type: ignore[arg-type]
            msgspec.structs.replace(w, metadata=msgspec.structs.replace(w.metadata, creation_timestamp=now - timedelta(seconds=q % 7)))
            for w in (pending, admitted, finished)
        ))
        local_queues[f"{ns}/lq-{q}"] = msgspec.convert(
            {"metadata": {"name": f"lq-{q}", "namespace": ns}, "spec": {"clusterQueue": cq}}, LocalQueue
        )
    if args.path == "compact":
        answers = [client.get(r.WORKLOADS, f"w{q}", "default") for q in range(args.queues)]
        for q, answer in enumerate(answers):  # what differs from run to run: not part of the digest
            answer["metadata"].update(uid=f"uid-{q}", creationTimestamp="2026-11-27T01:00:00Z")
        _measure(args, lambda: [compact(answers[i % len(answers)]) for i in range(args.workloads)])
        out = msgspec.json.encode([compact(a) for a in answers])
        print(f"output sha256={hashlib.sha256(out).hexdigest()[:16]} bytes={len(out)}", file=sys.stderr)
        return
    if args.path == "requests":
        from pykueue.api.meta import LabelSelector
        from pykueue.core.options import SchedulerOptions
        from pykueue.core.workload.admissibility import admissibility_error
        from pykueue.core.workload.info import new_workload_info

        answers = [client.get(r.WORKLOADS, f"w{q}", "default") for q in range(args.queues)]
        fresh = [_typed_workload(compact(answers[i % len(answers)])) for i in range(args.workloads)]
        options, everything = SchedulerOptions(), LabelSelector()
        results: list[Any] = []

        def read_requests() -> None:
            for wl in fresh:
                info = new_workload_info(wl, options)
                error = admissibility_error(wl, everything, {"kubernetes.io/metadata.name": "default"})
                results.append(([(ps.name, ps.count, ps.per_pod, ps.total) for ps in info.pod_sets], error))

        _measure(args, read_requests)
        out = repr(results).encode()
        print(f"output sha256={hashlib.sha256(out).hexdigest()[:16]} bytes={len(out)}", file=sys.stderr)
        return
    metrics = KueueMetrics()
    counting = ControllerMetrics(
        metrics,
        cohorts_of=lambda cq: (f"cohort-{cq.rsplit('-', 1)[1][-1]}",),
        local_queue=local_queues.get,
        now=lambda: now + timedelta(seconds=2),
    )

    def count() -> None:
        for i in range(args.workloads):
            pending, admitted, finished = lives[i % len(lives)]
            counting.workload_written(pending, admitted)
            counting.workload_changed(admitted, finished)

    _measure(args, count)
    text = metrics.exposition()
    assert b"kueue_finished_workloads_total{" in text and b"kueue_local_queue_admitted_workloads_total{" in text
    if os.environ.get("METRICS_EXPOSITION_OUT"):
        with open(os.environ["METRICS_EXPOSITION_OUT"], "wb") as f:
            f.write(text)
    print(f"output sha256={hashlib.sha256(text).hexdigest()[:16]} bytes={len(text)}", file=sys.stderr)


def _measure(args: argparse.Namespace, fn: Callable[[], object]) -> None:
    """``fn()`` with callgrind's instrumentation on (only it is counted)."""
    pid = str(os.getpid())
    if args.valgrind:
        subprocess.run(["callgrind_control", "-i", "on", pid], check=True, capture_output=True)
    started = time.thread_time()
    fn()
    spent = time.thread_time() - started
    if args.valgrind:
        subprocess.run(["callgrind_control", "-i", "off", pid], check=True, capture_output=True)
    else:  # without valgrind: the thread's CPU time (noisy on a shared machine; the count is not)
        print(f"{1e6 * spent / args.workloads:.1f} µs of CPU per Workload", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--path", choices=["metrics", "compact", "requests"], default="metrics")
    parser.add_argument("--workloads", type=int, default=2000)
    parser.add_argument("--queues", type=int, default=200)
    parser.add_argument("--src", help="run this tree's src instead of the installed one")
    parser.add_argument("--no-valgrind", dest="valgrind", action="store_false")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        inner(args)
        return
    env = dict(os.environ)
    if args.src:
        env["PYTHONPATH"] = args.src
    cmd = [sys.executable, __file__, "--inner", "--path", args.path, "--workloads", str(args.workloads),
           "--queues", str(args.queues)]  # fmt: skip
    if not args.valgrind:
        raise SystemExit(subprocess.call([*cmd, "--no-valgrind"], env=env))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}", *cmd],
            env=env,
            capture_output=True,
            text=True,
        )
        digest = [line for line in done.stderr.splitlines() if line.startswith("output")]
        if done.returncode or not digest:
            print(done.stderr[-3000:], file=sys.stderr)
            raise SystemExit(done.returncode or 1)
        total = 0
        with open(out) as f:
            for line in f:
                if match := re.match(r"(?:summary|totals): (\d+)", line):
                    total = int(match.group(1))
        print(f"{total / args.workloads:,.0f} instructions per Workload ({args.workloads} Workloads); {digest[0]}")


if __name__ == "__main__":
    main()
