"""Profile the scheduling cycles of bench/core.py with cProfile.

Usage: python bench/profile_core.py [--cqs 1000] [--cohorts 10] [--workloads 20000] [--cycles 10] [--top 35] [--fair-sharing] [--no-gc]

``--no-gc`` disables the cyclic GC after loading: its collections are charged to whatever function
happens to allocate, which blurs the per-function figures (a cycle's GC share is measured by
``bench/core.py --gc-stats``).
(For a sampling profile of a full run: py-spy record -o core.svg -- python bench/core.py)
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
from datetime import timedelta

from core import T0, apply_gc_setting, build_state
from pykueue.core.options import SchedulerOptions
from pykueue.sim.cluster import SimulatedCluster


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cqs", type=int, default=1000)
    ap.add_argument("--cohorts", type=int, default=10)
    ap.add_argument("--workloads", type=int, default=20000)
    ap.add_argument("--cycles", type=int, default=10)
    ap.add_argument("--top", type=int, default=35)
    ap.add_argument("--sort", default="tottime")
    ap.add_argument("--fair-sharing", action="store_true")
    ap.add_argument("--no-gc", action="store_true", help="disable the cyclic GC after loading")
    args = ap.parse_args()
    cluster = SimulatedCluster(SchedulerOptions(fair_sharing=args.fair_sharing), T0 + timedelta(hours=2))
    cluster.load(build_state(args.cqs, args.cohorts, args.workloads, 1))
    apply_gc_setting("controller")  # as bench/core.py and `pykueue controller` do
    if args.no_gc:
        gc.disable()
    prof = cProfile.Profile()
    prof.enable()
    for i in range(args.cycles):
        if i:
            cluster.advance(1.0)
        cluster.run_cycle()
    prof.disable()
    pstats.Stats(prof).sort_stats(args.sort).print_stats(args.top)


if __name__ == "__main__":
    main()
