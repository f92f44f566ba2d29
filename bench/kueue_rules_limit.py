"""The scheduler benchmark under Kueue's rules with a control plane that takes no time.

``pykueue bench scheduler`` compares a run with the *physical* limit (perfect packing, greedy
admission). Kueue's rules add waits of their own that no implementation of them can remove: a
workload that did not fit is parked (BestEffortFIFO, with SchedulingEquivalenceHashing every
equivalent one with it) and comes back only with the batched retry of its cohort, 1 s after the
change that freed quota (``pkg/cache/queue/inadmissible_workloads.go``, ``requeueBatchPeriod``).
This script plays the same generator and runner on pykueue's scheduling core (the simulator's
driver, :class:`pykueue.sim.cluster.SimulatedCluster`), with every write, watch and cycle taking
zero time: arrivals and finishes happen exactly on time, the runner clears a preempted
workload's reservation at once, cycles run back to back while they make progress or heads remain.
What it prints is the wall time and waits of a perfectly fast Kueue, the bound an implementation
of Kueue's rules can reach.

    python bench/kueue_rules_limit.py [--config baseline] [--exact-batch] [--latency SECONDS]

``--exact-batch``: the retry is due exactly 1 s after the change, as upstream's delaying queue
has it; by default it is due on the next whole second of the controllers' clock, as pykueue's
controllers compute it (their clock has the API's whole-second resolution). ``--latency L``: every
handoff takes L more seconds (an admission reaches the runner, its Finished reaches the
controllers): what a real control plane's write, watch and cycle latencies cost under these rules.
"""

from __future__ import annotations

import argparse
import heapq
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

from pykueue.api.kueue import Workload
from pykueue.bench.config import load_config
from pykueue.bench.ideal import cohort_name, greedy_schedule, ideal_wall_seconds, queue_name
from pykueue.bench.scheduler import FLAVOR, cluster_queue_manifest, workload_manifest
from pykueue.cli.state import Document, admit_state
from pykueue.controllers.options import ControllerOptions
from pykueue.core import state as core_state
from pykueue.core.workload import transitions
from pykueue.core.workload.info import has_quota_reservation, is_evicted
from pykueue.sim.cluster import LoadedObject, SimulatedCluster

