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
import statistics
import sys
import time
from collections import defaultdict
from typing import Any


def serve(argv: list[str]) -> int:
    from pykueue.apiserver import app as appmod
    from pykueue.apiserver import handlers as hmod
    from pykueue.cli.main import main

    out = open(os.environ["SERVE_TIMING_OUT"], "w", buffering=1 << 20)  # noqa: SIM115 (closed at exit)
    atexit.register(out.close)
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
                    }) + "\n")  # fmt: skip

        assert direct is not None
        serve_direct = direct(self, scope, timed_respond)
        if serve_direct is None:
            return None

        def timed_serve(body: bytes) -> None:
            box["t0"] = time.monotonic()
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

    appmod.APIServerApp._serve_fast = timed_serve_fast  # type: ignore[method-assign]
    hmod.Handlers.handle_deferred = timed_handle_deferred  # type: ignore[method-assign]
    appmod.APIServerApp.__call__ = timed_call  # type: ignore[method-assign]
    if direct is not None:
        appmod.APIServerApp.direct = timed_direct  # type: ignore[method-assign]
    return main(["serve", *argv])


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
    with open(path) as f:
        records = [json.loads(line) for line in f if line.strip()]
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
    if requests:
        span = max(r["t1"] for r in requests) - min(r["t0"] for r in requests)
        busy = sum(r["h"] for r in requests if r.get("h") is not None and r["h"] == r["h"])
        print(f"handlers: {busy:.1f} s over {span:.1f} s")
        in_flight(requests, client, verb)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "report":
        report(*sys.argv[2:5])
    elif len(sys.argv) >= 2 and sys.argv[1] == "serve":
        sys.exit(serve(sys.argv[2:]))
    else:
        raise SystemExit(__doc__)
