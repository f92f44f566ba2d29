"""Pipelined admissions: the scheduler's status writes leave the manager thread (upstream ``admit``
runs ``applyAdmission`` in a goroutine), several workloads' writes overlap, one object never has
two writes in flight, and a failed write is forgotten and requeued without over-committing quota.

The API is the real in-process server; :class:`SlowClient` only adds latency to the Workload status
writes (and, where a test asks, makes the server see a concurrent change or deletion first, or
fails a request as a broken connection would) so the writes are observably in flight.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from test_workload_lifecycle import ManualClock, change_status_concurrently, cond, wait, workload

from pykueue.apiserver.app import create_app
from pykueue.client import resources as R
from pykueue.client.inprocess import InProcessClient
from pykueue.client.interface import APIError, Conflict, Resource
from pykueue.controllers.manager import ControllerManager
from pykueue.controllers.options import default_options
from pykueue.runtime.writes import NotStarted, WritePipeline
from pykueue.store import Store


class SlowClient(InProcessClient):
    """The in-process client, whose Workload status writes take ``delay`` seconds and are watched:
    ``max_in_flight`` counts overlapping ones, ``same_object`` records an object written twice at once."""

    def __init__(self, handlers: Any, delay: float) -> None:
        super().__init__(handlers)
        self.delay = delay
        self.cq_open = threading.Event()
        """ClusterQueue status writes wait while this is clear (held as long as a test needs)."""
        self.cq_open.set()
        self.pending_open = threading.Event()
        """Workload status writes without an admission (a pending head's, a reconciler's) wait
        while this is clear; ``pending_held`` names those waiting."""
        self.pending_open.set()
        self.pending_held: set[str] = set()
        self.cq_writes_in_flight = 0
        self.cq_status_writes = 0
        self.lock = threading.Lock()
        self.in_flight: set[str] = set()
        self.max_in_flight = 0
        self.same_object: list[str] = []
        self.status_writes: list[str] = []
        self.before_write: dict[str, Callable[[str], None]] = {}
        """Run (once) before the admission write of ``name`` (``*``: of the first one) is sent: a
        concurrent change, a deletion."""
        self.after_write: dict[str, Callable[[dict[str, Any]], None]] = {}
        """Run (once) with the server's answer to the next status write of ``name``, before the
        client gets it: an answer that comes after the write's watch event."""
        self.fail_pending: set[str] = set()
        """Names whose status writes without an admission get a server error (500)."""
        self.hold: set[str] = set()
        """Names whose status writes wait while ``pending_open`` is clear, with an admission too."""

    def replace(self, res: Resource, obj: Mapping[str, Any], subresource: str | None = None) -> dict[str, Any]:
        if res.plural == "clusterqueues" and subresource == "status":
            with self.lock:
                self.cq_writes_in_flight += 1
                self.cq_status_writes += 1
            try:
                self.cq_open.wait(30)
                return super().replace(res, obj, subresource=subresource)
            finally:
                with self.lock:
                    self.cq_writes_in_flight -= 1
        if res.plural != "workloads" or subresource != "status":
            return super().replace(res, obj, subresource=subresource)
        name = obj["metadata"]["name"]
        with self.lock:
            if name in self.in_flight:
                self.same_object.append(name)
            self.in_flight.add(name)
            self.max_in_flight = max(self.max_in_flight, len(self.in_flight))
            self.status_writes.append(name)
            admission = (obj.get("status") or {}).get("admission") is not None
            hook = self.before_write.pop(name, None) or self.before_write.pop("*", None) if admission else None
        try:
            time.sleep(self.delay)
            if (not admission or name in self.hold) and not self.pending_open.is_set():
                with self.lock:
                    self.pending_held.add(name)
                self.pending_open.wait(30)
                with self.lock:
                    self.pending_held.discard(name)
            if hook is not None:
                hook(name)
            if not admission and name in self.fail_pending:
                raise APIError(500, "InternalError", "Internal error occurred: injected by the test")
            out = super().replace(res, obj, subresource=subresource)
            with self.lock:
                after = self.after_write.pop(name, None)
            if after is not None:
                after(out)
            return out
        finally:
            with self.lock:
                self.in_flight.discard(name)


class Env:
    def __init__(self, delay: float, cpu: int, max_in_flight: int = 16) -> None:
        self.store = Store(None)
        _, parts = create_app(self.store)
        parts.bootstrap()
        self.client = SlowClient(parts.handlers, delay)
        self.api = InProcessClient(parts.handlers)  # another user of the same server
        self.clock = ManualClock()
        options = default_options()
        options.max_writes_in_flight = max_in_flight
        self.api.create(R.RESOURCE_FLAVORS, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "f"}})
        self.api.create(
            R.CLUSTER_QUEUES,
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": "cq"},
                "spec": {
                    "namespaceSelector": {},
                    "resourceGroups": [
                        {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}
                    ],
                },
            },
        )
        self.api.create(
            R.LOCAL_QUEUES,
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "default"}, "spec": {"clusterQueue": "cq"}},
        )
        self.mgr = ControllerManager(self.client, options, clock=self.clock)

    def start(self) -> None:
        self.mgr.start()
        assert self.mgr.wait_ready(10)

    def close(self) -> None:
        self.client.cq_open.set()
        self.client.pending_open.set()
        self.mgr.stop()
        self.store.close()

    def reserved(self) -> set[str]:
        items, _ = self.api.list(R.WORKLOADS, "default")
        return {
            w["metadata"]["name"] for w in items if (c := cond(w, "QuotaReserved")) is not None and c["status"] == "True"
        }

    def outcomes(self, name: str) -> list[tuple[str, str]]:
        story = self.mgr.call_in_manager_thread(lambda: self.mgr.core.story(f"default/{name}"))
        return [(t.reason, t.outcome) for t in story]


@pytest.fixture
def make_env() -> Iterator[Callable[..., Env]]:
    envs: list[Env] = []

    def make(delay: float, cpu: int, max_in_flight: int = 16) -> Env:
        env = Env(delay, cpu, max_in_flight)
        envs.append(env)
        return env

    yield make
    for env in envs:
        env.close()


def watch_quota(env: Env, limit: int, stop: threading.Event) -> list[set[str]]:
    """Sample the reserved Workloads until ``stop``; returns every sample above ``limit``."""
    over: list[set[str]] = []

    def run() -> None:
        while not stop.is_set():
            now = env.reserved()
            if len(now) > limit:
                over.append(now)
            time.sleep(0.01)

    threading.Thread(target=run, daemon=True).start()
    return over


