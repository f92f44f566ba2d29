"""Pure functions over a raw Kubernetes PodSpec (a ``dict`` with the camelCase keys of YAML).

What lives here (upstream ``pkg/workload/resources.go``, ``pkg/workload/workload.go``, ``pkg/resources``,
``pkg/scheduler/flavorassigner`` ``checkFlavorForPodSets``, and Kubernetes' ``PodRequests``):

* the per-pod request of a pod template (Kubernetes ``PodRequests``, after Kueue's "limits as
  requests" adjustment), the ``requests <= limits`` admissibility check, and Kueue's per-pod
  integer pipeline (excluded prefixes, resource transformations, integer conversion);
* PodSet totals for pending workloads and usage rebuilt from an admission (reclaim scaling);
* flavor eligibility helpers: taint toleration, taint printing and node-selector / required
  node-affinity matching restricted to a flavor's own label keys;
* the scheduling-equivalence hash.

Quantities are parsed exactly (``fractions.Fraction``) through :mod:`pykueue.api.quantity`; parsed
values are memoised because the same strings recur across every workload of a cluster.
Nothing here mutates its inputs.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fractions import Fraction
from functools import lru_cache
from typing import Any, NamedTuple

import msgspec

from pykueue.api.kueue import PodSet, PodSetAssignment, Taint, Toleration
from pykueue.api.quantity import (
    MAX_INT64,
    MIN_INT64,
    Quantity,
    QuantityFormat,
    format_quantity,
    resource_value,
    sat_mul,
)

QuantityLike = str | int | float
ResourceList = Mapping[str, QuantityLike]
Requests = dict[str, Fraction]
"""Exact per-resource amounts (base units: cores for ``cpu``, bytes for memory, ...)."""

RETAIN = "Retain"
REPLACE = "Replace"
RESTART_POLICY_ALWAYS = "Always"

REQUESTS_MUST_NOT_EXCEED_LIMIT_MESSAGE = "requests must not exceed its limits"
ERR_INVALID_WL_RESOURCES = "resources validation failed"

_ZERO = Fraction(0)


# --- quantity parsing (memoised) -------------------------------------------------------------------


@lru_cache(maxsize=16384)
def _parse_cached(value: QuantityLike) -> Fraction:
    return Quantity.parse(value).value


def _q(value: QuantityLike) -> Fraction:
    """Exact value of a quantity; bools bypass the cache (``True == 1`` would alias)."""
    if isinstance(value, bool):
        return Quantity.parse(value).value  # raises QuantityError
    return _parse_cached(value)


def quantity_value(value: QuantityLike | Fraction) -> Fraction:
    """Exact value of a quantity as written (or already parsed)."""
    return value if isinstance(value, Fraction) else _q(value)


def integer_value(resource: str, value: QuantityLike | Fraction) -> int:
    """Kueue's int64 of one amount (``resources.NewRequestsFromResourceList``: milli for cpu)."""
    return _int_value(resource, quantity_value(value))


def _parse_list(resources: ResourceList | None) -> Requests:
    if not resources:
        return {}
    return {name: _q(v) for name, v in resources.items()}


@lru_cache(maxsize=8192)
def _int_value(resource: str, value: Fraction) -> int:
    # Pure in its (immutable) arguments and called for every request of every pod set the
    # scheduler and the workload controller look at: the same few amounts recur.
    return resource_value(resource, Quantity(value))


def _usage_value(resource: str, value: QuantityLike) -> int:
    """``_int_value(resource, _q(value))``, cached on the quantity as written (bools bypass, as in ``_q``)."""
    if isinstance(value, bool):
        return _int_value(resource, _q(value))
    return _usage_value_cached(resource, value)


@lru_cache(maxsize=8192)
def _usage_value_cached(resource: str, value: str | int | float) -> int:
    return _int_value(resource, _q(value))


# --- element-wise helpers ----------------------------------------------------------------------------


def _add_into(target: Requests, other: Mapping[str, Fraction]) -> None:
    for name, v in other.items():
        target[name] = target.get(name, _ZERO) + v


def _max_into(target: Requests, other: Mapping[str, Fraction]) -> None:
    """Kubernetes ``maxResourceList``: a key missing from ``target`` always takes ``other``'s value."""
    for name, v in other.items():
        current = target.get(name)
        if current is None or v > current:
            target[name] = v


