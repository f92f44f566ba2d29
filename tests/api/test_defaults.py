"""CRD schema defaults (upstream ``apis/kueue/v1beta2``) and the mutating webhooks (``pkg/webhooks/``)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from pykueue.api import kueue as k
from pykueue.api.conversion import to_external, to_internal
from pykueue.api.defaults import apply_defaults


def defaulted(text: str) -> dict[str, Any]:
    """Manifest → typed → defaults → external dict (what the API server would persist)."""
    typed, version = to_internal(yaml.safe_load(text))
    apply_defaults(typed)
    return to_external(typed, version)


def manifest(kind: str, body: str, version: str = "kueue.x-k8s.io/v1beta2") -> str:
    return f"apiVersion: {version}\nkind: {kind}\nmetadata: {{name: x, namespace: ns}}\n{body}"


CQ_DEFAULTS = {
    "queueingStrategy": "BestEffortFIFO",
    "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
    "preemption": {
        "reclaimWithinCohort": "Never",
        "borrowWithinCohort": {"policy": "Never"},
        "withinClusterQueue": "Never",
    },
    "stopPolicy": "None",
}

CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("cluster queue empty spec", manifest("ClusterQueue", "spec: {}"), CQ_DEFAULTS),
    (
        "cluster queue keeps explicit values and fills the rest",
        manifest(
            "ClusterQueue",
            "spec: {queueingStrategy: StrictFIFO, stopPolicy: Hold, flavorFungibility: {whenCanBorrow: TryNextFlavor}, "
            "preemption: {reclaimWithinCohort: Any, borrowWithinCohort: {maxPriorityThreshold: 5}}}",
        ),
        {
            "queueingStrategy": "StrictFIFO",
            "flavorFungibility": {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"},
            "preemption": {
                "reclaimWithinCohort": "Any",
                "withinClusterQueue": "Never",
                "borrowWithinCohort": {"policy": "Never", "maxPriorityThreshold": 5},
            },
            "stopPolicy": "Hold",
        },
    ),
    (
        "cluster queue nil namespaceSelector stays nil; fairSharing weight defaults to 1",
        manifest("ClusterQueue", "spec: {fairSharing: {}}"),
        {**CQ_DEFAULTS, "fairSharing": {"weight": 1}},
    ),
    (
        "cluster queue empty namespaceSelector is kept",
        manifest("ClusterQueue", "spec: {namespaceSelector: {}}"),
        {**CQ_DEFAULTS, "namespaceSelector": {}},
    ),
    (
        "local queue stopPolicy",
        manifest("LocalQueue", "spec: {clusterQueue: cq}"),
        {"clusterQueue": "cq", "stopPolicy": "None"},
    ),
    (
        "local queue fairSharing weight",
        manifest("LocalQueue", "spec: {clusterQueue: cq, fairSharing: {weight: '2'}}"),
        {"clusterQueue": "cq", "stopPolicy": "None", "fairSharing": {"weight": "2"}},
    ),
    (
        "cohort fairSharing weight",
        manifest("Cohort", "spec: {fairSharing: {}}"),
        {"fairSharing": {"weight": 1}},
    ),
    (
        "workload pod set name, count and active",
        manifest("Workload", "spec: {podSets: [{template: {spec: {containers: []}}}]}"),
        {"podSets": [{"name": "main", "template": {"spec": {"containers": []}}, "count": 1}], "active": True},
    ),
    (
        "workload keeps active false",
        manifest(
            "Workload",
            "spec: {active: false, podSets: [{name: w, count: 3, template: {spec: {containers: []}}}]}",
        ),
        {"podSets": [{"name": "w", "template": {"spec": {"containers": []}}, "count": 3}], "active": False},
    ),
    (
        "provisioning request config retry strategy",
        manifest("ProvisioningRequestConfig", "spec: {provisioningClassName: c}"),
        {
            "provisioningClassName": "c",
            "retryStrategy": {"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800},
        },
    ),
    (
        "provisioning request config partial retry strategy",
        manifest(
            "ProvisioningRequestConfig",
            "spec: {provisioningClassName: c, retryStrategy: {backoffLimitCount: 0}}",
        ),
        {
            "provisioningClassName": "c",
            "retryStrategy": {"backoffLimitCount": 0, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800},
        },
    ),
    (
        "resource flavor has no defaults",
        manifest("ResourceFlavor", "spec: {nodeLabels: {a: b}}"),
        {"nodeLabels": {"a": "b"}},
    ),
    (
        "v1beta1 cluster queue defaults read back in v1beta1",
        manifest("ClusterQueue", "spec: {cohort: c}", version="kueue.x-k8s.io/v1beta1"),
        {"cohort": "c", **CQ_DEFAULTS},
    ),
]


@pytest.mark.parametrize(("text", "expected_spec"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_schema_defaults(text: str, expected_spec: dict[str, Any]) -> None:
    assert defaulted(text)["spec"] == expected_spec


def test_admission_pod_set_assignment_name_defaults_to_main() -> None:
    typed, _ = to_internal(
        yaml.safe_load(
            manifest("Workload", "status: {admission: {clusterQueue: cq, podSetAssignments: [{name: ''}]}}")
        )
    )
    apply_defaults(typed)
    assert isinstance(typed, k.Workload) and typed.status.admission is not None
    assert typed.status.admission.pod_set_assignments[0].name == "main"


def test_namespace_gets_its_name_label() -> None:
    typed, _ = to_internal(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": {"t": "a"}}}
    )
    apply_defaults(typed)
    assert typed.metadata.labels == {"t": "a", "kubernetes.io/metadata.name": "team-a"}


def test_priority_class_preemption_policy() -> None:
    typed, _ = to_internal(
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "p"}, "value": 5}
    )
    apply_defaults(typed)
    assert isinstance(typed, k.PriorityClass) and typed.preemption_policy == "PreemptLowerPriority"


def test_defaults_are_idempotent() -> None:
    first = defaulted(manifest("ClusterQueue", "spec: {}"))
    typed, _ = to_internal(first)
    apply_defaults(typed)
    assert to_external(typed) == first
