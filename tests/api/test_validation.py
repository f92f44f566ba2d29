"""Validation rules of upstream's API (CRD schema + CEL, then ``pkg/webhooks/``)."""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from pykueue.api import kueue as k
from pykueue.api.conversion import to_internal
from pykueue.api.defaults import apply_defaults
from pykueue.api.feature_gates import FeatureGates
from pykueue.api.manifests import load_manifests, parse_object
from pykueue.api.validation import (
    INVALID,
    NOT_SUPPORTED,
    OMIT,
    TOO_MANY,
    FieldError,
    Raw,
    ValidationFailed,
    _immutable_pod_sets,
    _webhook_resource_list,
    aggregate,
    validate,
    validate_annotations,
    validate_labels,
    validate_or_raise,
)
from pykueue.kube.validation import is_qualified_name, is_valid_label_value

SEEDS = Path("/work/shared/seeds")
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
CEL_SKIPPED = (
    "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)


def typed(text: str) -> k.KueueObject:
    obj, _ = to_internal(yaml.safe_load(text))
    apply_defaults(obj)
    return obj


def errors(text: str, old: str | None = None, gates: FeatureGates | None = None) -> list[str]:
    kwargs: dict[str, Any] = {"gates": gates} if gates else {}
    written = yaml.safe_load(text)  # as the API server has it: what the CEL rules' has() reads
    return [str(e) for e in validate(typed(text), typed(old) if old else None, written=written, **kwargs)]


def cq(spec: str, name: str = "cq") -> str:
    return f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: {name}\nspec:\n{spec}"


def one_group(resources: str, covered: str = "[cpu]", extra: str = "") -> str:
    return cq(
        f"""  {extra}
  resourceGroups:
  - coveredResources: {covered}
    flavors:
    - name: default
      resources:
{resources}"""
    )


# --- FieldError rendering ---------------------------------------------------------------------------

RENDER_CASES = [
    ("string value is quoted", FieldError("spec.x", INVALID, "a", "bad"), 'spec.x: Invalid value: "a": bad'),
    ("int value is bare", FieldError("spec.x", INVALID, 3, "bad"), "spec.x: Invalid value: 3: bad"),
    ("bool value", FieldError("spec.x", INVALID, True, "bad"), "spec.x: Invalid value: true: bad"),
    (
        "float value like Go %v",
        FieldError("spec.x", INVALID, 1e6, "bad"),
        "spec.x: Invalid value: 1e+06: bad",
    ),
    ("None renders null", FieldError("<nil>", INVALID, None, "x"), '<nil>: Invalid value: "null": x'),
    (
        "raw value unquoted",
        FieldError("spec.x", INVALID, Raw("1Gi"), "bad"),
        "spec.x: Invalid value: 1Gi: bad",
    ),
    ("omitted value", FieldError("spec.x", INVALID, OMIT, "bad"), "spec.x: Invalid value: bad"),
    ("required has no value", FieldError("spec.x", "Required", "ignored", "d"), "spec.x: Required value: d"),
    (
        "too many",
        FieldError("spec.x", TOO_MANY, 17, "must have at most 16 items"),
        "spec.x: Too many: 17: must have at most 16 items",
    ),
    (
        "unsupported",
        FieldError("spec.x", NOT_SUPPORTED, "X", 'supported values: "A"'),
        'spec.x: Unsupported value: "X": supported values: "A"',
    ),
]


@pytest.mark.parametrize(
    ("error", "expected"), [c[1:] for c in RENDER_CASES], ids=[c[0] for c in RENDER_CASES]
)
def test_field_error_rendering(error: FieldError, expected: str) -> None:
    assert str(error) == expected


def test_aggregate_single_and_many_and_dedup() -> None:
    a = FieldError("a", INVALID, 1, "x")
    b = FieldError("b", INVALID, 2, "y")
    assert aggregate([a]) == "a: Invalid value: 1: x"
    assert aggregate([a, b, a]) == "[a: Invalid value: 1: x, b: Invalid value: 2: y]"


# --- ClusterQueue: create ------------------------------------------------------------------------------

CPU9 = "      - name: cpu\n        nominalQuota: 9\n"

CQ_CASES: list[tuple[str, str, list[str]]] = [
    ("valid minimal", one_group(CPU9), []),
    ("valid no resource groups", cq("  stopPolicy: Hold"), []),
    (
        "flavor lists fewer resources than coveredResources",
        one_group(CPU9, covered="[cpu, memory]", extra="cohortName: team"),
        [
            'spec.resourceGroups[0]: Invalid value: flavors must have the same number of resources as the coveredResources'
        ],
    ),
    (
        "resource name must match coveredResources at same index",
        one_group(
            "      - name: memory\n        nominalQuota: 1\n      - name: cpu\n        nominalQuota: 1\n",
            covered="[cpu, memory]",
        ),
        [
            'spec.resourceGroups[0].flavors[0].resources[0].name: Invalid value: "memory": must match the name in coveredResources',
            'spec.resourceGroups[0].flavors[0].resources[1].name: Invalid value: "cpu": must match the name in coveredResources',
        ],
    ),
    (
        "negative nominal quota",
        one_group("      - name: cpu\n        nominalQuota: -1\n"),
        [
            'spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: Invalid value: "-1": must be greater than or equal to 0'
        ],
    ),
    (
        "invalid quantity string",
        one_group("      - name: cpu\n        nominalQuota: 1x\n"),
        [
            'spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: Invalid value: "1x": '
            "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota in body should match "
            r"'^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$'"
        ],
    ),
    (
        "fractional number quota is not int-or-string",
        one_group("      - name: cpu\n        nominalQuota: 0.5\n"),
        [
            'spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: Invalid value: "number": '
            'spec.resourceGroups[0].flavors[0].resources[0].nominalQuota in body must be of type integer,string: "number"',
            CEL_SKIPPED,
        ],
    ),
    (
        "borrowingLimit without cohort (CEL)",
        one_group("      - name: cpu\n        nominalQuota: 9\n        borrowingLimit: 1\n"),
        ['spec: Invalid value: borrowingLimit must be nil when cohort is empty'],
    ),
    (
        "lendingLimit without cohort (webhook)",
        one_group("      - name: cpu\n        nominalQuota: 9\n        lendingLimit: 1\n"),
        [
            'spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: "1": must be nil when cohort is empty'
        ],
    ),
    (
        "lendingLimit above nominalQuota",
        one_group(
            "      - name: cpu\n        nominalQuota: 9\n        lendingLimit: 10\n", extra="cohortName: team"
        ),
        [
            'spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: "10": '
            "must be less than or equal to the nominalQuota"
        ],
    ),
    (
        "negative borrowing limit",
        one_group(
            "      - name: cpu\n        nominalQuota: 9\n        borrowingLimit: -1\n",
            extra="cohortName: team",
        ),
        [
            'spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit: Invalid value: "-1": must be greater than or equal to 0'
        ],
    ),
    (
        "cohortName pattern",
        one_group(CPU9, extra="cohortName: Team_A"),
        [
            f"spec.cohortName: Invalid value: \"Team_A\": spec.cohortName in body should match '{DNS_SUBDOMAIN}'"
        ],
    ),
    (
        "cohortName too long",
        one_group(CPU9, extra="cohortName: " + "a" * 254),
        ["spec.cohortName: Too long: may not be more than 253 bytes", CEL_SKIPPED],
    ),
    (
        "queueingStrategy enum",
        one_group(CPU9, extra="queueingStrategy: FIFO"),
        [
            'spec.queueingStrategy: Unsupported value: "FIFO": supported values: "StrictFIFO", "BestEffortFIFO"',
            CEL_SKIPPED,
        ],
    ),
    (
        "stopPolicy enum",
        one_group(CPU9, extra="stopPolicy: Pause"),
        [
            'spec.stopPolicy: Unsupported value: "Pause": supported values: "None", "Hold", "HoldAndDrain"',
            CEL_SKIPPED,
        ],
    ),
    (
        "whenCanBorrow enum rejects v1beta1 Borrow in v1beta2",
        one_group(CPU9, extra="flavorFungibility: {whenCanBorrow: Borrow}"),
        [
            'spec.flavorFungibility.whenCanBorrow: Unsupported value: "Borrow": supported values: "MayStopSearch", "TryNextFlavor"',
            CEL_SKIPPED,
        ],
    ),
    (
        "preference requires both TryNextFlavor",
        one_group(
            CPU9,
            extra="flavorFungibility: {whenCanPreempt: MayStopSearch, preference: PreemptionOverBorrowing}",
        ),
        [
            'spec.flavorFungibility: Invalid value: preference can only be set when both whenCanBorrow and '
            "whenCanPreempt are TryNextFlavor"
        ],
    ),
    (
        "preference valid when both TryNextFlavor",
        one_group(
            CPU9,
            extra="flavorFungibility: {whenCanBorrow: TryNextFlavor, whenCanPreempt: TryNextFlavor, preference: PreemptionOverBorrowing}",
        ),
        [],
    ),
    (
        "reclaimWithinCohort Never with borrowWithinCohort",
        one_group(CPU9, extra="preemption: {borrowWithinCohort: {policy: LowerPriority}}"),
        [
            'spec.preemption: Invalid value: reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never'
        ],
    ),
    (
        "withinClusterQueue enum",
        one_group(CPU9, extra="preemption: {withinClusterQueue: Any}"),
        [
            'spec.preemption.withinClusterQueue: Unsupported value: "Any": supported values: "Never", "LowerPriority", '
            '"LowerOrNewerEqualPriority"',
            CEL_SKIPPED,
        ],
    ),
    (
        "fair sharing weight too small",
        one_group(CPU9, extra="fairSharing: {weight: 1n}"),
        ['spec.fairSharing: Invalid value: "1n": When not 0, weight must be > 10e-9'],
    ),
    ("fair sharing weight zero allowed", one_group(CPU9, extra="fairSharing: {weight: 0}"), []),
    (
        "fair sharing weight negative",
        one_group(CPU9, extra='fairSharing: {weight: "-1"}'),
        ['spec.fairSharing: Invalid value: "-1": must be greater than or equal to 0'],
    ),
    (
        "admissionScope requires mode",
        one_group(CPU9, extra="admissionScope: {}"),
        ["spec.admissionScope.admissionMode: Required value", CEL_SKIPPED],
    ),
    (
        "onFlavors must be ClusterQueue flavors",
        one_group(
            CPU9, extra="admissionChecksStrategy: {admissionChecks: [{name: ac, onFlavors: [default, spot]}]}"
        ),
        [
            'spec.admissionChecksStrategy.admissionChecks[0].onFlavors[1]: Unsupported value: "spot": supported values: "default"'
        ],
    ),
    (
        "namespaceSelector operator",
        one_group(CPU9, extra="namespaceSelector: {matchExpressions: [{key: team, operator: Bogus}]}"),
        [
            'spec.namespaceSelector.matchExpressions[0].operator: Invalid value: "Bogus": not a valid selector operator'
        ],
    ),
    (
        "covered resource must be a qualified name",
        one_group("      - name: bad/x/y\n        nominalQuota: 1\n", covered="['bad/x/y']"),
        [
            'spec.resourceGroups[0].coveredResources[0]: Invalid value: "bad/x/y": a qualified name must consist of '
            "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
            "'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') "
            "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ],
    ),
    (
        "duplicate flavor name inside a group (list map)",
        cq(
            "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n    - {name: f, resources: [{name: cpu, nominalQuota: 1}]}\n"
            "    - {name: f, resources: [{name: cpu, nominalQuota: 1}]}"
        ),
        ['spec.resourceGroups[0].flavors[1]: Duplicate value: {"name":"f"}'],
    ),
    (
        "resource and flavor unique across groups",
        cq(
            "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n    - {name: f, resources: [{name: cpu, nominalQuota: 1}]}\n"
            "  - coveredResources: [cpu]\n    flavors:\n    - {name: f, resources: [{name: cpu, nominalQuota: 1}]}"
        ),
        [
            'spec.resourceGroups[1].coveredResources[0]: Duplicate value: "cpu"',
            'spec.resourceGroups[1].flavors[0].name: Duplicate value: "f"',
        ],
    ),
    (
        "coveredResources cannot be empty",
        cq(
            "  resourceGroups:\n  - coveredResources: []\n    flavors:\n    - {name: f, resources: [{name: cpu, nominalQuota: 1}]}"
        ),
        [
            "spec.resourceGroups[0].coveredResources: Invalid value: 0: "
            "spec.resourceGroups[0].coveredResources in body should have at least 1 items",
            'spec.resourceGroups[0]: Invalid value: flavors must have the same number of resources as the coveredResources',
        ],
    ),
]


@pytest.mark.parametrize(("manifest", "expected"), [c[1:] for c in CQ_CASES], ids=[c[0] for c in CQ_CASES])
def test_cluster_queue_create(manifest: str, expected: list[str]) -> None:
    assert errors(manifest) == expected


def _many_groups(groups: int, flavors: int, resources: int) -> str:
    lines = ["  resourceGroups:"]
    for g in range(groups):
        names = [f"r{g}-{r}" for r in range(resources)]
        lines.append(f"  - coveredResources: [{', '.join(names)}]")
        lines.append("    flavors:")
        for f in range(flavors):
            quotas = ", ".join(f"{{name: {n}, nominalQuota: 1}}" for n in names)
            lines.append(f"    - {{name: f{g}-{f}, resources: [{quotas}]}}")
    return cq("\n".join(lines))


COUNT_CASES = [
    (
        "17 resource groups",
        _many_groups(17, 1, 1),
        ["spec.resourceGroups: Too many: 17: must have at most 16 items", CEL_SKIPPED],
    ),
    (
        "65 flavors in a group",
        _many_groups(1, 65, 1),
        ["spec.resourceGroups[0].flavors: Too many: 65: must have at most 64 items", CEL_SKIPPED],
    ),
    (
        "more than 256 flavors in total",
        _many_groups(5, 52, 1),
        [
            "spec.resourceGroups: Invalid value: 260: total number of flavors across all resourceGroups must be ≤ 256, got 260"
        ],
    ),
    (
        "more than 256 covered resources in total",
        _many_groups(5, 1, 52),
        [
            "spec.resourceGroups: Invalid value: 260: total number of covered resources across all resourceGroups "
            "must be ≤ 256, got 260"
        ],
    ),
    (
        "more than 512 flavor-resource combinations",
        _many_groups(1, 9, 64),
        [
            "spec.resourceGroups[0]: Invalid value: 576: number of flavor-resource combinations in a resourceGroup "
            "must be ≤ 512, got 576"
        ],
    ),
]


@pytest.mark.parametrize(
    ("manifest", "expected"), [c[1:] for c in COUNT_CASES], ids=[c[0] for c in COUNT_CASES]
)
def test_cluster_queue_limits(manifest: str, expected: list[str]) -> None:
    assert errors(manifest) == expected


ON_FLAVORS_OLD = one_group(
    CPU9, extra="admissionChecksStrategy: {admissionChecks: [{name: ac, onFlavors: [gone]}]}"
)
ON_FLAVORS_NEW = one_group(
    CPU9,
    extra="admissionChecksStrategy: {admissionChecks: [{name: ac, onFlavors: [gone]}]}\n  stopPolicy: Hold",
)


def test_cluster_queue_update_tolerates_legacy_on_flavors() -> None:
    assert errors(ON_FLAVORS_NEW, old=ON_FLAVORS_OLD) == []


def test_cluster_queue_update_rejects_legacy_on_flavors_with_gate() -> None:
    gates = FeatureGates({"RejectUpdatesToCQWithInvalidOnFlavors": True})
    assert errors(ON_FLAVORS_NEW, old=ON_FLAVORS_OLD, gates=gates) == [
        'spec.admissionChecksStrategy.admissionChecks[0].onFlavors[0]: Unsupported value: "gone": supported values: "default"'
    ]


def test_cluster_queue_concurrent_admission_policy_immutable() -> None:
    old = one_group(CPU9, extra="concurrentAdmissionPolicy: {migration: {mode: TryPreferredFlavors}}")
    new = one_group(CPU9, extra="concurrentAdmissionPolicy: {migration: {mode: RetainFirstAdmission}}")
    assert errors(new, old=old) == [
        'spec.concurrentAdmissionPolicy: Invalid value: {"migration":{"mode":"RetainFirstAdmission"}}: field is immutable'
    ]


# --- Cohort ------------------------------------------------------------------------------------------


def cohort(spec: str) -> str:
    return f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata:\n  name: co\nspec:\n{spec}"


COHORT_GROUP = "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n    - name: f\n      resources:\n      - name: cpu\n        nominalQuota: 1\n"
COHORT_CASES = [
    ("valid", cohort(COHORT_GROUP), []),
    (
        "limits need a parent",
        cohort(COHORT_GROUP + "        borrowingLimit: 1\n        lendingLimit: 1\n"),
        [
            'spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit: Invalid value: "1": must be nil when parent is empty',
            'spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: "1": must be nil when parent is empty',
        ],
    ),
    (
        "lendingLimit may exceed nominal for cohorts",
        cohort("  parentName: root\n" + COHORT_GROUP + "        lendingLimit: 5\n"),
        [],
    ),
    (
        "parentName pattern",
        cohort("  parentName: Root"),
        [f"spec.parentName: Invalid value: \"Root\": spec.parentName in body should match '{DNS_SUBDOMAIN}'"],
    ),
    (
        "weight too small",
        cohort("  fairSharing: {weight: 0.5n}"),
        ['spec.fairSharing: Invalid value: "1n": When not 0, weight must be > 10e-9'],
    ),
]


@pytest.mark.parametrize(
    ("manifest", "expected"), [c[1:] for c in COHORT_CASES], ids=[c[0] for c in COHORT_CASES]
)
def test_cohort(manifest: str, expected: list[str]) -> None:
    assert errors(manifest) == expected


# --- ResourceFlavor ------------------------------------------------------------------------------------


def rf(spec: str) -> str:
    return f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: rf\nspec:\n{spec}"


RF_CASES = [
    (
        "valid",
        rf("  nodeLabels: {zone: a}\n  tolerations: [{key: k, operator: Exists, effect: NoSchedule}]"),
        [],
    ),
    (
        # ``!has(self.topologyName) || self.nodeLabels.size() >= 1`` selects an absent field:
        # kube-apiserver reports the evaluation error, with the schema type as the value
        "topology needs node labels",
        rf("  topologyName: topo"),
        [
            'spec: Invalid value: "object": no such key: nodeLabels evaluating rule: at least one '
            "nodeLabel is required when topology is set"
        ],
    ),
    (
        "topology with node labels written empty",
        rf("  topologyName: topo\n  nodeLabels: {}"),
        ["spec: Invalid value: at least one nodeLabel is required when topology is set"],
    ),
    (
        "toleration with neither key nor operator",
        rf("  tolerations: [{effect: NoSchedule}]"),
        [
            'spec.tolerations: Invalid value: "array": no such key: operator evaluating rule: operator '
            "must be Exists when 'key' is empty, which means 'match all values and all keys'"
        ],
    ),
    (
        # ``self.all(...)``: an item the rule is false for wins over one it cannot evaluate
        "toleration rule false for one item and not evaluable for another",
        rf("  tolerations: [{effect: NoSchedule}, {operator: Equal, value: x}]"),
        [
            "spec.tolerations: Invalid value: operator must be Exists when 'key' is empty, which means "
            "'match all values and all keys'"
        ],
    ),
    (
        "toleration written with an empty key has one",
        rf("  tolerations: [{key: '', operator: Equal, effect: NoSchedule}]"),
        [],
    ),
    (
        "toleration seconds without effect",
        rf("  tolerations: [{key: k, tolerationSeconds: 5}]"),
        [
            'spec.tolerations: Invalid value: "array": no such key: effect evaluating rule: effect must '
            "be 'NoExecute' when 'tolerationSeconds' is set"
        ],
    ),
    (
        "too many node labels",
        rf("  nodeLabels: {" + ", ".join(f"k{i}: v" for i in range(9)) + "}"),
        ["spec.nodeLabels: Too many: 9: must have at most 8 items", CEL_SKIPPED],
    ),
    (
        "taint effect",
        rf("  nodeTaints: [{key: k, effect: Bad}]"),
        [
            "spec.nodeTaints: Invalid value: supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'"
        ],
    ),
    (
        # pkg/webhooks/resourceflavor_webhook.go validateNodeTaints: field.Duplicate(idxPath, currTaint)
        # renders the corev1.Taint with json.Marshal, in struct order (key, value, effect).
        "duplicate taint key and effect",
        rf("  nodeTaints: [{key: k, value: a, effect: NoSchedule}, {key: k, value: b, effect: NoSchedule}]"),
        [
            'spec.nodeTaints[1]: Duplicate value: {"key":"k","value":"b","effect":"NoSchedule"}: '
            "taints must be unique by key and effect pair"
        ],
    ),
    (
        "toleration without key needs Exists",
        rf("  tolerations: [{operator: Equal, value: x}]"),
        [
            "spec.tolerations: Invalid value: operator must be Exists when 'key' is empty, which means 'match all values and all keys'"
        ],
    ),
    (
        "toleration seconds needs NoExecute",
        rf("  tolerations: [{key: k, operator: Exists, effect: NoSchedule, tolerationSeconds: 5}]"),
        [
            "spec.tolerations: Invalid value: effect must be 'NoExecute' when 'tolerationSeconds' is set"
        ],
    ),
    (
        "toleration value with Exists",
        rf("  tolerations: [{key: k, operator: Exists, value: v}]"),
        ["spec.tolerations: Invalid value: a value must be empty when 'operator' is 'Exists'"],
    ),
    (
        "node label key invalid",
        rf("  nodeLabels: {'-bad': v}"),
        [
            "spec.nodeLabels: Invalid value: \"-bad\": name part must consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
            "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        ],
    ),
]


@pytest.mark.parametrize(("manifest", "expected"), [c[1:] for c in RF_CASES], ids=[c[0] for c in RF_CASES])
def test_resource_flavor(manifest: str, expected: list[str]) -> None:
    assert errors(manifest) == expected


def test_resource_flavor_topology_name_immutable() -> None:
    old = rf("  nodeLabels: {a: b}\n  topologyName: t1")
    new = rf("  nodeLabels: {a: b}\n  topologyName: t2")
    assert errors(new, old=old) == [
        'spec: Invalid value: topologyName is immutable when topologyName is set'
    ]
    assert errors(new, old=rf("  nodeLabels: {a: b}")) == []


# --- LocalQueue, AdmissionCheck, ProvisioningRequestConfig, WorkloadPriorityClass ---------------------


def lq(spec: str) -> str:
    return f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n  name: lq\n  namespace: ns\nspec:\n{spec}"


def ac(spec: str) -> str:
    return f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: AdmissionCheck\nmetadata:\n  name: ac\nspec:\n{spec}"


def prc(spec: str) -> str:
    return f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: ProvisioningRequestConfig\nmetadata:\n  name: p\nspec:\n{spec}"


MISC_CASES = [
    ("local queue valid", lq("  clusterQueue: cq"), []),
    (
        "local queue clusterQueue pattern",
        lq("  clusterQueue: CQ"),
        [
            f"spec.clusterQueue: Invalid value: \"CQ\": spec.clusterQueue in body should match '{DNS_SUBDOMAIN}'"
        ],
    ),
    (
        "local queue stopPolicy",
        lq("  clusterQueue: cq\n  stopPolicy: Stop"),
        [
            'spec.stopPolicy: Unsupported value: "Stop": supported values: "None", "Hold", "HoldAndDrain"',
            CEL_SKIPPED,
        ],
    ),
    ("admission check valid", ac("  controllerName: kueue.x-k8s.io/provisioning-request"), []),
    (
        "admission check empty controller name",
        ac('  controllerName: ""'),
        [
            'spec.controllerName: Invalid value: "": spec.controllerName in body should be at least 1 chars long'
        ],
    ),
    (
        "admission check parameters kind",
        ac("  controllerName: c\n  parameters: {apiGroup: g.io, kind: 1Kind, name: n}"),
        [
            'spec.parameters.kind: Invalid value: "1Kind": spec.parameters.kind in body should match '
            "'^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$'"
        ],
    ),
    ("prc valid", prc("  provisioningClassName: check-capacity.autoscaling.x-k8s.io"), []),
    (
        "prc merge policy",
        prc("  provisioningClassName: c\n  podSetMergePolicy: Any"),
        [
            'spec.podSetMergePolicy: Unsupported value: "Any": supported values: "IdenticalPodTemplates", '
            '"IdenticalWorkloadSchedulingRequirements"'
        ],
    ),
    (
        "prc duplicate managed resource",
        prc("  provisioningClassName: c\n  managedResources: [gpu, gpu]"),
        ['spec.managedResources[1]: Duplicate value: "gpu"'],
    ),
    (
        "workload priority class description length",
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: p}\nvalue: 1\ndescription: "
        + "x" * 2049,
        ["description: Too long: may not be more than 2048 bytes"],
    ),
    (
        "object name must be a DNS subdomain",
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: Bad_Name}",
        [
            'metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case '
            "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
            "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        ],
    ),
    (
        "object name required",
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {}",
        ["metadata.name: Required value: name or generateName is required", CEL_SKIPPED],
    ),
]


@pytest.mark.parametrize(
    ("manifest", "expected"), [c[1:] for c in MISC_CASES], ids=[c[0] for c in MISC_CASES]
)
def test_other_kinds(manifest: str, expected: list[str]) -> None:
    assert errors(manifest) == expected


UPDATE_CASES = [
    (
        "local queue clusterQueue immutable",
        lq("  clusterQueue: other"),
        lq("  clusterQueue: cq"),
        ['spec.clusterQueue: Invalid value: "other": field is immutable'],
    ),
    (
        "admission check controllerName immutable",
        ac("  controllerName: b"),
        ac("  controllerName: a"),
        ['spec.controllerName: Invalid value: "b": field is immutable'],
    ),
]


@pytest.mark.parametrize(
    ("new", "old", "expected"), [c[1:] for c in UPDATE_CASES], ids=[c[0] for c in UPDATE_CASES]
)
def test_immutable_fields(new: str, old: str, expected: list[str]) -> None:
    assert errors(new, old=old) == expected


# --- Workload ------------------------------------------------------------------------------------------

CONTAINERS = "containers: [{name: c, resources: {requests: {cpu: '1'}}}]"


def wl(spec: str = "", status: str = "", annotations: str = "") -> str:
    text = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata:\n  name: wl\n  namespace: ns\n"
    if annotations:
        text += f"  annotations: {annotations}\n"
    text += "spec:\n" + (spec or f"  podSets:\n  - count: 2\n    template: {{spec: {{{CONTAINERS}}}}}\n")
    if status:
        text += "status:\n" + status
    return text


QR = "  - {type: QuotaReserved, status: 'True', reason: QuotaReserved, message: m, lastTransitionTime: '2024-01-01T00:00:00Z'}\n"
ADMITTED = "  - {type: Admitted, status: 'True', reason: Admitted, message: m, lastTransitionTime: '2024-01-01T00:00:00Z'}\n"


def admission(usage: str = "'2'", count: int = 2, name: str = "main", resource: str = "cpu") -> str:
    return (
        "  admission:\n    clusterQueue: cq\n    podSetAssignments:\n"
        f"    - name: {name}\n      flavors: {{{resource}: default}}\n      resourceUsage: {{{resource}: {usage}}}\n"
        f"      count: {count}\n"
    )


WL_CASES = [
    ("valid", wl(), []),
    (
        "no podSets",
        wl("  podSets: []\n"),
        ["spec.podSets: Invalid value: 0: spec.podSets in body should have at least 1 items"],
    ),
    (
        "too many podSets",
        wl("  podSets:\n" + "".join(f"  - name: p{i}\n    template: {{spec: {{}}}}\n" for i in range(19))),
        ["spec.podSets: Too many: 19: must have at most 18 items", CEL_SKIPPED],
    ),
    (
        "negative count",
        wl("  podSets:\n  - count: -1\n    template: {spec: {}}\n"),
        [
            "spec.podSets[0].count: Invalid value: -1: spec.podSets[0].count in body should be greater than or equal to 0"
        ],
    ),
    (
        "minCount above count",
        wl("  podSets:\n  - count: 2\n    minCount: 3\n    template: {spec: {}}\n"),
        ['spec.podSets[0]: Invalid value: minCount should be positive and less or equal to count'],
    ),
    (
        "at most one podSet with minCount",
        wl(
            "  podSets:\n  - {name: a, count: 2, minCount: 1, template: {spec: {}}}\n  - {name: b, count: 2, minCount: 1, template: {spec: {}}}\n"
        ),
        ["spec.podSets: Invalid value: 2: at most one podSet can use minCount"],
    ),
    (
        "podSet name pattern",
        wl("  podSets:\n  - {name: Main, template: {spec: {}}}\n"),
        [
            "spec.podSets[0].name: Invalid value: \"Main\": spec.podSets[0].name in body should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'"
        ],
    ),
    (
        "pods resource is reserved",
        wl(
            "  podSets:\n  - template: {spec: {containers: [{name: c, resources: {requests: {pods: '1'}}}]}}\n"
        ),
        [
            'spec.podSets[0].template.spec.containers[0].resources.requests[pods]: Invalid value: "pods": '
            "the key is reserved for internal kueue use"
        ],
    ),
    (
        "negative request",
        wl(
            "  podSets:\n  - template: {spec: {containers: [{name: m}], initContainers: [{name: c, resources: {limits: {cpu: '-1'}}}]}}\n"
        ),
        [
            'spec.podSets[0].template.spec.initContainers[0].resources.limits[cpu]: Invalid value: "-1": must be greater than or equal to 0'
        ],
    ),
    (
        "priorityClassRef needs priority",
        wl(
            "  priorityClassRef: {group: kueue.x-k8s.io, kind: WorkloadPriorityClass, name: high}\n  podSets:\n  - template: {spec: {}}\n"
        ),
        ['spec: Invalid value: priority should not be nil when priorityClassRef is set'],
    ),
    (
        "priorityClassRef group/kind pairing",
        wl(
            "  priority: 1\n  priorityClassRef: {group: scheduling.k8s.io, kind: WorkloadPriorityClass, name: high}\n  podSets:\n  - template: {spec: {}}\n"
        ),
        [
            'spec.priorityClassRef: Invalid value: only the PriorityClass kind is allowed for the scheduling.k8s.io group'
        ],
    ),
    (
        "priorityClassRef group enum",
        wl(
            "  priority: 1\n  priorityClassRef: {group: example.com, kind: PriorityClass, name: high}\n  podSets:\n  - template: {spec: {}}\n"
        ),
        [
            'spec.priorityClassRef.group: Unsupported value: "example.com": supported values: "kueue.x-k8s.io", "scheduling.k8s.io"',
            CEL_SKIPPED,
        ],
    ),
    (
        "maximumExecutionTimeSeconds minimum",
        wl("  maximumExecutionTimeSeconds: 0\n  podSets:\n  - template: {spec: {}}\n"),
        [
            "spec.maximumExecutionTimeSeconds: Invalid value: 0: spec.maximumExecutionTimeSeconds in body should be "
            "greater than or equal to 1"
        ],
    ),
    (
        "quota reserved without admission",
        wl(status="  conditions:\n" + QR),
        ["status.admission: Required value: must be set while the QuotaReserved condition is true"],
    ),
    ("quota reserved with consistent admission", wl(status="  conditions:\n" + QR + admission()), []),
    (
        # pkg/webhooks/workload_webhook.go validateAdmission: field.Invalid(..., v, ...) with v a
        # resource.Quantity, which field.Error renders with json.Marshal (a quoted string).
        "assignment usage divisible by count",
        wl(status="  conditions:\n" + QR + admission(usage="'3'", resource="example.com/gpu")),
        [
            "status.admission.podSetAssignments[0].resourceUsage[example.com/gpu]: Invalid value: \"3\": is not a multiple of 2"
        ],
    ),
    (
        "cpu usage is compared in milli-units",
        wl(status="  conditions:\n" + QR + admission(usage="'3'")),
        [],
    ),
    (
        "assignment for unknown podSet",
        wl(status="  conditions:\n" + QR + admission(name="other")),
        ['status.admission.podSetAssignments[0].name: Not found: "other"'],
    ),
    (
        "assignments count must match podSets",
        wl(status="  conditions:\n" + QR + "  admission: {clusterQueue: cq, podSetAssignments: []}\n"),
        [
            '<nil>: Invalid value: podSetAssignments must have the same number of podSets as the spec'
        ],
    ),
    (
        "assignments absent",
        wl(status="  conditions:\n" + QR + "  admission: {clusterQueue: cq}\n"),
        [
            '<nil>: Invalid value: "object": no such key: podSetAssignments evaluating rule: '
            "podSetAssignments must have the same number of podSets as the spec"
        ],
    ),
    (
        "condition reason format",
        wl(
            status="  conditions:\n  - {type: Finished, status: 'True', reason: 'bad reason', message: m, lastTransitionTime: '2024-01-01T00:00:00Z'}\n"
        ),
        [
            'status.conditions[0].reason: Invalid value: "bad reason": status.conditions[0].reason in body should match '
            "'^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$'"
        ],
    ),
    (
        "condition status enum",
        wl(
            status="  conditions:\n  - {type: Finished, status: Maybe, reason: R, message: m, lastTransitionTime: '2024-01-01T00:00:00Z'}\n"
        ),
        [
            'status.conditions[0].status: Unsupported value: "Maybe": supported values: "True", "False", "Unknown"',
            CEL_SKIPPED,
        ],
    ),
    (
        "condition needs lastTransitionTime",
        wl(status="  conditions:\n  - {type: Finished, status: 'True', reason: R, message: m}\n"),
        ["status.conditions[0].lastTransitionTime: Required value", CEL_SKIPPED],
    ),
    (
        "duplicate condition types",
        wl(status="  conditions:\n" + ADMITTED + ADMITTED),
        ['status.conditions[1]: Duplicate value: {"type":"Admitted"}'],
    ),
    (
        "assigned flavor must be a flavor reference",
        wl(status="  conditions:\n" + QR + admission().replace("cpu: default", "cpu: Default")),
        [
            'status.admission.podSetAssignments[0].flavors.cpu: Invalid value: "Default": '
            f"status.admission.podSetAssignments[0].flavors.cpu in body should match '{DNS_SUBDOMAIN}'"
        ],
    ),
    (
        "reclaimable pods for unknown podSet",
        wl(status="  reclaimablePods: [{name: other, count: 1}]\n"),
        ['status.reclaimablePods[other].name: Unsupported value: "other": supported values: "main"'],
    ),
    (
        "reclaimable pods above count",
        wl(status="  reclaimablePods: [{name: main, count: 3}]\n"),
        ["status.reclaimablePods[main].count: Invalid value: 3: should be less or equal to 2"],
    ),
    (
        "podSetUpdates for unknown podSet",
        wl(
            status="  admissionChecks:\n  - {name: ac, state: Ready, message: '', lastTransitionTime: '2024-01-01T00:00:00Z', "
            "podSetUpdates: [{name: other}]}\n"
        ),
        [
            'status.admissionChecks[0].podSetUpdates[0].name: Unsupported value: "other": supported values: "main"'
        ],
    ),
    (
        "admission check state enum",
        wl(
            status="  admissionChecks:\n  - {name: ac, state: Done, message: '', lastTransitionTime: '2024-01-01T00:00:00Z'}\n"
        ),
        [
            'status.admissionChecks[0].state: Unsupported value: "Done": supported values: "Pending", "Ready", "Retry", "Rejected"',
            CEL_SKIPPED,
        ],
    ),
    (
        "clusterName and nominatedClusterNames exclusive",
        wl(status="  clusterName: w1\n  nominatedClusterNames: [w1]\n"),
        ['status: Invalid value: clusterName and nominatedClusterNames are mutually exclusive'],
    ),
    (
        "admission-gated-by must be domain-prefixed",
        wl(annotations="{kueue.x-k8s.io/admission-gated-by: 'gate'}"),
        [
            'metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Invalid value: "gate": '
            'must be a domain-prefixed path (such as "acme.io/foo")'
        ],
    ),
    (
        "admission-gated-by duplicate gate",
        wl(annotations="{kueue.x-k8s.io/admission-gated-by: 'a.io/x,a.io/x'}"),
        [
            'metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Invalid value: "a.io/x,a.io/x": duplicate gate name: a.io/x'
        ],
    ),
]


@pytest.mark.parametrize(("manifest", "expected"), [c[1:] for c in WL_CASES], ids=[c[0] for c in WL_CASES])
def test_workload_create(manifest: str, expected: list[str]) -> None:
    assert errors(manifest) == expected


GATE_STATE = "{name: a, position: %s, lastTransitionTime: '2024-01-01T00:00:00Z'}"


def test_preemption_gates_are_list_maps_keyed_by_name() -> None:
    """Upstream's CRD: ``spec.preemptionGates`` and ``status.preemptionGates`` are
    ``x-kubernetes-list-type: map`` keyed by ``name``; a name twice is a duplicate (a second, Closed
    state of a gate recorded Open would otherwise be read as open)."""
    spec = f"  podSets:\n  - count: 2\n    template: {{spec: {{{CONTAINERS}}}}}\n  preemptionGates: [{{name: a}}, {{name: a}}]\n"
    assert errors(wl(spec)) == ['spec.preemptionGates[1]: Duplicate value: {"name":"a"}']
    states = f"  preemptionGates: [{GATE_STATE % 'Open'}, {GATE_STATE % 'Closed'}]\n"
    assert errors(wl(status=states)) == ['status.preemptionGates[1]: Duplicate value: {"name":"a"}']
    assert errors(wl(status=f"  preemptionGates: [{GATE_STATE % 'Open'}]\n")) == []


BOOST = 'metadata.annotations[kueue.x-k8s.io/priority-boost]: Invalid value: "{}": must be a valid signed integer'


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("10", []),  # upstream workload_webhook_test.go: "valid priority-boost"
        ("0", []),  # "valid priority-boost zero"
        ("-5", []),  # "valid priority-boost negative"
        ("invalid", [BOOST.format("invalid")]),  # "invalid priority-boost"
        ("", [BOOST.format("") + '; use "0" explicitly, empty string is not allowed']),  # "empty string priority-boost"
        ("2147483648", [BOOST.format("2147483648")]),  # ParseInt(v, 10, 32): out of range
        (" 5", [BOOST.format(" 5")]),  # no spaces, underscores or non-ASCII digits
    ],
)
def test_priority_boost_annotation(value: str, expected: list[str]) -> None:
    manifest = wl(annotations="{kueue.x-k8s.io/priority-boost: '" + value + "'}")
    assert errors(manifest, gates=FeatureGates({"PriorityBoost": True})) == expected


