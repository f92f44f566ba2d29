"""Golden outputs of the kueuectl tables and parsers: upstream's own expectations
(``cmd/kueuectl/app/list/list_test.go``, ``list_workload_test.go``, ``create_*_test.go``) fed
through pykueue's row builders and kubectl-style table writer with upstream's fixed clock."""

from __future__ import annotations

import io
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from pykueue.cli.kueuectl.client import CommandError
from pykueue.cli.kueuectl.list_cmd import (
    CQ_COLUMNS,
    LQ_COLUMNS,
    RF_COLUMNS,
    WL_COLUMNS,
    WorkloadResources,
    cluster_queue_row,
    local_queue_row,
    resource_flavor_row,
    workload_row,
)
from pykueue.cli.kueuectl.mutate_cmd import _resource_groups, parse_taints, parse_tolerations
from pykueue.cli.kueuectl.printing import name_line, progress, table, tabwrite

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def ago(hours: float) -> str:
    return (NOW - timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")


def lq(name: str, ns: str, cq: str, pending: int, admitted: int, hours: float) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": ns, "creationTimestamp": ago(hours)},
        "spec": {"clusterQueue": cq},
        "status": {"pendingWorkloads": pending, "admittedWorkloads": admitted},
    }


def wl(name: str, queue: str, cq: str, hours: float, owner: tuple[str, str, str], conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    api_version, kind, job = owner
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "creationTimestamp": ago(hours),
            "ownerReferences": [{"apiVersion": api_version, "kind": kind, "name": job, "uid": "test-uid"}],
        },
        "spec": {"queueName": queue},
        "status": {"admission": {"clusterQueue": cq}, "conditions": conditions or []},
    }


JOB = ("batch/v1", "Job", "")
RAY = ("ray.io/v1", "RayJob", "")


def cond(ctype: str, status: str, hours: float) -> dict[str, Any]:
    return {"type": ctype, "status": status, "lastTransitionTime": ago(hours)}


def test_local_queue_list_all_namespaces() -> None:
    items = [lq("lq1", "ns1", "cq1", 1, 1, 1), lq("lq2", "ns2", "cq2", 2, 2, 2)]
    out = table(LQ_COLUMNS, [local_queue_row(o, NOW) for o in items], namespaces=["ns1", "ns2"])
    assert out == (
        "NAMESPACE   NAME   CLUSTERQUEUE   PENDING WORKLOADS   ADMITTED WORKLOADS   AGE\n"
        "ns1         lq1    cq1            1                   1                    60m\n"
        "ns2         lq2    cq2            2                   2                    120m\n"
    )


def test_cluster_queue_list() -> None:
    items = [
        {
            "metadata": {"name": "cq1", "creationTimestamp": ago(1)},
            "spec": {"cohortName": "cohort1"},
            "status": {"conditions": [cond("Active", "True", 1)]},
        },
        {
            "metadata": {"name": "cq2", "creationTimestamp": ago(2)},
            "spec": {"cohortName": "cohort2"},
            "status": {"conditions": [cond("Active", "False", 1)]},
        },
    ]
    assert table(CQ_COLUMNS, [cluster_queue_row(o, NOW) for o in items]) == (
        "NAME   COHORT    PENDING WORKLOADS   ADMITTED WORKLOADS   ACTIVE   AGE\n"
        "cq1    cohort1   0                   0                    true     60m\n"
        "cq2    cohort2   0                   0                    false    120m\n"
    )


def test_resource_flavor_list_with_node_labels() -> None:
    items = [
        {"metadata": {"name": "rf1", "creationTimestamp": ago(1)}, "spec": {"nodeLabels": {"key2": "value2", "key1": "value1"}}},
        {"metadata": {"name": "rf2", "creationTimestamp": ago(2)}, "spec": {"nodeLabels": {"key3": "value3", "key4": "value4"}}},
    ]
    assert table(RF_COLUMNS, [resource_flavor_row(o, NOW) for o in items]) == (
        "NAME   NODE LABELS                AGE\n"
        "rf1    key1=value1, key2=value2   60m\n"
        "rf2    key3=value3, key4=value4   120m\n"
    )
    bare = [{"metadata": {"name": "rf1", "creationTimestamp": ago(1)}, "spec": {}}]
    assert table(RF_COLUMNS, [resource_flavor_row(o, NOW) for o in bare]) == "NAME   NODE LABELS   AGE\nrf1                  60m\n"


