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
* the interim conditions ``SuccessCriteriaMet`` / ``FailureTarget`` first and the terminal
  ``Complete`` (with ``completionTime``) / ``Failed`` once no process of the Job is left, with the
  reasons and messages of Kubernetes 1.31+ (``CompletionsReached``, ``BackoffLimitExceeded``,
  ``DeadlineExceeded``);
* ``Suspended`` True (``JobSuspended``) when a Job is suspended and False (``JobResumed``) when
  it resumes; suspension terminates the Job's processes without counting them as failed.

A pod is a process group (its own session), so ``sh -c`` children die with it: termination sends
SIGTERM to the group and SIGKILL after the pod's ``terminationGracePeriodSeconds``, and when a
pod's main process exits the rest of its group is killed, as a container's processes die with
its PID 1. Each pod gets a scratch directory ``WORK_DIR/<namespace>/<job>/<pod>/`` as its working
directory, holding ``stdout.log`` and ``stderr.log`` (kept for debugging). The environment is the
runner's own (so ``PATH`` and virtualenvs work) overlaid with ``HOSTNAME``,
``JOB_COMPLETION_INDEX`` for Indexed Jobs and the container's ``env`` (``value`` and the common
``fieldRef`` paths; ``$(VAR)`` references are expanded as the kubelet does).

Not modelled: init and sidecar containers, ``podFailurePolicy``, ``backoffLimitPerIndex``,
``successPolicy``, in-place restarts of ``restartPolicy: OnFailure`` (every failed run counts as a
failed pod) and Pod objects (there are none in the API). A container without ``command`` (the
image's entrypoint) cannot run locally: its pod fails at once and a ``FailedToRun`` Event says why.
Failed pods are replaced after the Job controller's exponential backoff (10 s doubling, at most
6 min), measured on the injected clock so end-to-end tests can move time.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import random
import re
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pykueue.api.meta import format_time, parse_time
from pykueue.client.interface import APIError, Client, Conflict, NotFound
from pykueue.client.resources import EVENTS, JOBS
from pykueue.controllers.clock import Clock, system_clock
from pykueue.controllers.informer import SYNCED, Change, Informer, ObjectKey, object_key

log = logging.getLogger(__name__)

DEFAULT_SUBDIR = "pods"
"""Where ``pykueue serve`` puts the pods' scratch directories, under its data directory."""

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

_IDLE_WAIT_SECONDS = 0.5  # upper bound on the worker's sleep, so a moved test clock is noticed soon
_STOP_GRACE_SECONDS = 2.0  # stop() must not wait a pod's full 30 s grace period
_MAX_WRITE_ATTEMPTS = 5
_RETRY_SECONDS = 1.0
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # the apiserver's generateName alphabet

PENDING, RUNNING, TERMINATING = "Pending", "Running", "Terminating"


@dataclass(eq=False)
class _Pod:
    """One pod of a Job: waiting for a process slot, running, or being terminated."""

    name: str
    index: int | None
    directory: Path
    seq: int  # creation order: free process slots go to the oldest pending pod
    template: dict[str, Any]  # the Job's pod template when the pod was created (not mutated)
    job_name: str
    namespace: str
    job_uid: str
    grace: float
    phase: str = PENDING
    proc: subprocess.Popen[bytes] | None = None
    exit_code: int | None = None  # set by the waiter thread once the process is reaped
    kill_at: float | None = None  # time.monotonic() at which a terminating group gets SIGKILL
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def has_process(self) -> bool:
        """True while a started process has not been reaped."""
        return self.proc is not None and self.exit_code is None


