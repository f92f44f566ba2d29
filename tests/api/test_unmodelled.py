"""Features pykueue does not implement are found in the objects that ask for them."""

from __future__ import annotations

from typing import Any

import pytest

from pykueue.api.unmodelled import ELASTIC, MULTIKUEUE, TAS, unmodelled_features

KUEUE = "kueue.x-k8s.io"


def job_with_annotations(annotations: dict[str, str]) -> dict[str, Any]:
    return {"spec": {"template": {"metadata": {"annotations": annotations}, "spec": {}}}}


CASES: list[tuple[str, str, str, dict[str, Any], list[tuple[str, str]]]] = [
    (
        "workload topologyRequest",
        KUEUE,
        "Workload",
        {"spec": {"podSets": [{"name": "a"}, {"name": "b", "topologyRequest": {"required": "rack"}}]}},
        [(TAS, "spec.podSets[1].topologyRequest")],
    ),
    ("workload without topology", KUEUE, "Workload", {"spec": {"podSets": [{"name": "a"}]}}, []),
    (
        "workload slice replacement",
        KUEUE,
        "Workload",
        {
            "metadata": {"annotations": {"kueue.x-k8s.io/workload-slice-replacement-for": "default/old-slice"}},
            "spec": {"podSets": [{"name": "a"}]},
        },
        [(ELASTIC, "metadata.annotations[kueue.x-k8s.io/workload-slice-replacement-for]")],
    ),
    (
        "elastic job",
        "batch",
        "Job",
        {"metadata": {"annotations": {"kueue.x-k8s.io/elastic-job": "true"}}, "spec": {"template": {"spec": {}}}},
        [(ELASTIC, "metadata.annotations[kueue.x-k8s.io/elastic-job]")],
    ),
    (
        "job elastic annotation not true",
        "batch",
        "Job",
        {"metadata": {"annotations": {"kueue.x-k8s.io/elastic-job": "false"}}, "spec": {"template": {"spec": {}}}},
        [],
    ),
    (
        "job required topology annotation",
        "batch",
        "Job",
        job_with_annotations({"kueue.x-k8s.io/podset-required-topology": "rack"}),
        [(TAS, "spec.template.metadata.annotations[kueue.x-k8s.io/podset-required-topology]")],
    ),
    (
        "job preferred topology annotation",
        "batch",
        "Job",
        job_with_annotations({"kueue.x-k8s.io/podset-preferred-topology": "rack"}),
        [(TAS, "spec.template.metadata.annotations[kueue.x-k8s.io/podset-preferred-topology]")],
    ),
    ("job without topology", "batch", "Job", job_with_annotations({"other": "x"}), []),
    (
        "flavor with topologyName",
        KUEUE,
        "ResourceFlavor",
        {"spec": {"topologyName": "default"}},
        [(TAS, "spec.topologyName")],
    ),
    ("flavor without topology", KUEUE, "ResourceFlavor", {"spec": {"nodeLabels": {"a": "b"}}}, []),
    ("topology", KUEUE, "Topology", {"spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}]}}, [(TAS, "Topology")]),
    (
        "multikueue admission check",
        KUEUE,
        "AdmissionCheck",
        {"spec": {"controllerName": "kueue.x-k8s.io/multikueue"}},
        [(MULTIKUEUE, "spec.controllerName: kueue.x-k8s.io/multikueue")],
    ),
    (
        "provisioning admission check",
        KUEUE,
        "AdmissionCheck",
        {"spec": {"controllerName": "kueue.x-k8s.io/provisioning-request"}},
        [],
    ),
    ("multikueue config", KUEUE, "MultiKueueConfig", {"spec": {"clusters": ["c"]}}, [(MULTIKUEUE, "MultiKueueConfig")]),
    ("multikueue cluster", KUEUE, "MultiKueueCluster", {"spec": {}}, [(MULTIKUEUE, "MultiKueueCluster")]),
    ("another group's Topology", "example.com", "Topology", {"spec": {}}, []),
]


@pytest.mark.parametrize(("name", "group", "kind", "obj", "expected"), CASES, ids=[c[0] for c in CASES])
def test_unmodelled_features(name: str, group: str, kind: str, obj: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    found = unmodelled_features(group, kind, obj)
    assert [(u.feature, u.field) for u in found] == expected
    for u in found:
        assert u.message.startswith(f"pykueue does not implement {u.feature}: {u.field} is ignored; ")
