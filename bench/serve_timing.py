"""Per-request timing of ``pykueue serve`` (which client waits how long for what), and its loop's lag.

Usage: SERVE_TIMING_OUT=T.jsonl python bench/serve_timing.py serve [serve's arguments...]
       python bench/serve_timing.py report T.jsonl [CLIENT VERB]

``serve`` runs ``pykueue serve`` (the installed one, or ``PYTHONPATH``'s) with its resource
requests timed: one line per request on the fast path or the protocol's direct path (method, resource, subresource, content
type, the client's user agent, status) with the time from the request's task starting to its
answer having left (``answer``: the handler, the wait for the store to make it durable, the
send) and the handler's own time (``handler``); and every 10 ms the event loop's lag (how late a
10 ms sleep wakes up: the length of the loop's turns). The first ``SERVE_TIMING_BODIES`` (5)
PATCH bodies are kept with their query (what a client such as upstream's runner really sends).
``report`` prints per kind of request and client: count, mean / median / p90 / p99 / max of both
times, the statuses, and the loop lag; for one client's verb (default ``kueue-runner PATCH``:
upstream's scheduler-perf runner's ``Finished`` applies) how many of its requests were at the
server at once (share of the time), and over the seconds when it sent 150 or more (its workers
busy: upstream's runner has 5), the cycle of one worker (5 / rate) against the time at the server
and in the handler. Diagnosis only: the timing costs the server a little.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import re
import statistics
import sys
import threading
import time
from collections import defaultdict
from typing import Any

# A Workload watch event line's name, namespace and resourceVersion (each object has one
# resourceVersion and one namespace; its first name after "metadata" is its own).
_NAME = re.compile(rb'"metadata":\{.*?"name":"([^"]+)"')
_NS = re.compile(rb'"namespace":"([^"]+)"')
_RV = re.compile(rb'"resourceVersion":"(\d+)"')


def _event_key(line: bytes) -> list[Any]:
    """[namespace, name, resourceVersion] of one watch event line (None where absent)."""
    name, ns, rv = _NAME.search(line), _NS.search(line), _RV.search(line)
    return [ns and ns[1].decode(), name and name[1].decode(), rv and int(rv[1])]


def _body_rv(req: Any) -> int | None:
    """The resourceVersion a write's body carries (its precondition), if any."""
    if req.method not in ("PATCH", "PUT") or not req.body:
        return None
    m = _RV.search(req.body[:2000])
    return int(m[1]) if m else None


