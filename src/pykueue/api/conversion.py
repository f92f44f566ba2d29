"""Conversion between ``kueue.x-k8s.io/v1beta1`` and ``v1beta2`` (upstream ``apis/kueue/v1beta1/*_conversion.go``).

Two layers:

* :func:`convert` works on plain dicts (decoded YAML/JSON) for every Kueue kind, including the
  kinds pykueue does not model (MultiKueueConfig, MultiKueueCluster, Topology), plus the core
  kinds of ``CORE_KIND_VERSIONS`` (Namespace, PriorityClass, LimitRange, RuntimeClass: never converted).
* :func:`to_internal` / :func:`to_external` turn a dict into the typed v1beta2 object of
  ``pykueue.api.kueue`` and back into a dict of any served version.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, Final

import msgspec

from pykueue.api import kueue as k
from pykueue.api.meta import format_time
from pykueue.kube.jsontree import json_copy

KueueObject = k.KueueObject

V1BETA1 = k.V1BETA1
V1BETA2 = k.V1BETA2
SERVED_VERSIONS = (V1BETA1, V1BETA2)

KUEUE_KINDS = frozenset(
    {
        "ResourceFlavor",
        "ClusterQueue",
        "Cohort",
        "LocalQueue",
        "Workload",
        "WorkloadPriorityClass",
        "AdmissionCheck",
        "ProvisioningRequestConfig",
        "MultiKueueConfig",
        "MultiKueueCluster",
        "Topology",
    }
)
"""Every kind served by the Kueue CRDs (both versions)."""

CORE_KIND_VERSIONS: Mapping[str, str] = {
    "Namespace": "v1",
    "PriorityClass": "scheduling.k8s.io/v1",
    "LimitRange": "v1",
    "RuntimeClass": "node.k8s.io/v1",
}
"""Core kinds pykueue reads, with their only apiVersion."""

WPC_SOURCE = "kueue.x-k8s.io/workloadpriorityclass"
POD_PRIORITY_SOURCE = "scheduling.k8s.io/priorityclass"
_PRIORITY_SOURCES: Mapping[str, tuple[str, str]] = {
    WPC_SOURCE: ("kueue.x-k8s.io", "WorkloadPriorityClass"),
    POD_PRIORITY_SOURCE: ("scheduling.k8s.io", "PriorityClass"),
}
_DEPRECATED_FUNGIBILITY = frozenset({"Borrow", "Preempt"})
RETRY_DELAY_MINUTES_DEFAULT = 15


class ConversionError(ValueError):
    """The object cannot be converted: unknown kind, unserved version or missing type info."""


class DecodeError(ConversionError):
    """The converted dict does not fit the typed model; ``field`` is a Kubernetes field path."""

    def __init__(self, obj_ref: str, field: str, detail: str) -> None:
        super().__init__(f"{obj_ref}: {field}: {detail}" if field else f"{obj_ref}: {detail}")
        self.obj_ref = obj_ref
        self.field = field
        self.detail = detail


# --- identification -------------------------------------------------------------------------------


def object_ref(obj: Mapping[str, Any]) -> str:
    """``Kind "name"`` (``Kind "ns/name"`` when namespaced) for messages."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    name = str(meta.get("name") or meta.get("generateName") or "<unnamed>")
    ns = meta.get("namespace")
    kind = obj.get("kind") or "<no kind>"
    return f'{kind} "{ns}/{name}"' if ns else f'{kind} "{name}"'


def identify(obj: Mapping[str, Any]) -> tuple[str, str]:
    """Return ``(kind, apiVersion)``; raise :class:`ConversionError` if unknown or unserved."""
    kind, version = obj.get("kind"), obj.get("apiVersion")
    if not isinstance(kind, str) or not kind:
        raise ConversionError(f"{object_ref(obj)}: object has no 'kind'")
    if not isinstance(version, str) or not version:
        raise ConversionError(f"{object_ref(obj)}: object has no 'apiVersion'")
    if kind in CORE_KIND_VERSIONS:
        _require_version(obj, version, (CORE_KIND_VERSIONS[kind],))
    elif kind in KUEUE_KINDS:
        _require_version(obj, version, SERVED_VERSIONS)
    else:
        raise ConversionError(f'no matches for kind "{kind}" in version "{version}" ({object_ref(obj)})')
    return kind, version


