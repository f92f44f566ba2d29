"""The local job runner against a real embedded API server, running real processes.

Each test builds an in-memory store, the embedded API server's request pipeline and an
in-process client, starts a :class:`JobRunner` on a temporary work directory and drives Jobs
through the API, asserting the status the runner writes back and the processes it leaves alive.
Commands are short shell scripts; the long-running ones (``sleep 30``) only exist to be killed.
Note that, as in Kubernetes, ``$$`` in a command is an escaped ``$``, so scripts write ``$$$$``
for the shell's PID.
"""

from __future__ import annotations

import json
import marshal
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "e2e"))
from support import pid_alive

from pykueue.api.jobs import QUEUE_NAME_LABEL
from pykueue.apiserver.app import create_app
from pykueue.apiserver.podlogs import stream_output
from pykueue.client.inprocess import InProcessClient
from pykueue.client.interface import NotFound
from pykueue.client.resources import EVENTS, JOBS, WORKLOADS
from pykueue.controllers import podshim
from pykueue.controllers.jobrunner import JobRunner
from pykueue.controllers.podsandbox import process_identity, resolve_user
from pykueue.store import Store

T = TypeVar("T")
NS = "default"
TIMEOUT = 10.0


def stdout_of(record: Path) -> str:
    """What the pod wrote to stdout (its log keeps both streams, line by line)."""
    return stream_output(record, "stdout").decode()


def stderr_of(record: Path) -> str:
    return stream_output(record, "stderr").decode()


class FakeClock:
    """Wall time plus an offset the test moves, standing in for the runner's clock."""

    def __init__(self) -> None:
        self._offset = 0.0
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            return datetime.now(UTC) + timedelta(seconds=self._offset)

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._offset += seconds


