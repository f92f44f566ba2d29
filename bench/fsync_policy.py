"""Where should serve fsync the WAL: on its event loop or on the sync thread? (issue 16)

Runs ``bench/serve_bursts.py``'s think mode (a real ``pykueue serve``, real SQLite in a temp data
dir, N keep-alive clients each sending a Workload status PUT, spinning ``--think`` ms of CPU per
answer, sending the next) for every policy, every client count and every ``--src`` tree in turn,
``--rounds`` times, alternating, so the comparison is made in the same minutes on a noisy machine.
A policy is a value of ``INLINE_FSYNC_MAX`` set in serve by the hooks (``inline``: the tree's own;
a number of ms; ``never``: always the sync thread). Per run: PUTs/s, client latency mean/p50/p99,
the loop's lag (a 2 ms timer's lateness: what a read or a watch waits), the fsyncs on the loop and
on the sync thread and the loop's milliseconds blocked in them.

    python bench/fsync_policy.py --policies inline,1,never --slots 1,5,20 --rounds 3
    python bench/fsync_policy.py --src /tmp/base/src --src /tmp/base/src@never --src src --policies inline
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import serve_bursts


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--src", action="append", default=None, help="a source tree to run serve from (repeatable; DIR@POLICY: only that policy)")
    p.add_argument("--policies", default="inline,never", help="comma-separated: inline, never, or a threshold in ms")
    p.add_argument("--slots", default="1,5,20", help="comma-separated client counts")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--think", type=float, default=0.8)
    args = p.parse_args()
    rows: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for _ in range(args.rounds):
        for slots in (int(s) for s in args.slots.split(",")):
            for src_arg in args.src or [None]:
                src, _, only = (src_arg or "").partition("@")
                for policy in [only] if only else args.policies.split(","):
                    os.environ.pop("BENCH_INLINE_FSYNC_MAX", None)
                    if policy == "never":
                        os.environ["BENCH_INLINE_FSYNC_MAX"] = "-1"
                    elif policy != "inline":
                        os.environ["BENCH_INLINE_FSYNC_MAX"] = str(float(policy) / 1000)
                    run_args = argparse.Namespace(
                        mode="think", workloads=max(64, slots), slots=slots, seconds=args.seconds,
                        pause=0.0, think=args.think, server_src=src or None,
                    )  # fmt: skip
                    r = serve_bursts.run(run_args)
                    s = r["server"]
                    row = {
                        "puts_per_s": r["puts_per_s"],
                        "mean": r["answer_ms_client"].get("mean"),
                        "p50": r["answer_ms_client"].get("p50"),
                        "p99": r["answer_ms_client"].get("p99"),
                        "lag_p99": s.get("loop_lag_ms", {}).get("p99"),
                        "lag_max": s.get("loop_lag_ms", {}).get("max"),
                        "fsyncs_loop": s.get("fsync_ms_on_loop", {}).get("n", 0),
                        "fsyncs_bg": s.get("fsync_ms_background", {}).get("n", 0),
                        "blocked_ms": s.get("loop_blocked_in_fsync_ms"),
                        "fsync_p99": max(s.get("fsync_ms_on_loop", {}).get("p99", 0), s.get("fsync_ms_background", {}).get("p99", 0)),
                        "load": round(r["loadavg_1m"], 2),
                    }
                    key = (src or "this", policy, slots)
                    rows.setdefault(key, []).append(row)
                    print(json.dumps({"src": key[0], "policy": policy, "slots": slots, **row}), flush=True)
    print("\nmedians over rounds:")
    for (src, policy, slots), runs in rows.items():
        med = {k: round(statistics.median(float(r[k] or 0) for r in runs), 2) for k in runs[0]}
        print(json.dumps({"src": src, "policy": policy, "slots": slots, **med}))


if __name__ == "__main__":
    main()
