"""The per-pod supervisor of the local job runner (its conmon / containerd-shim).

The job runner starts one shim per pod as ``python -I podshim.py STATE_DIR``, in a session of its
own, so that the pod outlives a crash of the runner (a restarted runner adopts it) and every
process of the pod is accounted for:

* the shim reads ``STATE_DIR/spec.json`` (command, environment, working directory, log files,
  limits, user, cgroup) and waits for ``go`` on its stdin: the runner sends it only after it has
  recorded the shim's pid and start time durably, so no pod runs unrecorded; if the runner dies
  before that (EOF) the shim exits without running anything and records ``aborted``;
* it marks itself a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``): a process of the pod that
  double-forks or calls ``setsid`` is re-parented to the shim, not to init, so it stays in the
  shim's process tree; with a cgroup v2 directory it also moves the pod into it;
* SIGTERM is forwarded to the pod's main process (a container runtime signals PID 1); SIGUSR1
  SIGKILLs every process of the pod (the runner's "grace period over");
* when the main process exits, whatever is left of the pod is killed (a container's processes die
  with its PID 1), every descendant is reaped, and ``STATE_DIR/exit`` is written with the main
  process's exit code (128 + signal for a signal, as container runtimes report) and fsynced.

The shim uses the standard library only and runs with ``python -I``: it must not import the
server's code or read the server's environment.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import signal
import sys
import time
from typing import Any

PR_SET_CHILD_SUBREAPER = 36
_KILL_ROUNDS = 50  # a fork loop racing the SIGKILL sweep gets this many sweeps (plus the cgroup)


def write_durably(path: str, data: dict[str, Any]) -> None:
    """Write JSON to ``path`` atomically: temp file, fsync, rename, fsync of the directory."""
    tmp = f"{path}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, json.dumps(data).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dfd = os.open(os.path.dirname(path) or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def start_time(pid: int) -> int | None:
    """Field 22 of ``/proc/PID/stat``: the process's start time in clock ticks since boot."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return int(stat.rsplit(b")", 1)[1].split()[19])


def _children_map() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        out.setdefault(ppid, []).append(int(entry))
    return out


def descendants(root: int) -> list[int]:
    """Every live process below ``root`` (as a subreaper, nothing of the pod escapes this tree)."""
    tree = _children_map()
    found: list[int] = []
    todo = list(tree.get(root, []))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(tree.get(pid, []))
    return found


class Shim:
    """One pod's supervisor; see the module docstring."""

    def __init__(self, state_dir: str) -> None:
        self.state_dir = state_dir
        with open(os.path.join(state_dir, "spec.json"), "rb") as f:
            self.spec: dict[str, Any] = json.load(f)
        self.cgroup: str | None = self.spec.get("cgroup")
        self.main_pid = 0
        self.term_requested = False  # signals that arrive before the pod's process exists
        self.kill_requested = False

    # -- killing ------------------------------------------------------------------------------

    def cgroup_pids(self) -> list[int]:
        if not self.cgroup:
            return []
        try:
            with open(os.path.join(self.cgroup, "cgroup.procs")) as f:
                return [int(line) for line in f if line.strip()]
        except OSError:
            return []

    def kill_all(self) -> None:
        """SIGKILL every process of the pod: the cgroup at once when possible, then the tree."""
        if self.cgroup:
            with contextlib.suppress(OSError), open(os.path.join(self.cgroup, "cgroup.kill"), "w") as f:
                f.write("1")
        me = os.getpid()
        for _ in range(_KILL_ROUNDS):
            pids = set(descendants(me)) | set(self.cgroup_pids())
            pids.discard(me)
            live = [p for p in pids if not _is_zombie(p)]
            if not live:
                return
            for pid in live:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)

    def on_term(self, signum: int, frame: Any) -> None:
        self.term_requested = True
        if self.main_pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.main_pid, signal.SIGTERM)

    def on_kill(self, signum: int, frame: Any) -> None:
        self.kill_requested = True
        self.kill_all()

    # -- running ------------------------------------------------------------------------------

    def run(self) -> int:
        go = sys.stdin.buffer.read(3)
        if go != b"go\n":
            write_durably(os.path.join(self.state_dir, "exit"), {"aborted": True})
            return 0
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        signal.signal(signal.SIGTERM, self.on_term)
        signal.signal(signal.SIGUSR1, self.on_kill)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in the runner's terminal is the runner's
        rfd, wfd = os.pipe2(os.O_CLOEXEC)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child execs or exits
            os.close(rfd)
            self.child(wfd)
        os.close(wfd)
        self.main_pid = pid
        if self.kill_requested:
            self.kill_all()
        elif self.term_requested:
            self.on_term(signal.SIGTERM, None)
        error = b""
        while chunk := os.read(rfd, 4096):
            error += chunk
        os.close(rfd)
        result: dict[str, Any] = {}
        if error:
            result["startError"] = error.decode(errors="replace")
        else:
            write_durably(os.path.join(self.state_dir, "child"), {"pid": pid, "start": start_time(pid)})
        code: int | None = None
        strangers = 0
        while True:
            try:
                reaped, status = os.waitpid(-1, 0)
            except ChildProcessError:
                # Moved into the pod's cgroup but not our descendant: still the pod's (bounded, in
                # case one cannot be killed).
                if self.cgroup_pids() and strangers < 500:
                    strangers += 1
                    self.kill_all()
                    time.sleep(0.01)
                    continue
                break
            if reaped == pid:
                code = os.waitstatus_to_exitcode(status)
                self.main_pid = 0
                self.kill_all()  # the rest of the pod dies with its main process
        if code is not None and not error:
            result["exitCode"] = code if code >= 0 else 128 - code
        if self.cgroup:
            for _ in range(100):
                try:
                    os.rmdir(self.cgroup)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
        write_durably(os.path.join(self.state_dir, "exit"), result)
        return 0

    def child(self, wfd: int) -> None:  # pragma: no cover - runs between fork and exec
        """Become the pod's main process: session, cgroup, limits, files, user, then exec."""
        spec = self.spec
        try:
            for sig in (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ):
                signal.signal(sig, signal.SIG_DFL)
            os.setsid()
            if self.cgroup:
                with open(os.path.join(self.cgroup, "cgroup.procs"), "w") as f:
                    f.write("0")
            for name, value in (spec.get("rlimits") or {}).items():
                limit = getattr(resource, name)
                resource.setrlimit(limit, (int(value), int(value)))
            null = os.open(os.devnull, os.O_RDONLY)
            out = os.open(spec["stdout"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            err = os.open(spec["stderr"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            os.dup2(null, 0)
            os.dup2(out, 1)
            os.dup2(err, 2)
            user = spec.get("user")
            if user is not None:
                os.setgroups([int(g) for g in user["groups"]])
                os.setgid(int(user["gid"]))
                os.setuid(int(user["uid"]))
            os.chdir(spec["cwd"])
            os.closerange(3, wfd)
            os.closerange(wfd + 1, 65536)
            argv = [str(a) for a in spec["argv"]]
            os.execvpe(argv[0], argv, {str(k): str(v) for k, v in spec["env"].items()})
        except BaseException as error:  # reported to the shim, then the child exits
            with contextlib.suppress(OSError):
                os.write(wfd, str(error).encode() or type(error).__name__.encode())
        os._exit(127)


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except OSError:
        return True  # gone


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: podshim.py STATE_DIR", file=sys.stderr)
        return 2
    return Shim(argv[1]).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
