"""Answer order of the store's event-loop writers beside writer threads (issue 16 loose end 3).

Usage: python bench/store_answer_order.py [--runs 10] [--seconds 3] [--sync-threads 0|1|2|random]

Each run opens a real on-disk Store (fresh directory) with ``os.fsync`` randomly slow (1 in 5
takes 2-30 ms more) and runs, for ``--seconds``: 10-40 loop writers (one uvloop, each answering as
the API server does: ``deferred_acks`` + ``when_visible``, then a read of what it wrote), 1-3
``background_acks`` writer threads (the embedded controllers) and 0-2 synchronous writer threads
(the writer count per run is drawn from the run's seed). It reports per run:

* ``inversions``: answers given after an answer of a higher revision (overlapping requests);
* ``after_later_events``: answers given once watch events of later revisions were delivered;
* ``not_durable`` (answers before their revision and every earlier one was durable and
  delivered), ``own_order`` (a writer's answers out of its request order), ``read_misses`` (a
  read after the answer not showing the write), ``watch_in_order`` (a watch's events, up to the
  last write): the rules a client can see; they must be 0, 0, 0 and True.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import random
import tempfile
import threading
import time
from typing import Any

import uvloop

from pykueue.store import ResourceKey, Store

CM = ResourceKey("", "configmaps", namespaced=True)


def _configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}


def run(
    seed: int, loop_writers: int, background_threads: int, sync_threads: int, seconds: float, directory: str | None = None
) -> dict[str, Any]:
    """One run (see the module docstring) in ``directory`` (a fresh temporary one by default); its
    figures. tests/store/test_durability.py runs it and checks the client-visible rules."""
    rnd = random.Random(seed)
    real_fsync = os.fsync
    lock = threading.Lock()

    def slow_sometimes(fd: int) -> None:
        with lock:
            delay = rnd.uniform(0.002, 0.03) if rnd.random() < 0.2 else 0.0
        time.sleep(delay)
        real_fsync(fd)

    os.fsync = slow_sometimes  # type: ignore[assignment]
    store = Store(os.path.join(directory or tempfile.mkdtemp(prefix="answer-order-"), "store.db"))
    group = store._group
    assert group is not None
    watch = store.watch(CM)
    delivered: list[int] = []  # the watch's events' revisions
    answered: list[tuple[int, int, int]] = []  # (revision, durable, delivered) in answer order
    counts = {"own_order": 0, "read_misses": 0}
    stop = threading.Event()

    async def loop_writer(i: int) -> None:
        loop = asyncio.get_running_loop()
        last = 0
        for n in itertools.count():
            if stop.is_set():
                return
            with store.deferred_acks():
                rev = int(store.create(CM, _configmap(f"l{i}-{n}"))["metadata"]["resourceVersion"])
            done: asyncio.Future[BaseException | None] = loop.create_future()

            def answer(error: BaseException | None, rev: int = rev, done: asyncio.Future[Any] = done) -> None:
                answered.append((rev, group.synced, store._delivered))
                done.set_result(error)

            if store.when_visible(answer):
                answer(None)
            assert await done is None
            counts["own_order"] += rev <= last
            last = rev
            counts["read_misses"] += int(store.get(CM, "default", f"l{i}-{n}")["metadata"]["resourceVersion"]) != rev

    def thread_writer(name: str, background: bool) -> None:
        for n in itertools.count():
            if stop.is_set():
                return
            with store.background_acks() if background else contextlib.nullcontext():
                store.create(CM, _configmap(f"{name}-{n}"))
            time.sleep(rnd.uniform(0, 0.002))

    threads = [threading.Thread(target=thread_writer, args=(f"b{j}", True)) for j in range(background_threads)]
    threads += [threading.Thread(target=thread_writer, args=(f"s{j}", False)) for j in range(sync_threads)]
    for thread in threads:
        thread.start()

    async def main() -> None:
        writers = [asyncio.ensure_future(loop_writer(i)) for i in range(loop_writers)]
        await asyncio.sleep(seconds)
        stop.set()
        await asyncio.gather(*writers)

    try:
        uvloop.run(main())
        stop.set()
        for thread in threads:
            thread.join()
        last = int(store.create(CM, _configmap("last"))["metadata"]["resourceVersion"])
        while (event := watch.next(timeout=0)) is not None:
            delivered.append(event.revision)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
        store.close()
        os.fsync = real_fsync
    inversions, high = 0, 0
    for rev, _, _ in answered:
        inversions += rev < high
        high = max(high, rev)
    return {
        "answers": len(answered),
        "writes": len(delivered),
        "inversions": inversions,
        "after_later_events": sum(1 for rev, _, seen in answered if seen > rev),
        "not_durable": sum(1 for rev, durable, seen in answered if rev > durable or rev > seen),
        **counts,
        "watch_in_order": all(a < b for a, b in itertools.pairwise(delivered)) and delivered[-1:] == [last],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--sync-threads", default="random")
    args = parser.parse_args()
    for k in range(args.runs):
        rnd = random.Random(k)
        loop_writers, background = rnd.randint(10, 40), rnd.randint(1, 3)
        sync = rnd.randint(0, 2) if args.sync_threads == "random" else int(args.sync_threads)
        result = run(k, loop_writers, background, sync, args.seconds)
        print(f"run {k}: loop writers {loop_writers}, background threads {background}, sync threads {sync}: {result}",
              flush=True)


if __name__ == "__main__":
    main()
