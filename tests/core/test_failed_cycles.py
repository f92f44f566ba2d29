"""A cycle whose driver raises loses nothing: its admissions are counted, its other heads requeued.

The controllers log a raising cycle and go on (``ControllerManager._run``); the heads the cycle had
popped must not wait for an unrelated change to come back, and the admissions it wrote before the
error must hold their quota in the cache (``Scheduler._recover_heads``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from builders import (
    V1BETA2,
    admitted,
    at,
    cluster_queue,
    flavor,
    flavor_quotas,
    local_queue,
    queued,
    workload,
)
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from strategies import Scenario, Step, scenario
from test_invariants import check_invariants, run_step
from test_preemptions_sent_ahead import SendingAhead

from pykueue.core.decision import Decision
from pykueue.core.options import SchedulerOptions
from pykueue.core.scheduler.entry import CycleResult
from pykueue.sim.cluster import SimulatedCluster


class InjectedFailure(RuntimeError):
    """The driver's error (a bug, or an API error the driver does not turn into an answer)."""


class FailingOnce(SimulatedCluster):
    """The simulator whose ``fail_at``-th write inside a scheduling cycle raises instead of landing
    (once); the reconcilers' writes around the cycles land."""

    fail_at = -1
    writes = 0
    in_cycle = False

    def run_cycle(self) -> CycleResult:
        cycle = self.core.cycle

        def failing(now: datetime) -> CycleResult:
            self.in_cycle = True
            try:
                return cycle(now)
            finally:
                self.in_cycle = False

        self.core.cycle = failing  # type: ignore[method-assign]
        try:
            return super().run_cycle()
        finally:
            del self.core.cycle

    def apply(self, decision: Decision) -> bool:
        if decision.writes and self.in_cycle:
            n, self.writes = self.writes, self.writes + 1
            if n == self.fail_at:
                raise InjectedFailure(f"write {n} ({decision.reason} of {decision.workload})")
        return super().apply(decision)


class FailingOnceAhead(FailingOnce, SendingAhead):
    """:class:`FailingOnce` as a driver that sends evictions ahead (the controllers): a failing
    eviction raises when the cycle collects the answers, after every entry was processed and the
    snapshot kept the admissions' bookings (``Scheduler._finish_preemptions``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent = []


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    scenario(max_workloads=12, max_cqs=4, max_steps=6),
    st.integers(min_value=0, max_value=24),
    st.sampled_from([FailingOnce, FailingOnceAhead]),
)
def test_a_cycle_that_raises_keeps_the_queues_and_the_cache_whole(
    sc: Scenario, fail_at: int, driver: type[FailingOnce]
) -> None:
    """Random clusters: the ``fail_at``-th write of the run raises inside a cycle. Afterwards every
    workload without quota is in its queue, and every quota holder is counted exactly in the cache
    (``check_invariants``), after the failed cycle and after the cycles that follow."""
    note(sc.describe())
    cluster = driver(sc.options(), datetime(2026, 1, 1, tzinfo=UTC))
    cluster.fail_at = fail_at
    cluster.load(sc.objects())
    model = sc.model()
    failed = False
    for i, step in enumerate([*sc.steps, Step("cycle"), Step("advance"), Step("cycle"), Step("cycle")]):
        try:
            run_step(cluster, step)
        except InjectedFailure:
            failed = True
            # What ``run_cycle`` would have done after the cycle: the watch and the reconcilers.
            cluster._deliver_updates()
            cluster._sync_touched()
            cluster._deliver_updates()
        check_invariants(cluster, sc, model, f"after step {i} ({step.kind}){' after the failure' if failed else ''}")


def test_a_head_requeued_before_the_failure_stays_where_its_requeue_put_it() -> None:
    """Two heads that fit nowhere: the first is parked (inadmissible, BestEffortFIFO) with its
    pending status written, then the second's status write raises. The first stays parked, as it
    would after a cycle that did not raise (upstream's ``requeueAndUpdate`` requeues, then
    patches; a failed patch is only logged), instead of being moved back to the heap by a second
    requeue for FailedAfterNomination (an immediate reason)."""
    objects = [flavor("default")]
    for cq in ("a", "b"):
        objects += [
            cluster_queue(cq, flavor_quotas("default", cpu=4), queueing_strategy="BestEffortFIFO"),
            local_queue(f"lq-{cq}", cq=cq),
            workload(f"big-{cq}", requests={"cpu": "8"}, queue=f"lq-{cq}"),
        ]
    cluster = FailingOnce(SchedulerOptions(), at(3600))
    cluster.fail_at = 1  # the second head's pending status
    cluster.load((o, V1BETA2) for o in objects)
    with pytest.raises(InjectedFailure, match="default/big-b"):
        cluster.run_cycle()
    assert queued(cluster) == ({}, {"a": ["default/big-a"], "b": ["default/big-b"]})


def test_admissions_of_a_cycle_whose_eviction_answer_raises_are_counted_once() -> None:
    """A preemptor's eviction sent ahead raises when the cycle collects its answer, after another
    ClusterQueue's head was admitted: the snapshot kept that admission's booking, so the cache
    counts its usage once (``usage_held``), and the preemptor goes back to its queue."""
    objects = [
        flavor("default"),
        cluster_queue("a", flavor_quotas("default", cpu=4), preemption={"within_cluster_queue": "LowerPriority"}),
        local_queue("lq-a", cq="a"),
        admitted(workload("low", priority=0, requests={"cpu": "4"}, queue="lq-a"), "a", {"cpu": "default"}),
        workload("high", priority=10, requests={"cpu": "4"}, queue="lq-a"),
        cluster_queue("b", flavor_quotas("default", cpu=4)),
        local_queue("lq-b", cq="b"),
        workload("fit", requests={"cpu": "2"}, queue="lq-b"),
    ]
    cluster = FailingOnceAhead(SchedulerOptions(), at(3600))
    cluster.fail_at = 1  # the admission of default/fit is write 0, the eviction of default/low write 1
    cluster.load((o, V1BETA2) for o in objects)
    with pytest.raises(InjectedFailure, match="default/low"):
        cluster.run_cycle()
    cluster._deliver_updates()  # the watch: default/fit's admission is observed
    b = cluster.cache.cluster_queues["b"]
    assert sorted(b.workloads) == ["default/fit"]
    assert {fr: v for fr, v in b.node.usage.items() if v} == b.workloads["default/fit"].usage
    assert queued(cluster)[0] == {"a": ["default/high"]}