# --- adjustments (``workload.AdjustResources``) ----------------------------------------------------------------


def _requests_with_limits(resources: Mapping[str, Any] | None) -> Requests:
    """``requests`` of a ResourceRequirements with every limit-only key copied in (``AdjustResources``: limits as requests)."""
    if not resources:
        return {}
    out = _parse_list(resources.get("requests"))
    limits = resources.get("limits")
    if limits:
        for name, v in limits.items():
            if name not in out:
                out[name] = _q(v)
    return out


# --- PodRequests (k8s.io/component-helpers/resource ``PodRequests``) ----------------------------------------------------------------


def is_supported_pod_level_resource(name: str) -> bool:
    """Resources a pod-level ``spec.resources.requests`` may set (cpu, memory, hugepages-*)."""
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def _requests_only(resources: Mapping[str, Any] | None) -> Requests:
    return _parse_list(resources.get("requests")) if resources else {}


def _aggregate_container_requests(spec: Mapping[str, Any], limits_as_requests: bool = True) -> Requests:
    read = _requests_with_limits if limits_as_requests else _requests_only
    total: Requests = {}
    for c in spec.get("containers") or ():
        _add_into(total, read(c.get("resources")))
    init_max: Requests = {}
    sidecars: Requests = {}
    for c in spec.get("initContainers") or ():
        req = read(c.get("resources"))
        if c.get("restartPolicy") == RESTART_POLICY_ALWAYS:
            _add_into(total, req)
            _add_into(sidecars, req)
            candidate: Mapping[str, Fraction] = sidecars
        else:
            _add_into(req, sidecars)
            candidate = req
        _max_into(init_max, candidate)
    _max_into(total, init_max)
    return total


def pod_requests(spec: Mapping[str, Any], *, limits_as_requests: bool = True) -> Requests:
    """Kubernetes ``PodRequests`` of a pod spec, after Kueue's "limits as requests" adjustment.

    Regular containers are summed; init containers are walked in order with the running sum of
    sidecars (``restartPolicy: Always``), taking the element-wise max of every stage; pod-level
    ``resources.requests`` replace cpu/memory/hugepages-* when at least one of them is set; then
    ``overhead`` is added. Values are exact :class:`~fractions.Fraction` amounts in base units.
    ``limits_as_requests=False`` reads the requests as written (Kubernetes' own ``PodRequests`` of
    a template Kueue did not adjust).
    """
    reqs = _aggregate_container_requests(spec, limits_as_requests)
    pod_level = (_requests_with_limits if limits_as_requests else _requests_only)(spec.get("resources"))
    if pod_level and any(is_supported_pod_level_resource(name) for name in pod_level):
        for name, v in pod_level.items():
            if is_supported_pod_level_resource(name):
                reqs[name] = v
    overhead = spec.get("overhead")
    if overhead:
        _add_into(reqs, _parse_list(overhead))
    return reqs


# --- requests <= limits (``workload.ValidateResources``) ---------------------------------------------------------


def _greater_keys(resources: Mapping[str, Any] | None) -> list[str]:
    if not resources:
        return []
    requests = resources.get("requests")
    limits = resources.get("limits")
    if not requests or not limits:
        return []
    names = [
        name
        for name, v in requests.items()
        if name in limits and _int_value(name, _q(v)) > _int_value(name, _q(limits[name]))
    ]
    names.sort()
    return names


def validate_requests_within_limits(spec: Mapping[str, Any], path: str = "spec") -> list[str]:
    """Field errors for every (init) container and pod-level ``resources`` whose requests exceed limits.

    Mirrors Kueue's ``ValidateResources``: keys present in both lists are compared as Kueue
    integers; offending names are listed sorted, rendered as apimachinery renders
    ``field.Invalid(path, []ResourceName{...}, "requests must not exceed its limits")``::

        spec.podSets[0].template.spec.containers[0]: Invalid value: ["cpu"]: requests must not exceed its limits

    ``path`` is the field path of the pod spec; Kueue uses ``spec.podSets[<i>].template.spec``.
    Order: init containers, containers, then pod-level resources.
    """
    errors: list[str] = []
    for key in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(key) or ()):
            names = _greater_keys(c.get("resources"))
            if names:
                errors.append(field_invalid(f"{path}.{key}[{i}]", names, REQUESTS_MUST_NOT_EXCEED_LIMIT_MESSAGE))
    pod_resources = spec.get("resources")
    if pod_resources is not None:
        names = _greater_keys(pod_resources)
        if names:
            errors.append(field_invalid(f"{path}.resources", names, REQUESTS_MUST_NOT_EXCEED_LIMIT_MESSAGE))
    return errors


