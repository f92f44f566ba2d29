"""Upstream's scheduler-perf runner's Workload queue, measured and replayed.

Usage: python bench/runner_queue.py OUTDIR [--class small] [--scale 1,0.5,0.25]

OUTDIR is a ``bench/upstream_baseline.sh`` run made with ``TIMING=1 DIAG=1
RUNNER_ARGS=--zap-log-level=5`` (serve's timing, the Workload watch events, and the runner's log of
every reconcile). Upstream's runner (``runner/main.go``: 5 Workload workers;
``runner/controller/controller.go``: its Update predicate enqueues a Workload when it sees it
Admitted, ``Reconcile`` requeues it after the remaining runtime or, once due, applies
``Finished`` synchronously) finishes at most 5 Workloads per round trip of that apply.

Prints, from the run: how often a Workload was due (its Admitted event written to the runner's
watch + its runtime) while waiting for a worker, and how many of the 5 workers were busy then; the
reconciles' durations (the applying ones: the runner's whole round trip). Then replays the run's
arrivals (each Admitted event as serve wrote it to the runner's watch) through a model of that
queue (5 workers; FIFO by the time an item became ready; a reconcile before the item is due takes
the run's median requeue time and requeues it for when it is due; an applying reconcile takes its
measured duration times ``scale``) and prints the class's ``Finished`` lateness (applying
reconcile start - due) measured and modelled, so one can see what the smalls' lateness would be if
the round trip were shorter, and check the model against the run (scale 1).
"""

from __future__ import annotations

import argparse
import heapq
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serve_timing import _records, _runner_reconciles  # the bench directory is not a package: its path above

WORKERS = 5


def _load(
    run: Path,
) -> tuple[dict[tuple[str, str], float], dict[tuple[str, str], float], dict[tuple[str, str], str], Any]:
    """Per Workload (first admission): when serve wrote its Admitted event to the runner's watch,
    its runtime, its class; and the runner's reconciles on serve's clock."""
    offset, sent = 0.0, dict[int, float]()
    for r in _records(str(run / "timing.jsonl")):
        if "wall" in r:
            offset = r["wall"] - r["mono"]
        elif "sent" in r and r["ua"].startswith("kueue-runner"):
            for _ns, _name, rv in r["ev"]:
                if rv is not None:
                    sent.setdefault(rv, r["sent"])
    admitted: dict[tuple[str, str], float] = {}
    runtime: dict[tuple[str, str], float] = {}
    cls: dict[tuple[str, str], str] = {}
    before: dict[tuple[str, str], bool] = {}
    times: dict[tuple[str, str], int] = defaultdict(int)
    with (run / "events.jsonl").open() as f:
        for line in f:
            _t, _etype, ns, name, _uid, wcls, run_ms, conds, *rest = json.loads(line)
            key = (ns, name)
            now = conds.get("Admitted", ["False"])[0] == "True"
            times[key] += now and not before.get(key)
            if now and not before.get(key) and key not in admitted and rest and int(rest[0]) in sent:
                admitted[key] = sent[int(rest[0])]
                runtime[key] = int(run_ms) / 1000.0 if str(run_ms).isdigit() else 0.0
                cls[key] = wcls
            before[key] = now
    for key, n in times.items():  # admitted again after an eviction: its first finish is not this one's
        if n > 1:
            admitted.pop(key, None)
    return admitted, runtime, cls, _runner_reconciles(str(run / "runner.log"), offset)


def _ms(values: list[float]) -> str:
    if not values:
        return "0 | | | |"
    ms = sorted(1000 * v for v in values)
    return (f"{len(ms)} | {statistics.fmean(ms):.0f} | {ms[len(ms) // 2]:.0f} | {ms[int(0.9 * len(ms))]:.0f} "
            f"| {ms[min(len(ms) - 1, int(0.99 * len(ms)))]:.0f}")  # fmt: skip


