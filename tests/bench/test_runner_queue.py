"""``bench/runner_queue.py``'s model of upstream's runner queue and ``bench/serve_timing.py``'s parsers."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

_BENCH = Path(__file__).resolve().parents[2] / "bench"


def _module(name: str) -> ModuleType:
    sys.path.insert(0, str(_BENCH))  # runner_queue imports serve_timing from its own directory
    try:
        spec = importlib.util.spec_from_file_location(name, _BENCH / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(_BENCH))


def test_one_worker_serves_due_items_in_the_order_they_became_ready() -> None:
    replay = _module("runner_queue").replay
    # Three items ready at 0, due at 0.2, each apply taking 0.1 s: the first applies on time, the
    # others wait for the one worker (a reconcile before due only requeues, in `requeue` seconds).
    late = replay([(0.0, 0.2, 0.1), (0.0, 0.2, 0.1), (0.0, 0.2, 0.1)], requeue=0.0, workers=1)
    assert late == pytest.approx([0.0, 0.1, 0.2])


def test_five_workers_take_five_due_items_at_once() -> None:
    replay = _module("runner_queue").replay
    late = replay([(0.0, 0.0, 0.05)] * 7, requeue=0.0, workers=5)
    assert late == pytest.approx([0.0] * 5 + [0.05] * 2)


def test_an_item_ready_before_it_is_due_is_requeued_not_applied_early() -> None:
    replay = _module("runner_queue").replay
    # The worker spends `requeue` on the early reconcile, then is free again when the item is due.
    late = replay([(0.0, 0.3, 0.1), (0.35, 0.35, 0.1)], requeue=0.001, workers=1)
    assert late == pytest.approx([0.0, 0.05])


def test_watch_lines_and_runner_log_are_read_back() -> None:
    timing = _module("serve_timing")
    line = (
        b'{"type":"MODIFIED","object":{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"Workload",'
        b'"metadata":{"labels":{"kueue.x-k8s.io/queue-name":"lq"},"name":"small-0-1-0","namespace":"cq-0",'
        b'"uid":"u","resourceVersion":"1234"},"spec":{"podSets":[{"name":"main"}]}}}'
    )
    assert timing._event_key(line) == ["cq-0", "small-0-1-0", 1234]


def test_runner_log_lines_become_reconciles_on_serves_clock(tmp_path: Path) -> None:
    timing = _module("serve_timing")
    fields = '{"controllerKind": "Workload", "namespace": "ns", "name": "w", "reconcileID": "r"}'
    log = tmp_path / "runner.log"
    log.write_text(
        f"2026-11-27T01:41:34.8Z\tLEVEL(-5)\tcontroller/controller.go:477\tReconciling\t{fields}\n"
        f"2026-11-27T01:41:34.81Z\tLEVEL(-5)\tcontroller/controller.go:496\tReconcile done, requeueing after 199ms\t{fields}\n"
        f"2026-11-27T01:41:35.071280434Z\tLEVEL(-5)\tcontroller/controller.go:151\tFinish Workload\t{fields}\n"
    )
    wall = 1795743694.8  # 2026-11-27T01:41:34.8Z
    got = timing._runner_reconciles(str(log), wall - 100.0)
    kinds = [kind for _t, kind in got[("ns", "w")]]
    times = [t for t, _kind in got[("ns", "w")]]
    assert kinds == ["start", "requeue", "finish"]
    assert times == pytest.approx([100.0, 100.01, 100.271280434], abs=1e-5)
