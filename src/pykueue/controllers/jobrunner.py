"""The local job runner: runs Jobs' pods as local processes (design: docs/design/controllers.md).

In the embedded control plane nothing runs Pods, so this component stands where
kube-controller-manager's Job controller and the kubelet stand on a real cluster. For every
``batch/v1`` Job whose ``spec.suspend`` is not true (Kueue keeps queued Jobs suspended, so for
Kueue's Jobs that means "admitted"), it runs each pod's first container ``command`` + ``args`` as a
local process, up to ``parallelism`` at a time, until ``completions`` pods succeeded, and writes
the Job's status the way the Job controller does:

* ``startTime`` when the Job first runs, and again when it is resumed;
* ``active`` (pods created and not finished, including those waiting for a free process slot),
  ``ready`` (pods whose process runs: there are no readiness probes, and Kueue's PodsReady reads
  this), ``terminating``, ``succeeded``, ``failed`` and, for Indexed Jobs, ``completedIndexes``;
  finished pods are first recorded by uid in ``uncountedTerminatedPods`` and moved to the counters
  once recorded on disk, as the Job controller's pod-finalizer tracking does
  (``trackJobStatusAndRemoveFinalizers``), so a restart never counts a pod twice;
* the interim conditions ``SuccessCriteriaMet`` / ``FailureTarget`` first and the terminal
  ``Complete`` (with ``completionTime``) / ``Failed`` once no process of the Job is left, with the
  reasons and messages of Kubernetes 1.31+ (``CompletionsReached``, ``BackoffLimitExceeded``,
  ``DeadlineExceeded``);
* ``Suspended`` True (``JobSuspended``) when a Job is suspended and False (``JobResumed``) when
  it resumes; suspension terminates the Job's processes without counting them as failed.

What it runs, and how far the pod is confined, is in ``podsandbox.py`` and ``podshim.py``: every
pod runs under its own supervisor process (the shim, a child subreaper, plus a cgroup v2 per pod
where the hierarchy is writable) so that every descendant dies with the pod; the environment is
only the pod's own; ``resources.limits`` are applied; the working directory is a private scratch
directory outside the runner's state (``SCRATCH/<namespace>/<job>/<pod>/``), optionally owned by
``run_as_user``. The runner's own records live in ``WORK_DIR/<namespace>/<job>/<pod>/`` (0700:
``spec.json``, ``pid``, ``exit``, markers, the log ``container.log`` 0600: stdout and stderr in the
kubelet's CRI log format, see ``podshim.py``; records of older versions have ``stdout.log`` /
``stderr.log`` instead, which ``pods/log`` still reads).

Pod objects: each pod is also a ``core/v1`` Pod (and the machine a Node), written by
:class:`~pykueue.controllers.podobjects.PodPublisher` off the hot path; a Pod deleted through the
API has its process killed and counts as a failed pod (:meth:`JobRunner._kill_deleted`); the
API server's ``pods/log`` finds a Pod's files through :meth:`JobRunner.pod_log_dir`.

Crash safety: a pod's shim pid + start time are fsynced before the shim is told to start the pod,
and the shim fsyncs the exit code. A runner started on the same work directory adopts the shims
that survived its predecessor (waiting for them as for its own) and accounts the ones that ended
meanwhile, so a pod never runs twice because the runner restarted.

Admission: a Job managed by Kueue (``kueue.x-k8s.io/queue-name`` label, or a Workload owned by it)
runs at most as many pods as its Workload's admission assigned (``podSetAssignments[].count``), and
none while the Workload is not admitted. A Job outside Kueue's management runs only when the
runner was started with ``run_unmanaged_jobs``; otherwise it is left as it is and a Warning Event
``NotManagedByKueue`` says why.

Not modelled: init and sidecar containers, ``podFailurePolicy``, ``backoffLimitPerIndex``,
``successPolicy`` and in-place restarts of ``restartPolicy: OnFailure`` (every failed run counts as
a failed pod). A container without ``command`` (the
image's entrypoint), or whose ``env`` the runner cannot resolve, cannot run locally: its pod fails
at once and a ``FailedToRun`` Event says why. Failed pods are replaced after the Job controller's
exponential backoff (10 s doubling, at most 6 min), measured on the injected clock so end-to-end
tests can move time.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import logging
import marshal
import os
import py_compile
import random
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pykueue.api.jobs import queue_name
from pykueue.api.meta import format_time, parse_time
from pykueue.apiserver.podlogs import CRI_LOG
from pykueue.client.interface import APIError, Client, Conflict, NotFound
from pykueue.client.resources import JOBS, PODS, WORKLOADS
from pykueue.controllers import podshim
from pykueue.controllers.podobjects import PodPublisher, node_name, pod_log_dir
from pykueue.controllers.podruntime import ContainerRuntime, container_name
from pykueue.controllers.podsandbox import (
    Cgroups,
    PodConfigError,
    RunAsUser,
    check_searchable,
    expand,
    mark_durably,
    pod_environment,
    private_dir,
    process_identity,
    read_json,
    resource_limits,
    same_process,
    write_durably,
)
from pykueue.runtime.clock import Clock, system_clock
from pykueue.runtime.controller import WorkQueue
from pykueue.runtime.informer import DELETED, SYNCED, Change, Informer, ObjectKey, object_key
from pykueue.runtime.recorder import CORE_V1, EventRecorder, object_reference

log = logging.getLogger(__name__)

DEFAULT_SUBDIR = "pods"
"""Where ``pykueue serve`` puts the pods' records and logs, under its data directory."""

COMPONENT = "pykueue-job-runner"
JOB_CONTROLLER = "kubernetes.io/job-controller"
"""``spec.managedBy`` value (or absence) that means "the built-in Job controller runs this Job"."""

DEFAULT_BACKOFF_LIMIT = 6
DEFAULT_GRACE_SECONDS = 30
POD_FAILURE_BACKOFF_SECONDS = 10.0
MAX_POD_FAILURE_BACKOFF_SECONDS = 360.0

# Condition types, reasons and messages exactly as the Kubernetes Job controller writes them.
COMPLETE, FAILED, SUSPENDED = "Complete", "Failed", "Suspended"
SUCCESS_CRITERIA_MET, FAILURE_TARGET = "SuccessCriteriaMet", "FailureTarget"
REASON_COMPLETIONS_REACHED = "CompletionsReached"
MESSAGE_COMPLETIONS_REACHED = "Reached expected number of succeeded pods"
REASON_BACKOFF_LIMIT = "BackoffLimitExceeded"
MESSAGE_BACKOFF_LIMIT = "Job has reached the specified backoff limit"
REASON_DEADLINE = "DeadlineExceeded"
MESSAGE_DEADLINE = "Job was active longer than specified deadline"
REASON_FAILED_TO_RUN = "FailedToRun"
REASON_NOT_MANAGED = "NotManagedByKueue"
MESSAGE_NOT_MANAGED = (
    "Job is not managed by Kueue (no kueue.x-k8s.io/queue-name label and no Workload); the local job "
    "runner runs such Jobs only when started with --run-unmanaged-jobs"
)
EXIT_KILLED = 137  # 128 + SIGKILL: what a runtime reports for a container killed without a word