def test_admissions_of_different_workloads_are_in_flight_together(make_env: Callable[..., Env]) -> None:
    # One ClusterQueue: each cycle admits one head. With the writes on the manager thread each
    # cycle waited 0.3 s for its write; pipelined, the next cycles run while it is in flight.
    env = make_env(delay=0.3, cpu=8)
    for i in range(6):
        env.api.create(R.WORKLOADS, workload(f"w{i}"))
    env.start()
    wait(lambda: len(env.reserved()) == 6)
    # Counted, not timed (a busy machine stretches any wall-clock bound): with the writes on the
    # manager thread one was in flight at a time.
    assert env.client.max_in_flight >= 3
    assert env.client.same_object == []
    # Each admission's events were recorded once its write landed.
    def reserved_events() -> list[str]:
        events, _ = env.api.list(R.Resource("", "v1", "events", "Event", True), "default")
        return sorted(e["involvedObject"]["name"] for e in events if e["reason"] == "QuotaReserved")

    wait(lambda: reserved_events() == [f"w{i}" for i in range(6)])


def test_writes_in_flight_are_bounded(make_env: Callable[..., Env]) -> None:
    env = make_env(delay=0.1, cpu=8, max_in_flight=2)
    for i in range(6):
        env.api.create(R.WORKLOADS, workload(f"w{i}"))
    env.start()
    wait(lambda: len(env.reserved()) == 6)
    assert env.client.max_in_flight == 2


def test_a_conflicting_admission_is_forgotten_requeued_and_never_over_commits(make_env: Callable[..., Env]) -> None:
    # Quota for two, three Workloads. The first admission write meets a concurrent change of the
    # Workload's status (a real 409 from the server, and the status it was computed from is gone,
    # so the loose write does not send it again): while it is in flight another Workload is
    # admitted and the third must not be (the assumed usage still counts); once the conflict is
    # seen, the Workload is forgotten (its usage released) and requeued (upstream's ForgetWorkload
    # + requeueAndUpdate with FailedAfterNomination), and the two slots end up taken by two
    # Workloads, never three.
    env = make_env(delay=0.2, cpu=2)
    for name in ("a", "b", "c"):
        env.api.create(R.WORKLOADS, workload(name))
    touched: list[str] = []

    def touch(name: str) -> None:
        touched.append(name)
        change_status_concurrently(env.api, name)

    env.client.before_write["*"] = touch
    stop = threading.Event()
    over = watch_quota(env, 2, stop)
    env.start()

    def settled() -> bool:
        env.clock.advance(0.2)  # parked workloads' retries are batched (``RETRY_BATCH_PERIOD``)
        return bool(touched) and len(env.reserved()) == 2 and "failed" in [o for _, o in env.outcomes(touched[0])]

    try:
        wait(settled)
        env.clock.advance(2)
        time.sleep(0.5)  # no third admission may be in flight now
        reserved = env.reserved()
        assert len(reserved) == 2
    finally:
        stop.set()
    assert over == []
    first = [o for r, o in env.outcomes(touched[0]) if r in ("Admitted", "QuotaReserved")]
    assert first[:2] == ["applied", "failed"]  # assumed at once, forgotten once the conflict came back
    (left,) = {"a", "b", "c"} - reserved
    assert cond(env.api.get(R.WORKLOADS, left, "default"), "QuotaReserved")["status"] == "False"  # type: ignore[index]
    # Every attempt shows "applied" when assumed; each one that conflicted adds "failed". The two
    # that hold the quota are the attempts that did not fail. A retry popped before the informer
    # saw the concurrent change carries the stale resourceVersion and conflicts again, as upstream's
    # strict ``ApplyAdmissionStatus`` would, so more than one failure is allowed.
    admissions = [o for n in "abc" for r, o in env.outcomes(n) if r in ("Admitted", "QuotaReserved")]
    assert set(admissions) == {"applied", "failed"}
    assert admissions.count("applied") - admissions.count("failed") == 2


def test_a_concurrent_label_change_does_not_stop_an_admission(make_env: Callable[..., Env]) -> None:
    # Upstream TestSchedulerWhenWorkloadModifiedConcurrently "use patch in admit": the scheduler's
    # admission is a loose apply (WithLooseOnApply, WithRetryOnConflict), so a change of the labels
    # between the scheduler's read and its write does not fail it. Here the server answers 409 to
    # the first PUT (its resourceVersion is stale); the status is still the one the admission was
    # computed from, so the same status is sent again on the new version and lands.
    env = make_env(delay=0.05, cpu=1)
    env.api.create(R.WORKLOADS, workload("a"))
    touched: list[str] = []

    def touch(name: str) -> None:
        touched.append(name)
        env.api.patch(R.WORKLOADS, name, {"metadata": {"labels": {"touched": "yes"}}}, "default")

    env.client.before_write["a"] = touch
    env.start()
    wait(lambda: env.reserved() == {"a"})
    wl = env.api.get(R.WORKLOADS, "a", "default")
    assert touched == ["a"]
    assert wl["metadata"]["labels"]["touched"] == "yes"  # the concurrent change is kept
    assert cond(wl, "Admitted")["status"] == "True"  # type: ignore[index]
    outcomes = [o for r, o in env.outcomes("a") if r in ("Admitted", "QuotaReserved")]
    assert "failed" not in outcomes  # admitted by the first decision, never forgotten
    assert env.client.status_writes.count("a") == 2  # the 409, then the same status again


def test_a_write_error_requeues_the_workload(make_env: Callable[..., Env]) -> None:
    env = make_env(delay=0.05, cpu=1)
    env.api.create(R.WORKLOADS, workload("a"))

    def broken(name: str) -> None:
        raise APIError(0, "ConnectionError", "connection reset by peer")

    env.client.before_write["a"] = broken
    env.start()
    wait(lambda: env.reserved() == {"a"})
    assert env.client.status_writes == ["a", "a"]  # the failed admission, then the one that landed
    assert [o for _, o in env.outcomes("a")][-2:] == ["failed", "applied"]


def test_a_workload_deleted_during_its_admission_releases_the_quota(make_env: Callable[..., Env]) -> None:
    # Quota for one: the first Workload admitted is deleted while its admission is in flight (404).
    # Its assumed usage is forgotten, so the other is admitted; the deleted one is not requeued.
    env = make_env(delay=0.1, cpu=1)
    env.api.create(R.WORKLOADS, workload("a"))
    env.api.create(R.WORKLOADS, workload("b"))
    deleted: list[str] = []

    def delete(name: str) -> None:
        deleted.append(name)
        env.api.delete(R.WORKLOADS, name, "default")

    env.client.before_write["*"] = delete
    env.start()
    wait(lambda: deleted)

    def other_admitted() -> bool:
        env.clock.advance(0.2)  # the parked one's retry is batched (``RETRY_BATCH_PERIOD``)
        return env.reserved() == {"a", "b"} - set(deleted)

    wait(other_admitted)
    assert env.client.status_writes.count(deleted[0]) == 1


