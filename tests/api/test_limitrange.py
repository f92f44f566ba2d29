"""A namespace's LimitRanges as Kueue reads them: upstream ``pkg/util/limitrange/limitrange_test.go``
(``TestSummarize``, ``TestValidatePodSpec``) and ``pkg/workload/resources_test.go``
(``TestValidateLimitRange``), case by case under upstream's names."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api.limitrange import (
    ERR_LIMIT_RANGE_CONSTRAINTS,
    REQUESTS_ABOVE_MAX_MESSAGE,
    REQUESTS_BELOW_MIN_MESSAGE,
    has_defaults,
    limit_range_error,
    summarize,
    validate_pod_spec,
)

PATH = "spec.podSets[0].template.spec"


def limit_range(kind: str, **values: dict[str, str]) -> dict[str, Any]:
    """``MakeLimitRange(...).WithType(kind).WithValue(field, name, value)...``: one item."""
    item: dict[str, Any] = {"type": kind}
    for field, resources in values.items():
        item[field] = dict(resources)
    return {"spec": {"limits": [item]}}


def container(requests: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    return {"name": "c", "image": "pause", "resources": {"requests": dict(requests or {})}, **extra}


def _item(summary: Any, kind: str) -> dict[str, dict[str, Any]]:
    s = summary[kind]
    return {
        k: v
        for k, v in (
            ("max", s.max),
            ("min", s.min),
            ("default", s.default),
            ("defaultRequest", s.default_request),
            ("maxLimitRequestRatio", s.max_limit_request_ratio),
        )
        if v
    }


# --- TestSummarize -------------------------------------------------------------------------------------


def test_summarize_empty() -> None:
    assert summarize([]) == {}


def test_summarize_pod_defaults() -> None:
    summary = summarize(
        [
            limit_range("Pod", default={"cpu": "2"}, defaultRequest={"cpu": "500m", "memory": "1Gi"}),
            limit_range("Pod", default={"memory": "2Gi"}, defaultRequest={"cpu": "1"}),
        ]
    )
    assert _item(summary, "Pod") == {
        "default": {"cpu": "2", "memory": "2Gi"},
        "defaultRequest": {"cpu": "500m", "memory": "1Gi"},
    }


def test_summarize_limits() -> None:
    summary = summarize(
        [
            limit_range(
                "Pod",
                max={"cpu": "2"},
                min={"cpu": "500m", "memory": "1Gi"},
                maxLimitRequestRatio={"cpu": "2"},
            ),
            limit_range("Pod", max={"memory": "2Gi"}, min={"cpu": "1"}, maxLimitRequestRatio={"cpu": "500m"}),
        ]
    )
    assert _item(summary, "Pod") == {
        "max": {"cpu": "2", "memory": "2Gi"},
        "min": {"cpu": "1", "memory": "1Gi"},
        "maxLimitRequestRatio": {"cpu": "500m"},
    }


def test_summarize_reads_objects_and_specs_in_order() -> None:
    summary = summarize(
        [
            {"metadata": {"name": "a"}, "spec": {"limits": [{"type": "Container", "max": {"cpu": "3"}}]}},
            {"limits": [{"type": "Container", "max": {"cpu": "2500m"}}]},
        ]
    )
    assert summary["Container"].max == {"cpu": "2500m"}
    assert has_defaults([limit_range("Container", max={"cpu": "1"})])
    assert not has_defaults([limit_range("PersistentVolumeClaim", max={"storage": "1Gi"})])


# --- TestValidatePodSpec ---------------------------------------------------------------------------------


POD_SPEC: dict[str, Any] = {
    "containers": [
        container({"cpu": "1", "memory": "2Gi", "example.com/mainContainerGpu": "2"}),
        container({"cpu": "1.5", "example.com/gpu": "2"}),
    ],
    "initContainers": [
        container({"cpu": "4", "memory": "2Gi"}),
        container({"cpu": "1.5", "example.com/gpu": "2", "example.com/initContainerGpu": "2"}),
    ],
    "overhead": {"cpu": "1", "memory": "1Gi", "example.com/gpu": "1"},
}


def invalid(path: str, names: list[str], detail: str) -> str:
    quoted = ",".join(f'"{n}"' for n in names)
    return f"{path}: Invalid value: [{quoted}]: {detail}"


VALIDATE_POD_SPEC = [
    pytest.param([], None, [], id="empty"),
    pytest.param(
        [limit_range("Container", max={"example.com/initContainerGpu": "1"})],
        None,
        [invalid(f"{PATH}.initContainers[1]", ["example.com/initContainerGpu"], REQUESTS_ABOVE_MAX_MESSAGE)],
        id="init container over",
    ),
    pytest.param(
        [limit_range("Container", min={"example.com/initContainerGpu": "3"})],
        None,
        [invalid(f"{PATH}.initContainers[1]", ["example.com/initContainerGpu"], REQUESTS_BELOW_MIN_MESSAGE)],
        id="init container under",
    ),
    pytest.param(
        [limit_range("Container", max={"example.com/mainContainerGpu": "1"})],
        None,
        [invalid(f"{PATH}.containers[0]", ["example.com/mainContainerGpu"], REQUESTS_ABOVE_MAX_MESSAGE)],
        id="container over",
    ),
    pytest.param(
        [limit_range("Container", min={"example.com/mainContainerGpu": "3"})],
        None,
        [invalid(f"{PATH}.containers[0]", ["example.com/mainContainerGpu"], REQUESTS_BELOW_MIN_MESSAGE)],
        id="container under",
    ),
    pytest.param(
        [limit_range("Pod", max={"cpu": "4"})],
        None,
        [invalid(PATH, ["cpu"], REQUESTS_ABOVE_MAX_MESSAGE)],
        id="pod over",
    ),
    pytest.param(
        [limit_range("Pod", min={"cpu": "6"})],
        None,
        [invalid(PATH, ["cpu"], REQUESTS_BELOW_MIN_MESSAGE)],
        id="pod under",
    ),
    pytest.param(
        [
            limit_range("Pod", max={"cpu": "4"}),
            limit_range("Container", min={"example.com/mainContainerGpu": "3"}),
            limit_range("Container", max={"example.com/initContainerGpu": "1"}),
        ],
        None,
        [
            invalid(f"{PATH}.initContainers[1]", ["example.com/initContainerGpu"], REQUESTS_ABOVE_MAX_MESSAGE),
            invalid(f"{PATH}.containers[0]", ["example.com/mainContainerGpu"], REQUESTS_BELOW_MIN_MESSAGE),
            invalid(PATH, ["cpu"], REQUESTS_ABOVE_MAX_MESSAGE),
        ],
        id="multiple",
    ),
    pytest.param(
        [
            limit_range("Pod", max={"cpu": "5"}),
            limit_range("Container", min={"example.com/mainContainerGpu": "1"}),
            limit_range("Container", max={"example.com/initContainerGpu": "2"}),
        ],
        None,
        [],
        id="multiple valid",
    ),
    pytest.param(
        [limit_range("Container", min={"example.com/mainContainerGpu": "3"})],
        {"containers": [container({"example.com/mainContainerGpu": "0"})]},
        [invalid(f"{PATH}.containers[0]", ["example.com/mainContainerGpu"], REQUESTS_BELOW_MIN_MESSAGE)],
        id="container under with explicit zero",
    ),
    pytest.param(
        [limit_range("Pod", min={"cpu": "6"})],
        {"containers": [container({"cpu": "0"})]},
        [invalid(PATH, ["cpu"], REQUESTS_BELOW_MIN_MESSAGE)],
        id="pod under with explicit zero",
    ),
]


@pytest.mark.parametrize(("ranges", "pod_spec", "want"), VALIDATE_POD_SPEC)
def test_validate_pod_spec(ranges: list[dict[str, Any]], pod_spec: dict[str, Any] | None, want: list[str]) -> None:
    spec = POD_SPEC if pod_spec is None else pod_spec
    assert validate_pod_spec(summarize(ranges), spec, PATH, limits_as_requests=True) == want


def test_validate_pod_spec_limits_count_as_requests_only_when_adjusted() -> None:
    """A limit without a request: the container checks read the highest and lowest of both either
    way; the pod's total counts it only in the scheduler's adjusted copy (``UseLimitsAsMissingRequestsInPod``),
    not in the Workload as the workload controller reads it."""
    spec = {"containers": [{"name": "c", "resources": {"limits": {"cpu": "3"}}}]}
    pod_max = summarize([limit_range("Pod", max={"cpu": "2"})])
    assert validate_pod_spec(pod_max, spec, PATH, limits_as_requests=True) == [
        invalid(PATH, ["cpu"], REQUESTS_ABOVE_MAX_MESSAGE)
    ]
    assert validate_pod_spec(pod_max, spec, PATH, limits_as_requests=False) == []
    container_max = summarize([limit_range("Container", max={"cpu": "2"})])
    for adjusted in (True, False):
        assert validate_pod_spec(container_max, spec, PATH, limits_as_requests=adjusted) == [
            invalid(f"{PATH}.containers[0]", ["cpu"], REQUESTS_ABOVE_MAX_MESSAGE)
        ]


# --- TestValidateLimitRange (pkg/workload/resources_test.go) -----------------------------------------------


def _pod_set(cpu: str, *init: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [container({"cpu": cpu})]}
    if init:
        spec["initContainers"] = list(init)
    return spec


VALIDATE_LIMIT_RANGE = [
    pytest.param(
        [limit_range("Pod", max={"cpu": "1000m"})],
        [_pod_set("300m"), _pod_set("200m")],
        None,
        id="valid case with LimitRange",
    ),
    pytest.param([], [_pod_set("300m"), _pod_set("200m")], None, id="valid case without LimitRange"),
    pytest.param(
        [limit_range("Pod", max={"cpu": "500m"})],
        [_pod_set("300m", container({"cpu": "300m"}, restartPolicy="Always"))],
        f"{ERR_LIMIT_RANGE_CONSTRAINTS}: " + invalid(PATH, ["cpu"], REQUESTS_ABOVE_MAX_MESSAGE),
        id="pod doesn't satisfy LimitRange constraints",
    ),
]


@pytest.mark.parametrize(("ranges", "pod_specs", "want"), VALIDATE_LIMIT_RANGE)
def test_validate_limit_range(ranges: list[dict[str, Any]], pod_specs: list[dict[str, Any]], want: str | None) -> None:
    assert limit_range_error(summarize(ranges), pod_specs, limits_as_requests=False) == want


def test_validate_limit_range_aggregates_pod_sets_in_order() -> None:
    summary = summarize([limit_range("Container", max={"cpu": "1"})])
    got = limit_range_error(summary, [_pod_set("2"), _pod_set("500m"), _pod_set("3")], limits_as_requests=True)
    assert got == (
        f"{ERR_LIMIT_RANGE_CONSTRAINTS}: ["
        + invalid("spec.podSets[0].template.spec.containers[0]", ["cpu"], REQUESTS_ABOVE_MAX_MESSAGE)
        + ", "
        + invalid("spec.podSets[2].template.spec.containers[0]", ["cpu"], REQUESTS_ABOVE_MAX_MESSAGE)
        + "]"
    )
