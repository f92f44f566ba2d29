"""``pykueue serve`` runs Kueue's controllers in a process of its own (issue 10, "isolation of the
controllers from the API"): a separate pid, never outliving serve (SIGTERM or kill -9), restarted
when it crashes, its visibility API and metrics still answered on serve's port, and the API
answering while that process is stopped in the middle of its initial sync.

Each test fails on the in-process layout (one pid: no child to find, stop, kill or pause)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import Kueue, is_true, job, local_queue, pid_alive, start_kueue, start_server, wait_for

FLAVOR_AND_CQ = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: default-flavor
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: cq
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: default-flavor
      resources:
      - name: cpu
        nominalQuota: 1
      - name: memory
        nominalQuota: 4Gi
"""

WORKLOADS = 800
PID_LINE = re.compile(r"controllers: running in process (\d+)")


def controller_pids(output: list[str]) -> list[int]:
    """Every controller process serve announced, in order."""
    return [int(m.group(1)) for line in list(output) if (m := PID_LINE.search(line))]


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def first_child(k: Kueue) -> int:
    pids = wait_for(lambda: controller_pids(k.server.output), what="the controller process announced")
    return int(pids[0])


def synced(k: Kueue, times: int = 1) -> bool:
    return sum("initial sync done" in line for line in list(k.server.output)) >= times


def admitted(k: Kueue, name: str) -> bool:
    return is_true(k.workload_of(name), "Admitted")


@pytest.fixture
def kueue(tmp_path: Path) -> Any:
    k = start_kueue(tmp_path, "embedded", ["--no-job-runner"])
    yield k
    k.stop()


def test_controllers_run_in_a_child_process_of_serve(kueue: Kueue) -> None:
    pid = first_child(kueue)
    assert pid != kueue.server.proc.pid
    assert parent_of(pid) == kueue.server.proc.pid
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert b"controller" in cmdline and b"serve" not in cmdline
    wait_for(lambda: synced(kueue), what="initial sync")
    kueue.apply(FLAVOR_AND_CQ + "---\n" + local_queue("lq", "cq") + "---\n" + job("j1", "lq"))
    wait_for(lambda: admitted(kueue, "j1"), timeout=30, what="j1 admitted")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_child_stops_with_serve(kueue: Kueue, sig: int) -> None:
    pid = first_child(kueue)
    wait_for(lambda: synced(kueue), what="initial sync")
    assert kueue.server.stop(sig) == 0
    assert not pid_alive(pid), "the controller process outlived serve"


def test_child_dies_when_serve_is_killed(kueue: Kueue) -> None:
    pid = first_child(kueue)
    wait_for(lambda: synced(kueue), what="initial sync")
    kueue.server.stop(signal.SIGKILL)
    wait_for(lambda: not pid_alive(pid), timeout=10, what="the orphaned controller process exits")


def test_crashed_child_is_restarted_and_admission_resumes(kueue: Kueue) -> None:
    pid = first_child(kueue)
    wait_for(lambda: synced(kueue), what="initial sync")
    kueue.apply(FLAVOR_AND_CQ + "---\n" + local_queue("lq", "cq") + "---\n" + job("before", "lq"))
    wait_for(lambda: admitted(kueue, "before"), timeout=30, what="admitted before the crash")
    os.kill(pid, signal.SIGKILL)
    pids = wait_for(lambda: len(controller_pids(kueue.server.output)) >= 2 and controller_pids(kueue.server.output),
                    timeout=30, what="a new controller process")  # fmt: skip
    assert pids[1] != pid and pid_alive(pids[1])
    assert any(f"process {pid} killed by signal 9" in line for line in kueue.server.output), kueue.server.log()
    wait_for(lambda: synced(kueue, 2), timeout=60, what="the new process's initial sync")
    # The queue is full (1 CPU): "after" waits until "before" is gone, then is admitted.
    kueue.apply(job("after", "lq"))
    wl = wait_for(lambda: kueue.workload_of("after"), what="after's Workload")
    assert not is_true(wl, "QuotaReserved")
    kueue.kubectl("delete", "job", "before", "-n", "default")
    wait_for(lambda: admitted(kueue, "after"), timeout=30, what="admitted after the restart")