def test_priority_boost_parsed_only_with_gate() -> None:
    # upstream workload_webhook_test.go: "invalid priority-boost when feature off"
    assert errors(wl(annotations="{kueue.x-k8s.io/priority-boost: 'high'}")) == []


RESERVED = "  conditions:\n" + QR + admission()
WL_UPDATE_CASES = [
    (
        "podSets immutable while reserved",
        wl("  podSets:\n  - count: 2\n    template: {spec: {containers: [{name: c2}]}}\n", status=RESERVED),
        wl(status=RESERVED),
        # upstream validateImmutablePodSets: path.Child(strconv.Itoa(i)), i.e. "spec.podSets.0";
        # the kueue.PodSet as json.Marshal writes it (field.Error.ErrorBody): struct order, the
        # template's metadata and each container's resources always, count without omitempty
        [
            'spec.podSets.0: Invalid value: {"name":"main","template":{"metadata":{},"spec":{"containers":'
            '[{"name":"c2","resources":{}}]}},"count":2}: field is immutable'
        ],
    ),
    (
        # (the new object without the reservation: the CRD's rule on the podSets' number first)
        "podSets count of a reserved workload",
        wl(
            "  podSets:\n  - count: 2\n    template: {spec: {restartPolicy: Never, containers: [{name: c, image: i, "
            "command: [], resources: {requests: {cpu: 1000m}}}]}}\n  - name: b\n    count: 1\n"
            "    template: {metadata: {labels: {z: '1', a: '2'}}, spec: {containers: [{name: c}]}}\n",
        ),
        wl(status=RESERVED),
        [
            'spec.podSets: Invalid value: [{"name":"main","template":{"metadata":{},"spec":{"containers":[{"name":'
            '"c","image":"i","resources":{"requests":{"cpu":"1"}}}],"restartPolicy":"Never"}},"count":2},{"name":'
            '"b","template":{"metadata":{"labels":{"a":"2","z":"1"}},"spec":{"containers":[{"name":"c","resources"'
            ':{}}]}},"count":1}]: field is immutable'
        ],
    ),
    (
        "podSets may scale down (elastic gate on)",
        wl(
            f"  podSets:\n  - count: 1\n    template: {{spec: {{{CONTAINERS}}}}}\n",
            status="  conditions:\n" + QR + admission(usage="'1'", count=1),
        ),
        wl(status="  conditions:\n" + QR + admission(usage="'1'", count=1)),
        [],
    ),
    (
        "admission fields immutable",
        wl(status="  conditions:\n" + QR + admission(usage="'4000m'")),
        wl(status=RESERVED),
        [
            'status.admission: Invalid value: {"clusterQueue":"cq","podSetAssignments":[{"name":"main","flavors":'
            '{"cpu":"default"},"resourceUsage":{"cpu":"4"},"count":2}]}: field is immutable'
        ],
    ),
    (
        "queueName immutable while reserved",
        wl(
            f"  queueName: b\n  podSets:\n  - count: 2\n    template: {{spec: {{{CONTAINERS}}}}}\n",
            status=RESERVED,
        ),
        wl(
            f"  queueName: a\n  podSets:\n  - count: 2\n    template: {{spec: {{{CONTAINERS}}}}}\n",
            status=RESERVED,
        ),
        ['<nil>: Invalid value: queueName is immutable while workload quota reserved'],
    ),
    (
        "queueName cannot be removed while reserved (upstream: has(old) == has(new))",
        wl(status=RESERVED),
        wl(
            f"  queueName: a\n  podSets:\n  - count: 2\n    template: {{spec: {{{CONTAINERS}}}}}\n",
            status=RESERVED,
        ),
        ['<nil>: Invalid value: queueName is immutable while workload quota reserved'],
    ),
    (
        "priorityClassRef cannot be added while reserved",
        wl(
            f"  priority: 1\n  priorityClassRef: {{group: kueue.x-k8s.io, kind: WorkloadPriorityClass, name: a}}\n"
            f"  podSets:\n  - count: 2\n    template: {{spec: {{{CONTAINERS}}}}}\n",
            status=RESERVED,
        ),
        wl(status=RESERVED),
        ['<nil>: Invalid value: priorityClassRef is immutable while workload quota reserved'],
    ),
    (
        "reclaimable pods cannot decrease",
        wl(status=RESERVED + "  reclaimablePods: [{name: main, count: 1}]\n"),
        wl(status=RESERVED + "  reclaimablePods: [{name: main, count: 2}]\n"),
        ["status.reclaimablePods[main].count: Invalid value: 1: cannot be less than 2"],
    ),
    (
        "reclaimable pods cannot be removed",
        wl(status=RESERVED + "  reclaimablePods: []\n"),
        wl(status=RESERVED + "  reclaimablePods: [{name: main, count: 2}]\n"),
        ["status.reclaimablePods[main]: Required value: cannot be removed"],
    ),
    (
        "clusterName must be nominated",
        wl(status="  clusterName: w2\n"),
        wl(status="  nominatedClusterNames: [w1]\n"),
        [
            'status.clusterName: Invalid value: "w2": when setting clusterName it must be one of the nominatedClusterNames'
        ],
    ),
    (
        "clusterName immutable once set",
        wl(status="  clusterName: w2\n"),
        wl(status="  clusterName: w1\n"),
        ['status: Invalid value: clusterName is immutable once set'],
    ),
    (
        "admission gate cannot be added",
        wl(annotations="{kueue.x-k8s.io/admission-gated-by: 'a.io/x'}"),
        wl(),
        [
            "metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Forbidden: cannot add admission gate after creation"
        ],
    ),
    (
        "admission gates can only be removed",
        wl(annotations="{kueue.x-k8s.io/admission-gated-by: 'a.io/x,b.io/y'}"),
        wl(annotations="{kueue.x-k8s.io/admission-gated-by: 'a.io/x'}"),
        [
            "metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Forbidden: can only remove gates, not add new ones"
        ],
    ),
    (
        "podSetUpdates immutable when Ready",
        wl(
            status="  admissionChecks:\n  - {name: ac, state: Ready, message: '', lastTransitionTime: '2024-01-01T00:00:00Z', "
            "podSetUpdates: [{name: main, labels: {a: b}}]}\n"
        ),
        wl(
            status="  admissionChecks:\n  - {name: ac, state: Ready, message: '', lastTransitionTime: '2024-01-01T00:00:00Z', "
            "podSetUpdates: [{name: main}]}\n"
        ),
        [
            'status.admissionChecks[0].podSetUpdates: Invalid value: [{"name":"main","labels":{"a":"b"}}]: field is immutable'
        ],
    ),
]