def test_a_synchronous_write_of_an_object_in_flight_conflicts_without_a_request(make_env: Callable[..., Env]) -> None:
    env = make_env(delay=0.0, cpu=1)
    env.api.create(R.WORKLOADS, workload("a"))
    release = threading.Event()
    env.client.before_write["a"] = lambda name: release.wait(10) and None  # held until checked
    env.start()
    wait(lambda: "a" in env.client.in_flight)

    def write_a() -> str:
        wl = env.mgr.ctx.workloads["default/a"]
        return str(env.mgr.ctx.write_workload(wl))

    writes = len(env.client.status_writes)
    assert env.mgr.call_in_manager_thread(write_a) == "False"  # a Conflict, as the server would answer
    assert len(env.client.status_writes) == writes
    release.set()
    wait(lambda: env.reserved() == {"a"})
    assert env.client.same_object == []


def test_a_manager_thread_stuck_past_the_stop_keeps_its_completions_and_runs_them_itself(
    make_env: Callable[..., Env],
) -> None:
    """stop() whose join gives up on a manager thread still busy (stuck in a step): the completion
    of the admission (and any write) that ended meanwhile is not run by stop() beside that thread (it touches the
    caches, queues and lock-free metrics only that thread touches); the thread runs it once it gets
    going again (the drain it was held in goes on with them)."""
    env = make_env(delay=0.0, cpu=1)
    env.api.create(R.WORKLOADS, workload("a"))
    held, resume = threading.Event(), threading.Event()

    def hold_the_manager_thread() -> None:
        held.set()
        resume.wait(30)

    def land_once_the_manager_is_held(name: str) -> None:
        threading.Thread(
            target=env.mgr.call_in_manager_thread, args=(hold_the_manager_thread, 30), daemon=True
        ).start()
        assert held.wait(10), "the manager thread did not take the holding call"

    env.client.before_write["a"] = land_once_the_manager_is_held
    env.start()
    assert held.wait(10)
    manager_thread = env.mgr._thread
    assert manager_thread is not None
    try:
        env.mgr.stop(join_timeout=0.2)  # returns once the admission ended (WritePipeline.close)
        assert manager_thread.is_alive()
        assert env.mgr.writes.ended() and env.mgr.writes.pending() >= 1, "stop() ran the completions"
    finally:
        resume.set()
    manager_thread.join(10)
    assert not manager_thread.is_alive()
    assert not env.mgr.writes.ended() and env.mgr.writes.pending() == 0, "completions were dropped"
    assert env.reserved() == {"a"}


def test_queue_status_writes_do_not_hold_up_admissions(make_env: Callable[..., Env]) -> None:
    # A ClusterQueue status write held until the admissions are done: the manager goes on admitting
    # meanwhile (it used to wait for it on its own thread), and the status is written again
    # afterwards. (Held, not slowed by 1.5 s: three admissions in 1.2 s was a wall-clock bound.)
    env = make_env(delay=0.0, cpu=8)
    env.client.cq_open.clear()
    env.start()
    env.api.create(R.WORKLOADS, workload("w0"))
    wait(lambda: env.reserved() == {"w0"})
    env.clock.advance(1.1)  # the queue status batch period (``UpdatesBatchPeriod``)
    wait(lambda: env.client.cq_writes_in_flight == 1)
    for i in (1, 2, 3):
        env.api.create(R.WORKLOADS, workload(f"w{i}"))
    wait(lambda: len(env.reserved()) == 4)
    assert env.client.cq_writes_in_flight == 1  # still in flight
    env.client.cq_open.set()

    def status_counts_all() -> bool:
        env.clock.advance(0.5)
        return (env.api.get(R.CLUSTER_QUEUES, "cq").get("status") or {}).get("reservingWorkloads") == 4

    wait(status_counts_all)


def _extra_queue(env: Env, name: str, cpu: int, preemption: dict[str, str] | None = None) -> None:
    """Another ClusterQueue ``name`` with ``cpu`` of quota and its LocalQueue ``name`` in default."""
    env.api.create(
        R.CLUSTER_QUEUES,
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": name},
            "spec": {
                "namespaceSelector": {},
                **({"preemption": preemption} if preemption else {}),
                "resourceGroups": [
                    {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}
                ],
            },
        },
    )
    env.api.create(
        R.LOCAL_QUEUES,
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": name, "namespace": "default"}, "spec": {"clusterQueue": name}},
    )


def test_a_preemptors_victims_are_evicted_together(make_env: Callable[..., Env]) -> None:
    # Four low-priority Workloads fill a ClusterQueue; a high-priority one needs all of it. The
    # four evictions used to be written one after another in the cycle (4 x 1 s); upstream's
    # IssuePreemptions writes them in parallel (parallelPreemptions = 8) and waits for all.
    env = make_env(delay=0.0, cpu=0)
    _extra_queue(env, "pq", 4, {"withinClusterQueue": "LowerPriority"})
    lows = {f"low{i}" for i in range(4)}
    for name in sorted(lows):
        env.api.create(R.WORKLOADS, workload(name, queue="pq", priority=0))
    env.start()
    wait(lambda: len(env.reserved()) == 4)
    # The manager's own view too: the server answered the admissions before their completions ran
    # on the manager's thread, and a victim whose write is still in flight is not evicted in that
    # cycle (a Conflict without a request) but in a later one (seen once in CI under load).
    wait(lambda: env.mgr.call_in_manager_thread(lambda: env.mgr.ctx.writes.pending(), 10) == 0)  # type: ignore[union-attr]
    # The victims' writes wait at a barrier until all four are in flight at once, however late a
    # loaded machine starts the pipeline's threads (1 s sleeps once failed at 3 of 4 in CI). Written
    # one after another, the first would wait alone and the barrier would time out.
    env.client.hold = set(lows)
    env.client.pending_open.clear()
    env.api.create(R.WORKLOADS, workload("high", cpu="4", queue="pq", priority=100))
    wait(lambda: env.client.pending_held >= lows)
    env.client.pending_open.set()

    def all_evicted() -> bool:
        return all(
            (c := cond(env.api.get(R.WORKLOADS, name, "default"), "Evicted")) is not None and c["status"] == "True"
            for name in lows
        )

    wait(all_evicted)
    assert env.client.same_object == []
    # Each victim is evicted once, in that one cycle, and the preemptor names each victim.
    for name in lows:
        assert [o for o in env.outcomes(name) if o[0] == "Preempted"] == [("Preempted", "applied")]
    assert [r for r, _ in env.outcomes("high")].count("PreemptionIssued") == 4


