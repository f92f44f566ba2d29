"""v1beta1 ↔ v1beta2 conversion (upstream ``apis/kueue/v1beta1/*_conversion.go``) and typed encoding."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from pykueue.api import kueue as k
from pykueue.api.conversion import (
    ConversionError,
    DecodeError,
    convert,
    describe_validation_error,
    to_external,
    to_internal,
    topology_assignment_to_v1beta1,
    topology_assignment_to_v1beta2,
)

V1 = "kueue.x-k8s.io/v1beta1"
V2 = "kueue.x-k8s.io/v1beta2"


def obj(kind: str, version: str, body: str = "") -> dict[str, Any]:
    data = yaml.safe_load(body) or {}
    return {"apiVersion": version, "kind": kind, "metadata": {"name": "x"}, **data}


# --- v1beta1 → v1beta2 ----------------------------------------------------------------------------------

UP_CASES: list[tuple[str, str, str, dict[str, Any]]] = [
    (
        "cq cohort renamed",
        "ClusterQueue",
        "spec: {cohort: team, queueingStrategy: StrictFIFO}",
        {"spec": {"cohortName": "team", "queueingStrategy": "StrictFIFO"}},
    ),
    (
        "cq admissionChecks become strategy rules",
        "ClusterQueue",
        "spec: {admissionChecks: [a, b]}",
        {"spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": "a"}, {"name": "b"}]}}},
    ),
    (
        "cq admissionChecks replace an existing strategy",
        "ClusterQueue",
        "spec: {admissionChecksStrategy: {admissionChecks: [{name: c, onFlavors: [f]}]}, admissionChecks: [a]}",
        {"spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": "a"}]}}},
    ),
    (
        "cq empty admissionChecks keep the strategy",
        "ClusterQueue",
        "spec: {admissionChecks: [], admissionChecksStrategy: {admissionChecks: [{name: c}]}}",
        {"spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": "c"}]}}},
    ),
    (
        "cq Borrow and Preempt become MayStopSearch",
        "ClusterQueue",
        "spec: {flavorFungibility: {whenCanBorrow: Borrow, whenCanPreempt: Preempt}}",
        {
            "spec": {
                "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"}
            }
        },
    ),
    (
        "cq TryNextFlavor unchanged",
        "ClusterQueue",
        "spec: {flavorFungibility: {whenCanBorrow: TryNextFlavor}}",
        {"spec": {"flavorFungibility": {"whenCanBorrow": "TryNextFlavor"}}},
    ),
    (
        "cq pendingWorkloadsStatus dropped",
        "ClusterQueue",
        "status: {pendingWorkloads: 1, pendingWorkloadsStatus: {clusterQueuePendingWorkload: []}}",
        {"status": {"pendingWorkloads": 1}},
    ),
    (
        "cq status AFS dropped",
        "ClusterQueue",
        "status: {fairSharing: {weightedShare: 3, admissionFairSharingStatus: {consumedResources: {}}}}",
        {"status": {"fairSharing": {"weightedShare": 3}}},
    ),
    (
        "lq flavorUsage renamed and flavors dropped",
        "LocalQueue",
        "status: {flavors: [{name: f}], flavorUsage: [{name: f, resources: []}]}",
        {"status": {"flavorsUsage": [{"name": "f", "resources": []}]}},
    ),
    (
        "wl workload priority class source",
        "Workload",
        "spec: {priorityClassName: high, priorityClassSource: kueue.x-k8s.io/workloadpriorityclass, priority: 3}",
        {
            "spec": {
                "priorityClassRef": {
                    "group": "kueue.x-k8s.io",
                    "kind": "WorkloadPriorityClass",
                    "name": "high",
                },
                "priority": 3,
            }
        },
    ),
    (
        "wl pod priority class source",
        "Workload",
        "spec: {priorityClassSource: scheduling.k8s.io/priorityclass, priorityClassName: p}",
        {"spec": {"priorityClassRef": {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "p"}}},
    ),
    (
        "wl empty source drops the name",
        "Workload",
        "spec: {priorityClassName: p, priorityClassSource: '', priority: 1}",
        {"spec": {"priority": 1}},
    ),
    (
        "wl accumulated execution time renamed",
        "Workload",
        "status: {accumulatedPastExexcutionTimeSeconds: 5}",
        {"status": {"accumulatedPastExecutionTimeSeconds": 5}},
    ),
    (
        "ac retryDelayMinutes pruned",
        "AdmissionCheck",
        "spec: {controllerName: c, retryDelayMinutes: 15}",
        {"spec": {"controllerName": "c"}},
    ),
    (
        "mkc kubeConfig moves into clusterSource",
        "MultiKueueCluster",
        "spec: {kubeConfig: {location: secret, locationType: Secret}}",
        {"spec": {"clusterSource": {"kubeConfig": {"location": "secret", "locationType": "Secret"}}}},
    ),
    (
        "mkc empty location is not a kubeConfig",
        "MultiKueueCluster",
        "spec: {kubeConfig: {location: ''}, clusterProfileRef: {name: p}}",
        {"spec": {"clusterSource": {"clusterProfileRef": {"name": "p"}}}},
    ),
    (
        "rf only apiVersion",
        "ResourceFlavor",
        "spec: {nodeLabels: {a: b}}",
        {"spec": {"nodeLabels": {"a": "b"}}},
    ),
    (
        "prc only apiVersion",
        "ProvisioningRequestConfig",
        "spec: {provisioningClassName: c}",
        {"spec": {"provisioningClassName": "c"}},
    ),
    ("wpc only apiVersion", "WorkloadPriorityClass", "value: 10", {"value": 10}),
    (
        "topology only apiVersion",
        "Topology",
        "spec: {levels: [{nodeLabel: h}]}",
        {"spec": {"levels": [{"nodeLabel": "h"}]}},
    ),
    ("cohort only apiVersion", "Cohort", "spec: {parentName: root}", {"spec": {"parentName": "root"}}),
]


@pytest.mark.parametrize(
    ("kind", "body", "expected"), [c[1:] for c in UP_CASES], ids=[c[0] for c in UP_CASES]
)
def test_up_conversion(kind: str, body: str, expected: dict[str, Any]) -> None:
    assert convert(obj(kind, V1, body), V2) == {
        "apiVersion": V2,
        "kind": kind,
        "metadata": {"name": "x"},
        **expected,
    }


# --- v1beta2 → v1beta1 ----------------------------------------------------------------------------------

DOWN_CASES: list[tuple[str, str, str, dict[str, Any]]] = [
    ("cq cohortName renamed", "ClusterQueue", "spec: {cohortName: team}", {"spec": {"cohort": "team"}}),
    (
        "cq strategy kept as is",
        "ClusterQueue",
        "spec: {admissionChecksStrategy: {admissionChecks: [{name: a}]}}",
        {"spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": "a"}]}}},
    ),
    ("lq flavorsUsage renamed", "LocalQueue", "status: {flavorsUsage: []}", {"status": {"flavorUsage": []}}),
    (
        "wl WPC ref",
        "Workload",
        "spec: {priorityClassRef: {group: kueue.x-k8s.io, kind: WorkloadPriorityClass, name: h}}",
        {"spec": {"priorityClassName": "h", "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass"}},
    ),
    (
        "wl pod priority ref",
        "Workload",
        "spec: {priorityClassRef: {group: scheduling.k8s.io, kind: PriorityClass, name: p}}",
        {"spec": {"priorityClassName": "p", "priorityClassSource": "scheduling.k8s.io/priorityclass"}},
    ),
    (
        "wl invalid pair dropped",
        "Workload",
        "spec: {priorityClassRef: {group: scheduling.k8s.io, kind: Other, name: p}}",
        {"spec": {}},
    ),
    (
        "wl preemption gates dropped",
        "Workload",
        "spec: {preemptionGates: [{name: g}], podSets: [{name: main, topologyRequest: {required: r, "
        "podsetSliceRequiredTopologyConstraints: [x]}}]}\nstatus: {preemptionGates: [{name: g}], "
        "accumulatedPastExecutionTimeSeconds: 7}",
        {
            "spec": {"podSets": [{"name": "main", "topologyRequest": {"required": "r"}}]},
            "status": {"accumulatedPastExexcutionTimeSeconds": 7},
        },
    ),
    (
        "ac shows default retryDelayMinutes",
        "AdmissionCheck",
        "spec: {controllerName: c, parameters: {name: n}}",
        {"spec": {"controllerName": "c", "retryDelayMinutes": 15, "parameters": {"name": "n"}}},
    ),
    (
        "mkc clusterSource flattened",
        "MultiKueueCluster",
        "spec: {clusterSource: {kubeConfig: {location: s}}}",
        {"spec": {"kubeConfig": {"location": "s"}}},
    ),
    (
        "mkconfig quotaManagement dropped",
        "MultiKueueConfig",
        "spec: {clusters: [a], quotaManagement: Automated}",
        {"spec": {"clusters": ["a"]}},
    ),
]


@pytest.mark.parametrize(
    ("kind", "body", "expected"), [c[1:] for c in DOWN_CASES], ids=[c[0] for c in DOWN_CASES]
)
def test_down_conversion(kind: str, body: str, expected: dict[str, Any]) -> None:
    assert convert(obj(kind, V2, body), V1) == {
        "apiVersion": V1,
        "kind": kind,
        "metadata": {"name": "x"},
        **expected,
    }


def test_renamed_keys_keep_their_position() -> None:
    data = obj("ClusterQueue", V1, "spec: {namespaceSelector: {}, cohort: a, queueingStrategy: StrictFIFO}")
    assert list(convert(data, V2)["spec"]) == ["namespaceSelector", "cohortName", "queueingStrategy"]


def test_top_level_key_order() -> None:
    data = {
        "status": {"pendingWorkloads": 1},
        "spec": {},
        "metadata": {"name": "x"},
        "kind": "ClusterQueue",
        "apiVersion": V2,
    }
    assert list(convert(data, V2)) == ["apiVersion", "kind", "metadata", "spec", "status"]


def test_convert_does_not_mutate_input() -> None:
    data = obj("ClusterQueue", V1, "spec: {cohort: a}")
    convert(data, V2)
    assert data["spec"] == {"cohort": "a"}


# --- topology assignment re-encoding --------------------------------------------------------------------

TOPOLOGY_CASES = [
    (
        "common prefix and universal values",
        {
            "levels": ["block", "host"],
            "domains": [{"values": ["b1", "node-1"], "count": 4}, {"values": ["b1", "node-2"], "count": 2}],
        },
        {
            "levels": ["block", "host"],
            "slices": [
                {
                    "domainCount": 2,
                    "valuesPerLevel": [
                        {"universal": "b1"},
                        {"individual": {"prefix": "node-", "roots": ["1", "2"]}},
                    ],
                    "podCounts": {"individual": [4, 2]},
                }
            ],
        },
    ),
    (
        "prefix and suffix do not overlap",
        {"levels": ["h"], "domains": [{"values": ["ababa"], "count": 1}, {"values": ["aba"], "count": 1}]},
        {
            "levels": ["h"],
            "slices": [
                {
                    "domainCount": 2,
                    "valuesPerLevel": [{"individual": {"suffix": "aba", "roots": ["ab", ""]}}],
                    "podCounts": {"universal": 1},
                }
            ],
        },
    ),
    ("no domains", {"levels": ["h"], "domains": []}, {"levels": ["h"], "slices": []}),
]


@pytest.mark.parametrize(("v1", "v2"), [c[1:] for c in TOPOLOGY_CASES], ids=[c[0] for c in TOPOLOGY_CASES])
def test_topology_assignment_round_trip(v1: dict[str, Any], v2: dict[str, Any]) -> None:
    assert topology_assignment_to_v1beta2(v1) == v2
    assert topology_assignment_to_v1beta1(v2) == v1


# --- errors ------------------------------------------------------------------------------------------------

ERROR_CASES = [
    (
        "unknown kind",
        {"apiVersion": V2, "kind": "Queue", "metadata": {"name": "q"}},
        'no matches for kind "Queue" in version "kueue.x-k8s.io/v1beta2" (Queue "q")',
    ),
    (
        "unserved version",
        {"apiVersion": "kueue.x-k8s.io/v1alpha1", "kind": "Cohort", "metadata": {"name": "c"}},
        'no matches for kind "Cohort" in version "kueue.x-k8s.io/v1alpha1" (Cohort "c"); served versions: '
        "kueue.x-k8s.io/v1beta1, kueue.x-k8s.io/v1beta2",
    ),
    (
        "core kind wrong version",
        {"apiVersion": "v1beta1", "kind": "Namespace", "metadata": {"name": "n"}},
        'no matches for kind "Namespace" in version "v1beta1" (Namespace "n"); served versions: v1',
    ),
    (
        "missing kind",
        {"apiVersion": V2, "metadata": {"name": "n", "namespace": "ns"}},
        "<no kind> \"ns/n\": object has no 'kind'",
    ),
    (
        "missing apiVersion",
        {"kind": "ClusterQueue", "metadata": {"name": "n"}},
        "ClusterQueue \"n\": object has no 'apiVersion'",
    ),
]


@pytest.mark.parametrize(("data", "message"), [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES])
def test_conversion_errors(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConversionError) as info:
        to_internal(data)
    assert str(info.value) == message


def test_unmodelled_kind_is_a_clear_error() -> None:
    with pytest.raises(ConversionError, match=r"MultiKueueCluster .* not modelled by pykueue"):
        to_internal(obj("MultiKueueCluster", V2, "spec: {}"))


def test_decode_error_names_object_and_field() -> None:
    data = obj("Workload", V2, "spec: {podSets: [{count: many}]}")
    data["metadata"]["namespace"] = "ns"
    with pytest.raises(DecodeError) as info:
        to_internal(data)
    assert info.value.field == "spec.podSets[0].count"
    assert str(info.value) == (
        'Workload "ns/x": spec.podSets[0].count: Invalid value: "string": '
        'spec.podSets[0].count in body must be of type integer: "string"'
    )


DESCRIBE_CASES = [
    (
        "missing field",
        "Object missing required field `resources` - at `$.spec.resourceGroups[0].flavors[0]`",
        ("spec.resourceGroups[0].flavors[0].resources", "Required value"),
    ),
    (
        "unknown field",
        "Object contains unknown field `foo` - at `$.fairSharing`",
        ("fairSharing.foo", "field not declared in schema"),
    ),
    ("root unknown field", "Object contains unknown field `foo`", ("foo", "field not declared in schema")),
    (
        "union type",
        "Expected `str | int | float`, got `bool` - at `$.spec.x`",
        (
            "spec.x",
            'Invalid value: "boolean": spec.x in body must be of type string or integer or number: "boolean"',
        ),
    ),
    (
        "other",
        "Invalid RFC3339 encoded datetime - at `$.metadata.creationTimestamp`",
        ("metadata.creationTimestamp", "Invalid value: Invalid RFC3339 encoded datetime"),
    ),
]


@pytest.mark.parametrize(
    ("message", "expected"), [c[1:] for c in DESCRIBE_CASES], ids=[c[0] for c in DESCRIBE_CASES]
)
def test_describe_validation_error(message: str, expected: tuple[str, str]) -> None:
    assert describe_validation_error(message) == expected


# --- typed layer --------------------------------------------------------------------------------------------


def test_to_internal_returns_typed_object_and_original_version() -> None:
    typed, version = to_internal(obj("ClusterQueue", V1, "spec: {cohort: team}"))
    assert version == V1
    assert isinstance(typed, k.ClusterQueue)
    assert typed.spec.cohort_name == "team"
    assert typed.api_version == V2


@pytest.mark.parametrize(
    ("data", "typ"),
    [
        (
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns", "labels": {"team": "a"}}},
            k.Namespace,
        ),
        (
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "high"},
                "value": 1000,
            },
            k.PriorityClass,
        ),
    ],
    ids=["namespace", "priority-class"],
)
def test_core_kinds_round_trip_unchanged(data: dict[str, Any], typ: type[Any]) -> None:
    typed, version = to_internal(data)
    assert isinstance(typed, typ)
    assert version == data["apiVersion"]
    assert to_external(typed, version) == data


def test_to_external_key_order_and_empty_status() -> None:
    typed, _ = to_internal(obj("LocalQueue", V2, "spec: {clusterQueue: cq}"))
    out = to_external(typed, V2)
    assert out == {
        "apiVersion": V2,
        "kind": "LocalQueue",
        "metadata": {"name": "x"},
        "spec": {"clusterQueue": "cq"},
    }


def test_to_external_keeps_always_serialised_fields() -> None:
    typed, _ = to_internal(
        obj("Workload", V2, "spec: {podSets: [{template: {spec: {containers: []}}}]}\nstatus: {}")
    )
    out = to_external(typed)
    assert out["spec"]["podSets"] == [{"name": "main", "template": {"spec": {"containers": []}}, "count": 1}]
    assert "status" not in out


def test_to_external_status_counters_always_present() -> None:
    typed, _ = to_internal(obj("ClusterQueue", V2, "status: {conditions: []}\nspec: {}"))
    assert "status" not in to_external(typed)
    typed, _ = to_internal(obj("ClusterQueue", V2, "status: {pendingWorkloads: 2}"))
    assert to_external(typed)["status"] == {
        "pendingWorkloads": 2,
        "reservingWorkloads": 0,
        "admittedWorkloads": 0,
    }


def test_to_external_times_are_rfc3339_seconds() -> None:
    typed, _ = to_internal(
        obj("ResourceFlavor", V2, "metadata: {name: x, creationTimestamp: '2024-01-02T03:04:05.678Z'}")
    )
    assert to_external(typed)["metadata"]["creationTimestamp"] == "2024-01-02T03:04:05Z"


def test_round_trip_v1beta1_cluster_queue() -> None:
    data = obj(
        "ClusterQueue",
        V1,
        """