@pytest.mark.parametrize(
    ("new", "old", "expected"), [c[1:] for c in WL_UPDATE_CASES], ids=[c[0] for c in WL_UPDATE_CASES]
)
def test_workload_update(new: str, old: str, expected: list[str]) -> None:
    got = errors(new, old=old)
    assert len(got) == len(expected)
    for message, prefix in zip(got, expected, strict=True):
        assert message.startswith(prefix)


def test_workload_scale_down_without_elastic_gate_is_rejected() -> None:
    old = wl(status=RESERVED)
    new = wl(f"  podSets:\n  - count: 1\n    template: {{spec: {{{CONTAINERS}}}}}\n", status=RESERVED)
    assert errors(new, old=old) == []
    got = errors(new, old=old, gates=FeatureGates({"ElasticJobsViaWorkloadSlices": False}))
    assert (
        len(got) == 1
        and got[0].startswith("spec.podSets.0: Invalid value: ")
        and got[0].endswith("field is immutable")
    )


# --- ValidationFailed ----------------------------------------------------------------------------------


def test_validation_failed_schema_message() -> None:
    obj = typed(one_group(CPU9, covered="[cpu, memory]", extra="cohortName: team"))
    with pytest.raises(ValidationFailed) as info:
        validate_or_raise(obj)
    assert info.value.kind == "ClusterQueue" and info.value.name == "cq" and info.value.webhook is None
    assert str(info.value) == (
        'ClusterQueue.kueue.x-k8s.io "cq" is invalid: spec.resourceGroups[0]: Invalid value: '
        "flavors must have the same number of resources as the coveredResources"
    )