def test_a_cycles_pending_status_writes_are_in_flight_together(make_env: Callable[..., Env]) -> None:
    # Four ClusterQueues of 1 CPU, each with a head asking for 2: one cycle finds all four
    # inadmissible and writes each one's QuotaReserved=False (upstream requeueAndUpdate). Those
    # writes used to go one after another on the manager thread (4 x 0.3 s, one in flight); now
    # the cycle's are sent together when it ends, and written through before the manager goes on.
    env = make_env(delay=0.0, cpu=1)
    names = ["p0", "p1", "p2", "p3"]
    for name in names[1:]:
        _extra_queue(env, name, 1)
    for name in names:
        env.api.create(R.WORKLOADS, workload(name, cpu="2", queue=name if name != "p0" else "lq"))
    # The writes wait at a barrier until all four are held at once, however late a loaded machine
    # starts the pipeline's threads (not a sleep each: timed overlaps are what a busy CI stretches).
    env.client.pending_open.clear()
    env.start()
    wait(lambda: env.client.pending_held == set(names))
    env.client.pending_open.set()

    def all_pending() -> bool:
        return all(
            (c := cond(env.api.get(R.WORKLOADS, n, "default"), "QuotaReserved")) is not None and c["status"] == "False"
            for n in names
        )

    wait(all_pending)
    assert env.client.max_in_flight == 4
    assert env.client.same_object == []
    for name in names:
        assert env.outcomes(name)[0][1] == "applied"
        # Written through: the manager's cache has the condition it wrote.
        cached = env.mgr.call_in_manager_thread(lambda n=name: env.mgr.ctx.workloads[f"default/{n}"])  # type: ignore[misc]
        assert any(c.type == "QuotaReserved" and c.status == "False" for c in cached.status.conditions)


def test_a_pending_heads_status_write_does_not_hold_the_manager_thread(make_env: Callable[..., Env]) -> None:
    # The head asks for 2 CPU of 1: the cycle writes its QuotaReserved=False (upstream
    # requeueAndUpdate). That write is held at the server; the manager thread goes on meanwhile
    # (it used to wait for the answer before anything else), and writes the answer through once
    # it lands.
    env = make_env(delay=0.0, cpu=1)
    env.client.pending_open.clear()
    env.api.create(R.WORKLOADS, workload("big", cpu="2"))
    env.start()
    wait(lambda: "big" in env.client.pending_held)
    # The manager thread answers while the write is held (before, this call timed out).
    assert env.mgr.call_in_manager_thread(lambda: env.mgr.ctx.writes is not None and env.mgr.ctx.writes.pending(), 10) == 1
    assert "big" in env.client.pending_held
    env.client.pending_open.set()
    wait(lambda: env.mgr.call_in_manager_thread(lambda: env.mgr.ctx.writes.pending(), 10) == 0)  # type: ignore[union-attr]
    cached = env.mgr.call_in_manager_thread(lambda: env.mgr.ctx.workloads["default/big"])
    assert any(c.type == "QuotaReserved" and c.status == "False" for c in cached.status.conditions)
    assert env.outcomes("big")[0][1] == "applied"


def test_a_pending_heads_warning_is_recorded_even_when_its_status_write_fails(make_env: Callable[..., Env]) -> None:
    # Upstream ``requeueAndUpdate`` records the head's Warning (the condition's reason, here
    # ExceedsMaxQuota: 2 CPU asked of 1; the inadmissible message) after its status patch,
    # whatever became of the patch. Here the server refuses the cycle's QuotaReserved=False write
    # with a 500, and the Event still comes.
    env = make_env(delay=0.0, cpu=1)
    env.client.fail_pending.add("big")
    env.api.create(R.WORKLOADS, workload("big", cpu="2"))
    env.start()

    def warned() -> list[dict[str, Any]]:
        events, _ = env.api.list(R.EVENTS, "default")
        return [
            e for e in events if e["involvedObject"].get("name") == "big" and e["reason"] == "ExceedsMaxQuota"
        ]

    events = wait(warned)
    assert events[0]["type"] == "Warning"
    assert "insufficient quota for cpu in flavor f" in events[0]["message"], events[0]["message"]
    assert "big" in env.client.status_writes
    qr = cond(env.api.get(R.WORKLOADS, "big", "default"), "QuotaReserved")
    assert qr is None, "the status write was refused: the Workload has no QuotaReserved condition"
    assert ("ExceedsMaxQuota", "failed") in env.outcomes("big")


def head_back_at_the_top_with_its_write_held(env: Env) -> Callable[[], bool]:
    """Start ``env`` with a Workload "big" (2 CPU of 1) whose cycle's pending-status write is held
    at the server, then grow the ClusterQueue to 2 CPU and move the manager's clock until the
    batched retry put "big" back at the top of its heap; returns whether it is still there."""
    env.client.pending_open.clear()
    env.api.create(R.WORKLOADS, workload("big", cpu="2"))
    env.start()
    wait(lambda: "big" in env.client.pending_held)
    cq = env.api.get(R.CLUSTER_QUEUES, "cq")
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = 2
    env.api.replace(R.CLUSTER_QUEUES, cq)
    is_next_head = lambda: env.mgr.call_in_manager_thread(lambda: env.mgr.queues.is_next_head("default/big"), 10)  # noqa: E731
    for _ in range(100):  # the retry of parked workloads is due 1 s (manager clock) after the change
        env.clock.advance(1)
        if is_next_head():
            break
        time.sleep(0.05)
    assert is_next_head()
    return is_next_head


def test_a_cycle_waits_for_the_write_in_flight_of_a_head_it_pops(make_env: Callable[..., Env]) -> None:
    # The head's pending-status write is held at the server when quota for it appears (the
    # ClusterQueue grows to 2 CPU) and the batched retry moves it back to the top of the heap.
    # The next cycle must not decide about it from the version that write replaces: it waits for
    # the answer (as upstream's next cycle starts after its synchronous patch), then admits it.
    # Without that wait the admission found the Workload busy and was refused.
    env = make_env(delay=0.0, cpu=1)
    is_next_head = head_back_at_the_top_with_its_write_held(env)
    time.sleep(0.3)  # steps run; the cycle waits for the held write, the manager thread does not
    assert is_next_head() and "big" in env.client.pending_held
    assert "big" not in env.reserved()
    env.client.pending_open.set()
    wait(lambda: "big" in env.reserved())
    assert env.client.same_object == []
    outcomes = env.outcomes("big")
    assert all(outcome == "applied" for _, outcome in outcomes), outcomes


