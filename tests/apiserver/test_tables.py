"""Server-side Table conversion: columns, cells, includeObject, durations and JSONPath."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from pykueue.apiserver.builtin.meta import CREATION_TIMESTAMP_DOC, NAME_DOC
from pykueue.apiserver.resources import REGISTRY, ResourceInfo
from pykueue.apiserver.tables import (
    JSONPathError,
    column_definitions,
    format_label_selector,
    format_labels,
    human_duration,
    jsonpath,
    to_table,
)

NOW = datetime(2025, 1, 10, 12, 0, 0, tzinfo=UTC)


def _ago(**delta: float) -> str:
    return (NOW - timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _info(group: str, plural: str, version: str) -> ResourceInfo:
    info = REGISTRY.get(group, version, plural)
    assert info is not None
    return info


# --- HumanDuration ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (59, "59s"),
        (119, "119s"),
        (120, "2m"),
        (125, "2m5s"),
        (599, "9m59s"),
        (600, "10m"),
        (179 * 60 + 59, "179m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 5 * 60, "3h5m"),
        (8 * 3600 + 5 * 60, "8h"),
        (47 * 3600, "47h"),
        (50 * 3600, "2d2h"),
        (3 * 86400, "3d"),
        (8 * 86400, "8d"),
        (400 * 86400, "400d"),
        (2 * 365 * 86400 + 5 * 86400, "2y5d"),
        (9 * 365 * 86400, "9y"),
    ],
)
def test_human_duration(seconds: float, expected: str) -> None:
    assert human_duration(seconds) == expected


# --- JSONPath -------------------------------------------------------------------------------------------

_OBJ: dict[str, Any] = {
    "spec": {"queueName": "q", "podSets": [{"name": "a", "count": 2}, {"name": "b", "count": 3}]},
    "status": {
        "conditions": [
            {"type": "QuotaReserved", "status": "True"},
            {"type": "Admitted", "status": "False"},
        ],
        "map": {"x.y/z": "v"},
    },
}


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (".spec.queueName", ["q"]),
        ("{.spec.queueName}", ["q"]),
        (".spec.missing", []),
        (".spec.podSets[0].name", ["a"]),
        (".spec.podSets[-1].count", [3]),
        (".spec.podSets[*].name", ["a", "b"]),
        (".spec.podSets[0:1].name", ["a"]),
        (".status.conditions[?(@.type=='Admitted')].status", ["False"]),
        ('.status.conditions[?(@.type=="QuotaReserved")].status', ["True"]),
        (".status.conditions[?(@.type!='Admitted')].type", ["QuotaReserved"]),
        (".spec.podSets[?(@.count>2)].name", ["b"]),
        (".status.conditions[?(@.type=='Finished')].status", []),
        (".status.map['x.y/z']", ["v"]),
    ],
)
def test_jsonpath(expr: str, expected: list[Any]) -> None:
    assert jsonpath(_OBJ, expr) == expected


def test_jsonpath_rejects_unsupported_filters() -> None:
    with pytest.raises(JSONPathError):
        jsonpath(_OBJ, ".status.conditions[?(@.type=~'x')]")


# --- CRD tables -------------------------------------------------------------------------------------------


def _workload(name: str, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "resourceVersion": "7",
            "creationTimestamp": _ago(minutes=5),
            "labels": {"a": "b"},
        },
        "spec": {"queueName": "user-queue", "podSets": [{"name": "main", "count": 1}]},
        "status": status,
    }


def test_workload_table_columns_and_cells() -> None:
    info = _info("kueue.x-k8s.io", "workloads", "v1beta2")
    admitted = _workload(
        "wl1",
        admission={"clusterQueue": "cq", "podSetAssignments": []},
        conditions=[{"type": "Admitted", "status": "True"}, {"type": "QuotaReserved", "status": "True"}],
    )
    pending = _workload("wl2")
    table = to_table(info, [admitted, pending], "v1beta2", now=NOW, resource_version="42")
    assert table["kind"] == "Table"
    assert table["apiVersion"] == "meta.k8s.io/v1"
    assert table["metadata"] == {"resourceVersion": "42"}
    columns = table["columnDefinitions"]
    assert [c["name"] for c in columns] == ["Name", "Queue", "Reserved in", "Admitted", "Finished", "Age"]
    assert columns[0] == {
        "name": "Name",
        "type": "string",
        "format": "name",
        "description": NAME_DOC,
        "priority": 0,
    }
    assert columns[5]["type"] == "date"
    assert table["rows"][0]["cells"] == ["wl1", "user-queue", "cq", "True", None, "5m"]
    assert table["rows"][1]["cells"] == ["wl2", "user-queue", None, None, None, "5m"]


def test_clusterqueue_columns_follow_the_version() -> None:
    cq = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq", "creationTimestamp": _ago(hours=50)},
        "spec": {"cohort": "team", "queueingStrategy": "BestEffortFIFO"},
        "status": {"pendingWorkloads": 3, "admittedWorkloads": 1},
    }
    v1beta1 = to_table(_info("kueue.x-k8s.io", "clusterqueues", "v1beta1"), [cq], "v1beta1", now=NOW)
    assert [c["name"] for c in v1beta1["columnDefinitions"]] == [
        "Name",
        "Cohort",
        "Strategy",
        "Pending Workloads",
        "Admitted Workloads",
    ]
    assert [c["priority"] for c in v1beta1["columnDefinitions"]] == [0, 0, 1, 0, 1]
    assert v1beta1["rows"][0]["cells"] == ["cq", "team", "BestEffortFIFO", 3, 1]
    v1beta2_obj = {**cq, "spec": {"cohortName": "team", "queueingStrategy": "StrictFIFO"}}
    v1beta2 = to_table(_info("kueue.x-k8s.io", "clusterqueues", "v1beta2"), [v1beta2_obj], "v1beta2", now=NOW)
    assert v1beta2["rows"][0]["cells"] == ["cq", "team", "StrictFIFO", 3, 1]
    assert v1beta2["metadata"] == {}


def test_crd_without_columns_gets_age() -> None:
    info = _info("kueue.x-k8s.io", "resourceflavors", "v1beta2")
    rf = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "default", "creationTimestamp": _ago(days=2, hours=3), "resourceVersion": "9"},
    }
    table = to_table(info, [rf], "v1beta2", now=NOW)
    assert table["columnDefinitions"][1] == {
        "name": "Age",
        "type": "date",
        "format": "",
        "description": CREATION_TIMESTAMP_DOC,
        "priority": 0,
    }
    assert table["rows"][0]["cells"] == ["default", "2d3h"]
    assert table["metadata"] == {"resourceVersion": "9"}


def test_integer_cells_convert_and_bad_values_are_null() -> None:
    info = _info("kueue.x-k8s.io", "workloadpriorityclasses", "v1beta2")
    ok = {"metadata": {"name": "high"}, "value": 1000.0}
    bad = {"metadata": {"name": "weird"}, "value": "x"}
    rows = to_table(info, [ok, bad], "v1beta2", now=NOW)["rows"]
    assert rows[0]["cells"] == ["high", 1000]
    assert rows[1]["cells"] == ["weird", None]


def test_include_object_variants() -> None:
    info = _info("kueue.x-k8s.io", "workloads", "v1beta2")
    wl = _workload("wl1")
    metadata = to_table(info, [wl], "v1beta2", now=NOW)["rows"][0]["object"]
    assert metadata == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": wl["metadata"],
    }
    assert to_table(info, [wl], "v1beta2", "Object", now=NOW)["rows"][0]["object"] == wl
    assert "object" not in to_table(info, [wl], "v1beta2", "None", now=NOW)["rows"][0]


def test_list_metadata_and_no_headers() -> None:
    info = _info("kueue.x-k8s.io", "workloads", "v1beta2")
    table = to_table(
        info,
        [],
        "v1beta2",
        now=NOW,
        resource_version="5",
        continue_token="abc",
        remaining_item_count=3,
        no_headers=True,
    )
    assert table["metadata"] == {"resourceVersion": "5", "continue": "abc", "remainingItemCount": 3}
    assert "columnDefinitions" not in table
    assert table["rows"] == []


# --- built-in tables -------------------------------------------------------------------------------------


def _job(**status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "pi", "namespace": "default", "creationTimestamp": _ago(minutes=3)},
        "spec": {
            "completions": 2,
            "parallelism": 1,
            "selector": {
                "matchLabels": {"batch.kubernetes.io/controller-uid": "u1"},
                "matchExpressions": [{"key": "a", "operator": "In", "values": ["y", "x"]}],
            },
            "template": {
                "spec": {"containers": [{"name": "c1", "image": "busybox"}, {"name": "c2", "image": "perl"}]}
            },
        },
        "status": status,
    }


def test_job_table() -> None:
    info = _info("batch", "jobs", "v1")
    columns = column_definitions(info, "v1")
    assert [(c["name"], c["priority"]) for c in columns] == [
        ("Name", 0),
        ("Status", 0),
        ("Completions", 0),
        ("Duration", 0),
        ("Age", 0),
        ("Containers", 1),
        ("Images", 1),
        ("Selector", 1),
    ]
    running = _job(startTime=_ago(minutes=2), succeeded=1)
    done = _job(
        startTime=_ago(minutes=3),
        completionTime=_ago(seconds=30),
        succeeded=2,
        conditions=[{"type": "Complete", "status": "True"}],
    )
    suspended = _job(conditions=[{"type": "Suspended", "status": "True"}])
    rows = to_table(info, [running, done, suspended], "v1", now=NOW)["rows"]
    assert rows[0]["cells"] == [
        "pi",
        "Running",
        "1/2",
        "2m",
        "3m",
        "c1,c2",
        "busybox,perl",
        "a in (x,y),batch.kubernetes.io/controller-uid=u1",
    ]
    assert rows[1]["cells"][1:4] == ["Complete", "2/2", "2m30s"]
    assert rows[2]["cells"][1:4] == ["Suspended", "0/2", ""]


def test_job_completions_without_completions() -> None:
    info = _info("batch", "jobs", "v1")
    job = _job()
    job["spec"].pop("completions")
    job["spec"]["parallelism"] = 3
    assert to_table(info, [job], "v1", now=NOW)["rows"][0]["cells"][2] == "0/1 of 3"


def test_event_table_from_both_apis() -> None:
    core_info = _info("", "events", "v1")
    core = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "wl1.abc", "namespace": "ns"},
        "involvedObject": {"kind": "Workload", "name": "wl1", "namespace": "ns"},
        "reason": "QuotaReserved",
        "message": "Quota reserved in ClusterQueue cq ",
        "type": "Normal",
        "firstTimestamp": _ago(minutes=10),
        "lastTimestamp": _ago(minutes=1),
        "count": 4,
        "source": {"component": "kueue-admission"},
    }
    columns = column_definitions(core_info, "v1")
    assert [c["name"] for c in columns] == [
        "Last Seen",
        "Type",
        "Reason",
        "Object",
        "Subobject",
        "Source",
        "Message",
        "First Seen",
        "Count",
        "Name",
    ]
    row = to_table(core_info, [core], "v1", now=NOW)["rows"][0]["cells"]
    assert row == [
        "60s",
        "Normal",
        "QuotaReserved",
        "workload/wl1",
        "",
        "kueue-admission",
        "Quota reserved in ClusterQueue cq",
        "10m",
        4,
        "wl1.abc",
    ]
    events_info = _info("events.k8s.io", "events", "v1")
    new_style = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "wl1.def", "namespace": "ns"},
        "eventTime": "2025-01-10T11:58:00.000000Z",
        "reportingController": "kueue-admission",
        "reportingInstance": "kueue-0",
        "action": "Admitted",
        "reason": "Admitted",
        "regarding": {"kind": "Workload", "name": "wl1"},
        "note": "Admitted by ClusterQueue cq",
        "type": "Normal",
    }
    row = to_table(events_info, [new_style], "v1", now=NOW)["rows"][0]["cells"]
    assert row == [
        "2m",
        "Normal",
        "Admitted",
        "workload/wl1",
        "",
        "kueue-admission, kueue-0",
        "Admitted by ClusterQueue cq",
        "2m",
        1,
        "wl1.def",
    ]


def test_other_builtin_tables() -> None:
    ns = {"metadata": {"name": "team-a", "creationTimestamp": _ago(hours=3)}, "status": {"phase": "Active"}}
    assert to_table(_info("", "namespaces", "v1"), [ns], "v1", now=NOW)["rows"][0]["cells"] == [
        "team-a",
        "Active",
        "3h",
    ]
    pc = {
        "metadata": {"name": "high", "creationTimestamp": _ago(days=9)},
        "value": 1000,
        "globalDefault": True,
        "preemptionPolicy": "Never",
    }
    pc_table = to_table(_info("scheduling.k8s.io", "priorityclasses", "v1"), [pc], "v1", now=NOW)
    assert [c["name"] for c in pc_table["columnDefinitions"]] == [
        "Name",
        "Value",
        "Global-Default",
        "Age",
        "PreemptionPolicy",
    ]
    assert pc_table["rows"][0]["cells"] == ["high", 1000, True, "9d", "Never"]
    lease = {
        "metadata": {"name": "kueue", "creationTimestamp": _ago(seconds=30)},
        "spec": {"holderIdentity": "pod-1"},
    }
    assert to_table(_info("coordination.k8s.io", "leases", "v1"), [lease], "v1", now=NOW)["rows"][0][
        "cells"
    ] == ["kueue", "pod-1", "30s"]
    pt = {
        "metadata": {"name": "ppt"},
        "template": {
            "metadata": {"labels": {"b": "2", "a": "1"}},
            "spec": {"containers": [{"name": "c", "image": "img"}]},
        },
    }
    assert to_table(_info("", "podtemplates", "v1"), [pt], "v1", now=NOW)["rows"][0]["cells"] == [
        "ppt",
        "c",
        "img",
        "a=1,b=2",
    ]


def test_unknown_age_and_label_formatting() -> None:
    ns = {"metadata": {"name": "x"}, "status": {}}
    assert to_table(_info("", "namespaces", "v1"), [ns], "v1", now=NOW)["rows"][0]["cells"] == [
        "x",
        "",
        "<unknown>",
    ]
    assert format_labels({}) == "<none>"
    assert format_label_selector(None) == "<none>"
    assert format_label_selector({}) == "<none>"
    assert format_label_selector({"matchExpressions": [{"key": "k", "operator": "DoesNotExist"}]}) == "!k"
