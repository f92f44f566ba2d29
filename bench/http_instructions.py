"""CPU instructions per request of ``pykueue serve``'s API process over real HTTPS keep-alive
connections, and how many of them are outside the handlers (deterministic, unlike time).

Usage: python bench/http_instructions.py [--requests 200] [--watchers 2] [--src DIR] [--split]
                                          [--keep DIR]

Starts ``pykueue serve``'s API (``server.serve`` after ``tune_gc``, as ``pykueue serve
--no-controllers``: uvicorn with the limited httptools protocol, uvloop, TLS with its own CA,
bearer tokens) under ``valgrind --tool=callgrind
--instr-atstart=no``; this script, outside valgrind, is the client: it reads the kubeconfig serve
writes, opens ``--watchers`` Workload watches (as the controller's informers do; their events are
sent during the measurement and so counted), warms every kind of request up, then for each kind
switches callgrind's instrumentation on (``callgrind_control -i on``), sends ``--requests``
requests of that kind one after another on one keep-alive TLS connection with the headers
client-go sends, waits for the watchers to have received what those requests produced, switches
it off and dumps the counters (``callgrind_control -d``). The kinds are a Workload create (POST),
its admission status PUT, the ``Finished`` forced server-side apply of ``/status`` as upstream's
runner sends it, a core/v1 Event POST and a Workload GET; an ``idle`` phase of the same length
without requests measures the background (timers) that is in every figure.

``--split`` runs the server a second time with callgrind's collection switched off inside
``Handlers.handle`` (a ``CALLGRIND_TOGGLE_COLLECT`` around it, through a small C library built
with gcc): that run's figures are the instructions outside the handlers, the difference to the
first the handlers'. ``--src`` measures another checkout (``git archive <commit> src | tar -x -C
/tmp/base``, then ``--src /tmp/base/src``). ``--keep DIR`` keeps the callgrind dumps there (for
``callgrind_annotate --inclusive=yes``). Needs valgrind and, for ``--split``, gcc and valgrind's
headers. Callgrind counts user-space instructions of every thread of the process (the store's
fsync thread too), not the kernel's.
"""

from __future__ import annotations

import argparse
import copy
import glob
import http.client
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml
from status_put_instructions import APPLY_PATCH, FINISHED_MANAGER, admitted, event, finished_apply, workload

ROOT = Path(__file__).resolve().parents[1]
G = "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads"
EVENT = re.compile(rb'"type":"(?:ADDED|MODIFIED|DELETED)"')
KINDS = ("create", "status_put", "status_apply", "event_post", "get", "idle")
TOGGLE_C = r"""
#include <valgrind/callgrind.h>
void pyk_toggle_collect(void) { CALLGRIND_TOGGLE_COLLECT; }
"""


# --- the server (runs under valgrind) ------------------------------------------------------------


def server(data_dir: str, src: str, toggle_lib: str | None) -> None:
    """``pykueue serve --no-controllers`` on a kernel-chosen port; with ``toggle_lib``, collection
    switched off inside ``Handlers.handle``."""
    sys.path.insert(0, src)
    from pykueue.apiserver import handlers
    from pykueue.apiserver.server import ServeOptions, serve

    if toggle_lib is not None:
        import ctypes

        toggle = ctypes.CDLL(toggle_lib).pyk_toggle_collect
        original = handlers.Handlers.handle
        depth = [0]

        def handle(self: Any, req: Any) -> Any:
            outer = depth[0] == 0
            depth[0] += 1
            if outer:
                toggle()
            try:
                return original(self, req)
            finally:
                depth[0] -= 1
                if outer:
                    toggle()

        handlers.Handlers.handle = handle  # type: ignore[method-assign]
    from pykueue.cli.serve import tune_gc

    tune_gc()  # as ``pykueue serve`` does (the collector's thresholds: far fewer collections)
    options = ServeOptions(port=0, data_dir=Path(data_dir), controllers=False, log_level="error")
    sys.exit(serve(options, out=open(os.devnull, "w")))  # noqa: SIM115


