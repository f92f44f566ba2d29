"""The one event recorder: client-go's correlation, for both Event APIs, off the caller's thread."""

from __future__ import annotations

import threading
import time
from typing import Any

from pykueue.checks.testing import FakeClock, embedded_client
from pykueue.client.interface import Client, Resource
from pykueue.runtime.recorder import CORE_V1, EVENTS_V1, NORMAL, WARNING, EventRecorder, object_reference

NS = "default"
JOB = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": NS, "uid": "u1"}}
WORKLOAD = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "wl", "namespace": NS, "uid": "w1", "resourceVersion": "7"}}  # fmt: skip


def _events(client: Client, api: Resource) -> list[dict[str, Any]]:
    return client.list(api, NS)[0]


def test_core_v1_identical_events_count_on_one_event() -> None:
    """EventLogger: a repeat bumps count and lastTimestamp of the Event already written."""
    client, clock = embedded_client(), FakeClock()
    rec = EventRecorder(client, "kueue-admission", clock, api=CORE_V1, instance="pykueue")
    rec.event(JOB, NORMAL, "Started", "started")
    assert rec.flush()
    clock.advance(5)
    rec.event(JOB, NORMAL, "Started", "started")
    rec.event(JOB, WARNING, "Failed", "boom")
    assert rec.flush()
    started = [e for e in _events(client, CORE_V1) if e["reason"] == "Started"]
    assert len(started) == 1
    ev = started[0]
    assert (ev["count"], ev["firstTimestamp"], ev["lastTimestamp"]) == (2, "2025-01-01T00:00:00Z", "2025-01-01T00:00:05Z")
    assert ev["involvedObject"]["uid"] == "u1"
    assert (ev["source"], ev["reportingComponent"], ev["reportingInstance"]) == (
        {"component": "kueue-admission"}, "kueue-admission", "pykueue"
    )
    assert "action" not in ev  # tools/record sets none unless asked
    assert [e["reason"] for e in _events(client, CORE_V1) if e["reason"] == "Failed"] == ["Failed"]


def test_core_v1_repeats_within_one_batch_are_one_write_with_the_final_count() -> None:
    client = embedded_client()
    rec = EventRecorder(client, "c", FakeClock(), api=CORE_V1)
    for _ in range(5):
        rec.event(JOB, NORMAL, "Tick", "tick")
    assert rec.flush()
    [ev] = _events(client, CORE_V1)
    assert ev["count"] == 5


def test_core_v1_many_messages_about_one_object_are_combined() -> None:
    """EventAggregator: from the 10th distinct message in 10 minutes, one combined Event counts them."""
    client = embedded_client()
    rec = EventRecorder(client, "c", FakeClock(), api=CORE_V1)
    for i in range(12):
        rec.event(JOB, WARNING, "Retry", f"attempt {i}")
        assert rec.flush()
    events = _events(client, CORE_V1)
    combined = [e for e in events if e["message"].startswith("(combined from similar events): ")]
    assert len(events) == 10  # nine distinct messages, then one combined Event
    assert len(combined) == 1
    assert combined[0]["count"] == 3
    assert combined[0]["message"] == "(combined from similar events): attempt 11"


def test_events_v1_isomorphic_events_become_a_series() -> None:
    """tools/events: the same action, reason, controller and regarding grow an EventSeries."""
    client, clock = embedded_client(), FakeClock()
    rec = EventRecorder(client, "example.com/check", clock)
    wl = WORKLOAD
    rec.event(wl, NORMAL, "AdmissionCheckUpdated", "first")
    assert rec.flush()
    clock.advance(1)
    rec.event(wl, NORMAL, "AdmissionCheckUpdated", "second note, same key")
    assert rec.flush()
    [ev] = _events(client, EVENTS_V1)
    assert ev["note"] == "first"
    assert ev["series"]["count"] == 2
    assert ev["regarding"] == {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "name": "wl",
                               "namespace": NS, "uid": "w1", "resourceVersion": "7"}
    assert (ev["action"], ev["reportingController"]) == ("AdmissionCheckUpdated", "example.com/check")
    # Another version of the object is another key (the reference includes resourceVersion).
    rec.event({**wl, "metadata": {**wl["metadata"], "resourceVersion": "8"}}, NORMAL, "AdmissionCheckUpdated", "x")
    assert rec.flush()
    assert len(_events(client, EVENTS_V1)) == 2


