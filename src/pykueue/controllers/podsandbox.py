"""What the local job runner gives a pod's process: environment, directories, limits, user, cgroup.

The job runner (``jobrunner.py``) decides which pods run; this module turns one pod into the
``spec.json`` its shim (``podshim.py``) executes, and holds the host-facing pieces:

* :func:`pod_environment`: only what the container's ``env`` sets plus what the kubelet and the
  container runtime set (``PATH`` as containerd's default, ``HOSTNAME``, ``HOME``,
  ``JOB_COMPLETION_INDEX``); nothing of the runner's own environment. ``valueFrom`` sources the
  runner cannot resolve (Secrets, ConfigMaps, resource fields, unknown field paths) and
  ``envFrom`` are refused with a :class:`PodConfigError` naming the variable.
* :func:`resource_limits`: ``resources.limits`` to cgroup v2 ``memory.max`` / ``cpu.max`` where a
  writable cgroup v2 controller exists, else memory to ``RLIMIT_AS``; what was applied is recorded.
* :class:`Cgroups`: one cgroup v2 directory per pod under the runner's own cgroup, when the
  hierarchy is writable, so that every process of the pod can be found and killed even if its
  shim is gone.
* :func:`resolve_user`: ``--run-as-user``.
* :func:`private_dir` / :func:`write_durably` / :func:`process_identity`: files 0600, directories
  0700, durable writes, and pid + start time + boot id (so a recorded pid is never confused with a
  reused one).
"""

from __future__ import annotations

import contextlib
import grp
import hashlib
import json
import math
import os
import pwd
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pykueue.api.quantity import Quantity, QuantityError
from pykueue.controllers.podshim import start_time

__all__ = [
    "DEFAULT_PATH",
    "Cgroups",
    "PodConfigError",
    "RunAsUser",
    "check_searchable",
    "mark_durably",
    "pod_environment",
    "private_dir",
    "process_identity",
    "resolve_user",
    "resource_limits",
    "same_process",
    "write_durably",
]

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""The ``PATH`` containerd and the OCI runtimes give a container whose image sets none."""

CPU_PERIOD_US = 100_000  # the kubelet's default CFS period


class PodConfigError(ValueError):
    """A pod the runner cannot run as specified (the message names the container field)."""


@dataclass(frozen=True)
class RunAsUser:
    """The user pods run as (``--run-as-user``)."""

    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]


def resolve_user(text: str) -> RunAsUser:
    """A user name or numeric uid from the password database; refused when this process cannot
    switch to it (only root can run pods as another user)."""
    try:
        entry = pwd.getpwuid(int(text)) if text.isdigit() else pwd.getpwnam(text)
    except (KeyError, OverflowError):
        raise ValueError(f"--run-as-user {text!r}: no such user") from None
    if os.geteuid() != 0 and entry.pw_uid != os.geteuid():
        raise ValueError(
            f"--run-as-user {text!r}: only root can run pods as another user (this process runs as uid "
            f"{os.geteuid()})"
        )
    groups = tuple(sorted(set(os.getgrouplist(entry.pw_name, entry.pw_gid))))
    with contextlib.suppress(KeyError):
        grp.getgrgid(entry.pw_gid)
    return RunAsUser(entry.pw_name, entry.pw_uid, entry.pw_gid, groups)


def private_dir(path: Path, mode: int = 0o700, owner: RunAsUser | None = None) -> Path:
    """Create ``path`` (and missing parents) with ``mode``, whatever the umask; refuse a symlink or
    a directory owned by someone else (a planted directory in a shared place such as /tmp)."""
    missing: list[Path] = []
    p = path
    while not p.exists() and not p.is_symlink():
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        with contextlib.suppress(FileExistsError):
            d.mkdir(mode=mode)
        os.chmod(d, mode)
    st = path.lstat()
    if not path.is_dir() or path.is_symlink():
        raise OSError(f"{path}: not a directory")
    if missing and st.st_uid != os.geteuid():
        raise OSError(f"{path}: owned by uid {st.st_uid}, not by this process's uid {os.geteuid()}")
    if owner is not None and path in missing[:1]:
        os.chown(path, owner.uid, owner.gid)
    return path


def check_searchable(path: Path, user: RunAsUser) -> None:
    """Refuse a scratch directory the pod's user could not reach (a parent without search permission
    for it), naming the directory, instead of failing every pod later."""
    for directory in [path, *path.parents]:
        st = directory.stat()
        if st.st_uid == user.uid:
            ok = st.st_mode & 0o100
        elif st.st_gid in user.groups:
            ok = st.st_mode & 0o010
        else:
            ok = st.st_mode & 0o001
        if not ok:
            raise PermissionError(
                f"pod scratch directory {path}: {directory} is not searchable by user {user.name} "
                f"(mode {st.st_mode & 0o777:o}); choose another with --pod-scratch-dir"
            )


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def process_identity(pid: int) -> dict[str, Any]:
    """What identifies a process across pid reuse and reboots."""
    return {"pid": pid, "start": start_time(pid), "boot": _boot_id()}


def same_process(identity: Mapping[str, Any]) -> bool:
    """True while the recorded process still runs (same pid, start time and boot; not a zombie)."""
    try:
        pid = int(identity["pid"])
    except (KeyError, TypeError, ValueError):
        return False
    if identity.get("boot") != _boot_id() or identity.get("start") is None:
        return False
    if start_time(pid) != identity.get("start"):
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat.rsplit(b")", 1)[1].split()[0] != b"Z"


# --- environment ---------------------------------------------------------------------------------------

_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(text: str, defined: Mapping[str, str]) -> str:
    """The kubelet's ``$(VAR)`` expansion: ``$$`` escapes, unknown references stay as written."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return defined.get(match.group(1), match.group(0))

    return _REFERENCE.sub(replace, text)


