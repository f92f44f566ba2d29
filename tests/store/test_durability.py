"""Durability: an acknowledged write is on stable storage (its WAL frames fsynced) before the call
returns, the HTTP answer is sent or a watcher sees it; concurrent writers share one fsync; the
sync thread starts the fsync at the event loop's first write of a turn and the loop delivers it
while the turn goes on; the loop waits briefly for the sync thread's fsync of its writes while
fsyncs are cheap and does not wait when they are slow or one stalls; a failed fsync refuses further writes; the store's files are private (0600)."""

from __future__ import annotations

import asyncio
import errno
import importlib.util
import json
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pykueue.apiserver.app import APIServerApp
from pykueue.apiserver.handlers import APIRequest
from pykueue.store import ResourceKey, Store
from pykueue.store.errors import InternalError

CM = ResourceKey("", "configmaps", namespaced=True)
LEASES = ResourceKey("coordination.k8s.io", "leases", namespaced=True)


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}


class FsyncRecorder:
    """Wraps os.fsync: records (path, size at the fsync, time) and can delay or fail it."""

    def __init__(self) -> None:
        self.real = os.fsync
        self.calls: list[tuple[str, int]] = []
        self.threads: list[str] = []  # the thread of each WAL fsync
        self.delay = 0.0
        self.fast = False
        """The disk answers at once: the real fsync is skipped (a loaded machine's take ms)."""
        self.gate: threading.Event | None = None
        self.held = threading.Event()
        """Set when a WAL fsync reaches the closed gate."""
        self.fail = False
        self.lock = threading.Lock()

    def __call__(self, fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        if self.gate is not None and path.endswith("-wal"):
            if not self.gate.is_set():
                self.held.set()
            self.gate.wait(10)
        if self.fail and path.endswith("-wal"):
            raise OSError(errno.EIO, "Input/output error")
        if self.delay and path.endswith("-wal"):
            time.sleep(self.delay)
        if not self.fast:
            self.real(fd)
        with self.lock:
            self.calls.append((path, os.fstat(fd).st_size))
            if path.endswith("-wal"):
                self.threads.append(threading.current_thread().name)

    def wal_syncs(self) -> list[int]:
        with self.lock:
            return [size for path, size in self.calls if path.endswith("-wal")]


def _block_until(condition: Callable[[], bool], failure: str) -> None:
    """Poll ``condition`` with short sleeps (on the loop: its turn goes on; the GIL is let go for
    the sync thread) for 10 s at most."""
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, failure
        time.sleep(0.001)


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> Iterator[FsyncRecorder]:
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc/self/fd")
    recorder = FsyncRecorder()
    monkeypatch.setattr(os, "fsync", recorder)
    yield recorder


def test_write_returns_only_after_its_wal_frames_are_fsynced(tmp_path: Path, fsyncs: FsyncRecorder) -> None:
    db = str(tmp_path / "store.db")
    with Store(db) as store:
        for i in range(5):
            before = len(fsyncs.wal_syncs())
            store.create(CM, configmap(f"cm-{i}"))
            wal_size = os.path.getsize(db + "-wal")
            during = fsyncs.wal_syncs()[before:]
            assert during, f"create {i} returned without an fsync of the WAL"
            assert max(during) >= wal_size, "the fsync preceded part of the commit"


def test_concurrent_writers_share_fsyncs(tmp_path: Path, fsyncs: FsyncRecorder) -> None:
    fsyncs.delay = 0.005  # a slow disk: writers committing meanwhile queue for the next fsync
    db = str(tmp_path / "store.db")
    threads, per_thread = 8, 25
    with Store(db) as store:
        start = len(fsyncs.wal_syncs())
        errors: list[BaseException] = []

        def writer(t: int) -> None:
            try:
                for i in range(per_thread):
                    obj = store.create(CM, configmap(f"cm-{t}-{i}"))
                    # acknowledged: its revision is synced and delivered
                    assert store._group is not None
                    assert store._group.synced >= int(obj["metadata"]["resourceVersion"])
            except BaseException as err:  # reported below
                errors.append(err)

        workers = [threading.Thread(target=writer, args=(t,)) for t in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        assert not errors, errors
        writes = threads * per_thread
        syncs = len(fsyncs.wal_syncs()) - start
        assert store.count(CM) == writes
        assert syncs <= writes // 2, f"{syncs} fsyncs for {writes} concurrent writes: not grouped"


def _lease_post(name: str) -> APIRequest:
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name}}
    return APIRequest(
        "POST", "coordination.k8s.io", "v1", "leases", namespace="default", body=json.dumps(lease).encode()
    )


