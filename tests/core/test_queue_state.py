"""The workload controller's queue-related writes (upstream ``workload_controller.go``).

Pure-function tables for ``transitions.pending_condition`` / ``stopped_queue_action`` and for the
decision itself, ``core.workload.reconcile.queue_state``, which the simulator and the controllers
of ``pykueue serve`` both apply; whole-cluster scenarios (through the simulator) for stop policies,
inactive queues and reactivation.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from builders import (
    admitted,
    at,
    cluster_queue,
    flavor,
    flavor_quotas,
    local_queue,
    options,
    simulate,
    workload,
)

from pykueue.api.meta import find_condition
from pykueue.core.options import SchedulerOptions
from pykueue.core.workload import reconcile, transitions
from pykueue.core.workload.transitions import QueueView

OK = QueueView(True, "None", "cq", True, True, "None")


def view(**kw: Any) -> QueueView:
    return msgspec.structs.replace(OK, **kw)


PENDING_CASES = [
    ("healthy queue, fresh workload: nothing written", {}, {}, None),
    ("LocalQueue missing", {"local_queue_exists": False}, {}, ("Misconfigured", "LocalQueue lq doesn't exist")),
    ("LocalQueue stopped", {"local_queue_stop_policy": "Hold"}, {}, ("Suspended", "LocalQueue lq is inactive")),
    ("ClusterQueue missing", {"cluster_queue_exists": False}, {}, ("Misconfigured", "ClusterQueue cq doesn't exist")),
    ("ClusterQueue inactive", {"cluster_queue_active": False}, {}, ("Suspended", "ClusterQueue cq is inactive")),
    # upstream getQueueBlocker reads the ClusterQueue from the API: a terminating one exists, and is inactive
    (
        "ClusterQueue terminating",
        {"cluster_queue_terminating": True, "cluster_queue_active": False},
        {},
        ("Suspended", "ClusterQueue cq is inactive"),
    ),
    (
        "admissibility error",
        {"admissibility_error": "workload namespace doesn't match ClusterQueue selector"},
        {},
        ("Misconfigured", "workload namespace doesn't match ClusterQueue selector"),
    ),
    ("deactivated wins", {"local_queue_exists": False}, {"inactive": True}, ("Deactivated", "The workload is deactivated")),
    (
        "admission gated",
        {},
        {"gated": "example.com/gate"},
        ("AdmissionGated", "Admission is gated by: example.com/gate"),
    ),
    # kept: written again only for a new generation (``newQuotaReservedCondition``)
    ("scheduler reason kept", {}, {"reason": "WaitingForQuota"}, ("WaitingForQuota", "msg")),
    (
        "bypassed by an equivalent workload",
        {"bulk_bypass_reason": "NoMatchingFlavor"},
        {"reason": "PendingEvaluation"},
        ("NoMatchingFlavor", transitions.BYPASSED_MESSAGE),
    ),
    (
        "unknown reason becomes PendingEvaluation",
        {},
        {"reason": "Whatever"},
        ("PendingEvaluation", "Workload is pending evaluation in the scheduling queue"),
    ),
]


@pytest.mark.parametrize(("name", "view_kw", "wl_kw", "expected"), PENDING_CASES, ids=[c[0] for c in PENDING_CASES])
def test_pending_condition(name: str, view_kw: dict[str, Any], wl_kw: dict[str, Any], expected: Any) -> None:
    wl = workload("w")
    if wl_kw.get("inactive"):
        wl.spec.active = False
    if wl_kw.get("gated"):
        wl.metadata.annotations["kueue.x-k8s.io/admission-gated-by"] = wl_kw["gated"]
    if wl_kw.get("reason"):
        transitions.set_condition(wl, "QuotaReserved", "False", wl_kw["reason"], "msg", wl.metadata.creation_timestamp)  # type: ignore[arg-type]
    # ``mayUpdateConditionForAdmissionGatedBy`` first, then ``syncQuotaReservedFalseCondition``
    gate = transitions.admission_gate_transition(wl, SchedulerOptions())
    assert (transitions.pending_condition(wl, view(**view_kw), SchedulerOptions(), gate) or gate) == expected


STOP_CASES = [
    ("no stop", {}, False, None),
    ("CQ Hold, reserved only: released", {"cluster_queue_stop_policy": "Hold"}, False, ("release", "Suspended", "ClusterQueue cq is stopped")),
    ("CQ Hold, admitted keeps running", {"cluster_queue_stop_policy": "Hold"}, True, None),
    (
        "CQ HoldAndDrain evicts admitted",
        {"cluster_queue_stop_policy": "HoldAndDrain"},
        True,
        ("evict", "ClusterQueueStopped", "The ClusterQueue is stopped"),
    ),
    (
        "LQ HoldAndDrain evicts admitted",
        {"local_queue_stop_policy": "HoldAndDrain"},
        True,
        ("evict", "LocalQueueStopped", "The LocalQueue is stopped"),
    ),
    ("LQ Hold, reserved only: released", {"local_queue_stop_policy": "Hold"}, False, ("release", "Suspended", "LocalQueue lq is stopped")),
    # upstream reconcileOnLocalQueueActiveState, then reconcileOnClusterQueueActiveState
    (
        "LQ Hold, CQ HoldAndDrain evicts admitted",
        {"local_queue_stop_policy": "Hold", "cluster_queue_stop_policy": "HoldAndDrain"},
        True,
        ("evict", "ClusterQueueStopped", "The ClusterQueue is stopped"),
    ),
    (
        "LQ Hold, CQ missing, reserved only: the LocalQueue's stop first",
        {"local_queue_stop_policy": "Hold", "cluster_queue_exists": False},
        False,
        ("release", "Suspended", "LocalQueue lq is stopped"),
    ),
]


@pytest.mark.parametrize(("name", "view_kw", "is_admitted", "expected"), STOP_CASES, ids=[c[0] for c in STOP_CASES])
def test_stopped_queue_action(name: str, view_kw: dict[str, Any], is_admitted: bool, expected: Any) -> None:
    wl = admitted(workload("w"), "cq", {"cpu": "f"}, admitted_condition=is_admitted)
    assert transitions.stopped_queue_action(wl, view(**view_kw)) == expected


def _cond(cluster: Any, name: str, ctype: str) -> tuple[str, str, str] | None:
    wl = cluster.get_workload(f"default/{name}")
    c = find_condition(wl.status.conditions, ctype)
    return (c.status, c.reason, c.message) if c else None


def _state(stop_policy: str) -> list[Any]:
    return [
        flavor("f"),
        cluster_queue("cq", flavor_quotas("f", cpu=10), stop_policy=stop_policy),
        local_queue("lq", "default", "cq"),
        admitted(workload("running", requests={"cpu": 4}), "cq", {"cpu": "f"}, admitted_condition=True),
        workload("pending", requests={"cpu": 1}),
    ]


def test_hold_keeps_admitted_and_suspends_pending() -> None:
    cluster = simulate(_state("Hold"))
    cluster.run(cycles=2)
    assert _cond(cluster, "running", "Admitted") == ("True", "Admitted", "The workload is admitted")
    assert _cond(cluster, "running", "Evicted") is None
    assert _cond(cluster, "pending", "QuotaReserved") == ("False", "Suspended", "ClusterQueue cq is inactive")


def test_hold_and_drain_evicts_then_releases_with_requeued_false() -> None:
    cluster = simulate(_state("HoldAndDrain"))
    assert _cond(cluster, "running", "Evicted") == ("True", "ClusterQueueStopped", "The ClusterQueue is stopped")
    cluster.run(cycles=2)
    assert _cond(cluster, "running", "Requeued") == ("False", "ClusterQueueStopped", "The ClusterQueue is stopped")
    assert cluster.get_workload("default/running").status.admission is None  # type: ignore[union-attr]
    assert cluster.cache.cluster_queues["cq"].node.usage.get(("f", "cpu"), 0) == 0
    assert any(e.reason == "EvictedDueToClusterQueueStopped" for e in cluster.events)


def test_reactivated_workload_gets_requeued_reactivated() -> None:
    wl = workload("again", requests={"cpu": 1})
    transitions.set_condition(wl, "Requeued", "False", "Deactivated", "The workload is deactivated", wl.metadata.creation_timestamp)  # type: ignore[arg-type]
    cluster = simulate([flavor("f"), cluster_queue("cq", flavor_quotas("f", cpu=10)), local_queue("lq", "default", "cq"), wl])
    assert _cond(cluster, "again", "Requeued") == ("True", "Reactivated", "The workload was reactivated")
    cluster.run(cycles=1)
    assert _cond(cluster, "again", "QuotaReserved")[1] == "QuotaReserved"  # type: ignore[index]


def test_reserved_workload_of_missing_local_queue_is_released() -> None:
    objs = [
        flavor("f"),
        cluster_queue("cq", flavor_quotas("f", cpu=10)),
        admitted(workload("orphan", queue="gone", requests={"cpu": 4}), "cq", {"cpu": "f"}),
    ]
    cluster = simulate(objs)
    assert _cond(cluster, "orphan", "QuotaReserved") == (
        "False",
        "Misconfigured",
        "LocalQueue gone is terminating or missing",
    )
    assert cluster.cache.cluster_queues["cq"].node.usage.get(("f", "cpu"), 0) == 0


# --- reconcile.queue_state as a table (upstream workload_controller_test.go TestReconcile) ----------
#
# The decision both drivers apply; ``view`` is what the driver knows about the queues.

NOW = at(3600)


def _requeued_false(wl: Any, reason: str) -> Any:
    transitions.set_condition(wl, "Requeued", "False", reason, "stopped", at(0))
    return wl


QUEUE_STATE_CASES: list[tuple[str, Any, dict[str, Any], Any]] = [
    # (name, workload factory, view overrides, (conditions written, events) or None for no write)
    ("healthy queues, fresh workload: nothing written", lambda: workload("w"), {}, None),
    (
        "should set the WorkloadRequeued condition to true on re-activated",
        lambda: _requeued_false(workload("w"), "Deactivated"),
        {},
        ({"Requeued": ("True", "Reactivated", "The workload was reactivated")}, []),
    ),
    (
        "should set the WorkloadRequeued condition to true on ClusterQueue started",
        lambda: _requeued_false(workload("w"), "ClusterQueueStopped"),
        {},
        ({"Requeued": ("True", "ClusterQueueRestarted", "The ClusterQueue was restarted after being stopped")}, []),
    ),
    (
        "should set the WorkloadRequeued condition to true on LocalQueue started",
        lambda: _requeued_false(workload("w"), "LocalQueueStopped"),
        {},
        ({"Requeued": ("True", "LocalQueueRestarted", "The LocalQueue was restarted after being stopped")}, []),
    ),
    # upstream Reconcile: LocalQueueRestarted needs ``lqExists && lqActive``; ClusterQueueRestarted
    # needs ``ClusterQueueForWorkload`` (LocalQueue tracked, i.e. present and not stopped) and the
    # ClusterQueue read from the API. A deleted queue is not a restarted one.
    (
        "LocalQueue deleted after stopping: Requeued stays False",
        lambda: _requeued_false(workload("w"), "LocalQueueStopped"),
        {"local_queue_exists": False, "local_queue_stop_policy": ""},
        ({"Requeued": ("False", "LocalQueueStopped", "stopped"), "QuotaReserved": ("False", "Misconfigured", "LocalQueue lq doesn't exist")}, []),
    ),
    (
        "ClusterQueue deleted after stopping: Requeued stays False",
        lambda: _requeued_false(workload("w"), "ClusterQueueStopped"),
        {"cluster_queue_exists": False, "cluster_queue_active": False, "cluster_queue_stop_policy": ""},
        ({"Requeued": ("False", "ClusterQueueStopped", "stopped"), "QuotaReserved": ("False", "Misconfigured", "ClusterQueue cq doesn't exist")}, []),
    ),
    (
        "ClusterQueue started while its LocalQueue is stopped: Requeued stays False",
        lambda: _requeued_false(workload("w"), "ClusterQueueStopped"),
        {"local_queue_stop_policy": "Hold"},
        ({"Requeued": ("False", "ClusterQueueStopped", "stopped"), "QuotaReserved": ("False", "Suspended", "LocalQueue lq is inactive")}, []),
    ),
    (
        "pending workload, LocalQueue missing: Misconfigured",
        lambda: workload("w"),
        {"local_queue_exists": False},
        ({"QuotaReserved": ("False", "Misconfigured", "LocalQueue lq doesn't exist")}, []),
    ),
    (
        "reserved workload, ClusterQueue missing: reservation released",
        lambda: admitted(workload("w"), "cq", {"cpu": "f"}),
        {"cluster_queue_exists": False},
        ({"QuotaReserved": ("False", "Misconfigured", "ClusterQueue cq is terminating or missing")}, []),
    ),
    (
        "admitted workload, ClusterQueue HoldAndDrain: evicted with its event",
        lambda: admitted(workload("w"), "cq", {"cpu": "f"}, admitted_condition=True),
        {"cluster_queue_stop_policy": "HoldAndDrain"},
        (
            {"Evicted": ("True", "ClusterQueueStopped", "The ClusterQueue is stopped")},
            [("Normal", "EvictedDueToClusterQueueStopped", "The ClusterQueue is stopped")],
        ),
    ),
    (
        "reserved workload, LocalQueue Hold: reservation released",
        lambda: admitted(workload("w"), "cq", {"cpu": "f"}),
        {"local_queue_stop_policy": "Hold"},
        ({"QuotaReserved": ("False", "Suspended", "LocalQueue lq is stopped")}, []),
    ),
    (
        "finished workload: nothing written",
        lambda: transitions.set_condition(w := workload("w"), "Finished", "True", "Succeeded", "done", at(0)) and w,
        {"local_queue_exists": False},
        None,
    ),
]


@pytest.mark.parametrize(
    ("name", "make", "view_kw", "want"), QUEUE_STATE_CASES, ids=[c[0] for c in QUEUE_STATE_CASES]
)
def test_queue_state_decision(name: str, make: Any, view_kw: dict[str, Any], want: Any) -> None:
    wl = make()
    outcome = reconcile.queue_state(wl, view(**view_kw), NOW, SchedulerOptions())
    if want is None:
        assert outcome == reconcile.NOTHING
        return
    assert outcome.status is not None and outcome.spec is None
    written = {c.type: (c.status, c.reason, c.message) for c in outcome.status.status.conditions}
    want_conditions, want_events = want
    assert {t: written.get(t) for t in want_conditions} == want_conditions
    assert [(e.type, e.reason, e.note) for e in outcome.events] == want_events
    assert wl.status.conditions != outcome.status.status.conditions  # the input is not changed


@pytest.mark.parametrize(
    ("view_kw", "want"),
    [
        ({"cluster_queue_exists": False}, ("Inadmissible", "ClusterQueue cq is terminating or missing")),
        ({"local_queue_stop_policy": "Hold"}, ("Inadmissible", "LocalQueue lq is stopped")),
        ({"cluster_queue_stop_policy": "Hold"}, ("Inadmissible", "ClusterQueue cq is stopped")),
    ],
)
def test_released_reservation_reason_without_unadmitted_workloads_observability(
    view_kw: dict[str, Any], want: tuple[str, str]
) -> None:
    """Upstream ``reconcileOn{Local,Cluster}QueueActiveState``: the QuotaReserved=False reason is
    ``UnadmittedWorkloadReasonWithFallback(Misconfigured|Suspended, Inadmissible)``."""
    opts = options(gates={"UnadmittedWorkloadsObservability": False})
    outcome = reconcile.queue_state(admitted(workload("w"), "cq", {"cpu": "f"}), view(**view_kw), NOW, opts)
    assert outcome.status is not None
    cond = find_condition(outcome.status.status.conditions, "QuotaReserved")
    assert cond is not None and (cond.status, cond.reason, cond.message) == ("False", *want)