def pod_environment(
    container: Mapping[str, Any],
    *,
    fields: Mapping[str, str],
    labels: Mapping[str, Any],
    annotations: Mapping[str, Any],
    hostname: str,
    home: str,
    index: int | None,
) -> tuple[dict[str, str], dict[str, str]]:
    """The process environment and the variables ``$(VAR)`` references may name.

    Order as the kubelet's ``makeEnvironmentVariables``: the runtime's defaults, then
    ``JOB_COMPLETION_INDEX`` (set by the Job controller in the pod template), then the container's
    ``env`` in order, each able to reference the ones before it.
    """
    cname = str(container.get("name", ""))
    if container.get("envFrom"):
        raise PodConfigError(
            f'container "{cname}": envFrom is not supported by the local job runner (there are no '
            "ConfigMaps or Secrets to read)"
        )
    defined: dict[str, str] = {}
    if index is not None:
        defined["JOB_COMPLETION_INDEX"] = str(index)
    for i, var in enumerate(container.get("env") or []):
        name = str(var.get("name", ""))
        where = f'container "{cname}": env[{i}] ({name})'
        if "valueFrom" not in var or "value" in var:
            defined[name] = expand(str(var.get("value") or ""), defined)
            continue
        source = var.get("valueFrom") or {}
        ref = source.get("fieldRef")
        if not isinstance(ref, Mapping):
            kinds = ", ".join(sorted(source)) or "an empty valueFrom"
            raise PodConfigError(
                f"{where}: valueFrom.{kinds} is not supported by the local job runner (only fieldRef)"
            )
        path = str(ref.get("fieldPath", ""))
        found = re.fullmatch(r"metadata\.(labels|annotations)\['(.+)'\]", path)
        if found:
            table = labels if found.group(1) == "labels" else annotations
            defined[name] = str(table.get(found.group(2), ""))  # the kubelet resolves a missing key to ""
        elif path in fields:
            defined[name] = fields[path]
        else:
            raise PodConfigError(f"{where}: valueFrom.fieldRef.fieldPath {path!r} is not supported")
    env = {"PATH": DEFAULT_PATH, "HOSTNAME": hostname, "HOME": home, **defined}
    return env, defined


# --- resource limits -----------------------------------------------------------------------------------


def resource_limits(
    container: Mapping[str, Any], cgroup_controllers: set[str]
) -> tuple[dict[str, str], dict[str, int], dict[str, str]]:
    """``resources.limits`` as (cgroup files to write, rlimits to set, record of what is enforced)."""
    limits = (container.get("resources") or {}).get("limits") or {}
    files: dict[str, str] = {}
    rlimits: dict[str, int] = {}
    record: dict[str, str] = {}
    cname = str(container.get("name", ""))
    try:
        memory = Quantity.parse(limits["memory"]).int_value() if "memory" in limits else None
        cpu_milli = Quantity.parse(limits["cpu"]).milli_value() if "cpu" in limits else None
    except QuantityError as err:
        raise PodConfigError(f'container "{cname}": resources.limits: {err}') from None
    if memory is not None:
        if "memory" in cgroup_controllers:
            files["memory.max"] = str(memory)
            files["memory.swap.max"] = "0"
            record["memory"] = f"{memory} bytes: cgroup v2 memory.max"
        else:
            rlimits["RLIMIT_AS"] = memory
            record["memory"] = (
                f"{memory} bytes: RLIMIT_AS (address space; no writable cgroup v2 memory controller)"
            )
    if cpu_milli is not None:
        if "cpu" in cgroup_controllers:
            quota = max(1000, math.ceil(cpu_milli * CPU_PERIOD_US / 1000))  # the kernel's minimum is 1 ms
            files["cpu.max"] = f"{quota} {CPU_PERIOD_US}"
            record["cpu"] = f"{cpu_milli}m: cgroup v2 cpu.max {quota} {CPU_PERIOD_US}"
        else:
            record["cpu"] = f"{cpu_milli}m: not enforced (no writable cgroup v2 cpu controller)"
    return files, rlimits, record