@dataclass(eq=False)
class _JobRun:
    """What the runner knows about one Job beyond its API object."""

    uid: str
    pods: list[_Pod] = field(default_factory=list)
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
    ``parallelism`` bounds them); pods over the bound stay pending, counted in ``active`` but not
    ``ready``, as pods waiting for a node would be. ``pod_failure_backoff`` is the base of the
    delay before failed pods are replaced (0 replaces them at once).
    """

    def __init__(
        self,
        client: Client,
        work_dir: Path,
        *,
        max_processes: int | None = None,
        clock: Clock = system_clock,
        pod_failure_backoff: float = POD_FAILURE_BACKOFF_SECONDS,
    ) -> None:
        if max_processes is not None and max_processes < 1:
            raise ValueError("max_processes must be at least 1")
        self.client = client
        self.work_dir = Path(work_dir)
        self.max_processes = max_processes
        self.clock = clock
        self.pod_failure_backoff = pod_failure_backoff
        self._informer = Informer(client, JOBS, self._on_change)
        self._cond = threading.Condition()
        self._dirty: dict[ObjectKey, None] = {}  # insertion-ordered set, guarded by _cond
        self._stopping = False
        self._thread: threading.Thread | None = None
        # Owned by the worker thread (and by stop() once the worker has ended).
        self._runs: dict[ObjectKey, _JobRun] = {}
        self._orphans: list[_Pod] = []  # terminating pods of Jobs that are gone
        self._seen: dict[ObjectKey, dict[str, Any]] = {}  # objects from our own writes and reads
        self._due: dict[ObjectKey, datetime] = {}  # clock time at which a Job needs a look
        self._waiters: list[threading.Thread] = []
        self._seq = itertools.count()

    # -- component --------------------------------------------------------------------------------

    def start(self) -> None:
        """Start watching Jobs and the worker thread."""
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self._thread = threading.Thread(target=self._loop, name="job-runner", daemon=True)
        self._thread.start()
        self._informer.start()

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Block until the initial list of Jobs has been delivered."""
        return self._informer.wait_synced(timeout)

    def stop(self) -> None:
        """Stop watching, then terminate every process this runner started and wait for them."""
        self._informer.stop()
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=10)
        pods = [p for run in self._runs.values() for p in run.pods] + self._orphans
        for pod in pods:
            self._signal(pod, signal.SIGTERM)
        deadline = time.monotonic() + _STOP_GRACE_SECONDS
        while any(p.has_process for p in pods) and time.monotonic() < deadline:
            time.sleep(0.02)
        for pod in pods:
            self._signal(pod, signal.SIGKILL)
        for waiter in self._waiters:
            waiter.join(timeout=5)
        self._runs.clear()
        self._orphans.clear()

    # -- events from other threads ----------------------------------------------------------------

    def _on_change(self, change: Change) -> None:
        if change.type == SYNCED:
            return
        self._mark_dirty(object_key(change.object))

    def _mark_dirty(self, key: ObjectKey) -> None:
        with self._cond:
            self._dirty[key] = None
            self._cond.notify_all()

    # -- the worker -------------------------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            timeout = self._next_wait()
            with self._cond:
                if not self._dirty and not self._stopping:
                    self._cond.wait(timeout)
                if self._stopping:
                    return
                keys = list(self._dirty)
                self._dirty.clear()
            now = self.clock()
            for key, at in list(self._due.items()):
                if at <= now:
                    del self._due[key]
                    keys.append(key)
            for key in dict.fromkeys(keys):
                try:
                    self._sync(key)
                except Exception:  # one bad Job must not stop the runner
                    log.exception("job runner: syncing %s/%s failed", *key)
                    self._schedule(key, self.clock() + timedelta(seconds=_RETRY_SECONDS))
            self._enforce_grace()

    def _next_wait(self) -> float:
        wait = _IDLE_WAIT_SECONDS
        mono = time.monotonic()
        for pod in self._all_pods():
            if pod.kill_at is not None and pod.has_process:
                wait = min(wait, pod.kill_at - mono)
        if self._due:
            now = self.clock()
            wait = min(wait, *((at - now).total_seconds() for at in self._due.values()))
        return max(wait, 0.0)

    def _all_pods(self) -> Iterable[_Pod]:
        for run in self._runs.values():
            yield from run.pods
        yield from self._orphans

    def _enforce_grace(self) -> None:
        mono = time.monotonic()
        for pod in self._all_pods():
            if pod.kill_at is not None and pod.kill_at <= mono and pod.has_process:
                self._signal(pod, signal.SIGKILL)
                pod.kill_at = None
        self._orphans = [p for p in self._orphans if p.has_process]

    def _schedule(self, key: ObjectKey, at: datetime) -> None:
        prev = self._due.get(key)
        if prev is None or at < prev:
            self._due[key] = at

    # -- one Job ----------------------------------------------------------------------------------

    def _sync(self, key: ObjectKey) -> None:
        """Reconcile one Job; a Conflict re-reads it and reconciles the fresh object again."""
        for _ in range(_MAX_WRITE_ATTEMPTS):
            job = self._current(key)
            try:
                self._reconcile(key, job)
                return
            except Conflict:
                try:
                    self._seen[key] = self.client.get(JOBS, key[1], key[0])
                except NotFound:
                    self._forget(key)
                    return
            except NotFound:
                self._forget(key)
                return
            except APIError as err:
                log.warning("job runner: %s/%s: %s; retrying", key[0], key[1], err)
                self._schedule(key, self.clock() + timedelta(seconds=_RETRY_SECONDS))
                return
        self._schedule(key, self.clock() + timedelta(seconds=_RETRY_SECONDS))

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
        """The Job is gone: terminate its processes and drop what we know."""
        run = self._runs.pop(key, None)
        self._seen.pop(key, None)
        self._due.pop(key, None)
        if run is not None:
            self._terminate_all(run)
            self._orphans.extend(p for p in run.pods if p.has_process)
            run.pods.clear()
            self._start_pending(None)

    def _reconcile(self, key: ObjectKey, job: dict[str, Any] | None) -> None:
        if job is None or (job.get("metadata") or {}).get("deletionTimestamp"):
            self._forget(key)
            return
        spec: dict[str, Any] = job.get("spec") or {}
        status: dict[str, Any] = job.get("status") or {}
        managed_by = spec.get("managedBy")
        if (managed_by and managed_by != JOB_CONTROLLER) or _finished(status):
            self._forget(key)  # someone else's Job, or nothing left to do
            return
        run = self._runs.get(key)
        if run is not None and run.uid != _uid(job):
            self._forget(key)  # deleted and recreated under the same name
            run = None
        if run is None:
            run = _run_from_status(_uid(job), status)
            self._runs[key] = run
        self._due.pop(key, None)
        now = self.clock()
        self._collect(run, now)

        indexed = spec.get("completionMode") == "Indexed"
        completions: int | None = spec.get("completions")
        parallelism = int(_default(spec.get("parallelism"), 1))
        suspended = spec.get("suspend") is True
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
                self._manage_pods(key, run, job, completions, parallelism, indexed, now)
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
        _set_count(new, "active", sum(1 for p in pods if p.phase != TERMINATING))
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
        new["uncountedTerminatedPods"] = new.get("uncountedTerminatedPods") or {}
        if conditions:
            new["conditions"] = conditions
        if new != status:
            written = self.client.replace(JOBS, {**job, "status": new}, subresource="status")
            self._seen[key] = written
            job = written
        for type_, reason, message in events:
            self._event(job, type_, reason, message)
        if _finished(new):
            self._runs.pop(key, None)
            self._orphans.extend(p for p in run.pods if p.has_process)

    def _collect(self, run: _JobRun, now: datetime) -> None:
        """Account for the pods whose processes ended since the last look."""
        kept: list[_Pod] = []
        for pod in run.pods:
            if pod.exit_code is None:
                kept.append(pod)
                continue
            if pod.phase == TERMINATING:
                continue  # removed by the runner: neither a success nor a failure
            if pod.exit_code == 0:
                run.succeeded += 1
                if pod.index is not None:
                    run.completed.add(pod.index)
                run.failures_since_success = 0
            else:
                run.failed += 1
                run.failures_since_success += 1
                run.last_failure = now
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
    ) -> None:
        """Create or remove pods so that the Job has as many active pods as it wants."""
        live = run.live()
        if completions is None:
            # Any success completes the Job once the pods still running finish; start no more.
            want = len(live) if run.succeeded > 0 else parallelism
        else:
            done = len(run.completed) if indexed else run.succeeded
            want = max(0, min(parallelism, completions - done))
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
            run.pods.append(self._new_pod(job, index))

    def _new_pod(self, job: dict[str, Any], index: int | None) -> _Pod:
        meta = job.get("metadata") or {}
        name, namespace = str(meta.get("name")), str(meta.get("namespace") or "default")
        suffix = "".join(random.choices(_NAME_CHARS, k=5))
        pod_name = f"{name}-{suffix}" if index is None else f"{name}-{index}-{suffix}"
        template: dict[str, Any] = (job.get("spec") or {}).get("template") or {}
        grace = (template.get("spec") or {}).get("terminationGracePeriodSeconds")
        return _Pod(
            name=pod_name,
            index=index,
            directory=self.work_dir / namespace / name / pod_name,
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
        """Start a pod's process; a pod that cannot start is failed at once (exit code 128)."""
        pod.phase = RUNNING
        containers = (pod.template.get("spec") or {}).get("containers") or [{}]
        container: dict[str, Any] = containers[0]
        cname = container.get("name", "")
        command = [str(a) for a in container.get("command") or []]
        args = [str(a) for a in container.get("args") or []]
        if not command:
            self._fail_to_run(
                pod,
                f'Pod {pod.name}: container "{cname}" has no command; the local job runner runs '
                "command + args as a local process and cannot run an image's entrypoint",
            )
            return False
        env, defined = self._environment(pod, container)
        argv = [_expand(a, defined) for a in command + args]
        try:
            pod.directory.mkdir(parents=True, exist_ok=True)
            with (
                open(pod.directory / "stdout.log", "ab") as out,
                open(pod.directory / "stderr.log", "ab") as err,
            ):
                pod.proc = subprocess.Popen(
                    argv,
                    cwd=pod.directory,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,  # its own process group: the whole pod can be signalled
                )
        except (OSError, ValueError) as error:
            self._fail_to_run(pod, f'Pod {pod.name}: container "{cname}" failed to start: {error}')
            return False
        waiter = threading.Thread(target=self._wait, args=(key, pod), name=f"pod-{pod.name}", daemon=True)
        self._waiters = [w for w in self._waiters if w.is_alive()]
        self._waiters.append(waiter)
        waiter.start()
        return True

    def _fail_to_run(self, pod: _Pod, message: str) -> None:
        pod.exit_code = 128  # what the kubelet reports for a container that could not start
        log.warning("job runner: %s", message)
        involved = {"metadata": {"name": pod.job_name, "namespace": pod.namespace, "uid": pod.job_uid}}
        self._event(involved, "Warning", REASON_FAILED_TO_RUN, message)

    def _wait(self, key: ObjectKey, pod: _Pod) -> None:
        """Waiter thread: reap the pod's process, kill what is left of its group, report it."""
        proc = pod.proc
        assert proc is not None
        waitid = getattr(os, "waitid", None)
        if waitid is not None:
            # Wait without reaping, so the group id cannot be reused while we kill its stragglers.
            with contextlib.suppress(ChildProcessError):
                waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
            with pod.lock, contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        # Reap and record under the lock: once reaped, the pid (and group id) may be reused, so
        # _signal must see exit_code set before that can happen.
        with pod.lock:
            pod.exit_code = proc.wait()
        self._mark_dirty(key)

    def _signal(self, pod: _Pod, sig: signal.Signals) -> None:
        with pod.lock:
            if pod.proc is not None and pod.exit_code is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pod.proc.pid, sig)

    def _terminate(self, run: _JobRun, pod: _Pod) -> None:
        """Remove a pod: a pending one simply goes, a running one gets SIGTERM and a grace period."""
        if pod.phase == PENDING:
            run.pods.remove(pod)
            return
        if pod.phase == TERMINATING:
            return
        pod.phase = TERMINATING
        if pod.grace <= 0:
            self._signal(pod, signal.SIGKILL)
            return
        self._signal(pod, signal.SIGTERM)
        pod.kill_at = time.monotonic() + pod.grace

    def _terminate_all(self, run: _JobRun) -> None:
        for pod in list(run.pods):
            self._terminate(run, pod)

    def _environment(self, pod: _Pod, container: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
        """The process environment and the variables ``$(VAR)`` references may name."""
        labels = dict((pod.template.get("metadata") or {}).get("labels") or {})
        annotations = dict((pod.template.get("metadata") or {}).get("annotations") or {})
        hostname = pod.name if pod.index is None else f"{pod.job_name}-{pod.index}"
        defined: dict[str, str] = {}
        if pod.index is not None:
            defined["JOB_COMPLETION_INDEX"] = str(pod.index)
            annotations["batch.kubernetes.io/job-completion-index"] = str(pod.index)
            labels["batch.kubernetes.io/job-completion-index"] = str(pod.index)
        fields = {
            "metadata.name": pod.name,
            "metadata.namespace": pod.namespace,
            "metadata.uid": str(uuid.uuid5(uuid.NAMESPACE_URL, pod.name)),
            "spec.nodeName": socket.gethostname(),
            "spec.serviceAccountName": str(
                (pod.template.get("spec") or {}).get("serviceAccountName") or "default"
            ),
            "status.podIP": "127.0.0.1",
            "status.hostIP": "127.0.0.1",
        }
        for var in container.get("env") or []:
            name = str(var.get("name", ""))
            if "value" in var or "valueFrom" not in var:
                defined[name] = _expand(str(var.get("value") or ""), defined)
                continue
            ref = (var.get("valueFrom") or {}).get("fieldRef") or {}
            path = str(ref.get("fieldPath", ""))
            found = re.fullmatch(r"metadata\.(labels|annotations)\['(.+)'\]", path)
            if found:
                source = labels if found.group(1) == "labels" else annotations
                if found.group(2) in source:
                    defined[name] = str(source[found.group(2)])
            elif path in fields:
                defined[name] = fields[path]
            else:
                log.info("job runner: %s: env %s: unsupported valueFrom, left unset", pod.name, name)
        env = {**os.environ, "HOSTNAME": hostname, **defined}
        return env, defined

    # -- events -----------------------------------------------------------------------------------

    def _event(self, obj: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        """Record a core/v1 Event about a Job (best effort, as client-go's recorder is)."""
        meta = obj.get("metadata") or {}
        now = format_time(self.clock())
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{meta.get('name')}.{uuid.uuid4().hex[:16]}",
                "namespace": meta.get("namespace"),
            },
            "involvedObject": {
                "apiVersion": JOBS.api_version,
                "kind": JOBS.kind,
                "name": meta.get("name"),
                "namespace": meta.get("namespace"),
                "uid": meta.get("uid"),
            },
            "reason": reason,
            "message": message,
            "type": type_,
            "count": 1,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": socket.gethostname(),
        }
        try:
            self.client.create(EVENTS, body)
        except APIError as err:
            log.debug("job runner: event %s for %s: %s", reason, meta.get("name"), err)


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


_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def _expand(text: str, defined: Mapping[str, str]) -> str:
    """The kubelet's ``$(VAR)`` expansion: ``$$`` escapes, unknown references stay as written."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return defined.get(name, match.group(0))

    return _REFERENCE.sub(replace, text)
