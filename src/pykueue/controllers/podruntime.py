"""Running a pod's container with a container runtime (``serve --pod-runtime=podman|docker``).

The default local job runner runs a container's ``command`` + ``args`` as a local process, which
cannot run an image's entrypoint. With a runtime the pod's first container runs from its image as
the kubelet would run it: ``command`` replaces the image's ENTRYPOINT (and with it its CMD),
``args`` replace CMD, the container's ``env`` (not the host's), ``workingDir``, the pod's hostname,
and ``resources.limits`` as the runtime's ``--memory`` / ``--cpus``. The runtime client runs under
the pod's shim (``podshim.py``) like any pod process, so the pod's life, exit code, logs and kill
work unchanged; its container is named after the pod's uid and removed once the pod has ended,
also when the pod was killed.

The host network is used (as the process runner's pods do), and the container gets the runner's
own open-file and process limits (the runtimes' defaults exceed what unprivileged sandboxes allow).
Images are not pulled (``--pull=never``): no registry needs to be reachable; an image missing
locally fails the pod with the runtime's message.
"""

from __future__ import annotations

import json
import math
import os
import resource
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pykueue.api.quantity import Quantity, QuantityError
from pykueue.controllers.podsandbox import PodConfigError

RUNTIMES: Final = ("podman", "docker")
PROCESS: Final = "process"
CONTAINER_NAME_PREFIX: Final = "pykueue-"
# What the runtime client itself needs from the runner's environment (never the pod's business).
_CLIENT_ENVIRONMENT: Final = (
    "PATH",
    "HOME",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "CONTAINERS_CONF",
    "CONTAINERS_STORAGE_CONF",
    "CONTAINERS_REGISTRIES_CONF",
    "DOCKER_HOST",
    "DOCKER_CONFIG",
    "TMPDIR",
)
# Set by the container runtime itself (from the image and --hostname), as under the kubelet.
_RUNTIME_SET = frozenset({"PATH", "HOSTNAME", "HOME"})


@dataclass(frozen=True)
class ContainerRuntime:
    """A container runtime CLI (podman or docker) the job runner starts pods with."""

    name: str
    binary: str

    @staticmethod
    def find(name: str) -> ContainerRuntime:
        """The runtime ``name`` on ``PATH``; :class:`ValueError` naming it when absent or unknown."""
        if name not in RUNTIMES:
            raise ValueError(f"--pod-runtime {name}: supported values: process, {', '.join(RUNTIMES)}")
        binary = shutil.which(name)
        if binary is None:
            raise ValueError(f"--pod-runtime {name}: no {name} executable on PATH")
        return ContainerRuntime(name, binary)

    def client_environment(self) -> dict[str, str]:
        """The environment the runtime client runs with: only what it needs to find its state."""
        env = {key: os.environ[key] for key in _CLIENT_ENVIRONMENT if key in os.environ}
        env.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        return env

    def run_argv(
        self,
        *,
        container_name: str,
        hostname: str,
        container: Mapping[str, Any],
        env: Mapping[str, str],
        defined: Mapping[str, str],
        command: list[str],
        args: list[str],
    ) -> tuple[list[str], dict[str, str]]:
        """``<runtime> run ...`` for the pod's container, and a record of the limits it applies.

        ``env`` is the pod's environment as the process runner computes it; the variables the
        runtime sets from the image and ``--hostname`` are left to it unless the container's
        ``env`` sets them (``defined``).
        """
        image = str(container.get("image") or "")
        cname = str(container.get("name", ""))
        if not image:
            raise PodConfigError(f'container "{cname}": image: Required value (--pod-runtime={self.name})')
        argv = [self.binary, "run", "--rm", "--pull=never", "--name", container_name, "--hostname", hostname]
        argv.append("--network=host")
        argv += _ulimits()
        for key, value in env.items():
            if key in _RUNTIME_SET and key not in defined:
                continue
            argv += ["--env", f"{key}={value}"]
        if container.get("workingDir"):
            argv += ["--workdir", str(container["workingDir"])]
        applied = self._limits(container, argv)
        if command:
            argv += ["--entrypoint", json.dumps(command)]
        argv.append(image)
        argv += args
        return argv, applied

    def _limits(self, container: Mapping[str, Any], argv: list[str]) -> dict[str, str]:
        limits = (container.get("resources") or {}).get("limits") or {}
        cname = str(container.get("name", ""))
        applied: dict[str, str] = {}
        try:
            if "memory" in limits:
                memory = Quantity.parse(limits["memory"]).int_value()
                argv += ["--memory", str(memory)]
                applied["memory"] = f"{memory} bytes: {self.name} --memory"
            if "cpu" in limits:
                milli = Quantity.parse(limits["cpu"]).milli_value()
                cpus = f"{math.ceil(milli) / 1000:g}"
                argv += ["--cpus", cpus]
                applied["cpu"] = f"{milli}m: {self.name} --cpus {cpus}"
        except QuantityError as err:
            raise PodConfigError(f'container "{cname}": resources.limits: {err}') from None
        return applied

    def remove(self, container_name: str) -> None:
        """Remove the pod's container if it is still there (a killed pod's ``--rm`` never ran)."""
        subprocess.run(
            [self.binary, "rm", "--force", container_name],
            env=self.client_environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=60,
            check=False,
        )


def _ulimits() -> list[str]:
    """``--ulimit`` flags giving the container the runner's own open-file and process limits.

    The runtimes' defaults (e.g. nproc 4194304) are above what sandboxed hosts let a container
    set; the process limit is also capped at ``kernel.pid_max``, which some kernels enforce.
    """
    flags: list[str] = []
    for name, limit in (("nofile", resource.RLIMIT_NOFILE), ("nproc", resource.RLIMIT_NPROC)):
        soft, hard = resource.getrlimit(limit)
        if name == "nproc":
            try:
                pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
            except (OSError, ValueError):
                pid_max = None
            if pid_max is not None:
                soft = pid_max if soft == resource.RLIM_INFINITY else min(soft, pid_max)
                hard = pid_max if hard == resource.RLIM_INFINITY else min(hard, pid_max)
        if soft != resource.RLIM_INFINITY and hard != resource.RLIM_INFINITY:
            flags += ["--ulimit", f"{name}={soft}:{hard}"]
    return flags


def container_name(pod_uid: str) -> str:
    """The runtime's name for a pod's container: unique per pod, so a replaced pod never collides."""
    return f"{CONTAINER_NAME_PREFIX}{pod_uid}"