def serve(argv: list[str]) -> int:
    from pykueue.apiserver import app as appmod
    from pykueue.apiserver import handlers as hmod
    from pykueue.apiserver import watch as wmod
    from pykueue.cli.main import main

    out = open(os.environ["SERVE_TIMING_OUT"], "w", buffering=1 << 20)  # noqa: SIM115 (closed at exit)
    atexit.register(out.close)
    out.write(json.dumps({"wall": time.time(), "mono": time.monotonic()}) + "\n")  # to join other clocks
    bodies = [int(os.environ.get("SERVE_TIMING_BODIES", "5"))]
    handler_time: dict[int, tuple[float, int]] = {}

    serve_fast = appmod.APIServerApp._serve_fast

    async def timed_serve_fast(self: Any, req: Any, scope: Any, receive: Any, send: Any) -> None:
        start = time.monotonic()
        try:
            await serve_fast(self, req, scope, receive, send)
        finally:
            handled, status = handler_time.pop(id(req), (float("nan"), 0))
            rec: dict[str, Any] = {
                "t0": start, "t1": time.monotonic(), "m": req.method, "r": req.resource, "s": req.subresource,
                "ua": req.user_agent[:40], "ct": req.content_type, "h": handled, "st": status,
                "ns": req.namespace, "n": req.name, "rv": _body_rv(req),
            }  # fmt: skip
            if req.method == "PATCH" and bodies[0] > 0:
                bodies[0] -= 1
                rec["q"] = {k: list(v) for k, v in req.query.items()}
                rec["body"] = req.body.decode("utf-8", "replace")
            out.write(json.dumps(rec) + "\n")

    handle_deferred = hmod.Handlers.handle_deferred
    last_handled: list[Any] = []  # the direct path's request, its handler time and status

    def timed_handle_deferred(self: Any, req: Any) -> Any:
        start, status = time.monotonic(), 0
        try:
            resp = handle_deferred(self, req)
            status = resp.status
            return resp
        except Exception as err:
            status = getattr(err, "code", 500)
            raise
        finally:
            handler_time[id(req)] = (time.monotonic() - start, status)
            last_handled[:] = [req]

    direct = getattr(appmod.APIServerApp, "direct", None)  # absent before the direct path (base trees)

    # When a direct request reached the fair dispatcher (``a`` in its record): the time before
    # ``t0`` is its wait for its flow's turn (absent in trees without apiserver/flowcontrol.py).
    arrivals: list[float] = []
    try:
        from pykueue.apiserver import flowcontrol as fmod
    except ImportError:
        fmod = None  # type: ignore[assignment]
    if fmod is not None:
        submit = fmod.FairDispatcher.submit

        def timed_submit(self: Any, flow: Any, serve_request: Any) -> None:
            arrived = time.monotonic()

            def noted() -> None:
                arrivals[:] = [arrived]
                serve_request()

            submit(self, flow, noted)

        fmod.FairDispatcher.submit = timed_submit  # type: ignore[method-assign]

    def timed_direct(self: Any, scope: Any, respond: Any) -> Any:
        # The protocol's direct path (no ASGI task) answers most resource requests: time it from
        # the whole body being in to the answer being handed to the transport.
        if not probing:
            probing.append(asyncio.get_running_loop().create_task(lag_probe()))
        box: dict[str, Any] = {}

        def timed_respond(status: int, head: Any, body: bytes) -> None:
            try:
                respond(status, head, body)
            finally:
                req = box.get("req") or (last_handled[0] if last_handled else None)
                if req is not None:
                    handled, _ = handler_time.pop(id(req), (float("nan"), 0))
                    out.write(json.dumps({
                        "t0": box.get("t0", time.monotonic()), "t1": time.monotonic(), "m": req.method,
                        "r": req.resource, "s": req.subresource, "ua": req.user_agent[:40],
                        "ct": req.content_type, "h": handled, "st": status,
                        "ns": req.namespace, "n": req.name, "rv": _body_rv(req), "a": box.get("a"),
                    }) + "\n")  # fmt: skip

        assert direct is not None
        serve_direct = direct(self, scope, timed_respond)
        if serve_direct is None:
            return None

        def timed_serve(body: bytes) -> None:
            box["t0"] = time.monotonic()
            if arrivals:
                box["a"] = arrivals.pop()
            last_handled.clear()
            serve_direct(body)
            if last_handled:
                box["req"] = last_handled[0]

        return timed_serve

    async def lag_probe() -> None:
        while True:
            start = time.monotonic()
            await asyncio.sleep(0.01)
            out.write(json.dumps({"lag": time.monotonic() - start - 0.01, "t": start}) + "\n")

    call = appmod.APIServerApp.__call__
    probing: list[asyncio.Task[None]] = []

    async def timed_call(self: Any, scope: Any, receive: Any, send: Any) -> None:
        if not probing:
            probing.append(asyncio.get_running_loop().create_task(lag_probe()))
        await call(self, scope, receive, send)

    # Workload watch events: when each revision reached the hub (committed and durable) and when
    # each watch stream handed it to its transport (per watching client), so a chain
    # commit -> a client's stream -> that client's next request can be timed (``chains``).
    dispatch = wmod.WatchHub._dispatch

    def timed_dispatch(self: Any, event: Any, key: Any) -> None:
        if key.resource == "workloads":
            out.write(json.dumps({"commit": int(event.rev), "t": time.monotonic()}) + "\n")
        dispatch(self, event, key)

    watch_objects = hmod.Handlers.watch_objects

    def timed_watch_objects(self: Any, req: Any, info: Any) -> Any:
        resp = watch_objects(self, req, info)
        if req.resource != "workloads" or resp.stream is None:
            return resp
        inner, agent = resp.stream, req.user_agent[:40]

        async def timed_stream() -> Any:
            async for chunk in inner:
                sent = time.monotonic()
                names = [_event_key(line) for line in chunk.splitlines()]
                yield chunk
                out.write(json.dumps({"sent": sent, "ua": agent, "ev": names}) + "\n")

        resp.stream = timed_stream()
        return resp

    # Each fsync of the WAL: when, how long, and whether the event loop's thread waited for it
    # (``durability.GroupCommit.try_sync`` syncs inline while fsyncs are cheap).
    from pykueue.store import durability as dmod

    fsync_wal = dmod.GroupCommit._fsync_wal
    fsyncs: list[tuple[float, float, bool]] = []  # kept here: the sync thread must not write `out` too

    def timed_fsync_wal(self: Any) -> None:
        start = time.monotonic()
        try:
            fsync_wal(self)
        finally:
            fsyncs.append(
                (start, time.monotonic() - start, threading.current_thread() is threading.main_thread())
            )

    def write_fsyncs() -> None:
        for start, took, on_loop in list(fsyncs):
            out.write(json.dumps({"fsync": start, "d": took, "loop": on_loop}) + "\n")

    atexit.register(write_fsyncs)  # runs before `out` is closed (atexit runs last registered first)

    dmod.GroupCommit._fsync_wal = timed_fsync_wal  # type: ignore[method-assign]
    wmod.WatchHub._dispatch = timed_dispatch  # type: ignore[method-assign]
    hmod.Handlers.watch_objects = timed_watch_objects  # type: ignore[method-assign]
    appmod.APIServerApp._serve_fast = timed_serve_fast  # type: ignore[method-assign]
    hmod.Handlers.handle_deferred = timed_handle_deferred  # type: ignore[method-assign]
    appmod.APIServerApp.__call__ = timed_call  # type: ignore[method-assign]
    if direct is not None:
        appmod.APIServerApp.direct = timed_direct  # type: ignore[method-assign]
    return main(["serve", *argv])