class Env:
    """One embedded API server, its client, and the runners a test starts."""

    def __init__(self, tmp_path: Path) -> None:
        _, parts = create_app(Store(None))
        parts.bootstrap()
        self.client = InProcessClient(parts.handlers)
        self.work = tmp_path / "work"
        self.scratch = tmp_path / "scratch"
        self.clock = FakeClock()
        self.runners: list[JobRunner] = []

    def runner(self, **kwargs: Any) -> JobRunner:
        kwargs.setdefault("pod_failure_backoff", 0.0)
        kwargs.setdefault("run_unmanaged_jobs", True)
        runner = JobRunner(self.client, self.work, clock=self.clock, scratch_dir=self.scratch, **kwargs)
        runner.start()
        self.runners.append(runner)
        return runner

    def create(self, name: str, command: list[str] | None, **spec: Any) -> dict[str, Any]:
        container: dict[str, Any] = {"name": "main", "image": "busybox"}
        if command is not None:
            container["command"] = command
        if "env" in spec:
            container["env"] = spec.pop("env")
        if "args" in spec:
            container["args"] = spec.pop("args")
        labels = spec.pop("labels", None)
        body = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": NS, **({"labels": labels} if labels else {})},
            "spec": {
                **spec,
                "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
            },
        }
        return self.client.create(JOBS, body)

    def status(self, name: str) -> dict[str, Any]:
        status: dict[str, Any] = self.client.get(JOBS, name, NS).get("status") or {}
        return status

    def wait_status(self, name: str, pred: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """Wait until the Job's status satisfies ``pred`` and return it."""

        def check() -> dict[str, Any] | None:
            status = self.status(name)
            return status if pred(status) else None

        return wait_for(check)

    def wait_condition(self, name: str, kind: str, status: str = "True") -> dict[str, Any]:
        """Wait until the Job has the condition with ``status`` and return the Job's status."""
        return self.wait_status(name, lambda st: conditions(st).get(kind, ("",))[0] == status)

    def pods(self, name: str) -> list[Path]:
        """The pods' working directories of a Job, oldest first."""
        base = self.scratch / NS / name
        return sorted(base.iterdir(), key=lambda p: p.stat().st_mtime) if base.exists() else []

    def records(self, name: str) -> list[Path]:
        """The runner's record directories of a Job's pods (spec, pid, exit, logs), oldest first."""
        base = self.work / NS / name
        return sorted(base.iterdir(), key=lambda p: p.stat().st_mtime) if base.exists() else []

    def events(self, name: str) -> list[dict[str, Any]]:
        items, _ = self.client.list(EVENTS, NS)
        return [e for e in items if e["involvedObject"]["name"] == name]

    def wait_events(self, name: str, reasons: list[str]) -> None:
        """Wait until the Job's Events have exactly these reasons (events follow the status write)."""
        wait_for(lambda: sorted(e["reason"] for e in self.events(name)) == sorted(reasons))


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    e = Env(tmp_path)
    yield e
    for runner in e.runners:
        runner.stop()


def wait_for(fn: Callable[[], T | None], timeout: float = TIMEOUT) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {fn}")
        time.sleep(0.02)


def conditions(status: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {
        c["type"]: (c["status"], c.get("reason", ""), c.get("message", ""))
        for c in status.get("conditions") or []
    }


def read_pid(path: Path) -> int:
    # The shell may not have finished writing: wait for a non-empty file.
    return int(wait_for(lambda: path.read_text().strip() if path.exists() else None))


SLEEPER = ["sh", "-c", "echo $$$$ > pid; exec sleep 30"]
COMPLETE = ("True", "CompletionsReached", "Reached expected number of succeeded pods")
BACKOFF = ("True", "BackoffLimitExceeded", "Job has reached the specified backoff limit")


def test_job_completes_with_kubernetes_status(env: Env) -> None:
    env.runner()
    env.create("ok", ["sh", "-c", "exit 0"])
    st = env.wait_condition("ok", "Complete")
    assert st["succeeded"] == 1
    assert "active" not in st and "failed" not in st
    assert st["ready"] == 0 and st["terminating"] == 0
    assert st["startTime"] and st["completionTime"] and st["completionTime"] >= st["startTime"]
    assert conditions(st) == {"SuccessCriteriaMet": COMPLETE, "Complete": COMPLETE}  # never suspended
    env.wait_events("ok", ["Completed"])
    # The Event names the Job as client-go's ``ref.GetReference`` does, its resourceVersion included.
    [ev] = env.events("ok")
    assert set(ev["involvedObject"]) == {"apiVersion", "kind", "name", "namespace", "uid", "resourceVersion"}
    assert (ev["involvedObject"]["apiVersion"], ev["involvedObject"]["kind"]) == ("batch/v1", "Job")
    assert len(env.pods("ok")) == 1


def started_together(trace: Path, count: int, go: Path) -> None:
    """Wait until ``count`` pods of a :data:`GATED` script run at once, then let them all end
    (pods that overlap for a fixed time may not, on a busy machine: a pod's start can take longer)."""
    wait_for(lambda: trace.exists() and trace.read_text().split().count("+") >= count)
    go.touch()


GATED = 'echo + >> "$TRACE"; while [ ! -e "$GO" ]; do sleep 0.05; done; echo - >> "$TRACE"'
"""A pod that logs its start and end, and ends once the ``$GO`` file exists."""


def test_parallelism_two_until_four_completions(env: Env, tmp_path: Path) -> None:
    env.runner()
    log, go = tmp_path / "trace", tmp_path / "go"
    env.create(
        "par",
        ["sh", "-c", GATED],
        parallelism=2,
        completions=4,
        env=[{"name": "TRACE", "value": str(log)}, {"name": "GO", "value": str(go)}],
    )
    started_together(log, 2, go)
    st = env.wait_condition("par", "Complete")
    assert st["succeeded"] == 4 and "failed" not in st
    running = peak = 0
    for line in log.read_text().split():
        running += 1 if line == "+" else -1
        peak = max(peak, running)
    assert peak == 2
    assert len(env.pods("par")) == 4


def test_failures_beyond_backoff_limit_fail_the_job(env: Env) -> None:
    env.runner()
    env.create("bad", ["sh", "-c", "exit 3"], backoffLimit=1)
    st = env.wait_condition("bad", "Failed")
    assert st["failed"] == 2 and "succeeded" not in st and "active" not in st
    assert conditions(st) == {"FailureTarget": BACKOFF, "Failed": BACKOFF}
    assert "completionTime" not in st  # only successful Jobs get one
    assert len(env.pods("bad")) == 2
    env.wait_events("bad", ["BackoffLimitExceeded"])


def test_suspended_job_is_not_run_until_resumed(env: Env) -> None:
    env.runner()
    env.create("held", ["sh", "-c", "touch ran"], suspend=True)
    st = env.wait_condition("held", "Suspended")
    assert conditions(st)["Suspended"] == ("True", "JobSuspended", "Job suspended")
    assert "startTime" not in st and "active" not in st
    time.sleep(0.3)
    assert env.pods("held") == []
    env.client.patch(JOBS, "held", {"spec": {"suspend": False}}, NS)
    st = env.wait_condition("held", "Complete")
    assert conditions(st)["Suspended"] == ("False", "JobResumed", "Job resumed")
    assert [p.joinpath("ran").exists() for p in env.pods("held")] == [True]


def test_suspend_kills_the_pod_and_resume_runs_it_again(env: Env) -> None:
    env.runner()
    env.create("long", SLEEPER)
    first = read_pid(wait_for(lambda: env.pods("long"))[0] / "pid")
    st = env.wait_status("long", lambda s: s.get("ready") == 1)
    assert st["active"] == 1
    started = st["startTime"]

    env.client.patch(JOBS, "long", {"spec": {"suspend": True}}, NS)
    wait_for(lambda: not pid_alive(first))
    st = env.wait_status("long", lambda s: s.get("terminating") == 0 and "Suspended" in conditions(s))
    assert "active" not in st and st["ready"] == 0
    assert "failed" not in st  # pods removed by suspension are not failures
    assert conditions(st)["Suspended"] == ("True", "JobSuspended", "Job suspended")

    env.clock.advance(5)
    env.client.patch(JOBS, "long", {"spec": {"suspend": False}}, NS)
    second_dir = wait_for(lambda: pods[1] if len(pods := env.pods("long")) == 2 else None)
    second = read_pid(second_dir / "pid")
    assert second != first and pid_alive(second)
    st = env.wait_status("long", lambda s: s.get("ready") == 1)
    assert conditions(st)["Suspended"] == ("False", "JobResumed", "Job resumed")
    assert st["startTime"] > started
    env.wait_events("long", ["Resumed", "Suspended"])


def test_suspend_kills_the_whole_process_group(env: Env) -> None:
    env.runner()
    env.create("tree", ["sh", "-c", "sleep 30 & echo $! > child; wait"])
    child = read_pid(wait_for(lambda: env.pods("tree"))[0] / "child")
    assert pid_alive(child)
    env.client.patch(JOBS, "tree", {"spec": {"suspend": True}}, NS)
    wait_for(lambda: not pid_alive(child))


def test_deleting_the_job_kills_its_processes(env: Env) -> None:
    env.runner()
    env.create("doomed", SLEEPER)
    pid = read_pid(wait_for(lambda: env.pods("doomed"))[0] / "pid")
    assert pid_alive(pid)
    env.client.delete(JOBS, "doomed", NS)
    wait_for(lambda: not pid_alive(pid))
    with pytest.raises(NotFound):
        env.client.get(JOBS, "doomed", NS)


def test_stop_kills_running_processes(env: Env) -> None:
    runner = env.runner()
    env.create("orphan", SLEEPER)
    pid = read_pid(wait_for(lambda: env.pods("orphan"))[0] / "pid")
    runner.stop()
    assert not pid_alive(pid)


def test_environment_working_directory_and_logs(env: Env) -> None:
    env.runner()
    script = (
        'echo "$GREETING|$DERIVED|$POD|$HOSTNAME" > out.txt; pwd -P > where.txt; echo hello; echo oops >&2'
    )
    env.create(
        "envjob",
        ["sh", "-c"],
        args=[script],
        env=[
            {"name": "GREETING", "value": "hi"},
            {"name": "DERIVED", "value": "$(GREETING)-there $$(GREETING)"},
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ],
    )
    env.wait_condition("envjob", "Complete")
    (pod,) = env.pods("envjob")
    (record,) = env.records("envjob")
    assert record.name == pod.name
    assert (pod / "out.txt").read_text().strip() == f"hi|hi-there $(GREETING)|{pod.name}|{pod.name}"
    assert (pod / "where.txt").read_text().strip() == str(pod.resolve())
    assert stdout_of(record) == "hello\n"
    assert stderr_of(record) == "oops\n"


def test_indexed_job_gets_completion_indexes(env: Env) -> None:
    env.runner()
    env.create(
        "idx",
        ["sh", "-c", 'echo "$JOB_COMPLETION_INDEX" > index; test "$HOSTNAME" = "idx-$JOB_COMPLETION_INDEX"'],
        completionMode="Indexed",
        completions=3,
        parallelism=2,
        backoffLimit=0,
    )
    st = env.wait_condition("idx", "Complete")
    assert st["succeeded"] == 3 and st["completedIndexes"] == "0-2"
    assert sorted((p / "index").read_text().strip() for p in env.pods("idx")) == ["0", "1", "2"]


def test_unset_completions_complete_on_first_success(env: Env) -> None:
    env.runner()
    env.create("any", ["sh", "-c", "exit 0"], parallelism=2)
    st = env.wait_condition("any", "Complete")
    assert st["succeeded"] >= 1 and "active" not in st
    assert conditions(st)["Complete"] == COMPLETE


def test_container_without_command_fails_with_an_event(env: Env) -> None:
    env.runner()
    env.create("entry", None, backoffLimit=0)
    st = env.wait_condition("entry", "Failed")
    assert st["failed"] == 1
    (event,) = [e for e in env.events("entry") if e["reason"] == "FailedToRun"]
    assert event["type"] == "Warning" and "has no command" in event["message"]


def test_missing_executable_fails_the_pod(env: Env) -> None:
    env.runner()
    env.create("nobin", ["/nonexistent/binary"], backoffLimit=0)
    env.wait_condition("nobin", "Failed")
    (event,) = [e for e in env.events("nobin") if e["reason"] == "FailedToRun"]
    assert "failed to start" in event["message"]


def test_max_processes_bounds_concurrency(env: Env, tmp_path: Path) -> None:
    env.runner(max_processes=1)
    lock = tmp_path / "lock"
    # Two pods at once would find the lock taken and fail the Job (backoffLimit 0).
    script = 'mkdir "$LOCK" || exit 1; sleep 0.2; rmdir "$LOCK"'
    env.create(
        "serial",
        ["sh", "-c", script],
        parallelism=2,
        completions=2,
        backoffLimit=0,
        env=[{"name": "LOCK", "value": str(lock)}],
    )
    env.wait_status("serial", lambda s: s.get("active") == 2 and s.get("ready") == 1)
    st = env.wait_condition("serial", "Complete")
    assert st["succeeded"] == 2


def test_active_deadline_fails_the_job_and_kills_it(env: Env) -> None:
    env.runner()
    env.create("slow", SLEEPER, activeDeadlineSeconds=60)
    pid = read_pid(wait_for(lambda: env.pods("slow"))[0] / "pid")
    wait_for(lambda: env.status("slow").get("ready") == 1)
    env.clock.advance(61)
    st = env.wait_condition("slow", "Failed")
    deadline = ("True", "DeadlineExceeded", "Job was active longer than specified deadline")
    assert conditions(st)["Failed"] == deadline and conditions(st)["FailureTarget"] == deadline
    assert not pid_alive(pid)
    assert "failed" not in st  # the killed pod is removed, not failed


def test_jobs_managed_by_another_controller_are_left_alone(env: Env) -> None:
    env.runner()
    env.create("remote", ["sh", "-c", "exit 0"], managedBy="kueue.x-k8s.io/multikueue")
    env.create("local", ["sh", "-c", "exit 0"])
    env.wait_condition("local", "Complete")
    time.sleep(0.2)
    assert env.status("remote") == {} and env.pods("remote") == []


def test_pod_failure_backoff_delays_replacements(env: Env) -> None:
    env.runner(pod_failure_backoff=10.0)
    env.create("retry", ["sh", "-c", "exit 1"], backoffLimit=1)
    wait_for(lambda: env.status("retry").get("failed") == 1)
    time.sleep(0.3)
    assert len(env.pods("retry")) == 1  # the replacement waits out the 10 s backoff
    env.clock.advance(11)
    env.wait_condition("retry", "Failed")
    assert len(env.pods("retry")) == 2


# --- the sandbox: environment, directories, limits, descendants, admission -----------------------------


def pod_record(env: Env, name: str) -> Path:
    (record,) = wait_for(lambda: env.records(name) or None)
    return record


def test_environment_is_only_the_pods_own(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", "/secret/kubeconfig")
    monkeypatch.setenv("PYKUEUE_TEST_SECRET", "s3cr3t")
    env.runner()
    env.create("envonly", ["env"], env=[{"name": "FOO", "value": "bar"}])
    env.wait_condition("envonly", "Complete")
    record = pod_record(env, "envonly")
    (pod,) = env.pods("envonly")
    lines = stdout_of(record).splitlines()
    seen = dict(line.split("=", 1) for line in lines)
    assert seen == {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOSTNAME": pod.name,
        "HOME": str(pod),
        "FOO": "bar",
    }


def test_unsupported_value_from_is_refused_with_an_event(env: Env) -> None:
    env.runner()
    env.create(
        "secretenv",
        ["sh", "-c", "exit 0"],
        backoffLimit=0,
        env=[{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}],
    )
    st = env.wait_condition("secretenv", "Failed")
    assert st["failed"] == 1
    (event,) = [e for e in env.events("secretenv") if e["reason"] == "FailedToRun"]
    assert "env[0] (PASSWORD): valueFrom.secretKeyRef is not supported" in event["message"]
    assert env.records("secretenv") == []  # nothing was started


def test_the_pod_cannot_reach_the_servers_files_by_relative_path(tmp_path: Path) -> None:
    """The runner's work directory is the server's ``DATA/pods``; the pod's working directory is
    elsewhere, so no ``../`` path from it leads to the token or the database (an absolute path
    still does for a pod running as the server's user: that is what --run-as-user is for)."""
    e = Env(tmp_path)
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    (data / "kubeconfig").write_text("token: TOPSECRETTOKEN\n")
    (data / "pykueue.db").write_text("TOPSECRETDB\n")
    e.work = data / "pods"
    runner = JobRunner(e.client, e.work, clock=e.clock, pod_failure_backoff=0.0, run_unmanaged_jobs=True)
    runner.start()
    e.runners.append(runner)
    try:
        probe = (
            'p=; for i in 0 1 2 3 4 5 6 7 8 9 10 11 12; do cat "$${p}kubeconfig" "$${p}pykueue.db" '
            '"$${p}data/kubeconfig" "$${p}pods/../kubeconfig" 2>/dev/null; p="../$$p"; done; env; pwd -P'
        )
        e.create("probe", ["sh", "-c", probe])
        e.wait_condition("probe", "Complete")
        out = stdout_of(pod_record(e, "probe"))
        assert "TOPSECRET" not in out
        assert str(data) not in out  # neither the working directory nor any variable names it
        assert out.strip().splitlines()[-1].startswith(str(runner.scratch_dir))
    finally:
        runner.stop()
        e.runners.remove(runner)
        shutil.rmtree(runner.scratch_dir, ignore_errors=True)


def test_pods_run_the_shim_compiled_once(env: Env) -> None:
    """Every pod's shim runs from one .pyc in the work directory (a script is compiled at every
    start), and it is the shim of this version."""
    env.runner()
    env.create("compiled", SLEEPER)
    record = pod_record(env, "compiled")
    pid = wait_for(lambda: (record / "pid").exists() and json.loads((record / "pid").read_text())["pid"])
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    compiled = env.work / ".podshim.pyc"
    assert argv[1:5] == [b"-I", b"-S", str(compiled).encode(), str(record).encode()]
    source = compile(Path(podshim.__file__).read_text(), podshim.__file__, "exec")
    assert marshal.loads(compiled.read_bytes()[16:]).co_code == source.co_code


def test_records_and_logs_are_private(env: Env) -> None:
    env.runner()
    env.create("modes", ["sh", "-c", "echo out; echo err >&2"])
    env.wait_condition("modes", "Complete")
    record = pod_record(env, "modes")
    (pod,) = env.pods("modes")
    for directory in (env.work, env.work / NS, record.parent, record, env.scratch, pod):
        assert directory.stat().st_mode & 0o777 == 0o700, directory
    files = sorted(p.name for p in record.iterdir())
    assert {"spec.json", "pid", "exit", "container.log"} <= set(files)
    for file in record.iterdir():
        assert file.stat().st_mode & 0o777 == 0o600, file


SETSID_GRANDCHILD = [
    "sh",
    "-c",
    # A daemon in the usual way: a subshell starts a new session and exits, leaving an orphan.
    "(setsid sh -c 'echo $$$$ > grandchild; exec sleep 300' &); sleep 300",
]


@pytest.mark.parametrize("cgroups", [True, False], ids=["cgroup-and-subreaper", "subreaper-only"])
def test_a_setsid_grandchild_dies_when_the_job_is_deleted(env: Env, cgroups: bool) -> None:
    env.runner(cgroups=cgroups)
    env.create("daemon", SETSID_GRANDCHILD)
    grandchild = read_pid(wait_for(lambda: env.pods("daemon"))[0] / "grandchild")
    assert pid_alive(grandchild)
    stat = Path(f"/proc/{grandchild}/stat").read_text().rsplit(")", 1)[1].split()
    assert stat[3] == str(grandchild)  # its own session: a process-group kill would miss it
    env.client.delete(JOBS, "daemon", NS)
    wait_for(lambda: not pid_alive(grandchild))


def test_a_setsid_grandchild_dies_with_its_pods_main_process(env: Env) -> None:
    env.runner()
    env.create("leaver", ["sh", "-c", "(setsid sh -c 'echo $$$$ > grandchild; exec sleep 300' &); sleep 0.5"])
    env.wait_condition("leaver", "Complete")
    grandchild = read_pid(env.pods("leaver")[0] / "grandchild")
    wait_for(lambda: not pid_alive(grandchild))


def test_a_setsid_grandchild_dies_when_the_job_is_suspended_and_at_stop(env: Env) -> None:
    runner = env.runner()
    env.create("susp", SETSID_GRANDCHILD)
    first = read_pid(wait_for(lambda: env.pods("susp"))[0] / "grandchild")
    env.client.patch(JOBS, "susp", {"spec": {"suspend": True}}, NS)
    wait_for(lambda: not pid_alive(first))
    env.client.patch(JOBS, "susp", {"spec": {"suspend": False}}, NS)
    second_dir = wait_for(lambda: pods[1] if len(pods := env.pods("susp")) == 2 else None)
    second = read_pid(second_dir / "grandchild")
    assert pid_alive(second)
    runner.stop()
    assert not pid_alive(second)


def test_memory_limit_is_applied_and_recorded(env: Env) -> None:
    env.runner()
    body = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "limited", "namespace": NS},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "main",
                            "image": "busybox",
                            "command": ["sh", "-c", "ulimit -v; cat /proc/self/cgroup"],
                            "resources": {"limits": {"memory": "64Mi", "cpu": "500m"}},
                        }
                    ],
                }
            }
        },
    }
    env.client.create(JOBS, body)
    env.wait_condition("limited", "Complete")
    record = pod_record(env, "limited")
    spec = json.loads((record / "spec.json").read_text())
    out = stdout_of(record).splitlines()
    if "memory" in (spec.get("limits") or {}) and "RLIMIT_AS" in spec["limits"]["memory"]:
        assert out[0] == str(64 * 1024)  # KiB
    else:
        assert spec["limits"]["memory"].endswith("cgroup v2 memory.max")
    assert spec["limits"]["memory"].startswith(str(64 * 1024 * 1024))
    assert spec["limits"]["cpu"].startswith("500m")
    if spec["cgroup"]:
        # The pod ran in its own cgroup v2 (which its shim removed afterwards).
        assert any(line.startswith("0::") and line.endswith(Path(spec["cgroup"]).name) for line in out)
        assert not Path(spec["cgroup"]).exists()