def _require_version(obj: Mapping[str, Any], version: str, served: Iterable[str]) -> None:
    served = tuple(served)
    if version not in served:
        raise ConversionError(
            f'no matches for kind "{obj["kind"]}" in version "{version}" ({object_ref(obj)}); '
            f"served versions: {', '.join(served)}"
        )


# --- dict-level conversion ------------------------------------------------------------------------


def convert(obj: Mapping[str, Any], to_version: str) -> dict[str, Any]:
    """Return a deep copy of ``obj`` converted to ``to_version`` (same kind)."""
    kind, version = identify(obj)
    target = {**obj, "apiVersion": to_version}
    identify(target)
    data: dict[str, Any] = json_copy(dict(obj))
    if version == V1BETA1 and to_version == V1BETA2:
        _UP.get(kind, _noop)(data)
    elif version == V1BETA2 and to_version == V1BETA1:
        _DOWN.get(kind, _noop)(data)
    data["apiVersion"] = to_version
    return order_object_keys(data)


def order_object_keys(data: Mapping[str, Any]) -> dict[str, Any]:
    """Reorder top-level keys: apiVersion, kind, metadata, ..., status last."""
    head = [key for key in ("apiVersion", "kind", "metadata") if key in data]
    middle = [key for key in data if key not in head and key != "status"]
    tail = ["status"] if "status" in data else []
    return {key: data[key] for key in [*head, *middle, *tail]}


def _noop(_: dict[str, Any]) -> None:
    return None


def _sub(data: Mapping[str, Any], *keys: str) -> dict[str, Any] | None:
    """The nested dict at ``keys`` or None when missing / not a dict."""
    cur: Any = data
    for key in keys:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(key)
    return cur if isinstance(cur, dict) else None


def _replace_key(d: dict[str, Any], old: str, new_items: Mapping[str, Any]) -> None:
    """Replace key ``old`` by ``new_items`` at the same position (append if ``old`` is absent)."""
    items = list(d.items())
    d.clear()
    replaced = False
    for key, value in items:
        if key == old:
            d.update(new_items)
            replaced = True
        elif key not in new_items:
            d[key] = value
    if not replaced:
        d.update(new_items)


def _rename_key(d: dict[str, Any] | None, old: str, new: str) -> None:
    if d is not None and old in d:
        _replace_key(d, old, {new: d[old]})


def _each_dict(items: Any) -> Iterable[dict[str, Any]]:
    if isinstance(items, list):
        yield from (item for item in items if isinstance(item, dict))


# ClusterQueue -------------------------------------------------------------------------------------


def _cq_up(data: dict[str, Any]) -> None:
    spec = _sub(data, "spec")
    if spec is not None:
        _rename_key(spec, "cohort", "cohortName")
        _admission_checks_up(spec)
        _fungibility_up(spec)
    status = _sub(data, "status")
    if status is not None:
        status.pop("pendingWorkloadsStatus", None)
    _drop_afs_status(data)


def _admission_checks_up(spec: dict[str, Any]) -> None:
    checks = spec.get("admissionChecks")
    if not checks:
        spec.pop("admissionChecks", None)
        return
    strategy = {"admissionChecks": [{"name": name} for name in checks]}
    if "admissionChecksStrategy" in spec:
        spec.pop("admissionChecks")
        spec["admissionChecksStrategy"] = strategy
    else:
        _replace_key(spec, "admissionChecks", {"admissionChecksStrategy": strategy})


