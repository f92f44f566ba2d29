"""Generated CRDs: committed files are fresh, structurally valid, and agree with the typed model."""

from __future__ import annotations

import glob
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from pykueue.api.manifests import load_manifest_file
from pykueue.apiserver import crdgen
from pykueue.apiserver.builtin.schema import structural_problems, unknown_fields, validate
from pykueue.apiserver.resources import REGISTRY
from pykueue.apiserver.tables import jsonpath

ROOT = Path(__file__).resolve().parents[2]
CRD_DIR = ROOT / "config" / "crd"
GENERATED = crdgen.generate()


def _committed() -> dict[str, str]:
    return {path.name: path.read_text(encoding="utf-8") for path in sorted(CRD_DIR.glob("*.yaml"))}


def test_committed_crds_match_fresh_generation() -> None:
    assert _committed() == GENERATED, "run: python -m pykueue.apiserver.crdgen"


def test_one_crd_per_kueue_kind() -> None:
    kinds = {yaml.safe_load(text)["spec"]["names"]["kind"] for text in GENERATED.values()}
    assert kinds == set(crdgen.KUEUE_KINDS)
    assert len(GENERATED) == 11


def test_main_writes_the_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert crdgen.main(["--out", str(tmp_path)]) == 0
    written = {p.name: p.read_text(encoding="utf-8") for p in tmp_path.glob("*.yaml")}
    assert written == GENERATED
    assert str(tmp_path / "kueue.x-k8s.io_workloads.yaml") in capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_crd_is_well_formed(name: str) -> None:
    crd = yaml.safe_load(GENERATED[name])
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["kind"] == "CustomResourceDefinition"
    spec = crd["spec"]
    names = spec["names"]
    assert crd["metadata"]["name"] == f"{names['plural']}.kueue.x-k8s.io"
    assert names["listKind"] == names["kind"] + "List"
    info = REGISTRY.by_kind("kueue.x-k8s.io", names["kind"])
    assert info is not None
    assert names.get("shortNames", []) == list(info.short_names)
    assert spec["scope"] == ("Namespaced" if info.namespaced else "Cluster")
    versions = {v["name"]: v for v in spec["versions"]}
    assert set(versions) == {"v1beta1", "v1beta2"}
    assert all(v["served"] for v in versions.values())
    assert [n for n, v in versions.items() if v["storage"]] == ["v1beta2"]
    assert versions["v1beta1"].get("deprecated", False) is (names["kind"] != "MultiKueueConfig")
    assert "$ref" not in GENERATED[name]
    assert "&id0" not in GENERATED[name] and "*id0" not in GENERATED[name]  # no YAML aliases
    for version in versions.values():
        schema = version["schema"]["openAPIV3Schema"]
        assert structural_problems(schema) == []
        assert schema["properties"]["metadata"] == {"type": "object"}
        assert ("subresources" in version) is info.status_subresource
        for column in version.get("additionalPrinterColumns", []):
            assert column["type"] in ("string", "integer", "number", "boolean", "date")
            assert column["jsonPath"].startswith(".")
            jsonpath({}, column["jsonPath"])  # parses


def test_printer_columns_and_selectable_fields() -> None:
    def version(kind: str, name: str) -> dict[str, Any]:
        crd = yaml.safe_load(next(t for t in GENERATED.values() if f"kind: {kind}\n" in t))
        return next(v for v in crd["spec"]["versions"] if v["name"] == name)

    cq_v1beta1 = version("ClusterQueue", "v1beta1")["additionalPrinterColumns"]
    cq_v1beta2 = version("ClusterQueue", "v1beta2")["additionalPrinterColumns"]
    assert cq_v1beta1[0]["jsonPath"] == ".spec.cohort"
    assert cq_v1beta2[0]["jsonPath"] == ".spec.cohortName"
    assert [c.get("priority", 0) for c in cq_v1beta2] == [0, 1, 0, 1]
    wl = version("Workload", "v1beta2")
    assert [c["name"] for c in wl["additionalPrinterColumns"]] == [
        "Queue",
        "Reserved in",
        "Admitted",
        "Finished",
        "Age",
    ]
    assert wl["selectableFields"] == [{"jsonPath": ".status.admission.clusterQueue"}]
    assert "selectableFields" not in version("Workload", "v1beta1")
    assert "additionalPrinterColumns" not in version("ResourceFlavor", "v1beta2")


def test_v1beta1_schemas_use_v1beta1_names() -> None:
    cq1 = crdgen.kueue_schema("ClusterQueue", "v1beta1")["properties"]["spec"]["properties"]
    cq2 = crdgen.kueue_schema("ClusterQueue", "v1beta2")["properties"]["spec"]["properties"]
    assert "cohort" in cq1 and "cohortName" not in cq1 and "admissionChecks" in cq1
    assert "cohortName" in cq2 and "cohort" not in cq2 and "admissionChecks" not in cq2
    assert cq1["flavorFungibility"]["properties"]["whenCanBorrow"]["enum"] == [
        "MayStopSearch",
        "TryNextFlavor",
        "Borrow",
    ]
    wl1 = crdgen.kueue_schema("Workload", "v1beta1")["properties"]
    assert {"priorityClassName", "priorityClassSource"} <= set(wl1["spec"]["properties"])
    assert "priorityClassRef" not in wl1["spec"]["properties"]
    assert "accumulatedPastExexcutionTimeSeconds" in wl1["status"]["properties"]
    lq1 = crdgen.kueue_schema("LocalQueue", "v1beta1")["properties"]["status"]["properties"]
    assert "flavorUsage" in lq1 and "flavorsUsage" not in lq1
    mkc1 = crdgen.kueue_schema("MultiKueueCluster", "v1beta1")["properties"]["spec"]["properties"]
    assert set(mkc1) == {"kubeConfig", "clusterProfileRef"}