def admit(env: Env, job: dict[str, Any], count: int) -> None:
    """What Kueue's scheduler leaves behind: the Job's Workload, admitted for ``count`` pods."""
    now = "2026-01-01T00:00:00Z"
    wl = env.client.create(
        WORKLOADS,
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {
                "name": f"job-{job['metadata']['name']}",
                "namespace": NS,
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": job["metadata"]["name"],
                        "uid": job["metadata"]["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {
                "queueName": "lq",
                "podSets": [
                    {"name": "main", "count": job["spec"]["parallelism"], "template": job["spec"]["template"]}
                ],
            },
        },
    )
    wl["status"] = {
        "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "count": count}]},
        "conditions": [
            {"type": t, "status": "True", "reason": t, "message": t, "lastTransitionTime": now}
            for t in ("QuotaReserved", "Admitted")
        ],
    }
    env.client.replace(WORKLOADS, wl, subresource="status")


def test_pods_are_bounded_by_the_admitted_count(env: Env, tmp_path: Path) -> None:
    env.runner(run_unmanaged_jobs=False)
    trace, go = tmp_path / "trace", tmp_path / "go"
    job = env.create(
        "wide",
        ["sh", "-c", GATED],
        parallelism=40,
        completions=6,
        env=[{"name": "TRACE", "value": str(trace)}, {"name": "GO", "value": str(go)}],
        labels={QUEUE_NAME_LABEL: "lq"},
    )
    assert job["spec"]["suspend"] is True  # Kueue's webhook suspends it until admission
    env.client.patch(JOBS, "wide", {"spec": {"suspend": False}}, NS)
    time.sleep(0.5)
    assert env.pods("wide") == []  # not admitted (no Workload yet): nothing runs
    admit(env, job, 3)
    started_together(trace, 3, go)
    st = env.wait_condition("wide", "Complete")
    assert st["succeeded"] == 6
    running = peak = 0
    for line in trace.read_text().split():
        running += 1 if line == "+" else -1
        peak = max(peak, running)
    assert peak == 3