def test_validation_failed_multiple_errors_bracketed() -> None:
    obj = typed(one_group(CPU9, extra="queueingStrategy: X"))
    with pytest.raises(ValidationFailed) as info:
        validate_or_raise(obj)
    assert str(info.value).startswith(
        'ClusterQueue.kueue.x-k8s.io "cq" is invalid: [spec.queueingStrategy: Unsupported value'
    )
    assert str(info.value).endswith("correct the existing errors to complete validation]")


def test_validation_failed_webhook_message() -> None:
    obj = typed(one_group("      - name: cpu\n        nominalQuota: 9\n        lendingLimit: 1\n"))
    with pytest.raises(ValidationFailed) as info:
        validate_or_raise(obj)
    assert info.value.webhook == "vclusterqueue.kb.io"
    assert str(info.value) == (
        'admission webhook "vclusterqueue.kb.io" denied the request: '
        'spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: "1": must be nil when cohort is empty'
    )


def test_old_object_must_have_same_kind() -> None:
    with pytest.raises(TypeError):
        validate(typed(lq("  clusterQueue: cq")), typed(ac("  controllerName: a")))


# --- seed documents ------------------------------------------------------------------------------------


def _seed_objects(name: str) -> list[dict[str, Any]]:
    text = (SEEDS / name).read_text()
    text = re.sub(r"^ *\d+  ", "", text, flags=re.M) if "site/content" in text.splitlines()[0] else text
    objects = []
    for block in re.findall(r"```yaml\n(.*?)```", text, re.S):
        if "<...>" in block:
            continue
        objects += [obj for obj in load_manifests(block) if "kind" in obj]
    return objects