def test_quantities_are_int_or_string_with_pattern() -> None:
    resources = crdgen.kueue_schema("ClusterQueue", "v1beta2")["properties"]["spec"]["properties"][
        "resourceGroups"
    ]
    quota = resources["items"]["properties"]["flavors"]["items"]["properties"]["resources"]["items"]
    assert quota["required"] == ["name", "nominalQuota"]
    nominal = quota["properties"]["nominalQuota"]
    assert nominal["x-kubernetes-int-or-string"] is True
    assert nominal["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert nominal["pattern"].startswith("^(\\+|-)?")
    limits = crdgen.kueue_schema("Workload", "v1beta2")["properties"]["spec"]["properties"]["podSets"][
        "items"
    ]["properties"]["template"]["properties"]["spec"]["properties"]["containers"]["items"]["properties"][
        "resources"
    ]["properties"]["limits"]["additionalProperties"]
    assert limits["x-kubernetes-int-or-string"] is True and "pattern" in limits
    template_text = json.dumps(crdgen.kueue_schema("Workload", "v1beta2"))
    assert "x-kubernetes-patch-merge-key" not in template_text


def _example_objects() -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "**", "*.yaml"), recursive=True)):
        try:
            objects += load_manifest_file(path)
        except ValueError:
            continue
    return [o for o in objects if str(o.get("apiVersion", "")).startswith("kueue.x-k8s.io/")]


EXAMPLES = _example_objects()


@pytest.mark.skipif(not EXAMPLES, reason="no example manifests")
def test_schemas_cover_every_field_the_model_writes() -> None:
    """Objects from the examples, defaulted through the typed model, only use declared fields."""
    for obj in EXAMPLES:
        info = REGISTRY.by_api_version(obj["apiVersion"], obj["kind"])
        assert info is not None
        storage = info.default(info.to_storage(obj))
        body = {k: v for k, v in storage.items() if k != "metadata"}
        assert unknown_fields(body, info.openapi_schema("v1beta2")) == [], obj["metadata"]
        assert [e for e in validate(body, info.openapi_schema("v1beta2")) if e.type == "TypeInvalid"] == []
        old = info.from_storage(storage, "v1beta1")
        old_body = {k: v for k, v in old.items() if k != "metadata"}
        assert unknown_fields(old_body, info.openapi_schema("v1beta1")) == [], obj["metadata"]


def test_status_writes_carry_every_field_the_crds_require() -> None:
    """Status entries at their defaults (an empty message, underlyingCause or resources list, a
    zero weightedShare) are still written: the CRDs require them, as upstream's do, and a real
    kube-apiserver refuses a status write without them."""
    from datetime import UTC, datetime

    from pykueue.api import kueue as k
    from pykueue.api.conversion import encode
    from pykueue.api.meta import ObjectMeta

    now = datetime(2026, 1, 1, tzinfo=UTC)
    wl = k.Workload(
        metadata=ObjectMeta(name="wl", namespace="ns"),
        spec=k.WorkloadSpec(pod_sets=[k.PodSet(template=k.PodTemplateSpec(spec={"containers": [{"name": "c"}]}))]),
    )
    wl.status = k.WorkloadStatus(
        admission=k.Admission(cluster_queue="cq", pod_set_assignments=[k.PodSetAssignment()]),
        admission_checks=[k.AdmissionCheckState(name="check", state=k.CHECK_PENDING, last_transition_time=now)],
        scheduling_stats=k.SchedulingStats(evictions=[k.WorkloadSchedulingStatsEviction(reason="Preempted", count=1)]),
    )
    usage = [k.FlavorUsage(name="f")]
    cq = k.ClusterQueue(
        metadata=ObjectMeta(name="cq"),
        status=k.ClusterQueueStatus(
            flavors_reservation=usage, flavors_usage=usage, fair_sharing=k.FairSharingStatus()
        ),
    )
    lq_usage = [k.LocalQueueFlavorUsage(name="f")]
    lq = k.LocalQueue(
        metadata=ObjectMeta(name="lq", namespace="ns"),
        spec=k.LocalQueueSpec(cluster_queue="cq"),
        status=k.LocalQueueStatus(flavors_reservation=lq_usage, flavors_usage=lq_usage),
    )
    cohort = k.Cohort(metadata=ObjectMeta(name="co"), status=k.CohortStatus(fair_sharing=k.FairSharingStatus()))
    for obj in (wl, cq, lq, cohort):
        body = {n: v for n, v in encode(obj).items() if n != "metadata"}
        assert "status" in body
        errors = validate(body, crdgen.shared_kueue_schema(obj.kind, crdgen.V1BETA2))
        assert [str(e) for e in errors] == [], obj.kind