def test_the_manager_thread_sleeps_while_its_cycle_waits_for_a_write(make_env: Callable[..., Env]) -> None:
    # While the cycle waits for a write in flight, the manager thread sleeps until the answer (or
    # another change) wakes it: the scheduler's backoff after a cycle without progress (1-10 ms)
    # paces the pops of heads, and the pop is what waits. (A step ran every millisecond meanwhile,
    # each holding the GIL from the event loop that receives the answer.) The steps are counted
    # by a wrapper of the manager's own ``_step``.
    env = make_env(delay=0.0, cpu=1)
    steps = [0]
    step = env.mgr._step

    def counted() -> bool:
        steps[0] += 1
        return step()

    env.mgr._step = counted  # type: ignore[method-assign]
    is_next_head = head_back_at_the_top_with_its_write_held(env)
    time.sleep(0.1)
    before = steps[0]
    time.sleep(0.5)
    assert steps[0] - before < 10, steps[0] - before
    assert is_next_head() and "big" in env.client.pending_held and "big" not in env.reserved()
    env.client.pending_open.set()
    wait(lambda: "big" in env.reserved())


def start_with_big_pending(env: Env) -> Callable[[], dict[str, Any] | None]:
    """Start ``env`` with a Workload "big" (2 CPU of 1, so it stays pending); returns its
    QuotaReserved condition while it is False (else None)."""
    env.api.create(R.WORKLOADS, workload("big", cpu="2"))
    env.start()

    def reserved_false() -> dict[str, Any] | None:
        c = cond(env.api.get(R.WORKLOADS, "big", "default"), "QuotaReserved")
        return c if c is not None and c["status"] == "False" else None

    return reserved_false


def hold_the_local_queue(env: Env) -> None:
    """``stopPolicy: Hold`` on the LocalQueue: the workload reconciler rewrites its pending
    Workloads' QuotaReserved=False condition (upstream ``syncQuotaReservedFalseCondition``)."""
    lq = env.api.get(R.LOCAL_QUEUES, "lq", "default")
    lq["spec"]["stopPolicy"] = "Hold"
    env.api.replace(R.LOCAL_QUEUES, lq)


def test_a_reconcilers_status_write_does_not_hold_the_manager_thread(make_env: Callable[..., Env]) -> None:
    # A pending Workload whose LocalQueue is put on hold: the workload reconciler rewrites its
    # QuotaReserved=False condition (upstream syncQuotaReservedFalseCondition). That write is held
    # at the server; the manager thread goes on meanwhile, and the reconcile's trail entry and
    # the written condition follow the answer.
    env = make_env(delay=0.0, cpu=1)
    reserved_false = start_with_big_pending(env)
    before = wait(reserved_false)
    env.client.pending_open.clear()
    hold_the_local_queue(env)
    wait(lambda: "big" in env.client.pending_held)
    assert env.mgr.call_in_manager_thread(lambda: env.mgr.ctx.writes is not None and env.mgr.ctx.writes.pending(), 10) >= 1
    assert reserved_false() == before  # still held
    env.client.pending_open.set()
    after = wait(lambda: (c := reserved_false()) is not None and c["message"] != before["message"] and c)
    cached = env.mgr.call_in_manager_thread(lambda: env.mgr.ctx.workloads["default/big"])
    assert any(c.type == "QuotaReserved" and c.message == after["message"] for c in cached.status.conditions)
    assert all(outcome == "applied" for _, outcome in env.outcomes("big")), env.outcomes("big")


def test_a_reconcilers_failed_status_write_waits_for_its_backoff(make_env: Callable[..., Env]) -> None:
    # A server error answering the workload reconciler's status write retries the reconcile after
    # its backoff (upstream: ``Reconcile`` returns the error and controller-runtime requeues the
    # key rate limited), not at once: the manager's clock stands still here, so nothing is sent
    # again until it moves. (The completion queued the Workload's reconcile at once, superseding
    # the delayed retry: the write was sent again and again, one per answer.)
    env = make_env(delay=0.0, cpu=1)
    reserved_false = start_with_big_pending(env)
    before = wait(reserved_false)
    sent = env.client.status_writes.count("big")
    env.client.fail_pending.add("big")
    hold_the_local_queue(env)
    wait(lambda: env.client.status_writes.count("big") > sent)
    time.sleep(0.3)
    settled = env.client.status_writes.count("big")
    time.sleep(0.5)
    assert env.client.status_writes.count("big") == settled, (sent, settled, env.client.status_writes.count("big"))
    assert settled <= sent + 2
    # Once the backoff is over (the manager's clock), the reconcile writes again, and it lands.
    env.client.fail_pending.discard("big")
    wait(lambda: env.clock.advance(1) or ((c := reserved_false()) is not None and c["message"] != before["message"]))


def test_a_reconcilers_write_counts_from_the_version_it_replaced(make_env: Callable[..., Env]) -> None:
    # The workload reconciler's eviction of a deactivated Workload is counted
    # (kueue_evicted_workloads_total, reason Deactivated) also when the write's watch event is
    # applied before its answer: the transition is counted from the version the write was computed
    # from, not from the cache's (which then already holds the written version).
    env = make_env(delay=0.0, cpu=1)
    env.api.create(R.WORKLOADS, workload("a"))
    env.start()
    wait(lambda: env.reserved() == {"a"})
    wait(lambda: env.mgr.call_in_manager_thread(lambda: env.mgr.ctx.writes.pending(), 10) == 0)  # type: ignore[union-attr]

    def watched_first(out: dict[str, Any]) -> None:
        rv = str(out["metadata"]["resourceVersion"])
        cached = lambda: str(env.mgr.ctx.workloads["default/a"].metadata.resource_version)  # noqa: E731
        wait(lambda: env.mgr.call_in_manager_thread(cached, 10) == rv)

    env.client.after_write["a"] = watched_first
    env.api.patch(R.WORKLOADS, "a", {"spec": {"active": False}}, "default")
    wait(lambda: (c := cond(env.api.get(R.WORKLOADS, "a", "default"), "Evicted")) is not None and c["status"] == "True")
    assert "a" not in env.client.after_write  # the eviction's answer came after its watch event

    def deactivated() -> float:
        text = env.mgr.metrics.metrics.exposition().decode()
        return sum(
            s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
            if s.name == "kueue_evicted_workloads_total" and s.labels.get("reason") == "Deactivated"
        )

    wait(lambda: deactivated() == 1.0)