def test_seed_cluster_queue_borrowing_limit_example_is_rejected() -> None:
    objects = _seed_objects("003_86873e8ca846a752.txt")
    outcomes = []
    for obj in objects:
        try:
            parse_object(obj)
            outcomes.append((obj["metadata"]["name"], "ok"))
        except ValidationFailed as err:
            outcomes.append((obj["metadata"]["name"], str(err)))
    rejected = [o for o in outcomes if o[1] != "ok"]
    message = (
        'ClusterQueue.kueue.x-k8s.io "{}" is invalid: spec.resourceGroups[0]: Invalid value: '
        "flavors must have the same number of resources as the coveredResources"
    )
    # The BorrowingLimit section: team-a-cq (borrowingLimit on cpu only) and team-b-cq, both covering [cpu, memory].
    assert rejected == [
        ("team-a-cq", message.format("team-a-cq")),
        ("team-b-cq", message.format("team-b-cq")),
    ]
    assert len(outcomes) == 11


@pytest.mark.parametrize("seed", ["001_87e219bdb60aaba1.txt", "004_0b4a5b9a72f65b6e.txt"])
def test_seed_admission_checks_validate(seed: str) -> None:
    objects = _seed_objects(seed)
    assert [obj["kind"] for obj in objects] == ["AdmissionCheck"]
    check, version = parse_object(objects[0])
    assert version == "kueue.x-k8s.io/v1beta1"
    assert isinstance(check, k.AdmissionCheck)
    assert check.spec.controller_name == "kueue.x-k8s.io/provisioning-request"