# --- the client ----------------------------------------------------------------------------------


class Client:
    """One keep-alive HTTPS connection with client-go's headers."""

    def __init__(self, kubeconfig: Path) -> None:
        doc = yaml.safe_load(kubeconfig.read_text())
        cluster = doc["clusters"][0]["cluster"]
        url = cluster["server"]
        host, port = url.removeprefix("https://").rsplit(":", 1)
        self.ctx = ssl.create_default_context()
        ca = tempfile.NamedTemporaryFile("wb", suffix=".crt", delete=False)  # noqa: SIM115
        import base64

        ca.write(base64.b64decode(cluster["certificate-authority-data"]))
        ca.close()
        self.ctx.load_verify_locations(ca.name)
        self.host, self.port = host, int(port)
        self.token = doc["users"][0]["user"]["token"]
        self.conn = self.connect()

    def connect(self) -> http.client.HTTPSConnection:
        conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=600)
        conn.connect()
        return conn

    def headers(self, content_type: str | None = None) -> dict[str, str]:
        h = {
            "User-Agent": "kueue/v0.15.0 (linux/amd64) kubernetes/$Format",
            "Accept": "application/json, */*",
            "Authorization": f"Bearer {self.token}",
            "Accept-Encoding": "gzip",
        }
        if content_type:
            h["Content-Type"] = content_type
        return h

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        self.conn.request(method, path, body=data, headers=self.headers(content_type if data else None))
        resp = self.conn.getresponse()
        payload = resp.read()
        if resp.status >= 300:
            raise SystemExit(f"{method} {path}: {resp.status} {payload[:300]!r}")
        return json.loads(payload)


class Watcher(threading.Thread):
    """A Workload watch (an informer's), counting the events it receives."""

    def __init__(self, client: Client, resource_version: str) -> None:
        super().__init__(daemon=True)
        self.client = client
        self.rv = resource_version
        self.events = 0
        self.cond = threading.Condition()

    def run(self) -> None:
        conn = self.client.connect()
        path = f"{G}?watch=true&allowWatchBookmarks=true&resourceVersion={self.rv}"
        conn.request("GET", path, headers=self.client.headers())
        resp = conn.getresponse()
        while True:
            line = resp.fp.readline()  # the raw chunked stream: events are whole lines
            if not line:
                return
            found = len(EVENT.findall(line))
            if found:
                with self.cond:
                    self.events += found
                    self.cond.notify_all()

    def wait_for(self, count: int, timeout: float = 600) -> None:
        with self.cond:
            if not self.cond.wait_for(lambda: self.events >= count, timeout):
                raise SystemExit(f"watch: {self.events} events, expected {count}")


def callgrind(option: str, pid: int) -> None:
    cmd = ["callgrind_control", option, str(pid)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=600)


def dumped_total(out_dir: Path, before: set[str]) -> tuple[int, str]:
    for _ in range(120):
        new = sorted(set(glob.glob(str(out_dir / "cg.out*"))) - before)
        if new:
            text = Path(new[-1]).read_text(errors="replace")
            found = re.search(r"^totals: (\d+)", text, re.M)
            if found:
                return int(found.group(1)), new[-1]
        time.sleep(0.5)
    raise SystemExit("no callgrind dump appeared")


