"""CPU instructions per Workload create, admission status PUT, "Finished" status PUT, "Finished"
server-side apply and Event POST through the API server's request path (deterministic, unlike
time): what the writes of one workload's life cost ``pykueue serve`` in cluster mode.

Usage: python bench/status_put_instructions.py [--objects 200] [--src DIR] [--jobs 2]

Runs an in-process loop (``Handlers.handle`` on a real SQLite store in WAL mode, acknowledgements
deferred as on the server's event loop, no HTTP) under ``valgrind --tool=callgrind`` nine times:
start-up only; ``--objects`` Workload creates; the same plus one status PUT per Workload as the
controller's admission writes it (``status.admission``, the ``QuotaReserved`` and ``Admitted``
conditions); the same plus one more status PUT per Workload as the job runner writes it when the
job ends (a ``Finished`` condition added to the admitted object), measured against a run that
builds those bodies without sending them; the same with the ``Finished`` condition written as
upstream's scheduler-perf runner writes it instead (a forced server-side apply of the status,
:func:`finished_apply`), against its own run that builds the bodies; the creates plus one Event
POST per Workload (core/v1, as the job runner sends them; and events.k8s.io/v1, as the
controller's recorder does). The differences divided by ``--objects`` are the instructions of one
create, one admission status PUT, one Finished status PUT, one Finished apply and one Event POST,
start-up (and the earlier writes) excluded. ``--src`` measures another checkout (e.g. ``git
archive <commit> src | tar -x -C /tmp/base``). Needs valgrind.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from instructions import callgrind_collected  # bench/ is the script's directory

ROOT = Path(__file__).resolve().parents[1]
NOW = "2026-11-26T10:00:00Z"


def workload(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": f"wl-{i:05d}", "namespace": "default"},
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]},
    }  # fmt: skip


def admitted(stored: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(stored)
    obj["status"] = {
        "admission": {"clusterQueue": "cq", "podSetAssignments": [
            {"name": "main", "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "1"}, "count": 1}]},
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "observedGeneration": 1,
             "message": "Quota reserved in ClusterQueue cq", "lastTransitionTime": NOW},
            {"type": "Admitted", "status": "True", "reason": "Admitted", "observedGeneration": 1,
             "message": "The workload is admitted", "lastTransitionTime": NOW}],
        "resourceRequests": [{"name": "main", "resources": {"cpu": "1"}}],
    }  # fmt: skip
    return obj


def finished(stored: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(stored)
    obj["status"]["conditions"].append(
        {"type": "Finished", "status": "True", "reason": "Succeeded", "observedGeneration": 1,
         "message": "Job finished successfully", "lastTransitionTime": NOW})  # fmt: skip
    return obj


APPLY_PATCH = "application/apply-patch+yaml"
FINISHED_MANAGER = "kueue-job-controller-Finished"
"""Upstream's runner: ``workload.SetConditionAndUpdate(..., constants.JobControllerName, ...)``
owns the condition as ``<JobControllerName>-<condition type>``."""


def finished_apply(stored: dict[str, Any]) -> dict[str, Any]:
    """The Finished condition as upstream's scheduler-perf runner writes it: a server-side apply of
    the status subresource (``patching.PatchStatus`` → ``baseSSAWorkload``: identity, generation,
    labels, annotations and, strict by default, the resourceVersion; Go's zero spec encodes
    ``podSets: null``), sent as JSON with content type ``application/apply-patch+yaml``,
    ``?fieldManager=kueue-job-controller-Finished&force=true``. Captured from the runner against
    ``pykueue serve``."""
    meta = stored["metadata"]
    out_meta: dict[str, Any] = {"name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"],
                                "resourceVersion": meta["resourceVersion"], "generation": meta["generation"]}
    for key in ("labels", "annotations"):
        if meta.get(key):
            out_meta[key] = dict(meta[key])
    return {
        "kind": "Workload", "apiVersion": "kueue.x-k8s.io/v1beta2", "metadata": out_meta, "spec": {"podSets": None},
        "status": {"conditions": [
            {"type": "Finished", "status": "True", "observedGeneration": meta["generation"],
             "lastTransitionTime": NOW, "reason": "ByTest", "message": "By test runner"}]},
    }  # fmt: skip


def event(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": f"wl-{i:05d}.abc", "namespace": "default"},
        "involvedObject": {"kind": "Workload", "namespace": "default", "name": f"wl-{i:05d}",
                           "apiVersion": "kueue.x-k8s.io/v1beta2"},
        "reason": "QuotaReserved", "message": "Quota reserved in ClusterQueue cq, wait time since queued was 1s",
        "type": "Normal", "source": {"component": "kueue-admission"}, "firstTimestamp": NOW, "lastTimestamp": NOW,
        "count": 1, "reportingComponent": "kueue-admission",
    }  # fmt: skip


def event_v1(i: int) -> dict[str, Any]:
    """An events.k8s.io/v1 Event as the controller's recorder writes it (runtime/recorder.py)."""
    return {
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": f"wl-{i:05d}.abc", "namespace": "default"},
        "eventTime": "2026-11-26T10:00:00.000000Z", "reportingController": "kueue-admission",
        "reportingInstance": "kueue-admission-pykueue", "action": "Admission", "reason": "QuotaReserved",
        "regarding": {"kind": "Workload", "namespace": "default", "name": f"wl-{i:05d}",
                      "apiVersion": "kueue.x-k8s.io/v1beta2"},
        "note": "Quota reserved in ClusterQueue cq, wait time since queued was 1s", "type": "Normal",
    }  # fmt: skip


