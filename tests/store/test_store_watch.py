"""Watches: live delivery, replay from a revision, Expired, selectors, initial state, async, subscribers."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest
from storetesting import CM, CQ, WL, check_invariants, cm, cq, open_store, wl

from pykueue.store import Expired, Store, Watch, WatchEvent


@pytest.fixture
def store() -> Store:
    return open_store()


def drain(watch: Watch) -> list[WatchEvent]:
    out = []
    while (event := watch.next(0)) is not None:
        out.append(event)
    return out


def summary(events: list[WatchEvent]) -> list[tuple[str, str, int]]:
    return [(e.type, e.object["metadata"]["name"], e.revision) for e in events]


def test_live_events(store: Store) -> None:
    watch = store.watch(CQ)
    a = store.create(CQ, cq("a"))
    store.create(WL, wl("other"))
    store.update(CQ, dict(a, spec={"cohort": "x"}))
    store.delete(CQ, None, "a")
    events = drain(watch)
    assert summary(events) == [("ADDED", "a", 1), ("MODIFIED", "a", 3), ("DELETED", "a", 4)]
    assert all(e.object["metadata"]["resourceVersion"] == str(e.revision) for e in events)
    assert events[0].key == CQ
    assert events[2].object["spec"] == {"cohort": "x"}, "DELETED carries the last state"


def test_namespace_and_all_resource_watches(store: Store) -> None:
    in_ns = store.watch(WL, "a")
    everything = store.watch(None)
    everything_in_a = store.watch(None, "a")
    store.create(WL, wl("x", "a"))
    store.create(WL, wl("x", "ab"))
    store.create(CM, cm("c", "a"))
    store.create(CQ, cq("q"))
    assert summary(drain(in_ns)) == [("ADDED", "x", 1)]
    assert [e.revision for e in drain(everything)] == [1, 2, 3, 4]
    assert [(e.key.resource if e.key else "", e.revision) for e in drain(everything_in_a)] == [
        ("workloads", 1),
        ("configmaps", 3),
    ]


def test_cluster_scoped_watch_ignores_namespace(store: Store) -> None:
    watch = store.watch(CQ, "some-namespace")
    store.create(CQ, cq("a"))
    assert summary(drain(watch)) == [("ADDED", "a", 1)]


def test_replay_then_live(store: Store) -> None:
    store.create(CQ, cq("a"))
    b = store.create(CQ, cq("b"))
    store.update(CQ, dict(b, spec={"x": 1}))
    watch = store.watch(CQ, since=1)
    store.create(CQ, cq("c"))
    assert summary(drain(watch)) == [("ADDED", "b", 2), ("MODIFIED", "b", 3), ("ADDED", "c", 4)]
    assert summary(drain(store.watch(CQ, since=0)))[:1] == [("ADDED", "a", 1)]
    assert drain(store.watch(CQ, since=4)) == []
    future = store.watch(CQ, since=10)
    for name in "defghijk":
        store.create(CQ, cq(name))
    assert summary(drain(future)) == [("ADDED", "j", 11), ("ADDED", "k", 12)]


def test_replay_spans_many_pages(store: Store) -> None:
    for i in range(1300):
        store.create(CM, cm(f"c{i}"))
    watch = store.watch(CM, since=0)
    store.create(CM, cm("live"))
    revisions = [e.revision for e in drain(watch)]
    assert revisions == list(range(1, 1302))


def test_too_old_revision_is_expired(tmp_path: Path) -> None:
    path = str(tmp_path / "db.sqlite")
    store = open_store(path, history=10)
    for i in range(30):
        store.create(CQ, cq(f"c{i}"))
    floor = store.oldest_revision
    assert 20 <= floor <= 21
    with pytest.raises(Expired) as err:
        store.watch(CQ, since=floor - 2)
    assert err.value.message == f"too old resource version: {floor - 2} ({floor - 1})"
    assert err.value.code == 410
    assert [e.revision for e in drain(store.watch(CQ, since=floor - 1))] == list(range(floor, 31))
    store.close()
    check_invariants(path)


def test_history_pruned_during_replay_expires_the_watch() -> None:
    store = open_store(history=600)
    for i in range(600):
        store.create(CM, cm(f"c{i}"))
    watch = store.watch(CM, since=0)
    assert watch.next(0) is not None  # first replay page fetched
    for i in range(700):
        store.create(CM, cm(f"d{i}"))
    with pytest.raises(Expired, match="too old resource version"):
        while watch.next(0) is not None:
            pass


def test_label_selector_watch_transitions(store: Store) -> None:
    obj = store.create(WL, wl("w", labels={"team": "a"}))
    watch = store.watch(WL, label_selector="team=a", since=0)
    moved = store.update(WL, dict(obj, metadata=dict(obj["metadata"], labels={"team": "b"})))
    back = store.update(WL, dict(moved, metadata=dict(moved["metadata"], labels={"team": "a"})))
    store.update(WL, dict(back, spec={"queueName": "z"}))
    store.create(WL, wl("other", labels={"team": "b"}))
    store.delete(WL, "default", "w")
    events = drain(watch)
    assert summary(events) == [
        ("ADDED", "w", 1),
        ("DELETED", "w", 2),  # stopped matching: its previous state with the event's revision
        ("ADDED", "w", 3),
        ("MODIFIED", "w", 4),
        ("DELETED", "w", 6),
    ]
    assert events[1].object["metadata"]["labels"] == {"team": "a"}
    assert events[1].object["metadata"]["resourceVersion"] == "2"
    # the same through replay (previous states come from the change log)
    assert summary(drain(store.watch(WL, label_selector="team=a", since=0))) == summary(events)


def test_field_selector_watch(store: Store) -> None:
    watch = store.watch(CQ, field_selector=lambda o: o["metadata"]["name"] == "b")
    store.create(CQ, cq("a"))
    store.create(CQ, cq("b"))
    assert summary(drain(watch)) == [("ADDED", "b", 2)]


def test_initial_events(store: Store) -> None:
    store.create(WL, wl("b", labels={"x": "1"}))
    store.create(WL, wl("a"))
    store.create(CQ, cq("q"))
    watch = store.watch(WL, initial_events=True, since=1)
    assert watch.progress_revision() == 0
    first = drain(watch)
    assert [(e.type, e.object["metadata"]["name"], e.revision) for e in first] == [
        ("ADDED", "a", 2),
        ("ADDED", "b", 1),
    ]
    assert watch.progress_revision() == 3
    store.create(WL, wl("c"))
    assert summary(drain(watch)) == [("ADDED", "c", 4)]
    selected = store.watch(WL, initial_events=True, label_selector="x")
    assert summary(drain(selected)) == [("ADDED", "b", 1)]


def test_progress_revision(store: Store) -> None:
    store.create(CQ, cq("a"))
    watch = store.watch(WL)
    assert watch.progress_revision() == 1
    store.create(CQ, cq("b"))
    assert watch.progress_revision() == 2, "idle: everything delivered counts"
    store.create(WL, wl("w"))
    assert watch.progress_revision() == 2, "an undelivered event holds progress back"
    watch.next(0)
    assert watch.progress_revision() == 3


def test_next_timeout_and_close_from_another_thread(store: Store) -> None:
    watch = store.watch(CQ)
    started = time.monotonic()
    assert watch.next(0.05) is None
    assert time.monotonic() - started >= 0.04
    results: list[object] = []
    thread = threading.Thread(target=lambda: results.append(watch.next()))
    thread.start()
    time.sleep(0.05)
    watch.close()
    thread.join(2)
    assert results == [None] and watch.closed
    store.create(CQ, cq("a"))
    assert watch.next(0) is None


def test_blocking_next_wakes_on_write(store: Store) -> None:
    watch = store.watch(CQ)
    got: list[WatchEvent | None] = []
    thread = threading.Thread(target=lambda: got.append(watch.next(5)))
    thread.start()
    time.sleep(0.05)
    store.create(CQ, cq("a"))
    thread.join(5)
    assert got and got[0] is not None and got[0].revision == 1


def test_iteration_ends_when_closed(store: Store) -> None:
    with store.watch(CQ) as watch:
        store.create(CQ, cq("a"))
        store.create(CQ, cq("b"))
        seen = []
        for event in watch:
            seen.append(event.object["metadata"]["name"])
            if len(seen) == 2:
                watch.close()
    assert seen == ["a", "b"]


def test_store_close_closes_watches() -> None:
    store = open_store()
    watch = store.watch(None)
    store.close()
    assert watch.closed and watch.next() is None


def test_async_watch(store: Store) -> None:
    async def scenario() -> list[str]:
        watch = store.watch(CQ)
        assert await watch.next_async(0.01) is None

        def writer() -> None:
            time.sleep(0.05)
            store.create(CQ, cq("a"))
            store.create(CQ, cq("b"))
            time.sleep(0.05)
            watch.close()

        thread = threading.Thread(target=writer)
        thread.start()
        seen = [event.object["metadata"]["name"] async for event in watch]
        thread.join()
        return seen

    assert asyncio.run(scenario()) == ["a", "b"]


def test_events_are_private_copies(store: Store) -> None:
    first, second = store.watch(CQ), store.watch(CQ)
    store.create(CQ, cq("a"))
    event = first.next(0)
    assert event is not None
    event.object["spec"]["mutated"] = True
    other = second.next(0)
    assert other is not None and "mutated" not in other.object["spec"]


def test_slow_watch_overflows() -> None:
    store = open_store(watch_queue_limit=3)
    watch = store.watch(CQ)
    for i in range(5):
        store.create(CQ, cq(f"c{i}"))
    assert watch.overflowed and watch.closed
    assert watch.next(0) is None


def test_subscribers(store: Store) -> None:
    seen: list[tuple[str, str, int]] = []

    def callback(event: WatchEvent, key: object) -> None:
        seen.append((event.type, event.object["metadata"]["name"], event.revision))
        if event.object["metadata"]["name"] == "a" and event.type == "ADDED":
            store.create(CQ, cq("from-callback"))  # a write from a callback is delivered after this event

    def failing(event: WatchEvent, key: object) -> None:
        raise RuntimeError("ignored")

    store.subscribe(failing)
    unsubscribe = store.subscribe(callback)
    store.create(CQ, cq("a"))
    store.create(CQ, cq("b"))
    unsubscribe()
    store.create(CQ, cq("c"))
    assert seen == [("ADDED", "a", 1), ("ADDED", "from-callback", 2), ("ADDED", "b", 3)]


def test_watch_started_during_concurrent_writes_sees_every_revision_once(store: Store) -> None:
    done = threading.Event()

    def writer(prefix: str) -> None:
        for i in range(300):
            store.create(CM, cm(f"{prefix}{i}"))

    threads = [threading.Thread(target=writer, args=(p,)) for p in "xyz"]
    for thread in threads:
        thread.start()
    time.sleep(0.01)
    since = store.revision
    replaying = store.watch(None, since=since // 2)
    live = store.watch(None)
    for thread in threads:
        thread.join()
    done.set()
    end = store.revision
    replayed = [e.revision for e in drain(replaying)]
    assert replayed == list(range(since // 2 + 1, end + 1))
    lived = [e.revision for e in drain(live)]
    assert lived == list(range(lived[0], end + 1)) if lived else True
