"""Running Kueue end to end: ``pykueue serve`` with its controllers (embedded) or
``pykueue serve --no-controllers`` plus ``pykueue controller --kubeconfig`` (cluster mode).

The server process helpers come from the API server's end-to-end fixtures (one implementation of
"start the real server, drive it with the real kubectl"); this module adds the controller process
and Kueue-level helpers.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_CONFTEST = Path(__file__).resolve().parents[2] / "apiserver" / "e2e" / "conftest.py"
_spec = importlib.util.spec_from_file_location("apiserver_e2e_support", _CONFTEST)
assert _spec is not None and _spec.loader is not None
_support = importlib.util.module_from_spec(_spec)
sys.modules["apiserver_e2e_support"] = _support
_spec.loader.exec_module(_support)

ROOT: Path = _support.ROOT
SEEDS: Path = _support.SEEDS
ServerProcess = _support.ServerProcess
start_server = _support.start_server


@dataclass
class Kueue:
    """A running control plane with Kueue's controllers, in one of the two modes."""

    mode: str
    server: Any
    base: Path
    offset_file: Path
    controller: subprocess.Popen[str] | None = None
    extra: list[str] = field(default_factory=list)
    run_jobs: bool = True
    publish_pods: bool = True
    """With ``run_jobs``: the runner writes Pods and a Node (``serve --no-controllers`` has no kubelets)."""

    # -- processes ----------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop the controller process (cluster mode) and the server."""
        self.stop_controller()
        if self.server.alive():
            self.server.stop()

    def stop_controller(self, kill: bool = False) -> None:
        """Stop the separate controller process, if any."""
        if self.controller is not None and self.controller.poll() is None:
            if kill:
                self.controller.kill()
            else:
                self.controller.terminate()
            self.controller.wait(timeout=20)

    def start_controller(self) -> None:
        """Start ``pykueue controller`` against the server's kubeconfig (cluster mode)."""
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
        log = open(self.base / "controller.log", "a")  # noqa: SIM115 - owned by the child
        self.controller = subprocess.Popen(
            [
                sys.executable, "-m", "pykueue", "controller",
                "--kubeconfig", str(self.server.kubeconfig),
                "--work-dir", str(self.base / "pods"),
                "--time-offset-file", str(self.offset_file), *self.extra,
                *(["--run-jobs"] if self.run_jobs else []),
                *(["--publish-pods"] if self.run_jobs and self.publish_pods else []),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=self.base,
        )
        log.close()

    def controller_log(self) -> str:
        """The separate controller's output (cluster mode) or the server's log."""
        path = self.base / "controller.log"
        return path.read_text() if path.exists() else self.server.log()

    # -- time ------------------------------------------------------------------------------------------

    def advance(self, seconds: float) -> None:
        """Move the controllers' clock forward (shared through the offset file)."""
        current = float(self.offset_file.read_text() or 0) if self.offset_file.exists() else 0.0
        tmp = self.offset_file.with_suffix(".tmp")
        tmp.write_text(repr(current + seconds))
        tmp.replace(self.offset_file)

    # -- kubectl ----------------------------------------------------------------------------------------

    def kubectl(self, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        """The real kubectl against the server."""
        result: subprocess.CompletedProcess[str] = self.server.kubectl(*args, **kw)
        return result

    def apply(self, manifest: str) -> None:
        """``kubectl apply -f -``."""
        self.kubectl("apply", "-f", "-", stdin=manifest)

    def get(self, kind: str, name: str, namespace: str | None = "default") -> dict[str, Any]:
        """``kubectl get -o json``."""
        args = ["get", kind, name, "-o", "json"]
        if namespace:
            args += ["-n", namespace]
        out: dict[str, Any] = json.loads(self.kubectl(*args).stdout)
        return out

    def items(self, kind: str, namespace: str | None = "default") -> list[dict[str, Any]]:
        """``kubectl get <kind> -o json`` items."""
        args = ["get", kind, "-o", "json"] + (["-n", namespace] if namespace else ["-A"])
        items: list[dict[str, Any]] = json.loads(self.kubectl(*args).stdout)["items"]
        return items

    def workload_of(self, job: str, namespace: str = "default") -> dict[str, Any] | None:
        """The Workload owned by Job ``job``."""
        for wl in self.items("workloads", namespace):
            refs = wl["metadata"].get("ownerReferences") or []
            if any(r["kind"] == "Job" and r["name"] == job for r in refs):
                return wl
        return None


def condition(obj: dict[str, Any] | None, ctype: str) -> dict[str, Any] | None:
    """The condition ``ctype`` of an object's status."""
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c["type"] == ctype:
            return dict(c)
    return None


def is_true(obj: dict[str, Any] | None, ctype: str) -> bool:
    """Whether condition ``ctype`` is True."""
    c = condition(obj, ctype)
    return c is not None and c["status"] == "True"


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (reparented zombies may linger in
    containers). One read of ``/proc/PID/stat``: a process reaped between an existence check and
    the read made a two-step check fail (FileNotFoundError in CI); the file is world-readable, so a
    sandboxed process of another user is seen too (``os.kill(pid, 0)`` would raise for it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    fields = stat.rpartition(b")")[2].split()
    return bool(fields) and fields[0] != b"Z"


def wait_for(predicate: Callable[[], Any], timeout: float = 20.0, interval: float = 0.1, what: str = "") -> Any:
    """Poll until ``predicate()`` is truthy; return its value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met in time: {what}")
        time.sleep(interval)


def start_kueue(base: Path, mode: str, extra: list[str] | None = None, *, run_jobs: bool = True) -> Kueue:
    """Start the control plane in ``mode`` (``embedded`` or ``cluster``)."""
    offset = base / "clock-offset"
    offset.write_text("0")
    flags = list(extra or [])
    if mode == "embedded":
        server = start_server(base, ["--time-offset-file", str(offset), *flags], controllers=True)
        # The controllers (their own process by default) start after the API: wait for them, as an
        # in-process start did in a few milliseconds.
        wait_for(
            lambda: any("initial sync done" in line for line in list(server.output)) or not server.alive(),
            timeout=60, what="the controllers' initial sync",
        )  # fmt: skip
        return Kueue(mode, server, base, offset)
    server = start_server(base, ["--no-controllers"])
    kueue = Kueue(mode, server, base, offset, extra=flags, run_jobs=run_jobs)
    kueue.start_controller()
    return kueue


# --- manifests shared by the e2e tests ------------------------------------------------------------------

LQ = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  namespace: default
  name: {name}
spec:
  clusterQueue: {cq}
"""

JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: default
  labels:
    kueue.x-k8s.io/queue-name: {queue}
spec:
  parallelism: {parallelism}
  completions: {parallelism}
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "{command}"]
        resources:
          requests:
            cpu: "{cpu}"
            memory: 100Mi
"""


def job(name: str, queue: str, command: str = "sleep 1", cpu: str = "1", parallelism: int = 1) -> str:
    """A batch/v1 Job in ``default`` for ``queue`` (busybox running ``command``)."""
    return JOB.format(name=name, queue=queue, command=command, cpu=cpu, parallelism=parallelism)


def local_queue(name: str, cq: str) -> str:
    """A LocalQueue in ``default`` pointing at ``cq``."""
    return LQ.format(name=name, cq=cq)
