"""``kubectl kueue ...`` end to end: the real kubectl finds the ``kubectl-kueue`` plugin on PATH
(this venv's bin) and runs it against a real ``pykueue serve`` after a scenario with borrowing, a
preemption and pending workloads (``tests/visibility/e2e_support.py``)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "visibility"))

from e2e_support import Kueue, job, run_scenario, start_kueue, wait_for

KUBECTL = "/usr/bin/kubectl"
DURATION = re.compile(r"^(\d+[smhdy])+$")


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Kueue, dict[str, str]]]:
    k = start_kueue(tmp_path_factory.mktemp("kueuectl"), "embedded", ["--no-job-runner"])
    try:
        yield k, run_scenario(k)
    finally:
        k.stop()


def kueue(
    k: Kueue, *args: str, check: bool = True, stdin: str | None = None, **extra_env: str
) -> subprocess.CompletedProcess[str]:
    """``kubectl kueue <args>``; kubectl allows no flags before a plugin name, so the kubeconfig
    comes from $KUBECONFIG."""
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "KUBECONFIG": str(k.server.kubeconfig), "PATH": bin_dir + os.pathsep + os.environ["PATH"], **extra_env}
    result = subprocess.run(
        [KUBECTL, "kueue", *args], input=stdin, capture_output=True, text=True, env=env, timeout=60
    )
    if check and result.returncode != 0:
        raise AssertionError(f"kubectl kueue {' '.join(args)}: {result.returncode}\n{result.stdout}{result.stderr}")
    return result


def columns(output: str) -> tuple[list[str], list[list[str]]]:
    """Header names and cells, cut at the header's column starts; asserts kubectl's alignment
    (every column starts where its header does, three spaces at least after the widest cell)."""
    lines = output.splitlines()
    header = lines[0]
    starts = [0] + [m.end() for m in re.finditer(r" {3,}", header)]
    names = [header[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
    rows = []
    for line in lines[1:]:
        for s in starts[1:]:
            assert line[s - 3 : s] == "   " or line[s - 3 : s].strip() == "", f"misaligned: {line!r}"
        rows.append([line[a:b].rstrip() for a, b in zip(starts, [*starts[1:], None], strict=True)])
    return names, rows


def undated(rows: list[list[str]], *indexes: int) -> list[list[str]]:
    """Rows with their duration cells (AGE, EXEC TIME) checked and replaced by ``<d>``."""
    out = []
    for row in rows:
        row = list(row)
        for i in indexes:
            if row[i]:
                assert DURATION.match(row[i]), row
                row[i] = "<d>"
        out.append(row)
    return out


WL_HEADER = ["NAME", "JOB TYPE", "JOB NAME", "LOCALQUEUE", "CLUSTERQUEUE", "STATUS", "POSITION IN QUEUE", "EXEC TIME", "AGE"]


def test_list_workloads_shows_positions_from_the_visibility_api(scenario: tuple[Kueue, dict[str, str]]) -> None:
    k, wl = scenario
    out = kueue(k, "list", "workloads")
    assert out.stderr == ""
    names, rows = columns(out.stdout)
    assert names == WL_HEADER
    assert undated(rows, 7, 8) == [
        [wl["a-hi"], "job", "a-hi", "lq-a1", "cq-a", "ADMITTED", "", "<d>", "<d>"],
        [wl["b1"], "job", "b1", "lq-b", "cq-b", "PENDING", "0", "", "<d>"],
        [wl["b2"], "job", "b2", "lq-b", "cq-b", "PENDING", "1", "", "<d>"],
        [wl["p-low-1"], "job", "p-low-1", "lq-a1", "cq-a", "PENDING", "0", "", "<d>"],
        [wl["p-low-2"], "job", "p-low-2", "lq-a2", "cq-a", "PENDING", "1", "", "<d>"],
        [wl["p-low-3"], "job", "p-low-3", "lq-a1", "cq-a", "PENDING", "1", "", "<d>"],
        [wl["p-mid"], "job", "p-mid", "lq-a2", "cq-a", "PENDING", "0", "", "<d>"],
    ]
    # Two objects per LIST request: the pages print as one aligned table.
    paged = kueue(k, "list", "workloads", KUEUECTL_LIST_REQUEST_LIMIT="2")
    assert undated(columns(paged.stdout)[1], 7, 8) == undated(rows, 7, 8)
    bad_limit = kueue(k, "list", "workloads", check=False, KUEUECTL_LIST_REQUEST_LIMIT="two")
    assert (bad_limit.returncode, bad_limit.stderr) == (1, "Error: invalid list request limit\n")
    # The NAME column is exactly as wide as the longest name plus kubectl's three spaces.
    width = max(len(n) for n in wl.values()) + 3
    assert out.stdout.splitlines()[0].startswith("NAME".ljust(width) + "JOB TYPE   JOB NAME   LOCALQUEUE")


def test_list_workload_filters(scenario: tuple[Kueue, dict[str, str]]) -> None:
    k, wl = scenario
    _, rows = columns(kueue(k, "list", "workload", "-q", "lq-a1").stdout)
    assert [r[0] for r in rows] == [wl["a-hi"], wl["p-low-1"], wl["p-low-3"]]
    # --clusterqueue matches the admission only (upstream filterByClusterQueue).
    _, rows = columns(kueue(k, "list", "kwl", "--clusterqueue", "cq-a").stdout)
    assert [r[0] for r in rows] == [wl["a-hi"]]
    _, rows = columns(kueue(k, "list", "workload", "--status", "admitted", "--status", "finished").stdout)
    assert [r[0] for r in rows] == [wl["a-hi"]]
    _, rows = columns(kueue(k, "list", "workload", "--for", "job/p-mid").stdout)
    assert [r[0] for r in rows] == [wl["p-mid"]]
    names, rows = columns(kueue(k, "list", "workload", "-A", "--status", "pending", "-q", "lq-b").stdout)
    assert names[0] == "NAMESPACE" and [r[:2] for r in rows] == [["default", wl["b1"]], ["default", wl["b2"]]]
    none = kueue(k, "list", "workload", "-A", "--status", "pending", "-c", "cq-b")
    assert (none.stdout, none.stderr) == ("", "No resources found\n")  # pending ones have no admission
    other_ns = kueue(k, "-n", "kube-system", "list", "workload")  # persistent flags before the verb
    assert (other_ns.stdout, other_ns.stderr) == ("", "No resources found in kube-system namespace.\n")
    empty = kueue(k, "list", "workload", "-q", "nope")
    assert (empty.stdout, empty.stderr) == ("", "No resources found in default namespace.\n")
    bad = kueue(k, "list", "workload", "--status", "running", check=False)
    assert bad.returncode == 1
    assert bad.stderr == 'Error: invalid status value (running). Must be "all", "pending", "admitted" or "finished"\n'
    by_name = kueue(k, "list", "workload", "--status", "pending", "-q", "lq-b", "-o", "name").stdout
    assert by_name == f"workload.kueue.x-k8s.io/{wl['b1']}\nworkload.kueue.x-k8s.io/{wl['b2']}\n"
    doc = json.loads(kueue(k, "list", "workload", "-q", "lq-b", "-o", "json").stdout)
    assert doc["kind"] == "WorkloadList" and [i["metadata"]["name"] for i in doc["items"]] == [wl["b1"], wl["b2"]]


def test_list_queues_and_flavors(scenario: tuple[Kueue, dict[str, str]]) -> None:
    k, _ = scenario
    names, rows = columns(kueue(k, "list", "clusterqueue").stdout)
    assert names == ["NAME", "COHORT", "PENDING WORKLOADS", "ADMITTED WORKLOADS", "ACTIVE", "AGE"]
    assert undated(rows, 5) == [["cq-a", "vis", "4", "1", "true", "<d>"], ["cq-b", "vis", "2", "0", "true", "<d>"]]
    inactive = kueue(k, "list", "cq", "--active", "false")
    assert (inactive.stdout, inactive.stderr) == ("", "No resources found\n")
    two = kueue(k, "list", "cq", "--active", "true,false", check=False)
    assert (two.returncode, two.stderr) == (1, "Error: only one active flag can be provided\n")
    names, rows = columns(kueue(k, "list", "localqueue", "-A").stdout)
    assert names == ["NAMESPACE", "NAME", "CLUSTERQUEUE", "PENDING WORKLOADS", "ADMITTED WORKLOADS", "AGE"]
    assert undated(rows, 5) == [
        ["default", "lq-a1", "cq-a", "2", "1", "<d>"],
        ["default", "lq-a2", "cq-a", "2", "0", "<d>"],
        ["default", "lq-b", "cq-b", "2", "0", "<d>"],
    ]
    assert [r[0] for r in columns(kueue(k, "list", "lq", "-c", "cq-b").stdout)[1]] == ["lq-b"]
    names, rows = columns(kueue(k, "list", "resourceflavor").stdout)
    assert names == ["NAME", "NODE LABELS", "AGE"] and undated(rows, 2) == [["vis-flavor", "", "<d>"]]


def test_pending_alias_reads_the_visibility_api(scenario: tuple[Kueue, dict[str, str]]) -> None:
    k, wl = scenario
    names, rows = columns(kueue(k, "pending", "clusterqueue", "cq-a").stdout)
    assert names == [
        "NAMESPACE", "NAME", "LOCALQUEUE", "PRIORITY", "POSITION IN CLUSTERQUEUE", "POSITION IN LOCALQUEUE", "AGE",
    ]  # fmt: skip
    assert undated(rows, 6) == [
        ["default", wl["p-mid"], "lq-a2", "50", "0", "0", "<d>"],
        ["default", wl["p-low-1"], "lq-a1", "10", "1", "0", "<d>"],
        ["default", wl["p-low-2"], "lq-a2", "10", "2", "1", "<d>"],
        ["default", wl["p-low-3"], "lq-a1", "10", "3", "1", "<d>"],
    ]
    _, rows = columns(kueue(k, "pending", "lq", "lq-a1", "--offset", "1").stdout)
    assert [r[:5] for r in rows] == [[wl["p-low-3"], "lq-a1", "10", "3", "1"]]
    missing = kueue(k, "pending", "cq", "nope", check=False)
    assert (missing.returncode, missing.stderr) == (1, 'Error: clusterqueue.visibility.kueue.x-k8s.io "nope" not found\n')


def test_create_stop_resume(scenario: tuple[Kueue, dict[str, str]]) -> None:
    k, _ = scenario
    assert kueue(k, "create", "resourceflavor", "cli-rf", "--node-labels", "zone=a").stdout == (
        "resourceflavor.kueue.x-k8s.io/cli-rf created\n"
    )
    out = kueue(k, "create", "cq", "cli-cq", "--cohort", "cli", "--nominal-quota", "cli-rf:cpu=2;memory=1Gi",
                "--reclaim-within-cohort", "Any", "--dry-run", "server")  # fmt: skip
    assert out.stdout == "clusterqueue.kueue.x-k8s.io/cli-cq created (server dry run)\n"
    assert k.kubectl("get", "clusterqueue", "cli-cq", check=False).returncode != 0  # not persisted
    kueue(k, "create", "cq", "cli-cq", "--cohort", "cli", "--nominal-quota", "cli-rf:cpu=2;memory=1Gi")
    cq = k.get("clusterqueue", "cli-cq", None)
    assert cq["spec"]["resourceGroups"] == [
        {
            "coveredResources": ["cpu", "memory"],
            "flavors": [{"name": "cli-rf", "resources": [{"name": "cpu", "nominalQuota": "2"}, {"name": "memory", "nominalQuota": "1Gi"}]}],
        }
    ]
    preemption = cq["spec"]["preemption"]  # the API server defaults borrowWithinCohort too
    assert (preemption["reclaimWithinCohort"], preemption["withinClusterQueue"]) == ("Never", "Never")
    unknown = kueue(k, "create", "localqueue", "cli-lq", "-c", "nope", check=False)
    assert (unknown.returncode, unknown.stderr) == (1, 'Error: clusterqueues.kueue.x-k8s.io "nope" not found\n')
    assert kueue(k, "create", "lq", "cli-lq", "-c", "cli-cq").stdout == "localqueue.kueue.x-k8s.io/cli-lq created\n"
    k.apply(job("cli-job", "cli-lq", 1))
    wl_name = wait_for(lambda: (k.workload_of("cli-job") or {}).get("metadata", {}).get("name"), what="workload")
    wait_for(lambda: k.get("workload", wl_name).get("status", {}).get("admission"), what="cli-job admitted")

    assert kueue(k, "stop", "clusterqueue", "cli-cq", "--keep-already-running").stdout == "clusterqueue.kueue.x-k8s.io/cli-cq\n"
    assert k.get("clusterqueue", "cli-cq", None)["spec"]["stopPolicy"] == "Hold"
    assert kueue(k, "stop", "workload", wl_name).stdout == f"workload.kueue.x-k8s.io/{wl_name} stopped\n"
    assert k.get("workload", wl_name)["spec"]["active"] is False
    wait_for(lambda: not k.get("workload", wl_name).get("status", {}).get("admission"), what="stopped workload evicted")
    assert kueue(k, "resume", "workload", wl_name, "--dry-run", "client", "-o", "json").stdout.count('"active": true') == 1
    assert k.get("workload", wl_name)["spec"]["active"] is False  # client dry run sends nothing
    assert kueue(k, "resume", "kwl", wl_name).stdout == f"workload.kueue.x-k8s.io/{wl_name} resumed\n"
    assert kueue(k, "resume", "cq", "cli-cq").stdout == "clusterqueue.kueue.x-k8s.io/cli-cq\n"
    assert k.get("clusterqueue", "cli-cq", None)["spec"]["stopPolicy"] == "None"
    wait_for(lambda: k.get("workload", wl_name).get("status", {}).get("admission"), what="resumed workload readmitted")
    kueue(k, "stop", "lq", "cli-lq")
    assert k.get("localqueue", "cli-lq")["spec"]["stopPolicy"] == "HoldAndDrain"
    bad = kueue(k, "stop", "cq", "cli-cq", "--dry-run", "maybe", check=False)
    assert bad.stderr == 'Error: invalid dry-run value (maybe). Must be "none", "server", or "client"\n'


def test_pykueue_verbs_are_the_same_commands(scenario: tuple[Kueue, dict[str, str]]) -> None:
    k, _ = scenario
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    via_pykueue = subprocess.run(
        [sys.executable, "-m", "pykueue", "list", "rf", "--kubeconfig", str(k.server.kubeconfig), "-o", "name"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert via_pykueue.returncode == 0, via_pykueue.stderr
    assert via_pykueue.stdout == kueue(k, "list", "rf", "-o", "name").stdout


LONE_WORKLOAD = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: lone-wl
  namespace: default
spec:
  queueName: cli-lq
  podSets:
  - name: main
    count: 1
    template:
      spec:
        restartPolicy: Never
        containers:
        - name: c
          image: busybox
          resources:
            requests:
              cpu: "1"
"""