_IDLE_WAIT_SECONDS = 0.5  # upper bound on the worker's sleep, so a moved test clock is noticed soon
_STOP_GRACE_SECONDS = 2.0  # stop() must not wait a pod's full 30 s grace period
_HARD_KILL_SECONDS = 5.0  # a shim that has not ended this long after "kill now" is killed itself
_MAX_WRITE_ATTEMPTS = 5
_RETRY_SECONDS = 1.0
_RETRY_MAX_SECONDS = 30.0
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # the apiserver's generateName alphabet
_SHIM = str(Path(podshim.__file__).resolve())
SHIM_PYC = ".podshim.pyc"  # in the work directory: no namespace (a directory there) starts with "."

PENDING, RUNNING, TERMINATING = "Pending", "Running", "Terminating"
_REMOVED, _FINALIZED, _DONE = "removed", "finalized", "done"  # markers in a pod's record directory


@dataclass(eq=False)
class _Pod:
    """One pod of a Job: waiting for a process slot, running, being terminated, or finished."""

    name: str
    uid: str
    index: int | None
    state_dir: Path  # the runner's record of the pod (spec, pid, exit, markers, logs)
    scratch_dir: Path  # the pod's working directory
    seq: int  # creation order: free process slots go to the oldest pending pod
    template: dict[str, Any]  # the Job's pod template when the pod was created (not mutated)
    job_name: str
    namespace: str
    job_uid: str
    grace: float
    phase: str = PENDING
    proc: subprocess.Popen[bytes] | None = None  # the shim, when this runner started it
    pid: int | None = None  # the shim's pid (started or adopted)
    pidfd: int | None = None
    identity: dict[str, Any] | None = None
    cgroup: str | None = None
    launching: bool = False  # its thread is starting the shim (no pid yet)
    pending_signal: signal.Signals | None = None  # sent once the shim exists
    exit_code: int | None = None  # set by the waiter thread once the shim has ended
    start_error: str | None = None
    aborted: bool = False  # its shim was never told to start it
    finalized: bool = False  # recorded in uncountedTerminatedPods and marked on disk
    kill_at: float | None = None  # time.monotonic() at which a terminating pod gets SIGKILL
    hard_kill_at: float | None = None  # ... and at which its shim is killed if still there
    started_at: datetime | None = None  # clock time its process was started (its Pod's startTime)
    finished_at: datetime | None = None  # clock time its process ended
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def key(self) -> ObjectKey:
        return (self.namespace, self.job_name)

    @property
    def has_process(self) -> bool:
        """True while a started (or starting) pod has not ended."""
        return (self.pid is not None or self.launching) and self.exit_code is None


@dataclass(eq=False)
class _JobRun:
    """What the runner knows about one Job beyond its API object.

    ``succeeded`` / ``failed`` / ``completed`` count every finished pod, including those in
    ``finished`` that the Job's status does not count yet.
    """

    uid: str
    pods: list[_Pod] = field(default_factory=list)
    finished: list[_Pod] = field(default_factory=list)
    succeeded: int = 0
    failed: int = 0
    completed: set[int] = field(default_factory=set)
    failures_since_success: int = 0
    last_failure: datetime | None = None

    def live(self) -> list[_Pod]:
        """Pods counted as ``active``: pending or running, not terminating."""
        return [p for p in self.pods if p.phase != TERMINATING]


