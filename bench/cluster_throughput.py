"""Admission throughput of ``pykueue controller --kubeconfig`` (cluster mode: the controllers talk
to the API server only over HTTP), against a real kube-apiserver and against ``pykueue serve
--no-controllers``.

The setup: one ResourceFlavor, one ClusterQueue (in a cohort) with quota for every Workload, one
LocalQueue, and ``--workloads`` small Workloads (one pod of 1 CPU) created directly with the
LocalQueue's name, all created **before** the controller starts. Then ``pykueue controller`` is
started and the benchmark watches Workloads until every one is Admitted. It prints:

* ``admissions/s``: workloads / (last Admitted - first Admitted), seen by the benchmark's watch
  (the steady rate, without the process start and the initial LIST);
* ``from start``: workloads / (last Admitted - controller process start);
* ``cpu/workload``: the controller process's CPU (utime+stime from /proc) from its start to the
  last admission, divided by the workloads; and the same over the admission window only
  (first to last Admitted), which excludes the interpreter's start and the initial LIST.

    python bench/cluster_throughput.py --server kube   # a real kube-apiserver (../shared/envtest)
    python bench/cluster_throughput.py --server serve  # pykueue serve --no-controllers
    python bench/cluster_throughput.py --server serve --qps 5000 --burst 5000   # clientConnection
    python bench/cluster_throughput.py --server serve --cluster-queues 10      # 10 ClusterQueues
    python bench/cluster_throughput.py --server serve --server-src /tmp/base/src   # serve from another tree

``--cluster-queues N`` makes N ClusterQueues in the one cohort, each with its LocalQueue, and spreads
the Workloads round-robin: upstream's scheduler admits at most one head per ClusterQueue per
cycle, so one ClusterQueue measures the cycle rate and N measure a deployment with several queues.
``controller_runqueue_wait`` / ``server_runqueue_wait`` are the seconds per second the process's
threads were runnable but waiting for a CPU (/proc schedstat): the share of wall time a shared
machine, not the process, took.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pykueue.client import resources as R
from pykueue.client.http import HTTPClient

ROOT = Path(__file__).resolve().parents[1]
ENVTEST = ROOT.parent / "shared" / "envtest"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def flavor() -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "f"}}


def cluster_queue(cpu: int, name: str = "cq") -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "cohortName": "all",
            "resourceGroups": [
                {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}
            ],
        },
    }


def local_queue(name: str = "lq", cq: str = "cq") -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"clusterQueue": cq},
    }


def queue_names(queues: int) -> list[tuple[str, str]]:
    """(ClusterQueue, LocalQueue) names: today's single ``cq``/``lq``, or ``cq-0``/``lq-0``... for several."""
    if queues == 1:
        return [("cq", "lq")]
    return [(f"cq-{q}", f"lq-{q}") for q in range(queues)]


def workload(i: int, queue: str = "lq") -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": f"wl-{i:05d}", "namespace": "default"},
        "spec": {
            "queueName": queue,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {"spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}},
                }
            ],
        },
    }


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def runqueue_seconds(pid: int) -> float:
    """Seconds the threads of ``pid`` alive now spent runnable but waiting for a CPU (the second field
    of /proc/PID/task/TID/schedstat): on a shared 2-core machine this, not the process's own CPU,
    is where much of the wall time goes. 0 where schedstat is not available."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    for tid in tasks:
        try:
            total += int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total / 1e9


# --- servers ----------------------------------------------------------------------------------------


class Server:
    kubeconfig: Path

    def pids(self) -> list[int]:
        """The server's processes (their CPU is reported too: it tells who limits the rate)."""
        return []

    def stop(self) -> None: ...

    def requests(self, client: HTTPClient) -> dict[str, float]:
        """Requests served so far by verb and resource (empty when the server does not count them)."""
        return {}


