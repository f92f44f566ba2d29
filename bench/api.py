"""API server throughput: creates/s and updates/s over HTTP, and watch fan-out.

Usage: python bench/api.py [--objects 20000] [--concurrency 32] [--watchers 10]
                           [--kind workloads|resourceflavors|clusterqueues|leases|events]
                           [--url URL [--kubeconfig FILE]] [--controllers [--in-process]]
                           [--insecure-loopback]

Starts ``pykueue serve --no-controllers`` (a real subprocess, fresh data directory, port 0; with
``--controllers`` Kueue's controllers run too and react to the objects, in their own process, or
with ``--in-process`` in the API server's; the benchmark starts once their initial sync is done;
the server's CPU per request is split between the two processes; HTTPS with the server's
CA and admin token, or plain HTTP with ``--insecure-loopback``) unless ``--url`` is given (then
``--kubeconfig`` supplies the CA and token), then from one asyncio client process (aiohttp,
``--concurrency`` connections):

1. opens ``--watchers`` watches on the collection (``?watch=true``, from the current revision);
2. creates ``--objects`` objects (POST) — creates/s;
3. updates each of them once (merge PATCH of a label) — updates/s;
4. checks that every watcher received every event (creates + updates) and reports how far each
   lagged behind the last acknowledged write.

Figures are printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml

ROOT = Path(__file__).resolve().parents[1]
G = "kueue.x-k8s.io/v1beta2"
PATHS = {
    "workloads": f"/apis/{G}/namespaces/default/workloads",
    "resourceflavors": f"/apis/{G}/resourceflavors",
    "clusterqueues": f"/apis/{G}/clusterqueues",
    "leases": "/apis/coordination.k8s.io/v1/namespaces/default/leases",
    "events": "/api/v1/namespaces/default/events",
}


def manifest(kind: str, i: int) -> dict[str, Any]:
    """The i-th object of the benchmark."""
    name = f"bench-{i:06d}"
    if kind == "leases":
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name},
                "spec": {"holderIdentity": f"holder-{i}", "leaseDurationSeconds": 15}}  # fmt: skip
    if kind == "events":
        return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name}, "reason": "Admitted", "type": "Normal",
                "message": f"Admitted by ClusterQueue cq-{i % 10}", "source": {"component": "kueue-admission"},
                "involvedObject": {"apiVersion": G, "kind": "Workload", "name": f"wl-{i}", "namespace": "default"}}  # fmt: skip
    if kind == "resourceflavors":
        return {
            "apiVersion": G,
            "kind": "ResourceFlavor",
            "metadata": {"name": name},
            "spec": {"nodeLabels": {"pool": "a"}},
        }
    if kind == "clusterqueues":
        return {
            "apiVersion": G,
            "kind": "ClusterQueue",
            "metadata": {"name": name},
            "spec": {
                "cohortName": f"cohort-{i % 10}",
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory"],
                        "flavors": [{"name": "default", "resources": [
                            {"name": "cpu", "nominalQuota": "8"}, {"name": "memory", "nominalQuota": "32Gi"}]}],
                    }
                ],
            },
        }  # fmt: skip
    return {
        "apiVersion": G,
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {
            "queueName": "user-queue",
            "podSets": [
                {
                    "name": "main",
                    "count": 1 + i % 4,
                    "template": {"spec": {"restartPolicy": "Never", "containers": [
                        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}},
                }
            ],
        },
    }  # fmt: skip


@dataclass
class Watcher:
    """Counts the events of one watch stream (one line per event)."""

    received: int = 0
    errors: list[str] = field(default_factory=list)
    done_at: float = 0.0
    target: int = 0


async def run_watcher(
    session: aiohttp.ClientSession, url: str, rv: str, w: Watcher, done: asyncio.Event
) -> None:
    """Read a watch stream until ``w.target`` events arrived (set once the writes are known)."""
    async with session.get(f"{url}?watch=true&resourceVersion={rv}&timeoutSeconds=600") as resp:
        buf = b""
        async for chunk in resp.content.iter_any():
            buf += chunk
            lines = buf.split(b"\n")
            buf = lines[-1]
            for line in lines[:-1]:
                if b'"type":"ERROR"' in line[:20]:
                    w.errors.append(line.decode()[:200])
                w.received += 1
            if w.target and w.received >= w.target:
                w.done_at = time.perf_counter()
                done.set()
                return


async def timed(coros: list[Any], concurrency: int) -> tuple[float, list[float]]:
    """Run request coroutines ``concurrency`` at a time; (elapsed seconds, latencies)."""
    latencies: list[float] = []
    queue: asyncio.Queue[Any] = asyncio.Queue()
    for c in coros:
        queue.put_nowait(c)

    async def worker() -> None:
        while not queue.empty():
            make = queue.get_nowait()
            t = time.perf_counter()
            await make()
            latencies.append(time.perf_counter() - t)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - start, latencies


def pct(values: list[float], q: float) -> float:
    """The q-quantile in milliseconds."""
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass
class Credentials:
    """The TLS context and Authorization header of a kubeconfig (both None: plain HTTP)."""

    ssl_context: ssl.SSLContext | None = None
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_kubeconfig(cls, path: str | None) -> Credentials:
        """CA (``certificate-authority-data``) and ``token`` of the kubeconfig's first cluster and user."""
        if path is None:
            return cls()
        doc = yaml.safe_load(Path(path).read_text())
        ca = doc["clusters"][0]["cluster"].get("certificate-authority-data")
        token = doc["users"][0]["user"].get("token")
        ctx = ssl.create_default_context(cadata=base64.b64decode(ca).decode()) if ca else None
        return cls(ctx, {"Authorization": f"Bearer {token}"} if token else {})


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) a process has used, from ``/proc/PID/stat``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu(pid: int) -> tuple[float, float]:
    """CPU seconds of the serve process and of its live children (the controller process)."""
    children = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            children += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return process_cpu(pid), children