class JobRunner:
    """The local job runner component; see the module docstring.

    ``max_processes`` bounds the processes running at once across all Jobs (None: only each Job's
    ``parallelism`` and admission bound them); pods over the bound stay pending, counted in
    ``active`` but not ``ready``, as pods waiting for a node would be. ``pod_failure_backoff`` is
    the base of the delay before failed pods are replaced (0 replaces them at once).
    ``scratch_dir`` is where pods get their working directories (default: a private directory
    under the system's temporary directory, outside ``work_dir``).
    """

    def __init__(
        self,
        client: Client,
        work_dir: Path,
        *,
        max_processes: int | None = None,
        clock: Clock = system_clock,
        pod_failure_backoff: float = POD_FAILURE_BACKOFF_SECONDS,
        scratch_dir: Path | None = None,
        run_unmanaged_jobs: bool = False,
        run_as_user: RunAsUser | None = None,
        cgroups: bool = True,
        pod_runtime: ContainerRuntime | None = None,
        publish_pods: bool = True,
    ) -> None:
        if max_processes is not None and max_processes < 1:
            raise ValueError("max_processes must be at least 1")
        self.client = client
        self.work_dir = Path(work_dir).absolute()
        self._own_scratch_root = scratch_dir is None  # our $TMPDIR/pykueue-pods-<uid>, not the user's
        if scratch_dir is None:
            tag = hashlib.sha256(str(self.work_dir).encode()).hexdigest()[:12]
            scratch_dir = Path(tempfile.gettempdir()) / f"pykueue-pods-{os.geteuid()}" / tag
        self.scratch_dir = Path(scratch_dir).absolute()
        self.max_processes = max_processes
        self.clock = clock
        self.pod_failure_backoff = pod_failure_backoff
        self.run_unmanaged_jobs = run_unmanaged_jobs
        self.run_as_user = run_as_user
        self._use_cgroups = cgroups
        self.pod_runtime = pod_runtime
        self._cgroups: Cgroups | None = None
        self._shim = _SHIM  # compiled into the work directory at start()
        self._informer = Informer(client, JOBS, self._on_change)
        # Pod and Node objects for what runs here (None: only the Job status is written).
        self.publisher = PodPublisher(client, node_name(), clock) if publish_pods else None
        self._pods = Informer(client, PODS, self._on_pod) if publish_pods else None
        self._user_deleted: set[str] = set()  # runner pod uids whose Pod a user deleted, guarded by _cond
        self._workloads = Informer(client, WORKLOADS, self._on_workload)
        self._wl_lock = threading.Lock()
        self._wl_by_owner: dict[str, ObjectKey] = {}  # Job uid -> its Workload, guarded by _wl_lock
        self._cond = threading.Condition()
        # Jobs to look at, now or at a clock time; a failed look is retried alone with backoff.
        self._work: WorkQueue[ObjectKey] = WorkQueue(
            clock, base_backoff=_RETRY_SECONDS, max_backoff=_RETRY_MAX_SECONDS
        )
        self.recorder = EventRecorder(client, COMPONENT, clock, api=CORE_V1, instance=socket.gethostname())
        self._stopping = False
        self._thread: threading.Thread | None = None
        # Owned by the worker thread (and by stop() once the worker has ended).
        self._runs: dict[ObjectKey, _JobRun] = {}
        self._adopted: dict[str, list[_Pod]] = {}  # Job uid -> pods found on disk at start
        self._orphans: list[_Pod] = []  # terminating pods of Jobs that are gone
        self._seen: dict[ObjectKey, dict[str, Any]] = {}  # objects from our own writes and reads
        self._deleted: list[tuple[ObjectKey, str]] = []  # Jobs whose pods' files go, guarded by _cond
        self._refused: set[str] = set()  # uids of unmanaged Jobs already told why they do not run
        self._waiters: list[threading.Thread] = []
        self._seq = itertools.count()

    # -- component --------------------------------------------------------------------------------

    def start(self) -> None:
        """Adopt the pods a previous runner left, then watch Jobs and Workloads and start working."""
        private_dir(self.work_dir)
        private_dir(self.scratch_dir, 0o711 if self.run_as_user else 0o700)
        if self.run_as_user is not None:
            ours = [self.scratch_dir, self.scratch_dir.parent] if self._own_scratch_root else [self.scratch_dir]
            for directory in ours:
                if directory.stat().st_uid == os.geteuid():
                    os.chmod(directory, 0o711)
            check_searchable(self.scratch_dir, self.run_as_user)
        self._cgroups = Cgroups(self.work_dir, enabled=self._use_cgroups)
        self._shim = _compiled_shim(self.work_dir)
        self._adopt()
        if self.publisher is not None:
            self.publisher.start()
        self._thread = threading.Thread(target=self._loop, name="job-runner", daemon=True)
        self._thread.start()
        self._workloads.start()
        self._informer.start()
        if self._pods is not None:
            self._pods.start()

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Block until the initial lists of Jobs and Workloads have been delivered."""
        return self._workloads.wait_synced(timeout) and self._informer.wait_synced(timeout)

    def stop(self) -> None:
        """Stop watching, then terminate every pod this runner runs and wait for them.

        The pods are marked removed first, so a runner started later replaces them instead of
        counting them as failed.
        """
        self._informer.stop()
        self._workloads.stop()
        if self._pods is not None:
            self._pods.stop()
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._work.shut_down()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.recorder.flush(timeout=2.0)
        pods = [p for run in self._runs.values() for p in run.pods] + self._orphans
        pods += [p for adopted in self._adopted.values() for p in adopted]
        pods = [p for p in pods if p.has_process]
        for pod in pods:
            pod.phase = TERMINATING  # a pod still starting is not started at all
            self._mark(pod, _REMOVED)
            self._signal(pod, signal.SIGTERM)
        deadline = time.monotonic() + _STOP_GRACE_SECONDS
        while any(p.has_process for p in pods) and time.monotonic() < deadline:
            time.sleep(0.02)
        for pod in pods:
            self._signal(pod, signal.SIGKILL)
        deadline = time.monotonic() + _HARD_KILL_SECONDS
        while any(p.has_process for p in pods) and time.monotonic() < deadline:
            time.sleep(0.02)
        for pod in pods:
            self._hard_kill(pod)
        for waiter in self._waiters:
            waiter.join(timeout=5)
        for pod in pods:
            self._mark(pod, _DONE)
        self._runs.clear()
        self._orphans.clear()
        self._adopted.clear()
        if self.publisher is not None:
            self.publisher.stop()
        if self._cgroups is not None:
            self._cgroups.close()

    # -- events from other threads ----------------------------------------------------------------

    def _on_change(self, change: Change) -> None:
        if change.type == SYNCED:
            return
        if change.type == DELETED:
            with self._cond:
                self._deleted.append((object_key(change.object), _uid(change.object)))
            if self.publisher is not None:
                self.publisher.forget_job(_uid(change.object))
        self._mark_dirty(object_key(change.object))

    def _on_pod(self, change: Change) -> None:
        """A Pod of ours deleted through the API: its process is killed (in the worker), and the Job
        counts it by how it ends, as for a pod deleted on a cluster."""
        if change.type != DELETED or self.publisher is None:
            return
        meta = change.object.get("metadata") or {}
        uid = self.publisher.deleted_by_user(str(meta.get("namespace")), str(meta.get("name")), _uid(change.object))
        if uid is None:
            return
        job = next((r for r in meta.get("ownerReferences") or [] if r.get("kind") == "Job"), None)
        if job is None:
            return
        with self._cond:
            self._user_deleted.add(uid)
        self._mark_dirty((str(meta.get("namespace")), str(job.get("name"))))

    def pod_log_dir(self, pod: Mapping[str, Any]) -> Path | None:
        """Where the stored Pod's log files are (``pods/log`` of ``pykueue serve``), or None."""
        return pod_log_dir(self.work_dir, pod)

    def _on_workload(self, change: Change) -> None:
        """Keep the Job uid -> Workload index and wake the owning Job when its Workload changes."""
        if change.type == SYNCED:
            return
        for obj, gone in ((change.old, True), (change.new, False)):
            if obj is None:
                continue
            meta = obj.get("metadata") or {}
            for ref in meta.get("ownerReferences") or []:
                if ref.get("kind") != "Job" or not str(ref.get("apiVersion", "")).startswith("batch/"):
                    continue
                with self._wl_lock:
                    if gone and change.type == DELETED:
                        self._wl_by_owner.pop(str(ref.get("uid")), None)
                    elif not gone:
                        self._wl_by_owner[str(ref.get("uid"))] = object_key(obj)
                self._mark_dirty((str(meta.get("namespace") or ""), str(ref.get("name"))))

    def _mark_dirty(self, key: ObjectKey) -> None:
        self._work.add(key)

    # -- the worker -------------------------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            self._work.wait(self._next_wait())
            if self._work.shutting_down():
                return
            if not self._workloads.wait_synced(0):
                # Admission caps come from the Workloads: no Job is looked at before they are
                # known (after a restart, an adopted pod must not look unadmitted).
                time.sleep(0.05)
                continue
            for key in self._work.take_ready():
                if self._work.shutting_down():  # stopping: the rest waits for the next runner
                    self._work.done(key)
                    continue
                try:
                    if self._sync(key):
                        self._work.forget(key)
                except Exception:  # one bad Job must not stop the runner: it alone is retried
                    delay = self._work.add_rate_limited(key)
                    log.exception("job runner: syncing %s/%s failed; retrying in %.1fs", *key, delay)
                finally:
                    self._work.done(key)
            if self._adopted and self._informer.wait_synced(0):
                self._sweep_adopted()
            self._enforce_grace()
            self._remove_deleted_pods()

    def _next_wait(self) -> float:
        wait = _IDLE_WAIT_SECONDS
        mono = time.monotonic()
        for pod in self._all_pods():
            for at in (pod.kill_at, pod.hard_kill_at):
                if at is not None and pod.has_process:
                    wait = min(wait, at - mono)
        due = self._work.next_due_seconds()
        if due is not None:
            wait = min(wait, due)
        return max(wait, 0.0)

    def _all_pods(self) -> Iterable[_Pod]:
        for run in self._runs.values():
            yield from run.pods
        yield from self._orphans

    def _enforce_grace(self) -> None:
        mono = time.monotonic()
        for pod in self._all_pods():
            if not pod.has_process:
                continue
            if pod.kill_at is not None and pod.kill_at <= mono:
                self._signal(pod, signal.SIGKILL)
                pod.kill_at = None
            elif pod.hard_kill_at is not None and pod.hard_kill_at <= mono:
                self._hard_kill(pod)
                pod.hard_kill_at = None
        kept: list[_Pod] = []
        for pod in self._orphans:
            if pod.has_process:
                kept.append(pod)
            else:
                self._mark(pod, _DONE)
        self._orphans = kept

    def _remove_deleted_pods(self) -> None:
        """A deleted Job's pods go with it, as the garbage collector deletes them on a cluster: their
        working directories and records, once none of their processes is left."""
        with self._cond:
            deleted, self._deleted = self._deleted, []
        busy = {p.job_uid for p in self._all_pods() if p.has_process}
        busy |= {p.job_uid for pods in self._adopted.values() for p in pods if p.has_process}
        later: list[tuple[ObjectKey, str]] = []
        for (namespace, name), job_uid in deleted:
            if job_uid in busy or any(run.uid == job_uid for run in self._runs.values()):
                later.append(((namespace, name), job_uid))
                continue
            base = self.work_dir / namespace / name
            for spec_path in base.glob("*/spec.json"):
                spec = read_json(spec_path)
                if spec is None or spec.get("jobUID") != job_uid:
                    continue
                # The path is rebuilt, not read from the record: a record is no authority on what to delete.
                shutil.rmtree(self.scratch_dir / namespace / name / spec_path.parent.name, ignore_errors=True)
                shutil.rmtree(spec_path.parent, ignore_errors=True)
            for directory in (base, self.scratch_dir / namespace / name):
                with contextlib.suppress(OSError):
                    directory.rmdir()  # only when empty: a Job of the same name may have pods there
        if later:
            with self._cond:
                self._deleted.extend(later)

    def _schedule(self, key: ObjectKey, at: datetime) -> None:
        self._work.add_after(key, max((at - self.clock()).total_seconds(), 0.0))

    # -- one Job ----------------------------------------------------------------------------------

    def _sync(self, key: ObjectKey) -> bool:
        """Reconcile one Job; a Conflict re-reads it and reconciles the fresh object again.
        Returns False when the Job is to be retried after a backoff."""
        for _ in range(_MAX_WRITE_ATTEMPTS):
            job = self._current(key)
            try:
                self._reconcile(key, job)
                return True
            except Conflict:
                try:
                    self._seen[key] = self.client.get(JOBS, key[1], key[0])
                except NotFound:
                    self._forget(key)
                    return True
            except NotFound:
                self._forget(key)
                return True
            except APIError as err:
                log.warning("job runner: %s/%s: %s; retrying", key[0], key[1], err)
                self._work.add_rate_limited(key)
                return False
        self._work.add_rate_limited(key)
        return False

    def _current(self, key: ObjectKey) -> dict[str, Any] | None:
        """The newest known state of a Job: the informer's, or the one our last write returned."""
        cached = self._informer.get(key)
        seen = self._seen.get(key)
        if cached is None:
            self._seen.pop(key, None)  # deleted (keys only come from the informer or from us)
            return None
        if seen is None or _uid(seen) != _uid(cached):
            return cached
        return seen if _rv_newer(seen, cached) else cached

    def _forget(self, key: ObjectKey) -> None:
        """The Job is gone (or no longer ours to run): terminate its processes and drop what we know."""
        run = self._runs.pop(key, None)
        self._seen.pop(key, None)
        self._work.cancel_delayed(key)
        if run is not None:
            self._orphan(run.pods)
            run.pods.clear()
            for pod in run.finished:
                self._mark(pod, _DONE)
            self._start_pending(None)

    def _orphan(self, pods: Iterable[_Pod]) -> None:
        """Terminate pods whose Job is gone; finished ones are simply forgotten."""
        for pod in pods:
            if pod.phase == PENDING:
                continue
            if pod.has_process:
                self._terminate_process(pod)
                self._orphans.append(pod)
            else:
                self._mark(pod, _DONE)

    def _admission(self, job: Mapping[str, Any]) -> tuple[bool, int | None]:
        """(managed by Kueue, pods its admission allows); (False, None) for a Job outside Kueue."""
        with self._wl_lock:
            wl_key = self._wl_by_owner.get(_uid(job))
        wl = self._workloads.get(wl_key) if wl_key is not None else None
        if wl is None:
            return (True, 0) if queue_name(job) else (False, None)
        status = wl.get("status") or {}
        admission = status.get("admission")
        if not admission or not _condition_true(status, "Admitted"):
            return True, 0
        sizes = {str(ps.get("name")): int(ps.get("count") or 0) for ps in (wl.get("spec") or {}).get("podSets") or []}
        count = 0
        for psa in admission.get("podSetAssignments") or []:
            value = psa.get("count")
            count += int(value) if value is not None else sizes.get(str(psa.get("name")), 0)
        return True, count

    def _reconcile(self, key: ObjectKey, job: dict[str, Any] | None) -> None:
        if job is None or (job.get("metadata") or {}).get("deletionTimestamp"):
            self._forget(key)
            return
        spec: dict[str, Any] = job.get("spec") or {}
        status: dict[str, Any] = job.get("status") or {}
        managed_by = spec.get("managedBy")
        adopted = self._adopted.pop(_uid(job), None)
        if (managed_by and managed_by != JOB_CONTROLLER) or _finished(status):
            self._forget(key)  # someone else's Job, or nothing left to do
            self._orphan(adopted or [])
            return
        run = self._runs.get(key)
        if run is not None and run.uid != _uid(job):
            self._forget(key)  # deleted and recreated under the same name
            run = None
        suspended = spec.get("suspend") is True
        managed, cap = self._admission(job)
        if not managed and not self.run_unmanaged_jobs:
            cap = 0  # pods adopted from a runner that was allowed to run it keep running; no new ones
            if run is None and not adopted:
                if not suspended and _uid(job) not in self._refused:
                    self._refused.add(_uid(job))
                    log.warning("job runner: %s/%s: %s", key[0], key[1], MESSAGE_NOT_MANAGED)
                    self._event(job, "Warning", REASON_NOT_MANAGED, MESSAGE_NOT_MANAGED)
                return
        if run is None:
            run = self._new_run(_uid(job), status, adopted or [])
            self._runs[key] = run
        self._work.cancel_delayed(key)
        now = self.clock()
        self._kill_deleted(run)
        self._collect(run, now)

        indexed = spec.get("completionMode") == "Indexed"
        completions: int | None = spec.get("completions")
        parallelism = int(_default(spec.get("parallelism"), 1))
        backoff_limit = int(_default(spec.get("backoffLimit"), DEFAULT_BACKOFF_LIMIT))
        deadline = spec.get("activeDeadlineSeconds")

        new = dict(status)
        conditions = [dict(c) for c in status.get("conditions") or []]
        events: list[tuple[str, str, str]] = []  # (type, reason, message), sent after the write

        # The order of checks follows the Job controller's syncJob, except that a resumption resets
        # startTime before the deadline is checked, so a stale startTime cannot fail a resumed Job.
        finish = _interim(conditions)
        if finish is None and run.failed > backoff_limit:
            finish = (FAILED, REASON_BACKOFF_LIMIT, MESSAGE_BACKOFF_LIMIT)
        if finish is None and not suspended:
            if _ensure_condition(conditions, SUSPENDED, "False", "JobResumed", "Job resumed", now):
                events.append(("Normal", "Resumed", "Job resumed"))
                # activeDeadlineSeconds counts the time a Job is continuously active.
                new["startTime"] = format_time(now)
            if not new.get("startTime"):
                new["startTime"] = format_time(now)
            if deadline is not None:
                ends = parse_time(new["startTime"]) + timedelta(seconds=int(deadline))
                if now >= ends:
                    finish = (FAILED, REASON_DEADLINE, MESSAGE_DEADLINE)
                else:
                    self._schedule(key, ends)
        if finish is not None and finish[0] == FAILED:
            _ensure_condition(conditions, FAILURE_TARGET, "True", finish[1], finish[2], now)
        if finish is None:
            if suspended:
                self._terminate_all(run)
                if _ensure_condition(conditions, SUSPENDED, "True", "JobSuspended", "Job suspended", now):
                    events.append(("Normal", "Suspended", "Job suspended"))
            elif _succeeded(run, completions, indexed):
                finish = (COMPLETE, REASON_COMPLETIONS_REACHED, MESSAGE_COMPLETIONS_REACHED)
                _ensure_condition(conditions, SUCCESS_CRITERIA_MET, "True", finish[1], finish[2], now)
            else:
                self._manage_pods(key, run, job, completions, parallelism, indexed, now, cap)
        if finish is not None:
            # Lingering pods are removed; the terminal condition waits until they are gone.
            self._terminate_all(run)
            if not any(p.has_process for p in run.pods):
                kind, reason, message = finish
                _ensure_condition(conditions, kind, "True", reason, message, now)
                if kind == COMPLETE:
                    new["completionTime"] = format_time(now)
                    events.append(("Normal", "Completed", "Job completed"))
                else:
                    events.append(("Warning", reason, message))
        self._start_pending(key)

        pods = run.pods
        _set_count(new, "active", sum(1 for p in pods if p.phase != TERMINATING and p.exit_code is None))
        new["ready"] = sum(1 for p in pods if p.phase == RUNNING and p.has_process)
        new["terminating"] = sum(1 for p in pods if p.phase == TERMINATING and p.has_process)
        _set_count(new, "succeeded", len(run.completed) if indexed else run.succeeded)
        _set_count(new, "failed", run.failed)
        if indexed:
            text = _format_indexes(run.completed)
            if text:
                new["completedIndexes"] = text
            else:
                new.pop("completedIndexes", None)
        new["uncountedTerminatedPods"] = {}
        if conditions:
            new["conditions"] = conditions
        job = self._record_finished(key, job, run)
        if new != (job.get("status") or {}):
            written = self.client.replace(JOBS, {**job, "status": new}, subresource="status")
            self._seen[key] = written
            job = written
        for pod in run.finished:
            self._mark(pod, _DONE)
        run.finished.clear()
        for type_, reason, message in events:
            self._event(job, type_, reason, message)
        if _finished(new):
            self._runs.pop(key, None)
            self._orphan(run.pods)

    def _kill_deleted(self, run: _JobRun) -> None:
        """Pods whose Pod object a user deleted: a waiting one fails at once, a running one gets
        SIGTERM and its grace period; either way not as a removal, so the Job counts the failure."""
        with self._cond:
            if not self._user_deleted:
                return
            mine = {p.uid for p in run.pods} & self._user_deleted
            self._user_deleted -= mine
        for pod in run.pods:
            if pod.uid not in mine or pod.exit_code is not None:
                continue
            if pod.phase == PENDING:
                pod.exit_code = EXIT_KILLED
                pod.finished_at = self.clock()
            elif pod.phase == RUNNING:
                self._signal(pod, signal.SIGTERM)
                pod.kill_at = time.monotonic() + pod.grace if pod.grace > 0 else None
                if pod.grace <= 0:
                    self._signal(pod, signal.SIGKILL)

    def _new_run(self, uid: str, status: Mapping[str, Any], adopted: list[_Pod]) -> _JobRun:
        """State for a Job seen for the first time (e.g. after a restart): its recorded counts, the
        pods adopted from disk, and the pods its status lists as terminated but not counted."""
        run = _run_from_status(uid, status)
        uncounted = status.get("uncountedTerminatedPods") or {}
        listed = {str(u): True for u in uncounted.get("succeeded") or []}
        listed.update({str(u): False for u in uncounted.get("failed") or []})
        known = {p.uid for p in adopted}
        for pod_uid, ok in listed.items():
            if pod_uid not in known:  # recorded, but its files are gone: count it all the same
                if ok:
                    run.succeeded += 1
                else:
                    run.failed += 1
        for pod in adopted:
            if pod.finalized and pod.uid not in listed:
                self._mark(pod, _DONE)  # already in the counters
            else:
                pod.seq = next(self._seq)
                run.pods.append(pod)
        return run

    def _record_finished(self, key: ObjectKey, job: dict[str, Any], run: _JobRun) -> dict[str, Any]:
        """First half of the Job controller's finalizer tracking: list the finished pods' uids in
        ``uncountedTerminatedPods``, then mark them on disk; the caller's write moves them to the
        counters. A crash in between leaves them listed, and a restarted runner counts them once."""
        pending = [p for p in run.finished if not p.finalized]
        if not pending:
            return job
        status: dict[str, Any] = job.get("status") or {}
        uncounted = status.get("uncountedTerminatedPods") or {}
        succeeded = [str(u) for u in uncounted.get("succeeded") or []]
        failed = [str(u) for u in uncounted.get("failed") or []]
        for pod in pending:
            target = succeeded if pod.exit_code == 0 else failed
            if pod.uid not in target:
                target.append(pod.uid)
        lists = {k: v for k, v in (("succeeded", succeeded), ("failed", failed)) if v}
        if lists != uncounted:
            job = self.client.replace(
                JOBS, {**job, "status": {**status, "uncountedTerminatedPods": lists}}, subresource="status"
            )
            self._seen[key] = job
        # One fsync per pod directory: done side by side, not one after the other.
        with ThreadPoolExecutor(max_workers=min(8, len(pending))) as pool:
            list(pool.map(lambda p: self._mark(p, _FINALIZED), pending))
        for pod in pending:
            pod.finalized = True
        return job

    def _collect(self, run: _JobRun, now: datetime) -> None:
        """Account for the pods whose processes ended since the last look."""
        kept: list[_Pod] = []
        for pod in run.pods:
            if pod.exit_code is None:
                kept.append(pod)
                continue
            if pod.phase == TERMINATING or pod.aborted:
                # Removed by the runner, or never started: neither a success nor a failure.
                self._mark(pod, _DONE)
                continue
            if pod.start_error is not None:
                self._fail_to_run_event(pod, pod.start_error)
                pod.start_error = None
            if pod.exit_code == 0:
                run.succeeded += 1
                if pod.index is not None:
                    run.completed.add(pod.index)
                run.failures_since_success = 0
            else:
                run.failed += 1
                run.failures_since_success += 1
                run.last_failure = now
            run.finished.append(pod)
        run.pods = kept

    def _manage_pods(
        self,
        key: ObjectKey,
        run: _JobRun,
        job: dict[str, Any],
        completions: int | None,
        parallelism: int,
        indexed: bool,
        now: datetime,
        cap: int | None,
    ) -> None:
        """Create or remove pods so that the Job has as many active pods as it wants (and as its
        admission allows: never more than ``cap``)."""
        live = run.live()
        if completions is None:
            # Any success completes the Job once the pods still running finish; start no more.
            want = len(live) if run.succeeded > 0 else parallelism
        else:
            done = len(run.completed) if indexed else run.succeeded
            want = max(0, min(parallelism, completions - done))
        if cap is not None:
            want = min(want, cap)
        if len(live) > want:
            # Fewer wanted (parallelism lowered): remove pending pods first, then the newest.
            extra = sorted(live, key=lambda p: (p.phase != PENDING, -p.seq))[: len(live) - want]
            for pod in extra:
                self._terminate(run, pod)
            return
        if len(live) == want:
            return
        if run.failures_since_success and run.last_failure is not None and self.pod_failure_backoff > 0:
            delay = min(
                self.pod_failure_backoff * 2 ** (run.failures_since_success - 1),
                MAX_POD_FAILURE_BACKOFF_SECONDS,
            )
            ready_at = run.last_failure + timedelta(seconds=delay)
            if now < ready_at:
                self._schedule(key, ready_at)
                return
        indexes: list[int | None]
        if indexed:
            busy = {p.index for p in live}
            free = (i for i in range(completions or 0) if i not in run.completed and i not in busy)
            indexes = list(itertools.islice(free, want - len(live)))
        else:
            indexes = [None] * (want - len(live))
        for index in indexes:
            pod = self._new_pod(job, index)
            run.pods.append(pod)
            if self.publisher is not None:
                self.publisher.added(pod)

    def _new_pod(self, job: dict[str, Any], index: int | None) -> _Pod:
        meta = job.get("metadata") or {}
        name, namespace = str(meta.get("name")), str(meta.get("namespace") or "default")
        suffix = "".join(random.choices(_NAME_CHARS, k=5))
        pod_name = f"{name}-{suffix}" if index is None else f"{name}-{index}-{suffix}"
        template: dict[str, Any] = (job.get("spec") or {}).get("template") or {}
        grace = (template.get("spec") or {}).get("terminationGracePeriodSeconds")
        return _Pod(
            name=pod_name,
            uid=str(uuid.uuid4()),
            index=index,
            state_dir=self.work_dir / namespace / name / pod_name,
            scratch_dir=self.scratch_dir / namespace / name / pod_name,
            seq=next(self._seq),
            template=template,
            job_name=name,
            namespace=namespace,
            job_uid=_uid(job),
            grace=float(DEFAULT_GRACE_SECONDS if grace is None else grace),
        )

    # -- processes --------------------------------------------------------------------------------

    def _start_pending(self, current: ObjectKey | None) -> None:
        """Give free process slots to pending pods, oldest first, across all Jobs."""
        pending = sorted(
            (
                (pod.seq, key, pod)
                for key, run in self._runs.items()
                for pod in run.pods
                if pod.phase == PENDING
            ),
            key=lambda item: item[0],
        )
        if not pending:
            return
        running = sum(1 for p in self._all_pods() if p.has_process)
        for _, key, pod in pending:
            if self.max_processes is not None and running >= self.max_processes:
                break
            started = self._launch(key, pod)
            running += started
            if key != current or not started:
                # Another Job's ``ready`` changed, or a pod failed to start and needs accounting.
                self._mark_dirty(key)

    def _launch(self, key: ObjectKey, pod: _Pod) -> bool:
        """Start a pod: what can be refused is refused here (the pod fails at once, exit code 128);
        the rest — directories, records, fsyncs, the shim — runs on the pod's own thread, so that
        one worker does not wait for every pod's disk writes in turn."""
        pod.phase = RUNNING
        containers = (pod.template.get("spec") or {}).get("containers") or [{}]
        container: dict[str, Any] = containers[0]
        cname = str(container.get("name", ""))
        command = [str(a) for a in container.get("command") or []]
        args = [str(a) for a in container.get("args") or []]
        runtime = self.pod_runtime
        if not command and runtime is None:
            self._fail_to_run(
                pod,
                f'Pod {pod.name}: container "{cname}" has no command; the local job runner runs '
                "command + args as a local process and cannot run an image's entrypoint "
                "(serve --pod-runtime=podman|docker can)",
            )
            return False
        cgroups = self._cgroups
        try:
            env, defined = self._environment(pod, container)
            if runtime is None:
                argv = [expand(a, defined) for a in command + args]
                files, rlimits, applied = resource_limits(container, cgroups.controllers if cgroups else set())
            else:
                # The runtime enforces the limits in its own cgroup; the client process gets none.
                files, rlimits = {}, {}
                argv, applied = runtime.run_argv(
                    container_name=container_name(pod.uid),
                    hostname=env["HOSTNAME"],
                    container=container,
                    env=env,
                    defined=defined,
                    command=[expand(a, defined) for a in command],
                    args=[expand(a, defined) for a in args],
                )
                env = runtime.client_environment()
        except PodConfigError as error:
            self._fail_to_run(pod, f"Pod {pod.name}: {error}")
            return False
        user = self.run_as_user
        spec: dict[str, Any] = {
            "pod": pod.name,
            "uid": pod.uid,
            "index": pod.index,
            "namespace": pod.namespace,
            "job": pod.job_name,
            "jobUID": pod.job_uid,
            "grace": pod.grace,
            "argv": argv,
            "env": env,
            "cwd": str(pod.scratch_dir),
            "log": str(pod.state_dir / CRI_LOG),
            "rlimits": rlimits,
            "cgroup": None,
            "limits": applied,
            "user": None
            if user is None
            else {"name": user.name, "uid": user.uid, "gid": user.gid, "groups": list(user.groups)},
        }
        pod.launching = True
        self._spawn(pod, self._start_and_wait, pod, spec, files, cname)
        return True

    def _start_and_wait(self, pod: _Pod, spec: dict[str, Any], files: dict[str, str], cname: str) -> None:
        """The pod's thread: start its shim, then wait for it."""
        try:
            self._start(pod, spec, files)
        except (OSError, ValueError) as error:
            with pod.lock:
                pod.start_error = f'Pod {pod.name}: container "{cname}" failed to start: {error}'
                pod.exit_code = 128  # what the kubelet reports for a container that could not start
                pod.finished_at = self.clock()
                pod.launching = False
            self._published(pod)
            self._mark_dirty(pod.key)
            return
        pod.started_at = self.clock()
        self._published(pod)
        self._wait(pod)

    def _published(self, pod: _Pod) -> None:
        """The pod started or ended: its Pod status follows (written by the publisher's thread)."""
        if self.publisher is not None:
            self.publisher.changed(pod)

    def _start(self, pod: _Pod, spec: dict[str, Any], files: dict[str, str]) -> None:
        private_dir(pod.state_dir)
        private_dir(pod.scratch_dir.parent, 0o711 if self.run_as_user else 0o700)
        if self.run_as_user is not None:
            for directory in (pod.scratch_dir.parent, pod.scratch_dir.parent.parent):
                os.chmod(directory, 0o711)  # the pod's user must reach its directory
        private_dir(pod.scratch_dir, owner=self.run_as_user)
        cgroup = self._cgroups.create(pod.uid, files) if self._cgroups is not None else None
        pod.cgroup = spec["cgroup"] = str(cgroup) if cgroup is not None else None
        # Its directory entry becomes durable with the pid file's, below.
        write_durably(str(pod.state_dir / "spec.json"), spec, sync_dir=False)
        shim_log = os.open(pod.state_dir / "shim.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", self._shim, str(pod.state_dir)],  # no site: 4x faster start
                cwd=pod.state_dir,
                env={},  # the shim needs nothing of the runner's environment
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=shim_log,
                start_new_session=True,  # survives the runner, out of reach of its terminal
            )
        finally:
            os.close(shim_log)
        with pod.lock:
            pod.proc, pod.pid = proc, proc.pid
            pod.pidfd = _pidfd(proc.pid)
            pod.launching = False
            pending, pod.pending_signal = pod.pending_signal, None
        try:
            pod.identity = process_identity(proc.pid)
            # Durable before the pod may start: a restarted runner must find every started pod.
            write_durably(str(pod.state_dir / "pid"), pod.identity)
            assert proc.stdin is not None
            if pod.phase == TERMINATING:  # removed while starting: the shim aborts, nothing runs
                self._mark(pod, _REMOVED)
            else:
                proc.stdin.write(marshal.dumps(spec))  # the shim starts the pod once it has all of it
            proc.stdin.close()
        except (OSError, ValueError):
            with contextlib.suppress(OSError):
                proc.kill()
            proc.wait()
            raise
        if pending is not None:
            self._signal(pod, pending)

    def _spawn(self, pod: _Pod, target: Any, *args: Any) -> None:
        waiter = threading.Thread(target=target, args=args, name=f"pod-{pod.name}", daemon=True)
        self._waiters = [w for w in self._waiters if w.is_alive()]
        self._waiters.append(waiter)
        waiter.start()

    def _watch(self, pod: _Pod) -> None:
        self._spawn(pod, self._wait, pod)

    def _fail_to_run(self, pod: _Pod, message: str) -> None:
        pod.exit_code = 128  # what the kubelet reports for a container that could not start
        pod.finished_at = self.clock()
        self._published(pod)
        self._fail_to_run_event(pod, message)

    def _fail_to_run_event(self, pod: _Pod, message: str) -> None:
        log.warning("job runner: %s", message)
        involved = {"metadata": {"name": pod.job_name, "namespace": pod.namespace, "uid": pod.job_uid}}
        self._event(involved, "Warning", REASON_FAILED_TO_RUN, message)

    def _wait(self, pod: _Pod) -> None:
        """Waiter thread: wait for the pod's shim to end, then read what it recorded."""
        if pod.proc is not None:
            pod.proc.wait()
        elif pod.pidfd is not None:
            poller = select.poll()
            poller.register(pod.pidfd, select.POLLIN)
            while not poller.poll(1000):
                pass
        else:
            while pod.identity is not None and same_process(pod.identity):
                time.sleep(0.1)
        if self.pod_runtime is not None:
            self.pod_runtime.remove(container_name(pod.uid))  # a killed pod's --rm never ran
        self._finish(pod)
        self._mark_dirty(pod.key)

    def _finish(self, pod: _Pod) -> None:
        """The shim has ended: take its recorded exit code (or clean up after a shim that died)."""
        result = read_json(pod.state_dir / "exit")
        code = EXIT_KILLED
        error: str | None = None
        if result is None:
            log.warning("job runner: pod %s: its supervisor ended without recording an exit", pod.name)
            self._kill_leftovers(pod)
        elif result.get("aborted"):
            error = f"Pod {pod.name}: the runner stopped before the pod was started"
            code = 128
            pod.aborted = True
        elif "startError" in result:
            error = f'Pod {pod.name}: container failed to start: {result["startError"]}'
            code = 128
        else:
            code = int(result.get("exitCode", EXIT_KILLED))
        with pod.lock:
            pod.start_error = error
            pod.finished_at = self.clock()
            pod.exit_code = code
            if pod.pidfd is not None:
                os.close(pod.pidfd)
                pod.pidfd = None
        self._published(pod)

    def _kill_leftovers(self, pod: _Pod) -> None:
        """SIGKILL what may be left of a pod whose shim is gone (its cgroup, its main process)."""
        if pod.cgroup:
            Cgroups.kill(Path(pod.cgroup))
            with contextlib.suppress(OSError):
                Path(pod.cgroup).rmdir()
        child = read_json(pod.state_dir / "child")
        if child is not None and same_process({**child, "boot": (pod.identity or {}).get("boot")}):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(child["pid"]), signal.SIGKILL)

    def _signal(self, pod: _Pod, sig: signal.Signals) -> None:
        """SIGTERM: the shim passes it to the pod's main process. SIGKILL: the shim kills the whole
        pod at once (SIGUSR1 to the shim), and the pod's cgroup is killed directly too."""
        with pod.lock:
            if not pod.has_process:
                return
            if pod.pid is None:  # still starting: its thread sends it once the shim exists
                if pod.pending_signal != signal.SIGKILL:
                    pod.pending_signal = sig
                return
            shim_signal = signal.SIGUSR1 if sig == signal.SIGKILL else signal.SIGTERM
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if pod.pidfd is not None:
                    signal.pidfd_send_signal(pod.pidfd, shim_signal)
                elif pod.proc is not None:
                    pod.proc.send_signal(shim_signal)
                elif pod.identity is not None and same_process(pod.identity):
                    os.kill(int(pod.identity["pid"]), shim_signal)
            if sig == signal.SIGKILL:
                if pod.cgroup:
                    Cgroups.kill(Path(pod.cgroup))
                pod.hard_kill_at = time.monotonic() + _HARD_KILL_SECONDS

    def _hard_kill(self, pod: _Pod) -> None:
        """A shim that did not end after "kill now" (stopped, or hung): kill it and its pod."""
        with pod.lock:
            if not pod.has_process:
                return
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if pod.pidfd is not None:
                    signal.pidfd_send_signal(pod.pidfd, signal.SIGKILL)
                elif pod.proc is not None:
                    pod.proc.kill()
            self._kill_leftovers(pod)

    def _terminate(self, run: _JobRun, pod: _Pod) -> None:
        """Remove a pod: a pending one simply goes, a running one gets SIGTERM and a grace period."""
        if pod.phase == PENDING:
            run.pods.remove(pod)
            if self.publisher is not None:
                self.publisher.removed(pod)
            return
        if pod.phase == TERMINATING:
            return
        self._terminate_process(pod)

    def _terminate_process(self, pod: _Pod) -> None:
        if pod.phase == TERMINATING and pod.kill_at is not None:
            return
        pod.phase = TERMINATING
        self._mark(pod, _REMOVED)  # durable first: a restart must not count it as failed
        if self.publisher is not None:
            self.publisher.removed(pod)  # as the Job controller deletes a pod it no longer wants
        if pod.grace <= 0:
            self._signal(pod, signal.SIGKILL)
            return
        self._signal(pod, signal.SIGTERM)
        pod.kill_at = time.monotonic() + pod.grace

    def _terminate_all(self, run: _JobRun) -> None:
        for pod in list(run.pods):
            self._terminate(run, pod)

    def _mark(self, pod: _Pod, marker: str) -> None:
        """Write a marker into the pod's record (durably, except ``done`` which only saves work)."""
        if pod.pid is None and marker != _DONE:
            return  # never started: nothing on disk to correct
        path = pod.state_dir / marker
        if path.exists() or not pod.state_dir.is_dir():
            return
        try:
            if marker == _DONE:
                path.touch(mode=0o600)
            else:
                mark_durably(str(path))
        except OSError as err:
            log.warning("job runner: pod %s: cannot record %s: %s", pod.name, marker, err)

    def _environment(self, pod: _Pod, container: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
        """The process environment and the variables ``$(VAR)`` references may name."""
        labels = dict((pod.template.get("metadata") or {}).get("labels") or {})
        annotations = dict((pod.template.get("metadata") or {}).get("annotations") or {})
        labels["batch.kubernetes.io/job-name"] = pod.job_name
        labels["batch.kubernetes.io/controller-uid"] = pod.job_uid
        if pod.index is not None:
            annotations["batch.kubernetes.io/job-completion-index"] = str(pod.index)
            labels["batch.kubernetes.io/job-completion-index"] = str(pod.index)
        fields = {
            "metadata.name": pod.name,
            "metadata.namespace": pod.namespace,
            "metadata.uid": pod.uid,
            "spec.nodeName": socket.gethostname(),
            "spec.serviceAccountName": str(
                (pod.template.get("spec") or {}).get("serviceAccountName") or "default"
            ),
            "status.podIP": "127.0.0.1",
            "status.hostIP": "127.0.0.1",
        }
        hostname = pod.name if pod.index is None else f"{pod.job_name}-{pod.index}"
        return pod_environment(
            container,
            fields=fields,
            labels=labels,
            annotations=annotations,
            hostname=hostname,
            home=str(pod.scratch_dir),
            index=pod.index,
        )

    # -- adoption after a restart -----------------------------------------------------------------

    def _adopt(self) -> None:
        """Find the pods a previous runner on this work directory left: wait for the ones still
        running as for our own, account the ones that ended meanwhile, drop the ones never started."""
        for spec_path in sorted(self.work_dir.glob("*/*/*/spec.json")):
            directory = spec_path.parent
            if (directory / _DONE).exists():
                continue
            spec = read_json(spec_path)
            if spec is None:
                continue
            pod = _Pod(
                name=str(spec.get("pod")),
                uid=str(spec.get("uid")),
                index=spec.get("index"),
                state_dir=directory,
                scratch_dir=Path(str(spec.get("cwd"))),
                seq=next(self._seq),
                template={},
                job_name=str(spec.get("job")),
                namespace=str(spec.get("namespace")),
                job_uid=str(spec.get("jobUID")),
                grace=float(spec.get("grace") or 0),
                cgroup=spec.get("cgroup"),
                finalized=(directory / _FINALIZED).exists(),
            )
            identity = read_json(directory / "pid")
            if identity is None:
                pod.exit_code = 128
                self._mark(pod, _DONE)  # recorded but never started: nothing ran
                continue
            pod.identity, pod.pid = identity, int(identity["pid"])
            with contextlib.suppress(OSError):
                # The pid record is written as the pod starts: its time stands for the start time.
                pod.started_at = datetime.fromtimestamp((directory / "pid").stat().st_mtime, UTC)
            removed = (directory / _REMOVED).exists()
            pod.phase = TERMINATING if removed else RUNNING
            if read_json(directory / "exit") is None and same_process(identity):
                pod.pidfd = _pidfd(pod.pid)
                if pod.pidfd is not None and not same_process(identity):  # ended while opening
                    os.close(pod.pidfd)
                    pod.pidfd = None
                    self._finish(pod)
                else:
                    log.info("job runner: adopting pod %s (pid %s)", pod.name, pod.pid)
                    self._watch(pod)
                    if removed:
                        pod.phase = RUNNING  # _terminate_process re-sends SIGTERM and restarts the grace
                        self._terminate_process(pod)
            else:
                self._finish(pod)
            if pod.exit_code is not None and (removed or pod.aborted):
                self._mark(pod, _DONE)
                continue
            self._adopted.setdefault(pod.job_uid, []).append(pod)
            if self.publisher is not None:
                self.publisher.adopted(pod)

    def _sweep_adopted(self) -> None:
        """Adopted pods whose Job no longer exists are terminated (the Job was deleted meanwhile)."""
        present = {_uid(job) for job in self._informer.items()}
        for job_uid in [u for u in self._adopted if u not in present]:
            self._orphan(self._adopted.pop(job_uid))

    # -- events -----------------------------------------------------------------------------------

    def _event(self, obj: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        """Record a core/v1 Event about a Job (off this thread, best effort, as client-go's recorder;
        the reference names the Job's resourceVersion, as ``ref.GetReference`` does)."""
        self.recorder.record(object_reference(obj, JOBS.api_version, JOBS.kind), type_, reason, message)


# -- status helpers -----------------------------------------------------------------------------------


def _uid(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def _default(value: Any, default: int) -> Any:
    return default if value is None else value


def _rv_newer(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """True when ``a`` is a later version than ``b`` (resourceVersions compared as integers)."""
    try:
        return int(str((a.get("metadata") or {}).get("resourceVersion"))) > int(
            str((b.get("metadata") or {}).get("resourceVersion"))
        )
    except ValueError:
        return False  # opaque versions: trust the informer


def _condition_true(status: Mapping[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in status.get("conditions") or [])


def _finished(status: Mapping[str, Any]) -> bool:
    return _condition_true(status, COMPLETE) or _condition_true(status, FAILED)


def _interim(conditions: list[dict[str, Any]]) -> tuple[str, str, str] | None:
    """The terminal condition an already-recorded SuccessCriteriaMet / FailureTarget leads to."""
    for cond in conditions:
        if cond.get("status") != "True":
            continue
        if cond.get("type") == FAILURE_TARGET:
            return (FAILED, str(cond.get("reason") or ""), str(cond.get("message") or ""))
        if cond.get("type") == SUCCESS_CRITERIA_MET:
            return (COMPLETE, str(cond.get("reason") or ""), str(cond.get("message") or ""))
    return None


def _ensure_condition(
    conditions: list[dict[str, Any]], kind: str, status: str, reason: str, message: str, now: datetime
) -> bool:
    """The Job controller's ensureJobConditionStatus: True when the list changed.

    A condition that would be added with status False is not added at all, so a Job that never
    was suspended gets no ``Suspended`` condition.
    """
    stamp = format_time(now)
    for cond in conditions:
        if cond.get("type") == kind:
            if (cond.get("status"), cond.get("reason"), cond.get("message")) == (status, reason, message):
                return False
            cond.update(
                status=status, reason=reason, message=message, lastProbeTime=stamp, lastTransitionTime=stamp
            )
            return True
    if status == "False":
        return False
    conditions.append(
        {
            "type": kind,
            "status": status,
            "lastProbeTime": stamp,
            "lastTransitionTime": stamp,
            "reason": reason,
            "message": message,
        }
    )
    return True


def _succeeded(run: _JobRun, completions: int | None, indexed: bool) -> bool:
    if completions is None:
        return run.succeeded > 0 and not run.live()
    if indexed:
        return len({i for i in run.completed if i < completions}) >= completions
    return run.succeeded >= completions


def _set_count(status: dict[str, Any], name: str, value: int) -> None:
    """Counters are ``omitempty`` in the Job API: zero is written as absent."""
    if value:
        status[name] = value
    else:
        status.pop(name, None)


def _run_from_status(uid: str, status: Mapping[str, Any]) -> _JobRun:
    """State for a Job seen for the first time (e.g. after a restart): keep its recorded counts."""
    completed = _parse_indexes(str(status.get("completedIndexes") or ""))
    return _JobRun(
        uid=uid,
        succeeded=int(status.get("succeeded") or 0),
        failed=int(status.get("failed") or 0),
        completed=completed,
    )


def _parse_indexes(text: str) -> set[int]:
    """``"1,3-5"`` → ``{1, 3, 4, 5}`` (malformed parts are ignored)."""
    out: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        with contextlib.suppress(ValueError):
            out.update(range(int(lo), int(hi or lo) + 1))
    return out


def _format_indexes(indexes: Iterable[int]) -> str:
    """``{1, 3, 4, 5}`` → ``"1,3-5"``, the API's interval notation."""
    parts: list[str] = []
    ordered = sorted(set(indexes))
    start = prev = None
    for i in [*ordered, None]:
        if i is not None and prev is not None and i == prev + 1:
            prev = i
            continue
        if start is not None and prev is not None:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = i
    return ",".join(parts)



def _compiled_shim(work_dir: Path) -> str:
    """The pod shim compiled once, in the runner's private work directory, for every pod to run.

    Python compiles a script it is given at every start (never caching it): about 6 ms of CPU per
    pod for the shim; a ``.pyc`` given instead runs at once (``bench/pod_start.py``). Where it
    cannot be written, the script itself is run."""
    target = work_dir / SHIM_PYC
    try:
        py_compile.compile(_SHIM, cfile=str(target), doraise=True)
    except (OSError, py_compile.PyCompileError) as err:
        log.warning("job runner: cannot compile the pod shim to %s (%s); running its source", target, err)
        return _SHIM
    return str(target)


def _pidfd(pid: int) -> int | None:
    """A pidfd for ``pid`` (signals and waits that cannot hit a reused pid), where the kernel has them."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None
