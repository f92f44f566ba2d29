"""Where a large workload's wait goes in Kueue's scheduler benchmark: the hand-off chains, step by step.

Usage: python bench/handoff_chains.py record --kubeconfig K --out EVENTS.jsonl [--seconds N]
       python bench/handoff_chains.py report EVENTS.jsonl
       python bench/handoff_chains.py timeline EVENTS.jsonl [--period 10] [--cpu small=1,medium=5,large=20]

``record`` watches every Workload of the cluster ``K`` names (start it before the benchmark's
runner creates any) and writes one line per watch event: the time it arrived here, the object's
identity, class label and conditions (the Evicted message names the preemptor's UID, as upstream's
``preemption.go`` ``humanReadablePreemptionReasons`` message does). ``report`` reads such a file
and prints, per step, the mean / median / p90 in milliseconds:

* large chains: a large workload created → the first eviction naming it seen (the scheduler's
  preemption write) → the last of those victims seen without a reservation (the runner's clear)
  → the large seen Admitted; larges admitted without preempting, from creation;
* per ClusterQueue (namespace), a large seen Finished → the next large of that queue seen
  Admitted (the quota hand-off between consecutive larges);
* every class: created → first seen with a QuotaReserved condition (the scheduler's first
  decision about it: admitted, or Pending), over the run and for the first 10 s of arrivals;
* every class: seen Admitted → seen Finished, minus the runtime label (the runner's part);
* per ClusterQueue, the large class's wait over the run (whether the queue kept up).

``timeline`` prints, per period, the Workloads created, admitted per class, finished and evicted,
and the CPU reserved and Workloads pending at the period's end.

All times are this watcher's receive times, so a step includes one write's latency and the
watch fan-out; the steps of one chain share the watcher's offset, their differences do not.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import msgspec

from pykueue.bench.http import AsyncAPI
from pykueue.bench.scheduler import CLASS_LABEL, RUNNING_TIME_LABEL

G = "/apis/kueue.x-k8s.io/v1beta2"
_UID = re.compile(r"\(UID: ([^,)]+)")


def _conditions(obj: dict[str, Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for c in obj.get("status", {}).get("conditions") or []:
        out[c.get("type", "")] = [c.get("status", ""), c.get("reason", ""), c.get("message", "")]
    return out


async def record(kubeconfig: str | None, out: Path, seconds: float) -> None:
    api = AsyncAPI.from_kubeconfig(kubeconfig, pool=4)
    enc = msgspec.json.Encoder()
    listed = await api.request("GET", f"{G}/workloads?limit=1")
    rv = str(listed.get("metadata", {}).get("resourceVersion", "0"))
    deadline = time.monotonic() + seconds
    with out.open("wb") as f:

        async def watch() -> None:
            async for etype, obj in api.watch(f"{G}/workloads", rv):
                md = obj.get("metadata", {})
                labels = md.get("labels") or {}
                line = [
                    time.time(), etype, md.get("namespace", ""), md.get("name", ""), md.get("uid", ""),
                    labels.get(CLASS_LABEL, ""),
                    labels.get(RUNNING_TIME_LABEL, ""),
                    _conditions(obj),
                    md.get("resourceVersion", ""),
                ]
                f.write(enc.encode(line) + b"\n")

        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(watch(), timeout=max(1.0, deadline - time.monotonic()))
    await api.close()


class _WL:
    __slots__ = ("added", "admitted", "cls", "decided", "evictions", "finished", "ns", "runtime", "uid")

    def __init__(self, uid: str, ns: str, cls: str, runtime: str) -> None:
        self.uid, self.ns, self.cls = uid, ns, cls
        self.runtime = _runtime_seconds(runtime)
        self.added: float | None = None
        self.admitted: list[float] = []
        self.finished: float | None = None
        self.decided: float | None = None  # first seen with a QuotaReserved condition (either status)
        # (preemptor uid, evicted seen, reservation cleared seen)
        self.evictions: list[list[Any]] = []


def _runtime_seconds(label: str) -> float:
    """The runtime label is in milliseconds (generator.go ``RunningTimeLabel``)."""
    return int(label) / 1000.0 if label.isdigit() else 0.0


def _is(conds: dict[str, list[str]], ctype: str) -> bool:
    return conds.get(ctype, ["False"])[0] == "True"


def load(path: Path) -> dict[str, _WL]:
    wls: dict[str, _WL] = {}
    prev: dict[str, dict[str, list[str]]] = {}
    dec = msgspec.json.Decoder()
    for raw in path.read_bytes().splitlines():
        t, etype, ns, _name, uid, cls, runtime, conds, *_rv = dec.decode(raw)
        wl = wls.get(uid)
        if wl is None:
            wl = wls[uid] = _WL(uid, ns, cls, runtime)
        if etype == "ADDED" and wl.added is None:
            wl.added = t
        before = prev.get(uid, {})
        if wl.decided is None and "QuotaReserved" in conds:
            wl.decided = t
        if _is(conds, "Admitted") and not _is(before, "Admitted"):
            wl.admitted.append(t)
        if _is(conds, "Finished") and wl.finished is None:
            wl.finished = t
        if _is(conds, "Evicted") and not _is(before, "Evicted"):
            m = _UID.search(conds["Evicted"][2])
            wl.evictions.append([m.group(1) if m else "", t, None])
        if wl.evictions and wl.evictions[-1][2] is None and _is(before, "QuotaReserved") and not _is(conds, "QuotaReserved"):
            wl.evictions[-1][2] = t
        prev[uid] = conds
    return wls


def _row(name: str, values: list[float]) -> str:
    if not values:
        return f"| {name} | 0 | | | |"
    ms = sorted(v * 1000 for v in values)
    p90 = ms[min(len(ms) - 1, int(0.9 * len(ms)))]
    return f"| {name} | {len(ms)} | {statistics.fmean(ms):.0f} | {statistics.median(ms):.0f} | {p90:.0f} |"


def report(path: Path) -> None:
    wls = load(path)
    victims: dict[str, list[list[Any]]] = defaultdict(list)
    for wl in wls.values():
        for ev in wl.evictions:
            victims[ev[0]].append(ev)
    to_preempt: list[float] = []
    cleared: list[float] = []
    to_admit: list[float] = []
    direct: list[float] = []
    total: list[float] = []
    for wl in wls.values():
        if wl.cls != "large" or wl.added is None or not wl.admitted:
            continue
        admit = wl.admitted[0]
        total.append(admit - wl.added)
        mine = [ev for ev in victims.get(wl.uid, ()) if ev[1] <= admit]
        if not mine:
            direct.append(admit - wl.added)
            continue
        first = min(ev[1] for ev in mine)
        last_clear = max((ev[2] for ev in mine if ev[2] is not None), default=None)
        to_preempt.append(first - wl.added)
        if last_clear is not None:
            cleared.append(last_clear - first)
            to_admit.append(admit - last_clear)
    handoff: list[float] = []
    by_ns: dict[str, list[tuple[float, str, float]]] = defaultdict(list)
    for wl in wls.values():
        if wl.cls != "large":
            continue
        for t in wl.admitted:
            by_ns[wl.ns].append((t, "admitted", 0.0))
        if wl.finished is not None:
            by_ns[wl.ns].append((wl.finished, "finished", 0.0))
    for events in by_ns.values():
        events.sort()
        last_finish: float | None = None
        for t, kind, _ in events:
            if kind == "finished":
                last_finish = t
            elif last_finish is not None:
                handoff.append(t - last_finish)
                last_finish = None
    runner: dict[str, list[float]] = defaultdict(list)
    for wl in wls.values():
        if wl.finished is not None and wl.admitted:
            runner[wl.cls].append(wl.finished - wl.admitted[-1] - wl.runtime)
    t0 = min((wl.added for wl in wls.values() if wl.added is not None), default=0.0)
    first: dict[str, list[float]] = defaultdict(list)
    early: dict[str, list[float]] = defaultdict(list)
    for wl in wls.values():
        if wl.added is not None and wl.decided is not None:
            first[wl.cls].append(wl.decided - wl.added)
            if wl.added - t0 < 10:
                early[wl.cls].append(wl.decided - wl.added)
    print(f"{path}: {len(wls)} workloads")
    print("| step | n | mean ms | median ms | p90 ms |")
    print("|---|---|---|---|---|")
    print(_row("large: created → admitted (all)", total))
    print(_row("large admitted without preempting: created → admitted", direct))
    print(_row("large preempting: created → first victim seen Evicted", to_preempt))
    print(_row("large preempting: first victim Evicted → last victim's reservation cleared", cleared))
    print(_row("large preempting: last victim cleared → large seen Admitted", to_admit))
    print(_row("large seen Finished → next large of its queue seen Admitted", handoff))
    for cls in sorted(first):
        print(_row(f"{cls}: created → first scheduler decision seen (QuotaReserved either way)", first[cls]))
        print(_row(f"{cls}, created in the first 10 s: created → first scheduler decision seen", early[cls]))
    for cls in sorted(runner):
        print(_row(f"{cls}: seen Admitted → seen Finished, minus runtime", runner[cls]))
    _lanes(wls, t0)


def _lanes(wls: dict[str, Any], t0: float) -> None:
    """Per ClusterQueue, the large class's wait (created → first seen Admitted) over the run: what
    tells a run's regime apart. A queue whose larges are admitted at once keeps up; one whose wait
    is a steady ≈ 2 s keeps up one retry behind; one whose wait grows has fallen into waves (its
    arrivals outpace it, and its cohort's tail ends late)."""
    lanes: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for wl in wls.values():
        if wl.cls == "large" and wl.added is not None and wl.admitted:
            lanes[wl.ns].append((wl.added - t0, wl.admitted[0] - wl.added))
    print()
    print("| ClusterQueue | larges | wait s, mean | first 10 s | 10–30 s | 30–50 s | after 50 s | last admitted s |")
    print("|---|---|---|---|---|---|---|---|")
    for ns in sorted(lanes, key=lambda n: (n.rsplit("-", 1)[-1], n)):
        waits = sorted(lanes[ns])
        spans = [[w for t, w in waits if lo <= t < hi] for lo, hi in ((0, 10), (10, 30), (30, 50), (50, 1e9))]
        cells = " | ".join(f"{statistics.fmean(s):.2f}" if s else "" for s in spans)
        last = max(t + w for t, w in waits)
        print(f"| {ns} | {len(waits)} | {statistics.fmean(w for _, w in waits):.2f} | {cells} | {last:.1f} |")


def timeline(path: Path, period: float, cpu: dict[str, int]) -> None:
    """Per ``period`` seconds from the first event: Workloads created, admitted per class, finished
    and evicted, then the CPU reserved (admitted, not finished, by ``cpu`` per class) and the
    Workloads pending at the period's end: which classes the quota went to, phase by phase."""
    dec = msgspec.json.Decoder()
    rows = [dec.decode(raw) for raw in path.read_bytes().splitlines()]
    if not rows:
        return
    t0 = rows[0][0]
    counts: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    at_end: dict[int, tuple[int, int]] = {}
    admitted: set[str] = set()
    reserved = pending = 0
    for t, etype, _ns, _name, uid, cls, _runtime, conds, *_rv in rows:
        k = int((t - t0) // period)
        if etype == "ADDED":
            counts[k]["created"] += 1
            pending += 1
        finished = _is(conds, "Finished")
        if _is(conds, "Admitted") and not finished and uid not in admitted:
            admitted.add(uid)
            reserved += cpu.get(cls, 0)
            pending -= 1
            counts[k][f"admitted {cls}"] += 1
        elif uid in admitted and (finished or not _is(conds, "QuotaReserved")):
            admitted.discard(uid)
            reserved -= cpu.get(cls, 0)
            if finished:
                counts[k]["finished"] += 1
            else:
                counts[k]["evicted"] += 1
                pending += 1
        at_end[k] = (reserved, pending)
    classes = sorted(cpu, key=lambda c: cpu[c])
    print("| from s | created | " + " | ".join(f"admitted {c}" for c in classes)
          + " | finished | evicted | CPU reserved at the end | pending at the end |")  # fmt: skip
    print("|---" * (len(classes) + 6) + "|")
    for k in sorted(counts):
        c = counts[k]
        cells = [f"{k * period:.0f}", str(c["created"]), *(str(c[f"admitted {cls}"]) for cls in classes),
                 str(c["finished"]), str(c["evicted"]), str(at_end[k][0]), str(at_end[k][1])]  # fmt: skip
        print("| " + " | ".join(cells) + " |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("--kubeconfig")
    rec.add_argument("--out", type=Path, required=True)
    rec.add_argument("--seconds", type=float, default=1800.0)
    rep = sub.add_parser("report")
    rep.add_argument("events", type=Path)
    tl = sub.add_parser("timeline")
    tl.add_argument("events", type=Path)
    tl.add_argument("--period", type=float, default=10.0)
    tl.add_argument("--cpu", default="small=1,medium=5,large=20",
                    help="CPU requested per class (upstream's baseline: the default)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.cmd == "record":
        asyncio.run(record(args.kubeconfig, args.out, args.seconds))
    elif args.cmd == "timeline":
        cpu = {name: int(value) for name, _, value in (p.partition("=") for p in args.cpu.split(","))}
        timeline(args.events, args.period, cpu)
    else:
        report(args.events)
    return 0


if __name__ == "__main__":
    sys.exit(main())
