"""The per-pod supervisor of the local job runner (its conmon / containerd-shim).

The job runner starts one shim per pod as ``python -I -S podshim.py STATE_DIR`` (compiled once
into ``WORK_DIR/.podshim.pyc``, which it runs instead of the source), in a session of its
own, so that the pod outlives a crash of the runner (a restarted runner adopts it) and every
process of the pod is accounted for:

* the shim reads the pod's spec (command, environment, working directory, log file, limits,
  user, cgroup; the same as ``STATE_DIR/spec.json``, ``marshal``-encoded) from its stdin: the
  runner sends it only after it has recorded the shim's pid and start time durably, so no pod
  runs unrecorded; if the runner dies before that (EOF, or a truncated spec) the shim exits
  without running anything and records ``aborted``;
* it marks itself a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``): a process of the pod that
  double-forks or calls ``setsid`` is re-parented to the shim, not to init, so it stays in the
  shim's process tree; with a cgroup v2 directory it also moves the pod into it;
* SIGTERM is forwarded to the pod's main process (a container runtime signals PID 1); SIGUSR1
  SIGKILLs every process of the pod (the runner's "grace period over");
* the pod's stdout and stderr are pipes the shim reads (as containerd's shim and conmon do): each
  line goes to the pod's log file in the kubelet's CRI log format, ``<RFC3339Nano time> <stream>
  <P|F> <line>``, stamped when the shim read it, the two streams interleaved in the order they were
  read; a line longer than 16 KiB is split into ``P`` (partial) records as containerd splits it
  (``max_container_log_line_size``), and an unterminated last line is a ``P`` record;
* when the main process exits, whatever is left of the pod is killed (a container's processes die
  with its PID 1), every descendant is reaped, the rest of its output is logged, then
  ``STATE_DIR/exit`` is written with the main process's exit code (128 + signal for a signal, as
  container runtimes report) and fsynced.

The shim uses the standard library only and runs with ``python -I -S``: it must not import the
server's code or read the server's environment. It starts once per pod, so it imports little
(no ``typing``, ``json`` or ``contextlib``: each costs more than the rest of its start-up).
"""

# ruff: noqa: SIM105 - try/except/pass instead of contextlib.suppress: importing contextlib costs
# more than the rest of the shim's start-up (see above).
from __future__ import annotations

import ctypes
import marshal
import os
import resource
import select
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
_KILL_ROUNDS = 50  # a fork loop racing the SIGKILL sweep gets this many sweeps (plus the cgroup)
MAX_LINE = 16 * 1024  # containerd's default max_container_log_line_size: longer lines become P records
_READ = 64 * 1024  # a pipe's default capacity: one read empties it


def _json_string(text: str) -> str:
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch < " ":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def write_record(path: str, fields: dict[str, int | str | bool]) -> None:
    """Write a flat JSON object to ``path`` atomically and durably (temp file, fsync, rename, fsync
    of the directory), without the ``json`` module."""
    items = []
    for key, value in fields.items():
        if isinstance(value, bool):
            encoded = "true" if value else "false"
        elif isinstance(value, int):
            encoded = str(value)
        else:
            encoded = _json_string(value)
        items.append(f"{_json_string(key)}: {encoded}")
    tmp = f"{path}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, ("{" + ", ".join(items) + "}").encode())
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


class Spec:
    """What to run, as the runner sent it (the fields of ``spec.json`` the shim needs)."""

    def __init__(self, raw: object) -> None:
        if not isinstance(raw, dict):
            raise ValueError("the pod spec is not a mapping")
        self.argv = [str(a) for a in raw["argv"]]
        self.env = {str(k): str(v) for k, v in raw["env"].items()}
        self.cwd = str(raw["cwd"])
        self.log = str(raw["log"])
        self.rlimits = {str(k): int(v) for k, v in (raw.get("rlimits") or {}).items()}
        self.cgroup: str | None = str(raw["cgroup"]) if raw.get("cgroup") else None
        user = raw.get("user")
        self.user: tuple[int, int, list[int]] | None = (
            None if not user else (int(user["uid"]), int(user["gid"]), [int(g) for g in user["groups"]])
        )


