"""Upstream ``pkg/controller/core/workload_controller_requeue_test.go`` (``TestReconcileRequeue``),
ported case by case (ids are upstream's case names) where the rule is one of the pure decisions
both drivers apply.

The end of a backoff (``Requeued`` False → True ``BackoffFinished``, ``requeueAt`` cleared) is
``transitions.finish_backoff``; a retry delay of a workload holding quota is
``reconcile.check_based_eviction`` (``NeedsRequeueAtUpdate``, then waiting for it).

Kept where they are: "should set the WorkloadRequeued condition to true on re-activated", "... on
ClusterQueue started", "... on LocalQueue started" (tests/core/test_queue_state.py).

not ported:
- "increment re-queue count", "wait time should be limited to backoffMaxSeconds", "recovery time
  should be limited to recoveryTimeout", "recovery time with unhealthy nodes should still be limited
  to recoveryTimeout" — the PodsReady timeout lives in the controller
  (``WorkloadController._pods_ready_timeout``), not in a pure decision.
- "scale-to-zero released workload should not be requeued while transitioning back to pending" —
  asserts the queue manager's content after an OnHold (StatefulSet scale-to-zero) release, which
  pykueue's integrations do not produce.
- the four requeueAt cases ("should update requeueState.requeueAt when admission check sets a
  delay", "should not update ... when admission check delay is smaller", "should always use the
  biggest admission check delay", "should use the biggest total time not the biggest
  RequeueAfterSeconds") are for a workload without quota reservation; pykueue applies
  ``NeedsRequeueAtUpdate`` only to workloads holding quota (after an eviction its checks are reset
  to Pending, so a pending workload with Retry checks needs an external check controller to write
  one). Their rule, the latest ``lastTransitionTime + requeueAfterSeconds``, is checked below on a
  reserved workload with the same inputs.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from builders import admitted, workload

from pykueue.api.kueue import AdmissionCheckState, RequeueState, Workload
from pykueue.api.meta import Condition
from pykueue.core.options import SchedulerOptions
from pykueue.core.workload import reconcile, transitions

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
BACKOFF_FINISHED = ("True", "BackoffFinished", "The workload backoff was finished")


def _requeued_false(reason: str, message: str, requeue_at: datetime | None, finished: bool = False) -> Workload:
    w = workload("wl", "ns")
    w.spec.active = True
    w.status.conditions = [Condition(type="Requeued", status="False", reason=reason, message=message, last_transition_time=NOW)]
    if finished:
        w.status.conditions.append(
            Condition(type="Finished", status="True", reason="JobFinished", message="Job finished successfully", last_transition_time=NOW)
        )
    if requeue_at is not None:
        w.status.requeue_state = RequeueState(count=1, requeue_at=requeue_at)
    return w


PODS = ("PodsReadyTimeout", "Exceeded the PodsReady timeout ns")
CHECK = ("AdmissionCheck", "Exceeded the AdmissionCheck timeout ns")

# name, workload, want Requeued condition, want requeueAt
BACKOFF_CASES: list[tuple[str, Workload, tuple[str, str, str], datetime | None]] = [
    (
        "should keep the WorkloadRequeued condition until the WaitForPodsReady backoff expires",
        _requeued_false(*PODS, NOW + timedelta(seconds=60)),
        ("False", *PODS),
        NOW + timedelta(seconds=60),
    ),
    (
        "should set the WorkloadRequeued condition when the WaitForPodsReady backoff expires",
        _requeued_false(*PODS, None),
        BACKOFF_FINISHED,
        None,
    ),
    (
        "should keep the WorkloadRequeued condition until the AdmissionCheck backoff expires",
        _requeued_false(*CHECK, NOW + timedelta(seconds=60)),
        ("False", *CHECK),
        NOW + timedelta(seconds=60),
    ),
    (
        "should set the WorkloadRequeued condition when the AdmissionCheck backoff expires",
        _requeued_false(*CHECK, None),
        BACKOFF_FINISHED,
        None,
    ),
    (
        "shouldn't set the WorkloadRequeued condition when backoff expires and workload finished",
        _requeued_false(*PODS, NOW, finished=True),
        ("False", *PODS),
        NOW,
    ),
]


@pytest.mark.parametrize(("name", "wl", "want", "want_at"), BACKOFF_CASES, ids=[c[0] for c in BACKOFF_CASES])
def test_reconcile_requeue_backoff(name: str, wl: Workload, want: tuple[str, str, str], want_at: datetime | None) -> None:
    updated = transitions.copy_for_status(wl)
    transitions.finish_backoff(updated, NOW)
    rq = next(c for c in updated.status.conditions if c.type == "Requeued")
    assert (rq.status, rq.reason, rq.message) == want
    assert transitions.requeue_at(updated) == want_at


def _retry(name: str, after: int, when: datetime) -> AdmissionCheckState:
    return AdmissionCheckState(name=name, state="Retry", requeue_after_seconds=after, last_transition_time=when)


def _reserved(checks: list[AdmissionCheckState], requeue_at: datetime | None = None) -> Workload:
    w = admitted(workload("wl", "ns"), "q1", {"cpu": "default"}, at_time=NOW)
    w.status.admission_checks = checks
    if requeue_at is not None:
        w.status.requeue_state = RequeueState(requeue_at=requeue_at)
    return w


# upstream's requeueAt cases, on a workload holding quota: (name, workload, want requeueAt written
# (None: no write), want wait in seconds (None: no wait)). Upstream's comparison ignores
# ``RequeueState.RequeueAt`` (``workloadCmpOpts``), so its "biggest delay" case lists now+10s for
# delays of 5 s and 7 s; the value here is what ``GetMaxRetryTime`` computes (now+7s).
REQUEUE_AT_CASES: list[tuple[str, Any, datetime | None, float | None]] = [
    (
        "should update requeueState.requeueAt when admission check sets a delay",
        lambda: _reserved([_retry("check", 10, NOW)], NOW + timedelta(seconds=5)),
        NOW + timedelta(seconds=10),
        None,
    ),
    (
        "should not update requeueState.requeueAt when admission check delay is smaller",
        lambda: _reserved([_retry("check", 5, NOW)], NOW + timedelta(seconds=10)),
        None,
        10.0,
    ),
    (
        "should always use the biggest admission check delay",
        lambda: _reserved([_retry("check1", 5, NOW), _retry("check2", 7, NOW)]),
        NOW + timedelta(seconds=7),
        None,
    ),
    (
        "should use the biggest total time not the biggest RequeueAfterSeconds",
        lambda: _reserved([_retry("check1", 5, NOW + timedelta(seconds=10)), _retry("check2", 10, NOW)]),
        NOW + timedelta(seconds=15),
        None,
    ),
]


@pytest.mark.parametrize(("name", "make", "want_at", "want_wait"), REQUEUE_AT_CASES, ids=[c[0] for c in REQUEUE_AT_CASES])
def test_reconcile_requeue_at_of_a_reserved_workload(
    name: str, make: Any, want_at: datetime | None, want_wait: float | None
) -> None:
    outcome = reconcile.check_based_eviction(make(), NOW, SchedulerOptions())
    if want_at is None:
        assert outcome.status is None and not outcome.events
        assert outcome.requeue_after == want_wait
        return
    assert outcome.status is not None and not outcome.events
    assert transitions.requeue_at(outcome.status) == want_at
    assert not any(c.type == "Evicted" for c in outcome.status.status.conditions)


def test_requeue_at_is_set_from_a_retry_check_on_a_workload_without_quota() -> None:
    """Upstream ``Reconcile`` runs ``NeedsRequeueAtUpdate`` before looking at the quota: a pending
    Workload's Retry check moves ``requeueAt`` too, once, and not after the delay is over."""
    w = workload("wl", "ns")
    w.status.admission_checks = [_retry("check", 10, NOW)]
    outcome = reconcile.requeue_at_update(w, NOW)
    assert outcome.status is not None and not outcome.events
    assert transitions.requeue_at(outcome.status) == NOW + timedelta(seconds=10)
    assert outcome.status.status.requeue_state is not None and outcome.status.status.requeue_state.count is None
    assert reconcile.requeue_at_update(outcome.status, NOW) == reconcile.NOTHING
    assert reconcile.requeue_at_update(w, NOW + timedelta(seconds=10)) == reconcile.NOTHING


@pytest.mark.parametrize(("count", "want"), [(None, None), (2, RequeueState(count=2))], ids=["no-count", "count"])
def test_finished_backoff_stores_requeue_state_as_upstream(count: int | None, want: RequeueState | None) -> None:
    """Upstream ``Reconcile`` only sets ``RequeueState.RequeueAt = nil`` and keeps the struct, but the
    stored object is what its Server-Side Apply leaves (``WorkloadRequestUseMergePatch`` is off by
    default): ``PatchAdmissionStatus`` → ``admissionStatusPatch`` (pkg/workload/patching) puts
    ``requeueState`` in the patch only with a count or a requeueAt, and the field manager's prune
    (structured-merge-diff ``Updater.prune``, ``EnsureNamedFieldsAreMembers``) then removes the whole
    ``requeueState`` it owned: without a count the field is absent, not ``requeueState: {}``."""
    w = _requeued_false(*CHECK, None)
    w.status.requeue_state = RequeueState(count=count, requeue_at=NOW - timedelta(seconds=1))
    updated = transitions.copy_for_status(w)
    assert transitions.finish_backoff(updated, NOW)
    assert updated.status.requeue_state == want