T0 = datetime(2026, 11, 26, 0, 0, 0, tzinfo=UTC)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="baseline")
    parser.add_argument("--exact-batch", action="store_true")
    parser.add_argument("--latency", type=float, default=0.0, metavar="SECONDS",
                        help="time from an admission decision to the runner's Finished reaching the controllers, "
                             "beyond the runtime (the writes and watches of the chain); default 0")  # fmt: skip
    parser.add_argument("--eviction-latency", type=float, default=0.0, metavar="SECONDS",
                        help="time from a preemption (the victim's Evicted write) to the runner's clearing of "
                             "the victim's reservation reaching the controllers; default 0")  # fmt: skip
    parser.add_argument("--runner-workers", type=int, default=0, metavar="N",
                        help="the runner's reconcile workers: its Finished and eviction-clearing writes queue "
                             "(first due, first served) for N workers, each write taking --runner-write; "
                             "default 0: every write lands when due")  # fmt: skip
    parser.add_argument("--runner-write", type=float, default=0.02, metavar="SECONDS",
                        help="with --runner-workers: one write's time, from its worker taking it to the "
                             "controllers seeing it (the runner's reconcile, the API's answer, the watch)")  # fmt: skip
    args = parser.parse_args()
    if args.exact_batch:
        # route_workload_change computes the retry's start with the API's whole-second clock;
        # upstream's requeuer starts its 1 s from the change itself.
        core_state.to_time = lambda value: value  # type: ignore[attr-defined]
    config = load_config(args.config)
    started = time.perf_counter()
    options = ControllerOptions()
    docs: list[dict[str, Any]] = [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": FLAVOR}}
    ]
    arrivals: list[tuple[float, str, str, str, int]] = []  # (time, namespace, name, class, runtime ms)
    templates: dict[str, dict[str, Any]] = {}
    for cs in config.cohorts:
        for ci in range(cs.count):
            cohort = cohort_name(cs.class_name, ci)
            for qsi, qs in enumerate(cs.queues_sets):
                for qi in range(qs.count):
                    name = queue_name(qs.class_name, qsi, qi, cohort)
                    docs.append(cluster_queue_manifest(name, cohort, qs))
                    docs.append({
                        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                        "metadata": {"name": name, "namespace": name}, "spec": {"clusterQueue": name},
                    })  # fmt: skip
                    for wsi, ws in enumerate(qs.workloads_sets):
                        k = 0
                        for si in range(ws.count):
                            for i, t in enumerate(ws.workloads):
                                k += 1
                                wl_name = f"{t.class_name}-{wsi}-{si}-{i}"
                                arrivals.append((k * ws.creation_interval_ms / 1000, name, wl_name, t.class_name,
                                                 t.runtime_ms))  # fmt: skip
                                if t.class_name not in templates:
                                    templates[t.class_name] = workload_manifest(
                                        f"template-{t.class_name}", name, name, t.class_name, t.runtime_ms,
                                        t.priority, t.request,
                                    )  # fmt: skip
    # Workloads are admitted (defaulted, validated) once per class and copied per arrival.
    admitted = admit_state([Document(d, "<generator>", i) for i, d in enumerate([*docs, *templates.values()])],
                           options)  # fmt: skip
    infra = [(o, v) for o, v in admitted.objects if not isinstance(o, Workload)]
    typed = {o.metadata.labels["kueue.x-k8s.io/performance-scheduler-class"]: o
             for o, _ in admitted.objects if isinstance(o, Workload)}  # fmt: skip
    sim = SimulatedCluster(options.scheduler, T0)
    sim.load(infra)
    arrivals.sort()

    info: dict[str, tuple[str, float, float]] = {}  # key -> (class, created, runtime s)
    admitted_at: dict[str, float] = {}
    last_admitted: dict[str, float] = {}
    epoch: dict[str, int] = defaultdict(int)  # admissions so far, so a preempted run's finish is void
    finishes: list[tuple[float, str, int]] = []
    evictions: dict[str, int] = defaultdict(int)
    wall = 0.0
    cycles = 0
    clears: list[tuple[float, tuple[str, str, str]]] = []  # (due, key): evictions the runner finishes later
    clearing: dict[tuple[str, str, str], float] = {}
    # --runner-workers: when each worker is free, and the writes on their way (done, seq, kind, payload).
    runner_free = [0.0] * max(args.runner_workers, 0)
    writes: list[tuple[float, int, str, Any]] = []
    seq = 0

    def enqueue(kind: str, due: float, payload: Any) -> float:
        """A runner write due at ``due`` (callers enqueue in due order: first due, first served)."""
        nonlocal seq
        start = max(due, heapq.heappop(runner_free))
        done = start + args.runner_write
        heapq.heappush(runner_free, done)
        seq += 1
        heapq.heappush(writes, (done, seq, kind, payload))
        return done

    def at(t: float) -> datetime:
        return T0 + timedelta(seconds=t)

    def create(t: float, ns: str, name: str, cls: str, runtime_ms: int) -> None:
        tpl = typed[cls]
        md = msgspec.structs.replace(
            tpl.metadata, name=name, namespace=ns, uid=f"{ns}/{name}", creation_timestamp=at(t).replace(microsecond=0)
        )
        wl = msgspec.structs.replace(tpl, metadata=md, spec=msgspec.structs.replace(tpl.spec, queue_name=ns))
        key = ("Workload", ns, name)
        sim.objects[key] = LoadedObject(wl, "kueue.x-k8s.io/v1beta2")
        sim.order.append(key)
        info[f"{ns}/{name}"] = (cls, t, runtime_ms / 1000)
        sim._route(None, wl)

    def finish(key: str) -> None:
        ns, _, name = key.partition("/")
        wl = transitions.copy_for_status(sim.objects[("Workload", ns, name)].obj)
        transitions.set_condition(wl, "Finished", "True", "ByTest", "By test runner", sim.now)
        sim.write_workload_status(wl)

    def clear(key: tuple[str, str, str]) -> None:
        wl = sim.objects[key].obj
        if is_evicted(wl) and has_quota_reservation(wl):
            evictions[info[f"{key[1]}/{key[2]}"][0]] += 1
            updated = transitions.copy_for_status(wl)
            transitions.set_condition(updated, "QuotaReserved", "False", "Pending",
                                      "Evicted by the test runner", sim.now)  # fmt: skip
            updated.status.admission = None
            transitions.sync_admitted_condition(updated, sim.now, options.scheduler)
            sim.write_workload_status(updated)

    def settle(t: float) -> None:
        """Zero-latency controllers and scheduler at time ``t``: cycles until nothing moves."""
        nonlocal cycles
        sim.now = at(t)
        sim.core.requeue_due(sim.now)
        for _ in range(100_000):
            sim._deliver_updates()
            # The runner finishes an eviction (controller.go: UnsetQuotaReservationWithCondition),
            # at once or --eviction-latency later.
            for key in sorted(sim._evicted_reserved):
                wl = sim.objects[key].obj
                if runner_free and is_evicted(wl) and has_quota_reservation(wl):
                    if key not in clearing:
                        clearing[key] = enqueue("clear", t, key)
                    continue
                if args.eviction_latency > 0 and is_evicted(wl) and has_quota_reservation(wl):
                    if key not in clearing:
                        clearing[key] = t + args.eviction_latency
                        heapq.heappush(clears, (t + args.eviction_latency, key))
                    continue
                clear(key)
            sim._deliver_updates()
            if not sim.core.has_heads():
                return
            result = sim.run_cycle()
            cycles += 1
            for key in result.admitted:
                epoch[key] += 1
                admitted_at[key] = t
                last_admitted[key] = t  # upstream's recorder: the latest admission counts
                heapq.heappush(finishes, (t + info[key][2] + args.latency, key, epoch[key]))
            # Without progress the heads left are popped again after upstream's 1-10 ms backoff;
            # nothing else changes meanwhile here, so the next cycle runs at the same time. A
            # preemptor waiting for its victims is popped again and again until the runner clears
            # them: with --eviction-latency the clock moves on to that (or any earlier) event.
            if (clears or clearing) and not result.admitted and not result.preempted:
                return
        raise RuntimeError("the cycles did not settle")

    i = 0
    while i < len(arrivals) or finishes or clears or writes or sim.queues.has_pending_requests():
        due = sim.queues.next_due_time()
        candidates = [arrivals[i][0] if i < len(arrivals) else float("inf"),
                      finishes[0][0] if finishes else float("inf"),
                      clears[0][0] if clears else float("inf"),
                      writes[0][0] if writes else float("inf"),
                      (due - T0.timestamp()) if due is not None else float("inf")]  # fmt: skip
        t = min(candidates)
        sim.now = at(t)
        while clears and clears[0][0] <= t:
            _, ckey = heapq.heappop(clears)
            del clearing[ckey]
            clear(ckey)
        while i < len(arrivals) and arrivals[i][0] <= t:
            create(*arrivals[i])
            i += 1
        while writes and writes[0][0] <= t:
            _, _, kind, payload = heapq.heappop(writes)
            if kind == "clear":
                clearing.pop(payload, None)
                clear(payload)
            else:
                key, n = payload
                if n == epoch[key] and key in admitted_at:
                    finish(key)
                    wall = max(wall, t)
        while finishes and finishes[0][0] <= t:
            _, key, n = heapq.heappop(finishes)
            if runner_free:
                if n == epoch[key] and key in admitted_at:  # a preempted run's timer writes nothing
                    enqueue("finish", t, (key, n))
            elif n == epoch[key] and key in admitted_at:
                finish(key)
                wall = max(wall, t)
        settle(t)

    waits: dict[str, list[float]] = defaultdict(list)
    for key, (cls, created, _) in info.items():
        if key in last_admitted:
            waits[cls].append(last_admitted[key] - created)
    ideal = ideal_wall_seconds(config)
    greedy = greedy_schedule(config)
    runner = f"; runner {args.runner_workers} workers x {args.runner_write:g} s" if runner_free else ""
    print(f"config {config.name}, {len(info)} workloads; latency {args.latency:g} s{runner}; retry batch "
          f"{'exactly 1 s after the change (upstream)' if args.exact_batch else 'on the next whole second (pykueue)'}")  # fmt: skip
    print(f"wall {wall:.1f} s (ideal {ideal:.1f} s, {wall / ideal:.2f}x); {cycles} cycles; "
          f"simulated in {time.perf_counter() - started:.0f} s")  # fmt: skip
    for cls in sorted(waits):
        w = waits[cls]
        g = greedy.avg_time_to_admission_seconds.get(cls, 0.0)
        print(f"  {cls:8s} avg time to admission {sum(w) / len(w):7.2f} s (greedy ideal {g:.2f} s, "
              f"{sum(w) / len(w) / g if g else float('nan'):.2f}x), admitted {len(w)}, evictions {evictions[cls]}")  # fmt: skip
    unfinished = [k for k in info if k not in last_admitted]
    if unfinished:
        print(f"  never admitted: {len(unfinished)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
