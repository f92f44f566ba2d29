"""How long Workloads hold quota beyond their work, from a ``DIAG=1 bash bench/upstream_baseline.sh
RUN`` run's Workload watch events (``RUN/events.jsonl``, ``bench/handoff_chains.py record``).

    python bench/finish_lateness.py RUN [--period 10]

Per admission interval (QuotaReserved true until Finished, or until the reservation is cleared):
the CPU·s held, split into the finished runs' runtime, their lateness (held beyond the runtime:
the runner sees the admission, waits out the runtime and sends ``Finished``, which serve must
answer and deliver), the preempted runs until their eviction and the eviction's clearing. Then,
per ``--period`` seconds from the first event, the median / p90 / mean lateness of ``Finished``.
Times are the recorder's (when it saw each event), as the checker's recorder sees them.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics

CPU = {"small": 1, "medium": 5, "large": 20}  # the baseline's requests per class


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("--period", type=float, default=10.0)
    args = ap.parse_args()
    since: dict[str, float] = {}
    evicted: dict[str, float] = {}
    held: dict[tuple[str, str], float] = collections.defaultdict(float)
    late: dict[int, list[float]] = collections.defaultdict(list)
    start: float | None = None
    with open(f"{args.run}/events.jsonl") as events:
        for line in events:
            t, _etype, _ns, _name, uid, cls, runtime_ms, conds, *_ = json.loads(line)
            start = t if start is None else start
            reserved = conds.get("QuotaReserved", ["False"])[0] == "True"
            finished = conds.get("Finished", ["False"])[0] == "True"
            if reserved and conds.get("Evicted", ["False"])[0] == "True" and uid in since:
                evicted.setdefault(uid, t)
            if reserved and not finished and uid not in since:
                since[uid] = t
            elif uid in since and (finished or not reserved):
                began, cpu, runtime = since.pop(uid), CPU.get(cls, 1), float(runtime_ms) / 1000
                at = evicted.pop(uid, t)  # popped either way: none is left for the next admission
                if finished:
                    held[(cls, "finished runs")] += cpu * min(t - began, runtime)
                    held[(cls, "Finished lateness")] += cpu * max(0.0, t - began - runtime)
                    late[int((t - start) // args.period)].append(t - began - runtime)
                else:
                    held[(cls, "preempted runs")] += cpu * (at - began)
                    held[(cls, "eviction to clearing")] += cpu * (t - at)
    print("quota held, CPU·s:")
    for (cls, part), value in sorted(held.items()):
        print(f"  {cls:7s} {part:22s} {value:9.0f}")
    print(f"  total {sum(held.values()):.0f}")
    print(f"Finished lateness per {args.period:g} s (ms):")
    for period, values in sorted(late.items()):
        values.sort()
        print(
            f"  {period * args.period:6.0f} s n {len(values):5d} median {1000 * values[len(values) // 2]:6.0f}"
            f" p90 {1000 * values[int(len(values) * 0.9)]:6.0f} mean {1000 * statistics.mean(values):6.0f}"
        )


if __name__ == "__main__":
    main()