spec:
  namespaceSelector: {}
  cohort: team-ab
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: 9}
      - {name: memory, nominalQuota: 36Gi}
""",
    )
    typed, version = to_internal(data)
    assert to_external(typed, version) == data


def test_to_external_of_the_internal_version_shares_nothing_and_copies_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    # The encoding is built fresh: converting it to the version it already has used to deep-copy
    # it once more (every admission and queue status write of the controllers went through it).
    body = """
spec:
  queueName: q
  podSets:
  - name: main
    count: 1
    template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}}
status:
  conditions: [{type: QuotaReserved, status: "True", reason: R, message: m, lastTransitionTime: "2026-01-01T00:00:00Z"}]
"""
    typed, _ = to_internal(obj("Workload", V2, body))
    expected = convert(to_external(typed), V2)  # through convert's copy: the same content

    def no_copy(*_: Any, **__: Any) -> Any:
        raise AssertionError("deep copy of a fresh encoding")

    monkeypatch.setattr(copy, "deepcopy", no_copy)
    out = to_external(typed)
    assert out == expected and list(out) == list(expected)
    # Nothing in it is the typed object's: mutating it leaves the typed object as it was.
    out["spec"]["podSets"][0]["template"]["metadata"]["labels"]["a"] = "changed"
    out["status"]["conditions"][0]["reason"] = "changed"
    again = to_external(typed)
    assert again["spec"]["podSets"][0]["template"]["metadata"]["labels"] == {"a": "b"}
    assert again["status"]["conditions"][0]["reason"] == "R"


def test_convert_of_a_workload_shares_nothing_with_its_input() -> None:
    wl = obj(
        "Workload", V2,
        "spec: {queueName: q, podSets: [{name: main, count: 1, template: {spec: {containers: [{name: c}]}}}]}",
    )  # fmt: skip
    out = convert(wl, V2)
    out["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["name"] = "changed"
    assert wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["name"] == "c"