def established_ports(pid: int) -> set[int]:
    """Remote ports of ``pid``'s established TCP connections (over IPv4 loopback)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for line in Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "01" and fields[9] in inodes:  # ESTABLISHED
            ports.add(int(fields[2].split(":")[1], 16))
    return ports


def test_child_dials_a_listener_of_its_own(kueue: Kueue) -> None:
    """The controllers' connections do not queue behind client connects on the public port (in
    Kueue's large-scale benchmark thousands of runner connects made their status writes time out):
    serve opens a second listener, same TLS and authentication, that only its child dials."""
    pid = first_child(kueue)
    wait_for(lambda: synced(kueue), what="initial sync")
    public = kueue.server.url
    child_config = yaml.safe_load((kueue.server.data_dir / "kubeconfig-controller").read_text())
    internal = child_config["clusters"][0]["cluster"]["server"]
    public_port, internal_port = int(public.rsplit(":", 1)[1]), int(internal.rsplit(":", 1)[1])
    assert internal.rsplit(":", 1)[0] == public.rsplit(":", 1)[0]  # same host: the certificate names it
    assert internal_port != public_port
    ports = wait_for(lambda: established_ports(pid), what="the child's connections")
    assert ports == {internal_port}, f"the child dials {ports}, want only {internal_port}"
    # The same API behind it: authenticated like the public port, the controllers admit through it.
    session = kueue.server.session()
    assert session.get(f"{internal}/api/v1/namespaces/default", timeout=10).status_code == 200
    session.headers.pop("Authorization")
    assert session.get(f"{internal}/api/v1/namespaces/default", timeout=10).status_code == 401
    kueue.apply(FLAVOR_AND_CQ + "---\n" + local_queue("lq", "cq") + "---\n" + job("j1", "lq"))
    wait_for(lambda: admitted(kueue, "j1"), timeout=30, what="j1 admitted")


def test_visibility_and_controller_metrics_on_serves_port(kueue: Kueue) -> None:
    wait_for(lambda: synced(kueue), what="initial sync")
    kueue.apply(FLAVOR_AND_CQ + "---\n" + local_queue("lq", "cq") + "---\n" + job("a", "lq") + "---\n" + job("b", "lq"))
    # One CPU: one of the two is admitted, the other waits.
    first = wait_for(lambda: [j for j in ("a", "b") if admitted(kueue, j)], timeout=30, what="one admitted")
    other = "b" if first == ["a"] else "a"
    pending_name = wait_for(lambda: (kueue.workload_of(other) or {}).get("metadata", {}).get("name"), what="Workload")

    def pending() -> list[str]:
        path = "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq/pendingworkloads"
        doc = json.loads(kueue.kubectl("get", "--raw", path).stdout)
        return [i["metadata"]["name"] for i in doc["items"]]

    assert wait_for(lambda: pending() == [pending_name] and pending(), what="the other pending in the visibility API")
    lq_path = "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/default/localqueues/lq/pendingworkloads"
    doc = json.loads(kueue.kubectl("get", "--raw", lq_path).stdout)
    assert [(i["metadata"]["name"], i["positionInLocalQueue"]) for i in doc["items"]] == [(pending_name, 0)]
    missing = kueue.kubectl("get", "--raw", lq_path.replace("/lq/", "/nope/"), check=False)
    assert missing.returncode != 0 and 'localqueue.visibility.kueue.x-k8s.io "nope" not found' in missing.stderr

    def metric() -> str:
        text = kueue.kubectl("get", "--raw", "/metrics").stdout
        lines = [line for line in text.splitlines() if line.startswith('kueue_pending_workloads{cluster_queue="cq"')]
        return "\n".join(lines)

    def pending_count() -> float:
        return sum(float(line.rsplit(" ", 1)[1]) for line in metric().splitlines())

    # Active or inadmissible (its admission attempt failed on quota): one pending either way.
    assert wait_for(lambda: pending_count() == 1, what="pending metric of cq")
    assert "kueue_admitted_workloads_total" in kueue.kubectl("get", "--raw", "/metrics").stdout
    # Read-only users may read both, as any API path; without a token neither answers.
    with kueue.server.session() as anonymous:
        anonymous.headers.pop("Authorization", None)
        assert anonymous.get(kueue.server.url + "/metrics", timeout=30).status_code == 401


def workload(i: int) -> dict[str, Any]:
    """A Workload of a LocalQueue that does not exist (the controllers sync it, nothing admits it)."""
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
    spec = {"restartPolicy": "Never", "containers": [container]}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": f"wl-{i:04d}", "namespace": "default"},
        "spec": {"queueName": "elsewhere", "podSets": [{"name": "main", "count": 1, "template": {"spec": spec}}]},
    }  # fmt: skip


def test_api_answers_while_the_controller_process_is_paused_in_its_initial_sync(tmp_path: Path) -> None:
    """The controller process stopped (SIGSTOP) as soon as it is announced, in its start-up or
    initial sync of many Workloads: reads, lists and writes are still answered and the process makes
    no progress meanwhile; once resumed, it syncs and admits."""
    data = tmp_path / "data"
    (tmp_path / "fill").mkdir()
    (tmp_path / "run").mkdir()
    api = start_server(tmp_path / "fill", data_dir=data)
    try:
        with api.session() as session:
            for i in range(WORKLOADS):
                got = session.post(api.url + "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads",
                                   json=workload(i), timeout=30)  # fmt: skip
                assert got.status_code == 201, got.text
        api.kubectl("apply", "-f", "-", stdin=FLAVOR_AND_CQ + "---\n" + local_queue("lq", "cq"))
    finally:
        api.stop()
    srv = start_server(tmp_path / "run", ["--no-job-runner"], data_dir=data, controllers=True)
    try:
        pid = wait_for(lambda: controller_pids(srv.output), what="the controller process announced")[0]
        os.kill(pid, signal.SIGSTOP)
        try:
            seen = list(srv.output)
            with srv.session() as session:
                path = "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads"
                got = session.get(srv.url + path + "/wl-0007", timeout=30)
                assert got.status_code == 200 and got.json()["spec"]["queueName"] == "elsewhere"
                listed = session.get(srv.url + path + "?limit=500", timeout=30)
                assert listed.status_code == 200 and len(listed.json()["items"]) == 500
            srv.kubectl("apply", "-f", "-", stdin=job("j", "lq"))
            assert srv.kubectl("get", "job", "j", "-o", "name").stdout.strip() == "job.batch/j"
            assert [line for line in srv.output if "initial sync done" in line] == [
                line for line in seen if "initial sync done" in line
            ], "the controllers made progress while stopped"
        finally:
            os.kill(pid, signal.SIGCONT)
        wait_for(lambda: any("initial sync done" in line for line in srv.output), timeout=120, what="sync")

        def job_admitted() -> bool:
            items = json.loads(srv.kubectl("get", "workloads", "-o", "json").stdout)["items"]
            return any(is_true(wl, "Admitted") for wl in items)

        wait_for(job_admitted, timeout=60, what="the Job admitted once the controllers resumed")
    finally:
        srv.stop()


def test_controllers_in_process_keeps_the_single_process_layout(tmp_path: Path) -> None:
    k = start_kueue(tmp_path, "embedded", ["--no-job-runner", "--controllers-in-process"])
    try:
        wait_for(lambda: synced(k), what="initial sync")
        assert any("controllers: started in this process" in line for line in k.server.output)
        assert controller_pids(k.server.output) == []
        k.apply(FLAVOR_AND_CQ + "---\n" + local_queue("lq", "cq") + "---\n" + job("a", "lq"))
        wait_for(lambda: admitted(k, "a"), timeout=30, what="a admitted")
        path = "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq/pendingworkloads"
        assert json.loads(k.kubectl("get", "--raw", path).stdout)["items"] == []
        assert "kueue_admitted_workloads_total" in k.kubectl("get", "--raw", "/metrics").stdout
    finally:
        k.stop()


def test_a_controller_process_that_cannot_start_stops_serve(tmp_path: Path) -> None:
    """As when in-process controllers failed to start: no control plane without its controllers."""
    srv = start_server(tmp_path, ["--no-job-runner", "--provisioner", str(tmp_path / "missing.yaml")], controllers=True)
    code = srv.proc.wait(timeout=60)
    assert code == 1, srv.log()
    assert any("error: starting the controllers failed: the controller process exited with code 1" in line
               for line in srv.output), srv.log()  # fmt: skip
    assert "missing.yaml" in srv.log()
    assert len(controller_pids(srv.output)) == 1, "a child that cannot start is not restarted"


def test_bad_config_is_refused_before_serving(tmp_path: Path) -> None:
    config = tmp_path / "kueue.yaml"
    config.write_text("apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nbogus: 1\n")
    out = subprocess.run(
        [sys.executable, "-m", "pykueue", "serve", "--port", "0", "--data-dir", str(tmp_path / "d"), "--config", str(config)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 2
    assert out.stdout.strip() == f'error: {config}: strict decoding error: unknown field "bogus"'