def test_events_v1_a_series_is_written_at_its_second_event_then_by_the_sweeps() -> None:
    """tools/events ``recordToSink``: the second occurrence writes ``series.count`` 2, later ones
    only count; ``refreshExistingEventSeries`` (every 30 min) writes the count, ``finishSeries``
    (every 6 min) writes a series idle for 6 min one last time and forgets it, so the next
    occurrence is a new Event."""
    client, clock = embedded_client(), FakeClock()
    rec = EventRecorder(client, "kueue-admission", clock)

    def series() -> list[tuple[str, int | None]]:
        return sorted((e["note"], (e.get("series") or {}).get("count")) for e in _events(client, EVENTS_V1))

    for i in range(4):  # one batch: the create carries the second occurrence's count
        rec.event(WORKLOAD, NORMAL, "Pending", f"try {i}")
    assert rec.flush()
    assert series() == [("try 0", 2)]
    rec.event(WORKLOAD, NORMAL, "Other", "first")
    assert rec.flush()
    clock.advance(60)
    rec.event(WORKLOAD, NORMAL, "Other", "second")  # the second occurrence: written
    rec.event(WORKLOAD, NORMAL, "Pending", "try 4")  # the fifth: counted in memory only
    assert rec.flush()
    assert series() == [("first", 2), ("try 0", 2)]
    clock.advance(6 * 60 - 30)  # the first finish sweep is due; both series were seen 5.5 min ago
    rec.event(WORKLOAD, NORMAL, "Pending", "try 5")  # still in the cache: counted
    assert rec.flush()
    assert series() == [("first", 2), ("try 0", 2)]
    clock.advance(6 * 60 + 1)  # the next finish: Other idle for over 6 min, Pending for 6 min 1 s
    rec.event(WORKLOAD, NORMAL, "Other", "again")
    assert rec.flush()
    # Both finished with their final counts; the next Other is a new Event.
    assert series() == [("again", None), ("first", 2), ("try 0", 6)]
    rec.event(WORKLOAD, NORMAL, "Other", "and again")  # the new Event's second occurrence
    for _ in range(3):
        rec.event(WORKLOAD, NORMAL, "Other", "counted only")
    assert rec.flush()
    assert series() == [("again", 2), ("first", 2), ("try 0", 6)]
    for _ in range(4):  # seen every 4 min: the finish sweeps keep it; the count stays in memory
        clock.advance(4 * 60)
        rec.event(WORKLOAD, NORMAL, "Other", "counted only")
        assert rec.flush()
        assert series() == [("again", 2), ("first", 2), ("try 0", 6)]
    clock.advance(2 * 60)  # 30 min 31 s after the start: the refresh writes the count
    assert rec.flush()  # the marker wakes the sender, which sweeps before its batch
    assert series() == [("again", 9), ("first", 2), ("try 0", 6)]


def test_events_v1_another_reporting_controller_is_another_key_and_instance() -> None:
    """Upstream's components each record through their own ``mgr.GetEventRecorder(name)``: an
    event recorded for another controller is reported by it, from ``<controller>-<hostname>``
    (client-go ``NewRecorder``), and is not isomorphic to the same reason from this recorder's."""
    import socket

    client, clock = embedded_client(), FakeClock()
    rec = EventRecorder(client, "kueue-admission", clock, instance="kueue-admission-host")
    wl = WORKLOAD
    rec.event(wl, NORMAL, "Admitted", "by the scheduler")
    assert rec.flush()
    rec.record(object_reference(wl), NORMAL, "Admitted", "by the workload controller",
               controller="kueue-workload-controller")  # fmt: skip
    assert rec.flush()
    got = sorted((e["reportingController"], e["reportingInstance"], e["note"]) for e in _events(client, EVENTS_V1))
    assert got == [
        ("kueue-admission", "kueue-admission-host", "by the scheduler"),
        ("kueue-workload-controller", f"kueue-workload-controller-{socket.gethostname()}"[:128],
         "by the workload controller"),
    ]  # fmt: skip


