"""In-process scheduling throughput: 1,000 ClusterQueues in 10 cohorts, 100,000 pending workloads.

Usage: python bench/core.py [--cqs 1000] [--cohorts 10] [--workloads 100000] [--cycles 60] [--seed 1]

A *decision* is one head processed by a scheduling cycle: admitted (quota reserved), or found
inadmissible / skipped and requeued with its status written. The benchmark drives the real
core through the in-memory cluster (the same code path as ``pykueue schedule``): load, then
cycles with the 1-second controller step between them. Figures are printed; nothing is asserted.
Once loaded, the cyclic GC is set as ``pykueue controller`` sets it (``--gc``), and ``--gc-stats``
times its collections. ``--digest`` hashes every decision (admitted, preempted, each entry's
status and message) to check that a change leaves the decisions as they were. ``--per-cycle``
shows what each cycle decided and how many of its heads had been evaluated before (a parked head
tried again would show there).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import random
import time
import tracemalloc
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from pykueue.api.kueue import (
    ClusterQueue,
    ClusterQueueSpec,
    FlavorQuotas,
    LocalQueue,
    LocalQueueSpec,
    PodSet,
    PodTemplateSpec,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Workload,
    WorkloadSpec,
)
from pykueue.api.meta import LabelSelector, ObjectMeta
from pykueue.core.options import SchedulerOptions
from pykueue.sim.cluster import SimulatedCluster

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def build_state(n_cqs: int, n_cohorts: int, n_workloads: int, seed: int) -> list[tuple[Any, str]]:
    rng = random.Random(seed)
    v = "kueue.x-k8s.io/v1beta2"
    objs: list[tuple[Any, str]] = [
        (ResourceFlavor(metadata=ObjectMeta(name="on-demand")), v),
        (ResourceFlavor(metadata=ObjectMeta(name="spot")), v),
    ]
    for i in range(n_cqs):
        cohort = f"cohort-{i % n_cohorts}"
        groups = [
            ResourceGroup(
                covered_resources=["cpu", "memory"],
                flavors=[
                    FlavorQuotas(
                        name="on-demand",
                        resources=[
                            ResourceQuota(name="cpu", nominal_quota=str(rng.choice([8, 16, 32]))),
                            ResourceQuota(name="memory", nominal_quota="64Gi"),
                        ],
                    ),
                    FlavorQuotas(
                        name="spot",
                        resources=[
                            ResourceQuota(name="cpu", nominal_quota="8"),
                            ResourceQuota(name="memory", nominal_quota="32Gi"),
                        ],
                    ),
                ],
            )
        ]
        spec = ClusterQueueSpec(
            resource_groups=groups, cohort_name=cohort, namespace_selector=LabelSelector()
        )
        objs.append((ClusterQueue(metadata=ObjectMeta(name=f"cq-{i}"), spec=spec), v))
        objs.append(
            (LocalQueue(metadata=ObjectMeta(name="lq", namespace=f"ns-{i}"), spec=LocalQueueSpec(cluster_queue=f"cq-{i}")), v)
        )
    for j in range(n_workloads):
        cq = rng.randrange(n_cqs)
        cpu = rng.choice(["500m", "1", "2", "4"])
        template = PodTemplateSpec(
            spec={"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}
        )
        wl = Workload(
            metadata=ObjectMeta(
                name=f"wl-{j}", namespace=f"ns-{cq}", creation_timestamp=T0 + timedelta(seconds=j % 3600)
            ),
            spec=WorkloadSpec(
                queue_name="lq",
                priority=rng.choice([0, 0, 0, 100]),
                pod_sets=[PodSet(name="main", count=rng.choice([1, 2, 4]), template=template)],
            ),
        )
        objs.append((wl, v))
    return objs


def apply_gc_setting(setting: str) -> None:
    """The cyclic GC as the product's driver of ``setting`` leaves it once loaded (see ``--gc``)."""
    from pykueue.cli.serve import tune_gc

    try:
        from pykueue.cli.serve import freeze_gc
    except ImportError:  # a src/ from before core2 (PYTHONPATH=...): what its drivers did inline

        def freeze_gc() -> None:
            gc.collect()
            gc.freeze()

    if setting == "controller":
        tune_gc()
    if setting in ("controller", "schedule"):
        freeze_gc()


