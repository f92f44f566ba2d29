"""Generator, runner and recorder of Kueue's scheduler benchmark, over HTTP.

Semantics follow upstream's test/performance/scheduler/runner:

* generator (generator/generator.go): one ResourceFlavor ``rf``; per queue a ClusterQueue in its
  cohort (cpu nominal quota and borrowing limit, the two preemption policies), a Namespace and a
  LocalQueue of the same name; then each workload set is its own sequential loop that sleeps
  ``creationIntervalMs`` and creates one Workload (one pod set ``main`` of one pod requesting
  ``request`` cpu, ``spec.priority``, the class and runtime labels).
* runner (controller/controller.go): a Workload seen Admitted is held for ``runtimeMs`` from that
  moment, then gets ``Finished`` (reason ``ByTest``); an evicted one gets its quota reservation
  cleared (``UnsetQuotaReservationWithCondition(wl, "Pending", "Evicted by the test runner")``)
  and, when admitted again, runs its full runtime again.
* recorder: the figures of the issue (see :class:`Recorder`), all on this process's monotonic
  clock, so they have sub-second resolution.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

from pykueue.api.meta import parse_time
from pykueue.api.quantity import QuantityError, parse_quantity
from pykueue.bench.config import BenchConfig, QueuesSet
from pykueue.bench.http import AsyncAPI
from pykueue.bench.ideal import cohort_name, queue_name
from pykueue.checks.states import (
    ADMITTED,
    EVICTED,
    FINISHED,
    QUOTA_RESERVED,
    condition_true,
    find_condition,
    set_condition,
)
from pykueue.client.interface import AlreadyExists, APIError, Conflict, NotFound

G = "/apis/kueue.x-k8s.io/v1beta2"
RUNNING_TIME_LABEL = "kueue.x-k8s.io/performance-scheduler-running-ms"
CLASS_LABEL = "kueue.x-k8s.io/performance-scheduler-class"
CLEANUP_LABEL = "kueue.x-k8s.io/performance-scheduler-cleanup"
FLAVOR = "rf"
PEAK_WINDOW_SECONDS = 5.0
UPSTREAM_RUNNER_WORKERS = 5
"""Upstream's runner reconciles Workloads with 5 workers (runner/main.go ``GroupKindConcurrency``:
Workload 5), each sending one status write at a time: under load its Finished writes queue behind
each other and workloads hold their quota past their runtime (``--runner-workers 5`` plays that).
By default ours sends each write when it is due, as the issue's runner definition has it."""
SAMPLE_SECONDS = 0.5


@dataclass
class QueueInfo:
    name: str
    cohort: str
    class_name: str
    nominal_milli: int


@dataclass
class WorkloadState:
    class_name: str
    queue: QueueInfo
    request_milli: int
    runtime: float
    created: float
    admitted: bool = False
    reserved: bool = False
    evicted: bool = False
    finished: bool = False
    admitted_at: float | None = None
    server_wait: float | None = None
    """Upstream's recorder's figure: Admitted's lastTransitionTime − creationTimestamp (whole seconds)."""
    evictions: int = 0
    timer: asyncio.TimerHandle | None = None
    latest: dict[str, Any] | None = None
    """The newest object seen while it runs (the base of the runner's status writes)."""


@dataclass
class CQUsage:
    """recorder.go ``CQState``: one ClusterQueue's ``status.flavorsUsage`` cpu as its watch events
    show it, integrated from each event to the next (upstream's usage figure)."""

    first: float
    last: float
    usage_milli: int
    used: float = 0.0
    """milli-CPU × seconds."""


@dataclass
class Sample:
    t: float
    admitted: dict[str, int]
    pending: dict[str, int]
    reserved_milli: dict[str, int]


