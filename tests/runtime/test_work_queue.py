"""The one work queue: de-duplication, delayed adds and per-key failure backoff on an injected clock."""

from __future__ import annotations

from pykueue.checks.testing import FakeClock
from pykueue.runtime.controller import WorkQueue


def test_a_failing_key_backs_off_alone_and_forget_resets_it() -> None:
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(clock, base_backoff=1.0, max_backoff=4.0)
    for key in ("a", "b", "c"):
        q.add(key)
    batch = q.take_ready()
    assert batch == ["a", "b", "c"]
    assert q.add_rate_limited("a") == 1.0  # a failed; b and c succeeded
    for key in batch:
        if key != "a":
            q.forget(key)
        q.done(key)
    assert q.take_ready() == []
    clock.advance(1)
    assert q.take_ready() == ["a"]
    assert q.add_rate_limited("a") == 2.0
    q.done("a")
    assert q.add_rate_limited("a") == 4.0
    assert q.add_rate_limited("a") == 4.0  # capped
    q.forget("a")
    assert q.add_rate_limited("a") == 1.0


def test_a_key_added_while_processing_is_processed_again_afterwards() -> None:
    q: WorkQueue[str] = WorkQueue(FakeClock())
    q.add("a")
    assert q.take_ready() == ["a"]
    q.add("a")  # e.g. our own write marked it again
    assert q.take_ready() == []
    assert q.has_ready()
    q.done("a")
    assert q.take_ready() == ["a"]


def test_add_after_earliest_wins_and_next_due_is_on_the_clock() -> None:
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(clock)
    q.add_after("a", 10)
    q.add_after("a", 3)
    q.add_after("a", 5)
    assert q.next_due_seconds() == 3
    clock.advance(3)
    assert q.take_ready() == ["a"]
    assert q.next_due_seconds() is None


def test_fired_by_timer_tells_a_due_delayed_add_from_a_direct_one() -> None:
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(clock)
    q.add_after("t", 2)
    q.add("w")
    clock.advance(2)
    keys = q.take_ready()
    assert sorted(keys) == ["t", "w"]
    assert q.fired_by_timer("t") and not q.fired_by_timer("w")
    for key in keys:
        q.done(key)
    assert not q.fired_by_timer("t")  # forgotten once processed
    q.add_after("t", 1)
    clock.advance(1)
    q.add("t")  # a watch event before it was taken: the direct add is the cause
    assert q.take_ready() == ["t"]
    assert not q.fired_by_timer("t")