def test_jobs_outside_kueue_run_only_when_asked(env: Env) -> None:
    env.runner(run_unmanaged_jobs=False)
    env.create("stray", ["sh", "-c", "touch ran"])
    wait_for(lambda: [e for e in env.events("stray") if e["reason"] == "NotManagedByKueue"])
    (event,) = env.events("stray")
    assert event["type"] == "Warning"
    assert event["message"] == (
        "Job is not managed by Kueue (no kueue.x-k8s.io/queue-name label and no Workload); the local job "
        "runner runs such Jobs only when started with --run-unmanaged-jobs"
    )
    time.sleep(0.3)
    assert env.status("stray") == {} and env.pods("stray") == []


@pytest.mark.skipif(os.geteuid() != 0, reason="running pods as another user needs root")
def test_run_as_user_cannot_read_the_servers_files(env: Env) -> None:
    nobody = resolve_user("nobody")
    secret = env.work.parent / "kubeconfig"
    secret.write_text("token: TOPSECRETTOKEN\n")
    secret.chmod(0o600)
    scratch = Path(tempfile.mkdtemp(prefix="pykueue-test-"))  # tmp_path is not searchable by nobody
    try:
        unreachable = JobRunner(env.client, env.work, scratch_dir=scratch / "pods", run_as_user=nobody)
        with pytest.raises(PermissionError, match=f"{scratch} is not searchable by user nobody"):
            unreachable.start()
        scratch.chmod(0o711)
        runner = JobRunner(
            env.client,
            env.work,
            clock=env.clock,
            pod_failure_backoff=0.0,
            run_unmanaged_jobs=True,
            scratch_dir=scratch / "pods",
            run_as_user=nobody,
        )
        runner.start()
        env.runners.append(runner)
        env.create("asnobody", ["sh", "-c", f"id -u; id -g; touch mine; cat {secret}; ls {env.work}; exit 0"])
        env.wait_condition("asnobody", "Complete")
        record = pod_record(env, "asnobody")
        out = stdout_of(record).splitlines()
        err = stderr_of(record)
        assert out[:2] == [str(nobody.uid), str(nobody.gid)]
        assert "TOPSECRET" not in "".join(out) and "Permission denied" in err
        (pod,) = [p for p in (scratch / "pods" / NS / "asnobody").iterdir()]
        assert (pod / "mine").stat().st_uid == nobody.uid
        assert record.stat().st_uid == 0 and (record / "container.log").stat().st_uid == 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def test_a_stopped_runners_pods_are_replaced_not_failed(env: Env) -> None:
    first = env.runner()
    env.create("again", SLEEPER)
    pid = read_pid(wait_for(lambda: env.pods("again"))[0] / "pid")
    env.wait_status("again", lambda s: s.get("ready") == 1)
    first.stop()
    env.runners.remove(first)
    assert not pid_alive(pid)
    env.runner()  # a new runner on the same work directory
    second_dir = wait_for(lambda: pods[1] if len(pods := env.pods("again")) == 2 else None)
    assert pid_alive(read_pid(second_dir / "pid"))
    st = env.wait_status("again", lambda s: s.get("ready") == 1)
    assert "failed" not in st and st["active"] == 1 and st["uncountedTerminatedPods"] == {}