class LogWriter:
    """Appends the pod's output to its log file in the CRI log format (see the module docstring).

    Every record is complete when written (one ``write`` per read of a pipe, O_APPEND), so a reader
    never has to guess where a half-written record ends; the lines of one read share its time."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        self.pending = {b"stdout": b"", b"stderr": b""}  # an unfinished line per stream
        self.failed = False
        self.second = -1
        self.date = b""

    def feed(self, stream: bytes, data: bytes, eof: bool = False) -> None:
        if not data and not self.pending[stream]:
            return  # nothing to log (a pod that printed nothing pays no formatting)
        seconds, nanos = divmod(time.time_ns(), 1_000_000_000)
        if seconds != self.second:
            self.second = seconds
            self.date = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)).encode()
        stamp = b"%s.%09dZ %s " % (self.date, nanos, stream)
        full, partial = stamp + b"F ", stamp + b"P "
        lines = (self.pending[stream] + data).split(b"\n")
        rest = lines.pop()
        out = []
        for line in lines:
            while len(line) > MAX_LINE:
                out.append(partial + line[:MAX_LINE] + b"\n")
                line = line[MAX_LINE:]
            out.append(full + line + b"\n")
        while len(rest) > MAX_LINE:
            out.append(partial + rest[:MAX_LINE] + b"\n")
            rest = rest[MAX_LINE:]
        if eof and rest:
            out.append(partial + rest + b"\n")  # containerd: a last line without newline is partial
            rest = b""
        self.pending[stream] = rest
        if out:
            self.write(b"".join(out))

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.fd, view) :]
        except OSError as error:  # a full disk loses log lines, never the pod (as containerd does)
            if not self.failed:
                self.failed = True
                print(f"podshim: writing the pod's log: {error}", file=sys.stderr)

    def close(self) -> None:
        # Not fdatasynced, as containerd does not sync container logs: it would cost a pod ~13 ms
        # on a disk (bench/pod_start.py), more than the rest of its log handling.
        os.close(self.fd)


class Shim:
    """One pod's supervisor; see the module docstring."""

    def __init__(self, state_dir: str) -> None:
        self.state_dir = state_dir
        self.spec: Spec | None = None
        self.cgroup: str | None = None
        self.main_pid = 0
        self.code: int | None = None  # the main process's exit status
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
            try:
                with open(os.path.join(self.cgroup, "cgroup.kill"), "w") as f:
                    f.write("1")
            except OSError:
                pass
        me = os.getpid()
        for _ in range(_KILL_ROUNDS):
            # As a subreaper, a shim with no child has no descendant: no need to scan /proc.
            pids = set(descendants(me)) if _has_children() else set()
            pids |= set(self.cgroup_pids())
            pids.discard(me)
            live = [p for p in pids if not _is_zombie(p)]
            if not live:
                return
            for pid in live:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

    def on_term(self, signum: int, frame: object) -> None:
        self.term_requested = True
        if self.main_pid:
            try:
                os.kill(self.main_pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    def on_kill(self, signum: int, frame: object) -> None:
        self.kill_requested = True
        self.kill_all()

    # -- running ------------------------------------------------------------------------------

    def run(self) -> int:
        os.umask(0o077)  # the shim's own files are the runner's records
        exit_path = os.path.join(self.state_dir, "exit")
        signal.signal(signal.SIGTERM, self.on_term)
        signal.signal(signal.SIGUSR1, self.on_kill)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in the runner's terminal is the runner's
        try:
            self.spec = Spec(marshal.loads(sys.stdin.buffer.read()))
        except (EOFError, ValueError, TypeError, KeyError):
            write_record(exit_path, {"aborted": True})  # the runner never finished starting the pod
            return 0
        self.cgroup = self.spec.cgroup
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        try:
            logs = LogWriter(self.spec.log)
        except OSError as problem:  # nothing runs without its log, as under containerd
            write_record(exit_path, {"startError": f"opening the pod's log: {problem}"})
            return 0
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        # SIGCHLD (and the other handled signals) wake the poll below through this pipe.
        wake_r, wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        signal.signal(signal.SIGCHLD, _ignore)
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        rfd, wfd = os.pipe2(os.O_CLOEXEC)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child execs or exits
            os.close(rfd)
            self.child(self.spec, wfd, out_w, err_w)
        for fd in (wfd, out_w, err_w):
            os.close(fd)
        self.main_pid = pid
        if self.kill_requested:
            self.kill_all()
        elif self.term_requested:
            self.on_term(signal.SIGTERM, None)
        error = b""
        while chunk := os.read(rfd, 4096):
            error += chunk
        os.close(rfd)
        if not error:
            # A hint for cleaning up after a shim killed without a word: not worth an fsync.
            fd = os.open(os.path.join(self.state_dir, "child"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.write(fd, f'{{"pid": {pid}, "start": {start_time(pid)}}}'.encode())
            os.close(fd)
        streams = {out_r: b"stdout", err_r: b"stderr"}
        poller = select.poll()
        for fd in (out_r, err_r, wake_r):
            os.set_blocking(fd, False)
            poller.register(fd, select.POLLIN)
        strangers = 0
        children = self.reap(pid)
        while children or (self.cgroup_pids() and strangers < 500):
            if not children:
                # Moved into the pod's cgroup but not our descendant: still the pod's (bounded, in
                # case one cannot be killed).
                strangers += 1
                self.kill_all()
                time.sleep(0.01)
                children = self.reap(pid)
                continue
            signalled = False
            for fd, _ in poller.poll():  # output, or a signal (SIGCHLD) through the wake-up pipe
                if fd == wake_r:
                    _drain(wake_r)
                    signalled = True
                elif fd in streams and not self.pump(logs, fd, streams[fd]):
                    poller.unregister(fd)
                    del streams[fd]
            if signalled:
                children = self.reap(pid)
        # Every process of the pod is gone: what is left in the pipes is the end of its output.
        for fd, stream in streams.items():
            while self.pump(logs, fd, stream, final=True):
                pass
        logs.close()
        result: dict[str, int | str | bool] = {}
        if error:
            result["startError"] = error.decode(errors="replace")
        elif self.code is not None:
            result["exitCode"] = self.code if self.code >= 0 else 128 - self.code
        if self.cgroup:
            for _ in range(100):
                try:
                    os.rmdir(self.cgroup)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
        write_record(exit_path, result)
        return 0

    def reap(self, pid: int) -> bool:
        """Reap every child that has exited (the main process's status is kept; the rest of the pod
        is killed with it); False once the shim has no child left."""
        while True:
            try:
                reaped, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return False
            if reaped == 0:
                return True
            if reaped == pid:
                self.code = os.waitstatus_to_exitcode(status)
                self.main_pid = 0
                self.kill_all()  # the rest of the pod dies with its main process

    @staticmethod
    def pump(logs: LogWriter, fd: int, stream: bytes, final: bool = False) -> bool:
        """Log what one pipe holds; False at its end (or, when ``final``, once it is empty: a
        process outside the pod may hold it open, and the pod has ended)."""
        try:
            data = os.read(fd, _READ)
        except BlockingIOError:
            if final:
                logs.feed(stream, b"", eof=True)
            return not final
        if not data:
            logs.feed(stream, b"", eof=True)
            os.close(fd)
            return False
        logs.feed(stream, data)
        return True

    @staticmethod
    def child(spec: Spec, wfd: int, out: int, err: int) -> None:  # pragma: no cover - between fork and exec
        """Become the pod's main process: session, cgroup, limits, files, user, then exec."""
        try:
            signal.set_wakeup_fd(-1)
            for sig in (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ, signal.SIGCHLD):
                signal.signal(sig, signal.SIG_DFL)
            os.setsid()
            os.umask(0o022)  # a container's default
            if spec.cgroup:
                with open(os.path.join(spec.cgroup, "cgroup.procs"), "w") as f:
                    f.write("0")
            for name, value in spec.rlimits.items():
                resource.setrlimit(getattr(resource, name), (value, value))
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(out, 1)
            os.dup2(err, 2)
            if spec.user is not None:
                uid, gid, groups = spec.user
                os.setgroups(groups)
                os.setgid(gid)
                os.setuid(uid)
            os.chdir(spec.cwd)
            os.closerange(3, wfd)
            os.closerange(wfd + 1, 65536)
            _execvpe(spec.argv, spec.env)
        except BaseException as error:  # reported to the shim, then the child exits
            try:
                os.write(wfd, str(error).encode() or type(error).__name__.encode())
            except OSError:
                pass
        os._exit(127)


def _execvpe(argv: list[str], env: dict[str, str]) -> None:  # pragma: no cover - in the child
    """``execvpe`` with the pod's ``PATH``, as the C library does it (EACCES remembered, ENOENT and
    ENOTDIR skipped). Not ``os.execvpe``: it imports ``warnings``, which a pod's user may be unable
    to read once the shim has switched to it (the shim runs without ``site``)."""
    if "/" in argv[0]:
        os.execve(argv[0], argv, env)
    denied: OSError | None = None
    missing: OSError | None = None
    for directory in env.get("PATH", "/usr/local/bin:/usr/bin:/bin").split(":"):
        try:
            os.execve(os.path.join(directory or ".", argv[0]), argv, env)
        except PermissionError as error:
            denied = error
        except (FileNotFoundError, NotADirectoryError) as error:
            missing = error
    raise denied or missing or FileNotFoundError(f"{argv[0]}: not found")


def _ignore(signum: int, frame: object) -> None:
    """SIGCHLD's handler: the signal only has to wake the poll (through the wake-up fd)."""


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 256):
            pass
    except BlockingIOError:
        pass


def _has_children() -> bool:
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


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
