"""Huge quantities end to end (issue 10, finding 6): the real ``pykueue serve`` with Kueue's
controllers, driven by the real kubectl. A Workload asking 4Ei cpu × 2 in a ClusterQueue of 8Ei
is marked inadmissible with the reason, and a small Workload queued behind it is admitted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ServerProcess, start_server, wait_for

G = "kueue.x-k8s.io/v1beta2"
OVERFLOW_MESSAGE = (
    'resources validation failed: spec.podSets[0].count: Invalid value: 2: the total request for "cpu" '
    "(per-pod request × count) exceeds the largest quantity Kueue can account for (9223372036854775806m)"
)


def workload(name: str, cpu: str, count: int) -> dict[str, Any]:
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
    return {
        "apiVersion": G,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "queueName": "lq",
            "podSets": [{"name": "main", "count": count, "template": {"spec": {"restartPolicy": "Never", "containers": [container]}}}],
        },
    }  # fmt: skip


@pytest.fixture
def kueue(tmp_path: Path) -> Any:
    srv = start_server(tmp_path, ("--no-job-runner",), controllers=True)
    yield srv
    if srv.alive():
        srv.stop()


def _get(srv: ServerProcess, name: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(srv.kubectl("get", "workloads.kueue.x-k8s.io", name, "-o", "json").stdout)
    return out


def _condition(wl: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    return next((c for c in wl.get("status", {}).get("conditions", []) if c["type"] == ctype), None)


@pytest.mark.parametrize("strategy", ["StrictFIFO", "BestEffortFIFO"])
def test_huge_workload_is_inadmissible_and_the_small_one_behind_it_is_admitted(kueue: ServerProcess, strategy: str) -> None:
    setup = [
        {"apiVersion": G, "kind": "ResourceFlavor", "metadata": {"name": "default"}},
        {"apiVersion": G, "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {
            "namespaceSelector": {}, "queueingStrategy": strategy,
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "8Ei"}]}]}]}},
        {"apiVersion": G, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "default"},
         "spec": {"clusterQueue": "cq"}},
    ]  # fmt: skip
    kueue.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(setup))
    kueue.kubectl("create", "-f", "-", stdin=json.dumps(workload("huge", "4Ei", 2)))
    kueue.kubectl("create", "-f", "-", stdin=json.dumps(workload("small", "1", 2)))

    def small_admitted() -> bool:
        cond = _condition(_get(kueue, "small"), "QuotaReserved")
        return cond is not None and cond["status"] == "True"

    wait_for(small_admitted, timeout=60)

    def huge_marked() -> dict[str, Any] | None:
        cond = _condition(_get(kueue, "huge"), "QuotaReserved")
        return cond if cond is not None and cond.get("reason") == "Misconfigured" else None

    cond = wait_for(huge_marked, timeout=30)
    assert cond["status"] == "False"
    assert cond["message"] == OVERFLOW_MESSAGE
    huge = _get(kueue, "huge")
    assert "admission" not in huge.get("status", {})

    def reserved_cpu() -> str:
        cq = json.loads(kueue.kubectl("get", "clusterqueues.kueue.x-k8s.io", "cq", "-o", "json").stdout)
        reservation = cq.get("status", {}).get("flavorsReservation") or [{"resources": [{"total": ""}]}]
        return str(reservation[0]["resources"][0]["total"])

    wait_for(lambda: reserved_cpu() == "2", timeout=30)  # the small one's 2 × 1 cpu, nothing of the huge one
