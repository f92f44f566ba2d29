"""``mayUpdateConditionForAdmissionGatedBy`` before ``syncQuotaReservedFalseCondition`` (upstream
``pkg/controller/core/workload_controller.go``), as ``reconcile.queue_state`` applies them.

Upstream's ``TestReconcile`` runs each AdmissionGatedBy case with ``UnadmittedWorkloadsObservability``
on and off (``runReconcileTestCases``); off, the expected QuotaReserved reason is adjusted by
``AdjustConditionsForDisabledObservabilityInWorkloadController`` (AdmissionGated kept, other
pending reasons become ``Pending``) and the events are the same.
"""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest
from builders import options, workload

from pykueue.api.meta import Condition, find_condition
from pykueue.core.options import SchedulerOptions
from pykueue.core.workload import reconcile
from pykueue.core.workload.transitions import QueueView

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
OK = QueueView(True, "None", "cq", True, True, "None")
GATE = "kueue.x-k8s.io/admission-gated-by"
CLEARED = "AdmissionGatedBy cleared, waiting for quota reservation"
OBSERVABILITY = pytest.mark.parametrize("observability", [True, False], ids=["observability", "legacy"])


def _opts(observability: bool) -> SchedulerOptions:
    return options(gates={"UnadmittedWorkloadsObservability": observability})


def _gated_condition(wl_gen: int = 1) -> Condition:
    return Condition(
        type="QuotaReserved",
        status="False",
        reason="AdmissionGated",
        message="Admission is gated by: example.com/controller1",
        observed_generation=wl_gen,
        last_transition_time=NOW,
    )


def _run(wl, view: QueueView, observability: bool) -> tuple[tuple[str, str], list[tuple[str, str]]]:  # type: ignore[no-untyped-def]
    out = reconcile.queue_state(wl, view, NOW, _opts(observability))
    qr = find_condition((out.status or wl).status.conditions, "QuotaReserved")
    assert qr is not None
    return (qr.reason, qr.message), [(e.reason, e.note) for e in out.events]


@OBSERVABILITY
def test_workload_with_admission_gated_by_annotation_should_set_quota_reserved_condition_to_admission_gated(
    observability: bool,
) -> None:
    wl = workload("wl", "ns", annotations={GATE: "example.com/controller1"})
    got = _run(wl, OK, observability)
    assert got == (
        ("AdmissionGated", "Admission is gated by: example.com/controller1"),
        [("AdmissionGated", "Workload admission is gated by: example.com/controller1")],
    )


@OBSERVABILITY
def test_workload_with_multiple_admission_gated_by_gates_should_remain_gated(observability: bool) -> None:
    wl = workload("wl", "ns", annotations={GATE: "example.com/controller1,example.com/controller2"})
    reason, events = _run(wl, OK, observability)
    assert reason == ("AdmissionGated", "Admission is gated by: example.com/controller1,example.com/controller2")
    assert events == [("AdmissionGated", "Workload admission is gated by: example.com/controller1,example.com/controller2")]


@OBSERVABILITY
def test_workload_with_admission_gated_by_annotation_removed_should_clear_the_gate_and_emit_event(
    observability: bool,
) -> None:
    wl = workload("wl", "ns")
    wl.status.conditions = [_gated_condition()]
    got = _run(wl, OK, observability)
    # ``UnadmittedWorkloadReasonWithFallback("PendingEvaluation", "Pending")``
    reason = "PendingEvaluation" if observability else "Pending"
    assert got == ((reason, CLEARED), [("AdmissionGateCleared", "Admission gate cleared, workload is now admissible")])