# --- _immutable_pod_sets compares structs before encodings (branch lscpu) --------------------------

_pod_set_changes = st.fixed_dictionaries(
    {},
    optional={
        "name": st.sampled_from(["main", "worker"]),
        "count": st.integers(min_value=0, max_value=4),
        "min_count": st.one_of(st.none(), st.integers(min_value=1, max_value=3)),
        "cpu": st.sampled_from(["1", "1000m", "2", 1, 1.0]),
        "labels": st.dictionaries(st.sampled_from(["a", "b"]), st.sampled_from(["x", "y"]), max_size=2),
        "topology_request": st.one_of(st.none(), st.just({"required": "zone"})),
    },
)


def _pod_set(changes: dict[str, Any]) -> k.PodSet:
    template = {
        "metadata": {"labels": changes.get("labels", {})},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": changes.get("cpu", "1")}}}]},
    }
    return msgspec.convert(
        {
            "name": changes.get("name", "main"),
            "count": changes.get("count", 1),
            "minCount": changes.get("min_count"),
            "topologyRequest": changes.get("topology_request"),
            "template": template,
        },
        k.PodSet,
    )


def _immutable_pod_sets_by_encoding(
    new: list[k.PodSet], old: list[k.PodSet], gates: FeatureGates
) -> list[str]:
    """The comparison as it was: the encodings of every pod set."""
    if len(new) != len(old):
        return ["spec.podSets"]
    elastic = gates.enabled("ElasticJobsViaWorkloadSlices")
    out = []
    for i, (n, o) in enumerate(zip(new, old, strict=True)):
        compared = msgspec.structs.replace(n, count=o.count) if elastic and n.count < o.count else n
        if msgspec.to_builtins(compared) != msgspec.to_builtins(o):
            out.append(f"spec.podSets.{i}")
    return out


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_pod_set_changes, min_size=1, max_size=2),
    st.lists(_pod_set_changes, min_size=1, max_size=2),
    st.booleans(),
)
def test_immutable_pod_sets_reports_what_the_encodings_differ_in(
    new: list[dict[str, Any]], old: list[dict[str, Any]], elastic: bool
) -> None:
    gates = FeatureGates({"ElasticJobsViaWorkloadSlices": elastic})
    new_sets = [_pod_set(c) for c in new]
    for old_sets in ([_pod_set(c) for c in old], [_pod_set(c) for c in new]):
        errs = _immutable_pod_sets(new_sets, old_sets, gates)
        assert [e.field for e in errs] == _immutable_pod_sets_by_encoding(new_sets, old_sets, gates)