def test_events_v1_a_normal_and_a_warning_of_one_reason_are_two_events() -> None:
    """``getKey`` includes the event type."""
    client, clock = embedded_client(), FakeClock()
    rec = EventRecorder(client, "kueue-admission", clock)
    wl = WORKLOAD
    rec.event(wl, NORMAL, "Probe", "normal")
    rec.event(wl, WARNING, "Probe", "warning")
    assert rec.flush()
    assert sorted((e["type"], e["note"]) for e in _events(client, EVENTS_V1)) == [
        ("Normal", "normal"), ("Warning", "warning")
    ]


class _SlowClient:
    """The API server's client, with creates held until released (a slow API server)."""

    def __init__(self, inner: Client) -> None:
        self.inner = inner
        self.release = threading.Event()

    def create(self, res: Resource, obj: dict[str, Any]) -> dict[str, Any]:
        self.release.wait(10)
        return self.inner.create(res, obj)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _sender_blocked(api: Resource) -> tuple[Client, _SlowClient, EventRecorder]:
    """A recorder on a slow API whose sender has taken a first event and waits for ``release``."""
    inner = embedded_client()
    slow = _SlowClient(inner)
    rec = EventRecorder(slow, "c", FakeClock(), api=api)  # type: ignore[arg-type]
    rec.event(JOB, NORMAL, "First", "the sender takes it and blocks")
    deadline = time.monotonic() + 5
    while rec._queue.qsize() and time.monotonic() < deadline:
        time.sleep(0.01)
    return inner, slow, rec


def test_a_slow_api_never_stalls_the_caller() -> None:
    inner = embedded_client()
    slow = _SlowClient(inner)
    rec = EventRecorder(slow, "c", FakeClock(), api=CORE_V1)  # type: ignore[arg-type]
    started = time.monotonic()
    for i in range(50):
        rec.event(JOB, NORMAL, "Tick", f"tick {i}")
    # Queued, not written: a caller that waited for the held create would wait its 10 s.
    assert time.monotonic() - started < 5
    assert _events(inner, CORE_V1) == []
    slow.release.set()
    assert rec.flush()
    assert len(_events(inner, CORE_V1)) == 10  # 9 distinct + the combined one


def test_core_v1_a_full_queue_drops_events_with_one_warning_per_interval(caplog: Any) -> None:
    # tools/record drops an event when the broadcaster's queue of 1,000 is full (ActionOrDrop) and
    # logs each; with a saturated API that was thousands of lines, written on the recording
    # (scheduler's) thread. Now the drops between two warnings are counted.
    _, slow, rec = _sender_blocked(CORE_V1)
    with caplog.at_level("WARNING", logger="pykueue.runtime.recorder"):
        for i in range(1000 + 300):  # the queue holds 1,000
            rec.event(JOB, NORMAL, f"Tick{i}", "tick")
    drops = [r.getMessage() for r in caplog.records if "event queue full" in r.getMessage()]
    assert len(drops) == 1 and "(1 dropped since the last such warning)" in drops[0]
    slow.release.set()
    assert rec.flush()


def test_events_v1_a_slow_api_delays_events_but_drops_none(caplog: Any) -> None:
    # tools/events never drops: generateEvent hands each event to the broadcaster from a goroutine
    # that waits while its queue is full, and recordToSink sends each from a goroutine that waits
    # for the client's rate limiter. Kueue's QuotaReserved and Admitted Events of a busy scheduler
    # arrive late, not never (our queue of 1,000 used to drop about half of a baseline run's).
    inner, slow, rec = _sender_blocked(EVENTS_V1)
    started = time.monotonic()
    with caplog.at_level("WARNING", logger="pykueue.runtime.recorder"):
        for i in range(1000 + 300):
            rec.event(JOB, NORMAL, f"Tick{i}", "tick")
    assert time.monotonic() - started < 5  # queued, never waited for
    assert not [r for r in caplog.records if "event queue full" in r.getMessage()]
    slow.release.set()
    assert rec.flush(60)
    assert sorted(e["reason"] for e in _events(inner, EVENTS_V1)) == sorted(["First"] + [f"Tick{i}" for i in range(1300)])
