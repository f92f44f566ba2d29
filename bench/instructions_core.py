"""CPU instructions per scheduling decision of ``bench/core.py``'s cycles (deterministic, unlike time).

Usage: python bench/instructions_core.py [--workloads 100000] [--cycles 30] [--fair-sharing] [--src DIR]

Builds and loads ``bench/core.py``'s state under ``valgrind --tool=callgrind --instr-atstart=no``
(so the load runs uninstrumented), switches instrumentation on with ``callgrind_control -i on``
just before the first cycle and off after the last, and prints the instructions counted divided by
the decisions made. Only the cycles (and the controller steps between them, which ``bench/core.py``
also times) are counted. On this shared machine ``bench/core.py``'s wall-clock figures move by
±40 % between identical runs; this count moves by well under 1 %, so it is what a change to the
core is judged by. ``--src`` measures another checkout (e.g. ``git archive`` of an older commit
unpacked elsewhere). Needs valgrind; about 5 minutes with the default state.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def inner(args: argparse.Namespace) -> None:
    """The measured program: load uninstrumented, then the cycles instrumented."""
    sys.path.insert(0, args.src)
    sys.path.insert(0, str(ROOT / "bench"))
    from core import T0, build_state  # the state generator; pykueue itself comes from ``src``
    from pykueue.core.options import SchedulerOptions
    from pykueue.sim.cluster import SimulatedCluster

    cluster = SimulatedCluster(SchedulerOptions(fair_sharing=args.fair_sharing), T0 + timedelta(hours=2))
    cluster.load(build_state(args.cqs, args.cohorts, args.workloads, args.seed))
    if args.gc == "controller":  # as bench/core.py's default (cli/serve.py tune_gc + freeze_gc)
        from pykueue.cli.serve import GC_THRESHOLDS

        gc.set_threshold(*GC_THRESHOLDS)
    gc.collect()
    gc.freeze()
    pid = str(os.getpid())
    subprocess.run(["callgrind_control", "-i", "on", pid], check=True, capture_output=True)
    decisions = 0
    for i in range(args.cycles):
        if i:
            cluster.advance(1.0)
        decisions += len(cluster.run_cycle().entries)
    subprocess.run(["callgrind_control", "-i", "off", pid], check=True, capture_output=True)
    print(f"decisions={decisions}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cqs", type=int, default=1000)
    parser.add_argument("--cohorts", type=int, default=10)
    parser.add_argument("--workloads", type=int, default=100_000)
    parser.add_argument("--cycles", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--fair-sharing", action="store_true")
    parser.add_argument(
        "--gc", choices=("controller", "schedule"), default="schedule",
        help="GC setting after loading (see bench/core.py --gc); `schedule` (freeze only) as the earlier figures",
    )  # fmt: skip
    parser.add_argument("--src", default=str(ROOT / "src"), help="the src/ directory to measure")
    parser.add_argument("--out", default="/dev/null", help="callgrind output file (for callgrind_annotate)")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        inner(args)
        return
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={args.out}",
           sys.executable, __file__, "--inner", "--cqs", str(args.cqs), "--cohorts", str(args.cohorts),
           "--workloads", str(args.workloads), "--cycles", str(args.cycles), "--seed", str(args.seed),
           "--src", args.src, "--gc", args.gc, *(["--fair-sharing"] if args.fair_sharing else [])]  # fmt: skip
    err = subprocess.run(cmd, capture_output=True, text=True, check=True).stderr
    found = re.search(r"Collected : (\d+)", err)
    made = re.search(r"decisions=(\d+)", err)
    if found is None or made is None:
        raise SystemExit(f"no instruction count in valgrind's output:\n{err[-2000:]}")
    total, decisions = int(found.group(1)), int(made.group(1))
    mode = "fair sharing" if args.fair_sharing else "classical"
    print(
        f"{mode}: {args.cycles} cycles, {decisions} decisions, {total:,} instructions, "
        f"{total // decisions:,} instructions per decision ({args.src})"
    )


if __name__ == "__main__":
    main()