def test_a_restarted_runner_counts_a_pod_that_ended_meanwhile_once(env: Env, tmp_path: Path) -> None:
    """The record a runner leaves when it dies between the pod's end and the status write: the
    exit file, and possibly the pod's uid already listed in uncountedTerminatedPods."""
    first = env.runner()
    mark = tmp_path / "mark"
    # The first pod succeeds at once; the second waits while the mark is there.
    script = '[ -e "$MARK" ] && exec sleep 30; touch "$MARK"'
    env.create(
        "meanwhile",
        ["sh", "-c", script],
        completions=2,
        parallelism=1,
        env=[{"name": "MARK", "value": str(mark)}],
    )
    env.wait_status("meanwhile", lambda s: s.get("succeeded") == 1 and s.get("ready") == 1)
    first.stop()
    env.runners.remove(first)
    mark.unlink()
    # Forge the crash window of the first pod: its exit recorded, listed as uncounted, not counted.
    (record,) = [r for r in env.records("meanwhile") if not (r / "removed").exists()]
    spec = json.loads((record / "spec.json").read_text())
    (record / "done").unlink()
    job = env.client.get(JOBS, "meanwhile", NS)
    job["status"]["succeeded"] = 0
    job["status"]["uncountedTerminatedPods"] = {"succeeded": [spec["uid"]]}
    env.client.replace(JOBS, job, subresource="status")
    env.runner()
    st = env.wait_condition("meanwhile", "Complete")
    assert st["succeeded"] == 2 and st["uncountedTerminatedPods"] == {}
    # The first pod counted once: exactly one more pod ran (neither zero nor two).
    assert len(env.records("meanwhile")) == 3


