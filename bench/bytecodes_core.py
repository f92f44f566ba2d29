"""Python bytecodes per scheduling decision of ``bench/core.py``'s cycles, per phase and per function.

Usage: python bench/bytecodes_core.py [--cqs 200] [--cohorts 2] [--workloads 20000] [--cycles 30] [--fair-sharing] [--top 50]

Loads the state untraced, then traces every bytecode the cycles (and the controller steps between
them) execute with ``sys.settrace`` opcode events: "self" counts each function's own bytecodes,
"phases" counts, for a few functions of the decision path, the bytecodes executed while they are
on the stack. Deterministic, like ``bench/instructions_core.py``, but by Python function (callgrind
sees only the interpreter's C functions); it does not count what C code does (msgspec Structs built
in C, ``heapq``, dict operations), so instructions can fall more than bytecodes. About 50× slower
than the untraced cycles (two minutes for the default state). To measure another checkout, put its
``src`` first: ``PYTHONPATH=/tmp/base/src python bench/bytecodes_core.py``.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from datetime import timedelta
from types import FrameType
from typing import Any

from core import T0, apply_gc_setting, build_state
from pykueue.core.options import SchedulerOptions
from pykueue.sim.cluster import SimulatedCluster

PHASES = frozenset(
    {
        "_nominate", "_get_assignments", "assign", "_validate_admissibility", "_process_entry", "_admit",
        "_requeue_and_update", "requeue_workload", "_bulk_move", "set_pending", "_decide", "heads",
        "observe", "add_or_update_workload", "new_workload_info", "_sync_touched", "_queue_view", "queue_state",
    }
)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cqs", type=int, default=200)
    ap.add_argument("--cohorts", type=int, default=2)
    ap.add_argument("--workloads", type=int, default=20_000)
    ap.add_argument("--cycles", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--fair-sharing", action="store_true")
    ap.add_argument("--top", type=int, default=50)
    args = ap.parse_args()
    cluster = SimulatedCluster(SchedulerOptions(fair_sharing=args.fair_sharing), T0 + timedelta(hours=2))
    cluster.load(build_state(args.cqs, args.cohorts, args.workloads, args.seed))
    apply_gc_setting("controller")
    own: Counter[tuple[str, str]] = Counter()
    phases: Counter[str] = Counter()

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "opcode":
            code = frame.f_code
            own[(code.co_filename.split("pykueue/")[-1], code.co_name)] += 1
            seen: set[str] = set()
            f: FrameType | None = frame
            while f is not None:
                name = f.f_code.co_name
                if name in PHASES and name not in seen:
                    seen.add(name)
                    phases[name] += 1
                f = f.f_back
        return local

    def start(frame: FrameType, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        return local

    decisions = 0
    sys.settrace(start)
    for i in range(args.cycles):
        if i:
            cluster.advance(1.0)
        decisions += len(cluster.run_cycle().entries)
    sys.settrace(None)
    total = sum(own.values())
    print(f"{decisions} decisions, {total / decisions:,.0f} bytecodes per decision")
    print("--- phases (bytecodes per decision while on the stack)")
    for name, n in phases.most_common():
        print(f"{100 * n / total:5.1f}% {n / decisions:8,.0f}  {name}")
    print("--- self")
    for (path, name), n in own.most_common(args.top):
        print(f"{100 * n / total:5.1f}% {n / decisions:8,.0f}  {path}:{name}")


if __name__ == "__main__":
    main()
