"""Tests for ``pykueue.api.podspec`` (upstream ``pkg/workload/resources.go``,
``pkg/workload/workload.go`` and ``FlavorAssigner.checkFlavorForPodSets``)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

import pytest

from pykueue.api.kueue import PodSet, PodSetAssignment, PodTemplateSpec, Taint, Toleration
from pykueue.api.limitrange import adjust_pod_spec
from pykueue.api.podspec import (
    REPLACE,
    PodSetHashInput,
    ResourceTransformation,
    SelectorError,
    admitted_usage,
    aggregate_error_text,
    first_untolerated_taint,
    format_taint,
    matches_flavor_node_labels,
    per_pod_integer_requests,
    pod_requests,
    pod_tolerations,
    podset_total_requests,
    resources_validation_error,
    scheduling_hash,
    scheduling_shape,
    tolerates,
    validate_requests_within_limits,
)
from pykueue.api.quantity import MAX_INT64

# --- helpers -----------------------------------------------------------------------------------------


def container(
    requests: dict[str, Any] | None = None,
    limits: dict[str, Any] | None = None,
    restart_policy: str | None = None,
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    c: dict[str, Any] = {"name": "c", "resources": resources}
    if restart_policy is not None:
        c["restartPolicy"] = restart_policy
    return c


def podset(name: str, count: int, requests: dict[str, Any]) -> PodSet:
    return PodSet(
        name=name, count=count, template=PodTemplateSpec(spec={"containers": [container(requests)]})
    )


def required_affinity(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": list(t)} for t in terms]
            }
        }
    }


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        e["values"] = list(values)
    return e


# --- pod_requests (upstream ``resources.NewMapRequestsFromPodSpec``) ---------------------------------

SIDECAR_EXAMPLE: dict[str, Any] = {
    "containers": [container({"cpu": "1"}), container({"cpu": "2"})],
    "initContainers": [
        container({"cpu": "4"}),
        container({"cpu": "1"}, restart_policy="Always"),
        container({"cpu": "3"}),
    ],
}


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        pytest.param({}, {}, id="empty spec"),
        pytest.param(SIDECAR_EXAMPLE, {"cpu": Fraction(4)}, id="reference sidecar example"),
        pytest.param(
            {**SIDECAR_EXAMPLE, "overhead": {"cpu": "250m"}},
            {"cpu": Fraction(17, 4)},
            id="reference sidecar example with overhead",
        ),
        pytest.param(
            {
                "containers": [container({"cpu": "1", "memory": "1Gi"}), container({"cpu": "500m"})],
            },
            {"cpu": Fraction(3, 2), "memory": Fraction(2**30)},
            id="regular containers are summed",
        ),
        pytest.param(
            {
                "containers": [container({"cpu": "1"})],
                "initContainers": [container({"cpu": "2"}, restart_policy="Always"), container({"cpu": "2"})],
            },
            # sum = 1 + 2 (sidecar) = 3; init stages: sidecar 2, regular 2 + 2 = 4.
            {"cpu": Fraction(4)},
            id="regular init container stacks on earlier sidecars",
        ),
        pytest.param(
            {
                "containers": [container({"cpu": "1"})],
                "initContainers": [container({"cpu": "1"}), container({"cpu": "3"}, restart_policy="Always")],
            },
            {"cpu": Fraction(4)},
            id="sidecar after regular init container only adds to the sum",
        ),
        pytest.param(
            {
                "containers": [container({"cpu": "1"})],
                "initContainers": [container({"memory": "1Gi", "example.com/dev": "1"})],
            },
            {"cpu": Fraction(1), "memory": Fraction(2**30), "example.com/dev": Fraction(1)},
            id="key requested only by an init container is kept",
        ),
        pytest.param(
            {"containers": [container(limits={"cpu": "2", "memory": "1Gi"})]},
            {"cpu": Fraction(2), "memory": Fraction(2**30)},
            id="limits used as missing requests",
        ),
        pytest.param(
            {"containers": [container({"cpu": "500m"}, {"cpu": "2", "memory": "1Gi"})]},
            {"cpu": Fraction(1, 2), "memory": Fraction(2**30)},
            id="existing requests win over limits",
        ),
        pytest.param(
            {"initContainers": [container(limits={"cpu": "3"})], "containers": [container({"cpu": "1"})]},
            {"cpu": Fraction(3)},
            id="limits as requests for init containers",
        ),
        pytest.param(
            {
                "containers": [container({"cpu": "1", "memory": "1Gi", "example.com/gpu": "1"})],
                "resources": {"requests": {"cpu": "4", "example.com/gpu": "7"}},
            },
            {"cpu": Fraction(4), "memory": Fraction(2**30), "example.com/gpu": Fraction(1)},
            id="pod-level requests replace supported keys only",
        ),
        pytest.param(
            {
                "containers": [container({"cpu": "1"})],
                "resources": {"limits": {"memory": "2Gi", "hugepages-2Mi": "4Mi"}},
            },
            {"cpu": Fraction(1), "memory": Fraction(2 * 2**30), "hugepages-2Mi": Fraction(4 * 2**20)},
            id="pod-level limits used as requests",
        ),
        pytest.param(
            {
                "containers": [container({"cpu": "1"})],
                "resources": {"requests": {"example.com/gpu": "2"}},
            },
            {"cpu": Fraction(1)},
            id="pod-level requests without supported keys are ignored",
        ),
        pytest.param(
            {
                "containers": [container({"cpu": "1"})],
                "resources": {"requests": {"cpu": "2"}},
                "overhead": {"cpu": "100m", "memory": "10Mi"},
            },
            {"cpu": Fraction(21, 10), "memory": Fraction(10 * 2**20)},
            id="overhead added after pod-level requests",
        ),
    ],
)
def test_pod_requests(spec: dict[str, Any], want: dict[str, Fraction]) -> None:
    assert pod_requests(spec) == want


def test_pod_requests_does_not_mutate_spec() -> None:
    spec = {"containers": [container(limits={"cpu": "2"})]}
    pod_requests(spec)
    assert spec == {"containers": [container(limits={"cpu": "2"})]}


# --- validate_requests_within_limits (upstream ``workload.ValidateResources``) -----------------------

PS0 = "spec.podSets[0].template.spec"
MSG = "requests must not exceed its limits"


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        pytest.param(
            {"containers": [container({"cpu": "100m"}, {"cpu": "200m"})]},
            [],
            id="valid",
        ),
        pytest.param(
            {"containers": [container({"cpu": "300m"}, {"memory": "1Gi"})]},
            [],
            id="disjoint keys are not compared",
        ),
        pytest.param(
            {
                "initContainers": [
                    container({"memory": "200Mi", "cpu": "100m"}, {"memory": "100Mi", "cpu": "200m"})
                ],
                "containers": [container({"cpu": "300m"}, {"cpu": "200m"})],
            },
            [
                f'{PS0}.initContainers[0]: Invalid value: ["memory"]: {MSG}',
                f'{PS0}.containers[0]: Invalid value: ["cpu"]: {MSG}',
            ],
            id="init containers then containers",
        ),
        pytest.param(
            {"containers": [container({"memory": "2Gi", "cpu": "2"}, {"memory": "1Gi", "cpu": "1"})]},
            [f'{PS0}.containers[0]: Invalid value: ["cpu","memory"]: {MSG}'],
            id="names sorted",
        ),
        pytest.param(
            {
                "containers": [container({"cpu": "1"})],
                "resources": {"requests": {"cpu": "300m"}, "limits": {"cpu": "200m"}},
            },
            [f'{PS0}.resources: Invalid value: ["cpu"]: {MSG}'],
            id="pod-level requests exceed limits",
        ),
        pytest.param(
            {"containers": [container({"cpu": "1001m"}, {"cpu": "1"})]},
            [f'{PS0}.containers[0]: Invalid value: ["cpu"]: {MSG}'],
            id="integer compare in milli cpu",
        ),
    ],
)
def test_validate_requests_within_limits(spec: dict[str, Any], want: list[str]) -> None:
    assert validate_requests_within_limits(spec, PS0) == want


def _ps_path(i: int) -> str:
    return f"spec.podSets[{i}].template.spec"


@pytest.mark.parametrize(
    ("pod_sets", "want"),
    [
        pytest.param(
            [
                {"containers": [container({"cpu": "100m", "memory": "100Mi"}, {"cpu": "200m", "memory": "200Mi"})]},
                {"initContainers": [container({"cpu": "100m"}, {"cpu": "200m"})], "containers": [container()]},
            ],
            [],
            id="valid workload",
        ),
        pytest.param(
            [{"containers": [container()], "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "200m"}}}],
            [],
            id="valid workload with pod-level resources",
        ),
        pytest.param(
            [{"containers": [container()], "resources": {"requests": {"cpu": "300m"}, "limits": {"cpu": "200m"}}}],
            [f'{_ps_path(0)}.resources: Invalid value: ["cpu"]: {MSG}'],
            id="invalid workload; pod-level requests exceed limits",
        ),
        pytest.param(
            [
                {
                    "initContainers": [
                        container({"memory": "200Mi", "cpu": "100m"}, {"memory": "100Mi", "cpu": "200m"})
                    ],
                    "containers": [container({"cpu": "300m"}, {"cpu": "200m"})],
                },
                {
                    "initContainers": [container({"cpu": "300m"}, {"cpu": "200m"})],
                    "containers": [container({"cpu": "100m"}, {"cpu": "200m"})],
                },
            ],
            [
                f'{_ps_path(0)}.initContainers[0]: Invalid value: ["memory"]: {MSG}',
                f'{_ps_path(0)}.containers[0]: Invalid value: ["cpu"]: {MSG}',
                f'{_ps_path(1)}.initContainers[0]: Invalid value: ["cpu"]: {MSG}',
            ],
            id="invalid workload; multiple PodSet has invalid initContainers and containers",
        ),
    ],
)
def test_validate_resources(pod_sets: list[dict[str, Any]], want: list[str]) -> None:
    """Upstream ``TestValidateResources``: every pod set's errors, in pod-set order (the loop of
    ``admissibility._spec_memo``)."""
    got = [e for i, spec in enumerate(pod_sets) for e in validate_requests_within_limits(spec, _ps_path(i))]
    assert got == want


def test_resources_validation_error_aggregates() -> None:
    assert resources_validation_error([]) is None
    assert resources_validation_error(["a: x"]) == "resources validation failed: a: x"
    assert resources_validation_error(["a: x", "b: y", "a: x"]) == "resources validation failed: [a: x, b: y]"
    assert aggregate_error_text(["e", "e"]) == "e"


# --- per-pod integers, exclusion and transformations (upstream ``applyResourceTransformations``) ----

MIG_AND_GPU = (
    ResourceTransformation(
        "nvidia.com/mig-1g.5gb",
        REPLACE,
        {"example.com/accelerator-memory": "5Ki", "example.com/credits": "10"},
    ),
    ResourceTransformation(
        "nvidia.com/mig-2g.10gb",
        REPLACE,
        {"example.com/accelerator-memory": "10Ki", "example.com/credits": "15"},
    ),
    ResourceTransformation(
        "nvidia.com/gpu",
        "Retain",
        {"example.com/accelerator-memory": "40Ki", "example.com/credits": "100"},
    ),
    ResourceTransformation(
        "nvidia.com/vgpucores", REPLACE, {"nvidia.com/total-vgpucores": "1"}, "nvidia.com/vgpu"
    ),
    ResourceTransformation(
        "nvidia.com/vgpumem", REPLACE, {"nvidia.com/total-vgpumem": "1"}, "nvidia.com/vgpu"
    ),
)


@pytest.mark.parametrize(
    ("ps", "want"),
    [
        pytest.param(
            podset("a", 1, {"nvidia.com/mig-1g.5gb": "2", "nvidia.com/mig-2g.10gb": "1", "cpu": "1"}),
            {"cpu": 1000, "example.com/accelerator-memory": 20 * 1024, "example.com/credits": 35},
            id="a",
        ),
        pytest.param(
            podset("b", 2, {"nvidia.com/gpu": "1", "cpu": "2"}),
            {
                "cpu": 4000,
                "example.com/accelerator-memory": 80 * 1024,
                "example.com/credits": 200,
                "nvidia.com/gpu": 2,
            },
            id="b",
        ),
        pytest.param(
            podset(
                "c", 1, {"nvidia.com/vgpu": "2", "nvidia.com/vgpucores": "20", "nvidia.com/vgpumem": "1024"}
            ),
            {"nvidia.com/vgpu": 2, "nvidia.com/total-vgpucores": 40, "nvidia.com/total-vgpumem": 2048},
            id="c multiplyBy",
        ),
        pytest.param(
            podset(
                "d", 2, {"nvidia.com/vgpu": "2", "nvidia.com/vgpucores": "30", "nvidia.com/vgpumem": "2048"}
            ),
            {"nvidia.com/vgpu": 4, "nvidia.com/total-vgpucores": 120, "nvidia.com/total-vgpumem": 8192},
            id="d multiplyBy count 2",
        ),
    ],
)
def test_transform_resources(ps: PodSet, want: dict[str, int]) -> None:
    """Upstream TestNewInfo "transformResources"."""
    assert podset_total_requests(ps, 0, transformations=MIG_AND_GPU) == want


ALLOWANCE = (
    ResourceTransformation("example.com/gpumem", REPLACE, {"example.com/overage": "1"}, "nvidia.com/gpu"),
    ResourceTransformation("nvidia.com/gpu", "Retain", {"example.com/overage": "-1024"}),
)


@pytest.mark.parametrize(
    ("requests", "transformations", "prefixes", "want"),
    [
        pytest.param(
            {"cpu": "100m", "memory": "100M"},
            (
                ResourceTransformation("cpu", REPLACE, {"example.com/cpu-credits": "3000"}),
                ResourceTransformation("memory", REPLACE, {"example.com/memory-credits": "3m"}),
            ),
            (),
            {"example.com/cpu-credits": 300, "example.com/memory-credits": 300_000},
            id="transformMilliValues exact multiply",
        ),
        pytest.param(
            {"example.com/gpumem": "2048", "nvidia.com/gpu": "2"},
            ALLOWANCE,
            (),
            {"nvidia.com/gpu": 2, "example.com/overage": 2048},
            id="transformAllowanceAboveIt",
        ),
        pytest.param(
            {"example.com/gpumem": "512", "nvidia.com/gpu": "2"},
            ALLOWANCE,
            (),
            {"nvidia.com/gpu": 2, "example.com/overage": 0},
            id="allowance not reached floors generated to zero",
        ),
        pytest.param(
            {"example.com/overage": "5", "nvidia.com/gpu": "1"},
            (ResourceTransformation("nvidia.com/gpu", "Retain", {"example.com/overage": "-1024"}),),
            (),
            {"nvidia.com/gpu": 1, "example.com/overage": 5},
            id="negative factor cannot reduce a requested resource",
        ),
        pytest.param(
            {"example.com/gpumem": "1024", "nvidia.com/gpu": "2"},
            (
                ResourceTransformation(
                    "example.com/gpumem", "Retain", {"example.com/total-mem": "1"}, "nvidia.com/gpu"
                ),
            ),
            (),
            {"example.com/gpumem": 1024, "nvidia.com/gpu": 2, "example.com/total-mem": 2048},
            id="transformRetainWithMultiplyBy keeps the unscaled input",
        ),
        pytest.param(
            {"example.com/gpumem": "1024"},
            (
                ResourceTransformation(
                    "example.com/gpumem", REPLACE, {"example.com/total-mem": "1"}, "nvidia.com/gpu"
                ),
            ),
            (),
            {"example.com/total-mem": 1024},
            id="absent multiplyBy resource means factor 1",
        ),
        pytest.param(
            {"cpu": "1", "example.com/ignored": "3"},
            (ResourceTransformation("example.com/ignored", REPLACE, {}),),
            (),
            {"cpu": 1000},
            id="Replace with empty outputs ignores the resource",
        ),
        pytest.param(
            {"cpu": "1"},
            MIG_AND_GPU,
            (),
            {"cpu": 1000},
            id="no input requested leaves the list unchanged",
        ),
        pytest.param(
            {"cpu": "10m", "memory": "512Ki", "networking.example.com/vpc1": "1"},
            (),
            ("dummyPrefix", "networking.example.com/"),
            {"cpu": 10, "memory": 512 * 1024},
            id="filterResources",
        ),
        pytest.param(
            {"example.com/gpu": "1", "nvidia.com/gpu": "1"},
            (ResourceTransformation("example.com/gpu", REPLACE, {"nvidia.com/gpu": "2"}),),
            ("example.com/",),
            {"nvidia.com/gpu": 1},
            id="exclusion happens before transformation",
        ),
        pytest.param(
            {"example.com/a": "1", "example.com/b": "1"},
            (
                ResourceTransformation("example.com/a", REPLACE, {"example.com/out": "3"}),
                ResourceTransformation("example.com/b", "Retain", {"example.com/out": "4"}),
            ),
            (),
            {"example.com/b": 1, "example.com/out": 7},
            id="outputs from several inputs accumulate",
        ),
        pytest.param(
            {"cpu": "-1", "memory": "1Ki"},
            (),
            (),
            {"cpu": 0, "memory": 1024},
            id="negative request floored to zero",
        ),
        pytest.param(
            {"cpu": "0.0001", "memory": "0.5", "example.com/x": "1500m"},
            (),
            (),
            {"cpu": 1, "memory": 1, "example.com/x": 2},
            id="integer conversion rounds up",
        ),
    ],
)
def test_per_pod_integer_requests(
    requests: dict[str, str],
    transformations: tuple[ResourceTransformation, ...],
    prefixes: tuple[str, ...],
    want: dict[str, int],
) -> None:
    spec = {"containers": [container(requests)]}
    assert per_pod_integer_requests(spec, prefixes, transformations) == want


def test_transformations_accept_mapping_and_list() -> None:
    spec = {"containers": [container({"nvidia.com/gpu": "1"})]}
    want = {"nvidia.com/gpu": 1, "example.com/accelerator-memory": 40 * 1024, "example.com/credits": 100}
    assert per_pod_integer_requests(spec, transformations=list(MIG_AND_GPU)) == want
    assert per_pod_integer_requests(spec, transformations={t.input: t for t in MIG_AND_GPU}) == want


def test_resource_transformation_validation_and_hash() -> None:
    with pytest.raises(ValueError, match="strategy"):
        ResourceTransformation("cpu", "Drop")
    a = ResourceTransformation("cpu", REPLACE, {"x": "1"})
    b = ResourceTransformation("cpu", REPLACE, {"x": "1"})
    assert a == b
    assert hash(a) == hash(b)
    assert a.factors == (("x", Fraction(1)),)


@pytest.mark.parametrize(
    ("count", "reclaimable", "want"),
    [
        pytest.param(5, 0, {"cpu": 50, "memory": 50 * 1024}, id="pending"),
        pytest.param(5, 2, {"cpu": 30, "memory": 30 * 1024}, id="pending with reclaim"),
        pytest.param(2, 5, {"cpu": 0, "memory": 0}, id="reclaim larger than count"),
    ],
)
def test_podset_total_requests_reclaim(count: int, reclaimable: int, want: dict[str, int]) -> None:
    ps = podset("main", count, {"cpu": "10m", "memory": "10Ki"})
    assert podset_total_requests(ps, reclaimable) == want


def test_podset_total_requests_saturates() -> None:
    ps = podset("main", 4, {"memory": "4Ei", "cpu": "8E"})
    assert podset_total_requests(ps) == {"memory": MAX_INT64, "cpu": MAX_INT64}


# --- admitted usage (upstream ``totalRequestsFromAdmission``) ----------------------------------------


@pytest.mark.parametrize(
    ("usage", "admitted_count", "spec_count", "reclaimable", "want"),
    [
        pytest.param(
            {"cpu": "30m", "memory": "30Ki"},
            3,
            5,
            2,
            {"cpu": 30, "memory": 30 * 1024},
            id="admitted with reclaim",
        ),
        pytest.param(
            {"cpu": "30m", "memory": "30Ki"},
            3,
            5,
            3,
            {"cpu": 20, "memory": 20 * 1024},
            id="increased reclaim scales down",
        ),
        pytest.param(
            {"cpu": "50m", "memory": "50Ki"},
            5,
            2,
            5,
            {"cpu": 0, "memory": 0},
            id="stale reclaim exceeding count",
        ),
        pytest.param(
            {"cpu": "30m", "memory": "30Ki"},
            3,
            5,
            0,
            {"cpu": 30, "memory": 30 * 1024},
            id="partially admitted",
        ),
        pytest.param({"cpu": "50m"}, None, 5, 0, {"cpu": 50}, id="count defaults to spec count"),
        pytest.param({"cpu": "50m"}, None, 5, 1, {"cpu": 40}, id="nil count with reclaim"),
        pytest.param({"cpu": "10m"}, 3, 3, 1, {"cpu": 6}, id="integer division first"),
    ],
)
def test_admitted_usage(
    usage: dict[str, str], admitted_count: int | None, spec_count: int, reclaimable: int, want: dict[str, int]
) -> None:
    psa = PodSetAssignment(
        name="main", flavors={"cpu": "f1"}, resource_usage=dict(usage), count=admitted_count
    )
    assert admitted_usage(psa, spec_count, reclaimable) == want


# --- taints and tolerations (upstream ``checkFlavorForPodSets``) -------------------------------------


def test_format_taint() -> None:
    assert format_taint(Taint(key="key", value="val", effect="NoSchedule")) == "{key val NoSchedule <nil>}"
    assert format_taint(Taint(key="key", effect="NoExecute")) == "{key  NoExecute <nil>}"
    added = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert format_taint(Taint(key="k", value="v", effect="NoSchedule", time_added=added)) == (
        "{k v NoSchedule 2024-01-02 03:04:05 +0000 UTC}"
    )


TAINT = Taint(key="dedicated", value="gpu", effect="NoSchedule")


@pytest.mark.parametrize(
    ("toleration", "taint", "want"),
    [
        pytest.param(Toleration(operator="Exists"), TAINT, True, id="empty key Exists tolerates everything"),
        pytest.param(Toleration(key="dedicated", value="gpu"), TAINT, True, id="operator defaults to Equal"),
        pytest.param(Toleration(key="dedicated", value="cpu"), TAINT, False, id="Equal value mismatch"),
        pytest.param(Toleration(key="dedicated", operator="Exists"), TAINT, True, id="Exists any value"),
        pytest.param(Toleration(key="other", operator="Exists"), TAINT, False, id="key mismatch"),
        pytest.param(
            Toleration(key="dedicated", operator="Equal", value="gpu", effect="NoExecute"),
            TAINT,
            False,
            id="effect mismatch",
        ),
        pytest.param(
            Toleration(key="dedicated", operator="Equal", value="gpu", effect="NoSchedule"),
            TAINT,
            True,
            id="effect match",
        ),
        pytest.param(
            Toleration(key="dedicated", operator="Bogus", value="gpu"), TAINT, False, id="unknown operator"
        ),
        pytest.param(
            Toleration(key="level", operator="Lt", value="10"),
            Taint(key="level", value="5", effect="NoSchedule"),
            True,
            id="Lt taint below toleration",
        ),
        pytest.param(
            Toleration(key="level", operator="Gt", value="10"),
            Taint(key="level", value="5", effect="NoSchedule"),
            False,
            id="Gt taint below toleration",
        ),
        pytest.param(
            Toleration(key="level", operator="Gt", value="10"),
            Taint(key="level", value="05", effect="NoSchedule"),
            False,
            id="Gt non-canonical integer never matches",
        ),
        # compareNumericValues (k8s.io/api core/v1 toleration.go) checks both values with
        # content.IsDecimalInteger, which rejects "-0" (and "+5") before strconv.ParseInt.
        pytest.param(
            Toleration(key="level", operator="Gt", value="-0"),
            Taint(key="level", value="5", effect="NoSchedule"),
            False,
            id="Gt toleration value -0 is not a decimal integer",
        ),
        pytest.param(
            Toleration(key="level", operator="Lt", value="10"),
            Taint(key="level", value="-0", effect="NoSchedule"),
            False,
            id="Lt taint value -0 is not a decimal integer",
        ),
        pytest.param(
            Toleration(key="level", operator="Gt", value="+1"),
            Taint(key="level", value="5", effect="NoSchedule"),
            False,
            id="Gt toleration value with a plus sign is not a decimal integer",
        ),
        pytest.param(
            Toleration(key="level", operator="Gt", value="-3"),
            Taint(key="level", value="0", effect="NoSchedule"),
            True,
            id="Gt negative toleration value below a zero taint",
        ),
    ],
)
def test_tolerates(toleration: Toleration, taint: Taint, want: bool) -> None:
    assert tolerates(toleration, taint) is want


def test_first_untolerated_taint() -> None:
    taints = [
        Taint(key="soft", value="x", effect="PreferNoSchedule"),
        Taint(key="a", value="1", effect="NoSchedule"),
        Taint(key="b", value="2", effect="NoExecute"),
    ]
    assert first_untolerated_taint(taints, []) == taints[1]
    assert first_untolerated_taint(taints, [Toleration(key="a", operator="Exists")]) == taints[2]
    tolerations = [Toleration(key="a", operator="Exists"), Toleration(key="b", value="2")]
    assert first_untolerated_taint(taints, tolerations) is None
    assert first_untolerated_taint(taints, [Toleration(operator="Exists")]) is None
    assert first_untolerated_taint([], []) is None


def test_pod_tolerations() -> None:
    spec = {
        "tolerations": [{"key": "a", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 30}]
    }
    assert pod_tolerations(spec) == [
        Toleration(key="a", operator="Exists", effect="NoSchedule", toleration_seconds=30)
    ]
    assert pod_tolerations({}) == []


# --- node selector / affinity restricted to a flavor's keys (upstream ``flavorSelector``) -----------

MULTI_KEY_SPEC: dict[str, Any] = {
    "nodeSelector": {"spot": "true"},
    "affinity": required_affinity([expr("instance", "In", "a", "b")]),
}


@pytest.mark.parametrize(
    ("spec", "labels", "want"),
    [
        pytest.param({}, {"instance": "a"}, True, id="no selection accepts any flavor"),
        pytest.param(
            {"nodeSelector": {"instance": "a"}}, {}, True, id="flavor without labels accepts anything"
        ),
        pytest.param(
            MULTI_KEY_SPEC,
            {"instance": "a"},
            True,
            id="multiple flavors with different label keys: flavor keyed by instance",
        ),
        pytest.param(
            MULTI_KEY_SPEC,
            {"spot": "true"},
            True,
            id="multiple flavors with different label keys: flavor keyed by spot",
        ),
        pytest.param(MULTI_KEY_SPEC, {"instance": "c"}, False, id="own key value not selected"),
        pytest.param(MULTI_KEY_SPEC, {"spot": "false"}, False, id="own selector key mismatches"),
        pytest.param(
            MULTI_KEY_SPEC, {"spot": "true", "instance": "c"}, False, id="both keys evaluated when both owned"
        ),
        pytest.param(
            {"affinity": required_affinity([expr("zone", "In", "z1")], [expr("zone", "In", "z2")])},
            {"zone": "z2"},
            True,
            id="terms ORed",
        ),
        pytest.param(
            {"affinity": required_affinity([expr("zone", "In", "z1"), expr("tier", "In", "gold")])},
            {"zone": "z1", "tier": "silver"},
            False,
            id="expressions ANDed",
        ),
        pytest.param(
            {"affinity": required_affinity([expr("zone", "In", "z1")], [expr("other", "In", "x")])},
            {"zone": "z2"},
            True,
            id="a term emptied by restriction drops the whole affinity",
        ),
        pytest.param(
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchFields": [
                                        {"key": "metadata.name", "operator": "In", "values": ["n1"]}
                                    ]
                                }
                            ]
                        }
                    }
                }
            },
            {"zone": "z1"},
            True,
            id="matchFields are dropped",
        ),
        pytest.param(
            {"affinity": required_affinity([expr("zone", "NotIn", "z1")])},
            {"zone": "z1"},
            False,
            id="NotIn excludes",
        ),
        pytest.param(
            {"affinity": required_affinity([expr("zone", "NotIn", "z1")])},
            {"zone": "z2"},
            True,
            id="NotIn other value",
        ),
        pytest.param(
            {"affinity": required_affinity([expr("zone", "Exists")])}, {"zone": "z1"}, True, id="Exists"
        ),
        pytest.param(
            {"affinity": required_affinity([expr("zone", "DoesNotExist")])},
            {"zone": "z1"},
            False,
            id="DoesNotExist on an owned key",
        ),
        pytest.param(
            {"affinity": required_affinity([expr("gpus", "Gt", "4")])},
            {"gpus": "8"},
            True,
            id="node affinity with Gt",
        ),
        pytest.param(
            {"affinity": required_affinity([expr("gpus", "Lt", "4")])},
            {"gpus": "8"},
            False,
            id="node affinity with Lt",
        ),
        pytest.param(
            {"affinity": required_affinity([expr("gpus", "Lt", "16"), expr("gpus", "Gt", "4")])},
            {"gpus": "8"},
            True,
            id="node affinity with Gt and Lt range",
        ),
        pytest.param(
            {"affinity": required_affinity([expr("gpus", "Gt", "4")])},
            {"gpus": "many"},
            False,
            id="Gt against a non-integer label",
        ),
        pytest.param(
            {
                "affinity": {
                    "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1}]}
                }
            },
            {"zone": "z1"},
            True,
            id="preferred affinity ignored",
        ),
        pytest.param(
            {"affinity": required_affinity([expr("zone", "Bogus")], [expr("zone", "In", "z1")])},
            {"zone": "z1"},
            True,
            id="malformed term ignored when another term matches",
        ),
        pytest.param(
            {"affinity": required_affinity([expr("zone", "In", "z1"), expr("other", "Bogus")])},
            {"zone": "z1"},
            True,
            id="malformed expression on a foreign key is dropped before validation",
        ),
        pytest.param(
            {"nodeSelector": {"zone": "z2"}, "affinity": required_affinity([expr("zone", "Bogus")])},
            {"zone": "z1"},
            False,
            id="node selector mismatch wins over a malformed affinity",
        ),
    ],
)
def test_matches_flavor_node_labels(spec: dict[str, Any], labels: dict[str, str], want: bool) -> None:
    assert matches_flavor_node_labels(spec, labels) is want


E0 = "nodeSelectorTerms[0].matchExpressions[0]"


@pytest.mark.parametrize(
    ("exprs", "message"),
    [
        pytest.param(
            [expr("zone", "Bogus")], f'{E0}.operator: Unsupported value: "Bogus"', id="unknown operator"
        ),
        pytest.param(
            [expr("zone", "In")],
            f"{E0}.values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty",
            id="In without values",
        ),
        pytest.param(
            [{"key": "zone", "operator": "NotIn", "values": []}],
            f"{E0}.values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty",
            id="NotIn with empty values",
        ),
        pytest.param(
            [expr("zone", "Gt", "1", "2")],
            f"{E0}.values: Invalid value: [\"1\",\"2\"]: for 'Gt', 'Lt' operators, exactly one value is required",
            id="Gt with two values",
        ),
        pytest.param(
            [expr("zone", "Lt", "abc")],
            f"{E0}.values[0]: Invalid value: \"abc\": for 'Gt', 'Lt' operators, the value must be an integer",
            id="Lt with a non-integer",
        ),
        pytest.param(
            [expr("zone", "Exists", "z1")],
            f'{E0}.values: Invalid value: ["z1"]: values set must be empty for exists and does not exist',
            id="Exists with values",
        ),
        pytest.param(
            [expr("zone", "In", "not valid")],
            f'{E0}.values[0][zone]: Invalid value: "not valid": a valid label must be an empty string',
            id="invalid label value",
        ),
        pytest.param(
            [expr("zone", "Bogus"), expr("zone", "Gt")],
            f'[{E0}.operator: Unsupported value: "Bogus", nodeSelectorTerms[0].matchExpressions[1].values: '
            "Invalid value: null: for 'Gt', 'Lt' operators, exactly one value is required]",
            id="several errors aggregated",
        ),
    ],
)
def test_malformed_selector(exprs: list[dict[str, Any]], message: str) -> None:
    spec = {"affinity": required_affinity(exprs)}
    with pytest.raises(SelectorError) as info:
        matches_flavor_node_labels(spec, {"zone": "z1"})
    assert str(info.value).startswith(message)
    assert isinstance(info.value, ValueError)


# --- adjustments hook (upstream ``workload.AdjustResources``) ----------------------------------------


def test_adjust_pod_spec_runtime_class_overhead() -> None:
    spec = {"runtimeClassName": "kata", "containers": [container({"cpu": "1"})]}
    adjusted = adjust_pod_spec(spec, runtime_class_overhead={"cpu": "250m"})
    assert adjusted["overhead"] == {"cpu": "250m"}
    assert "overhead" not in spec
    assert pod_requests(adjusted) == {"cpu": Fraction(5, 4)}
    kept = adjust_pod_spec({**spec, "overhead": {"cpu": "1"}}, runtime_class_overhead={"cpu": "250m"})
    assert kept["overhead"] == {"cpu": "1"}
    assert "overhead" not in adjust_pod_spec({"containers": []}, runtime_class_overhead={"cpu": "1"})


def test_adjust_pod_spec_limit_range_defaults() -> None:
    limit_ranges: list[dict[str, Any]] = [
        {
            "spec": {
                "limits": [{"type": "Container", "defaultRequest": {"cpu": "100m"}, "default": {"cpu": "1"}}]
            }
        },
        {"limits": [{"type": "Container", "defaultRequest": {"cpu": "300m", "memory": "1Gi"}}]},
    ]
    spec = {
        "containers": [container({"memory": "2Gi"}), container()],
        "initContainers": [container(limits={"cpu": "2"})],
    }
    adjusted = adjust_pod_spec(spec, limit_ranges=limit_ranges)
    assert adjusted["containers"][0]["resources"] == {
        "requests": {"cpu": "100m", "memory": "2Gi"},
        "limits": {"cpu": "1"},
    }
    assert adjusted["initContainers"][0]["resources"] == {
        "requests": {"cpu": "100m", "memory": "1Gi"},
        "limits": {"cpu": "2"},
    }
    assert spec["containers"][1] == container()  # input untouched
    assert pod_requests(adjusted) == {"cpu": Fraction(2, 10), "memory": Fraction(3 * 2**30)}


# Upstream ``TestAdjustResources`` (pkg/workload/resources_test.go), case by case. Each pod set is
# ``MakePodSet``'s one container "c" (``Request``/``Limit``), init containers, pod-level
# ``resources`` and runtime class; ``adjust_pod_spec`` takes the overhead of the RuntimeClass the
# spec names (looked up here, as its caller does) and the namespace's LimitRanges. Upstream also
# writes the limits as missing requests; pykueue's ``pod_requests`` applies that rule itself, so for
# those the effective requests are compared (``pod_requests`` of the result against upstream's
# ``wantWl``), and the resources themselves otherwise.


def _ps(
    requests: dict[str, Any] | None = None,
    limits: dict[str, Any] | None = None,
    *,
    init: list[dict[str, Any]] | None = None,
    pod_requests_: dict[str, Any] | None = None,
    pod_limits: dict[str, Any] | None = None,
    runtime_class: str | None = None,
    overhead: dict[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [container(requests or {}, limits)]}
    if init is not None:
        spec["initContainers"] = init
    if pod_requests_ is not None or pod_limits is not None:
        spec["resources"] = {
            **({"requests": pod_requests_} if pod_requests_ is not None else {}),
            **({"limits": pod_limits} if pod_limits is not None else {}),
        }
    if runtime_class is not None:
        spec["runtimeClassName"] = runtime_class
    if overhead is not None:
        spec["overhead"] = overhead
    return spec


def _init(requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if limits is not None:
        resources["limits"] = limits
    if requests is not None:
        resources["requests"] = requests
    return {"resources": resources}


def _limit_range(kind: str, **values: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"limits": [{"type": kind, **values}]}}


_OH1 = {"cpu": "1", "memory": "1Ki"}  # defaultResourceQuantity(cpu, 1), (memory, 1024)
_OH2 = {"cpu": "2", "memory": "2Ki"}
_CPU_RANGE = {"default": {"cpu": "4"}, "defaultRequest": {"cpu": "3"}, "max": {"cpu": "5"}, "min": {"cpu": "2"}}

ADJUST_RESOURCES: list[Any] = [
    pytest.param(
        {"runtime-a": _OH1},
        [],
        [
            _ps(runtime_class="runtime-a"),
            _ps(),
            _ps(runtime_class="runtime-a", overhead=_OH2),
            _ps(runtime_class="runtime-d"),
            _ps(runtime_class="runtime-e", overhead=_OH2),
        ],
        [
            _ps(runtime_class="runtime-a", overhead=_OH1),
            _ps(),
            _ps(runtime_class="runtime-a", overhead=_OH2),
            _ps(runtime_class="runtime-d"),
            _ps(runtime_class="runtime-e", overhead=_OH2),
        ],
        True,
        id="Handle runtimeClass with podOverHead",
    ),
    pytest.param(
        {"runtime-a": None},
        [],
        [
            _ps(runtime_class="runtime-a"),
            _ps(),
            _ps(runtime_class="runtime-a", overhead=_OH1),
            _ps(runtime_class="runtime-d"),
            _ps(runtime_class="runtime-e", overhead=_OH1),
        ],
        [
            _ps(runtime_class="runtime-a"),
            _ps(),
            _ps(runtime_class="runtime-a", overhead=_OH1),
            _ps(runtime_class="runtime-d"),
            _ps(runtime_class="runtime-e", overhead=_OH1),
        ],
        True,
        id="Handle runtimeClass without podOverHead",
    ),
    pytest.param(
        {},
        [_limit_range("Container", **_CPU_RANGE)],
        [
            _ps(init=[{}]),
            _ps(limits={"cpu": "6"}, init=[{}]),
            _ps({"cpu": "1"}, init=[{}]),
        ],
        [
            _ps({"cpu": "3"}, {"cpu": "4"}, init=[_init({"cpu": "3"}, {"cpu": "4"})]),
            _ps({"cpu": "3"}, {"cpu": "6"}, init=[_init({"cpu": "3"}, {"cpu": "4"})]),
            _ps({"cpu": "1"}, {"cpu": "4"}, init=[_init({"cpu": "3"}, {"cpu": "4"})]),
        ],
        True,
        id="Handle container limit range",
    ),
    pytest.param(
        {},
        [_limit_range("Pod", **_CPU_RANGE)],
        [_ps(), _ps({"cpu": "1"}, {"cpu": "6"})],
        [_ps(), _ps({"cpu": "1"}, {"cpu": "6"})],
        True,
        id="Handle pod limit range",
    ),
    pytest.param(
        {},
        [
            _limit_range(
                "Pod",
                default={"cpu": "4", "memory": "1Gi"},
                defaultRequest={"cpu": "3", "memory": "512Mi"},
            )
        ],
        [_ps(pod_limits={"memory": "2Gi"}), _ps(pod_limits={"cpu": "6"}, pod_requests_={"cpu": "1"})],
        [
            _ps(pod_limits={"cpu": "4", "memory": "2Gi"}, pod_requests_={"cpu": "3", "memory": "512Mi"}),
            _ps(pod_limits={"cpu": "6", "memory": "1Gi"}, pod_requests_={"cpu": "1", "memory": "512Mi"}),
        ],
        True,
        id="Handle pod-level resources with pod limit range",
    ),
    pytest.param(
        {},
        [_limit_range("Container")],
        [_ps(), _ps({"cpu": "1"}, {"cpu": "6"})],
        [_ps(), _ps({"cpu": "1"}, {"cpu": "6"})],
        True,
        id="Handle empty container limit range",
    ),
    pytest.param(
        {},
        [],
        [
            _ps(pod_limits={"cpu": "1", "memory": "1Gi"}),
            _ps(pod_requests_={"cpu": "2"}, pod_limits={"cpu": "3", "memory": "1Gi"}),
        ],
        [
            _ps(pod_limits={"cpu": "1", "memory": "1Gi"}, pod_requests_={"cpu": "1", "memory": "1Gi"}),
            _ps(pod_requests_={"cpu": "2", "memory": "1Gi"}, pod_limits={"cpu": "3", "memory": "1Gi"}),
        ],
        False,
        id="Apply pod-level limits to requests",
    ),
    pytest.param(
        {},
        [],
        [
            _ps(limits={"cpu": "1", "memory": "1Gi"}, init=[_init(limits={"cpu": "1", "memory": "1"})]),
            _ps(
                {"cpu": "2"},
                {"cpu": "3", "memory": "1Gi"},
                init=[_init({"cpu": "2"}, {"cpu": "3", "memory": "1"})],
            ),
            _ps(
                {"memory": "1Gi"},
                {"cpu": "1", "memory": "3Gi"},
                init=[_init({"memory": "1"}, {"cpu": "1", "memory": "3"})],
            ),
            _ps(limits={"cpu": "1"}, init=[_init(limits={"cpu": "1"})]),
            _ps({"memory": "1Gi"}, init=[_init({"memory": "1"})]),
        ],
        [
            _ps(
                {"cpu": "1", "memory": "1Gi"},
                {"cpu": "1", "memory": "1Gi"},
                init=[_init({"cpu": "1", "memory": "1"}, {"cpu": "1", "memory": "1"})],
            ),
            _ps(
                {"cpu": "2", "memory": "1Gi"},
                {"cpu": "3", "memory": "1Gi"},
                init=[_init({"cpu": "2", "memory": "1"}, {"cpu": "3", "memory": "1"})],
            ),
            _ps(
                {"cpu": "1", "memory": "1Gi"},
                {"cpu": "1", "memory": "3Gi"},
                init=[_init({"cpu": "1", "memory": "1"}, {"cpu": "1", "memory": "3"})],
            ),
            _ps({"cpu": "1"}, {"cpu": "1"}, init=[_init({"cpu": "1"}, {"cpu": "1"})]),
            _ps({"memory": "1Gi"}, init=[_init({"memory": "1"})]),
        ],
        False,
        id="Apply limits to requests",
    ),
]


@pytest.mark.parametrize(("runtime_classes", "limit_ranges", "pod_sets", "want", "same_resources"), ADJUST_RESOURCES)
def test_adjust_resources(
    runtime_classes: dict[str, dict[str, Any] | None],
    limit_ranges: list[dict[str, Any]],
    pod_sets: list[dict[str, Any]],
    want: list[dict[str, Any]],
    same_resources: bool,
) -> None:
    for spec, want_spec in zip(pod_sets, want, strict=True):
        adjusted = adjust_pod_spec(
            spec,
            runtime_class_overhead=runtime_classes.get(spec.get("runtimeClassName") or ""),
            limit_ranges=limit_ranges,
        )
        assert pod_requests(adjusted) == pod_requests(want_spec)
        if same_resources:
            assert adjusted == want_spec


# --- scheduling hash (upstream ``computeSchedulingHash``) --------------------------------------------


def _hash_of(spec: dict[str, Any], priority: int = 0, count: int = 1) -> str:
    total = {k: v * count for k, v in per_pod_integer_requests(spec).items()}
    return scheduling_hash(
        priority, [PodSetHashInput("main", scheduling_shape(spec), count, total, None, None)]
    )


def test_scheduling_hash_is_deterministic_and_canonical() -> None:
    a = {"containers": [container({"cpu": "1", "memory": "1Gi"})], "nodeSelector": {"x": "y"}}
    b = {"nodeSelector": {"x": "y"}, "containers": [container({"memory": "1073741824", "cpu": "1000m"})]}
    h = _hash_of(a)
    assert re.fullmatch(r"[0-9a-f]{16}", h)
    assert h == _hash_of(b)
    assert scheduling_shape(a) == scheduling_shape(b)


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"tolerations": [{"key": "k", "operator": "Exists"}]}, id="tolerations"),
        pytest.param({"priorityClassName": "high"}, id="priority class"),
        pytest.param({"runtimeClassName": "kata"}, id="runtime class"),
        pytest.param({"overhead": {"cpu": "1"}}, id="overhead"),
        pytest.param({"resources": {"requests": {"cpu": "2"}}}, id="pod-level requests"),
        pytest.param({"topologySpreadConstraints": [{"maxSkew": 1}]}, id="topology spread"),
        pytest.param({"affinity": required_affinity([expr("zone", "In", "z1")])}, id="affinity"),
    ],
)
def test_scheduling_shape_covers_fields(change: dict[str, Any]) -> None:
    base = {"containers": [container({"cpu": "1"})]}
    assert scheduling_shape(base) != scheduling_shape({**base, **change})


def test_scheduling_hash_inputs() -> None:
    spec = {"containers": [container({"cpu": "1"})]}
    shape = scheduling_shape(spec)
    base = scheduling_hash(1, [("main", shape, 2, {"cpu": 2000}, None, None)])
    assert base == scheduling_hash(1, [PodSetHashInput("main", shape, 2, {"cpu": 2000}, None, None)])
    variants = [
        scheduling_hash(2, [("main", shape, 2, {"cpu": 2000}, None, None)]),
        scheduling_hash(1, [("other", shape, 2, {"cpu": 2000}, None, None)]),
        scheduling_hash(1, [("main", shape, 3, {"cpu": 2000}, None, None)]),
        scheduling_hash(1, [("main", shape, 2, {"cpu": 3000}, None, None)]),
        scheduling_hash(1, [("main", shape, 2, {"cpu": 2000}, 1, None)]),
        scheduling_hash(1, [("main", shape, 2, {"cpu": 2000}, None, {"required": "rack"})]),
    ]
    assert base not in variants
    assert len(set(variants)) == len(variants)