def test_workload_list_with_all_statuses() -> None:
    items = [
        wl("wl1", "lq1", "cq1", 1, (*JOB[:2], "j1")),
        wl("wl2", "lq2", "cq2", 2, (*RAY[:2], "j2"), [cond("Admitted", "True", 1)]),
        wl("wl3", "lq3", "cq3", 2, (*RAY[:2], "j3"), [cond("Admitted", "False", 1)]),
        wl("wl4", "lq4", "cq4", 3, (*JOB[:2], "j4"), [cond("Admitted", "True", 2), cond("Finished", "True", 1)]),
        wl("wl5", "lq5", "cq5", 3, (*JOB[:2], "j5"), [cond("Admitted", "True", 2), cond("Finished", "False", 1)]),
    ]
    rows = [workload_row(o, WorkloadResources(), NOW) for o in items]
    assert table(WL_COLUMNS, rows) == (
        "NAME   JOB TYPE   JOB NAME   LOCALQUEUE   CLUSTERQUEUE   STATUS     POSITION IN QUEUE   EXEC TIME   AGE\n"
        "wl1               j1         lq1          cq1            PENDING                                    60m\n"
        "wl2               j2         lq2          cq2            ADMITTED                       60m         120m\n"
        "wl3               j3         lq3          cq3            PENDING                                    120m\n"
        "wl4               j4         lq4          cq4            FINISHED                       60m         3h\n"
        "wl5               j5         lq5          cq5            ADMITTED                       120m        3h\n"
    )


def test_workload_list_with_position_in_queue_and_job_type() -> None:
    r = WorkloadResources()
    r.pending["default/wl1"] = {"positionInLocalQueue": 12, "positionInClusterQueue": 11}
    r.pending["default/wl2"] = {"positionInLocalQueue": 22, "positionInClusterQueue": 21}
    items = [wl("wl1", "lq1", "cq1", 1, (*JOB[:2], "j1")), wl("wl2", "lq2", "cq2", 2, (*RAY[:2], "j2"))]
    assert table(WL_COLUMNS, [workload_row(o, r, NOW) for o in items]) == (
        "NAME   JOB TYPE   JOB NAME   LOCALQUEUE   CLUSTERQUEUE   STATUS    POSITION IN QUEUE   EXEC TIME   AGE\n"
        "wl1               j1         lq1          cq1            PENDING   12                              60m\n"
        "wl2               j2         lq2          cq2            PENDING   22                              120m\n"
    )
    r.api_resources["ray.io/v1"] = [{"singularName": "rayjob", "kind": "RayJob", "group": "ray.io"}]
    row = workload_row(wl("wl1", "lq1", "cq1", 2, (*RAY[:2], "job-test")), r, NOW)
    assert table(WL_COLUMNS, [row]) == (
        "NAME   JOB TYPE        JOB NAME   LOCALQUEUE   CLUSTERQUEUE   STATUS    POSITION IN QUEUE   EXEC TIME   AGE\n"
        "wl1    rayjob.ray.io   job-test   lq1          cq1            PENDING   12                              120m\n"
    )
    r.api_resources["x.example.com/v1"] = [{"singularName": "averyveryverylongjob", "kind": "Long", "group": "x.example.com"}]
    long = workload_row(wl("wl9", "lq1", "cq1", 1, ("x.example.com/v1", "Long", "j")), r, NOW)
    assert long[1] == "averyveryverylongjob..."


def test_tabwriter_matches_go_semantics() -> None:
    # minwidth 6 applies to short columns; the last cell is never padded.
    assert tabwrite([["A", "B"], ["long-value", ""]]) == "A            B\nlong-value   \n"
    assert tabwrite([["x", "y", "z"]]) == "x     y     z\n"


def test_name_printer() -> None:
    obj = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"}}
    assert name_line(obj, "created (server dry run)") == "clusterqueue.kueue.x-k8s.io/cq created (server dry run)\n"
    assert name_line({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}) == "namespace/n\n"