async def bench(
    url: str,
    kind: str,
    objects: int,
    concurrency: int,
    watchers: int,
    creds: Credentials | None = None,
    server_cpu: Any = None,
) -> None:
    """Run the benchmark; ``server_cpu()`` (when given) reads the server's CPU seconds, so the
    server's CPU per request is printed too (steadier than rates on a shared machine)."""
    base = url + PATHS[kind]
    creds = creds or Credentials()
    conn = aiohttp.TCPConnector(limit=concurrency + watchers + 4, ssl=creds.ssl_context or False)
    async with aiohttp.ClientSession(connector=conn, headers=creds.headers) as session:
        async with session.get(base + "?limit=1") as r:
            rv = (await r.json())["metadata"]["resourceVersion"]
        ws = [Watcher() for _ in range(watchers)]
        dones = [asyncio.Event() for _ in ws]
        tasks = [
            asyncio.create_task(run_watcher(session, base, rv, w, d)) for w, d in zip(ws, dones, strict=True)
        ]
        await asyncio.sleep(0.5)
        bodies = [json.dumps(manifest(kind, i)).encode() for i in range(objects)]
        failures: list[int] = []

        def create(body: bytes) -> Any:
            async def go() -> None:
                async with session.post(
                    base, data=body, headers={"Content-Type": "application/json"}
                ) as resp:
                    await resp.read()
                    if resp.status != 201:
                        failures.append(resp.status)

            return go

        def update(i: int) -> Any:
            patch = json.dumps({"metadata": {"labels": {"bench": "updated"}}}).encode()

            async def go() -> None:
                async with session.patch(f"{base}/bench-{i:06d}", data=patch,
                                         headers={"Content-Type": "application/merge-patch+json"}) as resp:  # fmt: skip
                    await resp.read()
                    if resp.status != 200:
                        failures.append(resp.status)

            return go

        def cpu_note(before: tuple[float, float] | None) -> str:
            if server_cpu is None or before is None:
                return ""
            api, children = (now - then for now, then in zip(server_cpu(), before, strict=True))
            note = f", server CPU {1e6 * (api + children) / objects:,.0f} µs/request"
            if children > 0:
                note += f" (API process {1e6 * api / objects:,.0f}, controller process {1e6 * children / objects:,.0f})"
            return note

        cpu0 = server_cpu() if server_cpu else None
        elapsed, lat = await timed([create(b) for b in bodies], concurrency)
        print(f"creates: {objects} {kind}, concurrency {concurrency}: {objects / elapsed:,.0f} creates/s "
              f"(p50 {pct(lat, 0.5):.1f} ms, p99 {pct(lat, 0.99):.1f} ms{cpu_note(cpu0)})")  # fmt: skip
        cpu0 = server_cpu() if server_cpu else None
        elapsed, lat = await timed([update(i) for i in range(objects)], concurrency)
        last_write = time.perf_counter()
        print(f"updates: {objects} merge patches, concurrency {concurrency}: {objects / elapsed:,.0f} updates/s "
              f"(p50 {pct(lat, 0.5):.1f} ms, p99 {pct(lat, 0.99):.1f} ms{cpu_note(cpu0)})")  # fmt: skip
        if failures:
            print(f"FAILED requests: {len(failures)} (statuses {sorted(set(failures))})")
        expected = 2 * objects
        for w, d in zip(ws, dones, strict=True):
            w.target = expected
            if w.received >= expected:
                w.done_at = w.done_at or time.perf_counter()
                d.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*(d.wait() for d in dones)), 60)
        for t in tasks:
            t.cancel()
        if watchers:
            got = [w.received for w in ws]
            lags = [max(0.0, w.done_at - last_write) for w in ws if w.done_at]
            complete = sum(1 for g in got if g >= expected)
            print(f"watch fan-out: {watchers} watchers, {complete}/{watchers} received all {expected} events "
                  f"(min {min(got)}); lag after the last write: max {max(lags, default=float('nan')):.3f}s, "
                  f"median {statistics.median(lags) if lags else float('nan'):.3f}s")  # fmt: skip
            errors = [e for w in ws for e in w.errors]
            if errors:
                print(f"watch errors: {errors[:3]}")