def test_cycles_are_held_back_only_briefly_for_a_possible_victims_write(make_env: Callable[..., Env]) -> None:
    # w1 holds its ClusterQueue's quota; deactivating it makes the workload reconciler write its
    # eviction, a write about a Workload holding quota (a possible victim), held at the server.
    # Upstream's scheduler never waits for a reconciler's patch: after a bounded hold-back
    # (HOLD_BACK_FOR_VICTIMS_SECONDS) a Workload of another ClusterQueue is admitted while that
    # write is still held. Without the bound the cycles waited for the answer.
    env = make_env(delay=0.0, cpu=1)
    _extra_queue(env, "other", 1)
    env.api.create(R.WORKLOADS, workload("w1"))
    env.start()
    wait(lambda: "w1" in env.reserved())
    env.client.hold.add("w1")
    env.client.pending_open.clear()
    wl = env.api.get(R.WORKLOADS, "w1", "default")
    wl["spec"]["active"] = False
    env.api.replace(R.WORKLOADS, wl)
    wait(lambda: "w1" in env.client.pending_held)
    env.api.create(R.WORKLOADS, workload("w2", queue="other"))
    wait(lambda: "w2" in env.reserved(), timeout=10)
    assert "w1" in env.client.pending_held
    env.client.pending_open.set()
    wait(lambda: (c := cond(env.api.get(R.WORKLOADS, "w1", "default"), "Evicted")) is not None and c["status"] == "True")


def test_pipeline_refuses_a_second_write_of_a_busy_key() -> None:
    delivered: list[Callable[[], None]] = []
    pipeline: WritePipeline[int] = WritePipeline(delivered.append, max_in_flight=2)
    release = threading.Event()
    results: list[Any] = []
    pipeline.submit("k", lambda: release.wait(5) and 1, lambda r, e: results.append((r, e)))
    assert pipeline.busy("k")
    with pytest.raises(RuntimeError, match="already in flight"):
        pipeline.submit("k", lambda: 2, lambda r, e: None)
    release.set()
    wait(lambda: delivered)
    assert pipeline.busy("k")  # until the owner runs the completion
    delivered.pop()()
    assert results == [(1, None)] and not pipeline.busy("k")
    pipeline.submit("k", lambda: (_ for _ in ()).throw(Conflict(409, "Conflict", "stale")), lambda r, e: results.append((r, e)))
    wait(lambda: delivered)
    delivered.pop()()
    assert isinstance(results[-1][1], Conflict)
    assert pipeline.close(1)


def test_run_all_refuses_busy_keys_and_holds_its_own_busy_while_they_run() -> None:
    # run_all (a preemptor's victims) follows the pipeline's one-write-per-object rule itself:
    # it used to take bare coroutines and trust its callers to have skipped busy objects.
    delivered: list[Callable[[], None]] = []
    pipeline: WritePipeline[int] = WritePipeline(delivered.append, max_in_flight=2)
    release = threading.Event()
    pipeline.submit("k", lambda: release.wait(5) and 1, lambda r, e: None)
    sent: list[str] = []

    def write(name: str, value: int) -> Callable[[], Any]:
        async def send() -> int:
            sent.append(name)
            return value

        return send

    with pytest.raises(RuntimeError, match="already in flight"):
        pipeline.run_all([("v", write("v", 2)), ("k", write("k", 3))], limit=2)
    with pytest.raises(RuntimeError, match="already in flight"):
        pipeline.run_all([("v", write("v", 2)), ("v", write("v", 3))], limit=2)
    assert sent == [] and not pipeline.busy("v")  # refused whole: nothing was sent
    seen_busy: list[bool] = []

    def observing(name: str, value: int) -> Callable[[], Any]:
        async def send() -> int:
            seen_busy.append(pipeline.busy(name))
            return value

        return send

    assert pipeline.run_all([("v", observing("v", 2)), ("w", observing("w", 3))], limit=2) == [2, 3]
    assert seen_busy == [True, True] and not pipeline.busy("v") and not pipeline.busy("w")
    release.set()
    wait(lambda: delivered)
    delivered.pop()()
    assert pipeline.close(1)


# name, the write that fails (its index), stop_on_error, slots; want: each write's result ("E": the
# failure, "-": not started, else its value). Upstream's IssuePreemptions runs its evictions with
# workqueue.ParallelizeUntil(ctx, 8, ...) and a failed one cancels ctx (errCh.SendErrorWithCancel):
# a worker checks ctx before each next piece, so no eviction starts once one has failed; those on
# their way end as they end. Every write here awaits (a request's round trip) before it answers;
# the failing one answers first.
STOP_ON_ERROR_CASES: list[tuple[str, int, bool, int, list[object]]] = [
    ("a failed write stops the writes whose turn comes after it", 0, True, 2, ["E", 1, "-", "-"]),
    ("the writes already on their way run to their end", 1, True, 2, [0, "E", "-", "-"]),
    ("a failure in the last slot stops nothing", 3, True, 4, [0, 1, 2, "E"]),
    ("without stop_on_error every write runs", 0, False, 2, ["E", 1, 2, 3]),
]


@pytest.mark.parametrize(
    ("failing", "stop", "limit", "want"), [c[1:] for c in STOP_ON_ERROR_CASES], ids=[c[0] for c in STOP_ON_ERROR_CASES]
)
def test_start_all_stop_on_error(failing: int, stop: bool, limit: int, want: list[object]) -> None:
    delivered: list[Callable[[], None]] = []
    pipeline: WritePipeline[int] = WritePipeline(delivered.append, max_in_flight=4)
    started: list[int] = []

    def write(i: int) -> Callable[[], Any]:
        async def send() -> int:
            started.append(i)
            # The failing write answers after one turn of the loop, the others after three.
            for _ in range(1 if i == failing else 3):
                await asyncio.sleep(0)
            if i == failing:
                raise RuntimeError("refused")
            return i

        return send

    got = pipeline.start_all([(f"w{i}", write(i)) for i in range(4)], limit, stop_on_error=stop)()
    shown = ["E" if isinstance(r, RuntimeError) else "-" if isinstance(r, NotStarted) else r for r in got]
    assert shown == want
    assert started == [i for i, w in enumerate(want) if w != "-"]
    assert not any(pipeline.busy(f"w{i}") for i in range(4))
    assert pipeline.close(1)


def test_start_all_sends_at_once_and_keeps_its_keys_busy_until_the_answers_are_collected() -> None:
    # A cycle sends each preemptor's evictions with start_all and goes on to its next entries;
    # it collects the answers at its end. The writes must be on their way before that, and no
    # other write of those objects may start meanwhile.
    delivered: list[Callable[[], None]] = []
    pipeline: WritePipeline[int] = WritePipeline(delivered.append, max_in_flight=2)
    arrived = threading.Event()
    sent: list[str] = []

    def write(name: str, value: int) -> Callable[[], Any]:
        async def send() -> int:
            sent.append(name)
            if len(sent) == 3:
                arrived.set()
            if name == "x":
                raise RuntimeError("refused")
            return value

        return send

    answers = pipeline.start_all([("v", write("v", 2)), ("w", write("w", 3)), ("x", write("x", 4))], limit=2)
    assert arrived.wait(5), "sent before anyone waits for the answers"
    assert pipeline.busy("v") and pipeline.busy("w") and pipeline.busy("x")
    with pytest.raises(RuntimeError, match="already in flight"):
        pipeline.start_all([("w", write("w", 5))], limit=1)
    got = answers()
    assert got[:2] == [2, 3] and isinstance(got[2], RuntimeError)
    assert not pipeline.busy("v") and not pipeline.busy("w") and not pipeline.busy("x")
    assert pipeline.start_all([], limit=8)() == []
    assert pipeline.close(1)


