"""Cycle-level rules across several cycles, one case per rule (upstream ``scheduler.go``,
``flavorassigner.go``, ``cache/queue``, ``resources/amount.go``), each found missing or wrong by review
and fixed."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from builders import (
    T0,
    Q,
    admitted,
    at,
    cluster_queue,
    conditions,
    flavor,
    flavor_quotas,
    local_queue,
    options,
    pod_set,
    simulate,
    workload,
)

from pykueue.api.kueue import RequeueState
from pykueue.api.meta import Condition


def _cond(c: Any, name: str, ctype: str) -> tuple[str, str, str] | None:
    got: dict[str, tuple[str, str, str]] = conditions(c.get_workload(f"default/{name}"))
    return got.get(ctype)


def test_remembered_flavor_scan_progress_resumes_at_the_next_flavor() -> None:
    """``findFlavorForPodSets``/``requeueIfNotPresent``: a skipped workload with untried flavors is retried
    next cycle from the next flavor."""
    objs = [
        flavor("f1"),
        flavor("f2"),
        cluster_queue("a", flavor_quotas("f1", cpu=10), cohort="c", preemption={"within_cluster_queue": "LowerPriority"}),
        cluster_queue("b", flavor_quotas("f1", cpu=0), flavor_quotas("f2", cpu=10), cohort="c"),
        local_queue("qa", cq="a"),
        local_queue("qb", cq="b"),
        admitted(workload("low1", queue="qa", requests={"cpu": "4"}, priority=0), "a", {"cpu": "f1"}),
        workload("high", queue="qa", requests={"cpu": "10"}, priority=10, created=at(10)),
        workload("b1", queue="qb", requests={"cpu": "6"}, priority=0, created=at(5)),
    ]
    c = simulate(objs)
    first = c.run_cycle()
    b1 = next(e for e in first.entries if e.info.key == "default/b1")
    assert b1.status == "skipped"
    assert b1.info.last_assignment is not None
    assert b1.info.last_assignment.last_tried_flavor_idx == [{"cpu": 0}]
    c.advance(1)
    second = c.run_cycle()
    assert "default/b1" in second.admitted
    admission = c.get_workload("default/b1").status.admission  # type: ignore[union-attr]
    assert admission is not None and admission.pod_set_assignments[0].flavors == {"cpu": "f2"}


def test_workload_assumed_in_this_cycle_is_not_a_preemption_target() -> None:
    """``Scheduler.admit``: assumed workloads reach the cache after the cycle; only their usage is in the
    snapshot."""
    objs = [
        flavor("f1"),
        cluster_queue("a", flavor_quotas("f1", cpu=5), cohort="c", preemption={"reclaim_within_cohort": "Any"}),
        cluster_queue("b", flavor_quotas("f1", cpu=0), cohort="c"),
        cluster_queue(
            "d",
            flavor_quotas("f1", cpu=1),
            cohort="c",
            preemption={"reclaim_within_cohort": "LowerPriority", "borrow_within_cohort": "LowerPriority"},
        ),
        cluster_queue("e", flavor_quotas("f1", cpu=4), cohort="c"),
        cluster_queue("x", flavor_quotas("f1", cpu=0), cohort="c"),
        local_queue("qa", cq="a"),
        local_queue("qb", cq="b"),
        local_queue("qd", cq="d"),
        local_queue("qx", cq="x"),
        admitted(workload("v", queue="qx", requests={"cpu": "6"}), "x", {"cpu": "f1"}),
        workload("a1", queue="qa", requests={"cpu": "5"}, created=at(1)),
        workload("b1", queue="qb", requests={"cpu": "4"}, created=at(0)),
        workload("d1", queue="qd", requests={"cpu": "5"}, priority=10, created=at(2)),
    ]
    c = simulate(objs, options(gates={"PrioritySortingWithinCohort": False}))
    result = c.run_cycle()
    assert result.admitted == ["default/b1"]
    assert result.preempted == ["default/v"]
    assert _cond(c, "b1", "Evicted") is None
    d1 = next(e for e in result.entries if e.info.key == "default/d1")
    assert d1.requeue_reason == "PreemptionNoCandidates"


def test_capacity_reservation_never_negative_keeps_cohort_usage_exact() -> None:
    """``resourcesToReserve`` above nominal + borrowingLimit: reserving a negative amount must not leak
    usage."""
    objs = [
        flavor("f1"),
        cluster_queue("a", flavor_quotas("f1", cpu=Q(5, borrowing_limit=1)), cohort="c"),
        cluster_queue("b", flavor_quotas("f1", cpu=10), cohort="c"),
        local_queue("qa", cq="a"),
        local_queue("qb", cq="b"),
        admitted(workload("big", queue="qa", requests={"cpu": "8"}), "a", {"cpu": "f1"}),
        workload("w", queue="qa", requests={"cpu": "1"}, created=at(10)),
        workload("b1", queue="qb", requests={"cpu": "7"}, created=at(2)),
    ]
    c = simulate(objs)
    c.run(cycles=3)
    assert c.cache.cohorts["c"].usage[("f1", "cpu")] == 15_000
    assert _cond(c, "b1", "QuotaReserved") == ("True", "QuotaReserved", "Quota reserved in ClusterQueue b")


def test_failed_admission_write_keeps_capacity_booked_for_the_cycle() -> None:
    """``processEntry`` / ``Scheduler.admit``: the usage stays booked; a later borrowing entry is skipped."""
    objs = [
        flavor("f1"),
        cluster_queue("a", flavor_quotas("f1", cpu=5), cohort="c"),
        cluster_queue("b", flavor_quotas("f1", cpu=0), cohort="c"),
        local_queue("qa", cq="a"),
        local_queue("qb", cq="b"),
        workload("a1", queue="qa", requests={"cpu": "5"}),
        workload("b1", queue="qb", requests={"cpu": "5"}),
    ]
    c = simulate(objs)
    real = c.write_workload_status

    def failing(wl: Any) -> bool:
        if wl.metadata.name == "a1" and wl.status.admission is not None:
            return False
        return real(wl)

    c.write_workload_status = failing  # type: ignore[method-assign]
    result = c.run_cycle()
    by_key = {e.info.key: e for e in result.entries}
    assert result.admitted == []
    assert by_key["default/a1"].message == (
        "Failed to admit workload: Could not admit Workload and assign flavors in apiserver"
    )
    assert by_key["default/a1"].requeue_reason == "FailedAfterNomination"
    assert by_key["default/b1"].status == "skipped"


def test_cluster_queue_in_cohort_cycle_is_reported_inactive() -> None:
    """``Manager.Heads``/``Scheduler.nominate``: heads of CQs under a cohort cycle are popped and reported
    inactive."""
    from builders import cohort

    objs = [
        flavor("f1"),
        cohort("x", parent="y"),
        cohort("y", parent="x"),
        cluster_queue("a", flavor_quotas("f1", cpu=5), cohort="x"),
        local_queue("qa", cq="a"),
        workload("w", queue="qa", requests={"cpu": "1"}),
    ]
    c = simulate(objs)
    result = c.run_cycle()
    assert [(e.info.key, e.message) for e in result.entries] == [("default/w", "ClusterQueue a is inactive")]
    warnings = [(e.reason, e.note) for e in c.events if e.type == "Warning"]
    assert ("Suspended", "ClusterQueue a is inactive") in warnings


def test_restarted_local_queue_requeues_a_workload_it_stopped() -> None:
    """``reconcileOnLocalQueueActiveState``: Requeued False/LocalQueueStopped flips to
    True/LocalQueueRestarted and it is admitted."""
    w = workload("w", queue="qa", requests={"cpu": "1"})
    msg = "The LocalQueue is stopped"
    w.status.conditions = [
        Condition(type="QuotaReserved", status="False", reason="PendingEvaluation", message=msg, last_transition_time=T0),
        Condition(type="Evicted", status="True", reason="LocalQueueStopped", message=msg, last_transition_time=T0),
        Condition(type="Requeued", status="False", reason="LocalQueueStopped", message=msg, last_transition_time=T0),
    ]
    c = simulate([flavor("f1"), cluster_queue("a", flavor_quotas("f1", cpu=10)), local_queue("qa", cq="a"), w])
    assert _cond(c, "w", "Requeued") == ("True", "LocalQueueRestarted", "The LocalQueue was restarted after being stopped")
    c.run(cycles=3)
    assert _cond(c, "w", "QuotaReserved") == ("True", "QuotaReserved", "Quota reserved in ClusterQueue a")


def test_until_quiet_waits_for_a_running_backoff() -> None:
    """``schedule --until-quiet``: a workload backing off is still "left to try"; with nothing else
    to do, the clock skips to its requeueAt (now+5s): cycle 1 runs then and admits it."""
    now = at(3600)
    msg = "Exceeded the PodsReady timeout default/w"
    w = workload("w", queue="qa", requests={"cpu": "1"})
    w.status.conditions = [
        Condition(type="QuotaReserved", status="False", reason="PendingEvaluation", message=msg, last_transition_time=now),
        Condition(type="Evicted", status="True", reason="PodsReadyTimeout", message=msg, last_transition_time=now),
        Condition(type="Requeued", status="False", reason="PodsReadyTimeout", message=msg, last_transition_time=now),
    ]
    w.status.requeue_state = RequeueState(count=1, requeue_at=now + timedelta(seconds=5))
    c = simulate([flavor("f1"), cluster_queue("a", flavor_quotas("f1", cpu=10)), local_queue("qa", cq="a"), w], now=now)
    run = c.run(until_quiet=True)
    admitted_at = [i for i, r in enumerate(run.cycles) if r.admitted]
    assert admitted_at == [1]
    reserved = next(x for x in c.get_workload("default/w").status.conditions if x.type == "QuotaReserved")  # type: ignore[union-attr]
    assert (reserved.status, reserved.last_transition_time) == ("True", now + timedelta(seconds=5))
    assert _cond(c, "w", "Requeued") == ("True", "BackoffFinished", "The workload backoff was finished")


def test_block_admission_waits_for_pods_ready_without_an_event() -> None:
    """``processEntry`` (waitForPodsReady.blockAdmission) with granular and legacy reasons."""
    for gates, reason in (({}, "WaitingForPodsReady"), ({"UnadmittedWorkloadsObservability": False}, "Waiting")):
        objs = [
            flavor("f1"),
            cluster_queue("a", flavor_quotas("f1", cpu=10)),
            local_queue("qa", cq="a"),
            admitted(workload("x", queue="qa", requests={"cpu": "1"}), "a", {"cpu": "f1"}, admitted_condition=True),
            workload("w", queue="qa", requests={"cpu": "1"}, created=at(5)),
        ]
        c = simulate(objs, options(gates=gates, block_admission=True))
        result = c.run_cycle()
        assert result.admitted == []
        got = _cond(c, "w", "QuotaReserved")
        assert got == ("False", reason, "waiting for all admitted workloads to be in PodsReady condition")
        assert not [e for e in c.events if e.name == "w"]
        assert "default/w" in [i.key for i in c.queues.pending_workloads("a")]


def test_namespace_that_does_not_exist() -> None:
    """``workload.ValidateAdmissibility``: the namespace lookup fails with NotFound."""
    objs = [
        flavor("f1"),
        cluster_queue("a", flavor_quotas("f1", cpu=10)),
        local_queue("qa", "ghost", cq="a"),
        workload("w", "ghost", queue="qa", requests={"cpu": "1"}),
    ]
    c = simulate(objs)
    del c.objects[("Namespace", "", "ghost")]
    result = c.run_cycle()
    assert [e.message for e in result.entries] == [
        'workload namespace "ghost" does not exist: namespaces "ghost" not found'
    ]


def test_exabyte_scale_quota_borrowing() -> None:
    """``pkg/resources/amount.go``: borrowing against unlimited lendable capacity (exabyte-scale quota)
    saturates, not overflows."""
    objs = [
        flavor("f1"),
        cluster_queue("a", flavor_quotas("f1", cpu=0), cohort="c"),
        cluster_queue("b", flavor_quotas("f1", cpu="1E"), cohort="c"),
        local_queue("qa", cq="a"),
        admitted(workload("x", queue="qa", requests={"cpu": "5"}), "a", {"cpu": "f1"}),
        workload("w", queue="qa", requests={"cpu": "10"}, count=3),
    ]
    c = simulate(objs)
    assert c.run_cycle().admitted == ["default/w"]


def test_sum_of_pod_set_requests_over_int64_does_not_fit() -> None:
    """``pkg/resources/amount.go``: prevent integer overflow when the sum of requests over pod sets exceeds
    MaxInt64."""
    objs = [
        flavor("f1"),
        cluster_queue("a", flavor_quotas("f1", memory="8E")),
        local_queue("qa", cq="a"),
        workload("w", queue="qa", pod_sets=[pod_set("a", 1, {"memory": "5E"}), pod_set("b", 1, {"memory": "5E"})]),
    ]
    c = simulate(objs)
    result = c.run_cycle()
    assert result.admitted == []
    got = _cond(c, "w", "QuotaReserved")
    assert got is not None and got[:2] == ("False", "ExceedsMaxQuota")


def test_preemption_write_failure_reports_failed_preemptions() -> None:
    """``processEntry``: evictions that fail append `. Preempting <n> workload(s) failed, will retry.`."""
    objs = [
        flavor("f1"),
        cluster_queue("a", flavor_quotas("f1", cpu=5), preemption={"within_cluster_queue": "LowerPriority"}),
        local_queue("qa", cq="a"),
        admitted(workload("low", queue="qa", requests={"cpu": "5"}), "a", {"cpu": "f1"}, admitted_condition=True),
        workload("high", queue="qa", requests={"cpu": "5"}, priority=10, created=at(5)),
    ]
    c = simulate(objs)
    real = c.write_workload_status

    def failing(wl: Any) -> bool:
        return False if wl.metadata.name == "low" else real(wl)

    c.write_workload_status = failing  # type: ignore[method-assign]
    result = c.run_cycle()
    high = next(e for e in result.entries if e.info.key == "default/high")
    assert high.requeue_reason == "PreemptionFailed"
    assert high.message.endswith(". Preempting 1 workload(s) failed, will retry.")