def _records(path: str) -> list[dict[str, Any]]:
    """The timing file's records (a line that is not one record, e.g. cut by a crash, is skipped)."""
    records = []
    with open(path, errors="replace") as f:
        for line in f:
            try:
                records.append(json.loads(line))
            except ValueError:
                continue
    return records


def _q(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def _line(name: str, values: list[float]) -> str:
    ms = [1000 * v for v in values]
    return (f"| {name} | {len(ms)} | {statistics.mean(ms):.1f} | {_q(ms, 0.5):.1f} | {_q(ms, 0.9):.1f} "
            f"| {_q(ms, 0.99):.1f} | {max(ms):.1f} |")  # fmt: skip


def in_flight(requests: list[dict[str, Any]], client: str, verb: str, workers: int = 5) -> None:
    """How many of ``client``'s ``verb`` requests were at the server at once, and a worker's cycle."""
    mine = [r for r in requests if r["ua"].split("/", 1)[0] == client and r["m"] == verb]
    if not mine:
        return
    edges = sorted([(r["t0"], 1) for r in mine] + [(r["t1"], -1) for r in mine])
    share: dict[int, float] = defaultdict(float)
    current, last = 0, edges[0][0]
    for at, step in edges:
        share[current] += at - last
        current, last = current + step, at
    total = sum(share.values())
    print(f"{client} {verb} at the server at once (share of {total:.0f} s): "
          + ", ".join(f"{n}: {share[n] / total:.1%}" for n in sorted(share)))  # fmt: skip
    start = min(r["t0"] for r in mine)
    per_second: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in mine:
        per_second[int(r["t0"] - start)].append(r)
    busy = [rs for rs in per_second.values() if len(rs) >= 150]
    if busy:
        rate = statistics.mean(len(rs) for rs in busy)
        at_server = statistics.mean(1000 * (r["t1"] - r["t0"]) for rs in busy for r in rs)
        handled = statistics.mean(1000 * r["h"] for rs in busy for r in rs if r.get("h") is not None)
        print(f"seconds with >= 150: {len(busy)}, {rate:.0f}/s: a worker's cycle {1000 * workers / rate:.1f} ms "
              f"({workers} workers), at the server {at_server:.1f} ms, in the handler {handled:.2f} ms")  # fmt: skip


def report(path: str, client: str = "kueue-runner", verb: str = "PATCH") -> None:
    records = _records(path)
    requests = [r for r in records if "m" in r]
    answer: dict[str, list[float]] = defaultdict(list)
    handler: dict[str, list[float]] = defaultdict(list)
    statuses: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for r in requests:
        agent = r["ua"].split("/", 1)[0] or "?"
        kind = f"{agent} {r['m']} {r['r']}{'/' + r['s'] if r['s'] else ''} ({r['ct'].split(';')[0]})"
        answer[kind].append(r["t1"] - r["t0"])
        if r.get("h") is not None and r["h"] == r["h"]:  # not NaN
            handler[kind].append(r["h"])
        statuses[kind][r.get("st", 0)] += 1
    print("| request (client, verb, resource, content type) | n | mean ms | median | p90 | p99 | max |")
    print("|---|---|---|---|---|---|---|")
    for kind in sorted(answer, key=lambda k: -len(answer[k])):
        if len(answer[kind]) < 20:
            continue
        print(_line(f"{kind}: answer", answer[kind]))
        if handler[kind]:
            print(_line(f"{kind}: handler", handler[kind]))
    lags = [r["lag"] for r in records if "lag" in r]
    if lags:
        print(_line("loop lag (a 10 ms sleep's overshoot)", lags))
    for kind in sorted(statuses, key=lambda k: -len(answer[k])):
        if len(answer[kind]) >= 20:
            print(f"statuses of {kind}: {dict(statuses[kind])}")
    fsyncs = [r for r in records if "fsync" in r]
    if fsyncs:
        on_loop = [r for r in fsyncs if r["loop"]]
        print(_line("WAL fsync", [r["d"] for r in fsyncs]))
        print(f"fsyncs on the event loop's thread: {len(on_loop)} of {len(fsyncs)}, {sum(r['d'] for r in on_loop):.1f} s "
              f"of the loop blocked in them")  # fmt: skip
        applies = [r["t0"] for r in requests if r["ua"].split("/", 1)[0] == client and r["m"] == verb]
        if applies:
            start = min(applies)
            per_second: dict[int, int] = defaultdict(int)
            for t in applies:
                per_second[int(t - start)] += 1
            busy = {sec for sec, n in per_second.items() if n >= 100}
            blocked = sum(r["d"] for r in on_loop if int(r["fsync"] - start) in busy)
            if busy:
                print(f"in the {len(busy)} seconds with >= 100 {client} {verb}: the loop blocked in fsync "
                      f"{blocked / len(busy):.2f} s per second")  # fmt: skip
    if requests:
        span = max(r["t1"] for r in requests) - min(r["t0"] for r in requests)
        busy = sum(r["h"] for r in requests if r.get("h") is not None and r["h"] == r["h"])
        print(f"handlers: {busy:.1f} s over {span:.1f} s")
        in_flight(requests, client, verb)


def _pct(values: list[float]) -> str:
    if not values:
        return "0 | | | |"
    ms = sorted(1000 * v for v in values)
    return (
        f"{len(ms)} | {statistics.fmean(ms):.0f} | {_q(ms, 0.5):.0f} | {_q(ms, 0.9):.0f} | {_q(ms, 0.99):.0f}"
    )


def _runner_reconciles(log_path: str, offset: float) -> dict[tuple[str, str], list[tuple[float, str]]]:
    """Upstream's runner's log at ``--zap-log-level=5``: per Workload, its reconciles' starts and
    ends on serve's monotonic clock (``offset``: wall - monotonic), each end with what it did
    (``requeue``: RequeueAfter the remaining runtime; ``finish``: its Finished apply succeeded;
    ``error``)."""
    from datetime import datetime

    out: dict[tuple[str, str], list[tuple[float, str]]] = defaultdict(list)
    kinds = {"Reconciling": "start", "Reconcile done, requeueing after": "requeue", "Finish Workload": "finish",
             "Reconciler error": "error"}  # fmt: skip
    with open(log_path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 5 or not parts[4].startswith("{"):
                continue
            msg = parts[3]
            kind = kinds.get(msg) or (
                "requeue" if msg.startswith("Reconcile done, requeueing after") else None
            )
            if kind is None:
                continue
            fields = json.loads(parts[4])
            if fields.get("controllerKind") != "Workload":
                continue
            stamp, _, frac = parts[0].rstrip("Z").partition(".")  # RFC 3339, trailing zeros trimmed
            wall = datetime.fromisoformat(stamp + "+00:00").timestamp() + float("0." + (frac or "0"))
            out[(fields["namespace"], fields["name"])].append((wall - offset, kind))
    return out


def chains(
    timing_path: str, events_path: str, runner_log: str = "", cls: str = "small", client: str = "kueue-runner"
) -> None:
    """Per Workload of ``cls`` admitted once and never evicted (all times serve's clock):
    its Admitted write committed -> that revision written to ``client``'s Workload watch -> the
    client's first status PATCH of it -> the last answer to those PATCHes (409s retried in between)
    -> its Finished write committed. ``events_path``: ``bench/handoff_chains.py record``'s file
    (its resourceVersions say which revision made the Workload Admitted or Finished)."""
    commit: dict[int, float] = {}
    sent: dict[int, float] = {}
    offset = 0.0
    patches: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in _records(timing_path):
        if "wall" in r:
            offset = r["wall"] - r["mono"]
        elif "commit" in r:
            commit.setdefault(r["commit"], r["t"])
        elif "sent" in r:
            if r["ua"].split("/", 1)[0] == client:
                for _ns, _name, rv in r["ev"]:
                    if rv is not None:
                        sent.setdefault(rv, r["sent"])
        elif r.get("m") == "PATCH" and r.get("s") == "status" and r["ua"].split("/", 1)[0] == client:
            patches[(r["ns"], r["n"])].append(r)
    admitted: dict[tuple[str, str], list[int]] = defaultdict(list)
    finished: dict[tuple[str, str], int] = {}
    evicted: set[tuple[str, str]] = set()
    runtime: dict[tuple[str, str], float] = {}
    with open(events_path) as f:
        prev: dict[tuple[str, str], bool] = {}
        for line in f:
            _t, _etype, ns, name, _uid, wcls, run, conds, *rest = json.loads(line)
            if wcls != cls or not rest:
                continue
            key, rv = (ns, name), int(rest[0])
            runtime[key] = int(run) / 1000.0 if str(run).isdigit() else 0.0
            adm = conds.get("Admitted", ["False"])[0] == "True"
            if adm and not prev.get(key):
                admitted[key].append(rv)
            if conds.get("Evicted", ["False"])[0] == "True":
                evicted.add(key)
            if conds.get("Finished", ["False"])[0] == "True" and key not in finished:
                finished[key] = rv
            prev[key] = adm
    reconciles = _runner_reconciles(runner_log, offset) if runner_log else {}
    steps: dict[str, list[float]] = defaultdict(list)
    counts: dict[int, int] = defaultdict(int)
    codes: dict[int, int] = defaultdict(int)
    tries: dict[int, int] = defaultdict(int)
    for key, revs in admitted.items():
        if len(revs) != 1 or key in evicted or key not in finished:
            continue
        a, fin = revs[0], finished[key]
        if a not in commit or a not in sent or fin not in commit:
            continue
        mine = [r for r in patches.get(key, ()) if r["t0"] >= sent[a]]
        if not mine:
            continue
        for r in mine:
            codes[r["st"]] += 1
        tries[len(mine)] += 1
        run = runtime[key]
        steps["Admitted committed -> Finished committed, minus runtime (serve's lateness)"].append(
            commit[fin] - commit[a] - run
        )
        steps["Admitted committed -> written to the runner's watch"].append(sent[a] - commit[a])
        steps["written to the runner's watch -> its first Finished PATCH in, minus runtime"].append(
            mine[0]["t0"] - sent[a] - run
        )
        steps["first PATCH in -> last PATCH answered (409s retried in between)"].append(
            mine[-1]["t1"] - mine[0]["t0"]
        )
        steps["  of which the last PATCH at serve"].append(mine[-1]["t1"] - mine[-1]["t0"])
        rec = [(t, k) for t, k in reconciles.get(key, ()) if t >= sent[a] - 0.05]
        starts = [t for t, k in rec if k == "start"]
        if runner_log and starts:
            counts[len(starts)] += 1
            last = (
                max(t for t in starts if t <= mine[0]["t0"] + 0.001)
                if any(t <= mine[0]["t0"] + 0.001 for t in starts)
                else starts[-1]
            )
            steps["runner: written to its watch -> its first reconcile starts"].append(starts[0] - sent[a])
            steps[
                "runner: first reconcile starts -> the reconcile that applies starts, minus runtime"
            ].append(last - starts[0] - run)
            steps["runner: the reconcile that applies starts -> its PATCH in at serve"].append(
                mine[0]["t0"] - last
            )
            done = [t for t, k in rec if k == "finish" and t >= mine[-1]["t1"] - 0.001]
            if done:
                steps["runner: its PATCH answered -> the reconcile logs Finish Workload"].append(
                    done[0] - mine[-1]["t1"]
                )
        # the precondition the first PATCH carried, against the Admitted revision it saw
        if mine[0].get("rv") is not None and mine[0]["rv"] != a:
            codes[-1] += 1
    print(
        f"{cls} Workloads admitted once, never evicted, chains complete: {len(steps[next(iter(steps))]) if steps else 0}"
    )
    print("| step | n | mean ms | median | p90 | p99 |")
    print("|---|---|---|---|---|---|")
    for name, values in steps.items():
        print(f"| {name} | {_pct(values)} |")
    print(
        f"the runner's status PATCHes of them by status: {dict(codes)} (-1: first PATCH's resourceVersion not the Admitted one)"
    )
    print(f"PATCHes per Workload: {dict(sorted(tries.items()))}")
    if counts:
        print(
            f"runner's reconciles per Workload (from its watch's Admitted on): {dict(sorted(counts.items()))}"
        )


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "chains":
        chains(*sys.argv[2:7])
        sys.exit(0)
    elif len(sys.argv) >= 3 and sys.argv[1] == "report":
        report(*sys.argv[2:5])
    elif len(sys.argv) >= 2 and sys.argv[1] == "serve":
        sys.exit(serve(sys.argv[2:]))
    else:
        raise SystemExit(__doc__)
