"""How long one big request or a restart keeps the API from answering anyone else.

Usage: python bench/list_stall.py [--objects 50000] [--lists 3] [--src PATH] [--restart]

Starts ``pykueue serve --no-controllers`` (real subprocess, fresh data directory; ``--src``
chooses the checkout whose ``src`` runs the server, default this one; plain HTTP, with
``--insecure-loopback`` where the version has it), creates ``--objects`` Workloads, then:

1. **LIST stall**: ``--lists`` times, an unpaginated LIST of every Workload while a prober GETs
   ``/api/v1/namespaces/default`` every 20 ms on another connection; prints the LIST's duration
   and the prober's latencies during it (max, p99, p50) — what a concurrent client waits;
2. with ``--restart``: stops the server and starts it again on the same data directory with the
   controllers on; prints when the first GET was answered and when the controllers reported
   their initial sync done (both from the process start).

Figures are printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
G = "kueue.x-k8s.io/v1beta2"
WORKLOADS = f"/apis/{G}/namespaces/default/workloads"
PROBE = "/api/v1/namespaces/default"


def workload(i: int) -> dict[str, Any]:
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    return {
        "apiVersion": G, "kind": "Workload", "metadata": {"name": f"bench-{i:06d}"},
        "spec": {"queueName": "user-queue", "podSets": [{"name": "main", "count": 1 + i % 4, "template": {
            "spec": {"restartPolicy": "Never", "containers": [container]}}}]},
    }  # fmt: skip


def start(src: Path, data_dir: str, controllers: bool) -> tuple[subprocess.Popen[str], str, list[str], float]:
    """Start the server; return (process, URL, its stdout lines so far (kept updated), start time)."""
    env = dict(os.environ, PYTHONPATH=str(src), PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "pykueue", "serve", "--port", "0", "--data-dir", data_dir,
           "--kubeconfig", os.path.join(data_dir, "kubeconfig"), "--no-job-runner"]  # fmt: skip
    if not controllers:
        cmd.append("--no-controllers")
    if "--insecure-loopback" in (src / "pykueue" / "cli" / "serve.py").read_text():
        cmd.append("--insecure-loopback")  # plain HTTP as in older versions: the loop is measured, not TLS
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    lines: list[str] = []
    url = ""
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("pykueue API server listening on "):
            url = line.split()[-1]
            break
    if not url:
        raise SystemExit("pykueue serve did not start:\n" + "".join(lines))

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)

    threading.Thread(target=pump, daemon=True).start()
    return proc, url, lines, t0


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def populate(url: str, objects: int) -> float:
    conn = aiohttp.TCPConnector(limit=32)
    async with aiohttp.ClientSession(connector=conn) as session:
        queue: asyncio.Queue[int] = asyncio.Queue()
        for i in range(objects):
            queue.put_nowait(i)

        async def worker() -> None:
            while not queue.empty():
                body = json.dumps(workload(queue.get_nowait())).encode()
                async with session.post(url + WORKLOADS, data=body, headers={"Content-Type": "application/json"}) as r:
                    await r.read()
                    if r.status != 201:
                        raise SystemExit(f"create failed: {r.status} {await r.text()}")

        t = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(32)))
        return time.perf_counter() - t


def ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


async def list_stall(url: str, lists: int, objects: int) -> None:
    async with aiohttp.ClientSession() as lister, aiohttp.ClientSession() as prober:
        for n in range(lists):
            stop_probe = asyncio.Event()
            latencies: list[float] = []

            async def probe(stop_probe: asyncio.Event, latencies: list[float]) -> None:
                while not stop_probe.is_set():
                    t = time.perf_counter()
                    async with prober.get(url + PROBE) as r:
                        await r.read()
                    latencies.append(time.perf_counter() - t)
                    await asyncio.sleep(0.02)

            task = asyncio.create_task(probe(stop_probe, latencies))
            await asyncio.sleep(0.2)
            latencies.clear()
            t = time.perf_counter()
            async with lister.get(url + WORKLOADS) as r:
                body = await r.read()
            elapsed = time.perf_counter() - t
            stop_probe.set()
            await task
            items = len(json.loads(body)["items"])
            assert items == objects, items
            print(f"LIST {n + 1}: {items} workloads, {len(body) / 2**20:.0f} MiB in {elapsed:.2f}s; concurrent GET "
                  f"latency max {ms(latencies, 1.0):.0f} ms, p99 {ms(latencies, 0.99):.0f} ms, "
                  f"p50 {ms(latencies, 0.5):.0f} ms ({len(latencies)} GETs)")  # fmt: skip


def restart(src: Path, data_dir: str) -> None:
    proc, url, lines, t0 = start(src, data_dir, controllers=True)
    try:
        listening = time.perf_counter() - t0
        import urllib.request

        first = None
        while first is None:
            try:
                with urllib.request.urlopen(url + PROBE, timeout=120) as r:
                    r.read()
                first = time.perf_counter() - t0
            except OSError:
                time.sleep(0.05)
        synced = None
        deadline = time.perf_counter() + 60  # versions before the line print nothing
        while synced is None and time.perf_counter() < deadline:
            if any("initial sync done" in line for line in lines):
                synced = time.perf_counter() - t0
            time.sleep(0.05)
        sync_text = f"{synced:.1f}s" if synced is not None else "not reported"
        print(f"restart with controllers: listening (kubeconfig written) after {listening:.1f}s, first GET answered "
              f"after {first:.1f}s, controllers' initial sync done after {sync_text}")  # fmt: skip
    finally:
        stop(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=50_000)
    parser.add_argument("--lists", type=int, default=3)
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the src directory whose server runs")
    parser.add_argument("--restart", action="store_true", help="also measure a restart with the controllers")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pykueue-bench-") as data_dir:
        proc, url, _, _ = start(args.src, data_dir, controllers=False)
        try:
            took = asyncio.run(populate(url, args.objects))
            print(f"server: {args.src}; created {args.objects} workloads in {took:.0f}s")
            asyncio.run(list_stall(url, args.lists, args.objects))
        finally:
            stop(proc)
        if args.restart:
            restart(args.src, data_dir)


if __name__ == "__main__":
    main()