def test_http_answer_and_watch_event_wait_for_the_fsync(tmp_path: Path, fsyncs: FsyncRecorder) -> None:
    """Whichever thread syncs (the loop itself while fsyncs are cheap, or the sync thread), the
    answer and the watch event wait for the fsync: the loop runs on a thread of its own here, so
    a loop blocked in the fsync holds back nothing the test checks."""
    db = str(tmp_path / "store.db")
    store = Store(db)
    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()
    gate = threading.Event()
    try:
        app = APIServerApp(store)
        app.bootstrap()
        watch = store.watch(LEASES)
        fsyncs.gate = gate
        answer = asyncio.run_coroutine_threadsafe(app.handlers.handle_async(_lease_post("held")), loop)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                store.get(LEASES, "default", "held")  # committed ...
                break
            except Exception:
                time.sleep(0.01)
        time.sleep(0.3)
        assert not answer.done(), "answered before the write was durable"  # ... not acknowledged
        assert watch.next(0) is None, "a watcher saw a write that was not durable"
        gate.set()
        assert answer.result(10).status == 201
        assert fsyncs.wal_syncs() and max(fsyncs.wal_syncs()) >= os.path.getsize(db + "-wal")
        event = watch.next(5)
        assert event is not None and event.object["metadata"]["name"] == "held"
    finally:
        fsyncs.gate = None
        gate.set()
        loop.call_soon_threadsafe(loop.stop)
        runner.join(5)
        loop.close()
        store.close()


