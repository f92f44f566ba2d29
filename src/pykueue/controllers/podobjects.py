"""The job runner's Pod and Node objects: what the Job controller and the kubelet write on a cluster.

For every pod the runner creates it creates a ``core/v1`` Pod as the Job controller does
(``pkg/controller/job``: name ``<job>-<random>`` or ``<job>-<index>-<random>``, the template's
labels and annotations plus ``batch.kubernetes.io/job-name``, ``job-name``,
``batch.kubernetes.io/controller-uid``, ``controller-uid`` and, for Indexed Jobs, the completion
index label and annotation; an ownerReference to the Job with ``controller: true``), bound to the
local Node (``spec.nodeName``), and writes its status as the kubelet does: phase
Pending/Running/Succeeded/Failed, the conditions PodScheduled, Initialized, ContainersReady and
Ready (``PodReadyToStartContainers`` too), ``containerStatuses`` with running/terminated states
and exit codes, ``startTime``, ``podIP`` / ``hostIP`` 127.0.0.1.

These writes stay off the runner's hot path: the runner only records that a pod changed
(:meth:`PodPublisher.changed`); a publisher thread writes each changed pod's newest state, so a pod
that changes several times before the thread gets to it is written once (coalesced). A pod the
runner removes (suspension, lower parallelism, the Job finishing with pods still running) is
deleted, as the Job controller deletes it; the Pods of a deleted Job go with it through the
store's ownerReference garbage collection.

A Pod deleted by a user is the runner's business too (:meth:`JobRunner` watches Pods): its process
is killed and the Job counts it by how it ended, as a real cluster does.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import platform
import socket
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from pykueue.api.meta import format_time, parse_time
from pykueue.client.interface import AlreadyExists, APIError, Client, NotFound
from pykueue.client.resources import NODES, PODS
from pykueue.controllers.podsandbox import read_json
from pykueue.runtime.controller import WorkQueue
from pykueue.runtime.recorder import EventRecorder

log = logging.getLogger(__name__)

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_JOB_NAME_LABEL = "job-name"
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
LOCAL_IP = "127.0.0.1"
KUBELET_VERSION = "v1.31.0-pykueue"
CONTAINER_RUNTIME = "pykueue-process://1"


class RunnerPod(Protocol):
    """What the publisher reads of the runner's pod record."""

    name: str
    uid: str
    index: int | None
    namespace: str
    job_name: str
    job_uid: str
    template: dict[str, Any]
    exit_code: int | None
    started_at: datetime | None
    finished_at: datetime | None

    @property
    def has_process(self) -> bool: ...


def node_name() -> str:
    """The local Node's name: the host name, lower-cased (node names are DNS subdomains)."""
    return socket.gethostname().lower() or "localhost"


def _memory_bytes() -> int:
    with contextlib.suppress(OSError, ValueError):
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return 0


def _os_image() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.partition("=")[2].strip().strip('"')
    return platform.system()


_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm"}


def node_object(name: str) -> dict[str, Any]:
    """The local machine as a Node (the kubelet's ``initialNode``)."""
    arch = _ARCH.get(platform.machine(), platform.machine())
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": arch,
                "beta.kubernetes.io/os": "linux",
                "beta.kubernetes.io/arch": arch,
            },
        },
        "spec": {},
    }


def node_status(name: str, now: datetime) -> dict[str, Any]:
    """Capacity from the machine (cpu count, physical memory), Ready, addresses and node info."""
    capacity = {"cpu": str(os.cpu_count() or 1), "memory": f"{_memory_bytes() // 1024}Ki", "pods": "110"}
    stamp = format_time(now)
    return {
        "capacity": capacity,
        "allocatable": dict(capacity),
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
                "lastHeartbeatTime": stamp,
                "lastTransitionTime": stamp,
            }
        ],
        "addresses": [{"type": "InternalIP", "address": LOCAL_IP}, {"type": "Hostname", "address": name}],
        "nodeInfo": {
            "kernelVersion": platform.release(),
            "osImage": _os_image(),
            "containerRuntimeVersion": CONTAINER_RUNTIME,
            "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": "",
            "operatingSystem": "linux",
            "architecture": _ARCH.get(platform.machine(), platform.machine()),
            "machineID": "",
            "systemUUID": "",
            "bootID": "",
        },
    }


