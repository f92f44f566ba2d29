"""Upstream ``pkg/workload/admissionchecks_test.go``: ``TestSyncAdmittedCondition`` and
``TestGetMaxRetryTime``, ported case by case (ids are upstream's case names).

Both run under the default feature gates (``UnadmittedWorkloadsObservability`` on,
``UnadmittedWorkloadsExplicitStatus`` off), so upstream's helpers ``ExplicitStatusConditions``,
``UnadmittedConditions``, ``WantChangeWithObservability`` and ``UnadmittedWorkloadReasonWithFallback``
are resolved here for those defaults. As upstream, the comparison ignores each condition's
``lastTransitionTime`` and ``message``; "changed" is whether the conditions differ otherwise
(upstream's ``SyncAdmittedCondition`` returns ``SetStatusCondition``'s answer).

The two "pending delayed topology request" cases enable TopologyAwareScheduling in upstream's
table, but ``SyncAdmittedCondition`` does not read that gate: they are ported as they are.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from builders import workload

from pykueue.api.kueue import Admission, AdmissionCheckState, PodSetAssignment, Workload
from pykueue.api.meta import EPOCH, Condition
from pykueue.core.options import SchedulerOptions
from pykueue.core.workload import transitions

NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
BEFORE = NOW - timedelta(seconds=1)

C = tuple[str, str, str, int]  # (type, status, reason, observedGeneration)


def _cond(ctype: str, status: str, reason: str = "", gen: int = 0, when: datetime = EPOCH) -> Condition:
    return Condition(
        type=ctype, status=status, reason=reason, message="", observed_generation=gen, last_transition_time=when
    )


def _checks(*states: str) -> list[AdmissionCheckState]:
    return [AdmissionCheckState(name=f"check{i + 1}", state=s, last_transition_time=EPOCH) for i, s in enumerate(states)]


PENDING_TOPOLOGY = Admission(
    pod_set_assignments=[PodSetAssignment(name="main", count=1, delayed_topology_request="Pending")]
)

# name, admission, check states, conditions, pastAdmittedTime, want conditions, want change, want admitted time
SYNC_ADMITTED_CASES: list[tuple[str, Admission | None, list[str], list[Condition], int, list[C], bool, int]] = [
    ("empty", None, [], [], 0, [], False, 0),
    (
        "reservation no checks",
        None,
        [],
        [_cond("QuotaReserved", "True")],
        0,
        [("QuotaReserved", "True", "", 0), ("Admitted", "True", "Admitted", 1)],
        True,
        0,
    ),
    (
        "reservation, checks not ready",
        None,
        ["Pending", "Ready"],
        [_cond("QuotaReserved", "True")],
        0,
        [("QuotaReserved", "True", "", 0), ("Admitted", "False", "UnsatisfiedAdmissionChecks", 1)],
        True,
        0,
    ),
    (
        "reservation, checks ready",
        None,
        ["Ready", "Ready"],
        [_cond("QuotaReserved", "True")],
        0,
        [("QuotaReserved", "True", "", 0), ("Admitted", "True", "Admitted", 1)],
        True,
        0,
    ),
    (
        "reservation lost",
        None,
        ["Ready", "Ready"],
        [_cond("Admitted", "True", when=BEFORE)],
        0,
        [("Admitted", "False", "NoReservation", 1)],
        True,
        1,
    ),
    (
        "check lost",
        None,
        ["Ready", "Pending"],
        [_cond("QuotaReserved", "True"), _cond("Admitted", "True", when=BEFORE)],
        0,
        [("QuotaReserved", "True", "", 0), ("Admitted", "False", "UnsatisfiedAdmissionChecks", 1)],
        True,
        1,
    ),
    (
        "reservation and check lost",
        None,
        ["Ready", "Pending"],
        [_cond("Admitted", "True", when=BEFORE)],
        0,
        [("Admitted", "False", "NoReservation", 1)],
        True,
        0,
    ),
    (
        "reservation lost with past admitted time (set)",
        None,
        [],
        [_cond("Admitted", "True", when=BEFORE)],
        0,
        [("Admitted", "False", "NoReservation", 1)],
        True,
        1,
    ),
    (
        "reservation lost with past admitted time (add)",
        None,
        [],
        [_cond("Admitted", "True", when=BEFORE)],
        1,
        [("Admitted", "False", "NoReservation", 1)],
        True,
        2,
    ),
    (
        "pending delayed topology request; flip from Admitted=true",
        PENDING_TOPOLOGY,
        ["Ready"],
        [_cond("Admitted", "True"), _cond("QuotaReserved", "True")],
        0,
        [("Admitted", "False", "PendingDelayedTopologyRequests", 1), ("QuotaReserved", "True", "", 0)],
        True,
        0,
    ),
    (
        "pending delayed topology request; already Admitted=false",
        PENDING_TOPOLOGY,
        ["Ready"],
        [_cond("QuotaReserved", "True"), _cond("Admitted", "False", gen=1)],
        0,
        [("QuotaReserved", "True", "", 0), ("Admitted", "False", "PendingDelayedTopologyRequests", 1)],
        True,
        0,
    ),
    (
        "reservation, checks not ready with observability",
        None,
        ["Pending", "Ready"],
        [_cond("QuotaReserved", "True")],
        0,
        [("QuotaReserved", "True", "", 0), ("Admitted", "False", "UnsatisfiedAdmissionChecks", 1)],
        True,
        0,
    ),
    (
        "reservation lost with observability",
        None,
        ["Ready", "Ready"],
        [_cond("Admitted", "True", when=BEFORE)],
        0,
        [("Admitted", "False", "NoReservation", 1)],
        True,
        1,
    ),
    (
        "check lost with observability",
        None,
        ["Ready", "Pending"],
        [_cond("QuotaReserved", "True"), _cond("Admitted", "True", when=BEFORE)],
        0,
        [("QuotaReserved", "True", "", 0), ("Admitted", "False", "UnsatisfiedAdmissionChecks", 1)],
        True,
        1,
    ),
    (
        "reservation and check lost with observability",
        None,
        ["Ready", "Pending"],
        [_cond("Admitted", "True", when=BEFORE)],
        0,
        [("Admitted", "False", "NoReservation", 1)],
        True,
        0,
    ),
    ("no reservation, no condition initially", None, ["Pending"], [], 0, [], False, 0),
]


def _conds(wl: Workload) -> list[C]:
    return [(c.type, c.status, c.reason, c.observed_generation) for c in wl.status.conditions]


@pytest.mark.parametrize(
    ("name", "admission", "checks", "conds", "past", "want", "want_change", "want_time"),
    SYNC_ADMITTED_CASES,
    ids=[c[0] for c in SYNC_ADMITTED_CASES],
)
def test_sync_admitted_condition(
    name: str,
    admission: Admission | None,
    checks: list[str],
    conds: list[Condition],
    past: int,
    want: list[C],
    want_change: bool,
    want_time: int,
) -> None:
    wl = workload("foo", "bar")
    wl.metadata.generation = 1
    wl.status.admission = admission
    wl.status.admission_checks = _checks(*checks)
    wl.status.conditions = list(conds)
    if past:
        wl.status.accumulated_past_execution_time_seconds = past
    before = _conds(wl)
    transitions.sync_admitted_condition(wl, NOW, SchedulerOptions())
    assert _conds(wl) == want
    assert (_conds(wl) != before) == want_change
    if want_time:
        assert wl.status.accumulated_past_execution_time_seconds == want_time


BASE = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)


def _retry(name: str, when: datetime, after: int | None) -> AdmissionCheckState:
    return AdmissionCheckState(name=name, state="Retry", last_transition_time=when, requeue_after_seconds=after)


# name, check states, want (None: the zero time, "no retry time")
MAX_RETRY_CASES: list[tuple[str, list[AdmissionCheckState], Any]] = [
    ("no admission checks", [], None),
    ("admission check with nil RequeueAfterSeconds", [_retry("check1", BASE, None)], None),
    ("admission check with zero LastTransitionTime", [_retry("check1", EPOCH, 60)], None),
    ("single admission check with valid retry time", [_retry("check1", BASE, 60)], BASE + timedelta(seconds=60)),
    (
        "multiple admission checks, returns max retry time",
        [_retry("check1", BASE, 60), _retry("check2", BASE, 120), _retry("check3", BASE, 30)],
        BASE + timedelta(seconds=120),
    ),
    (
        "multiple checks with mixed nil and valid values",
        [_retry("check1", BASE, None), _retry("check2", BASE, 90), _retry("check3", EPOCH, 180)],
        BASE + timedelta(seconds=90),
    ),
    (
        "checks with different base times",
        [_retry("check1", BASE, 60), _retry("check2", BASE + timedelta(seconds=30), 60)],
        BASE + timedelta(seconds=90),
    ),
]


@pytest.mark.parametrize(("name", "checks", "want"), MAX_RETRY_CASES, ids=[c[0] for c in MAX_RETRY_CASES])
def test_get_max_retry_time(name: str, checks: list[AdmissionCheckState], want: Any) -> None:
    wl = workload("foo", "bar")
    wl.status.admission_checks = checks
    assert transitions.retry_check_requeue_at(wl) == want
