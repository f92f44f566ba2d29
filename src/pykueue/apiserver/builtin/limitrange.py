"""``core/v1`` LimitRange: schema, defaults and validation.

Defaults are ``SetDefaults_LimitRangeItem`` (``pkg/apis/core/v1/defaults.go``): for a
``Container`` item a missing ``default`` comes from ``max``, then a missing ``defaultRequest``
from ``default`` and then from ``min``. Validation is ``ValidateLimitRange``
(``pkg/apis/core/validation``): the item types (``Pod``, ``Container``,
``PersistentVolumeClaim`` or a qualified name) are unique, resource names are qualified (standard
container resources for ``Pod``/``Container``), a ``Pod`` item has no defaults, a
``PersistentVolumeClaim`` item bounds ``storage``, and per resource min ≤ defaultRequest ≤ default
≤ max with a ``maxLimitRequestRatio`` ≥ 1 and ≤ max/min. Upstream walks Go maps (random order);
here resources are visited in name order.
"""

from __future__ import annotations

import math
import uuid
from typing import Any

from pykueue.api.quantity import Quantity
from pykueue.api.validation import FieldError, duplicate, forbidden, idx, invalid, key, required
from pykueue.apiserver.builtin import meta
from pykueue.apiserver.builtin.core import CORE
from pykueue.apiserver.builtin.pods import mapping, sequence, validate_object_meta
from pykueue.apiserver.builtin.resourcenames import (
    MAX_MILLI_VALUE,
    go_quantity,
    is_overcommit_allowed,
    parse,
    validate_container_resource_name,
    validate_resource_name,
)
from pykueue.apiserver.builtin.schema import arr, define, map_of, obj, ref, string
from pykueue.kube.validation import is_qualified_name

LIMIT_RANGE = CORE + "LimitRange"
LIMIT_RANGE_SPEC = CORE + "LimitRangeSpec"
LIMIT_RANGE_ITEM = CORE + "LimitRangeItem"
LIMIT_TYPE_POD = "Pod"
LIMIT_TYPE_CONTAINER = "Container"
LIMIT_TYPE_PVC = "PersistentVolumeClaim"
STANDARD_LIMIT_TYPES = (LIMIT_TYPE_POD, LIMIT_TYPE_CONTAINER, LIMIT_TYPE_PVC)
_SECTIONS = ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio")


def _quantities(description: str) -> Any:
    return map_of(ref(meta.QUANTITY), description)


define(
    LIMIT_RANGE_ITEM,
    obj(
        {
            "type": string("Type of resource that this limit applies to."),
            "max": _quantities("Max usage constraints on this kind by resource name."),
            "min": _quantities("Min usage constraints on this kind by resource name."),
            "default": _quantities(
                "Default resource requirement limit value by resource name if resource limit is omitted."
            ),
            "defaultRequest": _quantities(
                "DefaultRequest is the default resource requirement request value by resource name if "
                "resource request is omitted."
            ),
            "maxLimitRequestRatio": _quantities(
                "MaxLimitRequestRatio if specified, the named resource must have a request and limit that "
                "are both non-zero where limit divided by request is less than or equal to the enumerated "
                "value; this represents the max burst for the named resource."
            ),
        },
        "LimitRangeItem defines a min/max usage limit for any resource that matches on kind.",
        required_fields=("type",),
    ),
)
define(
    LIMIT_RANGE_SPEC,
    obj(
        {
            "limits": arr(
                ref(LIMIT_RANGE_ITEM),
                "Limits is the list of LimitRangeItem objects that are enforced.",
                list_type="atomic",
            ),
        },
        "LimitRangeSpec defines a min/max usage limit for resources that match on kind.",
        required_fields=("limits",),
    ),
)
define(
    LIMIT_RANGE,
    obj(
        {
            "apiVersion": meta.api_version_field(),
            "kind": meta.kind_field(),
            "metadata": meta.metadata_field(),
            "spec": ref(
                LIMIT_RANGE_SPEC,
                "Spec defines the limits enforced. More info: "
                "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status",
            ),
        },
        "LimitRange sets resource usage limits for each kind of resource in a Namespace.",
    ),
    gvk=("", "v1", "LimitRange"),
)


# --- defaults ------------------------------------------------------------------------------------------


def default_limit_range(lr: dict[str, Any]) -> None:
    """``SetDefaults_LimitRangeItem`` on every item (Go's empty maps are omitted when encoded)."""
    for item in sequence(mapping(lr.get("spec")).get("limits")):
        if isinstance(item, dict) and item.get("type") == LIMIT_TYPE_CONTAINER:
            _default_container_item(item)


def _default_container_item(item: dict[str, Any]) -> None:
    default = dict(mapping(item.get("default")))
    request = dict(mapping(item.get("defaultRequest")))
    for name, value in mapping(item.get("max")).items():
        default.setdefault(name, value)
    for name, value in default.items():
        request.setdefault(name, value)
    for name, value in mapping(item.get("min")).items():
        request.setdefault(name, value)
    if default:
        item["default"] = default
    if request:
        item["defaultRequest"] = request


def prepare_limit_range_for_create(lr: dict[str, Any]) -> None:
    """The strategy's ``PrepareForCreate``: a LimitRange with neither name nor generateName is
    named with a new UUID."""
    meta_ = lr.setdefault("metadata", {})
    if isinstance(meta_, dict) and not meta_.get("name") and not meta_.get("generateName"):
        meta_["name"] = str(uuid.uuid4())


# --- validation ----------------------------------------------------------------------------------------