def test_a_deleted_jobs_pod_files_go_with_it(env: Env) -> None:
    env.runner()
    env.create("gone", ["sh", "-c", "echo hi > file"])
    env.create("kept", ["sh", "-c", "echo hi > file"])
    env.wait_condition("gone", "Complete")
    env.wait_condition("kept", "Complete")
    assert len(env.pods("gone")) == 1 and len(env.records("gone")) == 1
    env.client.delete(JOBS, "gone", NS)
    wait_for(lambda: not (env.scratch / NS / "gone").exists() and not (env.work / NS / "gone").exists())
    assert len(env.pods("kept")) == 1 and len(env.records("kept")) == 1


@pytest.mark.parametrize("cgroups", [True, False], ids=["cgroup", "child-record"])
def test_a_killed_shim_takes_its_pod_with_it(env: Env, cgroups: bool) -> None:
    """A pod's supervisor killed without a word (OOM killer, or the pod itself): the runner kills
    what is left of the pod and counts it as failed with 137, as for a container killed by SIGKILL."""
    env.runner(cgroups=cgroups)
    env.create("headless", SLEEPER, backoffLimit=0)
    pid = read_pid(wait_for(lambda: env.pods("headless"))[0] / "pid")
    record = pod_record(env, "headless")
    shim = json.loads((record / "pid").read_text())["pid"]
    wait_for(lambda: (record / "child").exists())
    os.kill(shim, signal.SIGKILL)
    st = env.wait_condition("headless", "Failed")
    assert st["failed"] == 1
    wait_for(lambda: not pid_alive(pid))