def start_server(
    data_dir: str, controllers: bool = False, insecure: bool = False, in_process: bool = False
) -> tuple[subprocess.Popen[str], str, str]:
    """``pykueue serve --port 0 [--no-controllers|--controllers-in-process] [--insecure-loopback]``
    on ``data_dir``; returns (process, URL, kubeconfig)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), PYTHONUNBUFFERED="1")
    kubeconfig = os.path.join(data_dir, "kubeconfig")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pykueue",
            "serve",
            "--port",
            "0",
            "--data-dir",
            data_dir,
            "--kubeconfig",
            kubeconfig,
            *(() if controllers else ("--no-controllers",)),
            *(("--insecure-loopback",) if insecure else ()),
            *(("--controllers-in-process",) if controllers and in_process else ()),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("pykueue API server listening on "):
            url = line.split()[-1]
        if line.strip().startswith("export KUBECONFIG=") and not controllers:
            return proc, url, kubeconfig
        if "initial sync done" in line:
            return proc, url, kubeconfig
    raise SystemExit("pykueue serve did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--watchers", type=int, default=10)
    parser.add_argument("--kind", choices=sorted(PATHS), default="workloads")
    parser.add_argument("--url", help="benchmark a running server instead of starting one")
    parser.add_argument("--kubeconfig", help="with --url: the kubeconfig with its CA and token")
    parser.add_argument(
        "--insecure-loopback", action="store_true", help="start the server with plain HTTP, no authentication"
    )
    parser.add_argument(
        "--controllers", action="store_true", help="run Kueue's controllers too (default: API only)"
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="with --controllers: in the API server's process (serve --controllers-in-process), not their own",
    )
    args = parser.parse_args()
    try:
        import uvloop

        uvloop.install()
    except ImportError:  # pragma: no cover
        pass
    if args.url:
        creds = Credentials.from_kubeconfig(args.kubeconfig)
        asyncio.run(bench(args.url.rstrip("/"), args.kind, args.objects, args.concurrency, args.watchers, creds))
        return
    with tempfile.TemporaryDirectory() as tmp:
        proc, url, kubeconfig = start_server(tmp, args.controllers, args.insecure_loopback, args.in_process)
        try:
            print(f"server: pykueue serve at {url} (fresh data directory)")
            creds = Credentials.from_kubeconfig(kubeconfig)
            cpu = (lambda: tree_cpu(proc.pid)) if Path(f"/proc/{proc.pid}/stat").exists() else None
            asyncio.run(bench(url, args.kind, args.objects, args.concurrency, args.watchers, creds, cpu))
        finally:
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    main()