@dataclass
class Recorder:
    """Figures of one run. Times are seconds since ``t0`` (the start of the control plane)."""

    t0: float
    queues: dict[str, QueueInfo] = field(default_factory=dict)
    workloads: dict[tuple[str, str], WorkloadState] = field(default_factory=dict)
    admissions: list[float] = field(default_factory=list)
    first_queue_at: float | None = None
    last_finish_at: float = 0.0
    finished: int = 0
    reserved_milli: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # per cohort
    reserved_by_class: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # per CQ class
    reserved_integral: dict[str, float] = field(default_factory=lambda: defaultdict(float))  # milli × s
    useful_integral: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    last_change: dict[str, float] = field(default_factory=dict)
    samples: list[Sample] = field(default_factory=list)
    cq_usage: dict[str, CQUsage] = field(default_factory=dict)

    def now(self) -> float:
        return time.monotonic() - self.t0

    def _reserve(self, wl: WorkloadState, sign: int, at: float) -> None:
        cls = wl.queue.class_name
        last = self.last_change.get(cls, at)
        self.reserved_integral[cls] += self.reserved_by_class[cls] * (at - last)
        self.last_change[cls] = at
        self.reserved_by_class[cls] += sign * wl.request_milli
        self.reserved_milli[wl.queue.cohort] += sign * wl.request_milli

    def observe(self, wl: WorkloadState, obj: dict[str, Any], at: float) -> tuple[bool, bool]:
        """Record a watch event of ``wl``; returns (admitted now, evicted now) transitions."""
        reserved = condition_true(obj, QUOTA_RESERVED)
        admitted = condition_true(obj, ADMITTED)
        evicted = condition_true(obj, EVICTED)
        finished = condition_true(obj, FINISHED)
        if finished:
            reserved = admitted = False
        if reserved != wl.reserved:
            self._reserve(wl, 1 if reserved else -1, at)
            wl.reserved = reserved
        newly_admitted = admitted and not wl.admitted
        if newly_admitted:
            # As upstream's recorder: the latest admission counts (recordWLEvent overwrites it).
            wl.admitted_at = at
            self.admissions.append(at)
            wl.server_wait = server_wait(obj)
        newly_evicted = evicted and not wl.evicted
        if newly_evicted:
            wl.evictions += 1
        if finished and not wl.finished:
            wl.finished = True
            self.finished += 1
            self.last_finish_at = max(self.last_finish_at, at)
            self.useful_integral[wl.queue.class_name] += wl.request_milli * wl.runtime
        wl.admitted, wl.evicted = admitted, evicted
        return newly_admitted, newly_evicted

    def observe_cluster_queue(self, name: str, obj: dict[str, Any], at: float) -> None:
        """recorder.go ``RecordCQState`` + ``recordCQEvent``: the first flavor's first resource of
        ``status.flavorsUsage`` (admitted usage), held from one event of the ClusterQueue to the next."""
        usage = 0
        flavors = (obj.get("status") or {}).get("flavorsUsage") or []
        if flavors and flavors[0].get("resources"):
            with contextlib.suppress(QuantityError, TypeError):
                usage = parse_quantity(str(flavors[0]["resources"][0].get("total", "0"))).milli_value()
        state = self.cq_usage.get(name)
        if state is None:
            self.cq_usage[name] = CQUsage(at, at, usage)
            return
        if state.usage_milli > 0:
            state.used += state.usage_milli * (at - state.last)
        state.last, state.usage_milli = at, usage

    def sample(self) -> None:
        admitted: dict[str, int] = defaultdict(int)
        pending: dict[str, int] = defaultdict(int)
        for wl in self.workloads.values():
            if wl.finished:
                continue
            if wl.admitted:
                admitted[wl.queue.cohort] += 1
            elif not wl.reserved:
                pending[wl.queue.cohort] += 1
        self.samples.append(Sample(self.now(), dict(admitted), dict(pending), dict(self.reserved_milli)))