def test_resource_groups_as_create_clusterqueue_test() -> None:
    # upstream create_clusterqueue_test.go "should create cluster queue with multiple resource flavors".
    groups = _resource_groups(
        ["alpha:cpu=0;memory=0", "beta:cpu=0;memory=0"], ["alpha:cpu=0;memory=0"], ["beta:cpu=0;memory=0"]
    )
    assert groups == [
        {
            "coveredResources": ["cpu", "memory"],
            "flavors": [
                {
                    "name": "alpha",
                    "resources": [
                        {"name": "cpu", "nominalQuota": "0", "borrowingLimit": "0"},
                        {"name": "memory", "nominalQuota": "0", "borrowingLimit": "0"},
                    ],
                },
                {
                    "name": "beta",
                    "resources": [
                        {"name": "cpu", "nominalQuota": "0", "lendingLimit": "0"},
                        {"name": "memory", "nominalQuota": "0", "lendingLimit": "0"},
                    ],
                },
            ],
        }
    ]
    gpu = _resource_groups(["alpha:cpu=9;memory=36Gi", "beta:nvidia.com/gpu=10"], [], [])
    assert [g["coveredResources"] for g in gpu] == [["cpu", "memory"], ["nvidia.com/gpu"]]
    for bad, message in (
        (["alpha"], "invalid resources specification"),
        (["alpha:cpu=1;memory=1Gi", "beta:cpu=1"], "invalid resource group"),
        (["alpha:cpu=1Q"], "invalid resource quota"),
    ):
        with pytest.raises(CommandError) as err:
            _resource_groups(bad, [], [])
        assert str(err.value) == message
    with pytest.raises(CommandError, match="invalid flavor"):
        _resource_groups(["alpha:cpu=1;memory=1"], ["alpha:gpu=1"], [])


def test_taints_and_tolerations() -> None:
    assert parse_taints(["key1=value:NoSchedule", "key2:NoExecute"]) == [
        {"key": "key1", "value": "value", "effect": "NoSchedule"},
        {"key": "key2", "effect": "NoExecute"},
    ]
    assert parse_tolerations(["key1=value:NoSchedule", "key2:NoExecute", "key3=value", "key4", ":PreferNoSchedule"]) == [
        {"key": "key1", "operator": "Equal", "value": "value", "effect": "NoSchedule"},
        {"key": "key2", "operator": "Exists", "effect": "NoExecute"},
        {"key": "key3", "operator": "Equal", "value": "value"},
        {"key": "key4", "operator": "Exists"},
        {"operator": "Exists", "effect": "PreferNoSchedule"},
    ]
    for specs, message in (
        (["key1=value"], "invalid taint spec: key1=value"),
        (["key1:Sometimes"], "invalid taint effect: Sometimes, unsupported taint effect"),
        (["k:NoSchedule", "k:NoSchedule"], "duplicated taints with the same key and effect: {k  NoSchedule <nil>}"),
    ):
        with pytest.raises(CommandError) as err:
            parse_taints(specs)
        assert str(err.value) == message
    with pytest.raises(CommandError, match="invalid toleration spec: =value"):
        parse_tolerations(["=value"])


class _Terminal(io.StringIO):
    """A text stream that says it is a terminal (what the spinner checks)."""

    def isatty(self) -> bool:
        return True


def test_progress_appears_only_on_a_terminal_after_a_second() -> None:
    slow = _Terminal()
    with progress("listing workloads", slow, delay=0.2):
        time.sleep(0.3)
        # Shown once the spinner's thread gets to it (a busy machine may take longer than 0.1 s).
        deadline = time.monotonic() + 10
        while "listing workloads" not in slow.getvalue() and time.monotonic() < deadline:
            time.sleep(0.02)
    assert "listing workloads" in slow.getvalue() and slow.getvalue().endswith("\r\033[K")
    quick = _Terminal()
    with progress("listing workloads", quick, delay=5):  # a block that ends at once, even when busy
        pass
    assert quick.getvalue() == ""
    pipe = io.StringIO()
    with progress("listing workloads", pipe, delay=0.0):
        time.sleep(0.2)
    assert pipe.getvalue() == ""


def test_yaml_output_quotes_like_go_yaml() -> None:
    from pykueue.cli.kueuectl.printing import render

    doc = {"kind": "X", "metadata": {"name": "n", "creationTimestamp": "2024-05-01T12:00:00Z"}, "spec": {"q": "9", "ok": "yes"}}
    assert render(doc, "yaml") == (
        "kind: X\nmetadata:\n  creationTimestamp: \"2024-05-01T12:00:00Z\"\n  name: n\nspec:\n  ok: \"yes\"\n  q: \"9\"\n"
    )
