"""Concurrent writers: unique ordered revisions, optimistic concurrency, ordered delivery."""

from __future__ import annotations

import threading
from pathlib import Path

from storetesting import CM, CQ, check_invariants, cm, cq, open_store

from pykueue.store import Conflict, WatchEvent


def test_concurrent_writers_get_unique_ordered_revisions(tmp_path: Path) -> None:
    path = str(tmp_path / "db.sqlite")
    store = open_store(path)
    store.create(CQ, dict(cq("counter"), spec={"value": 0}))
    delivered: list[int] = []
    store.subscribe(lambda event, key: delivered.append(event.revision))
    watch = store.watch(None)
    acknowledged: list[int] = []
    conflicts = 0
    lock = threading.Lock()

    def worker(worker_id: int) -> None:
        nonlocal conflicts
        mine: list[int] = []
        for i in range(40):
            mine.append(int(store.create(CM, cm(f"w{worker_id}-{i}"))["metadata"]["resourceVersion"]))
            while True:  # read-modify-write of a shared object
                counter = store.get(CQ, None, "counter")
                counter["spec"]["value"] += 1
                try:
                    mine.append(int(store.update(CQ, counter)["metadata"]["resourceVersion"]))
                    break
                except Conflict:
                    with lock:
                        conflicts += 1
        with lock:
            acknowledged.extend(mine)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    total = 6 * 40 * 2
    assert sorted(acknowledged) == list(range(2, total + 2)), "every write its own revision, no gaps"
    assert store.revision == total + 1
    assert store.get(CQ, None, "counter")["spec"]["value"] == 6 * 40, "no lost update"
    assert delivered == list(range(2, total + 2)), "subscribers see revision order"
    events: list[WatchEvent] = []
    while (event := watch.next(0)) is not None:
        events.append(event)
    assert [e.revision for e in events] == list(range(2, total + 2))
    assert store.count(CM) == 240
    store.close()
    check_invariants(path)
    assert conflicts >= 0