def test_status_writes_nothing_waits_for_use_at_most_half_the_slots_and_never_block() -> None:
    delivered: list[Callable[[], None]] = []
    pipeline: WritePipeline[int] = WritePipeline(delivered.append, max_in_flight=4)
    release = threading.Event()
    assert pipeline.try_submit("s1", lambda: release.wait(5) and 1, lambda r, e: None)
    assert pipeline.try_submit("s2", lambda: release.wait(5) and 2, lambda r, e: None)
    # Half the slots: a third is refused at once, nothing sent, its key not made busy.
    started = time.monotonic()
    assert not pipeline.background_slot_free("s3")
    assert not pipeline.try_submit("s3", lambda: 3, lambda r, e: None)
    # At once: waiting for a slot would wait for s1 or s2 (held 5 s), not 0.1 s of a busy machine.
    assert time.monotonic() - started < 4 and not pipeline.busy("s3") and pipeline.submitted == 2
    # The other half stays for the writes the owner waits for.
    pipeline.submit("a1", lambda: release.wait(5) and 4, lambda r, e: None)
    pipeline.submit("a2", lambda: release.wait(5) and 5, lambda r, e: None)
    release.set()
    # Completions come back in batches: run what was delivered until every write's completion ran.
    wait(lambda: (_run_all(delivered, threading.Lock()) and False) or pipeline.pending() == 0)
    assert pipeline.background_slot_free("s3") and pipeline.background_slot_free("s3"), "the check takes no slot"
    assert pipeline.try_submit("s3", lambda: 3, lambda r, e: None)
    assert pipeline.close(1)


def _two_queues_each_reserving_one(env: Env) -> None:
    """A second ClusterQueue ``cq2`` (same spec) with LocalQueue ``lq2``; starts the manager and
    reserves ``w0`` in ``cq`` and ``v0`` in ``cq2``."""
    spec = env.api.get(R.CLUSTER_QUEUES, "cq")["spec"]
    env.api.create(R.CLUSTER_QUEUES, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq2"}, "spec": spec})
    env.api.create(
        R.LOCAL_QUEUES,
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "lq2", "namespace": "default"}, "spec": {"clusterQueue": "cq2"}},
    )
    env.start()
    env.api.create(R.WORKLOADS, workload("w0"))
    env.api.create(R.WORKLOADS, workload("v0", queue="lq2"))
    wait(lambda: env.reserved() == {"w0", "v0"})


def test_many_queue_status_writes_do_not_take_the_admissions_slots(make_env: Callable[..., Env]) -> None:
    # Two write slots and two ClusterQueues whose status writes are held: both status writes
    # used to be in flight at once, and the next admission waited on the manager thread for one
    # of them to end. Now one at most is in flight; the other is written a batch period later.
    env = make_env(delay=0.0, cpu=8, max_in_flight=2)
    env.client.cq_open.clear()
    _two_queues_each_reserving_one(env)
    env.clock.advance(1.1)  # both queues' status batch period is due
    wait(lambda: env.client.cq_writes_in_flight == 1)
    time.sleep(0.2)
    assert env.client.cq_writes_in_flight == 1
    for i in (1, 2, 3):
        env.api.create(R.WORKLOADS, workload(f"w{i}"))
    wait(lambda: len(env.reserved()) == 5)
    assert env.client.cq_writes_in_flight == 1
    env.client.cq_open.set()

    def both_written() -> bool:
        env.clock.advance(0.5)
        statuses = [(env.api.get(R.CLUSTER_QUEUES, n).get("status") or {}) for n in ("cq", "cq2")]
        return statuses[0].get("reservingWorkloads") == 4 and statuses[1].get("reservingWorkloads") == 1

    wait(both_written)


def test_a_queue_status_refused_a_slot_is_not_encoded(make_env: Callable[..., Env], monkeypatch: pytest.MonkeyPatch) -> None:
    # With every background slot taken, a queue's status write is refused and recomputed a batch
    # period later: its encoding (to_external) was done for nothing, 15,000 times a run of
    # bench/large-scale-20.yaml. It is now encoded only when it is sent.
    from pykueue.api import conversion
    from pykueue.api.kueue import ClusterQueue
    from pykueue.controllers import context, queue_controllers
    from pykueue.controllers.cluster_cache import CLUSTER_QUEUE

    encoded: list[str] = []

    def counting(obj: Any) -> dict[str, Any]:
        if isinstance(obj, ClusterQueue):
            encoded.append(obj.metadata.name)
        return conversion.to_external(obj)

    monkeypatch.setattr(context, "to_external", counting)
    monkeypatch.setattr(queue_controllers, "to_external", counting)
    env = make_env(delay=0.0, cpu=8, max_in_flight=2)  # one background slot
    _two_queues_each_reserving_one(env)
    wait(lambda: env.client.cq_writes_in_flight == 0)
    env.client.cq_open.clear()  # the status write sent next stays in flight
    encoded.clear()
    sent = env.client.cq_status_writes
    env.clock.advance(1.1)  # both queues' status batch period is due: one is sent, one refused
    wait(lambda: env.client.cq_writes_in_flight == 1)
    wait(lambda: any(key[0] == CLUSTER_QUEUE for key in env.mgr.work.delayed()))
    assert env.client.cq_status_writes == sent + 1
    assert len(encoded) == 1, f"encoded {encoded}, sent one"
    env.client.cq_open.set()