class _GcTimer:
    """A ``gc.callbacks`` entry adding up the CPU time of each generation's collections."""

    def __init__(self) -> None:
        self.count = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]
        self._start = 0.0
        gc.callbacks.append(self)

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.process_time()
        else:
            self.count[info["generation"]] += 1
            self.seconds[info["generation"]] += time.process_time() - self._start

    def report(self) -> str:
        parts = [f"gen{g}: {n} in {s:.2f}s" for g, (n, s) in enumerate(zip(self.count, self.seconds, strict=True))]
        return ", ".join(parts) + f" (total {sum(self.seconds):.2f}s CPU)"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cqs", type=int, default=1000)
    ap.add_argument("--cohorts", type=int, default=10)
    ap.add_argument("--workloads", type=int, default=100_000)
    ap.add_argument("--cycles", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--memory", action="store_true", help="also measure peak Python heap (slower)")
    ap.add_argument("--fair-sharing", action="store_true", help="enable fair sharing (DRS tournament + FS preemption)")
    ap.add_argument(
        "--gc",
        choices=("controller", "schedule", "default"),
        default="controller",
        help="the cyclic GC setting after loading: `controller` (default) as `pykueue controller` and serve's "
        "controllers, which run the core in the product (cli/serve.py tune_gc + freeze_gc); `schedule` as "
        "`pykueue schedule` (freeze_gc only; this benchmark's default before core2); `default` CPython's",
    )
    ap.add_argument(
        "--gc-stats", action="store_true", help="time the cyclic collections during the cycles, per generation"
    )
    ap.add_argument(
        "--digest", action="store_true", help="print a hash of every decision (untimed), to compare two versions"
    )
    ap.add_argument(
        "--per-cycle",
        action="store_true",
        help="print per cycle (untimed) the decisions, admissions, heads already evaluated in an earlier cycle "
        "and the kinds of decision (entry status, requeue reason)",
    )
    args = ap.parse_args()

    t = time.perf_counter()
    objs = build_state(args.cqs, args.cohorts, args.workloads, args.seed)
    build_s = time.perf_counter() - t
    if args.memory:
        tracemalloc.start()
    t = time.perf_counter()
    cluster = SimulatedCluster(SchedulerOptions(fair_sharing=args.fair_sharing), T0 + timedelta(hours=2))
    cluster.load(objs)
    load_s = time.perf_counter() - t
    apply_gc_setting(args.gc)
    gc_timer = _GcTimer() if args.gc_stats else None
    decisions = admitted = 0
    digest = hashlib.sha256()
    cycle_s = step_s = cycle_cpu = 0.0
    evaluated: set[str] = set()
    for i in range(args.cycles):
        if i:
            t = time.perf_counter()
            cluster.advance(1.0)
            step_s += time.perf_counter() - t
        t = time.perf_counter()
        c = time.process_time()
        result = cluster.run_cycle()
        cycle_cpu += time.process_time() - c
        cycle_s += time.perf_counter() - t
        decisions += len(result.entries)
        admitted += len(result.admitted)
        if args.per_cycle:
            kinds = Counter(f"{e.status or 'not nominated'}/{e.requeue_reason or '-'}" for e in result.entries)
            again = sum(1 for e in result.entries if e.info.key in evaluated)
            evaluated.update(e.info.key for e in result.entries)
            print(
                f"cycle {i}: decisions {len(result.entries)}, admitted {len(result.admitted)}, evaluated before "
                f"{again}; {dict(kinds.most_common())}"
            )
        if args.digest:
            digest.update(repr((result.decisions, result.admitted, result.preempted)).encode())
            digest.update(repr([(e.info.key, e.status, e.message, e.requeue_reason) for e in result.entries]).encode())
    if gc_timer is not None:
        gc.callbacks.remove(gc_timer)
    peak = tracemalloc.get_traced_memory()[1] if args.memory else 0
    print(f"state: {args.cqs} ClusterQueues in {args.cohorts} cohorts, {args.workloads} pending workloads")
    print(f"build objects: {build_s:.2f}s   load (cache+queues): {load_s:.2f}s")
    print(f"cycles: {args.cycles}   decisions: {decisions}   admitted: {admitted}")
    print(f"scheduling time: {cycle_s:.2f}s   controller steps between cycles: {step_s:.2f}s")
    print(f"throughput (scheduling only): {decisions / cycle_s:,.0f} decisions/s, {admitted / cycle_s:,.0f} admissions/s")
    # CPU time of the process during the cycles: less sensitive than wall time to other processes
    # competing for the cores (not to their effect on caches).
    print(f"throughput per CPU second of the cycles: {decisions / cycle_cpu:,.0f} decisions/s ({cycle_cpu:.2f} s CPU)")
    total = cycle_s + step_s
    print(f"throughput (cycles + controller steps): {decisions / total:,.0f} decisions/s")
    if gc_timer is not None:
        print(f"cyclic GC during the cycles and steps: {gc_timer.report()}; tracked now {len(gc.get_objects())}")
    if args.digest:
        print(f"decisions digest: {digest.hexdigest()}")
    if args.memory:
        print(f"peak traced Python heap during load+run: {peak / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