_label_strings = st.one_of(
    st.sampled_from(
        ["a", "kueue.x-k8s.io/queue-name", "x/y/z", "/n", "p/", "Bad_", "-a", "a" * 64, "A.b/c", ""]
    ),
    st.text(alphabet="aZ09-_./", max_size=70),
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(_label_strings, _label_strings, max_size=4),
    st.dictionaries(_label_strings, st.just("v"), max_size=3),
)
def test_remembered_label_checks_report_what_the_checks_do(
    labels: dict[str, str], annotations: dict[str, str]
) -> None:
    """validate_labels / validate_annotations (their key and value checks remembered) report what
    apimachinery's functions report for each key and value, twice in a row."""
    want = []
    for name in sorted(labels):
        want += [("metadata.labels", name, msg) for msg in is_qualified_name(name)]
        want += [("metadata.labels", labels[name], msg) for msg in is_valid_label_value(labels[name])]
    want_annotations = [
        ("a", name, msg) for name in sorted(annotations) for msg in is_qualified_name(name.lower())
    ]
    for _ in range(2):
        got = [(e.field, e.value, e.detail) for e in validate_labels(labels, "metadata.labels")]
        assert got == want
        got = [(e.field, e.value, e.detail) for e in validate_annotations(annotations, "a")]
        assert got == want_annotations



def test_refused_long_label_values_are_not_remembered() -> None:
    """The validation memos keep only short strings: label values far over the 63-character limit
    are refused every time and none of them stays in memory (a client could otherwise pin
    4,096 bodies' worth of refused values per memo)."""
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(20):
        value = f"{i}" + "v" * 100_000
        errs = validate_labels({"k": value, "x" * 400: "y"}, "metadata.labels")
        assert {e.field for e in errs} == {"metadata.labels"} and len(errs) >= 2
        del value, errs
    gc.collect()
    kept = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert kept < 200_000, kept

_request_values = st.one_of(
    st.sampled_from(["1", "-1", "500m", "-500m", "1Gi", "-0", "1e3", "-1e-3", "x", "", "+2"]),
    st.integers(min_value=-3, max_value=3),
    st.floats(min_value=-2, max_value=2, allow_nan=False),
    st.booleans(),
    st.none(),
    st.just({"a": 1}),
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["cpu", "memory", "pods", "x"]), _request_values, max_size=4), st.booleans())
def test_remembered_negative_quantities_report_what_parsing_does(values: dict[str, Any], check: bool) -> None:
    """The webhook's negative-request check (parsed quantities remembered per value and type)
    reports what parsing each value reports, on repeated calls too."""
    from pykueue.api.quantity import Quantity, is_valid_quantity

    gates = FeatureGates({"WorkloadValidateResourcesAreNonNegative": check})
    want = []
    for name, value in values.items():
        if name == "pods":
            want.append((f"r[{name}]", "pods"))
        if check and is_valid_quantity(value) and Quantity.parse(value).value < 0:
            want.append((f"r[{name}]", str(Quantity.parse(value))))
    for _ in range(2):
        got = [(e.field, e.value) for e in _webhook_resource_list("r", values, gates)]
        assert got == want


# A value of one request or label may take any of these; several share a JSON encoding
# (1 / 1.0 / true, NaN / null, a date / its ISO string), so a memo keyed wrongly mixes them up.
_spec_scalars = st.one_of(
    st.sampled_from(["1", "-1", "500m", "-2", "x", "", "2020-01-01", "Bad_", "a" * 64, "MQ=="]),
    st.sampled_from([1, -1, 1.0, -1.0, 0, True, False, None, float("nan"), float("inf"), 2**70, -(2**70)]),
    st.just(datetime.date(2020, 1, 1)),
    st.just(b"1"),
)
_spec_pod_sets = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["main", "worker", "Bad_Name", ""]),
        "count": st.integers(min_value=-1, max_value=3),
    },
    optional={
        "minCount": st.one_of(st.none(), st.integers(min_value=-1, max_value=3)),
        "requests": st.dictionaries(st.sampled_from(["cpu", "pods", "memory"]), _spec_scalars, max_size=2),
        "labels": st.dictionaries(st.sampled_from(["a", "Bad_/x", "k8s.io/n"]), _spec_scalars, max_size=2),
        "annotations": st.dictionaries(st.sampled_from(["a", "-x"]), _spec_scalars, max_size=1),
        "containers": st.sampled_from(["list", "none", "dict"]),
    },
)


