"""Pure helpers of ``pykueue.checks``: Kueue's check-state and condition semantics, backoff, queue."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from pykueue.api.kueue import PodSetUpdate, Toleration
from pykueue.checks import states as st
from pykueue.checks.testing import FakeClock
from pykueue.runtime.controller import WorkQueue

T0 = datetime(2025, 1, 1, tzinfo=UTC)
T1 = T0 + timedelta(seconds=30)


def _wl(*states: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "wl"}, "status": {"admissionChecks": [dict(s) for s in states]}}


def test_set_check_state_appends_missing_entry() -> None:
    wl: dict[str, Any] = {"metadata": {"name": "wl"}}
    assert st.set_check_state(wl, "a", st.PENDING, "", T0)
    assert wl["status"]["admissionChecks"] == [
        {"name": "a", "state": "Pending", "lastTransitionTime": "2025-01-01T00:00:00Z", "message": ""}
    ]


def test_set_check_state_moves_transition_time_only_on_state_change() -> None:
    wl = _wl(
        {"name": "a", "state": "Pending", "lastTransitionTime": "2025-01-01T00:00:00Z", "message": "old"}
    )
    # Same state: message overwritten, time kept.
    assert st.set_check_state(wl, "a", st.PENDING, "waiting", T1)
    entry = st.find_check(wl, "a")
    assert entry == {
        "name": "a",
        "state": "Pending",
        "lastTransitionTime": "2025-01-01T00:00:00Z",
        "message": "waiting",
    }
    # Nothing different: no change reported.
    assert not st.set_check_state(wl, "a", st.PENDING, "waiting", T1)
    # New state: time moves.
    assert st.set_check_state(wl, "a", st.RETRY, "later", T1, requeue_after_seconds=60)
    assert st.find_check(wl, "a") == {
        "name": "a",
        "state": "Retry",
        "lastTransitionTime": "2025-01-01T00:00:30Z",
        "message": "later",
        "requeueAfterSeconds": 60,
    }


def test_set_check_state_always_overwrites_updates_and_requeue_but_not_retry_count() -> None:
    wl = _wl(
        {
            "name": "a",
            "state": "Pending",
            "lastTransitionTime": "2025-01-01T00:00:00Z",
            "message": "",
            "requeueAfterSeconds": 5,
            "retryCount": 2,
            "podSetUpdates": [{"name": "main", "labels": {"x": "y"}}],
        }
    )
    assert st.set_check_state(
        wl,
        "a",
        st.READY,
        "ok",
        T1,
        pod_set_updates=[
            PodSetUpdate(
                name="main", annotations={"k": "v"}, tolerations=[Toleration(key="t", operator="Exists")]
            ),
            {"name": "aux", "nodeSelector": {"zone": "a"}, "labels": {}},
        ],
    )
    entry = st.find_check(wl, "a")
    assert entry == {
        "name": "a",
        "state": "Ready",
        "lastTransitionTime": "2025-01-01T00:00:30Z",
        "message": "ok",
        "retryCount": 2,
        "podSetUpdates": [
            {"name": "main", "annotations": {"k": "v"}, "tolerations": [{"key": "t", "operator": "Exists"}]},
            {"name": "aux", "nodeSelector": {"zone": "a"}},
        ],
    }
    # None clears them.
    st.set_check_state(wl, "a", st.READY, "ok", T1)
    entry = st.find_check(wl, "a")
    assert entry is not None and "podSetUpdates" not in entry and "requeueAfterSeconds" not in entry


def test_set_check_state_rejects_unknown_state() -> None:
    with pytest.raises(ValueError):
        st.set_check_state(_wl(), "a", "Maybe", "", T0)


def test_set_condition_follows_set_status_condition() -> None:
    obj: dict[str, Any] = {}
    assert st.set_condition(obj, "Active", "True", "Active", "ok", T0, 1)
    (cond,) = obj["status"]["conditions"]
    assert cond == {
        "type": "Active",
        "status": "True",
        "observedGeneration": 1,
        "lastTransitionTime": "2025-01-01T00:00:00Z",
        "reason": "Active",
        "message": "ok",
    }
    assert not st.set_condition(obj, "Active", "True", "Active", "ok", T1, 1)
    assert st.set_condition(obj, "Active", "True", "Other", "changed", T1, 2)
    assert obj["status"]["conditions"][0]["lastTransitionTime"] == "2025-01-01T00:00:00Z"
    assert obj["status"]["conditions"][0]["observedGeneration"] == 2
    assert st.set_condition(obj, "Active", "False", "Bad", "no", T1, 2)
    assert obj["status"]["conditions"][0]["lastTransitionTime"] == "2025-01-01T00:00:30Z"


def test_requeue_after_seconds_is_floored_backoff() -> None:
    # Defaults 60 s doubling, capped at 1800 s.
    assert [st.requeue_after_seconds(n) for n in range(7)] == [60, 120, 240, 480, 960, 1800, 1800]
    assert st.requeue_after_seconds(None) == 60
    # The cap applies to the next duration: d1 = base even when base > cap.
    assert st.requeue_after_seconds(0, base=100, cap=50) == 100
    assert st.requeue_after_seconds(1, base=100, cap=50) == 50
    assert st.requeue_after_seconds(1, base=1.5, cap=10) == 3
    assert st.requeue_after_seconds(0, base=1.5, cap=10) == 1


def test_state_change_note() -> None:
    assert (
        st.state_change_note("c", "Pending", "Ready", "")
        == "Admission check c updated state from Pending to Ready"
    )
    assert (
        st.state_change_note("c", "Pending", "Retry", "m")
        == "Admission check c updated state from Pending to Retry with message: m"
    )
    assert len(st.state_change_note("c", "a", "b", "x" * 5000).encode()) == 1024


def test_workload_predicates() -> None:
    wl: dict[str, Any] = {"spec": {}, "status": {}}
    assert st.is_active(wl) and not st.has_quota_reservation(wl)
    st.set_condition(wl, "QuotaReserved", "True", "r", "", T0)
    st.set_condition(wl, "Evicted", "False", "r", "", T0)
    assert st.has_quota_reservation(wl) and not st.is_evicted(wl)
    wl["spec"]["active"] = False
    assert not st.is_active(wl)


# --- the work queue -------------------------------------------------------------------------------


def test_work_queue_deduplicates_and_delays_on_the_clock() -> None:
    clock = FakeClock()
    q = WorkQueue(clock, poll_interval=0.01)
    q.add(("k", "", "a"))
    q.add(("k", "", "a"))
    q.add_after(("k", "", "b"), 10)
    assert q.get() == ("k", "", "a")
    q.done(("k", "", "a"))
    got: list[Any] = []
    t = threading.Thread(target=lambda: got.append(q.get()))
    t.start()
    t.join(0.2)
    assert got == []  # b is not due yet
    clock.advance(10)
    t.join(2)
    assert got == [("k", "", "b")]
    q.done(("k", "", "b"))
    assert q.idle()
    q.shut_down()
    assert q.get() is None


def test_work_queue_requeues_key_added_while_processing() -> None:
    q = WorkQueue(FakeClock(), poll_interval=0.01)
    key = ("k", "ns", "a")
    q.add(key)
    assert q.get() == key
    q.add(key)  # while processing: remembered, not handed out twice
    assert not q.idle()
    q.done(key)
    assert q.get() == key
    q.done(key)
    assert q.idle()


def test_work_queue_earliest_delay_wins() -> None:
    clock = FakeClock()
    q = WorkQueue(clock, poll_interval=0.01)
    key = ("k", "", "a")
    q.add_after(key, 100)
    q.add_after(key, 5)
    q.add_after(key, 50)
    assert q.delayed() == {key: clock() + timedelta(seconds=5)}