def test_async_writes_run_together_on_one_loop_thread_bounded_and_batched_back() -> None:
    # The HTTP client's writes are coroutines: many in flight on the pipeline's ONE loop thread (no
    # thread per write), the owner blocked at max_in_flight, completions handed back in batches.
    delivered: list[Callable[[], None]] = []
    lock = threading.Lock()
    pipeline: WritePipeline[int] = WritePipeline(lambda fn: (lock.acquire(), delivered.append(fn), lock.release()), max_in_flight=3)
    loop = pipeline.io.loop
    gate = asyncio.run_coroutine_threadsafe(_new_event(), loop).result(5)
    threads: set[str] = set()
    in_flight = [0, 0]
    results: list[tuple[int | None, Exception | None]] = []

    def write(i: int) -> Callable[[], Any]:
        async def send() -> int:
            threads.add(threading.current_thread().name)
            in_flight[0] += 1
            in_flight[1] = max(in_flight[1], in_flight[0])
            await gate.wait()
            in_flight[0] -= 1
            return i

        return send

    for i in range(3):
        pipeline.submit_async(i, write(i), lambda r, e: results.append((r, e)))
    wait(lambda: in_flight[0] == 3)
    fourth = threading.Thread(target=pipeline.submit_async, args=(3, write(3), lambda r, e: results.append((r, e))))
    fourth.start()
    time.sleep(0.2)
    assert fourth.is_alive(), "a fourth write waits for a free slot"
    loop.call_soon_threadsafe(gate.set)
    fourth.join(5)
    assert not fourth.is_alive()
    wait(lambda: len(results) == 4 or (delivered and _run_all(delivered, lock) and False))
    assert sorted(r for r, _ in results) == [0, 1, 2, 3] and all(e is None for _, e in results)
    assert threads == {"kueue-writes"} and in_flight[1] == 3
    assert not any(pipeline.busy(i) for i in range(4))
    assert pipeline.close(1)


async def _new_event() -> asyncio.Event:
    return asyncio.Event()


def _run_all(delivered: list[Callable[[], None]], lock: threading.Lock) -> bool:
    with lock:
        batch = list(delivered)
        delivered.clear()
    for fn in batch:
        fn()
    return True


def test_a_delivery_runs_at_most_finish_batch_completions_and_leaves_the_rest_to_finish_ended() -> None:
    # With finish_batch, a burst of answers is run by the owner a few at a time (the manager: a
    # cycle, i.e. the next admission, between two batches) instead of whole. Without it one
    # delivery ran all five.
    delivered: list[Callable[[], None]] = []
    lock = threading.Lock()
    pipeline: WritePipeline[int] = WritePipeline(
        lambda fn: (lock.acquire(), delivered.append(fn), lock.release()), max_in_flight=8, finish_batch=2
    )
    loop = pipeline.io.loop
    gate = asyncio.run_coroutine_threadsafe(_new_event(), loop).result(5)
    results: list[int | None] = []
    started = [0]

    def write(i: int) -> Callable[[], Any]:
        async def send() -> int:
            started[0] += 1
            await gate.wait()
            return i

        return send

    for i in range(5):
        pipeline.submit_async(i, write(i), lambda r, e: results.append(r))
    wait(lambda: started[0] == 5)
    loop.call_soon_threadsafe(gate.set)
    wait(lambda: pipeline.pending() == 5 and len(pipeline._ended) == 5)
    with lock:
        first = delivered.pop(0)
        assert delivered == []  # one delivery for the burst
    first()
    assert results == [0, 1] and pipeline.pending() == 3 and pipeline.ended()
    pipeline.finish_ended()
    assert results == [0, 1, 2, 3] and pipeline.ended()
    pipeline.finish_ended()
    assert results == [0, 1, 2, 3, 4] and not pipeline.ended() and pipeline.pending() == 0
    assert pipeline.close(1)
    with pytest.raises(ValueError, match="finish_batch"):
        WritePipeline(delivered.append, finish_batch=0)


def test_an_eviction_that_raises_leaves_no_other_preemptors_victim_busy(make_env: Callable[..., Env]) -> None:
    # Two preemptors in one cycle; the first one's eviction write raises an error that is not an
    # API answer (the cycle re-raises it, and the manager logs the failed step and goes on). The
    # second one's eviction was sent ahead as well: its answer must still be collected, or its
    # victim stays busy in the write pipeline and no write of it is ever sent again.
    env = make_env(delay=0.0, cpu=0)
    for q in ("pa", "pb"):
        _extra_queue(env, q, 1, {"withinClusterQueue": "LowerPriority"})
        env.api.create(R.WORKLOADS, workload(f"low-{q}", queue=q, priority=0))
    env.start()
    wait(lambda: env.reserved() == {"low-pa", "low-pb"})

    def broken(name: str) -> None:
        raise RuntimeError(f"writing {name}: not an API answer")

    env.client.before_write["low-pa"] = broken
    held, resume = threading.Event(), threading.Event()

    def hold_the_manager_thread() -> None:
        held.set()
        resume.wait(30)

    threading.Thread(target=env.mgr.call_in_manager_thread, args=(hold_the_manager_thread, 30), daemon=True).start()
    assert held.wait(10)
    try:
        # Both arrive while the manager thread is held: one cycle pops both heads.
        env.api.create(R.WORKLOADS, workload("high-pa", queue="pa", priority=100))
        env.api.create(R.WORKLOADS, workload("high-pb", queue="pb", priority=100))
        time.sleep(0.5)  # the informer hands both to the held manager's inbox
    finally:
        resume.set()
    wait(lambda: (c := cond(env.api.get(R.WORKLOADS, "low-pb", "default"), "Evicted")) is not None and c["status"] == "True")
    assert "low-pa" not in env.client.before_write, "the first preemptor's eviction was sent"
    wait(lambda: env.mgr.call_in_manager_thread(env.mgr.writes.pending) == 0, timeout=10)
    assert not env.mgr.call_in_manager_thread(lambda: env.mgr.writes.busy((R.WORKLOADS.plural, "default", "low-pb")))


def test_a_reconcilers_failing_status_write_backs_off_longer_each_time(make_env: Callable[..., Env]) -> None:
    # The reconcile that sends a status write ahead returns before the answer: its failures must
    # be kept until the write lands (controller-runtime forgets an item only after a Reconcile
    # without error), so a write that keeps failing is retried after 1, 2, 4 s, not every second.
    env = make_env(delay=0.0, cpu=1)
    reserved_false = start_with_big_pending(env)
    wait(reserved_false)
    item = ("workload", "default/big")
    env.client.fail_pending.add("big")
    hold_the_local_queue(env)
    delays: list[float] = []
    previous_due: datetime | None = None
    for _ in range(3):
        sent = env.client.status_writes.count("big")

        def armed(after: datetime | None = previous_due) -> datetime | None:
            due = env.mgr.work.delayed().get(item)
            return due if due is not None and (after is None or due > after) else None

        due = wait(armed)
        delays.append(round((due - env.clock()).total_seconds(), 3))
        previous_due = due
        env.clock.advance((due - env.clock()).total_seconds() + 0.01)
        wait(lambda n=sent: env.client.status_writes.count("big") > n)  # the retry was sent (and fails)
    assert delays == [1.0, 2.0, 4.0], delays
    # A write that lands forgets the failures: the next failure starts at 1 s again.
    env.client.fail_pending.discard("big")

    def forgotten() -> bool:
        env.clock.advance(1)
        return env.mgr.call_in_manager_thread(lambda: item not in env.mgr.work._failures)

    wait(forgotten)