def resources_validation_error(errors: Sequence[str]) -> str | None:
    """The scheduler's message for :func:`validate_requests_within_limits` errors, or ``None``.

    ``resources validation failed: <aggregate>`` where the aggregate is apimachinery's
    ``ErrorList.ToAggregate().Error()`` (one error verbatim, several as ``[a, b]``).
    """
    if not errors:
        return None
    return f"{ERR_INVALID_WL_RESOURCES}: {aggregate_error_text(errors)}"


def aggregate_error_text(messages: Iterable[str]) -> str:
    """apimachinery ``utilerrors.Aggregate.Error()``: dedupe; one message bare, several ``[a, b]``."""
    seen: dict[str, None] = dict.fromkeys(messages)
    if len(seen) == 1:
        return next(iter(seen))
    return "[" + ", ".join(seen) + "]"


def _go_json(value: Any) -> str:
    """``encoding/json.Marshal`` text of a simple value (HTML characters escaped as Go does)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def field_invalid(path: str, value: Any, detail: str) -> str:
    """apimachinery ``field.Invalid(path, value, detail).Error()``."""
    if isinstance(value, str):
        rendered = json.dumps(value, ensure_ascii=False)  # Go %q for printable text
    elif value is None:
        rendered = "null"
    else:
        rendered = _go_json(value)
    return f"{path}: Invalid value: {rendered}: {detail}" if detail else f"{path}: Invalid value: {rendered}"


# --- excluded prefixes, transformations, integers (pkg/workload/workload.go) ------------------------------


@dataclass(frozen=True, slots=True)
class ResourceTransformation:
    """One entry of the Configuration's ``resources.transformations``.

    ``outputs`` maps an output resource to its per-unit factor (a quantity, may be negative);
    ``multiply_by`` names a resource of the same per-pod list whose quantity scales the input
    before the factors are applied (the retained input itself is not scaled).
    """

    input: str
    strategy: str = RETAIN
    outputs: Mapping[str, QuantityLike] = field(default_factory=dict)
    multiply_by: str | None = None
    _factors: tuple[tuple[str, Fraction], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.strategy not in (RETAIN, REPLACE):
            raise ValueError(f"unknown transformation strategy {self.strategy!r}")
        object.__setattr__(self, "_factors", tuple((out, _q(f)) for out, f in self.outputs.items()))

    def __hash__(self) -> int:
        return hash((self.input, self.strategy, self._factors, self.multiply_by))

    @property
    def factors(self) -> tuple[tuple[str, Fraction], ...]:
        """Parsed ``outputs`` as ``(resource, exact factor)`` pairs, in declaration order."""
        return self._factors


TransformationsArg = Mapping[str, ResourceTransformation] | Iterable[ResourceTransformation]


def index_transformations(transformations: TransformationsArg) -> Mapping[str, ResourceTransformation]:
    """Transformations keyed by input (a later duplicate wins); mappings are returned unchanged."""
    if isinstance(transformations, Mapping):
        return transformations
    if isinstance(transformations, tuple):
        return _index_tuple(transformations)
    return {t.input: t for t in transformations}


@lru_cache(maxsize=64)
def _index_tuple(transformations: tuple[ResourceTransformation, ...]) -> Mapping[str, ResourceTransformation]:
    return {t.input: t for t in transformations}


def drop_excluded_resources(requests: Requests, exclude_prefixes: Sequence[str]) -> Requests:
    """Drop every resource whose name starts with one of ``exclude_prefixes`` (``dropExcludedResources``)."""
    if not exclude_prefixes:
        return requests
    prefixes = tuple(exclude_prefixes)
    return {name: v for name, v in requests.items() if not name.startswith(prefixes)}


def apply_transformations(
    requests: Requests, transformations: Mapping[str, ResourceTransformation]
) -> Requests:
    """``applyResourceTransformations``: exact transformation of one per-pod request list.

    Non-inputs and ``Retain`` inputs are kept as they are; every input present contributes
    ``q × multiplier × factor`` to each output (``multiplier`` = the quantity of ``multiply_by``
    in the same list, 1 when unset or absent). Negative generated totals are floored at 0 before
    being added to the retained list (so a negative factor is an "allowance").
    """
    if not transformations or not any(name in transformations for name in requests):
        return requests
    retained: Requests = {}
    generated: Requests = {}
    for name, q in requests.items():
        t = transformations.get(name)
        if t is None:
            retained[name] = q
            continue
        base = q
        if t.multiply_by is not None:
            multiplier = requests.get(t.multiply_by)
            if multiplier is not None:
                base = q * multiplier
        for out, factor in t.factors:
            generated[out] = generated.get(out, _ZERO) + base * factor
        if t.strategy == RETAIN:
            retained[name] = q
    for out, v in generated.items():
        retained[out] = retained.get(out, _ZERO) + (v if v > 0 else _ZERO)
    return retained


def to_integer_requests(requests: Mapping[str, Fraction]) -> dict[str, int]:
    """Kueue integers (``resources.ResourceValue``: cpu in milli, others ceil to base units), negatives floored to 0."""
    out: dict[str, int] = {}
    for name, v in requests.items():
        n = _int_value(name, v)
        out[name] = n if n > 0 else 0
    return out


def per_pod_integer_requests(
    spec: Mapping[str, Any],
    exclude_prefixes: Sequence[str] = (),
    transformations: TransformationsArg = (),
) -> dict[str, int]:
    """Per-pod Kueue integer requests of a pod spec (``workload.NewInfo``'s pipeline, DRA excluded).

    :func:`pod_requests` → drop excluded prefixes → transformations → integers, negatives → 0.
    """
    reqs = drop_excluded_resources(pod_requests(spec), exclude_prefixes)
    reqs = apply_transformations(reqs, index_transformations(transformations))
    return to_integer_requests(reqs)


def effective_count(count: int, reclaimable: int) -> int:
    """``count − min(reclaimable, count)`` (never negative)."""
    return count - min(max(reclaimable, 0), count)


def podset_total_requests(
    podset: PodSet,
    reclaimable: int = 0,
    exclude_prefixes: Sequence[str] = (),
    transformations: TransformationsArg = (),
) -> dict[str, int]:
    """Totals of a pending PodSet (``workload.Info`` ``TotalRequests``): per-pod integers × effective count, saturating.

    Pass ``reclaimable=0`` when the ``ReclaimablePods`` gate is off.
    """
    count = effective_count(podset.count, reclaimable)
    per_pod = per_pod_integer_requests(podset.template.spec, exclude_prefixes, transformations)
    return {name: sat_mul(v, count) for name, v in per_pod.items()}


def _div_trunc(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def admitted_usage(assignment: PodSetAssignment, spec_count: int, reclaimable: int = 0) -> dict[str, int]:
    """Usage of one PodSetAssignment of an admitted workload (``workload.NewInfo`` on an admitted Workload).

    ``resourceUsage`` as Kueue integers; when the spec count after reclaim is lower than the
    admitted count (``count``, default ``spec_count``), each value becomes
    ``(usage ÷ admittedCount) × effectiveCount`` (truncating division first, saturating multiply).
    A higher spec count (partial admission) keeps the admitted values.
    """
    usage = {name: _usage_value(name, v) for name, v in assignment.resource_usage.items()}
    admitted = assignment.count if assignment.count is not None else spec_count
    current = effective_count(spec_count, reclaimable)
    if current < admitted:
        usage = {name: sat_mul(_div_trunc(v, admitted), current) for name, v in usage.items()}
    return usage


# --- taints and tolerations (flavorassigner ``checkFlavorForPodSets``) --------------------------------------

NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"
_SCHEDULING_EFFECTS = frozenset((NO_SCHEDULE, NO_EXECUTE))
# ``content.IsDecimalInteger``: "0", or an optional "-" then a non-zero digit and digits ("-0",
# "+1" and leading zeros are rejected).
_DECIMAL_INTEGER_RE = re.compile(r"^(?:0|-?[1-9][0-9]*)$")


def pod_tolerations(spec: Mapping[str, Any]) -> list[Toleration]:
    """``spec.tolerations`` as typed :class:`Toleration` objects."""
    raw = spec.get("tolerations")
    if not raw:
        return []
    return msgspec.convert(raw, list[Toleration])


def _decimal_int64(text: str) -> int | None:
    if not _DECIMAL_INTEGER_RE.match(text):
        return None
    v = int(text)
    return v if MIN_INT64 <= v <= MAX_INT64 else None


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Kubernetes ``Toleration.ToleratesTaint`` with comparison operators enabled (as Kueue calls it).

    Empty effect matches every effect; empty key matches every key; operator ``""``/``Equal``
    compares values, ``Exists`` matches any value, ``Lt``/``Gt`` compare decimal int64 values
    (``taint < toleration`` / ``taint > toleration``; unparsable values never match).
    """
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    op = toleration.operator
    if op in ("", "Equal"):
        return toleration.value == taint.value
    if op == "Exists":
        return True
    if op in ("Lt", "Gt"):
        tol_v = _decimal_int64(toleration.value)
        taint_v = _decimal_int64(taint.value)
        if tol_v is None or taint_v is None:
            return False
        return taint_v < tol_v if op == "Lt" else taint_v > tol_v
    return False


def first_untolerated_taint(taints: Iterable[Taint], tolerations: Sequence[Toleration]) -> Taint | None:
    """First ``NoSchedule``/``NoExecute`` taint no toleration tolerates, or ``None``.

    Kueue passes the pod's tolerations followed by the flavor's ``tolerations``.
    """
    for taint in taints:
        if taint.effect not in _SCHEDULING_EFFECTS:
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def _go_time_string(value: datetime) -> str:
    """Go ``time.Time.String()`` of a UTC instant: ``2006-01-02 15:04:05.999999999 +0000 UTC``."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    value = value.astimezone(UTC)
    text = value.strftime("%Y-%m-%d %H:%M:%S")
    if value.microsecond:
        text += "." + f"{value.microsecond:06d}".rstrip("0")
    return text + " +0000 UTC"


def format_taint(taint: Taint) -> str:
    """Go's ``%s`` of a ``corev1.Taint`` value: ``{<key> <value> <effect> <timeAdded>}``.

    ``timeAdded`` prints ``<nil>`` when unset. When set, Go calls ``(*metav1.Time).String()``,
    i.e. ``time.Time.String()`` of the instant in the controller's local zone; we assume the
    controller runs in UTC and print e.g. ``2024-01-02 03:04:05 +0000 UTC``.
    """
    added = "<nil>" if taint.time_added is None else _go_time_string(taint.time_added)
    return f"{{{taint.key} {taint.value} {taint.effect} {added}}}"


# --- node selector / required node affinity (flavorassigner ``checkFlavorForPodSets``) ----------------------


class SelectorError(ValueError):
    """A malformed required node-affinity term; ``str()`` is apimachinery's aggregated error text."""


_SELECTOR_OPERATORS = frozenset(("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"))
_LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_LABEL_VALUE_MAX_LEN = 63
_LABEL_VALUE_REGEX_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
    "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
_GO_INT_RE = re.compile(r"^[+-]?[0-9]+$")


def _go_parse_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``; ``None`` on error."""
    if not _GO_INT_RE.match(text):
        return None
    v = int(text)
    return v if MIN_INT64 <= v <= MAX_INT64 else None


@lru_cache(maxsize=4096)
def _label_value_errors(value: str) -> tuple[str, ...]:
    errs: list[str] = []
    if len(value.encode()) > _LABEL_VALUE_MAX_LEN:
        errs.append(f"must be no more than {_LABEL_VALUE_MAX_LEN} characters")
    if not _LABEL_VALUE_RE.match(value):
        errs.append(_LABEL_VALUE_REGEX_MSG)
    return tuple(errs)


class _Requirement(NamedTuple):
    key: str
    operator: str
    values: tuple[str, ...]
    bound: int  # the parsed value of Gt/Lt, 0 otherwise


def _compile_requirement(expr: Mapping[str, Any], path: str) -> tuple[_Requirement | None, list[str]]:
    """``labels.NewRequirement`` for one match expression: the requirement, or its field errors.

    An unsupported operator yields apimachinery's ``Unsupported value`` error instead.
    """
    op = expr.get("operator", "")
    if op not in _SELECTOR_OPERATORS:
        return None, [f"{path}.operator: Unsupported value: {_go_json(op)}"]
    key = expr.get("key", "")
    raw_values = expr.get("values")
    values = () if raw_values is None else tuple(str(v) for v in raw_values)
    rendered: list[str] | None = None if raw_values is None else list(values)
    vpath = f"{path}.values"
    errs: list[str] = []
    bound = 0
    if op in ("In", "NotIn"):
        if not values:
            errs.append(field_invalid(vpath, rendered, "for 'in', 'notin' operators, values set can't be empty"))
    elif op in ("Exists", "DoesNotExist"):
        if values:
            errs.append(field_invalid(vpath, rendered, "values set must be empty for exists and does not exist"))
    else:
        if len(values) != 1:
            errs.append(field_invalid(vpath, rendered, "for 'Gt', 'Lt' operators, exactly one value is required"))
        for i, v in enumerate(values):
            parsed = _go_parse_int64(v)
            if parsed is None:
                errs.append(
                    field_invalid(f"{vpath}[{i}]", v, "for 'Gt', 'Lt' operators, the value must be an integer")
                )
            else:
                bound = parsed
    for i, v in enumerate(values):
        value_errs = _label_value_errors(v)
        if value_errs:
            errs.append(field_invalid(f"{vpath}[{i}][{key}]", v, "; ".join(value_errs)))
    if errs:
        return None, errs
    return _Requirement(key, op, values, bound), errs


def _requirement_matches(req: _Requirement, labels: Mapping[str, str]) -> bool:
    """``labels.Requirement.Matches``."""
    op = req.operator
    value = labels.get(req.key)
    if op == "In":
        return value is not None and value in req.values
    if op == "NotIn":
        return value is None or value not in req.values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if value is None:
        return False
    label_v = _go_parse_int64(value)
    if label_v is None:
        return False
    return label_v > req.bound if op == "Gt" else label_v < req.bound


def _restricted_terms(spec: Mapping[str, Any], allowed: Mapping[str, str]) -> list[list[Mapping[str, Any]]]:
    """Required node-affinity terms keeping only expressions on ``allowed`` keys (Kueue ``flavorSelector``).

    ``matchFields`` are dropped; if any term becomes empty the whole affinity is dropped (``[]``).
    """
    affinity = spec.get("affinity") or {}
    node_affinity = affinity.get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return []
    terms: list[list[Mapping[str, Any]]] = []
    for term in required.get("nodeSelectorTerms") or ():
        exprs = [e for e in (term.get("matchExpressions") or ()) if e.get("key", "") in allowed]
        if not exprs:
            return []
        terms.append(exprs)
    return terms


def _terms_match(terms: list[list[Mapping[str, Any]]], labels: Mapping[str, str]) -> bool:
    """``LazyErrorNodeSelector.Match``: terms ORed, expressions ANDed; a malformed term is skipped
    and its errors surface only when no other term matches."""
    errors: list[str] = []
    for i, exprs in enumerate(terms):
        reqs: list[_Requirement] = []
        term_errs: list[str] = []
        for j, expr in enumerate(exprs):
            req, errs = _compile_requirement(expr, f"nodeSelectorTerms[{i}].matchExpressions[{j}]")
            if req is None:
                term_errs.extend(errs)
            else:
                reqs.append(req)
        if term_errs:
            errors.extend(term_errs)
            continue
        if all(_requirement_matches(r, labels) for r in reqs):
            return True
    if errors:
        raise SelectorError(aggregate_error_text(errors))
    return False


def matches_flavor_node_labels(spec: Mapping[str, Any], node_labels: Mapping[str, str]) -> bool:
    """Does the pod's node selection accept a node labelled exactly ``node_labels`` (``checkFlavorForPodSets``)?

    ``nodeSelector`` entries and required node-affinity expressions are restricted to the keys of
    ``node_labels`` (a flavor with no labels accepts any selector); the reduced selector is then
    evaluated with Kubernetes required-node-affinity semantics. Preferred affinity is ignored.

    Raises :class:`SelectorError` for a malformed expression when no term matches.
    """
    selector = spec.get("nodeSelector")
    if selector:
        for key, value in selector.items():
            if key in node_labels and node_labels[key] != value:
                return False
    terms = _restricted_terms(spec, node_labels)
    if not terms:
        return True
    return _terms_match(terms, node_labels)


# --- scheduling-equivalence hash (``workload.Info.UpdateSchedulingHash``) ----------------------------------------


@lru_cache(maxsize=16384)
def _canonical_quantity_cached(value: QuantityLike) -> str:
    try:
        return format_quantity(Quantity.parse(value).value, QuantityFormat.DECIMAL_SI)
    except (ValueError, TypeError):
        return str(value)


def _canonical_list(resources: ResourceList | None) -> dict[str, str] | None:
    if resources is None:
        return None
    return {
        name: (str(v) if isinstance(v, bool) else _canonical_quantity_cached(v))
        for name, v in resources.items()
    }


def _containers_shape(containers: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    if containers is None:
        return None
    return [
        {
            "resources": {"requests": _canonical_list((c.get("resources") or {}).get("requests"))},
            "ports": c.get("ports"),
        }
        for c in containers
    ]


def scheduling_shape(spec: Mapping[str, Any]) -> bytes:
    """Canonical JSON (sorted keys) of the scheduling-relevant parts of a pod spec (``UpdateSchedulingHash``).

    Per (init) container its requests and ports; node selector, affinity, tolerations, runtime
    class, priority class name and priority, topology spread constraints, overhead, resource
    claims and pod-level requests. Quantities are canonicalised (``1000m`` and ``1`` hash alike).
    The result is meant to be passed to :func:`scheduling_hash` and may be cached per template.
    """
    pod_resources = spec.get("resources")
    shape = {
        "initContainers": _containers_shape(spec.get("initContainers")),
        "containers": _containers_shape(spec.get("containers")),
        "nodeSelector": spec.get("nodeSelector"),
        "affinity": spec.get("affinity"),
        "tolerations": spec.get("tolerations"),
        "runtimeClassName": spec.get("runtimeClassName"),
        "priorityClassName": spec.get("priorityClassName"),
        "priority": spec.get("priority"),
        "topologySpreadConstraints": spec.get("topologySpreadConstraints"),
        "overhead": _canonical_list(spec.get("overhead")),
        "resourceClaims": spec.get("resourceClaims"),
        "podRequests": _canonical_list(pod_resources.get("requests")) if pod_resources else None,
    }
    return msgspec.json.encode(shape, order="sorted")


class PodSetHashInput(NamedTuple):
    """One pod set's contribution to :func:`scheduling_hash` (a plain tuple works as well)."""

    name: str
    shape: bytes
    effective_count: int
    total_requests: Mapping[str, int]
    min_count: int | None
    topology_request: Mapping[str, Any] | None


def scheduling_hash(
    priority: int,
    podsets: Iterable[
        PodSetHashInput | tuple[str, bytes, int, Mapping[str, int], int | None, Mapping[str, Any] | None]
    ],
    allowed_flavors: str | None = None,
) -> str:
    """First 16 hex chars of SHA-256 over canonical JSON of the priority and every pod set's
    name, :func:`scheduling_shape`, effective count, total requests, ``minCount`` and topology
    request, and ``allowed_flavors`` (the allowed-flavors annotation) unless None."""
    doc: dict[str, Any] = {
        "priority": priority,
        "podSets": [
            {
                "name": name,
                "spec": msgspec.Raw(shape),
                "count": count,
                "requests": dict(total),
                "minCount": min_count,
                "topologyRequest": topology,
            }
            for name, shape, count, total, min_count, topology in podsets
        ],
    }
    if allowed_flavors is not None:
        doc["allowedFlavors"] = allowed_flavors
    return hashlib.sha256(msgspec.json.encode(doc, order="sorted")).hexdigest()[:16]