class Kube(Server):
    """etcd + kube-apiserver from ../shared/envtest, in a directory (and on free ports) of our own."""

    def __init__(self, base: Path) -> None:
        self.env = {**os.environ, "CLUSTER_DIR": str(base / "cluster")}
        if "KUBEBUILDER_ASSETS" not in self.env:
            self.env["KUBEBUILDER_ASSETS"] = subprocess.run(
                ["bash", str(ENVTEST / "install.sh")], capture_output=True, text=True, check=True
            ).stdout.strip()
        self.kubeconfig = base / "kubeconfig"
        subprocess.run(["bash", str(ENVTEST / "start-cluster.sh"), str(self.kubeconfig)], env=self.env, check=True,
                       capture_output=True, timeout=180)  # fmt: skip
        kubectl(self.kubeconfig, "apply", "--server-side", "-f", str(ROOT / "config" / "crd"))
        kubectl(self.kubeconfig, "wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
        self.dir = base / "cluster"

    def pids(self) -> list[int]:
        return [int((self.dir / f"{name}.pid").read_text()) for name in ("kube-apiserver", "etcd")]

    def requests(self, client: HTTPClient) -> dict[str, float]:
        text = client._http.get("/metrics").text
        counts: dict[str, float] = {}
        for line in text.splitlines():
            if not line.startswith("apiserver_request_total{"):
                continue
            labels = dict(re.findall(r'(\w+)="([^"]*)"', line))
            if labels.get("verb") in ("WATCH", "LIST", "GET") and labels.get("resource") in ("", None):
                continue
            key = f"{labels.get('verb')} {labels.get('resource')}" + (f"/{labels['subresource']}" if labels.get("subresource") else "")
            counts[key] = counts.get(key, 0.0) + float(line.rsplit(" ", 1)[1])
        return counts

    def stop(self) -> None:
        subprocess.run(["bash", str(ENVTEST / "stop-cluster.sh")], env={**self.env, "WIPE": "1"}, capture_output=True, timeout=60)


class Serve(Server):
    """``pykueue serve --no-controllers`` on a free loopback port."""

    def __init__(self, base: Path, src: str | None = None) -> None:
        self.kubeconfig = base / "kubeconfig"
        cmd = [sys.executable, "-m", "pykueue", "serve", "--no-controllers", "--port", "0",
               "--data-dir", str(base / "data"), "--kubeconfig", str(self.kubeconfig)]  # fmt: skip
        env = dict(os.environ)
        if src:  # another checkout's server (e.g. the code before a change)
            env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(base / "serve.log", "w"), cwd=base, env=env)  # noqa: SIM115
        deadline = time.monotonic() + 60
        while not self.kubeconfig.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("pykueue serve did not start: " + (base / "serve.log").read_text())
            time.sleep(0.1)
        while kubectl(self.kubeconfig, "get", "--raw", "/readyz", check=False).returncode != 0:
            time.sleep(0.1)

    def pids(self) -> list[int]:
        return [self.proc.pid]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


def kubectl(kubeconfig: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True, check=check)


# --- the run ----------------------------------------------------------------------------------------


def admitted(obj: dict[str, Any]) -> bool:
    return any(c.get("type") == "Admitted" and c.get("status") == "True" for c in (obj.get("status") or {}).get("conditions") or [])


