"""The local job runner against a real embedded API server, running real processes.

Each test builds an in-memory store, the embedded API server's request pipeline and an
in-process client, starts a :class:`JobRunner` on a temporary work directory and drives Jobs
through the API, asserting the status the runner writes back and the processes it leaves alive.
Commands are short shell scripts; the long-running ones (``sleep 30``) only exist to be killed.
Note that, as in Kubernetes, ``$$`` in a command is an escaped ``$``, so scripts write ``$$$$``
for the shell's PID.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pykueue.apiserver.app import create_app
from pykueue.client.inprocess import InProcessClient
from pykueue.client.interface import NotFound
from pykueue.client.resources import EVENTS, JOBS
from pykueue.controllers.jobrunner import JobRunner
from pykueue.store import Store

T = TypeVar("T")
NS = "default"
TIMEOUT = 10.0


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
        body = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": NS},
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


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie (reparented zombies may linger in containers)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


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
    assert len(env.pods("ok")) == 1


def test_parallelism_two_until_four_completions(env: Env, tmp_path: Path) -> None:
    env.runner()
    log = tmp_path / "trace"
    script = 'echo + >> "$TRACE"; sleep 0.2; echo - >> "$TRACE"'
    env.create(
        "par", ["sh", "-c", script], parallelism=2, completions=4, env=[{"name": "TRACE", "value": str(log)}]
    )
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
    wait_for(lambda: not alive(first))
    st = env.wait_status("long", lambda s: s.get("terminating") == 0 and "Suspended" in conditions(s))
    assert "active" not in st and st["ready"] == 0
    assert "failed" not in st  # pods removed by suspension are not failures
    assert conditions(st)["Suspended"] == ("True", "JobSuspended", "Job suspended")

    env.clock.advance(5)
    env.client.patch(JOBS, "long", {"spec": {"suspend": False}}, NS)
    second_dir = wait_for(lambda: pods[1] if len(pods := env.pods("long")) == 2 else None)
    second = read_pid(second_dir / "pid")
    assert second != first and alive(second)
    st = env.wait_status("long", lambda s: s.get("ready") == 1)
    assert conditions(st)["Suspended"] == ("False", "JobResumed", "Job resumed")
    assert st["startTime"] > started
    env.wait_events("long", ["Resumed", "Suspended"])


def test_suspend_kills_the_whole_process_group(env: Env) -> None:
    env.runner()
    env.create("tree", ["sh", "-c", "sleep 30 & echo $! > child; wait"])
    child = read_pid(wait_for(lambda: env.pods("tree"))[0] / "child")
    assert alive(child)
    env.client.patch(JOBS, "tree", {"spec": {"suspend": True}}, NS)
    wait_for(lambda: not alive(child))


def test_deleting_the_job_kills_its_processes(env: Env) -> None:
    env.runner()
    env.create("doomed", SLEEPER)
    pid = read_pid(wait_for(lambda: env.pods("doomed"))[0] / "pid")
    assert alive(pid)
    env.client.delete(JOBS, "doomed", NS)
    wait_for(lambda: not alive(pid))
    with pytest.raises(NotFound):
        env.client.get(JOBS, "doomed", NS)


def test_stop_kills_running_processes(env: Env) -> None:
    runner = env.runner()
    env.create("orphan", SLEEPER)
    pid = read_pid(wait_for(lambda: env.pods("orphan"))[0] / "pid")
    runner.stop()
    assert not alive(pid)


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
    assert (record / "stdout.log").read_text() == "hello\n"
    assert (record / "stderr.log").read_text() == "oops\n"


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
    assert not alive(pid)
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
