"""A driver that sends a cycle's evictions ahead of their answers decides as one that waits for each.

The controllers send each preemptor's evictions and go on to the cycle's next entries; the cycle
counts the answers once it has processed every entry, before any entry's status is written
(``Scheduler._finish_preemptions``). The simulator answers at once. These tests run the same
random clusters through both and compare every step's outcome.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from builders import V1BETA2, admitted, at, cluster_queue, flavor, flavor_quotas, local_queue, workload
from hypothesis import HealthCheck, given, note, settings
from strategies import Scenario, Step, scenario
from test_invariants import run_step

from pykueue.core.decision import Decision
from pykueue.core.options import SchedulerOptions
from pykueue.core.scheduler.entry import CycleResult
from pykueue.core.workload.info import is_evicted
from pykueue.sim.cluster import SimulatedCluster


class SendingAhead(SimulatedCluster):
    """The simulator as a driver that sends decisions ahead (``send_all``): each decision is
    applied only when the cycle collects the answers, after the cycle's later entries were
    processed and their admissions written. ``fail`` names workloads whose write does not land
    (an answer the simulator never gives otherwise)."""

    fail: frozenset[str] = frozenset()

    def send_all(self, decisions: list[Decision]) -> Callable[[], list[bool]]:
        self.sent.append([d.workload for d in decisions])

        def answers() -> list[bool]:
            return [d.workload not in self.fail and self.apply(d) for d in decisions]

        return answers

    sent: list[list[str]]


def _outcome(result: CycleResult) -> tuple[object, ...]:
    """What a cycle decided. The decisions and preemptions come in another order when evictions are
    counted at the cycle's end, so they are compared as collections; every entry's status, message
    and requeue reason in order."""
    return (
        sorted(repr(d) for d in result.decisions),
        result.admitted,
        sorted(result.preempted),
        [(e.info.key, e.status, e.message, e.requeue_reason) for e in result.entries],
    )


def _run(sc: Scenario, cls: type[SimulatedCluster], steps: list[Step]) -> tuple[list[object], SimulatedCluster]:
    cluster = cls(sc.options(), datetime(2026, 1, 1, tzinfo=UTC))
    if isinstance(cluster, SendingAhead):
        cluster.sent = []
    cluster.load(sc.objects())
    trace: list[object] = []
    for step in steps:
        result = run_step(cluster, step)
        if result is not None:
            trace.append(_outcome(result))
    trace.append([(k, cluster.objects[k].obj) for k in cluster.order])
    return trace, cluster


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scenario(max_workloads=14, max_cqs=4, max_steps=8))
def test_evictions_sent_ahead_decide_as_evictions_waited_for(sc: Scenario) -> None:
    """Random clusters (preemption within the ClusterQueue and the cohort, borrowing, fair sharing
    on some) through the same steps: the same entries, messages, admissions, preemptions and
    objects, whether each preemptor's evictions are answered at once or at the cycle's end."""
    note(sc.describe())
    steps = [*sc.steps, Step("cycle"), Step("advance"), Step("cycle"), Step("cycle")]
    waited, _ = _run(sc, SimulatedCluster, steps)
    ahead, cluster = _run(sc, SendingAhead, steps)
    assert waited == ahead
    assert isinstance(cluster, SendingAhead)


def test_a_failed_eviction_sent_ahead_is_counted_as_failed() -> None:
    """``markPreemptionOutcome``: an eviction whose write did not land counts as failed, so the
    preemptor's message says so and it is retried (``RequeueReasonPreemptionFailed``); the count
    comes from the answers collected at the cycle's end."""
    objects = [
        flavor("default"),
        cluster_queue("cq", flavor_quotas("default", cpu=4), preemption={"within_cluster_queue": "LowerPriority"}),
        local_queue("lq", cq="cq"),
        admitted(workload("low", priority=0, requests={"cpu": "4"}), "cq", {"cpu": "default"}),
        workload("high", priority=10, requests={"cpu": "4"}),
    ]
    cluster = SendingAhead(SchedulerOptions(), at(3600))
    cluster.sent = []
    cluster.fail = frozenset({"default/low"})
    cluster.load((o, V1BETA2) for o in objects)
    result = cluster.run_cycle()
    assert cluster.sent == [["default/low"]]
    (entry,) = result.entries
    assert entry.info.key == "default/high"
    assert entry.message.endswith(". Preempting 1 workload(s) failed, will retry.")
    assert result.preempted == []


class StopsAfterFailure(SendingAhead):
    """:class:`SendingAhead` that, as the controllers' ``send_all`` (``WritePipeline.start_all``
    with ``stop_on_error``), never sends the evictions of ``not_sent``: one before them failed."""

    not_sent: frozenset[str] = frozenset()

    def send_all(self, decisions: list[Decision]) -> Callable[[], list[bool | None]]:  # type: ignore[override]
        self.sent.append([d.workload for d in decisions if d.workload not in self.not_sent])

        def answers() -> list[bool | None]:
            return [
                None if d.workload in self.not_sent else d.workload not in self.fail and self.apply(d) for d in decisions
            ]

        return answers