def replay(arrivals: list[tuple[float, float, float]], requeue: float, workers: int = WORKERS) -> list[float]:
    """Each arrival (ready, due, service): an item enqueued at ``ready``, due at ``due``, whose
    applying reconcile takes ``service``. Returns each item's (applying start - due)."""
    ready: list[tuple[float, int, int]] = []  # (time it became ready, counter, item)
    counter = 0
    for i, (at, _due, _svc) in enumerate(arrivals):
        heapq.heappush(ready, (at, counter, i))
        counter += 1
    free = [0.0] * workers
    heapq.heapify(free)
    late = [0.0] * len(arrivals)
    # Items become ready in time order; a free worker takes the oldest ready one.
    while ready:
        at, _, i = heapq.heappop(ready)
        worker = heapq.heappop(free)
        start = max(worker, at)
        _, due, svc = arrivals[i]
        if start < due:  # RequeueAfter the remaining runtime
            heapq.heappush(free, start + requeue)
            heapq.heappush(ready, (due, counter, i))
            counter += 1
            continue
        late[i] = start - due
        heapq.heappush(free, start + svc)
    return late


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--class", dest="cls", default="small")
    parser.add_argument("--scale", default="1,0.5,0.25")
    parser.add_argument("--workers", type=int, default=WORKERS, help="the runner's workers (upstream: 5)")
    parser.add_argument("--model-workers", default="", help="also replay with these worker counts (e.g. 10)")
    args = parser.parse_args(argv)
    admitted, runtime, cls, reconciles = _load(args.run)
    # Each reconcile: (start, end, outcome); the applying one of each Workload is its first
    # "finish" at or after it was due.
    spans: list[tuple[float, float, str]] = []
    applying: dict[tuple[str, str], tuple[float, float]] = {}
    requeues: list[float] = []
    for key, evs in reconciles.items():
        pending: float | None = None
        for t, kind in evs:
            if kind == "start":
                pending = t
            elif pending is not None:
                spans.append((pending, t, kind))
                if kind == "requeue":
                    requeues.append(t - pending)
                if kind == "finish" and key in admitted and key not in applying:
                    applying[key] = (pending, t)
                pending = None
    # Measured: due and waiting, versus busy workers.
    edges = [(s, 0, 1) for s, _e, _k in spans] + [(e, 0, -1) for _s, e, _k in spans]
    for key, (start, _end) in applying.items():
        due = admitted[key] + runtime[key]
        if start > due:
            edges += [(due, 1, 1), (start, 1, -1)]
    edges.sort()
    busy = waiting = 0
    last = edges[0][0] if edges else 0.0
    share: dict[int, float] = defaultdict(float)
    for t, kind, step in edges:
        if waiting > 0:
            share[min(busy, args.workers)] += t - last
        last = t
        if kind == 0:
            busy += step
        else:
            waiting += step
    total = sum(share.values()) or 1.0
    print(f"{args.run}: time with a Workload due and waiting for a worker: {total:.1f} s; workers busy then: "
          + ", ".join(f"{n}: {share[n] / total:.1%}" for n in sorted(share)))  # fmt: skip
    durations: dict[str, list[float]] = defaultdict(list)
    for s, e, kind in spans:
        durations[kind].append(e - s)
    print("| the runner's reconciles | n | mean ms | median | p90 | p99 |")
    print("|---|---|---|---|---|---|")
    for kind in ("finish", "requeue", "error"):
        print(f"| {kind} | {_ms(durations[kind])} |")
    # Replay.
    keys = sorted(applying, key=lambda k: admitted[k])
    requeue = statistics.median(requeues) if requeues else 0.0001
    measured = [applying[k][0] - (admitted[k] + runtime[k]) for k in keys if cls[k] == args.cls]
    print(f"\n| {args.cls}: applying reconcile start - due | n | mean ms | median | p90 | p99 |")
    print("|---|---|---|---|---|---|")
    print(f"| measured | {_ms(measured)} |")
    for scale in (float(x) for x in args.scale.split(",")):
        arrivals = [
            (admitted[k], admitted[k] + runtime[k], scale * (applying[k][1] - applying[k][0])) for k in keys
        ]
        late = replay(arrivals, requeue, args.workers)
        print(
            f"| model, applies × {scale:g} | {_ms([late[i] for i, k in enumerate(keys) if cls[k] == args.cls])} |"
        )
    for workers in (int(x) for x in args.model_workers.split(",") if x):
        arrivals = [(admitted[k], admitted[k] + runtime[k], applying[k][1] - applying[k][0]) for k in keys]
        late = replay(arrivals, requeue, workers)
        print(
            f"| model, {workers} workers | {_ms([late[i] for i, k in enumerate(keys) if cls[k] == args.cls])} |"
        )
    sockets(args.run)
    return 0