def test_event_loop_writes_of_one_turn_share_the_sync_threads_fsyncs(
    tmp_path: Path, fsyncs: FsyncRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The requests of one loop turn commit while the sync thread fsyncs: the first write's fsync
    (held here until the turn has committed them all) and at most one more for the rest; the loop
    never fsyncs (a stalled disk would stall it)."""
    from pykueue.store import durability
    from pykueue.store import store as store_module

    monkeypatch.setattr(durability, "INLINE_FSYNC_MAX", 10.0)  # any disk counts as fast here
    monkeypatch.setattr(store_module, "SYNC_AFTER", 60.0)  # one turn, however loaded the machine
    with Store(str(tmp_path / "store.db")) as store:
        app = APIServerApp(store)
        app.bootstrap()
        before = len(fsyncs.threads)
        gate = fsyncs.gate = threading.Event()

        async def post(i: int) -> int:
            answer = await app.handlers.handle_async(_lease_post(f"l-{i}"))
            return answer.status

        async def scenario() -> list[int]:
            tasks = [asyncio.ensure_future(post(i)) for i in range(10)]
            await asyncio.sleep(0)  # one turn: every request commits before its answer waits
            gate.set()
            return list(await asyncio.gather(*tasks))

        try:
            assert asyncio.run(scenario()) == [201] * 10
        finally:
            gate.set()
        threads = fsyncs.threads[before:]
        assert threads and set(threads) == {"pykueue-store-sync"}, f"WAL fsyncs on {threads}: on the sync thread"
        assert len(threads) <= 2, f"{len(threads)} fsyncs for one turn's 10 writes: not shared"


def test_a_long_loop_turn_syncs_and_answers_its_first_writes_before_the_rest(
    tmp_path: Path, fsyncs: FsyncRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A turn of the loop that handles a burst of writes: once it has spent SYNC_AFTER on writes
    whose answers wait, it syncs at once and their callbacks answer them there, before it handles
    the rest of the burst (not at the next turn, after all of it); each answer after its fsync.
    The next mid-turn sync waits twice as long (2 x SYNC_AFTER). The sync thread may answer some
    earlier still (test_the_first_write_of_a_turn_is_synced_and_answered_while_the_turn_goes_on)."""
    from pykueue.store import durability
    from pykueue.store import store as store_module

    monkeypatch.setattr(durability, "INLINE_FSYNC_MAX", 10.0)  # any disk counts as fast here
    now = [0.0]
    monkeypatch.setattr(store_module, "_loop_clock", lambda: now[0])  # the loop's time, stepped here
    log: list[str] = []
    with Store(str(tmp_path / "store.db")) as store:
        group = store._group
        assert group is not None

        def answer(i: int, revision: int) -> Callable[[BaseException | None], None]:
            def callback(error: BaseException | None) -> None:
                assert error is None and group.synced >= revision, "answered before its fsync"
                log.append(f"a{i}")

            return callback

        async def scenario() -> None:
            for i in range(8):  # one turn: no await between the writes
                with store.deferred_acks():
                    obj = store.create(CM, configmap(f"burst-{i}"))
                log.append(f"w{i}")
                callback = answer(i, int(obj["metadata"]["resourceVersion"]))
                if store.when_visible(callback):  # a fsync of the sync thread's covered it already
                    callback(None)
                now[0] += store_module.SYNC_AFTER * 1.2  # the handling of a request
            while len(log) < 16:
                await asyncio.sleep(0.001)

        asyncio.run(scenario())
    at = {entry: n for n, entry in enumerate(log)}
    assert [e for e in log if e.startswith("a")] == [f"a{i}" for i in range(8)], log
    assert all(at[f"a{i}"] > at[f"w{i}"] for i in range(8)), log
    assert at["a1"] < at["w2"], f"the first answers waited past SYNC_AFTER: {log}"
    assert at["a4"] < at["w5"], f"the next answers waited past 2 x SYNC_AFTER: {log}"


def test_a_short_loop_turn_shares_at_most_two_fsyncs(
    tmp_path: Path, fsyncs: FsyncRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes handled within SYNC_AFTER share the fsync their first write started (held here until
    the turn's last write) and the one at the end of the turn (group commit); no answer before
    the fsync that covers it."""
    from pykueue.store import durability
    from pykueue.store import store as store_module

    monkeypatch.setattr(durability, "INLINE_FSYNC_MAX", 10.0)
    monkeypatch.setattr(store_module, "SYNC_AFTER", 60.0)  # whatever the machine's load
    log: list[str] = []
    with Store(str(tmp_path / "store.db")) as store:
        before = len(fsyncs.wal_syncs())
        gate = fsyncs.gate = threading.Event()

        async def scenario() -> None:
            for i in range(10):
                with store.deferred_acks():
                    store.create(CM, configmap(f"short-{i}"))
                log.append(f"wrote {i}")
                assert not store.when_visible(lambda error, i=i: log.append(f"answered {i}"))
            gate.set()
            while len(log) < 20:
                await asyncio.sleep(0.001)

        try:
            asyncio.run(scenario())
        finally:
            gate.set()
        assert log == [f"wrote {i}" for i in range(10)] + [f"answered {i}" for i in range(10)]
        assert 1 <= len(fsyncs.wal_syncs()) - before <= 2


def test_the_first_write_of_a_turn_is_synced_and_answered_while_the_turn_goes_on(
    tmp_path: Path, fsyncs: FsyncRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sync thread starts the fsync at the turn's first write, not at its end, and the turn's
    next request delivers what became durable (its answer, its watch event): an answer waits for
    its fsync, not for the rest of the turn and the loop's next turn."""
    from pykueue.store import durability
    from pykueue.store import store as store_module

    monkeypatch.setattr(durability, "INLINE_FSYNC_MAX", 10.0)
    monkeypatch.setattr(store_module, "SYNC_AFTER", 60.0)  # no mid-turn sync of the loop's own
    log: list[str] = []
    with Store(str(tmp_path / "store.db")) as store:
        group = store._group
        assert group is not None
        store.subscribe(lambda event, key: log.append(f"event {event.object['metadata']['name']}"))

        async def scenario() -> None:
            with store.deferred_acks():
                first = store.create(CM, configmap("first"))
            revision = int(first["metadata"]["resourceVersion"])
            assert not store.when_visible(lambda error: log.append("answered first"))
            _block_until(lambda: group.synced >= revision, "no fsync started before the end of the turn")
            with store.deferred_acks():
                store.create(CM, configmap("second"))
            assert not store.when_visible(lambda error: log.append("answered second"))
            log.append("turn goes on")
            while len(log) < 5:
                await asyncio.sleep(0.001)

        asyncio.run(scenario())
        assert log[:3] == ["event first", "answered first", "turn goes on"], log
        assert log[3:] == ["event second", "answered second"], log


def test_the_loop_waits_through_an_fsync_under_way_that_does_not_cover_its_write(
    tmp_path: Path, fsyncs: FsyncRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An fsync under way that started before the loop's write committed (here a synchronous
    writer's, held) does not cover it: the loop's short wait at the end of the turn takes in the
    rest of it and the next one, and answers there, not at a later turn from the sync thread."""
    from pykueue.store import durability

    monkeypatch.setattr(durability, "INLINE_FSYNC_MAX", 10.0)
    log: list[str] = []
    with Store(str(tmp_path / "store.db")) as store:
        group = store._group
        assert group is not None
        gate = fsyncs.gate = threading.Event()
        writer = threading.Thread(target=store.create, args=(CM, configmap("thread")))
        writer.start()

        def open_the_gate_once_the_loop_waits() -> None:
            deadline = time.monotonic() + 3
            while group._caller_waiting == 0 and time.monotonic() < deadline:
                time.sleep(0.001)
            gate.set()

        opener = threading.Thread(target=open_the_gate_once_the_loop_waits)

        async def scenario() -> None:
            _block_until(group.syncing, "the writer's fsync did not start")  # under way, held
            opener.start()
            with store.deferred_acks():
                store.create(CM, configmap("loop"))
            assert not store.when_visible(lambda error: log.append("answered"))
            asyncio.get_running_loop().call_soon(log.append, "the turn after the sync")
            while len(log) < 2:
                await asyncio.sleep(0.001)

        try:
            asyncio.run(scenario())
        finally:
            gate.set()
            writer.join()
            if opener.is_alive():
                opener.join()
    assert log == ["answered", "the turn after the sync"], log


def test_an_fsync_stalled_past_inline_fsync_max_holds_no_further_wait_of_the_loop(
    tmp_path: Path, fsyncs: FsyncRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stall (a shared disk's 100-800 ms outliers) is learnt by the running average only once it
    ends: meanwhile, a long turn's mid-turn syncs do not each wait INLINE_FSYNC_MAX for it once it
    has lasted that long; the sync thread answers them when it ends. Afterwards the waits resume."""
    from pykueue.store import durability
    from pykueue.store import store as store_module

    limit = 0.3
    monkeypatch.setattr(durability, "INLINE_FSYNC_MAX", limit)
    now = [0.0]
    monkeypatch.setattr(store_module, "_loop_clock", lambda: now[0])  # the loop's time, stepped here
    fsyncs.fast = True  # the disk was fast (the running average stays under the limit) ...
    log: list[str] = []
    with Store(str(tmp_path / "store.db")) as store:
        group = store._group
        assert group is not None
        store.create(CM, configmap("before"))
        assert group.fsync_seconds < limit
        gate = fsyncs.gate = threading.Event()  # ... until this fsync stalls
        writer = threading.Thread(target=store.create, args=(CM, configmap("stalled")))
        writer.start()

        async def scenario() -> float:
            _block_until(group.syncing, "the writer's fsync did not start")
            time.sleep(limit * 1.5)  # the stall has lasted longer than INLINE_FSYNC_MAX
            started = time.monotonic()
            for i in range(8):  # one turn: mid-turn syncs after the 2nd and the 5th write
                with store.deferred_acks():
                    store.create(CM, configmap(f"burst-{i}"))
                assert not store.when_visible(lambda error, i=i: log.append(f"a{i}"))
                now[0] += store_module.SYNC_AFTER * 1.2
            blocked = time.monotonic() - started
            gate.set()
            while len(log) < 8:
                await asyncio.sleep(0.001)
            return blocked

        try:
            blocked = asyncio.run(scenario())
        finally:
            gate.set()
            writer.join()
        time.sleep(limit * 1.5)  # no fsync under way; the last one started long ago: no stall
        with store.deferred_acks():
            store.create(CM, configmap("after"))
        assert group.try_sync(store.revision), "the wait for a fast disk was skipped after the stall"
    assert blocked < limit, f"the loop waited {blocked:.2f} s for a stalled fsync during one turn"
    assert sorted(log) == [f"a{i}" for i in range(8)], log


def test_the_end_of_a_turn_delivers_what_the_first_writes_fsync_covered(
    tmp_path: Path, fsyncs: FsyncRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fsync the turn's first write started ends after the turn's last request: the sync at
    the end of the turn (which does not wait: several answers wait) delivers what it covered,
    not a callback of the sync thread's at a later turn."""
    from pykueue.store import durability
    from pykueue.store import store as store_module

    monkeypatch.setattr(durability, "INLINE_FSYNC_MAX", 10.0)
    monkeypatch.setattr(store_module, "SYNC_AFTER", 60.0)  # no mid-turn sync of the loop's own
    log: list[str] = []
    with Store(str(tmp_path / "store.db")) as store:
        group = store._group
        assert group is not None
        gate = fsyncs.gate = threading.Event()

        async def scenario() -> None:
            with store.deferred_acks():
                first = int(store.create(CM, configmap("first"))["metadata"]["resourceVersion"])
            assert not store.when_visible(lambda error: log.append("answered first"))
            assert fsyncs.held.wait(10), "the first write started no fsync"  # covering only it
            with store.deferred_acks():
                store.create(CM, configmap("second"))
            assert not store.when_visible(lambda error: log.append("answered second"))
            asyncio.get_running_loop().call_soon(log.append, "the turn after the sync")
            gate.set()
            # It ends within the turn; the sync thread's callback comes after the mark.
            _block_until(lambda: group.synced >= first, "the first write's fsync did not end")
            while len(log) < 3:
                await asyncio.sleep(0.001)

        try:
            asyncio.run(scenario())
        finally:
            gate.set()
    assert log == ["answered first", "the turn after the sync", "answered second"], log


def test_only_the_first_write_of_a_turn_asks_the_sync_thread_at_once(
    tmp_path: Path, fsyncs: FsyncRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A turn whose writes leave the sync thread time for several fsyncs (here 1 ms each, 2 ms of
    handling a write): the first write's fsync and the one at the end of the turn, not one per
    write (each round takes the GIL from the loop twice; asked at every write, serve's API
    process spent about 20 % more CPU under a heavy write load)."""
    from pykueue.store import store as store_module

    monkeypatch.setattr(store_module, "SYNC_AFTER", 60.0)  # no mid-turn sync of the loop's own
    fsyncs.fast = True
    fsyncs.delay = 0.001
    log: list[str] = []
    with Store(str(tmp_path / "store.db")) as store:
        before = len(fsyncs.wal_syncs())

        async def scenario() -> None:
            for i in range(20):  # one turn
                with store.deferred_acks():
                    store.create(CM, configmap(f"cm-{i}"))
                if store.when_visible(lambda error, i=i: log.append(f"a{i}")):
                    log.append(f"a{i}")
                time.sleep(0.002)  # the handling of a request (the GIL is let go)
            while len(log) < 20:
                await asyncio.sleep(0.001)

        asyncio.run(scenario())
        syncs = len(fsyncs.wal_syncs()) - before
    assert sorted(log) == sorted(f"a{i}" for i in range(20)), log
    assert 1 <= syncs <= 3, f"{syncs} fsyncs for one turn of 20 writes"


def test_slow_fsyncs_are_left_to_the_sync_thread(tmp_path: Path, fsyncs: FsyncRecorder) -> None:
    """A disk whose fsyncs take longer than INLINE_FSYNC_MAX: the loop goes on serving while the
    sync thread waits for the disk; answers still wait for the fsync."""
    from pykueue.store.durability import INLINE_FSYNC_MAX

    with Store(str(tmp_path / "store.db")) as store:
        app = APIServerApp(store)
        app.bootstrap()
        fsyncs.delay = INLINE_FSYNC_MAX * 5
        gate = threading.Event()

        async def scenario() -> None:
            for i in range(3):  # the running average learns that the disk is slow
                assert (await app.handlers.handle_async(_lease_post(f"warm-{i}"))).status == 201
            assert store._group is not None and store._group.fsync_seconds > INLINE_FSYNC_MAX
            before = len(fsyncs.threads)
            fsyncs.gate = gate
            task = asyncio.ensure_future(app.handlers.handle_async(_lease_post("held")))
            ticks = 0
            for _ in range(20):  # the loop is not blocked by the held fsync
                await asyncio.sleep(0.01)
                ticks += 1
            assert ticks == 20 and not task.done(), "answered before the write was durable"
            gate.set()
            assert (await asyncio.wait_for(task, 10)).status == 201
            assert set(fsyncs.threads[before:]) == {"pykueue-store-sync"}

        try:
            asyncio.run(scenario())
        finally:
            fsyncs.gate = None
            gate.set()


def test_a_stalled_fsync_does_not_stall_the_event_loop(tmp_path: Path, fsyncs: FsyncRecorder) -> None:
    """While fsyncs have been fast, one that stalls (a shared disk's 100-800 ms outliers) holds
    the loop at most INLINE_FSYNC_MAX: the sync thread waits for the disk and the loop goes on
    serving; the answer still waits for the fsync."""
    from pykueue.store.durability import INLINE_FSYNC_MAX

    with Store(str(tmp_path / "store.db")) as store:
        app = APIServerApp(store)
        app.bootstrap()
        gate = threading.Event()
        group = store._group
        assert group is not None

        async def scenario() -> None:
            # A fast disk, learnt from its fsyncs: this machine's real ones took 4-16 ms under
            # load (over INLINE_FSYNC_MAX: the loop would not wait for the sync at all).
            fsyncs.fast = True
            for i in range(50):
                assert (await app.handlers.handle_async(_lease_post(f"fast-{i}"))).status == 201
                if group.fsync_seconds < INLINE_FSYNC_MAX:
                    break
            assert group.fsync_seconds < INLINE_FSYNC_MAX, "the running average did not learn a fast disk"
            fsyncs.gate = gate  # the next WAL fsync stalls until the gate opens (10 s at most)
            task = asyncio.ensure_future(app.handlers.handle_async(_lease_post("stalled")))
            started = time.monotonic()
            for _ in range(20):
                await asyncio.sleep(0.01)
            assert time.monotonic() - started < 5, "the loop was blocked in the stalled fsync"
            assert not task.done(), "answered before the write was durable"
            gate.set()
            assert (await asyncio.wait_for(task, 10)).status == 201

        try:
            asyncio.run(scenario())
        finally:
            fsyncs.gate = None
            gate.set()


def test_background_acks_return_at_commit_and_deliver_only_once_durable(
    tmp_path: Path, fsyncs: FsyncRecorder
) -> None:
    """The embedded controllers' writes (Store.background_acks): the call returns at commit while
    the fsync is held back; watchers still see the change only after it is durable."""
    db = str(tmp_path / "store.db")
    with Store(db) as store:
        watch = store.watch(CM)
        gate = threading.Event()
        fsyncs.gate = gate
        try:
            started = time.monotonic()
            with store.background_acks():
                for i in range(3):
                    store.create(CM, configmap(f"cm-{i}"))
            assert time.monotonic() - started < 5, "a background write waited for the held fsync"
            assert store.get(CM, "default", "cm-2")  # committed and readable ...
            assert watch.next(0.3) is None, "a watcher saw a write that was not durable"  # ... not delivered
            gate.set()
            names = []
            for _ in range(3):
                event = watch.next(5)
                assert event is not None
                names.append(event.object["metadata"]["name"])
            assert names == ["cm-0", "cm-1", "cm-2"]
            assert max(fsyncs.wal_syncs()) >= os.path.getsize(db + "-wal")
        finally:
            fsyncs.gate = None
            gate.set()
        # Outside the context a write waits for its fsync again.
        before = len(fsyncs.wal_syncs())
        store.create(CM, configmap("cm-sync"))
        assert len(fsyncs.wal_syncs()) > before


def test_a_waiter_queued_after_a_failed_fsyncs_sweep_is_answered_with_the_failure(tmp_path: Path) -> None:
    """The sync thread can record a failed fsync and answer every queued waiter between
    :meth:`Store.when_visible`'s failure check and its queueing of a new one: that one must still
    be answered (with the failure), not left waiting for a sync that will never deliver."""
    answers: list[BaseException | None] = []
    with Store(str(tmp_path / "store.db")) as store:
        group = store._group
        assert group is not None
        real = store._waiters_lock

        class SweptFirst:
            """The waiters' lock; the first time it is taken, the fsync fails and the sweep runs."""

            first = True

            def __enter__(self) -> None:
                if SweptFirst.first:
                    SweptFirst.first = False
                    group.failure = OSError(errno.EIO, "Input/output error")
                    store._fail_waiters(group.failure)
                real.__enter__()

            def __exit__(self, *exc: object) -> None:
                real.__exit__(*exc)

        async def scenario() -> None:
            with store.deferred_acks():
                store.create(CM, configmap("late-waiter"))
            store._waiters_lock = SweptFirst()  # type: ignore[assignment]
            assert not store.when_visible(answers.append)
            for _ in range(20):
                await asyncio.sleep(0.005)

        asyncio.run(scenario())
        store._waiters_lock = real
        group.failure = None  # let the store close
    assert len(answers) == 1 and isinstance(answers[0], InternalError), answers
    assert "cannot make writes durable" in str(answers[0])


def test_failed_fsync_refuses_the_write_and_later_ones(tmp_path: Path, fsyncs: FsyncRecorder) -> None:
    with Store(str(tmp_path / "store.db")) as store:
        store.create(CM, configmap("before"))
        fsyncs.fail = True
        with pytest.raises(InternalError, match="cannot make writes durable"):
            store.create(CM, configmap("lost"))
        fsyncs.fail = False  # a retry could "succeed" without the data: still refused
        with pytest.raises(InternalError, match="cannot make writes durable"):
            store.create(CM, configmap("after"))


def _mode(path: str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_store_files_are_private(tmp_path: Path, umask: int) -> None:
    db = str(tmp_path / "store.db")
    old = os.umask(umask)
    try:
        with Store(db) as store:
            store.create(CM, configmap("a"))
            for path in (db, db + "-wal"):
                assert _mode(path) == 0o600, f"{path}: {oct(_mode(path))}"
    finally:
        os.umask(old)


def test_existing_store_files_are_made_private(tmp_path: Path) -> None:
    db = str(tmp_path / "store.db")
    with Store(db) as store:
        store.create(CM, configmap("a"))
    os.chmod(db, 0o644)
    reopen: Callable[[], Store] = lambda: Store(db)  # noqa: E731
    with reopen() as store:
        store.create(CM, configmap("b"))
        assert _mode(db) == 0o600
        assert _mode(db + "-wal") == 0o600


def test_closing_the_store_while_the_loop_writes_leaves_no_answer_waiting(tmp_path: Path) -> None:
    """A close from another thread while the loop writes: every write is answered (durable) or
    refused; none waits for a sync thread that has ended (writes are refused before its last
    round, which then covers every commit)."""
    store = Store(str(tmp_path / "store.db"))
    outcomes: dict[str, int] = {"answered": 0, "refused": 0}

    async def writer(i: int) -> None:
        for n in range(100_000):
            try:
                with store.deferred_acks():
                    store.create(CM, configmap(f"w{i}-{n}"))
                await store.wait_visible()
            except InternalError:
                outcomes["refused"] += 1
                return
            outcomes["answered"] += 1

    async def scenario() -> None:
        tasks = [asyncio.ensure_future(writer(i)) for i in range(10)]
        while outcomes["answered"] < 50:
            await asyncio.sleep(0.01)
        closer = threading.Thread(target=store.close)
        closer.start()
        _, pending = await asyncio.wait(tasks, timeout=20)
        closer.join(20)
        assert not pending, f"{len(pending)} writers still wait for their answer after the close"

    asyncio.run(scenario())
    assert outcomes["refused"] == 10


def test_a_sync_the_loop_waited_for_is_delivered_by_the_loop_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the loop's short wait sees the sync thread's fsync end, the loop delivers; the thread
    does not also post a delivery to it (a wake-up and an empty drain per write)."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)  # an instant disk: the loop's waits see the syncs
    with Store(str(tmp_path / "store.db")) as store:
        group = store._group
        assert group is not None
        counts = {"thread rounds": 0, "thread deliveries": 0, "loop deliveries": 0}
        sync, try_sync, deliver = group.sync, group.try_sync, group._after_sync

        def counting_sync(revision: int) -> bool:
            if threading.current_thread().name == "pykueue-store-sync":
                counts["thread rounds"] += 1
            return sync(revision)

        def counting_try_sync(revision: int, wait: bool = True) -> bool:
            before = group.synced
            synced = try_sync(revision, wait)
            counts["loop deliveries"] += synced and group.synced > before
            return synced

        def counting_deliver() -> None:
            counts["thread deliveries"] += 1
            deliver()

        group.sync, group.try_sync, group._after_sync = counting_sync, counting_try_sync, counting_deliver  # type: ignore[method-assign]

        async def scenario() -> None:
            for n in range(50):
                with store.deferred_acks():
                    store.create(CM, configmap(f"cm-{n}"))
                await store.wait_visible()

        asyncio.run(scenario())
        assert counts["loop deliveries"] >= 1, counts
        # Each round of the sync thread is delivered once: by the loop that waited for it, or by
        # the thread when the loop had stopped waiting.
        assert counts["loop deliveries"] + counts["thread deliveries"] <= counts["thread rounds"], counts


def test_answers_under_loop_and_thread_writers_keep_the_client_visible_order(tmp_path: Path) -> None:
    """Loop writers answering as the API server does (``deferred_acks`` + ``when_visible``) beside
    a synchronous writer thread and a ``background_acks`` one, on a disk whose fsyncs are randomly
    slow (bench/store_answer_order.py's run). The thread's drains release loop waiters through a
    callback posted to the loop, so answers of overlapping requests may leave out of revision
    order (Store._release_waiters says why no client can tell; bench/RESULTS.md counts them).
    What a client can see holds: its own requests are answered in order, each answer only once
    its revision and every one before it is durable and delivered, a read after an answer shows
    the write, and watch events are in revision order. Of these, ``not_durable`` (an answer
    released before its revision and all earlier ones are synced and delivered) and the watch
    order are what can catch a bug here: each loop writer waits for its answer before its next
    request and reads only committed writes, so ``own_order`` and ``read_misses`` are guards that
    stay 0 by construction."""
    spec = importlib.util.spec_from_file_location(
        "store_answer_order", Path(__file__).resolve().parents[2] / "bench" / "store_answer_order.py"
    )
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    result = bench.run(16, loop_writers=20, background_threads=1, sync_threads=1, seconds=1.5, directory=str(tmp_path))
    assert result["answers"] > 100, result
    assert result["not_durable"] == result["own_order"] == result["read_misses"] == 0, result
    assert result["watch_in_order"], result


@pytest.mark.parametrize("busy", [False, True])
def test_the_loop_waits_for_no_fsync_while_requests_wait_for_their_turn(
    tmp_path: Path, fsyncs: FsyncRecorder, busy: bool
) -> None:
    """``Store.loop_busy`` (the API server's dispatcher has requests queued): the loop's syncs
    only ask the sync thread, which delivers; the loop serves the queued requests meanwhile.
    Under a saturating load the loop spent 10.9 % of its time blocked in these waits. With nothing
    queued, the loop still waits for a quick fsync (an answer without a hand-off)."""
    fsyncs.delay = 0.001  # well within INLINE_FSYNC_MAX: the loop would wait for it
    with Store(str(tmp_path / "store.db")) as store:
        store.loop_busy = lambda: busy
        group = store._group
        assert group is not None
        waits: list[bool] = []
        try_sync = group.try_sync

        def recording_try_sync(revision: int, wait: bool = True) -> bool:
            waits.append(wait)
            return try_sync(revision, wait)

        group.try_sync = recording_try_sync  # type: ignore[method-assign]

        async def scenario() -> None:
            for n in range(20):
                with store.deferred_acks():
                    store.create(CM, configmap(f"cm-{n}"))
                await asyncio.wait_for(store.wait_visible(), 10)  # answered either way

        asyncio.run(scenario())
        assert waits, "the loop asked for no sync"
        if busy:
            assert not any(waits), f"the loop waited for an fsync while requests waited: {waits}"
        else:
            assert any(waits), f"the loop never waited for a quick fsync: {waits}"