def server_wait(obj: dict[str, Any]) -> float | None:
    """recorder.go recordWLEvent: the Admitted condition's lastTransitionTime minus the
    creationTimestamp, when both are set and in order (the API's timestamps are whole seconds)."""
    cond = find_condition(obj, ADMITTED)
    created = obj.get("metadata", {}).get("creationTimestamp")
    if cond is None or not created or not cond.get("lastTransitionTime"):
        return None
    try:
        wait = (parse_time(cond["lastTransitionTime"]) - parse_time(created)).total_seconds()
    except (TypeError, ValueError):
        return None
    return wait if wait >= 0 else None


def upstream_usage(rec: Recorder) -> dict[str, float]:
    """Usage per ClusterQueue class by upstream's recorder and checker: Σ integrated
    ``flavorsUsage`` / (Σ nominal quota × (last event − first event of the class's ClusterQueues)),
    in percent. It follows the ClusterQueues' status, so it counts quota as used until the status
    says otherwise (the issue's usage figure follows the Workloads' reservations instead)."""
    used: dict[str, float] = defaultdict(float)
    nominal: dict[str, int] = defaultdict(int)
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    for name, state in rec.cq_usage.items():
        q = rec.queues.get(name)
        if q is None:
            continue
        cls = q.class_name
        used[cls] += state.used
        nominal[cls] += q.nominal_milli
        first[cls] = min(first.get(cls, state.first), state.first)
        last[cls] = max(last.get(cls, state.last), state.last)
    return {
        cls: round(100 * used[cls] / (nominal[cls] * (last[cls] - first[cls])), 2)
        for cls in sorted(used)
        if nominal[cls] and last[cls] > first[cls]
    }


def upstream_waits(rec: Recorder) -> dict[str, float]:
    """Average time to admission per class by upstream's definition (see :func:`server_wait`)."""
    waits: dict[str, list[float]] = defaultdict(list)
    for wl in rec.workloads.values():
        if wl.server_wait is not None:
            waits[wl.class_name].append(wl.server_wait)
    return {cls: sum(w) / len(w) for cls, w in sorted(waits.items())}


