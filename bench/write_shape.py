"""The shape of the controller's writes in ``bench/cluster_throughput.py``: requests in flight over
time and how they bunch up (runs vs a steady stream).

Usage: python bench/write_shape.py [--src DIR] [cluster_throughput flags...]
       python bench/write_shape.py --analyze TRACE

Runs ``bench/cluster_throughput.py --server serve --qps 5000 --burst 5000`` (plus the flags given)
with a ``sitecustomize`` on the controller's path that stamps every request of the controller's
event-loop client (``pykueue.client.aio.AsyncHTTP._send``: the admissions' status PUTs, the queue
statuses, the Events) when it is sent and when its answer is parsed (``time.monotonic``), then
prints over the admission window (first to last Workload status PUT):

* ``in_flight``: requests in flight, sampled every millisecond (mean, p10/p50/p90);
* ``submits_per_5ms``: writes the manager thread handed to the pipeline per 5-ms interval
  (``WritePipeline._send``: its admissions and queue statuses, not the Events);
* ``completions_between_submits``: admission completions the manager ran between two of its
  submissions (mean, p90, p99, max): a burst of answers run whole, or alternated with cycles;
* ``echoes_skipped``: watch events the informers skipped as echoes of the manager's own writes;
* ``sends_per_5ms``: requests sent per 5-ms interval (mean, p90, max) and the share of intervals
  that sent nothing: a steady stream sends a few in most intervals, runs send many in few;
* ``answers_per_5ms``: the same for answers (serve answers in bursts when its loop batches);
* ``latency_ms``: send to answer (mean, p50, p90).

``--src DIR``: the controller from DIR (as cluster_throughput's ``--src``); serve always runs from
this tree unless ``--server-src`` is passed through.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

SITECUSTOMIZE = '''
import os, sys, time, atexit, json
_out = os.environ.get("PYKUEUE_WRITE_TRACE")
if _out and "controller" in sys.argv:
    from pykueue.client import aio as _aio
    _records = []
    _orig = _aio.AsyncHTTP._send

    async def _send(self, method, target, body, content_type, authorization):
        t0 = time.monotonic()
        try:
            return await _orig(self, method, target, body, content_type, authorization)
        finally:
            _records.append((t0, time.monotonic(), method, target.split("?")[0]))

    _aio.AsyncHTTP._send = _send
    from pykueue.runtime import writes as _writes
    _submits = []
    _orig_submit = _writes.WritePipeline._send

    def _submit(self, item):
        _submits.append(time.monotonic())
        return _orig_submit(self, item)

    _writes.WritePipeline._send = _submit
    from pykueue.controllers import context as _context
    _completions = []
    _orig_written = _context.ReconcileContext._admission_written

    def _written(self, *args, **kwargs):
        _completions.append(time.monotonic())
        return _orig_written(self, *args, **kwargs)

    _context.ReconcileContext._admission_written = _written
    from pykueue.runtime import informer as _informer
    _own = []
    if hasattr(_informer, "OwnWrites"):
        _orig_own_init = _informer.OwnWrites.__init__

        def _own_init(self):
            _orig_own_init(self)
            _own.append(self)

        _informer.OwnWrites.__init__ = _own_init

    @atexit.register
    def _dump():
        with open(_out, "w") as f:
            json.dump({"requests": _records, "submits": _submits, "completions": _completions,
                       "echoes_skipped": sum(o.skipped for o in _own)}, f)
'''


def _per_bin(counts: list[int], bins: int) -> dict[str, float]:
    """Mean, p90, max and the share of empty 5 ms bins of per-bin counts."""
    return {
        "mean": round(statistics.fmean(counts), 2),
        "p90": pct([float(c) for c in counts], 0.9),
        "max": max(counts),
        "empty_share": round(sum(1 for c in counts if c == 0) / bins, 3),
    }

def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def analyze(trace: dict[str, list[Any]]) -> dict[str, object]:
    records: list[tuple[float, float, str, str]] = trace["requests"]
    admissions = [r for r in records if r[2] == "PUT" and "/workloads/" in r[3] and r[3].endswith("/status")]
    if not admissions:
        return {"error": "no Workload status PUTs traced"}
    start = min(r[0] for r in admissions)
    end = max(r[1] for r in admissions)
    inside = [r for r in records if start <= r[0] <= end]
    bins = int((end - start) / 0.005) + 1
    sends = [0] * bins
    answers = [0] * bins
    for t0, t1, _, _ in inside:
        sends[int((t0 - start) / 0.005)] += 1
        if t1 <= end:
            answers[int((t1 - start) / 0.005)] += 1
    # In flight, sampled every millisecond: +1 at each send, -1 at each answer.
    steps = sorted([(r[0], 1) for r in records] + [(r[1], -1) for r in records])
    level, i, samples = 0, 0, []
    t = start
    while t <= end:
        while i < len(steps) and steps[i][0] <= t:
            level += steps[i][1]
            i += 1
        samples.append(float(level))
        t += 0.001
    submits = [0] * bins
    for t in trace["submits"]:
        if start <= t <= end:
            submits[int((t - start) / 0.005)] += 1
    # Admission completions the manager ran between two consecutive submissions: a whole burst of
    # answers at once (runs) or a few (alternating).
    marks = sorted([(t, 0) for t in trace["submits"] if start <= t <= end] + [(t, 1) for t in trace["completions"] if start <= t <= end])
    between, run = [], 0
    for _, is_completion in marks:
        if is_completion:
            run += 1
        else:
            between.append(float(run))
            run = 0
    lat = [(r[1] - r[0]) * 1000 for r in admissions]
    by_kind: dict[str, int] = {}
    for r in inside:
        segs = r[3].split("/")
        plural = segs[-3] if segs[-1] == "status" else segs[-1] if r[2] == "POST" else segs[-2]
        kind = f"{r[2]} {plural}{'/status' if segs[-1] == 'status' else ''}"
        by_kind[kind] = by_kind.get(kind, 0) + 1
    return {
        "window_s": round(end - start, 3),
        "requests": len(inside),
        "by_kind": by_kind,
        "in_flight": {
            "mean": round(statistics.fmean(samples), 1),
            "p10": pct(samples, 0.1),
            "p50": pct(samples, 0.5),
            "p90": pct(samples, 0.9),
        },
        "submits_per_5ms": _per_bin(submits, bins),
        "completions_between_submits": {
            "mean": round(statistics.fmean(between), 2) if between else 0.0,
            "p90": pct(between, 0.9),
            "p99": pct(between, 0.99),
            "max": max(between, default=0.0),
        },
        "echoes_skipped": trace.get("echoes_skipped", 0),
        "sends_per_5ms": _per_bin(sends, bins),
        "answers_per_5ms": _per_bin(answers, bins),
        "latency_ms": {
            "mean": round(statistics.fmean(lat), 1),
            "p50": round(pct(lat, 0.5), 1),
            "p90": round(pct(lat, 0.9), 1),
        },
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--analyze", default=None, help="only analyze this trace file")
    p.add_argument("--trace", default=None, help="keep the trace (JSON: [sent, answered, method, path]) in this file")
    args, rest = p.parse_known_args()
    if args.analyze:
        print(json.dumps(analyze(json.loads(Path(args.analyze).read_text()))))
        return
    with tempfile.TemporaryDirectory(prefix="write-shape-") as tmp:
        (Path(tmp) / "sitecustomize.py").write_text(SITECUSTOMIZE)
        trace = Path(tmp) / "trace.json"
        env = dict(os.environ)
        env["PYTHONPATH"] = tmp + os.pathsep + env.get("PYTHONPATH", "")
        env["PYKUEUE_WRITE_TRACE"] = str(trace)
        cmd = [sys.executable, str(ROOT / "bench" / "cluster_throughput.py"), "--server", "serve", "--qps", "5000", "--burst", "5000", *rest]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
        result = json.loads(out)
        result["shape"] = analyze(json.loads(trace.read_text())) if trace.exists() else {"error": "no trace written"}
        if args.trace and trace.exists():
            Path(args.trace).write_text(trace.read_text())
        print(json.dumps(result))


if __name__ == "__main__":
    main()