def _fungibility_up(spec: dict[str, Any]) -> None:
    fungibility = _sub(spec, "flavorFungibility")
    if fungibility is None:
        return
    for key in ("whenCanBorrow", "whenCanPreempt"):
        if fungibility.get(key) in _DEPRECATED_FUNGIBILITY:
            fungibility[key] = k.MAY_STOP_SEARCH


def _drop_afs_status(data: dict[str, Any]) -> None:
    fair = _sub(data, "status", "fairSharing")
    if fair is not None:
        fair.pop("admissionFairSharingStatus", None)


def _cq_down(data: dict[str, Any]) -> None:
    _rename_key(_sub(data, "spec"), "cohortName", "cohort")


# LocalQueue ---------------------------------------------------------------------------------------


def _lq_up(data: dict[str, Any]) -> None:
    status = _sub(data, "status")
    if status is not None:
        status.pop("flavors", None)
        _rename_key(status, "flavorUsage", "flavorsUsage")


def _lq_down(data: dict[str, Any]) -> None:
    _rename_key(_sub(data, "status"), "flavorsUsage", "flavorUsage")


# Workload -----------------------------------------------------------------------------------------


def _wl_up(data: dict[str, Any]) -> None:
    spec = _sub(data, "spec")
    if spec is not None:
        _priority_up(spec)
    status = _sub(data, "status")
    if status is not None:
        _rename_key(status, "accumulatedPastExexcutionTimeSeconds", "accumulatedPastExecutionTimeSeconds")
        admission = _sub(status, "admission")
        if admission is not None and admission.get("clusterQueue") == "":
            del admission["clusterQueue"]  # v1beta2's field is omitempty
    _each_topology_assignment(data, topology_assignment_to_v1beta2)


def _priority_up(spec: dict[str, Any]) -> None:
    anchor = next((key for key in ("priorityClassName", "priorityClassSource") if key in spec), None)
    if anchor is None:
        return
    source = spec.get("priorityClassSource", "")
    pair = _PRIORITY_SOURCES.get(source) if isinstance(source, str) else None
    new: dict[str, Any] = {}
    if pair is not None:
        new["priorityClassRef"] = {
            "group": pair[0],
            "kind": pair[1],
            "name": spec.get("priorityClassName", ""),
        }
    _replace_key(spec, anchor, new)
    spec.pop("priorityClassName", None)
    spec.pop("priorityClassSource", None)


def _wl_down(data: dict[str, Any]) -> None:
    spec = _sub(data, "spec")
    if spec is not None:
        _priority_down(spec)
        spec.pop("preemptionGates", None)
        for pod_set in _each_dict(spec.get("podSets")):
            request = _sub(pod_set, "topologyRequest")
            if request is not None:
                request.pop("podsetSliceRequiredTopologyConstraints", None)
    status = _sub(data, "status")
    if status is not None:
        status.pop("preemptionGates", None)
        _rename_key(status, "accumulatedPastExecutionTimeSeconds", "accumulatedPastExexcutionTimeSeconds")
        admission = _sub(status, "admission")
        if admission is not None and "clusterQueue" not in admission:
            # optional in v1beta2; v1beta1's Go field has no omitempty (its CRD requires it)
            status["admission"] = {"clusterQueue": "", **admission}
    _each_topology_assignment(data, topology_assignment_to_v1beta1)


def _priority_down(spec: dict[str, Any]) -> None:
    ref = spec.get("priorityClassRef")
    if "priorityClassRef" not in spec:
        return
    new: dict[str, Any] = {}
    if isinstance(ref, Mapping):
        for source, (group, kind) in _PRIORITY_SOURCES.items():
            if ref.get("group") == group and ref.get("kind") == kind:
                new = {"priorityClassName": ref.get("name", ""), "priorityClassSource": source}
    _replace_key(spec, "priorityClassRef", new)


