"""``pykueue serve`` tunes the cyclic garbage collector (see ``GC_THRESHOLDS``); the drivers freeze
their loaded state (``freeze_gc``)."""

from __future__ import annotations

import gc
import subprocess
import sys
import tempfile
import weakref

from pykueue.cli.serve import GC_THRESHOLDS, freeze_gc, tune_gc


def test_tune_gc_sets_the_serving_thresholds() -> None:
    before = gc.get_threshold()
    try:
        tune_gc()
        assert gc.get_threshold() == GC_THRESHOLDS
        # Young collections far less often than CPython's default, or full collections of a
        # large control plane stall it for a second every few seconds (bench/RESULTS.md).
        assert GC_THRESHOLDS[0] >= 10_000
    finally:
        gc.set_threshold(*before)


def test_serve_applies_the_thresholds_before_serving() -> None:
    # The tuning must be wired into the command, not just defined (serve itself replaced).
    code = (
        "import gc, sys\n"
        "import pykueue.apiserver.server as s\n"
        "s.serve = lambda options: print(gc.get_threshold()) or 0\n"
        "from pykueue.cli.main import main\n"
        "sys.exit(main(['serve', '--port', '0', '--no-controllers', '--data-dir', sys.argv[1]]))\n"
    )
    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run([sys.executable, "-c", code, d], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == str(GC_THRESHOLDS)


class _Node:
    def __init__(self) -> None:
        self.peer: _Node | None = None


def test_freeze_gc_collects_garbage_then_freezes_what_lives() -> None:
    # Garbage cycles alive at the call must be collected first: frozen, they would never be freed.
    a, b = _Node(), _Node()
    a.peer, b.peer = b, a
    dead = weakref.ref(a)
    del a, b
    kept = [_Node()]
    freeze_gc()
    try:
        assert dead() is None
        assert gc.get_freeze_count() > 0
        # The survivors left the generations: collections no longer scan them.
        assert not any(o is kept for o in gc.get_objects())
    finally:
        gc.unfreeze()