def run(
    server: Server, base: Path, n: int, qps: float | None, burst: int | None, profile: str | None, src: str | None, extra: list[str],
    queues: int = 1,
) -> dict[str, Any]:
    client = HTTPClient.from_kubeconfig(server.kubeconfig)
    client.create(R.RESOURCE_FLAVORS, flavor())
    names = queue_names(queues)
    for cq, lq in names:
        client.create(R.CLUSTER_QUEUES, cluster_queue(n * 2, cq))
        client.create(R.LOCAL_QUEUES, local_queue(lq, cq))
    started = time.monotonic()
    with ThreadPoolExecutor(16) as pool:  # round-robin over the LocalQueues
        list(pool.map(lambda i: client.create(R.WORKLOADS, workload(i, names[i % queues][1])), range(n)))
    create_s = time.monotonic() - started
    _, rv = client.list(R.WORKLOADS, "default")
    seen: dict[str, float] = {}
    done = threading.Event()
    watch = client.watch(R.WORKLOADS, rv, "default")

    def follow() -> None:
        nonlocal watch
        while True:
            try:
                for ev in watch:
                    if ev.object and admitted(ev.object):
                        seen.setdefault(ev.object["metadata"]["name"], time.monotonic())
                        if len(seen) >= n:
                            done.set()
                            return
            except Exception as err:  # e.g. the watch expired under load: relist, then watch again
                print(f"benchmark watch: {err}; relisting", file=sys.stderr)
            if done.is_set():
                return
            items, rv = client.list(R.WORKLOADS, "default")
            for obj in items:
                if admitted(obj):
                    seen.setdefault(obj["metadata"]["name"], time.monotonic())
            if len(seen) >= n:
                done.set()
                return
            watch = client.watch(R.WORKLOADS, rv, "default")

    threading.Thread(target=follow, daemon=True).start()
    config = base / "controller-config.yaml"
    cc = {}
    if qps is not None:
        cc["qps"] = qps
    if burst is not None:
        cc["burst"] = burst
    config.write_text(json.dumps({"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration", "clientConnection": cc}))
    cmd = [sys.executable, "-m", "pykueue", "controller", "--kubeconfig", str(server.kubeconfig), "--config", str(config),
           "--work-dir", str(base / "controller"), "--no-webhooks", "--visibility-port", "-1",
           "--metrics-bind-address", "0", *extra]  # fmt: skip
    if profile:
        spy = shutil.which("py-spy") or "/work/venv-go/bin/py-spy"
        cmd = [spy, "record", "-o", profile, "--format", "raw", "-r", "250", "--threads", "--idle", "--nonblocking", "--", *cmd]
    requests_before = server.requests(client)
    t0 = time.monotonic()
    log = open(base / "controller.log", "w")  # noqa: SIM115
    env = dict(os.environ)
    if src:  # another checkout's controller (e.g. the code before a change), against the same server
        env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=base, env=env)
    pid = proc.pid
    if profile:  # py-spy's child is the controller
        time.sleep(0.5)
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        pid = int(children[0]) if children else proc.pid
    cpu_first: float | None = None
    server_first = wait_first = server_wait_first = 0.0
    while not done.wait(0.005):
        if cpu_first is None and seen:
            cpu_first = cpu_seconds(pid)
            server_first = sum(cpu_seconds(p) for p in server.pids())
            wait_first = runqueue_seconds(pid)
            server_wait_first = sum(runqueue_seconds(p) for p in server.pids())
        if time.monotonic() - t0 > 600 or proc.poll() is not None:
            break
    cpu_last = cpu_seconds(pid)
    server_last = sum(cpu_seconds(p) for p in server.pids())
    wait_last = runqueue_seconds(pid)
    server_wait_last = sum(runqueue_seconds(p) for p in server.pids())
    load = os.getloadavg()[0]
    requests_after = server.requests(client)
    t_last = max(seen.values()) if seen else time.monotonic()
    t_first = min(seen.values()) if seen else t0
    proc.send_signal(2)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
    watch.close()
    client.close()
    window = max(t_last - t_first, 1e-9)
    return {
        "workloads": n,
        "cluster_queues": queues,
        "admitted": len(seen),
        "create_s": round(create_s, 2),
        "start_to_first_s": round(t_first - t0, 2),
        "admissions_per_s": round(len(seen) / window, 1),
        "admissions_per_s_from_start": round(len(seen) / max(t_last - t0, 1e-9), 1),
        "cpu_ms_per_workload": round(cpu_last * 1000 / n, 2),
        "cpu_ms_per_workload_window": round((cpu_last - (cpu_first or 0.0)) * 1000 / n, 2),
        # CPU cores busy during the admission window: the controller's and the API server's.
        "controller_cores": round((cpu_last - (cpu_first or 0.0)) / window, 2),
        "server_cores": round((server_last - server_first) / window, 2),
        # Threads runnable but waiting for a CPU, per second of the window (summed over threads):
        # above 0 the machine, not the process, holds the work back.
        "controller_runqueue_wait": round((wait_last - wait_first) / window, 2),
        "server_runqueue_wait": round((server_wait_last - server_wait_first) / window, 2),
        "loadavg_1m": round(load, 1),
        # The controller's requests per admission by verb and resource (kube-apiserver's
        # apiserver_request_total from the controller's start to the last admission).
        **({"requests_per_admission": {
            k: round((v - requests_before.get(k, 0)) / n, 2)
            for k, v in sorted(requests_after.items()) if v - requests_before.get(k, 0) >= n / 100
        }} if requests_after else {}),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--server", choices=("kube", "serve"), required=True)
    p.add_argument("--workloads", type=int, default=2000)
    p.add_argument("--cluster-queues", type=int, default=1,
                   help="ClusterQueues in the one cohort, each with a LocalQueue; workloads spread round-robin "
                        "(upstream admits one head per ClusterQueue per scheduling cycle)")  # fmt: skip
    p.add_argument("--qps", type=float, default=None, help="clientConnection.qps (default: Kueue's)")
    p.add_argument("--burst", type=int, default=None, help="clientConnection.burst (default: Kueue's)")
    p.add_argument("--profile", default=None, help="py-spy record the controller (collapsed stacks, per thread) into this file")
    p.add_argument("--keep", action="store_true", help="keep the scratch directory")
    p.add_argument("--src", default=None, help="run the controller from this source directory (PYTHONPATH)")
    p.add_argument("--server-src", default=None, help="run `pykueue serve` from this source directory (PYTHONPATH)")
    p.add_argument("--repeat", type=int, default=1, help="runs, each on a fresh server")
    p.add_argument("controller_args", nargs="*", help="more `pykueue controller` flags (after --)")
    args = p.parse_args()
    if args.cluster_queues < 1:
        p.error(f"--cluster-queues: must be at least 1, got {args.cluster_queues}")
    for _ in range(args.repeat):
        base = Path(tempfile.mkdtemp(prefix="cluster-throughput-"))
        server: Server = Kube(base) if args.server == "kube" else Serve(base, args.server_src)
        try:
            result = run(server, base, args.workloads, args.qps, args.burst, args.profile, args.src, args.controller_args,
                         args.cluster_queues)  # fmt: skip
        finally:
            server.stop()
            if not args.keep:
                shutil.rmtree(base, ignore_errors=True)
        print(json.dumps({"server": args.server, "src": args.src or "this", "server_src": args.server_src or "this", **result}),
              flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