def register_node(client: Client, name: str, now: datetime) -> None:
    """Create the local Node (or take over an existing one) and write its status."""
    try:
        node = client.create(NODES, node_object(name))
    except AlreadyExists:
        node = client.get(NODES, name)
    client.replace(NODES, {**node, "status": node_status(name, now)}, subresource="status")


def pod_object(pod: RunnerPod, node: str) -> dict[str, Any]:
    """The Pod the Job controller would create for ``pod`` (already bound to ``node``)."""
    template = pod.template
    meta = template.get("metadata") or {}
    labels = dict(meta.get("labels") or {})
    annotations = dict(meta.get("annotations") or {})
    labels[JOB_NAME_LABEL] = labels[LEGACY_JOB_NAME_LABEL] = pod.job_name
    labels[CONTROLLER_UID_LABEL] = labels[LEGACY_CONTROLLER_UID_LABEL] = pod.job_uid
    spec = copy.deepcopy(dict(template.get("spec") or {}))
    if pod.index is not None:
        labels[COMPLETION_INDEX] = annotations[COMPLETION_INDEX] = str(pod.index)
        spec.setdefault("hostname", f"{pod.job_name}-{pod.index}")
    spec["nodeName"] = node
    metadata: dict[str, Any] = {
        "name": pod.name,
        "namespace": pod.namespace,
        "labels": labels,
        "ownerReferences": [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": pod.job_name,
                "uid": pod.job_uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _condition(ctype: str, status: bool, stamp: str, reason: str = "") -> dict[str, Any]:
    cond: dict[str, Any] = {
        "type": ctype,
        "status": "True" if status else "False",
        "lastProbeTime": None,
        "lastTransitionTime": stamp,
    }
    if reason:
        cond["reason"] = reason
    return cond


def pod_status(pod: RunnerPod, created: datetime) -> dict[str, Any]:
    """The kubelet's view of ``pod`` now (``generateAPIPodStatus``, one container)."""
    containers = (pod.template.get("spec") or {}).get("containers") or [{}]
    container = containers[0]
    created_at = format_time(created)
    status: dict[str, Any] = {"hostIP": LOCAL_IP, "hostIPs": [{"ip": LOCAL_IP}]}
    cs: dict[str, Any] = {
        "name": str(container.get("name") or ""),
        "image": str(container.get("image") or ""),
        "imageID": "",
        "restartCount": 0,
        "ready": False,
        "started": False,
    }
    if pod.started_at is not None:
        cs["containerID"] = f"pykueue://{pod.uid}"
    started = format_time(pod.started_at) if pod.started_at is not None else None
    if pod.exit_code is not None:
        code = pod.exit_code
        finished = format_time(pod.finished_at or pod.started_at or created)
        terminated: dict[str, Any] = {
            "exitCode": code,
            "reason": "Completed" if code == 0 else "Error",
            "startedAt": started,
            "finishedAt": finished,
        }
        if pod.started_at is None:
            terminated["reason"] = "StartError"
        cs["state"] = {"terminated": terminated}
        phase = "Succeeded" if code == 0 else "Failed"
        ready = [
            _condition("ContainersReady", False, finished, "PodCompleted"),
            _condition("Ready", False, finished, "PodCompleted"),
        ]
        to_start = _condition("PodReadyToStartContainers", False, finished)
    elif pod.started_at is not None:
        assert started is not None
        cs.update(ready=True, started=True, state={"running": {"startedAt": started}})
        phase = "Running"
        ready = [_condition("ContainersReady", True, started), _condition("Ready", True, started)]
        to_start = _condition("PodReadyToStartContainers", True, started)
    else:
        cs["state"] = {"waiting": {"reason": "ContainerCreating"}}
        phase = "Pending"
        ready = [
            _condition("ContainersReady", False, created_at, "ContainersNotReady"),
            _condition("Ready", False, created_at, "ContainersNotReady"),
        ]
        ready[0]["message"] = ready[1]["message"] = f"containers with unready status: [{cs['name']}]"
        to_start = _condition("PodReadyToStartContainers", False, created_at)
    status["phase"] = phase
    status["conditions"] = [
        to_start,
        _condition("Initialized", True, created_at),
        *ready,
        _condition("PodScheduled", True, created_at),
    ]
    status["containerStatuses"] = [cs]
    if pod.started_at is not None or pod.exit_code is not None:
        status["podIP"] = LOCAL_IP
        status["podIPs"] = [{"ip": LOCAL_IP}]
        status["startTime"] = started or created_at
    return status


class _Entry:
    __slots__ = ("adopted", "created", "created_at", "deleted", "gone", "object", "pod", "started", "written")

    def __init__(self, pod: RunnerPod, created_at: datetime) -> None:
        self.pod = pod
        self.created = False  # the Pod object exists
        self.created_at = created_at
        self.deleted = False  # the runner removed the pod: delete the object
        self.gone = False  # the object was deleted by someone else: write nothing more
        self.written: dict[str, Any] | None = None  # the last status written
        self.adopted = False  # found running after a restart: its object's spec is read back first
        self.object: dict[str, Any] | None = None  # the created Pod (what its Events are about)
        self.started = False  # the kubelet's "Started" Event was recorded


class PodPublisher:
    """Writes the runner's pods as Pod objects from its own thread, on the runtime's one
    :class:`~pykueue.runtime.controller.WorkQueue` keyed by the runner pod's uid (changes coalesce;
    a failed write is retried alone with backoff)."""

    def __init__(self, client: Client, node: str, clock: Callable[[], datetime]) -> None:
        self.client = client
        self.node = node
        self.clock = clock
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}  # runner pod uid -> entry, guarded by _lock
        self._by_name: dict[tuple[str, str], str] = {}  # (namespace, pod name) -> runner pod uid
        self._work: WorkQueue[str] = WorkQueue(clock)
        self._thread: threading.Thread | None = None
        # Events as a cluster's scheduler and kubelet record them (for kubectl describe pod).
        self._scheduler = EventRecorder(client, "default-scheduler", clock)
        self._kubelet = EventRecorder(client, "kubelet", clock)

    def start(self) -> None:
        """Register the local Node, then start writing."""
        try:
            register_node(self.client, self.node, self.clock())
        except APIError as err:
            log.warning("job runner: cannot register Node %s: %s", self.node, err)
        self._thread = threading.Thread(target=self._loop, name="pod-publisher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop after the write in progress (a restarted runner adopts what is left)."""
        self._work.shut_down()
        if self._thread is not None:
            self._thread.join(timeout=10)

    # -- from the runner (cheap: no I/O) ------------------------------------------------------------

    def added(self, pod: RunnerPod) -> None:
        """A new pod of the runner: its object is created (Pending)."""
        with self._lock:
            self._entries[pod.uid] = _Entry(pod, self.clock())
            self._by_name[(pod.namespace, pod.name)] = pod.uid
        self._work.add(pod.uid)

    def adopted(self, pod: RunnerPod) -> None:
        """A pod a previous runner started (its object exists): its status is kept up to date."""
        with self._lock:
            entry = _Entry(pod, pod.started_at or self.clock())
            entry.created = entry.adopted = True
            self._entries[pod.uid] = entry
            self._by_name[(pod.namespace, pod.name)] = pod.uid
        self._work.add(pod.uid)

    def changed(self, pod: RunnerPod) -> None:
        """The pod started or ended: its status is written (its newest state, once)."""
        with self._lock:
            known = pod.uid in self._entries
        if known:
            self._work.add(pod.uid)

    def removed(self, pod: RunnerPod) -> None:
        """The runner removed the pod (as the Job controller deletes one): its object is deleted."""
        with self._lock:
            entry = self._entries.get(pod.uid)
            if entry is not None:
                entry.deleted = True
        if entry is not None:
            self._work.add(pod.uid)

    def deleted_by_user(self, namespace: str, name: str, object_uid: str) -> str | None:
        """The Pod object is gone (deleted through the API): the runner pod's uid, or None if not ours."""
        with self._lock:
            uid = self._by_name.get((namespace, name))
            entry = self._entries.get(uid) if uid is not None else None
            if entry is None or not entry.created or entry.deleted:
                return None
            entry.gone = True
            return uid

    def forget_job(self, job_uid: str) -> None:
        """The Job is gone: its Pods go with it (garbage collection); nothing more is written."""
        with self._lock:
            for uid in [u for u, e in self._entries.items() if e.pod.job_uid == job_uid]:
                entry = self._entries.pop(uid)
                self._by_name.pop((entry.pod.namespace, entry.pod.name), None)

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Block until every change so far is written (tests, benchmarks)."""
        deadline = time.monotonic() + timeout
        while not self._work.idle():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True

    # -- the publisher thread -----------------------------------------------------------------------

    def _loop(self) -> None:
        while (uid := self._work.get()) is not None:
            with self._lock:
                entry = self._entries.get(uid)
            if entry is None:  # dropped meanwhile (its Job is gone)
                self._work.forget(uid)
                self._work.done(uid)
                continue
            try:
                self._write(entry)
            except APIError as err:
                delay = self._work.add_rate_limited(uid)
                log.warning(
                    "job runner: pod %s/%s: %s; retrying in %.1fs", entry.pod.namespace, entry.pod.name, err, delay
                )
            except Exception:  # one bad write must not stop the publisher
                delay = self._work.add_rate_limited(uid)
                log.exception("job runner: writing pod %s failed; retrying in %.1fs", uid, delay)
            else:
                self._work.forget(uid)
            finally:
                self._work.done(uid)

    def _drop(self, entry: _Entry) -> None:
        with self._lock:
            self._entries.pop(entry.pod.uid, None)
            self._by_name.pop((entry.pod.namespace, entry.pod.name), None)

    def _write(self, entry: _Entry) -> None:
        pod = entry.pod
        if entry.gone:
            self._drop(entry)
            return
        if entry.deleted:
            if entry.created:
                with contextlib.suppress(NotFound):
                    self.client.delete(PODS, pod.name, pod.namespace)
            self._drop(entry)
            return
        if entry.adopted:
            # The runner's record of an adopted pod has no template: the object's spec is the one.
            try:
                live = self.client.get(PODS, pod.name, pod.namespace)
            except NotFound:
                self._drop(entry)
                return
            pod.template = {"metadata": live.get("metadata") or {}, "spec": live.get("spec") or {}}
            created = (live.get("metadata") or {}).get("creationTimestamp")
            if created:
                entry.created_at = parse_time(str(created))
            entry.adopted = False
            entry.object = live
            # The previous runner records Started right after writing the started container's
            # status: if its status does not show that, it died in between and Started is recorded
            # now, as for a pod this runner started (a kubelet records it once per container start).
            entry.started = _container_started(live)
        if not entry.created:
            try:
                entry.object = self.client.create(PODS, pod_object(pod, self.node))
            except NotFound:  # its namespace or Job is being deleted
                self._drop(entry)
                return
            except AlreadyExists:
                pass
            entry.created = True
            if entry.object is not None:
                message = f"Successfully assigned {pod.namespace}/{pod.name} to {self.node}"
                self._scheduler.event(entry.object, "Normal", "Scheduled", message, action="Binding")
        status = pod_status(pod, entry.created_at)
        if status != entry.written:
            try:
                self.client.patch(PODS, pod.name, {"status": status}, pod.namespace, subresource="status")
            except NotFound:
                self._drop(entry)
                return
            entry.written = status
        if pod.started_at is not None and not entry.started and entry.object is not None:
            entry.started = True
            cname = status["containerStatuses"][0]["name"]
            self._kubelet.event(entry.object, "Normal", "Started", f"Started container {cname}")
        # Final: nothing more is written (a finished Pod stays until its Job goes), unless a change
        # (e.g. its removal) arrived meanwhile.
        if pod.exit_code is not None and not self._work.pending(pod.uid):
            with self._lock:
                self._entries.pop(pod.uid, None)
                self._by_name.pop((pod.namespace, pod.name), None)


def _container_started(pod: Mapping[str, Any]) -> bool:
    """Whether the Pod's status shows its container started (running, or ended after running)."""
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        state = cs.get("state") or {}
        if "running" in state or (state.get("terminated") or {}).get("startedAt"):
            return True
    return False


def pod_log_dir(work_dir: Path, pod: Mapping[str, Any]) -> Path | None:
    """The record directory of a stored Pod the runner ran (``WORK_DIR/<ns>/<job>/<pod>``), or None.

    The path is built from the Pod's namespace, its controlling Job's name and its own name, each
    checked to be a plain path component; the record found there must name the same pod, namespace
    and Job uid, so a Pod object can only ever reach its own record."""
    meta = pod.get("metadata") or {}
    owner = next(
        (r for r in meta.get("ownerReferences") or [] if r.get("kind") == "Job" and r.get("controller")), None
    )
    if owner is None:
        return None
    parts = [str(meta.get("namespace") or ""), str(owner.get("name") or ""), str(meta.get("name") or "")]
    if any(not p or p in (".", "..") or "/" in p or "\0" in p for p in parts):
        return None
    directory = work_dir.joinpath(*parts)
    spec = read_json(directory / "spec.json")
    if spec is None:
        return None
    if (spec.get("pod"), spec.get("namespace"), spec.get("jobUID")) != (parts[2], parts[0], owner.get("uid")):
        return None
    return directory