def validate_limit_range(lr: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """``ValidateLimitRange`` (updates validate the new object the same way)."""
    errs = validate_object_meta(lr, namespaced=True)
    seen: set[str] = set()
    for i, item in enumerate(sequence(mapping(lr.get("spec")).get("limits"))):
        errs += _validate_item(mapping(item), idx("spec.limits", i), seen)
    return errs


def validate_limit_type(value: str, path: str) -> list[FieldError]:
    """``validateLimitRangeTypeName``."""
    errs = [invalid(path, value, msg) for msg in is_qualified_name(value)]
    if errs:
        return errs
    if "/" not in value and value not in STANDARD_LIMIT_TYPES:
        return [invalid(path, value, "must be a standard limit type or fully qualified")]
    return []


def _validate_name(limit_type: str, name: str, path: str) -> list[FieldError]:
    """``validateLimitRangeResourceName``."""
    if limit_type in (LIMIT_TYPE_POD, LIMIT_TYPE_CONTAINER):
        return validate_container_resource_name(name, path)
    return validate_resource_name(name, path)


def _validate_item(item: dict[str, Any], path: str, seen: set[str]) -> list[FieldError]:
    limit_type = str(item.get("type") or "")
    errs = validate_limit_type(limit_type, f"{path}.type")
    if limit_type in seen:
        errs.append(duplicate(f"{path}.type", limit_type))
    seen.add(limit_type)
    values: dict[str, dict[str, Any]] = {section: {} for section in _SECTIONS}

    def collect(section: str) -> None:
        for name, value in sorted(mapping(item.get(section)).items()):
            errs.extend(_validate_name(limit_type, name, key(f"{path}.{section}", name)))
            values[section][name] = value

    collect("max")
    collect("min")
    if limit_type == LIMIT_TYPE_POD:
        for section in ("default", "defaultRequest"):
            if mapping(item.get(section)):
                errs.append(forbidden(f"{path}.{section}", "may not be specified when `type` is 'Pod'"))
    else:
        collect("default")
        collect("defaultRequest")
    if limit_type == LIMIT_TYPE_PVC and not (
        "storage" in mapping(item.get("min")) or "storage" in mapping(item.get("max"))
    ):
        errs.append(
            required(
                f"{path}.limits",
                "either minimum or maximum storage value is required, but neither was provided",
            )
        )
    collect("maxLimitRequestRatio")
    names = sorted({name for section in values.values() for name in section})
    for name in names:
        errs += _validate_bounds(name, {s: values[s].get(name) for s in _SECTIONS}, path)
    return errs


def _validate_bounds(name: str, raw: dict[str, Any], path: str) -> list[FieldError]:
    """The per-resource ordering checks of ``ValidateLimitRange``, in upstream's order."""
    q = {section: parse(value) for section, value in raw.items()}
    low, high, ratio = q["min"], q["max"], q["maxLimitRequestRatio"]
    limit, request = q["default"], q["defaultRequest"]
    errs: list[FieldError] = []

    def fail(section: str, bad: str, detail: str) -> None:
        errs.append(invalid(key(f"{path}.{section}", name), go_quantity(raw[bad]), detail))

    if low is not None and high is not None and low.value > high.value:
        fail("min", "min", f"min value {low} is greater than max value {high}")
    if request is not None and low is not None and low.value > request.value:
        fail(
            "defaultRequest",
            "defaultRequest",
            f"min value {low} is greater than default request value {request}",
        )
    if request is not None and high is not None and request.value > high.value:
        fail(
            "defaultRequest",
            "defaultRequest",
            f"default request value {request} is greater than max value {high}",
        )
    if request is not None and limit is not None and request.value > limit.value:
        fail(
            "defaultRequest",
            "defaultRequest",
            f"default request value {request} is greater than default limit value {limit}",
        )
    if limit is not None and low is not None and low.value > limit.value:
        fail("default", "min", f"min value {low} is greater than default value {limit}")
    if limit is not None and high is not None and limit.value > high.value:
        fail("default", "max", f"default value {limit} is greater than max value {high}")
    if ratio is not None and ratio.value < 1:
        fail("maxLimitRequestRatio", "maxLimitRequestRatio", f"ratio {ratio} is less than 1")
    if ratio is not None and low is not None and high is not None:
        bound = _max_over_min(ratio, low, high)
        if bound is not None:
            fail(
                "maxLimitRequestRatio",
                "maxLimitRequestRatio",
                f"ratio {ratio} is greater than max/min = {_go_float_f(bound[1])}",
            )
    if (
        not is_overcommit_allowed(name)
        and limit is not None
        and request is not None
        and limit.value != request.value
    ):
        fail(
            "defaultRequest",
            "defaultRequest",
            f"default value {limit} must equal to defaultRequest value {request} in {name}",
        )
    return errs


def _max_over_min(ratio: Quantity, low: Quantity, high: Quantity) -> tuple[float, float] | None:
    """(ratio, max/min) when the ratio exceeds max/min, computed in float64 as upstream."""
    ratio_value = float(ratio.int_value())
    low_value, high_value = low.int_value(), high.int_value()
    if ratio.int_value() < MAX_MILLI_VALUE and low_value < MAX_MILLI_VALUE and high_value < MAX_MILLI_VALUE:
        ratio_value = float(ratio.milli_value()) / 1000
        low_value, high_value = low.milli_value(), high.milli_value()
    bound = _go_divide(float(high_value), float(low_value))
    return (ratio_value, bound) if ratio_value > bound else None


def _go_divide(a: float, b: float) -> float:
    if b != 0:
        return a / b
    if a == 0 or math.isnan(a):
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _go_float_f(value: float) -> str:
    """Go's ``%f`` (``+Inf``, ``-Inf``, ``NaN`` for the non-finite values)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return f"{value:f}"
