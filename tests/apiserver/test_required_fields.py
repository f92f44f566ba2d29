"""The CRDs' ``required`` lists as ``serve`` enforces them, and as pykueue's own encoder honours them.

The lists come from the generated CRD schemas (``crdgen.shared_kueue_schema``, compared with
upstream's in test_crd_parity.py); these tests check the walk itself (OpenAPI defaults, ratcheting,
map-list pairing) and that nothing pykueue encodes from its typed model lacks a required property.
"""

from __future__ import annotations

import typing
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from pykueue.api import kueue as k
from pykueue.api.conversion import _ALWAYS_SERIALISED, to_external
from pykueue.api.meta import EPOCH, ObjectMeta
from pykueue.apiserver import crdgen
from pykueue.apiserver.builtin.schema import missing_required
from pykueue.apiserver.resources import REGISTRY

WL_V1BETA2 = crdgen.shared_kueue_schema("Workload", crdgen.V1BETA2)
WL_V1BETA1 = crdgen.shared_kueue_schema("Workload", crdgen.V1BETA1)
CHECK = {"name": "a", "state": "Pending", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}


def _fields(errs: list[Any]) -> list[str]:
    return [f"{e.field}: {e.body()}" for e in errs]


def test_absent_required_properties_are_named_with_their_paths() -> None:
    status = {"admissionChecks": [CHECK, {"name": "b", "state": "Ready"}]}
    assert _fields(missing_required({"status": status}, WL_V1BETA2)) == [
        "status.admissionChecks[1].lastTransitionTime: Required value",
        "status.admissionChecks[1].message: Required value",
    ]


def test_a_required_property_with_an_openapi_default_is_defaulted_not_missing() -> None:
    # v1beta1 podSets[].count and podSetAssignments[].name have ``default``s; v1beta2 has neither required
    wl = {"spec": {"podSets": [{"name": "main", "template": {}}]}, "status": {"admission": {"clusterQueue": "cq", "podSetAssignments": [{}]}}}
    assert missing_required(wl, WL_V1BETA1) == []
    assert _fields(missing_required({"spec": {"podSets": [{"count": 1}]}}, WL_V1BETA1)) == [
        "spec.podSets[0].template: Required value"
    ]


def test_cluster_queue_is_required_in_v1beta1_only() -> None:
    wl = {"status": {"admission": {"podSetAssignments": []}}}
    assert missing_required(wl, WL_V1BETA2) == []
    assert _fields(missing_required(wl, WL_V1BETA1)) == ["status.admission.clusterQueue: Required value"]


def test_unchanged_values_keep_their_errors_ratcheting() -> None:
    old = {"status": {"admissionChecks": [{"name": "a", "state": "Ready"}], "admission": {"podSetAssignments": []}}}
    new = {"status": {**old["status"], "conditions": []}}
    assert missing_required(new, WL_V1BETA1, old) == []  # admissionChecks (a map list) item paired by name
    moved = {"status": {"admissionChecks": [{"name": "b", "state": "Ready"}, {"name": "a", "state": "Ready"}]}}
    assert _fields(missing_required(moved, WL_V1BETA2, old)) == [
        "status.admissionChecks[0].lastTransitionTime: Required value",
        "status.admissionChecks[0].message: Required value",
    ]
    changed = {"status": {"admissionChecks": [{"name": "a", "state": "Pending"}]}}
    assert len(missing_required(changed, WL_V1BETA2, old)) == 2
    assert _fields(missing_required(new, WL_V1BETA1)) == [
        "status.admission.clusterQueue: Required value",
        "status.admissionChecks[0].lastTransitionTime: Required value",
        "status.admissionChecks[0].message: Required value",
    ]


def test_only_the_kinds_the_model_reads_are_checked_before_it() -> None:
    job = REGISTRY.by_kind("batch", "Job")
    assert job is not None and not job.missing_required_checked
    for kind in k.KIND_TYPES:
        info = REGISTRY.by_kind(k.GROUP, kind)
        if info is not None:
            assert info.missing_required_checked, kind


# --- the encoder writes what the CRDs require ---------------------------------------------------------


def _structs(cls: type, seen: set[type]) -> None:
    if cls in seen:
        return
    seen.add(cls)
    for field in msgspec.structs.fields(cls):
        stack = [field.type]
        while stack:
            t = stack.pop()
            if isinstance(t, type) and issubclass(t, msgspec.Struct):
                _structs(t, seen)
            stack.extend(typing.get_args(t))


def _kueue_structs() -> list[type]:
    seen: set[type] = set()
    for cls in k.KIND_TYPES.values():
        _structs(cls, seen)
    return sorted(seen, key=lambda c: c.__name__)


def _go_null(default: Any) -> bool:
    """Whether Go marshals the zero value as ``null`` (nil slice or map, zero time, nil pointer):
    kube-apiserver drops a null before validation, so omitting it is what Go's client does too."""
    return default is None or default == [] or default == {} or default == EPOCH


@pytest.mark.parametrize("cls", _kueue_structs(), ids=lambda c: c.__name__)
def test_every_required_property_the_model_defaults_is_always_written(cls: type) -> None:
    """A required property the model gives a default is written even at that default (as Go writes
    fields without ``omitempty``), or serve and a real kube-apiserver refuse pykueue's own writes."""
    schema = crdgen.struct_schema(cls)
    required = set(schema.get("required") or [])
    always = _ALWAYS_SERIALISED.get(cls, frozenset())
    defaulted = {
        f.encode_name: f.name
        for f in msgspec.structs.fields(cls)
        if not f.required and not _go_null(f.default_factory() if f.default is msgspec.NODEFAULT else f.default)
    }
    unwritten = sorted(name for name in required & set(defaulted) if defaulted[name] not in always)
    assert unwritten == [], f"{cls.__name__}: required by the CRD, omitted at their default"


def test_a_workload_encoded_at_its_defaults_passes_the_check() -> None:
    checked = datetime(2026, 1, 1, tzinfo=UTC)
    wl = k.Workload(
        metadata=ObjectMeta(name="w", namespace="ns"),
        spec=k.WorkloadSpec(pod_sets=[k.PodSet(template={"spec": {"containers": [{"name": "c"}]}})]),
        status=k.WorkloadStatus(
            admission=k.Admission(pod_set_assignments=[k.PodSetAssignment()]),
            admission_checks=[k.AdmissionCheckState(name="a", state="Ready", last_transition_time=checked)],
        ),
    )
    for version, schema in ((k.V1BETA2, WL_V1BETA2), (k.V1BETA1, WL_V1BETA1)):
        assert missing_required(to_external(wl, version), schema) == [], version