# --- cgroups v2 ----------------------------------------------------------------------------------------


def _cgroup2_mount() -> Path | None:
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        before, _, after = line.partition(" - ")
        if after.split(" ", 1)[0] == "cgroup2":
            return Path(before.split()[4])
    return None


def _own_cgroup() -> str | None:
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                return line[3:]
    except OSError:
        pass
    return None


class Cgroups:
    """One cgroup v2 directory per pod, under ``<own cgroup>/pykueue-<hash of the work dir>``.

    Unavailable (``parent is None``) when there is no cgroup v2 hierarchy or it is not writable;
    the shim's subreaper tree still tracks the pod then. Controllers (memory, cpu) are enabled
    for the pods where the hierarchy delegates them.
    """

    def __init__(self, work_dir: Path, *, enabled: bool = True) -> None:
        self.parent: Path | None = None
        self.controllers: set[str] = set()
        if not enabled:
            return
        mount, own = _cgroup2_mount(), _own_cgroup()
        if mount is None or own is None:
            return
        base = mount / own.lstrip("/")
        tag = hashlib.sha256(str(work_dir.resolve()).encode()).hexdigest()[:12]
        parent = base / f"pykueue-{tag}"
        try:
            parent.mkdir(exist_ok=True)
            if not (parent / "cgroup.procs").exists():
                return
        except OSError:
            return
        self.parent = parent
        wanted = {"memory", "cpu"}
        for directory in (base, parent):
            try:
                available = set((directory / "cgroup.controllers").read_text().split())
            except OSError:
                available = set()
            for name in sorted(wanted & available):
                with contextlib.suppress(OSError):
                    (directory / "cgroup.subtree_control").write_text(f"+{name}")
        with contextlib.suppress(OSError):
            self.controllers = set((parent / "cgroup.subtree_control").read_text().split()) & wanted

    def create(self, pod_uid: str, files: Mapping[str, str]) -> Path | None:
        """The pod's cgroup with its limit files written (None when cgroups are unavailable)."""
        if self.parent is None:
            return None
        path = self.parent / pod_uid
        try:
            path.mkdir(exist_ok=True)
        except OSError:
            return None
        for name, value in files.items():
            with contextlib.suppress(OSError):
                (path / name).write_text(value)
        return path

    @staticmethod
    def kill(path: Path) -> None:
        """SIGKILL every process in a pod's cgroup (used when its shim is gone)."""
        with contextlib.suppress(OSError):
            (path / "cgroup.kill").write_text("1")
        with contextlib.suppress(OSError):
            for line in (path / "cgroup.procs").read_text().split():
                with contextlib.suppress(ProcessLookupError, PermissionError, ValueError):
                    os.kill(int(line), 9)

    def close(self) -> None:
        """Remove the (empty) parent directory; pods that survive keep it."""
        if self.parent is not None:
            with contextlib.suppress(OSError):
                self.parent.rmdir()


def write_durably(path: str, data: Mapping[str, Any], *, sync_dir: bool = True) -> None:
    """Write JSON to ``path`` atomically: temp file, fsync, rename, fsync of the directory.

    ``sync_dir=False`` leaves the directory's fsync to a later :func:`write_durably` or
    :func:`mark_durably` in the same directory, which makes both entries durable at once.
    """
    tmp = f"{path}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, json.dumps(data).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if sync_dir:
        _sync_dir(os.path.dirname(path) or ".")


def mark_durably(path: str) -> None:
    """Create an empty marker file durably: only its directory entry needs the fsync."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))
    _sync_dir(os.path.dirname(path) or ".")


def _sync_dir(path: str) -> None:
    dfd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON file written by :func:`write_durably`, or None when absent or unreadable."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
