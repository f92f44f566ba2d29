"""How long requests waited in serve's fair dispatcher, per client and verb, per quarter second.

Usage: python bench/dispatch_wait.py RUN_DIR [--until SECONDS]

RUN_DIR is a ``DIAG=1 TIMING=1 bash bench/upstream_baseline.sh RUN_DIR`` run: ``timing.jsonl``
records, for each request of the direct path, when it reached the dispatcher (``a``), when serve
started it (``t0``) and when it answered (``t1``); ``events.jsonl`` gives the run's start. Prints,
per 0.25 s from the first Workload event, the mean and longest wait for a turn and the mean time
at serve, for every client and verb with at least 5 requests in that quarter.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("--until", type=float, default=6.0, help="seconds from the first Workload event")
    args = ap.parse_args()
    with open(f"{args.run}/events.jsonl") as events:
        start = json.loads(events.readline())[0]
    offset = 0.0
    rows: dict[tuple[float, str, str], list[tuple[float, float]]] = collections.defaultdict(list)
    with open(f"{args.run}/timing.jsonl") as records:
        for line in records:
            record = json.loads(line)
            if "wall" in record:
                offset = record["wall"] - record["mono"]
            elif record.get("a") is not None:
                at = record["a"] + offset - start
                quarter = int(at * 4) / 4
                rows[(quarter, record["ua"].split("/", 1)[0], record["m"])].append(
                    (record["t0"] - record["a"], record["t1"] - record["t0"])
                )
    for (quarter, client, verb), values in sorted(rows.items()):
        if not 0 <= quarter <= args.until or len(values) < 5:
            continue
        waits = [w for w, _ in values]
        served = statistics.mean(s for _, s in values)
        print(
            f"{quarter:5.2f} s {client:20s} {verb:6s} n {len(values):4d}  wait mean {1000 * statistics.mean(waits):6.1f}"
            f" max {1000 * max(waits):6.1f} ms  at serve {1000 * served:5.1f} ms"
        )


if __name__ == "__main__":
    main()
