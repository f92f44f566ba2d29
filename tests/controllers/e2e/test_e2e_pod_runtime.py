"""``pykueue serve --pod-runtime=podman``: a Job's pods run from their image, end to end.

The image is built here from the host's own ``/bin/sh`` and the libraries it needs (no registry is
reachable on these machines), with an ENTRYPOINT and a CMD, so the test can tell which of the
image's and the container's settings won. Skipped, with the reason printed, where podman is not
installed or cannot run a container on this host.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from support import Kueue, local_queue, start_kueue, wait_for

from pykueue.apiserver.podlogs import CRI_LOG, stream_output

IMAGE = "localhost/pykueue-e2e-sh:1"
CQ = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: default
      resources:
      - {name: cpu, nominalQuota: 4}
      - {name: memory, nominalQuota: 4Gi}
"""


def _libraries(binary: str) -> list[str]:
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    return re.findall(r"(/\S+)\s+\(0x", out)


def _build_image(workdir: Path, env: dict[str, str]) -> None:
    rootfs = workdir / "rootfs.tar"
    sh = os.path.realpath(shutil.which("sh") or "/bin/sh")
    with tarfile.open(rootfs, "w") as tar:
        for path in [sh, *_libraries(sh)]:
            real = os.path.realpath(path)
            tar.add(real, arcname=path.lstrip("/"))
        info = tarfile.TarInfo("bin/sh")
        info.type = tarfile.SYMTYPE
        info.linkname = "/" + sh.lstrip("/")
        if sh != "/bin/sh":
            tar.addfile(info)
    subprocess.run(
        [
            "podman", "import",
            "--change", 'ENTRYPOINT ["/bin/sh", "-c"]',
            "--change", 'CMD ["echo from the image CMD"]',
            str(rootfs), IMAGE,
        ],
        env=env, check=True, capture_output=True, text=True,
    )  # fmt: skip


def _runs(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["podman", "run", "--rm", "--pull=never", "--network=host",
         "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", IMAGE],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.fixture(scope="module")
def podman_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment under which podman runs a container here (maybe with a containers.conf)."""
    if shutil.which("podman") is None:
        reason = "podman is not installed (apt-get install podman runc); --pod-runtime=podman untested here"
        print(f"SKIPPED: {reason}")
        pytest.skip(reason)
    workdir = tmp_path_factory.mktemp("podman")
    env = dict(os.environ)
    _build_image(workdir, env)
    result = _runs(env)
    if result.returncode != 0 and shutil.which("runc"):
        # Hosts with hybrid cgroups (as these sandboxes) need runc and the cgroupfs manager.
        conf = workdir / "containers.conf"
        conf.write_text('[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\n')
        env["CONTAINERS_CONF"] = str(conf)
        result = _runs(env)
    if result.returncode != 0:
        reason = f"podman cannot run a container on this host: {result.stderr.strip()[-300:]}"
        print(f"SKIPPED: {reason}")
        pytest.skip(reason)
    assert result.stdout.strip() == "from the image CMD"
    return env


@pytest.fixture(scope="module")
def kueue(podman_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kueue]:
    saved = dict(os.environ)
    os.environ.update(podman_env)
    os.environ["PYKUEUE_TEST_SERVER_SECRET"] = "must-not-reach-pods"
    try:
        k = start_kueue(tmp_path_factory.mktemp("pod-runtime"), "embedded", ["--pod-runtime", "podman"])
    finally:
        os.environ.clear()
        os.environ.update(saved)
    k.apply(CQ + "---\n" + local_queue("lq", "cq"))
    yield k
    k.stop()


def job(name: str, container: dict[str, object]) -> str:
    base = {"name": "main", "image": IMAGE, "resources": {"requests": {"cpu": "1"}, "limits": {"memory": "64Mi"}}}
    return yaml.safe_dump(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {
                "backoffLimit": 0,
                "template": {"spec": {"restartPolicy": "Never", "containers": [{**base, **container}]}},
            },
        }
    )


def finished(kueue: Kueue, name: str) -> dict[str, object]:
    def done() -> dict[str, object] | None:
        status = kueue.get("job", name).get("status") or {}
        types = {c["type"] for c in status.get("conditions") or [] if c["status"] == "True"}
        return status if types & {"Complete", "Failed"} else None

    result: dict[str, object] = wait_for(done, timeout=90, what=f"job {name} finished")
    return result


def stdout_of(kueue: Kueue, name: str) -> str:
    logs = sorted((kueue.base / "data" / "pods" / "default" / name).glob(f"*/{CRI_LOG}"))
    assert logs, f"no pod logs for {name}"
    return "".join(stream_output(p.parent, "stdout").decode() for p in logs)


def test_args_only_run_the_image_entrypoint(kueue: Kueue) -> None:
    """Half of upstream's examples give only ``args``: they go to the image's ENTRYPOINT."""
    kueue.apply(job("args-only", {"args": ["echo greeting=$GREETING secret=${PYKUEUE_TEST_SERVER_SECRET:-none} host=$(hostname 2>/dev/null || echo $HOSTNAME)"],
                                   "env": [{"name": "GREETING", "value": "hi"}]}))
    status = finished(kueue, "args-only")
    assert status.get("succeeded") == 1
    out = stdout_of(kueue, "args-only")
    assert "greeting=hi" in out
    assert "secret=none" in out  # the server's environment never reaches the container


def test_no_command_no_args_run_the_image_cmd(kueue: Kueue) -> None:
    kueue.apply(job("image-cmd", {}))
    assert finished(kueue, "image-cmd").get("succeeded") == 1
    assert stdout_of(kueue, "image-cmd").strip() == "from the image CMD"


def test_command_replaces_the_entrypoint_and_its_exit_code_counts(kueue: Kueue) -> None:
    kueue.apply(job("command", {"command": ["/bin/sh", "-c", "echo from command; exit 3"]}))
    status = finished(kueue, "command")
    assert status.get("failed") == 1
    assert stdout_of(kueue, "command").strip() == "from command"


def test_deleting_the_job_kills_and_removes_the_container(kueue: Kueue, podman_env: dict[str, str]) -> None:
    kueue.apply(job("spinner", {"command": ["/bin/sh", "-c", "echo started; while :; do :; done"]}))

    def containers() -> list[str]:
        out = subprocess.run(
            ["podman", "ps", "--all", "--format", "{{.Names}}", "--filter", "name=pykueue-"],
            env=podman_env, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        return out.split()

    wait_for(lambda: "started" in (stdout_of_or_empty(kueue, "spinner")), timeout=60, what="container started")
    assert containers(), "the pod's container runs under podman"
    kueue.kubectl("delete", "job", "spinner", "-n", "default", "--wait=false")
    wait_for(lambda: not containers(), timeout=60, what="container removed")


def stdout_of_or_empty(kueue: Kueue, name: str) -> str:
    logs = sorted((kueue.base / "data" / "pods" / "default" / name).glob(f"*/{CRI_LOG}"))
    return "".join(stream_output(p.parent, "stdout").decode() for p in logs)
