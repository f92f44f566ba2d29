"""Where serve's time goes for upstream's runner's ``Finished`` applies (issue 16).

Usage: python bench/answer_split.py RUN_DIR [RUN_DIR...]

RUN_DIR is a ``TIMING=1 bash bench/upstream_baseline.sh RUN_DIR`` run: its ``timing.jsonl`` holds
each request's start, handler time and answer time, and each WAL fsync's start and duration. In
the seconds when the runner applied at least 150 statuses, each apply is matched with the first
fsync that started after its handler ended and ended before its answer. Printed per run (mean /
median ms): the handler, its end to that fsync's start, the fsync, the fsync's end to the answer,
all of it; and the WAL fsyncs per second in those seconds.
"""

from __future__ import annotations

import bisect
import collections
import json
import statistics
import sys

BUSY_APPLIES_PER_SECOND = 150


def _ms(values: list[float]) -> str:
    return f"{1000 * statistics.mean(values):.2f} / {1000 * statistics.median(values):.2f}"


def split(run: str) -> str:
    fsyncs: list[tuple[float, float]] = []
    applies: list[tuple[float, float, float]] = []
    with open(f"{run}/timing.jsonl") as records:
        for line in records:
            record = json.loads(line)
            if "fsync" in record:
                fsyncs.append((record["fsync"], record["d"]))
            elif (
                "t0" in record
                and record.get("ua", "").startswith("kueue-runner")
                and record["m"] == "PATCH"
                and record.get("s") == "status"
            ):
                applies.append((record["t0"], record["t1"], record["h"]))
    fsyncs.sort()
    starts = [start for start, _ in fsyncs]
    per_second = collections.Counter(int(t0) for t0, _, _ in applies)
    busy = {second for second, n in per_second.items() if n >= BUSY_APPLIES_PER_SECOND}
    parts: dict[str, list[float]] = {k: [] for k in ("handler", "to fsync start", "fsync", "fsync end to answer", "all")}
    for t0, t1, handler in applies:
        if int(t0) not in busy:
            continue
        handler_end = t0 + handler
        i = bisect.bisect_left(starts, handler_end)
        while i < len(fsyncs) and sum(fsyncs[i]) > t1 + 1e-6:
            i += 1
        if i >= len(fsyncs) or fsyncs[i][0] > t1:
            continue
        start, took = fsyncs[i]
        for name, value in (
            ("handler", handler),
            ("to fsync start", start - handler_end),
            ("fsync", took),
            ("fsync end to answer", t1 - start - took),
            ("all", t1 - t0),
        ):
            parts[name].append(value)
    if not parts["all"]:
        return f"{run}: no busy seconds"
    rate = sum(1 for start in starts if int(start) in busy) / len(busy)
    shown = " | ".join(f"{name} {_ms(values)}" for name, values in parts.items())
    return f"{run}: {len(parts['all'])} applies, {rate:.0f} WAL fsyncs/s; mean / median ms: {shown}"


if __name__ == "__main__":
    for run_dir in sys.argv[1:]:
        print(split(run_dir))