def workload_manifest(name: str, namespace: str, queue: str, class_name: str, runtime_ms: int, priority: int,
                      request: str) -> dict[str, Any]:  # fmt: skip
    """utiltesting MakeWorkload(name, ns).Queue(lq).Label(...).Priority(p).Request(cpu, request)."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {RUNNING_TIME_LABEL: str(runtime_ms), CLASS_LABEL: class_name},
        },
        "spec": {
            "queueName": queue,
            "priority": priority,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "c", "resources": {"requests": {"cpu": request}}}],
                        }
                    },
                }
            ],
        },
    }


def cluster_queue_manifest(name: str, cohort: str, qs: QueuesSet) -> dict[str, Any]:
    """generator.go ``generateQueue``'s ClusterQueue (utiltesting MakeClusterQueue: every
    namespace, BestEffortFIFO, its flavor fungibility)."""
    quota: dict[str, Any] = {"name": "cpu", "nominalQuota": qs.nominal_quota}
    if qs.borrowing_limit is not None:
        quota["borrowingLimit"] = qs.borrowing_limit
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": name, "labels": {CLASS_LABEL: qs.class_name, CLEANUP_LABEL: "true"}},
        "spec": {
            "namespaceSelector": {},
            "queueingStrategy": "BestEffortFIFO",
            "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
            "cohortName": cohort,
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": FLAVOR, "resources": [quota]}]}],
            "preemption": {"reclaimWithinCohort": qs.reclaim_within_cohort,
                           "withinClusterQueue": qs.within_cluster_queue},
        },
    }  # fmt: skip


class SchedulerBench:
    """One run: generator, runner and recorder on one event loop, against ``api``."""

    def __init__(
        self, api: AsyncAPI, config: BenchConfig, t0: float, progress: TextIO | None = None,
        runner_workers: int = 0,
    ) -> None:  # fmt: skip
        self.api = api
        # None: every status write goes out at once (no bound).
        self._write_slots = asyncio.Semaphore(runner_workers) if runner_workers > 0 else None
        self.config = config
        self.rec = Recorder(t0)
        self.progress = progress
        self.total = config.workload_count
        self.created = 0
        self.generation_done = asyncio.Event()
        self.all_done = asyncio.Event()
        self.errors: list[str] = []
        self.finish_writes = 0
        self.conflicts = 0
        self.watch_ready = asyncio.Event()
        self.cq_watch_ready = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()

    # --- generator ----------------------------------------------------------------------------

    async def generate(self) -> None:
        await self._create(f"{G}/resourceflavors", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": FLAVOR, "labels": {CLEANUP_LABEL: "true"}},
        })  # fmt: skip
        loops = []
        for cs in self.config.cohorts:
            for ci in range(cs.count):
                cohort = cohort_name(cs.class_name, ci)
                for qsi, qs in enumerate(cs.queues_sets):
                    for qi in range(qs.count):
                        loops.append(self._queue(cohort, qsi, qi, qs))
        await asyncio.gather(*loops)
        self.generation_done.set()
        self._check_done()

    async def _create(self, path: str, body: dict[str, Any]) -> None:
        with contextlib.suppress(AlreadyExists):
            await self.api.request("POST", path, body)

    async def _queue(self, cohort: str, qsi: int, qi: int, qs: Any) -> None:
        name = queue_name(qs.class_name, qsi, qi, cohort)
        self.rec.queues[name] = QueueInfo(name, cohort, qs.class_name, qs.nominal_milli)
        if self.rec.first_queue_at is None:
            self.rec.first_queue_at = self.rec.now()
        await self._create(f"{G}/clusterqueues", cluster_queue_manifest(name, cohort, qs))
        await self._create("/api/v1/namespaces", {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {CLEANUP_LABEL: "true"}},
        })  # fmt: skip
        await self._create(f"{G}/namespaces/{name}/localqueues", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": name}, "spec": {"clusterQueue": name},
        })  # fmt: skip
        await asyncio.gather(*(self._workload_set(name, wsi, ws) for wsi, ws in enumerate(qs.workloads_sets)))

    async def _workload_set(self, queue: str, wsi: int, ws: Any) -> None:
        info = self.rec.queues[queue]
        path = f"{G}/namespaces/{queue}/workloads"
        for si in range(ws.count):
            for i, t in enumerate(ws.workloads):
                await asyncio.sleep(ws.creation_interval_ms / 1000)
                name = f"{t.class_name}-{wsi}-{si}-{i}"
                # Registered before the POST: the watch may deliver its admission before the
                # response arrives. Time to admission counts from the moment the user asked.
                self.rec.workloads[(queue, name)] = WorkloadState(
                    t.class_name, info, t.request_milli, t.runtime_ms / 1000, self.rec.now()
                )
                body = workload_manifest(name, queue, queue, t.class_name, t.runtime_ms, t.priority, t.request)
                await self._create(path, body)
                self.created += 1

    # --- runner -------------------------------------------------------------------------------

    async def run_watch(self) -> None:
        _, rv = await self._list_rv(f"{G}/workloads")
        self.watch_ready.set()
        async for etype, obj in self.api.watch(f"{G}/workloads", rv):
            if etype == "DELETED":
                continue
            meta = obj.get("metadata", {})
            wl = self.rec.workloads.get((meta.get("namespace", ""), meta.get("name", "")))
            if wl is None:
                continue
            at = self.rec.now()
            newly_admitted, _ = self.rec.observe(wl, obj, at)
            if wl.finished:
                self._cancel(wl)
                wl.latest = None
                self._check_done()
                continue
            if wl.evicted and wl.reserved:
                # controller.go Reconcile: finish the eviction (the job integration's part).
                self._cancel(wl)
                self._spawn(self._clear_reservation(wl, obj))
                continue
            if wl.admitted:
                wl.latest = obj
                if newly_admitted or wl.timer is None:
                    self._cancel(wl)
                    loop = asyncio.get_running_loop()
                    wl.timer = loop.call_later(wl.runtime, self._start_finish, wl)
            elif wl.timer is not None:
                self._cancel(wl)

    async def run_cluster_queue_watch(self) -> None:
        """The recorder's ClusterQueue handler (controller.go ``cqHandler``): every status it shows."""
        _, rv = await self._list_rv(f"{G}/clusterqueues")
        self.cq_watch_ready.set()
        async for etype, obj in self.api.watch(f"{G}/clusterqueues", rv):
            name = obj.get("metadata", {}).get("name", "")
            if etype != "DELETED" and name in self.rec.queues:
                self.rec.observe_cluster_queue(name, obj, self.rec.now())

    async def _list_rv(self, path: str) -> tuple[list[Any], str]:
        listed = await self.api.request("GET", f"{path}?limit=1")
        return listed.get("items") or [], str(listed.get("metadata", {}).get("resourceVersion", "0"))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @staticmethod
    def _cancel(wl: WorkloadState) -> None:
        if wl.timer is not None:
            wl.timer.cancel()
            wl.timer = None

    async def _write_status(self, obj: dict[str, Any], edit: Callable[[dict[str, Any]], bool]) -> None:
        """Replace the status with ``edit`` applied; on a conflict re-read and apply again. At most
        ``runner_workers`` of these run at once, as upstream's runner's reconcile workers."""
        if self._write_slots is None:
            await self._write_status_now(obj, edit)
            return
        async with self._write_slots:
            await self._write_status_now(obj, edit)

    async def _write_status_now(self, obj: dict[str, Any], edit: Callable[[dict[str, Any]], bool]) -> None:
        meta = obj["metadata"]
        path = f"{G}/namespaces/{meta['namespace']}/workloads/{meta['name']}"
        for _ in range(20):
            if not edit(obj):
                return
            try:
                await self.api.request("PUT", f"{path}/status", obj)
                return
            except Conflict:
                self.conflicts += 1
            except NotFound:
                return
            obj = await self.api.request("GET", path)
        self.errors.append(f"{path}: status write kept conflicting")

    def _start_finish(self, wl: WorkloadState) -> None:
        self._spawn(self._finish(wl))

    async def _finish(self, wl: WorkloadState) -> None:
        wl.timer = None
        obj = wl.latest
        if obj is None or wl.finished:
            return

        def edit(o: dict[str, Any]) -> bool:
            if not condition_true(o, ADMITTED) or condition_true(o, FINISHED) or condition_true(o, EVICTED):
                return False
            gen = o.get("metadata", {}).get("generation")
            set_condition(o, FINISHED, "True", "ByTest", "By test runner", datetime.now(UTC), gen)
            return True

        self.finish_writes += 1
        await self._write_status(obj, edit)

    async def _clear_reservation(self, wl: WorkloadState, obj: dict[str, Any]) -> None:
        def edit(o: dict[str, Any]) -> bool:
            if not condition_true(o, EVICTED) or not condition_true(o, QUOTA_RESERVED):
                return False
            now = datetime.now(UTC)
            gen = o.get("metadata", {}).get("generation")
            set_condition(o, QUOTA_RESERVED, "False", "Pending", "Evicted by the test runner", now, gen)
            o.get("status", {}).pop("admission", None)
            # workload.SyncAdmittedCondition: no reservation, so not admitted any more.
            admitted = find_condition(o, ADMITTED)
            if admitted is not None and admitted.get("status") == "True":
                set_condition(o, ADMITTED, "False", "NoReservation", "The workload has no reservation", now)
            return True

        await self._write_status(obj, edit)

    def _check_done(self) -> None:
        if self.generation_done.is_set() and self.rec.finished >= self.total:
            self.all_done.set()

    # --- progress -----------------------------------------------------------------------------

    async def sample_loop(self) -> None:
        last_print = -math.inf
        tty = self.progress is not None and self.progress.isatty()
        while True:
            self.rec.sample()
            now = self.rec.now()
            if self.progress is not None and (tty or now - last_print >= 5):
                last_print = now
                self.progress.write(("\r" if tty else "") + self.status_line() + ("" if tty else "\n"))
                self.progress.flush()
            await asyncio.sleep(SAMPLE_SECONDS)

    def status_line(self) -> str:
        s = self.rec.samples[-1] if self.rec.samples else None
        pending = sum(s.pending.values()) if s else 0
        running = sum(s.admitted.values()) if s else 0
        reserved = sum(self.rec.reserved_milli.values()) / 1000
        capacity = sum(q.nominal_milli for q in self.rec.queues.values()) / 1000
        now = self.rec.now()
        recent = sum(1 for t in self.rec.admissions[-5000:] if t > now - PEAK_WINDOW_SECONDS) / PEAK_WINDOW_SECONDS
        return (
            f"[{now:7.1f}s] created {self.created}/{self.total}  pending {pending}  admitted {running}  "
            f"finished {self.rec.finished}  reserved {reserved:g}/{capacity:g} CPU  {recent:.0f} admissions/s "
        )

    # --- the whole run ------------------------------------------------------------------------

    async def run(self, timeout: float) -> None:
        watcher = asyncio.ensure_future(self.run_watch())
        cq_watcher = asyncio.ensure_future(self.run_cluster_queue_watch())
        sampler = asyncio.ensure_future(self.sample_loop())
        try:
            await asyncio.wait_for(self.watch_ready.wait(), 60)
            await asyncio.wait_for(self.cq_watch_ready.wait(), 60)
            generator = asyncio.ensure_future(self.generate())
            done = asyncio.ensure_future(self.all_done.wait())
            finished, _ = await asyncio.wait(
                {generator, done, watcher}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
            if generator in finished and generator.exception() is not None:
                raise generator.exception()  # type: ignore[misc]
            if watcher in finished:
                exc = watcher.exception()
                raise RuntimeError(f"the Workload watch ended: {exc!r}")
            if not self.all_done.is_set():
                await asyncio.wait_for(self.all_done.wait(), max(1.0, timeout - self.rec.now()))
        except TimeoutError:
            raise TimeoutError(
                f"not finished after {timeout:g}s: {self.rec.finished}/{self.total} workloads finished"
            ) from None
        finally:
            self.rec.sample()
            if self.progress is not None:
                self.progress.write(("\r" if self.progress.isatty() else "") + self.status_line() + "\n")
            for task in (watcher, cq_watcher, sampler, *self._tasks):
                task.cancel()
            for task in (watcher, cq_watcher, sampler):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    async def cleanup(self) -> None:
        """generator.go Cleanup: what the run created in an existing cluster (by the cleanup label)."""
        for path in ("/api/v1/namespaces", f"{G}/clusterqueues", f"{G}/resourceflavors"):
            with contextlib.suppress(APIError):
                listed = await self.api.request("GET", f"{path}?labelSelector={CLEANUP_LABEL}")
                for item in listed.get("items") or []:
                    with contextlib.suppress(APIError):
                        await self.api.request("DELETE", f"{path}/{item['metadata']['name']}")


def summarize(bench: SchedulerBench, ideal_wall: float, greedy: dict[str, float],
              control_plane_rss: int | None) -> dict[str, Any]:  # fmt: skip
    """summary.json: the figures of the issue, with the physical limit beside each."""
    rec = bench.rec
    wall = rec.last_finish_at
    start = rec.first_queue_at or 0.0
    window = max(wall - start, 1e-9)
    usage: dict[str, float] = {}
    useful: dict[str, float] = {}
    nominal: dict[str, int] = defaultdict(int)
    for q in rec.queues.values():
        nominal[q.class_name] += q.nominal_milli
    for cls, quota in nominal.items():
        integral = rec.reserved_integral[cls] + rec.reserved_by_class[cls] * (wall - rec.last_change.get(cls, wall))
        usage[cls] = round(100 * integral / (quota * window), 2) if quota else 0.0
        useful[cls] = round(100 * rec.useful_integral[cls] / (quota * window), 2) if quota else 0.0
    times = sorted(rec.admissions)
    peak, j = 0, 0
    for i, t in enumerate(times):
        while times[j] < t - PEAK_WINDOW_SECONDS:
            j += 1
        peak = max(peak, i - j + 1)
    classes: dict[str, dict[str, Any]] = {}
    waits: dict[str, list[float]] = defaultdict(list)
    evictions: dict[str, int] = defaultdict(int)
    for wl in rec.workloads.values():
        evictions[wl.class_name] += wl.evictions
        if wl.admitted_at is not None:
            waits[wl.class_name].append(wl.admitted_at - wl.created)
    for cls in sorted({wl.class_name for wl in rec.workloads.values()}):
        w = waits[cls]
        classes[cls] = {
            "count": sum(1 for wl in rec.workloads.values() if wl.class_name == cls),
            "avg_time_to_admission_seconds": round(sum(w) / len(w), 3) if w else None,
            "ideal_avg_time_to_admission_seconds": round(greedy.get(cls, 0.0), 3),
            "evictions": evictions[cls],
        }
    return {
        "wall_seconds": round(wall, 3),
        "ideal_wall_seconds": round(ideal_wall, 3),
        "admissions_per_second": round(len(times) / wall, 1) if wall else 0.0,
        "peak_admissions_per_second": round(peak / PEAK_WINDOW_SECONDS, 1),
        "usage_percent": usage,
        "useful_usage_percent": useful,
        "upstream_usage_percent": upstream_usage(rec),
        "peak_rss_bytes": {
            "control_plane": control_plane_rss,
            "runner": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        },
        "classes": classes,
    }


def print_table(summary: dict[str, Any], out: TextIO = sys.stdout) -> None:
    """The end-of-run table: each figure beside its physical limit, and the ratio."""

    def ratio(a: float | None, b: float) -> str:
        return f"{a / b:.2f}×" if a is not None and b > 0 else "-"

    wall, ideal = summary["wall_seconds"], summary["ideal_wall_seconds"]
    rss = summary["peak_rss_bytes"]
    lines = [
        f"{'figure':<34}{'measured':>12}{'ideal':>12}{'ratio':>9}",
        f"{'wall (s)':<34}{wall:>12.1f}{ideal:>12.1f}{ratio(wall, ideal):>9}",
    ]
    for cls, c in summary["classes"].items():
        avg = c["avg_time_to_admission_seconds"]
        lines.append(
            f"{'avg time to admission ' + cls + ' (s)':<34}{(avg if avg is not None else math.nan):>12.2f}"
            f"{c['ideal_avg_time_to_admission_seconds']:>12.2f}"
            f"{ratio(avg, c['ideal_avg_time_to_admission_seconds']):>9}"
            f"   count {c['count']}, evictions {c['evictions']}"
        )
    lines.append(
        f"admissions/s {summary['admissions_per_second']:g} (peak over 5 s: {summary['peak_admissions_per_second']:g})"
    )
    for cls, u in summary["usage_percent"].items():
        lines.append(f"usage of ClusterQueue class {cls}: {u:g} % (useful {summary['useful_usage_percent'][cls]:g} %)")
    cp = rss["control_plane"]
    lines.append(
        f"peak RSS: control plane {cp / 2**20:.0f} MiB, " if cp else "peak RSS: control plane n/a, "
    )
    lines[-1] += f"runner {rss['runner'] / 2**20:.0f} MiB"
    out.write("\n".join(lines) + "\n")
