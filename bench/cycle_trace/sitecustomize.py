"""Trace the controller manager's steps in the first seconds of a run, for the baseline's
preemption rounds (issue 16).

    CYCLE_TRACE=OUT.jsonl PYTHONPATH=bench/cycle_trace DIAG=1 bash bench/upstream_baseline.sh DIR
    python bench/cycle_trace/report.py OUT.jsonl DIR/events.jsonl

On ``PYTHONPATH`` this module is imported by every Python process of the run; only the
``pykueue controller`` process (serve's child) traces, for ``CYCLE_TRACE_SECONDS`` (default 20)
after its first scheduling cycle. One JSON line per manager step: its start (epoch seconds), the
time spent in the due requeues and ready reconciles, in the scheduling cycle, and inside the cycle
waiting for the victims' eviction writes (``apply_all``, or the answers of those sent ahead,
``Scheduler._finish_preemptions``; ``evict_n`` then counts preemptors, not victims) and for the heads' pending-status batch
(``_write_cycle_statuses``), with the cycle's heads, admitted and preempted; and one line per
Workload change whose reservation was cleared (a preempted victim's, by the runner): when the
watch event arrived and when the manager applied it. Since the status writes are sent ahead
(c1ed33f): per step also whether the cycle was held back for one (``before``: 1 if so) and how
many of the writes in flight were a next head's or a quota holder's; one line per workload
reconciler write (its reason, whether the Workload held quota); and one per quota holder the
cycle was held back for.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

_OUT = os.environ.get("CYCLE_TRACE")
_SECONDS = float(os.environ.get("CYCLE_TRACE_SECONDS", "20"))

if _OUT and "controller" in sys.argv:
    from pykueue.controllers.cluster_cache import ClusterCache
    from pykueue.controllers.context import ReconcileContext
    from pykueue.controllers.manager import ControllerManager
    from pykueue.core.scheduler.cycle import Scheduler
    from pykueue.core.workload.info import has_quota_reservation

    _log = open(_OUT, "a", buffering=1 << 16)  # noqa: SIM115
    _state: dict[str, Any] = {"first": None, "evict": 0.0, "evict_n": 0, "pend": 0.0, "pend_n": 0, "rec": 0.0,
                              "before": 0.0, "before_heads": 0, "before_holding": 0}

    def _tracing() -> bool:
        first = _state["first"]
        return first is None or time.time() - first < _SECONDS

    _step = ControllerManager._step
    _reconcile_ready = ControllerManager._reconcile_ready
    _apply_all = getattr(ReconcileContext, "apply_all", None)  # before eb0cbb5 (evictions waited for in turn)
    _write_cycle_statuses = ReconcileContext._write_cycle_statuses
    _on_change = ClusterCache.on_change
    _finish_preemptions = getattr(Scheduler, "_finish_preemptions", None)

    def step(self: ControllerManager) -> bool:
        if not _tracing():
            return _step(self)
        if _state["first"] is None:
            _state["first"] = time.time()
        _state.update(evict=0.0, evict_n=0, pend=0.0, pend_n=0, rec=0.0, before=0.0, before_heads=0, before_holding=0)
        t0 = time.time()
        cycles = self.cycles
        busy = _step(self)
        t1 = time.time()
        line = {
            "k": "step", "t": round(t0, 4), "dur": round(t1 - t0, 4), "rec": round(_state["rec"], 4),
            "evict": round(_state["evict"], 4), "evict_n": _state["evict_n"],
            "pend": round(_state["pend"], 4), "pend_n": _state["pend_n"],
            "cycle": self.cycles > cycles, "progress": self._progress, "inbox": self._inbox.qsize(),
            "before": round(_state["before"], 4), "before_heads": _state["before_heads"],
            "before_holding": _state["before_holding"],
        }
        _log.write(json.dumps(line) + "\n")
        return busy

    def reconcile_ready(self: ControllerManager) -> None:
        t0 = time.time()
        try:
            _reconcile_ready(self)
        finally:
            _state["rec"] += time.time() - t0

    def apply_all(self: ReconcileContext, decisions: list[Any]) -> list[bool]:
        t0 = time.time()
        try:
            return _apply_all(self, decisions)  # type: ignore[misc]
        finally:
            _state["evict"] += time.time() - t0
            _state["evict_n"] += len(decisions)
            if _tracing():
                _log.write(json.dumps({"k": "evict", "t": round(t0, 4), "dur": round(time.time() - t0, 4),
                                       "victims": [d.workload for d in decisions]}) + "\n")

    def write_cycle_statuses(self: ReconcileContext, batch: list[Any]) -> None:
        t0 = time.time()
        try:
            _write_cycle_statuses(self, batch)
        finally:
            _state["pend"] += time.time() - t0
            _state["pend_n"] += len(batch)

    def on_change(self: ClusterCache, change: Any, seen: Any = None) -> None:
        _on_change(self, change, seen)
        if change.resource.plural != "workloads" or not _tracing() or change.old is None or change.new is None:
            return
        if change.old.get("status", {}).get("admission") and not change.new.get("status", {}).get("admission"):
            md = change.new["metadata"]
            _log.write(json.dumps({"k": "cleared", "w": f"{md['namespace']}/{md['name']}",
                                   "seen": round(seen.timestamp(), 4) if seen else None,
                                   "t": round(time.time(), 4)}) + "\n")

    def finish_preemptions(self: Scheduler, result: Any) -> None:
        # Evictions sent ahead (``CyclePort.sends_ahead``): the wait for their answers at the cycle's end.
        n = len(self._issued_preemptions)
        t0 = time.time()
        try:
            _finish_preemptions(self, result)  # type: ignore[misc]
        finally:
            if n:
                _state["evict"] += time.time() - t0
                _state["evict_n"] += n
                if _tracing():
                    _log.write(json.dumps({"k": "evict_ahead", "t": round(t0, 4), "dur": round(time.time() - t0, 4),
                                           "preemptors": n}) + "\n")

    _in_flight_before = getattr(ReconcileContext, "writes_before_cycle_in_flight", None)

    def writes_before_cycle_in_flight(self: ReconcileContext) -> bool:
        # Whether the cycle is held back for a status write sent ahead; which Workloads it waits for.
        held = bool(_in_flight_before(self))  # type: ignore[misc]
        if held and _tracing():
            _state["before"] += 1
            for key in getattr(self, "_sent_ahead", ()):
                if self.writes is not None and self.writes.busy(key):
                    wl = self.cluster.workloads.get(f"{key[1]}/{key[2]}")
                    holding = wl is not None and has_quota_reservation(wl)
                    if holding:
                        _state["before_holding"] += 1
                    elif self.queues.is_next_head(f"{key[1]}/{key[2]}"):
                        _state["before_heads"] += 1
                    if holding and wl is not None:
                        _log.write(json.dumps({"k": "before_holding", "t": round(time.time(), 4), "w": f"{key[1]}/{key[2]}",
                                               "conditions": [[c.type, c.status, c.reason] for c in wl.status.conditions]}) + "\n")
        return held

    from pykueue.controllers.workload_controller import WorkloadController

    _wc_apply = WorkloadController._apply

    def wc_apply(self: WorkloadController, outcome: Any) -> Any:
        # The workload reconciler's writes: their reason, and whether the Workload held quota.
        wl = outcome.spec if outcome.spec is not None else outcome.status
        if wl is not None and _tracing():
            _log.write(json.dumps({"k": "wc_write", "t": round(time.time(), 4), "reason": outcome.reason,
                                   "holding": wl.status.admission is not None,
                                   "w": f"{wl.metadata.namespace}/{wl.metadata.name}"}) + "\n")
        return _wc_apply(self, outcome)

    WorkloadController._apply = wc_apply  # type: ignore[method-assign]
    if _in_flight_before is not None:
        ReconcileContext.writes_before_cycle_in_flight = writes_before_cycle_in_flight  # type: ignore[method-assign]
    if _finish_preemptions is not None:
        Scheduler._finish_preemptions = finish_preemptions  # type: ignore[method-assign]
    ControllerManager._step = step  # type: ignore[method-assign]
    ControllerManager._reconcile_ready = reconcile_ready  # type: ignore[method-assign]
    if _apply_all is not None:
        ReconcileContext.apply_all = apply_all  # type: ignore[attr-defined]
    ReconcileContext._write_cycle_statuses = write_cycle_statuses  # type: ignore[method-assign]
    ClusterCache.on_change = on_change  # type: ignore[method-assign]