def _spec_workload(pod_sets: list[dict[str, Any]], queue: str) -> k.Workload:
    sets = []
    for ps in pod_sets:
        container = {"name": "c", "image": "i", "resources": {"requests": ps.get("requests", {"cpu": "1"})}}
        containers = {"list": [container], "none": None, "dict": {"c": container}}[ps.get("containers", "list")]
        entry = {
            "name": ps["name"],
            "count": ps["count"],
            "template": {
                "metadata": {"labels": ps.get("labels", {}), "annotations": ps.get("annotations", {})},
                "spec": {"containers": containers},
            },
        }
        if "minCount" in ps:
            entry["minCount"] = ps["minCount"]
        sets.append(entry)
    obj = msgspec.convert(
        {"metadata": {"name": "w", "namespace": "ns"},
         "spec": {"queueName": queue, "podSets": sets}},
        k.Workload,
    )  # fmt: skip
    apply_defaults(obj)
    return obj


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(_spec_pod_sets, min_size=0, max_size=3), min_size=1, max_size=4),
    st.sampled_from(["lq", "Bad_Queue", ""]),
)
def test_remembered_spec_errors_are_the_rules_errors(specs: list[list[dict[str, Any]]], queue: str) -> None:
    """A Workload spec's rules (schema and webhook) remembered per spec report what the rules
    report: several specs in a row (their values chosen to share JSON encodings: 1 / 1.0 / true,
    NaN / null), each validated twice (the second time from the memo), on create and on a status
    update of the same spec, under every setting of the memo's two feature gates in turn (so a
    key without the gates gives one setting's errors to another)."""
    from pykueue.api import validation as V

    settings = [
        FeatureGates({"WorkloadValidationForPodSetMetadata": m, "WorkloadValidateResourcesAreNonNegative": n})
        for m in (False, True)
        for n in (False, True)
    ]

    def found(obj: k.Workload, old: k.Workload | None, gates: FeatureGates) -> list[tuple[str, str, str, str]]:
        # NaN != NaN: compare values by their repr
        return [(e.type, e.field, e.detail, repr(e.value)) for e in validate(obj, old, gates=gates)]

    for pod_sets in specs:
        wl = _spec_workload(pod_sets, queue)
        V.REMEMBER_SPEC_ERRORS = False
        try:
            want = [(found(wl, None, g), found(wl, wl, g)) for g in settings]
        finally:
            V.REMEMBER_SPEC_ERRORS = True
        for _ in range(2):
            for gates, (want_create, want_update) in zip(settings, want, strict=True):
                assert found(wl, None, gates) == want_create
                assert found(wl, wl, gates) == want_update


def test_a_large_spec_is_checked_every_time_not_remembered() -> None:
    """The spec memo and the pod-template memo keep only specs up to
    ``_REMEMBERED_SPEC_MAX_BYTES`` (a memo bounded in entries alone kept up to 4,096 bodies of
    3 MiB: GiBs from dry-run creates); a large spec still gets its errors."""
    from pykueue.api import validation as V

    big = "x" * (V._REMEMBERED_SPEC_MAX_BYTES + 1)
    V._spec_schema_memo.clear()
    V._spec_webhook_memo.clear()
    V._pod_template_errors.cache_clear()
    wl = _spec_workload([{"name": "m", "count": 1, "annotations": {"a": big}, "labels": {"b": "B@d"}}], "lq")
    errs = [str(e) for e in validate(wl, gates=FeatureGates({"WorkloadValidationForPodSetMetadata": True}))]
    assert errs and any("labels" in e for e in errs)
    assert (len(V._spec_schema_memo), len(V._spec_webhook_memo), V._pod_template_errors.cache_info().currsize) == (
        0, 0, 0
    )
    small = _spec_workload([{"name": "m", "count": 1, "labels": {"b": "B@d"}}], "lq")
    validate(small, gates=FeatureGates({"WorkloadValidationForPodSetMetadata": True}))
    assert len(V._spec_schema_memo) == len(V._spec_webhook_memo) == V._pod_template_errors.cache_info().currsize == 1


def test_remembered_spec_errors_keep_each_spec_apart() -> None:
    """Specs whose JSON encodings are equal but whose rules report differently (a label value of
    bytes ``b"1"``, read as ``"b'1'"``, and of the string ``"MQ=="``, its base64 JSON form) each get
    their own errors from the memo, in either order."""
    from pykueue.api import validation as V

    gates = FeatureGates({"WorkloadValidationForPodSetMetadata": True})

    def found(values: list[Any]) -> list[list[str]]:
        return [
            [str(e) for e in validate(_spec_workload([{"name": "m", "count": 1, "labels": {"a": v}}], "lq"), gates=gates)]
            for v in values
        ]

    for values in ([b"1", "MQ=="], ["MQ==", b"1"]):
        got = found(values)
        V.REMEMBER_SPEC_ERRORS = False
        try:
            want = found(values)
        finally:
            V.REMEMBER_SPEC_ERRORS = True
        assert got == want
        assert want[0] != want[1]  # the values' errors differ: the test can fail


def test_workload_topology_request_openapi_bounds() -> None:
    """The v1beta2 Workload CRD's bounds of ``PodSetTopologyRequest`` (``minimum: 0`` of
    ``subGroupCount``, ``maxItems: 3`` of the slice constraints), reported by the CRD stage."""
    constraints = ", ".join(f"{{topology: t{i}, size: 1}}" for i in range(4))
    request = f"{{subGroupCount: -1, podsetSliceRequiredTopologyConstraints: [{constraints}]}}"
    spec = f"  podSets:\n  - count: 2\n    topologyRequest: {request}\n    template: {{spec: {{{CONTAINERS}}}}}\n"
    path = "spec.podSets[0].topologyRequest"
    assert errors(wl(spec)) == [
        f"{path}.subGroupCount: Invalid value: -1: {path}.subGroupCount in body should be greater than or equal to 0",
        f"{path}.podsetSliceRequiredTopologyConstraints: Too many: 4: must have at most 3 items",
        CEL_SKIPPED,
    ]


@pytest.mark.parametrize("kind", ["ClusterQueue", "LocalQueue"])
def test_status_flavor_usage_has_the_crds_bounds(kind: str) -> None:
    """``flavorsReservation``/``flavorsUsage`` of a ClusterQueue's and a LocalQueue's status: at
    most 64 flavors (``+kubebuilder:validation:MaxItems=64`` in upstream's
    ``apis/kueue/v1beta2/clusterqueue_types.go`` and ``localqueue_types.go``), each named by a
    ``ResourceFlavorReference``, with quantities, listed once by name."""
    meta = "metadata: {name: q, namespace: ns}" if kind == "LocalQueue" else "metadata: {name: q}"
    spec = "spec: {clusterQueue: cq}" if kind == "LocalQueue" else "spec: {}"

    def status(flavors: list[dict[str, Any]]) -> str:
        body = {"flavorsUsage": flavors, "flavorsReservation": flavors[:1]}
        return f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: {kind}\n{meta}\n{spec}\nstatus: {json.dumps(body)}"

    def flavor(name: str, total: str = "1") -> dict[str, Any]:
        return {"name": name, "resources": [{"name": "cpu", "total": total}]}

    assert errors(status([flavor(f"f{i}") for i in range(64)])) == []
    assert errors(status([flavor(f"f{i}") for i in range(65)]))[0] == (
        "status.flavorsUsage: Too many: 65: must have at most 64 items"
    )
    assert errors(status([flavor("@f"), flavor("f", "x"), flavor("f")])) == [
        "status.flavorsReservation[0].name: Invalid value: \"@f\": status.flavorsReservation[0].name in body "
        "should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'",
        "status.flavorsUsage[0].name: Invalid value: \"@f\": status.flavorsUsage[0].name in body "
        "should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'",
        "status.flavorsUsage[1].resources[0].total: Invalid value: \"x\": status.flavorsUsage[1].resources[0].total "
        "in body should match '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?"
        "(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$'",
        'status.flavorsUsage[2]: Duplicate value: {"name":"f"}',
    ]
