"""When do the answers to a burst of status PUTs leave ``pykueue serve``? (issue 14 item 5)

A controller sends its status writes in bursts (up to 64 in flight); if serve answers a burst
only once all of it is handled, the two processes ping-pong instead of working at once. This
starts ``pykueue serve --no-controllers --insecure-loopback`` (from ``--server-src`` if given),
creates ``--workloads`` Workloads, then over ``--slots`` keep-alive connections (the controller's
own client, :class:`pykueue.client.aio.AsyncHTTP`) runs for ``--seconds``:

* ``--mode burst``: all slots send a status PUT at once, the answers are awaited, then
  ``--pause`` ms without requests; per burst, when its first, median and last answers arrived
  (ms after the burst was sent);
* ``--mode think`` (closed loop, the controller's shape): each slot, once answered, spends
  ``--think`` ms of CPU (a busy loop: the controller's work per answer) and sends its next PUT;
  the PUTs per second it reaches and the answers' latency.

Inside serve (hooks installed by the child process, not part of pykueue): each request's time
from its last byte read to its answer complete, the requests handled between two WAL fsyncs, the
fsyncs made on the loop versus the sync thread, and the loop's lag (a 2 ms timer's lateness).

    python bench/serve_bursts.py --mode think [--server-src /tmp/base/src]
    python bench/serve_bursts.py --mode burst --pause 20

The same figures from serve in ``bench/cluster_throughput.py`` (the real controller): put a
``sitecustomize.py`` that calls ``install_hooks(os.environ["SERVE_HOOKS_STATS"], record_now=True)``
in ``pykueue serve`` on the PYTHONPATH (``--sitecustomize DIR`` writes one there).
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _summary(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    return {
        "n": len(values),
        "mean": round(statistics.fmean(values), 2),
        "p50": round(_pct(values, 0.5), 2),
        "p90": round(_pct(values, 0.9), 2),
        "p99": round(_pct(values, 0.99), 2),
        "max": round(max(values), 2),
    }


def _cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --- the child: serve with observation hooks -------------------------------------------------------


def child(stats_path: str, serve_args: list[str]) -> int:
    from pykueue.cli.main import main

    install_hooks(stats_path)
    return main(["serve", *serve_args])


def install_hooks(stats_path: str, record_now: bool = False) -> None:
    """Observe serve (see the module docstring); write the figures to ``stats_path`` at exit.
    Recording starts when ``stats_path + ".record"`` exists (after the set-up), or at once."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    from pykueue.apiserver import watch
    from pykueue.apiserver.handlers import Handlers
    from pykueue.store.durability import GroupCommit

    main_thread = threading.get_ident()
    handled: list[tuple[float, float]] = []  # (start, end) of each Handlers.handle on the loop
    syncs: list[tuple[float, bool]] = []  # (time, on the loop) of each fsync that advanced `synced`
    fsync_ms: dict[bool, list[float]] = {True: [], False: []}  # each WAL fsync's ms, by on the loop
    answers: list[float] = []  # ms from a request's last byte to its answer complete
    lags: list[float] = []
    recording = [record_now]

    real_handle = Handlers.handle

    def handle(self: Any, req: Any) -> Any:
        start = time.perf_counter()
        try:
            return real_handle(self, req)
        finally:
            if recording[0] and threading.get_ident() == main_thread and req.subresource == "status":
                handled.append((start, time.perf_counter()))

    real_sync = GroupCommit._sync_locked

    def sync_locked(self: Any, revision: int) -> None:
        before = self.synced
        real_sync(self, revision)
        if recording[0] and self.synced != before:
            syncs.append((time.perf_counter(), threading.get_ident() == main_thread))

    real_fsync = GroupCommit._fsync_wal

    def fsync_wal(self: Any) -> None:
        start = time.perf_counter()
        try:
            real_fsync(self)
        finally:
            if recording[0]:
                fsync_ms[threading.get_ident() == main_thread].append((time.perf_counter() - start) * 1000)

    # A policy to compare without another tree: the inline threshold (s; negative: never inline).
    inline_max = os.environ.get("BENCH_INLINE_FSYNC_MAX")
    if inline_max is not None:
        from pykueue.store import durability

        durability.INLINE_FSYNC_MAX = float(inline_max)  # type: ignore[misc]

    real_complete = HttpToolsProtocol.on_message_complete
    real_response = HttpToolsProtocol.on_response_complete

    def on_message_complete(self: Any) -> None:
        self._bench_t0 = time.perf_counter()
        real_complete(self)

    def on_response_complete(self: Any) -> None:
        t0 = getattr(self, "_bench_t0", None)
        if recording[0] and t0 is not None and self.scope.get("method") == "PUT":
            answers.append((time.perf_counter() - t0) * 1000)
        real_response(self)

    real_start = watch.WatchHub.start

    def hub_start(self: Any, loop: asyncio.AbstractEventLoop) -> None:
        real_start(self, loop)
        period = 0.002

        def probe(expected: float) -> None:
            now = loop.time()
            if recording[0]:
                lags.append((now - expected) * 1000)
            loop.call_at(now + period, probe, now + period)

        loop.call_at(loop.time() + period, probe, loop.time() + period)

    Handlers.handle = handle  # type: ignore[method-assign]
    GroupCommit._sync_locked = sync_locked  # type: ignore[method-assign]
    GroupCommit._fsync_wal = fsync_wal  # type: ignore[method-assign]
    HttpToolsProtocol.on_message_complete = on_message_complete  # type: ignore[method-assign]
    HttpToolsProtocol.on_response_complete = on_response_complete  # type: ignore[method-assign]
    watch.WatchHub.start = hub_start  # type: ignore[method-assign]

    control = Path(stats_path + ".record")

    def watch_control() -> None:
        while not control.exists():
            time.sleep(0.05)
        recording[0] = True

    if not record_now:
        threading.Thread(target=watch_control, daemon=True).start()

    def dump() -> None:
        recording[0] = False
        per_sync: list[float] = []
        loop_syncs = sum(1 for _, on_loop in syncs if on_loop)
        i = 0
        previous = 0.0
        for at, _ in syncs:
            count = 0
            while i < len(handled) and handled[i][1] <= at:
                if handled[i][1] > previous:
                    count += 1
                i += 1
            per_sync.append(float(count))
            previous = at
        busy = sum(end - start for start, end in handled)
        Path(stats_path).write_text(
            json.dumps(
                {
                    "status_puts_handled": len(handled),
                    "handler_ms_per_put": round(busy / max(1, len(handled)) * 1000, 3),
                    "fsyncs": len(syncs),
                    "fsyncs_on_loop": loop_syncs,
                    "puts_per_fsync": _summary([c for c in per_sync if c]),
                    "fsync_ms_on_loop": _summary(fsync_ms[True]),
                    "fsync_ms_background": _summary(fsync_ms[False]),
                    "loop_blocked_in_fsync_ms": round(sum(fsync_ms[True]), 1),
                    "answer_ms_server": _summary(answers),
                    "loop_lag_ms": _summary(lags),
                }
            )
        )

    atexit.register(dump)