def _each_topology_assignment(data: dict[str, Any], fn: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    admission = _sub(data, "status", "admission")
    if admission is None:
        return
    for assignment in _each_dict(admission.get("podSetAssignments")):
        topology = assignment.get("topologyAssignment")
        if isinstance(topology, dict):
            assignment["topologyAssignment"] = fn(topology)


def topology_assignment_to_v1beta2(ta: Mapping[str, Any]) -> dict[str, Any]:
    """Re-encode ``{levels, domains[{values, count}]}`` as one compact v1beta2 slice."""
    if "domains" not in ta:
        return dict(ta)
    levels = list(ta.get("levels") or [])
    domains = [d for d in ta.get("domains") or [] if isinstance(d, Mapping)]
    if not domains:
        return {"levels": levels, "slices": []}
    values_per_level = [
        _compact_level_values([str((d.get("values") or [])[i]) for d in domains]) for i in range(len(levels))
    ]
    counts = [int(d.get("count", 0)) for d in domains]
    pod_counts: dict[str, Any] = {"universal": counts[0]} if len(set(counts)) == 1 else {"individual": counts}
    slice_ = {"domainCount": len(domains), "valuesPerLevel": values_per_level, "podCounts": pod_counts}
    return {"levels": levels, "slices": [slice_]}


def _compact_level_values(values: list[str]) -> dict[str, Any]:
    """``universal`` when all values are equal, else ``individual`` with common prefix/suffix."""
    if len(set(values)) == 1:
        return {"universal": values[0]}
    prefix = _common_prefix(values)
    suffix = _common_prefix([v[::-1] for v in values])[::-1]
    shortest = min(len(v) for v in values)
    if len(prefix) + len(suffix) > shortest:
        prefix = prefix[: shortest - len(suffix)]
    individual: dict[str, Any] = {}
    if prefix:
        individual["prefix"] = prefix
    if suffix:
        individual["suffix"] = suffix
    individual["roots"] = [v[len(prefix) : len(v) - len(suffix)] for v in values]
    return {"individual": individual}


def _common_prefix(values: list[str]) -> str:
    first = values[0]
    length = len(first)
    for value in values[1:]:
        length = min(length, len(value))
        for i in range(length):
            if value[i] != first[i]:
                length = i
                break
    return first[:length]


def topology_assignment_to_v1beta1(ta: Mapping[str, Any]) -> dict[str, Any]:
    """Expand v1beta2 slices back into the v1beta1 ``domains`` list."""
    if "slices" not in ta:
        return dict(ta)
    levels = list(ta.get("levels") or [])
    domains: list[dict[str, Any]] = []
    for slice_ in ta.get("slices") or []:
        domains.extend(_expand_slice(slice_, len(levels)))
    return {"levels": levels, "domains": domains}


def _expand_slice(slice_: Mapping[str, Any], level_count: int) -> list[dict[str, Any]]:
    n = int(slice_.get("domainCount", 0))
    per_level = list(slice_.get("valuesPerLevel") or [])
    counts = slice_.get("podCounts") or {}
    result = []
    for i in range(n):
        values = [_level_value(per_level[level], i) for level in range(min(level_count, len(per_level)))]
        count = counts["universal"] if "universal" in counts else counts.get("individual", [])[i]
        result.append({"values": values, "count": count})
    return result


def _level_value(level: Mapping[str, Any], index: int) -> str:
    if "universal" in level:
        return str(level["universal"])
    individual = level.get("individual") or {}
    return f"{individual.get('prefix', '')}{individual['roots'][index]}{individual.get('suffix', '')}"


# AdmissionCheck, MultiKueue, Cohort ---------------------------------------------------------------


def _ac_up(data: dict[str, Any]) -> None:
    spec = _sub(data, "spec")
    if spec is not None:
        spec.pop("retryDelayMinutes", None)


def _ac_down(data: dict[str, Any]) -> None:
    spec = _sub(data, "spec")
    if spec is None:
        spec = data.setdefault("spec", {})
    if "controllerName" in spec:
        items = {"controllerName": spec["controllerName"], "retryDelayMinutes": RETRY_DELAY_MINUTES_DEFAULT}
        _replace_key(spec, "controllerName", items)
    else:
        spec["retryDelayMinutes"] = RETRY_DELAY_MINUTES_DEFAULT


def _mkcluster_up(data: dict[str, Any]) -> None:
    spec = _sub(data, "spec")
    if spec is None:
        return
    source: dict[str, Any] = {}
    kube_config = spec.pop("kubeConfig", None)
    if isinstance(kube_config, Mapping) and kube_config.get("location", ""):
        source["kubeConfig"] = dict(kube_config)
    if "clusterProfileRef" in spec:
        source["clusterProfileRef"] = spec.pop("clusterProfileRef")
    spec["clusterSource"] = source


def _mkcluster_down(data: dict[str, Any]) -> None:
    spec = _sub(data, "spec")
    if spec is None:
        return
    source = spec.pop("clusterSource", None)
    source = source if isinstance(source, Mapping) else {}
    if "kubeConfig" in source:
        spec["kubeConfig"] = dict(source["kubeConfig"])
    if "clusterProfileRef" in source:
        spec["clusterProfileRef"] = source["clusterProfileRef"]


def _mkconfig_down(data: dict[str, Any]) -> None:
    spec = _sub(data, "spec")
    if spec is not None:
        spec.pop("quotaManagement", None)


_UP: Mapping[str, Callable[[dict[str, Any]], None]] = {
    "ClusterQueue": _cq_up,
    "Cohort": _drop_afs_status,
    "LocalQueue": _lq_up,
    "Workload": _wl_up,
    "AdmissionCheck": _ac_up,
    "MultiKueueCluster": _mkcluster_up,
}
_DOWN: Mapping[str, Callable[[dict[str, Any]], None]] = {
    "ClusterQueue": _cq_down,
    "LocalQueue": _lq_down,
    "Workload": _wl_down,
    "AdmissionCheck": _ac_down,
    "MultiKueueCluster": _mkcluster_down,
    "MultiKueueConfig": _mkconfig_down,
}


# --- typed layer ------------------------------------------------------------------------------------


def internal_version(kind: str) -> str:
    """The apiVersion of the typed model for ``kind`` (v1beta2 for Kueue kinds)."""
    return CORE_KIND_VERSIONS.get(kind, V1BETA2)


def to_internal(obj: Mapping[str, Any]) -> tuple[KueueObject, str]:
    """Convert a manifest dict into its typed v1beta2 object; also return the original apiVersion."""
    kind, version = identify(obj)
    typ = k.KIND_TYPES.get(kind)
    if typ is None:
        raise ConversionError(
            f"{object_ref(obj)}: kind {kind} ({version}) is served by Kueue but not modelled by pykueue"
        )
    data = convert(obj, internal_version(kind))
    try:
        typed: KueueObject = msgspec.convert(data, typ)
    except msgspec.ValidationError as err:
        field, detail = describe_validation_error(str(err))
        raise DecodeError(object_ref(obj), field, detail) from None
    return typed, version


_MSGSPEC_PATH = re.compile(r"^(?P<msg>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
_MISSING = re.compile(r"^Object missing required field `(?P<name>[^`]+)`$")
_UNKNOWN = re.compile(r"^Object contains unknown field `(?P<name>[^`]+)`$")
_EXPECTED = re.compile(r"^Expected `(?P<want>[^`]+)`, got `(?P<got>[^`]+)`$")
_JSON_TYPES = {
    "int": "integer",
    "str": "string",
    "float": "number",
    "bool": "boolean",
    "array": "array",
    "object": "object",
    "null": "null",
    "list": "array",
    "dict": "object",
}


def msgspec_path_to_field(path: str) -> str:
    """``$.spec.podSets[0].count`` / ``.spec.x`` → ``spec.podSets[0].count``."""
    path = path.removeprefix("$")
    return path.removeprefix(".")


def describe_validation_error(message: str) -> tuple[str, str]:
    """Split a msgspec ``ValidationError`` message into (Kubernetes field path, apiserver-like detail)."""
    match = _MSGSPEC_PATH.match(message)
    assert match is not None
    field = msgspec_path_to_field(match.group("path") or "")
    msg = match.group("msg")
    if missing := _MISSING.match(msg):
        return _join(field, missing.group("name")), "Required value"
    if unknown := _UNKNOWN.match(msg):
        return _join(field, unknown.group("name")), "field not declared in schema"
    if expected := _EXPECTED.match(msg):
        want = " or ".join(_JSON_TYPES.get(t.strip(), t.strip()) for t in expected.group("want").split("|"))
        got = _JSON_TYPES.get(expected.group("got"), expected.group("got"))
        return field, f'Invalid value: "{got}": {field} in body must be of type {want}: "{got}"'
    return field, f"Invalid value: {msg}"


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def to_external(obj: KueueObject, api_version: str | None = None) -> dict[str, Any]:
    """Encode a typed object as a dict of ``api_version`` (default: its internal version).

    Keys are ordered apiVersion, kind, metadata, spec/other fields, status last; an empty status
    is omitted; fields that the Go types always serialise (e.g. ``podSets[].count``) are kept
    even at their default value.
    """
    data = encode(obj)
    internal = internal_version(obj.kind)
    data["apiVersion"] = internal
    data["kind"] = obj.kind
    if api_version is None or api_version == internal:
        # ``encode`` built new containers all the way down: nothing to convert, nothing to copy
        # (convert's deep copy was a tenth of the scheduler thread's busy time: every admission
        # and queue status write is encoded here; bench/RESULTS.md, branch lsthru).
        identify(data)
        return order_object_keys(data)
    return convert(data, api_version)


# Fields serialised even when equal to their default (Go fields without ``omitempty``); those
# upstream's CRDs mark required must be here, or a real kube-apiserver refuses the status write.
_ALWAYS_SERIALISED: Mapping[type[Any], frozenset[str]] = {
    k.PodSet: frozenset({"name", "count", "template"}),
    k.AdmissionScope: frozenset({"admission_mode"}),
    k.PodSetAssignment: frozenset({"name"}),
    k.Admission: frozenset({"pod_set_assignments"}),
    k.WorkloadSpec: frozenset({"pod_sets"}),
    k.AdmissionCheckState: frozenset({"message"}),
    k.WorkloadSchedulingStatsEviction: frozenset({"underlying_cause"}),
    k.FlavorUsage: frozenset({"resources"}),
    k.LocalQueueFlavorUsage: frozenset({"resources"}),
    k.LocalQueueResourceUsage: frozenset({"total"}),
    k.ResourceUsage: frozenset({"total"}),
    k.FairSharingStatus: frozenset({"weighted_share"}),
    k.ClusterQueueStatus: frozenset({"pending_workloads", "reserving_workloads", "admitted_workloads"}),
    k.LocalQueueStatus: frozenset({"pending_workloads", "reserving_workloads", "admitted_workloads"}),
}


def encode(obj: msgspec.Struct) -> dict[str, Any]:
    """Encode a top-level object to builtins (camelCase keys, RFC3339 times), omitting empty status."""
    out = _encode_struct(obj, skip_empty_status=True)
    return order_object_keys(out)


@functools.cache
def _fields(cls: type[msgspec.Struct]) -> tuple[msgspec.structs.FieldInfo, ...]:
    """``msgspec.structs.fields`` per type, computed once (it re-evaluates annotations each call)."""
    return msgspec.structs.fields(cls)


_NO_DEFAULT = object()


@functools.cache
def _encoding_plan(cls: type[msgspec.Struct]) -> tuple[tuple[str, str, Any, bool, bool], ...]:
    """Per field: (attribute, JSON key, default value or _NO_DEFAULT, always serialised, raw JSON).

    A raw field's type holds no Struct and no datetime (e.g. a pod template's ``dict[str, Any]``),
    so :func:`msgspec.to_builtins` copies it in C with the same result as :func:`_encode_value`.
    """
    always = _ALWAYS_SERIALISED.get(cls, frozenset())
    plan = []
    for field in _fields(cls):
        if field.default is not msgspec.NODEFAULT:
            default = field.default
        elif field.default_factory is not msgspec.NODEFAULT:
            default = field.default_factory()  # compared with ``==`` only, never handed out
        else:
            default = _NO_DEFAULT
        raw = _is_raw_json(msgspec.inspect.type_info(field.type))
        plan.append((field.name, field.encode_name, default, field.name in always, raw))
    return tuple(plan)


_RAW_SCALARS = (
    msgspec.inspect.AnyType,
    msgspec.inspect.NoneType,
    msgspec.inspect.BoolType,
    msgspec.inspect.IntType,
    msgspec.inspect.FloatType,
    msgspec.inspect.StrType,
)


def _is_raw_json(info: msgspec.inspect.Type) -> bool:
    if isinstance(info, _RAW_SCALARS):
        return True
    if isinstance(info, msgspec.inspect.UnionType):
        return all(_is_raw_json(t) for t in info.types)
    if isinstance(info, msgspec.inspect.ListType):
        return _is_raw_json(info.item_type)
    if isinstance(info, msgspec.inspect.DictType):
        return isinstance(info.key_type, msgspec.inspect.StrType) and _is_raw_json(info.value_type)
    return False


def _encode_struct(
    obj: msgspec.Struct,
    *,
    skip_empty_status: bool = False,
    plan: tuple[tuple[str, str, Any, bool, bool], ...] | None = None,
) -> dict[str, Any]:
    """``obj``'s members to builtins, per ``plan`` (default: every field, :func:`_encoding_plan`)."""
    out: dict[str, Any] = {}
    for name, key, default, always, raw in plan if plan is not None else _encoding_plan(type(obj)):
        value = getattr(obj, name)
        if skip_empty_status and name == "status" and _is_empty_status(value):
            continue
        if default is not _NO_DEFAULT and not always and value == default:
            continue
        if raw:
            out[key] = msgspec.to_builtins(value) if isinstance(value, (dict, list)) else value
        else:
            out[key] = _encode_value(value)
    return out


ABSENT: Final = object()
"""What :func:`encode_status` returns for an object whose encoding has no ``status``."""


def encode_status(obj: msgspec.Struct) -> Any:
    """``encode(obj)["status"]`` (:data:`ABSENT` when the encoding omits it) without encoding the
    other members: what a status update stores, the rest being the live object's."""
    return _encode_struct(obj, skip_empty_status=True, plan=_status_plan(type(obj))).get("status", ABSENT)


@functools.cache
def _status_plan(cls: type[msgspec.Struct]) -> tuple[tuple[str, str, Any, bool, bool], ...]:
    """The ``status`` entry of :func:`_encoding_plan` (empty when the kind has none)."""
    return tuple(entry for entry in _encoding_plan(cls) if entry[1] == "status")


def _is_empty_status(value: Any) -> bool:
    if isinstance(value, msgspec.Struct):
        return is_default_struct(value)
    return not value


def _encode_value(value: Any) -> Any:
    if isinstance(value, msgspec.Struct):
        return _encode_struct(value)
    if isinstance(value, datetime):
        return format_time(value)
    if isinstance(value, list):
        return [_encode_value(v) for v in value]
    if isinstance(value, dict):
        return {key: _encode_value(v) for key, v in value.items()}
    return value


def _is_default(field: msgspec.structs.FieldInfo, value: Any) -> bool:
    if field.default is not msgspec.NODEFAULT:
        return bool(value == field.default)
    if field.default_factory is not msgspec.NODEFAULT:
        return bool(value == field.default_factory())
    return False


def is_default_struct(value: msgspec.Struct) -> bool:
    """True when every field of ``value`` holds its default (an "empty" object)."""
    return all(_is_default(f, getattr(value, f.name)) for f in _fields(type(value)))
