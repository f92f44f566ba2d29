"""The decision trail: ``KueueCore.story`` after scheduling, preemption and controller steps.

Every decision the core takes is tagged with its stimulus (``cycle-<n>``, ``watch-<rv>``) and kept
in a bounded transition log; a preemption's victim and preemptor name each other.
"""

from __future__ import annotations

from builders import admitted, at, cluster_queue, flavor, flavor_quotas, local_queue, simulate, workload

from pykueue.core.decision import Decision
from pykueue.core.state import TransitionLog
from pykueue.sim.cluster import SimulatedCluster

LP = "LowerPriority"


def _preemption_cluster() -> SimulatedCluster:
    return simulate(
        [
            flavor("f"),
            cluster_queue("cq", flavor_quotas("f", cpu=4), preemption={"within_cluster_queue": LP}),
            local_queue("lq", "default", "cq"),
            admitted(workload("low", priority=1, requests={"cpu": 4}), "cq", {"cpu": "f"}, admitted_condition=True),
            workload("high", priority=100, requests={"cpu": 4}, created=at(10)),
        ]
    )


def test_preemption_trails_name_the_cycle_the_reason_and_each_other() -> None:
    cluster = _preemption_cluster()
    result = cluster.run_cycle()
    assert result.preempted == ["default/low"]

    victim = [t for t in cluster.core.story("default/low") if t.stimulus == "cycle-1"]
    assert [(t.reason, t.outcome, t.related) for t in victim] == [("Preempted", "applied", ("default/high",))]
    assert victim[0].message.startswith("InClusterQueue: Preempted to accommodate a workload (UID: uid-default-high")
    assert victim[0].at == cluster.now

    preemptor = [(t.stimulus, t.reason, t.outcome, t.related) for t in cluster.core.story("default/high")]
    assert ("cycle-1", "PreemptionIssued", "noted", ("default/low",)) in preemptor
    # ... then the preemptor waits for its victim, in the same cycle.
    assert preemptor[-1][:3] == ("cycle-1", "WaitingForPreemptedWorkloads", "applied")

    # The cycle returned the same decisions, in the order they were applied.
    assert [(d.workload, d.reason) for d in result.decisions][:2] == [
        ("default/low", "Preempted"),
        ("default/high", "PreemptionIssued"),
    ]


def test_preemptor_admitted_in_a_later_cycle_after_the_victim_is_released() -> None:
    cluster = _preemption_cluster()
    cluster.run(cycles=3)
    stories = {k: [(t.stimulus, t.reason) for t in cluster.core.story(k)] for k in ("default/low", "default/high")}
    assert ("cycle-1", "Preempted") in stories["default/low"]
    admitted_at = [s for s, r in stories["default/high"] if r in ("QuotaReserved", "Admitted")]
    assert admitted_at and admitted_at[0] in ("cycle-2", "cycle-3")


def test_controller_steps_are_tagged_with_the_watch_event_they_react_to() -> None:
    cluster = simulate(
        [
            flavor("f"),
            cluster_queue("cq", flavor_quotas("f", cpu=4)),
            workload("orphan", queue="missing"),
        ]
    )
    story = cluster.core.story("default/orphan")
    assert [(t.stimulus, t.reason, t.outcome) for t in story] == [("watch-0", "Misconfigured", "applied")]


def test_transition_log_is_bounded_per_workload_and_in_workloads() -> None:
    log = TransitionLog(per_workload=2, workloads=2)
    for i in range(3):
        log.record(Decision(f"cycle-{i}", at(i), "ns/a", "R"), "noted")
    assert [t.stimulus for t in log.story("ns/a")] == ["cycle-1", "cycle-2"]
    log.record(Decision("cycle-9", at(9), "ns/b", "R"), "noted")
    log.record(Decision("cycle-9", at(9), "ns/c", "R"), "noted")
    assert log.story("ns/a") == []  # the least recently touched workload left first
    assert [t.stimulus for t in log.story("ns/c")] == ["cycle-9"]
