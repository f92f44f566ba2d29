"""The physical limit of a benchmark configuration, computed from the configuration alone.

* :func:`ideal_wall_seconds`: arrivals plus perfect packing. Within a cohort the ClusterQueues
  can only share their nominal quotas (Σ nominal is the cohort's capacity), so the work that
  arrives at or after time t (CPU × runtime) cannot finish before ``t + work / capacity``, and no
  workload before ``arrival + runtime``; the bound is the largest of these over the arrival times
  of every cohort. It is reachable only with perfect (fluid) packing.
* :func:`greedy_schedule`: a work-conserving greedy scheduler with exact knowledge — at every
  arrival and completion it admits pending workloads in priority order (then arrival order),
  skipping those that do not fit the cohort's free capacity or their queue's nominal quota plus
  borrowing limit, without preemption, and each runs exactly its runtime. Its average time to
  admission per class is the "greedy ideal" a real scheduler's figure is compared with.

Arrival times follow upstream's generator (runner/generator/generator.go ``generateWlSet``):
each workload set is a sequential loop that sleeps ``creationIntervalMs`` and then creates one
workload, so the k-th creation (0-based) of a set happens at ``(k + 1) × interval``.
"""

from __future__ import annotations

import bisect
import heapq
from collections import defaultdict
from dataclasses import dataclass, field

from pykueue.api.quantity import parse_quantity
from pykueue.bench.config import BenchConfig


@dataclass(frozen=True)
class Job:
    arrival: float
    runtime: float
    request_milli: int
    priority: int
    class_name: str
    queue: int
    """Index of the job's ClusterQueue within its cohort."""


@dataclass
class CohortPlan:
    """One cohort: its capacity, its queues' limits, and every workload that will arrive in it."""

    name: str
    capacity_milli: int = 0
    queue_limits: list[int | None] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)


def cohort_name(class_name: str, index: int) -> str:
    """generator.go ``generateCohort``."""
    return f"{class_name}-{index}"


def queue_name(class_name: str, queue_set: int, index: int, cohort: str) -> str:
    """generator.go ``generateQueue``: the ClusterQueue, its Namespace and its LocalQueue."""
    return f"{class_name}-{queue_set}-{index}-{cohort}"


def plan(config: BenchConfig) -> list[CohortPlan]:
    """Every cohort of the configuration, with the jobs the generator will create in it."""
    cohorts: dict[str, CohortPlan] = {}
    for cs in config.cohorts:
        for ci in range(cs.count):
            name = cohort_name(cs.class_name, ci)
            cp = cohorts.setdefault(name, CohortPlan(name))
            for qs in cs.queues_sets:
                limit = None
                if qs.borrowing_limit is not None:
                    limit = qs.nominal_milli + parse_quantity(qs.borrowing_limit).milli_value()
                for _ in range(qs.count):
                    q = len(cp.queue_limits)
                    cp.queue_limits.append(limit)
                    cp.capacity_milli += qs.nominal_milli
                    for ws in qs.workloads_sets:
                        k = 0
                        for _si in range(ws.count):
                            for t in ws.workloads:
                                k += 1
                                cp.jobs.append(
                                    Job(k * ws.creation_interval_ms / 1000, t.runtime_ms / 1000, t.request_milli,
                                        t.priority, t.class_name, q)
                                )  # fmt: skip
    return list(cohorts.values())


def ideal_wall_seconds(config: BenchConfig) -> float:
    """Arrivals + perfect packing (module docstring); 0 for a configuration without work."""
    best = 0.0
    for cp in plan(config):
        jobs = sorted(cp.jobs, key=lambda j: j.arrival)
        best = max([best, *(j.arrival + j.runtime for j in jobs)])
        if cp.capacity_milli <= 0:
            continue
        work_after = 0.0
        for j in reversed(jobs):  # suffix sums: the work arriving at or after j.arrival
            work_after += j.request_milli * j.runtime
            best = max(best, j.arrival + work_after / cp.capacity_milli)
    return best


@dataclass
class GreedyResult:
    wall_seconds: float
    avg_time_to_admission_seconds: dict[str, float]
    count: dict[str, int]


def greedy_schedule(config: BenchConfig) -> GreedyResult:
    """The greedy scheduler of the module docstring, cohort by cohort (cohorts share nothing)."""
    wait: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    wall = 0.0
    for cp in plan(config):
        arrivals = sorted(cp.jobs, key=lambda j: j.arrival)
        pending: list[tuple[int, float, int, Job]] = []  # (-priority, arrival, seq): Kueue's head order
        running: list[tuple[float, int, Job]] = []  # (end, seq, job)
        used_queue = [0] * len(cp.queue_limits)
        free = cp.capacity_milli
        min_request = min((j.request_milli for j in arrivals), default=0)
        i, seq, now = 0, 0, 0.0
        while i < len(arrivals) or running or pending:
            next_arrival = arrivals[i].arrival if i < len(arrivals) else float("inf")
            next_end = running[0][0] if running else float("inf")
            now = min(next_arrival, next_end)
            if now == float("inf"):  # pending work that can never fit (request above the limits)
                break
            while running and running[0][0] <= now:
                _, _, job = heapq.heappop(running)
                free += job.request_milli
                used_queue[job.queue] -= job.request_milli
            while i < len(arrivals) and arrivals[i].arrival <= now:
                job = arrivals[i]
                bisect.insort(pending, (-job.priority, job.arrival, seq, job))
                seq += 1
                i += 1
            kept: list[tuple[int, float, int, Job]] = []
            for n, entry in enumerate(pending):
                if free < min_request:
                    kept.extend(pending[n:])
                    break
                job = entry[3]
                limit = cp.queue_limits[job.queue]
                fits_queue = limit is None or used_queue[job.queue] + job.request_milli <= limit
                if job.request_milli <= free and fits_queue:
                    free -= job.request_milli
                    used_queue[job.queue] += job.request_milli
                    heapq.heappush(running, (now + job.runtime, entry[2], job))
                    wait[job.class_name] += now - job.arrival
                    count[job.class_name] += 1
                    wall = max(wall, now + job.runtime)
                else:
                    kept.append(entry)
            pending = kept
    return GreedyResult(
        wall, {c: wait[c] / count[c] for c in count}, dict(count)
    )
