"""How long requests waited in serve's fair dispatcher, per client, verb and resource, per period.

Usage: python bench/dispatch_wait.py RUN_DIR [--until SECONDS] [--period SECONDS]

RUN_DIR is a ``DIAG=1 TIMING=1 bash bench/upstream_baseline.sh RUN_DIR`` run: ``timing.jsonl``
records, for each request of the direct path, when it reached the dispatcher (``a``), when serve
started it (``t0``) and when it answered (``t1``); ``events.jsonl`` gives the run's start. Prints,
per ``--period`` (0.25 s) from the first Workload event, the mean and longest wait for a turn and the
mean time at serve, for every client, verb and resource with at least 5 requests in that period
(``--until 300 --period 10``: the whole run).
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import statistics


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("--until", type=float, default=6.0, help="seconds from the first Workload event")
    ap.add_argument("--period", type=float, default=0.25, help="seconds per row group")
    args = ap.parse_args()
    with open(f"{args.run}/events.jsonl") as events:
        start = json.loads(events.readline())[0]
    offset = 0.0
    rows: dict[tuple[float, str, str, str], list[tuple[float, float]]] = collections.defaultdict(list)
    with open(f"{args.run}/timing.jsonl") as records:
        for line in records:
            record = json.loads(line)
            if "wall" in record:
                offset = record["wall"] - record["mono"]
            elif record.get("a") is not None:
                at = record["a"] + offset - start
                quarter = math.floor(at / args.period) * args.period  # before the start: < 0, left out
                resource = record["r"] + ("/" + record["s"] if record.get("s") else "")
                rows[(quarter, record["ua"].split("/", 1)[0], record["m"], resource)].append(
                    (record["t0"] - record["a"], record["t1"] - record["t0"])
                )
    for (quarter, client, verb, resource), values in sorted(rows.items()):
        if not 0 <= quarter <= args.until or len(values) < 5:
            continue
        waits = [w for w, _ in values]
        served = statistics.mean(s for _, s in values)
        print(
            f"{quarter:6.2f} s {client:20s} {verb:6s} {resource:24s} n {len(values):4d}  wait mean {1000 * statistics.mean(waits):6.1f}"
            f" max {1000 * max(waits):6.1f} ms  at serve {1000 * served:5.1f} ms"
        )


if __name__ == "__main__":
    main()