@OBSERVABILITY
@pytest.mark.parametrize(
    ("blocker", "active", "granular"),
    [
        ({"local_queue_exists": False}, True, ("Misconfigured", "LocalQueue lq doesn't exist")),
        ({"local_queue_stop_policy": "Hold"}, True, ("Suspended", "LocalQueue lq is inactive")),
        ({}, False, ("Deactivated", "The workload is deactivated")),
    ],
    ids=["LocalQueue missing", "LocalQueue stopped", "inactive"],
)
def test_gate_removed_with_a_blocker_emits_admission_gate_cleared_then_syncs_the_blocker(
    observability: bool, blocker: dict[str, object], active: bool, granular: tuple[str, str]
) -> None:
    """Upstream's first reconcile writes the cleared condition and its event; the next one
    (``syncQuotaReservedFalseCondition``) the blocker, or, without observability, the legacy
    ``Inadmissible`` for a queue blocker and nothing for an inactive Workload."""
    wl = workload("wl", "ns")
    wl.spec.active = active
    wl.status.conditions = [_gated_condition()]
    reason, events = _run(wl, msgspec.structs.replace(OK, **blocker), observability)
    if observability:
        assert reason == granular
    elif active:
        assert reason == ("Inadmissible", granular[1])
    else:
        assert reason == ("Pending", CLEARED)
    assert events == [("AdmissionGateCleared", "Admission gate cleared, workload is now admissible")]


@OBSERVABILITY
def test_gated_workload_stays_gated_and_quiet(observability: bool) -> None:
    """A second reconcile of a gated Workload writes nothing and records no event (the gate's
    write is settled, behind a missing LocalQueue too)."""
    for view in (OK, msgspec.structs.replace(OK, local_queue_exists=False)):
        wl = workload("wl", "ns", annotations={GATE: "example.com/controller1"})
        first = reconcile.queue_state(wl, view, NOW, _opts(observability))
        assert first.status is not None
        second = reconcile.queue_state(first.status, view, NOW, _opts(observability))
        assert not second.writes and second.events == ()


# --- observedGeneration of QuotaReserved=False (``newQuotaReservedCondition``) -------------------


@pytest.mark.parametrize(
    ("blocker", "reason", "message"),
    [
        ({"local_queue_stop_policy": "Hold"}, "Suspended", "LocalQueue lq is inactive"),
        ({}, "WaitingForQuota", "m"),  # a scheduler reason is kept, re-stamped
        ({}, "OnHold", "m"),  # ``IsOnHold``: kept, re-stamped
    ],
    ids=["LocalQueue on Hold", "scheduler reason", "on hold"],
)
def test_quota_reserved_is_restamped_with_the_workload_generation(
    blocker: dict[str, object], reason: str, message: str
) -> None:
    """After a spec change (generation 2) with both conditions at observedGeneration 1, upstream's
    ``syncQuotaReservedFalseCondition`` writes QuotaReserved with ``wl.Generation`` even when reason
    and message stay (``apimeta.SetStatusCondition``), as ``SyncAdmittedCondition`` does Admitted."""
    wl = workload("wl", "ns")
    wl.metadata.generation = 2
    wl.status.conditions = [
        Condition(type="QuotaReserved", status="False", reason=reason, message=message, observed_generation=1, last_transition_time=NOW),
        Condition(
            type="Admitted",
            status="False",
            reason="NoReservation",
            message="The workload has no reservation",
            observed_generation=1,
            last_transition_time=NOW,
        ),
    ]
    out = reconcile.queue_state(wl, msgspec.structs.replace(OK, **blocker), datetime(2025, 6, 1, 13, tzinfo=UTC), _opts(True))
    assert out.status is not None
    got = {c.type: (c.reason, c.message, c.observed_generation, c.last_transition_time) for c in out.status.status.conditions}
    assert got["QuotaReserved"] == (reason, message, 2, NOW)
    assert got["Admitted"] == ("NoReservation", "The workload has no reservation", 2, NOW)
    again = reconcile.queue_state(out.status, msgspec.structs.replace(OK, **blocker), NOW, _opts(True))
    assert not again.writes


def test_the_workload_controllers_events_are_reported_by_the_workload_controller() -> None:
    """Upstream's workload controller records through ``mgr.GetEventRecorder(
    constants.WorkloadControllerName)``: its events name ``kueue-workload-controller``, the
    scheduler's ``kueue-admission``."""
    from pykueue.core.events import WORKLOAD_CONTROLLER

    wl = workload("wl", "ns", annotations={GATE: "example.com/controller1"})
    out = reconcile.queue_state(wl, OK, NOW, _opts(True))
    assert [(e.reason, e.controller) for e in out.events] == [("AdmissionGated", WORKLOAD_CONTROLLER)]
    assert WORKLOAD_CONTROLLER == "kueue-workload-controller"