def sockets(run: Path) -> None:
    """``SOCKETS=1``'s samples: serve's connections from the runner holding request bytes serve has
    not read yet (by Little's law, over the runner's request rate, the mean time a request waits
    in the kernel before serve's loop reads it), and the runner's own unread bytes."""
    path = run / "sockets.txt"
    if not path.exists():
        return
    samples: dict[str, list[list[str]]] = defaultdict(list)
    stamps: list[str] = []
    cpu = ""
    cpus: list[tuple[float, list[int]]] = []  # (wall time, CPU seconds of the runner, serve, controller)
    with path.open() as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[1] == "cpu":
                stamps.append(parts[0])
                cpu = " ".join(parts[2:])
                if len(parts) >= 5 and all(x.isdigit() for x in parts[2:5]):
                    cpus.append((float(parts[0]), [int(x) for x in parts[2:5]]))
            elif len(parts) == 6:
                samples[parts[0]].append(parts)
    if not stamps:
        return
    runner_unread = serve_unread = 0
    for stamp in stamps:
        rows = samples.get(stamp, [])
        ports = {r[3] for r in rows if r[5] == "runner"}
        runner_unread += sum(1 for r in rows if r[5] == "runner" and int(r[1]) > 0)
        serve_unread += sum(1 for r in rows if r[5] == "serve" and r[4] in ports)
    n = len(stamps)
    offset, applies = 0.0, []
    times = []
    for r in _records(str(run / "timing.jsonl")):
        if "wall" in r:
            offset = r["wall"] - r["mono"]
        elif r.get("ua", "").startswith("kueue-runner") and "t0" in r:
            times.append(r["t0"])
            if r["m"] == "PATCH":
                applies.append(r["t0"] + offset)
    rate = len(times) / (max(times) - min(times)) if len(times) > 1 else 0.0
    print(f"\nsockets ({n} samples): the runner's connections with bytes the runner has not read: {runner_unread / n:.2f} "
          f"on average; serve's connections from the runner with request bytes serve has not read: {serve_unread / n:.2f} "
          f"on average; the runner's requests {rate:.0f}/s, so a request waits ~{1000 * serve_unread / n / rate if rate else 0:.1f} ms "
          f"in the kernel before serve reads it (Little's law); CPU seconds at the end (runner, serve, controller): {cpu}")  # fmt: skip
    # CPU rates over 5-second windows (``ps`` counts whole seconds) where the runner applied 100/s or more.
    waves: list[list[float]] = []
    i = 0
    while applies and i < len(cpus):
        j = i
        while j < len(cpus) and cpus[j][0] - cpus[i][0] < 5.0:
            j += 1
        if j >= len(cpus):
            break
        (t0, c0), (t1, c1) = cpus[i], cpus[j]
        n = sum(1 for a in applies if t0 <= a < t1)
        if n / (t1 - t0) >= 100:
            waves.append([(c1[k] - c0[k]) / (t1 - t0) for k in range(3)] + [n / (t1 - t0)])
        i = j
    if waves:
        mean = [statistics.fmean(w[k] for w in waves) for k in range(4)]
        print(f"CPU in the {len(waves)} 5-s windows with >= 100 runner applies/s ({mean[3]:.0f}/s): "
              f"runner {mean[0]:.2f}, serve {mean[1]:.2f}, controller {mean[2]:.2f} CPU-s/s")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