def test_delete_workload_and_kubectl_pass_throughs(scenario: tuple[Kueue, dict[str, str]]) -> None:
    k, _ = scenario
    # get/describe/... <kueue type> are handed to kubectl with the same arguments.
    assert kueue(k, "get", "cq", "cq-a", "-o", "name").stdout == "clusterqueue.kueue.x-k8s.io/cq-a\n"
    assert "Cluster Queue:  cq-b" in kueue(k, "describe", "lq", "lq-b").stdout
    k.apply(job("del-job", "lq-b", 1))
    wl = wait_for(lambda: k.workload_of("del-job"), what="workload of del-job")["metadata"]["name"]
    dry = kueue(k, "delete", "workload", wl, "--dry-run", "server")
    assert dry.stdout == "jobs.batch/del-job deleted (server dry run)\n"
    cancelled = kueue(k, "delete", "kwl", wl, stdin="n\n")
    assert cancelled.stdout == (
        f"This operation will also delete:\n  - jobs.batch/del-job associated with the default/{wl} workload\n"
        "Do you want to proceed (y/n)? Deletion is canceled\n"
    )
    assert k.kubectl("get", "job", "del-job", "-n", "default", check=False).returncode == 0
    assert kueue(k, "delete", "workload", wl, "--yes").stdout == "jobs.batch/del-job deleted\n"
    wait_for(lambda: k.kubectl("get", "job", "del-job", "-n", "default", check=False).returncode != 0, what="job gone")
    k.apply(LONE_WORKLOAD)
    assert kueue(k, "delete", "workload", "lone-wl").stdout == "workload.kueue.x-k8s.io/lone-wl deleted\n"
    assert k.kubectl("get", "workload", "lone-wl", "-n", "default", check=False).returncode != 0
    missing = kueue(k, "delete", "workload", "nope", "-y")
    assert (missing.returncode, missing.stdout, missing.stderr) == (0, "", 'workloads.kueue.x-k8s.io "nope" not found\n')
    both = kueue(k, "delete", "workload", "x", "--all", check=False)
    assert (both.returncode, both.stderr) == (1, "Error: name cannot be provided when a selector is specified\n")