# name, evictions that fail, evictions never sent; want: the preemptor's message tail, the workloads
# counted preempted. Upstream IssuePreemptions counts the successes and the failures of the pieces
# ParallelizeUntil ran; a piece it skipped once the context was cancelled counts as neither, and
# markPreemptionOutcome says "Pending the preemption" as soon as one succeeded.
NOT_SENT_CASES: list[tuple[str, set[str], set[str], str, list[str]]] = [
    ("one failed, one preempted, one not sent", {"default/low-a"}, {"default/low-c"},
     ". Pending the preemption of 1 workload(s)", ["default/low-b"]),
    ("one failed, the others not sent", {"default/low-a"}, {"default/low-b", "default/low-c"},
     ". Preempting 1 workload(s) failed, will retry.", []),
]  # fmt: skip


@pytest.mark.parametrize(
    ("fail", "not_sent", "tail", "preempted"), [c[1:] for c in NOT_SENT_CASES], ids=[c[0] for c in NOT_SENT_CASES]
)
def test_evictions_not_sent_after_a_failure_count_as_neither(
    fail: set[str], not_sent: set[str], tail: str, preempted: list[str]
) -> None:
    objects = [
        flavor("default"),
        cluster_queue("cq", flavor_quotas("default", cpu=3), preemption={"within_cluster_queue": "LowerPriority"}),
        local_queue("lq", cq="cq"),
        *(admitted(workload(f"low-{n}", priority=0, requests={"cpu": "1"}), "cq", {"cpu": "default"}) for n in "abc"),
        workload("high", priority=10, requests={"cpu": "3"}),
    ]
    cluster = StopsAfterFailure(SchedulerOptions(), at(3600))
    cluster.sent = []
    cluster.fail = frozenset(fail)
    cluster.not_sent = frozenset(not_sent)
    cluster.load((o, V1BETA2) for o in objects)
    result = cluster.run_cycle()
    (entry,) = result.entries
    assert entry.info.key == "default/high"
    assert entry.message.endswith(tail)
    assert result.preempted == preempted
    # A decision never sent is neither in the cycle's decisions nor in the workload's trail.
    evicted = {d.workload for d in result.decisions if d.reason == "Preempted"}
    assert evicted == {"default/low-a", "default/low-b", "default/low-c"} - not_sent
    for key in not_sent:
        assert all(t.reason != "Preempted" for t in cluster.core.story(key))
        ns, _, name = key.partition("/")
        assert not is_evicted(cluster.objects[("Workload", ns, name)].obj)


class AnswerRaises(SendingAhead):
    """:class:`SendingAhead` whose answers for the evictions of ``raise_for`` raise (an answer the
    controllers re-raise: not an API error), and which counts the answers collected."""

    raise_for: frozenset[str] = frozenset()
    collected: list[list[str]]

    def send_all(self, decisions: list[Decision]) -> Callable[[], list[bool]]:
        answers = super().send_all(decisions)

        def collect() -> list[bool]:
            self.collected.append([d.workload for d in decisions])
            if any(d.workload in self.raise_for for d in decisions):
                raise RuntimeError("the write failed without an API answer")
            return answers()

        return collect


def test_an_eviction_answer_that_raises_leaves_no_booking_and_collects_every_other_answer() -> None:
    """Two preemptors in one cycle; the first one's answers raise. The cycle still undoes its
    snapshot's bookings (the preemptors' usage must not stay in the cache's tree after a failed
    cycle, as it did not when the answers were counted in the loop) and still collects the second
    preemptor's answers (the controllers keep those victims busy until then)."""
    objects = [flavor("default")]
    for cq in ("a", "b"):
        objects += [
            cluster_queue(cq, flavor_quotas("default", cpu=4), preemption={"within_cluster_queue": "LowerPriority"}),
            local_queue(f"lq-{cq}", cq=cq),
            admitted(workload(f"low-{cq}", priority=0, requests={"cpu": "4"}, queue=f"lq-{cq}"), cq, {"cpu": "default"}),
            workload(f"high-{cq}", priority=10, requests={"cpu": "4"}, queue=f"lq-{cq}"),
        ]
    cluster = AnswerRaises(SchedulerOptions(), at(3600))
    cluster.sent = []
    cluster.collected = []
    cluster.raise_for = frozenset({"default/low-a"})
    cluster.load((o, V1BETA2) for o in objects)
    usage_before = {name: dict(cq.node.usage) for name, cq in cluster.cache.cluster_queues.items()}
    with pytest.raises(RuntimeError, match="without an API answer"):
        cluster.run_cycle()
    assert sorted(w for ws in cluster.sent for w in ws) == ["default/low-a", "default/low-b"]
    assert sorted(w for ws in cluster.collected for w in ws) == ["default/low-a", "default/low-b"]
    assert {name: dict(cq.node.usage) for name, cq in cluster.cache.cluster_queues.items()} == usage_before
