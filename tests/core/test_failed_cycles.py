"""A cycle whose driver raises loses nothing: its admissions are counted, its other heads requeued.

The controllers log a raising cycle and go on (``ControllerManager._run``); the heads the cycle had
popped must not wait for an unrelated change to come back, and the admissions it wrote before the
error must hold their quota in the cache (``Scheduler._recover_heads``).
"""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from strategies import Scenario, Step, scenario
from test_invariants import check_invariants, run_step

from pykueue.core.decision import Decision
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


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scenario(max_workloads=12, max_cqs=4, max_steps=6), st.integers(min_value=0, max_value=24))
def test_a_cycle_that_raises_keeps_the_queues_and_the_cache_whole(sc: Scenario, fail_at: int) -> None:
    """Random clusters: the ``fail_at``-th write of the run raises inside a cycle. Afterwards every
    workload without quota is in its queue, and every quota holder is counted exactly in the cache
    (``check_invariants``), after the failed cycle and after the cycles that follow."""
    note(sc.describe())
    cluster = FailingOnce(sc.options(), datetime(2026, 1, 1, tzinfo=UTC))
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
