"""Crash safety: SIGKILL a writer at random moments; every acknowledged write must survive.

A subprocess streams creates/updates into a store file and prints each acknowledged
``resourceVersion name``. After each kill the store is reopened and checked: acknowledged writes
are present with at least their revision, nothing is half-written (object rows, change log and
revision agree), and a watch from an early revision replays a gap-free, consistent history.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from storetesting import check_invariants

from pykueue.store import ResourceKey, Store

CM = ResourceKey("", "configmaps", namespaced=True)
WORKER = Path(__file__).with_name("storecrash_worker.py")
ROUNDS = 5


def run_and_kill(db: str, round_no: int, out: Path, rng: random.Random) -> list[tuple[int, str]]:
    with out.open("w") as stdout:
        proc = subprocess.Popen([sys.executable, str(WORKER), db, str(round_no)], stdout=stdout)
        try:
            deadline = time.monotonic() + 20
            while out.stat().st_size == 0:  # wait until it is writing
                assert proc.poll() is None, "worker died on its own"
                assert time.monotonic() < deadline, "worker never started writing"
                time.sleep(0.01)
            time.sleep(rng.uniform(0.05, 0.6))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    acknowledged = []
    for line in out.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit():
            acknowledged.append((int(parts[0]), parts[1]))
    return acknowledged


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_sigkill_loses_no_acknowledged_write(tmp_path: Path) -> None:
    db = str(tmp_path / "store.sqlite")
    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    latest: dict[str, int] = {}
    previous_revision = 0
    for round_no in range(ROUNDS):
        acknowledged = run_and_kill(db, round_no, tmp_path / f"out{round_no}.txt", rng)
        assert acknowledged, "the worker acknowledged nothing"
        revisions = [rv for rv, _ in acknowledged]
        assert revisions == sorted(revisions) and len(set(revisions)) == len(revisions)
        assert revisions[0] > previous_revision, "revisions continue after a restart"
        for rv, name in acknowledged:
            latest[name] = rv

        revision, floor = check_invariants(db)
        with Store(db, history=300) as store:
            assert store.revision == revision >= revisions[-1]
            for name, rv in latest.items():
                obj = store.get(CM, "default", name)
                assert int(obj["metadata"]["resourceVersion"]) >= rv, f"{name} lost its write at {rv}"
            # a write may commit and be killed before acknowledging it: at most one per round
            assert store.count(CM) == len(store.list(CM)[0])
            assert len(latest) <= store.count(CM) <= len(latest) + round_no + 1
            since = max(floor - 1, 0)
            watch = store.watch(CM, since=since)
            replayed = []
            while (event := watch.next(0)) is not None:
                replayed.append(event)
            assert [e.revision for e in replayed] == list(range(since + 1, revision + 1))
            for event in replayed:
                assert event.object["metadata"]["resourceVersion"] == str(event.revision)
            last = {e.object["metadata"]["name"]: e.object for e in replayed}
            for name, obj in last.items():
                assert store.get(CM, "default", name) == obj
        previous_revision = revision