def test_a_record_of_a_pod_never_started_is_dropped_and_replaced(env: Env) -> None:
    """The runner died after recording a pod but before its shim got the pod's spec: the shim
    recorded ``aborted`` and nothing ran; a restarted runner neither counts nor adopts it."""
    first = env.runner()
    env.create("unborn", SLEEPER)
    wait_for(lambda: env.pods("unborn"))
    env.wait_status("unborn", lambda s: s.get("ready") == 1)
    first.stop()
    env.runners.remove(first)
    (record,) = env.records("unborn")
    for name in ("done", "removed", "child"):
        (record / name).unlink(missing_ok=True)
    (record / "exit").write_text('{"aborted": true}')
    env.runner()
    wait_for(lambda: len(env.records("unborn")) == 2)
    st = env.wait_status("unborn", lambda s: s.get("ready") == 1)
    assert "failed" not in st and "succeeded" not in st and st["active"] == 1


def test_an_adopted_shim_that_never_got_its_spec_is_not_a_failure(env: Env) -> None:
    """The previous runner died between recording the shim and sending it the pod's spec: the
    adopted shim aborts (EOF) and the restarted runner replaces the pod without counting it."""
    job = env.create("limbo", SLEEPER)
    record = env.work / NS / "limbo" / "limbo-bbbbb"
    record.mkdir(parents=True)
    spec = {
        "pod": "limbo-bbbbb",
        "uid": "5d0c2f4e-0000-4000-8000-000000000001",
        "index": None,
        "namespace": NS,
        "job": "limbo",
        "jobUID": job["metadata"]["uid"],
        "grace": 1,
        "cwd": str(env.scratch / NS / "limbo" / "limbo-bbbbb"),
        "cgroup": None,
    }
    (record / "spec.json").write_text(json.dumps(spec))
    shim = subprocess.Popen(
        [sys.executable, "-I", "-S", podshim.__file__, str(record)],
        stdin=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        (record / "pid").write_text(json.dumps(process_identity(shim.pid)))
        env.runner()
        env.wait_status("limbo", lambda s: s.get("active") == 1)  # adopted, as a running pod
        assert shim.stdin is not None
        shim.stdin.close()  # what the old runner's death does to the shim's stdin
        assert shim.wait(timeout=TIMEOUT) == 0
        assert json.loads((record / "exit").read_text()) == {"aborted": True}
        wait_for(lambda: len(env.records("limbo")) == 2)
        st = env.wait_status("limbo", lambda s: s.get("ready") == 1)
        assert "failed" not in st and st["active"] == 1
    finally:
        if shim.poll() is None:
            shim.kill()
            shim.wait()