def run(src: str, count: int, watchers: int, split: bool, keep: Path | None) -> dict[str, int]:
    """One server under callgrind; instructions per request of each kind."""
    work = Path(tempfile.mkdtemp(prefix="httpinstr-"))
    toggle_lib = None
    if split:
        (work / "toggle.c").write_text(TOGGLE_C)
        toggle_lib = str(work / "toggle.so")
        subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", toggle_lib, str(work / "toggle.c")], check=True)
    data = work / "data"
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={work}/cg.out",
           sys.executable, __file__, "--server", str(data), "--src", src]  # fmt: skip
    if toggle_lib:
        cmd += ["--toggle-lib", toggle_lib]
    env = dict(os.environ, PYTHONPATH=src)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=open(work / "valgrind.log", "w"))  # noqa: SIM115
    try:
        kubeconfig = data / "kubeconfig"
        deadline = time.monotonic() + 900
        while not kubeconfig.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"server did not start:\n{(work / 'valgrind.log').read_text()[-3000:]}")
            time.sleep(0.5)
        client = Client(kubeconfig)
        client.request("GET", "/version")
        rv = client.request("GET", G)["metadata"]["resourceVersion"]
        watches = [Watcher(client, rv) for _ in range(watchers)]
        for w in watches:
            w.start()
        expected = 0

        def lifecycle(prefix: str, n: int, kind: str, stored: dict[str, list[Any]]) -> int:
            """``kind``'s ``n`` requests; returns the watch events they make."""
            if kind == "create":
                stored["created"] = [
                    client.request("POST", G, workload_named(f"{prefix}-{i:05d}")) for i in range(n)
                ]
                return n
            if kind == "status_put":
                stored["admitted"] = [
                    client.request("PUT", f"{G}/{o['metadata']['name']}/status", admitted(o)) for o in stored["created"]
                ]
                return n
            if kind == "status_apply":
                query = f"?fieldManager={FINISHED_MANAGER}&force=true"
                for o in stored["admitted"]:
                    client.request("PATCH", f"{G}/{o['metadata']['name']}/status{query}", finished_apply(o), APPLY_PATCH)
                return n
            if kind == "event_post":
                for i in range(n):
                    ev = event(i)
                    ev["metadata"]["name"] = f"{prefix}-{i:05d}.abc"
                    client.request("POST", "/api/v1/namespaces/default/events", ev)
                return 0
            if kind == "get":
                for o in stored["created"]:
                    client.request("GET", f"{G}/{o['metadata']['name']}")
                return 0
            return 0

        warm: dict[str, list[Any]] = {}
        for kind in KINDS[:-1]:  # warm-up: imports, caches, the first of each code path
            expected += lifecycle("warm", 30, kind, warm)
        for w in watches:
            w.wait_for(expected)
        out_dir = work
        results: dict[str, int] = {}
        measured: dict[str, list[Any]] = {}
        idle_seconds = 0.0
        for kind in KINDS:
            before = set(glob.glob(str(out_dir / "cg.out*")))
            callgrind("--zero", proc.pid)
            callgrind("--instr=on", proc.pid)
            started = time.monotonic()
            if kind == "idle":
                time.sleep(idle_seconds / (len(KINDS) - 1))
            made = lifecycle("wl", count, kind, measured)
            expected += made
            for w in watches:
                w.wait_for(expected)
            idle_seconds += time.monotonic() - started
            callgrind("--instr=off", proc.pid)
            callgrind(f"--dump={kind}", proc.pid)
            total, path = dumped_total(out_dir, before)
            results[kind] = total // count
            if keep is not None:
                keep.mkdir(parents=True, exist_ok=True)
                shutil.copy(path, keep / f"{'split-' if split else ''}{kind}.callgrind")
        return results
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(work, ignore_errors=True)


def workload_named(name: str) -> dict[str, Any]:
    obj = copy.deepcopy(workload(0))
    obj["metadata"]["name"] = name
    return obj


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--watchers", type=int, default=2)
    parser.add_argument("--src", default=str(ROOT / "src"), help="the src/ directory to measure")
    parser.add_argument("--split", action="store_true", help="also measure outside Handlers.handle")
    parser.add_argument("--keep", type=Path, help="keep the callgrind dumps in this directory")
    parser.add_argument("--server", help=argparse.SUPPRESS)
    parser.add_argument("--toggle-lib", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.server:
        server(args.server, args.src, args.toggle_lib)
        return
    total = run(args.src, args.requests, args.watchers, False, args.keep)
    report: dict[str, Any] = {"src": args.src, "requests": args.requests, "watchers": args.watchers}
    report["instructions_per_request"] = total
    if args.split:
        outside = run(args.src, args.requests, args.watchers, True, args.keep)
        report["outside_handlers"] = outside
        report["handlers"] = {k: total[k] - outside[k] for k in total}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