def inner(count: int, mode: str, src: str) -> None:
    """The measured program: start-up, then (``mode``) ``count`` creates, admission and Finished
    status PUTs, or Event POSTs."""
    sys.path.insert(0, src)
    from pykueue.apiserver.app import APIServerApp
    from pykueue.apiserver.handlers import APIRequest
    from pykueue.store import Store

    with tempfile.TemporaryDirectory() as tmp, Store(str(Path(tmp) / "store.db")) as store:
        app = APIServerApp(store)
        app.bootstrap()

        def handle(method: str, group: str, version: str, resource: str, body: dict[str, Any], **kw: Any) -> bytes:
            # json.dumps' separators: the runner's Go encoder writes compact JSON
            data = json.dumps(body, separators=(",", ":")).encode() if method == "PATCH" else json.dumps(body).encode()
            req = APIRequest(method, group, version, resource, namespace="default", body=data, **kw)
            with store.deferred_acks():  # as on the server's loop: the fsync is shared, not timed here
                resp = app.handlers.handle(req)
            if resp.status >= 300:
                raise SystemExit(f"{method} {resource}: {resp.status} {resp.body[:300]!r}")
            return resp.body

        if mode == "start":
            return
        stored = [json.loads(handle("POST", "kueue.x-k8s.io", "v1beta2", "workloads", workload(i))) for i in range(count)]
        if mode in ("put", "prepared", "finished", "applied", "apply"):
            answers = [handle("PUT", "kueue.x-k8s.io", "v1beta2", "workloads", admitted(obj),
                              name=obj["metadata"]["name"], subresource="status") for obj in stored]  # fmt: skip
        if mode in ("prepared", "finished"):  # the runner's bodies, built from the admitted objects
            bodies = [finished(json.loads(answer)) for answer in answers]
        if mode in ("applied", "apply"):  # the runner's bodies, built from the admitted objects
            applies = [finished_apply(json.loads(answer)) for answer in answers]
        if mode == "apply":
            for body in applies:
                handle("PATCH", "kueue.x-k8s.io", "v1beta2", "workloads", body, name=body["metadata"]["name"],
                       subresource="status", content_type=APPLY_PATCH,
                       query={"fieldManager": [FINISHED_MANAGER], "force": ["true"]})  # fmt: skip
        if mode == "finished":
            for body in bodies:
                handle("PUT", "kueue.x-k8s.io", "v1beta2", "workloads", body, name=body["metadata"]["name"],
                       subresource="status")  # fmt: skip
        elif mode == "event":
            for i in range(count):
                handle("POST", "", "v1", "events", event(i))
        elif mode == "event2":
            for i in range(count):
                handle("POST", "events.k8s.io", "v1", "events", event_v1(i))


def instructions(count: int, mode: str, src: str) -> int:
    """Instructions of a whole run of :func:`inner` (callgrind's ``Collected`` count)."""
    return callgrind_collected([__file__, "--inner", mode, "--objects", str(count), "--src", src])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=200)
    parser.add_argument("--src", default=str(ROOT / "src"), help="the src/ directory to measure")
    parser.add_argument("--jobs", type=int, default=2, help="valgrind runs at a time")
    parser.add_argument("--inner", help=argparse.SUPPRESS,
                        choices=("start", "create", "put", "prepared", "finished", "applied", "apply", "event", "event2"))
    args = parser.parse_args()
    if args.inner:
        inner(args.objects, args.inner, args.src)
        return
    modes = ("start", "create", "put", "prepared", "finished", "applied", "apply", "event", "event2")
    with ThreadPoolExecutor(args.jobs) as pool:  # deterministic counts: the runs may overlap
        start, base, put, prepared, done, applied, apply, ev, ev2 = pool.map(
            lambda m: instructions(args.objects, m, args.src), modes)
    print(json.dumps({
        "src": args.src,
        "objects": args.objects,
        "instructions_per_create": (base - start) // args.objects,
        "instructions_per_status_put": (put - base) // args.objects,
        "instructions_per_finished_put": (done - prepared) // args.objects,
        "instructions_per_finished_apply": (apply - applied) // args.objects,
        "instructions_per_event_post": (ev - base) // args.objects,
        "instructions_per_events_v1_post": (ev2 - base) // args.objects,
    }))  # fmt: skip


if __name__ == "__main__":
    main()