# --- the parent: serve, the Workloads, the load ----------------------------------------------------------


def workload(i: int) -> dict[str, Any]:
    """One small Workload in LocalQueue ``lq``: the benchmark's own manifest (`bench scheduler`)."""
    from pykueue.bench.scheduler import workload_manifest

    return workload_manifest(f"wl-{i:05d}", "default", "lq", "small", 0, 0, "1")


def _status_body(obj: dict[str, Any], n: int) -> bytes:
    obj = dict(obj)
    obj["status"] = {
        "conditions": [
            {
                "type": "QuotaReserved",
                "status": "False",
                "reason": "Pending",
                "message": f"attempt {n}: couldn't assign flavors to pod set main",
                "lastTransitionTime": "2026-11-26T00:00:00Z",
                "observedGeneration": 1,
            }
        ]
    }
    return json.dumps(obj).encode()


def run(args: argparse.Namespace) -> dict[str, Any]:
    import msgspec

    from pykueue.client.aio import AsyncHTTP

    base = Path(tempfile.mkdtemp(prefix="serve-bursts-"))
    stats = base / "stats.json"
    env = dict(os.environ)
    src = args.server_src or str(ROOT / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    kubeconfig = base / "kubeconfig"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(stats), "--",
           "--port", "0", "--data-dir", str(base / "data"), "--kubeconfig", str(kubeconfig),
           "--no-controllers", "--insecure-loopback"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(base / "serve.log", "w"), env=env)  # noqa: SIM115
    try:
        deadline = time.monotonic() + 60
        while not kubeconfig.exists():
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit(f"serve did not start: {(base / 'serve.log').read_text()}")
            time.sleep(0.05)
        import yaml

        url = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        http = AsyncHTTP(url, None, None)
        prefix = "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads"
        live: list[dict[str, Any]] = []

        async def create() -> None:
            async def one(i: int) -> None:
                status, body = await http.request("POST", prefix, json.dumps(workload(i)).encode())
                assert status == 201, body
                live.append(msgspec.json.decode(body))

            for start in range(0, args.workloads, 50):
                await asyncio.gather(*(one(i) for i in range(start, min(args.workloads, start + 50))))

        http.io.run(create()).result()
        live.sort(key=lambda o: o["metadata"]["name"])
        (Path(str(stats) + ".record")).write_text("go")
        time.sleep(0.2)
        latencies: list[float] = []
        bursts: list[tuple[float, float, float]] = []
        counter = [0]

        async def put(slot: int) -> float:
            obj = live[slot]
            counter[0] += 1
            body = _status_body(obj, counter[0])
            sent = time.perf_counter()
            status, answer = await http.request("PUT", f"{prefix}/{obj['metadata']['name']}/status", body)
            took = (time.perf_counter() - sent) * 1000
            assert status == 200, answer
            live[slot] = msgspec.json.decode(answer)
            latencies.append(took)
            return took

        async def burst_mode() -> int:
            end = time.perf_counter() + args.seconds
            done = 0
            while time.perf_counter() < end:
                times = await asyncio.gather(*(put(s) for s in range(args.slots)))
                bursts.append((min(times), statistics.median(times), max(times)))
                done += len(times)
                await asyncio.sleep(args.pause / 1000)
            return done

        async def think_mode() -> int:
            end = time.perf_counter() + args.seconds
            done = [0]

            async def slot(s: int) -> None:
                while time.perf_counter() < end:
                    await put(s)
                    done[0] += 1
                    spin = time.perf_counter() + args.think / 1000
                    while time.perf_counter() < spin:
                        pass

            await asyncio.gather(*(slot(s) for s in range(args.slots)))
            return done[0]

        cpu_before = _cpu_seconds(proc.pid)
        started = time.perf_counter()
        done = http.io.run(burst_mode() if args.mode == "burst" else think_mode()).result()
        wall = time.perf_counter() - started
        cpu = _cpu_seconds(proc.pid) - cpu_before
        http.close()
    finally:
        proc.terminate()
        proc.wait(30)
    server = json.loads(stats.read_text()) if stats.exists() else {}
    result: dict[str, Any] = {
        "mode": args.mode,
        "server_src": args.server_src or "this",
        "puts": done,
        "puts_per_s": round(done / wall, 1),
        "server_cpu_ms_per_put": round(cpu / max(1, done) * 1000, 3),
        "answer_ms_client": _summary(latencies),
    }
    if bursts:
        result["burst_first_answer_ms"] = _summary([b[0] for b in bursts])
        result["burst_median_answer_ms"] = _summary([b[1] for b in bursts])
        result["burst_last_answer_ms"] = _summary([b[2] for b in bursts])
    result["server"] = server
    result["loadavg_1m"] = os.getloadavg()[0]
    shutil.rmtree(base, ignore_errors=True)
    return result


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", choices=("burst", "think"), default="think")
    p.add_argument("--workloads", type=int, default=64, help="Workloads created (at least --slots)")
    p.add_argument("--slots", type=int, default=64, help="requests in flight (the controller's write slots)")
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--pause", type=float, default=20.0, help="burst mode: ms between a burst's last answer and the next")
    p.add_argument("--think", type=float, default=0.8, help="think mode: ms of CPU per answer before the next PUT")
    p.add_argument("--server-src", default=None, help="run serve from this source directory")
    return p.parse_args()


SITECUSTOMIZE = """import os, sys
if "pykueue" in sys.orig_argv and "serve" in sys.orig_argv and os.environ.get("SERVE_HOOKS_STATS"):
    sys.path.insert(0, {bench!r})
    import serve_bursts
    serve_bursts.install_hooks(os.environ["SERVE_HOOKS_STATS"] + "." + str(os.getpid()), record_now=True)
"""


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--sitecustomize":
        Path(sys.argv[2]).mkdir(parents=True, exist_ok=True)
        (Path(sys.argv[2]) / "sitecustomize.py").write_text(SITECUSTOMIZE.format(bench=str(Path(__file__).parent)))
        sys.exit(0)
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        sys.exit(child(sys.argv[2], sys.argv[4:]))
    arguments = parse()
    arguments.workloads = max(arguments.workloads, arguments.slots)
    print(json.dumps(run(arguments)))
